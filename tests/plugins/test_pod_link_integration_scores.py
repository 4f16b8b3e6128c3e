"""kube-scheduler's integration score tables for InterPodAffinity and PodTopologySpread,
re-expressed as ``pumice simulate`` scenarios.

Source (kubernetes/kubernetes): ``test/integration/scheduler/scoring/priorities_test.go``,
TestPodAffinityScoring and TestPodTopologySpreadScoring; each case's id names the file, the test
function and the case. Upstream runs the whole scheduler with every filter but one score plugin
only, and states the nodes the pod may land on; here nodeorder runs with every scorer at weight
0 but the one the table enables (``podaffinity.weight`` or ``podtopologyspread.weight`` 1), and
the expected nodes are renamed to sort last, so that pumice's tie-break (the smallest name)
cannot pick one of them by chance: a pod placed among them was placed there by its score.

Names an API server would refuse are not at stake here; the tables' nodes keep their names.
Where TestPodTopologySpreadScoring taints a node with ``node.kubernetes.io/unschedulable``
(PreferNoSchedule), the case uses ``dedicated=infra`` with the same effect, without the cordon
that name implies.

Not re-expressed, and why:

* TestPodTopologySpreadScoring "matchLabelKeys ignored when feature gate disabled, node-1 is the
  preferred fit": it switches MatchLabelKeysInPodTopologySpread off, which is on (and locked) in
  the Kubernetes pumice follows; pumice has no such switch;
* TestDefaultPodTopologySpreadScoring: the constraints come from kube-scheduler's system
  defaults through a Service; pumice applies no default constraints and watches no Services
  (docs/pod-constraints.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.constraint_cases import (
    Capsys,
    exists,
    in_,
    namespace,
    node,
    placement_of,
    pod,
    renamed,
    run,
    score_config,
    sel,
    spread,
    term,
    weighted,
)
from support.manifests import pending
from support.spread_rows import Obj

PRIORITIES = "integration/scheduler/scoring/priorities_test.go"
AFFINITY_ONLY = score_config(podaffinity=1)
SPREAD_ONLY = score_config(podtopologyspread=1)


@dataclass(frozen=True)
class LandingCase:
    """One row of an integration score table: the nodes the pod may land on."""

    source: str
    nodes: Sequence[Obj]
    existing: Sequence[Obj]
    incoming: Obj
    landing: frozenset[str]
    config: str
    namespaces: Sequence[Obj] = ()

    @property
    def objects(self) -> list[Obj]:
        return [*self.namespaces, *self.nodes, *self.existing, self.incoming]

    @property
    def key(self) -> str:
        meta = self.incoming["metadata"]
        assert isinstance(meta, dict)
        return f"{meta['namespace']}/{meta['name']}"


# -- TestPodAffinityScoring ------------------------------------------------------------------

TOPOLOGY = "node-topologykey"
TEAM1 = (namespace("ns1", {"team": "team1"}), namespace("ns2", {"team": "team1"}))


def topo_nodes(*names: str) -> list[Obj]:
    """Nodes whose topology values cycle over the five (node1 and node6 share the first);
    ``other-…`` nodes carry no topology label."""
    out = []
    for name in names:
        if name.startswith("other"):
            out.append(node(name, {}))
        else:
            out.append(node(name, {TOPOLOGY: f"topologyvalue{(int(name[4:]) - 1) % 5}"}))
    return out


def three_values(*names: str) -> list[Obj]:
    """node1..node6 over three topology values (node1/node4, node2/node5, node3/node6)."""
    return [node(n, {TOPOLOGY: f"topologyvalue{(int(n[4:]) - 1) % 3}"}) for n in names]


TWELVE = topo_nodes(*(f"node{i}" for i in range(1, 11)), "other-node1", "other-node2")
SIX = three_values(*(f"node{i}" for i in range(1, 7)))
S1_OR_S3 = sel(in_("service", "S1", "S3"))
ATTRACTOR = pod("attractor-pod", {"service": "S1"}, ns="ns1", on="node1")
FOO_A = {"foo": "", "bar": "a"}


def affinity_case(
    name: str, nodes: list[Obj], existing: list[Obj], incoming: Obj, landing: set[str]
) -> LandingCase:
    return LandingCase(
        source=f"{PRIORITIES}: TestPodAffinityScoring: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        landing=frozenset(landing),
        config=AFFINITY_ONLY,
        namespaces=TEAM1,
    )


def on(name: str, where: str, **labels: str) -> Obj:
    return pod(name, labels, ns="ns1", on=where)


AFFINITY_CASES = [
    affinity_case(
        "pod affinity",
        TWELVE,
        [ATTRACTOR],
        pod("pod1", ns="ns1", preferred=[weighted(50, term(S1_OR_S3, TOPOLOGY))]),
        {"node1", "node6"},
    ),
    affinity_case(
        "pod affinity with namespace selector",
        TWELVE,
        [ATTRACTOR],
        pod("pod1", ns="ns2", preferred=[weighted(50, term(S1_OR_S3, TOPOLOGY, ns_selector={}))]),
        {"node1", "node6"},
    ),
    affinity_case(
        "anti affinity: matchLabelKeys is merged into LabelSelector with In operator "
        "(feature flag: enabled)",
        topo_nodes("node1", "node2"),
        [on("pod1", "node1", foo="", bar="fuga"), on("pod2", "node2", foo="", bar="a")],
        pod(
            "incoming",
            FOO_A,
            ns="ns1",
            preferred_anti=[weighted(50, term(sel(exists("foo")), TOPOLOGY, match_keys=["bar"]))],
        ),
        {"node1"},
    ),
    affinity_case(
        # the table's name has the two spaces
        "anti affinity: mismatchLabelKeys is merged into LabelSelector with NotIn operator  "
        "(feature flag: enabled)",
        topo_nodes("node1", "node2"),
        [on("pod1", "node1", foo="", bar="fuga"), on("pod2", "node2", foo="", bar="a")],
        pod(
            "incoming",
            FOO_A,
            ns="ns1",
            preferred_anti=[
                weighted(50, term(sel(exists("foo")), TOPOLOGY, mismatch_keys=["bar"]))
            ],
        ),
        {"node2"},
    ),
    affinity_case(
        "affinity: matchLabelKeys is merged into LabelSelector with In operator "
        "(feature flag: enabled)",
        SIX,
        [
            on("pod1", "node1", foo="", bar="hoge"),
            on("pod2", "node2", foo="", bar="hoge"),
            on("pod3", "node3", foo="", bar="a"),
        ],
        pod(
            "incoming",
            FOO_A,
            ns="ns1",
            preferred=[
                weighted(50, term(sel(exists("foo")), TOPOLOGY, match_keys=["bar"])),
                weighted(10, term(sel(in_("bar", "hoge")), TOPOLOGY)),
            ],
        ),
        {"node3", "node6"},
    ),
    affinity_case(
        "affinity: mismatchLabelKeys is merged into LabelSelector with NotIn operator "
        "(feature flag: enabled)",
        SIX,
        [
            on("pod1", "node1", foo="", bar="a"),
            on("pod2", "node2", foo="", bar="a"),
            on("pod3", "node3", foo="", bar="hoge"),
        ],
        pod(
            "incoming",
            FOO_A,
            ns="ns1",
            preferred=[
                weighted(50, term(sel(exists("foo")), TOPOLOGY, mismatch_keys=["bar"])),
                weighted(10, term(sel(in_("bar", "hoge")), TOPOLOGY)),
            ],
        ),
        {"node3", "node6"},
    ),
]


# -- TestPodTopologySpreadScoring ------------------------------------------------------------

FOO = sel(exists("foo"))
K1 = {"key": "k1", "value": "v1", "effect": "NoSchedule"}
PREFER_NOT = {"key": "dedicated", "value": "infra", "effect": "PreferNoSchedule"}
DEFAULT_NODES = [
    node("node-0", {"node": "node-0", "zone": "zone-0"}, taints=[K1]),
    node("node-1", {"node": "node-1", "zone": "zone-0"}),
    node("node-2", {"node": "node-2", "zone": "zone-1"}),
    node("node-3", {"node": "node-3", "zone": "zone-1"}),
]
"""The table's default nodes: node-0 carries a taint the pod does not tolerate."""
INCLUSION_NODES = [
    node("node-1", {"node": "node-1", "zone": "zone-1", "foo": ""}),
    node("node-2", {"node": "node-2", "zone": "zone-1", "foo": ""}, taints=[PREFER_NOT]),
    node("node-3", {"node": "node-3", "zone": "zone-2", "foo": ""}),
    node("node-4", {"node": "node-4", "zone": "zone-2"}),
]
"""The node-inclusion rows' nodes: node-4 lacks the pod's node selector."""


def soft(max_skew: int, key: str, selector: Obj, **kw: object) -> Obj:
    return spread(max_skew, key, selector, when="ScheduleAnyway", **kw)  # type: ignore[arg-type]


def placed(spec: str, **labels: str) -> list[Obj]:
    """``"2:ab 3:c"``: pods labelled foo (plus ``labels``) p2a and p2b on node-2, p3c on
    node-3."""
    return [
        pod(f"p{where}{suffix}", {"foo": "", **labels}, on=f"node-{where}")
        for where, suffixes in (part.split(":") for part in spec.split())
        for suffix in suffixes
    ]


def spread_case(
    name: str, nodes: list[Obj], existing: list[Obj], incoming: Obj, landing: str
) -> LandingCase:
    return LandingCase(
        source=f"{PRIORITIES}: TestPodTopologySpreadScoring: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        landing=frozenset({landing}),
        config=SPREAD_ONLY,
    )


def incoming(*spreads: Obj, labels: dict[str, str] | None = None, **kw: object) -> Obj:
    return pod("p", {"foo": ""} if labels is None else labels, spreads=spreads, **kw)  # type: ignore[arg-type]


FOO_BAR = {"foo": "", "bar": ""}
LABEL_KEY_PODS = [
    pod("p1", FOO_BAR, on="node-1"),
    *placed("2:ab"),
    pod("p3a", FOO_BAR, on="node-3"),
    pod("p3b", FOO_BAR, on="node-3"),
    *placed("3:c"),
]

SPREAD_CASES = [
    spread_case(
        "place pod on a ~0~/1/2/3 cluster with MaxSkew=1, node-1 is the preferred fit",
        DEFAULT_NODES,
        [pod("p1", {"foo": ""}, on="node-1"), *placed("2:ab 3:abc")],
        incoming(soft(1, "node", FOO)),
        "node-1",
    ),
    spread_case(
        "combined with hardSpread constraint on a ~4~/0/1/2 cluster",
        DEFAULT_NODES,
        [*placed("0:abcd"), pod("p2", {"foo": ""}, on="node-2"), *placed("3:ab")],
        incoming(soft(1, "node", FOO), spread(1, "zone", FOO)),
        "node-2",
    ),
    spread_case(
        "soft constraint with two node inclusion Constraints, zone: honor/ignore, node: "
        "honor/ignore",
        INCLUSION_NODES,
        placed("1:a 2:ab 4:a"),
        incoming(soft(1, "zone", FOO), soft(1, "node", FOO), node_selector={"foo": ""}),
        "node-3",
    ),
    spread_case(
        "soft constraint with two node inclusion Constraints, zone: ignore/ignore, node: "
        "honor/honor",
        INCLUSION_NODES,
        placed("1:a 2:ab 4:a"),
        incoming(
            soft(1, "zone", FOO, affinity_policy="Ignore"),
            soft(1, "node", FOO, taints_policy="Honor"),
            node_selector={"foo": ""},
        ),
        "node-3",
    ),
    spread_case(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty, node-2 is the "
        "preferred fit",
        DEFAULT_NODES,
        LABEL_KEY_PODS,
        incoming(soft(1, "node", FOO, match_keys=["bar"]), labels=FOO_BAR),
        "node-2",
    ),
    spread_case(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty, node-1 is the "
        "preferred fit",
        DEFAULT_NODES,
        [pod("p1", {"foo": ""}, on="node-1"), *placed("2:ab 3:abc")],
        incoming(soft(1, "node", sel(), match_keys=["foo"])),
        "node-1",
    ),
]


def params(cases: Sequence[LandingCase]) -> list[object]:
    assert len({c.source for c in cases}) == len(cases), "two cases share a name"
    return [pytest.param(c, id=c.source) for c in cases]


@pytest.mark.parametrize("case", params([*AFFINITY_CASES, *SPREAD_CASES]))
def test_the_pod_lands_where_the_table_says(
    case: LandingCase, tmp_path: Path, capsys: Capsys
) -> None:
    objects = case.objects
    for name in case.landing:
        objects = renamed(objects, name, "zz-" + name)
    result = run(tmp_path, capsys, objects, case.config)
    placement = placement_of(result, case.key)
    assert placement is not None, f"{case.source}: not placed: {pending(result).get(case.key)}"
    totals = {n: parts["total"] for n, parts in (placement.get("scores") or {}).items()}
    expected = sorted("zz-" + n for n in case.landing)
    assert placement["node"] in expected, (
        f"{case.source}: placed on {placement['node']}, expected one of {expected}; scores {totals}"
    )
