"""Builders for node-level plugin tests: nodes with labels and taints, plain-dict pods, tasks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pumice import ClusterSnapshot, NodeInfo, NodeTable, QueueInfo, Resource, TaskInfo, TaskStatus

GiB = 2**30
MiB = 2**20


def node(
    name: str,
    cpu: float = 4000,
    memory: float = 8 * GiB,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    max_pods: int = 110,
    extra: Mapping[str, float] | None = None,
) -> NodeInfo:
    """A node with the given allocatable (canonical units) and metadata."""
    return NodeInfo(
        name,
        Resource({"cpu": cpu, "memory": memory, **(extra or {})}),
        labels=labels,
        taints=taints,
        unschedulable=unschedulable,
        max_pods=max_pods,
    )


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def toleration(
    key: str = "", operator: str = "", value: str = "", effect: str = ""
) -> dict[str, str]:
    """A toleration; empty fields are left out, as a user would."""
    fields = {"key": key, "operator": operator, "value": value, "effect": effect}
    return {k: v for k, v in fields.items() if v}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A matchExpressions / matchFields entry."""
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(*exprs: dict[str, Any], fields: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if exprs:
        out["matchExpressions"] = list(exprs)
    fields = list(fields)
    if fields:
        out["matchFields"] = fields
    return out


def container(
    cpu: str | None = None,
    memory: str | None = None,
    host_ports: Iterable[int | Mapping[str, Any]] = (),
    name: str = "c",
) -> dict[str, Any]:
    """A container with optional requests and host ports (an int, or a full port dict)."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    out: dict[str, Any] = {"name": name, "image": "busybox"}
    if requests:
        out["resources"] = {"requests": requests}
    ports = [
        {"containerPort": 80, "hostPort": p} if isinstance(p, int) else dict(p) for p in host_ports
    ]
    if ports:
        out["ports"] = ports
    return out


def pod(
    name: str = "p",
    *,
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    required: Sequence[Mapping[str, Any]] | None = None,
    preferred: Sequence[tuple[int, Mapping[str, Any]]] = (),
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_name: str | None = None,
    phase: str = "Pending",
) -> dict[str, Any]:
    """A plain-dict pod; ``required`` is a list of node selector terms."""
    spec: dict[str, Any] = {"containers": list(containers or [container("100m", "128Mi")])}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    affinity: dict[str, Any] = {}
    if required is not None:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": list(required)
        }
    if preferred:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": dict(t)} for w, t in preferred
        ]
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": phase},
    }


def task_of(pod_dict: Mapping[str, Any], status: TaskStatus | None = None) -> TaskInfo:
    """A task from a pod (its status from the pod unless given)."""
    task = TaskInfo.from_pod(pod_dict)
    if status is not None:
        task.status = status
    return task


def bare_task(name: str = "t", cpu: float = 0, memory: float = 0, **extra: float) -> TaskInfo:
    """A task without a pod, requesting amounts in canonical units."""
    values = {"cpu": cpu, "memory": memory, **extra}
    return TaskInfo(uid=name, name=name, resreq=Resource({k: v for k, v in values.items() if v}))


def table(*nodes: NodeInfo, tasks: Iterable[TaskInfo] = ()) -> NodeTable:
    """A table of ``nodes``; each task is accounted on the node named by ``node_name``."""
    snap = ClusterSnapshot.build(nodes=nodes, queues=[QueueInfo("default")])
    for t in tasks:
        snap.nodes[t.node_name or ""].add_task(t)
    return snap.table


def place(task: TaskInfo, node_name: str, status: TaskStatus = TaskStatus.RUNNING) -> TaskInfo:
    task.node_name = node_name
    task.status = status
    return task
