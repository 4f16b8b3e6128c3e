"""One run of ``pumice explain``: the target's fate in a simulated run of the given objects.

``run_cluster`` feeds a copy of the objects to the daemon's cache through the informer
handlers (``simulate_cluster.SimulatedCluster``) and runs cycles as ``pumice simulate`` does,
with the same recorder and the same number of cycles, until nothing changes. Each session is
an ``_ExplainSession``: the ``Session`` whose reason books (``job_reasons`` /
``task_reasons``) also note *who* wrote each entry — the action running (``session.action``)
and the plugin whose hook was on the call stack, found by identity among the session's own
plugin instances (never by type), or the action itself ("" plugin) when none was. From the
last session that saw the target pending (or the one that placed it) it keeps the queue's
figures at that session's open, and what a counterfactual search needs about the first failed
task of the target's job (a pod's gang: Volcano's "origin reason"): the node reasons, the
predicate mask, the nodes' future idle resources and the victims the session's own
``preemptable`` hooks allow (conformance's protections included, whether or not preempt is
configured).

A verifying run (``until_placed``) is the same run on changed objects, stopped as soon as the
target is placed; a *pace* (the daemon's) is called between chunks of the feed, before each
session and at each of its binds.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice.commands.cluster_input import api_defaults
from pumice.commands.explain_target import (
    Target,
    _key,
    classify,
    empty_podgroup,
    job_target,
    queue_name,
    target_exists,
    target_pods,
)
from pumice.commands.simulate import DEFAULT_CYCLES, CycleRecorder
from pumice.commands.simulate_cluster import FEED_ORDER, SimulatedCluster
from pumice.daemon.outcome import collect
from pumice.framework.action import run_actions
from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.framework.session import Session
from pumice.model import QueueInfo, Resource, TaskInfo, TaskStatus, resource_list
from pumice.plain import Obj

Pace = Callable[[], None]
"""Called between steps of a run (the daemon's search waits there while binds are due)."""
MAX_CYCLES = DEFAULT_CYCLES
"""As many cycles as ``pumice simulate`` runs by default, so both decide alike."""
FEED_CHUNK = 1000
CLOSE = "session-close"
"""The "action" of a reason written outside every action (a plugin's session_close)."""


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


class _TargetPlaced(BaseException):
    """Ends a verifying run's session at the bind that places the target's last waiting pod.
    A BaseException, so that no ``except Exception`` on the way (a statement's commit takes a
    committer's error for a failed bind) stops it."""


class _PacedRecorder(CycleRecorder):
    """``pumice simulate``'s committer, pausing at every decision when a pace is given; with
    ``waiting`` (a verifying run), it ends the session once every one of them is bound:
    nothing the session does afterwards takes a committed bind out of simulate's report."""

    def __init__(
        self, cycle: int, *, pace: Pace | None = None, waiting: set[str] | None = None
    ) -> None:
        super().__init__(cycle)
        self.pace = pace
        self.waiting = waiting

    def bind(self, task: TaskInfo, node: str) -> None:
        if self.pace is not None:
            self.pace()
        super().bind(task, node)
        if self.waiting is not None:
            self.waiting.discard(task.key)
            if not self.waiting:
                raise _TargetPlaced


@dataclass
class Blocker:
    seq: int
    action: str
    plugin: str
    message: str


@dataclass
class FailedTask:
    """What the search needs about the job's first failed task (at the last session)."""

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
    finished: list[str] = field(default_factory=list)
    """Target pods whose phase is Succeeded or Failed."""
    placed: dict[str, str] = field(default_factory=dict)
    """Target pod key -> node, placed by the run."""
    pending: list[str] = field(default_factory=list)
    """Target pod keys left waiting: pumice's left pending, gated pods, another scheduler's."""
    job_pending: list[str] = field(default_factory=list)
    """The pods of the target's whole job (a pod's gang included) pumice left pending: what a
    change must make room for."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Target pod key -> its unschedulable message at the end."""
    blockers: list[Blocker] = field(default_factory=list)
    node_reasons: dict[str, int] = field(default_factory=dict)
    queue: Obj = field(default_factory=dict)
    failed: FailedTask | None = None
    job_request: dict[str, str] = field(default_factory=dict)
    """What the pending tasks of the target's whole job ask (a pod's gang included)."""

    @property
    def status(self) -> str:
        """``pending`` while any pod of the target waits (and for a PodGroup without pods),
        ``placed`` when the run places the rest, ``bound`` when every pod is bound (finished
        ones aside), ``finished`` when every pod has finished."""
        if self.pending:
            return "pending"
        if self.placed:
            return "placed"
        if self.bound:
            return "bound"
        return "finished" if self.finished else "pending"


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


def feed(state: SimulatedCluster, objects: list[Obj], pace: Pace | None = None) -> None:
    """Every object as an ADDED event, as ``pumice simulate`` feeds them — the API server's
    defaults filled in in input order (uids made for objects without one follow it), then
    delivered in ``SimulatedCluster.add``'s order of kinds — in chunks, with a pause between
    them when paced."""
    defaulted = [api_defaults(obj) for obj in objects]
    ordered = sorted(defaulted, key=lambda o: FEED_ORDER.get(str(o.get("kind")), 5))
    for start in range(0, len(ordered), FEED_CHUNK):
        if pace is not None:
            pace()
        state.add(ordered[start : start + FEED_CHUNK])


def run_cluster(
    objects: list[Obj],
    target: Target,
    config: SchedulerConfig,
    host: PluginHost,
    scheduler_name: str,
    *,
    detail: bool = True,
    until_placed: bool = False,
    pace: Pace | None = None,
) -> RunResult:
    """Simulate ``objects`` as ``pumice simulate`` does (same feed, same cycles, same stop:
    a cycle that binds and evicts nothing) and tell the target's fate. The objects get what
    the API server's defaulting fills in. ``detail``: read every session's reasons and
    figures; ``until_placed``: stop as soon as every pod of the target is placed (what
    verifying a change needs: later cycles cannot take a placement back from the report)."""
    result = RunResult()
    if not target_exists(objects, target):
        result.exists = False
        return result
    pods = classify(objects, target, scheduler_name)
    result.bound, result.finished = pods.bound, pods.finished
    mine = set(pods.ours)
    job_pods = {_key(p) for p in target_pods(objects, job_target(objects, target))} | mine
    result.queue = {"name": queue_name(objects, target, config.scheduler.default_queue)}
    state = SimulatedCluster(scheduler_name, config.scheduler.default_queue)
    feed(state, objects, pace)
    read = detail  # until the session that places the target: its figures are the answer
    for cycle in range(1, MAX_CYCLES + 1):
        if pace is not None:
            pace()
        unplaced = (mine - set(result.placed)) if until_placed and mine else None
        recorder = _PacedRecorder(cycle, pace=pace, waiting=unplaced)
        # a run that only verifies needs no reason books: the plain session, as simulate's
        kind = _ExplainSession if detail else Session
        session = kind.open(state.snapshot(), config, host, committer=recorder)
        recorder.session = session
        try:
            opened = _allocated(session) if read else {}
            try:
                run_actions(session)
            except _TargetPlaced:
                session.is_open = False  # no session_close over a statement cut off mid-commit
                raise
            finally:
                session.close()
            outcome = collect(session)
            if read:
                assert isinstance(session, _ExplainSession)
                _read_session(session, mine, result, opened)
        except _TargetPlaced:
            result.placed.update((t.key, n) for t, n, _ in recorder.binds if t.key in mine)
            return result
        finally:
            session.dispose()
        binds = recorder.binds  # a list built anew at each reading: 10,000 binds a session
        for task, node, _ in binds:
            if task.key in mine:
                result.placed[task.key] = node
        if mine and mine <= set(result.placed):
            read = False
            if until_placed:
                return result
        state.clock += config.scheduler.period
        for claim, volume, node in recorder.volume_writes:
            state.bind_volume(claim_key=claim, volume=volume, node=node)
        for task, node, _ in binds:
            state.bind(task, node)
        evictions = recorder.evictions
        for task, _eviction in evictions:
            state.evict(task)
        for task, node in recorder.nominations:
            state.nominate(task, node)
        state.write_statuses(outcome)
        if not (binds or evictions):
            break
    waiting = state.pending()
    result.pending = sorted(k for k in mine if k in waiting)
    result.job_pending = sorted(k for k in job_pods if k in waiting)
    if not result.pending:
        result.blockers, result.node_reasons, result.failed = [], {}, None
    # what keeps pods out of every session: the cache's verdict on a bad object, a gate,
    # another scheduler, a PodGroup that has no pods yet
    held = sorted({waiting[k][1] for k in result.pending if waiting[k][1]})
    held += [why for _, why in pods.held]
    if empty_podgroup(objects, target):
        held.append(empty_podgroup(objects, target))
    result.blockers[:0] = [Blocker(0, "cache", "", why) for why in held]
    result.pending = sorted({*result.pending, *(key for key, _ in pods.held)})
    return result


def _allocated(session: Session) -> dict[str, Resource]:
    """Queue -> what its jobs hold at session open."""
    out: dict[str, Resource] = {}
    for job in session.jobs.values():
        held = out.get(job.queue)
        out[job.queue] = job.allocated if held is None else held + job.allocated  # immutable
    return out


def _read_session(
    session: _ExplainSession, mine: set[str], result: RunResult, opened: dict[str, Resource]
) -> None:
    """The target's reasons, queue figures and its job's first failed task in this session."""
    tasks = [t for job in session.jobs.values() for t in job.tasks.values() if t.key in mine]
    job_uids = {t.job for t in tasks}
    job_tasks = {t.uid: t for uid in job_uids for t in session.jobs[uid].tasks.values()}
    task_book = _book(session.task_reasons)
    failed = sorted(
        (task_book.writers.get(uid, (0, "", ""))[0], uid)
        for uid, task in job_tasks.items()
        if uid in task_book and task.status == TaskStatus.PENDING
    )
    # a gang's "origin reason": its first task that no node could hold
    first = next(
        (job_tasks[uid] for _, uid in failed if "nodes are available" in task_book[uid]), None
    )
    if first is None and failed:
        first = job_tasks[failed[0][1]]
    if first is None:
        pending = [t for t in job_tasks.values() if t.status == TaskStatus.PENDING]
        first = session.sort_tasks(pending)[0] if pending else None
    task_uids = {t.uid for t in tasks} | ({first.uid} if first is not None else set())
    books: list[tuple[_Book, set[str]]] = [
        (_book(session.job_reasons), job_uids),
        (task_book, task_uids),
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
    result.reasons = {
        t.key: task_book[t.uid]
        for t in tasks
        if t.uid in task_book and t.status == TaskStatus.PENDING
    }
    result.node_reasons = parse_node_reasons(task_book.get(first.uid, "")) if first else {}
    result.failed = None
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
        result.queue = queue_figures(session, job.queue, tasks, opened.get(job.queue))
        waiting = [t for t in job.tasks.values() if t.status == TaskStatus.PENDING]
        result.job_request = queue_figures(session, job.queue, waiting, None)["request"]


def _book(book: dict[str, str]) -> _Book:
    assert isinstance(book, _Book)
    return book


def queue_figures(
    session: Session, name: str, tasks: list[TaskInfo], allocated: Resource | None
) -> Obj:
    """The queue's figures at session open as canonical quantities (unset limits absent),
    with what plugins contribute (``deserved``) and the target's whole request."""
    out: Obj = {"name": name}
    queue = session.queues.get(name)
    contributed = session.contributions.queue_fields.get(name, {})
    if queue is not None and queue.deserved is not None:
        out["deserved"] = resource_list(queue.deserved)
    if "deserved" in contributed:
        out["deserved"] = contributed["deserved"]
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
