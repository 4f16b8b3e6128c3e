"""May this instance write? Leader election as the daemon uses it.

With election off every (non-dry-run) instance leads. With it on, ``LeaderElector`` runs on a
connection of its own — renewals must never queue behind a burst of binds under the client's
rate limit — and the daemon only runs sessions while it holds the Lease. A standby keeps its
informers and cache warm, so it takes over with a full picture, but writes nothing except its
attempts on the Lease. Losing the Lease ends the process (``lost``): a stale leader must not go
on binding, and the supervisor restarts it with an empty cache, as kube-scheduler does.

A dry-run instance never takes part: it writes nothing, the Lease included.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket

from pumice.framework.config import LeaderElection
from pumice.kube import Kube, KubeError, KubeSettings, LeaderElector, connect

log = logging.getLogger("pumice.daemon")


def default_identity() -> str:
    """The host's name and a random suffix: two instances on one host never share one."""
    return f"{socket.gethostname()}_{secrets.token_hex(4)}"


class Leadership:
    def __init__(
        self,
        settings: LeaderElection,
        *,
        scheduler_name: str,
        identity: str,
        enabled: bool,
        dry_run: bool,
    ) -> None:
        self.settings = settings
        self.identity = identity
        self.enabled = enabled and not dry_run
        self.dry_run = dry_run
        self.lease_name = settings.lease_name or scheduler_name
        self.elector: LeaderElector | None = None
        self.lost = asyncio.Event()
        """Set when the Lease was held and is not any more (the process must end)."""
        self._kube: Kube | None = None
        self._task: asyncio.Task[None] | None = None
        if enabled and dry_run:
            log.info("dry-run: not taking part in leader election")

    @property
    def active(self) -> bool:
        """May this instance run sessions now? (A dry-run one always may: it only logs.)"""
        return not self.enabled or (self.elector is not None and self.elector.is_leader)

    @property
    def leading(self) -> bool:
        """May this instance write now?"""
        return self.active and not self.dry_run

    @property
    def role(self) -> str:
        if self.dry_run:
            return "dry-run: writes nothing"
        if not self.enabled:
            return "leader election off: leading"
        if self.leading:
            return f"leader ({self.identity})"
        holder = self.elector.holder if self.elector is not None else None
        return f"standby ({self.identity}; leader: {holder or 'none seen yet'})"

    async def start(self, kube_settings: KubeSettings) -> None:
        if not self.enabled:
            return
        s = self.settings
        self._kube = await connect(kube_settings)
        self.elector = LeaderElector(
            self._kube,
            name=self.lease_name,
            namespace=s.lease_namespace,
            identity=self.identity,
            lease_duration=s.lease_duration,
            renew_deadline=s.renew_deadline,
            retry_period=s.retry_period,
            # Released by stop(), with a bound of its own: the elector's (one retryPeriod) is
            # too short for a busy API server, and a lease not released costs a whole
            # leaseDuration without a scheduler.
            release_on_cancel=False,
        )
        log.info(
            "leader election: %s candidate for lease %s/%s",
            self.identity,
            s.lease_namespace,
            self.lease_name,
        )
        self._task = asyncio.get_running_loop().create_task(self._run(), name="leader-election")

    async def _run(self) -> None:
        assert self.elector is not None
        try:
            await self.elector.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("leader election failed")
        # run() returns only after leading and failing to renew: the lease is lost.
        self.lost.set()

    async def pause(
        self, stop: asyncio.Event, timeout: float, wake: asyncio.Event | None = None
    ) -> None:
        """Sleep up to ``timeout`` seconds; wake early on ``stop``, on losing the Lease, on
        ``wake`` when given, and, while standing by, on winning it."""
        events = [stop, self.lost]
        if wake is not None:
            events.append(wake)
        if self.elector is not None and not self.active:
            events.append(self.elector.leading)
        waits = {asyncio.ensure_future(e.wait()) for e in events}
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def stop(self) -> None:
        """Stop campaigning; a leader releases the Lease so a standby takes over at once."""
        was_leading = self.elector is not None and self.elector.is_leader
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if was_leading and not self.lost.is_set() and self.elector is not None:
            try:
                await asyncio.wait_for(self.elector.release(), self.settings.renew_deadline)
            except (TimeoutError, KubeError) as exc:
                log.warning("%s: could not release the lease: %s", self.identity, exc)
        if self._kube is not None:
            await self._kube.close()
            self._kube = None
