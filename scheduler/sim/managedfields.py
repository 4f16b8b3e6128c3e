"""Who owns which fields: the ``metadata.managedFields`` entries of every tracked write.

Ordinary writes (create, update, patch) that name a ``fieldManager`` -- kubectl always does
(``kubectl-create``, ``kubectl-label``, ``kubectl-edit``...) -- record an ``Update`` entry owning
the fields they changed, taking them from other managers; that is how ``kubectl create`` and a
later ``kubectl apply --server-side`` can conflict. Writes without ``fieldManager`` are not
tracked (the real server names a manager after the User-Agent; skipping them keeps the
daemon's hot write path free of field-set work). Server-side apply (``pumice.sim.apply``)
computes its entries itself and hands them over through the same ``Writer``.

The registry stays unaware of requests: the server sets the current ``Writer`` in a context
variable around each request (``writing``), and the registry's create and update paths call
``stamp_create`` / ``stamp_update`` just before they store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from pumice.sim.fieldsets import (
    MISSING,
    FieldPath,
    differs,
    field_set,
    from_fields_v1,
    to_fields_v1,
    tracked_view,
    value_at,
)
from pumice.sim.objects import Obj, meta, now_rfc3339
from pumice.sim.resources import ResourceType


@dataclass(frozen=True)
class Writer:
    """Who is writing in the current request, and (for apply) the entries to store."""

    manager: str
    managed: list[Obj] | None = None
    """Set by server-side apply: the object's new managedFields, computed up front."""


_WRITER: ContextVar[Writer | None] = ContextVar("pumice_sim_writer", default=None)


@contextlib.contextmanager
def writing(manager: str, managed: list[Obj] | None = None) -> Iterator[None]:
    token = _WRITER.set(Writer(manager, managed) if manager else None)
    try:
        yield
    finally:
        _WRITER.reset(token)


# -- managedFields entries ---------------------------------------------------------------------


def new_entry(manager: str, *, operation: str, api_version: str, paths: set[FieldPath]) -> Obj:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(paths),
    }


def entries_of(obj: Obj) -> list[Obj]:
    value = meta(obj).get("managedFields")
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _same_ignoring_time(a: list[Obj], b: list[Obj]) -> bool:
    def strip(entries: list[Obj]) -> list[Obj]:
        return [{k: v for k, v in e.items() if k != "time"} for e in entries]

    return strip(a) == strip(b)


def stamp_create(rtype: ResourceType, obj: Obj) -> Obj:
    """``obj`` (about to be created) with the current writer's managedFields, if any."""
    writer = _WRITER.get()
    if writer is None:
        return obj
    managed = writer.managed
    if managed is None:
        managed = [
            new_entry(
                writer.manager,
                operation="Update",
                api_version=rtype.api_version,
                paths=field_set(rtype, obj),
            )
        ]
    return {**obj, "metadata": {**meta(obj), "managedFields": managed}}


def stamp_update(rtype: ResourceType, old: Obj, new: Obj) -> Obj:
    """``new`` (replacing ``old``) with managedFields carried over and updated for the
    current writer; unchanged entries keep their times, so a no-op stays a no-op."""
    before = entries_of(old)
    writer = _WRITER.get()
    if writer is None:
        after = before
    elif writer.managed is not None:
        after = writer.managed
    else:
        after = _record_update(rtype, old, new, writer.manager, before)
    if _same_ignoring_time(after, before):
        after = before
    m = dict(meta(new))
    if after:
        m["managedFields"] = after
    else:
        m.pop("managedFields", None)
    return {**new, "metadata": m}


def _record_update(
    rtype: ResourceType, old: Obj, new: Obj, manager: str, entries: list[Obj]
) -> list[Obj]:
    old_view, new_view = tracked_view(rtype, old), tracked_view(rtype, new)
    paths = field_set(rtype, old) | field_set(rtype, new)
    changed = {p for p in paths if differs(old_view, new_view, p)}
    if not changed:
        return entries
    gone = {p for p in changed if value_at(new_view, p) is MISSING}
    mine = changed - gone
    out: list[Obj] = []
    found = False
    for entry in entries:
        owned = from_fields_v1(entry.get("fieldsV1"))
        if entry.get("manager") == manager and entry.get("operation") == "Update":
            found = True
            owned = (owned | mine) - gone
        else:
            owned -= changed
        if owned:
            out.append({**entry, "fieldsV1": to_fields_v1(owned)})
    if not found and mine:
        out.append(
            new_entry(manager, operation="Update", api_version=rtype.api_version, paths=mine)
        )
    return out
