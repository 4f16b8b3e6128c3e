"""kube-scheduler's VolumeBinding table, re-expressed as ``pumice simulate`` scenarios.

Source (kubernetes/kubernetes): ``pkg/scheduler/framework/plugins/volumebinding/
volume_binding_test.go`` — TestVolumeBinding; each case's id names its case. The table's
classes: ``immediate-sc`` (Immediate), ``wait-sc`` and ``wait-hdd-sc`` (WaitForFirstConsumer),
none with a provisioner (here ``kubernetes.io/no-provisioner``, as an API server requires one).

What the table checks of the plugin's state after PreFilter is checked through its effect:
the nodes that pass, and (``volumes``) the volume ``pumice simulate`` reports chosen for each
claim on the node the pod went to. The capacity scores of the 'close capacity' cases belong to
the alpha ``StorageCapacityScoring`` gate, which pumice does not implement; their filter
verdicts are re-expressed, and the 'custom shape' case (a different score shape only) is not.

'pv not found' is the table's case with VolumeZone switched off (``predicate.VolumeZoneEnable:
false``): with it on, VolumeZone's PreFilter speaks first and the whole scheduler says
``persistentvolume "pv-a" not found`` (the case after it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.constraint_cases import FILTER_CONFIG, fit_error_head
from support.manifests import pending, simulate
from support.volume_cases import (
    Capsys,
    VolumeCase,
    check_volume_case,
    claim,
    host,
    pvc,
    storage_class,
    volume,
    vparams,
    vpod,
    with_predicates,
)

SOURCE = "volumebinding/volume_binding_test.go: TestVolumeBinding"
CLASSES = [
    storage_class("immediate-sc", mode="Immediate"),
    storage_class("wait-sc"),
    storage_class("wait-hdd-sc"),
]
PREFILTER = "volumebinding/volume_binding.go: PreFilter"
NO_ZONE = with_predicates(**{"predicate.VolumeZoneEnable": False})
REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"


def case(
    name: str,
    nodes: list[dict[str, object]],
    storage: list[dict[str, object]],
    claims: list[str],
    *,
    feasible: set[str] | None = None,
    message: str = "",
    volumes: dict[str, dict[str, str | None]] | None = None,
    config: str | None = None,
) -> VolumeCase:
    extra = {"config": config} if config is not None else {}
    return VolumeCase(
        source=f"{SOURCE}: '{name}'",
        objects=[*nodes, *CLASSES, *storage],
        incoming=vpod("pod-a", [pvc(f"v{i}", c) for i, c in enumerate(claims)]),
        feasible=frozenset(feasible or ()),
        message=f"0/{len(nodes)} nodes are available: {message}." if message else "",
        volumes=volumes or {},
        **extra,  # type: ignore[arg-type]
    )


def hostname_pv(
    name: str, size: str, node: str, cls: str = "wait-sc", claim: str | None = None
) -> dict[str, object]:
    ref = ("default", claim) if claim else None
    return volume(name, cls, size=size, affinity={"kubernetes.io/hostname": [node]}, claim_ref=ref)


def with_attributes_class(obj: dict[str, object], name: str) -> dict[str, object]:
    spec = obj["spec"]
    assert isinstance(spec, dict)
    spec["volumeAttributesClassName"] = name
    return obj


NODE_A = [host("node-a")]
THREE = [host("node-a"), host("node-b"), host("node-c")]
ZONES = [
    host(f"zone-{z}-node-{n}", **{REGION: f"region-{z}", ZONE: f"zone-{z}"})
    for z in "abc"
    for n in "ab"
]

CASES = [
    case("pod has not pvcs", NODE_A, [], [], feasible={"node-a"}),
    case(
        "all bound",
        NODE_A,
        [
            claim("pvc-a", "wait-sc", volume="pv-a"),
            volume("pv-a", "wait-sc", claim_ref=("default", "pvc-a")),
        ],
        ["pvc-a"],
        feasible={"node-a"},
    ),
    case(
        "all bound with local volumes",
        NODE_A,
        [
            claim("pvc-a", "wait-sc", volume="pv-a"),
            claim("pvc-b", "wait-sc", volume="pv-b"),
            hostname_pv("pv-a", "1Gi", "node-a"),
            hostname_pv("pv-b", "1Gi", "node-a"),
        ],
        ["pvc-a", "pvc-b"],
        feasible={"node-a"},
    ),
    case(
        "PVC does not exist",
        NODE_A,
        [],
        ["pvc-a"],
        message='persistentvolumeclaim "pvc-a" not found',
    ),
    case(
        "Part of PVCs do not exist",
        NODE_A,
        [claim("pvc-a", "wait-sc", volume="pv-a"), volume("pv-a", "wait-sc")],
        ["pvc-a", "pvc-b"],
        message='persistentvolumeclaim "pvc-b" not found',
    ),
    case(
        "immediate claims not bound",
        NODE_A,
        [claim("pvc-a", "immediate-sc")],
        ["pvc-a"],
        message="pod has unbound immediate PersistentVolumeClaims",
    ),
    case(
        "unbound claims no matches",
        NODE_A,
        [claim("pvc-a", "wait-sc")],
        ["pvc-a"],
        message="1 node(s) didn't find available persistent volumes to bind",
    ),
    case(
        "bound and unbound unsatisfied",
        [host("node-a", foo="barbar")],
        [
            claim("pvc-a", "wait-sc", volume="pv-a"),
            claim("pvc-b", "wait-sc"),
            volume("pv-a", "wait-sc", affinity={"foo": ["bar"]}),
        ],
        ["pvc-a", "pvc-b"],
        message=(
            "1 node(s) didn't find available persistent volumes to bind, "
            "1 node(s) didn't match PersistentVolume's node affinity"
        ),
    ),
    case("pvc not found", NODE_A, [], ["pvc-a"], message='persistentvolumeclaim "pvc-a" not found'),
    case(
        "pv not found",
        NODE_A,
        [claim("pvc-a", "wait-sc", volume="pv-a")],
        ["pvc-a"],
        message="1 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
        config=NO_ZONE,
    ),
    VolumeCase(
        source="volumebinding + volumezone: 'pv not found', the whole scheduler",
        objects=[*NODE_A, *CLASSES, claim("pvc-a", "wait-sc", volume="pv-a")],
        incoming=vpod("pod-a", [pvc("v", "pvc-a")]),
        message='0/1 nodes are available: persistentvolume "pv-a" not found.',
    ),
    case(
        "pv not found claim lost",
        NODE_A,
        [claim("pvc-a", "wait-sc", volume="pv-a", phase="Lost")],
        ["pvc-a"],
        message='persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',
    ),
    case(
        "local volumes with close capacity are preferred",
        THREE,
        [
            claim("pvc-a", "wait-sc", size="50Gi"),
            hostname_pv("pv-a-0", "200Gi", "node-a"),
            hostname_pv("pv-a-1", "200Gi", "node-a"),
            hostname_pv("pv-b-0", "100Gi", "node-b"),
            hostname_pv("pv-b-1", "100Gi", "node-b"),
        ],
        ["pvc-a"],
        feasible={"node-a", "node-b"},
        volumes={"default/pvc-a": {"node-a": "pv-a-0", "node-b": "pv-b-0"}},
    ),
    case(
        "local volumes with close capacity are preferred (multiple pvcs)",
        THREE,
        [
            claim("pvc-0", "wait-sc", size="50Gi"),
            claim("pvc-1", "wait-hdd-sc", size="100Gi"),
            hostname_pv("pv-a-0", "200Gi", "node-a"),
            hostname_pv("pv-a-1", "200Gi", "node-a"),
            hostname_pv("pv-a-2", "200Gi", "node-a", "wait-hdd-sc"),
            hostname_pv("pv-a-3", "200Gi", "node-a", "wait-hdd-sc"),
            hostname_pv("pv-b-0", "100Gi", "node-b"),
            hostname_pv("pv-b-1", "100Gi", "node-b"),
            hostname_pv("pv-b-2", "100Gi", "node-b", "wait-hdd-sc"),
            hostname_pv("pv-b-3", "100Gi", "node-b", "wait-hdd-sc"),
        ],
        ["pvc-0", "pvc-1"],
        feasible={"node-a", "node-b"},
        volumes={
            "default/pvc-0": {"node-a": "pv-a-0", "node-b": "pv-b-0"},
            "default/pvc-1": {"node-a": "pv-a-2", "node-b": "pv-b-2"},
        },
    ),
    case(
        "zonal volumes with close capacity are preferred",
        ZONES,
        [
            claim("pvc-a", "wait-sc", size="50Gi"),
            *(
                volume(
                    f"pv-{z}-{i}",
                    "wait-sc",
                    size=size,
                    affinity={REGION: [f"region-{z}"], ZONE: [f"zone-{z}"]},
                )
                for z, size in (("a", "200Gi"), ("b", "100Gi"))
                for i in (0, 1)
            ),
        ],
        ["pvc-a"],
        feasible={"zone-a-node-a", "zone-a-node-b", "zone-b-node-a", "zone-b-node-b"},
        volumes={
            "default/pvc-a": {
                "zone-a-node-a": "pv-a-0",
                "zone-a-node-b": "pv-a-0",
                "zone-b-node-a": "pv-b-0",
                "zone-b-node-b": "pv-b-0",
            }
        },
    ),
]


def our_cases() -> list[VolumeCase]:
    """Cases of ``binder.go`` / ``volume_binding.go`` behaviour the table does not state."""
    where = "volumebinding/binder.go"
    provisioner = storage_class("fast", provisioner="csi.example.com", allowed=[{ZONE: ["z1"]}])
    nodes = [host("n1", **{ZONE: "z1"}), host("n2", **{ZONE: "z2"})]
    return [
        VolumeCase(
            source=f"{where}: checkVolumeProvisions: 'provisioned inside allowedTopologies only'",
            objects=[*nodes, provisioner, claim("c", "fast")],
            incoming=vpod("p", [pvc("v", "c")]),
            feasible=frozenset({"n1"}),
            volumes={"default/c": {"n1": None}},
        ),
        VolumeCase(
            source=f"{where}: FindPodVolumes: 'a selected node pins the claim'",
            objects=[
                *nodes,
                storage_class("any", provisioner="csi.example.com"),
                claim("c", "any", selected="n2"),
            ],
            incoming=vpod("p", [pvc("v", "c")]),
            feasible=frozenset({"n2"}),
            volumes={"default/c": {"n2": None}},
        ),
        VolumeCase(
            source=f"{where}: FindMatchingVolume: 'a volume pre-bound to the claim is taken'",
            objects=[
                *nodes,
                *CLASSES,
                claim("c", "wait-sc", size="1Gi"),
                hostname_pv("small", "1Gi", "n1"),
                hostname_pv("pre", "5Gi", "n2", claim="c"),
            ],
            incoming=vpod("p", [pvc("v", "c")]),
            feasible=frozenset({"n2"}),
            volumes={"default/c": {"n2": "pre"}},
        ),
        VolumeCase(
            source=f"{where}: findMatchingVolumes: 'claims are matched smallest request first'",
            objects=[
                host("node-a"),
                *CLASSES,
                claim("big", "wait-sc", size="2Gi"),
                claim("small", "wait-sc", size="1Gi"),
                hostname_pv("pv-2", "2Gi", "node-a"),
                hostname_pv("pv-3", "3Gi", "node-a"),
            ],
            # in the pod's order "big" would take pv-2 and leave pv-3 to "small"
            incoming=vpod("p", [pvc("v0", "big"), pvc("v1", "small")]),
            feasible=frozenset({"node-a"}),
            volumes={"default/small": {"node-a": "pv-2"}, "default/big": {"node-a": "pv-3"}},
        ),
        VolumeCase(
            source=f"{where}: FindMatchingVolume: 'the volume attributes classes must agree'",
            objects=[
                host("node-a"),
                host("node-b"),
                *CLASSES,
                with_attributes_class(claim("gold", "wait-sc"), "gold"),
                hostname_pv("plain", "1Gi", "node-a"),
                with_attributes_class(hostname_pv("golden", "5Gi", "node-b"), "gold"),
            ],
            incoming=vpod("p", [pvc("v", "gold")]),
            feasible=frozenset({"node-b"}),
            volumes={"default/gold": {"node-b": "golden"}},
        ),
        VolumeCase(
            source=f"{PREFILTER}: podHasPVCs: 'a claim being deleted'",
            objects=[*nodes, *CLASSES, claim("c", "wait-sc", deleting=True)],
            incoming=vpod("p", [pvc("v", "c")]),
            message='0/2 nodes are available: persistentvolumeclaim "c" is being deleted.',
        ),
        VolumeCase(
            source=f"{PREFILTER}: 'bound local volumes narrow the nodes'",
            objects=[
                host("node-a"),
                host("node-b"),
                *CLASSES,
                claim("pvc-a", "wait-sc", volume="pv-a"),
                hostname_pv("pv-a", "1Gi", "node-a"),
            ],
            incoming=vpod("pod-a", [pvc("v", "pvc-a")]),
            feasible=frozenset({"node-a"}),
        ),
        VolumeCase(
            source=f"{PREFILTER}: 'the other nodes are not evaluated'",
            objects=[
                host("node-a"),
                host("node-b"),
                host("node-c"),
                *CLASSES,
                claim("pvc-a", "wait-sc", volume="pv-a"),
                hostname_pv("pv-a", "1Gi", "node-a"),
                vpod("big", on="node-a", cpu="16"),
            ],
            incoming=vpod("pod-a", [pvc("v", "pvc-a")]),
            message=(
                "0/3 nodes are available: 1 Insufficient cpu, "
                "2 node(s) didn't satisfy plugin(s) [VolumeBinding]."
            ),
        ),
    ]


@pytest.mark.parametrize("case", vparams([*CASES, *our_cases()]))
def test_volume_binding(tmp_path: Path, capsys: Capsys, case: VolumeCase) -> None:
    check_volume_case(tmp_path, capsys, case)


def test_one_volume_is_given_to_one_claim_in_a_session(tmp_path: Path, capsys: Capsys) -> None:
    """binder.go AssumePodVolumes: a volume chosen for one pod's claim is taken for the pods
    after it (kube-scheduler assumes it in its PV cache; here the session's own choices
    count): two pods, each with its own claim, and one local volume that fits either."""
    pods = [vpod(name, [pvc("v", f"data-{name}")]) for name in ("first", "second")]
    objects = [
        host("node-a"),
        host("node-b"),
        *CLASSES,
        claim("data-first", "wait-sc"),
        claim("data-second", "wait-sc"),
        hostname_pv("only", "1Gi", "node-a"),
        *pods,
    ]
    result = simulate(tmp_path, objects, capsys, config=FILTER_CONFIG)
    placed = {p["pod"]: p["node"] for p in result["placements"]}
    assert list(placed.values()) == ["node-a"], placed
    winner = next(iter(placed)).split("/")[1]
    loser = "second" if winner == "first" else "first"
    assert result["volumes"] == {f"default/data-{winner}": {"node": "node-a", "volume": "only"}}
    assert fit_error_head(pending(result)[f"default/{loser}"]) == (
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
    )
