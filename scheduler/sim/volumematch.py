"""What the simulated volume controllers read off claims, volumes, classes and nodes.

The vocabulary of kube-scheduler's volume binding and of the PV controller, for plain dicts:
a claim is *bound* when it has ``spec.volumeName`` and the ``pv.kubernetes.io/bind-completed``
annotation; a claim's or volume's class is the beta annotation, else ``storageClassName``;
``best_volume`` picks, among available volumes, the smallest that fits a claim (size, access
modes, class, volume mode, label selector), given them smallest first (``Index.free``);
``topology`` is the node affinity a volume
provisioned for a node gets (its hostname, or the class's ``allowedTopologies`` it satisfies).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from pumice.sim import quantities
from pumice.sim.objects import Key, Obj, get_path, meta

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


PVC_PROTECTION = "kubernetes.io/pvc-protection"
TERMINAL = ("Succeeded", "Failed")


def claims_of(pod: Obj) -> list[str]:
    """The claims a pod uses: named ones, and its generic ephemeral volumes' (``POD-VOLUME``)."""
    out = []
    for volume in get_path(pod, "spec", "volumes") or []:
        if not isinstance(volume, dict):
            continue
        named = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if named:
            out.append(str(named))
        elif volume.get("ephemeral") is not None:
            out.append(f"{meta(pod).get('name')}-{volume.get('name')}")
    return out


def annotations_of(obj: Obj) -> dict[str, Any]:
    return meta(obj).get("annotations") or {}


def is_bound(claim: Obj) -> bool:
    """Fully bound, as kube-scheduler counts it: a volume name and bind-completed."""
    return bool(get_path(claim, "spec", "volumeName")) and BIND_COMPLETED in annotations_of(claim)


def class_of(obj: Obj) -> str:
    """The StorageClass name of a claim or a volume ("" for none)."""
    beta = annotations_of(obj).get(BETA_CLASS)
    if beta is not None:
        return str(beta)
    return str(get_path(obj, "spec", "storageClassName") or "")


def amount(text: Any) -> Fraction:
    try:
        return quantities.decode(text)[0]
    except (quantities.BadQuantity, TypeError, ValueError):
        return Fraction(0)


def requested(claim: Obj) -> Fraction:
    return amount(get_path(claim, "spec", "resources", "requests", "storage"))


def capacity(volume: Obj) -> Fraction:
    return amount(get_path(volume, "spec", "capacity", "storage"))


def claim_ref_key(volume: Obj) -> Key | None:
    ref = get_path(volume, "spec", "claimRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        return None
    return (str(ref.get("namespace") or ""), str(ref["name"]))


def refers_to(volume: Obj, claim: Obj) -> bool:
    """The volume's claimRef names this claim (and this claim's uid, when it has one)."""
    ref = get_path(volume, "spec", "claimRef") or {}
    m = meta(claim)
    if claim_ref_key(volume) != (str(m.get("namespace") or ""), str(m.get("name"))):
        return False
    return not ref.get("uid") or ref.get("uid") == m.get("uid")


def selector_matches(selector: Any, labels: dict[str, Any]) -> bool:
    """A ``LabelSelector`` (matchLabels, matchExpressions) against labels; none matches all."""
    if not isinstance(selector, dict):
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


def fits(volume: Obj, claim: Obj) -> bool:
    """Could ``claim`` bind ``volume``, leaving aside who else may have it?"""
    spec = volume.get("spec") or {}
    wanted = set(get_path(claim, "spec", "accessModes") or [])
    return (
        class_of(volume) == class_of(claim)
        and capacity(volume) >= requested(claim)
        and wanted <= set(spec.get("accessModes") or [])
        and (spec.get("volumeMode") or "Filesystem")
        == (get_path(claim, "spec", "volumeMode") or "Filesystem")
        and selector_matches(get_path(claim, "spec", "selector"), meta(volume).get("labels") or {})
    )


def available(volume: Obj) -> bool:
    return (
        not get_path(volume, "spec", "claimRef")
        and not meta(volume).get("deletionTimestamp")
        and get_path(volume, "status", "phase") in (None, "", "Pending", "Available")
    )


def best_volume(volumes: Iterable[Obj], claim: Obj) -> Obj | None:
    """The first available volume that fits ``claim``, of ``volumes`` given smallest first
    (then by name): so the smallest that fits."""
    return next((v for v in volumes if available(v) and fits(v, claim)), None)


def _term(expressions: list[tuple[str, list[str]]]) -> Obj:
    return {
        "matchExpressions": [
            {"key": key, "operator": "In", "values": values} for key, values in expressions
        ]
    }


def topology(node: Obj, allowed: Any) -> Obj | None:
    """The node affinity of a volume provisioned for ``node``: its hostname, or with the
    class's ``allowedTopologies`` the node's values of the keys of the terms it satisfies;
    None when it satisfies none of them."""
    labels = meta(node).get("labels") or {}
    if not allowed:
        hostname = str(labels.get(HOSTNAME) or meta(node).get("name"))
        return {"required": {"nodeSelectorTerms": [_term([(HOSTNAME, [hostname])])]}}
    for term in allowed:
        expressions = (term or {}).get("matchLabelExpressions") or []
        if all(labels.get(e.get("key")) in (e.get("values") or []) for e in expressions):
            pinned = [(str(e["key"]), [str(labels[e["key"]])]) for e in expressions]
            return {"required": {"nodeSelectorTerms": [_term(pinned)]}}
    return None


def allowed_everywhere(allowed: Any) -> Obj | None:
    """The node affinity of a volume provisioned for no particular node (Immediate):
    the class's ``allowedTopologies`` as node selector terms, or None (anywhere)."""
    if not allowed:
        return None
    terms = [
        _term([(str(e["key"]), list(e.get("values") or [])) for e in t["matchLabelExpressions"]])
        for t in allowed
        if isinstance(t, dict) and t.get("matchLabelExpressions")
    ]
    return {"required": {"nodeSelectorTerms": terms}} if terms else None


class Index:
    """Who names whom, kept current from store changes so a sync never scans a table.

    ``prebound``: claim key -> the volume whose claimRef names it; ``claim_of``: volume name ->
    the claim whose ``volumeName`` names it; ``unbound``: claims not fully bound; ``free``:
    class -> (capacity, name) of the available volumes of that class, smallest first.
    """

    def __init__(self) -> None:
        self.prebound: dict[Key, str] = {}
        self._ref_of: dict[str, Key] = {}
        self.claim_of: dict[str, Key] = {}
        self._volume_of: dict[Key, str] = {}
        self.unbound: set[Key] = set()
        self.free: dict[str, list[tuple[Fraction, str]]] = {}
        self._free_at: dict[str, tuple[str, Fraction]] = {}

    def volume(self, name: str, volume: Obj | None) -> None:
        """``volume`` is the new state of the volume ``name`` (None: deleted)."""
        old = self._ref_of.pop(name, None)
        if old is not None and self.prebound.get(old) == name:
            del self.prebound[old]
        was = self._free_at.pop(name, None)
        if was is not None:
            self.free[was[0]].remove((was[1], name))
        if volume is None:
            return
        ref = claim_ref_key(volume)
        if ref is not None:
            self._ref_of[name] = ref
            self.prebound[ref] = name
        if available(volume):
            cls, size = class_of(volume), capacity(volume)
            self._free_at[name] = (cls, size)
            bisect.insort(self.free.setdefault(cls, []), (size, name))

    def claim(self, key: Key, claim: Obj | None) -> None:
        """``claim`` is the new state of the claim ``key`` (None: deleted)."""
        old = self._volume_of.pop(key, None)
        if old is not None and self.claim_of.get(old) == key:
            del self.claim_of[old]
        self.unbound.discard(key)
        if claim is None:
            return
        name = get_path(claim, "spec", "volumeName")
        if name:
            self._volume_of[key] = str(name)
            self.claim_of[str(name)] = key
        if not is_bound(claim):
            self.unbound.add(key)
