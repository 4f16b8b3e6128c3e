"""The volume writes kube-scheduler's volume binder makes before a pod is bound.

* ``claim_volume``: a PersistentVolume's ``spec.claimRef`` names the claim (its full object
  reference) and the volume gets ``pv.kubernetes.io/bound-by-controller: "yes"``; the PV
  controller then completes the binding.
* ``select_node``: the claim's ``volume.kubernetes.io/selected-node`` annotation; the
  provisioner then creates a volume the node can reach, and the PV controller binds it.

Both are JSON merge patches that carry the object's ``metadata.resourceVersion`` as it was
when the decision was made: the API server refuses the write (409) if the object changed since,
as kube-scheduler's PUT of its cached copy is refused. Errors are ``KubeError``s (the caller
forgets the decision and tries the pod again later).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice.kube.client import MERGE_PATCH, Kube
from pumice.kube.resources import PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES
from pumice.plain import ObjView

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


def _meta(obj: ObjView) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def claim_reference(claim: ObjView) -> dict[str, Any]:
    """The claim's ObjectReference, as a volume's ``claimRef`` holds it."""
    m = _meta(claim)
    ref = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": m.get("namespace") or "default",
        "name": m.get("name"),
    }
    for key in ("uid", "resourceVersion"):
        if m.get(key):
            ref[key] = m[key]
    return ref


async def claim_volume(kube: Kube, *, volume: ObjView, claim: ObjView) -> None:
    """Pre-bind ``volume`` to ``claim`` (kube's static binding)."""
    m = _meta(volume)
    metadata: dict[str, Any] = {"annotations": {BOUND_BY_CONTROLLER: "yes"}}
    if m.get("resourceVersion"):
        metadata["resourceVersion"] = m["resourceVersion"]
    body = {"metadata": metadata, "spec": {"claimRef": claim_reference(claim)}}
    await kube.request(
        "PATCH", PERSISTENTVOLUMES.path("", str(m.get("name"))), body=body, content_type=MERGE_PATCH
    )


async def select_node(kube: Kube, claim: ObjView, node: str) -> None:
    """Ask for ``claim`` to be provisioned where ``node`` can reach it."""
    m = _meta(claim)
    metadata: dict[str, Any] = {"annotations": {SELECTED_NODE: node}}
    if m.get("resourceVersion"):
        metadata["resourceVersion"] = m["resourceVersion"]
    path = PERSISTENTVOLUMECLAIMS.path(str(m.get("namespace") or "default"), str(m.get("name")))
    await kube.request("PATCH", path, body={"metadata": metadata}, content_type=MERGE_PATCH)
