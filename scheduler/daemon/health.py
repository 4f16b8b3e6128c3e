"""/livez, /readyz and /metrics over HTTP, served by aiohttp in the daemon's own event loop.

Being in the same loop is the point of /livez: it answers only while the loop turns. /readyz is
503 until every informer's initial list is in the cache, and its body names the informers still
listing; readiness does not depend on leadership (a warm standby is ready), but the body says
which one it is. /metrics is the daemon's registry in Prometheus text format.

``--http-address`` with port 0 takes a free port; the address actually bound is logged and kept
in ``HealthServer.address`` (and ``port``). An address that cannot be bound is a warning, not
a stop: the scheduler schedules on without it.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from aiohttp import web

from pumice.daemon.metrics import CONTENT_TYPE, DaemonMetrics
from pumice.framework.configparse import split_host_port

log = logging.getLogger("pumice.daemon")

LIVE_WITHIN = 120.0
"""Seconds without a turn of the loop after which /livez says 503 (sessions take seconds)."""


class ProbedDaemon(Protocol):
    """What the probes read of the daemon (``pumice.daemon.loop.Daemon``, which imports this
    module, so this one knows it only by this shape)."""

    last_tick: float | None
    synced: bool
    metrics: DaemonMetrics

    @property
    def role(self) -> str: ...

    def waiting_for(self) -> str: ...


class HealthServer:
    def __init__(self, daemon: ProbedDaemon, address: str) -> None:
        self.daemon = daemon
        self.requested = address
        self.address: str | None = None
        """``host:port`` bound, once started."""
        self.port: int | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> str | None:
        host, port = split_host_port(self.requested)
        host = host or "0.0.0.0"
        app = web.Application()
        app.router.add_get("/livez", self._livez)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        # No access log: probes every few seconds would drown the scheduler's own lines.
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            # Health is not worth stopping the scheduler for: it schedules on, unprobed.
            log.warning("health and metrics not served on %s: %s", self.requested, exc)
            await self._runner.cleanup()
            self._runner = None
            return None
        bound = port
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            bound = sockets[0].getsockname()[1]
        self.port = bound
        self.address = f"[{host}]:{bound}" if ":" in host else f"{host}:{bound}"
        log.info("health and metrics on http://%s (/livez /readyz /metrics)", self.address)
        return self.address

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _livez(self, request: web.Request) -> web.Response:
        # Answering at all proves the event loop turns; a loop stuck awaiting something (a
        # session that never returns) shows as ticks that stopped.
        last = self.daemon.last_tick
        if last is not None and time.monotonic() - last > LIVE_WITHIN:
            return web.Response(status=503, text=f"stalled: no loop turn for {LIVE_WITHIN:g}s\n")
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        daemon = self.daemon
        role = daemon.role
        if daemon.synced:
            return web.Response(text=f"ok: synced; {role}\n")
        waiting = daemon.waiting_for()
        return web.Response(
            status=503, text=f"not ready: waiting for the initial list of {waiting}; {role}\n"
        )

    async def _metrics(self, request: web.Request) -> web.Response:
        body = self.daemon.metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})
