"""Volume cases for ``pumice simulate``: builders of claims, volumes, classes, CSINodes and pods
with volumes, a case record, and its runner.

The tables in ``tests/plugins/test_volume*_tables.py`` and ``test_nodevolumelimits_tables.py``
re-express kube-scheduler's own unit tables as manifests. kube's tables run one plugin alone;
here the whole scheduler runs (every filter of ``predicates``), so each case states what the
whole scheduler does with its one incoming pod: the nodes that pass every filter (the pod is
placed on one of them, and ``--explain`` shows exactly those), or the message it is left
pending with (``0/N nodes are available: …``). Where the plugin alone and the whole scheduler
differ (another volume plugin's PreFilter speaks first, a claim the table leaves unbound), the
case says so in its ``note`` and either adjusts the objects as a real cluster would have them
or switches the other plugin off with its Volcano flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.constraint_cases import FILTER_CONFIG, fit_error_head, node, placement_of
from support.manifests import pending, simulate

Obj = dict[str, Any]
Capsys = pytest.CaptureFixture[str]

HOST = "kubernetes.io/hostname"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def with_predicates(**arguments: object) -> str:
    """``FILTER_CONFIG`` with arguments for ``predicates``."""
    args = "".join(f"      {k}: {str(v).lower()}\n" for k, v in arguments.items())
    return FILTER_CONFIG.replace(
        "  - name: predicates\n", f"  - name: predicates\n    arguments:\n{args}"
    )


def storage_class(
    name: str,
    *,
    provisioner: str = "kubernetes.io/no-provisioner",
    mode: str = "WaitForFirstConsumer",
    allowed: Sequence[Mapping[str, Sequence[str]]] = (),
) -> Obj:
    sc: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if allowed:
        sc["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in term.items()]}
            for term in allowed
        ]
    return sc


def claim(
    name: str,
    cls: str | None = None,
    *,
    ns: str = "default",
    size: str = "1Gi",
    volume: str | None = None,
    bound: bool = True,
    modes: Sequence[str] = ("ReadWriteOnce",),
    phase: str | None = None,
    deleting: bool = False,
    owner: tuple[str, str] | None = None,
    selected: str | None = None,
) -> Obj:
    """A claim; with ``volume`` it names it, and ``bound`` adds bind-completed."""
    spec: Obj = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    annotations: dict[str, str] = {}
    if volume is not None:
        spec["volumeName"] = volume
        if bound:
            annotations[BIND_COMPLETED] = "yes"
    if selected is not None:
        annotations["volume.kubernetes.io/selected-node"] = selected
    meta: Obj = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner[0],
                "uid": owner[1],
                "controller": True,
            }
        ]
    out: Obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


def volume(
    name: str,
    cls: str = "",
    *,
    size: str = "1Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    labels: Mapping[str, str] | None = None,
    affinity: Mapping[str, Sequence[str]] | None = None,
    source: Obj | None = None,
    claim_ref: tuple[str, str] | None = None,
    phase: str | None = None,
) -> Obj:
    """A volume; ``affinity`` is one node-affinity term, ``key In values`` per entry; the
    source is a CSI volume of ``csi.example.com`` named after it unless ``source`` says."""
    spec: Obj = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        **(source or {"csi": {"driver": "csi.example.com", "volumeHandle": name}}),
    }
    if cls:
        spec["storageClassName"] = cls
    if affinity is not None:
        exprs = [{"key": k, "operator": "In", "values": list(v)} for k, v in affinity.items()]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    if claim_ref is not None:
        spec["claimRef"] = {"namespace": claim_ref[0], "name": claim_ref[1]}
    out: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
"""The CSINode annotation (written by the kubelet) listing the in-tree plugins migrated to CSI."""


def csinode(name: str, limits: Mapping[str, int | None], migrated: Sequence[str] = ()) -> Obj:
    """A CSINode: each driver with its attach limit (None: the driver reports none);
    ``migrated``: the in-tree plugins its kubelet says are migrated to CSI."""
    drivers = []
    for driver, count in limits.items():
        entry: Obj = {"name": driver, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        drivers.append(entry)
    metadata: Obj = {"name": name}
    if migrated:
        metadata["annotations"] = {MIGRATED_PLUGINS: ",".join(migrated)}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": metadata,
        "spec": {"drivers": drivers},
    }


def pvc(name: str, claim_name: str) -> Obj:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name}}


def ephemeral(name: str, cls: str = "") -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if cls:
        spec["storageClassName"] = cls
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}


def vpod(
    name: str,
    volumes: Sequence[Obj] = (),
    *,
    ns: str = "default",
    on: str | None = None,
    uid: str | None = None,
    cpu: str = "100m",
) -> Obj:
    """A pod with these volumes: bound to ``on`` (Running, default-scheduler's) or pending
    for pumice."""
    spec: Obj = {
        "schedulerName": "default-scheduler" if on else "pumice",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}},
            }
        ],
    }
    if volumes:
        spec["volumes"] = [dict(v) for v in volumes]
    if on:
        spec["nodeName"] = on
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid or f"uid-{ns}-{name}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {"phase": "Running" if on else "Pending"},
    }


def host(name: str, **labels: str) -> Obj:
    """A node labelled with its hostname (and ``labels``)."""
    return node(name, {HOST: name, **labels})


@dataclass(frozen=True)
class VolumeCase:
    """One row of a kube-scheduler volume table: the objects, the incoming pod, and either
    the nodes that pass every filter or the message the pod is left pending with.
    ``volumes``: for a placed pod, the volume each of its claims must get, per node it may be
    placed on (``claim -> node -> volume``, None for one to be provisioned)."""

    source: str
    objects: Sequence[Obj]
    incoming: Obj
    feasible: frozenset[str] = frozenset()
    message: str = ""
    config: str = FILTER_CONFIG
    volumes: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    note: str = ""

    @property
    def key(self) -> str:
        meta = self.incoming["metadata"]
        return f"{meta['namespace']}/{meta['name']}"


def vparams(cases: Sequence[VolumeCase]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for case in cases:
        assert case.source not in seen, f"two cases named {case.source}"
        seen.add(case.source)
        assert bool(case.feasible) != bool(case.message), case.source
        out.append(pytest.param(case, id=case.source))
    return out


def check_volume_case(tmp_path: Path, capsys: Capsys, case: VolumeCase) -> dict[str, Any]:
    """Run the case through ``pumice simulate --explain`` and check its verdict."""
    objects = [*case.objects, case.incoming]
    result = simulate(tmp_path, objects, capsys, config=case.config, extra=["--explain"])
    placement = placement_of(result, case.key)
    why = pending(result).get(case.key)
    if case.feasible:
        assert placement is not None, f"{case.source}: expected placed, got: {why}"
        assert placement["node"] in case.feasible, case.source
        assert set(placement.get("scores") or {}) == set(case.feasible), case.source
        for claim_key, per_node in case.volumes.items():
            got = result["volumes"].get(claim_key)
            assert got == {"node": placement["node"], "volume": per_node[placement["node"]]}, (
                f"{case.source}: {claim_key}: {got}"
            )
    else:
        assert placement is None, f"{case.source}: expected pending, placed: {placement}"
        assert why is not None, f"{case.source}: not listed under unschedulable"
        assert fit_error_head(why) == case.message, case.source
    return result
