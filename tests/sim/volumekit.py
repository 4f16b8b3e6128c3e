"""Builders for claims, volumes and storage classes, and readers of what the sim did to them."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

CLAIMS = "/persistentvolumeclaims"
VOLUMES = "/persistentvolumes"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def claim(
    name: str,
    size: str = "1Gi",
    cls: str | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    namespace: str = "default",
    **spec: Any,
) -> Obj:
    body: Obj = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
        **spec,
    }
    if cls is not None:
        body["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def volume(
    name: str,
    size: str = "1Gi",
    cls: str = "",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    body: Obj = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "hostPath": {"path": f"/data/{name}"},
        **spec,
    }
    if cls:
        body["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": body,
    }


def storage_class(
    name: str, provisioner: str = "csi.example.com", mode: str = "Immediate", **extra: Any
) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def stored_claim(sim: Any, name: str, namespace: str = "default") -> Obj:
    found = sim.store.get(CLAIMS, (namespace, name))
    assert found is not None, f"no claim {namespace}/{name}"
    return dict(found)


def stored_volume(sim: Any, name: str) -> Obj | None:
    found = sim.store.get(VOLUMES, ("", name))
    return None if found is None else dict(found)


def bound_to(sim: Any, name: str, namespace: str = "default") -> str | None:
    """The volume a claim is fully bound to (volumeName and bind-completed), else None."""
    found = sim.store.get(CLAIMS, (namespace, name))
    if found is None:
        return None
    annotations = found["metadata"].get("annotations") or {}
    if "pv.kubernetes.io/bind-completed" not in annotations:
        return None
    return (found.get("spec") or {}).get("volumeName") or None


def claim_events(sim: Any, name: str, reason: str | None = None) -> list[Obj]:
    return [
        e
        for e in sim.store.table("/events").values()
        if e["involvedObject"].get("kind") == "PersistentVolumeClaim"
        and e["involvedObject"].get("name") == name
        and (reason is None or e.get("reason") == reason)
    ]
