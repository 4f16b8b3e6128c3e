"""Suggestions in the cluster: what would admit a pending PodGroup, in its condition.

Outside the scheduling cycle and never in its way: after a cycle, if no search is running,
one PodGroup that the cycle left ``Unschedulable`` is chosen (the one asked about longest
ago, new ones first) and the cluster as the cache holds it now — nodes, pods (an assumed pod
on its node), PodGroups, Queues, PriorityClasses — is handed to the *suggester* in a worker
thread. The suggester is ``pumice explain``'s search (the daemon may not import the commands,
so ``pumice run`` passes it in: ``DaemonOptions.suggester``); it returns the texts of the
verified suggestions. Every later cycle appends them to that PodGroup's ``Unschedulable``
condition message, ``; suggestion: TEXT`` once per change, the message kept within
``MAX_MESSAGE`` bytes, until the PodGroup is no longer unschedulable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pumice.cache import ClusterCache
from pumice.daemon.outcome import UNSCHEDULABLE, CycleOutcome
from pumice.plain import Obj

Suggester = Callable[[list[Obj], str], list[str]]
"""(the cluster's objects, ``namespace/name`` of a PodGroup) -> texts of verified changes."""
MAX_MESSAGE = 1024
SEPARATOR = "; suggestion: "

log = logging.getLogger("pumice.daemon")


class Advisor:
    def __init__(self, suggester: Suggester) -> None:
        self.suggester = suggester
        self.advice: dict[str, list[str]] = {}
        """PodGroup key -> the texts found for it (kept while it stays unschedulable)."""
        self.asked: dict[str, int] = {}
        """PodGroup key -> the cycle it was last searched for."""
        self.running: asyncio.Task[None] | None = None
        self.cycle = 0

    def decorate(self, outcome: CycleOutcome) -> None:
        """Append what was found to each unschedulable PodGroup's condition message."""
        waiting = unschedulable(outcome)
        for key in [k for k in self.advice if k not in waiting]:
            del self.advice[key]
        for key in [k for k in self.asked if k not in waiting]:
            del self.asked[key]
        for key, condition in waiting.items():
            texts = self.advice.get(key)
            if texts:
                condition["message"] = with_suggestions(str(condition.get("message") or ""), texts)

    def maybe_start(self, cache: ClusterCache, outcome: CycleOutcome) -> None:
        """Start a search for one unschedulable PodGroup unless one is running."""
        self.cycle += 1
        if self.running is not None and not self.running.done():
            return
        waiting = unschedulable(outcome)
        if not waiting:
            return
        key = min(waiting, key=lambda k: (self.asked.get(k, -1), k))
        self.asked[key] = self.cycle
        objects = cluster_objects(cache)
        self.running = asyncio.get_running_loop().create_task(
            self._search(objects, key), name=f"suggest {key}"
        )

    async def _search(self, objects: list[Obj], key: str) -> None:
        try:
            texts = await asyncio.to_thread(self.suggester, objects, key)
        except Exception:
            log.exception("suggestions for podgroup %s failed", key)
            return
        if key in self.asked:
            texts = list(dict.fromkeys(texts))
            if texts and texts != self.advice.get(key):  # logged when it changes only
                log.info("podgroup %s: suggestion: %s", key, "; ".join(texts))
            self.advice[key] = texts


def unschedulable(outcome: CycleOutcome) -> dict[str, Obj]:
    """PodGroup key -> its ``Unschedulable`` condition in this cycle's desired status."""
    out: dict[str, Obj] = {}
    for key, status in outcome.podgroups.items():
        for condition in status.get("conditions") or ():
            if condition.get("type") == UNSCHEDULABLE and condition.get("status") == "True":
                out[key] = condition
                break
    return out


def with_suggestions(message: str, texts: list[str]) -> str:
    """``message; suggestion: A; suggestion: B`` — each text once, within ``MAX_MESSAGE``
    bytes (suggestions that would not fit are left out whole)."""
    for text in texts:
        part = SEPARATOR + text
        if part in message:
            continue
        if len((message + part).encode()) > MAX_MESSAGE:
            break
        message += part
    return message


def cluster_objects(cache: ClusterCache) -> list[Obj]:
    """The cluster as the cache holds it now (shared objects; the suggester copies them)."""
    objects: list[Obj] = []
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
        pod = {**entry.pod, "kind": "Pod"}
        spec = pod.get("spec") or {}
        if entry.node and not spec.get("nodeName"):
            pod["spec"] = {**spec, "nodeName": entry.node}  # assumed: on its node already
        objects.append(pod)
    return objects
