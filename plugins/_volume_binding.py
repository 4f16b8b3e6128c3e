"""VolumeBinding's Filter over every node, and the bindings it chooses for a placed pod: a
private helper of ``predicates`` (kube-scheduler's ``FindPodVolumes``).

``VolumeView`` is the session's picture of volumes and claims: the snapshot's, plus what the
session decided for the pods it placed (a volume pre-bound to a claim, a claim's selected
node), so that two claims never get one volume and a claim shared by two pods stays on one
node. ``plan(...)`` answers for every node at once:

1. bound claims, in order, until the first problem: the claim's volume missing →
   ``node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)``; the volume's
   required node affinity (node labels only: ``matchFields`` never match, as kube checks a
   node without a name) not matching → ``node(s) didn't match PersistentVolume's node
   affinity``;
2. unbound claims of a class that waits for the first consumer: one that already carries a
   selected node may go to that node only, to be provisioned there; the others, smallest
   request first, each get the smallest fitting volume the node can reach that no earlier
   claim of the pod took (a volume pre-bound to the claim is taken at once if the node can
   reach it, and otherwise the claim gets none); a claim left without a volume must be
   provisioned: its class names a provisioner other than ``kubernetes.io/no-provisioner`` and
   the node lies inside its ``allowedTopologies``. Otherwise ``node(s) didn't find available
   persistent volumes to bind``.

Every reason is UnschedulableAndUnresolvable; a node may get several (a ``ReasonList``).
CSIStorageCapacity is not read (``node(s) did not have enough free storage`` is never said).
``eligible_nodes`` is VolumeBinding's PreFilterResult: the host names that bound local volumes
pin the pod to; the other nodes get ``node(s) didn't satisfy plugin(s) [VolumeBinding]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import BoolVector, NodeTable, ReasonList, Requirement, Term
from pumice.plugins._k8s_terms import NodeTerms
from pumice.plugins._volume_claims import ClaimStates
from pumice.volumes import (
    AVAILABLE,
    ObjView,
    StorageObjects,
    access_modes,
    attributes_class,
    can_provision,
    capacity,
    claim_ref_key,
    class_of,
    local_volume_nodes,
    meta,
    node_affinity_terms,
    requested,
    selected_node,
    selector_matches,
    spec_of,
    volume_mode,
)

ObjectVector = npt.NDArray[np.object_]

NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
NOT_ELIGIBLE = "node(s) didn't satisfy plugin(s) [VolumeBinding]"

_REASONS = np.empty(8, dtype=object)
for _code in range(8):
    _parts = tuple(
        reason
        for bit, reason in ((1, NODE_CONFLICT), (2, BIND_CONFLICT), (4, PV_NOT_EXIST))
        if _code & bit
    )
    _REASONS[_code] = "" if not _parts else _parts[0] if len(_parts) == 1 else ReasonList(_parts)


def _requirement(raw: Mapping[str, Any]) -> Requirement:
    values = tuple(sorted(str(v) for v in raw.get("values") or ()))
    return (str(raw.get("key") or ""), str(raw.get("operator") or ""), values)


def _field_passes_nameless(raw: Mapping[str, Any]) -> bool:
    """A ``matchFields`` requirement against a node without a name: only ``metadata.name
    NotIn [x]`` (x not empty) passes."""
    values = [str(v) for v in raw.get("values") or ()]
    return (
        raw.get("key") == "metadata.name"
        and raw.get("operator") == "NotIn"
        and len(values) == 1
        and values[0] != ""
    )


@dataclass(slots=True)
class Overlay:
    """What the session decided: one target per key, kept while any placed task needs it."""

    target: str
    tasks: set[str] = field(default_factory=set)


@dataclass(slots=True)
class Decision:
    """The volume writes a placed pod needs: (claim key, volume name or "" to provision)."""

    node: str
    claims: list[tuple[str, str]]


class VolumeView:
    """Volumes and claims as the session sees them (see the module docstring)."""

    def __init__(self, storage: StorageObjects, table: NodeTable) -> None:
        self.storage = storage
        self.table = table
        self.terms = NodeTerms(table)
        self.prebound: dict[str, Overlay] = {}
        """Volume name -> the claim key the session pre-bound it to."""
        self.selected: dict[str, Overlay] = {}
        """Claim key -> the node the session chose to provision it on."""
        self.version = 0
        """Bumped by every change of the two overlays."""
        self._by_class: dict[str, list[ObjView]] | None = None
        self._affinity: dict[str, BoolVector] = {}
        self._topology: dict[str, BoolVector] = {}
        self._names: ObjectVector | None = None

    # -- the session's own decisions ------------------------------------------------------

    def assume(self, uid: str, decision: Decision) -> None:
        for key, volume in decision.claims:
            book, ident, target = (
                (self.prebound, volume, key) if volume else (self.selected, key, decision.node)
            )
            entry = book.get(ident)
            if entry is None:
                entry = book[ident] = Overlay(target)
            entry.tasks.add(uid)
        self.version += 1

    def forget(self, uid: str, decision: Decision) -> None:
        for key, volume in decision.claims:
            book, ident = (self.prebound, volume) if volume else (self.selected, key)
            entry = book.get(ident)
            if entry is not None:
                entry.tasks.discard(uid)
                if not entry.tasks:
                    del book[ident]
        self.version += 1

    def selected_node(self, key: str, claim: ObjView) -> str:
        entry = self.selected.get(key)
        return entry.target if entry is not None else selected_node(claim)

    def refers_to(self, volume: ObjView, key: str, claim: ObjView) -> bool | None:
        """Does the volume's claimRef (the session's, else its own) name this claim? None:
        it names no claim."""
        entry = self.prebound.get(str(meta(volume).get("name")))
        if entry is not None:
            return entry.target == key
        ref = claim_ref_key(volume)
        if ref is None:
            return None
        m = meta(claim)
        if ref != (str(m.get("namespace") or ""), str(m.get("name"))):
            return False
        uid = (spec_of(volume).get("claimRef") or {}).get("uid")
        return not uid or uid == m.get("uid")

    # -- per-node masks -------------------------------------------------------------------

    @property
    def names(self) -> ObjectVector:
        if self._names is None:
            self._names = np.array([n.name for n in self.table.nodes], dtype=object)
        return self._names

    def volumes_of_class(self, cls: str) -> list[ObjView]:
        if self._by_class is None:
            self._by_class = {}
            for volume in self.storage.volumes.values():
                self._by_class.setdefault(class_of(volume), []).append(volume)
        return self._by_class.get(cls, [])

    def affinity(self, volume: ObjView) -> BoolVector:
        """Nodes whose labels meet the volume's required node affinity."""
        name = str(meta(volume).get("name"))
        mask = self._affinity.get(name)
        if mask is None:
            mask = self._affinity[name] = self._node_selector(node_affinity_terms(volume))
        return mask

    def _node_selector(self, raw_terms: Any) -> BoolVector:
        n = len(self.table)
        if raw_terms is None:
            return np.ones(n, dtype=np.bool_)
        anyof = np.zeros(n, dtype=np.bool_)
        for raw in raw_terms:
            raw = raw or {}
            exprs = tuple(sorted(_requirement(r) for r in raw.get("matchExpressions") or ()))
            fields = list(raw.get("matchFields") or ())
            if not all(_field_passes_nameless(f) for f in fields):
                continue
            if not exprs:
                if fields:
                    anyof[:] = True
                continue
            term: Term = (exprs, ())
            anyof |= self.terms.term(term)
        return anyof

    def topology(self, sc: ObjView) -> BoolVector:
        """Nodes inside the class's ``allowedTopologies`` (every node when it has none)."""
        name = str(meta(sc).get("name"))
        mask = self._topology.get(name)
        if mask is None:
            allowed = sc.get("allowedTopologies")
            if not allowed:
                mask = np.ones(len(self.table), dtype=np.bool_)
            else:
                mask = np.zeros(len(self.table), dtype=np.bool_)
                for term in allowed:
                    exprs = tuple(
                        sorted(
                            (
                                str(e.get("key")),
                                "In",
                                tuple(sorted(map(str, e.get("values") or ()))),
                            )
                            for e in (term or {}).get("matchLabelExpressions") or ()
                        )
                    )
                    if exprs:
                        mask |= self.terms.term((exprs, ()))
            self._topology[name] = mask
        return mask

    def provisionable(self, claim: ObjView) -> BoolVector:
        sc = self.storage.classes.get(class_of(claim))
        if sc is None or not can_provision(sc):
            return np.zeros(len(self.table), dtype=np.bool_)
        return self.topology(sc)


@dataclass(slots=True)
class BindingPlan:
    """VolumeBinding's answer for one pod over every node, at one ``VolumeView.version``."""

    version: int
    ok: BoolVector
    reasons: ObjectVector
    delayed: list[tuple[str, ObjectVector | None]]
    """Per delayed claim: the volume it takes on each node ("": provisioned there), or None
    when it carries a selected node (provisioned there)."""


def _candidates(view: VolumeView, key: str, claim: ObjView) -> tuple[list[ObjView], list[ObjView]]:
    """Volumes pre-bound to the claim (by name), and the free ones that fit it, smallest
    first (then by name)."""
    wanted, mode, vac = requested(claim), volume_mode(claim), attributes_class(claim)
    modes, cls = access_modes(claim), class_of(claim)
    selector = spec_of(claim).get("selector")
    pre: list[ObjView] = []
    free: list[tuple[Any, str, ObjView]] = []
    for volume in view.volumes_of_class(cls):
        ref = view.refers_to(volume, key, claim)
        if ref is False:
            continue
        size = capacity(volume)
        if size < wanted or volume_mode(volume) != mode or attributes_class(volume) != vac:
            continue
        if meta(volume).get("deletionTimestamp"):
            continue
        name = str(meta(volume).get("name"))
        if ref:
            pre.append(volume)
            continue
        if (volume.get("status") or {}).get("phase") != AVAILABLE:
            continue
        if not selector_matches(selector, meta(volume).get("labels") or {}):
            continue
        if class_of(volume) != cls or not modes <= access_modes(volume):
            continue
        free.append((size, name, volume))
    pre.sort(key=lambda v: str(meta(v).get("name")))
    free.sort(key=lambda item: (item[0], item[1]))
    return pre, [v for _, _, v in free]


def plan(view: VolumeView, states: ClaimStates) -> BindingPlan:
    """VolumeBinding's Filter for a pod whose claims are ``states``, over every node."""
    n = len(view.table)
    satisfied = np.ones(n, dtype=np.bool_)
    found = np.ones(n, dtype=np.bool_)
    decided = np.zeros(n, dtype=np.bool_)
    for _, claim in states.bound:
        volume = view.storage.volumes.get(str(spec_of(claim).get("volumeName")))
        if volume is None:
            found &= decided
            decided[:] = True
            break
        bad = ~view.affinity(volume) & ~decided
        satisfied &= ~bad
        decided |= bad
    unbound = np.ones(n, dtype=np.bool_)
    delayed: list[tuple[str, ObjectVector | None]] = []
    taken: list[ObjectVector] = []
    matching = []
    for key, claim in states.delayed:
        node = view.selected_node(key, claim)
        if node:
            unbound &= (view.names == node) & view.provisionable(claim)
            delayed.append((key, None))
        else:
            matching.append((key, claim))
    matching.sort(key=lambda kc: requested(kc[1]))
    for key, claim in matching:
        chosen = np.full(n, "", dtype=object)
        pre, free = _candidates(view, key, claim)
        if pre:
            first = pre[0]
            chosen[view.affinity(first)] = str(meta(first).get("name"))
        else:
            left = np.ones(n, dtype=np.bool_)
            for candidate in free:
                name = str(meta(candidate).get("name"))
                mask = view.affinity(candidate) & left
                for other in taken:
                    mask &= other != name
                if mask.any():
                    chosen[mask] = name
                    left &= ~mask
                    if not left.any():
                        break
        taken.append(chosen)
        delayed.append((key, chosen))
        unbound &= (chosen != "") | view.provisionable(claim)
    code = (~satisfied).astype(np.int8) + 2 * (~unbound) + 4 * (~found)
    ok = code == 0
    return BindingPlan(view.version, ok, _REASONS[code], delayed)


def decision(view: VolumeView, result: BindingPlan, row: int) -> Decision:
    """The writes for a pod placed on the node of ``row`` (where ``result.ok``)."""
    claims = [(key, "" if chosen is None else str(chosen[row])) for key, chosen in result.delayed]
    return Decision(str(view.names[row]), claims)


def eligible_nodes(view: VolumeView, states: ClaimStates) -> BoolVector | None:
    """VolumeBinding's PreFilterResult: the nodes named by the host names that every bound
    claim's local volume is pinned to; None when no bound claim pins the pod (or a volume is
    missing)."""
    names: frozenset[str] | None = None
    for _, claim in states.bound:
        volume = view.storage.volumes.get(str(spec_of(claim).get("volumeName")))
        if volume is None:
            return None
        local = local_volume_nodes(volume)
        if local:
            names = local if names is None else names & local
    if names is None:
        return None
    return np.fromiter((n in names for n in view.names), dtype=np.bool_, count=len(view.names))
