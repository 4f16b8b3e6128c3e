"""``pumice run --shadow``: decide beside the scheduler a cluster already has; write nothing.

A ``ShadowDaemon`` is the daemon in dry-run with three differences:

* **It watches another scheduler's pods as its own.** Its cache and its pending-pods informer
  use ``--shadow-of`` (default: the config's ``schedulerName``), so the pods the live scheduler
  is responsible for are the ones its sessions decide.
* **It writes nothing, with a safety net.** Dry-run already binds, evicts and reports nothing and
  leaves the Lease alone; on top of that its client is ``read_only``: a write would be refused
  before it is sent.
* **It keeps books instead of assuming.** A session's binds go to a ``ShadowCommitter``, never
  into the cache (the cache must follow the live cluster, not the shadow's opinions); after each
  cycle they are entered in a ``ShadowBook`` (see ``pumice.daemon.shadowbook`` for what counts as
  what), and the live binds reach the book through a tee on the assigned-pods informer. Each
  cycle that decided a pod for the first time or resolved any writes one JSON line
  (``ReportWriter``):
  ``{"cycle", "pods", "same", "different": [{pod, shadow, live}], "only_shadow", "only_live"}``,
  where ``pods`` counts the pending pods the cycle's session decided for the first time (a pod
  re-decided while it waits is not counted again) and the rest are the outcomes resolved since
  the previous line. A last line (``pods`` 0) at exit carries what was resolved after the last
  cycle.

Sessions run while any prediction is open or an outcome is unreported (besides when the daemon
would run one anyway), so deadlines are checked every period. ``--until-idle`` ends the run once
no pod of the watched scheduler is pending undecided, no prediction is open and every outcome is
reported. Metrics: ``pumice_shadow_decisions_total{outcome}``, ``pumice_shadow_agreement_ratio``
(same / (same + different); NaN before the first comparison) and
``pumice_shadow_open_predictions``.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import orjson
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pumice.cache import ClusterCache, Handler, PodEntry, PodState
from pumice.cache.pods import pod_uid
from pumice.daemon.committers import DryRunCommitter, LoopCommitter
from pumice.daemon.loop import Daemon, DaemonOptions
from pumice.daemon.outcome import CycleOutcome
from pumice.daemon.shadowbook import OUTCOMES, Live, ShadowBook
from pumice.framework.committer import RecordingCommitter
from pumice.kube import Kube
from pumice.model import TaskInfo

log = logging.getLogger("pumice.shadow")


@dataclass(frozen=True)
class ShadowOptions:
    of: str | None = None
    """The scheduler whose pods are watched as the shadow's own; None: the config's name."""
    report: Path | None = None
    """The report's JSON lines are appended there; None: stdout."""


class ShadowCommitter(DryRunCommitter):
    """Keeps the session's decisions for the books (worker thread), in the one decision
    recorder (``RecordingCommitter``); carries nothing out."""

    def __init__(self, seen: dict[str, str]) -> None:
        super().__init__()
        self.seen = seen
        """The pending pods the session was given (uid -> ``namespace/name``)."""
        self.kept = RecordingCommitter(quiet=True)

    @property
    def placed(self) -> dict[str, str]:
        """uid -> the node the session would bind it to."""
        return {d.task.uid: d.node for d in self.kept.of_kind("bind")}

    def bind(self, task: TaskInfo, node: str) -> None:
        self.binds += 1
        self.kept.bind(task, node)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.evictions += 1
        self.kept.evict(task, reason)
        log.debug("shadow: would evict %s from %s (%s)", task.key, task.node_name, reason)

    def nominate(self, task: TaskInfo, node: str) -> None:
        self.kept.nominate(task, node)
        log.debug("shadow: would nominate %s for %s", task.key, node)


class ReportWriter:
    """One JSON line per call, flushed at once, to a file (appended) or to stdout."""

    def __init__(self, path: Path | None) -> None:
        self._file: IO[str] | None = path.open("a", encoding="utf-8") if path else None

    def write(self, line: dict[str, Any]) -> None:
        out = self._file if self._file is not None else sys.stdout
        out.write(orjson.dumps(line).decode() + "\n")
        out.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def live_state(cache: ClusterCache, uid: str) -> tuple[Live, str | None]:
    """Where the shadow's cache (fed by the live cluster's watches) has the pod ``uid``."""
    entry = cache.pods.get(uid)
    if entry is None:
        return Live.GONE, None
    if entry.state is PodState.ADDED:
        return Live.BOUND, entry.node
    if entry.state is PodState.LEFT:
        return Live.LEFT, None
    return Live.PENDING, None


def tee_binds(cache: ClusterCache, book: ShadowBook) -> None:
    """Let the book see every pod the assigned-pods informer delivers, after the cache did."""
    inner = cache.assigned_pods

    def upsert(pod: dict[str, Any]) -> None:
        inner.on_add(pod)  # the cache's handler: it ignores the old object of an update
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            book.bound(pod_uid(pod), node=str(node))

    cache.assigned_pods = Handler(upsert, inner.on_delete, lambda: None)


class ShadowCollector(Collector):
    def __init__(self, book: ShadowBook) -> None:
        self.book = book

    def collect(self) -> Iterator[Metric]:
        decisions = CounterMetricFamily(
            "pumice_shadow_decisions",
            "Pods the shadow decided, by how the live scheduler's binds compared (same, "
            "different, only_shadow, only_live)",
            labels=["outcome"],
        )
        for outcome in OUTCOMES:
            decisions.add_metric([outcome], self.book.totals[outcome])
        yield decisions
        ratio = self.book.agreement()
        yield GaugeMetricFamily(
            "pumice_shadow_agreement_ratio",
            "same / (same + different) over the run (NaN before the first comparison)",
            value=math.nan if ratio is None else ratio,
        )
        yield GaugeMetricFamily(
            "pumice_shadow_open_predictions",
            "Pods the shadow would bind whose live bind has not arrived yet",
            value=self.book.open,
        )


class ShadowDaemon(Daemon):
    def __init__(self, options: DaemonOptions, shadow: ShadowOptions) -> None:
        kube = replace(options.kube, read_only=True)
        super().__init__(replace(options, dry_run=True, kube=kube))
        self.shadow = shadow
        self.scheduler_name = shadow.of or self.scheduler_name
        self.book = ShadowBook()
        self.report = ReportWriter(shadow.report)
        self.metrics.registry.register(ShadowCollector(self.book))

    async def run(self) -> int:
        log.info(
            "shadow of %r: deciding beside it, writing nothing; a pod it would bind that is not "
            "bound by the end of its next cycle is only_shadow",
            self.scheduler_name,
        )
        try:
            return await super().run()
        finally:
            if self.book.unreported:
                self.report.write(self.book.line(self.cycles, pods=0))
            self.report.close()

    async def _make_cache(self, kube: Kube) -> ClusterCache:
        cache = await super()._make_cache(kube)
        tee_binds(cache, self.book)
        return cache

    def _committer(self, cache: ClusterCache) -> LoopCommitter | DryRunCommitter:
        return ShadowCommitter({e.uid: e.key for e in self._pending(cache)})

    def _decided(self, committer: LoopCommitter | DryRunCommitter, outcome: CycleOutcome) -> None:
        cache = self.cache
        assert cache is not None

        def where(uid: str) -> tuple[Live, str | None]:
            return live_state(cache, uid)

        pods = 0
        if isinstance(committer, ShadowCommitter) and not outcome.failed:
            pods = self.book.decide(
                seen=committer.seen, placed=committer.placed, cycle=self.cycles, where=where
            )
        self.book.expire(self.cycles, where)
        if pods or self.book.unreported:
            self.report.write(self.book.line(self.cycles, pods=pods))

    def _worth_a_session(self, cache: ClusterCache, seen: int | None, since: float) -> bool:
        # Deadlines are checked, and outcomes reported, at the end of a cycle.
        open_books = self.book.open > 0 or self.book.unreported
        return open_books or super()._worth_a_session(cache, seen, since)

    def _idle(self, outcome: CycleOutcome) -> bool:
        assert self.cache is not None
        undecided = self.book.undecided(e.uid for e in self._pending(self.cache))
        return undecided == 0 and self.book.open == 0 and not self.book.unreported

    @staticmethod
    def _pending(cache: ClusterCache) -> Iterator[PodEntry]:
        return (e for e in cache.entries(PodState.INITIAL) if e.ours)
