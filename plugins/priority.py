"""Who goes first and who may be evicted: the ``priority`` and ``conformance`` plugins.

``priority``: higher-priority jobs and tasks go first, and only they may preempt. Hooks:

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

``conformance``: never evict what keeps the cluster itself running (Volcano puts it in the
first tier beside ``priority``). Hooks ``preemptable(preemptor, candidates)`` and
``reclaimable(reclaimer, candidates)`` give back every candidate except:

* tasks in the ``kube-system`` namespace;
* tasks whose pod has ``spec.priorityClassName`` ``system-cluster-critical`` or
  ``system-node-critical``.

A task without a pod (built in code) is judged by its namespace alone. The answer keeps the
candidates' order.

The plugin sets ``protects_victims``: the session applies its answer to the candidates before
any tier is asked, so a protected task is never a victim whatever a later tier answers. In
Volcano an empty answer here (every candidate protected) lets the next tier decide, which
could pick a protected pod; pumice does not allow that.

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


SYSTEM_NAMESPACE = "kube-system"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def is_protected(task: TaskInfo) -> bool:
    """True for a task that conformance never offers as a victim."""
    if task.namespace == SYSTEM_NAMESPACE:
        return True
    if task.pod is None:
        return False
    spec = task.pod.get("spec") or {}
    return spec.get("priorityClassName") in CRITICAL_PRIORITY_CLASSES


class ConformancePlugin(Plugin):
    """Volcano's conformance plugin (see the module docstring)."""

    protects_victims = True
    declared_arguments = ()  # no arguments: any given is warned about

    @hookimpl
    def preemptable(self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return [t for t in candidates if not is_protected(t)]

    @hookimpl
    def reclaimable(self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return [t for t in candidates if not is_protected(t)]
