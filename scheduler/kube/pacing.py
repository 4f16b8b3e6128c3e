"""How fast the client may send: decided by the settings, or by what the server shows.

A client-side limit exists to protect an API server that cannot protect itself. Today's API
servers can: API Priority and Fairness classifies every request, marks each answer with the
``X-Kubernetes-PF-FlowSchema-UID`` and ``X-Kubernetes-PF-PriorityLevel-UID`` headers, and sheds
load with 429 and ``Retry-After``, which the client honours. So, unless told otherwise, pumice
sets no client-side limit once the server's first answer carries those headers, and paces at
Volcano's default (2,000 requests/s, burst 2,000) when it does not — an old server, or one with
APF switched off — saying so once in the log.

Explicit settings win both ways: ``qps``/``burst`` of 0 mean no limit, any other value is the
limit (``burst`` defaults to ``qps``). kube-scheduler's conservative 50/s with burst 100 is such
a choice, for small control planes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

from pumice.kube.ratelimit import TokenBucket

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
