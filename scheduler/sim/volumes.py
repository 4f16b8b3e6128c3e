"""The cluster's volume controllers, played by the sim as ``Lifecycle`` plays the kubelets.

Driven by store changes, like the real PV controller and an external provisioner:

* an unbound claim whose class binds ``Immediate`` (or that has no class) is bound to the
  smallest available volume that fits it (size, access modes, class, volume mode, selector);
  when none fits and its class has a provisioner (not ``kubernetes.io/no-provisioner``), a
  volume ``pvc-<claim uid>`` is provisioned for it (node affinity: the class's
  ``allowedTopologies``, if any);
* a claim whose class is ``WaitForFirstConsumer`` waits for a scheduler to choose: once it
  carries ``volume.kubernetes.io/selected-node``, a volume is provisioned whose node affinity
  is that node's hostname (or the class's ``allowedTopologies`` the node satisfies);
* a volume whose ``spec.claimRef`` names a claim (provisioned, or pre-bound by a scheduler)
  completes the binding: the claim's ``volumeName`` and ``pv.kubernetes.io/bind-completed``,
  phase ``Bound`` on both, the claim's capacity and access modes from the volume;
* a claim carries the ``kubernetes.io/pvc-protection`` finalizer (admission adds it): deleted,
  it is ``Terminating`` until no pod that has not ended uses it;
* a volume without a claim is ``Available``; one whose claim went is ``Released`` (deleted
  when its reclaim policy is ``Delete``); a bound claim whose volume went is ``Lost``;
* a pod's generic ephemeral volumes get their claims (``pumice.sim.ephemeral``).

The provisioning itself, its faults (``fail_provisioning``, ``provisioning_delay``) and what a
failure does are ``pumice.sim.provisioner``'s. Events are recorded on the claims as the
controllers do, so ``kubectl describe pvc`` shows them.
"""

from __future__ import annotations

import asyncio
import bisect

from pumice.sim import volumematch as vm
from pumice.sim.ephemeral import EphemeralVolumes
from pumice.sim.objects import Key, Obj, get_path, meta, with_meta
from pumice.sim.provisioner import Provisioner, VolumeConfig, claim_key, record_event
from pumice.sim.registry import Registry
from pumice.sim.resources import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    STORAGE_CLASSES,
)
from pumice.sim.store import DELETED, Change

CLAIMS, VOLUMES = PERSISTENT_VOLUME_CLAIMS.table, PERSISTENT_VOLUMES.table
PV_CONTROLLER = "persistentvolume-controller"


class VolumeControllers:
    def __init__(self, registry: Registry, config: VolumeConfig) -> None:
        self.registry = registry
        self.store = registry.store
        self.provisioner = Provisioner(registry, config, lambda key: self._queue("claim", key))
        self.ephemeral = EphemeralVolumes(registry)
        self._work: dict[tuple[str, str, str], None] = {}
        self._drain_handle: asyncio.Handle | None = None
        self._index = vm.Index()
        self._told: set[tuple[str, str]] = set()
        """(claim uid, reason) of the one-off events already recorded."""
        self._recheck = False
        self._running = False

    # -- wiring --------------------------------------------------------------------------

    def start(self) -> None:
        if self._running:
            return
        self._running = True
        self.provisioner.start()
        self.store.subscribe(self._on_change)
        for name, volume in self.store.table(VOLUMES).items():
            self._index.volume(name[1], volume)
            self._queue("volume", name)
        for key, claim in self.store.table(CLAIMS).items():
            self._index.claim(key, claim)
            self._queue("claim", key)
        for key, pod in self.store.table(PODS.table).items():
            if _has_ephemeral(pod):
                self._queue("pod", key)

    def stop(self) -> None:
        self._running = False
        self.store.unsubscribe(self._on_change)
        self.provisioner.stop()
        if self._drain_handle is not None:
            self._drain_handle.cancel()
            self._drain_handle = None

    def _on_change(self, change: Change) -> None:
        table = change.table
        if table == CLAIMS:
            self._index.claim(change.key, None if change.type == DELETED else change.obj)
            self._queue("claim", change.key)
            if change.type == DELETED:
                name = get_path(change.obj, "spec", "volumeName")
                if name:
                    self._queue("volume", ("", str(name)))
        elif table == VOLUMES:
            name = change.key[1]
            self._index.volume(name, None if change.type == DELETED else change.obj)
            self._queue("volume", change.key)
            ref = vm.claim_ref_key(change.obj)
            if ref is not None:
                self._queue("claim", ref)
            named_by = self._index.claim_of.get(name)
            if named_by is not None:
                self._queue("claim", named_by)
            if change.type != DELETED and vm.available(change.obj):
                self._queue_waiting()
        elif table == STORAGE_CLASSES.table:
            self._queue_waiting()
        elif table == PODS.table:
            if change.type == DELETED and _has_ephemeral(change.obj):
                self.ephemeral.gone(change.obj)
            elif change.type != DELETED and _has_ephemeral(change.obj):
                self._queue("pod", change.key)
            if change.type == DELETED or get_path(change.obj, "status", "phase") in vm.TERMINAL:
                for name in vm.claims_of(change.obj):  # a claim being deleted may go now
                    self._queue("claim", (change.key[0], name))

    def _queue_waiting(self) -> None:
        """Every unbound claim is looked at again (a volume came free, a class changed):
        once per drain however many changes asked for it."""
        self._recheck = True
        self._schedule()

    def _queue(self, what: str, key: Key) -> None:
        self._work[(what, key[0], key[1])] = None
        self._schedule()

    def _schedule(self) -> None:
        if self._drain_handle is None and self._running:
            self._drain_handle = asyncio.get_running_loop().call_soon(self._drain)

    def _drain(self) -> None:
        self._drain_handle = None
        if self._recheck:
            self._recheck = False
            for ns, name in self._index.unbound:
                self._work[("claim", ns, name)] = None
        work, self._work = self._work, {}
        for what, ns, name in work:
            if not self._running:
                return
            if what == "claim":
                self._sync_claim((ns, name))
            elif what == "pod":
                pod = self.store.get(PODS.table, (ns, name))
                if pod is not None:
                    self.ephemeral.sync(pod)
            else:
                self._sync_volume(name)

    # -- writes --------------------------------------------------------------------------

    def _commit(self, table: str, old: Obj, new: Obj) -> None:
        if new != old:
            self.store.commit(
                table, (str(meta(new).get("namespace") or ""), meta(new)["name"]), new
            )

    def record(self, claim: Obj, *, kind: str, reason: str, message: str, source: str) -> None:
        record_event(self.registry, claim, kind=kind, reason=reason, message=message, source=source)

    def _once(self, claim: Obj, *, kind: str, reason: str, message: str, source: str) -> None:
        mark = (str(meta(claim).get("uid")), reason)
        if mark not in self._told:
            self._told.add(mark)
            self.record(claim, kind=kind, reason=reason, message=message, source=source)

    def _set_claim_phase(self, claim: Obj, phase: str) -> None:
        if get_path(claim, "status", "phase") != phase:
            self._commit(
                CLAIMS, claim, {**claim, "status": {**(claim.get("status") or {}), "phase": phase}}
            )

    def _set_volume_phase(self, volume: Obj, phase: str) -> None:
        if get_path(volume, "status", "phase") != phase:
            status = {**(volume.get("status") or {}), "phase": phase}
            self._commit(VOLUMES, volume, {**volume, "status": status})

    # -- the PV controller ---------------------------------------------------------------

    def _sync_volume(self, name: str) -> None:
        volume = self.store.get(VOLUMES, ("", name))
        if volume is None or meta(volume).get("deletionTimestamp"):
            return
        ref = vm.claim_ref_key(volume)
        if ref is None:
            self._set_volume_phase(volume, "Available")
            return
        claim = self.store.get(CLAIMS, ref)
        if claim is not None and vm.refers_to(volume, claim):
            return  # the claim's sync completes or keeps the binding
        if get_path(volume, "status", "phase") in ("Bound", "Released"):
            if get_path(volume, "spec", "persistentVolumeReclaimPolicy") == "Delete":
                self.store.commit(VOLUMES, ("", name), None)
            else:
                self._set_volume_phase(volume, "Released")
        else:
            self._set_volume_phase(volume, "Available")  # pre-bound to a claim yet to come

    def _sync_claim(self, key: Key) -> None:
        claim = self.store.get(CLAIMS, key)
        if claim is None:
            return
        if meta(claim).get("deletionTimestamp"):
            self._unprotect(key, claim)
            return
        volume_name = str(get_path(claim, "spec", "volumeName") or "")
        if volume_name:
            volume = self.store.get(VOLUMES, ("", volume_name))
            if vm.is_bound(claim):
                if volume is None:
                    self._set_claim_phase(claim, "Lost")
                    self._once(
                        claim,
                        kind="Warning",
                        reason="ClaimLost",
                        message=(
                            "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
                        ),
                        source=PV_CONTROLLER,
                    )
                elif vm.refers_to(volume, claim):  # done: phases right, nothing else touched
                    self._set_volume_phase(volume, "Bound")
                    self._set_claim_phase(claim, "Bound")
                return
            if volume is None:
                self._set_claim_phase(claim, "Pending")
            elif vm.claim_ref_key(volume) is None or vm.refers_to(volume, claim):
                self._bind(claim, volume)
            else:
                self._once(
                    claim,
                    kind="Warning",
                    reason="FailedBinding",
                    message=f'volume "{volume_name}" already bound to a different claim.',
                    source=PV_CONTROLLER,
                )
            return
        prebound = self._index.prebound.get(key)
        volume = self.store.get(VOLUMES, ("", prebound)) if prebound else None
        if volume is not None and vm.refers_to(volume, claim):
            self._bind(claim, volume)
            return
        class_name = vm.class_of(claim)
        sc = self.store.get(STORAGE_CLASSES.table, ("", class_name)) if class_name else None
        delayed = sc is not None and sc.get("volumeBindingMode") == vm.WAIT_FOR_FIRST_CONSUMER
        if not delayed:
            want = vm.requested(claim)
            free = self._index.free.get(class_name, [])
            at = bisect.bisect_left(free, (want, ""))  # none smaller than the request fits
            found = (self.store.get(VOLUMES, ("", name)) for _, name in free[at:])
            volume = vm.best_volume((v for v in found if v is not None), claim)
            if volume is not None:
                self._bind(claim, volume)
                return
        node = str(vm.annotations_of(claim).get(vm.SELECTED_NODE) or "")
        if delayed and not node:
            self._once(
                claim,
                kind="Normal",
                reason="WaitForFirstConsumer",
                message="waiting for first consumer to be created before binding",
                source=PV_CONTROLLER,
            )
            return
        if not class_name:
            self._once(
                claim,
                kind="Normal",
                reason="FailedBinding",
                message=(
                    "no persistent volumes available for this claim and no storage class is set"
                ),
                source=PV_CONTROLLER,
            )
            return
        if sc is None:
            self._once(
                claim,
                kind="Warning",
                reason="ProvisioningFailed",
                message=f'storageclass.storage.k8s.io "{class_name}" not found',
                source=PV_CONTROLLER,
            )
            return
        self._start_provisioning(claim, sc, node)

    def _bind(self, claim: Obj, volume: Obj) -> None:
        """The PV controller's four writes: claimRef, the volume's phase, the claim's
        volumeName and bind-completed, the claim's phase (each only if not so already)."""
        m = meta(claim)
        ref = {
            "kind": "PersistentVolumeClaim",
            "namespace": m.get("namespace"),
            "name": m["name"],
            "uid": m.get("uid"),
            "apiVersion": "v1",
            "resourceVersion": m.get("resourceVersion"),
        }
        spec = dict(volume.get("spec") or {})
        new_volume = volume
        if not vm.refers_to(volume, claim) or not (spec.get("claimRef") or {}).get("uid"):
            chose = not spec.get("claimRef")
            new_volume = {**volume, "spec": {**spec, "claimRef": ref}}
            if chose:
                new_volume = with_meta(
                    new_volume,
                    annotations={**vm.annotations_of(volume), vm.BOUND_BY_CONTROLLER: "yes"},
                )
        new_volume = {**new_volume, "status": {**(volume.get("status") or {}), "phase": "Bound"}}
        self._commit(VOLUMES, volume, new_volume)
        claim_spec = dict(claim.get("spec") or {})
        notes = dict(vm.annotations_of(claim))
        if not claim_spec.get("volumeName"):
            notes[vm.BOUND_BY_CONTROLLER] = "yes"
        notes[vm.BIND_COMPLETED] = "yes"
        claim_spec["volumeName"] = meta(volume)["name"]
        status = {
            **(claim.get("status") or {}),
            "phase": "Bound",
            "accessModes": list(spec.get("accessModes") or []),
            "capacity": dict(spec.get("capacity") or {}),
        }
        new_claim = with_meta({**claim, "spec": claim_spec, "status": status}, annotations=notes)
        self._commit(CLAIMS, claim, new_claim)

    def _unprotect(self, key: Key, claim: Obj) -> None:
        """The pvc-protection controller: a claim being deleted goes once no pod uses it."""
        finalizers = meta(claim).get("finalizers") or []
        if vm.PVC_PROTECTION not in finalizers:
            return
        for (ns, _), pod in self.store.table(PODS.table).items():
            live = get_path(pod, "status", "phase") not in vm.TERMINAL
            if ns == key[0] and live and key[1] in vm.claims_of(pod):
                return
        rest = [f for f in finalizers if f != vm.PVC_PROTECTION]
        self.store.commit(CLAIMS, key, with_meta(claim, finalizers=rest) if rest else None)

    # -- handing over to the provisioner -------------------------------------------------

    def _start_provisioning(self, claim: Obj, sc: Obj, node: str) -> None:
        """The PV controller's part: the storage-provisioner annotations and the event
        saying who is expected to provision; then the provisioner's attempt."""
        key = claim_key(claim)
        provisioner = str(sc.get("provisioner") or "")
        if self.provisioner.busy(key):
            return
        if provisioner == vm.NO_PROVISIONER:
            self._tell_waiting(claim, provisioner)
            return
        notes = vm.annotations_of(claim)
        if notes.get(vm.STORAGE_PROVISIONER) != provisioner:
            notes = {
                **notes,
                vm.STORAGE_PROVISIONER: provisioner,
                vm.BETA_STORAGE_PROVISIONER: provisioner,
            }
            self._commit(CLAIMS, claim, with_meta(claim, annotations=notes))
            claim = self.store.get(CLAIMS, key) or claim
        self._tell_waiting(claim, provisioner)
        self.provisioner.provision(claim, sc, node)

    def _tell_waiting(self, claim: Obj, provisioner: str) -> None:
        message = _waiting(provisioner)
        self._once(
            claim,
            kind="Normal",
            reason="ExternalProvisioning",
            message=message,
            source=PV_CONTROLLER,
        )


def _has_ephemeral(pod: Obj) -> bool:
    return any(
        isinstance(v, dict) and v.get("ephemeral") is not None
        for v in get_path(pod, "spec", "volumes") or []
    )


def _waiting(provisioner: str) -> str:
    return (
        f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
        "or manually by the system administrator. If volume creation is delayed, please verify "
        "that the provisioner is running and correctly registered."
    )
