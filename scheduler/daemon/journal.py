"""The flight recorder's journal: every input of the daemon's cache, in order, so that another
cache fed the same journal is the same cache, and takes the same snapshots.

The cache (``pumice.cache.ClusterCache``) changes only through its informer handlers (``nodes``,
``pending_pods``, …, and one per storage kind from ``storage.handler(kind)``) and through the
methods the daemon calls on it (``assume``, ``forget``, ``gone``, …, ``tidy``, ``snapshot``),
some of which read its clock. ``Journal.cache`` makes a cache whose handlers and methods — every
public method but the pure reads in ``READS``, so a method added later is journaled too — note
each call, once it returned (or raised), as one JSON line:

* ``["init", scheduler_name, volcano, default_queue]`` — the cache was made;
* ``["ev", target, "add" | "update" | "delete", object, readings]`` — a handler was called (for
  an update only the new object: the handlers ignore the old one);
* ``["call", method, args, kwargs, readings]`` — a method was called;
* ``["sh", kind, readings]`` — the storage handler of ``kind`` was made;
* ``["cycle", cycle, seed, taken_at, fingerprint]`` — the daemon's cycle ``cycle`` opens its
  session on what the last ``snapshot()`` call returned (``Recorder.begin``);

``readings`` are the values the cache's clock returned during that call. The objects are the
informers' plain dicts (slimmed), so a line costs one ``orjson.dumps``: the journal grows with
what changes, not with the size of the cluster. ``Replica`` applies the lines to a cache of its
own whose clock answers with the recorded readings.
"""

from __future__ import annotations

import contextlib
import inspect
import time
import zlib
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from pumice.cache import ClusterCache, Handler
from pumice.model import ClusterSnapshot
from pumice.plain import Obj, PumiceError

Sink = Callable[[bytes], None]

READS = frozenset({"waiting", "entries", "counts", "holding", "evicted", "held"})
"""Methods of the cache that change nothing (they are called every loop turn: not journaled)."""
_STORAGE_HANDLER = "handler"


class JournalError(PumiceError, ValueError):
    """A journal another cache cannot follow: out of step, or a call it cannot make."""


def fingerprint(snapshot: ClusterSnapshot) -> int:
    """A checksum of what a snapshot holds (nodes in row order with their accounting, jobs in
    order, the number of tasks), for telling a rebuilt snapshot from the live one cheaply."""
    table = snapshot.table
    crc = zlib.crc32("\n".join(table.names).encode())
    for matrix in (table.allocatable, table.used, table.releasing, table.pipelined):
        crc = zlib.crc32(matrix.tobytes(), crc)
    crc = zlib.crc32(table.pod_count.tobytes(), crc)
    crc = zlib.crc32(table.unschedulable.tobytes(), crc)
    crc = zlib.crc32("\n".join(snapshot.jobs).encode(), crc)
    return zlib.crc32(f"{len(snapshot.task_jobs)} {len(snapshot.queues)}".encode(), crc)


# -- writing (the daemon's side) ---------------------------------------------------------------


class Journal:
    """Journals a cache's inputs into ``sink``, one JSON line each (event-loop thread)."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._depth = 0
        self._readings: list[float] = []
        self.broken: str | None = None
        """Why the journal stopped (a call it could not write), if it did."""

    def clock(self) -> float:
        """The cache's clock: the monotonic clock, noted while a journaled call runs."""
        now = time.monotonic()
        if self._depth:
            self._readings.append(now)
        return now

    def cache(self, scheduler_name: str, *, volcano: bool, default_queue: str) -> ClusterCache:
        """A new cache whose every input is journaled."""
        cache = ClusterCache(
            scheduler_name, volcano=volcano, default_queue=default_queue, clock=self.clock
        )
        self.write(["init", scheduler_name, volcano, default_queue])
        for name, value in list(vars(cache).items()):
            if isinstance(value, Handler):
                setattr(cache, name, JournaledHandler(self, name, value))
        for name in mutators():
            setattr(cache, name, self._method(name, getattr(cache, name)))
        storage = cache.storage
        make = storage.handler

        def storage_handler(kind: str) -> JournaledHandler:
            inner = self.call(["sh", kind, None], make, kind)
            return JournaledHandler(self, f"storage:{kind}", inner)

        setattr(storage, _STORAGE_HANDLER, storage_handler)
        return cache

    def write(self, entry: list[Any]) -> None:
        if self.broken is not None:
            return
        try:
            line = orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError as exc:
            self.broken = f"cannot journal {entry[:2]}: {exc}"
            return
        self._sink(line)

    def call(self, entry: list[Any], apply: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``apply(*args, **kwargs)``, journaled as ``entry`` (its last item replaced by the clock's
        readings) once it returned or raised; a call made inside another journaled call is part
        of that one. (On every event and call of the cache: kept lean.)"""
        if self._depth:
            return apply(*args, **kwargs)
        self._depth = 1
        readings: list[float] = []
        self._readings = readings
        try:
            return apply(*args, **kwargs)
        finally:
            self._depth = 0
            entry[-1] = readings
            self.write(entry)

    def _method(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def journaled(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return method(*args, **kwargs)
            return self.call(["call", name, args, kwargs, None], method, *args, **kwargs)

        journaled.__name__ = name
        return journaled


class JournaledHandler:
    """An informer handler of the cache, journaled (``InformerHandler``'s shape)."""

    def __init__(self, journal: Journal, target: str, inner: Handler) -> None:
        self._journal = journal
        self._target = target
        self._inner = inner

    def on_add(self, obj: Obj) -> None:
        self._journal.call(["ev", self._target, "add", obj, None], self._inner.on_add, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        entry = ["ev", self._target, "update", new, None]
        self._journal.call(entry, self._inner.on_update, old, new)

    def on_delete(self, obj: Obj) -> None:
        self._journal.call(["ev", self._target, "delete", obj, None], self._inner.on_delete, obj)


def mutators() -> list[str]:
    """The cache's public methods that may change it: all but ``READS``."""
    return sorted(
        name
        for name, value in vars(ClusterCache).items()
        if not name.startswith("_") and inspect.isfunction(value) and name not in READS
    )


# -- reading (the recorder's writer and replay) ---------------------------------------------------


class Tag(NamedTuple):
    """A cycle's mark in the journal: the snapshot its session was opened on."""

    cycle: int
    seed: int
    taken_at: float
    fingerprint: int
    snapshot: ClusterSnapshot


class ReplayClock:
    """The cache's clock in a replica: the readings recorded for the call being applied."""

    def __init__(self) -> None:
        self.readings: deque[float] = deque()
        self.last = 0.0
        self.short = False
        """Read more often than recorded (not raised: the cache's handlers swallow errors)."""

    def __call__(self) -> float:
        if self.readings:
            self.last = self.readings.popleft()
        else:
            self.short = True
        return self.last

    def load(self, readings: list[float]) -> None:
        self.readings, self.short = deque(readings), False

    def in_step(self) -> bool:
        return not (self.short or self.readings)


class Replica:
    """A cache rebuilt from a journal, line by line, as the live one was built."""

    def __init__(self) -> None:
        self.clock = ReplayClock()
        self.cache: ClusterCache | None = None
        self.snapshot: ClusterSnapshot | None = None
        """What the last ``snapshot()`` call returned."""
        self._storage: dict[str, Handler] = {}

    def __getstate__(self) -> dict[str, Any]:
        # The storage handlers are closures: made again on first use after loading.
        return {"clock": self.clock, "cache": self.cache, "snapshot": self.snapshot}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._storage = {}

    def apply(self, line: bytes) -> Tag | None:
        """Apply one journal line; for a cycle's mark, the snapshot taken for it."""
        try:
            entry = orjson.loads(line)
            op = entry[0]
            if op == "cycle":
                return self._tag(entry)
            if op == "init":
                _, name, volcano, default_queue = entry
                self.cache = ClusterCache(
                    name, volcano=volcano, default_queue=default_queue, clock=self.clock
                )
                return None
            cache = self.cache
            if cache is None:
                raise JournalError("a journal that does not start with the cache being made")
            apply = self._resolve(cache, op, entry)
            self.clock.load(entry[-1])
        except (orjson.JSONDecodeError, IndexError, TypeError, KeyError, ValueError) as exc:
            if isinstance(exc, JournalError):
                raise
            raise JournalError(f"an unreadable journal line: {line[:60]!r}") from None
        with contextlib.suppress(Exception):  # it raised in the daemon too, whose caller went on
            apply()
        if not self.clock.in_step():
            raise JournalError(f"the cache read its clock otherwise than recorded ({op})")
        return None

    def _resolve(self, cache: ClusterCache, op: str, entry: list[Any]) -> Callable[[], None]:
        """The call a journal line stands for; JournalError for one this cache cannot make."""
        if op == "sh":
            kind = entry[1]

            def make() -> None:
                self._storage[kind] = cache.storage.handler(kind)

            return make
        if op == "ev":
            _, target, event, obj, _ = entry
            handler = self._handler(cache, target)
            if event == "add":
                return lambda: handler.on_add(obj)
            if event == "update":
                return lambda: handler.on_update(obj, obj)
            if event == "delete":
                return lambda: handler.on_delete(obj)
            raise JournalError(f"an unknown event {event!r}")
        if op == "call":
            _, name, args, kwargs, _ = entry
            method = getattr(cache, name, None) if not name.startswith("_") else None
            if name in READS or not callable(method):
                raise JournalError(f"the cache has no method {name!r}")

            def call() -> None:
                result = method(*args, **kwargs)
                if name == "snapshot":
                    self.snapshot = result

            return call
        raise JournalError(f"an unknown journal entry {op!r}")

    def _handler(self, cache: ClusterCache, target: str) -> Handler:
        if target.startswith("storage:"):
            kind = target.split(":", 1)[1]
            handler = self._storage.get(kind)
            if handler is None:
                handler = self._storage[kind] = cache.storage.handler(kind)
            return handler
        handler = getattr(cache, target, None)
        if not isinstance(handler, Handler):
            raise JournalError(f"the cache has no handler {target!r}")
        return handler

    def _tag(self, entry: list[Any]) -> Tag:
        _, cycle, seed, taken_at, mark = entry
        if self.snapshot is None:
            raise JournalError(f"cycle {cycle} is marked before any snapshot was taken")
        self.snapshot.taken_at = taken_at
        return Tag(cycle, seed, taken_at, mark, self.snapshot)
