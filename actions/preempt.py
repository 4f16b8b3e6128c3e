"""``preempt``: starving jobs take room from less important tasks of their own queue.

Preemptors. Jobs that are admitted (not Pending), valid (``context.job_valid``), whose queue is
in the context, that ``context.job_starving`` reports as starving and that have Pending tasks.
A task whose pod says ``preemptionPolicy: Never`` never preempts.

Per queue, in queue order:

1. **Between jobs.** The queue's starving jobs in job order, each with a fresh statement: while
   the job is still starving, its Pending tasks in task order each try to preempt, with victims
   drawn from *other* jobs of the *same* queue (a task equal to one that already failed in this
   statement, in shape and priority, is not tried again: nothing changed that could help it).
   Then, if ``context.job_pipelined(job)`` (the job can run with what it holds and is
   promised), the statement is committed: the evictions go to the committer and each pipelined
   preemptor is nominated for its node (``nominatedNodeName``), so the room it waits for is not
   given to anyone else. Otherwise the statement is discarded: nothing is evicted for a job that
   could not run anyway.
2. **Within a job.** The same jobs again; each Pending task, in task order and with a
   statement of its own, may evict tasks of its *own* job. The first task that cannot be
   placed ends that job's turn (its statement is discarded); the others are committed.

One task's attempt: the nodes that pass ``context.predicate(task)`` or fail only for a reason
that evictions may cure (``Feasibility.preemption_candidates``: too many pods, host ports, the
pod-to-pod filters' resolvable reasons), best score first (``context.node_scores``; ties by
node name). On each node the candidates are its Bound or
Running tasks that are preemptable (``volcano.sh/preemptable`` not false) and pass the step's
filter (a best-effort preemptor only takes from best-effort tasks); ``context.preemptable``
names the victims (tier rules, conformance's protections first). The node is skipped unless
its future idle resources plus the victims' requests cover the task. Victims are evicted, the
one that would be scheduled last first, until the task fits the node's future idle resources,
``context.allocatable(queue, task)`` holds and every predicate passes the task on the node as
it will be once the evicted pods are gone (``context.predicate_once_gone``); then the task is
pipelined there. If that never happens the node's evictions are undone and the next node is
tried.

Evictions carry the reason ``preempted by <namespace>/<name> (action preempt)``.

Arguments: none (Volcano's ``enableTopologyAwarePreemption`` and its candidate-sampling
arguments are not implemented).

Differences from Volcano:

* pod counts are a predicate, not a resource dimension: a node full by pod count is a
  candidate (its reason is resolvable) and is freed by evicting a pod, best-effort ones
  included, where Volcano counts ``pods`` as a resource;
* evictions stop once every predicate passes with the victims gone, not only the resources
  (kube-scheduler's filters on the node without the victims); nodes rejected for a reason no
  eviction can cure (taints, node affinity, a cordon) are never tried;
* no topology-aware preemption, no pre-predicates, no check of an already nominated node and
  no scheduling gates; victims are ordered by the reverse of the session's job and task order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pumice import (
    PREEMPTABLE_STATUSES,
    Action,
    ActionContext,
    JobInfo,
    NodeInfo,
    QueueInfo,
    Statement,
    TaskInfo,
)
from pumice.actions._eviction import (
    evict_for,
    may_preempt,
    pending_tasks,
    same_attempt,
    starving_jobs_by_queue,
)


class PreemptAction(Action):
    """Volcano's preempt action (see the module docstring)."""

    declared_arguments = ()  # no arguments: any given is warned about

    def execute(self, context: ActionContext) -> None:
        by_queue, queues = starving_jobs_by_queue(context)
        for queue in context.sort_queues(queues.values()):
            # the session's own copies: statements change those, and job_starving /
            # job_pipelined must see what the statements did
            jobs = [context.job_for_update(j) for j in context.sort_jobs(by_queue[queue.name])]
            for job in jobs:
                self._between_jobs(context, queue, job)
            for job in jobs:
                self._within_job(context, queue, job)

    def _between_jobs(self, context: ActionContext, queue: QueueInfo, job: JobInfo) -> None:
        statement = context.statement()

        def other_job_same_queue(victim: TaskInfo) -> bool:
            other = context.jobs.get(victim.job)
            return other is not None and other.uid != job.uid and other.queue == job.queue

        failed: set[object] = set()
        for task in context.sort_tasks(pending_tasks(job)):
            if not context.job_starving(job):
                break
            if not may_preempt(task) or same_attempt(task) in failed:
                continue
            if not preempt(context, statement, queue, task, other_job_same_queue):
                failed.add(same_attempt(task))
        if context.job_pipelined(job):
            statement.commit()
        else:
            statement.discard()

    def _within_job(self, context: ActionContext, queue: QueueInfo, job: JobInfo) -> None:
        def same_job(victim: TaskInfo) -> bool:
            return victim.job == job.uid

        for task in context.sort_tasks(pending_tasks(job)):
            if not may_preempt(task):
                continue
            statement = context.statement()
            if not preempt(context, statement, queue, task, same_job):
                statement.discard()
                break
            statement.commit()


def preempt(
    context: ActionContext,
    statement: Statement,
    queue: QueueInfo,
    task: TaskInfo,
    belongs: Callable[[TaskInfo], bool],
) -> bool:
    """Try to make room for ``task`` by evicting victims that ``belongs`` allows; True if the
    task was pipelined (the evictions are in ``statement``)."""
    feasible = context.predicate(task).preemption_candidates()
    rows = np.flatnonzero(feasible)
    if len(rows) == 0:
        return False
    scores = context.node_scores(task, feasible)
    table = context.table
    ordered: list[NodeInfo] = sorted(
        (table.nodes[int(r)] for r in rows),
        key=lambda node: (-float(scores[node.row]), node.name),
    )

    def candidate(victim: TaskInfo) -> bool:
        if not victim.status & PREEMPTABLE_STATUSES or not victim.preemptable:
            return False
        if task.best_effort and not victim.best_effort:
            return False
        return belongs(victim)

    return evict_for(
        context,
        statement,
        task,
        ordered,
        candidate,
        context.preemptable,
        lambda: context.allocatable(queue, task),
        f"preempted by {task.key} (action preempt)",
        across_queues=False,
    )
