"""kube-scheduler's PodTopologySpread filter tables, re-expressed as ``pumice simulate`` scenarios.

Sources (kubernetes/kubernetes; each case's id names its file, test function and case):

* ``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go``: TestSingleConstraint
  and TestMultipleConstraints (TestPreFilterState is in ``test_podtopologyspread_state_tables.py``,
  TestPreFilterStateAddPod / RemovePod in ``test_pod_links_add_remove.py``);
* ``test/integration/scheduler/filters/filters_test.go``: TestPodTopologySpreadFilter.

The score table (``scoring_test.go``) is in ``test_podtopologyspread_score_tables.py``.

The unit tables run the spread plugin alone ("in real case, it's false" say their comments where
NodeAffinity or TaintToleration would reject a node); here the whole scheduler runs, so a case
states the nodes that pass every filter. The expected verdicts were worked out from
kube-constraints.md sections 2 and 3 and are checked against the independent checker of
``support/constraint_checker.py`` (``test_tables_agree_with_the_checker``).

Not re-expressed here, and why:

* TestPodTopologySpreadFilter "feature gate disabled, two node inclusion Constraints, zone:
  honor/ignore, node: honor/ignore" and "matchLabelKeys ignored when feature gate disabled, pods
  spread across zone as 2/1": they switch NodeInclusionPolicyInPodTopologySpread or
  MatchLabelKeysInPodTopologySpread off; both are on and locked in the Kubernetes pumice follows,
  and pumice has no such switch;
* TestPodTopologySpreadFilter "high priority pod can preempt others": a preemption row, in
  ``tests/actions/test_preempt_pod_links.py`` with pumice's preempt action.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.constraint_cases import (
    NO_SCHEDULE,
    Capsys,
    FilterCase,
    check_case_against_checker,
    check_filter_case,
    node,
    node_in,
    node_not_in,
    params,
    pod,
    sel,
    spread,
)
from support.constraint_checker import NODE_AFFINITY, SPREAD, SPREAD_MISSING_LABEL
from support.spread_rows import (
    ALL4,
    BAR,
    FOO,
    INTEGRATION,
    NODE_1,
    ZONE_1,
    Obj,
    case,
    foo,
    four,
    p,
    pods,
    zn,
)


def single(
    name: str,
    nodes: list[Obj],
    existing: list[Obj],
    incoming: Obj,
    feasible: set[str],
    reasons: dict[str, int] | None = None,
    *,
    note: str = "",
) -> FilterCase:
    return case(
        "TestSingleConstraint", name, nodes, existing, incoming, feasible, reasons, note=note
    )


def multiple(
    name: str,
    nodes: list[Obj],
    existing: list[Obj],
    incoming: Obj,
    feasible: set[str],
    reasons: dict[str, int] | None = None,
) -> FilterCase:
    return case("TestMultipleConstraints", name, nodes, existing, incoming, feasible, reasons)


SINGLE = [
    single("no existing pods", four(), [], p(ZONE_1), ALL4),
    single(
        "no existing pods, incoming pod doesn't match itself",
        four(),
        [],
        p(spread(1, "zone", BAR)),
        ALL4,
    ),
    single(
        "existing pods in a different namespace do not count",
        four(),
        [
            pod("p-a1", {"foo": ""}, ns="ns1", on="node-a"),
            pod("p-b1", {"foo": ""}, ns="ns2", on="node-a"),
            *pods("x1 y1"),
        ],
        p(ZONE_1),
        {"node-a", "node-b"},
    ),
    single(
        "existing pods do not match null selector",
        four(),
        pods("x1 y1"),
        p(spread(1, "zone", None)),
        ALL4,
    ),
    single(
        "pods spread across zones as 3/3, all nodes fit", four(), pods("a2 b1 y3"), p(ZONE_1), ALL4
    ),
    single(
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        [
            zn("node-a", "zone1"),
            node("node-b", {"zon": "zone1", "node": "node-b"}),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ],
        pods("a1 b1 x1 y1"),
        p(ZONE_1),
        {"node-a"},
    ),
    single(
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        p(spread(1, "rack", FOO)),
        set(),
        {SPREAD_MISSING_LABEL: 2},
    ),
    single(
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        four(),
        pods("a2 b1 y3"),
        p(NODE_1),
        {"node-x"},
    ),
    single(
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        four(),
        pods("a2 b1 y3"),
        p(spread(2, "node", FOO)),
        {"node-b", "node-x"},
    ),
    single(
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        four(),
        pods("a2 b1 y3"),
        p(NODE_1, labels={"bar": ""}),
        {"node-b", "node-x"},
    ),
    single(
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        four(),
        pods("a2 b1 y3"),
        p(NODE_1, node_affinity=node_in("node", "node-a", "node-y")),
        {"node-a"},
        note="node-b and node-x fail node affinity here (the unit table does not run it)",
    ),
    single(
        "terminating Pods should be excluded",
        [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"})],
        [pod("p-a", {"foo": ""}, on="node-a", terminating=True), foo("p-b", "node-b")],
        p(NODE_1),
        {"node-a"},
    ),
    single(
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        four(),
        pods("b2 y1"),
        p(ZONE_1, node_affinity=node_not_in("node", "node-b")),
        {"node-a"},
    ),
    single(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < "
        "minDomains, then the third node fits",
        [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        pods("a2 b2 c1"),
        p(spread(2, "node", FOO, min_domains=4)),
        {"node-c"},
    ),
    single(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > "
        "minDomains, then the all nodes fit",
        [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        pods("a2 b2 c1"),
        p(spread(2, "node", FOO, min_domains=2)),
        {"node-a", "node-b", "node-c"},
    ),
    single(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
        "then the third and fourth nodes fit",
        four(),
        pods("a1 b1 y1"),
        p(spread(2, "zone", FOO, min_domains=3)),
        {"node-x", "node-y"},
    ),
    single(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, "
        "then the all nodes fit",
        four(),
        pods("a1 b1 y1"),
        p(spread(2, "zone", FOO, min_domains=1)),
        ALL4,
    ),
    single(
        "NodeAffinityPolicy honored with labelSelectors",
        [
            node(n, {"node": n, **({} if n == "node-y" else {"foo": ""})})
            for n in ("node-a", "node-b", "node-x", "node-y")
        ],
        pods("a1 b1 y1"),
        p(NODE_1, node_selector={"foo": ""}),
        {"node-x"},
    ),
    single(
        "NodeAffinityPolicy honored with nodeAffinity",
        [
            node(n, {"node": n, **({} if n == "node-y" else {"foo": ""})})
            for n in ("node-a", "node-b", "node-x", "node-y")
        ],
        pods("a1 b1 y1"),
        p(NODE_1, node_affinity=node_in("foo", "")),
        {"node-x"},
    ),
    single(
        "NodeAffinityPolicy ignored with labelSelectors",
        [
            node(n, {"node": n, **({} if n == "node-y" else {"foo": ""})})
            for n in ("node-a", "node-b", "node-x", "node-y")
        ],
        pods("a1 b1 y1"),
        p(spread(1, "node", FOO, affinity_policy="Ignore"), node_selector={"foo": ""}),
        {"node-x"},
    ),
    single(
        "NodeAffinityPolicy ignored with labelSelectors [nodeAffinity]",
        [
            node(n, {"node": n, **({} if n == "node-y" else {"foo": ""})})
            for n in ("node-a", "node-b", "node-x", "node-y")
        ],
        pods("a1 b1 y1"),
        p(spread(1, "node", FOO, affinity_policy="Ignore"), node_affinity=node_in("foo", "")),
        {"node-x"},
        note="the table has two rows of this name; the second uses required node affinity",
    ),
    single(
        "NodeTaintsPolicy ignored",
        [
            *(node(n, {"node": n, "foo": ""}) for n in ("node-a", "node-b", "node-x")),
            node("node-y", {"node": "node-y"}, taints=[NO_SCHEDULE]),
        ],
        pods("a1 b1 y1"),
        p(NODE_1),
        {"node-x"},
    ),
    single(
        "NodeTaintsPolicy honored",
        [
            *(node(n, {"node": n, "foo": ""}) for n in ("node-a", "node-b", "node-x")),
            node("node-y", {"node": "node-y"}, taints=[NO_SCHEDULE]),
        ],
        pods("a1 b1 y1"),
        p(spread(1, "node", FOO, taints_policy="Honor")),
        {"node-x"},
    ),
]

MULTIPLE = [
    multiple(
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        four(),
        pods("a2 b1 y3"),
        p(ZONE_1, NODE_1),
        {"node-x"},
    ),
    multiple(
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        four(),
        pods("a2 b1 y4"),
        p(ZONE_1, NODE_1),
        set(),
        {SPREAD: 4},
    ),
    multiple(
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        four(),
        [foo("p-a1", "node-a"), pod("p-y1", {"bar": ""}, on="node-y")],
        p(ZONE_1, spread(1, "node", BAR), labels={"foo": "", "bar": ""}),
        {"node-x"},
    ),
    multiple(
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        four(),
        [
            foo("p-a1", "node-a"),
            pod("p-x1", {"bar": ""}, on="node-x"),
            pod("p-y1", {"bar": ""}, on="node-y"),
        ],
        p(ZONE_1, spread(1, "node", BAR), labels={"foo": "", "bar": ""}),
        set(),
        {SPREAD: 4},
    ),
    multiple(
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        four(),
        [
            foo("p-a1", "node-a"),
            foo("p-a2", "node-a", bar=""),
            foo("p-y1", "node-y"),
            foo("p-y2", "node-y", bar=""),
            foo("p-y3", "node-y"),
        ],
        p(ZONE_1, spread(1, "node", BAR), labels={"foo": "", "bar": ""}),
        {"node-b"},
    ),
    multiple(
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' "
        "constraint",
        four(),
        [
            foo("p-a1", "node-a"),
            pod("p-x1", {"bar": ""}, on="node-x"),
            pod("p-y1", {"bar": ""}, on="node-y"),
        ],
        p(ZONE_1, spread(1, "node", BAR), labels={"bar": ""}),
        {"node-a", "node-b"},
    ),
    multiple(
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = "
        "[1/1, 1/0/0/1]",
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            node("node-x", {"zone": "zone2"}),
            zn("node-y", "zone2"),
        ],
        [foo("p-a1", "node-a"), foo("p-y3", "node-y")],
        p(ZONE_1, NODE_1),
        {"node-b"},
    ),
    multiple(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        four(node_a={"foo": ""}, node_b={"foo": ""}, node_x={"foo": ""}),
        pods("a1 b1 y1"),
        p(ZONE_1, spread(1, "node", FOO, affinity_policy="Ignore"), node_selector={"foo": ""}),
        {"node-x"},
    ),
    multiple(
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        [
            *four(node_a={"foo": ""}, node_b={"foo": ""}, node_x={"foo": ""})[:3],
            node("node-y", {"zone": "zone2", "node": "node-y"}, taints=[NO_SCHEDULE]),
        ],
        pods("a1 b1 y1"),
        p(spread(1, "zone", FOO, taints_policy="Honor"), NODE_1),
        {"node-x"},
    ),
    multiple(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            node("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, taints=[NO_SCHEDULE]),
        ],
        pods("a1 b1 y1"),
        p(ZONE_1, NODE_1, node_selector={"foo": ""}),
        {"node-x"},
    ),
    multiple(
        "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            node("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, taints=[NO_SCHEDULE]),
        ],
        pods("a1 b1 y1"),
        p(
            spread(1, "zone", FOO, taints_policy="Honor"),
            spread(1, "node", FOO, affinity_policy="Ignore"),
            node_selector={"foo": ""},
        ),
        {"node-x"},
    ),
]


# TestPodTopologySpreadFilter: node-0, node-1 in zone-0; node-2, node-3 in zone-1 (labels "node"
# and "zone").
def numbered(**extra: dict[str, str]) -> list[Obj]:
    return [
        node(
            f"node-{i}",
            {"node": f"node-{i}", "zone": f"zone-{i // 2}", **extra.get(f"node_{i}", {})},
        )
        for i in range(4)
    ]


def placed(*spec: str, **labels: str) -> list[Obj]:
    """``placed("0", "0", "3")``: pods labelled foo on node-0 (twice) and node-3."""
    return [pod(f"e{k}", {"foo": "", **labels}, on=f"node-{n}") for k, n in enumerate(spec)]


def integration(
    name: str,
    nodes: list[Obj],
    existing: list[Obj],
    incoming: Obj,
    feasible: set[str],
    reasons: dict[str, int] | None = None,
) -> FilterCase:
    return case(
        "TestPodTopologySpreadFilter",
        name,
        nodes,
        existing,
        incoming,
        feasible,
        reasons,
        source=INTEGRATION,
    )


def one_to_four(*, tainted: tuple[int, ...] = ()) -> list[Obj]:
    """node-1, node-2 in zone-1; node-3, node-4 in zone-2; all but node-3 labelled foo."""
    return [
        node(
            f"node-{i}",
            {
                "node": f"node-{i}",
                "zone": f"zone-{(i + 1) // 2}",
                **({} if i == 3 else {"foo": ""}),
            },
            taints=[NO_SCHEDULE] if i in tainted else (),
        )
        for i in range(1, 5)
    ]


EXCEPT_0 = node_not_in("node", "node-0")

INTEGRATION_CASES = [
    integration(
        "place pod on a 1/1/0/1 cluster with MaxSkew=1, node-2 is the only fit",
        numbered(),
        placed("0", "1", "3"),
        p(NODE_1),
        {"node-2"},
    ),
    integration(
        "place pod on a 2/0/0/1 cluster with MaxSkew=2, node-{1,2,3} are good fits",
        numbered(),
        placed("0", "0", "3"),
        p(spread(2, "node", FOO)),
        {"node-1", "node-2", "node-3"},
    ),
    integration(
        "pod is required to be placed on zone0, so only node-1 fits",
        numbered(),
        placed("0", "3"),
        p(NODE_1, node_affinity=node_in("zone", "zone-0")),
        {"node-1"},
    ),
    integration(
        "two constraints: pod can only be placed to zone-1/node-2",
        numbered(),
        placed("0", "1", "3", "3"),
        p(ZONE_1, NODE_1),
        {"node-2"},
    ),
    integration(
        "pod cannot be placed onto any node",
        numbered(),
        placed("1", "1", "2", "2", "3"),
        p(ZONE_1, NODE_1, node_affinity=EXCEPT_0),
        set(),
        {NODE_AFFINITY: 1, SPREAD: 3},
    ),
    integration(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < "
        "minDomains, then the third node fits",
        numbered(),
        placed("1", "1", "2", "2", "3"),
        p(spread(2, "node", FOO, min_domains=4), node_affinity=EXCEPT_0),
        {"node-3"},
    ),
    integration(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > "
        "minDomains, then the all nodes fit",
        numbered(),
        placed("1", "1", "2", "2", "3"),
        p(spread(2, "node", FOO, min_domains=2), node_affinity=EXCEPT_0),
        {"node-1", "node-2", "node-3"},
    ),
    integration(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
        "then the third and fourth nodes fit",
        numbered(),
        placed("0", "1", "2"),
        p(spread(2, "zone", FOO, min_domains=3)),
        {"node-2", "node-3"},
    ),
    integration(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
        "then the all nodes fit",
        numbered(),
        placed("1", "2", "3"),
        p(spread(2, "zone", FOO, min_domains=1)),
        {"node-0", "node-1", "node-2", "node-3"},
    ),
    integration(
        "NodeAffinityPolicy honored with labelSelectors, pods spread across zone as 2/1",
        one_to_four(),
        placed("1", "2", "3", "4"),
        p(ZONE_1, node_selector={"foo": ""}),
        {"node-4"},
    ),
    integration(
        "NodeAffinityPolicy ignored with nodeAffinity, pods spread across zone as 1/~2~",
        one_to_four(),
        placed("1", "3", "4"),
        p(spread(1, "zone", FOO, affinity_policy="Ignore"), node_affinity=node_in("foo", "")),
        {"node-1", "node-2"},
    ),
    integration(
        "NodeTaintsPolicy honored, pods spread across zone as 2/1",
        one_to_four(tainted=(3,)),
        placed("1", "2", "3", "4"),
        p(spread(1, "zone", FOO, taints_policy="Honor")),
        {"node-4"},
    ),
    integration(
        "NodeTaintsPolicy ignored, pods spread across zone as 2/2",
        one_to_four(tainted=(3,)),
        placed("1", "2", "3", "4"),
        p(ZONE_1),
        {"node-1", "node-2", "node-4"},
    ),
    integration(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        one_to_four(tainted=(2,)),
        placed("1", "2", "3", "4"),
        p(ZONE_1, NODE_1, node_selector={"foo": ""}),
        {"node-4"},
    ),
    integration(
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        one_to_four(tainted=(2,)),
        placed("1", "2", "3", "4"),
        p(
            spread(1, "zone", FOO, affinity_policy="Ignore"),
            spread(1, "node", FOO, taints_policy="Honor"),
            node_selector={"foo": ""},
        ),
        {"node-1", "node-4"},
    ),
    integration(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty, pods spread "
        "across zone as 0/1",
        numbered(),
        [*placed("0", "1"), pod("e9", {"foo": "", "bar": ""}, on="node-2")],
        p(spread(1, "zone", FOO, match_keys=["bar"]), labels={"foo": "", "bar": ""}),
        {"node-0", "node-1"},
    ),
    integration(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty, pods spread "
        "across zone as 2/1",
        numbered(),
        placed("0", "1", "2"),
        p(spread(1, "zone", sel(), match_keys=["foo"])),
        {"node-2", "node-3"},
    ),
]

FILTER_CASES = [*SINGLE, *MULTIPLE, *INTEGRATION_CASES]


@pytest.mark.parametrize("case", params(FILTER_CASES))
def test_filter(case: FilterCase, tmp_path: Path, capsys: Capsys) -> None:
    check_filter_case(tmp_path, capsys, case)


@pytest.mark.parametrize("case", params(FILTER_CASES))
def test_tables_agree_with_the_checker(case: FilterCase) -> None:
    check_case_against_checker(case)
