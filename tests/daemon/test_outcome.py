"""Pure parts of the daemon: bind backoff, PodGroup/Queue status and when it changed."""

from __future__ import annotations

from pumice.daemon.binding import backoff
from pumice.daemon.outcome import (
    podgroup_status,
    queue_status,
    same_podgroup_status,
    same_queue_status,
)
from pumice.model import JobInfo, Resource, TaskInfo, TaskStatus


def test_bind_backoff_doubles_from_one_second_to_ten() -> None:
    assert [backoff(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def gang(statuses: list[TaskStatus], min_available: int = 2, phase: str = "Inqueue") -> JobInfo:
    job = JobInfo(
        uid="ns/g",
        name="g",
        namespace="ns",
        min_available=min_available,
        phase=phase,
        podgroup={"metadata": {"name": "g"}},
    )
    for i, status in enumerate(statuses):
        job.add_task(
            TaskInfo(uid=f"t{i}", name=f"g-{i}", resreq=Resource({"cpu": 500.0}), status=status)
        )
    return job


def test_a_ready_gang_is_running_and_scheduled() -> None:
    status = podgroup_status(gang([TaskStatus.RUNNING, TaskStatus.BINDING]), None)
    assert status["phase"] == "Running" and status["running"] == 1
    assert status["conditions"][0]["type"] == "Scheduled"


def test_a_gang_short_of_its_minimum_says_why_and_keeps_inqueue() -> None:
    status = podgroup_status(gang([TaskStatus.RUNNING, TaskStatus.PENDING]), "0/3 nodes ...")
    assert status["phase"] == "Inqueue"
    (condition,) = status["conditions"]
    assert condition["type"] == "Unschedulable" and condition["message"] == "0/3 nodes ..."
    pending = podgroup_status(gang([TaskStatus.PENDING] * 2, phase="Pending"), None)
    assert pending["phase"] == "Pending" and "conditions" not in pending


def test_status_comparison_ignores_transition_times() -> None:
    desired = podgroup_status(gang([TaskStatus.RUNNING] * 2), None)
    current = {
        **desired,
        "conditions": [{**desired["conditions"][0], "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    }
    assert same_podgroup_status(current, desired)
    assert not same_podgroup_status({**current, "running": 1}, desired)
    assert not same_podgroup_status(None, desired)


def test_queue_status_counts_podgroups_by_phase_and_sums_allocation() -> None:
    jobs = [gang([TaskStatus.RUNNING] * 2), gang([TaskStatus.PENDING] * 2, phase="Pending")]
    status = queue_status(jobs)
    assert status["running"] == 1 and status["pending"] == 1 and status["inqueue"] == 0
    assert Resource.from_k8s(status["allocated"]) == Resource({"cpu": 1000.0})
    assert same_queue_status({**status, "allocated": {"cpu": "1"}}, status)
    assert not same_queue_status({**status, "running": 0}, status)


def test_a_gang_whose_placed_members_all_finished_is_completed() -> None:
    done = podgroup_status(gang([TaskStatus.SUCCEEDED, TaskStatus.FAILED], phase="Running"), None)
    assert done["phase"] == "Completed"
    assert (done["succeeded"], done["failed"]) == (1, 1)
    assert done["conditions"][0]["type"] == "Scheduled"
    half = podgroup_status(gang([TaskStatus.SUCCEEDED, TaskStatus.RUNNING], phase="Running"), None)
    assert half["phase"] == "Running"
    # too few placed (minMember 3): finished or not, it is not Completed
    short = gang([TaskStatus.SUCCEEDED, TaskStatus.SUCCEEDED], min_available=3, phase="Running")
    assert podgroup_status(short, None)["phase"] == "Pending"


def test_queue_status_counts_podgroups_per_phase_with_completed() -> None:
    jobs = [
        gang([TaskStatus.SUCCEEDED] * 2),
        gang([TaskStatus.RUNNING] * 2),
        gang([TaskStatus.PENDING] * 2),
    ]
    status = queue_status(jobs)
    assert {k: status[k] for k in ("pending", "inqueue", "running", "completed")} == {
        "pending": 0,
        "inqueue": 1,
        "running": 1,
        "completed": 1,
    }
    assert status["allocated"] == {"cpu": "1"}  # the running gang: 2 x 500m
