"""What the server checks and defaults on claims, volumes, storage classes and CSI objects.

``problems(rtype, obj, old)`` gives the 422 problems the real server's validation reports for
a PersistentVolumeClaim, PersistentVolume, StorageClass or CSINode (``old`` on updates, for
the fields that may not change), in its wording; ``Checks`` in ``pumice.sim.validation`` calls
it after decoding. ``defaults(rtype, obj)`` fills in what decoding defaults on a create
(volume mode, reclaim policies, binding mode, the CSIDriver flags) and the phase a new claim
or volume starts in (``Pending``, until the volume controllers of ``pumice.sim.volumes`` act);
a claim gets the ``kubernetes.io/pvc-protection`` finalizer; ``with_default_class`` is the
DefaultStorageClass admission plugin.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from pumice.sim import quantities
from pumice.sim.objects import Obj
from pumice.sim.resources import (
    CSI_DRIVERS,
    CSI_NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    ResourceType,
)
from pumice.sim.schemas import VOLUME_SOURCES

Problem = tuple[str, str, str]

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
PV_RECLAIM = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
CLAIM_SPEC_FORBIDDEN = (
    "Forbidden: spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)


def _unsupported(field: str, value: Any, allowed: tuple[str, ...]) -> Problem:
    shown = ", ".join(f'"{v}"' for v in allowed)
    return (
        field,
        "FieldValueNotSupported",
        f"Unsupported value: {orjson.dumps(value).decode()}: supported values: {shown}",
    )


def _required(field: str, detail: str = "") -> Problem:
    return (field, "FieldValueRequired", "Required value" + (f": {detail}" if detail else ""))


def _forbidden(field: str, detail: str) -> Problem:
    return (field, "FieldValueForbidden", f"Forbidden: {detail}")


def _access_modes(modes: Any, field: str, required_detail: str) -> list[Problem]:
    if not modes:
        return [_required(field, required_detail)]
    out = [_unsupported(field, m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        out.append(_forbidden(field, "may not use ReadWriteOncePod with other access modes"))
    return out


def _storage_amount(amounts: Any, field: str, missing: Problem) -> list[Problem]:
    if not isinstance(amounts, dict) or "storage" not in amounts:
        return [missing]
    text = amounts["storage"]
    if quantities.decode(text)[0] <= 0:
        return [
            (
                f"{field}[storage]",
                "FieldValueInvalid",
                f'Invalid value: "{text}": must be greater than zero',
            )
        ]
    return []


def _claim(obj: Obj, old: Obj | None) -> list[Problem]:
    spec = obj.get("spec") or {}
    out = _access_modes(
        spec.get("accessModes"), "spec.accessModes", "at least 1 access mode is required"
    )
    requests = (spec.get("resources") or {}).get("requests")
    out += _storage_amount(requests, "spec.resources", _required("spec.resources[storage]"))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        out.append(_unsupported("spec.volumeMode", mode, VOLUME_MODES))
    if old is not None and "spec" in obj:
        before = dict(old.get("spec") or {})
        after = dict(spec)
        for part in (before, after):
            part.pop("volumeAttributesClassName", None)
            part["resources"] = {
                k: v for k, v in (part.get("resources") or {}).items() if k != "requests"
            }
            part.setdefault("volumeMode", "Filesystem")
        if not before.get("volumeName"):  # the binder sets the volume once
            after.pop("volumeName", None)
            before.pop("volumeName", None)
        if before != after:
            out.append(("spec", "FieldValueForbidden", CLAIM_SPEC_FORBIDDEN))
    return out


def _volume(obj: Obj, old: Obj | None) -> list[Problem]:
    spec = obj.get("spec") or {}
    capacity = spec.get("capacity")
    out: list[Problem] = []
    if not capacity:
        out.append(_required("spec.capacity"))
    else:
        out += _storage_amount(capacity, "spec.capacity", _required("spec.capacity[storage]"))
        out += [
            _unsupported("spec.capacity", name, ("storage",))
            for name in capacity
            if name != "storage"
        ]
    out += _access_modes(spec.get("accessModes"), "spec.accessModes", "")
    sources = [name for name in VOLUME_SOURCES if spec.get(name) is not None]
    if not sources:
        out.append(_required("spec", "must specify a volume type"))
    for extra in sources[1:]:
        out.append(_forbidden(f"spec.{extra}", "may not specify more than 1 volume type"))
    if "local" in sources and not spec.get("nodeAffinity"):
        out.append(_required("spec.nodeAffinity", "Local volume requires node affinity"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy is not None and policy not in PV_RECLAIM:
        out.append(_unsupported("spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        out.append(_unsupported("spec.volumeMode", mode, VOLUME_MODES))
    if old is not None and "spec" in obj:
        before = old.get("spec") or {}
        if any(before.get(name) != spec.get(name) for name in VOLUME_SOURCES):
            out.append(
                _forbidden(
                    "spec.persistentvolumesource",
                    "spec.persistentvolumesource is forbidden.",
                )
            )
    return out


def _class(obj: Obj, old: Obj | None) -> list[Problem]:
    out: list[Problem] = []
    if not obj.get("provisioner"):
        out.append(_required("provisioner"))
    policy = obj.get("reclaimPolicy")
    if policy is not None and policy not in CLASS_RECLAIM:
        out.append(_unsupported("reclaimPolicy", policy, CLASS_RECLAIM))
    mode = obj.get("volumeBindingMode")
    if mode is not None and mode not in BINDING_MODES:
        out.append(_unsupported("volumeBindingMode", mode, BINDING_MODES))
    if old is not None:
        for name in ("parameters", "provisioner", "reclaimPolicy"):
            if name in obj and obj.get(name) != old.get(name):
                out.append(_forbidden(name, f"updates to {name} are forbidden."))
        if mode is not None and mode != old.get("volumeBindingMode"):
            out.append(_forbidden("volumeBindingMode", "field is immutable"))
    return out


def _csi_node(obj: Obj) -> list[Problem]:
    out: list[Problem] = []
    for i, driver in enumerate((obj.get("spec") or {}).get("drivers") or []):
        if not isinstance(driver, dict):
            continue
        at = f"spec.drivers[{i}]"
        if not driver.get("name"):
            out.append(_required(f"{at}.name"))
        if not driver.get("nodeID"):
            out.append(_required(f"{at}.nodeID"))
        count = (driver.get("allocatable") or {}).get("count")
        if isinstance(count, int) and count < 0:
            out.append(
                (
                    f"{at}.allocatable.count",
                    "FieldValueInvalid",
                    f"Invalid value: {count}: must be greater than or equal to 0",
                )
            )
    return out


def problems(rtype: ResourceType, obj: Obj, old: Obj | None = None) -> list[Problem]:
    """The server's validation problems of a storage object (none for other kinds)."""
    if rtype is PERSISTENT_VOLUME_CLAIMS:
        return _claim(obj, old)
    if rtype is PERSISTENT_VOLUMES:
        return _volume(obj, old)
    if rtype is STORAGE_CLASSES:
        return _class(obj, old)
    if rtype is CSI_NODES:
        return _csi_node(obj)
    return []


_CSI_DRIVER_DEFAULTS: dict[str, Any] = {
    "attachRequired": True,
    "podInfoOnMount": False,
    "requiresRepublish": False,
    "storageCapacity": False,
    "seLinuxMount": False,
    "fsGroupPolicy": "ReadWriteOnceWithFSType",
    "volumeLifecycleModes": ["Persistent"],
}


DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
PVC_PROTECTION = "kubernetes.io/pvc-protection"


def with_default_class(claim: Obj, classes: Iterable[Obj]) -> Obj:
    """The DefaultStorageClass admission: a claim that names no class (not even "") gets the
    default one (the newest, if several are marked)."""
    spec = claim.get("spec") or {}
    notes = (claim.get("metadata") or {}).get("annotations") or {}
    if "storageClassName" in spec and spec["storageClassName"] is not None:
        return claim
    if "volume.beta.kubernetes.io/storage-class" in notes:
        return claim
    marked = [
        c
        for c in classes
        if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS) == "true"
    ]
    if not marked:
        return claim
    newest = max(
        marked,
        key=lambda c: (
            str(c["metadata"].get("creationTimestamp") or ""),
            str(c["metadata"]["name"]),
        ),
    )
    return {**claim, "spec": {**spec, "storageClassName": newest["metadata"]["name"]}}


def defaults(rtype: ResourceType, obj: Obj) -> Obj:
    """``obj`` with what the server defaults on a create of a storage kind."""
    if rtype is PERSISTENT_VOLUME_CLAIMS:  # the StorageObjectInUseProtection admission
        finalizers = list((obj.get("metadata") or {}).get("finalizers") or [])
        if PVC_PROTECTION not in finalizers:
            obj = {
                **obj,
                "metadata": {**obj["metadata"], "finalizers": [*finalizers, PVC_PROTECTION]},
            }
    if rtype is PERSISTENT_VOLUME_CLAIMS or rtype is PERSISTENT_VOLUMES:
        spec = {"volumeMode": "Filesystem", **(obj.get("spec") or {})}
        if rtype is PERSISTENT_VOLUMES:
            spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        status = {"phase": "Pending", **(obj.get("status") or {})}
        return {**obj, "spec": spec, "status": status}
    if rtype is STORAGE_CLASSES:
        return {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate", **obj}
    if rtype is CSI_DRIVERS:
        return {**obj, "spec": {**_CSI_DRIVER_DEFAULTS, **(obj.get("spec") or {})}}
    return obj
