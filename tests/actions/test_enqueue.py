"""The enqueue action: Pending jobs are admitted in queue then job order while the plugins allow."""

from __future__ import annotations

from typing import Any

from pumice import JobInfo, TaskStatus, Vote
from pumice.actions.enqueue import NOT_ADMITTED
from support.builders import make_plugin
from support.flow import gang, nodes, queue, res, run_default, run_flow, snapshot

ONLY_PROPORTION = [["proportion"]]


def test_jobs_without_min_resources_are_admitted_even_if_a_plugin_would_refuse() -> None:
    refuse = make_plugin("refuse", job_enqueueable=lambda self, job: Vote.REJECT)
    jobs = [gang("a", 2, phase="Pending"), gang("b", 1, phase="")]
    ssn = run_flow(snapshot(nodes(1), jobs), [["refuse"]], ["enqueue"], {"refuse": refuse})
    assert [j.phase for j in jobs] == ["Inqueue", "Inqueue"]
    assert ssn.job_reasons == {}


def test_admission_stops_at_the_queue_capability_in_job_order() -> None:
    minimum = res(cpu=2000)
    jobs = [
        gang(name, 2, queue="q", min_resources=minimum, phase="Pending", created=created)
        for name, created in (("late", 3.0), ("early", 1.0), ("middle", 2.0))
    ]
    snap = snapshot(nodes(2), jobs, [queue("q", capability=res(cpu=4000))])
    ssn = run_flow(snap, ONLY_PROPORTION, ["enqueue"])
    phases = {j.name: j.phase for j in jobs}
    # job order: early, middle, late; two minimums of 2 cpu fill the 4 cpu capability
    assert phases == {"early": "Inqueue", "middle": "Inqueue", "late": "Pending"}
    assert ssn.job_reasons["default/late"] == (
        "queue q: cpu minResources 2 + allocated 0 + inqueue 4 exceeds capability 4"
    )


def test_rejected_job_gets_a_reason_when_no_plugin_gave_one() -> None:
    refuse = make_plugin("refuse", job_enqueueable=lambda self, job: Vote.REJECT)
    job = gang("a", 1, min_resources=res(cpu=1000), phase="Pending")
    ssn = run_flow(snapshot(nodes(1), [job]), [["refuse"]], ["enqueue"], {"refuse": refuse})
    assert job.phase == "Pending"
    assert ssn.job_reasons[job.uid] == NOT_ADMITTED


def test_queues_are_visited_in_queue_order() -> None:
    calls: list[str] = []

    def record(self: Any, job: JobInfo) -> Vote:
        calls.append(job.name)
        return Vote.PERMIT

    recorder = make_plugin("recorder", job_enqueueable=record)
    minimum = res(cpu=1000)
    jobs = [
        gang("low-1", 1, queue="low", min_resources=minimum, phase="Pending", created=1),
        gang("high-1", 1, queue="high", min_resources=minimum, phase="Pending", created=2),
        gang("low-2", 1, queue="low", min_resources=minimum, phase="Pending", created=3),
        gang("high-2", 1, queue="high", min_resources=minimum, phase="Pending", created=4),
    ]
    queues = [queue("low", priority=1), queue("high", priority=9)]
    run_flow(
        snapshot(nodes(2), jobs, queues),
        [["recorder", "proportion"]],
        ["enqueue"],
        {"recorder": recorder},
    )
    assert calls == ["high-1", "high-2", "low-1", "low-2"]
    assert all(j.phase == "Inqueue" for j in jobs)


def test_jobs_already_admitted_or_without_a_queue_are_left_alone() -> None:
    running = gang("running", 1, phase="Running")
    lost = gang("lost", 1, queue="missing", phase="Pending")
    run_flow(snapshot(nodes(1), [running, lost]), ONLY_PROPORTION, ["enqueue"])
    assert running.phase == "Running"
    assert lost.phase == "Pending"


def test_closed_queue_admits_nothing_with_the_default_tiers() -> None:
    job = gang("a", 1, queue="shut", min_resources=res(cpu=1000), phase="Pending")
    ok = gang("b", 1, queue="open", min_resources=res(cpu=1000), phase="Pending")
    queues = [queue("shut", state="Closed"), queue("open")]
    run_default(snapshot(nodes(1), [job, ok], queues))
    assert job.phase == "Pending"
    assert ok.phase == "Inqueue"


def test_an_empty_min_resources_is_still_put_to_the_vote() -> None:
    # Volcano asks the plugins whenever the PodGroup sets minResources, even to nothing
    job = gang("a", 1, queue="shut", min_resources=res(), phase="Pending")
    bare = gang("b", 1, queue="shut", phase="Pending")
    run_default(snapshot(nodes(1), [job, bare], [queue("shut", state="Closed")]))
    assert job.phase == "Pending"
    assert bare.phase == "Inqueue"


def test_from_podgroup_keeps_an_empty_min_resources_apart_from_none() -> None:
    pg = {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minResources": {}}}
    assert JobInfo.from_podgroup(pg).min_resources is not None
    del pg["spec"]["minResources"]
    assert JobInfo.from_podgroup(pg).min_resources is None


def test_a_placed_pod_without_a_podgroup_is_not_admitted_again() -> None:
    # A lone pod's job keeps the phase Pending (no PodGroup records another); once its pod is
    # placed there is nothing to admit, and admitting it again in every session cost a copy
    # of the job, a statement and every plugin's job_enqueued.
    told: list[str] = []
    watcher = make_plugin("watcher", job_enqueued=lambda self, job: told.append(job.name))
    running = gang("running", 1, phase="Pending")
    task = next(iter(running.tasks.values()))
    running.update_task_status(task, TaskStatus.RUNNING)
    task.node_name = "n0"
    waiting = gang("waiting", 1, phase="Pending")
    grouped = gang("grouped", 1, phase="Pending")
    grouped.podgroup = {"metadata": {"name": "grouped", "namespace": "default"}}
    grouped_task = next(iter(grouped.tasks.values()))
    grouped.update_task_status(grouped_task, TaskStatus.RUNNING)
    grouped_task.node_name = "n0"
    snap = snapshot(nodes(1), [running, waiting, grouped])
    run_flow(snap, [["watcher"]], ["enqueue"], {"watcher": watcher})
    # a PodGroup's phase is its own to keep: a Pending one is admitted whatever its tasks do
    assert sorted(told) == ["grouped", "waiting"]
    assert (running.phase, waiting.phase, grouped.phase) == ("Pending", "Inqueue", "Inqueue")
