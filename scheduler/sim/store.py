"""The object store: tables of objects, one global resourceVersion, history and watchers.

Every write goes through ``Store.commit``: it takes the next resourceVersion (one counter for
all resources, as etcd's revision), stamps it on the object, stores it, appends a ``Change`` to
the table's history and hands the change to the table's watchers and to internal listeners
(the KWOK-like lifecycle). History is bounded per table; the resourceVersion of the newest
change that fell out of it (or of the last compaction) is the table's *floor*: watching or
listing exactly from an older version is answered with 410 Gone.

Stored objects are never mutated; callers build new dicts for every change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import orjson

from pumice.plain import PumiceError
from pumice.sim.errors import too_old
from pumice.sim.objects import Key, Obj, with_rv

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(slots=True, eq=False)
class Change:
    """One committed write. ``obj`` is the new state (for DELETED: the last state, stamped
    with the deletion's resourceVersion); ``prev`` is the state before (None for ADDED)."""

    rv: int
    type: str
    table: str
    key: Key
    obj: Obj
    prev: Obj | None
    _lines: dict[tuple[str, str, int], bytes] = field(default_factory=dict)

    def line(self, event_type: str, view: str, convert: Callable[[Obj], Obj] | None) -> bytes:
        """The newline-terminated watch event, serialized once per (type, view).

        An event type differing from ``self.type`` (a DELETED for an object that stopped
        matching a selector) carries the previous state stamped with this change's version.
        """
        use_prev = event_type == DELETED and self.type != DELETED
        cache_key = (event_type, view, 1 if use_prev else 0)
        cached = self._lines.get(cache_key)
        if cached is None:
            obj = with_rv(self.prev, self.rv) if use_prev and self.prev is not None else self.obj
            if convert is not None:
                obj = convert(obj)
            cached = orjson.dumps({"type": event_type, "object": obj}) + b"\n"
            self._lines[cache_key] = cached
        return cached


class StoreKeyError(PumiceError, KeyError):
    """A delete of an object the store does not hold (the registry checks first: a bug)."""


def _would_commit(table: str, key: Key, obj: Obj | None, prev: Obj | None) -> Change:
    """The change a dry run answers with: no new resourceVersion (a would-be object keeps
    the version it had; a would-be new one has none), nothing stored or announced."""
    if obj is None:
        if prev is None:
            raise StoreKeyError(key)
        return Change(0, DELETED, table, key, prev, prev)
    if prev is None:
        m = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
        return Change(0, ADDED, table, key, {**obj, "metadata": m}, None)
    rv = (prev.get("metadata") or {}).get("resourceVersion")
    return Change(0, MODIFIED, table, key, with_rv(obj, int(rv)) if rv else obj, prev)


class Sink(Protocol):
    """A watcher as the store sees it."""

    def offer(self, change: Change) -> None: ...


Listener = Callable[[Change], None]


class Store:
    """Tables of objects keyed by (namespace, name), with history and watchers."""

    def __init__(self, history_size: int = 10_000) -> None:
        self.rv = 0
        self.history_size = history_size
        self._tables: dict[str, dict[Key, Obj]] = {}
        self._history: dict[str, deque[Change]] = {}
        self._floor: dict[str, int] = {}
        self._sinks: dict[str, set[Sink]] = {}
        self._listeners: list[Listener] = []
        self.compacted = 0
        """The resourceVersion of the last compaction (0: never)."""
        self.dry_run = False
        """While true, ``commit`` answers what it would store and stores nothing
        (see ``pumice.sim.rest``)."""

    # -- reading -------------------------------------------------------------------------

    def table(self, name: str) -> dict[Key, Obj]:
        """The live table (read-only for callers)."""
        tab = self._tables.get(name)
        if tab is None:
            tab = self._tables[name] = {}
        return tab

    def get(self, table: str, key: Key) -> Obj | None:
        tab = self._tables.get(table)
        return tab.get(key) if tab is not None else None

    def floor(self, table: str) -> int:
        """Oldest resourceVersion this table can still be read or watched from."""
        return max(self._floor.get(table, 0), self.compacted)

    def check_version(self, table: str, rv: int) -> None:
        """Raise 410 Gone when ``rv`` is older than the table's retained history."""
        floor = self.floor(table)
        if rv < floor:
            raise too_old(rv, floor + 1)

    def changes_since(self, table: str, rv: int) -> list[Change]:
        """Retained changes of ``table`` newer than ``rv``, oldest first (410 if too old)."""
        self.check_version(table, rv)
        hist = self._history.get(table)
        if not hist:
            return []
        out: list[Change] = []
        for change in reversed(hist):
            if change.rv <= rv:
                break
            out.append(change)
        out.reverse()
        return out

    def snapshot_at(self, table: str, rv: int) -> dict[Key, Obj]:
        """The table as it was at ``rv``, rebuilt from history (410 if too old)."""
        state = dict(self.table(table))
        if rv >= self.rv:
            return state
        for change in reversed(self.changes_since(table, rv)):
            if change.type == ADDED:
                state.pop(change.key, None)
            elif change.prev is not None:
                state[change.key] = change.prev
        return state

    def tables(self) -> Iterator[str]:
        return iter(list(self._tables))

    # -- writing -------------------------------------------------------------------------

    def commit(self, table: str, key: Key, obj: Obj | None) -> Change:
        """Store ``obj`` under ``key`` (None deletes) with the next resourceVersion."""
        tab = self.table(table)
        prev = tab.get(key)
        if self.dry_run:
            return _would_commit(table, key, obj, prev)
        self.rv += 1
        rv = self.rv
        if obj is None:
            if prev is None:
                raise StoreKeyError(key)
            del tab[key]
            change = Change(rv, DELETED, table, key, with_rv(prev, rv), prev)
        else:
            stamped = with_rv(obj, rv)
            tab[key] = stamped
            change = Change(rv, MODIFIED if prev is not None else ADDED, table, key, stamped, prev)
        self._record(change)
        return change

    def _record(self, change: Change) -> None:
        hist = self._history.get(change.table)
        if hist is None:
            hist = self._history[change.table] = deque()
        hist.append(change)
        while len(hist) > self.history_size:
            old = hist.popleft()
            self._floor[change.table] = old.rv
        sinks = self._sinks.get(change.table)
        if sinks:
            for sink in list(sinks):
                sink.offer(change)
        for listener in self._listeners:
            listener(change)

    def compact(self) -> int:
        """Forget all history: every resourceVersion before now becomes too old."""
        self.compacted = self.rv
        for hist in self._history.values():
            hist.clear()
        return self.rv

    # -- watchers and listeners ----------------------------------------------------------

    def add_sink(self, table: str, sink: Sink) -> None:
        self._sinks.setdefault(table, set()).add(sink)

    def remove_sink(self, table: str, sink: Sink) -> None:
        sinks = self._sinks.get(table)
        if sinks is not None:
            sinks.discard(sink)

    def sinks(self) -> list[Sink]:
        return [s for group in self._sinks.values() for s in group]

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)
