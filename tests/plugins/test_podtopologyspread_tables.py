"""kube-scheduler's PodTopologySpread tables, re-expressed as ``pumice simulate`` scenarios.

Sources (kubernetes/kubernetes; each case's id names its file, test function and case):

* ``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go``: TestSingleConstraint,
  TestMultipleConstraints, and TestPreFilterState (whose expected counts are turned here into
  the verdict they imply for the incoming pod);
* ``pkg/scheduler/framework/plugins/podtopologyspread/scoring_test.go``:
  TestPodTopologySpreadScore;
* ``test/integration/scheduler/filters/filters_test.go``: TestPodTopologySpreadFilter.

The unit tables run the spread plugin alone ("in real case, it's false" say their comments where
NodeAffinity or TaintToleration would reject a node); here the whole scheduler runs, so a case
states the nodes that pass every filter. The score rows' "failed nodes" carry a taint the pod
does not tolerate. Rows that only make sense with a feature gate off, with Services or
ReplicaSets (system default constraints), or with preemption are not re-expressed. The expected
verdicts were worked out from kube-constraints.md sections 2 and 3 and are checked against the
independent checker of ``support/constraint_checker.py`` (``test_tables_agree_with_the_checker``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.constraint_cases import (
    HOST,
    NO_SCHEDULE,
    TAINT_REASON,
    Capsys,
    FilterCase,
    ScoreCase,
    check_case_against_checker,
    check_filter_case,
    check_score_values,
    check_score_winner,
    exists,
    node,
    node_in,
    node_not_in,
    params,
    pod,
    score_config,
    sel,
    spread,
)
from support.constraint_checker import NODE_AFFINITY, SPREAD, SPREAD_MISSING_LABEL

FILTERING = "podtopologyspread/filtering_test.go"
SCORING = "podtopologyspread/scoring_test.go"
INTEGRATION = "integration/scheduler/filters/filters_test.go"

FOO = sel(exists("foo"))
BAR = sel(exists("bar"))
Obj = dict[str, object]


def zn(name: str, zone: str, **extra: str) -> Obj:
    """A node with labels zone and node (= its name), as the unit tables build them."""
    return node(name, {"zone": zone, "node": name, **extra})


def four(**extra: dict[str, str]) -> list[Obj]:
    """node-a, node-b in zone1; node-x, node-y in zone2 (extra labels per node name)."""
    zones = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    return [zn(n, z, **extra.get(n.replace("-", "_"), {})) for n, z in zones.items()]


def foo(name: str, on: str, **labels: str) -> Obj:
    return pod(name, {"foo": "", **labels}, on=on)


def pods(spec: str, **labels: str) -> list[Obj]:
    """``"a2 b1 y3"``: two pods labelled foo on node-a, one on node-b, three on node-y."""
    out = []
    for part in spec.split():
        where, count = part[0], int(part[1:])
        out += [foo(f"p-{where}{i}", f"node-{where}", **labels) for i in range(1, count + 1)]
    return out


def case(
    test: str,
    name: str,
    nodes: list[Obj],
    existing: list[Obj],
    incoming: Obj,
    feasible: set[str],
    reasons: dict[str, int] | None = None,
    *,
    source: str = FILTERING,
    note: str = "",
) -> FilterCase:
    return FilterCase(
        source=f"{source}: {test}: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        feasible=frozenset(feasible),
        reasons=reasons or {},
        note=note,
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


def state(
    name: str,
    nodes: list[Obj],
    existing: list[Obj],
    incoming: Obj,
    feasible: set[str],
    reasons: dict[str, int] | None = None,
) -> FilterCase:
    return case("TestPreFilterState", name, nodes, existing, incoming, feasible, reasons)


ALL4 = {"node-a", "node-b", "node-x", "node-y"}
ZONE1 = sel(exists("foo"))


def p(*spreads: Obj, labels: dict[str, str] | None = None, **kwargs: object) -> Obj:
    """The incoming pod (labelled foo unless told otherwise)."""
    return pod("p", {"foo": ""} if labels is None else labels, spreads=spreads, **kwargs)  # type: ignore[arg-type]


ZONE_1 = spread(1, "zone", FOO)
NODE_1 = spread(1, "node", FOO)

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

PREFILTER_STATE = [
    state(
        "namespace mismatch doesn't count",
        four(),
        [
            foo("p-a1", "node-a"),
            pod("p-a2", {"foo": ""}, ns="ns1", on="node-a"),
            foo("p-b1", "node-b"),
            pod("p-y1", {"foo": ""}, ns="ns2", on="node-y"),
            foo("p-y2", "node-y"),
        ],
        p(ZONE_1),
        {"node-x", "node-y"},
    ),
    state(
        "normal case with two spreadConstraints",
        four(),
        pods("a2 b1 y4"),
        p(ZONE_1, NODE_1),
        set(),
        {SPREAD: 4},
    ),
    state(
        "different labelSelectors - simple version",
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        [foo("p-a", "node-a"), pod("p-b", {"bar": ""}, on="node-b")],
        p(ZONE_1, spread(1, "node", BAR), labels={"foo": "", "bar": ""}),
        {"node-y"},
    ),
    state(
        "different labelSelectors - complex pods",
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        [
            foo("p-a1", "node-a"),
            foo("p-a2", "node-a", bar=""),
            foo("p-b1", "node-b"),
            foo("p-y1", "node-y"),
            foo("p-y2", "node-y", bar=""),
            foo("p-y3", "node-y"),
            foo("p-y4", "node-y", bar=""),
        ],
        p(ZONE_1, spread(1, "node", BAR), labels={"foo": "", "bar": ""}),
        {"node-b"},
    ),
    state(
        "two spreadConstraints, and with podAffinity",
        four(),
        pods("a2 b1 y4"),
        p(ZONE_1, NODE_1, node_affinity=node_not_in("node", "node-x")),
        {"node-b"},
    ),
    state(
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        [
            zn("node-a", "zone1"),
            node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, taints=[NO_SCHEDULE]),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2", foo=""),
        ],
        pods("a2 x2 y1"),
        p(
            spread(1, "zone", FOO, affinity_policy="Ignore"),
            spread(1, "node", FOO, taints_policy="Honor"),
            node_selector={"foo": ""},
        ),
        set(),
        {NODE_AFFINITY: 1, TAINT_REASON: 1, SPREAD: 2},
    ),
    state(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        four(),
        [
            foo("p-a1", "node-a"),
            foo("p-a2", "node-a", bar="a"),
            foo("p-b1", "node-b"),
            foo("p-y1", "node-y", bar="a"),
            pod("p-y2", {"bar": ""}, on="node-y"),
        ],
        p(spread(1, "zone", FOO, match_keys=["bar"]), labels={"foo": "", "bar": "a"}),
        ALL4,
    ),
    state(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        four(),
        [pod(f"p-{w}", {"foo": "a"}, on=f"node-{w[0]}") for w in ("a1", "a2", "b1", "y1", "y2")],
        p(spread(1, "zone", sel(), match_keys=["foo"]), labels={"foo": "a"}),
        {"node-x", "node-y"},
    ),
    state(
        "key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
        four(),
        [pod(f"p-{w}", {"foo": "a"}, on=f"node-{w[0]}") for w in ("a1", "a2", "b1", "y1", "y2")],
        p(spread(1, "zone", None, match_keys=["bar"])),
        ALL4,
    ),
    state(
        "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        four(),
        [pod(f"p-{w}", {"foo": "a"}, on=f"node-{w[0]}") for w in ("a1", "a2", "b1", "y1", "y2")],
        p(spread(1, "zone", FOO, match_keys=["bar"])),
        {"node-x", "node-y"},
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

FILTER_CASES = [*SINGLE, *MULTIPLE, *PREFILTER_STATE, *INTEGRATION_CASES]


@pytest.mark.parametrize("case", params(FILTER_CASES))
def test_filter(case: FilterCase, tmp_path: Path, capsys: Capsys) -> None:
    check_filter_case(tmp_path, capsys, case)


@pytest.mark.parametrize("case", params(FILTER_CASES))
def test_tables_agree_with_the_checker(case: FilterCase) -> None:
    check_case_against_checker(case)


# -- scores ------------------------------------------------------------------------------------


def hosts(*names: str, unfit: tuple[str, ...] = (), **extra: dict[str, str]) -> list[Obj]:
    """Nodes labelled kubernetes.io/hostname; ``unfit`` ones are tainted (the table's failed
    nodes); ``extra`` adds labels per node (node_a=...)."""
    return [
        node(
            n,
            {HOST: n, **extra.get(n.replace("-", "_"), {})},
            taints=[NO_SCHEDULE] if n in unfit else (),
        )
        for n in names
    ]


def score(
    name: str, nodes: list[Obj], existing: list[Obj], incoming: Obj, scores: dict[str, int]
) -> ScoreCase:
    return ScoreCase(
        source=f"{SCORING}: TestPodTopologySpreadScore: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        scores=scores,
    )


def soft(max_skew: int, key: str, selector: Obj | None) -> Obj:
    return spread(max_skew, key, selector, when="ScheduleAnyway")


def zoned(**unfit: bool) -> list[Obj]:
    zones = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    return [
        node(n, {"zone": z, HOST: n}, taints=[NO_SCHEDULE] if unfit.get(n[-1]) else ())
        for n, z in zones.items()
    ]


SCORE_CASES = [
    score(
        "one constraint on node, all 4 nodes are candidates",
        hosts("node-a", "node-b", "node-c", "node-d"),
        pods("a2 b1 d3"),
        p(soft(1, HOST, FOO)),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    score(
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        hosts("node-a", "node-b", "node-c", "node-d"),
        pods("a2 b1 d3"),
        p(soft(2, HOST, FOO)),
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    score(
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        hosts("node-a", "node-b", "node-c", "node-d"),
        pods("a4 b3 c2 d1"),
        p(soft(3, HOST, FOO)),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    score(
        "one constraint on node, 3 out of 4 nodes are candidates",
        hosts("node-a", "node-b", "node-x", "node-y", unfit=("node-y",)),
        pods("a4 b2 x1 y3"),
        p(soft(1, HOST, FOO)),
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    score(
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match "
        "topology key",
        [
            *hosts("node-a"),
            node("node-b", {"n": "node-b"}),
            *hosts("node-x", "node-y", unfit=("node-y",)),
        ],
        pods("a4 b2 x1 y3"),
        p(soft(1, HOST, FOO)),
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    score(
        "one constraint on zone, 3 out of 4 nodes are candidates",
        zoned(y=True),
        pods("a4 b2 x1 y3"),
        p(soft(1, "zone", FOO)),
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    score(
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        zoned(b=True, y=True),
        pods("a2 b1 x2 y4"),
        p(soft(1, "zone", FOO), soft(1, HOST, FOO)),
        {"node-a": 100, "node-x": 63},
    ),
    score(
        "two Constraints on zone and node, with different labelSelectors",
        zoned(),
        [
            foo("p-a1", "node-a"),
            foo("p-b1", "node-b", bar=""),
            foo("p-y1", "node-y"),
            pod("p-y2", {"bar": ""}, on="node-y"),
        ],
        p(soft(1, "zone", FOO), soft(1, HOST, BAR), labels={"foo": "", "bar": ""}),
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    score(
        "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        zoned(),
        [
            pod("p-b1", {"bar": ""}, on="node-b"),
            foo("p-x1", "node-x"),
            foo("p-y1", "node-y", bar=""),
        ],
        p(soft(1, "zone", FOO), soft(1, HOST, BAR), labels={"foo": "", "bar": ""}),
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
    score(
        "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are "
        "candidates",
        zoned(y=True),
        [
            foo("p-a1", "node-a"),
            foo("p-b1", "node-b", bar=""),
            foo("p-y1", "node-y"),
            pod("p-y2", {"bar": ""}, on="node-y"),
        ],
        p(soft(1, "zone", FOO), soft(1, HOST, BAR), labels={"foo": "", "bar": ""}),
        {"node-a": 50, "node-b": 25, "node-x": 100},
    ),
    score(
        "existing pods in a different namespace do not count",
        hosts("node-a", "node-b"),
        [pod("p-a1", {"foo": ""}, ns="ns1", on="node-a"), *pods("a1 b2")],
        p(soft(1, HOST, FOO)),
        {"node-a": 100, "node-b": 33},
    ),
    score(
        "terminating Pods should be excluded",
        hosts("node-a", "node-b"),
        [pod("p-a", {"foo": ""}, on="node-a", terminating=True), foo("p-b", "node-b")],
        p(soft(1, HOST, FOO)),
        {"node-a": 100, "node-b": 0},
    ),
]

SPREAD_ONLY = score_config(podtopologyspread=1)


def test_every_score_case_has_one_winner() -> None:
    assert all(len(c.winners()) == 1 for c in SCORE_CASES)


@pytest.mark.parametrize("case", params(SCORE_CASES))
def test_score_winner(case: ScoreCase, tmp_path: Path, capsys: Capsys) -> None:
    check_score_winner(tmp_path, capsys, case, SPREAD_ONLY)


@pytest.mark.parametrize("case", params(SCORE_CASES))
def test_score_values(case: ScoreCase, tmp_path: Path, capsys: Capsys) -> None:
    check_score_values(tmp_path, capsys, case, SPREAD_ONLY)
