"""``backfill``: place best-effort tasks (pods that request nothing) on any node that admits them.

Jobs that are admitted (not Pending), valid (``context.job_valid``) and whose queue is in the
session are taken in queue order, then job order; their pending best-effort tasks in task
order. Since such a task requests no resources, only the predicates decide where it may go
(``context.predicate(task)``; the pod-count limit is the predicates' business too); among those
nodes ``context.node_scores`` and ``context.best_node`` choose. The task is allocated in a
statement per job, and the statement is committed as soon as ``context.job_ready(job)`` holds
(a best-effort task counts as ready while pending, so a job of best-effort tasks is ready from
the start). A task that no node admits gets the predicates' ``0/N nodes are available: …`` in
``context.task_reasons``.

Differences from Volcano:

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

from pumice import (
    FIT_TOLERANCE,
    Action,
    ActionContext,
    JobInfo,
    QueueInfo,
    Statement,
    StatementError,
    TaskInfo,
    TaskStatus,
)


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
