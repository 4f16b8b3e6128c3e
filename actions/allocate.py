"""Placing pending tasks on nodes with room: the ``allocate`` and ``backfill`` actions.

``allocate``: place the pending tasks of admitted jobs, queue by queue, gang by gang.

Which jobs. A Pending job is skipped when ``enqueue`` is among the configured actions (it has
not been admitted) and otherwise promoted to Inqueue here. A job that ``context.job_valid``
refuses is skipped with the refusal recorded in ``context.job_reasons``, and so is a job whose
queue is not in the context. Of the rest, each job's pending tasks that request something
(best-effort tasks are left to ``backfill``) form its worksheet, in task order.

The loop. Queues are taken in queue order and put back after every job step, so their order
(share, priority) is decided again with the allocations just made. A queue that
``context.overused`` reports is dropped for the rest of the action. From the queue, the first
job in job order takes a step with a fresh statement: its tasks are taken in order; a task that
``context.allocatable(queue, task)`` refuses is skipped; the others go to a node (below). The
step ends when the job is ready (``context.job_ready``), when the worksheet is empty, or when a
task found no node and the job cannot become ready without it. Then:

* ready: the statement is committed (binds go to the committer), and the job is put back if
  its worksheet still has tasks;
* not ready but pipelined (``context.job_pipelined``): the statement is kept, neither committed
  nor discarded, so its placements hold their resources for the rest of the session;
* otherwise the statement is discarded and the job leaves the loop.

Choosing a node, with numpy over the whole ``NodeTable`` (no loop over (task, node) pairs):
feasible nodes pass ``context.predicate(task)`` and have the request within their future idle
resources (idle + releasing - pipelined, all dimensions, ``FIT_TOLERANCE`` of slack). Nodes where
the request also fits the idle resources are preferred; only when there is none are the nodes
that fit only once releasing tasks are gone used. A single candidate is taken as is; otherwise
``context.choose_node`` chooses as ``context.best_node`` would over ``context.node_scores``,
from the shape's ``context.candidates`` that the session keeps current row by row. The task is
allocated when it fits idle, pipelined otherwise. A task with no feasible node gets, in
``context.task_reasons``, the kube-scheduler style message ``0/N nodes are available: …``
counting each predicate reason once per node, and ``Insufficient <resource>`` once per node and
per short dimension for the nodes that passed every predicate but lack resources; the parts are
sorted as strings.

A pod whose ``status.nominatedNodeName`` names a node where it is feasible (preempt freed that
room for it in an earlier cycle) goes there, before any scoring, as Volcano's allocate tries the
nominated node first.

Arguments: ``predicateErrorCacheEnable`` (bool, default true): once a task of a role (with a
given request) has found no node, the job's other tasks of that role and request are given the
same reason without searching again during this action.

Differences from Volcano:

* no hyper-nodes (network topology), sub-jobs, sharding, scheduling gates or pre-predicates;
  every node is searched (no ``percentageOfNodesToFind`` sampling);
* the error cache is keyed by role *and* request, and is off for tasks without a role, since
  pumice does not assume that such tasks are identical;
* a task skipped by ``allocatable`` and the jobs left in an overused queue get a reason too, so
  ``kubectl describe`` says why they wait. Node reasons come first: a task that no node could
  take even if its queue allowed it is given the ``0/N nodes are available`` message; otherwise
  the queue's own figures, as ``context.allocatable_reason`` / ``context.overused_reason``
  explain them (``queue q: cpu allocated 14 + request 2 exceeds deserved 15``);
* the message is kube-scheduler's (``0/N nodes are available: `` + the ``"<count> <reason>"``
  parts sorted as strings + ``.``), not Volcano's "are unavailable" wording.

**``backfill``** (``BackfillAction``, the second pass over the same jobs): place best-effort
tasks (pods that request nothing) on any node that admits them. Jobs that are admitted (not
Pending), valid (``context.job_valid``) and whose queue is in the session are taken in queue
order, then job order; their pending best-effort tasks in task order. Since such a task requests
no resources, only the predicates decide where it may go (``context.predicate(task)``; the
pod-count limit is the predicates' business too); among those nodes ``context.node_scores`` and
``context.best_node`` choose. The task is allocated in a statement per job, and the statement is
committed as soon as ``context.job_ready(job)`` holds (a best-effort task counts as ready while
pending, so a job of best-effort tasks is ready from the start). A task that no node admits gets
the predicates' ``0/N nodes are available: …`` in ``context.task_reasons``.

Differences from Volcano's backfill:

* a node whose idle resources are negative in some dimension (overcommitted by running pods)
  takes no new task here either, since pumice's node accounting refuses an allocation there;
  it is reported as ``Insufficient <resource>``;
* Volcano allocates outside any statement and binds every Allocated task of the job once it is
  ready; pumice commits the job's own backfill statement, and discards what it placed for a job
  that never became ready (nothing would have been bound for it anyway);
* there are no pipelined best-effort tasks to undo first (allocate never pipelines them), no
  pre-predicates, scheduling gates or sharding.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import (
    ALLOCATED_STATUSES,
    FIT_TOLERANCE,
    Action,
    ActionContext,
    Arguments,
    ArgumentSpec,
    JobInfo,
    JobInvalid,
    QueueInfo,
    Resource,
    Statement,
    StatementError,
    TaskInfo,
    TaskStatus,
)

BoolMatrix = npt.NDArray[np.bool_]

INQUEUE = "Inqueue"
ERROR_CACHE = "predicateErrorCacheEnable"


def nominated_node(task: TaskInfo) -> str:
    """The pod's ``status.nominatedNodeName`` (set when preempt freed room for it), or ""."""
    pod = task.pod
    status = pod.get("status") if pod else None  # asked per task: no dicts made for a default
    return str(status.get("nominatedNodeName") or "") if status else ""


def describe_invalid(invalid: JobInvalid) -> str:
    """One line for a ``JobInvalid``: ``reason: message`` (either part may be missing)."""
    if invalid.reason and invalid.message:
        return f"{invalid.reason}: {invalid.message}"
    return invalid.message or invalid.reason or "job is not valid"


@dataclass(slots=True)
class _JobState:
    """What the action remembers of one job across its steps."""

    job: JobInfo
    queue: QueueInfo
    worksheet: list[TaskInfo]
    """Pending tasks still to try, the next one last."""
    failed_roles: set[str] = field(default_factory=set)
    errors: dict[tuple[str, Resource], str] = field(default_factory=dict)


class AllocateAction(Action):
    """Volcano's allocate action (see the module docstring)."""

    declared_arguments = (
        ArgumentSpec(ERROR_CACHE, "bool", True, doc="reuse a task shape's predicate failures"),
    )

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.error_cache: bool = arguments.get_bool(ERROR_CACHE, True)

    def execute(self, context: ActionContext) -> None:
        _Run(context, self.error_cache).run()


class _Run:
    """One execution of the action over one context."""

    def __init__(self, context: ActionContext, error_cache: bool) -> None:
        self.context = context
        self.error_cache = error_cache
        self._seq = itertools.count()
        self._no_node_said: dict[tuple[str, Hashable, int], str | None] = {}

    # -- which jobs -------------------------------------------------------------------------

    def _candidates(self) -> Iterator[_JobState]:
        context = self.context
        enqueue_configured = "enqueue" in context.configured_actions
        for job in list(context.jobs.values()):
            if job.is_pending():
                if enqueue_configured:
                    continue
                admit = context.statement()
                admit.enqueue(job, INQUEUE)
                admit.commit()
            invalid = context.job_valid(job)
            if invalid is not None:
                context.job_reasons[job.uid] = describe_invalid(invalid)
                continue
            queue = context.queues.get(job.queue)
            if queue is None:
                context.job_reasons[job.uid] = f"queue {job.queue} not found"
                continue
            if job.count(TaskStatus.PENDING) == job.pending_best_effort_num:
                continue
            job = context.job_for_update(job)
            tasks = [t for t in job.tasks_in(TaskStatus.PENDING) if not t.best_effort]
            worksheet = context.sort_tasks(tasks)
            worksheet.reverse()
            yield _JobState(job, queue, worksheet)

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        context = self.context
        jobs_of: dict[str, list[tuple[Any, int, _JobState]]] = {}
        queues: dict[str, QueueInfo] = {}
        for state in self._candidates():
            queues[state.queue.name] = state.queue
            heap = jobs_of.setdefault(state.queue.name, [])
            heap.append((context.job_order_key(state.job), next(self._seq), state))
        for heap in jobs_of.values():
            heapq.heapify(heap)
        queue_heap = [(context.queue_order_key(q), next(self._seq), q) for q in queues.values()]
        heapq.heapify(queue_heap)
        while queue_heap:
            _, _, queue = heapq.heappop(queue_heap)
            jobs = jobs_of[queue.name]
            if context.overused(queue):
                self._held_by_overused(queue, [left for _, _, left in jobs])
                continue
            if not jobs:
                continue
            _, _, state = heapq.heappop(jobs)
            statement = self._step(state)
            if statement is not None and context.job_ready(state.job):
                statement.commit()
                if state.worksheet:
                    heapq.heappush(jobs, (context.job_order_key(state.job), next(self._seq), state))
            heapq.heappush(queue_heap, (context.queue_order_key(queue), next(self._seq), queue))

    def _step(self, state: _JobState) -> Statement | None:
        """Place tasks of one job until it is ready; the statement, or None if discarded."""
        context = self.context
        job, queue, worksheet = state.job, state.queue, state.worksheet
        statement = context.statement()
        # looked up once per step, used per task
        allocatable, job_ready, task_reasons = (
            context.allocatable,
            context.job_ready,
            context.task_reasons,
        )
        error_cache, place = self.error_cache, self._place
        while worksheet:
            task = worksheet.pop()
            if not allocatable(queue, task):
                task_reasons[task.uid] = self._no_node(queue, task) or (
                    context.allocatable_reason(queue, task)
                    or f"queue {queue.name} does not allow more allocations now"
                )
                continue
            key = (task.role, task.resreq) if error_cache and task.role else None
            reason = state.errors.get(key) if key is not None else None
            if reason is None:
                reason = place(statement, task)
            if reason is not None:
                task_reasons[task.uid] = reason
                state.failed_roles.add(task.role)
                if key is not None:
                    state.errors[key] = reason
                if self._keep_going(state):
                    continue
                break
            task_reasons.pop(task.uid, None)
            if job_ready(job):
                break
        if job_ready(job) or context.job_pipelined(job):
            return statement
        statement.discard()
        return None

    def _keep_going(self, state: _JobState) -> bool:
        """After a task found no node: may the job still become ready without that role?"""
        job = state.job
        if job.min_available == len(job.tasks):
            return False
        if job.min_available < sum(job.min_task_member.values()):
            left = sum(
                1 for t in job.tasks_in(TaskStatus.PENDING) if t.role not in state.failed_roles
            )
            return job.ready_task_num + left >= job.min_available
        allocated = Counter(t.role for t in job.tasks_in(ALLOCATED_STATUSES))
        for role in state.failed_roles:
            minimum = job.min_task_member.get(role, 0)
            if minimum and allocated[role] < minimum:
                return False
        return True

    # -- one task ---------------------------------------------------------------------------

    def _place(self, statement: Statement, task: TaskInfo) -> str | None:
        """Allocate or pipeline ``task`` on the best node; None, or why it could not be."""
        context = self.context
        table = context.table
        candidates = context.candidates(task)
        if not candidates.future_count:
            return self.context.why_not(task, candidates.feasibility())
        nominated = nominated_node(task)
        node_name: str | None
        if nominated and nominated in table and candidates.future[table.row(nominated)]:
            # the room preempt freed for this pod: take it before anyone else can
            now = bool(candidates.now[table.row(nominated)])
            node_name = nominated
        else:
            now = candidates.now_count > 0
            node_name = context.choose_node(task, candidates, now)
        if node_name is None:  # pragma: no cover - choose_node names a node whenever feasible
            return self.context.why_not(task, candidates.feasibility())
        try:
            if now:
                statement.allocate(task, node_name)
            else:
                statement.pipeline(task, node_name)
        except StatementError as exc:
            return str(exc)
        return None

    # -- why a task waits ---------------------------------------------------------------------

    def _held_by_overused(self, queue: QueueInfo, left: list[_JobState]) -> None:
        """Reasons for the jobs left in a queue that has reached its share: a task that fits
        no node is told so; for the rest, the queue's figures."""
        context = self.context
        why = context.overused_reason(queue) or f"queue {queue.name} is overused"
        for state in left:
            context.job_reasons.setdefault(state.job.uid, why)
            for task in state.worksheet:
                no_node = self._no_node(queue, task)
                if no_node is not None:
                    context.task_reasons[task.uid] = no_node

    def _no_node(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        """``no_node_message`` for a task its queue holds back, kept per queue, shape and
        table version."""
        key = (queue.name, task.shape, self.context.table.version)
        if key not in self._no_node_said:
            self._no_node_said[key] = self.context.no_node_message(task)
        return self._no_node_said[key]


class BackfillAction(Action):
    """Place best-effort tasks of admitted jobs (see the module docstring)."""

    declared_arguments = ()  # no arguments: any given is warned about

    def execute(self, context: ActionContext) -> None:
        work: dict[str, list[tuple[JobInfo, list[TaskInfo]]]] = {}
        queues: dict[str, QueueInfo] = {}
        for job in list(context.jobs.values()):
            if job.is_pending():
                continue
            tasks = [t for t in job.tasks_in(TaskStatus.PENDING) if t.best_effort]
            if not tasks:
                continue
            queue = context.queues.get(job.queue)
            if queue is None or context.job_valid(job) is not None:
                continue
            job = context.job_for_update(job)
            tasks = [t for t in job.tasks_in(TaskStatus.PENDING) if t.best_effort]
            queues[queue.name] = queue
            work.setdefault(queue.name, []).append((job, tasks))
        for queue in context.sort_queues(queues.values()):
            entries = work[queue.name]
            order = {id(job): context.job_order_key(job) for job, _ in entries}
            entries.sort(key=lambda entry: order[id(entry[0])])
            for job, tasks in entries:
                self._backfill_job(context, job, context.sort_tasks(tasks))

    def _backfill_job(self, context: ActionContext, job: JobInfo, tasks: list[TaskInfo]) -> None:
        statement = context.statement()
        for task in tasks:
            reason = self._place(context, statement, task)
            if reason is not None:
                context.task_reasons[task.uid] = reason
                continue
            context.task_reasons.pop(task.uid, None)
            if context.job_ready(job):
                statement.commit()
        statement.discard()

    @staticmethod
    def _place(context: ActionContext, statement: Statement, task: TaskInfo) -> str | None:
        table = context.table
        feasibility = context.predicate(task)
        overcommitted = table.idle < -FIT_TOLERANCE
        mask = feasibility.mask & ~overcommitted.any(axis=1)
        if not mask.any():
            return feasibility.message(overcommitted, table.dims)
        node = context.best_node(task, context.node_scores(task, mask), mask)
        if node is None:  # pragma: no cover - best_node names a node whenever one is feasible
            return f"0/{len(table)} nodes are available."
        try:
            statement.allocate(task, node)
        except StatementError as exc:
            return str(exc)
        return None
