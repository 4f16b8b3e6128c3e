"""Builders for the job-level plugin tests (priority, gang, conformance, drf): tasks with a
status, a node, a priority and a role; jobs put into a snapshot with their placed tasks
accounted on the nodes; sessions over the four built-in plugins."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice import (
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    Plugin,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from pumice.framework import Session
from pumice.plugins.drf import DrfPlugin
from pumice.plugins.gang import GangPlugin
from pumice.plugins.priority import ConformancePlugin, PriorityPlugin
from support.builders import PluginSpecList, open_session

GiB = 2**30

BUILTINS: dict[str, type[Plugin]] = {
    "priority": PriorityPlugin,
    "gang": GangPlugin,
    "conformance": ConformancePlugin,
    "drf": DrfPlugin,
}


def snapshot(*nodes: tuple[str, float, float]) -> ClusterSnapshot:
    """Nodes given as (name, cpu millicores, memory bytes) and the default queue."""
    return ClusterSnapshot.build(
        nodes=[NodeInfo(n, Resource({"cpu": c, "memory": m})) for n, c, m in nodes],
        queues=[QueueInfo("default")],
    )


def task(
    name: str,
    *,
    cpu: float = 1000,
    memory: float = GiB,
    status: TaskStatus = TaskStatus.PENDING,
    node: str | None = None,
    priority: int = 1,
    role: str = "",
    namespace: str = "default",
    pod: Mapping[str, Any] | None = None,
    created: float = 0.0,
) -> TaskInfo:
    """A task; a placed status without ``node`` puts it on ``n0``."""
    if node is None and status != TaskStatus.PENDING:
        node = "n0"
    values = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return TaskInfo(
        uid=f"{namespace}/{name}",
        name=name,
        namespace=namespace,
        resreq=Resource(values),
        role=role,
        priority=priority,
        status=status,
        node_name=node,
        pod=pod,
        creation_timestamp=created,
    )


def job(
    snap: ClusterSnapshot,
    name: str,
    *tasks: TaskInfo,
    min_available: int = 1,
    priority: int = 0,
    min_task_member: Mapping[str, int] | None = None,
    namespace: str = "default",
    queue: str = "default",
    created: float = 0.0,
) -> JobInfo:
    """A job of ``tasks`` added to ``snap``; tasks with a node and a placed status are
    accounted on that node."""
    info = JobInfo(
        uid=f"{namespace}/{name}",
        name=name,
        namespace=namespace,
        queue=queue,
        priority=priority,
        min_available=min_available,
        min_task_member=dict(min_task_member or {}),
        creation_timestamp=created,
    )
    for t in tasks:
        info.add_task(t)
        if t.node_name and t.status != TaskStatus.PENDING:
            snap.nodes[t.node_name].add_task(t)
    snap.jobs[info.uid] = info
    return info


def running(name: str, **kwargs: Any) -> TaskInfo:
    return task(name, status=TaskStatus.RUNNING, **kwargs)


def session(
    snap: ClusterSnapshot,
    *tiers: list[str | dict[str, Any]],
    extra: Mapping[str, type[Plugin]] | None = None,
) -> Session:
    """A session over the built-in plugins of this file (and ``extra`` test plugins), tiers
    as in the config."""
    spec: PluginSpecList = [list(t) for t in tiers]
    return open_session({**BUILTINS, **(extra or {})}, spec, snap)


def plugin_of(ssn: Session, name: str) -> Any:
    """The instance of plugin ``name`` built for ``ssn``."""
    for _, option, instance in ssn.plugins:
        if option.name == name:
            return instance
    raise KeyError(name)


def names(tasks: Any) -> list[str]:
    return [t.name for t in tasks]
