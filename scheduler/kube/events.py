"""EventRecorder: Kubernetes events, de-duplicated into series and rate-limited per object.

Events go through ``events.k8s.io/v1`` with the fields that API requires (``eventTime``,
``reportingController`` = the scheduler name, ``reportingInstance``, ``action``) and a note
cut to 1 KiB (on a UTF-8 boundary, ending in `` ...``), as kube-scheduler writes them. When
the server does not serve that group (or ``core_events`` is set), the recorder writes core
``v1`` events instead, for good.

Repeats do not create objects. The first occurrence of (object uid, type, reason, note)
creates an Event; each repeat adds one to its ``series.count`` (core v1: ``count``) and moves
``lastObservedTime``, patched at most once per ``series_interval`` per event; counts that
arrive in between wait for the next repeat or ``flush()``. If the event has expired from the
server meanwhile, the repeat creates a fresh one. Distinct events about one object pass a
spam filter like client-go's (a burst of 25, then one per 5 minutes) and are dropped beyond it.
The recorder never raises KubeError: a failed write is logged and counted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime

from pumice.kube.client import MERGE_PATCH, Kube, served
from pumice.kube.ratelimit import TokenBucket
from pumice.kube.rest import CORE_EVENTS, EVENTS, Conflict, KubeError, NotFound
from pumice.plain import Obj

log = logging.getLogger("pumice.kube.events")


NOTE_LIMIT = 1024
_ELLIPSIS = " ..."
# The action kube-scheduler names for its reasons; others fall back to the reason itself.
ACTIONS = {"Scheduled": "Binding", "FailedScheduling": "Scheduling", "Preempted": "Preempting"}
CACHE_SIZE = 4096


def micro_time(at: float | None = None) -> str:
    """A MicroTime (RFC 3339, microseconds, UTC) for ``at`` (epoch seconds; default now)."""
    moment = datetime.fromtimestamp(time.time() if at is None else at, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def truncate_note(note: str, limit: int = NOTE_LIMIT) -> str:
    """``note`` cut to at most ``limit`` bytes of UTF-8, marked with `` ...`` when cut."""
    data = note.encode()
    if len(data) <= limit:
        return note
    cut = data[: limit - len(_ELLIPSIS)].decode(errors="ignore")
    return cut + _ELLIPSIS


def reference(obj: Obj) -> Obj:
    """An ObjectReference to ``obj``."""
    metadata = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion") or "v1",
        "kind": obj.get("kind") or "Pod",
        "name": metadata.get("name"),
        "uid": metadata.get("uid"),
        "resourceVersion": metadata.get("resourceVersion"),
    }
    if metadata.get("namespace"):
        ref["namespace"] = metadata["namespace"]
    return {k: v for k, v in ref.items() if v}


@dataclass
class _Series:
    namespace: str
    name: str | None
    """The Event's name; None while it is being created."""
    core: bool
    count: int = 1
    written: int = 1
    """The count the server has."""
    last_patch: float = 0.0


@dataclass
class EventStats:
    created: int = 0
    patched: int = 0
    repeats: int = 0
    dropped: int = 0
    failed: int = 0


class EventRecorder:
    def __init__(
        self,
        kube: Kube,
        *,
        controller: str,
        instance: str,
        max_inflight: int = 16,
        series_interval: float = 30.0,
        spam_burst: int = 25,
        spam_qps: float = 1 / 300,
        core_events: bool = False,
    ) -> None:
        self.kube = kube
        self.controller = controller
        self.instance = instance
        self.series_interval = series_interval
        self.stats = EventStats()
        self._inflight = asyncio.Semaphore(max(1, max_inflight))
        self._series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self._spam: OrderedDict[str, TokenBucket] = OrderedDict()
        self._spam_burst = spam_burst
        self._spam_qps = spam_qps
        self._core_only = core_events

    async def record(
        self, obj: Obj, *, reason: str, note: str, type: str, action: str | None = None
    ) -> bool:
        """Report an event about ``obj``; True when something was written."""
        note = truncate_note(note)
        ref = reference(obj)
        subject = ref.get("uid") or f"{ref.get('kind')}/{ref.get('namespace', '')}/{ref['name']}"
        key = (subject, type, reason, note)
        series = self._series.get(key)
        if series is not None:
            self._series.move_to_end(key)
            series.count += 1
            self.stats.repeats += 1
            if series.name is None or time.monotonic() - series.last_patch < self.series_interval:
                return False  # counted; written by a later repeat or flush()
            bumped = await self._bump(key, series)
            if bumped is not None:
                return bumped
            # the event expired on the server: this occurrence starts a new one
        if not self._spam_allows(subject):
            self.stats.dropped += 1
            return False
        namespace = ref.get("namespace") or "default"
        series = _Series(namespace, None, self._core_only)
        self._remember(key, series)
        action = action or ACTIONS.get(reason, reason)
        return await self._create(
            key, series, ref, reason=reason, note=note, type=type, action=action
        )

    async def flush(self) -> None:
        """Write every counted but unwritten repeat now."""
        for key, series in list(self._series.items()):
            if series.name is not None and series.count > series.written:
                await self._bump(key, series)

    # -- writes --------------------------------------------------------------------------

    async def _create(
        self,
        key: tuple[str, ...],
        series: _Series,
        ref: Obj,
        *,
        reason: str,
        note: str,
        type: str,
        action: str,
    ) -> bool:
        for _ in range(2):  # a second try only for a name clash or a missing events API
            now = time.time()
            name = f"{ref['name']}.{time.time_ns():x}"
            core = self._core_only
            body = self._core_body if core else self._v1_body
            kind = CORE_EVENTS if core else EVENTS
            try:
                async with self._inflight:
                    await self.kube.request(
                        "POST",
                        kind.path(series.namespace),
                        body=body(
                            name=name,
                            namespace=series.namespace,
                            ref=ref,
                            reason=reason,
                            note=note,
                            type=type,
                            action=action,
                            now=now,
                        ),
                    )
            except Conflict:
                continue
            except NotFound as exc:
                if not core and not await self._events_v1_served():
                    continue
                return self._failed(key, exc)
            except KubeError as exc:
                return self._failed(key, exc)
            series.name, series.core, series.last_patch = name, core, time.monotonic()
            self.stats.created += 1
            return True
        return self._failed(key, None)

    async def _bump(self, key: tuple[str, ...], series: _Series) -> bool | None:
        """Write the series count; None when the event is gone from the server."""
        count = series.count
        now = micro_time()
        if series.core:
            patch: Obj = {"count": count, "lastTimestamp": now[:19] + "Z"}
        else:
            patch = {"series": {"count": count, "lastObservedTime": now}}
        kind = CORE_EVENTS if series.core else EVENTS
        series.last_patch = time.monotonic()
        try:
            async with self._inflight:
                await self.kube.request(
                    "PATCH",
                    kind.path(series.namespace, series.name),
                    body=patch,
                    content_type=MERGE_PATCH,
                )
        except NotFound:
            # the event expired (the server keeps them about an hour): forget it
            self._series.pop(key, None)
            return None
        except KubeError as exc:
            log.info("event series %s/%s not updated: %s", series.namespace, series.name, exc)
            self.stats.failed += 1
            return False
        series.written = max(series.written, count)
        self.stats.patched += 1
        return True

    def _v1_body(
        self,
        *,
        name: str,
        namespace: str,
        ref: Obj,
        reason: str,
        note: str,
        type: str,
        action: str,
        now: float,
    ) -> Obj:
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "note": note,
            "type": type,
            "regarding": ref,
        }

    def _core_body(
        self,
        *,
        name: str,
        namespace: str,
        ref: Obj,
        reason: str,
        note: str,
        type: str,
        action: str,
        now: float,
    ) -> Obj:
        stamp = micro_time(now)[:19] + "Z"
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": note,
            "type": type,
            "action": action,
            "source": {"component": self.controller},
            "reportingComponent": self.controller,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }

    # -- bookkeeping ---------------------------------------------------------------------

    async def _events_v1_served(self) -> bool:
        try:
            available = await served(self.kube, EVENTS)
        except KubeError:
            return True  # cannot tell: keep using it
        if not available:
            log.warning("events.k8s.io/v1 is not served; writing core v1 events instead")
            self._core_only = True
        return available

    def _failed(self, key: tuple[str, ...], exc: KubeError | None) -> bool:
        self._series.pop(key, None)
        self.stats.failed += 1
        log.info("event not written: %s", exc or "name clashes")
        return False

    def _remember(self, key: tuple[str, ...], series: _Series) -> None:
        self._series[key] = series
        while len(self._series) > CACHE_SIZE:
            self._series.popitem(last=False)

    def _spam_allows(self, subject: str) -> bool:
        bucket = self._spam.get(subject)
        if bucket is None:
            bucket = TokenBucket(self._spam_qps, self._spam_burst)
            self._spam[subject] = bucket
            while len(self._spam) > CACHE_SIZE:
                self._spam.popitem(last=False)
        else:
            self._spam.move_to_end(subject)
        return bucket.try_take()
