"""Server-side printing: the ``meta.k8s.io/v1`` Table that ``kubectl get`` asks for.

kubectl requests ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the
columns the server defines; columns with priority 1 appear only with ``-o wide``. Pods, nodes
and events get the real server's columns, PodGroups and Queues the printer columns of
Volcano's CRDs, claims, volumes, StorageClasses, CSINodes and CSIDrivers the columns kubectl
shows for them; every other resource gets Name and Age.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pumice.sim.objects import BadTime, Obj, get_path, human_age, meta, parse_time
from pumice.sim.resources import (
    CSI_DRIVERS,
    CSI_NODES,
    EVENTS,
    EVENTS_V1,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODGROUPS,
    PODS,
    QUEUES,
    STORAGE_CLASSES,
    ResourceType,
)

Column = tuple[str, str, int]  # name, type, priority


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _age(obj: Obj, now: float) -> str:
    created = meta(obj).get("creationTimestamp")
    if not created:
        return "<unknown>"
    try:
        return human_age(now - parse_time(str(created)))
    except BadTime:
        return "<invalid>"


def _pod_row(pod: Obj, now: float) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for s in statuses if isinstance(s, dict) and s.get("ready"))
    restarts = sum(int(s.get("restartCount", 0)) for s in statuses if isinstance(s, dict))
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for cs in statuses:
        state = cs.get("state") or {} if isinstance(cs, dict) else {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
    if meta(pod).get("deletionTimestamp"):
        reason = "Terminating"
    elif status.get("phase") == "Pending" and spec.get("schedulingGates"):
        reason = "SchedulingGated"
    gates = spec.get("readinessGates") or []
    return [
        meta(pod).get("name", ""),
        f"{ready}/{len(containers)}",
        reason,
        str(restarts),
        _age(pod, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{len(gates)}/{len(gates)}" if gates else "<none>",
    ]


_POD_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("Ready", "string", 0),
    ("Status", "string", 0),
    ("Restarts", "string", 0),
    ("Age", "string", 0),
    ("IP", "string", 1),
    ("Node", "string", 1),
    ("Nominated Node", "string", 1),
    ("Readiness Gates", "string", 1),
]


def _node_row(node: Obj, now: float) -> list[Any]:
    status = node.get("status") or {}
    ready = "Unknown"
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            ready = "Ready" if cond.get("status") == "True" else "NotReady"
    if get_path(node, "spec", "unschedulable"):
        ready += ",SchedulingDisabled"
    labels = meta(node).get("labels") or {}
    roles = sorted(
        k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k
    )
    addresses = {
        a.get("type"): a.get("address")
        for a in status.get("addresses") or []
        if isinstance(a, dict)
    }
    info = status.get("nodeInfo") or {}
    return [
        meta(node).get("name", ""),
        ready,
        ",".join(r for r in roles if r) or "<none>",
        _age(node, now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NODE_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("Status", "string", 0),
    ("Roles", "string", 0),
    ("Age", "string", 0),
    ("Version", "string", 0),
    ("Internal-IP", "string", 1),
    ("External-IP", "string", 1),
    ("OS-Image", "string", 1),
    ("Kernel-Version", "string", 1),
    ("Container-Runtime", "string", 1),
]


def _event_row(ev: Obj, now: float) -> list[Any]:
    # always evaluated on the stored (core v1) form
    seen = ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp")
    last = "<unknown>"
    if seen:
        try:
            last = human_age(now - parse_time(str(seen)))
        except BadTime:
            last = "<invalid>"
    involved = ev.get("involvedObject") or {}
    return [
        last,
        ev.get("type", ""),
        ev.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        ev.get("message", ""),
    ]


_EVENT_COLUMNS: list[Column] = [
    ("Last Seen", "string", 0),
    ("Type", "string", 0),
    ("Reason", "string", 0),
    ("Object", "string", 0),
    ("Message", "string", 0),
]


def _default_row(obj: Obj, now: float) -> list[Any]:
    return [meta(obj).get("name", ""), _age(obj, now)]


_DEFAULT_COLUMNS: list[Column] = [("Name", "string", 0), ("Age", "string", 0)]


# Volcano's CRDs declare these additionalPrinterColumns (missing values print as <none>)
def _podgroup_row(pg: Obj, now: float) -> list[Any]:
    return [
        meta(pg).get("name", ""),
        get_path(pg, "status", "phase"),
        get_path(pg, "spec", "minMember"),
        get_path(pg, "status", "running"),
        _age(pg, now),
        get_path(pg, "spec", "queue"),
    ]


_PODGROUP_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("STATUS", "string", 0),
    ("minMember", "integer", 0),
    ("RUNNINGS", "integer", 0),
    ("AGE", "date", 0),
    ("QUEUE", "string", 1),
]


def _queue_row(queue: Obj, now: float) -> list[Any]:
    return [meta(queue).get("name", ""), get_path(queue, "spec", "parent")]


_QUEUE_COLUMNS: list[Column] = [("Name", "string", 0), ("PARENT", "string", 0)]

# -- volumes: the columns kubectl shows for claims, volumes, classes and CSI objects ----------
_MODE_ABBREVIATIONS = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def _modes(modes: Any) -> str:
    return ",".join(_MODE_ABBREVIATIONS.get(m, str(m)) for m in modes or [])


def _class_of(obj: Obj) -> str:
    beta = (meta(obj).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    return str(beta if beta is not None else get_path(obj, "spec", "storageClassName") or "")


def _claim_row(claim: Obj, now: float) -> list[Any]:
    spec = claim.get("spec") or {}
    status = claim.get("status") or {}
    bound = bool(spec.get("volumeName"))
    return [
        meta(claim).get("name", ""),
        status.get("phase") or "",
        spec.get("volumeName") or "",
        (status.get("capacity") or {}).get("storage", "") if bound else "",
        _modes(status.get("accessModes")) if bound else "",
        _class_of(claim),
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(claim, now),
        spec.get("volumeMode") or "<unset>",
    ]


_CLAIM_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("Status", "string", 0),
    ("Volume", "string", 0),
    ("Capacity", "string", 0),
    ("Access Modes", "string", 0),
    ("StorageClass", "string", 0),
    ("VolumeAttributesClass", "string", 0),
    ("Age", "string", 0),
    ("VolumeMode", "string", 1),
]


def _volume_row(volume: Obj, now: float) -> list[Any]:
    spec = volume.get("spec") or {}
    status = volume.get("status") or {}
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref.get("name") else ""
    return [
        meta(volume).get("name", ""),
        (spec.get("capacity") or {}).get("storage", ""),
        _modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        status.get("phase") or "",
        claim,
        _class_of(volume),
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason") or "",
        _age(volume, now),
        spec.get("volumeMode") or "<unset>",
    ]


_VOLUME_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("Capacity", "string", 0),
    ("Access Modes", "string", 0),
    ("Reclaim Policy", "string", 0),
    ("Status", "string", 0),
    ("Claim", "string", 0),
    ("StorageClass", "string", 0),
    ("VolumeAttributesClass", "string", 0),
    ("Reason", "string", 0),
    ("Age", "string", 0),
    ("VolumeMode", "string", 1),
]


def _storage_class_row(sc: Obj, now: float) -> list[Any]:
    name = str(meta(sc).get("name", ""))
    if (meta(sc).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true":
        name += " (default)"
    return [
        name,
        sc.get("provisioner", ""),
        sc.get("reclaimPolicy") or "Delete",
        sc.get("volumeBindingMode") or "Immediate",
        sc.get("allowVolumeExpansion") is True,
        _age(sc, now),
    ]


_STORAGE_CLASS_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("Provisioner", "string", 0),
    ("ReclaimPolicy", "string", 0),
    ("VolumeBindingMode", "string", 0),
    ("AllowVolumeExpansion", "string", 0),
    ("Age", "string", 0),
]


def _csi_node_row(node: Obj, now: float) -> list[Any]:
    drivers = get_path(node, "spec", "drivers") or []
    return [meta(node).get("name", ""), len(drivers), _age(node, now)]


_CSI_NODE_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("Drivers", "integer", 0),
    ("Age", "string", 0),
]


def _csi_driver_row(driver: Obj, now: float) -> list[Any]:
    spec = driver.get("spec") or {}
    tokens = spec.get("tokenRequests") or []
    audiences = ",".join(str(t.get("audience", "")) for t in tokens if isinstance(t, dict))
    return [
        meta(driver).get("name", ""),
        spec.get("attachRequired", True) is True,
        spec.get("podInfoOnMount") is True,
        spec.get("storageCapacity") is True,
        audiences or "<unset>",
        spec.get("requiresRepublish") is True,
        ",".join(spec.get("volumeLifecycleModes") or ["Persistent"]),
        _age(driver, now),
    ]


_CSI_DRIVER_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("AttachRequired", "boolean", 0),
    ("PodInfoOnMount", "boolean", 0),
    ("StorageCapacity", "boolean", 0),
    ("TokenRequests", "string", 0),
    ("RequiresRepublish", "boolean", 0),
    ("Modes", "string", 0),
    ("Age", "string", 0),
]

_PRINTERS: dict[str, tuple[list[Column], Callable[[Obj, float], list[Any]]]] = {
    PODGROUPS.table: (_PODGROUP_COLUMNS, _podgroup_row),
    QUEUES.table: (_QUEUE_COLUMNS, _queue_row),
    PODS.table: (_POD_COLUMNS, _pod_row),
    NODES.table: (_NODE_COLUMNS, _node_row),
    EVENTS.table: (_EVENT_COLUMNS, _event_row),
    PERSISTENT_VOLUME_CLAIMS.table: (_CLAIM_COLUMNS, _claim_row),
    PERSISTENT_VOLUMES.table: (_VOLUME_COLUMNS, _volume_row),
    STORAGE_CLASSES.table: (_STORAGE_CLASS_COLUMNS, _storage_class_row),
    CSI_NODES.table: (_CSI_NODE_COLUMNS, _csi_node_row),
    CSI_DRIVERS.table: (_CSI_DRIVER_COLUMNS, _csi_driver_row),
}


def to_table(rtype: ResourceType, stored: list[Obj], list_meta: Obj, include: str) -> Obj:
    """A Table of ``stored`` objects (in stored form) for ``rtype``.

    ``include`` is the ``includeObject`` parameter: ``Metadata`` (default), ``Object`` or
    ``None``.
    """
    columns, row = _PRINTERS.get(rtype.table, (_DEFAULT_COLUMNS, _default_row))
    now = time.time()
    rows = []
    for obj in stored:
        entry: Obj = {"cells": row(obj, now)}
        if include == "Object":
            entry["object"] = rtype.to_view(obj) if rtype.to_view is not None else obj
        elif include != "None":
            entry["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta(obj),
            }
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {
                "name": name,
                "type": kind,
                "format": "name" if name == "Name" else "",
                "description": name,
                "priority": priority,
            }
            for name, kind, priority in columns
        ],
        "rows": rows,
    }


def is_event_type(rtype: ResourceType) -> bool:
    return rtype is EVENTS or rtype is EVENTS_V1
