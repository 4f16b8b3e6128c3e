"""What a session leaves behind for the API server: reasons, PodGroup and Queue status.

Computed in the worker thread from the session's own (cloned) objects, as plain data, so the
event loop only compares and writes. The daemon writes it; ``pumice simulate`` reports it (the
same code, so the two cannot disagree). PodGroup status follows what Volcano writes: ``phase``
(Pending, Inqueue, Running, Completed), the ``running`` / ``succeeded`` / ``failed`` counts, and
the conditions — ``Unschedulable`` (reason ``NotEnoughResources``, the session's message) or
``Scheduled`` once the gang is ready, then what plugins add (``podgroup_conditions``). Queue
status carries ``allocated`` and the number of PodGroups per phase, merged with the fields
plugins set (``queue_status``: ``reservation`` from ``node-reservation``, ``deserved`` and
``share`` from ``proportion``), and the Warning events plugins ask for (``queue_events``:
``node-reservation``'s ``ReservationRefused``). Every queue of the session gets a status,
the implicit default queue included (the daemon writes only those with a Queue object).

For the metrics it also keeps what each plugin hook cost in the session and the plugins'
metric samples (``metric_samples``). Nothing here knows any plugin by name or type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pumice.daemon.committers import DryRunCommitter, LoopCommitter
from pumice.framework import MetricSample
from pumice.framework.action import run_actions
from pumice.framework.committer import Committer
from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.framework.session import Session
from pumice.model import JobInfo, Resource, TaskStatus, resource_list
from pumice.model.tasks import ALLOCATED_STATUSES, COMPLETED_STATUSES
from pumice.plain import Obj

if TYPE_CHECKING:
    from pumice.daemon.recorder import LiveCycle
    from pumice.model import ClusterSnapshot

UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"


@dataclass
class CycleOutcome:
    binds: int = 0
    evictions: int = 0
    pending: int = 0
    """Our tasks still pending after the session."""
    task_reasons: dict[str, str] = field(default_factory=dict)
    """Task uid -> why it stays pending (tasks of our pods only)."""
    podgroups: dict[str, Obj] = field(default_factory=dict)
    """``namespace/name`` -> the status the PodGroup should have."""
    queues: dict[str, Obj] = field(default_factory=dict)
    """Queue name -> the status the Queue should have (every queue of the session)."""
    queue_events: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Queue name -> the (reason, message) Warning events plugins asked for."""
    seconds: float = 0.0
    action_seconds: dict[str, float] = field(default_factory=dict)
    """Seconds each action took in the session."""
    hook_time: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    """(plugin, hook) -> (seconds, calls) in the session, for the hooks it called."""
    samples: list[tuple[str, MetricSample]] = field(default_factory=list)
    """(plugin name, sample): the plugins' metric samples at the session's end."""
    failed: bool = False
    """The session raised (logged); nothing was decided."""


def run_session(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    host: PluginHost,
    committer: LoopCommitter | DryRunCommitter,
    record: LiveCycle | None = None,
) -> CycleOutcome:
    """One session over ``snapshot``, in the daemon's worker thread: it touches only the
    snapshot and the committer (and the flight recorder's record of this cycle, which takes the
    seed of its random source)."""
    committing: Committer = committer
    if record is not None:
        from pumice.daemon.recorder import tee  # the recorder loads only when it is on

        committing = tee(committer, record)
    session = Session.open(
        snapshot,
        config,
        host,
        committer=committing,
        rng=record.rng() if record is not None else None,
        time_hooks=True,
    )
    if isinstance(committer, DryRunCommitter):
        committer.attach(session)
    try:
        outcome = decide(session)
    finally:
        session.dispose()  # freed now by reference counting, not by the collector
    outcome.binds, outcome.evictions = committer.binds, committer.evictions
    return outcome


def decide(session: Session) -> CycleOutcome:
    """Run the configured actions, close the session (its plugins' ``session_close``, even
    after an action raised) and collect what it leaves: the daemon's cycle and simulate's."""
    try:
        run_actions(session)
    finally:
        session.close()
    return collect(session)


def collect(session: Session) -> CycleOutcome:
    """Reasons and statuses of everything a (closed) session looked at."""
    out = CycleOutcome()
    out.action_seconds = dict(session.action_seconds)
    out.hook_time = {k: (t.seconds, t.calls) for k, t in session.hook_time.items() if t.calls}
    contributed = session.contributions
    queue_jobs: dict[str, list[JobInfo]] = {}
    queues, job_reasons, task_reasons = session.queues, session.job_reasons, session.task_reasons
    for job in session.jobs.values():
        if job.queue in queues:
            queue_jobs.setdefault(job.queue, []).append(job)
        waiting = job.task_status_index.get(TaskStatus.PENDING)
        if waiting:  # (most jobs have none: read the one bucket, not every status)
            job_reason = job_reasons.get(job.uid)
            for task in waiting.values():
                out.pending += 1
                reason = task_reasons.get(task.uid) or job_reason
                if reason:
                    out.task_reasons[task.uid] = reason
        if job.podgroup is not None:
            job_reason = job_reasons.get(job.uid)
            status = podgroup_status(job, job_reason)
            extra = contributed.conditions.get(job.uid)
            if extra:
                status["conditions"] = [*status.get("conditions", []), *extra]
            out.podgroups[job.uid] = status
    for name in session.queues:
        out.queues[name] = {
            **queue_status(queue_jobs.get(name, [])),
            **contributed.queue_fields.get(name, {}),
        }
    out.queue_events = dict(contributed.queue_events)
    out.samples = list(contributed.samples)
    return out


def podgroup_phase(job: JobInfo) -> str:
    """Volcano's phase at session close: once ``minMember`` tasks are placed (allocated,
    bound, running, releasing on their node, or completed), Completed when all of those have
    completed, else Running; otherwise Inqueue stays Inqueue and all else is Pending."""
    placed = job.count(ALLOCATED_STATUSES | COMPLETED_STATUSES | TaskStatus.RELEASING)
    if job.min_available > 0 and placed >= job.min_available:
        return "Completed" if job.count(COMPLETED_STATUSES) == placed else "Running"
    return "Inqueue" if job.phase == "Inqueue" else "Pending"


def podgroup_status(job: JobInfo, reason: str | None) -> Obj:
    phase = podgroup_phase(job)
    ready = phase in ("Running", "Completed")
    running = job.count(TaskStatus.RUNNING)
    if reason and not ready:
        condition = {
            "type": UNSCHEDULABLE,
            "status": "True",
            "reason": "NotEnoughResources",
            "message": reason,
        }
    elif ready:
        condition = {
            "type": SCHEDULED,
            "status": "True",
            "reason": "tasks in gang are ready to be scheduled",
            "message": "",
        }
    else:
        condition = {}
    status: Obj = {
        "phase": phase,
        "running": running,
        "succeeded": job.count(TaskStatus.SUCCEEDED),
        "failed": job.count(TaskStatus.FAILED),
    }
    if condition:
        status["conditions"] = [condition]
    return status


def queue_status(jobs: list[JobInfo]) -> Obj:
    allocated = Resource.zero()
    phases = {"pending": 0, "inqueue": 0, "running": 0, "completed": 0}
    for job in jobs:
        allocated = allocated + job.allocated
        if job.podgroup is None:
            continue
        phases[podgroup_phase(job).lower()] += 1
    return {"allocated": resource_list(allocated), **phases}


def same_podgroup_status(current: Obj | None, desired: Obj) -> bool:
    """Does the PodGroup already say this (ignoring transition times)?"""
    current = current or {}
    for key in ("phase", "running", "succeeded", "failed"):
        if (current.get(key) or (0 if key != "phase" else "")) != desired.get(key):
            return False
    have = [_condition_core(c) for c in current.get("conditions") or []]
    want = [_condition_core(c) for c in desired.get("conditions") or []]
    return all(w in have for w in want)


QUEUE_COUNTS = ("pending", "inqueue", "running", "completed")


def same_queue_status(current: Obj | None, desired: Obj) -> bool:
    """Does the Queue already say this? Counts and ``allocated`` by value; the fields plugins
    set, exactly (one missing on either side is a change)."""
    current = current or {}
    if any((current.get(k) or 0) != desired[k] for k in QUEUE_COUNTS):
        return False
    own = {"allocated", *QUEUE_COUNTS}
    theirs = {k for k in desired if k not in own}
    known = {k for k in current if k not in own and k not in ("state", "unknown")}
    if theirs != known or any(current[k] != desired[k] for k in theirs):
        return False
    try:
        return Resource.from_k8s(current.get("allocated") or {}) == Resource.from_k8s(
            desired["allocated"]
        )
    except ValueError:
        return False


def _condition_core(condition: Obj) -> tuple[Any, ...]:
    return tuple(condition.get(k) or "" for k in ("type", "status", "reason", "message"))
