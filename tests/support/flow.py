"""Builders for action and proportion tests: clusters with queues, gangs, running tasks, and
sessions that run real actions over real plugins."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pumice import (
    Action,
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    Plugin,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from pumice.actions.allocate import AllocateAction, BackfillAction
from pumice.actions.enqueue import EnqueueAction
from pumice.actions.preempt import PreemptAction
from pumice.actions.reclaim import ReclaimAction
from pumice.framework import Session, run_actions
from pumice.framework.config import SchedulerConfig
from pumice.framework.configfile import load_default_config
from pumice.framework.host import PluginHost
from pumice.framework.session import RecordingCommitter
from pumice.plugins.gang import GangPlugin
from pumice.plugins.predicates import PredicatesPlugin
from pumice.plugins.priority import ConformancePlugin, PriorityPlugin
from pumice.plugins.proportion import ProportionPlugin, QueueAttributes
from support.builders import PluginSpecList, make_config

GiB = 2**30
CPU = "cpu"
MEMORY = "memory"

ACTIONS: dict[str, type[Action]] = {
    "enqueue": EnqueueAction,
    "allocate": AllocateAction,
    "backfill": BackfillAction,
    "preempt": PreemptAction,
    "reclaim": ReclaimAction,
}
PLUGINS: dict[str, type[Plugin]] = {
    "gang": GangPlugin,
    "predicates": PredicatesPlugin,
    "proportion": ProportionPlugin,
    "priority": PriorityPlugin,
    "conformance": ConformancePlugin,
}
"""What the hand-registered sessions offer; tests add their own test plugins."""

BASIC_TIERS: PluginSpecList = [["gang"], ["predicates", "proportion"]]


def res(cpu: float = 0, memory: float = 0, **extra: float) -> Resource:
    """A Resource in canonical units (cpu in millicores, memory in bytes)."""
    values = {CPU: cpu, MEMORY: memory, **extra}
    return Resource({k: v for k, v in values.items() if v})


def nodes(
    count: int, cpu: float = 4000, memory: float = 8 * GiB, prefix: str = "n"
) -> list[NodeInfo]:
    return [NodeInfo(f"{prefix}{i}", res(cpu, memory)) for i in range(count)]


def queue(
    name: str,
    weight: int = 1,
    *,
    capability: Resource | None = None,
    guarantee: Resource | None = None,
    priority: int = 0,
    state: str = "Open",
    created: float = 0.0,
) -> QueueInfo:
    return QueueInfo(
        name,
        weight=weight,
        capability=capability,
        guarantee=guarantee if guarantee is not None else Resource.zero(),
        priority=priority,
        state=state,
        creation_timestamp=created,
    )


def gang(
    name: str,
    tasks: int = 1,
    *,
    cpu: float = 1000,
    memory: float = GiB,
    queue: str = "default",
    min_available: int | None = None,
    min_resources: Resource | None = None,
    phase: str = "Inqueue",
    created: float = 0.0,
    role: str = "",
    min_task_member: Mapping[str, int] | None = None,
    extra: Mapping[str, float] | None = None,
) -> JobInfo:
    """A job of ``tasks`` identical pending tasks; ``min_available`` defaults to all of them."""
    job = JobInfo(
        uid=f"default/{name}",
        name=name,
        queue=queue,
        min_available=tasks if min_available is None else min_available,
        min_task_member=dict(min_task_member or {}),
        min_resources=min_resources,
        phase=phase,
        creation_timestamp=created,
    )
    for i in range(tasks):
        add_task(
            job, f"{name}-{i}", cpu=cpu, memory=memory, role=role, created=created + i, extra=extra
        )
    return job


def add_task(
    job: JobInfo,
    name: str,
    *,
    cpu: float = 1000,
    memory: float = GiB,
    role: str = "",
    created: float = 0.0,
    status: TaskStatus = TaskStatus.PENDING,
    node: str | None = None,
    extra: Mapping[str, float] | None = None,
) -> TaskInfo:
    """Add a task to ``job``; give ``node`` and a status such as RUNNING for a placed one."""
    task = TaskInfo(
        uid=name,
        name=name,
        resreq=res(cpu, memory, **(extra or {})),
        role=role,
        status=status,
        node_name=node,
        creation_timestamp=created,
    )
    job.add_task(task)
    return task


def snapshot(
    node_list: Iterable[NodeInfo],
    jobs: Iterable[JobInfo] = (),
    queues: Iterable[QueueInfo] | None = None,
) -> ClusterSnapshot:
    """A snapshot; queues default to one ``default`` queue."""
    return ClusterSnapshot.build(
        nodes=node_list,
        jobs=jobs,
        queues=list(queues) if queues is not None else [queue("default")],
    )


def host(extra: Mapping[str, type[Plugin]] | None = None) -> PluginHost:
    """A host with the actions and plugins above registered by hand, plus ``extra``."""
    built = PluginHost()
    for name, cls in {**ACTIONS, **PLUGINS, **(extra or {})}.items():
        built.register(name, cls)
    return built


def open_flow(
    snap: ClusterSnapshot,
    tiers: PluginSpecList | None = None,
    actions: Sequence[str] = ("enqueue", "allocate", "backfill"),
    plugins: Mapping[str, type[Plugin]] | None = None,
    configurations: Sequence[Mapping[str, Any]] = (),
) -> Session:
    """A session over ``snap`` with the given tiers and configured actions (not yet run)."""
    config = flow_config(tiers if tiers is not None else BASIC_TIERS, actions, configurations)
    return Session.open(snap, config, host(plugins), committer=RecordingCommitter())


def flow_config(
    tiers: PluginSpecList,
    actions: Sequence[str],
    configurations: Sequence[Mapping[str, Any]] = (),
) -> SchedulerConfig:
    """A parsed configuration, as a user would write it."""
    return make_config(tiers, actions, configurations=configurations)


def run_flow(
    snap: ClusterSnapshot,
    tiers: PluginSpecList | None = None,
    actions: Sequence[str] = ("enqueue", "allocate", "backfill"),
    plugins: Mapping[str, type[Plugin]] | None = None,
    configurations: Sequence[Mapping[str, Any]] = (),
) -> Session:
    """Open a session, run its configured actions, and return it (still open)."""
    session = open_flow(snap, tiers, actions, plugins, configurations)
    run_actions(session)
    return session


def run_default(snap: ClusterSnapshot) -> Session:
    """The shipped default configuration with every plugin found through the entry points."""
    session = Session.open(
        snap, load_default_config(), PluginHost.discover(), committer=RecordingCommitter()
    )
    run_actions(session)
    return session


def decisions(session: Session) -> list[tuple[str, str, str]]:
    committer = session.committer
    assert isinstance(committer, RecordingCommitter)
    return committer.decisions


def binds(session: Session) -> dict[str, str]:
    """Task name -> node of every committed bind."""
    return {key.split("/", 1)[1]: node for kind, key, node in decisions(session) if kind == "bind"}


def proportion_of(session: Session) -> ProportionPlugin:
    for _, _, plugin in session.plugins:
        if isinstance(plugin, ProportionPlugin):
            return plugin
    raise AssertionError("no proportion plugin in this session")


def attributes(session: Session, queue_name: str) -> QueueAttributes:
    return proportion_of(session).attributes[queue_name]
