"""Small helpers for Kubernetes objects kept as plain JSON dicts.

Objects inside the simulated API server are never mutated once stored: every change builds new
dicts along the changed path (``with_meta``, ``with_path``), so history entries and watch
events can share structure safely. This module holds that copy-on-write toolbox together with
the time and uid formats the real server uses (durations: ``pumice.model.quantity``).

**The two faces of an Event**: core ``v1`` and ``events.k8s.io/v1``. The real server keeps one
Event object and converts it for each API group; ``events_v1_to_core`` and ``core_to_events_v1``
do the same conversion (``regarding`` is ``involvedObject``, ``note`` is ``message``, and so
on), so an event a scheduler writes through ``events.k8s.io/v1`` is what ``kubectl describe
pod`` reads through core ``v1``. ``validate_events_v1`` checks the rules the server enforces
when an event is created through ``events.k8s.io/v1``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

# re-exported: the sim's modules take it from here, with the helpers below
from pumice.plain import Obj as Obj
from pumice.plain import PumiceError, ordered_uid

Key = tuple[str, str]
"""Where an object lives in its table: (namespace or "", name)."""


_last_second: list[Any] = [-1, ""]


def now_rfc3339(at: float | None = None) -> str:
    """A ``metav1.Time``: RFC 3339 in UTC with second precision."""
    second = int(time.time() if at is None else at)
    if second != _last_second[0]:
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _last_second[0], _last_second[1] = second, text
    return str(_last_second[1])


def now_micro(at: float | None = None) -> str:
    """A ``metav1.MicroTime``: RFC 3339 in UTC with microseconds."""
    moment = datetime.fromtimestamp(time.time() if at is None else at, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class BadTime(PumiceError, ValueError):
    """A text that is not a ``Time`` or ``MicroTime`` (RFC 3339)."""


def parse_time(value: str) -> float:
    """Seconds since the epoch of a ``Time`` or ``MicroTime`` string (else ``BadTime``)."""
    text = value.replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError as exc:
        raise BadTime(f"bad time {value!r}: {exc}") from None


def new_uid() -> str:
    """A uid in creation order, as ``pumice simulate`` makes them (``pumice.plain.ordered_uid``)."""
    return ordered_uid()


def meta(obj: Obj) -> Obj:
    """The object's metadata (an empty dict when it has none)."""
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def key_of(obj: Obj) -> Key:
    m = meta(obj)
    return (str(m.get("namespace") or ""), str(m.get("name") or ""))


def with_meta(obj: Obj, **changes: Any) -> Obj:
    """A shallow copy of ``obj`` whose metadata has ``changes`` applied (None removes a key)."""
    new_meta = dict(meta(obj))
    for name, value in changes.items():
        if value is None:
            new_meta.pop(name, None)
        else:
            new_meta[name] = value
    return {**obj, "metadata": new_meta}


def with_rv(obj: Obj, rv: int) -> Obj:
    return with_meta(obj, resourceVersion=str(rv))


def get_path(obj: Obj, *path: str) -> Any:
    """The value at ``path`` or None when any step is missing or not a mapping."""
    cur: Any = obj
    for step in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(step)
    return cur


def set_condition(conditions: list[Any] | None, condition: Obj, at: str) -> list[Any]:
    """A new conditions list with ``condition`` replacing the one of its type.

    ``lastTransitionTime`` is kept when the status does not change, as the kubelet and the
    API server do.
    """
    out: list[Any] = []
    replaced = False
    for cond in conditions or []:
        if isinstance(cond, dict) and cond.get("type") == condition.get("type"):
            merged = dict(condition)
            if cond.get("status") == condition.get("status") and cond.get("lastTransitionTime"):
                merged["lastTransitionTime"] = cond["lastTransitionTime"]
            else:
                merged.setdefault("lastTransitionTime", at)
            out.append(merged)
            replaced = True
        else:
            out.append(cond)
    if not replaced:
        out.append({"lastTransitionTime": at, **condition})
    return out


def human_age(seconds: float) -> str:
    """kubectl's short age format: 5s, 3m20s, 4h, 2d3h, 400d."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


# events.k8s.io/v1 field -> core v1 field
_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_BACK = {core: v1 for v1, core in _RENAMES.items()}

NOTE_LIMIT = 1024


def events_v1_to_core(obj: Obj) -> Obj:
    """The stored (core v1) form of an ``events.k8s.io/v1`` Event."""
    return _renamed(obj, "v1", _RENAMES)


def core_to_events_v1(obj: Obj) -> Obj:
    """The ``events.k8s.io/v1`` view of a stored (core v1) Event."""
    return _renamed(obj, "events.k8s.io/v1", _BACK)


def _renamed(obj: Obj, api_version: str, renames: dict[str, str]) -> Obj:
    """``obj`` as an Event of ``api_version``, its fields renamed by ``renames``."""
    out: Obj = {"kind": "Event", "apiVersion": api_version}
    for name, value in obj.items():
        if name not in ("kind", "apiVersion"):
            out[renames.get(name, name)] = value
    return out


def validate_events_v1(obj: Obj) -> list[tuple[str, str, str]]:
    """Problems the server reports (field, reason, message) for an events.k8s.io/v1 create."""
    problems: list[tuple[str, str, str]] = []

    def required(name: str) -> None:
        if not obj.get(name):
            problems.append((name, "FieldValueRequired", "Required value"))

    required("eventTime")
    required("reportingController")
    required("reportingInstance")
    required("action")
    required("reason")
    kind = obj.get("type")
    if kind not in ("Normal", "Warning"):
        problems.append(
            (
                "type",
                "FieldValueNotSupported",
                f'Unsupported value: "{kind or ""}": supported values: "Normal", "Warning"',
            )
        )
    note = obj.get("note")
    if isinstance(note, str) and len(note.encode()) > NOTE_LIMIT:
        problems.append(
            ("note", "FieldValueTooLong", f"Too long: may not be more than {NOTE_LIMIT} bytes")
        )
    regarding = obj.get("regarding")
    namespace = (obj.get("metadata") or {}).get("namespace")
    if isinstance(regarding, dict) and regarding.get("namespace") not in (None, "", namespace):
        problems.append(
            (
                "regarding.namespace",
                "FieldValueInvalid",
                f'Invalid value: "{regarding.get("namespace")}": does not match event.namespace',
            )
        )
    return problems
