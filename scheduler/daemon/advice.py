"""Suggestions in the cluster: what would admit a pending PodGroup, in its condition.

After a cycle, if no search is running, one PodGroup that the cycle left ``Unschedulable`` is
chosen (the one asked about longest ago, new ones first) and the cluster as the cache holds
it now — Namespaces, PriorityClasses, Nodes, Queues, PodGroups, pods (an assumed pod on its
node) — is handed to the *suggester* in a worker thread, with the configuration the daemon
runs now (a reloaded one included). The suggester is ``pumice explain``'s search (the daemon
may not import the commands, so ``pumice run`` passes it in: ``DaemonOptions.suggester``);
it returns the texts of the verified suggestions. They are appended to that PodGroup's
``Unschedulable`` condition message, ``; suggestion: TEXT`` once per change, the message kept
within ``MAX_MESSAGE`` bytes, at once (``late``: the last cycle's status, written again between
cycles, as the reporter writes any status) and by every later cycle, until the PodGroup is no
longer unschedulable.

**Never in the way of binds.** The search is CPU-bound Python: in a thread of the daemon it
would compete for the GIL with the event loop that binds and with the cycle's session. So it
runs only while no bind work is due, and it is paced (``Pacer``): at every step — between
chunks of the objects it feeds its own cache, before each of its sessions and at each
decision in them — it waits while the daemon says bind work is due (a cycle running, binds or
evictions in flight, pods arrived that no session has seen, pods backing off after a failed
bind, or the last cycle committed something: more may follow), and while it is over its CPU
allowance: ``CPU_SHARE`` of one CPU, so at most ``CPU_SHARE * period`` seconds of CPU per
period. ``scheduler.suggestions: false`` switches it off (at a reload too: a running search
stops at its next step and what was found is dropped). In dry-run (``--dry-run``,
``--shadow``) nothing would carry the suggestions to the cluster, so no search runs.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pumice.cache import ClusterCache, PodState
from pumice.daemon.outcome import UNSCHEDULABLE, CycleOutcome
from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost

Obj = dict[str, Any]
Pace = Callable[[], None]
Suggester = Callable[[list[Obj], str, SchedulerConfig, PluginHost, Pace], list[str]]
"""(the cluster's objects, ``namespace/name`` of a PodGroup, the config and its plugin host,
the pace to call between steps) -> texts of verified changes."""
Settings = Callable[[], tuple[SchedulerConfig, PluginHost]]
MAX_MESSAGE = 1024
SEPARATOR = "; suggestion: "
CPU_SHARE = 0.25
"""The most of one CPU a search takes, on average over a period."""
POLL = 0.05
"""Seconds between looks at the daemon while the search waits."""

log = logging.getLogger("pumice.daemon")


class SearchStopped(Exception):
    """Raised at a step of a search the daemon no longer wants (stopping, or switched off)."""


class Pacer:
    """Called by the search at each step (in its thread): returns when it may go on."""

    def __init__(self, busy: Callable[[], bool], period: float, share: float = CPU_SHARE) -> None:
        self.busy = busy
        self.share = share
        self.cap = share * period
        """The CPU seconds a search may take at once: its share of one period."""
        self.stopped = threading.Event()
        self.steps = 0
        """Steps it went on from (for tests and logs)."""
        self.waits = 0
        """Steps at which it waited for bind work to end."""
        self._allowance = self.cap
        self._cpu: float | None = None
        self._wall = time.monotonic()

    def __call__(self) -> None:
        cpu = time.thread_time()
        if self._cpu is not None:
            self._allowance -= cpu - self._cpu
        waited = False
        while True:
            now = time.monotonic()
            self._allowance = min(self.cap, self._allowance + self.share * (now - self._wall))
            self._wall = now
            if self.stopped.is_set():
                raise SearchStopped
            if self.busy():
                waited = True
                self.stopped.wait(POLL)
            elif self._allowance < 0:
                self.stopped.wait(min(-self._allowance / self.share, 10 * POLL))
            else:
                break
        self.waits += waited
        self.steps += 1
        self._cpu = time.thread_time()


class Advisor:
    def __init__(self, suggester: Suggester, settings: Settings, busy: Callable[[], bool]) -> None:
        self.suggester = suggester
        self.settings = settings
        """The config and plugin host the daemon runs now (swapped by a reload)."""
        self.busy = busy
        """Is bind work due? (see the module's docstring)"""
        self.advice: dict[str, list[str]] = {}
        """PodGroup key -> the texts found for it (kept while it stays unschedulable)."""
        self.asked: dict[str, int] = {}
        """PodGroup key -> the cycle it was last searched for."""
        self.running: asyncio.Task[None] | None = None
        self.pacer: Pacer | None = None
        """The running search's."""
        self.fresh: set[str] = set()
        """PodGroups whose advice changed since their condition was last written."""
        self.cycle = 0
        self.searches = 0

    @property
    def enabled(self) -> bool:
        return self.settings()[0].scheduler.suggestions

    def decorate(self, outcome: CycleOutcome) -> None:
        """Append what was found to each unschedulable PodGroup's condition message."""
        self.fresh.clear()  # this cycle's statuses carry what is known now
        if not self.enabled:
            self.advice.clear()
            return
        waiting = unschedulable(outcome)
        for key in [k for k in self.advice if k not in waiting]:
            del self.advice[key]
        for key in [k for k in self.asked if k not in waiting]:
            del self.asked[key]
        for key, condition in waiting.items():
            texts = self.advice.get(key)
            if texts:
                condition["message"] = with_suggestions(str(condition.get("message") or ""), texts)

    def late(self, podgroups: dict[str, Obj]) -> dict[str, Obj]:
        """Between cycles: the statuses (from the last cycle's ``podgroups``) of the PodGroups
        whose advice changed since — found by a search that ended after the cycle, or
        dropped when suggestions were switched off — so that the change is written without
        waiting for a session."""
        if not self.enabled and self.advice:
            self.fresh |= set(self.advice)
            self.advice.clear()
            self.stop()
        out: dict[str, Obj] = {}
        for key in sorted(self.fresh):
            status = podgroups.get(key)
            condition = unschedulable_condition(status) if status is not None else None
            if status is None or condition is None:
                continue
            base = str(condition.get("message") or "").split(SEPARATOR)[0]
            message = with_suggestions(base, self.advice.get(key, []))
            conditions = [
                {**c, "message": message} if c is condition else c
                for c in status.get("conditions") or ()
            ]
            out[key] = {**status, "conditions": conditions}
        self.fresh.clear()
        return out

    def maybe_start(self, cache: ClusterCache, outcome: CycleOutcome) -> None:
        """Start a search for one unschedulable PodGroup unless one is running."""
        self.cycle += 1
        if not self.enabled:
            self.stop()
            return
        if self.running is not None and not self.running.done():
            return
        waiting = unschedulable(outcome)
        if not waiting:
            return
        key = min(waiting, key=lambda k: (self.asked.get(k, -1), k))
        self.asked[key] = self.cycle
        objects = cluster_objects(cache)
        config, host = self.settings()
        self.pacer = Pacer(self.busy, config.scheduler.period)
        self.searches += 1
        self.running = asyncio.get_running_loop().create_task(
            self._search(objects, key, config, host, self.pacer), name=f"suggest {key}"
        )

    def stop(self) -> None:
        """End the running search at its next step (the daemon stops, or suggestions are off)."""
        if self.pacer is not None:
            self.pacer.stopped.set()

    async def _search(
        self, objects: list[Obj], key: str, config: SchedulerConfig, host: PluginHost, pace: Pacer
    ) -> None:
        try:
            texts = await asyncio.to_thread(self.suggester, objects, key, config, host, pace)
        except SearchStopped:
            return
        except Exception:
            log.exception("suggestions for podgroup %s failed", key)
            return
        if key in self.asked and self.enabled:
            texts = list(dict.fromkeys(texts))
            if texts != self.advice.get(key, []):  # logged and written when it changes only
                if texts:
                    log.info("podgroup %s: suggestion: %s", key, "; ".join(texts))
                self.fresh.add(key)
            self.advice[key] = texts


def unschedulable(outcome: CycleOutcome) -> dict[str, Obj]:
    """PodGroup key -> its ``Unschedulable`` condition in this cycle's desired status."""
    out: dict[str, Obj] = {}
    for key, status in outcome.podgroups.items():
        condition = unschedulable_condition(status)
        if condition is not None:
            out[key] = condition
    return out


def unschedulable_condition(status: Obj) -> Obj | None:
    for condition in status.get("conditions") or ():
        if condition.get("type") == UNSCHEDULABLE and condition.get("status") == "True":
            found: Obj = condition
            return found
    return None


def with_suggestions(message: str, texts: list[str]) -> str:
    """``message; suggestion: A; suggestion: B`` — each text once (compared whole, never as
    part of another), within ``MAX_MESSAGE`` bytes (suggestions that would not fit are left
    out whole)."""
    said = set(message.split(SEPARATOR)[1:])
    for text in texts:
        if text in said:
            continue
        part = SEPARATOR + text
        if len((message + part).encode()) > MAX_MESSAGE:
            break
        message += part
        said.add(text)
    return message


def cluster_objects(cache: ClusterCache) -> list[Obj]:
    """The cluster as the cache holds it now, as live ``pumice explain`` lists it (shared
    objects; the suggester copies them)."""
    objects: list[Obj] = []
    for name, labels in cache.state.namespaces.items():
        meta = {"name": name, "labels": dict(labels)}
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    for name, value in cache.priorities.values.items():
        pc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
        pc.update(metadata={"name": name}, value=value)
        if name == cache.priorities.global_default:
            pc["globalDefault"] = True
        objects.append(pc)
    objects += [{**n, "kind": "Node"} for n in cache.node_objects.values()]
    objects += [{**q, "kind": "Queue"} for q in cache.queue_objects.values()]
    objects += [{**g.obj, "kind": "PodGroup"} for g in cache.podgroups.values()]
    for entry in cache.pods.values():
        if entry.state is PodState.LEFT:  # gone from the API server (or about to show up bound)
            continue
        pod = {**entry.pod, "kind": "Pod"}
        spec = pod.get("spec") or {}
        if entry.node and not spec.get("nodeName"):
            pod["spec"] = {**spec, "nodeName": entry.node}  # assumed: on its node already
        objects.append(pod)
    return objects
