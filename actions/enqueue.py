"""``enqueue``: admit Pending jobs (PodGroups) so that ``allocate`` may place their tasks.

Every queue that has Pending jobs (phase Pending or unset) is taken in queue order, and its
jobs in job order; the queue is put back after each job so that its place is decided again.
A job is admitted, by a statement that sets its phase to Inqueue in the session (and tells the
plugins through ``job_enqueued``), when it has no ``min_resources`` (the PodGroup does not set
``minResources``; an empty one counts as set) or when ``context.job_enqueueable(job)`` agrees
(the plugins' vote, e.g. proportion's "does the queue still have room for its minimum"). A job
that is turned down stays
Pending until the next session, and its reason is recorded in ``context.job_reasons``: the
nodes' (``0/N nodes are available: …``, also given to the task) when a pending task fits no
node even with its queue empty, else the plugins' queue reason, else ``NOT_ADMITTED``. The
phase is persisted by whoever writes PodGroup status at the end of the cycle.

Differences from Volcano:

* no ``ScheduleStartTimestamp`` is stamped on jobs (pumice keeps no such field);
* jobs whose queue is not in the session are left alone, as Volcano's snapshot drops them.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

from pumice import Action, ActionContext, JobInfo, QueueInfo, TaskStatus

INQUEUE = "Inqueue"
PENDING = TaskStatus.PENDING
NOT_ADMITTED = "job not admitted: its queue cannot take its minResources now"


def _placed_lone_pod(job: JobInfo) -> bool:
    """A pod without a PodGroup whose task is no longer pending: its job keeps the phase
    Pending (no PodGroup records another), but there is nothing left to admit. Without this,
    every running lone pod would be admitted again in every session (a copy of its job, a
    statement and the plugins' ``job_enqueued``), which made a session's cost grow with the
    cluster's running pods."""
    return job.podgroup is None and job.min_resources is None and not job.count(PENDING)


class EnqueueAction(Action):
    """Move Pending jobs to Inqueue, queue by queue, while the plugins allow it."""

    declared_arguments = ()  # no arguments: any given is warned about

    def execute(self, context: ActionContext) -> None:
        pending: dict[str, list[JobInfo]] = {}
        queues: dict[str, QueueInfo] = {}
        for job in context.jobs.values():
            if not job.is_pending() or _placed_lone_pod(job):
                continue
            queue = context.queues.get(job.queue)
            if queue is None:
                continue
            queues[queue.name] = queue
            pending.setdefault(queue.name, []).append(job)
        if not pending:
            return
        # each queue's jobs, best first; popped from the end
        ordered = {name: context.sort_jobs(jobs)[::-1] for name, jobs in pending.items()}
        counter = itertools.count()
        heap: list[tuple[Any, int, QueueInfo]] = [
            (context.queue_order_key(q), next(counter), q) for q in queues.values()
        ]
        heapq.heapify(heap)
        while heap:
            _, _, queue = heapq.heappop(heap)
            jobs = ordered[queue.name]
            if not jobs:
                continue
            job = jobs.pop()
            if self.admit(context, job):
                statement = context.statement()
                statement.enqueue(job, INQUEUE)
                statement.commit()
            else:
                self._refused(context, job)
            heapq.heappush(heap, (context.queue_order_key(queue), next(counter), queue))

    @staticmethod
    def _refused(context: ActionContext, job: JobInfo) -> None:
        """Why ``job`` stays Pending. Node reasons first: a pending task that no node could
        take even with its queue empty is given the ``0/N nodes are available`` message, and
        the job that message (the gang's own message names it as the origin); otherwise the
        plugins' queue reason, or ``NOT_ADMITTED``."""
        said: dict[object, str | None] = {}
        for task in job.tasks_in(PENDING):
            if task.shape not in said:
                said[task.shape] = context.no_node_message(task)
            no_node = said[task.shape]
            if no_node is not None:
                context.task_reasons[task.uid] = no_node
                context.job_reasons[job.uid] = no_node
        context.job_reasons.setdefault(job.uid, NOT_ADMITTED)

    @staticmethod
    def admit(context: ActionContext, job: JobInfo) -> bool:
        """A job without minResources is admitted as is; otherwise the plugins vote.

        A PodGroup that sets ``minResources`` at all, even to nothing, is put to the vote (as in
        Volcano), so a Closed queue keeps it Pending.
        """
        if job.min_resources is None:
            return True
        return context.job_enqueueable(job)
