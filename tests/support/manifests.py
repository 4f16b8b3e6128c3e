"""Kubernetes objects as plain dicts for ``pumice simulate`` scenarios, and a runner that goes
through the real command line (``pumice.cli.main``) and returns its JSON."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice.cli import main

Obj = dict[str, Any]

CONFIG = """\
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
"""Volcano's shipped configuration with every action pumice has (its CI variant's order)."""


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    *,
    pods: str = "110",
    gpu: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
) -> Obj:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpu is not None:
        allocatable["nvidia.com/gpu"] = gpu
    spec: Obj = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def pod(
    name: str,
    cpu: str = "1",
    memory: str = "1Gi",
    *,
    namespace: str = "default",
    group: str | None = None,
    node_name: str | None = None,
    phase: str | None = None,
    priority_class: str | None = None,
    scheduler: str = "pumice",
    gpu: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
    host_port: int | None = None,
    extra_spec: Mapping[str, Any] | None = None,
    created: str = "2026-01-01T00:00:00Z",
) -> Obj:
    requests: Obj = {"cpu": cpu, "memory": memory}
    if gpu is not None:
        requests["nvidia.com/gpu"] = gpu
    container: Obj = {"name": "main", "image": "busybox", "resources": {"requests": requests}}
    if host_port is not None:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: Obj = {"schedulerName": scheduler, "containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    spec.update(extra_spec or {})
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    meta["creationTimestamp"] = created
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase or ("Running" if node_name else "Pending")},
    }


def podgroup(
    name: str,
    min_member: int,
    *,
    queue: str = "default",
    namespace: str = "default",
    priority_class: str | None = None,
    min_resources: Mapping[str, str] | None = None,
    phase: str | None = None,
) -> Obj:
    spec: Obj = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    pg: Obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if phase:
        pg["status"] = {"phase": phase}
    return pg


def queue(
    name: str, weight: int = 1, *, reclaimable: bool | None = None, state: str | None = None
) -> Obj:
    spec: Obj = {"weight": weight}
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    q: Obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    if state:
        q["status"] = {"state": state}
    return q


def priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def gang_pods(
    group: str, count: int, cpu: str = "1", *, prefix: str | None = None, **kwargs: Any
) -> list[Obj]:
    """``count`` pods of PodGroup ``group`` named ``<prefix>-<i>``."""
    return [pod(f"{prefix or group}-{i}", cpu, group=group, **kwargs) for i in range(count)]


def write_yaml(path: Path, objects: Iterable[Obj]) -> Path:
    path.write_text(yaml.safe_dump_all(list(objects), sort_keys=False))
    return path


def write_list(path: Path, objects: Iterable[Obj]) -> Path:
    """A ``kind: List`` dump, as ``kubectl get … -o yaml`` writes it."""
    dump = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}
    dump["items"] = list(objects)
    path.write_text(yaml.safe_dump(dump, sort_keys=False))
    return path


def run_cli(args: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``pumice ARGS`` in-process: exit code, stdout, stderr."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def simulate(
    tmp_path: Path,
    objects: Iterable[Obj],
    capsys: pytest.CaptureFixture[str],
    *,
    config: str = CONFIG,
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """Write the objects and a config, run ``pumice simulate --output json``, parse it.

    With ``PUMICE_SCENARIO_DIR`` set, every cluster and config is also kept there (one folder
    per call), for tests/commands/test_simulate_matches_the_daemon.py."""
    cluster = write_yaml(tmp_path / "cluster.yaml", objects)
    conf = tmp_path / "scheduler.yaml"
    conf.write_text(config)
    keep_scenario(cluster, conf, extra)
    code, out, err = run_cli(
        ["simulate", str(cluster), "--config", str(conf), "--output", "json", *extra], capsys
    )
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def keep_scenario(cluster: Path, conf: Path, extra: Sequence[str]) -> None:
    where = os.environ.get("PUMICE_SCENARIO_DIR")
    if not where:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "unknown").split(" ")[0]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", test.split("::")[-1])
    index = 0
    while (target := Path(where) / f"{name}-{index}").exists():
        index += 1
    target.mkdir(parents=True)
    (target / "test.txt").write_text(test)
    shutil.copy(cluster, target / "cluster.yaml")
    shutil.copy(conf, target / "scheduler.yaml")
    (target / "extra.json").write_text(json.dumps(list(extra)))


def placed(result: Mapping[str, Any]) -> dict[str, str]:
    """Pod -> node of every placement."""
    return {p["pod"]: p["node"] for p in result["placements"]}


def evicted(result: Mapping[str, Any]) -> dict[str, str | None]:
    """Evicted pod -> its preemptor."""
    return {e["pod"]: e["preemptor"] for e in result["evictions"]}


def pending(result: Mapping[str, Any]) -> dict[str, str]:
    """Unschedulable pod -> message."""
    return {u["pod"]: u["message"] for u in result["unschedulable"]}
