"""The allocate action through real sessions: gangs committed or discarded, pipelining onto
releasing resources, fairness between queues, reasons, the error cache and job selection."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pumice import ActionContext, Arguments, NodeInfo, TaskInfo, TaskStatus
from pumice.actions.allocate import AllocateAction
from support.builders import make_plugin
from support.flow import (
    GiB,
    add_task,
    attributes,
    binds,
    decisions,
    gang,
    nodes,
    open_flow,
    queue,
    res,
    run_default,
    run_flow,
    snapshot,
)

ALLOCATE = ["allocate"]


def statuses(*tasks: TaskInfo) -> list[TaskStatus]:
    return [t.status for t in tasks]


def tasks_of(job: Any) -> list[TaskInfo]:
    return sorted(job.tasks.values(), key=lambda t: t.name)


# -- gangs ------------------------------------------------------------------------------------


def test_gang_of_three_that_fits_is_committed_with_the_default_tiers() -> None:
    job = gang("g", 3, cpu=3000, memory=GiB, phase="Pending")
    ssn = run_default(snapshot(nodes(3), [job]))
    assert job.phase == "Inqueue"  # admitted by enqueue
    bound = binds(ssn)
    # 3 cpu each on 4-cpu nodes: one task per node
    assert sorted(bound) == ["g-0", "g-1", "g-2"]
    assert sorted(bound.values()) == ["n0", "n1", "n2"]
    assert all(t.status == TaskStatus.BINDING for t in job.tasks.values())
    assert ssn.table.used[:, ssn.table.dim("cpu")].tolist() == [3000.0, 3000.0, 3000.0]
    assert ssn.task_reasons == {}


def test_gang_that_cannot_fit_is_discarded_and_leaves_nothing_allocated() -> None:
    # 7.5 cpu asked of 8: within the queue's share, but 2.5 cpu twice does not fit a 4 cpu node
    job = gang("g", 3, cpu=2500)
    ssn = run_flow(snapshot(nodes(2), [job]), actions=ALLOCATE)
    assert decisions(ssn) == []
    assert statuses(*tasks_of(job)) == [TaskStatus.PENDING] * 3
    assert all(t.node_name is None for t in job.tasks.values())
    assert ssn.table.used.sum() == 0 and ssn.table.pipelined.sum() == 0
    assert attributes(ssn, "default").allocated.is_empty()
    # the first two went to n0 and n1 (then were undone); the third found nothing
    assert ssn.task_reasons == {"g-2": "0/2 nodes are available: 2 Insufficient cpu."}
    ssn.close()  # the gang plugin explains the job at close, from the task's reason
    assert ssn.job_reasons[job.uid] == (
        "1/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; "
        "Pending: 1 Unschedulable, 2 Schedulable. "
        "Origin reason is g-2: 0/2 nodes are available: 2 Insufficient cpu."
    )


def test_discarded_gang_leaves_room_for_the_next_job() -> None:
    big = gang("big", 3, cpu=3000, created=0)
    small = gang("small", 2, cpu=3000, created=1)
    ssn = run_flow(snapshot(nodes(2), [big, small]), actions=ALLOCATE)
    assert sorted(binds(ssn).items()) == [("small-0", "n0"), ("small-1", "n1")]
    assert statuses(*tasks_of(big)) == [TaskStatus.PENDING] * 3


def test_elastic_job_goes_back_to_its_queue_until_nothing_fits() -> None:
    job = gang("e", 4, cpu=1500, memory=0, min_available=2)
    ssn = run_flow(snapshot(nodes(2, cpu=2500), [job]), actions=ALLOCATE)
    # two tasks make it ready (committed), then one more per step: n0 and n1 take one each
    assert binds(ssn) == {"e-0": "n0", "e-1": "n1"}
    assert statuses(*tasks_of(job)) == [TaskStatus.BINDING] * 2 + [TaskStatus.PENDING] * 2
    # e-2 and e-3 find no node (1 cpu left on each); the job is not dropped after e-2
    message = "0/2 nodes are available: 2 Insufficient cpu."
    assert ssn.task_reasons == {"e-2": message, "e-3": message}


# -- pipelining -------------------------------------------------------------------------------


def releasing_cluster() -> tuple[list[NodeInfo], Any]:
    """n0: 4 cpu with 3 cpu releasing (idle 1); n1: 4 cpu with 2 cpu running (idle 2)."""
    old = gang("old", 0, phase="Running", min_available=0)
    add_task(old, "leaving", cpu=3000, memory=0, status=TaskStatus.RELEASING, node="n0")
    add_task(old, "staying", cpu=2000, memory=0, status=TaskStatus.RUNNING, node="n1")
    return nodes(2), old


def test_task_is_pipelined_onto_resources_that_are_being_released() -> None:
    node_list, old = releasing_cluster()
    job = gang("new", 1, cpu=3000, memory=0)
    ssn = run_flow(snapshot(node_list, [old, job]), actions=ALLOCATE)
    task = job.tasks["new-0"]
    assert task.status == TaskStatus.PIPELINED and task.node_name == "n0"
    assert decisions(ssn) == []  # pipelined: promised, nothing to bind yet
    assert ssn.nodes["n0"].pipelined["cpu"] == 3000
    assert ssn.nodes["n0"].future_idle["cpu"] == 1000


def test_pipelined_gang_keeps_its_statement_and_holds_the_resources() -> None:
    node_list, old = releasing_cluster()
    # two tasks of 2 cpu: one fits n1's idle (allocated), the other only n0's future (pipelined)
    pair = gang("pair", 2, cpu=2000, memory=0, created=1)
    late = gang("late", 1, cpu=2000, memory=0, created=2)
    ssn = run_flow(snapshot(node_list, [old, pair, late]), actions=ALLOCATE)
    first, second = tasks_of(pair)
    assert (first.status, first.node_name) == (TaskStatus.ALLOCATED, "n1")
    assert (second.status, second.node_name) == (TaskStatus.PIPELINED, "n0")
    assert decisions(ssn) == []  # the gang is only pipelined: neither committed nor discarded
    # what the pair holds is not given to the later job: n0 has 4 - 3 + 3 - 2 = 2 future cpu
    assert late.tasks["late-0"].status == TaskStatus.PIPELINED
    assert ssn.nodes["n0"].future_idle["cpu"] == 0


def test_nodes_that_fit_now_win_over_nodes_that_fit_later_whatever_their_score() -> None:
    node_list, old = releasing_cluster()
    prefer_n0 = make_plugin(
        "prefer_n0",
        node_score=lambda self, task, nodes: np.array(
            [100.0 if n == "n0" else 0 for n in nodes.names]
        ),
    )
    job = gang("j", 1, cpu=2000, memory=0)
    ssn = run_flow(
        snapshot(node_list, [old, job]),
        [["gang"], ["predicates", "proportion", "prefer_n0"]],
        ALLOCATE,
        {"prefer_n0": prefer_n0},
    )
    assert binds(ssn) == {"j-0": "n1"}


def test_the_best_scored_node_is_chosen() -> None:
    prefer_last = make_plugin(
        "prefer_last",
        node_score=lambda self, task, nodes: np.arange(len(nodes), dtype=float),
    )
    job = gang("j", 1)
    ssn = run_flow(
        snapshot(nodes(3), [job]),
        [["gang"], ["predicates", "proportion", "prefer_last"]],
        ALLOCATE,
        {"prefer_last": prefer_last},
    )
    assert binds(ssn) == {"j-0": "n2"}


# -- queues -----------------------------------------------------------------------------------


def two_queue_jobs() -> list[Any]:
    jobs = []
    for q in ("qa", "qb"):
        jobs += [gang(f"{q}-{i}", 1, cpu=1000, memory=0, queue=q, created=i) for i in range(8)]
    return jobs


def test_two_equal_queues_take_turns_and_stop_at_their_share() -> None:
    jobs = two_queue_jobs()
    snap = snapshot(nodes(2), jobs, [queue("qa"), queue("qb")])
    ssn = run_flow(snap, actions=ALLOCATE)
    order = [key.split("/")[1].rsplit("-", 1)[0] for _, key, _ in decisions(ssn)]
    # after every job step the queue with the lower share goes next (ties: qa by name)
    assert order == ["qa-0", "qb-0", "qa-1", "qb-1", "qa-2", "qb-2", "qa-3", "qb-3"]
    assert attributes(ssn, "qa").allocated["cpu"] == 4000
    assert attributes(ssn, "qb").allocated["cpu"] == 4000


def test_without_proportion_the_first_queue_takes_everything() -> None:
    jobs = two_queue_jobs()
    snap = snapshot(nodes(2), jobs, [queue("qa"), queue("qb")])
    ssn = run_flow(snap, [["gang"], ["predicates"]], ALLOCATE)
    assert sorted({key.split("/")[1][:2] for _, key, _ in decisions(ssn)}) == ["qa"]
    assert len(decisions(ssn)) == 8


def test_weights_decide_how_the_cluster_is_split() -> None:
    jobs = two_queue_jobs()
    snap = snapshot(nodes(2), jobs, [queue("qa", 1), queue("qb", 3)])
    ssn = run_flow(snap, actions=ALLOCATE)
    per_queue = [key.split("/")[1][:2] for _, key, _ in decisions(ssn)]
    assert per_queue.count("qa") == 2 and per_queue.count("qb") == 6


def test_weighted_fair_share_with_the_default_tiers() -> None:
    jobs = []
    for q in ("qa", "qb"):
        jobs += [
            gang(f"{q}-{i}", 2, cpu=1000, memory=GiB, queue=q, phase="Pending", created=i)
            for i in range(8)
        ]
    snap = snapshot(nodes(4), jobs, [queue("qa", 1), queue("qb", 3)])
    ssn = run_default(snap)
    # 16 cpu: qa deserves 4 (2 gangs of 2), qb 12 (6 gangs); every gang whole or not at all
    per_queue = [key.split("/")[1][:2] for _, key, _ in decisions(ssn)]
    assert per_queue.count("qa") == 4 and per_queue.count("qb") == 12
    assert attributes(ssn, "qa").share == pytest.approx(1.0)
    assert attributes(ssn, "qb").share == pytest.approx(1.0)
    ssn.close()
    assert ssn.job_reasons["default/qa-2"].startswith("2/2 tasks in gang unschedulable")


def test_overused_queue_is_dropped_and_its_jobs_say_why() -> None:
    busy = gang("busy", 0, queue="qa", phase="Running", min_available=0)
    add_task(busy, "busy-0", cpu=4000, memory=0, status=TaskStatus.RUNNING, node="n0")
    more = gang("more", 1, cpu=1000, memory=0, queue="qa")
    other = gang("other", 4, cpu=1000, memory=0, queue="qb")
    snap = snapshot(nodes(2), [busy, more, other], [queue("qa"), queue("qb")])
    ssn = run_flow(snap, actions=ALLOCATE)
    # qa asks for 5 cpu, qb for 4: 4 cpu each, and qa already holds its 4
    assert attributes(ssn, "qa").deserved["cpu"] == pytest.approx(4000)
    assert sorted(binds(ssn)) == ["other-0", "other-1", "other-2", "other-3"]
    assert more.tasks["more-0"].status == TaskStatus.PENDING
    assert ssn.job_reasons[more.uid] == "queue qa: cpu allocated 4 has reached deserved 4"


def test_closed_queue_gets_a_reason_on_each_task() -> None:
    job = gang("j", 1)
    snap = snapshot(nodes(1), [job], [queue("default", state="Closed")])
    ssn = run_flow(snap, actions=ALLOCATE)
    assert decisions(ssn) == []
    assert ssn.task_reasons["j-0"] == "queue default is not open (state Closed)"


# -- reasons ----------------------------------------------------------------------------------


def test_unschedulable_task_gets_the_kube_scheduler_message() -> None:
    node_list = [
        NodeInfo("cordoned", res(8000, 8 * GiB), unschedulable=True),
        NodeInfo("small", res(4000, 8 * GiB)),
        NodeInfo("tiny", res(4000, GiB)),
    ]
    job = gang("j", 1, cpu=5000, memory=2 * GiB)
    ssn = run_flow(snapshot(node_list, [job]), actions=ALLOCATE)
    assert ssn.task_reasons["j-0"] == (
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) were unschedulable, "
        "2 Insufficient cpu."
    )


def test_a_resource_no_node_has_is_insufficient_everywhere() -> None:
    job = gang("j", 1, extra={"nvidia.com/gpu": 1})
    # without proportion (whose deserved would hold no GPU and refuse the task first)
    ssn = run_flow(snapshot(nodes(2), [job]), [["gang"], ["predicates"]], ALLOCATE)
    assert ssn.task_reasons["j-0"] == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def test_invalid_and_queueless_jobs_are_skipped_with_a_reason() -> None:
    short = gang("short", 1, min_available=3)
    lost = gang("lost", 1, queue="ghost")
    ssn = run_flow(snapshot(nodes(1), [short, lost]), actions=ALLOCATE)
    assert decisions(ssn) == []
    assert ssn.job_reasons[short.uid] == (
        "NotEnoughTasks: Not enough valid tasks for gang-scheduling, valid: 1, min: 3"
    )
    assert ssn.job_reasons[lost.uid] == "queue ghost not found"


# -- which jobs -------------------------------------------------------------------------------


def test_pending_jobs_wait_for_enqueue_when_it_is_configured() -> None:
    job = gang("j", 1, phase="Pending")
    ssn = open_flow(snapshot(nodes(1), [job]), actions=["enqueue", "allocate"])
    AllocateAction(Arguments({})).execute(ActionContext(ssn))  # without running enqueue first
    assert decisions(ssn) == [] and job.phase == "Pending"


def test_pending_jobs_are_promoted_when_enqueue_is_not_configured() -> None:
    job = gang("j", 1, phase="Pending")
    ssn = run_flow(snapshot(nodes(1), [job]), actions=ALLOCATE)
    assert job.phase == "Inqueue"
    assert binds(ssn) == {"j-0": "n0"}


def test_best_effort_tasks_are_left_to_backfill() -> None:
    job = gang("j", 1, cpu=0, memory=0)
    ssn = run_flow(snapshot(nodes(1), [job]), actions=ALLOCATE)
    assert decisions(ssn) == [] and job.tasks["j-0"].status == TaskStatus.PENDING


# -- predicate error cache and when to go on ---------------------------------------------------


def counting_predicate(calls: list[str]) -> Any:
    def predicate(self: Any, task: TaskInfo, nodes: Any) -> Any:
        calls.append(task.name)
        return None

    return make_plugin("counting", predicate=predicate)


def role_job() -> Any:
    job = gang("r", 0, min_available=1)
    for i in range(3):
        add_task(job, f"worker-{i}", cpu=5000, role="worker", created=i)
    add_task(job, "ps-0", cpu=1000, role="ps", created=10)
    return job


@pytest.mark.parametrize(("cache", "searched"), [(True, 2), (False, 4)])
def test_tasks_of_a_failed_role_reuse_its_reason(cache: bool, searched: int) -> None:
    calls: list[str] = []
    job = role_job()
    ssn = run_flow(
        snapshot(nodes(1), [job]),
        [["gang"], ["predicates", "counting"]],
        ALLOCATE,
        {"counting": counting_predicate(calls)},
        configurations=[{"name": "allocate", "arguments": {"predicateErrorCacheEnable": cache}}],
    )
    assert binds(ssn) == {"ps-0": "n0"}
    assert len(calls) == searched
    expected = "0/1 nodes are available: 1 Insufficient cpu."
    assert [ssn.task_reasons[f"worker-{i}"] for i in range(3)] == [expected] * 3


def test_a_failed_role_below_its_minimum_stops_the_job() -> None:
    job = gang("r", 0, min_available=3, min_task_member={"ps": 1, "worker": 2})
    add_task(job, "ps-0", cpu=1000, role="ps", created=0)
    for i in range(3):
        add_task(job, f"worker-{i}", cpu=5000, role="worker", created=1 + i)
    ssn = run_flow(snapshot(nodes(1), [job]), [["gang"], ["predicates"]], ALLOCATE)
    assert decisions(ssn) == []
    assert ssn.task_reasons == {"worker-0": "0/1 nodes are available: 1 Insufficient cpu."}
    assert job.tasks["ps-0"].status == TaskStatus.PENDING  # placed, then discarded


def test_a_full_gang_stops_at_its_first_unplaceable_task() -> None:
    calls: list[str] = []
    job = gang("g", 0, min_available=4)
    for i, cpu in enumerate((1000, 5000, 1000, 1000)):
        add_task(job, f"g-{i}", cpu=cpu, created=i)
    ssn = run_flow(
        snapshot(nodes(2), [job]),
        [["gang"], ["predicates", "counting"]],
        ALLOCATE,
        {"counting": counting_predicate(calls)},
    )
    assert calls == ["g-0", "g-1"]  # every task is needed: no point in trying g-2 and g-3
    assert decisions(ssn) == []


@pytest.mark.parametrize(
    ("min_available", "members", "placed", "tried"),
    [
        (1, {"a": 1, "b": 1}, ["b-0", "b-1"], ["a-0", "a-1"]),  # b alone can make it ready
        (3, {"a": 2, "b": 2}, [], ["a-0"]),  # without a, two b tasks cannot reach 3: stop
    ],
)
def test_below_the_role_minimums_the_job_goes_on_while_it_can_still_be_ready(
    min_available: int, members: dict[str, int], placed: list[str], tried: list[str]
) -> None:
    job = gang("r", 0, min_available=min_available, min_task_member=members)
    add_task(job, "a-0", cpu=5000, role="a", created=0)
    add_task(job, "a-1", cpu=5000, role="a", created=1)
    add_task(job, "b-0", cpu=1000, role="b", created=2)
    add_task(job, "b-1", cpu=1000, role="b", created=3)
    ssn = run_flow(snapshot(nodes(1), [job]), [["gang"], ["predicates"]], ALLOCATE)
    assert sorted(binds(ssn)) == placed
    assert sorted(ssn.task_reasons) == tried


def test_a_ready_job_takes_one_task_per_step_so_queues_alternate() -> None:
    jobs = [
        gang("a", 4, cpu=1000, memory=0, queue="qa", min_available=1),
        gang("b", 4, cpu=1000, memory=0, queue="qb", min_available=1),
    ]
    ssn = run_flow(snapshot(nodes(2), jobs, [queue("qa"), queue("qb")]), actions=ALLOCATE)
    order = [key.split("/")[1] for _, key, _ in decisions(ssn)]
    assert order == ["a-0", "b-0", "a-1", "b-1", "a-2", "b-2", "a-3", "b-3"]
