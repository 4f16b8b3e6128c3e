"""What the simulated volume controllers read off claims, volumes, classes and nodes.

The vocabulary of volume binding (when a claim is bound, what a claim's class is, whether a
volume fits a claim) is ``pumice.model.volumes``, shared with the scheduler's volume filters and
re-exported here. ``best_volume`` picks, among available volumes, the smallest that fits a
claim (size, access modes, class, volume mode, label selector), given them smallest first
(``Index.free``); ``topology`` is the node affinity a volume provisioned for a node gets (its
hostname, or the class's ``allowedTopologies`` it satisfies).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from pumice.model.volumes import (
    BETA_CLASS,
    BETA_STORAGE_PROVISIONER,
    BIND_COMPLETED,
    BOUND_BY_CONTROLLER,
    HOSTNAME,
    NO_PROVISIONER,
    PROVISIONED_BY,
    SELECTED_NODE,
    STORAGE_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    amount,
    annotations_of,
    capacity,
    claim_ref_key,
    claims_of,
    class_of,
    fits,
    is_bound,
    refers_to,
    requested,
    selector_matches,
)
from pumice.sim.objects import Key, Obj, get_path, meta

__all__ = [
    "BETA_CLASS",
    "BETA_STORAGE_PROVISIONER",
    "BIND_COMPLETED",
    "BOUND_BY_CONTROLLER",
    "HOSTNAME",
    "NO_PROVISIONER",
    "PROVISIONED_BY",
    "PVC_PROTECTION",
    "SELECTED_NODE",
    "STORAGE_PROVISIONER",
    "TERMINAL",
    "WAIT_FOR_FIRST_CONSUMER",
    "Index",
    "allowed_everywhere",
    "amount",
    "annotations_of",
    "available",
    "best_volume",
    "capacity",
    "claim_ref_key",
    "claims_of",
    "class_of",
    "fits",
    "is_bound",
    "refers_to",
    "requested",
    "selector_matches",
    "topology",
]

PVC_PROTECTION = "kubernetes.io/pvc-protection"
TERMINAL = ("Succeeded", "Failed")


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
