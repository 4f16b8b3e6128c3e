"""The daemon's one policy for CPython's garbage collector: paused while the informers list,
the heap frozen once they are synced, and collections only at the loop's turns.

Why each phase (measured, bench/bench_daemon.py):

* **Listing.** The initial lists allocate millions of objects that live as long as the daemon
  (every pod as a dict, a task, a job). The automatic collector runs a full pass each time the
  tracked heap grows by a quarter, so while the cache fills, ever larger passes find nothing to
  free: at 150,000 pods about a third of the start-up went to them. Those objects hold no
  reference cycles (JSON trees, model objects pointing one way) and reference counting frees
  the rest, so automatic collection is off from the start. A start-up that drags on (a server
  that cannot be reached: failed requests do leave cycles behind) gets a full collection every
  ``listing_limit`` seconds instead.
* **Synced.** ``gc.freeze()`` moves everything alive out of the collector's generations, so no
  later pass scans the informers' stores and the cache again. Automatic collection stays off
  for as long as the daemon runs: with it, the daemon spent about 10 of 13 CPU seconds
  collecting, in pauses of up to a second, because each session's snapshot (a ``NodeTable``
  and its ``NodeInfo`` refer to each other: a cycle only the collector frees) was promoted to
  older generations in the middle of the session and full passes followed one another.
* **Turns.** The loop calls ``turn`` between cycles, never inside a session. Once
  ``young_limit`` objects allocated since the last collection are alive (a few sessions'
  garbage), a young collection (``gc.collect(1)``) frees what the last cycles left behind at a
  cost close to what was allocated; objects that die sooner (most of what a watch event or a
  bind makes) are never scanned at all. Every ``full_interval`` seconds a full collection frees
  cycles among the objects that lived longer.
* **Stop** puts the collector back as it was and gives the frozen objects back (a process that
  runs more than one daemon, like the test suite, gets its garbage back). Daemons in one
  process share the collector: the first to start sets it up, the last to stop restores it.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable

log = logging.getLogger("pumice.daemon")

FULL_INTERVAL = 300.0
"""Seconds between full collections."""
YOUNG_LIMIT = 200_000
"""Live objects allocated since the last collection that make a turn collect."""
LISTING_LIMIT = 120.0
"""Seconds of listing after which (and then as often again) a full collection runs."""

_holders = 0
_was_enabled = True


class CollectorPolicy:
    """``listing`` (in the event loop) → ``synced`` → ``turn`` at every loop turn → ``stop``
    (idempotent; fine from any phase)."""

    def __init__(
        self,
        *,
        full_interval: float = FULL_INTERVAL,
        young_limit: int = YOUNG_LIMIT,
        listing_limit: float = LISTING_LIMIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.full_interval = full_interval
        self.young_limit = young_limit
        self.listing_limit = listing_limit
        self._clock = clock
        self._holding = False
        self._synced = False
        self._timer: asyncio.TimerHandle | None = None
        self._last_full = 0.0
        self.collections = 0
        self.seconds = 0.0
        """Time spent in the collections this policy ran."""

    def listing(self) -> None:
        """The informers start listing: no automatic collection from here on."""
        self._hold()
        if not self._synced and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(
                self.listing_limit, self._listing_drags_on
            )

    def synced(self) -> None:
        """Every initial list is in: freeze what is alive; collect only at turns from now."""
        self._hold()
        self._cancel_timer()
        if not self._synced:
            self._synced = True
            gc.freeze()
            self._last_full = self._clock()

    def turn(self) -> None:
        """Collect what the last cycles left behind (call it between cycles)."""
        if not self._synced:
            return
        now = self._clock()
        if now - self._last_full >= self.full_interval:
            self._last_full = now
            self._collect(2)
        elif gc.get_count()[0] >= self.young_limit:
            self._collect(1)

    def stop(self) -> None:
        global _holders
        self._cancel_timer()
        self._synced = False
        if not self._holding:
            return
        self._holding = False
        _holders -= 1
        if _holders == 0:
            gc.unfreeze()
            if _was_enabled:
                gc.enable()

    # -- internals -------------------------------------------------------------------------

    def _hold(self) -> None:
        global _holders, _was_enabled
        if self._holding:
            return
        self._holding = True
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1

    def _listing_drags_on(self) -> None:
        log.debug("still listing after %.0fs: a full collection", self.listing_limit)
        self._collect(2)
        self._timer = asyncio.get_running_loop().call_later(
            self.listing_limit, self._listing_drags_on
        )

    def _collect(self, generation: int) -> None:
        started = time.perf_counter()
        gc.collect(generation)
        self.collections += 1
        self.seconds += time.perf_counter() - started

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
