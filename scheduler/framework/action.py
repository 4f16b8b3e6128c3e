"""The action contract: ``Action``, the ``ActionContext`` it is given, how a session runs its
actions, and the predicates on a node once its victims are gone (``predicate_once_gone``).

An action is a class (subclass of ``pumice.Action``) with an ``execute(context)`` method; a
fresh instance is built for every session from its ``configurations`` arguments and run once,
in the configured order (``run_actions``). It is handed an ``ActionContext``, never the session:
the ordered queues, jobs and tasks, the candidates and the choice of a node, statements, victims
and the books of pending reasons. Each operation applies the tier rules of the hook behind it
(``pumice.framework.hookspecs``), so an action decides *what* to try and the plugins decide
*whether* and *where*. ``docs/actions.md`` is this contract for authors of third-party actions.

**Predicates on a node as it will be once pods have left it** (``predicate_once_gone``, what
``ActionContext.predicate_once_gone`` asks for preempt and reclaim). An eviction does not free a
node at once: the evicted (Releasing) pods stay on it, counted in its pods and its used
resources, until the kubelet has stopped them. A preemptor is pipelined to run once they are
gone, so whether it may go there is a question about the node *without* them: the pod count,
host ports, and — for the pod-to-pod filters — the pods whose anti-affinity kept it out, which
may be among the victims. ``predicate_once_gone`` asks every predicate plugin of the shape cache
(enabled, in tier order) about one node while its Releasing tasks, and any others given, are
taken off it (``NodeInfo.without``: ``node.tasks`` and the node's row read as if they had gone,
and are restored exactly afterwards). Victims evicted through a statement have also been through
the plugins' ``on_deallocate``; a plugin that keeps counting them there (the pod-to-pod filters:
a terminating pod still counts for InterPodAffinity) sees them gone by their absence from
``node.tasks``. The answer is evaluated afresh, never from the shape cache: it describes a state
the session does not hold.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from pumice.framework.argspec import ArgumentSpec
from pumice.framework.arguments import Arguments
from pumice.framework.candidates import Candidates
from pumice.framework.evaluation import ShapeCache, predicate_part
from pumice.framework.hookcalls import SessionError, vector_answer
from pumice.framework.results import Feasibility, JobInvalid
from pumice.framework.session import Session
from pumice.framework.statement import Statement
from pumice.framework.view import SessionPart
from pumice.model.node import NodeInfo
from pumice.model.objects import JobInfo, QueueInfo, TaskInfo
from pumice.model.table import FIT_TOLERANCE, BoolVector, FloatVector
from pumice.model.tasks import TaskStatus


class ActionContext(SessionPart):
    """What an action may see and do in one session (see the module docstring).

    Jobs, queues and the node table are the session's: read them, and change them only through
    statements. A job whose tasks the action will place is first taken with ``job_for_update``.
    """

    __slots__ = ()
    _session: Session

    def __init__(self, session: Session) -> None:
        super().__init__(session)

    # -- what there is (and jobs, queues, table, task_reasons, job_reasons: SessionPart) --------

    @property
    def configured_actions(self) -> tuple[str, ...]:
        """The names of this session's actions, in order (allocate admits Pending jobs itself
        only when ``enqueue`` is not among them)."""
        return tuple(self._session.config.actions)

    def job_for_update(self, job: JobInfo) -> JobInfo:
        """The session's own copy of ``job``, to place its tasks and ask about it afterwards."""
        return self._session.job_for_update(job)

    def statement(self) -> Statement:
        """A new transaction: allocate, pipeline, evict, enqueue; then commit or discard."""
        return self._session.statement()

    # -- order -------------------------------------------------------------------------------

    def queue_order_key(self, queue: QueueInfo) -> tuple[Any, ...]:
        """The sort key of ``queue``: lower goes first (plugins' keys, then age and name)."""
        return self._session.queue_order_key(queue)

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        """The sort key of ``job``: lower goes first (plugins' keys, then age and uid)."""
        return self._session.job_order_key(job)

    def task_order_key(self, task: TaskInfo) -> tuple[Any, ...]:
        """The sort key of ``task``: plugins' keys, then the pod-name index, age and name."""
        return self._session.task_order_key(task)

    def sort_queues(self, queues: Iterable[QueueInfo]) -> list[QueueInfo]:
        return self._session.sort_queues(queues)

    def sort_jobs(self, jobs: Iterable[JobInfo]) -> list[JobInfo]:
        return self._session.sort_jobs(jobs)

    def sort_tasks(self, tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
        return self._session.sort_tasks(tasks)

    # -- queues and jobs ---------------------------------------------------------------------

    def overused(self, queue: QueueInfo) -> bool:
        """Has ``queue`` reached its share (any plugin says so)?"""
        return self._session.overused(queue)

    def overused_reason(self, queue: QueueInfo) -> str | None:
        """Why ``queue`` is overused, in the first explaining plugin's words (or None)."""
        return self._session.overused_reason(queue)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May ``queue`` grow by ``task`` now (every plugin agrees)?"""
        return self._session.allocatable(queue, task)

    def allocatable_reason(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        """Why ``queue`` may not grow by ``task``, in the first explaining plugin's words."""
        return self._session.allocatable_reason(queue, task)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May ``queue`` take resources back for ``task`` (every plugin agrees)?"""
        return self._session.preemptive(queue, task)

    def job_valid(self, job: JobInfo) -> JobInvalid | None:
        """None when ``job`` may be scheduled this session, else the first plugin's refusal."""
        return self._session.job_valid(job)

    def job_ready(self, job: JobInfo) -> bool:
        """Does ``job`` hold enough to run (its gang minimum): every plugin agrees."""
        return self._session.job_ready(job)

    def job_pipelined(self, job: JobInfo) -> bool:
        """Will ``job`` hold enough once the pipelined tasks' room is freed (the plugins' vote)?"""
        return self._session.job_pipelined(job)

    def job_starving(self, job: JobInfo) -> bool:
        """Does ``job`` want more than it holds (the first tier that answers decides)?"""
        return self._session.job_starving(job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        """May the Pending ``job`` be admitted now (the plugins' vote)?"""
        return self._session.job_enqueueable(job)

    # -- nodes -------------------------------------------------------------------------------

    def predicate(self, task: TaskInfo) -> Feasibility:
        """Which nodes may take ``task`` (every predicate passes), with each refusal's reason."""
        return self._session.predicate(task)

    def fit(self, task: TaskInfo) -> tuple[BoolVector, BoolVector]:
        """Nodes whose idle, and whose future idle, resources hold the task's request."""
        return self._session.fit(task)

    def no_node_message(self, task: TaskInfo) -> str | None:
        """The ``0/N nodes are available: …`` message when no node passes the predicates with
        room for ``task`` in its future idle resources (idle + releasing - pipelined); None when
        some node could take it. Node reasons come before queue reasons (a pod that fits no
        node even in an empty queue is told about the nodes, not its queue), so an action that
        holds a task back for its queue asks this first: allocate for the tasks an overused
        queue keeps, enqueue for the tasks of a job its queue cannot admit."""
        feasibility = self.predicate(task)
        _, future = self.fit(task)
        if (feasibility.mask & future).any():
            return None
        return self.why_not(task, feasibility)

    def why_not(self, task: TaskInfo, feasibility: Feasibility) -> str:
        """The message for a task that found no node: the predicates' reasons per node, and
        ``Insufficient <resource>`` for the nodes that passed them but lack future room."""
        table = self.table
        request = table.vector(task.resreq)
        short_future = (request - table.future_idle) > FIT_TOLERANCE
        return feasibility.message(short_future, table.dims)

    def candidates(self, task: TaskInfo) -> Candidates:
        """Where ``task`` may go now and later, kept current per task shape (read only)."""
        return self._session.candidates(task)

    def choose_node(self, task: TaskInfo, candidates: Candidates, now: bool) -> str | None:
        """The node for ``task`` among its ``now`` (else future) ``candidates``, as
        ``best_node`` would choose over ``node_scores``."""
        return self._session.choose_node(task, candidates, now)

    def node_scores(self, task: TaskInfo, mask: BoolVector | None = None) -> FloatVector:
        """Every node's summed score for ``task`` (``normalized_score`` over ``mask``)."""
        return self._session.node_scores(task, mask)

    def best_node(
        self, task: TaskInfo, scores: FloatVector, mask: BoolVector | None = None
    ) -> str | None:
        """The first ``best_node`` plugin's feasible node, else the top score on ``mask``;
        ties to the smallest name (or a random one with ``tieBreak: random``)."""
        return self._session.best_node(task, scores, mask)

    def predicate_once_gone(
        self, task: TaskInfo, node: NodeInfo, gone: Iterable[TaskInfo] = ()
    ) -> str:
        """'' when every predicate passes ``task`` on ``node`` once its Releasing tasks and
        ``gone`` have left it; else the first failing plugin's reason."""
        return predicate_once_gone(self._session.shapes, task, node, gone)

    # -- victims -----------------------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Which of ``candidates`` ``preemptor`` may evict (tier rules, protections first)."""
        return self._session.preemptable(preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Which of ``candidates`` (of other queues) ``reclaimer`` may evict."""
        return self._session.reclaimable(reclaimer, candidates)


class Action:
    """A scheduling action, run once per session in the configured order.

    Subclass it and implement ``execute``; ``self.arguments`` holds the action's
    ``configurations`` entry. Declare what it takes in ``declared_arguments`` (a tuple of
    ``ArgumentSpec``; ``()`` for none; None, the default, accepts anything without a word).
    """

    name: ClassVar[str] = ""
    declared_arguments: ClassVar[tuple[ArgumentSpec, ...] | None] = None
    """The arguments this action takes (under ``configurations``); None: undeclared."""

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, context: ActionContext) -> None:
        """Do the action's work in the session behind ``context``."""
        raise NotImplementedError


def run_actions(session: Session) -> None:
    """Run the session's configured actions in order, each built from its ``configurations``
    entry and given an ``ActionContext``; the time each took goes to ``action_seconds``."""
    context = ActionContext(session)
    for name in session.config.actions:
        provided = session.host.get(name)
        if provided is None or provided.kind != "action":
            raise SessionError(f"unknown action {name!r}")
        arguments = session.config.configurations.get(name) or Arguments({})
        action = provided.cls(arguments)
        session.action = name
        started = time.perf_counter()
        try:
            action.execute(context)
        finally:
            session.action = ""
            elapsed = time.perf_counter() - started
            session.action_seconds[name] = session.action_seconds.get(name, 0.0) + elapsed


def predicate_once_gone(
    shapes: ShapeCache, task: TaskInfo, node: NodeInfo, gone: Iterable[TaskInfo] = ()
) -> str:
    """'' when every predicate passes ``task`` on ``node`` once its Releasing tasks and
    ``gone`` have left it; else the first failing plugin's reason for that node."""
    leaving = [t for t in node.tasks.values() if t.status == TaskStatus.RELEASING]
    seen = {t.uid for t in leaving}
    leaving += [t for t in gone if t.uid not in seen]
    table = shapes.table
    row = node.row
    rows = np.array((row,), dtype=np.int64)
    with node.without(leaving):
        for name, hook, local in shapes.predicates:
            answer = hook(task, table, rows if local else None)
            if answer is None:
                continue
            part = predicate_part(name, answer, 1 if local else len(table), vector_answer)
            at = 0 if local else row
            if not part.mask[at]:
                reasons = part.reasons
                return str(reasons if isinstance(reasons, str) else reasons[at])
    return ""
