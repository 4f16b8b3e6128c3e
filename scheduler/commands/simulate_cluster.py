"""The cluster ``pumice simulate`` replays: the daemon's cache, fed as the informers feed it.

The manifests go into a ``ClusterCache`` through the handlers the daemon's informers call, as
ADDED events (Namespaces, PriorityClasses, Nodes, Queues, PodGroups, then pods, slimmed as the pod
informers slim them: a pod with a node to the assigned-pods handler, one of ours without a
node to the pending-pods handler, others' pending pods nowhere, as their watches would have
it); then, as after the daemon's initial-sync gate, cycles run. Every cycle's snapshot is
the cache's, taken at the simulated ``clock``. What a cycle decides comes back as the API
server's answers would: a bound pod is assumed, then shows up bound (and Running) on the
assigned watch; an evicted pod is deleted; a nominated pod gets ``status.nominatedNodeName``;
PodGroups and Queues get the status ``pumice.daemon.outcome`` computes — the code whose results
the daemon writes — through their handlers, so the next cycle reads its Inqueue phases and node
reservations back as the daemon's next session does.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from pumice.cache import ClusterCache, PodState
from pumice.cache.groups import object_key
from pumice.cache.pods import pod_uid
from pumice.daemon.outcome import CycleOutcome, same_podgroup_status, same_queue_status
from pumice.model import ClusterSnapshot, TaskInfo
from pumice.plain import Obj

FEED_ORDER = {"Namespace": 0, "PriorityClass": 0, "Node": 1, "Queue": 2, "PodGroup": 3, "Pod": 4}


class SimulatedCluster:
    """A cache fed from manifests, and the API server's side of each cycle's decisions."""

    def __init__(self, scheduler_name: str, default_queue: str = "default") -> None:
        self.clock = time.time()
        """The simulated time: every snapshot is taken at it; ``pumice simulate`` moves it on
        by the configured ``period`` each cycle."""
        self.cache = ClusterCache(
            scheduler_name, volcano=True, default_queue=default_queue, clock=lambda: self.clock
        )
        self.pods: dict[str, Obj] = {}
        """Pod uid -> the pod as the API server has it now."""
        self.podgroups: dict[str, Obj] = {}
        self.queues: dict[str, Obj] = {}

    # -- the initial list ---------------------------------------------------------------------

    def add(self, objects: Iterable[Obj]) -> None:
        """Deliver every object as an ADDED event, kinds in the order above."""
        cache = self.cache
        for obj in sorted(objects, key=lambda o: FEED_ORDER.get(str(o.get("kind")), 5)):
            kind = obj.get("kind")
            if kind == "Namespace":
                cache.namespaces.on_add(obj)
            elif kind == "PriorityClass":
                cache.priority_classes.on_add(obj)
            elif kind == "Node":
                cache.nodes.on_add(obj)
            elif kind == "Queue":
                self.queues[object_key(obj)] = obj
                cache.queues.on_add(obj)
            elif kind == "PodGroup":
                self.podgroups[object_key(obj)] = obj
                cache.podgroups_handler.on_add(obj)
            elif kind == "Pod":
                self._add_pod(obj)

    def _add_pod(self, pod: Obj) -> None:
        pod = self.cache.slim_pod(pod)  # what the pod informers deliver
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        if spec.get("nodeName"):
            self.pods[pod_uid(pod)] = pod
            self.cache.assigned_pods.on_add(pod)
        elif spec.get("schedulerName") == self.cache.scheduler_name and phase not in (
            "Succeeded",
            "Failed",
        ):
            self.pods[pod_uid(pod)] = pod
            self.cache.pending_pods.on_add(pod)

    # -- a cycle ------------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        snap = self.cache.snapshot()
        snap.taken_at = self.clock
        return snap

    def bind(self, task: TaskInfo, node: str) -> None:
        """Assumed at once, then seen bound and Running on the assigned watch."""
        old = self.pods.get(task.uid)
        if old is None or not self.cache.assume(task.uid, node=node):
            return
        status = {k: v for k, v in (old.get("status") or {}).items() if k != "nominatedNodeName"}
        spec = {**(old.get("spec") or {}), "nodeName": node}
        new = {**old, "spec": spec, "status": {**status, "phase": "Running"}}
        self.pods[task.uid] = new
        self.cache.assigned_pods.on_add(new)
        self.cache.pending_pods.on_delete(old)

    def evict(self, task: TaskInfo) -> None:
        """The pod is deleted (its grace period is not simulated)."""
        pod = self.pods.pop(task.uid, None)
        if pod is not None:
            self.cache.assigned_pods.on_delete(pod)

    def nominate(self, task: TaskInfo, node: str) -> None:
        old = self.pods.get(task.uid)
        if old is None:
            return
        new = {**old, "status": {**(old.get("status") or {}), "nominatedNodeName": node}}
        self.pods[task.uid] = new
        self.cache.pending_pods.on_update(old, new)

    def write_statuses(self, outcome: CycleOutcome) -> None:
        """Write the PodGroup and Queue status the session computed, where it changed (as the
        daemon's reporter does), and deliver each as a MODIFIED event."""
        for key, status in outcome.podgroups.items():
            old = self.podgroups.get(key)
            if old is None or same_podgroup_status(old.get("status"), status):
                continue
            new = {**old, "status": {**(old.get("status") or {}), **status}}
            self.podgroups[key] = new
            self.cache.podgroups_handler.on_update(old, new)
        for name, status in outcome.queues.items():
            old = self.queues.get(name)
            if old is None or same_queue_status(old.get("status"), status):
                continue
            kept = {k: v for k, v in (old.get("status") or {}).items() if k == "state"}
            new = {**old, "status": {**kept, **status}}
            self.queues[name] = new
            self.cache.queues.on_update(old, new)

    # -- what is left -------------------------------------------------------------------------

    def pending(self) -> dict[str, tuple[str, str]]:
        """Our pods still waiting for a node: ``ns/name`` -> (uid, the cache's reason if it
        keeps the pod from sessions, else "")."""
        out: dict[str, tuple[str, str]] = {}
        for entry in self.cache.pods.values():
            if not entry.ours or entry.state not in (PodState.INITIAL, PodState.BLOCKED):
                continue
            if (entry.pod.get("metadata") or {}).get("deletionTimestamp"):
                continue
            reason = entry.reason if entry.state is PodState.BLOCKED else ""
            out[entry.key] = (entry.uid, reason)
        return out

    def podgroup_phases(self) -> dict[str, str]:
        """Every PodGroup's ``status.phase`` now (Pending when it has none)."""
        return {
            key: str((pg.get("status") or {}).get("phase") or "Pending")
            for key, pg in self.podgroups.items()
        }
