"""``reclaim``: a queue below its fair share takes resources back from queues above theirs.

Reclaimers. Jobs that are admitted (not Pending), valid (``context.job_valid``), whose queue is
in the context, that ``context.job_starving`` reports as starving and that have Pending tasks.

Queues are taken in queue order and put back after each job, so their order is decided again
with the evictions just made. A queue that ``context.overused`` reports is dropped. From the
queue, the first starving job in job order gets a fresh statement; its Pending tasks, in task
order and while the job is still starving, each try to reclaim, except a task whose pod says
``preemptionPolicy: Never``, a task that ``context.preemptive(queue, task)`` refuses (the
queue may not grow by that task), and a task equal in shape and priority to one that already
failed in this statement. Then, if ``context.job_pipelined(job)``, the statement is
committed (evictions to the committer, each pipelined reclaimer nominated for its node);
otherwise it is discarded, so nothing is evicted for a job that could not run anyway.

One task's attempt: the nodes that pass ``context.predicate(task)`` or fail only for a reason
evictions may cure (``Feasibility.preemption_candidates``), in node table order. On
each node the candidates are its Running tasks that are preemptable (``volcano.sh/preemptable``
not false) and belong to a job of *another* queue whose ``reclaimable`` is not false;
``context.reclaimable`` names the victims (tier rules, conformance's protections first; the
proportion plugin offers only tasks of queues above their deserved share). The node is skipped
unless its future idle resources plus the victims' requests cover the task. Victims are evicted
in victim order (the queue, then the job, then the task that would be served last, first) until
the task fits the node's future idle resources and every predicate passes it on the node as it
will be once the evicted pods are gone; then the task is pipelined there. If that never
happens the node's evictions are undone and the next node is tried.

Which plugin names the victims follows the tier rule: with Volcano's shipped tiers ``gang``
(tier 1, ``reclaimable`` on) answers first and its answer stands, so proportion's "only queues
above their deserved share" test (tier 2) applies only when tier 1 answers nothing; the
reclaiming queue itself must still be below its share (``overused``, ``preemptive``). This is
Volcano's behaviour; put ``enableReclaimable: false`` on gang to let proportion decide.

Evictions carry the reason ``reclaimed by <namespace>/<name> (action reclaim)``.

Arguments: none.

Differences from Volcano: pod counts and the other predicates are checked with the victims gone
(see ``preempt``); no pre-predicates or scheduling gates.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import numpy as np

from pumice import Action, ActionContext, JobInfo, QueueInfo, Statement, TaskInfo, TaskStatus
from pumice.actions._eviction import (
    evict_for,
    may_preempt,
    pending_tasks,
    same_attempt,
    starving_jobs_by_queue,
)


class ReclaimAction(Action):
    """Volcano's reclaim action (see the module docstring)."""

    declared_arguments = ()  # no arguments: any given is warned about

    def execute(self, context: ActionContext) -> None:
        by_queue, queues = starving_jobs_by_queue(context)
        if not queues:
            return
        order = itertools.count()
        jobs_of = {name: context.sort_jobs(jobs)[::-1] for name, jobs in by_queue.items()}
        heap: list[tuple[Any, int, QueueInfo]] = [
            (context.queue_order_key(q), next(order), q) for q in queues.values()
        ]
        heapq.heapify(heap)
        while heap:
            _, _, queue = heapq.heappop(heap)
            if context.overused(queue):
                continue
            jobs = jobs_of[queue.name]
            if not jobs:
                continue
            self._reclaim_for(context, queue, jobs.pop())
            if jobs:
                heapq.heappush(heap, (context.queue_order_key(queue), next(order), queue))

    def _reclaim_for(self, context: ActionContext, queue: QueueInfo, job: JobInfo) -> None:
        job = context.job_for_update(job)  # statements change the session's own copy
        statement = context.statement()
        failed: set[object] = set()
        for task in context.sort_tasks(pending_tasks(job)):
            if not context.job_starving(job):
                break
            if not may_preempt(task) or same_attempt(task) in failed:
                continue
            if not context.preemptive(queue, task):
                continue
            if not self._reclaim_task(context, statement, job, task):
                failed.add(same_attempt(task))
        if context.job_pipelined(job):
            statement.commit()
        else:
            statement.discard()

    @staticmethod
    def _reclaim_task(
        context: ActionContext, statement: Statement, job: JobInfo, task: TaskInfo
    ) -> bool:
        rows = np.flatnonzero(context.predicate(task).preemption_candidates())
        nodes = [context.table.nodes[int(r)] for r in rows]

        def candidate(victim: TaskInfo) -> bool:
            if victim.status != TaskStatus.RUNNING or not victim.preemptable:
                return False
            other = context.jobs.get(victim.job)
            if other is None or other.queue == job.queue:
                return False
            other_queue = context.queues.get(other.queue)
            return other_queue is not None and other_queue.reclaimable

        return evict_for(
            context,
            statement,
            task,
            nodes,
            candidate,
            context.reclaimable,
            lambda: True,
            f"reclaimed by {task.key} (action reclaim)",
            across_queues=True,
        )
