"""kube-scheduler's PodTopologySpread TestPreFilterState, re-expressed as ``pumice simulate``
scenarios.

Source (kubernetes/kubernetes): ``pkg/scheduler/framework/plugins/podtopologyspread/
filtering_test.go``, TestPreFilterState; each case's id names the file, the test function and
the case. The table checks the counts PreFilter computes (the constraints, the domains' match
counts, the two smallest domains); a case here states the verdict those counts imply for the
table's incoming pod with the whole scheduler running: the nodes that pass every filter, or the
reasons of kube-scheduler's ``0/N nodes are available`` message. A row's counts are wrong exactly
when its verdict is (every row's verdict depends on them: a minimum or a count off by one moves a
node across maxSkew). The verdicts are checked against the independent checker of
``support/constraint_checker.py`` (``test_tables_agree_with_the_checker``). Where the table
taints a node with ``node.kubernetes.io/unschedulable``, the case uses ``dedicated=infra``
(``NO_SCHEDULE``): the same NoSchedule taint, without the cordon that name implies.

Not re-expressed, and why:

* "default constraints and a service", "default constraints and a service that doesn't match",
  "default constraints and a service, but pod has constraints", "default soft constraints and a
  service": they configure the plugin's default constraints and select pods through a Service;
  pumice applies no default constraints and watches no Services (docs/pod-constraints.md);
* "feature gate disabled with NodeAffinityPolicy", "feature gate disabled with
  NodeTaintsPolicy", "matchLabelKeys ignored when feature gate disabled", "no pod is matched
  when LabelSelector is nil when feature gate disabled": they switch
  NodeInclusionPolicyInPodTopologySpread or MatchLabelKeysInPodTopologySpread off; both are on
  (and locked) in the Kubernetes pumice follows, and pumice has no such switch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.constraint_cases import (
    NO_SCHEDULE,
    TAINT_REASON,
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
from support.constraint_checker import NODE_AFFINITY, SPREAD
from support.spread_rows import (
    ALL4,
    BAR,
    FOO,
    NODE_1,
    ZONE_1,
    Obj,
    case,
    foo,
    four,
    p,
    pods,
    soft,
    zn,
)


def state(
    name: str,
    nodes: list[Obj],
    existing: list[Obj],
    incoming: Obj,
    feasible: set[str],
    reasons: dict[str, int] | None = None,
) -> FilterCase:
    return case("TestPreFilterState", name, nodes, existing, incoming, feasible, reasons)


# The inclusion-policy rows: node-a, node-b labelled foo, node-c labelled bar (node-c tainted in
# the taint rows); bar pods: one on node-a, two on node-b, an unlabelled one on node-c.
ABC_FOO_FOO_BAR = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-c", {"node": "node-c", "bar": ""}),
]
ABC_TAINTED_C = [
    node("node-a", {"node": "node-a"}),
    node("node-b", {"node": "node-b"}),
    node("node-c", {"node": "node-c", "bar": ""}, taints=[NO_SCHEDULE]),
]
BAR_1_2_0 = [
    pod("p-a", {"bar": ""}, on="node-a"),
    pod("p-b", {"bar": ""}, on="node-b"),
    pod("p-c", {"bar": ""}, on="node-b"),
    pod("p-d", on="node-c"),
]
TOLERATE_INFRA = {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}

PREFILTER_STATE = [
    state(
        "clean cluster with one spreadConstraint",
        four(),
        [],
        p(spread(5, "zone", sel(foo="bar"))),
        ALL4,
    ),
    state(
        "normal case with one spreadConstraint",
        four(),
        pods("a2 b1 y2"),
        p(ZONE_1),
        {"node-x", "node-y"},
    ),
    state(
        "normal case with null label selector",
        four(),
        pods("a2 b1 y2"),
        p(spread(1, "zone", None)),
        ALL4,
    ),
    state(
        "normal case with one spreadConstraint, on a 3-zone cluster",
        [*four(), zn("node-o", "zone3"), zn("node-p", "zone3")],
        pods("a2 b1 y2"),
        p(ZONE_1),
        {"node-o", "node-p"},
    ),
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
        "soft spreadConstraints should be bypassed",
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        pods("a2 b1 y4"),
        p(soft(1, "zone", FOO), ZONE_1, soft(1, "node", FOO), NODE_1),
        {"node-b"},
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
        "TpKeyToDomainsNum is calculated when MinDomains is enabled",
        four(),
        pods("a2 b1 y4"),
        p(ZONE_1, NODE_1),
        set(),
        {SPREAD: 4},
    ),
    state(
        "NodeAffinityPolicy honored with labelSelectors",
        ABC_FOO_FOO_BAR,
        BAR_1_2_0,
        p(spread(1, "node", BAR), node_selector={"foo": ""}),
        {"node-a", "node-b"},
    ),
    state(
        "NodeAffinityPolicy ignored with labelSelectors",
        ABC_FOO_FOO_BAR,
        BAR_1_2_0,
        p(spread(1, "node", BAR, affinity_policy="Ignore"), node_selector={"foo": ""}),
        {"node-a"},
    ),
    state(
        "NodeAffinityPolicy honored with nodeAffinity",
        ABC_FOO_FOO_BAR,
        BAR_1_2_0,
        p(spread(1, "node", BAR), node_affinity=node_in("foo", "")),
        {"node-a", "node-b"},
    ),
    state(
        "NodeAffinityPolicy ignored with nodeAffinity",
        ABC_FOO_FOO_BAR,
        BAR_1_2_0,
        p(spread(1, "node", BAR, affinity_policy="Ignore"), node_affinity=node_in("foo", "")),
        {"node-a"},
    ),
    state(
        "NodeTaintsPolicy ignored",
        ABC_TAINTED_C,
        BAR_1_2_0,
        p(spread(1, "node", BAR)),
        {"node-a"},
    ),
    state(
        "NodeTaintsPolicy honored",
        ABC_TAINTED_C,
        BAR_1_2_0,
        p(spread(1, "node", BAR, taints_policy="Honor")),
        {"node-a", "node-b"},
    ),
    state(
        "NodeTaintsPolicy honored with tolerated taints",
        ABC_TAINTED_C,
        BAR_1_2_0,
        p(spread(1, "node", BAR, taints_policy="Honor"), tolerations=[TOLERATE_INFRA]),
        {"node-a", "node-c"},
    ),
    state(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo="")],
        pods("b2 x1"),
        p(ZONE_1, spread(1, "node", FOO, affinity_policy="Ignore"), node_selector={"foo": ""}),
        {"node-a"},
    ),
    state(
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        [
            zn("node-a", "zone1", foo=""),
            node("node-b", {"zone": "zone1", "node": "node-b"}, taints=[NO_SCHEDULE]),
            zn("node-x", "zone2", foo=""),
        ],
        pods("b2 x1"),
        p(spread(1, "zone", FOO, taints_policy="Honor"), NODE_1),
        {"node-a"},
    ),
    state(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        [
            zn("node-a", "zone1"),
            node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, taints=[NO_SCHEDULE]),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        pods("a2 x1 y1"),
        p(ZONE_1, NODE_1, node_selector={"foo": ""}),
        set(),
        {NODE_AFFINITY: 2, TAINT_REASON: 1, SPREAD: 1},
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
    state(
        "two spreadConstraints with the same topologyKey",
        four(),
        [
            foo("p-a1", "node-a", bar=""),
            foo("p-b1", "node-b"),
            pod("p-x1", {"bar": ""}, on="node-x"),
            foo("p-y1", "node-y", bar=""),
            pod("p-y2", {"bar": ""}, on="node-y"),
        ],
        p(ZONE_1, spread(1, "zone", BAR), labels={"foo": "", "bar": ""}),
        set(),
        {SPREAD: 4},
    ),
    state(
        "skip if not specified",
        [zn("node-a", "zone1")],
        [],
        pod("p", {"foo": ""}),
        {"node-a"},
    ),
]
"""The table has two rows named "two node inclusion Constraints, zone: honor/ignore, node:
honor/ignore" in TestMultipleConstraints and TestPreFilterState; each keeps its function's name
in its id."""


@pytest.mark.parametrize("case", params(PREFILTER_STATE))
def test_filter(case: FilterCase, tmp_path: Path, capsys: Capsys) -> None:
    check_filter_case(tmp_path, capsys, case)


@pytest.mark.parametrize("case", params(PREFILTER_STATE))
def test_tables_agree_with_the_checker(case: FilterCase) -> None:
    check_case_against_checker(case)
