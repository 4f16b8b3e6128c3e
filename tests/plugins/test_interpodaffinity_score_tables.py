"""kube-scheduler's InterPodAffinity score tables, re-expressed as ``pumice simulate`` scenarios.

Source (kubernetes/kubernetes):
``pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go``, TestPreferredAffinity and
TestPreferredAffinityWithHardPodAffinitySymmetricWeight; each case's id names the file, the
test function and the case. The whole scheduler runs with every
nodeorder scorer at weight 0 but ``podaffinity.weight`` 1, so a node's total is
kube-scheduler's normalised InterPodAffinity score; ``check_score_values`` compares every
node's, ``check_score_winner`` checks that the pod goes to the best node when there is one.

The tables' namespaces subteam1.team1 … are spelled subteam1-team1 … (a namespace name is a DNS
label), so that the sim can hold every cluster (``test_simulate_matches_the_daemon.py``).

Not re-expressed, and why:

* TestPreferredAffinity "invalid Affinity fails PreScore", "invalid AntiAffinity fails
  PreScore": the selector value ``{{.bad-value.}}`` is not a label value; the API server
  refuses such a pod, so no scheduler ever sees it;
* TestPreferredAffinity "Ignore preferred terms of existing pods": it sets the plugin argument
  ``ignorePreferredTermsOfExistingPods``, which pumice (like Volcano's nodeorder) does not
  have; the row beside it, "Do not ignore preferred terms of existing pods", is the behaviour
  pumice has and is re-expressed;
* TestPreferredAffinity "No nodes to score": a cluster without nodes places nothing, so there
  is no score to compare.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.constraint_cases import (
    Capsys,
    ScoreCase,
    absent,
    check_score_values,
    check_score_winner,
    exists,
    in_,
    namespace,
    node,
    not_in,
    params,
    pod,
    score_config,
    sel,
    term,
    weighted,
)

SCORING = "interpodaffinity/scoring_test.go"

S1 = {"security": "S1"}
S2 = {"security": "S2"}
CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
TEAMS = (
    namespace("subteam1-team1", {"team": "team1"}),
    namespace("subteam2-team1", {"team": "team1"}),
    namespace("subteam1-team2", {"team": "team2"}),
    namespace("subteam2-team2", {"team": "team2"}),
)
TEAM1 = sel(in_("team", "team1"))

STAY_WITH_S1_IN_REGION = [weighted(5, term(sel(in_("security", "S1")), "region"))]
STAY_WITH_S2_IN_REGION = [weighted(6, term(sel(in_("security", "S2")), "region"))]
AWAY_FROM_S1_IN_AZ = [weighted(5, term(sel(in_("security", "S1")), "az"))]
AWAY_FROM_S2_IN_AZ = [weighted(5, term(sel(in_("security", "S2")), "az"))]
AFFINITY3 = [
    weighted(8, term(sel(not_in("security", "S1"), in_("security", "S2")), "region")),
    weighted(2, term(sel(exists("security"), absent("wrongkey")), "region")),
]
HARD_AFFINITY = [
    term(sel(in_("security", "S1", "value2")), "region"),
    term(sel(exists("security"), absent("wrongkey")), "region"),
]
S1_REGION_8 = [weighted(8, term(sel(in_("security", "S1")), "region"))]
S2_AZ_5 = [weighted(5, term(sel(in_("security", "S2")), "az"))]
NS_SELECTED = term(
    sel(in_("security", "S1")), "region", namespaces=["subteam2-team2"], ns_selector=TEAM1
)

AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}


def preferred(
    name: str,
    nodes: list[dict[str, object]],
    existing: list[dict[str, object]],
    incoming: dict[str, object],
    scores: dict[str, int],
    test: str = "TestPreferredAffinity",
) -> ScoreCase:
    return ScoreCase(
        source=f"{SCORING}: {test}: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        scores=scores,
        namespaces=TEAMS,
    )


THREE = [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)]

PREFERRED_CASES = [
    preferred(
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing "
        "to otherswhich doesn't match either pods in nodes or in topology key",
        THREE,
        [pod("e1", S1, on="node1"), pod("e2", S2, on="node2"), pod("e3", S1, on="node3")],
        pod("p", S1, preferred=STAY_WITH_S1_IN_REGION),
        {"node1": 100, "node2": 0, "node3": 0},
    ),
    preferred(
        "All the nodes that have the same topology key & label value with one of them has an "
        "existing pod that match the affinity rules, have the same score",
        [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)],
        [pod("e1", S1, on="node1")],
        pod("p", preferred=STAY_WITH_S1_IN_REGION),
        {"node1": 100, "node2": 100, "node3": 0},
    ),
    preferred(
        "Affinity: different Label operators and values for pod affinity scheduling preference, "
        "including some match failures",
        THREE,
        [pod("e1", S1, on="node1"), pod("e2", S2, on="node2"), pod("e3", S1, on="node3")],
        pod("p", S1, preferred=AFFINITY3),
        {"node1": 20, "node2": 100, "node3": 0},
    ),
    preferred(
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution "
        "in pod affinity symmetry",
        THREE,
        [
            pod("e1", S1, on="node1", preferred=STAY_WITH_S1_IN_REGION),
            pod("e2", S2, on="node2", preferred=STAY_WITH_S2_IN_REGION),
        ],
        pod("p", S2),
        {"node1": 0, "node2": 100, "node3": 0},
    ),
    preferred(
        "Affinity symmetry with namespace selector",
        THREE,
        [
            pod("e1", S1, on="node1", preferred=[weighted(5, NS_SELECTED)]),
            pod("e2", S2, on="node2", preferred=STAY_WITH_S2_IN_REGION),
        ],
        pod("p", S1, ns="subteam1-team1"),
        {"node1": 100, "node2": 0, "node3": 0},
    ),
    preferred(
        "AntiAffinity symmetry with namespace selector",
        THREE,
        [
            pod("e1", S1, on="node1", preferred_anti=[weighted(5, NS_SELECTED)]),
            pod("e2", S2, on="node2", preferred=STAY_WITH_S2_IN_REGION),
        ],
        pod("p", S1, ns="subteam1-team1"),
        {"node1": 0, "node2": 100, "node3": 100},
    ),
    preferred(
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod "
        "affinity symmetry",
        THREE,
        [
            pod("e1", S1, on="node1", affinity=HARD_AFFINITY),
            pod("e2", S2, on="node2", affinity=HARD_AFFINITY),
        ],
        pod("p", S1),
        {"node1": 100, "node2": 100, "node3": 0},
    ),
    preferred(
        "Anti Affinity: pod that does not match existing pods in node will get high score",
        [node("node1", AZ1), node("node2", CHINA)],
        [pod("e1", S1, on="node1"), pod("e2", S2, on="node2")],
        pod("p", S1, preferred_anti=AWAY_FROM_S1_IN_AZ),
        {"node1": 0, "node2": 100},
    ),
    preferred(
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get "
        "higher score comparing to others",
        [node("node1", AZ1), node("node2", CHINA)],
        [pod("e1", S1, on="node1"), pod("e2", S1, on="node2")],
        pod("p", S1, preferred_anti=AWAY_FROM_S1_IN_AZ),
        {"node1": 0, "node2": 100},
    ),
    preferred(
        "Anti Affinity: one node has more matching pods comparing to other node, so the node "
        "which has more unmatches will get high score",
        [node("node1", AZ1), node("node2", INDIA)],
        [pod("e1", S1, on="node1"), pod("e2", S1, on="node1"), pod("e3", S2, on="node2")],
        pod("p", S1, preferred_anti=AWAY_FROM_S1_IN_AZ),
        {"node1": 0, "node2": 100},
    ),
    preferred(
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will "
        "get high score",
        [node("node1", AZ1), node("node2", AZ2)],
        [
            pod("e1", S1, on="node1", preferred_anti=AWAY_FROM_S2_IN_AZ),
            pod("e2", S2, on="node2", preferred_anti=AWAY_FROM_S1_IN_AZ),
        ],
        pod("p", S2),
        {"node1": 0, "node2": 100},
    ),
    preferred(
        "Affinity and Anti Affinity: considered only "
        "preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
        [node("node1", CHINA), node("node2", AZ1)],
        [pod("e1", S1, on="node1"), pod("e2", S1, on="node2")],
        pod("p", S1, preferred=S1_REGION_8, preferred_anti=S2_AZ_5),
        {"node1": 100, "node2": 0},
    ),
    preferred(
        "Affinity and Anti Affinity and symmetry: considered only "
        "preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & "
        "symmetry",
        [node("node1", CHINA), node("node2", AZ1), node("node3", INDIA), node("node4", AZ2)],
        [
            pod("e1", S1, on="node1"),
            pod("e2", S2, on="node2"),
            pod("e3", on="node3", preferred=S1_REGION_8, preferred_anti=S2_AZ_5),
            pod("e4", on="node4", preferred_anti=AWAY_FROM_S1_IN_AZ),
        ],
        pod("p", S1, preferred=S1_REGION_8, preferred_anti=S2_AZ_5),
        {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
    ),
    preferred(
        "Affinity with pods matching NamespaceSelector",
        [node("node1", CHINA), node("node2", INDIA)],
        [
            pod("e1", S1, ns="subteam1-team1", on="node1"),
            pod("e2", S1, ns="subteam1-team1", on="node1"),
            pod("e3", S1, ns="subteam1-team2", on="node1"),
            pod("e4", S1, ns="subteam2-team1", on="node2"),
        ],
        pod("p", S1, ns="subteam1-team1", preferred=[weighted(5, NS_SELECTED)]),
        {"node1": 100, "node2": 0},
    ),
    preferred(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        [node("node1", CHINA), node("node2", INDIA)],
        [
            pod("e1", S1, ns="subteam1-team1", on="node1"),
            pod("e2", S1, ns="subteam1-team1", on="node1"),
            pod("e3", S1, ns="subteam2-team2", on="node1"),
            pod("e4", S1, ns="subteam2-team1", on="node2"),
        ],
        pod("p", S1, ns="subteam1-team1", preferred=[weighted(5, NS_SELECTED)]),
        {"node1": 100, "node2": 0},
    ),
    preferred(
        "Affinity with pods matching NamespaceSelector [anti-affinity]",
        [node("node1", CHINA), node("node2", INDIA)],
        [
            pod("e1", S1, ns="subteam1-team1", on="node1"),
            pod("e2", S1, ns="subteam1-team1", on="node1"),
            pod("e3", S1, ns="subteam1-team2", on="node1"),
            pod("e4", S1, ns="subteam2-team1", on="node2"),
        ],
        pod("p", S1, ns="subteam1-team1", preferred_anti=[weighted(5, NS_SELECTED)]),
        {"node1": 0, "node2": 100},
    ),
    preferred(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields [anti-affinity]",
        [node("node1", CHINA), node("node2", INDIA)],
        [
            pod("e1", S1, ns="subteam1-team1", on="node1"),
            pod("e2", S1, ns="subteam1-team1", on="node1"),
            pod("e3", S1, ns="subteam2-team2", on="node1"),
            pod("e4", S1, ns="subteam2-team1", on="node2"),
        ],
        pod("p", S1, ns="subteam1-team1", preferred_anti=[weighted(5, NS_SELECTED)]),
        {"node1": 0, "node2": 100},
    ),
    preferred(
        "Do not ignore preferred terms of existing pods",
        [node("node1", CHINA), node("node2", INDIA)],
        [
            pod("e1", S1, on="node1", preferred=S1_REGION_8, preferred_anti=S2_AZ_5),
            pod("e2", S2, on="node2", preferred=STAY_WITH_S2_IN_REGION),
        ],
        pod("p", S2),
        {"node1": 0, "node2": 100},
    ),
    preferred(
        "all nodes are same priority as Affinity is nil",
        THREE,
        [],
        pod("p", S1),
        {"node1": 0, "node2": 0, "node3": 0},
    ),
    preferred(
        "Affinity: nodes in one region has more matching pods comparing to other region, so the "
        "region which has more matches will get high score",
        [
            node("node1", CHINA),
            node("node2", INDIA),
            node("node3", CHINA),
            node("node4", CHINA),
            node("node5", INDIA),
        ],
        [
            pod("e1", S2, on="node1"),
            pod("e2", S2, on="node1"),
            pod("e3", S2, on="node2"),
            pod("e4", S2, on="node3"),
            pod("e5", S2, on="node4"),
            pod("e6", S2, on="node5"),
        ],
        pod("p", S1, preferred=STAY_WITH_S2_IN_REGION),
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
    ),
    preferred(
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to "
        "schedule and existing pods have the same labels",
        [
            node("node1", CHINA_AZ1),
            node("node2", INDIA),
            node("node3", CHINA),
            node("node4", CHINA),
            node("node5", INDIA),
        ],
        [
            pod("e1", S1, on="node1"),
            pod("e2", S1, on="node1"),
            pod("e3", S1, on="node2"),
            pod("e4", S1, on="node3"),
            pod("e5", S1, on="node3"),
            pod("e6", S1, on="node4"),
            pod("e7", S1, on="node5"),
        ],
        pod("p", S1, preferred=S1_REGION_8, preferred_anti=S2_AZ_5),
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
    ),
    preferred(
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        [node("node1", CHINA), node("node2", CHINA)],
        [
            pod("e1", S1, on="node1"),
            pod("e2", on="node2", preferred=S1_REGION_8, preferred_anti=S2_AZ_5),
        ],
        pod("p", S1),
        {"node1": 0, "node2": 0},
    ),
]
"""In TestPreferredAffinity the existing pods are in the default namespace; the two rows named
"Affinity with pods matching NamespaceSelector" (and "... both ... fields") appear once with
preferred affinity and once with preferred anti-affinity, told apart here by "[anti-affinity]".
Rows whose every node scores the same (kube-scheduler's Skip: every node 0) are compared
node by node only, having no winner."""

# TestPreferredAffinityWithHardPodAffinitySymmetricWeight: two placed pods whose required
# affinity selects service=S1 pods of the listed namespaces ("" in the table: default) and of the
# team1 namespaces; an incoming service=S1 pod gains hardPodAffinityWeight in their regions.
SERVICE_S1_FROM_TEAM1 = [
    term(
        sel(in_("service", "S1")),
        "region",
        namespaces=["default", "subteam2-team2"],
        ns_selector=TEAM1,
    )
]
HARD_EXISTING = [
    pod("e1", on="node1", affinity=SERVICE_S1_FROM_TEAM1),
    pod("e2", on="node2", affinity=SERVICE_S1_FROM_TEAM1),
]


def hard(name: str, namespace: str, scores: dict[str, int], weight: int | None = None) -> ScoreCase:
    return ScoreCase(
        source=f"{SCORING}: TestPreferredAffinityWithHardPodAffinitySymmetricWeight: '{name}'",
        nodes=THREE,
        existing=HARD_EXISTING,
        incoming=pod("p", {"service": "S1"}, ns=namespace),
        scores=scores,
        namespaces=TEAMS,
        config=score_config(podaffinity=1, hard_pod_affinity_weight=weight),
    )


BOTH_REGIONS = {"node1": 100, "node2": 100, "node3": 0}
NOTHING = {"node1": 0, "node2": 0, "node3": 0}

HARD_WEIGHT_CASES = [
    hard("with default weight", "default", BOTH_REGIONS),
    hard("with zero weight", "default", NOTHING, weight=0),
    hard("with no matching namespace", "subteam1-team2", NOTHING),
    hard("with matching NamespaceSelector", "subteam1-team1", BOTH_REGIONS),
    hard("with matching Namespaces", "subteam2-team2", BOTH_REGIONS),
]
"""The default weight (1) is left unset in the configuration; zero is set explicitly."""

SCORE_CASES = [*PREFERRED_CASES, *HARD_WEIGHT_CASES]
UNIQUE_WINNER = [c for c in SCORE_CASES if len(c.winners()) == 1]
AFFINITY_ONLY = score_config(podaffinity=1)


def test_enough_unique_winners() -> None:
    assert len(UNIQUE_WINNER) >= 14


@pytest.mark.parametrize("case", params(UNIQUE_WINNER))
def test_score_winner(case: ScoreCase, tmp_path: Path, capsys: Capsys) -> None:
    check_score_winner(tmp_path, capsys, case, AFFINITY_ONLY)


@pytest.mark.parametrize("case", params(SCORE_CASES))
def test_score_values(case: ScoreCase, tmp_path: Path, capsys: Capsys) -> None:
    check_score_values(tmp_path, capsys, case, AFFINITY_ONLY)
