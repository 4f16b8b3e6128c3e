"""kube-scheduler's VolumeZone tables, re-expressed as ``pumice simulate`` scenarios.

Source (kubernetes/kubernetes): ``pkg/scheduler/framework/plugins/volumezone/
volume_zone_test.go`` — TestSingleZone, TestMultiZone, TestWithBinding; each case's id names
the test function and its case. Every case has one node, ``host1``. The tables' object names
(``Vol_1``, ``PVC_1``, ``Class_0``) are written as an API server accepts them (``vol-1``,
``pvc-1``, ``class-0``).

The tables' claims name their volume without ``pv.kubernetes.io/bind-completed``: VolumeZone
alone does not mind, but the whole scheduler turns such a pod away in VolumeBinding's
PreFilter (a claim that names a volume but is not bound counts as an unbound immediate one).
The claims here are bound, as the PV controller leaves them. TestWithBinding is about
VolumeZone's PreFilter for claims that name no volume, which VolumeBinding's PreFilter would
answer first; those cases run with ``predicate.VolumeBindingEnable: false``. Its
'unbound volume immediate binding mode' case uses a class without a binding mode, which an API
server never stores (it defaults the mode to Immediate); that check is the unit test at the
end, and the case here has an ``Immediate`` class.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.model.volumes import StorageObjects
from pumice.plugins._volume_claims import PodVolumes, zone_reason
from support.constraint_cases import node
from support.volume_cases import (
    Capsys,
    VolumeCase,
    check_volume_case,
    claim,
    pvc,
    storage_class,
    volume,
    vparams,
    vpod,
    with_predicates,
)

SOURCE = "volumezone/volume_zone_test.go"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = "0/1 nodes are available: 1 node(s) had no available volume zone."

SINGLE_VOLUMES = {
    "vol-1": {BETA_ZONE: "us-west1-a"},
    "vol-2": {BETA_REGION: "us-west1", "uselessLabel": "none"},
    "vol-3": {BETA_REGION: "us-west1"},
    "vol-stable-1": {ZONE: "us-west1-a"},
    "vol-stable-2": {REGION: "us-west1", "uselessLabel": "none"},
    "vol-stable-3": {ZONE: "us-west1-a", REGION: "us-west1-a"},
}
MULTI_VOLUMES = {
    "vol-1": {BETA_ZONE: "us-west1-a"},
    "vol-2": {BETA_ZONE: "us-west1-b", "uselessLabel": "none"},
    "vol-3": {BETA_ZONE: "us-west1-c__us-west1-a"},
    "vol-stable-1": {ZONE: "us-west1-a"},
    "vol-stable-2": {ZONE: "us-west1-c__us-west1-a"},
}


def storage(volumes: dict[str, dict[str, str]]) -> list[dict[str, object]]:
    """The volumes, and a claim ``pvc-x`` bound to each ``vol-x`` (plus pvc-4 naming a volume
    that does not exist)."""
    out: list[dict[str, object]] = []
    for name, labels in volumes.items():
        out.append(volume(name, labels=labels, claim_ref=("default", name.replace("vol", "pvc"))))
        out.append(claim(name.replace("vol", "pvc"), volume=name))
    out.append(claim("pvc-4", volume="vol-not-exist"))
    return out


def zone_case(
    test: str,
    name: str,
    volumes: dict[str, dict[str, str]],
    pvc_name: str | None,
    labels: dict[str, str],
    ok: bool,
    message: str = CONFLICT,
    where: str = SOURCE,
) -> VolumeCase:
    incoming = vpod("pod-1", [pvc("v", pvc_name)] if pvc_name else [])
    return VolumeCase(
        source=f"{where}: {test}: '{name}'",
        objects=[node("host1", labels), *storage(volumes)],
        incoming=incoming,
        feasible=frozenset({"host1"}) if ok else frozenset(),
        message="" if ok else message,
    )


def single(name: str, pvc_name: str | None, labels: dict[str, str], ok: bool) -> VolumeCase:
    return zone_case("TestSingleZone", name, SINGLE_VOLUMES, pvc_name, labels, ok)


def multi(name: str, pvc_name: str, labels: dict[str, str], ok: bool) -> VolumeCase:
    return zone_case("TestMultiZone", name, MULTI_VOLUMES, pvc_name, labels, ok)


USELESS = {"uselessLabel": "none"}

CASES = [
    single("pod without volume", None, {BETA_ZONE: "us-west1-a"}, True),
    single("node without labels", "pvc-1", {}, True),
    single("beta zone label matched", "pvc-1", {BETA_ZONE: "us-west1-a", **USELESS}, True),
    single("beta region label matched", "pvc-2", {BETA_REGION: "us-west1", **USELESS}, True),
    single(
        "beta region label doesn't match", "pvc-2", {BETA_REGION: "no_us-west1", **USELESS}, False
    ),
    single(
        "beta zone label doesn't match", "pvc-1", {BETA_ZONE: "no_us-west1-a", **USELESS}, False
    ),
    single("zone label matched", "pvc-stable-1", {ZONE: "us-west1-a", **USELESS}, True),
    single("region label matched", "pvc-stable-2", {REGION: "us-west1", **USELESS}, True),
    single("region label doesn't match", "pvc-stable-2", {REGION: "no_us-west1", **USELESS}, False),
    single("zone label doesn't match", "pvc-stable-1", {ZONE: "no_us-west1-a", **USELESS}, False),
    single(
        "pv with zone and region, node with only zone", "pvc-stable-3", {ZONE: "us-west1-a"}, False
    ),
    single("pv with zone,node with beta zone", "pvc-stable-1", {BETA_ZONE: "us-west1-a"}, False),
    single("pv with beta label,node with ga label, matched", "pvc-1", {ZONE: "us-west1-a"}, True),
    single(
        "pv with beta label,node with ga label, don't match", "pvc-1", {ZONE: "us-west1-b"}, False
    ),
    multi("node without labels", "pvc-3", {}, True),
    multi("beta zone label matched", "pvc-3", {BETA_ZONE: "us-west1-a", **USELESS}, True),
    multi("beta zone label doesn't match", "pvc-1", {BETA_ZONE: "us-west1-b", **USELESS}, False),
    multi("zone label matched", "pvc-stable-2", {ZONE: "us-west1-a", **USELESS}, True),
    multi("zone label doesn't match", "pvc-stable-1", {ZONE: "us-west1-b", **USELESS}, False),
    zone_case(
        "PreFilter",
        "a claim naming a volume that does not exist",
        SINGLE_VOLUMES,
        "pvc-4",
        {},
        False,
        '0/1 nodes are available: persistentvolume "vol-not-exist" not found.',
        where="volumezone/volume_zone.go",
    ),
]


WITHOUT_BINDING = with_predicates(**{"predicate.VolumeBindingEnable": False})


def binding_case(name: str, pvc_name: str, message: str = "") -> VolumeCase:
    objects = [
        node("host1", {BETA_ZONE: "us-west1-a", **USELESS}),
        storage_class("class-immediate", mode="Immediate"),
        storage_class("class-wait"),
        volume("vol-1", labels={BETA_ZONE: "us-west1-a"}, claim_ref=("default", "pvc-1")),
        claim("pvc-1", volume="vol-1"),
        claim("pvc-nosc", "class-0"),
        claim("pvc-emptysc"),
        claim("pvc-waitsc", "class-wait"),
        claim("pvc-immediatesc", "class-immediate"),
    ]
    return VolumeCase(
        source=f"{SOURCE}: TestWithBinding: '{name}'",
        objects=objects,
        incoming=vpod("pod-1", [pvc("v", pvc_name)]),
        feasible=frozenset() if message else frozenset({"host1"}),
        message=f"0/1 nodes are available: {message}." if message else "",
        config=WITHOUT_BINDING,
        note="VolumeBinding switched off: VolumeZone's PreFilter is the one under test",
    )


CASES += [
    binding_case("label zone failure domain matched", "pvc-1"),
    binding_case(
        "unbound volume empty storage class",
        "pvc-emptysc",
        "PersistentVolumeClaim had no pv name and storageClass name",
    ),
    # kube's fake lister says "storageclasses"; the informer's lister says "storageclass"
    binding_case(
        "unbound volume no storage class",
        "pvc-nosc",
        'storageclass.storage.k8s.io "class-0" not found',
    ),
    binding_case(
        "unbound volume immediate binding mode", "pvc-immediatesc", "PersistentVolume had no name"
    ),
    binding_case("unbound volume wait binding mode", "pvc-waitsc"),
]


@pytest.mark.parametrize("case", vparams(CASES))
def test_volume_zone(tmp_path: Path, capsys: Capsys, case: VolumeCase) -> None:
    check_volume_case(tmp_path, capsys, case)


def test_a_class_without_a_binding_mode_is_named() -> None:
    """TestWithBinding: 'unbound volume immediate binding mode', with the class as the table
    has it (no mode), on the PreFilter alone."""
    from types import MappingProxyType

    from pumice.model import TaskInfo

    pod = vpod("pod-1", [pvc("v", "pvc-immediatesc")])
    task = TaskInfo(uid="u", name="pod-1", namespace="default", pod=pod)
    storage = StorageObjects(
        claims=MappingProxyType(
            {"default/pvc-immediatesc": claim("pvc-immediatesc", "class-immediate")}
        ),
        classes=MappingProxyType(
            {"class-immediate": {"metadata": {"name": "class-immediate"}, "provisioner": "x"}}
        ),
        served=True,
    )
    assert zone_reason(PodVolumes.of(task), storage) == (
        'VolumeBindingMode not set for StorageClass "class-immediate"'
    )
