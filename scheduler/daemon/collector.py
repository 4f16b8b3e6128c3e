"""Garbage collection at the loop's turns, never in the middle of a session.

With CPython's automatic collector the daemon spent most of its CPU collecting: in
``bench/bench_daemon.py`` (5,000 nodes, 10,000 pods arriving) about 10 of 13 CPU seconds, in
pauses of up to a second that stall binds and watches alike. Each session's snapshot (5,000
``NodeInfo`` in a ``NodeTable`` that refers back to them: a cycle, which only the collector
frees) lives as long as the session; automatic collections in the middle promote it to the
older generations, and full collections — each a scan of every object the informers hold —
then follow one another as those snapshots pile up.

While the informers list, ``StartUpHeap`` (``pumice.daemon.heap``) keeps the collector paused
and freezes the heap once they are synced; then ``PacedCollector.start`` takes over:

* it freezes what is alive (``gc.freeze``; little is left after ``StartUpHeap``): the
  informers' stores and the cache, never garbage as a whole, are not scanned again;
* it turns automatic collection off for as long as the daemon runs;

and the loop calls ``turn`` at every turn. Once ``young_limit`` objects allocated since the last
collection are alive (a few sessions' garbage), a young collection (``gc.collect(1)``)
frees what the last cycles left behind — their snapshots — at a cost close to what was
allocated; objects that die sooner (most of what a watch event or a bind makes) are never
scanned at all. Every ``full_interval`` seconds a full collection frees cycles among the
objects that lived longer.
``stop`` puts the collector back as it was. Daemons in one process (tests) share it: the
first to start sets it up, the last to stop restores it.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

log = logging.getLogger("pumice.daemon")

FULL_INTERVAL = 300.0
"""Seconds between full collections."""
YOUNG_LIMIT = 200_000
"""Live objects allocated since the last collection that make a turn collect."""

_holders = 0
_was_enabled = True


class PacedCollector:
    def __init__(
        self,
        full_interval: float = FULL_INTERVAL,
        young_limit: int = YOUNG_LIMIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.full_interval = full_interval
        self.young_limit = young_limit
        self._clock = clock
        self._started = False
        self._last_full = 0.0
        self.collections = 0
        self.seconds = 0.0
        """Time spent in the collections this pacer ran."""

    def start(self) -> None:
        global _holders, _was_enabled
        if self._started:
            return
        self._started = True
        self._last_full = self._clock()
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
            gc.freeze()
        _holders += 1

    def turn(self) -> None:
        """Collect what the last cycle left behind (call it between cycles)."""
        if not self._started:
            return
        started = time.perf_counter()
        now = self._clock()
        if now - self._last_full >= self.full_interval:
            self._last_full = now
            gc.collect()
        elif gc.get_count()[0] >= self.young_limit:
            gc.collect(1)
        else:
            return
        self.collections += 1
        self.seconds += time.perf_counter() - started

    def stop(self) -> None:
        global _holders
        if not self._started:
            return
        self._started = False
        _holders -= 1
        if _holders == 0:
            gc.unfreeze()
            if _was_enabled:
                gc.enable()
