"""The manifests a command is given: read, checked, the kinds it cannot use set aside; or, for
``pumice explain`` without files, the live cluster listed once (``read_objects``).

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

The live cluster is found as kubectl finds it (``--kubeconfig``, ``$KUBECONFIG``,
``~/.kube/config``) through ``pumice.kube`` (loaded only then); the client is ``read_only``, so a
write would be refused before it is sent. Volcano's kinds are listed only where the cluster
serves them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice.commands.cluster_shape import shape_error
from pumice.manifests import ManifestError, load_manifests
from pumice.model import QuantityError, parse_quantity
from pumice.plain import Obj, PumiceError, ordered_uid

STORAGE_KINDS = frozenset(
    {"PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver"}
)
CACHE_KINDS = (
    frozenset({"Node", "Pod", "PodGroup", "Queue", "PriorityClass", "Namespace"}) | STORAGE_KINDS
)
"""The kinds the scheduler's cache takes (what ``pumice simulate`` replays)."""
NAMESPACED_KINDS = frozenset({"Pod", "PodGroup", "PersistentVolumeClaim"})


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
    if kind in NAMESPACED_KINDS:
        return f"{kind} {namespace or 'default'}/{name}"
    return f"{kind} {name}"


def key_of(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` of a namespaced object."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


Where = str | tuple[str, int, str]
"""A field path, or a container's (group, index, part): made into text only to say what is
wrong, not for each of the 10,000 pods that are right."""


def _path(where: Where) -> str:
    if isinstance(where, str):
        return where
    group, i, part = where
    return f"spec.{group}[{i}].resources.{part}"


def _resource_lists(obj: Mapping[str, Any]) -> Iterator[tuple[Where, Any]]:
    """Every resource list of an object that holds quantities, with where it is."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        for group in ("containers", "initContainers"):
            for i, container in enumerate(spec.get(group) or ()):
                resources = (container or {}).get("resources") or {}
                for part in ("requests", "limits"):
                    yield (group, i, part), resources.get(part)
        yield "spec.overhead", spec.get("overhead")
        yield "spec.resources.requests", (spec.get("resources") or {}).get("requests")
    elif kind == "Node":
        status = obj.get("status") or {}
        yield "status.allocatable", status.get("allocatable")
        yield "status.capacity", status.get("capacity")
    elif kind == "PodGroup":
        yield "spec.minResources", spec.get("minResources")
    elif kind == "PersistentVolumeClaim":
        yield "spec.resources.requests", (spec.get("resources") or {}).get("requests")
    elif kind == "PersistentVolume":
        yield "spec.capacity", spec.get("capacity")
    elif kind == "Queue":
        yield "spec.capability", spec.get("capability")
        yield "spec.deserved", spec.get("deserved")
        yield "spec.guarantee.resource", (spec.get("guarantee") or {}).get("resource")


_GOOD_QUANTITIES: set[str] = set()
"""Quantity texts already found well-formed and not negative: a dump of 10,000 pods repeats
a few (``"1"``, ``"2Gi"``), and comparing an exact value with 0 costs more than parsing it."""
_GOOD_LIMIT = 1 << 14


def check_object(source: str, obj: Obj) -> None:
    """Raise ``InputError`` for a field of the wrong type, or the first malformed quantity
    or priority value."""
    wrong = shape_error(obj)
    if wrong is not None:
        raise InputError(source, obj, *wrong)
    for where, resources in _resource_lists(obj):
        if resources is None:
            continue
        if not isinstance(resources, dict):
            path = _path(where)
            raise InputError(source, obj, path, "must be a mapping of resource to quantity")
        for name, quantity in resources.items():
            if quantity is None or (type(quantity) is str and quantity in _GOOD_QUANTITIES):
                continue
            try:
                amount = parse_quantity(quantity)
            except QuantityError as exc:
                raise InputError(source, obj, f"{_path(where)}.{name}", str(exc)) from None
            if amount < 0:
                path = f"{_path(where)}.{name}"
                raise InputError(source, obj, path, f"negative quantity {quantity!r}")
            if type(quantity) is str and len(_GOOD_QUANTITIES) < _GOOD_LIMIT:
                _GOOD_QUANTITIES.add(quantity)
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
    (now, and a uid in input order: ``pumice.plain``), so ``pumice simulate`` orders such
    objects as ``pumice run --sim`` does; a StorageClass binds ``Immediate`` unless it says
    otherwise; a volume or claim without a phase has the one the PV controller gives it at once
    (a volume ``Available``, or ``Bound`` when it names a claim; a claim ``Pending``, or
    ``Bound`` when bound)."""
    kind = obj.get("kind")
    meta = obj.setdefault("metadata", {})
    if isinstance(meta, dict):
        if not meta.get("uid"):
            meta["uid"] = ordered_uid()
        if not meta.get("creationTimestamp"):
            meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if kind in NAMESPACED_KINDS:
        meta["namespace"] = meta.get("namespace") or "default"
    if kind == "StorageClass" and not obj.get("volumeBindingMode"):
        obj["volumeBindingMode"] = "Immediate"
    if kind in ("PersistentVolume", "PersistentVolumeClaim"):
        status = obj.setdefault("status", {})
        if not status.get("phase"):
            spec = obj.get("spec") or {}
            notes = (obj.get("metadata") or {}).get("annotations") or {}
            if kind == "PersistentVolume":
                status["phase"] = "Bound" if spec.get("claimRef") else "Available"
            else:
                bound = spec.get("volumeName") and "pv.kubernetes.io/bind-completed" in notes
                status["phase"] = "Bound" if bound else "Pending"
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


class LiveError(PumiceError):
    """The cluster could not be found or listed (one line, exit 2)."""


def read_objects(args: argparse.Namespace) -> list[Obj]:
    """The manifests named on the command line, else the live cluster, listed once.

    Raises ``ManifestError`` for a bad file, ``LiveError`` for a cluster that cannot be
    reached or listed."""
    if args.cluster:
        given = read_cluster(list(args.cluster), lambda obj: obj.get("kind") in CACHE_KINDS)
        for note in given.notes:
            print(note, file=sys.stderr)
        return given.objects
    import asyncio  # the live form only: asyncio and ssl would slow every command's start

    try:
        return asyncio.run(list_cluster(args.kubeconfig, args.context))
    except Exception as exc:  # KubeConfigError, KubeError
        raise LiveError(str(exc)) from None


async def list_cluster(kubeconfig: str | None, context: str | None) -> list[Obj]:
    """Every object the scheduler's cache takes, listed once (each with its ``kind``)."""
    # the kube client is loaded only for the live form
    from pumice.kube import (
        NAMESPACES,
        NODES,
        PODGROUPS,
        PODS,
        PRIORITYCLASSES,
        QUEUES,
        KubeSettings,
        connect,
        served,
    )
    from pumice.kube.rest import STORAGE_KINDS as STORAGE_RESOURCES

    # Volcano's kinds and the storage kinds, where the cluster serves them
    optional = (QUEUES, PODGROUPS, *STORAGE_RESOURCES)
    settings = KubeSettings(
        kubeconfig=kubeconfig, context=context, read_only=True, user_agent="pumice-explain"
    )
    objects: list[Obj] = []
    async with await connect(settings) as kube:
        for kind in (
            NAMESPACES, PRIORITYCLASSES, NODES, *STORAGE_RESOURCES, QUEUES, PODGROUPS, PODS
        ):  # fmt: skip
            if kind in optional and not await served(kube, kind):
                continue
            listed = await kube.request("GET", kind.path())
            for item in listed.get("items") or ():
                objects.append({**item, "apiVersion": kind.api_version, "kind": kind.kind})
    return objects
