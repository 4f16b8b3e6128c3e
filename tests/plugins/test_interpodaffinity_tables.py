"""kube-scheduler's InterPodAffinity tables, re-expressed as ``pumice simulate`` scenarios.

Sources (kubernetes/kubernetes; each case's id names its file, test function and case):

* ``pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go``:
  TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes;
* ``pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go``: TestPreferredAffinity,
  TestPreferredAffinityWithHardPodAffinitySymmetricWeight;
* ``test/integration/scheduler/filters/filters_test.go``: TestInterPodAffinity,
  TestInterPodAffinityWithNamespaceSelector.

The unit tables call one plugin's Filter on one node; here the whole scheduler runs, so a case
states the set of nodes that pass every filter (``feasible``) or, when there is none, the
reasons of kube-scheduler's ``0/N nodes are available`` message. Where the unit table leaves a
field out that the API server requires (a topologyKey), the case uses the one its siblings use,
and says so in ``note``. Cases about label-syntax validation (the API server rejects those pods)
are not re-expressed. The expected verdicts were worked out from kube-constraints.md sections 1
and 3 and are checked against the independent checker of ``support/constraint_checker.py``
(``test_tables_agree_with_the_checker``), which runs without pumice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.constraint_cases import (
    Capsys,
    FilterCase,
    ScoreCase,
    absent,
    check_case_against_checker,
    check_filter_case,
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
from support.constraint_checker import AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY

FILTERING = "interpodaffinity/filtering_test.go"
SCORING = "interpodaffinity/scoring_test.go"
INTEGRATION = "integration/scheduler/filters/filters_test.go"

SCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}


def single(
    name: str,
    incoming: dict[str, object],
    existing: list[dict[str, object]] | None = None,
    *,
    reason: str | None = None,
    nodes: int = 1,
    note: str = "",
    namespaces: tuple[dict[str, object], ...] = (),
) -> FilterCase:
    """A TestRequiredAffinitySingleNode row: node1 (region r1, zone z11) holds one pod labelled
    service=securityscan unless ``existing`` says otherwise; ``reason`` None means it fits."""
    node_list = [node("node1", {"region": "r1", "zone": "z11"})]
    if nodes == 2:
        node_list.append(node("node2", {"region": "r2", "zone": "z21"}))
    if existing is None:
        existing = [pod("scan", SCAN, on="node1")]
    names = [n["metadata"]["name"] for n in node_list]
    return FilterCase(
        source=f"{FILTERING}: TestRequiredAffinitySingleNode: '{name}'",
        nodes=node_list,
        existing=existing,
        incoming=incoming,
        feasible=frozenset() if reason else frozenset(names),
        reasons={reason: len(names)} if reason else {},
        namespaces=namespaces,
        note=note,
    )


TEAMS = (
    namespace("subteam1-team1", {"team": "team1"}),
    namespace("subteam2-team1", {"team": "team1"}),
    namespace("subteam1-team2", {"team": "team2"}),
    namespace("subteam2-team2", {"team": "team2"}),
)
TEAM1 = sel(in_("team", "team1"))

SCAN_IN = sel(in_("service", "securityscan", "value2"))
ANTIVIRUS_IN = sel(in_("service", "antivirusscan", "value2"))

SINGLE_NODE = [
    single(
        "A pod that has no required pod affinity scheduling rules can schedule onto a node "
        "with no existing pods",
        pod("p", S1),
        existing=[],
    ),
    single(
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In "
        "operator that matches the existing pod",
        pod("p", S1, affinity=[term(SCAN_IN, "region")]),
    ),
    single(
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity "
        "using not in operator in labelSelector that matches the existing pod",
        pod("p", S1, affinity=[term(sel(not_in("service", "securityscan3", "value3")), "region")]),
    ),
    single(
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        pod("p", S1, affinity=[term(SCAN_IN, "region", namespaces=["diffnamespace"])]),
        existing=[pod("scan", SCAN, ns="ns", on="node1")],
        reason=AFFINITY,
        note="the table's term has no topologyKey; region is used",
    ),
    single(
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        pod("p", SCAN, affinity=[term(ANTIVIRUS_IN, "region")]),
        reason=AFFINITY,
        note="the table's term has no topologyKey; region is used",
    ),
    single(
        "satisfies the PodAffinity with different label Operators in multiple "
        "RequiredDuringSchedulingIgnoredDuringExecution",
        pod(
            "p",
            S1,
            affinity=[
                term(sel(exists("service"), absent("wrongkey")), "region"),
                term(
                    sel(in_("service", "securityscan"), not_in("service", "WrongValue")), "region"
                ),
            ],
        ),
    ),
    single(
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot "
        "schedule onto the node because one of the matchExpression item don't match.",
        pod(
            "p",
            S1,
            affinity=[
                term(sel(exists("service"), absent("wrongkey")), "region"),
                term(
                    sel(in_("service", "securityscan2"), not_in("service", "WrongValue")), "region"
                ),
            ],
        ),
        reason=AFFINITY,
    ),
    single(
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        pod("p", S1, affinity=[term(SCAN_IN, "region")], anti=[term(ANTIVIRUS_IN, "node")]),
    ),
    single(
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the "
        "existing pod",
        pod("p", S1, affinity=[term(SCAN_IN, "region")], anti=[term(ANTIVIRUS_IN, "node")]),
        existing=[pod("scan", SCAN, on="node1", anti=[term(ANTIVIRUS_IN, "node")])],
    ),
    single(
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        pod("p", S1, affinity=[term(SCAN_IN, "region")], anti=[term(SCAN_IN, "zone")]),
        reason=ANTI_AFFINITY,
    ),
    single(
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity "
        "symmetry with the existing pod",
        pod("p", SCAN, affinity=[term(SCAN_IN, "region")], anti=[term(ANTIVIRUS_IN, "node")]),
        existing=[pod("scan", SCAN, on="node1", anti=[term(SCAN_IN, "zone")])],
        reason=EXISTING_ANTI_AFFINITY,
    ),
    single(
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        pod("p", SCAN, affinity=[term(sel(not_in("service", "securityscan", "value2")), "region")]),
        existing=[pod("scan", SCAN, on="node2")],
        nodes=2,
        reason=AFFINITY,
        note="the table's existing pod is on a node outside the snapshot; here node2 (r2)",
    ),
    single(
        "verify that PodAntiAffinity from existing pod is respected when pod has no "
        "AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        pod("p", SCAN),
        existing=[pod("scan", SCAN, on="node1", anti=[term(SCAN_IN, "zone")])],
        reason=EXISTING_ANTI_AFFINITY,
    ),
    single(
        "verify that PodAntiAffinity from existing pod is respected when pod has no "
        "AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        pod("p", SCAN),
        existing=[
            pod(
                "scan",
                SCAN,
                on="node1",
                anti=[term(sel(not_in("service", "securityscan", "value2")), "zone")],
            )
        ],
    ),
    single(
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity "
        "symmetry with incoming pod",
        pod(
            "p",
            SCAN,
            anti=[term(sel(exists("service")), "region"), term(sel(exists("security")), "region")],
        ),
        existing=[pod("s1", S1, on="node1", anti=[term(sel(exists("security")), "zone")])],
        reason=ANTI_AFFINITY,
    ),
    single(
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        pod(
            "p",
            SCAN,
            anti=[term(sel(exists("service")), "zone"), term(sel(exists("security")), "zone")],
        ),
        existing=[pod("s1", S1, on="node1", anti=[term(sel(exists("security")), "zone")])],
        reason=ANTI_AFFINITY,
    ),
    single(
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        pod("p", S1, anti=[term(sel(exists("security")), "zone")]),
        existing=[
            pod(
                "scan",
                SCAN,
                on="node1",
                anti=[term(sel(exists("service")), "zone"), term(sel(exists("security")), "zone")],
            )
        ],
        reason=EXISTING_ANTI_AFFINITY,
    ),
    single(
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        pod(
            "p",
            {"abc": "", "xyz": ""},
            anti=[term(sel(exists("abc")), "zone"), term(sel(exists("def")), "zone")],
        ),
        existing=[
            pod(
                "e",
                {"def": "", "xyz": ""},
                on="node1",
                anti=[term(sel(exists("abc")), "zone"), term(sel(exists("def")), "zone")],
            )
        ],
        reason=ANTI_AFFINITY,
    ),
    single(
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        pod(
            "p",
            {"def": "", "xyz": ""},
            anti=[term(sel(exists("abc")), "zone"), term(sel(exists("def")), "zone")],
        ),
        existing=[
            pod(
                "e",
                {"abc": "", "xyz": ""},
                on="node1",
                anti=[term(sel(exists("abc")), "zone"), term(sel(exists("def")), "zone")],
            )
        ],
        reason=ANTI_AFFINITY,
    ),
    single(
        "affinity with NamespaceSelector",
        pod("p", S1, affinity=[term(SCAN_IN, "region", ns_selector=TEAM1)]),
        existing=[pod("scan", SCAN, ns="subteam1-team1", on="node1")],
        namespaces=TEAMS,
    ),
    single(
        "affinity with non-matching NamespaceSelector",
        pod("p", S1, affinity=[term(SCAN_IN, "region", ns_selector=TEAM1)]),
        existing=[pod("scan", SCAN, ns="subteam1-team2", on="node1")],
        namespaces=TEAMS,
        reason=AFFINITY,
    ),
    single(
        "anti-affinity with matching NamespaceSelector",
        pod("p", S1, ns="subteam1-team1", anti=[term(SCAN_IN, "zone", ns_selector=TEAM1)]),
        existing=[pod("scan", SCAN, ns="subteam2-team1", on="node1")],
        namespaces=TEAMS,
        reason=ANTI_AFFINITY,
    ),
    single(
        "anti-affinity with matching all NamespaceSelector",
        pod("p", S1, ns="subteam1-team1", anti=[term(SCAN_IN, "zone", ns_selector=sel())]),
        existing=[pod("scan", SCAN, ns="subteam2-team1", on="node1")],
        namespaces=TEAMS,
        reason=ANTI_AFFINITY,
    ),
    single(
        "anti-affinity with non-matching NamespaceSelector",
        pod("p", S1, ns="subteam1-team1", anti=[term(SCAN_IN, "zone", ns_selector=TEAM1)]),
        existing=[pod("scan", SCAN, ns="subteam1-team2", on="node1")],
        namespaces=TEAMS,
    ),
]


CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


def multi(
    name: str,
    nodes: list[dict[str, object]],
    existing: list[dict[str, object]],
    incoming: dict[str, object],
    feasible: set[str],
    reasons: dict[str, int] | None = None,
    *,
    note: str = "",
) -> FilterCase:
    """A TestRequiredAffinityMultipleNodes row."""
    return FilterCase(
        source=f"{FILTERING}: TestRequiredAffinityMultipleNodes: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        feasible=frozenset(feasible),
        reasons=reasons or {},
        note=note,
    )


def ab(a: dict[str, str], b: dict[str, str]) -> list[dict[str, object]]:
    return [node("node-a", a), node("node-b", b)]


R1Z1A = {"region": "r1", "zone": "z1", "hostname": "node-a"}
R1Z1B = {"region": "r1", "zone": "z1", "hostname": "node-b"}
R1Z2B = {"region": "r1", "zone": "z2", "hostname": "node-b"}

MULTIPLE_NODES = [
    multi(
        "A pod can be scheduled onto all the nodes that have the same topology key & label value "
        "with one of them has an existing pod that matches the affinity rules",
        [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)],
        [pod("p1", {"foo": "bar"}, on="node1")],
        pod("p", affinity=[term(sel(in_("foo", "bar")), "region")]),
        {"node1", "node2"},
    ),
    multi(
        "The affinity rule is to schedule all of the pods of this collection to the same zone. "
        "The first pod of the collection should not be blocked from being scheduled onto any "
        "node, even there's no existing pod that matches the rule anywhere.",
        ab({"zone": "az1", "hostname": "h1"}, {"zone": "az2", "hostname": "h2"}),
        [pod("p1", {"foo": "bar"}, on="node-a")],
        pod(
            "p",
            {"foo": "bar", "service": "securityscan"},
            affinity=[
                term(sel(in_("foo", "bar")), "zone"),
                term(sel(in_("service", "securityscan")), "zone"),
            ],
        ),
        {"node-a", "node-b"},
    ),
    multi(
        "The first pod of the collection can only be scheduled on nodes labelled with the "
        "requested topology keys",
        ab({"zoneLabel": "az1", "hostname": "h1"}, {"zoneLabel": "az2", "hostname": "h2"}),
        [pod("p1", {"foo": "bar"}, on="node-a")],
        pod(
            "p",
            {"foo": "bar", "service": "securityscan"},
            affinity=[
                term(sel(in_("foo", "bar")), "zone"),
                term(sel(in_("service", "securityscan")), "zone"),
            ],
        ),
        set(),
        {AFFINITY: 2},
    ),
    multi(
        "NodeA and node-b have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto node-a and node-b.",
        ab({"region": "r1", "hostname": "node-a"}, {"region": "r1", "hostname": "node-b"}),
        [pod("e", {"foo": "abc"}, on="node-a")],
        pod("p", anti=[term(sel(in_("foo", "abc")), "region")]),
        set(),
        {ANTI_AFFINITY: 2},
    ),
    multi(
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity "
        "rule matches a pod.",
        ab(
            {"region": "r1", "zone": "z1", "hostname": "node-a"},
            {"region": "r1", "zone": "z2", "hostname": "node-b"},
        ),
        [pod("e", {"foo": "abc", "service": "securityscan"}, on="node-a")],
        pod(
            "p",
            anti=[
                term(sel(in_("foo", "abc")), "region"),
                term(sel(in_("service", "securityscan")), "zone"),
            ],
        ),
        set(),
        {ANTI_AFFINITY: 2},
    ),
    multi(
        "NodeA and node-b have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto node-a and node-b "
        "but can be scheduled onto node-c",
        [node("node-a", CHINA), node("node-b", CHINA_AZ1), node("node-c", INDIA)],
        [pod("e", {"foo": "abc"}, on="node-a")],
        pod("p", anti=[term(sel(in_("foo", "abc")), "region")]),
        {"node-c"},
    ),
    multi(
        "NodeA and node-b have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto node-a, node-b, "
        "but can be scheduled onto node-c (NodeC has an existing pod that match the inter pod "
        "affinity rule but in different namespace)",
        [node("node-a", CHINA), node("node-b", CHINA_AZ1), node("node-c", INDIA)],
        [
            pod("e1", {"foo": "bar"}, ns="ns1", on="node-a"),
            pod("e2", ns="ns2", on="node-c", anti=[term(sel(in_("foo", "123")), "region")]),
        ],
        pod("p", {"foo": "123"}, ns="ns1", anti=[term(sel(in_("foo", "bar")), "region")]),
        {"node-c"},
        note="namespaces NS1/NS2 are spelled ns1/ns2 (namespace names are lower case)",
    ),
    multi(
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid "
        "topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the "
        "term is also checked",
        ab(R1Z1A, R1Z1B),
        [pod("e", on="node-a", anti=[term(sel(exists("foo")), "invalid-node-label")])],
        pod("p", {"foo": ""}),
        {"node-a", "node-b"},
    ),
    multi(
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if "
        "topologyKey matches",
        ab(R1Z1A, R1Z1B),
        [pod("e", {"foo": ""}, on="node-a")],
        pod("p", anti=[term(sel(exists("foo")), "invalid-node-label")]),
        {"node-a", "node-b"},
    ),
    multi(
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it "
        "violates each existingPod's terms on all nodes",
        ab(R1Z1A, R1Z2B),
        [
            pod("e1", on="node-a", anti=[term(sel(exists("foo")), "zone")]),
            pod("e2", on="node-a", anti=[term(sel(exists("bar")), "region")]),
        ],
        pod("p", {"foo": "", "bar": ""}),
        set(),
        {EXISTING_ANTI_AFFINITY: 2},
    ),
    multi(
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at "
        "least violates one anti-affinity rule of existingPod",
        ab(R1Z1A, R1Z2B),
        [pod("e1", {"foo": ""}, on="node-a"), pod("e2", {"bar": ""}, on="node-b")],
        pod("p", anti=[term(sel(exists("foo")), "zone"), term(sel(exists("bar")), "region")]),
        set(),
        {ANTI_AFFINITY: 2},
    ),
    multi(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when one term has invalid topologyKey",
        ab(R1Z1A, R1Z2B),
        [
            pod(
                "e",
                on="node-a",
                anti=[
                    term(sel(exists("foo")), "invalid-node-label"),
                    term(sel(exists("bar")), "zone"),
                ],
            )
        ],
        pod("p", {"foo": "", "bar": ""}),
        {"node-b"},
    ),
    multi(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when one term has invalid topologyKey",
        ab(R1Z1A, R1Z2B),
        [pod("pod-a", {"foo": "", "bar": ""}, on="node-a")],
        pod(
            "p",
            anti=[term(sel(exists("foo")), "invalid-node-label"), term(sel(exists("bar")), "zone")],
        ),
        {"node-b"},
    ),
    multi(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when all terms have valid topologyKey",
        ab(R1Z1A, R1Z2B),
        [
            pod(
                "e",
                on="node-a",
                anti=[term(sel(exists("foo")), "region"), term(sel(exists("bar")), "zone")],
            )
        ],
        pod("p", {"foo": "", "bar": ""}),
        set(),
        {EXISTING_ANTI_AFFINITY: 2},
    ),
    multi(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when all terms have valid topologyKey",
        ab(R1Z1A, R1Z2B),
        [pod("e", {"foo": "", "bar": ""}, on="node-a")],
        pod("p", anti=[term(sel(exists("foo")), "region"), term(sel(exists("bar")), "zone")]),
        set(),
        {ANTI_AFFINITY: 2},
    ),
    multi(
        "Test existing pod's anti-affinity: existingPod on node-a and node-b has at least one "
        "anti-affinity term matches incoming pod, so incoming pod can only be scheduled to node-c",
        [
            node("node-a", {"region": "r1", "zone": "z1", "hostname": "node-a"}),
            node("node-b", {"region": "r1", "zone": "z2", "hostname": "node-b"}),
            node("node-c", {"region": "r1", "zone": "z3", "hostname": "node-c"}),
        ],
        [
            pod(
                "e1",
                on="node-a",
                anti=[term(sel(exists("foo")), "zone"), term(sel(exists("labelA")), "zone")],
            ),
            pod(
                "e2",
                on="node-b",
                anti=[term(sel(exists("bar")), "zone"), term(sel(exists("labelB")), "zone")],
            ),
        ],
        pod("p", {"foo": "", "bar": ""}),
        {"node-c"},
    ),
    multi(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check "
        "if all topologyKeys match",
        ab(R1Z1A, R1Z1B),
        [pod("pod1", {"foo": "", "bar": ""}, on="node-a")],
        pod("p", affinity=[term(sel(exists("foo")), "region"), term(sel(exists("bar")), "zone")]),
        {"node-a", "node-b"},
    ),
    multi(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check "
        "if all topologyKeys match, and the match logic should be satisfied on the same pod",
        ab(R1Z1A, R1Z2B),
        [pod("pod1", {"foo": ""}, on="node-a"), pod("pod2", {"bar": ""}, on="node-b")],
        pod("p", affinity=[term(sel(exists("foo")), "region"), term(sel(exists("bar")), "zone")]),
        set(),
        {AFFINITY: 2},
    ),
]


# TestInterPodAffinity: two nodes testnode-0 and anothernode-0, both region r1 / zone z11, told
# apart by their "node" label; namespaces ns1 and ns2 are team1, ns3 is team2; pods default to
# ns1.
INTEGRATION_NODES = [
    node("testnode-0", {"region": "r1", "zone": "z11", "node": "n1"}),
    node("anothernode-0", {"region": "r1", "zone": "z11", "node": "n2"}),
]
INTEGRATION_NAMESPACES = (
    namespace("ns1", {"team": "team1"}),
    namespace("ns2", {"team": "team1"}),
    namespace("ns3", {"team": "team2"}),
)
BOTH = {"testnode-0", "anothernode-0"}


def integration(
    test: str,
    name: str,
    existing: list[dict[str, object]],
    incoming: dict[str, object],
    feasible: set[str],
    reasons: dict[str, int] | None = None,
    *,
    note: str = "",
) -> FilterCase:
    return FilterCase(
        source=f"{INTEGRATION}: {test}: '{name}'",
        nodes=INTEGRATION_NODES,
        existing=existing,
        incoming=incoming,
        feasible=frozenset(feasible),
        reasons=reasons or {},
        namespaces=INTEGRATION_NAMESPACES,
        note=note,
    )


def merged(selector: dict[str, Any], *requirements: dict[str, Any]) -> dict[str, Any]:
    """``selector`` with the requirements the API server appends for match/mismatchLabelKeys."""
    exprs = [*selector.get("matchExpressions", []), *requirements]
    return {**selector, "matchExpressions": exprs}


def label_key_cases(already_merged: bool) -> list[FilterCase]:
    """TestInterPodAffinity's matchLabelKeys / mismatchLabelKeys rows, with the selector as the
    user wrote it or as the API server stores it after merging (pumice must get the same)."""
    how = " [selector already merged by the API server]" if already_merged else ""
    foo = sel(exists("foo"))
    incoming_labels = {"foo": "", "bar": "a"}

    def keyed(op: str, key: str) -> dict[str, Any]:
        s = merged(foo, {"key": "bar", "operator": op, "values": ["a"]}) if already_merged else foo
        if op == "In":
            return term(s, key, match_keys=["bar"])
        return term(s, key, mismatch_keys=["bar"])

    def anti_term(op: str) -> dict[str, Any]:
        return keyed(op, "zone")

    def aff_term(op: str) -> dict[str, Any]:
        return keyed(op, "node")

    return [
        integration(
            "TestInterPodAffinity",
            "anti affinity: matchLabelKeys is merged into LabelSelector with In operator "
            "(feature flag: enabled)" + how,
            [
                pod("pod1", {"foo": "", "bar": "fuga"}, ns="ns1", on="testnode-0"),
                pod("pod2", {"foo": "", "bar": "hoge"}, ns="ns1", on="testnode-0"),
            ],
            pod("incoming", incoming_labels, ns="ns1", anti=[anti_term("In")]),
            BOTH,
        ),
        integration(
            "TestInterPodAffinity",
            "anti affinity: mismatchLabelKeys is merged into LabelSelector with NotIn operator "
            "(feature flag: enabled)" + how,
            [
                pod("pod1", {"foo": "", "bar": "a"}, ns="ns1", on="testnode-0"),
                pod("pod2", {"foo": "", "bar": "a"}, ns="ns1", on="testnode-0"),
            ],
            pod("incoming", incoming_labels, ns="ns1", anti=[anti_term("NotIn")]),
            BOTH,
        ),
        integration(
            "TestInterPodAffinity",
            "affinity: matchLabelKeys is merged into LabelSelector with In operator "
            "(feature flag: enabled)" + how,
            [
                pod("pod1", {"foo": "", "bar": "a"}, ns="ns1", on="anothernode-0"),
                pod("pod2", {"foo": "", "bar": "hoge"}, ns="ns1", on="testnode-0"),
                pod("pod3", {"foo": "", "bar": "fuga"}, ns="ns1", on="testnode-0"),
            ],
            pod("incoming", incoming_labels, ns="ns1", affinity=[aff_term("In")]),
            {"anothernode-0"},
            note="the table fills anothernode-0 so that the pod cannot fit at all; here the "
            "verdict is read from the feasible set instead",
        ),
        integration(
            "TestInterPodAffinity",
            "affinity: mismatchLabelKeys is merged into LabelSelector with NotIn operator "
            "(feature flag: enabled)" + how,
            [
                pod("pod1", {"foo": "", "bar": "fuga"}, ns="ns1", on="anothernode-0"),
                pod("pod2", {"foo": "", "bar": "a"}, ns="ns1", on="testnode-0"),
                pod("pod3", {"foo": "", "bar": "a"}, ns="ns1", on="testnode-0"),
            ],
            pod("incoming", incoming_labels, ns="ns1", affinity=[aff_term("NotIn")]),
            {"anothernode-0"},
            note="as above: the feasible set instead of a full node",
        ),
    ]


INTEGRATION_CASES = [
    integration(
        "TestInterPodAffinity",
        "validates that Inter-pod-Affinity is respected if not matching",
        [],
        pod(
            "fakename",
            S1,
            ns="ns1",
            affinity=[term(sel(in_("security", "securityscan")), "region")],
        ),
        set(),
        {AFFINITY: 2},
    ),
    integration(
        "TestInterPodAffinity",
        "validates that inter-pod-affinity is respected when pods have different Namespaces",
        [pod("fakename2", SCAN, ns="ns2", on="testnode-0")],
        pod(
            "fakename",
            S1,
            ns="ns1",
            affinity=[term(SCAN_IN, "region", namespaces=["diff-namespace"])],
        ),
        set(),
        {AFFINITY: 2},
    ),
    integration(
        "TestInterPodAffinity",
        "validates that InterPod Affinity and AntiAffinity is respected if matching",
        [pod("fakename2", SCAN, ns="ns1", on="testnode-0")],
        pod(
            "fakename",
            S1,
            ns="ns1",
            affinity=[term(SCAN_IN, "region")],
            anti=[term(ANTIVIRUS_IN, "node")],
        ),
        BOTH,
    ),
    integration(
        "TestInterPodAffinity",
        "nodes[0] and nodes[1] have same topologyKey and label value. nodes[0] has an existing "
        "pod that matches the inter pod affinity rule. The new pod can not be scheduled onto "
        "either of the two nodes.",
        [pod("fakename", {"foo": "abc"}, ns="ns1", on="testnode-0")],
        pod("fake-name2", ns="ns1", anti=[term(sel(in_("foo", "abc")), "region")]),
        set(),
        {ANTI_AFFINITY: 2},
    ),
    *label_key_cases(already_merged=False),
    *label_key_cases(already_merged=True),
    integration(
        "TestInterPodAffinityWithNamespaceSelector",
        "MatchingNamespaces",
        [pod("fakename2", SCAN, ns="ns2", on="testnode-0")],
        pod(
            "pod-ns-selector",
            ns="ns1",
            affinity=[term(sel(in_("service", "securityscan")), "region", ns_selector=TEAM1)],
        ),
        BOTH,
    ),
    integration(
        "TestInterPodAffinityWithNamespaceSelector",
        "MismatchingNamespaces",
        [pod("fakename2", SCAN, ns="ns3", on="testnode-0")],
        pod(
            "pod-ns-selector",
            ns="ns1",
            affinity=[term(sel(in_("service", "securityscan")), "region", ns_selector=TEAM1)],
        ),
        set(),
        {AFFINITY: 2},
    ),
]

REFERENCE = "shared/reference/kube-constraints.md"
TWO_HOSTS = [node("h1", {"host": "h1"}), node("h2", {"host": "h2"})]

SPEC_CASES = [
    FilterCase(
        source=f"{REFERENCE}: 8.4: 'InterPodAffinity counts terminating pods'",
        nodes=TWO_HOSTS,
        existing=[pod("old", {"app": "web"}, on="h1", terminating=True)],
        incoming=pod("p", {"app": "web"}, anti=[term(sel(in_("app", "web")), "host")]),
        feasible=frozenset({"h2"}),
    ),
    FilterCase(
        source=f"{REFERENCE}: 1.3: 'existing pods' required affinity is not enforced at Filter'",
        nodes=TWO_HOSTS,
        existing=[pod("e", {"app": "db"}, on="h1", affinity=[term(sel(in_("app", "db")), "host")])],
        incoming=pod("p", {"app": "web"}),
        feasible=frozenset({"h1", "h2"}),
    ),
]

FILTER_CASES = [*SINGLE_NODE, *MULTIPLE_NODES, *INTEGRATION_CASES, *SPEC_CASES]


@pytest.mark.parametrize("case", params(FILTER_CASES))
def test_filter(case: FilterCase, tmp_path: Path, capsys: Capsys) -> None:
    check_filter_case(tmp_path, capsys, case)


@pytest.mark.parametrize("case", params(FILTER_CASES))
def test_tables_agree_with_the_checker(case: FilterCase) -> None:
    check_case_against_checker(case)


# -- scores ------------------------------------------------------------------------------------

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

SCORE_CASES = [
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
        "with default weight",
        THREE,
        [
            pod(
                "e1",
                on="node1",
                affinity=[
                    term(
                        sel(in_("service", "S1")),
                        "region",
                        namespaces=["default", "subteam2-team2"],
                        ns_selector=TEAM1,
                    )
                ],
            ),
            pod(
                "e2",
                on="node2",
                affinity=[
                    term(
                        sel(in_("service", "S1")),
                        "region",
                        namespaces=["default", "subteam2-team2"],
                        ns_selector=TEAM1,
                    )
                ],
            ),
        ],
        pod("p", {"service": "S1"}),
        {"node1": 100, "node2": 100, "node3": 0},
        test="TestPreferredAffinityWithHardPodAffinitySymmetricWeight",
    ),
]
"""In TestPreferredAffinity the existing pods are in the default namespace; the two rows named
"Affinity with pods matching NamespaceSelector" (and "... both ... fields") appear once with
preferred affinity and once with preferred anti-affinity, told apart here by "[anti-affinity]".
In the hard-weight row the table's "" namespace is "default"."""

UNIQUE_WINNER = [c for c in SCORE_CASES if len(c.winners()) == 1]
AFFINITY_ONLY = score_config(podaffinity=1)


def test_enough_unique_winners() -> None:
    assert len(UNIQUE_WINNER) >= 12


@pytest.mark.parametrize("case", params(UNIQUE_WINNER))
def test_score_winner(case: ScoreCase, tmp_path: Path, capsys: Capsys) -> None:
    check_score_winner(tmp_path, capsys, case, AFFINITY_ONLY)


@pytest.mark.parametrize("case", params(SCORE_CASES))
def test_score_values(case: ScoreCase, tmp_path: Path, capsys: Capsys) -> None:
    check_score_values(tmp_path, capsys, case, AFFINITY_ONLY)
