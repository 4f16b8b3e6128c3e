"""What a pod's volumes name, and the volume checks that belong to the pod rather than to a
node (kube-scheduler's PreFilter stage of its volume plugins): a private helper of
``predicates``.

``PodVolumes.of(task)`` reads the pod once: its claims (``persistentVolumeClaim`` and generic
ephemeral volumes) and its in-tree disks (``gcePersistentDisk``, ``awsElasticBlockStore``,
``rbd``, ``iscsi``, ``azureDisk``, ``cinder``, ``portworxVolume``).

``pod_reason`` answers, in kube-scheduler's plugin order, the first PreFilter rejection, all of
them UnschedulableAndUnresolvable:

1. VolumeRestrictions: a named claim that does not exist →
   ``persistentvolumeclaim "NAME" not found`` (ephemeral volumes are not looked at here);
2. VolumeBinding (``VolumeBindingEnable``), volume by volume: a missing claim (for an ephemeral
   volume ``waiting for ephemeral volume controller to create the persistentvolumeclaim
   "POD-VOL"``), a claim in phase Lost (``… bound to non-existent persistentvolume "PV"``), one
   being deleted (``… is being deleted``), an ephemeral volume's claim the pod does not own;
   then ``pod has unbound immediate PersistentVolumeClaims`` when a claim is not fully bound
   and binds at once (its class is ``Immediate``, it has none, or it already names a volume);
3. VolumeZone (``VolumeZoneEnable``), named claims only: a claim without a volume whose class
   is missing (``storageclass.storage.k8s.io "SC" not found``), has no binding mode or binds
   ``Immediate`` (``PersistentVolume had no name``), or has no class at all; a claim naming a
   volume that does not exist (``persistentvolume "PV" not found``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice import TaskInfo
from pumice.volumes import (
    IN_TREE_DISK_SOURCES,
    LOST,
    READ_WRITE_ONCE_POD,
    ClaimUse,
    ObjView,
    StorageObjects,
    access_modes,
    claim_uses,
    class_of,
    is_bound,
    is_delay_binding,
    meta,
    not_owner_message,
    owned_by,
    spec_of,
)

IN_TREE_DISKS = IN_TREE_DISK_SOURCES
"""In-tree volume sources that attach a disk to the node (conflicts, attach limits): the
core's list, which keeps a pod that uses one pending where no plugin evaluates them."""

UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def volume_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """A pod's claims and in-tree disks (see the module docstring)."""

    namespace: str
    uses: tuple[ClaimUse, ...]
    disks: tuple[tuple[str, ObjView], ...]
    """(source kind, source) of each in-tree disk volume, in spec order."""
    pod: ObjView = field(compare=False, hash=False)

    @classmethod
    def of(cls, task: TaskInfo) -> PodVolumes:
        pod: ObjView = task.pod or {}
        disks: list[tuple[str, ObjView]] = []
        for volume in spec_of(pod).get("volumes") or ():
            if isinstance(volume, Mapping):
                for kind in IN_TREE_DISKS:
                    source = volume.get(kind)
                    if isinstance(source, Mapping):
                        disks.append((kind, source))
        return cls(task.namespace, claim_uses(pod), tuple(disks), pod)

    @property
    def empty(self) -> bool:
        return not self.uses and not self.disks

    def key(self, use: ClaimUse) -> str:
        return f"{self.namespace}/{use.claim}"

    def claim_keys(self, ephemeral: bool = True) -> list[str]:
        return [self.key(u) for u in self.uses if ephemeral or not u.ephemeral]

    def shape_key(self, uid: str) -> tuple[Any, ...]:
        """What the volume filters' answers for the pod depend on: its claims (and, for an
        ephemeral volume or an in-tree disk, the pod itself)."""
        own = uid if self.disks or any(u.ephemeral for u in self.uses) else None
        return ("volumes", self.namespace, self.uses, own)


@dataclass(slots=True)
class ClaimStates:
    """The pod's claims sorted as VolumeBinding's PreFilter sorts them."""

    bound: list[tuple[str, ObjView]] = field(default_factory=list)
    """(claim key, claim) fully bound."""
    delayed: list[tuple[str, ObjView]] = field(default_factory=list)
    """(claim key, claim) not bound, waiting for the first consumer, naming no volume."""
    immediate: list[tuple[str, ObjView]] = field(default_factory=list)


def rwop_claims(pv: PodVolumes, storage: StorageObjects) -> list[str]:
    """Keys of the pod's named claims with the ReadWriteOncePod access mode."""
    out = []
    for use in pv.uses:
        if use.ephemeral:
            continue
        claim = storage.claims.get(pv.key(use))
        if claim is not None and READ_WRITE_ONCE_POD in access_modes(claim):
            out.append(pv.key(use))
    return out


def restrictions_reason(pv: PodVolumes, storage: StorageObjects) -> str | None:
    for use in pv.uses:
        if not use.ephemeral and pv.key(use) not in storage.claims:
            return not_found(use.claim)
    return None


def binding_reason(pv: PodVolumes, storage: StorageObjects) -> str | None:
    """VolumeBinding's PreFilter rejection of the pod's claims, one by one (kube's
    ``podHasPVCs``), else the unbound-immediate check; None when it passes."""
    for use in pv.uses:
        claim = storage.claims.get(pv.key(use))
        if claim is None:
            if use.ephemeral:
                return (
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{use.claim}"'
                )
            return not_found(use.claim)
        spec = spec_of(claim)
        if (claim.get("status") or {}).get("phase") == LOST:
            return (
                f'persistentvolumeclaim "{use.claim}" bound to non-existent persistentvolume '
                f'"{spec.get("volumeName") or ""}"'
            )
        if meta(claim).get("deletionTimestamp"):
            return f'persistentvolumeclaim "{use.claim}" is being deleted'
        if use.ephemeral and not owned_by(claim, pv.pod):
            return not_owner_message(use.claim, pv.pod)
    states = classify(pv, storage)
    if isinstance(states, str):
        return states
    return UNBOUND_IMMEDIATE if states.immediate else None


def classify(pv: PodVolumes, storage: StorageObjects) -> ClaimStates | str:
    """The pod's claims by state (every claim exists); a string is kube's error for a class
    without a binding mode."""
    states = ClaimStates()
    seen: set[str] = set()
    for use in pv.uses:
        key = pv.key(use)
        claim = storage.claims.get(key)
        if claim is None or key in seen:
            continue
        seen.add(key)
        if is_bound(claim):
            states.bound.append((key, claim))
            continue
        delay = is_delay_binding(claim, storage.classes)
        if isinstance(delay, str):
            return delay
        if delay and not spec_of(claim).get("volumeName"):
            states.delayed.append((key, claim))
        else:
            states.immediate.append((key, claim))
    return states


def zone_reason(pv: PodVolumes, storage: StorageObjects) -> str | None:
    """VolumeZone's PreFilter rejection (see the module docstring); None when it passes."""
    for use in pv.uses:
        if use.ephemeral:
            continue
        if not use.claim:
            return "PersistentVolumeClaim had no name"
        claim = storage.claims.get(pv.key(use))
        if claim is None:
            return not_found(use.claim)
        name = str(spec_of(claim).get("volumeName") or "")
        if not name:
            cls = class_of(claim)
            if not cls:
                return "PersistentVolumeClaim had no pv name and storageClass name"
            sc = storage.classes.get(cls)
            if sc is None:
                return f'storageclass.storage.k8s.io "{cls}" not found'
            mode = sc.get("volumeBindingMode")
            if not mode:
                return f'VolumeBindingMode not set for StorageClass "{cls}"'
            if mode == "WaitForFirstConsumer":
                continue
            return "PersistentVolume had no name"
        if name not in storage.volumes:
            return volume_not_found(name)
    return None
