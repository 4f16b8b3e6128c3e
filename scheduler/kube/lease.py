"""LeaderElector: one active scheduler among several, through a coordination.k8s.io/v1 Lease.

Our own loop, because kubernetes_asyncio's helper neither releases the lease nor counts
transitions nor writes UTC times. It follows client-go's algorithm:

* Every ``retry_period`` a candidate reads the Lease (creating it if absent). It may take the
  lease when nobody holds it (empty ``holderIdentity``, as a released lease is), or when the
  record has not changed for ``lease_duration`` **measured on its own monotonic clock from when
  it last saw the record change** — renew times written by other machines are never compared
  with ours.
* Every write is a PUT carrying the resourceVersion read (optimistic concurrency): of two
  candidates writing the same version, the server accepts one and answers 409 to the other.
* Taking the lease from another holder sets ``acquireTime`` and adds one to
  ``leaseTransitions``; renewing keeps both. Times are MicroTime in UTC.
* The leader renews every ``retry_period``; if no renewal succeeds for ``renew_deadline`` it
  stops leading and ``run`` returns (kube-scheduler then exits: the supervisor restarts it with
  an empty cache, so a stale leader can never keep binding).
* Cancelled while leading (graceful shutdown), it releases the lease (empty holder, duration
  1 s) so a standby takes over at once instead of after ``lease_duration``
  (``release_on_cancel``, on by default).

Callbacks ``on_started_leading`` / ``on_stopped_leading`` run on the event loop; ``leading``
is an ``asyncio.Event`` for the same news; with an ``EventRecorder`` it also writes a
``LeaderElection`` event on the Lease, as client-go does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from pumice.kube.client import Kube
from pumice.kube.events import EventRecorder, micro_time
from pumice.kube.rest import LEASES, Conflict, KubeError, NotFound
from pumice.plain import Obj, PumiceError

log = logging.getLogger("pumice.kube.lease")

Callback = Callable[[], None]


class LeaseTimingError(PumiceError, ValueError):
    """Lease timings that cannot work: they must fall as duration > renew deadline > retry."""


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        recorder: EventRecorder | None = None,
        release_on_cancel: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise LeaseTimingError(
                "leader election needs leaseDuration > renewDeadline > retryPeriod > 0, not "
                f"{lease_duration} / {renew_deadline} / {retry_period}"
            )
        self.kube = kube
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.recorder = recorder
        self.release_on_cancel = release_on_cancel
        self.leading = asyncio.Event()
        self.transitions_seen = 0
        """leaseTransitions in the last lease we wrote or read."""
        self._clock = clock
        self._observed: Obj | None = None
        self._observed_spec: Obj | None = None
        self._observed_at = 0.0
        self._announcements: set[asyncio.Task[bool]] = set()

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    @property
    def holder(self) -> str | None:
        """The holder in the last record seen (None: none seen, or nobody holds it)."""
        return (self._observed_spec or {}).get("holderIdentity") or None

    async def run(self) -> None:
        """Acquire, lead while renewals succeed, then return. Cancelled: release and stop."""
        try:
            await self._acquire()
            self._started()
            await self._renew_until_lost()
        except asyncio.CancelledError:
            if self.is_leader and self.release_on_cancel:
                with contextlib.suppress(KubeError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(self.release()), self.retry_period)
            raise
        finally:
            self._stopped()

    async def _acquire(self) -> None:
        while not await self.try_acquire_or_renew():
            await asyncio.sleep(self.retry_period)

    async def _renew_until_lost(self) -> None:
        last_renew = self._clock()
        while True:
            await asyncio.sleep(self.retry_period)
            left = self.renew_deadline - (self._clock() - last_renew)
            renewed = False
            if left > 0:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancel that
                # arrives as the renewal completes, and this loop would then renew forever
                # (a stopping daemon hung in Leadership.stop).
                try:
                    async with asyncio.timeout(left):
                        renewed = await self.try_acquire_or_renew()
                except TimeoutError:
                    renewed = False
            if renewed:
                last_renew = self._clock()
            elif self._clock() - last_renew >= self.renew_deadline:
                log.error(
                    "%s: lease %s/%s lost: not renewed within %.1fs",
                    self.identity,
                    self.namespace,
                    self.name,
                    self.renew_deadline,
                )
                return

    # -- one attempt ---------------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the lease; True when we hold it now."""
        now = micro_time()
        path = LEASES.path(self.namespace, self.name)
        try:
            lease = await self.kube.request("GET", path)
        except NotFound:
            return await self._create(now)
        except KubeError as exc:
            log.info("%s: reading lease %s: %s", self.identity, path, exc)
            return False
        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_at = self._clock()
        self._observed = lease
        holder = spec.get("holderIdentity") or ""
        self.transitions_seen = int(spec.get("leaseTransitions") or 0)
        if holder and holder != self.identity:
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            if self._clock() - self._observed_at < duration:
                return False  # held by someone else, and alive as far as we can see
        new_spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": spec.get("acquireTime") or now,
            "renewTime": now,
            "leaseTransitions": self.transitions_seen,
        }
        if holder != self.identity:
            new_spec["acquireTime"] = now
            new_spec["leaseTransitions"] = self.transitions_seen + 1
        return await self._write(lease, new_spec)

    async def _create(self, now: str) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.lease_duration)),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            created = await self.kube.request("POST", LEASES.path(self.namespace), body=body)
        except KubeError as exc:  # 409: another candidate created it first
            log.info("%s: creating lease %s/%s: %s", self.identity, self.namespace, self.name, exc)
            return False
        self._saw_own(created)
        return True

    async def _write(self, lease: Obj, spec: Obj) -> bool:
        body = {**lease, "spec": spec}
        try:
            written = await self.kube.request(
                "PUT", LEASES.path(self.namespace, self.name), body=body
            )
        except Conflict:
            return False  # someone wrote since our read: their version wins
        except KubeError as exc:
            log.info("%s: writing lease %s/%s: %s", self.identity, self.namespace, self.name, exc)
            return False
        self._saw_own(written)
        return True

    def _saw_own(self, lease: Obj) -> None:
        self._observed = lease
        self._observed_spec = lease.get("spec") or {}
        self._observed_at = self._clock()
        self.transitions_seen = int(self._observed_spec.get("leaseTransitions") or 0)

    async def release(self) -> bool:
        """Give the lease up now (empty holder), if we hold it; True when released."""
        lease = self._observed
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return False
        now = micro_time()
        spec = {
            **(lease.get("spec") or {}),
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "renewTime": now,
        }
        released = await self._write(lease, spec)
        if released:
            log.info("%s: released lease %s/%s", self.identity, self.namespace, self.name)
        return released

    # -- news ----------------------------------------------------------------------------

    def _started(self) -> None:
        log.info(
            "%s: leading (lease %s/%s, transitions %d)",
            self.identity,
            self.namespace,
            self.name,
            self.transitions_seen,
        )
        self.leading.set()
        self._announce("became leader")
        if self.on_started_leading is not None:
            self.on_started_leading()

    def _stopped(self) -> None:
        if not self.leading.is_set():
            return
        self.leading.clear()
        self._announce("stopped leading")
        if self.on_stopped_leading is not None:
            self.on_stopped_leading()

    def _announce(self, what: str) -> None:
        if self.recorder is None or self._observed is None:
            return
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", **self._observed}
        note = f"{self.identity} {what}"
        task = asyncio.get_running_loop().create_task(
            self.recorder.record(
                lease, reason="LeaderElection", note=note, type="Normal", action="LeaderElection"
            )
        )
        self._announcements.add(task)  # keep a reference until it is done
        task.add_done_callback(self._announcements.discard)
