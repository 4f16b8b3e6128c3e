"""``gang``: a job runs only when ``minAvailable`` of its tasks (and ``minTaskMember`` of each
role) can run together.

Counters (from ``JobInfo``): *ready* = tasks Allocated, Binding, Bound, Running or Succeeded;
*waiting* = Pipelined tasks; *valid* = ready + Pipelined + Pending; *pending best-effort* =
Pending tasks that request nothing. Per-role checks count ``task.role``
(``volcano.sh/task-spec``) and apply only when ``minTaskMember`` is set and
``minAvailable >= sum(minTaskMember)`` (otherwise the job-level count is what matters).

Hooks:

* ``job_valid(job)`` — per role, valid tasks >= ``minTaskMember[role]``, else
  ``JobInvalid("NotEnoughPodsOfTask", …)``; then valid >= ``minAvailable``, else
  ``JobInvalid("NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: V, min:
  M")``.
* ``job_ready(job)`` — ready + pending best-effort >= ``minAvailable`` and, per role, ready +
  pending best-effort >= ``minTaskMember[role]``.
* ``job_pipelined(job)`` — PERMIT when ready + waiting + pending best-effort >= ``minAvailable``
  (per role likewise), else REJECT.
* ``job_starving(job)`` — ready + waiting < ``minAvailable`` (roles are not considered).
* ``job_order_key(job)`` — 0 for a job that is not ready, 1 for a ready one: jobs still
  gathering their gang go first.
* ``preemptable`` / ``reclaimable`` — walking the candidates in order, a candidate is a victim
  only while its job's ready count is above ``minAvailable``; each victim lowers that count by
  one, so a gang is never broken below its minimum.
* ``on_allocate(task)`` — remembers whether a task was last Allocated or Pipelined in this
  session (Volcano's "last transaction"), so a task whose allocation was later discarded is
  reported as *Schedulable*.
* ``session_close`` — for every job with tasks that is not ready (unless only Releasing tasks
  that still hold their nodes keep it from being ready), writes ``session.job_reasons[uid]``::

      U/T tasks in gang unschedulable: pod group is not ready, 1 Running, 2 Pending,
      3 minAvailable; Pending: 1 Schedulable, 1 Unschedulable. Origin reason is p-1: <why>

  U = ``minAvailable`` - (ready + Pending tasks last Allocated), T = number of tasks; the
  status histogram is sorted as text; the origin reason is the job reason already recorded
  this session, else the job's gang validity failure, else the first task (in the order the job
  holds its tasks) with a ``session.task_reasons`` entry.

Arguments: none.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from pumice import (
    READY_STATUSES,
    SCHEDULED_STATUSES,
    Arguments,
    JobInfo,
    JobInvalid,
    Plugin,
    SessionView,
    TaskInfo,
    TaskStatus,
    Vote,
    hookimpl,
)

log = logging.getLogger("pumice.plugins.gang")

NOT_ENOUGH_TASKS = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_READY = "pod group is not ready"

VALID = READY_STATUSES | TaskStatus.PIPELINED | TaskStatus.PENDING
PIPELINED = READY_STATUSES | TaskStatus.PIPELINED


def roles_apply(job: JobInfo) -> bool:
    """Do per-role minimums count for ``job``? (Only if set and not above minAvailable.)"""
    return bool(job.min_task_member) and job.min_available >= sum(job.min_task_member.values())


def role_counts(job: JobInfo, statuses: TaskStatus, best_effort: bool) -> Counter[str]:
    """Tasks per role whose status is in ``statuses`` (plus pending best-effort ones)."""
    counts: Counter[str] = Counter(t.role for t in job.tasks_in(statuses))
    if best_effort:
        for task in job.tasks_in(TaskStatus.PENDING):
            init = task.init_resreq if task.init_resreq is not None else task.resreq
            if init.is_empty():
                counts[task.role] += 1
    return counts


def short_roles(
    job: JobInfo, statuses: TaskStatus, best_effort: bool
) -> list[tuple[str, int, int]]:
    """Roles below their minimum as (role, have, need), in role order; empty if none."""
    if not roles_apply(job):
        return []
    counts = role_counts(job, statuses, best_effort)
    return [
        (role, counts[role], need)
        for role, need in sorted(job.min_task_member.items())
        if counts[role] < need
    ]


def status_name(status: TaskStatus) -> str:
    """``Pending``, ``Running`` … as Volcano prints task statuses."""
    return (status.name or str(int(status))).capitalize()


def histogram(counts: dict[str, int]) -> str:
    """``"2 Pending, 3 minAvailable"``: one ``count name`` per entry, sorted as text."""
    return ", ".join(sorted(f"{n} {name}" for name, n in counts.items()))


class GangPlugin(Plugin):
    """Volcano's gang plugin (see the module docstring)."""

    declared_arguments = ()  # no arguments: any given is warned about

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.session: SessionView | None = None
        self.last_placement: dict[str, TaskStatus] = {}
        """Task uid -> Allocated or Pipelined: how the task was last placed this session."""

    @hookimpl
    def session_open(self, session: SessionView) -> None:
        self.session = session

    # -- validity, readiness ----------------------------------------------------------------

    @hookimpl
    def job_valid(self, job: JobInfo) -> JobInvalid | None:
        short = short_roles(job, VALID, best_effort=False)
        if short:
            detail = "; ".join(f"{role}: valid {have}, min {need}" for role, have, need in short)
            return JobInvalid(
                NOT_ENOUGH_PODS_OF_TASK,
                f"Not enough valid pods of each task for gang-scheduling, {detail}",
            )
        valid = job.valid_task_num
        if valid < job.min_available:
            return JobInvalid(
                NOT_ENOUGH_TASKS,
                f"Not enough valid tasks for gang-scheduling, valid: {valid}, "
                f"min: {job.min_available}",
            )
        return None

    @hookimpl
    def job_ready(self, job: JobInfo) -> bool:
        if not job.is_ready():
            return False
        return not job.min_task_member or not short_roles(job, READY_STATUSES, best_effort=True)

    @hookimpl
    def job_pipelined(self, job: JobInfo) -> Vote:
        if job.is_pipelined() and not short_roles(job, PIPELINED, best_effort=True):
            return Vote.PERMIT
        return Vote.REJECT

    @hookimpl
    def job_starving(self, job: JobInfo) -> bool:
        return job.is_starving()

    @hookimpl
    def job_order_key(self, job: JobInfo) -> int:
        return 1 if job.is_ready() else 0

    # -- victims ----------------------------------------------------------------------------

    @hookimpl
    def preemptable(self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._keep_gangs(candidates)

    @hookimpl
    def reclaimable(self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._keep_gangs(candidates)

    def _keep_gangs(self, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        jobs = self.session.jobs if self.session is not None else {}
        occupied: dict[str, int] = {}
        victims: list[TaskInfo] = []
        for candidate in candidates:
            job = jobs.get(candidate.job)
            if job is None:
                log.warning("candidate %s belongs to no job in this session", candidate.key)
                continue
            ready = occupied.get(job.uid)
            if ready is None:
                ready = job.ready_task_num
            if ready > job.min_available:
                ready -= 1
                victims.append(candidate)
            occupied[job.uid] = ready
        return victims

    # -- events and reasons -----------------------------------------------------------------

    @hookimpl
    def on_allocate(self, task: TaskInfo) -> None:
        if task.status in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED):
            self.last_placement[task.uid] = task.status

    @hookimpl
    def session_close(self, session: SessionView) -> None:
        for job in session.jobs.values():
            if not job.tasks or job.is_ready() or _releasing_keeps_gang(job):
                continue
            session.job_reasons[job.uid] = self.unready_message(session, job)

    def unready_message(self, session: SessionView, job: JobInfo) -> str:
        """Volcano's "x/y tasks in gang unschedulable: …" for a job that is not ready."""
        last = self.last_placement
        pending = list(job.tasks_in(TaskStatus.PENDING))
        schedulable = sum(1 for t in pending if last.get(t.uid) == TaskStatus.ALLOCATED)
        unready = job.min_available - (job.ready_task_num + schedulable)
        statuses = {status_name(s): len(b) for s, b in job.task_status_index.items() if b}
        statuses["minAvailable"] = job.min_available
        text = f"{NOT_READY}, {histogram(statuses)}"
        if pending:
            reasons = Counter(
                "Schedulable" if last.get(t.uid) == TaskStatus.ALLOCATED else "Unschedulable"
                for t in pending
            )
            text += f"; {status_name(TaskStatus.PENDING)}: {histogram(dict(reasons))}"
        text += self._origin(session, job)
        return f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {text}"

    def _origin(self, session: SessionView, job: JobInfo) -> str:
        recorded = session.job_reasons.get(job.uid)
        if recorded:
            return f". Origin reason is: {recorded}"
        invalid = self.job_valid(job)
        if invalid is not None:
            return f". Origin reason is: {invalid.message}"
        for task in job.tasks.values():
            reason = session.task_reasons.get(task.uid)
            if reason:
                return f". Origin reason is {task.name}: {reason}"
        return ""


def _releasing_keeps_gang(job: JobInfo) -> bool:
    """True when only Releasing tasks that still hold their nodes keep the job from being
    ready: nothing is Pending or Pipelined and scheduled + those Releasing >= minAvailable."""
    releasing = sum(1 for t in job.tasks_in(TaskStatus.RELEASING) if t.node_name)
    if releasing == 0 or job.count(TaskStatus.PENDING | TaskStatus.PIPELINED):
        return False
    return job.count(SCHEDULED_STATUSES) + releasing >= job.min_available
