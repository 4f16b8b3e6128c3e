"""kube-scheduler's VolumeRestrictions tables, re-expressed as ``pumice simulate`` scenarios.

Source (kubernetes/kubernetes): ``pkg/scheduler/framework/plugins/volumerestrictions/
volume_restrictions_test.go`` — TestGCEDiskConflicts, TestAWSDiskConflicts,
TestRBDDiskConflicts, TestISCSIDiskConflicts, TestAccessModeConflicts; each case's id names
the test function and its case. The pods of the tables sit on one node with the pods of its
``NodeInfo``; here they are bound pods of another scheduler on ``node-1``.

In TestAccessModeConflicts the claims name no class and no volume: alone, VolumeRestrictions
passes them, but the whole scheduler turns the pod away in VolumeBinding's PreFilter (``pod
has unbound immediate PersistentVolumeClaims``). The claims here are bound to volumes, as the
claims of running pods are.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.volume_cases import (
    Capsys,
    VolumeCase,
    check_volume_case,
    claim,
    host,
    pvc,
    volume,
    vparams,
    vpod,
)

SOURCE = "volumerestrictions/volume_restrictions_test.go"
DISK = "0/1 nodes are available: 1 node(s) had no available disk."
RWOP = (
    "0/1 nodes are available: 1 node(s) unavailable due to PersistentVolumeClaim with "
    "ReadWriteOncePod access mode already in-use by another pod."
)

DISKS = {
    "TestGCEDiskConflicts": (
        {"gcePersistentDisk": {"pdName": "foo"}},
        {"gcePersistentDisk": {"pdName": "bar"}},
    ),
    "TestAWSDiskConflicts": (
        {"awsElasticBlockStore": {"volumeID": "foo"}},
        {"awsElasticBlockStore": {"volumeID": "bar"}},
    ),
    "TestRBDDiskConflicts": (
        {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
        {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
    ),
    "TestISCSIDiskConflicts": (
        {
            "iscsi": {
                "targetPortal": "127.0.0.1:3260",
                "iqn": "iqn.2016-12.server:storage.target01",
                "fsType": "ext4",
                "lun": 0,
            }
        },
        {
            "iscsi": {
                "targetPortal": "127.0.0.1:3260",
                "iqn": "iqn.2017-12.server:storage.target01",
                "fsType": "ext4",
                "lun": 0,
            }
        },
    ),
}


def disk(source: dict[str, object]) -> dict[str, object]:
    return {"name": "disk", **source}


def disk_case(
    test: str, name: str, incoming: dict[str, object], existing: list[dict[str, object]], ok: bool
) -> VolumeCase:
    return VolumeCase(
        source=f"{SOURCE}: {test}: '{name}'",
        objects=[host("node-1"), *existing],
        incoming=incoming,
        feasible=frozenset({"node-1"}) if ok else frozenset(),
        message="" if ok else DISK,
    )


def disk_cases() -> list[VolumeCase]:
    out = []
    for test, (state, state2) in DISKS.items():
        on_node = vpod("existing", [disk(state)], on="node-1")
        out += [
            disk_case(test, "nothing", vpod("p"), [], True),
            disk_case(test, "one state", vpod("p"), [on_node], True),
            disk_case(test, "same state", vpod("p", [disk(state)]), [on_node], False),
            disk_case(test, "different state", vpod("p", [disk(state2)]), [on_node], True),
        ]
    out.append(
        VolumeCase(
            source=f"{SOURCE}: TestGCEDiskConflicts: 'pod with a volume that doesn't have "
            "restrictions'",
            objects=[host("node-1")],
            incoming=vpod("p", [{"name": "no-restriction", "emptyDir": {}}]),
            feasible=frozenset({"node-1"}),
        )
    )
    return out


def read_only_cases() -> list[VolumeCase]:
    """``isVolumeConflict`` (volume_restrictions.go): two read-only mounts of one GCE PD do not
    conflict; two of one EBS volume always do."""
    pd = {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}
    ebs = {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}
    return [
        VolumeCase(
            source="volumerestrictions/volume_restrictions.go: isVolumeConflict: 'read-only PD'",
            objects=[host("node-1"), vpod("existing", [disk(pd)], on="node-1")],
            incoming=vpod("p", [disk(pd)]),
            feasible=frozenset({"node-1"}),
        ),
        VolumeCase(
            source="volumerestrictions/volume_restrictions.go: isVolumeConflict: 'read-only EBS'",
            objects=[host("node-1"), vpod("existing", [disk(ebs)], on="node-1")],
            incoming=vpod("p", [disk(ebs)]),
            message=DISK,
        ),
    ]


def access_mode_cases() -> list[VolumeCase]:
    test = f"{SOURCE}: TestAccessModeConflicts"
    claims = [
        claim("claim-with-rwop-1", volume="pv-rwop-1", modes=["ReadWriteOncePod"]),
        claim("claim-with-rwop-2", volume="pv-rwop-2", modes=["ReadWriteOncePod"]),
        claim("claim-with-rwx", volume="pv-rwx", modes=["ReadWriteMany"]),
    ]
    volumes = [
        volume("pv-rwop-1", modes=["ReadWriteOncePod"], claim_ref=("default", "claim-with-rwop-1")),
        volume("pv-rwop-2", modes=["ReadWriteOncePod"], claim_ref=("default", "claim-with-rwop-2")),
        volume("pv-rwx", modes=["ReadWriteMany"], claim_ref=("default", "claim-with-rwx")),
    ]
    one = [pvc("a", "claim-with-rwop-1")]
    two = [pvc("a", "claim-with-rwop-1"), pvc("b", "claim-with-rwop-2")]
    rwx = vpod("pod-with-rwx", [pvc("a", "claim-with-rwx")], on="node-1")
    storage = [host("node-1"), *claims, *volumes]
    return [
        VolumeCase(
            source=f"{test}: 'nothing'",
            objects=[host("node-1")],
            incoming=vpod("p"),
            feasible=frozenset({"node-1"}),
        ),
        VolumeCase(
            source=f"{test}: 'failed to get PVC'",
            objects=[host("node-1")],
            incoming=vpod("pod-with-one-pvc", one),
            message='0/1 nodes are available: persistentvolumeclaim "claim-with-rwop-1" not found.',
        ),
        VolumeCase(
            source=f"{test}: 'no access mode conflict'",
            objects=[*storage, rwx],
            incoming=vpod("pod-with-one-pvc", one),
            feasible=frozenset({"node-1"}),
        ),
        VolumeCase(
            source=f"{test}: 'access mode conflict, unschedulable'",
            objects=[*storage, vpod("pod-with-one-pvc", one, on="node-1"), rwx],
            incoming=vpod("pod-with-one-conflict", one),
            message=RWOP,
        ),
        VolumeCase(
            source=f"{test}: 'two conflicts, unschedulable'",
            objects=[*storage, vpod("pod-with-two-pvcs", two, on="node-1"), rwx],
            incoming=vpod("pod-with-two-conflicts", two),
            message=RWOP,
        ),
    ]


CASES = [*disk_cases(), *read_only_cases(), *access_mode_cases()]


@pytest.mark.parametrize("case", vparams(CASES))
def test_volume_restrictions(tmp_path: Path, capsys: Capsys, case: VolumeCase) -> None:
    check_volume_case(tmp_path, capsys, case)


def test_the_conflict_is_on_every_node_and_eviction_may_cure_it(
    tmp_path: Path, capsys: Capsys
) -> None:
    """The count is cluster-wide (kube-constraints.md 5.1): the claim's user on node-1 keeps
    the pod off node-2 too, and the reason is one preemption may resolve."""
    from pumice.plugins.predicates import RESOLVABLE

    objects = [
        host("node-1"),
        host("node-2"),
        claim("rwop", volume="pv", modes=["ReadWriteOncePod"]),
        volume("pv", modes=["ReadWriteOncePod"], claim_ref=("default", "rwop")),
        vpod("user", [pvc("a", "rwop")], on="node-1"),
    ]
    case = VolumeCase(
        source="volumerestrictions: cluster-wide",
        objects=objects,
        incoming=vpod("second", [pvc("a", "rwop")]),
        message=RWOP.replace("0/1", "0/2").replace(": 1 node", ": 2 node"),
    )
    check_volume_case(tmp_path, capsys, case)
    assert RWOP.split(": 1 ", 1)[1].rstrip(".") in RESOLVABLE
