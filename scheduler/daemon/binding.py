"""Binds and evictions in the background, behind the cache's assumption.

A committed bind is assumed in the cache at once (the next session already sees the pod on its
node) and sent by the ``Binder``; the answer settles the assumption:

* BOUND — the assumption stands until the assigned-pods watch shows the pod (then Added);
* BOUND_ELSEWHERE — someone else won: forget, no retry (the watch will show where it went);
* GONE — the pod was deleted;
* FAILED — forget and offer the pod again after a backoff of 1 s doubling to 10 s.

A pod whose plugins asked for volume writes before its bind (``pre_bind``), or whose gang
waits for such a pod, is bound only once its volumes are (``pumice.daemon.volumes``); when
they cannot be, it is forgotten and offered again with the same backoff (``give_up``).

Status writes (the ``Scheduled`` event of each bind, conditions, PodGroup and Queue status) go
through a ``StatusLane``: they wait while binds are in flight, and the ``Scheduled`` events are
shed when too many wait (see ``pumice.daemon.writes``).

A line per decision carried out (bound, evicted, nominated) is logged at debug: at info the
cycle's summary counts them, and only a dry run, which carries nothing out, logs each decision
at info (``DryRunCommitter``). What goes wrong stays at info or warning.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pumice.cache import ClusterCache
from pumice.daemon.volumes import VolumeBinder
from pumice.daemon.writes import StatusLane
from pumice.kube import Binder, BindOutcome, BindResult, Evictor, EvictOutcome, StatusWriter
from pumice.plain import Obj

log = logging.getLogger("pumice.daemon")


INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0


class BoundCallback(Protocol):
    """Told of every bind the API server accepted (keywords only, like every call here that
    takes several names: strings in a row are too easily passed in another order)."""

    def __call__(self, *, namespace: str, name: str, node: str) -> None: ...


def backoff(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failed bind of a pod: 1, 2, 4, 8, 10, 10 …"""
    return float(min(MAX_BACKOFF, INITIAL_BACKOFF * 2.0 ** max(0, attempts - 1)))


class BackgroundWork:
    """Tracks every bind and eviction in flight, and what became of them."""

    def __init__(
        self,
        cache: ClusterCache,
        binder: Binder,
        evictor: Evictor,
        writer: StatusWriter,
        on_bound: BoundCallback | None = None,
        nominator: Callable[[Obj, str], Awaitable[bool]] | None = None,
    ) -> None:
        self.cache = cache
        self.binder = binder
        self.evictor = evictor
        self.writer = writer
        self.on_bound = on_bound
        self.on_bound_uid: Callable[[str], None] | None = None
        """Told the uid of each pod bound (the metrics' scheduling SLI)."""
        self.nominator = nominator
        self.attempts: dict[str, int] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.binds_in_flight = 0
        """Binds handed over and not yet settled: queued for a bind worker or being sent."""
        self._queued: deque[tuple[str, str, str, str]] = deque()
        """(uid, namespace, name, node) of the binds no worker has taken yet, in order."""
        self._workers = 0
        self.evictions_in_flight = 0
        self.outcomes: dict[str, int] = {}
        self.lane = StatusLane(lambda: self.binds_in_flight > 0)
        self.volumes: VolumeBinder | None = None
        """Binds the volumes of the pods whose plugins asked for writes, before the pods."""

    @property
    def waiting_for_volumes(self) -> int:
        """Pods assumed on their nodes that wait for their (or their gang's) volumes."""
        return self.volumes.waiting if self.volumes is not None else 0

    @property
    def in_flight(self) -> int:
        return self.binds_in_flight + self.evictions_in_flight

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    # -- binds -------------------------------------------------------------------------------

    def bind(self, *, uid: str, namespace: str, name: str, node: str) -> None:
        """Assume ``uid`` on ``node`` and bind it in the background (event-loop thread), once
        its volumes are bound when it has any to wait for."""
        if not self.cache.assume(uid, node=node):
            log.info("not binding %s/%s: it is no longer waiting for a node", namespace, name)
            if self.volumes is not None:
                self.volumes.dropped(uid)
            return
        if self.volumes is not None and self.volumes.holds(
            uid=uid, namespace=namespace, name=name, node=node
        ):
            return
        self.send_bind(uid=uid, namespace=namespace, name=name, node=node)

    def send_bind(self, *, uid: str, namespace: str, name: str, node: str) -> None:
        """Bind an assumed pod in the background: queued for one of at most the binder's
        ``concurrency`` workers, which take the binds in the order they came. (A task per
        bind, most of them waiting on the binder's semaphore, cost a task and a wake-up per
        pod when a session hands over thousands at once.)"""
        self.binds_in_flight += 1
        self._queued.append((uid, namespace, name, node))
        if self._workers < self.binder.concurrency:
            self._workers += 1
            self._spawn(self._bind_worker())

    async def _bind_worker(self) -> None:
        try:
            while self._queued:
                uid, namespace, name, node = self._queued.popleft()
                try:
                    await self._bind(uid=uid, namespace=namespace, name=name, node=node)
                except Exception:  # a bug settling one bind must not strand those queued
                    log.exception("settling the bind of %s/%s to %s failed", namespace, name, node)
        finally:
            self._workers -= 1

    def give_up(self, *, uid: str, namespace: str, name: str, node: str, message: str) -> None:
        """An assumed pod will not be bound now (its volumes could not be): forget it, offer
        it again after a backoff, and tell why on the pod (condition and event)."""
        attempts = self.attempts[uid] = self.attempts.get(uid, 0) + 1
        self._count("VOLUMES_FAILED")
        self.cache.forget(uid, hold=backoff(attempts))
        entry = self.cache.pods.get(uid)
        if entry is not None:
            self.write(self.writer.pod_unschedulable(entry.pod, message))
            self.write(
                self.writer.pod_event(
                    entry.pod, reason="FailedScheduling", note=message, type="Warning"
                )
            )

    async def _bind(self, *, uid: str, namespace: str, name: str, node: str) -> None:
        try:
            try:
                result = await self.binder.bind(namespace=namespace, name=name, uid=uid, node=node)
            except Exception as exc:  # the binder should not raise; never lose the pod if it does
                log.warning("bind of %s/%s to %s failed: %s", namespace, name, node, exc)
                result = BindResult(BindOutcome.FAILED, None, None)
            self._settle(uid=uid, namespace=namespace, name=name, node=node, result=result)
        finally:
            self.binds_in_flight -= 1
            if self.binds_in_flight == 0:
                self.lane.pump()  # the status writes held back may all go now

    def _settle(
        self, *, uid: str, namespace: str, name: str, node: str, result: BindResult
    ) -> None:
        outcome = result.outcome
        self._count(outcome.name)
        if outcome is BindOutcome.BOUND:
            self.attempts.pop(uid, None)
            self.cache.finish_binding(uid)
            log.debug("bound %s/%s to %s", namespace, name, node)
            if self.on_bound is not None:
                self.on_bound(namespace=namespace, name=name, node=node)
            if self.on_bound_uid is not None:
                self.on_bound_uid(uid)
            entry = self.cache.pods.get(uid)
            if entry is not None and self.lane.shedding:
                self.lane.shed_one()  # not even made: it would be dropped at once
            elif entry is not None:
                note = f"Successfully assigned {namespace}/{name} to {node}"
                event = self.writer.pod_event(entry.pod, reason="Scheduled", note=note)
                self.lane.submit(event, sheddable=True)
        elif outcome is BindOutcome.BOUND_ELSEWHERE:
            self.attempts.pop(uid, None)
            self.cache.bound_elsewhere(uid)
            log.info("%s/%s was bound to %s by someone else", namespace, name, result.node)
        elif outcome is BindOutcome.GONE:
            self.attempts.pop(uid, None)
            self.cache.gone(uid)
            log.info("%s/%s was deleted before it was bound", namespace, name)
        else:
            attempts = self.attempts[uid] = self.attempts.get(uid, 0) + 1
            delay = backoff(attempts)
            self.cache.forget(uid, hold=delay)
            log.warning(
                "bind of %s/%s to %s failed (%s); retrying in %gs",
                namespace,
                name,
                node,
                result.error,
                delay,
            )

    # -- evictions ---------------------------------------------------------------------------

    def evict(self, *, uid: str, namespace: str, name: str, reason: str) -> None:
        """Evict in the background; meanwhile the cache counts the pod as releasing."""
        self.cache.evicting(uid)
        self.evictions_in_flight += 1
        self._spawn(self._evict(uid=uid, namespace=namespace, name=name, reason=reason))

    async def _evict(self, *, uid: str, namespace: str, name: str, reason: str) -> None:
        try:
            try:
                outcome = await self.evictor.evict(namespace=namespace, name=name, uid=uid)
            except Exception as exc:
                log.warning("eviction of %s/%s failed: %s", namespace, name, exc)
                outcome = EvictOutcome.FAILED
            self._count(f"evict-{outcome.name}")
            if outcome in (EvictOutcome.EVICTED, EvictOutcome.GONE):
                log.debug("evicted %s/%s (%s)", namespace, name, reason)
            else:
                self.cache.evicting(uid, asked=False)  # it stays: count it as running again
                log.warning("could not evict %s/%s: %s", namespace, name, outcome.name)
        finally:
            self.evictions_in_flight -= 1

    # -- nominations ------------------------------------------------------------------------

    def nominate(self, uid: str, *, node: str) -> None:
        """Write the preemptor's ``status.nominatedNodeName`` (the room its victims free)."""
        entry = self.cache.pods.get(uid)
        if entry is None or self.nominator is None:
            return
        log.debug("%s nominated for node %s", entry.key, node)
        self.write(self.nominator(entry.pod, node))

    # -- status writes -----------------------------------------------------------------------

    def write(self, coro: Any) -> None:
        """Send a status write behind the binds; failures are logged, never raised."""
        self.lane.submit(coro)

    async def drain(self, timeout: float = 30.0) -> None:
        """Wait for everything in flight (binds, evictions, then the status writes), then write
        the event repeats counted but not yet sent (their series would be lost at exit)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self.tasks:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                log.warning("%d background requests still in flight at exit", len(self.tasks))
                return
            await asyncio.wait(set(self.tasks), timeout=left)
        for last in (False, True):
            left = deadline - asyncio.get_running_loop().time()
            if not await self.lane.drain(max(0.0, left)):
                log.warning("%d status writes still queued at exit", self.lane.pending)
                return
            if not last:
                self.write(self.writer.flush())

    async def cancel(self) -> None:
        if self.volumes is not None:
            self.volumes.cancel()
        self.binds_in_flight -= len(self._queued)  # never sent: the pods stay assumed
        self._queued.clear()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.lane.cancel()
