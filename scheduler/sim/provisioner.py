"""The external provisioner's part of the sim's volume controllers (``pumice.sim.volumes``).

``Provisioner.provision(claim, class, node)`` starts one attempt: a ``Provisioning`` event on
the claim, then, ``provisioning_delay`` seconds later, a volume ``pvc-<claim uid>`` whose
claimRef names the claim (the PV controller then binds them) and a ``ProvisioningSucceeded``
event; never a second volume for the same claim. Its node affinity is the selected node's
hostname, or the class's ``allowedTopologies`` (those the node satisfies, or all of them for a
claim that binds ``Immediate``). An attempt fails with a ``ProvisioningFailed`` event when the
node is unknown or outside the allowed topologies, or by injection: ``fail_provisioning`` is
the fraction of attempts failed as a CSI driver out of capacity fails them, sampled with the
sim's seed. A failed attempt for a selected node removes ``volume.kubernetes.io/selected-node``
(so the scheduler picks again), as external-provisioner does; an ``Immediate`` claim is tried
again after a backoff. Both knobs change at run time (``configure``: the admin endpoint's
``/sim/volumes``).
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pumice.sim import volumematch as vm
from pumice.sim.errors import SimSettingsError, bad_request
from pumice.sim.objects import Key, Obj, get_path, meta, now_rfc3339, with_meta
from pumice.sim.registry import Registry
from pumice.sim.resources import (
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)

CLAIMS, VOLUMES = PERSISTENT_VOLUME_CLAIMS.table, PERSISTENT_VOLUMES.table
RETRY_DELAY = 0.5
"""Seconds before an Immediate claim's failed provisioning is tried again."""
INJECTED = "rpc error: code = ResourceExhausted desc = pumice sim: provisioning failed (injected)"


@dataclass(frozen=True)
class VolumeConfig:
    fail_provisioning: float = 0.0
    """Fraction of provisioning attempts that fail (0..1)."""
    provisioning_delay: float = 0.0
    """Seconds each provisioning attempt takes."""
    seed: int | None = 0


def check_fraction(value: float) -> float:
    if not 0.0 <= value <= 1.0:  # NaN too
        raise SimSettingsError(
            f"the fraction of failed provisionings must be within [0, 1], not {value}"
        )
    return value


def claim_key(claim: Obj) -> Key:
    return (str(meta(claim).get("namespace") or ""), str(meta(claim)["name"]))


def record_event(
    registry: Registry, claim: Obj, *, kind: str, reason: str, message: str, source: str
) -> None:
    """An event about ``claim``, as a controller's recorder writes it."""
    m = meta(claim)
    now = now_rfc3339()
    event: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            # a recorder names an event after its object and a unique suffix
            "name": f"{m['name']}.{secrets.token_hex(8)}",
            "namespace": m.get("namespace"),
        },
        "involvedObject": {
            "kind": "PersistentVolumeClaim",
            "namespace": m.get("namespace"),
            "name": m["name"],
            "uid": m.get("uid"),
            "apiVersion": "v1",
            "resourceVersion": m.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": source},
        "reportingComponent": source,
        "reportingInstance": "",
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    registry.create_object(event, validate=False)  # core v1: kubectl describe reads it


class Provisioner:
    def __init__(
        self, registry: Registry, config: VolumeConfig, requeue: Callable[[Key], None]
    ) -> None:
        self.registry = registry
        self.store = registry.store
        self._requeue = requeue
        """Hand a claim back to the PV controller (its volume exists, or a retry is due)."""
        self.fail_provisioning = check_fraction(config.fail_provisioning)
        if not config.provisioning_delay >= 0:
            raise SimSettingsError("the provisioning delay must not be negative")
        self.provisioning_delay = config.provisioning_delay
        self._rng = random.Random(config.seed)
        self._attempts: dict[Key, asyncio.TimerHandle] = {}
        self._running = False
        self.provisioned = 0
        """Volumes created so far."""
        self.failed = 0
        """Provisioning attempts failed on purpose so far."""

    # -- knobs (``/sim/volumes`` on the admin endpoint) ----------------------------------

    def to_json(self) -> Obj:
        return {
            "failProvisioning": self.fail_provisioning,
            "provisioningDelay": self.provisioning_delay,
            "provisioned": self.provisioned,
            "failed": self.failed,
        }

    def configure(self, body: Any) -> None:
        """Replace the knobs named in ``body`` (``failProvisioning``, ``provisioningDelay``)."""
        if not isinstance(body, dict):
            raise bad_request("volume fault configuration must be a JSON object")
        try:
            fraction = float(body.get("failProvisioning", self.fail_provisioning))
            delay = float(body.get("provisioningDelay", self.provisioning_delay))
            check_fraction(fraction)
            if not delay >= 0:
                raise SimSettingsError(f"the provisioning delay must not be negative, not {delay}")
        except (TypeError, ValueError) as exc:
            raise bad_request(f"invalid volume fault configuration: {exc}") from None
        self.fail_provisioning, self.provisioning_delay = fraction, delay

    # -- attempts ------------------------------------------------------------------------

    def start(self) -> None:
        self._running = True

    def stop(self) -> None:
        self._running = False
        for handle in self._attempts.values():
            handle.cancel()
        self._attempts.clear()

    def busy(self, key: Key) -> bool:
        """Is an attempt (or a retry) under way for the claim ``key``?"""
        return key in self._attempts

    def provision(self, claim: Obj, sc: Obj, node: str) -> None:
        """Start an attempt for ``claim`` of class ``sc`` on ``node`` ("": anywhere)."""
        key = claim_key(claim)
        if key in self._attempts:
            return
        self._record(
            claim,
            kind="Normal",
            reason="Provisioning",
            message=f'External provisioner is provisioning volume for claim "{key[0]}/{key[1]}"',
            source=str(sc.get("provisioner")),
        )
        uid = str(meta(claim).get("uid"))
        loop = asyncio.get_running_loop()
        self._attempts[key] = loop.call_later(self.provisioning_delay, self._finish, key, uid, node)

    def _record(self, claim: Obj, *, kind: str, reason: str, message: str, source: str) -> None:
        record_event(self.registry, claim, kind=kind, reason=reason, message=message, source=source)

    def _finish(self, key: Key, uid: str, node: str) -> None:
        self._attempts.pop(key, None)
        if not self._running:
            return
        claim = self.store.get(CLAIMS, key)
        if claim is None or meta(claim).get("uid") != uid or get_path(claim, "spec", "volumeName"):
            return
        if str(vm.annotations_of(claim).get(vm.SELECTED_NODE) or "") != node:
            return  # the choice changed while we worked: the claim's next sync starts again
        sc = self.store.get(STORAGE_CLASSES.table, ("", vm.class_of(claim)))
        if sc is None:
            return
        name = f"pvc-{uid}"
        if self.store.get(VOLUMES, ("", name)) is not None:
            self._requeue(key)  # provisioned before: never twice
            return
        affinity, why = self._affinity(sc, node)
        if why is None and self.fail_provisioning and self._rng.random() < self.fail_provisioning:
            self.failed += 1
            why = INJECTED
        if why is not None:
            self._failed(claim, sc, node, why)
            return
        self.registry.create_object(self._new_volume(claim, sc, name, affinity))
        self.provisioned += 1
        self._record(
            claim,
            kind="Normal",
            reason="ProvisioningSucceeded",
            message=f"Successfully provisioned volume {name}",
            source=str(sc.get("provisioner")),
        )

    def _affinity(self, sc: Obj, node: str) -> tuple[Obj | None, str | None]:
        """The new volume's node affinity, or why there can be no volume for ``node``."""
        allowed = sc.get("allowedTopologies")
        if not node:
            return vm.allowed_everywhere(allowed), None
        found = self.store.get(NODES.table, ("", node))
        if found is None:
            return None, f'failed to get target node: nodes "{node}" not found'
        affinity = vm.topology(found, allowed)
        if affinity is None:
            return None, f"node {node} is outside the StorageClass's allowedTopologies"
        return affinity, None

    def _failed(self, claim: Obj, sc: Obj, node: str, why: str) -> None:
        self._record(
            claim,
            kind="Warning",
            reason="ProvisioningFailed",
            message=f'failed to provision volume with StorageClass "{meta(sc)["name"]}": {why}',
            source=str(sc.get("provisioner")),
        )
        key = (str(meta(claim).get("namespace")), str(meta(claim)["name"]))
        if node:
            notes = {k: v for k, v in vm.annotations_of(claim).items() if k != vm.SELECTED_NODE}
            self.store.commit(CLAIMS, key, with_meta(claim, annotations=notes))
        else:
            uid = str(meta(claim).get("uid"))
            loop = asyncio.get_running_loop()
            self._attempts[key] = loop.call_later(
                max(self.provisioning_delay, RETRY_DELAY), self._retry, key, uid
            )

    def _retry(self, key: Key, uid: str) -> None:
        self._attempts.pop(key, None)
        claim = self.store.get(CLAIMS, key)
        if self._running and claim is not None and meta(claim).get("uid") == uid:
            self._requeue(key)

    def _new_volume(self, claim: Obj, sc: Obj, name: str, affinity: Obj | None) -> Obj:
        m = meta(claim)
        provisioner = str(sc.get("provisioner"))
        spec: Obj = {
            "capacity": {"storage": get_path(claim, "spec", "resources", "requests", "storage")},
            "accessModes": list(get_path(claim, "spec", "accessModes") or []),
            "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
            "storageClassName": vm.class_of(claim),
            "volumeMode": get_path(claim, "spec", "volumeMode") or "Filesystem",
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": m.get("namespace"),
                "name": m["name"],
                "uid": m.get("uid"),
                "apiVersion": "v1",
                "resourceVersion": m.get("resourceVersion"),
            },
            "csi": {"driver": provisioner, "volumeHandle": f"sim-{m.get('uid')}"},
        }
        if sc.get("mountOptions"):
            spec["mountOptions"] = list(sc["mountOptions"])
        if affinity is not None:
            spec["nodeAffinity"] = affinity
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {vm.PROVISIONED_BY: provisioner}},
            "spec": spec,
        }
