"""The manifests a command is given: read, checked, the kinds it cannot use set aside.

``read_cluster`` reads every file (multi-document YAML, or a ``kind: List`` as
``kubectl get nodes,pods,podgroups,queues,priorityclasses -A -o yaml`` writes it), keeps the
objects whose kind the caller can use and sets the others aside with one note per file and kind
(``FILE: skipped 2 ConfigMap object(s): not simulated``) — ``pumice simulate`` keeps the kinds
the cache takes, ``pumice run --sim`` the kinds the simulated API server serves, and both print
the same notes. ``check_object`` refuses an object of the wrong shape (``cluster_shape``: a
field the scheduler reads of the wrong type, such as ``tolerations: 5``), a malformed quantity
or priority value with one line ``FILE: Kind ns/name: field.path: what``; ``api_defaults``
fills in what an API server's defaulting would (the namespace, requests from limits), for
objects that never went through one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice.commands.cluster_shape import shape_error
from pumice.manifests import ManifestError, load_manifests
from pumice.model import QuantityError, parse_quantity
from pumice.uids import ordered_uid

Obj = dict[str, Any]

CACHE_KINDS = frozenset({"Node", "Pod", "PodGroup", "Queue", "PriorityClass", "Namespace"})
"""The kinds the scheduler's cache takes (what ``pumice simulate`` replays)."""
NAMESPACED_KINDS = frozenset({"Pod", "PodGroup"})


class InputError(ManifestError):
    """An object of the input that cannot be used: ``FILE: Kind ns/name: field: what``."""

    def __init__(self, source: str, obj: Mapping[str, Any], path: str, message: str) -> None:
        self.object_name = describe(obj)
        self.path = path
        super().__init__(source, f"{self.object_name}: {path}: {message}")

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


def describe(obj: Mapping[str, Any]) -> str:
    """``Pod default/small-1`` or ``Node n1``."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name", "?")
    namespace = meta.get("namespace")
    kind = obj.get("kind", "?")
    if kind in ("Pod", "PodGroup"):
        return f"{kind} {namespace or 'default'}/{name}"
    return f"{kind} {name}"


def key_of(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` of a namespaced object."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _resource_lists(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every resource list of an object that holds quantities, with its field path."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        for group in ("containers", "initContainers"):
            for i, container in enumerate(spec.get(group) or ()):
                resources = (container or {}).get("resources") or {}
                for part in ("requests", "limits"):
                    yield f"spec.{group}[{i}].resources.{part}", resources.get(part)
        yield "spec.overhead", spec.get("overhead")
        yield "spec.resources.requests", (spec.get("resources") or {}).get("requests")
    elif kind == "Node":
        status = obj.get("status") or {}
        yield "status.allocatable", status.get("allocatable")
        yield "status.capacity", status.get("capacity")
    elif kind == "PodGroup":
        yield "spec.minResources", spec.get("minResources")
    elif kind == "Queue":
        yield "spec.capability", spec.get("capability")
        yield "spec.deserved", spec.get("deserved")
        yield "spec.guarantee.resource", (spec.get("guarantee") or {}).get("resource")


def check_object(source: str, obj: Obj) -> None:
    """Raise ``InputError`` for a field of the wrong type, or the first malformed quantity
    or priority value."""
    wrong = shape_error(obj)
    if wrong is not None:
        raise InputError(source, obj, *wrong)
    for path, resources in _resource_lists(obj):
        if resources is None:
            continue
        if not isinstance(resources, dict):
            raise InputError(source, obj, path, "must be a mapping of resource to quantity")
        for name, quantity in resources.items():
            if quantity is None:
                continue
            try:
                amount = parse_quantity(quantity)
            except QuantityError as exc:
                raise InputError(source, obj, f"{path}.{name}", str(exc)) from None
            if amount < 0:
                raise InputError(source, obj, f"{path}.{name}", f"negative quantity {quantity!r}")
    if obj.get("kind") == "PriorityClass" and not _is_int(obj.get("value")):
        raise InputError(source, obj, "value", "must be an integer")
    if obj.get("kind") == "Pod":
        priority = (obj.get("spec") or {}).get("priority")
        if priority is not None and not _is_int(priority):
            raise InputError(source, obj, "spec.priority", "must be an integer")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class ClusterInput:
    """The objects to use, in file order, and the notes about those set aside."""

    objects: list[Obj] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_cluster(paths: list[str], usable: Callable[[Obj], bool]) -> ClusterInput:
    """Read every file; raise ``ManifestError`` (``InputError``) on bad input."""
    out = ClusterInput()
    for path in paths:
        source = str(Path(path))
        skipped: dict[str, int] = {}
        for obj in load_manifests(path).objects:
            if not usable(obj):
                kind = str(obj.get("kind"))
                skipped[kind] = skipped.get(kind, 0) + 1
                continue
            check_object(source, obj)
            out.objects.append(obj)
        for kind, count in sorted(skipped.items()):
            out.notes.append(f"{source}: skipped {count} {kind} object(s): not simulated")
    return out


def api_defaults(obj: Obj) -> Obj:
    """What the API server would have filled in: a namespaced object without a namespace is in
    ``default``; a pod container's requests default to its limits; an object without a uid or
    a creation time gets them as the simulated API server stamps a manifest it is seeded with
    (now, and a uid in input order: ``pumice.uids``), so ``pumice simulate`` orders such
    objects as ``pumice run --sim`` does."""
    meta = obj.setdefault("metadata", {})
    if isinstance(meta, dict):
        if not meta.get("uid"):
            meta["uid"] = ordered_uid()
        if not meta.get("creationTimestamp"):
            meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if obj.get("kind") in NAMESPACED_KINDS:
        meta["namespace"] = meta.get("namespace") or "default"
    if obj.get("kind") == "Pod":
        spec = obj["spec"] = obj.get("spec") or {}
        for group in ("containers", "initContainers"):
            for container in spec.get(group) or ():
                resources = (container or {}).get("resources") or {}
                limits = resources.get("limits") or {}
                if limits:
                    requests = resources.get("requests") or {}
                    resources["requests"] = {**limits, **requests}
    return obj
