"""One run of ``pumice explain``: the target's fate in a simulated run of the given objects.

``run_cluster`` feeds a copy of the objects to the daemon's cache through the informer
handlers (``simulate_cluster.SimulatedCluster``) and runs cycles as ``pumice simulate`` does,
with the same recorder, until nothing changes. Each session is an ``_ExplainSession``: the
``Session`` whose reason books (``job_reasons`` / ``task_reasons``) also note *who* wrote
each entry — the action running (``session.action``) and the plugin whose hook was on the call
stack, found by identity among the session's own plugin instances (never by type), or the
action itself ("" plugin) when none was. From the last session it keeps what a counterfactual
search needs about the target's first failed task: the node reasons, the predicate mask, the
nodes' future idle resources and the victims the session's own ``preemptable`` hooks allow
(conformance's protections included, whether or not preempt is configured).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from pumice.commands.cluster_input import api_defaults
from pumice.commands.simulate import CycleRecorder
from pumice.commands.simulate_cluster import SimulatedCluster
from pumice.daemon.outcome import collect
from pumice.framework.action import run_actions
from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.framework.session import Session
from pumice.model import QueueInfo, TaskInfo, TaskStatus, resource_list

Obj = dict[str, Any]
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
MAX_CYCLES = 5
CLOSE = "session-close"
"""The "action" of a reason written outside every action (a plugin's session_close)."""


@dataclass(frozen=True)
class Target:
    kind: str  # "Pod" or "PodGroup"
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def target_pods(objects: list[Obj], target: Target) -> list[Obj]:
    """The target's pods among ``objects`` (a pod alone, or a PodGroup's members)."""
    pods = [o for o in objects if o.get("kind") == "Pod"]
    if target.kind == "Pod":
        return [p for p in pods if _key(p) == target.key]
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("namespace") or "default") != target.namespace:
            continue
        if (meta.get("annotations") or {}).get(GROUP_ANNOTATION) == target.name:
            out.append(pod)
    return out


def target_exists(objects: list[Obj], target: Target) -> bool:
    if target.kind == "Pod":
        return bool(target_pods(objects, target))
    return any(o.get("kind") == "PodGroup" and _key(o) == target.key for o in objects)


class _Book(dict[str, str]):
    """A reason book that also notes who wrote each entry, in writing order."""

    def __init__(self, session: _ExplainSession) -> None:
        super().__init__()
        self.session = session
        self.writers: dict[str, tuple[int, str, str]] = {}

    def _note(self, key: str) -> None:
        if key not in self.writers or self.writers[key][1] != (self.session.action or CLOSE):
            self.session.seq += 1
            self.writers[key] = (
                self.session.seq,
                self.session.action or CLOSE,
                self.session.writer(),
            )

    def __setitem__(self, key: str, value: str) -> None:
        self._note(key)
        super().__setitem__(key, value)

    def setdefault(self, key: str, value: str = "") -> str:
        if key not in self:
            self._note(key)
        return super().setdefault(key, value)


class _ExplainSession(Session):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seq = 0
        self.authors: dict[str, str] = {}
        """Message -> the plugin whose ``…_reason`` hook said it."""
        self.task_reasons = _Book(self)
        self.job_reasons = _Book(self)

    def overused_reason(self, queue: QueueInfo) -> str | None:
        return self._first("overused_reason", super().overused_reason(queue), queue)

    def allocatable_reason(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        return self._first(
            "allocatable_reason", super().allocatable_reason(queue, task), queue, task
        )

    def _first(self, hook: str, message: str | None, *args: Any) -> str | None:
        """The session's answer, noting which plugin gave it (the first, in tier order, whose
        ``hook`` answers that message) for the action that writes it as a reason."""
        if message:
            for name, call in self.hooks(hook):
                if call(*args) == message:
                    self.authors[message] = name
                    break
        return message

    def writer(self) -> str:
        """The plugin whose hook is on the call stack now ("" when the action itself)."""
        mine = {id(instance): option.name for _, option, instance in self.plugins}
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            name = mine.get(id(frame.f_locals.get("self")))
            if name is not None:
                return name
            frame = frame.f_back
        return ""


@dataclass
class Blocker:
    seq: int
    action: str
    plugin: str
    message: str


@dataclass
class FailedTask:
    """What the search needs about the target's first failed task (at the last session)."""

    key: str
    request: npt.NDArray[np.float64]
    """The task's request over ``dims``."""
    dims: list[str]
    feasible: npt.NDArray[np.bool_]
    """Nodes that pass every predicate (resources aside)."""
    future_idle: npt.NDArray[np.float64]
    """Nodes x dims."""
    pod_room: npt.NDArray[np.int64]
    """Pods each node may still take."""
    node_names: list[str]
    victims: list[tuple[str, str, int, npt.NDArray[np.float64]]] = field(default_factory=list)
    """(pod key, node, priority, request over dims) of the running pods preemption may take."""


@dataclass
class RunResult:
    exists: bool = True
    bound: dict[str, str] = field(default_factory=dict)
    """Target pod key -> node, bound in the input."""
    placed: dict[str, str] = field(default_factory=dict)
    """Target pod key -> node, placed by the run."""
    pending: list[str] = field(default_factory=list)
    """Target pod keys left pending."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Target pod key -> its unschedulable message at the end."""
    blockers: list[Blocker] = field(default_factory=list)
    node_reasons: dict[str, int] = field(default_factory=dict)
    queue: Obj = field(default_factory=dict)
    failed: FailedTask | None = None
    state: SimulatedCluster | None = None
    """The cluster as the run left it (the other jobs placed, statuses written): what a
    suggestion is verified on (``explain_verify``)."""
    nodes: list[Obj] = field(default_factory=list)
    job_request: dict[str, str] = field(default_factory=dict)
    """What the pending tasks of the target's whole job ask (a pod's gang included)."""

    @property
    def admitted(self) -> bool:
        return self.exists and not self.pending

    @property
    def status(self) -> str:
        if self.pending:
            return "pending"
        return "placed" if self.placed else "bound"


def copy_objects(objects: list[Obj]) -> list[Obj]:
    return list(orjson.loads(orjson.dumps(objects)))


def parse_node_reasons(message: str) -> dict[str, int]:
    """The ``"<count> <reason>"`` parts of a ``0/N nodes are available: …`` message."""
    if " nodes are available" not in message or ": " not in message:
        return {}
    out: dict[str, int] = {}
    for part in message.split(": ", 1)[1].rstrip(".").split(", "):
        count, _, reason = part.partition(" ")
        if count.isdigit() and reason:
            out[reason] = out.get(reason, 0) + int(count)
    return out


def run_cluster(
    objects: list[Obj],
    target: Target,
    config: SchedulerConfig,
    host: PluginHost,
    scheduler_name: str,
    *,
    detail: bool = True,
) -> RunResult:
    """Simulate ``objects`` (which the API server's defaulting may fill in) until nothing
    changes; the target's fate. ``detail``: read every session, not only the last."""
    result = RunResult()
    if not target_exists(objects, target):
        result.exists = False
        return result
    mine = {_key(p) for p in target_pods(objects, target)}
    for pod in target_pods(objects, target):
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            result.bound[_key(pod)] = str(node)
    state = SimulatedCluster(scheduler_name, config.scheduler.default_queue)
    state.add(api_defaults(obj) for obj in objects)
    for cycle in range(1, MAX_CYCLES + 1):
        recorder = CycleRecorder(cycle)
        session = _ExplainSession.open(state.snapshot(), config, host, committer=recorder)
        assert isinstance(session, _ExplainSession)
        recorder.session = session
        try:
            try:
                run_actions(session)
            finally:
                session.close()
            outcome = collect(session)
            if detail or cycle == MAX_CYCLES:
                _read_session(session, target, mine, result)
        finally:
            session.dispose()
        state.clock += config.scheduler.period
        for task, node, _ in recorder.binds:
            state.bind(task, node)
            if task.key in mine:
                result.placed[task.key] = node
        for task, _eviction in recorder.evictions:
            state.evict(task)
        for task, node in recorder.nominations:
            state.nominate(task, node)
        state.write_statuses(outcome)
        if not (recorder.binds or recorder.evictions):
            break
    pending = state.pending()
    result.state = state
    result.nodes = [o for o in objects if o.get("kind") == "Node"]
    result.pending = sorted(k for k in mine if k in pending)
    if not result.pending:
        result.blockers, result.node_reasons, result.failed = [], {}, None
    # what the cache itself keeps out of every session (a PodGroup that does not exist, …)
    held = sorted({pending[k][1] for k in result.pending if pending[k][1]})
    result.blockers[:0] = [Blocker(0, "cache", "", why) for why in held]
    return result


def _read_session(
    session: _ExplainSession, target: Target, mine: set[str], result: RunResult
) -> None:
    """The target's reasons, queue figures and first failed task in this session."""
    tasks = [t for job in session.jobs.values() for t in job.tasks.values() if t.key in mine]
    job_uids = {t.job for t in tasks}
    books: list[tuple[_Book, set[str]]] = [
        (_book(session.job_reasons), job_uids),
        (_book(session.task_reasons), {t.uid for t in tasks}),
    ]
    entries: list[tuple[int, str, str, str]] = []
    for book, keys in books:
        for key in keys:
            if key in book:
                seq, action, plugin = book.writers.get(key, (0, "", ""))
                entries.append((seq, action, plugin, book[key]))
    blockers: list[Blocker] = []
    seen: set[str] = set()
    for seq, action, plugin, message in sorted(entries):
        if message not in seen:
            seen.add(message)
            plugin = plugin or session.authors.get(message, "")
            blockers.append(Blocker(seq, action, plugin, message))
    result.blockers = blockers
    by_uid = {t.uid: t for t in tasks}
    task_book = _book(session.task_reasons)
    failed = sorted(
        (task_book.writers.get(uid, (0, "", ""))[0], uid)
        for uid in by_uid
        if uid in task_book and by_uid[uid].status == TaskStatus.PENDING
    )
    result.reasons = {by_uid[uid].key: task_book[uid] for _, uid in failed}
    first = next(
        (by_uid[uid] for _, uid in failed if "nodes are available" in task_book[uid]), None
    )
    if first is None and failed:
        first = by_uid[failed[0][1]]
    if first is None:
        pending = [t for t in tasks if t.status == TaskStatus.PENDING]
        first = session.sort_tasks(pending)[0] if pending else None
    result.node_reasons = parse_node_reasons(task_book.get(first.uid, "")) if first else {}
    if first is not None:
        result.failed = _failed_task(session, first)
        rejecting = ",".join(
            part.name for part in session.predicate(first).parts if not part.mask.all()
        )
        for blocker in blockers:
            if not blocker.plugin and " nodes are available" in blocker.message:
                blocker.plugin = rejecting
    if job_uids:
        job = session.jobs[sorted(job_uids)[0]]
        result.queue = queue_figures(session, job.queue, tasks)
        waiting = [t for t in job.tasks.values() if t.status == TaskStatus.PENDING]
        result.job_request = queue_figures(session, job.queue, waiting)["request"]


def _book(book: dict[str, str]) -> _Book:
    assert isinstance(book, _Book)
    return book


def queue_figures(session: Session, name: str, tasks: list[TaskInfo]) -> Obj:
    """The queue's figures at session open as canonical quantities (unset limits absent),
    with what plugins contribute (``deserved``) and the target's whole request."""
    out: Obj = {"name": name}
    queue = session.queues.get(name)
    contributed = session.contributions.queue_fields.get(name, {})
    if queue is not None and queue.deserved is not None:
        out["deserved"] = resource_list(queue.deserved)
    if "deserved" in contributed:
        out["deserved"] = contributed["deserved"]
    allocated = None
    for job in session.jobs.values():
        if job.queue == name:
            allocated = job.allocated if allocated is None else allocated + job.allocated
    if allocated is not None:
        out["allocated"] = resource_list(allocated)
    if queue is not None and queue.capability is not None:
        out["capability"] = resource_list(queue.capability)
    if queue is not None and resource_list(queue.guarantee):
        out["guarantee"] = resource_list(queue.guarantee)
    request = None
    for task in tasks:
        request = task.resreq if request is None else request + task.resreq
    out["request"] = resource_list(request) if request is not None else {}
    return out


def _failed_task(session: Session, task: TaskInfo) -> FailedTask:
    table = session.table
    dims = list(table.dims)
    feasibility = session.predicate(task)
    room = (table.max_pods - table.pod_count).astype(np.int64)
    failed = FailedTask(
        key=task.key,
        request=np.asarray(table.vector(task.resreq), dtype=np.float64).copy(),
        dims=dims,
        feasible=np.asarray(feasibility.mask, dtype=np.bool_).copy(),
        future_idle=np.asarray(table.future_idle, dtype=np.float64).copy(),
        pod_room=room,
        node_names=[n.name for n in table.nodes],
    )
    running = [
        t
        for job in session.jobs.values()
        if job.uid != task.job
        for t in job.tasks.values()
        if t.status == TaskStatus.RUNNING and t.node_name
    ]
    if running:
        for victim in session.preemptable(task, running):
            vector = np.asarray(table.vector(victim.resreq), dtype=np.float64).copy()
            failed.victims.append((victim.key, str(victim.node_name), victim.priority, vector))
    return failed
