"""The overcommit plugin through real sessions: admission against the inflated cluster."""

from __future__ import annotations

from pumice import JobInfo, TaskStatus, Vote
from pumice.plugins.overcommit import OVERUSED, OvercommitPlugin
from support.builders import make_plugin
from support.flow import add_task, gang, nodes, res, run_flow, snapshot

TIERS = [["overcommit"]]
PLUGINS = {"overcommit": OvercommitPlugin}


def pending(name: str, cpu: float, created: float) -> JobInfo:
    return gang(name, 1, cpu=cpu, min_resources=res(cpu=cpu), phase="Pending", created=created)


def test_admits_up_to_the_factor_times_the_cluster() -> None:
    # one node of 4 cpu x 1.2 = 4.8 cpu: 2 + 2 fit, the third 2 does not
    jobs = [pending(n, 2000, t) for n, t in (("a", 1), ("b", 2), ("c", 3))]
    ssn = run_flow(snapshot(nodes(1), jobs), TIERS, ["enqueue"], PLUGINS)
    assert [j.phase for j in jobs] == ["Inqueue", "Inqueue", "Pending"]
    assert ssn.job_reasons["default/c"] == OVERUSED


def test_a_larger_factor_admits_more_and_a_bad_one_falls_back() -> None:
    jobs = [pending(n, 2000, t) for n, t in (("a", 1), ("b", 2), ("c", 3))]
    tiers = [[{"name": "overcommit", "arguments": {"overcommit-factor": 1.5}}]]
    run_flow(snapshot(nodes(1), jobs), tiers, ["enqueue"], PLUGINS)
    assert [j.phase for j in jobs] == ["Inqueue", "Inqueue", "Inqueue"]
    again = [pending(n, 2000, t) for n, t in (("a", 1), ("b", 2), ("c", 3))]
    tiers = [[{"name": "overcommit", "arguments": {"overcommit-factor": 0.5}}]]
    run_flow(snapshot(nodes(1), again), tiers, ["enqueue"], PLUGINS)
    assert [j.phase for j in again] == ["Inqueue", "Inqueue", "Pending"]


def test_used_resources_and_inqueue_reservations_count() -> None:
    running = gang("run", 1, cpu=2000, phase="Running")
    task = next(iter(running.tasks.values()))
    running.update_task_status(task, TaskStatus.RUNNING)
    task.node_name = "n0"
    admitted = gang("old", 1, cpu=1000, min_resources=res(cpu=1000), phase="Inqueue")
    # 4.8 - 2 used - 1 reserved = 1.8 left: 1.5 fits, then 0.5 does not
    first = pending("first", 1500, 1)
    second = pending("second", 500, 2)
    snap = snapshot(nodes(1), [running, admitted, first, second])
    run_flow(snap, TIERS, ["enqueue"], PLUGINS)
    assert first.phase == "Inqueue"
    assert second.phase == "Pending"


def test_jobs_without_min_resources_are_always_admitted() -> None:
    job = gang("free", 8, cpu=4000, phase="Pending")
    add_task(job, "extra", cpu=4000)
    run_flow(snapshot(nodes(1), [job]), TIERS, ["enqueue"], PLUGINS)
    assert job.phase == "Inqueue"


def test_a_job_another_plugin_refuses_reserves_nothing() -> None:
    refuse_a = make_plugin(
        "refuse-a",
        job_enqueueable=lambda self, job: Vote.REJECT if job.name == "a" else Vote.ABSTAIN,
    )
    # a (3 cpu) is refused by the other plugin: b (3 cpu) still fits the 4.8 of room
    jobs = [pending("a", 3000, 1), pending("b", 3000, 2)]
    plugins = {**PLUGINS, "refuse-a": refuse_a}
    run_flow(snapshot(nodes(1), jobs), [["overcommit", "refuse-a"]], ["enqueue"], plugins)
    assert [j.phase for j in jobs] == ["Pending", "Inqueue"]
