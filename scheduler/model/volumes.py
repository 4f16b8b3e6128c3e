"""The storage objects a session reads, the vocabulary of volume binding over them, and the
pod constraints pumice refuses rather than evaluates (most of them volumes).

Shared by the scheduler's volume filters (``pumice.plugins``), the daemon's pre-bind wait and
the simulated cluster's volume controllers (``pumice.sim``), so that the scheduler and the
controllers it talks to read a claim the same way. Pure functions, no I/O.

* A claim is *bound* ("fully bound", as kube-scheduler counts it) when it has
  ``spec.volumeName`` and the ``pv.kubernetes.io/bind-completed`` annotation.
* A claim's or a volume's class is the beta annotation
  ``volume.beta.kubernetes.io/storage-class`` if present, else ``spec.storageClassName``.
* A class *delays binding* when its ``volumeBindingMode`` is ``WaitForFirstConsumer``; a claim
  without a class, or whose class does not exist, binds at once (kube's
  ``IsDelayBindingMode``).
* ``claims_of(pod)`` names the claims a pod uses: ``persistentVolumeClaim.claimName``, and for
  a generic ephemeral volume the claim ``<pod name>-<volume name>`` that the ephemeral-volume
  controller creates for it.
* A volume *fits* a claim when classes are equal, its capacity is at least the request, its
  access modes include the claim's, the volume modes agree (none is ``Filesystem``), so do
  their ``volumeAttributesClassName`` (none is ""; kube 1.35's VolumeAttributesClass, GA in
  1.34), and the claim's label selector matches the volume's labels.

``StorageObjects`` holds the objects themselves as a session reads them: what the cache's
storage informers hold, as one read-only picture, each kind a mapping from its key to the
object (a plain dict, slimmed by the cache) — claims by ``namespace/name``, the cluster-scoped
kinds by name. The mappings are read-only views and the objects are shared with the cache,
which never changes one in place (an update replaces it); a session must not change them
either. ``served`` says whether the cluster serves the storage APIs at all: without them every
mapping is empty and pods' volumes cannot be evaluated.

**Refuse, never violate**: the scheduling constraints pumice does not evaluate (``refusal``).
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from pumice.model.quantity import QuantityError, parse_quantity
from pumice.plain import Obj, ObjView


def _empty() -> Mapping[str, Obj]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class StorageObjects:
    claims: Mapping[str, Obj] = field(default_factory=_empty)
    """PersistentVolumeClaims by ``namespace/name``."""
    volumes: Mapping[str, Obj] = field(default_factory=_empty)
    """PersistentVolumes by name."""
    classes: Mapping[str, Obj] = field(default_factory=_empty)
    """StorageClasses by name."""
    csinodes: Mapping[str, Obj] = field(default_factory=_empty)
    """CSINodes by name (the node's name)."""
    csidrivers: Mapping[str, Obj] = field(default_factory=_empty)
    """CSIDrivers by name (the driver's name)."""
    served: bool = False
    """Whether the cluster serves the storage APIs (claims and volumes at least)."""

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self.claims.get(f"{namespace}/{name}")


NO_STORAGE = StorageObjects()
"""A cluster without storage APIs (or a snapshot built without them)."""

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HOSTNAME = "kubernetes.io/hostname"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
FILESYSTEM = "Filesystem"
LOST = "Lost"
AVAILABLE = "Available"


@dataclass(frozen=True, slots=True)
class ClaimUse:
    """One volume of a pod that names a claim: the volume's name, the claim's name, and
    whether it is a generic ephemeral volume (its claim made for the pod)."""

    volume: str
    claim: str
    ephemeral: bool = False


def meta(obj: ObjView) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def annotations_of(obj: ObjView) -> Mapping[str, Any]:
    return meta(obj).get("annotations") or {}


def spec_of(obj: ObjView) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def claim_uses(pod: ObjView) -> tuple[ClaimUse, ...]:
    """The pod's volumes that name claims, in spec order (see the module docstring)."""
    out: list[ClaimUse] = []
    pod_name = str(meta(pod).get("name") or "")
    for volume in spec_of(pod).get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        name = str(volume.get("name") or "")
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, Mapping):
            out.append(ClaimUse(name, str(source.get("claimName") or "")))
        elif volume.get("ephemeral") is not None:
            out.append(ClaimUse(name, f"{pod_name}-{name}", ephemeral=True))
    return tuple(out)


def claims_of(pod: ObjView) -> list[str]:
    """The names of the claims a pod uses (named ones, and its ephemeral volumes')."""
    return [use.claim for use in claim_uses(pod)]


def claim_key(claim: ObjView) -> str:
    """``namespace/name`` of a claim (how the cache's store keys it)."""
    m = meta(claim)
    return f"{m.get('namespace') or 'default'}/{m.get('name')}"


def is_bound(claim: ObjView) -> bool:
    """Fully bound, as kube-scheduler counts it: a volume name and bind-completed."""
    return bool(spec_of(claim).get("volumeName")) and BIND_COMPLETED in annotations_of(claim)


def class_of(obj: ObjView) -> str:
    """The StorageClass name of a claim or a volume ("" for none)."""
    beta = annotations_of(obj).get(BETA_CLASS)
    if beta is not None:
        return str(beta)
    return str(spec_of(obj).get("storageClassName") or "")


def selected_node(claim: ObjView) -> str:
    """The node a scheduler chose for provisioning the claim ("" for none)."""
    return str(annotations_of(claim).get(SELECTED_NODE) or "")


def access_modes(obj: ObjView) -> frozenset[str]:
    return frozenset(str(m) for m in spec_of(obj).get("accessModes") or ())


def amount(text: Any) -> Fraction:
    """A storage quantity's value; 0 for none or one that does not parse."""
    if text is None:
        return Fraction(0)
    try:
        return parse_quantity(text)
    except (QuantityError, TypeError, ValueError):
        return Fraction(0)


def requested(claim: ObjView) -> Fraction:
    return amount(((spec_of(claim).get("resources") or {}).get("requests") or {}).get("storage"))


def capacity(volume: ObjView) -> Fraction:
    return amount((spec_of(volume).get("capacity") or {}).get("storage"))


def volume_mode(obj: ObjView) -> str:
    return str(spec_of(obj).get("volumeMode") or FILESYSTEM)


def attributes_class(obj: ObjView) -> str:
    """A claim's or volume's ``spec.volumeAttributesClassName`` ("" when none)."""
    return str(spec_of(obj).get("volumeAttributesClassName") or "")


def claim_ref_key(volume: ObjView) -> tuple[str, str] | None:
    """``(namespace, name)`` of the claim a volume's ``claimRef`` names, or None."""
    ref = spec_of(volume).get("claimRef")
    if not isinstance(ref, Mapping) or not ref.get("name"):
        return None
    return (str(ref.get("namespace") or ""), str(ref["name"]))


def refers_to(volume: ObjView, claim: ObjView) -> bool:
    """The volume's claimRef names this claim (and this claim's uid, when it has one)."""
    ref = spec_of(volume).get("claimRef") or {}
    m = meta(claim)
    if claim_ref_key(volume) != (str(m.get("namespace") or ""), str(m.get("name"))):
        return False
    return not ref.get("uid") or ref.get("uid") == m.get("uid")


def selector_matches(selector: Any, labels: Mapping[str, Any]) -> bool:
    """A ``LabelSelector`` (matchLabels, matchExpressions) against labels; none matches all."""
    if not isinstance(selector, Mapping):
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key"), expr.get("operator")
        values = expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def fits(volume: ObjView, claim: ObjView) -> bool:
    """Could ``claim`` bind ``volume``, leaving aside who else may have it?"""
    return (
        class_of(volume) == class_of(claim)
        and capacity(volume) >= requested(claim)
        and access_modes(claim) <= access_modes(volume)
        and volume_mode(volume) == volume_mode(claim)
        and attributes_class(volume) == attributes_class(claim)
        and selector_matches(spec_of(claim).get("selector"), meta(volume).get("labels") or {})
    )


def is_delay_binding(claim: ObjView, classes: Mapping[str, ObjView]) -> bool | str:
    """Does the claim's class wait for the first consumer? A string is kube's error for a
    class without a binding mode (``VolumeBindingMode not set for StorageClass "x"``)."""
    name = class_of(claim)
    if not name:
        return False
    sc = classes.get(name)
    if sc is None:
        return False
    mode = sc.get("volumeBindingMode")
    if not mode:
        return f'VolumeBindingMode not set for StorageClass "{name}"'
    return bool(mode == WAIT_FOR_FIRST_CONSUMER)


def can_provision(sc: ObjView | None) -> bool:
    """Does the class name a provisioner that may create volumes?"""
    if sc is None:
        return False
    provisioner = str(sc.get("provisioner") or "")
    return bool(provisioner) and provisioner != NO_PROVISIONER


def allowed_topology_matches(allowed: Any, labels: Mapping[str, Any]) -> bool:
    """Does a node with ``labels`` lie inside a class's ``allowedTopologies`` (none: yes)?
    The terms are ORed, each term's label expressions ANDed (``In`` their values)."""
    if not allowed:
        return True
    for term in allowed:
        expressions = (term or {}).get("matchLabelExpressions") or []
        if all(labels.get(e.get("key")) in (e.get("values") or []) for e in expressions):
            return True
    return False


def node_affinity_terms(volume: ObjView) -> Sequence[Mapping[str, Any]] | None:
    """The ``nodeSelectorTerms`` of a volume's required node affinity (None: anywhere)."""
    affinity = spec_of(volume).get("nodeAffinity")
    if not isinstance(affinity, Mapping):
        return None
    required = affinity.get("required")
    if not isinstance(required, Mapping):
        return None
    return list(required.get("nodeSelectorTerms") or ())


def local_volume_nodes(volume: ObjView) -> frozenset[str] | None:
    """The host names a volume's node affinity names with ``kubernetes.io/hostname In``
    (kube's ``GetLocalPersistentVolumeNodeNames``): per term the intersection of such
    requirements, the union over terms; None when there are none."""
    terms = node_affinity_terms(volume)
    if terms is None:
        return None
    found: set[str] = set()
    for term in terms:
        nodes: set[str] | None = None
        for expr in (term or {}).get("matchExpressions") or ():
            if expr.get("key") == HOSTNAME and expr.get("operator") == "In":
                values = {str(v) for v in expr.get("values") or ()}
                nodes = values if nodes is None else nodes & values
        found |= nodes or set()
    return frozenset(found) if found else None


def owned_by(claim: ObjView, pod: ObjView) -> bool:
    """Is the pod the claim's controller owner (the ephemeral-volume rule)?"""
    pod_uid = meta(pod).get("uid")
    for ref in meta(claim).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid") == pod_uid:
            return ref.get("kind") == "Pod"
    return False


def not_owner_message(claim_name: str, pod: ObjView) -> str:
    namespace = meta(pod).get("namespace") or "default"
    return (
        f"PVC {namespace}/{claim_name} was not created for pod "
        f"{namespace}/{meta(pod).get('name')} (pod is not owner)"
    )


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
        for source, refused in REFUSED_VOLUME_SOURCES.items():
            if volume.get(source) is not None:
                return refused
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
