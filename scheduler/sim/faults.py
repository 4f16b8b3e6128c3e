"""Fault injection and flow control, switchable at run time from tests and the admin endpoint.

Knobs:

* ``latency``: seconds added before every API request is handled;
* ``fail(code, *, fraction, verb, resource, count)``: answer a fraction of matching requests
  (``verb`` as in RBAC: get, list, watch, create, update, patch, delete; ``resource`` with
  its subresource, e.g. ``pods/binding``) with 500 InternalError, 429 TooManyRequests
  (with ``Retry-After``) or another code, optionally only ``count`` times;
* ``close_watches()``: end every open watch stream now (cleanly, as a server timeout would);
  ``watch_close_interval``: do so every N seconds;
* ``compact()``: forget all history, so watches and exact lists from older resourceVersions
  get 410 Gone;
* ``restart(downtime)``: drop every connection (watches included) as a crashing API server
  would, and refuse new connections for ``downtime`` seconds.

Sampling uses a seeded random generator, so a test that replays the same requests sees the
same failures.

**Flow control** (``FlowControl``): API Priority and Fairness as a client sees it. A real API
server with APF (on by default since Kubernetes 1.20) classifies every request and answers it
with ``X-Kubernetes-PF-FlowSchema-UID`` and ``X-Kubernetes-PF-PriorityLevel-UID``, served or
rejected, watches included; under overload it rejects with 429, the body ``Too many requests,
please try again later.`` and ``Retry-After``. The sim plays both: the headers unless
``SimConfig.priority_and_fairness`` is off (a server that is old or has APF switched off), and,
when told a rate (``shed_above``), a 429 with ``Retry-After: 1`` for each request beyond it.
Shedding load is a fault the server imposes on itself, hence its place here. The rate is a
token bucket of its own rather than pumice.kube's: the sim stands for the server and must not
depend on the client it tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from aiohttp import web

from pumice.sim.errors import ApiError, SimSettingsError, bad_request, injected
from pumice.sim.objects import Obj


class FaultTarget(Protocol):
    """What faults act on (the server)."""

    def close_watches(self, abort: bool = False) -> int: ...

    def compact(self) -> int: ...

    async def drop_connections(self, downtime: float = 0.0, keep: object = None) -> int: ...


@dataclass
class ErrorRule:
    code: int
    fraction: float = 1.0
    verb: str | None = None
    resource: str | None = None
    count: int | None = None
    """How many more requests to fail (None: no limit)."""
    retry_after: int = 1

    def applies(self, verb: str, resource: str) -> bool:
        if self.count is not None and self.count <= 0:
            return False
        if self.verb is not None and self.verb != verb:
            return False
        return self.resource is None or self.resource == resource


def _checked(rule: ErrorRule) -> ErrorRule:
    if not isinstance(rule.code, int) or not 400 <= rule.code <= 599:
        raise SimSettingsError(f"code must be an HTTP error code, not {rule.code!r}")
    if not 0.0 <= float(rule.fraction) <= 1.0:
        raise SimSettingsError(f"fraction must be within [0, 1], not {rule.fraction!r}")
    if rule.count is not None and rule.count < 0:
        raise SimSettingsError(f"count must not be negative, not {rule.count!r}")
    return rule


class Faults:
    def __init__(self, target: FaultTarget, seed: int | None = 0) -> None:
        self._target = target
        self._rng = random.Random(seed)
        self.latency = 0.0
        self.errors: list[ErrorRule] = []
        self.injected = 0
        """How many requests were failed on purpose so far."""
        self.watch_close_interval: float | None = None
        self._closer: asyncio.Task[None] | None = None

    # -- request path --------------------------------------------------------------------

    def pick(self, verb: str, resource: str) -> ApiError | None:
        """The error to answer this request with, if a rule fires."""
        for rule in self.errors:
            if rule.applies(verb, resource) and self._rng.random() < rule.fraction:
                if rule.count is not None:
                    rule.count -= 1
                self.injected += 1
                return injected(rule.code, rule.retry_after)
        return None

    # -- knobs ---------------------------------------------------------------------------

    def fail(
        self,
        code: int = 500,
        *,
        fraction: float = 1.0,
        verb: str | None = None,
        resource: str | None = None,
        count: int | None = None,
        retry_after: int = 1,
    ) -> ErrorRule:
        rule = _checked(ErrorRule(code, fraction, verb, resource, count, retry_after))
        self.errors.append(rule)
        return rule

    def set_latency(self, seconds: float) -> None:
        if seconds < 0:
            raise SimSettingsError("latency must not be negative")
        self.latency = seconds

    def close_watches(self) -> int:
        return self._target.close_watches()

    def compact(self) -> int:
        return self._target.compact()

    async def restart(self, downtime: float = 0.0, keep: object = None) -> int:
        return await self._target.drop_connections(downtime, keep)

    def set_watch_close_interval(self, seconds: float | None) -> None:
        if self._closer is not None:
            self._closer.cancel()
            self._closer = None
        self.watch_close_interval = seconds
        if seconds:
            self._closer = asyncio.get_running_loop().create_task(self._close_every(seconds))

    async def _close_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self._target.close_watches()

    def clear(self) -> None:
        """Switch every fault off."""
        self.latency = 0.0
        self.errors.clear()
        self.set_watch_close_interval(None)

    async def stop(self) -> None:
        if self._closer is not None:
            self._closer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._closer
            self._closer = None

    # -- JSON view for the admin endpoint ------------------------------------------------

    def to_json(self) -> Obj:
        return {
            "latency": self.latency,
            "errors": [asdict(rule) for rule in self.errors],
            "watchCloseInterval": self.watch_close_interval,
            "injected": self.injected,
        }

    def configure(self, body: Any) -> None:
        """Replace the knobs named in ``body`` (``latency``, ``errors``, ``watchCloseInterval``)."""
        if not isinstance(body, dict):
            raise bad_request("fault configuration must be a JSON object")
        try:
            if "latency" in body:
                self.set_latency(float(body["latency"]))
            if "errors" in body:
                rules = [_checked(ErrorRule(**item)) for item in body["errors"] or []]
                self.errors = rules
            if "watchCloseInterval" in body:
                value = body["watchCloseInterval"]
                self.set_watch_close_interval(float(value) if value else None)
        except (TypeError, ValueError) as exc:
            raise bad_request(f"invalid fault configuration: {exc}") from None


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
