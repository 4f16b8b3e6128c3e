"""The predicates plugin: each filter with passing and failing nodes and the exact reasons."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

from pumice import Arguments, JobInfo, NodeTable, PredicateResult, TaskInfo, TaskStatus
from pumice.logs import forget_warnings
from pumice.plugins.predicates import PredicatesPlugin
from support.builders import cluster, open_session
from support.nodes import (
    bare_task,
    container,
    expr,
    node,
    place,
    pod,
    table,
    taint,
    task_of,
    term,
    toleration,
)

TOO_MANY = "Too many pods"
CORDONED = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PORTS = "node(s) didn't have free ports for the requested pod ports"


def run(
    task: TaskInfo, nodes: NodeTable, arguments: dict[str, Any] | None = None
) -> tuple[list[bool], list[str]]:
    """The mask and the per-node reasons ('' for passing nodes) of one predicate call."""
    result = PredicatesPlugin(Arguments(arguments or {})).predicate(task, nodes)
    assert isinstance(result, PredicateResult)
    mask = [bool(x) for x in result.mask]
    if isinstance(result.reasons, str):
        reasons = ["" if ok else result.reasons for ok in mask]
    else:
        reasons = ["" if ok else str(r) for ok, r in zip(mask, result.reasons, strict=True)]
    return mask, reasons


def passing(task: TaskInfo, nodes: NodeTable, arguments: dict[str, Any] | None = None) -> list[str]:
    mask, _ = run(task, nodes, arguments)
    return [n.name for n, ok in zip(nodes.nodes, mask, strict=True) if ok]


# -- pod count ----------------------------------------------------------------------------------


def test_pod_count_rejects_a_full_node_and_ignores_finished_pods() -> None:
    full = node("full", max_pods=2)
    room = node("room", max_pods=2)
    tasks = [
        place(bare_task("a", 100), "full"),
        place(bare_task("b", 100), "full"),
        place(bare_task("c", 100), "room"),
        place(bare_task("d", 100), "room", TaskStatus.SUCCEEDED),
    ]
    nodes = table(full, room, tasks=tasks)
    assert run(bare_task("new", 100), nodes) == ([False, True], [TOO_MANY, ""])


# -- unschedulable ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tolerations", "fits"),
    [
        ([], False),
        ([toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")], True),
        ([toleration("node.kubernetes.io/unschedulable", "Exists")], True),
        ([toleration(operator="Exists")], True),
        ([toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoExecute")], False),
        ([toleration("node.kubernetes.io/unschedulable", value="x", effect="NoSchedule")], False),
        ([toleration("other", "Exists")], False),
    ],
)
def test_cordoned_node_unless_the_pod_tolerates_unschedulable(
    tolerations: list[dict[str, str]], fits: bool
) -> None:
    nodes = table(node("open"), node("cordoned", unschedulable=True))
    task = task_of(pod(tolerations=tolerations))
    assert run(task, nodes) == ([True, fits], ["", "" if fits else CORDONED])


# -- taints and tolerations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tol", "node_taint", "tolerated"),
    [
        # Equal (the default operator) needs equal key and value
        (toleration("dedicated", value="gpu"), taint("dedicated", "gpu"), True),
        (toleration("dedicated", "Equal", "gpu"), taint("dedicated", "gpu"), True),
        (toleration("dedicated", "Equal", "cpu"), taint("dedicated", "gpu"), False),
        (toleration("dedicated", "Equal"), taint("dedicated", "gpu"), False),
        (toleration("other", "Equal", "gpu"), taint("dedicated", "gpu"), False),
        # Exists ignores the value
        (toleration("dedicated", "Exists"), taint("dedicated", "gpu"), True),
        (toleration("dedicated", "Exists", "ignored"), taint("dedicated", "gpu"), True),
        # empty key with Exists tolerates every key
        (toleration(operator="Exists"), taint("anything", "at-all", "NoExecute"), True),
        (toleration(operator="Exists", effect="NoSchedule"), taint("k", "v", "NoExecute"), False),
        # empty effect tolerates every effect; a set effect must be equal
        (toleration("k", "Exists"), taint("k", "v", "NoExecute"), True),
        (toleration("k", "Exists", effect="NoExecute"), taint("k", "v", "NoExecute"), True),
        (toleration("k", "Exists", effect="NoSchedule"), taint("k", "v", "NoExecute"), False),
        (toleration("k", "Exists", effect="PreferNoSchedule"), taint("k", "v"), False),
        # an unknown operator tolerates nothing
        (toleration("k", "Gt", "1"), taint("k", "1"), False),
    ],
)
def test_toleration_matching(
    tol: dict[str, str], node_taint: dict[str, str], tolerated: bool
) -> None:
    nodes = table(node("tainted", taints=[node_taint]))
    key, value = node_taint["key"], node_taint["value"]
    reason = "" if tolerated else f"node(s) had untolerated taint {{{key}: {value}}}"
    assert run(task_of(pod(tolerations=[tol])), nodes) == ([tolerated], [reason])


def test_only_noschedule_and_noexecute_taints_filter() -> None:
    nodes = table(
        node("soft", taints=[taint("a", "1", "PreferNoSchedule")]),
        node("noschedule", taints=[taint("b", "2", "NoSchedule")]),
        node("noexecute", taints=[taint("c", "", "NoExecute")]),
        node("clean"),
    )
    assert run(task_of(pod()), nodes) == (
        [True, False, False, True],
        ["", "node(s) had untolerated taint {b: 2}", "node(s) had untolerated taint {c: }", ""],
    )


def test_taint_reason_names_the_first_untolerated_taint_of_each_node() -> None:
    nodes = table(
        node("n0", taints=[taint("ok", "1"), taint("x", "1"), taint("y", "2")]),
        node("n1", taints=[taint("y", "2"), taint("x", "1")]),
        node("n2", taints=[taint("ok", "1")]),
    )
    task = task_of(pod(tolerations=[toleration("ok", "Exists")]))
    assert run(task, nodes) == (
        [False, False, True],
        ["node(s) had untolerated taint {x: 1}", "node(s) had untolerated taint {y: 2}", ""],
    )


def test_task_without_a_pod_tolerates_nothing() -> None:
    nodes = table(node("tainted", taints=[taint("k", "v")]), node("clean"))
    assert passing(bare_task("t", 100), nodes) == ["clean"]


# -- nodeSelector and required node affinity ----------------------------------------------------


@pytest.fixture
def labelled() -> NodeTable:
    return table(
        node("n0", labels={"zone": "a", "gen": "3"}),
        node("n1", labels={"zone": "b", "gen": "5"}),
        node("n2"),
        node("n3", labels={"zone": "c", "gen": "x"}),
    )


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (expr("zone", "In", "a", "b"), ["n0", "n1"]),
        (expr("zone", "In", "z"), []),
        (expr("zone", "NotIn", "a"), ["n1", "n2", "n3"]),
        (expr("zone", "Exists"), ["n0", "n1", "n3"]),
        (expr("zone", "DoesNotExist"), ["n2"]),
        (expr("gen", "Gt", "4"), ["n1"]),
        (expr("gen", "Gt", "3"), ["n1"]),
        (expr("gen", "Lt", "4"), ["n0"]),
        (expr("gen", "Lt", "+6"), ["n0", "n1"]),
        (expr("gen", "Gt", "-1"), ["n0", "n1"]),
        # invalid requirements: the term matches no node
        (expr("gen", "Gt", "four"), []),
        (expr("gen", "Gt", "1", "2"), []),
        (expr("gen", "Lt"), []),
        (expr("zone", "In"), []),
        (expr("zone", "NotIn"), []),
        (expr("zone", "Exists", "a"), []),
        (expr("zone", "DoesNotExist", "a"), []),
        (expr("zone", "Like", "a"), []),
    ],
)
def test_required_affinity_operators(
    labelled: NodeTable, requirement: dict[str, Any], expected: list[str]
) -> None:
    task = task_of(pod(required=[term(requirement)]))
    mask, reasons = run(task, labelled)
    assert passing(task, labelled) == expected
    assert reasons == ["" if ok else AFFINITY for ok in mask]


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        (expr("metadata.name", "In", "n2"), ["n2"]),
        (expr("metadata.name", "NotIn", "n0"), ["n1", "n2", "n3"]),
        (expr("metadata.name", "In", "n0", "n1"), []),  # exactly one value is allowed
        (expr("metadata.name", "Exists"), []),
        (expr("metadata.labels", "In", "n0"), []),
    ],
)
def test_match_fields_on_the_node_name(
    labelled: NodeTable, field: dict[str, Any], expected: list[str]
) -> None:
    assert passing(task_of(pod(required=[term(fields=[field])])), labelled) == expected


def test_terms_are_ored_and_requirements_anded(labelled: NodeTable) -> None:
    both = term(expr("zone", "Exists"), expr("gen", "Gt", "4"))
    assert passing(task_of(pod(required=[both])), labelled) == ["n1"]
    either = [term(expr("zone", "In", "a")), term(expr("zone", "DoesNotExist"))]
    assert passing(task_of(pod(required=either)), labelled) == ["n0", "n2"]
    mixed = term(expr("zone", "In", "a", "b"), fields=[expr("metadata.name", "NotIn", "n0")])
    assert passing(task_of(pod(required=[mixed])), labelled) == ["n1"]


def test_empty_terms_match_no_node(labelled: NodeTable) -> None:
    assert passing(task_of(pod(required=[term()])), labelled) == []
    assert passing(task_of(pod(required=[])), labelled) == []
    # an empty term beside a real one does not stop the real one matching
    assert passing(task_of(pod(required=[term(), term(expr("zone", "In", "c"))])), labelled) == [
        "n3"
    ]


def test_node_selector_needs_every_label_and_combines_with_affinity(labelled: NodeTable) -> None:
    assert passing(task_of(pod(node_selector={"zone": "b"})), labelled) == ["n1"]
    assert passing(task_of(pod(node_selector={"zone": "a", "gen": "5"})), labelled) == []
    assert passing(task_of(pod(node_selector={"missing": ""})), labelled) == []
    task = task_of(pod(node_selector={"zone": "b"}, required=[term(expr("gen", "Lt", "4"))]))
    assert passing(task, labelled) == []
    task = task_of(pod(node_selector={"gen": "3"}, required=[term(expr("zone", "Exists"))]))
    mask, reasons = run(task, labelled)
    assert mask == [True, False, False, False]
    assert reasons == ["", AFFINITY, AFFINITY, AFFINITY]


def test_no_selector_passes_every_node(labelled: NodeTable) -> None:
    assert passing(task_of(pod()), labelled) == ["n0", "n1", "n2", "n3"]


# -- host ports ---------------------------------------------------------------------------------


def port(host_port: int, protocol: str = "", host_ip: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"containerPort": 80, "hostPort": host_port}
    if protocol:
        out["protocol"] = protocol
    if host_ip:
        out["hostIP"] = host_ip
    return out


def ports_table(*used: dict[str, Any], status: TaskStatus = TaskStatus.RUNNING) -> NodeTable:
    """Node 'busy' runs one pod binding ``used``; node 'free' runs one pod binding nothing."""
    busy = place(task_of(pod("user", containers=[container("100m", host_ports=used)])), "busy")
    busy.status = status
    other = place(task_of(pod("plain")), "free")
    return table(node("busy"), node("free"), tasks=[busy, other])


@pytest.mark.parametrize(
    ("used", "wanted", "conflict"),
    [
        (port(8080), port(8080), True),
        (port(8080), port(8081), False),
        (port(8080), port(8080, "UDP"), False),
        (port(8080, "TCP"), port(8080), True),  # empty protocol is TCP
        (port(8080, "UDP"), port(8080, "UDP"), True),
        # 0.0.0.0 (or empty) clashes with every address
        (port(8080, host_ip="10.0.0.1"), port(8080), True),
        (port(8080), port(8080, host_ip="10.0.0.1"), True),
        (port(8080, host_ip="0.0.0.0"), port(8080, host_ip="10.0.0.1"), True),
        (port(8080, host_ip="10.0.0.1"), port(8080, host_ip="10.0.0.1"), True),
        (port(8080, host_ip="10.0.0.1"), port(8080, host_ip="10.0.0.2"), False),
    ],
)
def test_host_port_conflicts(used: dict[str, Any], wanted: dict[str, Any], conflict: bool) -> None:
    nodes = ports_table(used)
    task = task_of(pod("new", containers=[container("100m", host_ports=[wanted])]))
    assert run(task, nodes) == ([not conflict, True], [PORTS if conflict else "", ""])


def test_finished_pods_free_their_host_ports() -> None:
    nodes = ports_table(port(9000), status=TaskStatus.SUCCEEDED)
    task = task_of(pod("new", containers=[container(host_ports=[9000])]))
    assert passing(task, nodes) == ["busy", "free"]


def test_container_ports_without_host_port_do_not_conflict() -> None:
    nodes = ports_table({"containerPort": 9000})
    task = task_of(pod("new", containers=[container(host_ports=[{"containerPort": 9000}])]))
    assert passing(task, nodes) == ["busy", "free"]


def test_sidecar_host_ports_count_on_both_sides() -> None:
    sidecar = {**container(host_ports=[7000], name="side"), "restartPolicy": "Always"}
    user = place(task_of(pod("user", init_containers=[sidecar])), "busy")
    nodes = table(node("busy"), node("free"), tasks=[user])
    assert passing(task_of(pod("new", containers=[container(host_ports=[7000])])), nodes) == [
        "free"
    ]
    wants = task_of(pod("new2", init_containers=[sidecar]))
    assert passing(wants, nodes) == ["free"]
    plain_init = {**container(host_ports=[7000], name="init")}
    assert passing(task_of(pod("new3", init_containers=[plain_init])), nodes) == ["busy", "free"]


def test_pod_ports_on_nodes_are_read_only_for_tasks_that_want_host_ports() -> None:
    nodes = ports_table(port(8080))
    placed = {t.uid: t for n in nodes.nodes for t in n.tasks.values()}
    plugin = PredicatesPlugin(Arguments({}))
    plugin.predicate(task_of(pod("no-ports")), nodes)
    # the terms of the pods on the nodes (their ports) are parsed on first use only
    assert {
        uid for uid, t in placed.items() if t._derived is not None and t._derived.terms is not None
    } == set()
    plugin.predicate(task_of(pod("ports", containers=[container(host_ports=[1])])), nodes)
    assert {
        uid for uid, t in placed.items() if t._derived is not None and t._derived.terms is not None
    } == {"uid-user", "uid-plain"}


def test_host_ports_follow_allocations_made_in_the_session() -> None:
    snap = cluster(2)
    first = task_of(pod("first", containers=[container("100m", host_ports=[8080])]))
    second = task_of(pod("second", containers=[container("100m", host_ports=[8080])]))
    job = JobInfo(uid="default/web", name="web")
    job.add_task(first)
    job.add_task(second)
    snap.jobs[job.uid] = job
    ssn = open_session({"predicates": PredicatesPlugin}, [["predicates"]], snap)
    assert ssn.predicate(second).feasible == 2
    ssn.statement().allocate(first, "n0")
    feasibility = ssn.predicate(second)
    assert list(feasibility.mask) == [False, True]
    assert feasibility.message() == f"1/2 nodes are available: 1 {PORTS}."


# -- order of reasons, arguments, the session ----------------------------------------------------


def test_first_failing_filter_gives_the_reason() -> None:
    nodes = table(
        node("full", max_pods=0, unschedulable=True, taints=[taint("k")]),
        node("cordoned", unschedulable=True, taints=[taint("k")], labels={"zone": "x"}),
        node("tainted", taints=[taint("k")], labels={"zone": "x"}),
        node("elsewhere", labels={"zone": "y"}),
        node("fits", labels={"zone": "a"}),
    )
    task = task_of(pod(node_selector={"zone": "a"}))
    assert run(task, nodes) == (
        [False, False, False, False, True],
        [TOO_MANY, CORDONED, "node(s) had untolerated taint {k: }", AFFINITY, ""],
    )


def test_reasons_through_a_session_message() -> None:
    snap = cluster(4)
    snap.nodes["n0"].taints = ({"key": "gpu", "value": "true", "effect": "NoSchedule"},)
    snap.nodes["n1"].taints = ({"key": "gpu", "value": "true", "effect": "NoSchedule"},)
    ssn = open_session({"predicates": PredicatesPlugin}, [["predicates"]], snap)
    task = task_of(pod(node_selector={"index": "3"}))
    feasibility = ssn.predicate(task)
    assert list(feasibility.mask) == [False, False, False, True]
    assert feasibility.message() == (
        f"1/4 nodes are available: 1 {AFFINITY}, 2 node(s) had untolerated taint {{gpu: true}}."
    )


@pytest.mark.parametrize("off", [False, "false", "False", "FALSE"])
def test_arguments_switch_filters_off(off: object) -> None:
    nodes = table(
        node("tainted", taints=[taint("k")], labels={"zone": "b"}),
        node("wrong-zone", labels={"zone": "a"}),
        node("busy-port", labels={"zone": "b"}),
    )
    nodes.nodes[2].add_task(
        place(task_of(pod("user", containers=[container(host_ports=[80])])), "busy-port")
    )
    task = task_of(pod(node_selector={"zone": "b"}, containers=[container(host_ports=[80])]))
    assert passing(task, nodes) == []
    assert passing(task, nodes, {"predicate.TaintTolerationEnable": off}) == ["tainted"]
    assert passing(task, nodes, {"predicate.NodeAffinityEnable": off}) == ["wrong-zone"]
    assert passing(task, nodes, {"predicate.NodePortsEnable": off}) == ["busy-port"]
    every = {
        "predicate.TaintTolerationEnable": off,
        "predicate.NodeAffinityEnable": off,
        "predicate.NodePortsEnable": off,
    }
    assert passing(task, nodes, every) == ["tainted", "wrong-zone", "busy-port"]
    only_ports = {"predicate.TaintTolerationEnable": off, "predicate.NodeAffinityEnable": off}
    assert passing(task, nodes, only_ports) == ["tainted", "wrong-zone"]
    only_taints = {"predicate.NodeAffinityEnable": off, "predicate.NodePortsEnable": off}
    assert passing(task, nodes, only_taints) == ["wrong-zone", "busy-port"]


def test_unschedulable_and_pod_count_cannot_be_switched_off() -> None:
    nodes = table(node("cordoned", unschedulable=True), node("full", max_pods=0))
    every_off = {
        "predicate.TaintTolerationEnable": False,
        "predicate.NodeAffinityEnable": False,
        "predicate.NodePortsEnable": False,
    }
    assert run(bare_task(), nodes, every_off) == ([False, False], [CORDONED, TOO_MANY])


def test_unimplemented_predicates_warn_once_when_set_true(
    caplog: pytest.LogCaptureFixture,
) -> None:
    forget_warnings()
    args = {"predicate.CacheEnable": True, "predicate.DynamicResourceAllocationEnable": False}
    with caplog.at_level(logging.WARNING, logger="pumice.plugins.predicates"):
        PredicatesPlugin(Arguments(args))
        PredicatesPlugin(Arguments(args))
        PredicatesPlugin(Arguments({"predicate.DynamicResourceAllocationEnable": "true"}))
        PredicatesPlugin(Arguments({"predicate.VolumeBindingEnable": True}))  # implemented now
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "plugin predicates: predicate.CacheEnable: set but not implemented in pumice; ignored",
        "plugin predicates: predicate.DynamicResourceAllocationEnable: set but not implemented "
        "in pumice; ignored",
    ]


# -- caching ------------------------------------------------------------------------------------


def test_each_distinct_term_is_evaluated_once_per_session(labelled: NodeTable) -> None:
    plugin = PredicatesPlugin(Arguments({}))
    a = term(expr("zone", "In", "a", "b"), expr("gen", "Exists"))
    a_reordered = term(expr("gen", "Exists"), expr("zone", "In", "b", "a"))
    b = term(expr("zone", "In", "c"))
    tols = [toleration("x", "Exists"), toleration("y", "Equal", "1", "NoSchedule")]
    tasks = [
        task_of(pod(f"p{i}", required=[a, b], tolerations=tols, node_selector={"zone": "a"}))
        for i in range(5)
    ]
    tasks.append(
        task_of(
            pod("q", required=[b, a_reordered], tolerations=tols[::-1], node_selector={"zone": "a"})
        )
    )
    tasks.append(task_of(pod("r", required=[b])))
    answers = [plugin.predicate(t, labelled) for t in tasks]
    assert [list(r.mask) for r in answers[:6]] == [[True, False, False, False]] * 6
    assert list(answers[6].mask) == [False, False, False, True]
    terms = plugin.node_terms(labelled)
    # selectors: {a|b + zone=a}, {b}; terms: a, b; requirements: zone In a,b; gen Exists;
    # zone In c; zone In a (the nodeSelector); toleration sets: the pair, and none.
    assert terms.evaluations == {"selector": 2, "term": 2, "requirement": 4, "taints": 2}


def test_a_new_table_gets_a_fresh_cache() -> None:
    plugin = PredicatesPlugin(Arguments({}))
    task = task_of(pod(node_selector={"zone": "a"}))
    first = table(node("n0", labels={"zone": "a"}), node("n1"))
    second = table(node("m0"), node("m1", labels={"zone": "a"}), node("m2", labels={"zone": "a"}))
    assert list(plugin.predicate(task, first).mask) == [True, False]
    assert list(plugin.predicate(task, second).mask) == [False, True, True]


def test_cached_masks_are_read_only(labelled: NodeTable) -> None:
    plugin = PredicatesPlugin(Arguments({}))
    plugin.predicate(task_of(pod(node_selector={"zone": "a"})), labelled)
    cached = plugin.node_terms(labelled).selector(((("zone", "a"),), None))
    with pytest.raises(ValueError, match="read-only"):
        cached[0] = False
    assert np.array_equal(cached, [True, False, False, False])
