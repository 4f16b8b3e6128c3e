"""kube-scheduler's NodeVolumeLimits (CSI) table, re-expressed as ``pumice simulate`` scenarios.

Source (kubernetes/kubernetes): ``pkg/scheduler/framework/plugins/nodevolumelimits/
csi_test.go`` — TestCSILimits; each case's id names its case. Its fake listers are rebuilt as
objects: for each driver of a case, volumes ``csi-<driver>-0..3`` (CSI, or in-tree EBS /
hostPath for the in-tree plugin names) and claims of the same names bound to them; the claim
``csi-4`` (class ``csi-sc``, unbound), ``csi-5`` (no class), ``csi-6`` (class ``csi-sc``,
naming a volume that does not exist); the class ``csi-sc`` provisioned by the case's first
driver. The table's pods sit on the node; here they are bound pods of another scheduler.

Differences, because the whole scheduler runs here:

* ``csi-sc`` waits for the first consumer (with the table's Immediate class an unbound claim
  of the pod being placed is turned away by VolumeBinding's PreFilter before any limit);
* the two VolumeAttachment cases are not re-expressed: pumice does not read VolumeAttachments;
* 'ephemeral volume missing' cannot be a cluster here (``pumice simulate`` makes the claim as
  the ephemeral-volume controller does): it is the unit test at the end; kube's fake lister
  says ``persistentvolumeclaims "abc-xyz"``, the informer's lister ``persistentvolumeclaim``;
* 'ephemeral volume not owned' is an internal error in the plugin alone; the whole scheduler's
  VolumeBinding PreFilter says the same words first, as the pod's own reason;
* the case with the ephemeral-volume gate off is not re-expressed.

The table turns migration of the in-tree EBS plugin on for every case with a CSINode (its
``storage.alpha.kubernetes.io/migrated-plugins`` annotation); ``OUR_CASES`` show a node
without it, and Portworx.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from support.constraint_cases import node
from support.volume_cases import (
    Capsys,
    VolumeCase,
    check_volume_case,
    claim,
    csinode,
    ephemeral,
    pvc,
    storage_class,
    volume,
    vparams,
    vpod,
    with_predicates,
)

SOURCE = "nodevolumelimits/csi_test.go: TestCSILimits"
NODE = "node-for-max-pd-test-1"
EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
EXCEEDED = "0/1 nodes are available: 1 node(s) exceed max volume count."

Obj = dict[str, object]


def name_of(driver: str, j: int | str) -> str:
    return f"csi-{driver.replace('/', '-')}-{j}"


def listers(drivers: Sequence[str]) -> list[Obj]:
    out: list[Obj] = [storage_class("csi-sc", provisioner=drivers[0])]
    for driver in drivers:
        for j in range(4):
            name = name_of(driver, j)
            if driver == EBS_IN_TREE:
                source: Obj = {"awsElasticBlockStore": {"volumeID": name}}
            elif driver == HOSTPATH_IN_TREE:
                source = {"hostPath": {"path": "/tmp"}}
            else:
                source = {"csi": {"driver": driver, "volumeHandle": name}}
            out.append(volume(name, source=source, claim_ref=("default", name)))
            out.append(claim(name, volume=name))
    out += [
        claim("csi-4", "csi-sc"),
        claim("csi-5"),
        claim("csi-6", "csi-sc", volume="missing-in-action", bound=False),
    ]
    return out


def pod_of(name: str, *claims: str, ns: str = "default", on: bool = False) -> Obj:
    return vpod(
        name, [pvc(f"v{i}", c) for i, c in enumerate(claims)], ns=ns, on=NODE if on else None
    )


def claims_of(*items: str | tuple[str, int]) -> list[str]:
    return [i if isinstance(i, str) else name_of(*i) for i in items]


RUNNING = pod_of("running", *claims_of((EBS, 3)), on=True)
PENDING_VOLUME = pod_of("pending-volume", "csi-4", on=True)
UNBOUND_2 = pod_of("unbound-pvc-2", "csi-4", on=True)
MISSING_PV = pod_of("missing-pv", "csi-6", on=True)
NO_SC = pod_of("no-sc", "csi-5", on=True)
GCE_TWO = claims_of((GCE, 1), (GCE, 2))
EBS_ONE = claims_of((EBS, 0))
EBS_TWO = claims_of((EBS, 1), (EBS, 2))
IN_TREE_ONE = claims_of((EBS_IN_TREE, 0))
IN_TREE_TWO = claims_of((EBS_IN_TREE, 1), (EBS_IN_TREE, 2))
INLINE = [{"name": "inline", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}]
INLINE_SAME_ID = [{"name": "inline", "awsElasticBlockStore": {"volumeID": name_of(EBS, 1)}}]
CONFIG_AND_SECRET: list[Obj] = [
    {"name": "cm", "configMap": {"name": "cm"}},
    {"name": "s", "secret": {"secretName": "s"}},
]


def existing_two(tag: str) -> Obj:
    return pod_of(f"csi-ebs-two-{tag}", *EBS_TWO, on=True)


def in_tree_two() -> Obj:
    return pod_of("in-tree-two", *IN_TREE_TWO, on=True)


def limits_case(
    name: str,
    incoming: Obj,
    existing: Sequence[Obj],
    drivers: Sequence[str],
    limit: int | None,
    limit_source: str = "csinode",
    *,
    ok: bool,
    message: str = EXCEEDED,
    extra: Sequence[Obj] = (),
    config: str | None = None,
    migrated: Sequence[str] = (EBS_IN_TREE,),
    source: str = SOURCE,
) -> VolumeCase:
    objects: list[Obj] = [node(NODE, {"kubernetes.io/hostname": NODE}), *listers(drivers)]
    # ``migrated``: as the table does for every case with a CSINode, the in-tree EBS plugin
    if limit_source == "csinode":
        objects.append(csinode(NODE, dict.fromkeys(drivers, limit), migrated))
    elif limit_source == "csinode-with-no-limit":
        objects.append(csinode(NODE, dict.fromkeys(drivers), migrated))
    kwargs = {"config": config} if config is not None else {}
    return VolumeCase(
        source=f"{source}: '{name}'",
        objects=[*objects, *extra, *existing],
        incoming=incoming,
        feasible=frozenset({NODE}) if ok else frozenset(),
        message="" if ok else message,
        **kwargs,  # type: ignore[arg-type]
    )


EPHEMERAL_POD_UID = "12345"
EPHEMERAL_CLAIM = claim("abc-xyz", "csi-sc", ns="test", owner=("abc", EPHEMERAL_POD_UID))
CONFLICTING_CLAIM = claim("abc-xyz", "csi-sc", ns="test")


def ephemeral_pod(on: bool = False, volumes: Sequence[Obj] | None = None) -> Obj:
    return vpod(
        "abc",
        list(volumes) if volumes is not None else [ephemeral("xyz", "csi-sc")],
        ns="test",
        uid=EPHEMERAL_POD_UID,
        on=NODE if on else None,
    )


def ephemeral_two() -> tuple[Obj, list[Obj]]:
    uid = "12345II"
    pod = vpod(
        "abc", [ephemeral("x", "csi-sc"), ephemeral("y", "csi-sc")], ns="test", uid=uid, on=NODE
    )
    claims = [claim(f"abc-{v}", "csi-sc", ns="test", owner=("abc", uid)) for v in "xy"]
    return pod, claims


TWO_EPHEMERAL, TWO_EPHEMERAL_CLAIMS = ephemeral_two()

CASES = [
    limits_case(
        "fits when node volume limit >= new pods CSI volume",
        pod_of("p", *EBS_ONE),
        [RUNNING, existing_two("a")],
        [EBS],
        4,
        ok=True,
    ),
    limits_case(
        "doesn't when node volume limit <= pods CSI volume",
        pod_of("p", *EBS_ONE),
        [RUNNING, existing_two("a")],
        [EBS],
        2,
        ok=False,
    ),
    limits_case(
        "should when driver does not support volume limits",
        pod_of("p", *EBS_ONE),
        [RUNNING, existing_two("a")],
        [EBS],
        2,
        "csinode-with-no-limit",
        ok=True,
    ),
    limits_case(
        "count pending PVCs towards volume limit <= pods CSI volume",
        pod_of("p", *EBS_ONE),
        [PENDING_VOLUME, existing_two("a")],
        [EBS],
        2,
        ok=False,
    ),
    limits_case(
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
        pod_of("p", *EBS_ONE),
        [PENDING_VOLUME, UNBOUND_2, existing_two("a")],
        [EBS],
        4,
        ok=True,
    ),
    limits_case(
        "should count PVCs with invalid PV name but valid SC",
        pod_of("p", *EBS_ONE),
        [MISSING_PV, existing_two("a")],
        [EBS],
        2,
        ok=False,
    ),
    limits_case(
        "don't count pvcs with missing SC towards volume limit",
        pod_of("p", *EBS_ONE),
        [RUNNING, NO_SC],
        [EBS],
        2,
        ok=True,
    ),
    limits_case(
        "count pvcs with the same type towards volume limit",
        pod_of("p", *EBS_ONE),
        [pod_of("gce-two", *GCE_TWO, on=True), existing_two("a")],
        [EBS, GCE],
        2,
        ok=False,
    ),
    limits_case(
        "don't count pvcs with different type towards volume limit",
        pod_of("p", *GCE_TWO),
        [existing_two("a"), RUNNING],
        [EBS, GCE],
        2,
        ok=True,
    ),
    limits_case(
        "should count in-tree volumes if migration is enabled",
        pod_of("p", *IN_TREE_ONE),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        ok=False,
    ),
    limits_case(
        "nil csi node",
        vpod("p", INLINE),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        None,
        "",
        ok=True,
    ),
    limits_case(
        "should count unbound in-tree volumes if migration is enabled",
        pod_of("p", "csi-4"),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        ok=False,
    ),
    limits_case(
        "should not limit pod if volume used does not report limits",
        pod_of("p", *IN_TREE_ONE),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        "csinode-with-no-limit",
        ok=True,
    ),
    limits_case(
        "should not count non-migratable in-tree volumes",
        pod_of("p", name_of(HOSTPATH_IN_TREE, 0)),
        [existing_two("a")],
        [HOSTPATH_IN_TREE, EBS],
        2,
        ok=True,
    ),
    limits_case(
        "should count in-tree inline volumes if migration is enabled",
        vpod("p", INLINE),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        ok=False,
    ),
    limits_case(
        "should count in-tree and csi volumes if migration is enabled "
        "(when scheduling in-tree volumes)",
        pod_of("p", *IN_TREE_ONE),
        [existing_two("a")],
        [EBS_IN_TREE, EBS],
        2,
        ok=False,
    ),
    limits_case(
        "should count in-tree, inline and csi volumes if migration is enabled "
        "(when scheduling in-tree volumes)",
        vpod("p", INLINE),
        [existing_two("a"), pod_of("in-tree-one", *IN_TREE_ONE, on=True)],
        [EBS_IN_TREE, EBS],
        3,
        ok=False,
    ),
    limits_case(
        "should not count in-tree, inline and csi volumes if migration is enabled "
        "(when scheduling in-tree volumes)",
        vpod("p", INLINE_SAME_ID),
        [existing_two("a"), pod_of("in-tree-one", *IN_TREE_ONE, on=True)],
        [EBS_IN_TREE, EBS],
        3,
        ok=True,
    ),
    limits_case(
        "should count in-tree and csi volumes if migration is enabled "
        "(when scheduling csi volumes)",
        pod_of("p", *EBS_ONE),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        ok=False,
    ),
    limits_case(
        "ephemeral volume not owned",
        ephemeral_pod(),
        [],
        [EBS],
        None,
        "csinode-with-no-limit",
        ok=False,
        message=(
            "0/1 nodes are available: PVC test/abc-xyz was not created for pod test/abc "
            "(pod is not owner)."
        ),
        extra=[CONFLICTING_CLAIM],
    ),
    limits_case(
        "ephemeral volume unbound",
        ephemeral_pod(),
        [],
        [EBS],
        None,
        "csinode-with-no-limit",
        ok=True,
        extra=[EPHEMERAL_CLAIM],
    ),
    limits_case(
        "ephemeral doesn't when node volume limit <= pods CSI volume",
        ephemeral_pod(),
        [RUNNING, existing_two("a")],
        [EBS],
        2,
        ok=False,
        extra=[EPHEMERAL_CLAIM],
    ),
    limits_case(
        "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
        pod_of("p", *EBS_ONE),
        [RUNNING, TWO_EPHEMERAL],
        [EBS],
        2,
        ok=False,
        extra=TWO_EPHEMERAL_CLAIMS,
    ),
    limits_case(
        "persistent doesn't when node volume limit <= pods ephemeral CSI volume "
        "+ persistent volume",
        pod_of("p", *EBS_ONE),
        [RUNNING, ephemeral_pod(on=True), existing_two("a")],
        [EBS],
        3,
        ok=False,
        extra=[EPHEMERAL_CLAIM],
    ),
    limits_case(
        "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
        pod_of("p", *EBS_ONE),
        [RUNNING, ephemeral_pod(on=True), existing_two("a")],
        [EBS],
        5,
        ok=True,
        extra=[EPHEMERAL_CLAIM],
    ),
    limits_case(
        "skip Filter when the pod only uses secrets and configmaps",
        vpod("p", CONFIG_AND_SECRET),
        [],
        [EBS],
        2,
        ok=True,
    ),
    limits_case(
        "don't skip Filter when the pod has pvcs",
        vpod("p", [*CONFIG_AND_SECRET, pvc("d", name_of(EBS, 0))]),
        [],
        [EBS],
        2,
        ok=True,
    ),
    limits_case(
        "don't skip Filter when the pod has inline migratable volumes",
        vpod("p", [*CONFIG_AND_SECRET, *INLINE]),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        ok=False,
    ),
]


MIGRATION = "nodevolumelimits/utils.go: isCSIMigrationOn"
PORTWORX = "pxd.portworx.com"


def portworx(volume_id: str) -> list[Obj]:
    return [{"name": "px", "portworxVolume": {"volumeID": volume_id}}]


OUR_CASES = [
    limits_case(
        "doesn't when node volume limit <= pods CSI volume, with NodeVolumeLimitsEnable false",
        pod_of("p", *EBS_ONE),
        [RUNNING, existing_two("a")],
        [EBS],
        2,
        ok=True,
        config=with_predicates(**{"predicate.NodeVolumeLimitsEnable": False}),
        source="predicates (Volcano): 'predicate.NodeVolumeLimitsEnable'",
    ),
    limits_case(
        "an in-tree volume counts only where the CSINode lists its plugin as migrated",
        pod_of("p", *IN_TREE_ONE),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        ok=True,
        migrated=(),
        source=MIGRATION,
    ),
    limits_case(
        "an inline in-tree volume likewise",
        vpod("p", INLINE),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        ok=True,
        migrated=("kubernetes.io/gce-pd",),
        source=MIGRATION,
    ),
    limits_case(
        "a claim of an in-tree provisioner likewise",
        pod_of("p", "csi-4"),
        [in_tree_two()],
        [EBS_IN_TREE, EBS],
        2,
        ok=True,
        migrated=(),
        source=MIGRATION,
    ),
    limits_case(
        "inline Portworx volumes count under pxd.portworx.com (migration GA since 1.33)",
        vpod("p", portworx("px-2")),
        [vpod("px-user", portworx("px-1"), on=NODE)],
        [PORTWORX],
        1,
        ok=False,
        migrated=("kubernetes.io/portworx-volume",),
        source=MIGRATION,
    ),
    limits_case(
        "the same Portworx volume counts once",
        vpod("p", portworx("px-1")),
        [vpod("px-user", portworx("px-1"), on=NODE)],
        [PORTWORX],
        1,
        ok=True,
        migrated=("kubernetes.io/portworx-volume",),
        source=MIGRATION,
    ),
]


@pytest.mark.parametrize("case", vparams([*CASES, *OUR_CASES]))
def test_node_volume_limits(tmp_path: Path, capsys: Capsys, case: VolumeCase) -> None:
    check_volume_case(tmp_path, capsys, case)


def test_ephemeral_volume_missing() -> None:
    """TestCSILimits: 'ephemeral volume missing', on the plugin's volume count alone."""
    from types import MappingProxyType

    from pumice.model import TaskInfo
    from pumice.model.volumes import StorageObjects
    from pumice.plugins._volume_claims import PodVolumes
    from pumice.plugins._volume_limits import attached_volumes

    pod = ephemeral_pod()
    task = TaskInfo(uid=EPHEMERAL_POD_UID, name="abc", namespace="test", pod=pod)
    storage = StorageObjects(claims=MappingProxyType({}), served=True)
    assert attached_volumes(PodVolumes.of(task), storage, new=True) == (
        'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'
    )
