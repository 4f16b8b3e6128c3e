"""PodGroups, Queues and PriorityClasses as the cache keeps them, and why one may be refused.

A PodGroup becomes a job only when it is valid: its ``minResources`` parse and its queue exists
(a Queue object, or the implicit ``default`` queue). An invalid PodGroup is kept with the reason,
so its pending pods can say why they wait.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pumice.model import JobInfo, QueueInfo

Obj = dict[str, Any]


def object_key(obj: Obj) -> str:
    """``namespace/name`` of a namespaced object, ``name`` of a cluster-scoped one."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


@dataclass(slots=True, eq=False)
class PodGroupEntry:
    """A PodGroup object, the job built from it (None when invalid), and the reason if so."""

    obj: Obj
    job: JobInfo | None
    reason: str = ""


def build_job(
    podgroup: Obj, priorities: Mapping[str, int], queues: Mapping[str, QueueInfo]
) -> PodGroupEntry:
    """The job for ``podgroup``, or the reason there is none."""
    key = object_key(podgroup)
    spec = podgroup.get("spec") or {}
    priority = priorities.get(str(spec.get("priorityClassName") or ""), 0)
    try:
        job = JobInfo.from_podgroup(podgroup, priority=priority)
    except (ValueError, TypeError, KeyError) as exc:
        return PodGroupEntry(podgroup, None, f"podgroup {key} is invalid: {exc}")
    if job.queue not in queues:
        return PodGroupEntry(
            podgroup, None, f"podgroup {key} names queue {job.queue!r}, which does not exist"
        )
    return PodGroupEntry(podgroup, job)


def build_queue(queue: Obj) -> tuple[QueueInfo | None, str]:
    """The model queue for a Queue object, or the reason it cannot be used."""
    try:
        return QueueInfo.from_queue(queue), ""
    except (ValueError, TypeError, KeyError) as exc:
        return None, f"queue {object_key(queue)} is invalid: {exc}"


def priority_value(pc: Obj) -> int | None:
    value = pc.get("value")
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def queue_of(podgroup: Obj) -> Any:
    """The queue a PodGroup names (``default`` when it names none)."""
    return (podgroup.get("spec") or {}).get("queue") or "default"
