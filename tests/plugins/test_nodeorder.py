"""The nodeorder plugin: kube-scheduler's scores, checked against hand-computed values."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from pumice import Arguments, ClusterSnapshot, NodeTable, QueueInfo, TaskInfo
from pumice.logs import forget_warnings
from pumice.plugins.nodeorder import NodeOrderPlugin
from support.builders import open_session
from support.nodes import (
    MiB,
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

OFF = {
    "leastrequested.weight": 0,
    "mostrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "tainttoleration.weight": 0,
}


def only(scorer: str, weight: int = 1) -> dict[str, int]:
    """Arguments that switch every scorer off but ``scorer``."""
    return {**OFF, f"{scorer}.weight": weight}


def scores(
    task: TaskInfo,
    nodes: NodeTable,
    arguments: dict[str, Any],
    mask: npt.NDArray[np.bool_] | None = None,
) -> list[float]:
    """Both hooks' scores summed, normalised over ``mask`` (every node by default)."""
    plugin = NodeOrderPlugin(Arguments(arguments))
    candidates = np.ones(len(nodes), dtype=np.bool_) if mask is None else mask
    resource = plugin.node_score(task, nodes)
    labels = plugin.normalized_score(task, nodes, candidates)
    total = np.zeros(len(nodes))
    for part in (resource, labels):
        if part is not None:
            total += part
    return [float(x) for x in total]


# -- resource scorers -------------------------------------------------------------------------


@pytest.fixture
def anchor() -> NodeTable:
    """kube-scheduler's worked anchor: a 4000m / 10000-byte node."""
    return table(node("n", 4000, 10000))


def test_least_allocated_anchor(anchor: NodeTable) -> None:
    # cpu (4000-3000)*100//4000 = 25, memory (10000-5000)*100//10000 = 50 -> 75//2
    assert scores(bare_task("t", 3000, 5000), anchor, only("leastrequested")) == [37.0]


def test_most_allocated_anchor(anchor: NodeTable) -> None:
    # 75 and 50 -> 125//2
    assert scores(bare_task("t", 3000, 5000), anchor, only("mostrequested")) == [62.0]


def test_balanced_allocation_anchor(anchor: NodeTable) -> None:
    # fractions 0.75 and 0.5: std 0.125 -> int(87.5)
    assert scores(bare_task("t", 3000, 5000), anchor, only("balancedresource")) == [87.0]


def test_node_usage_adds_to_the_request() -> None:
    nodes = table(node("n", 4000, 10000), tasks=[place(bare_task("r", 1000, 2000), "n")])
    task = bare_task("t", 1000, 1000)
    # requested 2000m / 3000 bytes
    assert scores(task, nodes, only("leastrequested")) == [60.0]  # (50 + 70) // 2
    assert scores(task, nodes, only("mostrequested")) == [40.0]  # (50 + 30) // 2
    assert scores(task, nodes, only("balancedresource")) == [90.0]  # 1 - |0.5 - 0.3| / 2


def test_over_requested_resources() -> None:
    nodes = table(node("n", 1000, 1000 * MiB))
    task = bare_task("t", 2000, 100 * MiB)
    # least: cpu over -> 0, memory 90 -> 45; most: cpu clamps to 100, memory 10 -> 55
    assert scores(task, nodes, only("leastrequested")) == [45.0]
    assert scores(task, nodes, only("mostrequested")) == [55.0]
    # balanced: fractions capped at 1 and 0.1 -> int((1 - 0.45) * 100)
    assert scores(task, nodes, only("balancedresource")) == [55.0]


def test_integer_truncation_of_each_resource_score() -> None:
    nodes = table(node("n", 3000, 7000))
    task = bare_task("t", 1000, 1000)
    # least: 2000*100//3000 = 66, 6000*100//7000 = 85 -> 151//2 = 75
    assert scores(task, nodes, only("leastrequested")) == [75.0]
    # most: 100000//3000 = 33, 100000//7000 = 14 -> 47//2 = 23
    assert scores(task, nodes, only("mostrequested")) == [23.0]


def test_resources_a_node_lacks_are_left_out() -> None:
    nodes = table(node("cpu-only", 4000, 0))
    task = bare_task("t", 1000, 1000)
    assert scores(task, nodes, only("leastrequested")) == [75.0]  # cpu alone
    assert scores(task, nodes, only("mostrequested")) == [25.0]
    assert scores(task, nodes, only("balancedresource")) == [100.0]  # one fraction: std 0


def test_least_and_most_use_non_zero_requests() -> None:
    nodes = table(node("n", 1000, 1000 * MiB))
    request_less = task_of(pod("empty", containers=[container()]))
    # counted as 100m / 200Mi: least 90, 80 -> 85; most 10, 20 -> 15
    assert scores(request_less, nodes, only("leastrequested")) == [85.0]
    assert scores(request_less, nodes, only("mostrequested")) == [15.0]
    cpu_only = task_of(pod("cpu", containers=[container("500m")]))
    # memory counted as 200Mi: least 50, 80 -> 65
    assert scores(cpu_only, nodes, only("leastrequested")) == [65.0]
    two = task_of(pod("two", containers=[container("200m"), container(memory="100Mi")]))
    # per container: 200m + 100m, 200Mi + 100Mi -> least 70, 70
    assert scores(two, nodes, only("leastrequested")) == [70.0]
    explicit_zero = task_of(pod("zero", containers=[container("0", "0")]))
    assert scores(explicit_zero, nodes, only("leastrequested")) == [100.0]
    assert scores(bare_task("bare"), nodes, only("leastrequested")) == [85.0]


def test_balanced_uses_real_requests_and_skips_best_effort_pods() -> None:
    nodes = table(node("n", 1000, 1000 * MiB))
    cpu_only = task_of(pod("cpu", containers=[container("500m")]))
    # fractions 0.5 and 0 (no default memory): std 0.25 -> 75
    assert scores(cpu_only, nodes, only("balancedresource")) == [75.0]
    request_less = task_of(pod("empty", containers=[container()]))
    assert scores(request_less, nodes, only("balancedresource")) == [0.0]


# -- node affinity and taint toleration -----------------------------------------------------------


@pytest.fixture
def labelled() -> NodeTable:
    return table(
        node("n0", labels={"zone": "a", "gen": "3"}),
        node("n1", labels={"zone": "b", "gen": "5"}),
        node("n2"),
    )


def test_preferred_affinity_normalised_to_100(labelled: NodeTable) -> None:
    task = task_of(
        pod(preferred=[(10, term(expr("zone", "In", "a"))), (5, term(expr("gen", "Exists")))])
    )
    # raw 15, 5, 0 -> 100, 100*5//15 = 33, 0; times the default weight 2
    assert scores(task, labelled, only("nodeaffinity", 2)) == [200.0, 66.0, 0.0]


def test_normalisation_runs_over_the_candidate_nodes_only(labelled: NodeTable) -> None:
    task = task_of(
        pod(preferred=[(10, term(expr("zone", "In", "a"))), (5, term(expr("gen", "Exists")))])
    )
    # n0 (raw 15) cannot take the task: n1's raw 5 is now the maximum -> 100
    not_n0 = np.array([False, True, True])
    assert scores(task, labelled, only("nodeaffinity"), not_n0)[1:] == [100.0, 0.0]


def test_balanced_allocation_counts_gpus_on_gpu_nodes() -> None:
    nodes = table(
        node("cpu-only", 4000, 10000),
        node("gpu", 4000, 10000, extra={"nvidia.com/gpu": 4}),
    )
    task = bare_task("t", 2000, 5000, **{"nvidia.com/gpu": 1})
    # cpu-only: fractions 0.5, 0.5 -> 100; gpu: 0.5, 0.5, 0.25 -> std 0.1178... -> 88
    assert scores(task, nodes, only("balancedresource")) == [100.0, 88.0]


def test_preferred_affinity_details(labelled: NodeTable) -> None:
    args = only("nodeaffinity")
    none_match = task_of(pod(preferred=[(10, term(expr("zone", "In", "z")))]))
    assert scores(none_match, labelled, args) == [0.0, 0.0, 0.0]
    by_name = task_of(pod(preferred=[(3, term(fields=[expr("metadata.name", "In", "n1")]))]))
    assert scores(by_name, labelled, args) == [0.0, 100.0, 0.0]
    # a zero weight, an empty preference and an invalid term count for nothing
    odd = task_of(
        pod(
            preferred=[
                (0, term(expr("zone", "In", "a"))),
                (7, term()),
                (9, term(expr("gen", "Gt", "three"))),
                (1, term(expr("zone", "DoesNotExist"))),
            ]
        )
    )
    assert scores(odd, labelled, args) == [0.0, 0.0, 100.0]
    # required affinity does not score
    required = task_of(pod(required=[term(expr("zone", "In", "a"))]))
    assert scores(required, labelled, args) == [0.0, 0.0, 0.0]


def soft(key: str, value: str = "") -> dict[str, str]:
    return taint(key, value, "PreferNoSchedule")


@pytest.fixture
def tainted() -> NodeTable:
    return table(
        node("clean"),
        node("one", taints=[soft("a", "1")]),
        node("two", taints=[soft("a", "1"), soft("b"), taint("hard")]),
    )


def test_taint_toleration_counts_prefer_no_schedule_normalised_and_reversed(
    tainted: NodeTable,
) -> None:
    # counts 0, 1, 2 (the NoSchedule taint is not counted) -> 100, 50, 0; times 3
    assert scores(task_of(pod()), tainted, only("tainttoleration", 3)) == [300.0, 150.0, 0.0]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([toleration("b", "Exists", effect="PreferNoSchedule")], [100.0, 0.0, 0.0]),
        ([toleration("b", "Exists")], [100.0, 0.0, 0.0]),  # empty effect counts
        ([toleration("b", "Exists", effect="NoSchedule")], [100.0, 50.0, 0.0]),
        ([toleration("a", "Equal", "1")], [100.0, 100.0, 0.0]),
        ([toleration("a", "Equal", "2")], [100.0, 50.0, 0.0]),
        ([toleration(operator="Exists")], [100.0, 100.0, 100.0]),  # max 0: all 100
    ],
)
def test_tolerated_prefer_no_schedule_taints_are_not_counted(
    tainted: NodeTable, tolerations: list[dict[str, str]], expected: list[float]
) -> None:
    task = task_of(pod(tolerations=tolerations))
    assert scores(task, tainted, only("tainttoleration")) == expected


# -- weights and the session ----------------------------------------------------------------------


def test_default_weights_through_a_session() -> None:
    snap = ClusterSnapshot.build(
        nodes=[node("n0", 4000, 10000, labels={"zone": "a"}), node("n1", 4000, 10000)],
        queues=[QueueInfo("default")],
    )
    snap.nodes["n1"].taints = (soft("x"),)
    ssn = open_session({"nodeorder": NodeOrderPlugin}, [["nodeorder"]], snap)
    task = task_of(
        pod(containers=[container("3", "5000")], preferred=[(1, term(expr("zone", "In", "a")))])
    )
    # least 37 * 1 + balanced 87 * 1 + affinity (100, 0) * 2 + taints (100, 0) * 3
    assert ssn.node_scores(task).tolist() == [37 + 87 + 200 + 300, 37 + 87]


def test_weights_multiply_each_scorer(anchor: NodeTable) -> None:
    task = bare_task("t", 3000, 5000)
    args = {
        **OFF,
        "leastrequested.weight": 2,
        "mostrequested.weight": 3,
        "balancedresource.weight": 5,
    }
    assert scores(task, anchor, args) == [2 * 37 + 3 * 62 + 5 * 87]


def test_all_weights_zero_means_no_opinion(anchor: NodeTable) -> None:
    plugin = NodeOrderPlugin(Arguments(OFF))
    assert plugin.node_score(bare_task("t", 1000, 1000), anchor) is None


def test_unimplemented_scorers_warn_once_when_weighted(caplog: pytest.LogCaptureFixture) -> None:
    forget_warnings()
    with caplog.at_level(logging.WARNING, logger="pumice.plugins.nodeorder"):
        NodeOrderPlugin(Arguments({"imagelocality.weight": 2, "podaffinity.weight": 0}))
        NodeOrderPlugin(Arguments({"imagelocality.weight": 5, "podtopologyspread.weight": 3}))
        NodeOrderPlugin(Arguments({}))
    assert [r.getMessage() for r in caplog.records] == [
        "plugin nodeorder: imagelocality.weight: set but not implemented in pumice; ignored"
    ]


def test_unimplemented_weights_add_nothing(anchor: NodeTable) -> None:
    task = bare_task("t", 3000, 5000)
    args = {**only("leastrequested"), "podaffinity.weight": 2, "imagelocality.weight": 1}
    assert scores(task, anchor, args) == [37.0]


# -- caching ----------------------------------------------------------------------------------


def test_preferred_terms_and_tolerations_are_evaluated_once(labelled: NodeTable) -> None:
    plugin = NodeOrderPlugin(Arguments({}))
    prefs = [(10, term(expr("zone", "In", "a"))), (5, term(expr("gen", "Exists")))]
    tols = [toleration("a", "Exists"), toleration("b", "Exists")]
    for i in range(4):
        task = task_of(pod(f"p{i}", preferred=prefs[:: 1 if i % 2 else -1], tolerations=tols))
        answer = plugin.normalized_score(task, labelled, np.ones(3, dtype=np.bool_))
        assert answer is not None
        assert answer[2] < answer[1] < answer[0]
    assert plugin.node_terms(labelled).evaluations == {
        "preferred": 1,
        "term": 2,
        "requirement": 2,
        "soft-taints": 1,
    }


def test_a_new_table_gets_fresh_term_scores() -> None:
    plugin = NodeOrderPlugin(Arguments(only("nodeaffinity")))
    task = task_of(pod(preferred=[(4, term(expr("zone", "In", "a")))]))
    first = table(node("n0", labels={"zone": "a"}), node("n1"))
    second = table(node("m0"), node("m1"), node("m2", labels={"zone": "a"}))
    every = np.ones(3, dtype=np.bool_)
    assert scores(task, first, only("nodeaffinity")) == [100.0, 0.0]
    assert plugin.normalized_score(task, second, every).tolist() == [0.0, 0.0, 100.0]
    assert plugin.normalized_score(task, second, every).tolist() == [0.0, 0.0, 100.0]
