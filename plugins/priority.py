"""``priority``: higher-priority jobs and tasks go first, and only they may preempt.

Hooks:

* ``task_order_key(task)`` — ``-task.priority``: within a job, higher task priority first
  (the pod's priority, or its ``volcano.sh/task-priority`` override).
* ``job_order_key(job)`` — ``-job.priority``: higher job priority (the PodGroup's priority
  class) first.
* ``preemptable(preemptor, candidates)`` — a candidate of *another* job is a victim only if
  its job's priority is strictly lower than the preemptor's job priority; a candidate of the
  *same* job only if its task priority is strictly lower than the preemptor's. Candidates
  whose job is not in the session are skipped; if the preemptor's job is not in the session
  the answer is empty (the tier decides nothing). The plugin registers no ``reclaimable``:
  reclaiming across queues is about fairness, not priority (as in Volcano).
* ``job_starving(job)`` — ``ready + pipelined < number of tasks``: the job still has tasks
  without a place (all of its tasks count, whatever their status, as in Volcano).

Arguments: none.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pumice import Arguments, JobInfo, Plugin, SessionView, TaskInfo, hookimpl

log = logging.getLogger("pumice.plugins.priority")


class PriorityPlugin(Plugin):
    """Volcano's priority plugin (see the module docstring)."""

    declared_arguments = ()  # no arguments: any given is warned about

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.session: SessionView | None = None

    @hookimpl
    def session_open(self, session: SessionView) -> None:
        self.session = session

    @hookimpl
    def task_order_key(self, task: TaskInfo) -> int:
        return -task.priority

    @hookimpl
    def job_order_key(self, job: JobInfo) -> int:
        return -job.priority

    @hookimpl
    def preemptable(self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        jobs = self.session.jobs if self.session is not None else {}
        own = jobs.get(preemptor.job)
        if own is None:
            log.warning("preemptor %s belongs to no job in this session", preemptor.key)
            return []
        victims: list[TaskInfo] = []
        for candidate in candidates:
            if candidate.job == own.uid:
                if candidate.priority < preemptor.priority:
                    victims.append(candidate)
                continue
            other = jobs.get(candidate.job)
            if other is None:
                log.warning("candidate %s belongs to no job in this session", candidate.key)
            elif other.priority < own.priority:
                victims.append(candidate)
        return victims

    @hookimpl
    def job_starving(self, job: JobInfo) -> bool:
        return job.ready_task_num + job.waiting_task_num < len(job.tasks)
