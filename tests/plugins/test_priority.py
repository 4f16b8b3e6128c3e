"""The priority plugin: task and job order, preemption victims, starvation."""

from __future__ import annotations

import importlib.resources

import pytest

from pumice import TaskStatus
from pumice.framework import Session
from pumice.framework.configfile import parse_config
from pumice.framework.host import PluginHost
from pumice.framework.session import RecordingCommitter
from pumice.plugins.priority import PriorityPlugin
from support.builders import make_plugin
from support.tier1 import BUILTINS, job, names, running, session, snapshot, task


def test_task_order_puts_higher_task_priority_first_then_creation_time() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    tasks = [
        task("low", priority=1, created=0),
        task("high", priority=10, created=5),
        task("mid-late", priority=5, created=4),
        task("mid-early", priority=5, created=3),
    ]
    job(snap, "j", *tasks)
    ssn = session(snap, ["priority"])
    assert names(ssn.sort_tasks(tasks)) == ["high", "mid-early", "mid-late", "low"]


def test_job_order_puts_higher_job_priority_first() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    jobs = [
        job(snap, "low", task("a"), priority=1, created=0),
        job(snap, "high", task("b"), priority=100, created=2),
        job(snap, "none", task("c"), priority=0, created=1),
    ]
    ssn = session(snap, ["priority"])
    assert [j.name for j in ssn.sort_jobs(jobs)] == ["high", "low", "none"]


def test_disabled_job_order_falls_back_to_creation_time() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    jobs = [
        job(snap, "low", task("a"), priority=1, created=0),
        job(snap, "high", task("b"), priority=100, created=2),
    ]
    ssn = session(snap, [{"name": "priority", "enableJobOrder": False}])
    assert [j.name for j in ssn.sort_jobs(jobs)] == ["low", "high"]


def test_victims_of_other_jobs_need_a_strictly_lower_job_priority() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor, priority=5)
    lower = running("lower", priority=100)  # task priority does not matter across jobs
    equal = running("equal")
    higher = running("higher")
    job(snap, "j-lower", lower, priority=4)
    job(snap, "j-equal", equal, priority=5)
    job(snap, "j-higher", higher, priority=6)
    ssn = session(snap, ["priority"])
    assert names(ssn.preemptable(preemptor, [higher, lower, equal])) == ["lower"]


def test_victims_of_the_same_job_need_a_strictly_lower_task_priority() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p", priority=5)
    low, same, high = (running(n, priority=p) for n, p in (("low", 4), ("same", 5), ("hi", 6)))
    job(snap, "me", preemptor, low, same, high, priority=0)
    ssn = session(snap, ["priority"])
    assert names(ssn.preemptable(preemptor, [high, same, low])) == ["low"]


def test_candidates_of_unknown_jobs_are_skipped_and_an_unknown_preemptor_gets_none() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor, priority=5)
    known = running("known")
    job(snap, "other", known, priority=1)
    stray = running("stray")
    stray.job = "default/gone"
    ssn = session(snap, ["priority"])
    assert names(ssn.preemptable(preemptor, [stray, known])) == ["known"]
    orphan = task("orphan")
    orphan.job = "default/gone"
    assert ssn.preemptable(orphan, [known]) == []


def test_priority_is_not_a_reclaim_rule() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor, priority=0)
    victim = running("v")
    job(snap, "other", victim, priority=10)
    ssn = session(snap, ["priority"])
    assert ssn.preemptable(preemptor, [victim]) == []
    assert not ssn.implemented("reclaimable")


def test_victims_intersect_with_another_plugin_of_the_tier() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor, priority=5)
    a, b, c = running("a"), running("b"), running("c")
    job(snap, "low", a, b, priority=1)
    job(snap, "high", c, priority=9)
    not_b = make_plugin(
        "NotB",
        preemptable=lambda self, preemptor, candidates: [t for t in candidates if t.name != "b"],
    )
    ssn = session(snap, ["priority", "not-b"], extra={"not-b": not_b})
    assert names(ssn.preemptable(preemptor, [a, b, c])) == ["a"]


def test_empty_answer_in_tier_one_lets_tier_two_decide() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor, priority=1)
    victim = running("v")
    job(snap, "other", victim, priority=1)  # equal priority: priority gives nothing
    everyone = make_plugin("All", preemptable=lambda self, preemptor, candidates: list(candidates))
    ssn = session(snap, ["priority"], ["all"], extra={"all": everyone})
    assert names(ssn.preemptable(preemptor, [victim])) == ["v"]


@pytest.mark.parametrize(
    ("statuses", "starving"),
    [
        ([TaskStatus.RUNNING, TaskStatus.PENDING], True),
        ([TaskStatus.RUNNING, TaskStatus.PIPELINED], False),
        ([TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED], False),
        # a failed task still counts among the tasks, so the job keeps wanting more
        ([TaskStatus.RUNNING, TaskStatus.FAILED], True),
        ([TaskStatus.RUNNING, TaskStatus.RELEASING], True),
    ],
)
def test_job_starving_while_ready_plus_waiting_is_below_the_task_count(
    statuses: list[TaskStatus], starving: bool
) -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    tasks = [task(f"t{i}", status=s) for i, s in enumerate(statuses)]
    j = job(snap, "j", *tasks, min_available=1)
    ssn = session(snap, ["priority"])
    assert ssn.job_starving(j) is starving


def test_found_through_the_entry_point() -> None:
    host = PluginHost.discover()
    provided = host.get("priority")
    assert provided is not None and provided.cls is PriorityPlugin
    assert BUILTINS["priority"] is PriorityPlugin


def test_default_configuration_tier_one_through_the_entry_points() -> None:
    text = (importlib.resources.files("pumice.conf") / "scheduler.yaml").read_text()
    config = parse_config(text, source="scheduler.yaml")
    snap = snapshot(("n0", 16000, 32 * 2**30))
    preemptor = task("p")
    mine = job(snap, "mine", preemptor, priority=5, created=2)
    low = [running(f"low-{i}") for i in range(3)]
    low_job = job(snap, "low", *low, min_available=3, priority=1, created=0)
    dns = running("dns", namespace="kube-system")
    dns_job = job(snap, "dns", dns, namespace="kube-system", priority=1, created=1)
    ssn = Session.open(snap, config, PluginHost.discover(), committer=RecordingCommitter())
    # Tier 1 is priority ∩ conformance: gang's victims are switched off by enablePreemptable:
    # false, or it would keep the whole low gang (3 ready, minAvailable 3).
    assert names(ssn.preemptable(preemptor, [*low, dns])) == ["low-0", "low-1", "low-2"]
    # priority first; low and dns tie on priority and on gang (both ready), so drf in tier 2
    # decides: dns holds 1/16 of the cpu, low 3/16.
    assert [j.name for j in ssn.sort_jobs([low_job, dns_job, mine])] == ["mine", "dns", "low"]
    ssn.close()
