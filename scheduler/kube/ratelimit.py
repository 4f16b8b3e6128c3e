"""Client-side pacing: the QPS/burst limit (set, or left to the server), a token bucket, backoff.

``TokenBucket`` works like client-go's flow-control limiter: ``burst`` requests may go at once,
then one every ``1/qps`` seconds. Waiters take a reservation (tokens may go negative) and sleep
until it comes due, so they are served in arrival order without a lock; a cancelled waiter
gives its token back. ``Backoff`` doubles a delay up to a cap and draws each wait uniformly
from the upper half of it, so many clients failing together do not retry together.

**How fast the client may send** (``RequestPacing``): decided by the settings, or by what the
server shows. A client-side limit exists to protect an API server that cannot protect itself.
Today's API servers can: API Priority and Fairness classifies every request, marks each answer
with the ``X-Kubernetes-PF-FlowSchema-UID`` and ``X-Kubernetes-PF-PriorityLevel-UID`` headers,
and sheds load with 429 and ``Retry-After``, which the client honours. So, unless told otherwise,
pumice sets no client-side limit once the server's first answer carries those headers, and paces
at Volcano's default (2,000 requests/s, burst 2,000) when it does not — an old server, or one
with APF switched off — saying so once in the log. Explicit settings win both ways: ``qps``/
``burst`` of 0 mean no limit, any other value is the limit (``burst`` defaults to ``qps``).
kube-scheduler's conservative 50/s with burst 100 is such a choice, for small control planes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Callable, Mapping

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


log = logging.getLogger("pumice.kube")

FALLBACK_QPS = 2000.0
"""Requests/s when the server shows no API Priority and Fairness (Volcano's default)."""
FALLBACK_BURST = 2000
APF_HEADERS = ("X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID")
"""What an APF-enabled server sets on every request it classifies."""


def explicit_limit(qps: float | None, burst: int | None) -> tuple[float, int] | None:
    """The (qps, burst) the settings fix, (0, 1) for no limit; None when the server decides."""
    if qps is None:
        if burst == 0:
            return 0.0, 1
        return None
    if qps == 0 or burst == 0:
        return 0.0, 1
    return qps, burst if burst is not None else max(1, math.ceil(qps))


class RequestPacing:
    """The client's token bucket, and whether its limit is still to be decided by the server.

    ``decided`` is True from the start for explicit settings; otherwise the bucket paces at the
    fallback until ``observe`` has seen the server's first answer, which lifts the limit when
    the answer carries the APF headers.
    """

    def __init__(self, qps: float | None = None, burst: int | None = None) -> None:
        fixed = explicit_limit(qps, burst)
        self.decided = fixed is not None
        self.server_protects: bool | None = None
        """Whether the server showed APF headers (None: not asked, or the settings decide)."""
        if fixed is not None:
            self.limiter = TokenBucket(*fixed)
        else:
            self.limiter = TokenBucket(FALLBACK_QPS, burst or FALLBACK_BURST)

    def observe(self, headers: Mapping[str, str], server: str) -> None:
        """Decide from one answer's headers (the first one is enough: APF marks them all)."""
        if self.decided:
            return
        self.decided = True
        self.server_protects = any(name in headers for name in APF_HEADERS)
        if self.server_protects:
            self.limiter.qps = 0.0
            log.debug("%s shows API Priority and Fairness: no client-side rate limit", server)
        else:
            log.info(
                "%s shows no API Priority and Fairness headers: pacing requests at %g/s "
                "(burst %d); set scheduler.qps/--qps to change it (0: no limit)",
                server,
                self.limiter.qps,
                self.limiter.burst,
            )

    def describe(self) -> str:
        """The limit in force, for logs and tests: ``none`` or ``QPS/s burst B``."""
        if self.limiter.qps <= 0:
            return "none"
        return f"{self.limiter.qps:g}/s burst {self.limiter.burst}"
