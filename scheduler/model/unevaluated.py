"""Refuse, never violate: the scheduling constraints pumice does not evaluate.

A pod that carries one of these stays pending; it is never placed as if the constraint were not
there. The daemon's cache keeps such a pod out of every session with the reason below (it is
reported as the ``PodScheduled=False`` / ``Unschedulable`` condition and a ``FailedScheduling``
event), and ``pumice simulate`` lists it under ``unschedulable`` with the same words.

Refused, field by field (the first one a pod carries names the reason):

* ``spec.resourceClaims`` — dynamic resource allocation (DRA): pumice allocates no devices;
* on a cluster that serves no storage APIs (PersistentVolumeClaims and PersistentVolumes),
  ``spec.volumes[].persistentVolumeClaim`` and ``spec.volumes[].ephemeral`` (a generic
  ephemeral volume is a claim made for the pod): without the claims pumice cannot evaluate
  them. Where the cluster serves them they are evaluated as kube-scheduler does
  (``pumice.plugins._volumes``).

In-tree disks (``gcePersistentDisk``, ``awsElasticBlockStore``, ``rbd``, ``iscsi``,
``azureDisk``, ``cinder``, ``portworxVolume``) are evaluated (disk conflicts, attach limits)
and never refused.
Volumes of other kinds (``emptyDir``, ``configMap``, ``secret``, ``hostPath``, ``projected``...)
do not constrain where a pod may run and are not refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESOURCE_CLAIMS = "spec.resourceClaims"
PVC_VOLUME = "spec.volumes[].persistentVolumeClaim"
EPHEMERAL_VOLUME = "spec.volumes[].ephemeral"

REFUSED_VOLUME_SOURCES = {"persistentVolumeClaim": PVC_VOLUME, "ephemeral": EPHEMERAL_VOLUME}
"""Volume source key -> the field named in the refusal, where no storage APIs are served."""

IN_TREE_DISK_SOURCES = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "rbd",
    "iscsi",
    "azureDisk",
    "cinder",
    "portworxVolume",
)
"""In-tree volume sources that attach a disk to the node: they constrain placement."""

CONSTRAINING_VOLUME_SOURCES = (*REFUSED_VOLUME_SOURCES, *IN_TREE_DISK_SOURCES)


def refusal_message(field: str) -> str:
    """The reason a pod carrying ``field`` gets: condition message, event note, simulate."""
    return f"pumice does not evaluate {field}; the pod stays pending"


def unevaluated_field(pod: Mapping[str, Any], storage: bool = False) -> str | None:
    """The first field of ``pod`` that pumice refuses (see the module docstring), or None;
    ``storage``: the cluster serves the storage APIs (claims are then evaluated)."""
    spec = pod.get("spec") or {}
    if spec.get("resourceClaims"):
        return RESOURCE_CLAIMS
    if storage:
        return None
    for volume in spec.get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        for source, field in REFUSED_VOLUME_SOURCES.items():
            if volume.get(source) is not None:
                return field
    return None


def refusal(pod: Mapping[str, Any], storage: bool = False) -> str | None:
    """The refusal message for ``pod``, or None when pumice evaluates all it asks for."""
    field = unevaluated_field(pod, storage)
    return None if field is None else refusal_message(field)


def constraining_volumes(volumes: Any) -> list[Any] | None:
    """The volumes of a pod spec that constrain scheduling (claims, ephemeral volumes, in-tree
    disks), or None when there are none: what a slimmed pod keeps of ``spec.volumes``."""
    if not isinstance(volumes, list):
        return None
    kept = [
        v
        for v in volumes
        if isinstance(v, Mapping) and any(v.get(s) is not None for s in CONSTRAINING_VOLUME_SOURCES)
    ]
    return kept or None
