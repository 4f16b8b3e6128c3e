"""Claims, volumes, StorageClasses, CSINodes and CSIDrivers as the cache keeps them.

One store per kind, fed by its own informer (``handlers`` gives the ``Handler`` of each kind
the cluster serves); objects are kept slimmed to what volume decisions read: a claim's
access modes, request, class, volume name, volume mode and attributes class, selector,
annotations (bind-completed, selected-node) and phase; a volume's capacity, modes, class,
claimRef, node affinity, volume source, labels (zones) and phase; a class's provisioner,
binding mode and allowed topologies; a CSINode's drivers with their limits; a CSIDriver's
spec. ``view()`` is the read-only ``StorageObjects`` sessions get on their snapshot, rebuilt
only after a change.

Like the scheduler's assume caches for volumes and claims, ``assume`` lays the daemon's own
writes (a volume's claimRef, a claim's selected node) over the stores at once, before the API
server confirms them, so the next session never gives one volume to two claims: an assumed
object stands until the informer delivers the object with the write in it (``settled``), the
object goes, or ``forget`` (the write failed or its pod was given up). ``on_change`` is told of
every object an informer delivers (the daemon's wait for a pod's volumes follows it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pumice.cache.groups import object_key
from pumice.cache.handlers import Handler
from pumice.cache.slim import PodSlimmer
from pumice.model.volumes import NO_STORAGE, StorageObjects
from pumice.plain import Obj

KINDS = ("claims", "volumes", "classes", "csinodes", "csidrivers")
"""The stores, in the order the daemon starts their informers."""

_KEPT_META = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "labels",
    "annotations",
    "ownerReferences",
    "deletionTimestamp",
)
_KEPT_CLAIM_SPEC = (
    "accessModes",
    "resources",
    "storageClassName",
    "volumeName",
    "volumeMode",
    "volumeAttributesClassName",
    "selector",
    "dataSource",
    "dataSourceRef",
)
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


_PARTS = PodSlimmer()
"""Equal parts of claims and volumes made one object (``PodSlimmer.share``): a claim and its
volume as the API server sends them are mostly the same as every other one of their class
(access modes, request, capacity, status, class name); at 50,000 of each, a claim kept 2.6
KiB and a volume 2.8 KiB, now about a third of that."""


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata") or {}
    out = {k: m[k] for k in _KEPT_META if k in m}
    namespace = out.get("namespace")
    if type(namespace) is str:
        out["namespace"] = sys.intern(namespace)
    notes = out.get("annotations")
    if notes and any(k in notes for k in _DROPPED_ANNOTATIONS):
        notes = {k: v for k, v in notes.items() if k not in _DROPPED_ANNOTATIONS}
    if notes is not None:
        out["annotations"] = _PARTS.share(notes)
    labels = out.get("labels")
    if labels:
        out["labels"] = _PARTS.share(labels)
    return out


def _shared(fields: Obj, parts: frozenset[str] | None = None) -> Obj:
    """``fields`` with its lists and mappings shared (only those named in ``parts``, when
    given: a volume's source and claimRef are its own, and sharing what is never equal costs
    a table entry), its short texts interned (a class name, a mode, a phase; not names)."""
    out: Obj = {}
    for key, value in fields.items():
        if isinstance(value, (dict, list)):
            if parts is None or key in parts:
                value = _PARTS.share(value)
        elif type(value) is str and key not in _OWN_TEXT:
            value = sys.intern(value)
        out[key] = value
    return out


_VOLUME_PARTS = frozenset({"capacity", "accessModes", "nodeAffinity"})
"""What volumes have in common: their size and modes, and (local volumes) their node."""
_OWN_TEXT = frozenset({"volumeName"})
"""Texts that name one object: interning them would keep a table entry per object."""


_TOP = frozenset({"metadata", "spec", "status"})
_KEPT_META_SET = frozenset(_KEPT_META)
_KEPT_CLAIM_SPEC_SET = frozenset(_KEPT_CLAIM_SPEC)
_KEPT_CLAIM_STATUS = frozenset({"phase", "accessModes", "capacity"})
_PHASE_ONLY = frozenset({"phase"})


def _slim_meta(obj: Obj) -> bool:
    m = obj.get("metadata")
    if not isinstance(m, dict) or not m.keys() <= _KEPT_META_SET:
        return False
    notes = m.get("annotations")
    return not notes or not any(k in notes for k in _DROPPED_ANNOTATIONS)


def _is_slim_claim(claim: Obj) -> bool:
    """Would ``slim_claim`` keep every field of ``claim`` as it is? (Slimming it again would
    make an equal copy: the store then keeps the informer's object itself.)"""
    spec, status = claim.get("spec"), claim.get("status")
    return (
        claim.keys() == _TOP
        and _slim_meta(claim)
        and isinstance(spec, dict)
        and spec.keys() <= _KEPT_CLAIM_SPEC_SET
        and isinstance(status, dict)
        and status.keys() <= _KEPT_CLAIM_STATUS
    )


def _is_slim_volume(volume: Obj) -> bool:
    """As ``_is_slim_claim``, for ``slim_volume``."""
    spec, status = volume.get("spec"), volume.get("status")
    return (
        volume.keys() == _TOP
        and _slim_meta(volume)
        and isinstance(spec, dict)
        and "mountOptions" not in spec
        and isinstance(status, dict)
        and (not status or (status.keys() == _PHASE_ONLY and bool(status["phase"])))
    )


def slim_claim(claim: Obj) -> Obj:
    if _is_slim_claim(claim):
        return claim  # slimmed by its informer already: one copy, shared by both stores
    spec = claim.get("spec") or {}
    status = claim.get("status") or {}
    return {
        "metadata": _meta(claim),
        "spec": _shared({k: spec[k] for k in _KEPT_CLAIM_SPEC if k in spec}),
        "status": _PARTS.share(
            {k: status[k] for k in ("phase", "accessModes", "capacity") if k in status}
        ),
    }


def slim_volume(volume: Obj) -> Obj:
    if _is_slim_volume(volume):
        return volume  # slimmed by its informer already: one copy, shared by both stores
    spec = _shared(
        {k: v for k, v in (volume.get("spec") or {}).items() if k != "mountOptions"},
        _VOLUME_PARTS,
    )
    claim_ref = spec.get("claimRef")
    if isinstance(claim_ref, dict):
        # the claim's own name and uid, with kind, apiVersion and namespace like every other's
        spec["claimRef"] = {
            k: sys.intern(v) if type(v) is str and k in _COMMON_REF_TEXT else v
            for k, v in claim_ref.items()
        }
    phase = (volume.get("status") or {}).get("phase")
    status = _PARTS.share({"phase": phase}) if phase else {}
    return {"metadata": _meta(volume), "spec": spec, "status": status}


_COMMON_REF_TEXT = frozenset({"kind", "apiVersion", "namespace"})


def slim_class(sc: Obj) -> Obj:
    kept = ("provisioner", "volumeBindingMode", "allowedTopologies", "reclaimPolicy", "parameters")
    return {"metadata": _meta(sc), **{k: sc[k] for k in kept if k in sc}}


def slim_spec(obj: Obj) -> Obj:
    """CSINodes and CSIDrivers: metadata and spec."""
    return {"metadata": _meta(obj), "spec": obj.get("spec") or {}}


_SLIMMERS: dict[str, Callable[[Obj], Obj]] = {
    "claims": slim_claim,
    "volumes": slim_volume,
    "classes": slim_class,
    "csinodes": slim_spec,
    "csidrivers": slim_spec,
}


def slimmer(kind: str) -> Callable[[Obj], Obj]:
    """What the store ``kind`` keeps of an object: the daemon's informer of that kind stores
    only this too (its ``transform``), not the object as the API server sent it."""
    return _SLIMMERS[kind]


@dataclass(slots=True)
class Assumed:
    """An object as the daemon's write makes it, until the informer shows the write."""

    obj: Obj
    settled: Callable[[Obj], bool]
    """Does an object the informer delivers carry the write (or a newer truth)?"""


ChangeListener = Callable[[str, str, "Obj | None"], None]
"""(kind, key, the object as the informer delivered it, None when deleted)"""


class StorageCache:
    """The five stores, their informer handlers, and the sessions' read-only view."""

    def __init__(self, touch: Callable[[], None]) -> None:
        self._touch = touch
        self.stores: dict[str, dict[str, Obj]] = {kind: {} for kind in KINDS}
        self.served: set[str] = set()
        """The kinds whose informers run (the cluster serves them)."""
        self._view: StorageObjects | None = NO_STORAGE
        self.assumed: dict[str, dict[str, Assumed]] = {"claims": {}, "volumes": {}}
        """The daemon's writes not yet seen by the informers, by kind and key."""
        self.on_change: ChangeListener | None = None

    @property
    def claims(self) -> dict[str, Obj]:
        return self.stores["claims"]

    @property
    def volumes(self) -> dict[str, Obj]:
        return self.stores["volumes"]

    @property
    def classes(self) -> dict[str, Obj]:
        return self.stores["classes"]

    @property
    def csinodes(self) -> dict[str, Obj]:
        return self.stores["csinodes"]

    @property
    def csidrivers(self) -> dict[str, Obj]:
        return self.stores["csidrivers"]

    @property
    def evaluated(self) -> bool:
        """Are claims and volumes read (the cluster serves them)? Pods naming claims are
        evaluated then, and refused otherwise (``pumice.model.volumes``)."""
        return {"claims", "volumes"} <= self.served

    def handler(self, kind: str) -> Handler:
        """The informer handler that keeps the store ``kind`` (one of ``KINDS``)."""
        store = self.stores[kind]
        slim = _SLIMMERS[kind]
        self.served.add(kind)
        self._view = None

        assumed = self.assumed.get(kind, {})

        def upsert(obj: Obj) -> None:
            key = object_key(obj)
            kept = store[key] = slim(obj)
            mine = assumed.get(key)
            if mine is not None and mine.settled(kept):
                del assumed[key]
            if self.on_change is not None:
                self.on_change(kind, key, kept)

        def delete(obj: Obj) -> None:
            key = object_key(obj)
            store.pop(key, None)
            assumed.pop(key, None)
            if self.on_change is not None:
                self.on_change(kind, key, None)

        return Handler(upsert, delete, self._changed)

    def assume(self, kind: str, key: str, obj: Obj, settled: Callable[[Obj], bool]) -> None:
        """Lay ``obj`` (a claim or volume with the daemon's write in it) over the store."""
        self.assumed[kind][key] = Assumed(obj, settled)
        self._changed()

    def forget(self, kind: str, key: str) -> None:
        """Drop an assumed write (it failed, or its pod was given up)."""
        if self.assumed[kind].pop(key, None) is not None:
            self._changed()

    def current(self, kind: str, key: str) -> Obj | None:
        """The object as sessions see it: the assumed write, else the informer's."""
        mine = self.assumed.get(kind, {}).get(key)
        return mine.obj if mine is not None else self.stores[kind].get(key)

    def _changed(self) -> None:
        self._view = None
        self._touch()

    def view(self) -> StorageObjects:
        """What a snapshot carries: read-only mappings, new after every change."""
        if self._view is None:
            stores = {kind: dict(self.stores[kind]) for kind in KINDS}
            for kind, assumed in self.assumed.items():
                for key, mine in assumed.items():
                    stores[kind][key] = mine.obj
            self._view = StorageObjects(
                **{kind: MappingProxyType(stores[kind]) for kind in KINDS},
                served=self.evaluated,
            )
        return self._view


def describe(storage: StorageCache) -> dict[str, Any]:
    """How many objects each served store holds (for the daemon's sync log line)."""
    return {kind: len(storage.stores[kind]) for kind in KINDS if kind in storage.served}
