"""The gang plugin: validity, readiness, votes, order, victims and the unschedulable reason."""

from __future__ import annotations

import pytest

from pumice import JobInvalid, TaskStatus, Vote
from support.builders import make_plugin
from support.tier1 import job, names, running, session, snapshot, task

GiB = 2**30
P, R = TaskStatus.PENDING, TaskStatus.RUNNING


# -- job_valid ------------------------------------------------------------------------------


def test_valid_when_enough_tasks_could_run() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    j = job(
        snap, "j", task("a"), running("b"), task("c", status=TaskStatus.SUCCEEDED), min_available=3
    )
    assert session(snap, ["gang"]).job_valid(j) is None


def test_not_enough_tasks_counts_failed_and_releasing_as_invalid() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    tasks = [
        task("a"),
        task("b", status=TaskStatus.FAILED),
        running("c"),
        task("d", status=TaskStatus.RELEASING),
    ]
    j = job(snap, "j", *tasks, min_available=3)
    assert session(snap, ["gang"]).job_valid(j) == JobInvalid(
        "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"
    )


def test_not_enough_pods_of_a_role_names_the_role() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    tasks = [
        task("ps-0", role="ps"),
        task("w-0", role="worker"),
        task("w-1", role="worker", status=TaskStatus.FAILED),
        task("w-2", role="worker"),
        task("x-0", role="extra"),
    ]
    j = job(snap, "j", *tasks, min_available=4, min_task_member={"ps": 1, "worker": 3})
    answer = session(snap, ["gang"]).job_valid(j)
    assert answer == JobInvalid(
        "NotEnoughPodsOfTask",
        "Not enough valid pods of each task for gang-scheduling, worker: valid 2, min 3",
    )


def test_roles_are_ignored_when_min_available_is_below_their_sum() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    tasks = [task("ps-0", role="ps"), task("w-0", role="worker")]
    j = job(snap, "j", *tasks, min_available=2, min_task_member={"ps": 1, "worker": 3})
    assert session(snap, ["gang"]).job_valid(j) is None


# -- job_ready, job_pipelined, job_starving -------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "ready", "pipelined", "starving"),
    [
        ([P, P, P], False, False, True),
        ([R, TaskStatus.ALLOCATED, P], True, True, False),
        ([R, TaskStatus.PIPELINED, P], False, True, False),
        ([TaskStatus.SUCCEEDED, TaskStatus.BINDING, TaskStatus.BOUND], True, True, False),
        ([R, TaskStatus.RELEASING, P], False, False, True),
    ],
)
def test_ready_pipelined_and_starving_follow_the_counters(
    statuses: list[TaskStatus], ready: bool, pipelined: bool, starving: bool
) -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    j = job(snap, "j", *(task(f"t{i}", status=s) for i, s in enumerate(statuses)), min_available=2)
    ssn = session(snap, ["gang"])
    assert (ssn.job_ready(j), ssn.job_pipelined(j), ssn.job_starving(j)) == (
        ready,
        pipelined,
        starving,
    )


def test_pending_best_effort_tasks_count_as_ready_but_not_against_starving() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    j = job(snap, "j", running("a"), task("be", cpu=0, memory=0), min_available=2)
    ssn = session(snap, ["gang"])
    assert ssn.job_ready(j) is True
    assert ssn.job_pipelined(j) is True
    assert ssn.job_starving(j) is True  # Volcano: starving counts only ready + pipelined


def test_a_role_below_its_minimum_keeps_the_job_from_being_ready_and_pipelined() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    tasks = [task("ps-0", role="ps"), running("w-0", role="worker"), running("w-1", role="worker")]
    tasks.append(running("w-2", role="worker"))
    j = job(snap, "j", *tasks, min_available=3, min_task_member={"ps": 1, "worker": 2})
    ssn = session(snap, ["gang"])
    assert j.is_ready()  # three ready tasks, but no ps
    assert ssn.job_ready(j) is False
    assert ssn.job_pipelined(j) is False
    ssn.statement().pipeline(tasks[0], "n0")
    assert ssn.job_ready(j) is False
    assert ssn.job_pipelined(j) is True
    assert ssn.job_starving(j) is False  # roles do not matter for starving


def test_pipelined_reject_ends_the_vote_even_if_a_later_tier_permits() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    j = job(snap, "j", task("a"), task("b"), min_available=2)
    yes = make_plugin("Yes", job_pipelined=lambda self, job: Vote.PERMIT)
    assert session(snap, ["gang"], ["yes"], extra={"yes": yes}).job_pipelined(j) is False
    assert session(
        snap, [{"name": "gang", "enableJobPipelined": False}], ["yes"], extra={"yes": yes}
    ).job_pipelined(j)


# -- job order ------------------------------------------------------------------------------


def test_jobs_still_gathering_their_gang_go_first() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    done = job(snap, "done", running("d0"), created=0)
    waiting = job(snap, "waiting", task("w0"), task("w1"), min_available=2, created=5)
    partial = job(snap, "partial", running("p0"), task("p1"), min_available=2, created=3)
    ssn = session(snap, ["gang"])
    assert [j.name for j in ssn.sort_jobs([done, waiting, partial])] == [
        "partial",
        "waiting",
        "done",
    ]


def test_job_order_key_follows_allocation_in_the_session() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    a = job(snap, "a", task("a0"), created=0)
    b = job(snap, "b", task("b0"), created=1)
    ssn = session(snap, ["gang"])
    stmt = ssn.statement()
    stmt.allocate(a.tasks["default/a0"], "n0")
    assert [j.name for j in ssn.sort_jobs([a, b])] == ["b", "a"]
    stmt.discard()
    assert [j.name for j in ssn.sort_jobs([a, b])] == ["a", "b"]


def test_priority_decides_before_gang_in_the_default_tier() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    ready_high = job(snap, "ready-high", running("r0"), priority=10)
    waiting_low = job(snap, "waiting-low", task("w0"), priority=1)
    waiting_high = job(snap, "waiting-high", task("h0"), priority=10, created=9)
    ssn = session(snap, ["priority", "gang", "conformance"])
    order = ssn.sort_jobs([waiting_low, ready_high, waiting_high])
    assert [j.name for j in order] == ["waiting-high", "ready-high", "waiting-low"]


# -- victims --------------------------------------------------------------------------------


@pytest.mark.parametrize("hook", ["preemptable", "reclaimable"])
def test_victims_never_break_a_gang_below_min_available(hook: str) -> None:
    snap = snapshot(("n0", 64000, 64 * GiB))
    preemptor = task("p")
    job(snap, "me", preemptor)
    big = [running(f"big-{i}") for i in range(4)]
    exact = [running(f"exact-{i}") for i in range(2)]
    job(snap, "big", *big, min_available=2)
    job(snap, "exact", *exact, min_available=2)
    ssn = session(snap, ["gang"])
    interleaved = [big[0], exact[0], big[1], exact[1], big[2], big[3]]
    assert names(getattr(ssn, hook)(preemptor, interleaved)) == ["big-0", "big-1"]


def test_a_job_of_one_task_with_min_one_is_not_a_victim() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    preemptor = task("p")
    job(snap, "me", preemptor)
    single = running("single")
    job(snap, "single", single, min_available=1)
    solo = running("solo")
    job(snap, "solo", solo, min_available=0)
    ssn = session(snap, ["gang"])
    assert names(ssn.preemptable(preemptor, [single, solo])) == ["solo"]


def test_gang_and_priority_victims_intersect_in_one_tier() -> None:
    snap = snapshot(("n0", 64000, 64 * GiB))
    preemptor = task("p")
    job(snap, "me", preemptor, priority=5)
    low = [running(f"low-{i}") for i in range(3)]
    high = [running(f"high-{i}") for i in range(3)]
    job(snap, "low", *low, min_available=1, priority=1)
    job(snap, "high", *high, min_available=1, priority=9)
    ssn = session(snap, ["priority", "gang", "conformance"])
    # priority allows the low job only; gang allows two of each job; conformance allows all.
    assert names(ssn.preemptable(preemptor, [*high, *low])) == ["low-0", "low-1"]
    # enablePreemptable: false on gang (the default config) leaves priority and conformance.
    off = session(snap, ["priority", {"name": "gang", "enablePreemptable": False}, "conformance"])
    assert names(off.preemptable(preemptor, [*high, *low])) == ["low-0", "low-1", "low-2"]


# -- reasons at session close -----------------------------------------------------------------


def test_unready_job_gets_volcanos_message_with_schedulable_tasks_and_origin() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    tasks = [task("g-0"), task("g-1"), task("g-2")]
    g = job(snap, "g", *tasks, min_available=3)
    ssn = session(snap, ["gang"])
    stmt = ssn.statement()
    stmt.allocate(tasks[0], "n0")
    stmt.discard()  # g-0 could be placed, but the gang could not
    ssn.task_reasons[tasks[1].uid] = "0/1 nodes are available: 1 Insufficient cpu."
    ssn.close()
    assert ssn.job_reasons == {
        g.uid: "2/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, "
        "3 minAvailable; Pending: 1 Schedulable, 2 Unschedulable. "
        "Origin reason is g-1: 0/1 nodes are available: 1 Insufficient cpu."
    }


def test_status_histogram_and_a_pipelined_task_is_unschedulable() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    tasks = [running("r-0"), task("s-0", status=TaskStatus.SUCCEEDED), task("q-0"), task("q-1")]
    g = job(snap, "g", *tasks, min_available=4)
    ssn = session(snap, ["gang"])
    stmt = ssn.statement()
    stmt.pipeline(tasks[2], "n0")
    stmt.discard()
    ssn.close()
    assert ssn.job_reasons[g.uid] == (
        "2/4 tasks in gang unschedulable: pod group is not ready, 1 Running, 1 Succeeded, "
        "2 Pending, 4 minAvailable; Pending: 2 Unschedulable"
    )


def test_reason_prefers_a_recorded_job_reason_then_validity() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    recorded = job(snap, "recorded", task("a"), min_available=1)
    invalid = job(snap, "invalid", task("b"), min_available=2)
    ssn = session(snap, ["gang"])
    ssn.job_reasons[recorded.uid] = "queue default is overused"
    ssn.task_reasons["default/a"] = "ignored, the job reason wins"
    ssn.close()
    assert ssn.job_reasons[recorded.uid] == (
        "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; "
        "Pending: 1 Unschedulable. Origin reason is: queue default is overused"
    )
    assert ssn.job_reasons[invalid.uid] == (
        "2/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 2 minAvailable; "
        "Pending: 1 Unschedulable. Origin reason is: "
        "Not enough valid tasks for gang-scheduling, valid: 1, min: 2"
    )


def test_ready_empty_and_releasing_jobs_get_no_reason() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB))
    job(snap, "ready", running("r"), task("extra"), min_available=1)
    job(snap, "empty", min_available=2)
    # One running and one releasing pod still on its node: the gang is whole, nothing waits.
    job(snap, "leaving", running("l-0"), task("l-1", status=TaskStatus.RELEASING), min_available=2)
    # The same with a pending replacement is reported.
    waiting = job(
        snap,
        "waiting",
        running("w-0"),
        task("w-1", status=TaskStatus.RELEASING),
        task("w-2"),
        min_available=2,
    )
    ssn = session(snap, ["gang"])
    ssn.close()
    assert list(ssn.job_reasons) == [waiting.uid]
    assert ssn.job_reasons[waiting.uid].startswith("1/3 tasks in gang unschedulable: ")


def test_committed_allocation_makes_the_job_ready_and_silent() -> None:
    snap = snapshot(("n0", 8000, 16 * GiB), ("n1", 8000, 16 * GiB))
    tasks = [task("g-0"), task("g-1")]
    job(snap, "g", *tasks, min_available=2)
    ssn = session(snap, ["gang"])
    stmt = ssn.statement()
    stmt.allocate(tasks[0], "n0")
    stmt.allocate(tasks[1], "n1")
    assert ssn.job_ready(ssn.jobs["default/g"])
    stmt.commit()
    ssn.close()
    assert ssn.job_reasons == {}
