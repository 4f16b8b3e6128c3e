"""The daemon's HTTP endpoints: ``/livez``, ``/readyz`` and ``/metrics``.

* ``/livez`` — 200 while the loop turns (an iteration within the last ``LIVE_WITHIN`` seconds,
  or the daemon is still starting or waiting for the Lease), else 503: a wedged loop is
  restarted by the kubelet.
* ``/readyz`` — 200 once the process is up (synced and scheduling, or a standby waiting for
  the Lease, which must count as ready or a rolling update of two replicas never proceeds).
* ``/metrics`` — Prometheus text format; upstream ``scheduler_…`` names where the concept is the
  same (``scheduler_pending_pods``, ``scheduler_schedule_attempts_total``), ``pumice_…`` else.

The address is ``--http-address`` or ``scheduler.httpAddress``; when it cannot be bound the
daemon logs a warning and schedules without it (health is not worth stopping the scheduler).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from aiohttp import web

from pumice.framework.configparse import split_host_port

if TYPE_CHECKING:
    from pumice.daemon.loop import Daemon

log = logging.getLogger("pumice.daemon.health")

LIVE_WITHIN = 120.0


class HealthServer:
    def __init__(self, daemon: Daemon, address: str) -> None:
        self.daemon = daemon
        self.address = address
        self.runner: web.ServerRunner | None = None
        self.port: int | None = None

    async def start(self) -> None:
        host, port = split_host_port(self.address)
        server = web.Server(self._handle)
        self.runner = web.ServerRunner(server)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host or None, port)
        try:
            await site.start()
        except OSError as exc:
            log.warning("health and metrics not served on %s: %s", self.address, exc)
            await self.runner.cleanup()
            self.runner = None
            return
        sockets = getattr(site._server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else port
        log.info("health and metrics on %s (port %s)", self.address, self.port)

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.path == "/livez":
            live = self.daemon.last_tick is None or (
                time.monotonic() - self.daemon.last_tick < LIVE_WITHIN
            )
            return web.Response(status=200 if live else 503, text="ok" if live else "stalled")
        if request.path == "/readyz":
            return web.Response(text="ok")
        if request.path == "/metrics":
            return web.Response(text=self.metrics(), content_type="text/plain")
        return web.Response(status=404, text="not found")

    def metrics(self) -> str:
        d = self.daemon
        cache = d.cache
        lines = [
            "# HELP scheduler_pending_pods Pods of ours waiting for a node.",
            "# TYPE scheduler_pending_pods gauge",
            f"scheduler_pending_pods {cache.waiting() if cache is not None else 0}",
            "# HELP scheduler_schedule_attempts_total Bind attempts by outcome.",
            "# TYPE scheduler_schedule_attempts_total counter",
        ]
        outcomes = d.work.outcomes if d.work is not None else {}
        for outcome, count in sorted(outcomes.items()):
            lines.append(f'scheduler_schedule_attempts_total{{result="{outcome.lower()}"}} {count}')
        lines += [
            "# HELP pumice_sessions_total Scheduling sessions run.",
            "# TYPE pumice_sessions_total counter",
            f"pumice_sessions_total {d.cycles}",
            "# HELP pumice_session_failures_total Sessions that raised.",
            "# TYPE pumice_session_failures_total counter",
            f"pumice_session_failures_total {d.failures}",
            "# HELP pumice_last_session_seconds Duration of the last session.",
            "# TYPE pumice_last_session_seconds gauge",
            f"pumice_last_session_seconds {d.last.seconds if d.last is not None else 0.0}",
            "# HELP pumice_leader 1 while this instance holds the Lease (or runs without one).",
            "# TYPE pumice_leader gauge",
            f"pumice_leader {1 if d.leading else 0}",
        ]
        return "\n".join(lines) + "\n"
