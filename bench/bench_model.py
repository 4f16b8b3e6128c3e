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


Step = tuple[str, Callable[[Any], object]]


def interleaved(items: Sequence[Any], steps: Sequence[Step], rounds: int = 10) -> list[float]:
    """µs per item of each step; the items are cut into ``rounds`` slices and every step runs
    on a slice before the next slice, so that a noisy neighbour slows all steps alike. Each
    step gets what the step before it returned for each item. The garbage collector is off
    throughout (a collection over 150,000 pods would cost more than the steps)."""
    totals = [0.0] * len(steps)
    size = -(-len(items) // rounds)
    gc.collect()
    gc.disable()
    try:
        for start in range(0, len(items), size):
            current: list[Any] = list(items[start : start + size])
            for i, (_, fn) in enumerate(steps):
                began = time.perf_counter()
                current = [fn(item) for item in current]
                totals[i] += time.perf_counter() - began
    finally:
        gc.enable()
    figures = [total / len(items) * 1e6 for total in totals]
    for (label, _), us, total in zip(steps, figures, totals, strict=True):
        print(f"  {label:<44} {us:8.2f} µs   ({total:6.2f} s for {len(items):,})")
    return figures


def keep(fn: Callable[[Any], object]) -> Callable[[Any], Any]:
    """``fn`` for its cost only: the step passes its own input on."""

    def step(item: Any) -> Any:
        fn(item)
        return item

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--nodes", type=int, default=5_000)
    args = parser.parse_args()
    print(f"{args.pods:,} pods, {args.nodes:,} nodes")

    texts = [orjson.dumps(make_pod(i)) for i in range(args.pods)]
    pods = [orjson.loads(text) for text in texts]  # as the cache will hold them
    tasks: list[TaskInfo] = []

    def build(pair: tuple[bytes, dict[str, Any]]) -> TaskInfo:
        task = TaskInfo.from_pod(pair[1])
        tasks.append(task)
        return task

    base, from_pod, terms, nonzero, shape, _ = interleaved(
        list(zip(texts, pods, strict=True)),
        [
            ("orjson.loads, per pod (baseline)", keep(lambda pair: orjson.loads(pair[0]))),
            ("TaskInfo.from_pod", build),
            ("first task.terms", keep(lambda t: t.terms)),
            ("first task.nonzero_request", keep(lambda t: t.nonzero_request)),
            ("first task.shape", keep(lambda t: t.shape)),
            ("again task.shape (cached)", keep(lambda t: t.shape)),
        ],
    )
    first_use = terms + nonzero + shape
    print(
        f"  TaskInfo.from_pod: {from_pod:.2f} µs/pod = {from_pod / base:.2f}x orjson.loads "
        f"(target ≤ {TARGET_US_PER_POD:g} µs); terms + non-zero request + shape on first use: "
        f"{first_use:.2f} µs/pod = {first_use / base:.2f}x"
    )
    print(f"  distinct shapes among {len(tasks):,} tasks: {len({t.shape for t in tasks}):,}")
    tasks.clear()
    del pods, texts

    node_texts = [orjson.dumps(make_node(i)) for i in range(args.nodes)]
    nodes = [orjson.loads(text) for text in node_texts]
    node_base, from_node = interleaved(
        list(zip(node_texts, nodes, strict=True)),
        [
            ("orjson.loads, per node (baseline)", keep(lambda pair: orjson.loads(pair[0]))),
            ("NodeInfo.from_node", lambda pair: NodeInfo.from_node(pair[1])),
        ],
    )
    print(
        f"  NodeInfo.from_node: {from_node:.2f} µs/node = {from_node / node_base:.1f}x orjson.loads"
    )


if __name__ == "__main__":
    main()
