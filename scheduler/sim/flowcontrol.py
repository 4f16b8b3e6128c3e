"""API Priority and Fairness as a client sees it: the marking headers, and shedding with 429.

A real API server with APF (on by default since Kubernetes 1.20) classifies every request and
answers it with ``X-Kubernetes-PF-FlowSchema-UID`` and ``X-Kubernetes-PF-PriorityLevel-UID``,
served or rejected, watches included. Under overload it rejects with 429, the body ``Too many
requests, please try again later.`` and ``Retry-After``. The sim plays both: the headers unless
``SimConfig.priority_and_fairness`` is off (a server that is old or has APF switched off), and,
when told a rate (``shed_above``), a 429 with ``Retry-After: 1`` for each request beyond it.

The rate is a token bucket of its own rather than pumice.kube's: the sim stands for the server
and must not depend on the client it tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aiohttp import web

from pumice.sim.errors import ApiError, SimSettingsError, injected

FLOW_SCHEMA_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
# Fixed UIDs, as a real server's built-in "exempt"/"workload-low" objects have theirs.
_FLOW_SCHEMA_UID = "6f2c5e1a-8d3b-4c2e-9a7f-5b1d0e3c4a21"
_PRIORITY_LEVEL_UID = "0b9e7d4c-2a1f-4e8b-8c6d-3f5a2e1b7c90"
RESPONSE_HEADERS = web.RequestKey("pumice.sim.response_headers", dict[str, str])
"""The request key under which handlers that stream (watches) find the headers to send."""


class FlowControl:
    """The headers every API answer carries, and the optional request rate above which the
    server sheds load."""

    def __init__(self, enabled: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = enabled
        self.headers: dict[str, str] = (
            {FLOW_SCHEMA_HEADER: _FLOW_SCHEMA_UID, PRIORITY_LEVEL_HEADER: _PRIORITY_LEVEL_UID}
            if enabled
            else {}
        )
        self.rejected = 0
        """How many requests were shed with 429."""
        self._clock = clock
        self._rate = 0.0
        self._burst = 1.0
        self._tokens = 0.0
        self._stamp = 0.0

    @property
    def shed_rate(self) -> float | None:
        """Requests/s above which requests are shed (None: never)."""
        return self._rate or None

    def shed_above(self, rate: float | None, burst: int | None = None) -> None:
        """Answer 429 to requests beyond ``rate`` per second (``burst`` at once); None: never."""
        if rate is not None and not rate > 0:
            raise SimSettingsError(f"rate must be positive, not {rate!r}")
        self._rate = float(rate or 0.0)
        self._burst = float(max(1, burst if burst is not None else int(self._rate) or 1))
        self._tokens = self._burst
        self._stamp = self._clock()

    def admit(self) -> ApiError | None:
        """None when the request may be served, else the 429 to answer it with."""
        if not self._rate:
            return None
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        self.rejected += 1
        return injected(429, 1)
