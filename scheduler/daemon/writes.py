"""Status writes (events, pod conditions, PodGroup and Queue status) behind the binds.

Binds are what users wait for; what pumice tells them about it may lag. So status writes
queue here instead of going out as soon as they are made, and a few workers send them:

* **Binds first.** While any bind is in flight only ``busy_concurrency`` writes (one by
  default) are sent at a time, so the API server and the client's connection spend themselves
  on binds; when no bind is in flight, up to ``concurrency``. A write is never starved: the
  first worker always runs.
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
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger("pumice.daemon")

Write = Coroutine[Any, Any, object]
"""A status write not yet started: the lane awaits it, or closes it when it is shed."""

CAPACITY = 1000
CONCURRENCY = 16
BUSY_CONCURRENCY = 1


class StatusLane:
    def __init__(
        self,
        busy: Callable[[], bool],
        *,
        capacity: int = CAPACITY,
        concurrency: int = CONCURRENCY,
        busy_concurrency: int = BUSY_CONCURRENCY,
    ) -> None:
        self._busy = busy
        self.capacity = capacity
        self.concurrency = max(1, concurrency)
        self.busy_concurrency = max(1, min(busy_concurrency, self.concurrency))
        self._queue: deque[Write] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._settled = asyncio.Event()
        self._settled.set()
        self.shed = 0
        self.sent = 0
        self._shed_in_burst = 0

    @property
    def pending(self) -> int:
        """Writes queued or being sent."""
        return len(self._queue) + len(self._tasks)

    @property
    def shedding(self) -> bool:
        """Would a sheddable write be shed now? (Then the caller need not make it.)"""
        return len(self._queue) >= self.capacity

    def shed_one(self) -> None:
        """Count a sheddable write that was not even made because the lane is full."""
        self._count_shed()

    def submit(self, write: Write, *, sheddable: bool = False) -> bool:
        """Queue ``write``; False when it was shed (then it never runs)."""
        if sheddable and self.shedding:
            write.close()
            self._count_shed()
            return False
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
                len(self._queue),
            )
        self._shed_in_burst += 1

    def pump(self) -> None:
        """Start as many queued writes as the binds in flight allow (call it when they drain)."""
        limit = self.busy_concurrency if self._busy() else self.concurrency
        loop: asyncio.AbstractEventLoop | None = None
        while self._queue and len(self._tasks) < limit:
            loop = loop or asyncio.get_running_loop()
            task = loop.create_task(self._send(self._queue.popleft()))
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
        if not self._queue and self._shed_in_burst:
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
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._settled.set()
