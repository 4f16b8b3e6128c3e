"""Status writes (events, pod conditions, PodGroup and Queue status) behind the binds.

Binds are what users wait for; what pumice tells them about it may lag. So status writes
queue here instead of going out as soon as they are made, and a few workers send them:

* **Binds first.** While any bind is in flight only ``busy_concurrency`` writes (one by
  default) are sent at a time, so the API server and the client's connection spend themselves
  on binds; when no bind is in flight, up to ``concurrency``. A write is never starved: the
  first worker always runs. The ``Scheduled`` events (sheddable) wait for the binds to drain
  altogether, up to ``later_limit`` seconds (then the busy worker takes them too, so none
  starves behind a bind stream that never drains): under a flood each one sent took the
  daemon's CPU from the binds (a request, about a third of a bind's cost) to tell what the
  pod's ``nodeName`` already says. Conditions and other writes keep the busy worker.
* **Bounded.** At most ``capacity`` writes wait (kube-scheduler's event broadcaster keeps
  1,000 and drops what comes beyond). Beyond that, *sheddable* writes — the ``Scheduled``
  event of each bind, about which nothing is decided — are dropped and counted (``shed``; the
  ``pumice_status_writes_shed`` metric), with one warning per burst. Every other write queues
  past the bound: a condition or status that was not written would not be written again.

Failures are logged and never raised; the writers already count them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger("pumice.daemon")

Write = Coroutine[Any, Any, object]
"""A status write not yet started: the lane awaits it, or closes it when it is shed."""

CAPACITY = 1000
CONCURRENCY = 16
BUSY_CONCURRENCY = 1
LATER_LIMIT = 10.0
"""Seconds a ``Scheduled`` event waits for the binds to drain before it goes beside them."""


class StatusLane:
    def __init__(
        self,
        busy: Callable[[], bool],
        *,
        capacity: int = CAPACITY,
        concurrency: int = CONCURRENCY,
        busy_concurrency: int = BUSY_CONCURRENCY,
        later_limit: float = LATER_LIMIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._busy = busy
        self.capacity = capacity
        self.concurrency = max(1, concurrency)
        self.busy_concurrency = max(1, min(busy_concurrency, self.concurrency))
        self._queue: deque[Write] = deque()
        """Writes that go in their turn, binds or not (conditions, statuses, warnings)."""
        self._later: deque[tuple[float, Write]] = deque()
        """Sheddable writes (``Scheduled`` events) with when they came: sent while no bind is
        in flight, or once they waited ``later_limit`` seconds."""
        self.later_limit = later_limit
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        self._settled = asyncio.Event()
        self._settled.set()
        self.shed = 0
        self.sent = 0
        self._shed_in_burst = 0

    @property
    def pending(self) -> int:
        """Writes queued or being sent."""
        return len(self._queue) + len(self._later) + len(self._tasks)

    @property
    def shedding(self) -> bool:
        """Would a sheddable write be shed now? (Then the caller need not make it.)"""
        return len(self._queue) + len(self._later) >= self.capacity

    def shed_one(self) -> None:
        """Count a sheddable write that was not even made because the lane is full (and let
        the writes that waited long enough go: nothing else may pump while binds stream)."""
        self._count_shed()
        self.pump()

    def submit(self, write: Write, *, sheddable: bool = False) -> bool:
        """Queue ``write``; False when it was shed (then it never runs)."""
        if sheddable and self.shedding:
            write.close()
            self._count_shed()
            return False
        if sheddable:
            self._later.append((self._clock(), write))
        else:
            self._queue.append(write)
        self._settled.clear()
        self.pump()
        return True

    def _count_shed(self) -> None:
        self.shed += 1
        if self._shed_in_burst == 0:
            log.warning(
                "%d status writes wait behind the binds: dropping Scheduled events "
                "until they are sent",
                len(self._queue) + len(self._later),
            )
        self._shed_in_burst += 1

    def pump(self) -> None:
        """Start as many queued writes as the binds in flight allow (call it when they drain)."""
        busy = self._busy()
        limit = self.busy_concurrency if busy else self.concurrency
        loop: asyncio.AbstractEventLoop | None = None
        while len(self._tasks) < limit:
            if self._queue:
                write = self._queue.popleft()
            elif self._later and (
                not busy or self._clock() - self._later[0][0] >= self.later_limit
            ):
                write = self._later.popleft()[1]
            else:
                return
            loop = loop or asyncio.get_running_loop()
            task = loop.create_task(self._send(write))
            self._tasks.add(task)
            task.add_done_callback(self._done)

    async def _send(self, write: Write) -> None:
        try:
            await write
        except Exception as exc:
            log.warning("status write failed: %s: %s", type(exc).__name__, exc)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self.sent += 1
        if not self._queue and not self._later and self._shed_in_burst:
            log.warning("%d Scheduled events were dropped behind the binds", self._shed_in_burst)
            self._shed_in_burst = 0
        if self.pending == 0:
            self._settled.set()
        elif not task.cancelled():
            self.pump()

    async def drain(self, timeout: float) -> bool:
        """Wait until every queued write was sent; False when ``timeout`` ran out first."""
        self.pump()
        try:
            await asyncio.wait_for(self._settled.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def cancel(self) -> None:
        """Stop what is being sent; writes still queued are dropped (closed, never sent)."""
        while self._queue:
            self._queue.popleft().close()
        while self._later:
            self._later.popleft()[1].close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._settled.set()
