"""kube-scheduler's VolumeZone tables, re-expressed as ``pumice simulate`` scenarios.

Source (kubernetes/kubernetes): ``pkg/scheduler/framework/plugins/volumezone/
volume_zone_test.go`` — TestSingleZone, TestMultiZone, TestWithBinding; each case's id names
the test function and its case. Every case has one node, ``host1``.

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

from pumice.model.storage import StorageObjects
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
    "Vol_1": {BETA_ZONE: "us-west1-a"},
    "Vol_2": {BETA_REGION: "us-west1", "uselessLabel": "none"},
    "Vol_3": {BETA_REGION: "us-west1"},
    "Vol_Stable_1": {ZONE: "us-west1-a"},
    "Vol_Stable_2": {REGION: "us-west1", "uselessLabel": "none"},
    "Vol_Stable_3": {ZONE: "us-west1-a", REGION: "us-west1-a"},
}
MULTI_VOLUMES = {
    "Vol_1": {BETA_ZONE: "us-west1-a"},
    "Vol_2": {BETA_ZONE: "us-west1-b", "uselessLabel": "none"},
    "Vol_3": {BETA_ZONE: "us-west1-c__us-west1-a"},
    "Vol_Stable_1": {ZONE: "us-west1-a"},
    "Vol_Stable_2": {ZONE: "us-west1-c__us-west1-a"},
}


def storage(volumes: dict[str, dict[str, str]]) -> list[dict[str, object]]:
    """The volumes, and a claim ``PVC_x`` bound to each ``Vol_x`` (plus PVC_4 naming a volume
    that does not exist)."""
    out: list[dict[str, object]] = []
    for name, labels in volumes.items():
        out.append(volume(name, labels=labels, claim_ref=("default", name.replace("Vol", "PVC"))))
        out.append(claim(name.replace("Vol", "PVC"), volume=name))
    out.append(claim("PVC_4", volume="Vol_not_exist"))
    return out


def zone_case(
    test: str,
    name: str,
    volumes: dict[str, dict[str, str]],
    pvc_name: str | None,
    labels: dict[str, str],
    ok: bool,
    message: str = CONFLICT,
) -> VolumeCase:
    incoming = vpod("pod_1", [pvc("v", pvc_name)] if pvc_name else [])
    return VolumeCase(
        source=f"{SOURCE}: {test}: '{name}'",
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
    single("node without labels", "PVC_1", {}, True),
    single("beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", **USELESS}, True),
    single("beta region label matched", "PVC_2", {BETA_REGION: "us-west1", **USELESS}, True),
    single(
        "beta region label doesn't match", "PVC_2", {BETA_REGION: "no_us-west1", **USELESS}, False
    ),
    single(
        "beta zone label doesn't match", "PVC_1", {BETA_ZONE: "no_us-west1-a", **USELESS}, False
    ),
    single("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", **USELESS}, True),
    single("region label matched", "PVC_Stable_2", {REGION: "us-west1", **USELESS}, True),
    single("region label doesn't match", "PVC_Stable_2", {REGION: "no_us-west1", **USELESS}, False),
    single("zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a", **USELESS}, False),
    single(
        "pv with zone and region, node with only zone", "PVC_Stable_3", {ZONE: "us-west1-a"}, False
    ),
    single("pv with zone,node with beta zone", "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, False),
    single("pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, True),
    single(
        "pv with beta label,node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, False
    ),
    multi("node without labels", "PVC_3", {}, True),
    multi("beta zone label matched", "PVC_3", {BETA_ZONE: "us-west1-a", **USELESS}, True),
    multi("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "us-west1-b", **USELESS}, False),
    multi("zone label matched", "PVC_Stable_2", {ZONE: "us-west1-a", **USELESS}, True),
    multi("zone label doesn't match", "PVC_Stable_1", {ZONE: "us-west1-b", **USELESS}, False),
    zone_case(
        "volume_zone.go PreFilter",
        "a claim naming a volume that does not exist",
        SINGLE_VOLUMES,
        "PVC_4",
        {},
        False,
        '0/1 nodes are available: persistentvolume "Vol_not_exist" not found.',
    ),
]


WITHOUT_BINDING = with_predicates(**{"predicate.VolumeBindingEnable": False})


def binding_case(name: str, pvc_name: str, message: str = "") -> VolumeCase:
    objects = [
        node("host1", {BETA_ZONE: "us-west1-a", **USELESS}),
        storage_class("Class_Immediate", mode="Immediate"),
        storage_class("Class_Wait"),
        volume("Vol_1", labels={BETA_ZONE: "us-west1-a"}, claim_ref=("default", "PVC_1")),
        claim("PVC_1", volume="Vol_1"),
        claim("PVC_NoSC", "Class_0"),
        claim("PVC_EmptySC"),
        claim("PVC_WaitSC", "Class_Wait"),
        claim("PVC_ImmediateSC", "Class_Immediate"),
    ]
    return VolumeCase(
        source=f"{SOURCE}: TestWithBinding: '{name}'",
        objects=objects,
        incoming=vpod("pod_1", [pvc("v", pvc_name)]),
        feasible=frozenset() if message else frozenset({"host1"}),
        message=f"0/1 nodes are available: {message}." if message else "",
        config=WITHOUT_BINDING,
        note="VolumeBinding switched off: VolumeZone's PreFilter is the one under test",
    )


CASES += [
    binding_case("label zone failure domain matched", "PVC_1"),
    binding_case(
        "unbound volume empty storage class",
        "PVC_EmptySC",
        "PersistentVolumeClaim had no pv name and storageClass name",
    ),
    # kube's fake lister says "storageclasses"; the informer's lister says "storageclass"
    binding_case(
        "unbound volume no storage class",
        "PVC_NoSC",
        'storageclass.storage.k8s.io "Class_0" not found',
    ),
    binding_case(
        "unbound volume immediate binding mode", "PVC_ImmediateSC", "PersistentVolume had no name"
    ),
    binding_case("unbound volume wait binding mode", "PVC_WaitSC"),
]


@pytest.mark.parametrize("case", vparams(CASES))
def test_volume_zone(tmp_path: Path, capsys: Capsys, case: VolumeCase) -> None:
    check_volume_case(tmp_path, capsys, case)


def test_a_class_without_a_binding_mode_is_named() -> None:
    """TestWithBinding: 'unbound volume immediate binding mode', with the class as the table
    has it (no mode), on the PreFilter alone."""
    from types import MappingProxyType

    from pumice.model import TaskInfo

    pod = vpod("pod_1", [pvc("v", "PVC_ImmediateSC")])
    task = TaskInfo(uid="u", name="pod_1", namespace="default", pod=pod)
    storage = StorageObjects(
        claims=MappingProxyType(
            {"default/PVC_ImmediateSC": claim("PVC_ImmediateSC", "Class_Immediate")}
        ),
        classes=MappingProxyType(
            {"Class_Immediate": {"metadata": {"name": "Class_Immediate"}, "provisioner": "x"}}
        ),
        served=True,
    )
    assert zone_reason(PodVolumes.of(task), storage) == (
        'VolumeBindingMode not set for StorageClass "Class_Immediate"'
    )
