"""The daemon's Prometheus metrics, in a registry of its own (one per ``Daemon``).

Two kinds: what happens once per cycle is observed when the cycle ends (``observe_cycle``:
the attempt and session histograms, unschedulable attempts); what the daemon already counts
elsewhere — binds and their outcomes, evictions, the cache's objects, the informers' restarts
and relists, leadership — is read at scrape time by ``_StateCollector``, so there is a single
count and /metrics can never disagree with the daemon's own books.

Names follow kube-scheduler where the concept is the same
(``scheduler_schedule_attempts_total{result}`` counts pods: a pod bound is one ``scheduled``
attempt, a pod left pending by a session one ``unschedulable`` attempt, a bind the server
refused one ``error``); everything else is ``pumice_…`` in base units. ``pumice_pending_pods``
is labelled by Volcano queue (upstream's ``scheduler_pending_pods{queue}`` means its own
internal queues, something else).

Plugin hooks run many times per task, so they are not observed one call at a time: the session
clocks each (plugin, hook) into a running sum (``Session(time_hooks=True)``, two clock reads per
call) and ``pumice_plugin_hook_duration_seconds`` observes that sum once per session, beside a
counter of the calls. ``pumice_queue_allocated`` comes from the Queue status the last session
computed. Plugins add their own metrics through the ``metric_samples`` hook: the last
session's samples are exposed as ``pumice_<plugin>_<name>`` (e.g. proportion's
``pumice_proportion_queue_deserved`` and ``pumice_proportion_queue_share``).
"""

from __future__ import annotations

import bisect
import contextlib
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from pumice.framework import MetricSample
from pumice.framework.contributions import metric_name
from pumice.model import QuantityError, Resource, TaskStatus

if TYPE_CHECKING:
    from pumice.cache import ClusterCache
    from pumice.daemon.binding import BackgroundWork
    from pumice.daemon.outcome import CycleOutcome
    from pumice.daemon.reload import ConfigReloader
    from pumice.kube import Informer

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
HOOK_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)
"""A hook's time in a session: from a few calls of microseconds to a 30 s session's worth."""


class ObservedDaemon(Protocol):
    """What a scrape reads of the daemon (``pumice.daemon.loop.Daemon``, which imports this
    module, so this one knows it only by this shape)."""

    work: BackgroundWork | None
    failures: int
    synced: bool
    reloader: ConfigReloader | None
    informers: list[Informer]
    cache: ClusterCache | None

    @property
    def leading(self) -> bool: ...


class DaemonMetrics:
    def __init__(self, daemon: ObservedDaemon) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.unschedulable = 0
        """Pods a session left pending, summed over sessions (one attempt per pod a session)."""
        self.attempt_duration = PerPodHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds: the session that decided the pod",
            DURATION_BUCKETS,
            label="result",
        )
        self.session_duration = Histogram(
            "pumice_session_duration_seconds",
            "Seconds from snapshot to the last commit handed over, per session",
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.sli = PerPodHistogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "Seconds from a pod's first scheduling attempt to its bind (as upstream's SLI)",
            (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
        )
        self.action_duration = Histogram(
            "pumice_action_duration_seconds",
            "Seconds an action took in a session",
            ["action"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.hook_duration = Histogram(
            "pumice_plugin_hook_duration_seconds",
            "Seconds a plugin's hook took in one session, summed over its calls there (one "
            "observation per session, plugin and hook called)",
            ["plugin", "hook"],
            buckets=HOOK_BUCKETS,
            registry=self.registry,
        )
        self.hook_calls = Counter(
            "pumice_plugin_hook_calls",
            "Calls of a plugin's hook",
            ["plugin", "hook"],
            registry=self.registry,
        )
        self.samples: list[tuple[str, MetricSample]] = []
        """The last session's plugin metric samples: (plugin name, sample)."""
        self.queues: dict[str, Mapping[str, Any]] = {}
        """The last session's Queue status (``allocated`` …), per queue."""
        self.first_attempt: dict[str, float] = {}
        """Pod uid -> when a session first offered it (monotonic), until it is bound."""
        self.registry.register(_StateCollector(daemon, self))

    def attempting(self, uids: Iterable[str], now: float) -> None:
        """A session is about to offer these pods: the first time starts their SLI clock."""
        for uid in uids:
            self.first_attempt.setdefault(uid, now)

    def bound(self, uid: str) -> None:
        started = self.first_attempt.pop(uid, None)
        if started is not None:
            self.sli.observe(time.monotonic() - started)

    def forget(self, keep: Iterable[str]) -> None:
        """Drop the clocks of pods no longer waiting nor assumed (deleted, bound elsewhere)."""
        alive = set(keep)
        for uid in [u for u in self.first_attempt if u not in alive]:
            del self.first_attempt[uid]

    def observe_cycle(self, outcome: CycleOutcome) -> None:
        for action, seconds in outcome.action_seconds.items():
            self.action_duration.labels(action).observe(seconds)
        for (plugin, hook), (seconds, calls) in outcome.hook_time.items():
            self.hook_duration.labels(plugin, hook).observe(seconds)
            self.hook_calls.labels(plugin, hook).inc(calls)
        if not outcome.failed:
            self.samples = list(outcome.samples)
        if outcome.queues:
            self.queues = dict(outcome.queues)
        unschedulable = len(outcome.task_reasons)
        self.unschedulable += unschedulable
        self.session_duration.observe(outcome.seconds)
        # Every pod the session decided on waited for the whole session.
        self.attempt_duration.observe(outcome.seconds, outcome.binds, "scheduled")
        self.attempt_duration.observe(outcome.seconds, unschedulable, "unschedulable")

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class PerPodHistogram:
    """A histogram observed once per pod (or per pod in bulk), on the event loop's thread,
    exposed at scrape time by ``_StateCollector``: a bucket index and two additions per
    observation. prometheus_client's ``Histogram`` takes a lock per bucket and per sum on
    every ``observe`` (and ``labels`` another lookup), several microseconds a pod at 10,000
    binds (bench/README.md, daemon)."""

    def __init__(
        self, name: str, documentation: str, buckets: tuple[float, ...], label: str | None = None
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.bounds = tuple(float(b) for b in buckets)
        self.label = label
        self._series: dict[str, tuple[list[int], list[float]]] = {}
        """Label value ("" without a label) -> (count per bucket, +Inf last; [sum])."""
        if label is None:  # shown at zero from the start, as prometheus_client's would be
            self._series[""] = ([0] * (len(self.bounds) + 1), [0.0])

    def observe(self, value: float, count: int = 1, label: str = "") -> None:
        """``count`` observations of ``value``."""
        if count <= 0:
            return
        series = self._series.get(label)
        if series is None:
            series = self._series[label] = ([0] * (len(self.bounds) + 1), [0.0])
        series[0][bisect.bisect_left(self.bounds, value)] += count
        series[1][0] += value * count

    def family(self) -> HistogramMetricFamily:
        labels = [self.label] if self.label is not None else None
        family = HistogramMetricFamily(self.name, self.documentation, labels=labels)
        for label, (counts, total) in sorted(self._series.items()):
            cumulative, running = [], 0
            for bound, counted in zip((*self.bounds, float("inf")), counts, strict=True):
                running += counted
                cumulative.append((_bucket_name(bound), float(running)))
            family.add_metric([label] if labels else [], cumulative, total[0])
        return family


def _bucket_name(bound: float) -> str:
    """As prometheus_client writes a bucket's ``le``."""
    if bound == float("inf"):
        return "+Inf"
    return repr(float(bound))


class _StateCollector(Collector):
    """Reads the daemon's own counters and the cache at scrape time (see the module doc)."""

    def __init__(self, daemon: ObservedDaemon, metrics: DaemonMetrics) -> None:
        self.daemon = daemon
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        daemon = self.daemon
        outcomes = dict(daemon.work.outcomes) if daemon.work is not None else {}
        attempts = CounterMetricFamily(
            "scheduler_schedule_attempts",
            "Pods scheduled (bound), left unschedulable by a session, or whose bind failed",
            labels=["result"],
        )
        attempts.add_metric(["scheduled"], outcomes.get("BOUND", 0))
        attempts.add_metric(["unschedulable"], self.metrics.unschedulable)
        attempts.add_metric(
            ["error"], outcomes.get("FAILED", 0) + outcomes.get("VOLUMES_FAILED", 0)
        )
        yield attempts
        binds = CounterMetricFamily(
            "pumice_binds",
            "Bind requests by outcome (bound, bound_elsewhere, gone, failed)",
            labels=["outcome"],
        )
        for outcome in ("BOUND", "BOUND_ELSEWHERE", "GONE", "FAILED"):
            binds.add_metric([outcome.lower()], outcomes.get(outcome, 0))
        yield binds
        yield CounterMetricFamily(
            "pumice_bind_failures", "Bind requests that failed", value=outcomes.get("FAILED", 0)
        )
        evictions = CounterMetricFamily(
            "pumice_evictions", "Evictions by outcome", labels=["outcome"]
        )
        for key, value in outcomes.items():
            if key.startswith("evict-"):
                evictions.add_metric([key.removeprefix("evict-").lower()], value)
        yield evictions
        volumes = daemon.work.volumes if daemon.work is not None else None
        volume_binds = CounterMetricFamily(
            "pumice_volume_binds",
            "Pods whose volumes were bound before them (bound), or given up (failed)",
            labels=["outcome"],
        )
        for outcome in ("bound", "failed"):
            counted = volumes.outcomes.get(outcome, 0) if volumes is not None else 0
            volume_binds.add_metric([outcome], counted)
        yield volume_binds
        yield GaugeMetricFamily(
            "pumice_pods_waiting_for_volumes",
            "Pods assumed on their nodes that wait for their (or their gang's) volumes",
            value=volumes.waiting if volumes is not None else 0,
        )
        yield CounterMetricFamily(
            "pumice_session_failures",
            "Sessions that raised (retried next period)",
            value=daemon.failures,
        )
        yield CounterMetricFamily(
            "pumice_status_writes_shed",
            "Scheduled events dropped because too many status writes waited behind the binds",
            value=daemon.work.lane.shed if daemon.work is not None else 0,
        )
        yield GaugeMetricFamily(
            "pumice_leader", "1 while this instance may write (leads)", value=int(daemon.leading)
        )
        yield GaugeMetricFamily(
            "pumice_ready", "1 once every informer's initial list is in", value=int(daemon.synced)
        )
        reloads = CounterMetricFamily(
            "pumice_config_reloads",
            "Config reloads by result (applied, invalid, restart_needed)",
            labels=["result"],
        )
        results = daemon.reloader.results if daemon.reloader is not None else {}
        for result in ("applied", "invalid", "restart_needed"):
            reloads.add_metric([result], results.get(result, 0))
        yield reloads
        yield self.metrics.sli.family()
        yield self.metrics.attempt_duration.family()
        yield from self._informers()
        yield from self._cache()

    def _informers(self) -> Iterator[Metric]:
        restarts = CounterMetricFamily(
            "pumice_watch_restarts",
            "Watches started after an informer's first",
            labels=["informer"],
        )
        relists = CounterMetricFamily(
            "pumice_relists", "Lists after an informer's first", labels=["informer"]
        )
        events = CounterMetricFamily(
            "pumice_watch_events", "Watch events applied to the cache", labels=["informer"]
        )
        for informer in list(self.daemon.informers):
            restarts.add_metric([informer.name], informer.stats.watch_restarts)
            relists.add_metric([informer.name], informer.stats.relists)
            events.add_metric([informer.name], informer.stats.events)
        yield restarts
        yield relists
        yield events

    def _cache(self) -> Iterator[Metric]:
        cache = self.daemon.cache
        objects = GaugeMetricFamily(
            "pumice_cache_objects", "Objects in the scheduler's cache", labels=["kind"]
        )
        pending = GaugeMetricFamily(
            "pumice_pending_pods",
            "Our pods waiting for a node, per Volcano queue",
            labels=["queue"],
        )
        if cache is not None:
            state = cache.state
            objects.add_metric(["nodes"], len(state.nodes))
            objects.add_metric(["pods"], len(cache.pods))
            objects.add_metric(["podgroups"], len(cache.podgroups))
            objects.add_metric(["queues"], len(state.queues))
            for kind in sorted(cache.storage.served):  # claims, volumes, ... where served
                objects.add_metric([kind], len(cache.storage.stores[kind]))
            per_queue: dict[str, int] = dict.fromkeys(state.queues, 0)
            for job in list(state.jobs.values()):
                waiting = sum(1 for _ in job.tasks_in(TaskStatus.PENDING))
                if waiting and job.queue in per_queue:
                    per_queue[job.queue] += waiting
            for queue, count in sorted(per_queue.items()):
                pending.add_metric([queue], count)
        yield objects
        yield pending
        allocated = GaugeMetricFamily(
            "pumice_queue_allocated",
            "Resources allocated in each queue at the last session (cpu in cores, memory in "
            "bytes, others in their own unit)",
            labels=["queue", "resource"],
        )
        held: dict[str, Resource] = {}
        for queue, status in self.metrics.queues.items():
            with contextlib.suppress(QuantityError):
                held[queue] = Resource.from_k8s(status.get("allocated") or {})
        for queue, amounts in sorted(held.items()):
            for name, value in sorted(amounts.items()):
                allocated.add_metric([queue, name], _base_unit(name, value))
        yield allocated
        yield from plugin_metrics(self.metrics.samples)


def plugin_metrics(samples: Iterable[tuple[str, MetricSample]]) -> Iterator[Metric]:
    """The plugins' samples as metric families ``pumice_<plugin>_<name>``; a family whose
    samples disagree on their kind or label names keeps the first kind and label set."""
    families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}
    labels_of: dict[str, tuple[str, ...]] = {}
    for plugin, sample in samples:
        name = metric_name(plugin, sample.name)
        labels = tuple(sorted(sample.labels))
        family = families.get(name)
        if family is None:
            kind = CounterMetricFamily if sample.kind == "counter" else GaugeMetricFamily
            family = families[name] = kind(name, sample.help or name, labels=list(labels))
            labels_of[name] = labels
        elif labels_of[name] != labels:
            continue
        family.add_metric([str(sample.labels[k]) for k in labels], float(sample.value))
    yield from families.values()


def _base_unit(resource: str, value: float) -> float:
    """The model counts cpu in millicores; Prometheus wants cores."""
    return value / 1000 if resource == "cpu" else value
