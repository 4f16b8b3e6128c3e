"""The per-pod state machine of the cache, after kube-scheduler's.

::

    Initial ──assume──► Assumed ──Add (assigned watch)──► Added ──Remove──► Deleted
       ▲                  │
       └─────forget───────┘        (a failed bind; assumed pods never expire)

A pod that arrives already bound (by another scheduler, or by us before a restart) goes
straight from Initial to Added. Pods that may not be scheduled yet wait beside the machine:
``GATED`` (non-empty ``spec.schedulingGates``: untouched until the gates are gone) and
``BLOCKED`` (a bad object: the pod or its PodGroup is invalid; or the pod carries a constraint
pumice does not evaluate, ``pumice.model.volumes``; the reason says why).

A bind is seen as DELETED on the pending-pods watch (the pod left its field selector) and ADDED
on the assigned-pods watch, in either order. The entry remembers which of the two watches holds
the pod, so a DELETED from the pending watch while the pod is assumed, or already on the
assigned watch, is a move; a pending pod leaving its watch on its own is ``LEFT`` — out of every
session, waiting a while for an assigned ADD that would make it Added.
"""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pumice.model import Resource, TaskInfo
from pumice.model.tasks import TaskStatus, pod_priority, status_of_pod
from pumice.plain import Obj, ObjectError

log = logging.getLogger("pumice.cache")


class PodState(enum.Enum):
    INITIAL = "Initial"
    """Pending, ours, valid: offered to every session."""
    ASSUMED = "Assumed"
    """A session chose a node; counted there until the watch confirms or the bind fails."""
    ADDED = "Added"
    """Bound, as the assigned-pods watch shows it."""
    GATED = "Gated"
    BLOCKED = "Blocked"
    LEFT = "Left"
    """Left the pending watch without our bind: deleted, or bound by someone else (a move
    whose ADDED has not arrived yet)."""


@dataclass(slots=True, eq=False)
class PodEntry:
    """What the cache knows of one pod (by uid)."""

    uid: str
    pod: Obj
    state: PodState
    ours: bool
    node: str | None = None
    """The node it is assumed on or added to."""
    on_pending_watch: bool = False
    on_assigned_watch: bool = False
    reason: str = ""
    """Why a BLOCKED pod may not be scheduled."""
    group: str | None = None
    """``namespace/name`` of the PodGroup it names, if any."""
    left_at: float = 0.0
    bound: bool = False
    """The API server accepted our bind; the watch has not confirmed it yet."""
    evicting: bool = False
    """We asked for its eviction: counted as releasing until the watch shows it going."""

    @property
    def key(self) -> str:
        meta = self.pod.get("metadata") or {}
        return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def pod_uid(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    uid = meta.get("uid")
    if uid:
        return str(uid)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def is_gated(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def parse_task(
    entry: PodEntry,
    priority_of: Callable[[str | None], int | None],
    current: TaskInfo | None = None,
) -> TaskInfo | None:
    """The task of the entry's pod; None (and the entry BLOCKED) for a pending pod that cannot
    be parsed. A pod without ``spec.priority`` gets what the priority admission would have set
    (``priority_of`` its class, the ``globalDefault`` one's for none): objects that never went
    through an API server (``pumice simulate``) lack it.

    ``current`` is the task the cache holds for the pod now, if any. When the entry's pod is
    that task's pod, or differs from it only in node and status (the pod was assumed, or seen
    bound), the task is carried over (``TaskInfo.placed_as``) instead of parsed again: a pod
    is parsed once on its way from pending to bound."""
    pod = entry.pod
    if current is not None and (current.pod is pod or same_but_placement(current.pod, pod)):
        task = current.placed_as(pod)
        spec = pod.get("spec") or {}
        if spec.get("priority") is None:
            value = priority_of(spec.get("priorityClassName"))
            task.priority = pod_priority(pod) if value is None else value
        return task
    try:
        task = TaskInfo.from_pod(pod)
    except ObjectError as exc:
        if entry.state is PodState.INITIAL:
            entry.state, entry.reason = PodState.BLOCKED, f"pod {entry.key} is invalid: {exc}"
            return None
        # A bound pod we cannot parse still sits on its node: count it as requesting nothing.
        log.warning("pod %s: %s; counted without requests", entry.key, exc)
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        task = TaskInfo(
            uid=entry.uid,
            name=str(meta.get("name")),
            namespace=str(meta.get("namespace") or "default"),
            resreq=Resource.zero(),
            status=status_of_pod(pod),
            node_name=spec.get("nodeName") or None,
            pod=pod,
        )
    spec = pod.get("spec") or {}
    if spec.get("priority") is None:
        value = priority_of(spec.get("priorityClassName"))
        if value is not None:
            task.priority = value
    derive(task)
    return task


def derive(task: TaskInfo) -> None:
    """Work out now, as the pod arrives, what every session reads of it: its pod-to-pod
    constraints and its labels, and for a pod that waits for a node its shape (request and
    scheduling terms: what predicates and scores read). ``TaskInfo`` keeps them with the pod
    object and shares them with every session's copy, so the first session that sees a pod no
    longer parses it. A pod already on a node is placed: its shape is worked out only if a
    session asks (it is a fifth of what a running pod costs at start-up, for 150,000 of them).
    A pod whose terms do not parse is left as it was: the session meets the same error as
    before, where it is reported."""
    with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
        _ = (task.links, task.labels)
        if task.status == TaskStatus.PENDING:
            _ = task.shape


_IDENTITY_FIELDS = ("uid", "name", "namespace", "labels", "annotations", "creationTimestamp")
"""What a task reads of a pod's metadata (``TaskInfo.from_pod`` and its derived parts)."""
_ABSENT = object()


def same_but_placement(old: Mapping[str, Any] | None, new: Obj) -> bool:
    """Do two objects of a pod differ at most in their node, status and metadata no task
    reads (resourceVersion, deletion)? Then a task of one is a task of the other once its node
    and status are read again (``TaskInfo.placed_as``). Comparing costs little: slimmed pods
    share their equal parts, and equal parts compare by identity first."""
    if old is None:
        return False
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if old_meta is not new_meta:  # (the same object: ``pumice simulate``'s binds)
        for key in _IDENTITY_FIELDS:
            if old_meta.get(key) != new_meta.get(key):
                return False
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if len(old_spec) - ("nodeName" in old_spec) != len(new_spec) - ("nodeName" in new_spec):
        return False
    for key, value in new_spec.items():
        if key != "nodeName" and old_spec.get(key, _ABSENT) != value:
            return False
    return True
