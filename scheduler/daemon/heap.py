"""The garbage collector during start-up: paused while the informers list, then the heap frozen.

The initial lists allocate millions of objects that live as long as the daemon (every pod as
a dict, a task, a job). CPython's cyclic collector runs a full pass over everything it tracks
each time the tracked heap grows by a quarter, so while the cache fills, ever larger passes
find nothing to free: measured at 150,000 pods, about a third of the start-up went to them.
The pods hold no reference cycles (JSON trees, and model objects pointing one way), and what
reference counting frees needs no collector, so it is paused until every informer has synced.
Then ``gc.freeze()`` moves everything allocated so far out of the collector's generations:
later passes scan only what changed since start-up instead of the whole cache every time.
When the daemon stops, the frozen objects go back to the collector (a process that runs more
than one daemon, like the test suite, gets its garbage back). A start-up that takes longer
than ``PAUSE_LIMIT`` (a server that cannot be reached: failed requests do leave cycles
behind) gets the collector back then, unfrozen.
"""

from __future__ import annotations

import asyncio
import gc

PAUSE_LIMIT = 120.0
"""Seconds the collector stays paused at most."""


class StartUpHeap:
    """Pauses the collector when made (in the event loop); ``synced()`` freezes the heap and
    resumes it; ``release()`` (idempotent) undoes whatever is still in effect."""

    def __init__(self, limit: float = PAUSE_LIMIT) -> None:
        self._resume = gc.isenabled()
        self._paused = True
        self._frozen = False
        gc.disable()
        self._timer = asyncio.get_running_loop().call_later(limit, self._unpause)

    def synced(self) -> None:
        if self._paused:
            gc.freeze()
            self._frozen = True
            self._unpause()

    def _unpause(self) -> None:
        self._timer.cancel()
        if self._paused:
            self._paused = False
            if self._resume:
                gc.enable()

    def release(self) -> None:
        self._unpause()
        if self._frozen:
            self._frozen = False
            gc.unfreeze()
