"""The daemon: informers feed the cache; every ``period`` a session schedules a snapshot.

::

    connect ─► informers (nodes first, then pods, PodGroups, Queues, PriorityClasses, and
               the storage kinds the cluster serves: ``informers``)
            ─► wait until every initial list is in the cache; freeze it (``collector``)
            ─► loop: snapshot (event-loop thread) ─► session (worker thread) ─► commits
                     handed back to the loop: assume + bind in the background
                     ─► reasons and statuses written ─► sleep ``period`` (from the end)
                     ─► garbage collected (the cycle's snapshot), never mid-session

The session runs in ``asyncio.to_thread`` so watch events keep flowing into the cache while it
decides; it only ever sees its own clone. In dry-run the committer logs instead of binding and
nothing at all is written. ``until_idle`` ends the loop once a cycle commits nothing and no bind
or eviction is in flight or waiting out a backoff.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import structlog

from pumice.cache import ClusterCache, PodState
from pumice.daemon.advice import Advisor, Suggester
from pumice.daemon.binding import BackgroundWork, BoundCallback
from pumice.daemon.collector import CollectorPolicy
from pumice.daemon.committers import DryRunCommitter, LoopCommitter
from pumice.daemon.health import HealthServer
from pumice.daemon.informers import start_informers, storage_served, volcano_served
from pumice.daemon.leadership import Leadership, default_identity
from pumice.daemon.metrics import DaemonMetrics
from pumice.daemon.notify import Notifier, run_watchdog
from pumice.daemon.outcome import CycleOutcome, run_session
from pumice.daemon.reload import ConfigReloader, Loader
from pumice.daemon.reporting import Reporter
from pumice.daemon.volumes import VolumeBinder
from pumice.framework.config import RecordSettings, SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.kube import Binder, Evictor, Informer, Kind, Kube, KubeSettings, StatusWriter, connect
from pumice.kube.status import nominate
from pumice.model import ClusterSnapshot

if TYPE_CHECKING:
    from pumice.daemon.recorder import LiveCycle, Recorder

log = logging.getLogger("pumice.daemon")

STATUS_REFRESH = 5.0
"""Seconds between sessions run only to bring PodGroup and Queue status up to date."""
EARLY_GAP = 0.05
"""The shortest pause after a session before another starts early for pods that arrived."""


@dataclass
class DaemonOptions:
    config: SchedulerConfig
    host: PluginHost
    kube: KubeSettings
    dry_run: bool = False
    until_idle: bool = False
    on_bound: BoundCallback | None = None
    bind_concurrency: int = 64
    stop: asyncio.Event | None = None
    """Set to end the loop (signals); the daemon finishes what is in flight first."""
    http_address: str | None = None
    """Serve /livez, /readyz and /metrics there (port 0: any free port); None: the config's
    ``scheduler.httpAddress``."""
    leader_elect: bool | None = None
    """None: the config's ``scheduler.leaderElection.enabled``."""
    identity: str | None = None
    """Our name in the Lease; None: the host's name and a random suffix."""
    config_path: str | None = None
    """The file ``config`` came from: watched, and reloaded (with ``config_loader``)."""
    config_loader: Loader | None = None
    record: RecordSettings | None = None
    """Keep a flight recording (``pumice.daemon.recorder``); None: the config's
    ``scheduler.record``, if any."""
    suggester: Suggester | None = None  # what would admit a PodGroup (pumice.daemon.advice)


class Daemon:
    def __init__(self, options: DaemonOptions) -> None:
        self.options = options
        settings = options.config.scheduler
        self.scheduler_name = settings.scheduler_name
        self.period = settings.period
        self._arrived = asyncio.Event()
        """Set when a pod of ours first shows up pending; cleared as a session opens."""
        self.dry_run = options.dry_run or settings.dry_run
        self.cache: ClusterCache | None = None
        self.informers: list[Informer] = []
        self.work: BackgroundWork | None = None
        self.reporter: Reporter | None = None
        self.cycles = 0
        self.failures = 0
        self.ticks = 0
        """Loop iterations so far (with or without a session): the watchdog's sign of life."""
        self.last_tick: float | None = None
        """When the loop last turned (monotonic): /livez's sign of life."""
        self.notifier = Notifier.from_environment()
        self.last: CycleOutcome | None = None
        self.in_cycle = False
        """A cycle (its session, its commits) is under way."""
        self.synced = False
        """Every informer's initial list is in the cache."""
        self.health: HealthServer | None = None
        self._storage_kinds: list[tuple[Kind, str]] = []
        """The storage kinds the cluster serves, with the cache's store for each."""
        elect = options.leader_elect
        self.leadership = Leadership(
            settings.leader_election,
            scheduler_name=self.scheduler_name,
            identity=options.identity or default_identity(),
            enabled=settings.leader_election.enabled if elect is None else elect,
            dry_run=self.dry_run,
        )
        self.reloader: ConfigReloader | None = None
        if options.config_path is not None and options.config_loader is not None:
            self.reloader = ConfigReloader(
                options.config_path, options.config, options.config_loader
            )
        self.metrics = DaemonMetrics(self)
        self.collector = CollectorPolicy()
        record = options.record or settings.record
        self.recorder: Recorder | None = None
        if record is not None:
            # the flight recorder's modules are loaded only when it is on (start-up: each
            # module a daemon imports is compiled or read before the first bind)
            from pumice.daemon.recorder import Recorder

            self.recorder = Recorder(record)

    @property
    def leading(self) -> bool:
        """May this instance write (bind, evict, events, status)?"""
        return self.leadership.leading

    @property
    def role(self) -> str:
        return self.leadership.role

    def waiting_for(self) -> str:
        """The informers whose initial list is not in yet, for /readyz."""
        names = [i.name for i in self.informers if not i.synced.is_set()]
        return ", ".join(names) if names else "the informers to start"

    # -- start-up ----------------------------------------------------------------------------

    async def run(self) -> int:
        # The cluster's configuration first: a missing or bad kubeconfig is the one line the
        # user must read, before the health server logs its address or takes its port.
        kube = await connect(self.options.kube)
        address = self.options.http_address or self.options.config.scheduler.http_address
        self.health = HealthServer(self, address)
        try:
            await self.health.start()
            return await self._run(kube)
        finally:
            if self.recorder is not None:
                # A one-shot run's recording is complete when it returns; a stopping daemon
                # leaves a recorder that is behind to finish on its own.
                from pumice.daemon.recorder import ANSWER_TIMEOUT, STOP_WAIT

                wait = ANSWER_TIMEOUT if self.options.until_idle else STOP_WAIT
                await asyncio.to_thread(self.recorder.close, wait)
            if self.health is not None:
                await self.health.stop()
            await kube.close()

    async def _run(self, kube: Kube) -> int:
        # Events and status go through a connection of their own, with its own rate limit (as
        # kube-scheduler's event broadcaster has), so that they never hold binds back.
        status_kube: Kube | None = None
        runners: list[asyncio.Task[None]] = []
        self.collector.listing()  # no collector passes while the informers fill the cache
        try:
            cache = await self._make_cache(kube)
            if not self.dry_run:
                # made now, not between the sync and the first session: that gap is the
                # first bind's wait
                status_kube = await connect(self.options.kube)
            # Campaign while the informers list: a standby keeps its cache warm all the same.
            await self.leadership.start(self.options.kube)
            runners = await self._start_informers(kube, cache)
            if self.options.stop is not None and self.options.stop.is_set():
                log.info("stopped before the initial sync was complete")
                return 0
            self.collector.synced()  # what the initial lists brought is frozen from here on
            self.synced = True
            self.notifier.ready(f"synced: {len(cache.state.nodes)} nodes, {len(cache.pods)} pods")
            runners.append(asyncio.get_running_loop().create_task(self._watchdog()))
            if self.reloader is not None:
                runners.append(asyncio.get_running_loop().create_task(self.reloader.watch()))
            if status_kube is not None:
                writer = StatusWriter(
                    status_kube,
                    scheduler_name=self.scheduler_name,
                    instance=_instance(self.scheduler_name),
                )
                self.work = BackgroundWork(
                    cache,
                    Binder(kube, concurrency=self.options.bind_concurrency),
                    Evictor(kube),
                    writer,
                    self.options.on_bound,
                    partial(nominate, status_kube),
                )
                self.work.on_bound_uid = self.metrics.bound
                self.work.volumes = VolumeBinder(
                    cache,
                    kube,
                    self.work.send_bind,
                    self.work.give_up,
                    timeout=self.options.config.scheduler.volume_bind_timeout,
                )
            advisor = None
            if self.options.suggester is not None and not self.dry_run:  # nothing to write to
                advisor = Advisor(self.options.suggester, self.running_config, self.bind_work_due)
            self.reporter = Reporter(cache, self.work, self.dry_run, advisor)
            await self._loop(cache)
            if self.leadership.lost.is_set():
                # Whatever is in flight is cancelled below: the new leader decides afresh.
                log.error("%s lost the lease; exiting", self.leadership.identity)
                return 1
            if self.work is not None:
                await self.work.drain()
            return 1 if self.options.until_idle and self.last and self.last.failed else 0
        finally:
            self.notifier.stopping()
            if self.reporter is not None and self.reporter.advisor is not None:
                self.reporter.advisor.stop()  # a search ends at its next step
            if self.work is not None:
                await self.work.cancel()
            # After the binds: a standby must not take over while ours are still in flight.
            await self.leadership.stop()
            for runner in runners:
                runner.cancel()
            await asyncio.gather(*runners, return_exceptions=True)
            if status_kube is not None:
                await status_kube.close()
            self.notifier.close()
            self.collector.stop()

    async def _watchdog(self) -> None:
        last = -1

        def alive() -> bool:
            nonlocal last
            moved, last = self.ticks != last, self.ticks
            return moved

        await run_watchdog(self.notifier, alive)

    async def _make_cache(self, kube: Kube) -> ClusterCache:
        volcano = await volcano_served(kube, self.options.config.scheduler.default_queue)
        # With the flight recorder on, every input of the cache is journaled (recorder.py).
        make = self.recorder.cache if self.recorder is not None else ClusterCache
        self.cache = make(
            self.scheduler_name,
            volcano=volcano,
            default_queue=self.options.config.scheduler.default_queue,
        )
        self.cache.on_arrival = self._arrived.set
        self._storage_kinds = await storage_served(kube)
        return self.cache

    async def _start_informers(self, kube: Kube, cache: ClusterCache) -> list[asyncio.Task[None]]:
        stop = self.options.stop or asyncio.Event()
        return await start_informers(
            kube, cache, self.scheduler_name, self._storage_kinds, into=self.informers, stop=stop
        )

    # -- the loop ----------------------------------------------------------------------------

    async def _loop(self, cache: ClusterCache) -> None:
        stop = self.options.stop or asyncio.Event()
        seen: int | None = None
        last_session = 0.0
        standing_by: str | None = None
        while not stop.is_set() and not self.leadership.lost.is_set():
            self.ticks += 1  # a standby's loop turns too: systemd's watchdog must not kill it
            self.collector.turn()  # between cycles: what the last one left (its snapshot)
            self.last_tick = time.monotonic()
            self._reload()
            if not self.leadership.active:
                # Standing by: the informers keep the cache warm; nothing is written.
                if standing_by != self.role:
                    standing_by = self.role
                    self.notifier.status(standing_by)  # `systemctl status` says who leads
                cache.tidy()
                await self.leadership.pause(stop, self.period)
                continue
            now = time.monotonic()
            settled = True  # nothing changed while this turn's session (if any) ran
            if self._worth_a_session(cache, seen, now - last_session):
                seen, last_session = cache.generation, now
                self._arrived.clear()  # what arrives from here on is not in this snapshot
                outcome = await self.cycle(cache)
                # (a victim's deletion seen while the session ran: the next session binds its
                # preemptor, so this one's committing nothing is not idleness)
                settled = cache.generation == seen
            else:
                # Nothing changed that a session could act on: say what is wrong with any
                # new bad object, and wait.
                outcome = CycleOutcome()
                assert self.reporter is not None
                self.reporter.report_problems()
                cache.tidy()
            if self.options.until_idle and outcome.failed:
                log.error("a session failed; --until-idle gives up")
                return
            # idle only if the last session saw the cache as it is (or no pod waits): pods
            # that wait may fit now if something (a victim leaving) changed while it ran
            # (``waiting`` walks every pod: asked only when it matters)
            if self.options.until_idle and (settled or not cache.waiting()) and self._idle(outcome):
                log.info("idle: nothing more to schedule; exiting")
                return
            await self._pause(stop, outcome.seconds)

    async def _pause(self, stop: asyncio.Event, busy_for: float) -> None:
        """Wait for the next turn: a period, or less when pods of ours arrive meanwhile.

        Volcano runs a session every period, so a pod created just after one waits a whole
        period, and pods streaming in are decided in period-sized batches behind the binds in
        flight. Here a pod that arrives ends the pause early, but only once the pause has lasted
        as long as the last session took (and at least ``EARLY_GAP``): sessions started early
        take at most about half the loop's time, however large the cluster.
        """
        deadline = time.monotonic() + self.period
        await self.leadership.pause(stop, min(self.period, max(EARLY_GAP, busy_for)))
        left = deadline - time.monotonic()
        if left > 0 and not self._arrived.is_set():
            await self.leadership.pause(stop, left, wake=self._arrived)

    def request_reload(self) -> None:
        """SIGHUP: reload the config file at the next cycle boundary, changed or not."""
        if self.reloader is not None:
            self.reloader.request()

    def _reload(self) -> None:
        """At a cycle boundary: swap in a new, valid config, whole (see ``reload``)."""
        taken = self.reloader.take() if self.reloader is not None else None
        if taken is not None:
            self.options.config, self.options.host = taken
            self.period = self.options.config.scheduler.period

    def _worth_a_session(self, cache: ClusterCache, seen: int | None, since: float) -> bool:
        """A session over the same cache as the last one would decide the same, so one runs
        only when pods wait and something changed (or the last session committed or failed,
        or a backoff may have ended); and, for fresh PodGroup/Queue status, when anything changed,
        the last session is ``STATUS_REFRESH`` seconds old and no bind is in flight."""
        changed = cache.generation != seen or (self.last is not None and self.last.failed)
        # (``waiting`` walks every pod: asked last)
        if (changed or cache.holding() or self._committed_last()) and cache.waiting():
            return True
        # Not while binds are in flight: the session would hold the GIL they need, and the
        # status it wrote would be stale at once.
        busy = self.work is not None and self.work.in_flight > 0
        return changed and since >= STATUS_REFRESH and not busy

    def running_config(self) -> tuple[SchedulerConfig, PluginHost]:
        """The config and plugin host in force now (a reload swaps both)."""
        return self.options.config, self.options.host

    def bind_work_due(self) -> bool:
        """Is a cycle running, a bind or eviction in flight, or one about to be decided (pods
        arrived since the last session, pods backing off, the last cycle committed)? The
        suggestion search (``pumice.daemon.advice``) waits while so; it asks from its own
        thread, so this only reads."""
        if self.in_cycle or self._arrived.is_set() or self._committed_last():
            return True
        if self.work is not None and self.work.in_flight > 0:
            return True
        return self.cache is not None and self.cache.holding()

    def _committed_last(self) -> bool:
        # A dry-run commit changes nothing: the next session would only log it again.
        if self.dry_run or self.last is None:
            return False
        return bool(self.last.binds or self.last.evictions)

    def _idle(self, outcome: CycleOutcome) -> bool:
        assert self.cache is not None
        in_flight = self.work.in_flight if self.work is not None else 0
        in_flight += self.work.waiting_for_volumes if self.work is not None else 0
        return (
            outcome.binds == 0
            and outcome.evictions == 0
            and in_flight == 0
            and self.cache.held() == 0
            and self.cache.evicted() == 0  # a preemptor waits for its victims to go
        )

    async def cycle(self, cache: ClusterCache) -> CycleOutcome:
        """One session over a fresh snapshot; its commits go out as they are made."""
        # Every line logged for this cycle — in the worker thread, and by the binds it hands
        # back (their callbacks carry this context) — says which cycle it belongs to.
        structlog.contextvars.bind_contextvars(cycle=self.cycles + 1)
        self.in_cycle = True
        if self.work is not None and self.work.volumes is not None:
            self.work.volumes.new_cycle()  # the last session's binds have all been handed over
        try:
            return await self._cycle(cache)
        finally:
            self.in_cycle = False
            structlog.contextvars.unbind_contextvars("cycle")

    async def _cycle(self, cache: ClusterCache) -> CycleOutcome:
        started = time.perf_counter()
        if not self.dry_run:
            waiting = [e.uid for e in cache.entries(PodState.INITIAL)]
            self.metrics.attempting(waiting, time.monotonic())
            assumed = [e.uid for e in cache.entries(PodState.ASSUMED)]
            self.metrics.forget([*waiting, *assumed])
        snapshot = cache.snapshot()
        committer = self._committer(cache)
        record = self._record_begin(snapshot)
        try:
            outcome = await asyncio.to_thread(self._session, snapshot, committer, record)
        except Exception:
            # A plugin or action failing must not stop the daemon: the next cycle tries again.
            log.exception("session failed; retrying in the next cycle")
            self.failures += 1
            outcome = CycleOutcome(failed=True)
        # Let the commits the worker handed over run before judging idleness.
        await asyncio.sleep(0)
        outcome.seconds = time.perf_counter() - started
        self.cycles += 1
        self.last = outcome
        self._decided(committer, outcome)
        if record is not None and self.recorder is not None:
            self.recorder.finish(record, failed=outcome.failed)
        self.metrics.observe_cycle(outcome)
        assert self.reporter is not None
        if not outcome.failed:
            self.reporter.report(outcome)
        # every pod that waits: the session's, plus the bad objects and gated pods it never saw
        pending = outcome.pending + self.reporter.waiting_outside_sessions()
        summary = (
            f"cycle {self.cycles}: {outcome.binds} binds, {outcome.evictions} evictions, "
            f"{pending} pending, {outcome.seconds:.3f}s"
        )
        log.log(logging.INFO if outcome.binds or outcome.evictions else logging.DEBUG, summary)
        self.notifier.status(summary)
        return outcome

    def _committer(self, cache: ClusterCache) -> LoopCommitter | DryRunCommitter:
        """Where this cycle's decisions go (a shadow run records them: ``pumice.daemon.shadow``)."""
        if self.work is None:
            return DryRunCommitter()
        loop = asyncio.get_running_loop()
        volumes = self.work.volumes
        return LoopCommitter(
            loop,
            self.work.bind,
            self.work.evict,
            self.work.nominate,
            volumes.expect if volumes is not None else None,
        )

    def _decided(self, committer: LoopCommitter | DryRunCommitter, outcome: CycleOutcome) -> None:
        """After each cycle, on the event loop: a shadow run compares its decisions here."""

    def _record_begin(self, snapshot: ClusterSnapshot) -> LiveCycle | None:
        """With the flight recorder on: what this cycle's session is about to see."""
        if self.recorder is None:
            return None
        return self.recorder.begin(snapshot, self.cycles + 1, self.options.config)

    def _session(
        self,
        snapshot: ClusterSnapshot,
        committer: LoopCommitter | DryRunCommitter,
        record: LiveCycle | None = None,
    ) -> CycleOutcome:
        """Runs in the worker thread (``pumice.daemon.outcome.run_session``)."""
        return run_session(snapshot, self.options.config, self.options.host, committer, record)


def _instance(scheduler_name: str) -> str:
    return f"{scheduler_name}-{socket.gethostname()}"
