"""kube-scheduler's PreFilterState AddPod / RemovePod tables, re-expressed on a session.

Sources (kubernetes/kubernetes; each case's id names its file, test function and case):

* ``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go``:
  TestPreFilterStateAddPod, TestPreFilterStateRemovePod;
* ``pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go``:
  TestPreFilterStateAddRemovePod.

kube-scheduler adds a pod to a computed PreFilter state for the pods nominated to a node, and
removes one for a preemption victim. pumice's counterparts are the session's own placements (a
statement's ``allocate``, undone by ``discard``) and evictions (a statement's ``evict``, after
which preempt and reclaim ask ``predicate_once_gone``). So a case here opens a session on the
table's cluster, places the added pod (or evicts the removed one) through a statement, and
checks the incoming pod's feasible nodes against:

* the verdict the table's expected counts imply (worked out by hand, from kube-constraints.md
  sections 1 and 2);
* a fresh session on the cluster as it would be with the pod already there (or gone): the
  counts kept current placement by placement must answer as counts computed from scratch,
  reasons included (the IPA table's own check: the state after AddPod equals PreFilter's over
  all the pods, and after RemovePod the state before);
* and, for an added pod, the verdict before it once the statement is discarded.

Not re-expressed, and why:

* TestPreFilterStateAddPod "add a pod when scheduling node affinity unmatched pod with
  NodeInclusionPolicy disabled", "add a pod when scheduling node affinity matched pod with
  NodeInclusionPolicy disabled", "add a pod when scheduling taint untolerated pod with
  NodeInclusionPolicy disabled", and TestPreFilterStateRemovePod's two "... with
  NodeInclusionPolicy disabled" rows: they switch NodeInclusionPolicyInPodTopologySpread off,
  which is on and locked in the Kubernetes pumice follows (pumice has no such switch);
* TestPreFilterStateRemovePod "delete a non-existing pod won't help": a pod that is not in the
  cluster cannot be evicted; pumice has no state to take it out of.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pumice import NodeInfo, TaskInfo, TaskStatus
from pumice.framework import Session, predicate_once_gone
from support.constraint_cases import NO_SCHEDULE, in_, node_not_in, not_in, pod, sel, term
from support.constraint_cases import spread as spread_constraint
from support.flow import GiB, open_flow, res
from support.links import job_of, links_snapshot, running
from support.spread_rows import BAR, NODE_1, ZONE_1

Obj = dict[str, Any]
PTS = "podtopologyspread/filtering_test.go"
IPA = "interpodaffinity/filtering_test.go"
TOLERATE_INFRA = {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Row:
    """One row: the cluster (node name -> labels, tainted nodes), the pods on it, the incoming
    pod, and the pod added to (``added``, with ``on``) or evicted from (``removed``, a name of
    ``existing``) the session; ``before`` / ``after``: the incoming pod's feasible nodes."""

    source: str
    nodes: Mapping[str, Mapping[str, str]]
    existing: Sequence[Obj]
    incoming: Obj
    after: frozenset[str]
    before: frozenset[str]
    added: Obj | None = None
    removed: str | None = None
    tainted: frozenset[str] = field(default_factory=frozenset)
    note: str = ""


def node_infos(row: Row) -> list[NodeInfo]:
    out = []
    for name, labels in row.nodes.items():
        taints = (NO_SCHEDULE,) if name in row.tainted else ()
        out.append(NodeInfo(name, res(16000, 32 * GiB), labels=dict(labels), taints=taints))
    return out


def session_on(row: Row, existing: Sequence[Obj], pending: Sequence[Obj]) -> Session:
    jobs = [running(p["metadata"]["name"], p["spec"]["nodeName"], p) for p in existing]
    jobs += [job_of(p["metadata"]["name"], [p]) for p in pending]
    return open_flow(links_snapshot(node_infos(row), jobs))


def task_named(session: Session, name: str) -> TaskInfo:
    found = [t for j in session.jobs.values() for t in j.tasks.values() if t.name == name]
    assert len(found) == 1, name
    return found[0]


def verdict(session: Session, task: TaskInfo) -> tuple[frozenset[str], list[str]]:
    """The nodes that pass every predicate, and each node's reason ('' where it passes)."""
    feasible = session.predicate(task)
    names = [n.name for n in session.table.nodes]
    passing = frozenset(n for n, ok in zip(names, feasible.mask, strict=True) if ok)
    return passing, [str(r) for r in feasible.reasons]


def once_gone(session: Session, task: TaskInfo) -> tuple[frozenset[str], list[str]]:
    """What preempt and reclaim ask: every predicate per node, the evicted pods gone."""
    reasons = [predicate_once_gone(session.shapes, task, n) for n in session.table.nodes]
    names = [n.name for n in session.table.nodes]
    return frozenset(n for n, r in zip(names, reasons, strict=True) if r == ""), reasons


# -- PodTopologySpread: TestPreFilterStateAddPod -------------------------------------------------

AB = {"node-a": {"zone": "zone1", "node": "node-a"}, "node-b": {"zone": "zone1", "node": "node-b"}}
AX = {"node-a": {"zone": "zone1", "node": "node-a"}, "node-x": {"zone": "zone2", "node": "node-x"}}
ABX = {**AB, "node-x": {"zone": "zone2", "node": "node-x"}}
# node-a zone1 (foo=bar), node-b zone2 (foo=""): the node inclusion policy rows
AB_ZONES = {
    "node-a": {"zone": "zone1", "node": "node-a", "foo": "bar"},
    "node-b": {"zone": "zone2", "node": "node-b", "foo": ""},
}
AB_PLAIN = {
    "node-a": {"zone": "zone1", "node": "node-a"},
    "node-b": {"zone": "zone2", "node": "node-b"},
}


def foo(name: str, on: str, ns: str = "default", **labels: str) -> Obj:
    return pod(name, {"foo": "", **labels}, ns=ns, on=on)


def preemptor(*constraints: Obj, labels: Mapping[str, str] | None = None, **kw: Any) -> Obj:
    return pod("p", {"foo": ""} if labels is None else labels, spreads=constraints, **kw)


def add_row(
    name: str,
    nodes: Mapping[str, Mapping[str, str]],
    existing: Sequence[Obj],
    incoming: Obj,
    added: Obj,
    before: set[str],
    after: set[str],
    **kw: Any,
) -> Row:
    return Row(
        source=f"{PTS}: TestPreFilterStateAddPod: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        added=added,
        before=frozenset(before),
        after=frozenset(after),
        **kw,
    )


ZONE_AND_NODE = preemptor(ZONE_1, NODE_1)
FOO_ZONE_BAR_NODE = preemptor(
    ZONE_1, spread_constraint(1, "node", BAR), labels={"foo": "", "bar": ""}
)

ADD_POD = [
    add_row(
        "node a and b both impact current min match",
        AB,
        [],
        preemptor(NODE_1),
        foo("p-a1", "node-a"),
        {"node-a", "node-b"},
        {"node-b"},
    ),
    add_row(
        "only node a impacts current min match",
        AB,
        [foo("p-b1", "node-b")],
        preemptor(NODE_1),
        foo("p-a1", "node-a"),
        {"node-a"},
        {"node-a", "node-b"},
    ),
    add_row(
        "add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        AB,
        [foo("p-b1", "node-b")],
        preemptor(NODE_1),
        foo("p-a1", "node-a", ns="ns1"),
        {"node-a"},
        {"node-a"},
    ),
    add_row(
        "add pod on non-critical node won't trigger re-calculation",
        AB,
        [foo("p-b1", "node-b")],
        preemptor(NODE_1),
        foo("p-b2", "node-b"),
        {"node-a"},
        {"node-a"},
    ),
    add_row(
        "node a and x both impact topologyKeyToMinPodsMap on zone and node",
        AX,
        [],
        ZONE_AND_NODE,
        foo("p-a1", "node-a"),
        {"node-a", "node-x"},
        {"node-x"},
    ),
    add_row(
        "only node a impacts topologyKeyToMinPodsMap on zone and node",
        AX,
        [foo("p-x1", "node-x")],
        ZONE_AND_NODE,
        foo("p-a1", "node-a"),
        {"node-a"},
        {"node-a", "node-x"},
    ),
    add_row(
        "node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap "
        "on zone",
        ABX,
        [foo("p-b1", "node-b"), foo("p-b2", "node-b"), foo("p-x1", "node-x")],
        ZONE_AND_NODE,
        foo("p-a1", "node-a"),
        set(),
        {"node-x"},
    ),
    add_row(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        ABX,
        [
            foo("p-b1", "node-b", bar=""),
            foo("p-x1", "node-x", bar=""),
            pod("p-x2", {"bar": ""}, on="node-x"),
        ],
        FOO_ZONE_BAR_NODE,
        foo("p-a1", "node-a"),
        {"node-a"},
        set(),
    ),
    add_row(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on "
        "both zone and node",
        ABX,
        [
            pod("p-b1", {"bar": ""}, on="node-b"),
            foo("p-x1", "node-x", bar=""),
            pod("p-x2", {"bar": ""}, on="node-x"),
        ],
        FOO_ZONE_BAR_NODE,
        foo("p-a1", "node-a", bar=""),
        {"node-a"},
        {"node-a", "node-b"},
    ),
    add_row(
        "add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        AB_ZONES,
        [foo("p-a2", "node-a"), foo("p-b1", "node-b")],
        preemptor(ZONE_1, node_affinity=node_not_in("foo", "bar")),
        foo("p-a1", "node-a"),
        {"node-b"},
        {"node-b"},
        note="node-a fails the pod's node affinity: the pods added there do not count",
    ),
    add_row(
        "add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        AB_ZONES,
        [foo("p-a1", "node-a"), foo("p-b2", "node-b")],
        preemptor(ZONE_1),
        foo("p-b1", "node-b"),
        {"node-a", "node-b"},
        {"node-a"},
    ),
    add_row(
        "add a label selector not matched pod when with NodeInclusionPolicy enabled",
        AB_ZONES,
        [foo("p-a1", "node-a"), foo("p-b2", "node-b")],
        preemptor(ZONE_1),
        pod("p-b1", on="node-b"),
        {"node-a", "node-b"},
        {"node-a", "node-b"},
    ),
    add_row(
        "add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        AB_PLAIN,
        [foo("p-a1", "node-a"), foo("p-b2", "node-b")],
        preemptor(ZONE_1, tolerations=[TOLERATE_INFRA]),
        foo("p-b1", "node-b"),
        {"node-a", "node-b"},
        {"node-a"},
        tainted=frozenset({"node-a"}),
        note="the table's node.kubernetes.io/unschedulable taint is dedicated=infra here",
    ),
]


# -- PodTopologySpread: TestPreFilterStateRemovePod ----------------------------------------------


def remove_row(
    name: str,
    nodes: Mapping[str, Mapping[str, str]],
    existing: Sequence[Obj],
    incoming: Obj,
    removed: str,
    before: set[str],
    after: set[str],
    **kw: Any,
) -> Row:
    return Row(
        source=f"{PTS}: TestPreFilterStateRemovePod: '{name}'",
        nodes=nodes,
        existing=existing,
        incoming=incoming,
        removed=removed,
        before=frozenset(before),
        after=frozenset(after),
        **kw,
    )


ABXY = {**ABX, "node-y": {"zone": "zone2", "node": "node-y"}}
ONE_EACH = [foo("p-a1", "node-a"), foo("p-b1", "node-b"), foo("p-x1", "node-x")]

REMOVE_POD = [
    remove_row(
        "one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        ABX,
        ONE_EACH,
        preemptor(ZONE_1),
        "p-a1",
        {"node-x"},
        {"node-a", "node-b", "node-x"},
    ),
    remove_row(
        "one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        ABXY,
        [*ONE_EACH, foo("p-y1", "node-y")],
        preemptor(ZONE_1),
        "p-a1",
        {"node-a", "node-b", "node-x", "node-y"},
        {"node-a", "node-b"},
    ),
    remove_row(
        "delete an irrelevant pod won't help",
        ABXY,
        [pod("p-a0", {"bar": ""}, on="node-a"), *ONE_EACH, foo("p-y1", "node-y")],
        preemptor(ZONE_1),
        "p-a0",
        {"node-a", "node-b", "node-x", "node-y"},
        {"node-a", "node-b", "node-x", "node-y"},
    ),
    remove_row(
        "two spreadConstraints",
        ABX,
        [
            foo("p-a1", "node-a"),
            foo("p-a2", "node-a"),
            foo("p-b1", "node-b"),
            foo("p-x1", "node-x"),
            foo("p-x2", "node-x"),
        ],
        ZONE_AND_NODE,
        "p-x1",
        set(),
        {"node-x"},
    ),
    remove_row(
        "remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        AB_ZONES,
        [foo("p-a2", "node-a"), foo("p-b1", "node-b")],
        preemptor(ZONE_1, node_affinity=node_not_in("foo", "bar")),
        "p-a2",
        {"node-b"},
        {"node-b"},
        note="the table removes its first existing pod, p-a2 (node-a, left out by the policy)",
    ),
    remove_row(
        "remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        AB_ZONES,
        [foo("p-a1", "node-a"), foo("p-b2", "node-b")],
        preemptor(ZONE_1),
        "p-b2",
        {"node-a", "node-b"},
        {"node-b"},
        note="the table takes a pod off node-b (its expected counts: zone1 1, zone2 0); here "
        "node-b's one pod is evicted",
    ),
]


# -- InterPodAffinity: TestPreFilterStateAddRemovePod -------------------------------------------

ABC_REGIONS = {
    "nodeA": {"region": "r1", "zone": "z11"},
    "nodeB": {"region": "r1", "zone": "z12"},
    "nodeC": {"region": "r2", "zone": "z21"},
}
FOOBAR = {"foo": "bar"}
ANTI_FOOBAR = [term(sel(in_("foo", "bar")), "region")]
COMPLEX = [
    term(sel(in_("foo", "bar", "buzz")), "region"),
    term(sel(not_in("service", "bar", "security", "test")), "zone"),
]


def ipa_row(
    name: str,
    existing: Sequence[Obj],
    incoming: Obj,
    added: Obj,
    before: set[str],
    after: set[str],
) -> Row:
    return Row(
        source=f"{IPA}: TestPreFilterStateAddRemovePod: '{name}'",
        nodes=ABC_REGIONS,
        existing=existing,
        incoming=incoming,
        added=added,
        before=frozenset(before),
        after=frozenset(after),
    )


UPDATED = "preFilterState anti-affinity terms are updated correctly after adding and removing a pod"

ADD_REMOVE_IPA = [
    ipa_row(
        "no affinity exist",
        [pod("p1", FOOBAR, on="nodeA"), pod("p2", on="nodeC")],
        pod("pending", FOOBAR),
        pod("addedPod", FOOBAR, on="nodeB"),
        {"nodeA", "nodeB", "nodeC"},
        {"nodeA", "nodeB", "nodeC"},
    ),
    ipa_row(
        UPDATED,
        [pod("p1", FOOBAR, on="nodeA"), pod("p2", on="nodeC", anti=ANTI_FOOBAR)],
        pod("pending", FOOBAR, anti=ANTI_FOOBAR),
        pod("addedPod", FOOBAR, on="nodeB", anti=ANTI_FOOBAR),
        set(),
        set(),
    ),
    ipa_row(
        UPDATED + " [two terms]",
        [pod("p1", FOOBAR, on="nodeA"), pod("p2", on="nodeC", anti=ANTI_FOOBAR)],
        pod("pending", FOOBAR, anti=COMPLEX),
        pod("addedPod", FOOBAR, on="nodeA", anti=COMPLEX),
        set(),
        set(),
    ),
    ipa_row(
        "preFilterState matching pod affinity and anti-affinity are updated correctly after "
        "adding and removing a pod",
        [pod("p1", FOOBAR, on="nodeA"), pod("p2", on="nodeC", anti=ANTI_FOOBAR, affinity=COMPLEX)],
        pod("pending", FOOBAR, affinity=COMPLEX),
        pod("addedPod", FOOBAR, on="nodeA", anti=COMPLEX),
        {"nodeA"},
        set(),
    ),
]
"""The table has two rows named like UPDATED; the second (two anti-affinity terms) is told
apart by "[two terms]". Its services field (a Service selecting the pods) changes nothing in
InterPodAffinity and is left out."""


def params(rows: Sequence[Row]) -> list[Any]:
    return [pytest.param(r, id=r.source) for r in rows]


def unbound(p: Obj) -> Obj:
    """The same pod, pending (so that a statement can place it)."""
    spec = {k: v for k, v in p["spec"].items() if k != "nodeName"}
    return {**p, "spec": {**spec, "schedulerName": "pumice"}, "status": {"phase": "Pending"}}


@pytest.mark.parametrize("row", params([*ADD_POD, *ADD_REMOVE_IPA]))
def test_a_pod_placed_in_the_session_counts_as_if_it_were_there(row: Row) -> None:
    assert row.added is not None
    where = row.added["spec"]["nodeName"]
    name = row.incoming["metadata"]["name"]
    session = session_on(row, row.existing, [row.incoming, unbound(row.added)])
    incoming = task_named(session, name)
    before = verdict(session, incoming)
    assert before[0] == row.before, row.source

    statement = session.statement()
    statement.allocate(task_named(session, row.added["metadata"]["name"]), where)
    after = verdict(session, incoming)
    assert after[0] == row.after, row.source
    with_it = session_on(row, [*row.existing, row.added], [row.incoming])
    assert after == verdict(with_it, task_named(with_it, name)), "counts from scratch differ"

    statement.discard()
    assert verdict(session, incoming) == before, "the discarded placement still counts"


@pytest.mark.parametrize("row", params(REMOVE_POD))
def test_an_evicted_pod_no_longer_counts_for_the_preemptor(row: Row) -> None:
    name = row.incoming["metadata"]["name"]
    session = session_on(row, row.existing, [row.incoming])
    incoming = task_named(session, name)
    assert verdict(session, incoming)[0] == row.before, row.source

    victim = task_named(session, str(row.removed))
    assert victim.status == TaskStatus.RUNNING
    session.statement().evict(victim, "preempt")
    gone = once_gone(session, incoming)
    assert gone[0] == row.after, row.source
    rest = [p for p in row.existing if p["metadata"]["name"] != row.removed]
    without = session_on(row, rest, [row.incoming])
    assert gone == verdict(without, task_named(without, name)), "counts from scratch differ"
