"""PodGroups, Queues and PriorityClasses as the cache keeps them, and why one may be refused.

A PodGroup becomes a job only when it is valid: its ``minResources`` parse and its queue exists
(a Queue object, or the implicit default queue; a PodGroup naming none is in the configured
default queue). An invalid PodGroup is kept with the reason,
so its pending pods can say why they wait.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pumice.model import JobInfo, QueueInfo
from pumice.plain import Obj, ObjectError

log = logging.getLogger("pumice.cache")


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
    podgroup: Obj,
    priorities: Mapping[str, int],
    queues: Mapping[str, QueueInfo],
    *,
    default_queue: str = "default",
    default_priority: int | None = None,
) -> PodGroupEntry:
    """The job for ``podgroup``, or the reason there is none. As in Volcano, a PodGroup
    without ``spec.queue`` is in ``default_queue`` (the config's ``defaultQueue``), and one
    without ``priorityClassName`` gets the ``globalDefault`` PriorityClass's value
    (``default_priority``; 0 without one, or for a class that does not exist)."""
    key = object_key(podgroup)
    spec = podgroup.get("spec") or {}
    class_name = spec.get("priorityClassName")
    priority = priorities.get(str(class_name), 0) if class_name else (default_priority or 0)
    try:
        job = JobInfo.from_podgroup(podgroup, priority=priority)
    except ObjectError as exc:
        return PodGroupEntry(podgroup, None, f"podgroup {key} is invalid: {exc}")
    job.queue = queue_of(podgroup, default_queue)
    if job.queue not in queues:
        return PodGroupEntry(
            podgroup, None, f"podgroup {key} names queue {job.queue!r}, which does not exist"
        )
    return PodGroupEntry(podgroup, job)


def queue_of(podgroup: Obj, default_queue: str = "default") -> str:
    """The queue a PodGroup names, ``default_queue`` when it names none."""
    return str((podgroup.get("spec") or {}).get("queue") or default_queue)


def build_queue(queue: Obj) -> tuple[QueueInfo | None, str]:
    """The model queue for a Queue object, or the reason it cannot be used."""
    try:
        return QueueInfo.from_queue(queue), ""
    except ObjectError as exc:
        return None, f"queue {object_key(queue)} is invalid: {exc}"


class PriorityClasses:
    """PriorityClass values by name, and which one is the ``globalDefault``."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}
        self.global_default: str | None = None

    def of(self, class_name: str | None) -> int | None:
        """A class's value (the ``globalDefault`` one's when None); None if unknown."""
        if class_name:
            return self.values.get(str(class_name))
        return None if self.global_default is None else self.values.get(self.global_default)

    def upsert(self, pc: Obj) -> Callable[[Obj], bool]:
        """Take a PriorityClass; returns which PodGroups' priority may have changed."""
        name = object_key(pc)
        value = priority_value(pc)
        if value is None:
            log.warning("priorityclass %s has no integer value; ignored", name)
            self.values.pop(name, None)
        else:
            self.values[name] = value
        was_default = self.global_default == name
        if pc.get("globalDefault"):
            self.global_default = name
        elif was_default:
            self.global_default = None
        return _given_by(name, was_default or self.global_default == name)

    def delete(self, pc: Obj) -> Callable[[Obj], bool]:
        name = object_key(pc)
        self.values.pop(name, None)
        was_default = self.global_default == name
        if was_default:
            self.global_default = None
        return _given_by(name, was_default)


def _given_by(name: str, default_too: bool) -> Callable[[Obj], bool]:
    """PodGroups that take their priority from class ``name`` (or the default, if it moved)."""

    def affected(podgroup: Obj) -> bool:
        class_name = (podgroup.get("spec") or {}).get("priorityClassName")
        return class_name == name or (default_too and not class_name)

    return affected


def priority_value(pc: Obj) -> int | None:
    value = pc.get("value")
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None
