"""Benchmark building model objects: ``TaskInfo.from_pod`` and ``NodeInfo.from_node``.

Builds realistic plain-dict pods (two containers with cpu/memory requests, labels, a PodGroup
annotation, a nodeSelector and a toleration; a third of them bound and running) and nodes
(allocatable, labels, a taint on some), as ``orjson`` would hand them over from a list call, and
times, per object:

* ``orjson.loads`` of the same objects, the baseline of the same run (it normalises the
  machine's speed and noise: the ratio travels between machines, the µs do not);
* ``TaskInfo.from_pod`` (target ≤ 10 µs per pod);
* the first read of ``task.terms``, ``task.nonzero_request`` and ``task.shape`` (computed once
  per pod object and cached on the task);
* ``NodeInfo.from_node``.

Run with ``make bench`` or ``.venv/bin/python -P bench/bench_model.py [--pods N] [--nodes N]``.
Prints figures; never fails on a slow machine.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from pumice import NodeInfo, TaskInfo

TARGET_US_PER_POD = 10.0
CPUS = ("250m", "500m", "1", "2", "4")
MEMORIES = ("256Mi", "512Mi", "1Gi", "2Gi", "8Gi")
ZONES = ("zone-a", "zone-b", "zone-c")


def make_pod(i: int) -> dict[str, Any]:
    gang = i // 100
    running = i % 3 == 0
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"job-{gang}-{i % 100}",
            "namespace": f"team-{gang % 20}",
            "uid": f"00000000-0000-4000-8000-{i:012d}",
            "creationTimestamp": f"2026-11-22T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:"
            f"{i % 60:02d}Z",
            "labels": {"app": f"job-{gang}", "volcano.sh/job-name": f"job-{gang}", "tier": "batch"},
            "annotations": {"scheduling.k8s.io/group-name": f"job-{gang}"},
        },
        "spec": {
            "schedulerName": "pumice",
            "priority": gang % 3,
            "nodeSelector": {"topology.kubernetes.io/zone": ZONES[gang % 3]},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/train:1.4",
                    "resources": {
                        "requests": {"cpu": CPUS[gang % 5], "memory": MEMORIES[gang % 5]},
                        "limits": {"cpu": CPUS[gang % 5], "memory": MEMORIES[gang % 5]},
                    },
                },
                {
                    "name": "sidecar",
                    "image": "registry.example/log:2.0",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                },
            ],
        },
        "status": {"phase": "Pending"},
    }
    if running:
        pod["spec"]["nodeName"] = f"node-{i % 5000}"
        pod["status"] = {"phase": "Running", "startTime": "2026-11-22T00:00:00Z"}
    return pod


def make_node(i: int) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if i % 10 == 0:
        spec["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i}",
            "uid": f"10000000-0000-4000-8000-{i:012d}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i}",
                "topology.kubernetes.io/zone": ZONES[i % 3],
                "node.kubernetes.io/instance-type": "m5.8xlarge",
            },
        },
        "spec": spec,
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "31850m", "memory": "126Gi", "pods": "110"},
        },
    }


def per_object(label: str, items: Sequence[Any], fn: Callable[[Any], object]) -> float:
    """µs per item of ``fn`` over ``items``; the garbage collector is off while timing."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for item in items:
            fn(item)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    us = elapsed / len(items) * 1e6
    print(f"  {label:<46} {us:8.2f} µs   ({elapsed:6.2f} s for {len(items):,})")
    return us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--nodes", type=int, default=5_000)
    args = parser.parse_args()

    pod_texts = [orjson.dumps(make_pod(i)) for i in range(args.pods)]
    node_texts = [orjson.dumps(make_node(i)) for i in range(args.nodes)]
    print(f"{args.pods:,} pods, {args.nodes:,} nodes")

    base = per_object("orjson.loads, per pod (baseline)", pod_texts, orjson.loads)
    pods = [orjson.loads(t) for t in pod_texts]
    del pod_texts
    tasks: list[TaskInfo] = []
    build = per_object("TaskInfo.from_pod", pods, lambda p: tasks.append(TaskInfo.from_pod(p)))
    terms = per_object("first task.terms", tasks, lambda t: t.terms)
    nonzero = per_object("first task.nonzero_request", tasks, lambda t: t.nonzero_request)
    shape = per_object("first task.shape", tasks, lambda t: t.shape)
    per_object("again task.shape (cached)", tasks, lambda t: t.shape)
    print(
        f"  from_pod: {build / base:.1f}x orjson.loads; with terms, non-zero request and shape: "
        f"{build + terms + nonzero + shape:.2f} µs/pod "
        f"({(build + terms + nonzero + shape) / base:.1f}x); target ≤ {TARGET_US_PER_POD:g} µs"
    )
    print(f"  distinct shapes: {len({t.shape for t in tasks}):,}")

    node_base = per_object("orjson.loads, per node (baseline)", node_texts, orjson.loads)
    nodes = [orjson.loads(t) for t in node_texts]
    node_build = per_object("NodeInfo.from_node", nodes, NodeInfo.from_node)
    print(f"  from_node: {node_build / node_base:.1f}x orjson.loads")


if __name__ == "__main__":
    main()
