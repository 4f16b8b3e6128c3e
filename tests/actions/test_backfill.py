"""The backfill action: best-effort tasks go wherever the predicates allow."""

from __future__ import annotations

import numpy as np

from pumice import NodeInfo, TaskStatus
from support.builders import make_plugin
from support.flow import (
    GiB,
    add_task,
    binds,
    decisions,
    gang,
    nodes,
    res,
    run_default,
    run_flow,
    snapshot,
)

BACKFILL = ["backfill"]


def test_best_effort_tasks_are_placed_and_bound_even_on_a_full_node() -> None:
    full = gang("full", 0, phase="Running", min_available=0)
    add_task(full, "hog", cpu=4000, memory=8 * GiB, status=TaskStatus.RUNNING, node="n0")
    be = gang("be", 2, cpu=0, memory=0)
    ssn = run_flow(snapshot(nodes(1), [full, be]), actions=BACKFILL)
    assert binds(ssn) == {"be-0": "n0", "be-1": "n0"}
    assert all(t.status == TaskStatus.BINDING for t in be.tasks.values())
    assert ssn.nodes["n0"].pod_count == 3


def test_nodes_are_chosen_by_score() -> None:
    prefer_last = make_plugin(
        "prefer_last",
        node_score=lambda self, task, nodes: np.arange(len(nodes), dtype=float),
    )
    be = gang("be", 1, cpu=0, memory=0)
    ssn = run_flow(
        snapshot(nodes(3), [be]),
        [["gang"], ["predicates", "prefer_last"]],
        BACKFILL,
        {"prefer_last": prefer_last},
    )
    assert binds(ssn) == {"be-0": "n2"}


def test_only_the_predicates_decide_and_their_reason_is_recorded() -> None:
    node_list = [NodeInfo("cordoned", res(4000, 8 * GiB), unschedulable=True)]
    be = gang("be", 1, cpu=0, memory=0)
    ssn = run_flow(snapshot(node_list, [be]), actions=BACKFILL)
    assert decisions(ssn) == []
    assert ssn.task_reasons["be-0"] == "0/1 nodes are available: 1 node(s) were unschedulable."
    assert be.tasks["be-0"].status == TaskStatus.PENDING


def test_pending_invalid_and_resource_requesting_work_is_not_backfilled() -> None:
    pending = gang("pending", 1, cpu=0, memory=0, phase="Pending")
    invalid = gang("invalid", 1, cpu=0, memory=0, min_available=2)
    normal = gang("normal", 1)
    ssn = run_flow(snapshot(nodes(1), [pending, invalid, normal]), actions=BACKFILL)
    assert decisions(ssn) == []


def test_gang_of_best_effort_and_normal_tasks_binds_when_the_gang_is_ready() -> None:
    # allocate places the normal task; the gang of 2 needs the best-effort one too, which
    # counts as ready while pending, so allocate commits and backfill then binds it
    job = gang("mixed", 1, cpu=1000, min_available=2)
    add_task(job, "mixed-be", cpu=0, memory=0, created=5)
    ssn = run_default(snapshot(nodes(2), [job]))
    assert sorted(binds(ssn)) == ["mixed-0", "mixed-be"]
    assert [kind for kind, _, _ in decisions(ssn)] == ["bind", "bind"]


def test_a_gang_that_does_not_become_ready_binds_nothing() -> None:
    job = gang("g", 2, cpu=1000, min_available=3)
    add_task(job, "g-be", cpu=0, memory=0, created=5)
    ssn = run_flow(snapshot(nodes(1), [job]), actions=BACKFILL)
    assert decisions(ssn) == []
    assert job.tasks["g-be"].status == TaskStatus.PENDING and job.tasks["g-be"].node_name is None
    assert ssn.nodes["n0"].pod_count == 0


def test_an_overcommitted_node_takes_no_more_pods() -> None:
    over = gang("over", 0, phase="Running", min_available=0)
    add_task(over, "big", cpu=1000, memory=10 * GiB, status=TaskStatus.RUNNING, node="n0")
    be = gang("be", 1, cpu=0, memory=0)
    ssn = run_flow(snapshot(nodes(1), [over, be]), actions=BACKFILL)
    assert ssn.task_reasons["be-0"] == "0/1 nodes are available: 1 Insufficient memory."
    ssn = run_flow(snapshot(nodes(2), [over, gang("be2", 1, cpu=0, memory=0)]), actions=BACKFILL)
    assert binds(ssn) == {"be2-0": "n1"}
