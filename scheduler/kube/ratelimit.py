"""Client-side pacing: a QPS/burst token bucket and capped exponential backoff with jitter.

``TokenBucket`` works like client-go's flow-control limiter: ``burst`` requests may go at once,
then one every ``1/qps`` seconds. Waiters take a reservation (tokens may go negative) and sleep
until it comes due, so they are served in arrival order without a lock; a cancelled waiter
gives its token back. ``Backoff`` doubles a delay up to a cap and draws each wait uniformly
from the upper half of it, so many clients failing together do not retry together.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable

# One generator for every Backoff: seeding a new one per request costs more than the request.
_JITTER = random.Random()


class TokenBucket:
    """At most ``burst`` requests at once, then ``qps`` per second (``qps <= 0``: no limit)."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._stamp = clock()
        self.waits = 0
        """How many takes had to wait for a token."""

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now

    def reserve(self) -> float:
        """Take a token now; the seconds to wait before using it (0: none)."""
        if self.qps <= 0:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        self.waits += 1
        return -self._tokens / self.qps

    def try_take(self) -> bool:
        """Take a token if one is there now; False (nothing taken) otherwise."""
        if self.qps <= 0:
            return True
        self._refill()
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    async def take(self) -> None:
        delay = self.reserve()
        if delay <= 0:
            return
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            self._tokens = min(float(self.burst), self._tokens + 1.0)
            raise


class Backoff:
    """Delays ``initial``, ``2·initial``, ... capped at ``cap``, each drawn from [d/2, d]."""

    def __init__(
        self,
        *,
        initial: float = 0.5,
        cap: float = 30.0,
        factor: float = 2.0,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.attempts = 0
        self._rng = rng or _JITTER

    def next(self) -> float:
        base = min(self.cap, self.initial * self.factor ** min(self.attempts, 64))
        self.attempts += 1
        return base * (0.5 + 0.5 * self._rng.random())

    def reset(self) -> None:
        self.attempts = 0

    async def wait(self) -> None:
        await asyncio.sleep(self.next())
