"""Fault injection, switchable at run time from tests and through the admin endpoint.

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
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import asdict, dataclass
from typing import Any, Protocol

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
