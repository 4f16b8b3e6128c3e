"""What a session leaves behind for the API server: reasons, PodGroup and Queue status.

Computed in the worker thread from the session's own (cloned) objects, as plain data, so the
event loop only compares and writes. PodGroup status follows what Volcano writes: ``phase``
(Pending, Inqueue, Running), the ``running`` / ``succeeded`` / ``failed`` counts, and one
condition — ``Unschedulable`` (reason ``NotEnoughResources``, the session's message) or
``Scheduled`` once the gang is ready. Queue status carries ``allocated`` and the number of
PodGroups per phase, and, where the ``node-reservation`` plugin runs, ``reservation`` (the
locked nodes and their idle resources, or why a request was refused).

For the metrics it also keeps what each plugin hook cost in the session, and, where the
``proportion`` plugin runs, each queue's deserved, allocated and share (``shares()``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pumice.framework.session import Session
from pumice.model import JobInfo, Resource, TaskStatus
from pumice.plugins.node_reservation import NodeReservationPlugin
from pumice.plugins.proportion import ProportionPlugin, QueueShare

Obj = dict[str, Any]

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
    queue_refusals: dict[str, str] = field(default_factory=dict)
    """Queue name -> why its node reservation was refused, for reasons not yet in its status
    (each gets a Queue event)."""
    seconds: float = 0.0
    action_seconds: dict[str, float] = field(default_factory=dict)
    """Seconds each action took in the session."""
    hook_time: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    """(plugin, hook) -> (seconds, calls) in the session, for the hooks it called."""
    shares: dict[str, QueueShare] = field(default_factory=dict)
    """Queue name -> proportion's deserved, allocated and share at the session's end (empty
    without the proportion plugin)."""
    failed: bool = False
    """The session raised (logged); nothing was decided."""


def collect(session: Session) -> CycleOutcome:
    """Reasons and statuses of everything a session looked at."""
    out = CycleOutcome()
    out.action_seconds = dict(session.action_seconds)
    out.hook_time = {k: (t.seconds, t.calls) for k, t in session.hook_time.items() if t.calls}
    queue_jobs: dict[str, list[JobInfo]] = {}
    for job in session.jobs.values():
        if job.queue in session.queues:
            queue_jobs.setdefault(job.queue, []).append(job)
        job_reason = session.job_reasons.get(job.uid)
        for task in job.tasks_in(TaskStatus.PENDING):
            out.pending += 1
            reason = session.task_reasons.get(task.uid) or job_reason
            if reason:
                out.task_reasons[task.uid] = reason
        if job.podgroup is not None:
            out.podgroups[job.uid] = podgroup_status(job, job_reason)
    for name, queue in session.queues.items():
        if queue.queue is not None:  # a Queue object, not the implicit default
            out.queues[name] = queue_status(queue_jobs.get(name, []))
    for _, _, plugin in session.plugins:
        if isinstance(plugin, NodeReservationPlugin):
            # locks live in the Queue's status: the next session reads them back from there
            for name, reservation in plugin.statuses().items():
                if name in out.queues and reservation is not None:
                    out.queues[name]["reservation"] = reservation
            out.queue_refusals.update(plugin.new_refusals)
        elif isinstance(plugin, ProportionPlugin):
            out.shares.update(plugin.shares())
    return out


def podgroup_status(job: JobInfo, reason: str | None) -> Obj:
    ready = _ready(job)
    running = job.count(TaskStatus.RUNNING)
    # Volcano: enough tasks allocated (or done) -> Running; else Inqueue stays, all else Pending
    phase = "Running" if ready else ("Inqueue" if job.phase == "Inqueue" else "Pending")
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
    phases = {"pending": 0, "inqueue": 0, "running": 0}
    for job in jobs:
        allocated = allocated + job.allocated
        if job.podgroup is None:
            continue
        key = "running" if _ready(job) else ("inqueue" if job.phase == "Inqueue" else "pending")
        phases[key] += 1
    return {"allocated": allocated.to_k8s(), **phases}


def _ready(job: JobInfo) -> bool:
    return job.min_available > 0 and job.ready_task_num >= job.min_available


def same_podgroup_status(current: Obj | None, desired: Obj) -> bool:
    """Does the PodGroup already say this (ignoring transition times)?"""
    current = current or {}
    for key in ("phase", "running", "succeeded", "failed"):
        if (current.get(key) or (0 if key != "phase" else "")) != desired.get(key):
            return False
    have = [_condition_core(c) for c in current.get("conditions") or []]
    want = [_condition_core(c) for c in desired.get("conditions") or []]
    return all(w in have for w in want)


def same_queue_status(current: Obj | None, desired: Obj) -> bool:
    current = current or {}
    if any((current.get(k) or 0) != desired[k] for k in ("pending", "inqueue", "running")):
        return False
    if current.get("reservation") != desired.get("reservation"):
        return False
    try:
        return Resource.from_k8s(current.get("allocated") or {}) == Resource.from_k8s(
            desired["allocated"]
        )
    except ValueError:
        return False


def _condition_core(condition: Obj) -> tuple[Any, ...]:
    return tuple(condition.get(k) or "" for k in ("type", "status", "reason", "message"))
