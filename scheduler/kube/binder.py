"""Binder and Evictor: the two pod writes whose outcome the cache must know exactly; and the
volume writes made before a pod's bind.

**Binding** (``POST pods/{name}/binding``) carries the pod's uid as a precondition, so a pod
deleted and recreated under the same name is never bound by a decision made for its
predecessor. The answer is a ``Status``, not a Binding: we check the HTTP status ourselves
(kubernetes_asyncio's generated call raises on that body although the bind succeeded). A 409
may hide a bind that did succeed (its response was lost and this is the retry), so it is
resolved by reading the pod::

    201                                  BOUND
    409, pod on our node                 BOUND            (the earlier attempt landed)
    409, pod on another node             BOUND_ELSEWHERE  (someone else won; node = theirs)
    404, or 409 and the pod is gone,
      has another uid or is terminating  GONE
    anything else                        FAILED           (error says why; the caller
                                                           forgets and requeues with backoff)

**Eviction** (``policy/v1`` Eviction, uid precondition) answers 429 while a
PodDisruptionBudget forbids it; that is retried with capped, jittered backoff (at least the
server's Retry-After) up to ``max_attempts``, then reported BLOCKED so the preemptor keeps
waiting instead of the evictor spinning.

Both bound their concurrency; the client's QPS bucket paces them further.

**Volume writes**: those kube-scheduler's volume binder makes before a pod is bound.

* ``claim_volume``: a PersistentVolume's ``spec.claimRef`` names the claim (its full object
  reference) and the volume gets ``pv.kubernetes.io/bound-by-controller: "yes"``; the PV
  controller then completes the binding.
* ``select_node``: the claim's ``volume.kubernetes.io/selected-node`` annotation; the
  provisioner then creates a volume the node can reach, and the PV controller binds it.

Both are JSON merge patches that carry the object's ``metadata.resourceVersion`` as it was
when the decision was made: the API server refuses the write (409) if the object changed since,
as kube-scheduler's PUT of its cached copy is refused. Errors are ``KubeError``s (the caller
forgets the decision and tries the pod again later).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice.kube.client import MERGE_PATCH, Kube
from pumice.kube.ratelimit import Backoff
from pumice.kube.rest import (
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODS,
    Conflict,
    KubeError,
    NotFound,
    TooManyRequests,
)
from pumice.model.volumes import BOUND_BY_CONTROLLER, SELECTED_NODE
from pumice.plain import ObjView

log = logging.getLogger("pumice.kube.binder")


class BindOutcome(enum.Enum):
    BOUND = "bound"
    BOUND_ELSEWHERE = "bound-elsewhere"
    GONE = "gone"
    FAILED = "failed"


@dataclass
class BindResult:
    outcome: BindOutcome
    node: str | None
    """The node the pod is bound to (ours or the other one), None when not bound."""
    error: KubeError | None = None


@dataclass
class WriteStats:
    """Outcomes so far, by name (``bound``, ``gone``, ...), and the peak concurrency."""

    outcomes: dict[str, int] = field(default_factory=dict)
    peak_inflight: int = 0

    def count(self, outcome: enum.Enum) -> None:
        self.outcomes[outcome.value] = self.outcomes.get(outcome.value, 0) + 1


class _Slots:
    """A semaphore that also records how many holders it had at most."""

    def __init__(self, limit: int, stats: WriteStats) -> None:
        self._semaphore = asyncio.Semaphore(max(1, limit))
        self._stats = stats
        self.inflight = 0

    async def __aenter__(self) -> None:
        await self._semaphore.acquire()
        self.inflight += 1
        self._stats.peak_inflight = max(self._stats.peak_inflight, self.inflight)

    async def __aexit__(self, *exc: object) -> None:
        self.inflight -= 1
        self._semaphore.release()


def _meta(obj: ObjView) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


class Binder:
    def __init__(self, kube: Kube, *, concurrency: int = 64) -> None:
        self.kube = kube
        self.stats = WriteStats()
        self.concurrency = max(1, concurrency)
        """Binds sent at once at most (callers may keep no more in flight than this)."""
        self._slots = _Slots(concurrency, self.stats)

    async def bind(self, *, namespace: str, name: str, uid: str, node: str) -> BindResult:
        """Bind one pod to ``node``; never raises KubeError (see the outcome table above)."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        async with self._slots:
            try:
                await self.kube.request("POST", PODS.path(namespace, name, "binding"), body=body)
                result = BindResult(BindOutcome.BOUND, node)
            except NotFound as exc:
                result = BindResult(BindOutcome.GONE, None, exc)
            except Conflict as exc:
                result = await self._resolve_conflict(
                    namespace=namespace, name=name, uid=uid, node=node, conflict=exc
                )
            except KubeError as exc:
                result = BindResult(BindOutcome.FAILED, None, exc)
        self.stats.count(result.outcome)
        if result.outcome is BindOutcome.FAILED:
            log.info("bind %s/%s to %s failed: %s", namespace, name, node, result.error)
        return result

    async def _resolve_conflict(
        self, *, namespace: str, name: str, uid: str, node: str, conflict: Conflict
    ) -> BindResult:
        try:
            pod = await self.kube.request("GET", PODS.path(namespace, name))
        except NotFound as exc:
            return BindResult(BindOutcome.GONE, None, exc)
        except KubeError as exc:
            return BindResult(BindOutcome.FAILED, None, exc)
        metadata = _meta(pod)
        if metadata.get("uid") != uid or metadata.get("deletionTimestamp"):
            return BindResult(BindOutcome.GONE, None, conflict)
        bound = (pod.get("spec") or {}).get("nodeName") or None
        if bound == node:
            return BindResult(BindOutcome.BOUND, node)
        if bound:
            return BindResult(BindOutcome.BOUND_ELSEWHERE, bound, conflict)
        # not bound at all: scheduling gates, or a conflict we cannot explain; try again later
        return BindResult(BindOutcome.FAILED, None, conflict)


class EvictOutcome(enum.Enum):
    EVICTED = "evicted"
    GONE = "gone"
    BLOCKED = "blocked"
    FAILED = "failed"


class Evictor:
    def __init__(
        self,
        kube: Kube,
        *,
        concurrency: int = 16,
        max_attempts: int = 5,
        backoff_initial: float = 1.0,
        backoff_cap: float = 10.0,
    ) -> None:
        self.kube = kube
        self.max_attempts = max(1, max_attempts)
        self.backoff_initial = backoff_initial
        self.backoff_cap = backoff_cap
        self.stats = WriteStats()
        self._slots = _Slots(concurrency, self.stats)

    async def evict(self, *, namespace: str, name: str, uid: str) -> EvictOutcome:
        """Evict one pod through the Eviction API; never raises KubeError."""
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        path = PODS.path(namespace, name, "eviction")
        backoff = Backoff(initial=self.backoff_initial, cap=self.backoff_cap)
        outcome = EvictOutcome.BLOCKED
        async with self._slots:
            for attempt in range(1, self.max_attempts + 1):
                try:
                    # 429 here means a PodDisruptionBudget said no: paced below, not by the client
                    await self.kube.request("POST", path, body=body, max_retries=0)
                    outcome = EvictOutcome.EVICTED
                except (NotFound, Conflict):
                    # gone, or the name now belongs to another pod (uid precondition failed)
                    outcome = EvictOutcome.GONE
                except TooManyRequests as exc:
                    if attempt == self.max_attempts:
                        log.info(
                            "evict %s/%s: still refused after %d attempts: %s",
                            namespace,
                            name,
                            attempt,
                            exc,
                        )
                        outcome = EvictOutcome.BLOCKED
                        break
                    delay = max(backoff.next(), min(exc.retry_after or 0.0, self.backoff_cap))
                    await asyncio.sleep(delay)
                    continue
                except KubeError as exc:
                    log.info("evict %s/%s failed: %s", namespace, name, exc)
                    outcome = EvictOutcome.FAILED
                break
        self.stats.count(outcome)
        return outcome


def claim_reference(claim: ObjView) -> dict[str, Any]:
    """The claim's ObjectReference, as a volume's ``claimRef`` holds it."""
    m = _meta(claim)
    ref = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": m.get("namespace") or "default",
        "name": m.get("name"),
    }
    for key in ("uid", "resourceVersion"):
        if m.get(key):
            ref[key] = m[key]
    return ref


async def claim_volume(kube: Kube, *, volume: ObjView, claim: ObjView) -> None:
    """Pre-bind ``volume`` to ``claim`` (kube's static binding)."""
    m = _meta(volume)
    metadata: dict[str, Any] = {"annotations": {BOUND_BY_CONTROLLER: "yes"}}
    if m.get("resourceVersion"):
        metadata["resourceVersion"] = m["resourceVersion"]
    body = {"metadata": metadata, "spec": {"claimRef": claim_reference(claim)}}
    await kube.request(
        "PATCH", PERSISTENTVOLUMES.path("", str(m.get("name"))), body=body, content_type=MERGE_PATCH
    )


async def select_node(kube: Kube, claim: ObjView, node: str) -> None:
    """Ask for ``claim`` to be provisioned where ``node`` can reach it."""
    m = _meta(claim)
    metadata: dict[str, Any] = {"annotations": {SELECTED_NODE: node}}
    if m.get("resourceVersion"):
        metadata["resourceVersion"] = m["resourceVersion"]
    path = PERSISTENTVOLUMECLAIMS.path(str(m.get("namespace") or "default"), str(m.get("name")))
    await kube.request("PATCH", path, body={"metadata": metadata}, content_type=MERGE_PATCH)
