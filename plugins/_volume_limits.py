"""NodeVolumeLimits' Filter: a private helper of ``predicates`` (kube-scheduler's CSI
``nodevolumelimits``).

A node's limits are its CSINode's ``spec.drivers[].allocatable.count``, per driver; a node
without a CSINode, or a driver without a count, has no limit. The volumes a pod attaches are
keyed ``<driver>/<handle>`` so that a volume used by several pods counts once:

* a claim that names an existing volume: the volume's CSI driver and handle; an in-tree
  AWS EBS, GCE PD, Azure Disk or Cinder volume counts under its CSI driver, as migration
  translates it; other in-tree volumes do not count;
* a claim without a volume (or naming one that does not exist): its class's provisioner and a
  handle made of the claim's name; a claim without a class, or whose class is missing, does
  not count;
* an in-tree disk written in the pod itself (EBS, GCE PD, Azure Disk, Cinder): as migrated.

For the pod being placed a claim that does not exist is
``looking up PVC NS/NAME: persistentvolumeclaim "NAME" not found`` on every node (kube's
PreFilters normally turn the pod away first); for pods already on the node such a claim is
left out. A node fails when, for a driver with a limit, the volumes already attached there plus
the pod's new ones exceed it: ``node(s) exceed max volume count`` (Unschedulable).
VolumeAttachment objects are not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice import NodeInfo
from pumice.plugins._volume_claims import PodVolumes
from pumice.plugins._volume_restrictions import PlacedVolumes
from pumice.volumes import (
    ObjView,
    StorageObjects,
    class_of,
    meta,
    not_owner_message,
    owned_by,
    spec_of,
)

MAX_VOLUME_COUNT = "node(s) exceed max volume count"

HANDLE_PREFIX = "pumice"
"""What the handle of a volume yet to be provisioned starts with (kube: a random prefix)."""

IN_TREE_TO_CSI = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
}
"""In-tree provisioners whose volumes count under a CSI driver (CSI migration)."""

_SOURCE_DRIVER = {
    "awsElasticBlockStore": "ebs.csi.aws.com",
    "gcePersistentDisk": "pd.csi.storage.gke.io",
    "azureDisk": "disk.csi.azure.com",
    "cinder": "cinder.csi.openstack.org",
}


def _migrated(kind: str, source: ObjView, labels: Mapping[str, Any]) -> tuple[str, str] | None:
    """(driver, handle) of an in-tree volume as CSI migration names it, or None."""
    driver = _SOURCE_DRIVER.get(kind)
    if driver is None:
        return None
    if kind == "awsElasticBlockStore":
        volume_id = str(source.get("volumeID") or "")
        if volume_id.startswith("aws://"):
            volume_id = volume_id.rsplit("/", 1)[-1]
        return driver, volume_id
    if kind == "gcePersistentDisk":
        zone = str(labels.get("topology.kubernetes.io/zone") or "UNSPECIFIED")
        if "__" in zone:
            zone = "UNSPECIFIED"
        return driver, f"projects/UNSPECIFIED/zones/{zone}/disks/{source.get('pdName')}"
    if kind == "azureDisk":
        return driver, str(source.get("diskURI") or "")
    return driver, str(source.get("volumeID") or "")


def _volume_handle(volume: ObjView) -> tuple[str, str] | None:
    spec = spec_of(volume)
    csi = spec.get("csi")
    if isinstance(csi, Mapping):
        return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
    labels = meta(volume).get("labels") or {}
    for kind in _SOURCE_DRIVER:
        source = spec.get(kind)
        if isinstance(source, Mapping):
            return _migrated(kind, source, labels)
    return None


def _from_class(claim: ObjView, key: str, storage: StorageObjects) -> tuple[str, str] | None:
    cls = class_of(claim)
    sc = storage.classes.get(cls) if cls else None
    if sc is None:
        return None
    provisioner = str(sc.get("provisioner") or "")
    return IN_TREE_TO_CSI.get(provisioner, provisioner), f"{HANDLE_PREFIX}-{key}"


def attached_volumes(pv: PodVolumes, storage: StorageObjects, new: bool) -> dict[str, str] | str:
    """``<driver>/<handle>`` -> driver of the volumes the pod attaches; for the pod being
    placed (``new``) a string says why they cannot be known (see the module docstring)."""
    out: dict[str, str] = {}
    for use in pv.uses:
        key = pv.key(use)
        claim = storage.claims.get(key)
        if claim is None:
            if new:
                return f'looking up PVC {key}: persistentvolumeclaim "{use.claim}" not found'
            continue
        if use.ephemeral and not owned_by(claim, pv.pod):
            if new:
                return not_owner_message(use.claim, pv.pod)
            continue
        name = str(spec_of(claim).get("volumeName") or "")
        volume = storage.volumes.get(name) if name else None
        found = _volume_handle(volume) if volume is not None else _from_class(claim, key, storage)
        if found is not None and found[0]:
            out[f"{found[0]}/{found[1]}"] = found[0]
    for kind, source in pv.disks:
        migrated = _migrated(kind, source, {})
        if migrated is not None:
            out[f"{migrated[0]}/{migrated[1]}"] = migrated[0]
    return out


def node_limits(storage: StorageObjects, node: str) -> dict[str, int]:
    """Driver -> attach limit of the node's CSINode (drivers without a count: no limit)."""
    csinode = storage.csinodes.get(node)
    limits: dict[str, int] = {}
    for driver in spec_of(csinode or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            limits[str(driver.get("name"))] = count
    return limits


class VolumeLimits:
    """Attach limits for one session (volumes per pod worked out once per pod)."""

    def __init__(self, storage: StorageObjects, placed: PlacedVolumes) -> None:
        self.storage = storage
        self.placed = placed
        self._of: dict[str, dict[str, str]] = {}
        self._limits: dict[str, dict[str, int]] = {}

    def limits(self, node: str) -> dict[str, int]:
        found = self._limits.get(node)
        if found is None:
            found = self._limits[node] = node_limits(self.storage, node)
        return found

    def _attached_by(self, uid: str, pv: PodVolumes) -> dict[str, str]:
        found = self._of.get(uid)
        if found is None:
            answer = attached_volumes(pv, self.storage, new=False)
            found = self._of[uid] = answer if isinstance(answer, dict) else {}
        return found

    def exceeds(self, new: dict[str, str], node: NodeInfo, uid: str) -> bool:
        """Would the pod's ``new`` volumes take a driver of ``node`` over its limit?"""
        if not new:
            return False
        limits = self.limits(node.name)
        if not limits or not any(driver in limits for driver in new.values()):
            return False
        attached: dict[str, str] = {}
        for other, pv in self.placed.on(node, exclude=uid):
            attached.update(self._attached_by(other, pv))
        wanted: dict[str, int] = {}
        for name, driver in new.items():
            if name not in attached:
                wanted[driver] = wanted.get(driver, 0) + 1
        in_use: dict[str, int] = {}
        for driver in attached.values():
            in_use[driver] = in_use.get(driver, 0) + 1
        return any(
            driver in limits and in_use.get(driver, 0) + count > limits[driver]
            for driver, count in wanted.items()
        )
