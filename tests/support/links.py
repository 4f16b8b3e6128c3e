"""Builders for pod-to-pod constraint tests: labelled nodes, pods with affinity and spread."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pumice import ClusterSnapshot, JobInfo, NodeInfo, TaskInfo, TaskStatus
from support.flow import GiB, queue, res

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def zoned_nodes(count: int, zones: int = 1, cpu: float = 8000, prefix: str = "n") -> list[NodeInfo]:
    """Nodes n0.. with hostname and zone labels (zone z<i % zones>)."""
    return [
        NodeInfo(
            f"{prefix}{i}",
            res(cpu, 16 * GiB),
            labels={HOST: f"{prefix}{i}", ZONE: f"z{i % zones}"},
        )
        for i in range(count)
    ]


def term(labels: Mapping[str, str], key: str = HOST, **extra: Any) -> dict[str, Any]:
    """A pod affinity term selecting ``labels`` (matchLabels) over ``key``."""
    return {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": key, **extra}


def spread(
    labels: Mapping[str, str] | None,
    key: str = HOST,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if labels is not None:
        out["labelSelector"] = {"matchLabels": dict(labels)}
    out.update(extra)
    return out


def link_pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    namespace: str = "default",
    affinity: Sequence[Mapping[str, Any]] = (),
    anti: Sequence[Mapping[str, Any]] = (),
    preferred: Sequence[tuple[int, Mapping[str, Any]]] = (),
    preferred_anti: Sequence[tuple[int, Mapping[str, Any]]] = (),
    spreads: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    cpu: str = "1",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]
    }
    aff: dict[str, Any] = {}
    if affinity or preferred:
        aff["podAffinity"] = {}
        if affinity:
            aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(affinity)
        if preferred:
            aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": dict(t)} for w, t in preferred
            ]
    if anti or preferred_anti:
        aff["podAntiAffinity"] = {}
        if anti:
            aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti)
        if preferred_anti:
            aff["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": dict(t)} for w, t in preferred_anti
            ]
    if aff:
        spec["affinity"] = aff
    if spreads:
        spec["topologySpreadConstraints"] = list(spreads)
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "labels": dict(labels or {}),
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def job_of(
    name: str, pods: Sequence[Mapping[str, Any]], min_available: int | None = None
) -> JobInfo:
    """A job (in queue ``default``, Inqueue) of pending tasks made from ``pods``."""
    job = JobInfo(
        uid=f"default/{name}",
        name=name,
        queue="default",
        min_available=len(pods) if min_available is None else min_available,
        phase="Inqueue",
    )
    for i, p in enumerate(pods):
        task = TaskInfo.from_pod(p)
        task.job = job.uid
        task.creation_timestamp = float(i)
        job.add_task(task)
    return job


def running(name: str, node: str, pod: Mapping[str, Any]) -> JobInfo:
    """A one-task job whose task already runs on ``node``."""
    job = job_of(name, [pod])
    task = next(iter(job.tasks.values()))
    job.update_task_status(task, TaskStatus.RUNNING)
    task.node_name = node
    return job


def links_snapshot(nodes: Sequence[NodeInfo], jobs: Sequence[JobInfo]) -> ClusterSnapshot:
    return ClusterSnapshot.build(nodes=nodes, jobs=jobs, queues=[queue("default")])
