"""The two faces of an Event: core ``v1`` and ``events.k8s.io/v1``.

The real server keeps one Event object and converts it for each API group; this module does
the same conversion (``regarding`` is ``involvedObject``, ``note`` is ``message``, and so on),
so an event a scheduler writes through ``events.k8s.io/v1`` is what ``kubectl describe pod``
reads through core ``v1``. It also checks the rules the server enforces when an event is
created through ``events.k8s.io/v1``.
"""

from __future__ import annotations

from pumice.sim.objects import Obj

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
    out: Obj = {"kind": "Event", "apiVersion": "v1"}
    for name, value in obj.items():
        if name in ("kind", "apiVersion"):
            continue
        out[_RENAMES.get(name, name)] = value
    return out


def core_to_events_v1(obj: Obj) -> Obj:
    """The ``events.k8s.io/v1`` view of a stored (core v1) Event."""
    out: Obj = {"kind": "Event", "apiVersion": "events.k8s.io/v1"}
    for name, value in obj.items():
        if name in ("kind", "apiVersion"):
            continue
        out[_BACK.get(name, name)] = value
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
