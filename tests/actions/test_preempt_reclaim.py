"""The preempt and reclaim actions through real sessions: victims, their order, commit rules."""

from __future__ import annotations

from pumice import JobInfo, Resource, TaskStatus
from support.flow import add_task, decisions, gang, nodes, queue, run_flow, snapshot

PREEMPT_TIERS = [["priority", "conformance"], ["predicates", "proportion"]]
# gang says who starves; proportion (beside conformance) picks victims by queue share
RECLAIM_TIERS = [
    [{"name": "gang", "enableReclaimable": False}],
    ["conformance", "predicates", "proportion"],
]


def running(
    name: str,
    tasks: int,
    *,
    cpu: float = 1000,
    priority: int = 0,
    q: str = "default",
    node: str = "n0",
    min_available: int = 1,
) -> JobInfo:
    job = gang(name, 0, queue=q, phase="Running", min_available=min_available)
    job.priority = priority
    for i in range(tasks):
        add_task(job, f"{name}-{i}", cpu=cpu, status=TaskStatus.RUNNING, node=node, created=i)
    return job


def waiting(
    name: str,
    tasks: int,
    *,
    cpu: float = 1000,
    priority: int = 0,
    q: str = "default",
    min_available: int | None = None,
) -> JobInfo:
    job = gang(name, tasks, cpu=cpu, queue=q, min_available=min_available)
    job.priority = priority
    return job


def evictions(session: object) -> list[str]:
    return [key.split("/")[1] for kind, key, _ in decisions(session) if kind == "evict"]  # type: ignore[arg-type]


def test_victims_come_from_the_lowest_priority_job_first() -> None:
    jobs = [
        running("mid", 2, priority=5),
        running("low", 2, priority=1),
        waiting("high", 1, priority=10),
    ]
    ssn = run_flow(snapshot(nodes(1), jobs), PREEMPT_TIERS, ["allocate", "preempt"])
    assert evictions(ssn) == ["low-1"]
    assert ("nominate", "default/high-0", "n0") in decisions(ssn)
    high = next(iter(jobs[2].tasks.values()))
    assert high.status == TaskStatus.PIPELINED


def test_equal_priority_takes_nothing() -> None:
    jobs = [running("peer", 4, priority=5), waiting("new", 1, priority=5)]
    ssn = run_flow(snapshot(nodes(1), jobs), PREEMPT_TIERS, ["allocate", "preempt"])
    assert evictions(ssn) == []


def test_preemption_stays_inside_the_queue() -> None:
    jobs = [running("other", 4, priority=1, q="b"), waiting("high", 1, priority=10, q="a")]
    snap = snapshot(nodes(1), jobs, [queue("a"), queue("b")])
    ssn = run_flow(snap, PREEMPT_TIERS, ["allocate", "preempt"])
    assert evictions(ssn) == []


def test_within_a_job_a_higher_priority_task_takes_a_lower_ones_place() -> None:
    job = running("j", 4)
    for task in job.tasks.values():
        task.priority = 1
    urgent = add_task(job, "j-urgent", created=9)
    urgent.priority = 100
    ssn = run_flow(snapshot(nodes(1), [job]), [["priority"], ["predicates"]], ["preempt"])
    assert len(evictions(ssn)) == 1
    assert urgent.status == TaskStatus.PIPELINED


def test_a_best_effort_preemptor_only_takes_from_best_effort_tasks() -> None:
    jobs = [running("low", 4, priority=1)]
    be = gang("be", 1, cpu=0, memory=0)
    be.priority = 10
    jobs.append(be)
    node_list = nodes(1)
    node_list[0].table.max_pods[0] = 4  # full by pod count
    ssn = run_flow(snapshot(node_list, jobs), PREEMPT_TIERS, ["preempt"])
    assert evictions(ssn) == []


def test_reclaim_takes_from_the_queue_above_its_share_only() -> None:
    jobs = [
        running("hog", 3, q="big"),
        running("fair", 1, q="small"),
        waiting("late", 2, cpu=500, q="hungry", min_available=2),
    ]
    queues = [queue("big"), queue("small"), queue("hungry")]
    ssn = run_flow(snapshot(nodes(1), jobs, queues), RECLAIM_TIERS, ["allocate", "reclaim"])
    # deserved cpu: big 2, small 1, hungry 1. big holds 3: one task above its share goes;
    # small holds exactly its share and keeps it
    assert evictions(ssn) == ["hog-0"]
    assert all(t.status == TaskStatus.PIPELINED for t in jobs[2].tasks.values())


def test_reclaim_discards_what_would_not_make_the_job_runnable() -> None:
    jobs = [running("hog", 4, q="big"), waiting("late", 3, cpu=2000, q="hungry")]
    queues = [queue("big"), queue("hungry")]
    ssn = run_flow(snapshot(nodes(1), jobs, queues), RECLAIM_TIERS, ["allocate", "reclaim"])
    assert evictions(ssn) == []
    assert all(t.status == TaskStatus.RUNNING for t in jobs[0].tasks.values())


def test_preempt_on_a_clone_leaves_the_source_unchanged() -> None:
    jobs = [running("low", 4, priority=1), waiting("high", 2, priority=10, min_available=2)]
    source = snapshot(nodes(1), jobs)
    used_before = source.table.used.copy()
    clone = source.clone()
    ssn = run_flow(clone, PREEMPT_TIERS, ["allocate", "preempt"])
    assert len(evictions(ssn)) == 2
    # the session's own copies changed; the source's tasks and accounting did not
    assert all(t.status == TaskStatus.RUNNING for t in source.jobs["default/low"].tasks.values())
    assert all(t.status == TaskStatus.PENDING for t in source.jobs["default/high"].tasks.values())
    assert (source.table.used == used_before).all()
    assert ssn.snapshot.jobs["default/high"].waiting_task_num == 2


def test_reclaim_skips_a_queue_that_may_not_grow() -> None:
    # hungry's capability of 1 cpu: preemptive refuses its second task, so nothing is taken
    jobs = [running("hog", 4, q="big"), waiting("late", 2, cpu=1000, q="hungry", min_available=2)]
    hungry = queue("hungry", capability=Resource({"cpu": 1000}))
    snap = snapshot(nodes(1), jobs, [queue("big"), hungry])
    ssn = run_flow(snap, RECLAIM_TIERS, ["allocate", "reclaim"])
    assert evictions(ssn) == []


def test_a_task_that_cannot_preempt_does_not_stop_a_different_one() -> None:
    high = gang("high", 0, min_available=1)
    high.priority = 10
    for i, cpu in enumerate((5000, 5000, 1000)):  # two too big for the node, then a small one
        add_task(high, f"high-{i}", cpu=cpu, created=i)
    jobs = [running("low", 4, priority=1), high]
    ssn = run_flow(snapshot(nodes(1), jobs), PREEMPT_TIERS, ["preempt"])
    assert len(evictions(ssn)) == 1
    states = {t.name: t.status for t in ssn.snapshot.jobs["default/high"].tasks.values()}
    assert states == {
        "high-0": TaskStatus.PENDING,
        "high-1": TaskStatus.PENDING,
        "high-2": TaskStatus.PIPELINED,
    }
