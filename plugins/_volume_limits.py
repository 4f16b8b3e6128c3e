"""NodeVolumeLimits' Filter: a private helper of ``predicates`` (kube-scheduler's CSI
``nodevolumelimits``).

A node's limits are its CSINode's ``spec.drivers[].allocatable.count``, per driver; a node
without a CSINode, or a driver without a count, has no limit. The volumes a pod attaches are
keyed ``<driver>/<handle>`` so that a volume used by several pods counts once:

* a claim that names an existing volume: the volume's CSI driver and handle; an in-tree
  AWS EBS, GCE PD, Azure Disk, Cinder or Portworx volume counts under its CSI driver, as
  migration translates it; other in-tree volumes do not count;
* a claim without a volume (or naming one that does not exist): its class's provisioner (an
  in-tree one under its CSI driver) and a handle made of the claim's name; a claim without a
  class, or whose class is missing, does not count;
* an in-tree disk written in the pod itself (EBS, GCE PD, Azure Disk, Cinder, Portworx): as
  migrated.

An in-tree volume (or an in-tree provisioner's claim) counts on a node only where migration
is on: the node's CSINode lists the in-tree plugin (``kubernetes.io/aws-ebs``...) in its
``storage.alpha.kubernetes.io/migrated-plugins`` annotation, as kube-scheduler's
``isCSIMigrationOn`` reads it (the kubelet writes it); elsewhere it is not counted.

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

MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
"""The CSINode annotation listing the in-tree plugins migrated to CSI on that node."""

IN_TREE_PLUGINS = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "pxd.portworx.com"),
}
"""Volume source -> (in-tree plugin, CSI driver) of the sources kube-scheduler 1.35 counts
as migrated (Portworx's migration is GA since 1.33)."""

IN_TREE_TO_CSI = dict(IN_TREE_PLUGINS.values())
"""In-tree provisioners whose volumes count under a CSI driver (CSI migration)."""

Attach = tuple[str, str]
"""(CSI driver, in-tree plugin it was migrated from or "") of one attached volume."""


def _migrated(kind: str, source: ObjView, labels: Mapping[str, Any]) -> tuple[str, str] | None:
    """(driver, handle) of an in-tree volume as CSI migration names it, or None."""
    found = IN_TREE_PLUGINS.get(kind)
    if found is None:
        return None
    driver = found[1]
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


def _volume_handle(volume: ObjView) -> tuple[str, str, str] | None:
    """(driver, handle, in-tree plugin or "") of a volume, or None when it does not count."""
    spec = spec_of(volume)
    csi = spec.get("csi")
    if isinstance(csi, Mapping):
        return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or ""), ""
    labels = meta(volume).get("labels") or {}
    for kind, (plugin, _) in IN_TREE_PLUGINS.items():
        source = spec.get(kind)
        if isinstance(source, Mapping):
            found = _migrated(kind, source, labels)
            return None if found is None else (*found, plugin)
    return None


def _from_class(claim: ObjView, key: str, storage: StorageObjects) -> tuple[str, str, str] | None:
    cls = class_of(claim)
    sc = storage.classes.get(cls) if cls else None
    if sc is None:
        return None
    provisioner = str(sc.get("provisioner") or "")
    driver = IN_TREE_TO_CSI.get(provisioner)
    handle = f"{HANDLE_PREFIX}-{key}"
    return (provisioner, handle, "") if driver is None else (driver, handle, provisioner)


def attached_volumes(pv: PodVolumes, storage: StorageObjects, new: bool) -> dict[str, Attach] | str:
    """``<driver>/<handle>`` -> (driver, in-tree plugin or "") of the volumes the pod attaches;
    for the pod being placed (``new``) a string says why they cannot be known (see the module
    docstring)."""
    out: dict[str, Attach] = {}
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
            out[f"{found[0]}/{found[1]}"] = (found[0], found[2])
    for kind, source in pv.disks:
        migrated = _migrated(kind, source, {})
        if migrated is not None:
            out[f"{migrated[0]}/{migrated[1]}"] = (migrated[0], IN_TREE_PLUGINS[kind][0])
    return out


def migrated_plugins(storage: StorageObjects, node: str) -> frozenset[str]:
    """The in-tree plugins migrated to CSI on ``node`` (its CSINode's annotation)."""
    notes = meta(storage.csinodes.get(node) or {}).get("annotations") or {}
    listed = str(notes.get(MIGRATED_PLUGINS) or "")
    return frozenset(p for p in listed.split(",") if p)


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
        self._of: dict[str, dict[str, Attach]] = {}
        self._limits: dict[str, tuple[dict[str, int], frozenset[str]]] = {}

    def limits(self, node: str) -> tuple[dict[str, int], frozenset[str]]:
        """The node's attach limits per driver, and its migrated in-tree plugins."""
        found = self._limits.get(node)
        if found is None:
            found = self._limits[node] = (
                node_limits(self.storage, node),
                migrated_plugins(self.storage, node),
            )
        return found

    def _attached_by(self, uid: str, pv: PodVolumes) -> dict[str, Attach]:
        found = self._of.get(uid)
        if found is None:
            answer = attached_volumes(pv, self.storage, new=False)
            found = self._of[uid] = answer if isinstance(answer, dict) else {}
        return found

    def exceeds(self, new: dict[str, Attach], node: NodeInfo, uid: str) -> bool:
        """Would the pod's ``new`` volumes take a driver of ``node`` over its limit?"""
        if not new:
            return False
        limits, migrated = self.limits(node.name)

        def counted(volumes: dict[str, Attach]) -> dict[str, str]:
            return {
                name: driver
                for name, (driver, plugin) in volumes.items()
                if not plugin or plugin in migrated
            }

        mine = counted(new)
        if not limits or not any(driver in limits for driver in mine.values()):
            return False
        attached: dict[str, str] = {}
        for other, pv in self.placed.on(node, exclude=uid):
            attached.update(counted(self._attached_by(other, pv)))
        wanted: dict[str, int] = {}
        for name, driver in mine.items():
            if name not in attached:
                wanted[driver] = wanted.get(driver, 0) + 1
        in_use: dict[str, int] = {}
        for driver in attached.values():
            in_use[driver] = in_use.get(driver, 0) + 1
        return any(
            driver in limits and in_use.get(driver, 0) + count > limits[driver]
            for driver, count in wanted.items()
        )
