"""What ``preempt`` and ``reclaim`` share: who may take resources back, from whom, and how.

Both actions work the same way for one waiting task (the *preemptor*): over candidate nodes,
gather the tasks a filter allows, ask the session which of them are victims
(``context.preemptable`` or ``context.reclaimable``, with their tier rules and protections),
and skip the node unless the victims would free enough (future idle + their requests covers the
preemptor's request). On a node that passes, a per-node statement evicts victims one at a time,
the least important first, until the preemptor fits the node's future idle resources (and the
action's own condition holds); then the preemptor is pipelined there and the per-node statement
is merged into the caller's. A node where that never happens is discarded and the next is tried.

A node where the preemptor does not fit the idle resources but fits once the releasing tasks are
gone (room freed by evictions for an earlier task of the same job) takes it without new
victims; Volcano would find no victims there and give up on the node.

Not only resources: the candidate nodes are those that pass every predicate or fail only for a
reason that evicting pods may cure (``Feasibility.preemption_candidates``: too many pods, host
ports, and the pod-to-pod filters' resolvable reasons), and the preemptor goes to a node only
when every predicate passes it there as the node will be once the releasing tasks, the victims
included, are gone (``context.predicate_once_gone``). So evictions go on, the least important victim
first, until the preemptor fits *and* passes: a node full by pod count is freed by evicting a
pod (a best-effort one too), and a victim whose anti-affinity kept the preemptor out may be the
one to go. A node where that never happens keeps all its victims.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pumice import (
    FIT_TOLERANCE,
    ActionContext,
    JobInfo,
    NodeInfo,
    QueueInfo,
    Statement,
    StatementError,
    TaskInfo,
    TaskStatus,
)

VictimFilter = Callable[[TaskInfo], bool]
VictimChooser = Callable[[TaskInfo, Sequence[TaskInfo]], list[TaskInfo]]
ExtraCondition = Callable[[], bool]

NEVER = "Never"


def may_preempt(task: TaskInfo) -> bool:
    """False for a pod with ``preemptionPolicy: Never``: it waits, it never evicts."""
    spec = (task.pod or {}).get("spec") or {}
    return spec.get("preemptionPolicy") != NEVER


def same_attempt(task: TaskInfo) -> tuple[object, int]:
    """What decides an attempt's outcome besides the cluster: the task's shape (request and
    scheduling terms) and its priority. A failed attempt changes nothing in the context, so
    another task of the job with the same key would fail the same way."""
    return (task.shape, task.priority)


def pending_tasks(job: JobInfo) -> list[TaskInfo]:
    """The job's Pending tasks (the ones that may want a node)."""
    return list(job.tasks_in(TaskStatus.PENDING))


def starving_jobs_by_queue(
    context: ActionContext,
) -> tuple[dict[str, list[JobInfo]], dict[str, QueueInfo]]:
    """The admitted, valid, starving jobs with pending tasks, grouped by queue (preempt and
    reclaim both start from them), and those queues."""
    by_queue: dict[str, list[JobInfo]] = {}
    queues: dict[str, QueueInfo] = {}
    for job in context.jobs.values():
        if job.is_pending() or context.job_valid(job) is not None:
            continue
        queue = context.queues.get(job.queue)
        if queue is None or not context.job_starving(job) or not pending_tasks(job):
            continue
        queues[queue.name] = queue
        by_queue.setdefault(queue.name, []).append(job)
    return by_queue, queues


def fits_future_idle(context: ActionContext, task: TaskInfo, node: NodeInfo) -> bool:
    """Does ``task``'s request fit what ``node`` will have once its releasing tasks are gone?"""
    table = context.table
    request = table.vector(task.resreq)
    return not bool(((request - table.future_idle[node.row]) > FIT_TOLERANCE).any())


def victims_would_free_enough(
    context: ActionContext, task: TaskInfo, node: NodeInfo, victims: Iterable[TaskInfo]
) -> bool:
    """Volcano's ValidateVictims: future idle plus every victim's request covers the task."""
    table = context.table
    request = table.vector(task.resreq)
    freed = [table.vector(victim.resreq) for victim in victims]
    room = table.future_idle[node.row].copy()  # every dimension exists by now
    for vector in freed:
        room[: len(vector)] += vector
    return not bool(((request - room[: len(request)]) > FIT_TOLERANCE).any())


def victim_order(
    context: ActionContext, victims: Sequence[TaskInfo], across_queues: bool
) -> list[Any]:
    """Victims in eviction order: the least important first.

    That is the reverse of the scheduling order: the job that would be scheduled last, and in a
    job the task that would be scheduled last, go first; across queues (reclaim), the queue that
    would be served last goes first (Volcano's default victim queue order).
    """
    jobs = context.jobs

    def key(victim: TaskInfo) -> tuple[Any, ...]:
        job = jobs.get(victim.job)
        job_key = context.job_order_key(job) if job is not None else ()
        queue_key: tuple[Any, ...] = ()
        if across_queues and job is not None:
            queue = context.queues.get(job.queue)
            queue_key = context.queue_order_key(queue) if queue is not None else ()
        return (queue_key, job_key, context.task_order_key(victim))

    try:
        return sorted(victims, key=key, reverse=True)
    except TypeError:  # keys of plugins that do not compare across jobs: keep the given order
        return list(victims)


def evict_for(
    context: ActionContext,
    statement: Statement,
    preemptor: TaskInfo,
    nodes: Sequence[NodeInfo],
    candidate_filter: VictimFilter,
    choose: VictimChooser,
    enough: ExtraCondition,
    reason: str,
    across_queues: bool,
) -> bool:
    """Try ``nodes`` in order; on the first where evicting victims makes room, evict them,
    pipeline ``preemptor`` there and merge into ``statement``. True when it was placed."""
    for node in nodes:
        if (
            _releasing_makes_room(context, preemptor, node)
            and enough()
            and _passes(context, preemptor, node)
        ):
            # room being freed (evictions for an earlier task of the job): no new victims
            try:
                statement.pipeline(preemptor, node.name)
                return True
            except StatementError:
                continue
        candidates = [t for t in node.tasks.values() if candidate_filter(t)]
        if not candidates:
            continue
        victims = choose(preemptor, candidates)
        if not victims or not victims_would_free_enough(context, preemptor, node, victims):
            continue
        local = context.statement()
        queue = victim_order(context, victims, across_queues)
        queue.reverse()  # pop() takes the least important first
        while not _placed(context, preemptor, node, enough):
            if not queue:
                break
            victim = queue.pop()
            try:
                local.evict(victim, reason)
            except StatementError:
                continue
        else:
            try:
                local.pipeline(preemptor, node.name)
            except StatementError:
                local.discard()
                continue
            statement.merge(local)
            return True
        local.discard()
    return False


def _placed(context: ActionContext, task: TaskInfo, node: NodeInfo, enough: ExtraCondition) -> bool:
    """May ``task`` be pipelined on ``node`` now: it fits the future idle resources, the
    action's own condition holds, and every predicate passes once the releasing tasks are gone."""
    return fits_future_idle(context, task, node) and enough() and _passes(context, task, node)


def _releasing_makes_room(context: ActionContext, task: TaskInfo, node: NodeInfo) -> bool:
    """``task`` fits what ``node`` will have once its releasing tasks are gone, not its idle
    resources now (free room is allocate's business, not a preemption)."""
    table = context.table
    request = table.vector(task.resreq)
    fits_now = not bool(((request - table.idle[node.row]) > FIT_TOLERANCE).any())
    return not fits_now and fits_future_idle(context, task, node)


def _passes(context: ActionContext, task: TaskInfo, node: NodeInfo) -> bool:
    """Every predicate accepts ``task`` on ``node`` as it will be once its releasing tasks
    (the victims evicted so far among them) are gone."""
    return context.predicate_once_gone(task, node) == ""
