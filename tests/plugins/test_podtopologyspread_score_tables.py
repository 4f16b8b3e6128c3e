"""kube-scheduler's PodTopologySpread score tables, re-expressed as ``pumice simulate`` scenarios.

Source (kubernetes/kubernetes): ``pkg/scheduler/framework/plugins/podtopologyspread/
scoring_test.go``, TestPodTopologySpreadScore, TestPreScoreSkip and TestPreScoreStateEmptyNodes;
each case's id names the file, the test function and the case. The last two check PreScore's
outcome (a skip; the state it computes) rather than scores: a case here states the scores
that outcome implies (a skipped plugin adds 0 everywhere; with no pod anywhere every count is
0, so every node carrying the constraints' keys scores alike and a node lacking one, which
PreScore ignores, scores 0). The whole scheduler runs with every nodeorder scorer at weight 0 but
``podtopologyspread.weight`` 1, so a node's total is kube-scheduler's normalised score;
``check_score_values`` compares every node's, ``check_score_winner`` checks that the pod goes to
the best node when there is one. The table's "failed nodes" (filtered out before scoring) carry
a taint the pod does not tolerate.

The inclusion-policy rows score a node that another filter would reject (the unit table runs
the spread plugin alone): node-c (node-x in TestPreScoreStateEmptyNodes) lacks the pod's node
selector, or carries a taint it does not tolerate. Here that filter is switched off with its
predicates flag (``predicate.NodeAffinityEnable`` / ``predicate.TaintTolerationEnable``), so
that node is scored as in the table, while ``nodeAffinityPolicy`` / ``nodeTaintsPolicy`` still
decide whether its pods count.

Not re-expressed, and why:

* "system defaulting, nodes don't have zone, pods match service": the constraints come from
  kube-scheduler's system defaults through a Service; pumice applies no default constraints and
  watches no Services (docs/pod-constraints.md);
* "matchLabelKeys ignored when feature gate disabled": MatchLabelKeysInPodTopologySpread is on
  (and locked) in the Kubernetes pumice follows, and pumice has no such switch;
* TestPreScoreSkip "default constraints and a replicaset that doesn't match" and
  TestPreScoreStateEmptyNodes "system default constraints and a replicaset", "default
  constraints and a replicaset", "default constraints and a replicaset, but pod has
  constraints": they configure the plugin's default constraints and select pods through a
  ReplicaSet; pumice applies no default constraints and watches no ReplicaSets. (In the last,
  the pod's own DoNotSchedule zone constraint would also filter out the table's one node, which
  has no zone label, so the whole scheduler never scores it.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.constraint_cases import (
    HOST,
    NO_SCHEDULE,
    Capsys,
    ScoreCase,
    check_score_values,
    check_score_winner,
    node,
    node_in,
    params,
    pod,
    score_config,
    sel,
)
from support.spread_rows import (
    BAR,
    FOO,
    Obj,
    foo,
    hosts,
    p,
    pods,
    score,
    soft,
    zoned,
)

NODES_ABC = [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")]
NODES_ABC_FOO = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-c", {"node": "node-c"}),
]
NODES_ABC_TAINTED_C = [
    node("node-a", {"node": "node-a"}),
    node("node-b", {"node": "node-b"}),
    node("node-c", {"node": "node-c"}, taints=[NO_SCHEDULE]),
]
ZONED_ABCD = [
    node(n, {"zone": z, HOST: n})
    for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-c", "zone2"), ("node-d", "zone2"))
]
HONORED = {"node-a": 0, "node-b": 33, "node-c": 100}
"""node-c's pod not counted: 2/1/0 matching pods."""
IGNORED = {"node-a": 66, "node-b": 100, "node-c": 100}
"""node-c's pod counted: 2/1/1."""
NODE_AFFINITY_OFF = score_config(podtopologyspread=1, filters_off=["predicate.NodeAffinityEnable"])
TAINTS_OFF = score_config(podtopologyspread=1, filters_off=["predicate.TaintTolerationEnable"])
NODE_AFFINITY_NOTE = "NodeAffinity's filter off, so node-c (no foo label) is scored as in the table"
TAINTS_NOTE = "TaintToleration's filter off, so the tainted node-c is scored as in the table"

SCORE_CASES = [
    score(
        "one constraint on node, no existing pods",
        hosts("node-a", "node-b"),
        [],
        p(soft(1, HOST, FOO)),
        {"node-a": 100, "node-b": 100},
    ),
    score(
        "one constraint on node, only one node is candidate",
        hosts("node-a", "node-b", unfit=("node-b",)),
        pods("a2 b1"),
        p(soft(1, HOST, FOO)),
        {"node-a": 100},
    ),
    score(
        "one constraint on node, all nodes have the same number of matching pods",
        hosts("node-a", "node-b"),
        pods("a1 b1"),
        p(soft(1, HOST, FOO)),
        {"node-a": 100, "node-b": 100},
    ),
    score(
        "one constraint on node, all 4 nodes are candidates",
        hosts("node-a", "node-b", "node-c", "node-d"),
        pods("a2 b1 d3"),
        p(soft(1, HOST, FOO)),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    score(
        "one constraint on node, null selector",
        hosts("node-a", "node-b", "node-c", "node-d"),
        pods("a2 b1 d3"),
        p(soft(1, HOST, None)),
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
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
        "two Constraints on zone, 2 out of 4 nodes are candidates",
        [
            node("node-a", {"zone": "zone1"}),
            node("node-x", {"zone": "zone2"}),
            node("node-b", {"zone": "zone1"}, taints=[NO_SCHEDULE]),
            node("node-y", {"zone": "zone2"}, taints=[NO_SCHEDULE]),
        ],
        [
            foo("p-a1", "node-a", bar=""),
            foo("p-a2", "node-a"),
            foo("p-b1", "node-b", bar=""),
            foo("p-y1", "node-y"),
            foo("p-y2", "node-y", bar=""),
            foo("p-y3", "node-y"),
        ],
        p(soft(1, "zone", FOO), soft(1, "zone", BAR), labels={"foo": "", "bar": ""}),
        {"node-a": 85, "node-x": 100},
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
    score(
        "minDomains has no effect when ScheduleAnyway",
        NODES_ABC,
        pods("a2 b2 c1"),
        p(soft(2, "node", FOO, min_domains=10)),
        {"node-a": 75, "node-b": 75, "node-c": 100},
        note="the API server refuses minDomains with ScheduleAnyway; the table (and pumice) "
        "still read such a pod, and minDomains must not change its score",
    ),
    score(
        "NodeAffinityPolicy honoed with labelSelectors",
        NODES_ABC_FOO,
        pods("a2 b1 c1"),
        p(soft(1, "node", FOO), node_selector={"foo": ""}),
        HONORED,
        config=NODE_AFFINITY_OFF,
        note=NODE_AFFINITY_NOTE,
    ),
    score(
        "NodeAffinityPolicy honoed with nodeAffinity",
        NODES_ABC_FOO,
        pods("a2 b1 c1"),
        p(soft(1, "node", FOO), node_affinity=node_in("foo", "")),
        HONORED,
        config=NODE_AFFINITY_OFF,
        note=NODE_AFFINITY_NOTE,
    ),
    score(
        "NodeAffinityPolicy ignored with labelSelectors",
        NODES_ABC_FOO,
        pods("a2 b1 c1"),
        p(soft(1, "node", FOO, affinity_policy="Ignore"), node_selector={"foo": ""}),
        IGNORED,
        config=NODE_AFFINITY_OFF,
        note=NODE_AFFINITY_NOTE,
    ),
    score(
        "NodeAffinityPolicy ignored with nodeAffinity",
        NODES_ABC_FOO,
        pods("a2 b1 c1"),
        p(soft(1, "node", FOO, affinity_policy="Ignore"), node_affinity=node_in("foo", "")),
        IGNORED,
        config=NODE_AFFINITY_OFF,
        note=NODE_AFFINITY_NOTE,
    ),
    score(
        "NodeTaintsPolicy honored",
        NODES_ABC_TAINTED_C,
        pods("a2 b1 c1"),
        p(soft(1, "node", FOO, taints_policy="Honor")),
        HONORED,
        config=TAINTS_OFF,
        note=TAINTS_NOTE,
    ),
    score(
        "NodeTaintsPolicy ignored",
        NODES_ABC_TAINTED_C,
        pods("a2 b1 c1"),
        p(soft(1, "node", FOO)),
        IGNORED,
        config=TAINTS_OFF,
        note=TAINTS_NOTE,
    ),
    score(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        ZONED_ABCD,
        [
            foo("p-a1", "node-a"),
            foo("p-b1", "node-b", bar=""),
            foo("p-y1", "node-c"),
            pod("p-y2", {"bar": ""}, on="node-c"),
        ],
        p(
            soft(1, "zone", sel(), match_keys=["foo"]),
            soft(1, HOST, sel(), match_keys=["bar"]),
            labels={"foo": "", "bar": ""},
        ),
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
    score(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        ZONED_ABCD,
        [
            foo("p-a1", "node-a"),
            foo("p-b1", "node-b", bar="", baz=""),
            foo("p-c1", "node-c"),
            pod("p-c2", {"bar": ""}, on="node-c"),
            pod("p-d3", {"bar": "", "baz": ""}, on="node-c"),
        ],
        p(
            soft(1, "zone", FOO),
            soft(1, HOST, BAR, match_keys=["baz"]),
            labels={"foo": "", "bar": "", "baz": ""},
        ),
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
]


def zoned_abx(*, taint_x: bool = False) -> list[Obj]:
    """TestPreScoreStateEmptyNodes' cluster: node-a, node-b in zone1 (labelled foo), node-x in
    zone2 (``taint_x``: with a taint the pod does not tolerate)."""
    return [
        node("node-a", {"zone": "zone1", HOST: "node-a", "foo": ""}),
        node("node-b", {"zone": "zone1", HOST: "node-b", "foo": ""}),
        node("node-x", {"zone": "zone2", HOST: "node-x"}, taints=[NO_SCHEDULE] if taint_x else ()),
    ]


ZONED_ABX = zoned_abx()
ALL_EQUAL = {"node-a": 100, "node-b": 100, "node-x": 100}
EMPTY_NOTE = (
    "the table checks PreScore's state; with no pod anywhere every count in it is 0, so it "
    "implies the same score on every node that carries the constraints' keys"
)


def empty(
    name: str, nodes: list[Obj], incoming: Obj, scores: dict[str, int], **kw: str
) -> ScoreCase:
    return score(name, nodes, [], incoming, scores, test="TestPreScoreStateEmptyNodes", **kw)


PRESCORE_CASES = [
    score(
        "the pod doesn't have soft topology spread Constraints",
        hosts("node-a", "node-b"),
        [],
        pod("p", {}),
        {"node-a": 0, "node-b": 0},
        test="TestPreScoreSkip",
        note="PreScore skips the plugin: the spread score adds nothing on any node",
    ),
    empty(
        "normal case",
        ZONED_ABX,
        p(soft(1, "zone", FOO), soft(1, HOST, FOO)),
        ALL_EQUAL,
        note=EMPTY_NOTE,
    ),
    empty("null selector", ZONED_ABX, p(soft(1, "zone", None)), ALL_EQUAL, note=EMPTY_NOTE),
    empty(
        "node-x doesn't have label zone",
        [*ZONED_ABX[:2], node("node-x", {HOST: "node-x"})],
        p(soft(1, "zone", FOO), soft(1, HOST, BAR)),
        {"node-a": 100, "node-b": 100, "node-x": 0},
        note="node-x lacks zone: PreScore ignores it (IgnoredNodes), so it scores 0",
    ),
    empty(
        "NodeAffinityPolicy honored with labelSelectors",
        ZONED_ABX,
        p(soft(1, "zone", BAR), node_selector={"foo": ""}),
        ALL_EQUAL,
        config=NODE_AFFINITY_OFF,
        note=f"{EMPTY_NOTE}; NodeAffinity's filter off, so node-x (no foo label) is scored",
    ),
    empty(
        "NodeAffinityPolicy ignored with labelSelectors",
        ZONED_ABX,
        p(soft(1, "zone", BAR, affinity_policy="Ignore"), node_selector={"foo": ""}),
        ALL_EQUAL,
        config=NODE_AFFINITY_OFF,
        note=f"{EMPTY_NOTE}; NodeAffinity's filter off, so node-x (no foo label) is scored",
    ),
    empty(
        "NodeAffinityPolicy honored with nodeAffinity",
        ZONED_ABX,
        p(soft(1, "zone", BAR), node_affinity=node_in("foo", "")),
        ALL_EQUAL,
        config=NODE_AFFINITY_OFF,
        note=f"{EMPTY_NOTE}; NodeAffinity's filter off, so node-x (no foo label) is scored",
    ),
    empty(
        "NodeAffinityPolicy ignored with nodeAffinity",
        ZONED_ABX,
        p(soft(1, "zone", BAR, affinity_policy="Ignore"), node_affinity=node_in("foo", "")),
        ALL_EQUAL,
        config=NODE_AFFINITY_OFF,
        note=f"{EMPTY_NOTE}; NodeAffinity's filter off, so node-x (no foo label) is scored",
    ),
    empty(
        "NodeTaintsPolicy honored",
        zoned_abx(taint_x=True),
        p(soft(1, "zone", BAR, taints_policy="Honor")),
        ALL_EQUAL,
        config=TAINTS_OFF,
        note=f"{EMPTY_NOTE}; TaintToleration's filter off, so the tainted node-x is scored",
    ),
    empty(
        "NodeTaintsPolicy ignored",
        zoned_abx(taint_x=True),
        p(soft(1, "zone", BAR)),
        ALL_EQUAL,
        config=TAINTS_OFF,
        note=f"{EMPTY_NOTE}; TaintToleration's filter off, so the tainted node-x is scored",
    ),
]

ALL_CASES = SCORE_CASES + PRESCORE_CASES
UNIQUE_WINNER = [c for c in ALL_CASES if len(c.winners()) == 1]
SPREAD_ONLY = score_config(podtopologyspread=1)


@pytest.mark.parametrize("case", params(UNIQUE_WINNER))
def test_score_winner(case: ScoreCase, tmp_path: Path, capsys: Capsys) -> None:
    check_score_winner(tmp_path, capsys, case, SPREAD_ONLY)


@pytest.mark.parametrize("case", params(ALL_CASES))
def test_score_values(case: ScoreCase, tmp_path: Path, capsys: Capsys) -> None:
    check_score_values(tmp_path, capsys, case, SPREAD_ONLY)
