"""The cluster ``pumice simulate`` replays: the daemon's cache, fed as the informers feed it.

The manifests go into a ``ClusterCache`` through the handlers the daemon's informers call, as
ADDED events (Namespaces, PriorityClasses, Nodes, the storage kinds, Queues, PodGroups, then pods,
slimmed as the pod informers slim them: a pod with a node to the assigned-pods handler, one of
ours without a node to the pending-pods handler, others' pending pods nowhere, as their watches
would have it); then, as after the daemon's initial-sync gate, cycles run. The storage APIs count
as served (a claim the files lack does not exist, but for a pod's generic ephemeral volume, whose
claim is made as the ephemeral-volume controller makes it). Every cycle's snapshot is the cache's,
taken at the simulated ``clock``. What a cycle decides comes back as the API server's answers
would: a bound pod shows up bound (and Running) on the assigned watch (the daemon's assumption
until then is a step the answer makes moot); an evicted pod is deleted; a nominated pod gets
``status.nominatedNodeName``; PodGroups and Queues get the status ``pumice.daemon.outcome``
computes — the code whose results the daemon writes — through their handlers, so the next cycle
reads its Inqueue phases and node reservations back as the daemon's next session does. The volume
writes made before a bind come back as the volume controllers would answer them (``bind_volume``):
a volume pre-bound to a claim is bound to it; a claim given a node gets a volume provisioned there
(``pvc-<uid>``, pinned to the node's hostname or the class's ``allowedTopologies``), bound to it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from pumice.cache import ClusterCache, Handler, PodState
from pumice.cache.groups import object_key
from pumice.cache.pods import pod_uid
from pumice.daemon.outcome import CycleOutcome, same_podgroup_status, same_queue_status
from pumice.model import ClusterSnapshot, TaskInfo
from pumice.model.volumes import (
    BIND_COMPLETED,
    BOUND_BY_CONTROLLER,
    HOSTNAME,
    PROVISIONED_BY,
    access_modes,
    class_of,
    is_bound,
    spec_of,
)
from pumice.plain import Obj

STORAGE_STORES = {
    "PersistentVolumeClaim": "claims",
    "PersistentVolume": "volumes",
    "StorageClass": "classes",
    "CSINode": "csinodes",
    "CSIDriver": "csidrivers",
}
FEED_ORDER = {
    "Namespace": 0,
    "PriorityClass": 0,
    "Node": 1,
    **dict.fromkeys(STORAGE_STORES, 1),
    "Queue": 2,
    "PodGroup": 3,
    "Pod": 4,
}


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
        self.storage: dict[str, dict[str, Obj]] = {store: {} for store in STORAGE_STORES.values()}
        """Store -> key -> the storage object as the API server has it now."""
        self._storage_handlers: dict[str, Handler] = {
            store: self.cache.storage.handler(store) for store in STORAGE_STORES.values()
        }

    # -- the initial list ---------------------------------------------------------------------

    def add(self, objects: Iterable[Obj]) -> None:
        """Deliver every object as an ADDED event, kinds in the order above."""
        cache = self.cache
        nodes: list[Obj] = []
        for obj in sorted(objects, key=lambda o: FEED_ORDER.get(str(o.get("kind")), 5)):
            kind = obj.get("kind")
            if kind != "Node" and nodes:
                cache.add_nodes(nodes)  # together: the node table grows once
                nodes = []
            if kind == "Namespace":
                cache.namespaces.on_add(obj)
            elif kind == "PriorityClass":
                cache.priority_classes.on_add(obj)
            elif kind == "Node":
                nodes.append(obj)
            elif kind == "Queue":
                self.queues[object_key(obj)] = obj
                cache.queues.on_add(obj)
            elif kind == "PodGroup":
                self.podgroups[object_key(obj)] = obj
                cache.podgroups_handler.on_add(obj)
            elif kind == "Pod":
                self._add_pod(obj)
            elif kind in STORAGE_STORES:
                store = STORAGE_STORES[str(kind)]
                self.storage[store][object_key(obj)] = obj
                self._storage_handlers[store].on_add(obj)
        if nodes:
            cache.add_nodes(nodes)

    def _add_pod(self, pod: Obj) -> None:
        self._ephemeral_claims(pod)
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

    def _ephemeral_claims(self, pod: Obj) -> None:
        """The ephemeral-volume controller's part: a pod's generic ephemeral volume that has
        no claim ``<pod>-<volume>`` yet gets one from its template, owned by the pod."""
        volumes = (pod.get("spec") or {}).get("volumes")
        meta = pod.get("metadata") or {}
        if not volumes or meta.get("deletionTimestamp"):
            return
        namespace = str(meta.get("namespace") or "default")
        for volume in volumes:
            if not isinstance(volume, dict) or not isinstance(volume.get("ephemeral"), dict):
                continue
            template = volume["ephemeral"].get("volumeClaimTemplate") or {}
            name = f"{meta.get('name')}-{volume.get('name')}"
            key = f"{namespace}/{name}"
            if key in self.storage["claims"]:
                continue
            owner = {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta.get("name"),
                "controller": True,
            }
            if meta.get("uid"):
                owner["uid"] = meta["uid"]
            claim_meta: Obj = {"name": name, "namespace": namespace, "ownerReferences": [owner]}
            for part in ("labels", "annotations"):
                if (template.get("metadata") or {}).get(part):
                    claim_meta[part] = dict(template["metadata"][part])
            claim: Obj = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": claim_meta,
                "spec": dict(template.get("spec") or {}),
                "status": {"phase": "Pending"},
            }
            self.storage["claims"][key] = claim
            self._storage_handlers["claims"].on_add(claim)

    # -- a cycle ------------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        snap = self.cache.snapshot()
        snap.taken_at = self.clock
        return snap

    def bind(self, task: TaskInfo, node: str) -> None:
        """Seen bound and Running on the assigned watch, then gone from the pending one. (The
        daemon assumes the pod first, until the API server answers; here the answer is there
        at once, and the cache ends in the same state without the step.)"""
        old = self.pods.get(task.uid)
        entry = self.cache.pods.get(task.uid)
        if old is None or entry is None or entry.state is not PodState.INITIAL:
            return  # no longer waiting for a node (what assume would have refused)
        status = {k: v for k, v in (old.get("status") or {}).items() if k != "nominatedNodeName"}
        spec = {**(old.get("spec") or {}), "nodeName": node}
        new = {**old, "spec": spec, "status": {**status, "phase": "Running"}}
        self.pods[task.uid] = new
        self.cache.assigned_pods.on_add(new)
        self.cache.pending_pods.on_delete(old)

    def bind_volume(self, *, claim_key: str, volume: str | None, node: str) -> None:
        """A volume write before a bind, answered as the volume controllers would: the
        volume ``volume`` pre-bound to the claim, or (None) one provisioned on ``node``; then
        both bound."""
        claim = self.storage["claims"].get(claim_key)
        if claim is None or is_bound(claim):
            return
        meta = claim.get("metadata") or {}
        ref = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": meta.get("namespace") or "default",
            "name": meta.get("name"),
            **({"uid": meta["uid"]} if meta.get("uid") else {}),
        }
        if volume is None:
            made = self._provisioned(claim, ref, node)
            if made is None:
                return
            name = str(made["metadata"]["name"])
            self.storage["volumes"][name] = made
            self._storage_handlers["volumes"].on_add(made)
        else:
            name = volume
            old = self.storage["volumes"].get(name)
            if old is None:
                return
            notes = {**((old.get("metadata") or {}).get("annotations") or {})}
            notes[BOUND_BY_CONTROLLER] = "yes"
            new = {
                **old,
                "metadata": {**old["metadata"], "annotations": notes},
                "spec": {**spec_of(old), "claimRef": ref},
                "status": {**(old.get("status") or {}), "phase": "Bound"},
            }
            self.storage["volumes"][name] = new
            self._storage_handlers["volumes"].on_update(old, new)
        bound_to = self.storage["volumes"][name]
        notes = {**(meta.get("annotations") or {}), BIND_COMPLETED: "yes"}
        status = {
            **(claim.get("status") or {}),
            "phase": "Bound",
            "accessModes": sorted(access_modes(bound_to)),
            "capacity": dict(spec_of(bound_to).get("capacity") or {}),
        }
        new_claim = {
            **claim,
            "metadata": {**meta, "annotations": notes},
            "spec": {**spec_of(claim), "volumeName": name},
            "status": status,
        }
        self.storage["claims"][claim_key] = new_claim
        self._storage_handlers["claims"].on_update(claim, new_claim)

    def _provisioned(self, claim: Obj, ref: Obj, node: str) -> Obj | None:
        """The volume a provisioner makes for ``claim`` on ``node`` (None: no class)."""
        sc = self.storage["classes"].get(class_of(claim))
        if sc is None:
            return None
        labels = ((self.cache.node_objects.get(node) or {}).get("metadata") or {}).get(
            "labels"
        ) or {}
        allowed = sc.get("allowedTopologies") or []
        if allowed:
            keys = [
                str(e.get("key"))
                for term in allowed[:1]
                for e in (term or {}).get("matchLabelExpressions") or ()
            ]
            expressions = [
                {"key": k, "operator": "In", "values": [str(labels.get(k, ""))]} for k in keys
            ]
        else:
            hostname = str(labels.get(HOSTNAME) or node)
            expressions = [{"key": HOSTNAME, "operator": "In", "values": [hostname]}]
        requests = (spec_of(claim).get("resources") or {}).get("requests") or {}
        name = f"pvc-{ref.get('uid') or ref['namespace'] + '-' + str(ref['name'])}"
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "annotations": {PROVISIONED_BY: str(sc.get("provisioner") or "")},
            },
            "spec": {
                "capacity": {"storage": requests.get("storage", "0")},
                "accessModes": list(spec_of(claim).get("accessModes") or []),
                "storageClassName": class_of(claim),
                "claimRef": ref,
                "persistentVolumeReclaimPolicy": str(sc.get("reclaimPolicy") or "Delete"),
                "nodeAffinity": {
                    "required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
                },
                "csi": {"driver": str(sc.get("provisioner") or ""), "volumeHandle": name},
            },
            "status": {"phase": "Bound"},
        }

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
