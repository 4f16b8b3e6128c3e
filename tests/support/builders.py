"""Builders for framework tests: configs from tier lists, small clusters, test plugins."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml

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
from pumice.framework.config import SchedulerConfig
from pumice.framework.configfile import parse_config
from pumice.framework.hookspecs import hookimpl
from pumice.framework.host import PluginHost
from pumice.framework.session import RecordingCommitter, Session

PluginSpecList = list[list[str | dict[str, Any]]]


def make_config(
    tiers: PluginSpecList,
    actions: Iterable[str] = ("noop",),
    scheduler: Mapping[str, Any] | None = None,
    configurations: Iterable[Mapping[str, Any]] = (),
) -> SchedulerConfig:
    """A parsed configuration, as a user would write it."""
    doc: dict[str, Any] = {
        "actions": ", ".join(actions),
        "tiers": [
            {"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]} for tier in tiers
        ],
    }
    if scheduler:
        doc["scheduler"] = dict(scheduler)
    if configurations:
        doc["configurations"] = [dict(c) for c in configurations]
    return parse_config(yaml.safe_dump(doc), source="<test>")


def make_plugin(name: str, **hooks: Callable[..., Any]) -> type[Plugin]:
    """A Plugin subclass whose hooks are the given functions (first parameter: self)."""
    namespace: dict[str, Any] = {}
    for hook, fn in hooks.items():
        fn.__qualname__ = f"{name}.{hook}"
        namespace[hook] = hookimpl(fn)
    return type(name, (Plugin,), namespace)


def make_host(plugins: Mapping[str, type[Plugin]]) -> PluginHost:
    host = PluginHost()
    for name, cls in plugins.items():
        host.register(name, cls)
    return host


def cluster(node_count: int = 3, cpu: float = 4000, memory: float = 8 * 2**30) -> ClusterSnapshot:
    """``node_count`` nodes n0, n1, … and one queue; jobs are added by tests."""
    nodes = [
        NodeInfo(f"n{i}", Resource({"cpu": cpu, "memory": memory}), labels={"index": str(i)})
        for i in range(node_count)
    ]
    return ClusterSnapshot.build(nodes=nodes, queues=[QueueInfo("default")])


def add_job(
    snap: ClusterSnapshot,
    name: str,
    tasks: int = 1,
    cpu: float = 1000,
    min_available: int = 1,
    created: float = 0.0,
    queue: str = "default",
) -> JobInfo:
    job = JobInfo(
        uid=f"default/{name}",
        name=name,
        queue=queue,
        min_available=min_available,
        creation_timestamp=created,
    )
    for i in range(tasks):
        job.add_task(
            TaskInfo(
                uid=f"{name}-{i}",
                name=f"{name}-{i}",
                resreq=Resource({"cpu": cpu, "memory": 2**30}),
                creation_timestamp=created + i,
            )
        )
    snap.jobs[job.uid] = job
    return job


def open_session(
    plugins: Mapping[str, type[Plugin]],
    tiers: PluginSpecList,
    snap: ClusterSnapshot | None = None,
    scheduler: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Session:
    return Session.open(
        snap if snap is not None else cluster(),
        make_config(tiers, scheduler=scheduler),
        make_host(plugins),
        committer=kwargs.pop("committer", RecordingCommitter()),
        **kwargs,
    )


def running_task(snap: ClusterSnapshot, name: str, node: str, cpu: float = 1000) -> TaskInfo:
    """A one-task job ``name`` whose task is already running on ``node``."""
    job = add_job(snap, name, cpu=cpu)
    task = next(iter(job.tasks.values()))
    job.update_task_status(task, TaskStatus.RUNNING)
    task.node_name = node
    snap.nodes[node].add_task(task)
    return task
