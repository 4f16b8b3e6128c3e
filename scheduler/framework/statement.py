"""Statements: transactions over a session.

A statement records allocations, pipelines and evictions. Each operation changes the session
at once (task status, job index, node accounting) and fires the plugins' ``on_allocate`` /
``on_deallocate`` synchronously, so plugins that keep shares stay current. ``commit`` hands the
decisions to the session's committer (binds and evictions); ``discard`` undoes the operations in
reverse order. A statement needs only the shape of its session (``StatementTarget``), so this
module does not depend on the session's.
"""

from __future__ import annotations

import enum
import logging
from typing import NamedTuple, Protocol

from pumice.framework.committer import Committer
from pumice.framework.view import Viewed
from pumice.model.node import NodeAccountingError
from pumice.model.objects import JobInfo, TaskInfo
from pumice.model.tasks import PREEMPTABLE_STATUSES, TaskStatus
from pumice.plain import PumiceError

log = logging.getLogger("pumice.statement")


class StatementError(PumiceError):
    """An operation could not be applied; the session is as it was before it."""


class StatementTarget(Viewed, Protocol):
    """What a statement changes and tells: the session as its views see it (its snapshot with
    its own copies of jobs and tasks, its nodes), the plugins' events, the committer, and the
    explanation switch."""

    @property
    def committer(self) -> Committer: ...

    @property
    def explain(self) -> bool: ...

    def record_scores(self, task: TaskInfo) -> None: ...

    def fire_allocate(self, task: TaskInfo) -> None: ...

    def fire_deallocate(self, task: TaskInfo) -> None: ...

    def fire_job_enqueued(self, job: JobInfo) -> None: ...

    def nominate(self, task: TaskInfo, node: str) -> None: ...

    def implemented(self, hook: str) -> bool: ...

    def pre_bind(self, task: TaskInfo, node: str) -> None: ...


class OpKind(enum.Enum):
    ALLOCATE = "allocate"
    PIPELINE = "pipeline"
    EVICT = "evict"
    ENQUEUE = "enqueue"


_PENDING, _BINDING = TaskStatus.PENDING, TaskStatus.BINDING
_ALLOCATE, _EVICT = OpKind.ALLOCATE, OpKind.EVICT
_new_tuple = tuple.__new__
"""An ``Operation`` made per placement without the named tuple's Python ``__new__`` frame."""


class Operation(NamedTuple):
    """One statement operation (a tuple: made per placement, where a frozen dataclass's
    ``__init__`` costs several times more)."""

    kind: OpKind
    task: TaskInfo | None
    node: str
    reason: str = ""
    previous: TaskStatus = TaskStatus.PENDING
    job: JobInfo | None = None
    previous_phase: str = ""


class Statement:
    """A transaction: allocate / pipeline / evict, then commit or discard."""

    def __init__(self, session: StatementTarget) -> None:
        self._session = session
        self.operations: list[Operation] = []

    # -- operations -------------------------------------------------------------------------

    def allocate(self, task: TaskInfo, node: str) -> None:
        """Give ``task`` a place on ``node`` now; it must fit the node's idle resources."""
        self._place(task, node, TaskStatus.ALLOCATED, OpKind.ALLOCATE)

    def pipeline(self, task: TaskInfo, node: str) -> None:
        """Promise ``task`` a place on ``node`` once releasing tasks have gone."""
        self._place(task, node, TaskStatus.PIPELINED, OpKind.PIPELINE)

    def _place(self, task: TaskInfo, node_name: str, status: TaskStatus, kind: OpKind) -> None:
        session = self._session
        try:  # ``_own``, inline: once per placement
            job, task = session.snapshot.writable_task(task)
        except KeyError as exc:
            raise StatementError(
                f"task {task.key} belongs to no job in this session ({task.job})"
            ) from exc
        if task.status != _PENDING:
            raise StatementError(f"cannot {kind.value} {task.key}: it is {task.status.name}")
        node = session.nodes.get(node_name)
        if node is None:
            raise StatementError(f"cannot {kind.value} {task.key}: no node {node_name!r}")
        if session.explain:
            session.record_scores(task)
        task.node_name = node_name
        job.update_task_status(task, status)
        try:
            node.add_task(task)
        except NodeAccountingError as exc:
            job.update_task_status(task, _PENDING)
            task.node_name = None
            raise StatementError(str(exc)) from exc
        try:
            session.fire_allocate(task)
        except Exception as exc:
            node.remove_task(task)
            job.update_task_status(task, _PENDING)
            task.node_name = None
            raise StatementError(f"{kind.value} of {task.key} vetoed: {exc}") from exc
        placed = (kind, task, node_name, "", _PENDING, None, "")  # the defaults, in order
        self.operations.append(_new_tuple(Operation, placed))

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Mark a bound or running task Releasing; its resources count as releasing."""
        job, task = self._own(task)
        if not task.status & PREEMPTABLE_STATUSES or task.node_name is None:
            raise StatementError(f"cannot evict {task.key}: it is {task.status.name}")
        node = self._session.nodes[task.node_name]
        previous = task.status
        job.update_task_status(task, TaskStatus.RELEASING)
        node.update_task(task)
        self._session.fire_deallocate(task)
        self.operations.append(Operation(OpKind.EVICT, task, node.name, reason, previous))

    def enqueue(self, job: JobInfo, phase: str = "Inqueue") -> None:
        """Admit a Pending job: its phase becomes ``phase`` in the session, and every plugin's
        ``job_enqueued`` is told. Undone by ``discard``; the phase is written back by whoever
        writes PodGroup status after the cycle."""
        own = self._session.snapshot.writable_job(job.uid)
        previous = own.phase
        own.phase = phase
        self._session.fire_job_enqueued(own)
        self.operations.append(
            Operation(OpKind.ENQUEUE, None, "", job=own, previous_phase=previous)
        )

    def merge(self, other: Statement) -> None:
        """Take over ``other``'s operations (which must be on the same session)."""
        if other._session is not self._session:
            raise StatementError("cannot merge statements of different sessions")
        self.operations.extend(other.operations)
        other.operations = []

    # -- ending -----------------------------------------------------------------------------

    def discard(self) -> None:
        """Undo every operation, last first."""
        for op in reversed(self.operations):
            if op.kind is OpKind.ENQUEUE:
                assert op.job is not None
                op.job.phase = op.previous_phase
            elif op.kind is OpKind.EVICT:
                self._unevict(op)
            else:
                assert op.task is not None
                self._unplace(op.task)
        self.operations = []

    def commit(self) -> list[tuple[Operation, Exception]]:
        """Send evictions and binds to the committer; pipelines stay in the session.

        An allocation becomes Binding. Every allocation first goes through the plugins'
        ``pre_bind`` (all of them before the first bind, so the committer knows a gang's writes
        before it binds any of its pods); one that a plugin fails there is not bound. In a
        statement that evicted tasks, every pipelined task (a preemptor waiting for the room)
        is also nominated for its node (``Session.nominate``). A committer failure undoes that
        one operation and is returned (and logged); the rest still go.
        """
        failures: list[tuple[Operation, Exception]] = []
        session = self._session
        committer = session.committer
        nodes = session.nodes
        evicting = any(op.kind is _EVICT for op in self.operations)
        refused = self._pre_bind()
        jobs = session.jobs
        for op in self.operations:
            task = op.task
            if task is None:  # a phase change: nothing to send
                continue
            try:
                if refused and task.uid in refused:
                    raise refused[task.uid]
                kind = op.kind
                if kind is _ALLOCATE:
                    job = jobs.get(task.job)  # ``_job``, inline: once per placement
                    if job is None:
                        job = self._job(task)  # raises
                    job.update_task_status(task, _BINDING)
                    nodes[op.node].update_task(task)
                    committer.bind(task, op.node)
                elif kind is OpKind.PIPELINE:
                    if evicting:
                        session.nominate(task, op.node)
                elif kind is _EVICT:
                    committer.evict(task, op.reason)
            except Exception as exc:
                log.warning("commit of %s %s failed: %s", op.kind.value, task.key, exc)
                failures.append((op, exc))
                if op.kind is OpKind.EVICT:
                    self._unevict(op)
                elif op.kind is OpKind.ALLOCATE:
                    self._unplace(task)
        self.operations = []
        return failures

    def _pre_bind(self) -> dict[str, Exception]:
        """``pre_bind`` of every allocation; the tasks a plugin failed there, with why."""
        refused: dict[str, Exception] = {}
        if not self._session.implemented("pre_bind"):
            return refused
        for op in self.operations:
            if op.kind is OpKind.ALLOCATE and op.task is not None:
                try:
                    self._session.pre_bind(op.task, op.node)
                except Exception as exc:
                    refused[op.task.uid] = exc
        return refused

    # -- undo helpers -----------------------------------------------------------------------

    def _unplace(self, task: TaskInfo) -> None:
        node = self._session.nodes[task.node_name or ""]
        node.remove_task(task)
        self._job(task).update_task_status(task, TaskStatus.PENDING)
        self._session.fire_deallocate(task)  # plugins still see which node it leaves
        task.node_name = None

    def _unevict(self, op: Operation) -> None:
        assert op.task is not None
        self._job(op.task).update_task_status(op.task, op.previous)
        self._session.nodes[op.node].update_task(op.task)
        try:
            self._session.fire_allocate(op.task)
        except Exception:
            log.exception("a plugin failed while %s was restored", op.task.key)

    def _own(self, task: TaskInfo) -> tuple[JobInfo, TaskInfo]:
        """The session's own (writable) copies of ``task`` and its job."""
        try:
            return self._session.snapshot.writable_task(task)
        except KeyError as exc:
            raise StatementError(
                f"task {task.key} belongs to no job in this session ({task.job})"
            ) from exc

    def _job(self, task: TaskInfo) -> JobInfo:
        job = self._session.jobs.get(task.job)
        if job is None:
            raise StatementError(f"task {task.key} belongs to no job in this session ({task.job})")
        return job
