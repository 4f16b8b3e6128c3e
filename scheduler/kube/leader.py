"""Leader election through a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection.

Not part of the agreed ``pumice.kube`` surface (hence its own module). One holder at a time:

* **acquire** — every ``retry_period`` read the Lease; take it (create it, or update it with our
  identity under its resourceVersion, so two candidates cannot both win) when it is free, ours,
  or its holder has not renewed it for ``lease_duration`` *as observed by us* (our own clock
  from the moment we last saw the record change: clocks of different hosts are never compared);
* **hold** — renew every ``retry_period``; when no renewal succeeded for ``renew_deadline`` the
  lead is lost and ``LeadershipLost`` is raised (the daemon then exits: another instance may
  already be scheduling);
* **release** — on a clean exit, hand the Lease back (holder cleared) so a standby takes over at
  once instead of after ``lease_duration``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Any

from pumice.kube.client import Kube
from pumice.kube.errors import Conflict, KubeError, NotFound
from pumice.kube.resources import LEASES

log = logging.getLogger("pumice.kube.leader")

Obj = dict[str, Any]


class LeadershipLost(KubeError):
    """The Lease could not be renewed within the renew deadline."""


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self.leading = False

    async def acquire(self) -> None:
        """Return once we hold the Lease."""
        announced = False
        while not await self._try():
            if not announced:
                log.info("waiting to lead: lease %s/%s is held", self.namespace, self.name)
                announced = True
            await asyncio.sleep(self.retry_period)
        self.leading = True
        log.info("leading as %s (lease %s/%s)", self.identity, self.namespace, self.name)

    async def hold(self) -> None:
        """Renew until cancelled; raise ``LeadershipLost`` when the renew deadline passes."""
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.retry_period)
            if await self._try():
                renewed = time.monotonic()
            elif time.monotonic() - renewed > self.renew_deadline:
                self.leading = False
                raise LeadershipLost(
                    f"lease {self.namespace}/{self.name} not renewed for {self.renew_deadline}s"
                )

    async def release(self) -> None:
        """Hand the Lease back if we hold it (best effort)."""
        if not self.leading:
            return
        self.leading = False
        try:
            lease = await self.kube.request("GET", LEASES.path(self.namespace, self.name))
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"] = {**lease["spec"], "holderIdentity": None}
            await self.kube.request("PUT", LEASES.path(self.namespace, self.name), body=lease)
        except KubeError as exc:
            log.info("lease %s/%s not released: %s", self.namespace, self.name, exc)

    async def _try(self) -> bool:
        """One attempt to take or renew the Lease."""
        now = _micro_time()
        path = LEASES.path(self.namespace, self.name)
        try:
            lease = await self.kube.request("GET", path)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now, now, 0),
            }
            try:
                await self.kube.request("POST", LEASES.path(self.namespace), body=body)
            except KubeError as exc:  # another candidate created it first, or no access
                log.debug("lease not created: %s", exc)
                return False
            return True
        except KubeError as exc:
            log.warning("lease %s/%s not read: %s", self.namespace, self.name, exc)
            return False
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("leaseTransitions"))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        expired = time.monotonic() - self._observed_at > duration
        if holder and holder != self.identity and not expired:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        ours = holder == self.identity
        lease["spec"] = self._spec(
            str(spec.get("acquireTime") or now) if ours else now,
            now,
            transitions if ours else transitions + 1,
        )
        try:
            await self.kube.request("PUT", path, body=lease)
        except Conflict:
            return False  # changed under us: someone else renewed or took it
        except KubeError as exc:
            log.warning("lease %s/%s not renewed: %s", self.namespace, self.name, exc)
            return False
        return True

    def _spec(self, acquired: str, renewed: str, transitions: int) -> Obj:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        }
