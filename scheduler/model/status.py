"""Task statuses, as Volcano has them, and the groups the scheduler reasons about.

Statuses are bit flags so that a group test is one ``&``: ``status & ALLOCATED_STATUSES``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any


class TaskStatus(enum.IntFlag):
    """Where a task (pod) stands, from the scheduler's point of view."""

    PENDING = 1
    """Waiting for a node."""
    ALLOCATED = 2
    """Given a node in this session; not yet committed."""
    PIPELINED = 4
    """Promised a node that will be free once releasing tasks are gone."""
    BINDING = 8
    """Committed; the bind request is on its way to the API server."""
    BOUND = 16
    """Bound to a node; not running yet."""
    RUNNING = 32
    RELEASING = 64
    """Being deleted or evicted; its resources come back when it is gone."""
    SUCCEEDED = 128
    FAILED = 256
    UNKNOWN = 512


ALLOCATED_STATUSES = (
    TaskStatus.ALLOCATED | TaskStatus.BINDING | TaskStatus.BOUND | TaskStatus.RUNNING
)
"""Statuses whose requests count against the job's and the queue's allocation."""

PREEMPTABLE_STATUSES = TaskStatus.BOUND | TaskStatus.RUNNING
COMPLETED_STATUSES = TaskStatus.SUCCEEDED | TaskStatus.FAILED
SCHEDULED_STATUSES = (
    TaskStatus.RUNNING | TaskStatus.BOUND | TaskStatus.SUCCEEDED | TaskStatus.FAILED
)
READY_STATUSES = ALLOCATED_STATUSES | TaskStatus.SUCCEEDED
"""Statuses counted as ready for gang readiness (Volcano's ReadyTaskNum)."""
VALID_STATUSES = (
    ALLOCATED_STATUSES | TaskStatus.SUCCEEDED | TaskStatus.PIPELINED | TaskStatus.PENDING
)


def status_of_pod(pod: Mapping[str, Any]) -> TaskStatus:
    """The task status of a plain-dict pod, following Volcano's mapping of pod phases.

    Running is Releasing when the pod is being deleted; Pending is Releasing when deleted,
    Pending when it has no node, else Bound.
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = meta.get("deletionTimestamp") is not None
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if spec.get("nodeName") else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN
