"""The proportion plugin through a real Session: water-filling against hand-computed shares,
share / overused / allocatable as a statement allocates, admission, reclaim victims, order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pumice import NodeInfo, QueueInfo, Resource, TaskStatus, Vote
from pumice.framework import run_actions
from pumice.plugins.proportion import QueueAttributes
from support.builders import make_plugin
from support.flow import (
    GiB,
    add_task,
    attributes,
    gang,
    nodes,
    open_flow,
    proportion_of,
    queue,
    res,
    snapshot,
)

ONLY_PROPORTION = [["proportion"]]


def approx(resource: Resource) -> dict[str, Any]:
    """Non-zero amounts of a Resource, for comparing with pytest.approx."""
    return {k: pytest.approx(v) for k, v in resource.items() if v}


# -- deserved: water-filling ------------------------------------------------------------------


def test_two_queues_by_weight_one_to_three() -> None:
    # 2 nodes: cpu 8000, memory 16Gi. Each queue asks for 8 x (1 cpu, 1Gi) = (8000, 8Gi).
    jobs = [gang("a", 8, queue="qa"), gang("b", 8, queue="qb")]
    snap = snapshot(nodes(2), jobs, [queue("qa", 1), queue("qb", 3)])
    ssn = open_flow(snap, ONLY_PROPORTION)
    qa, qb = attributes(ssn, "qa"), attributes(ssn, "qb")
    # round 1 (W=4): qa += (2000, 4Gi); qb += (6000, 12Gi) capped by its request to (6000, 8Gi).
    #   remaining (0, 4Gi)
    # round 2 (W=4): qa -> (2000, 5Gi); qb would go to 11Gi, capped at 8Gi: unchanged -> met.
    #   remaining (0, 3Gi)
    # round 3 (W=1): qa -> (2000, 8Gi), its request's memory; remaining empty -> stop.
    assert approx(qa.deserved) == {"cpu": 2000, "memory": 8 * GiB}
    assert approx(qb.deserved) == {"cpu": 6000, "memory": 8 * GiB}
    assert approx(qa.request) == {"cpu": 8000, "memory": 8 * GiB}
    assert qa.share == 0.0 and qa.allocated.is_empty()


def test_three_queues_with_capability_and_guarantee() -> None:
    # 3 nodes: cpu 12000, memory 24Gi.
    jobs = [
        gang("one", 6, queue="q1"),  # asks (6000, 6Gi); capped at 2 cpu
        gang("two", 2, queue="q2"),  # asks (2000, 2Gi); guaranteed 3 cpu
        gang("three", 10, queue="q3"),  # asks (10000, 10Gi); weight 2
    ]
    queues = [
        queue("q1", 1, capability=res(cpu=2000)),
        queue("q2", 1, guarantee=res(cpu=3000)),
        queue("q3", 2),
    ]
    ssn = open_flow(snapshot(nodes(3), jobs, queues), ONLY_PROPORTION)
    q1, q2, q3 = (attributes(ssn, q) for q in ("q1", "q2", "q3"))
    # real capability: (total - all guarantees) + own guarantee, then min with capability
    assert approx(q1.real_capability) == {"cpu": 2000, "memory": 24 * GiB}
    assert approx(q2.real_capability) == {"cpu": 12000, "memory": 24 * GiB}
    assert approx(q3.real_capability) == {"cpu": 9000, "memory": 24 * GiB}
    # round 1 (W=4, remaining (12000, 24Gi)):
    #   q1 +(3000, 6Gi) -> capability (2000, 6Gi); q2 +(3000, 6Gi) -> request (2000, 2Gi) ->
    #   guarantee (3000, 2Gi), met; q3 +(6000, 12Gi) -> request memory (6000, 10Gi).
    #   remaining (1000, 6Gi)
    # round 2 (W=3): q1 unchanged -> met; q3 +(666.7, 4Gi) -> (6666.7, 10Gi). remaining (333.3, 6Gi)
    # round 3 (W=2): q3 +(333.3, 6Gi) -> (7000, 10Gi). remaining (0, 6Gi)
    # round 4: q3 unchanged -> met; remaining unchanged -> stop.
    assert approx(q1.deserved) == {"cpu": 2000, "memory": 6 * GiB}
    assert approx(q2.deserved) == {"cpu": 3000, "memory": 2 * GiB}
    assert approx(q3.deserved) == {"cpu": 7000, "memory": 10 * GiB}


def test_queue_without_request_gets_nothing_and_unlisted_queues_get_no_attributes() -> None:
    jobs = [gang("a", 2, queue="qa", memory=0)]
    snap = snapshot(nodes(1), jobs, [queue("qa"), queue("idle", guarantee=res(cpu=1000))])
    ssn = open_flow(snap, ONLY_PROPORTION)
    plugin = proportion_of(ssn)
    assert set(plugin.attributes) == {"qa"}
    # no memory asked: no memory deserved; cpu: the idle queue's guarantee is held back
    assert approx(plugin.attributes["qa"].deserved) == {"cpu": 2000}
    assert approx(plugin.attributes["qa"].real_capability) == {"cpu": 3000, "memory": 8 * GiB}


def test_weight_zero_queue_gets_only_its_guarantee() -> None:
    jobs = [gang("a", 4, queue="qa"), gang("z", 4, queue="qz")]
    queues = [queue("qa", 1), queue("qz", 0, guarantee=res(cpu=1000, memory=GiB))]
    ssn = open_flow(snapshot(nodes(1), jobs, queues), ONLY_PROPORTION)
    assert approx(attributes(ssn, "qz").deserved) == {"cpu": 1000, "memory": GiB}
    # qa: real capability (3000, 7Gi) after qz's guarantee; request (4000, 4Gi)
    assert approx(attributes(ssn, "qa").deserved) == {"cpu": 3000, "memory": 4 * GiB}


def test_every_queue_weight_zero_distributes_nothing() -> None:
    jobs = [gang("a", 1, queue="qa")]
    ssn = open_flow(snapshot(nodes(1), jobs, [queue("qa", 0)]), ONLY_PROPORTION)
    assert attributes(ssn, "qa").deserved.is_empty()


def test_zero_cpu_capability_means_unlimited_but_zero_gpu_means_none() -> None:
    gpu = "nvidia.com/gpu"
    job = gang("a", 2, queue="qa", extra={gpu: 1})
    gpu_node = NodeInfo("g", res(4000, 8 * GiB, **{gpu: 4}))
    cap = Resource({"cpu": 0, gpu: 0})
    ssn = open_flow(snapshot([gpu_node], [job], [queue("qa", capability=cap)]), ONLY_PROPORTION)
    attr = attributes(ssn, "qa")
    assert approx(attr.real_capability) == {"cpu": 4000, "memory": 8 * GiB}
    assert attr.real_capability[gpu] == 0
    assert approx(attr.deserved) == {"cpu": 2000, "memory": 2 * GiB}


def test_running_tasks_count_as_allocated_and_in_the_request() -> None:
    job = gang("a", 2, queue="qa", phase="Running", min_available=1)
    add_task(job, "a-run", cpu=2000, memory=GiB, status=TaskStatus.RUNNING, node="n0")
    ssn = open_flow(snapshot(nodes(2), [job], [queue("qa")]), ONLY_PROPORTION)
    attr = attributes(ssn, "qa")
    assert approx(attr.allocated) == {"cpu": 2000, "memory": GiB}
    assert approx(attr.request) == {"cpu": 4000, "memory": 3 * GiB}
    assert approx(attr.elastic) == {"cpu": 2000, "memory": GiB}  # no min_resources: all elastic
    assert attr.share == pytest.approx(0.5)  # cpu 2000 / 4000


# -- share, overused, allocatable as a statement allocates ------------------------------------


def test_share_overused_and_allocatable_follow_the_statement() -> None:
    # cpu 8000 between two equal queues, each asking for 6 x 1 cpu -> deserved 4000 cpu each
    jobs = [gang("a", 6, queue="qa", memory=0), gang("b", 6, queue="qb", memory=0)]
    snap = snapshot(nodes(2), jobs, [queue("qa"), queue("qb")])
    ssn = open_flow(snap, ONLY_PROPORTION)
    qa_info = ssn.queues["qa"]
    attr = attributes(ssn, "qa")
    assert approx(attr.deserved) == {"cpu": 4000}
    tasks = sorted(jobs[0].tasks.values(), key=lambda t: t.name)
    stmt = ssn.statement()
    for i, task in enumerate(tasks[:3]):
        assert ssn.allocatable(qa_info, task)
        stmt.allocate(task, f"n{i % 2}")
        assert attr.share == pytest.approx((i + 1) / 4)
        assert not ssn.overused(qa_info)
    assert ssn.allocatable(qa_info, tasks[3])
    stmt.pipeline(tasks[3], "n1")  # a pipelined task counts as allocated too
    assert attr.allocated["cpu"] == 4000 and attr.share == pytest.approx(1.0)
    assert ssn.overused(qa_info)
    assert not ssn.allocatable(qa_info, tasks[4])
    # the queue order puts the queue with the lower share first
    assert [q.name for q in ssn.sort_queues(ssn.queues.values())] == ["qb", "qa"]
    stmt.discard()
    assert attr.allocated["cpu"] == 0 and attr.share == 0.0
    assert not ssn.overused(qa_info) and ssn.allocatable(qa_info, tasks[4])


def test_allocatable_checks_only_the_dimensions_the_task_requests() -> None:
    job = gang("a", 2, queue="qa", cpu=1000, memory=GiB)
    ssn = open_flow(snapshot(nodes(1), [job], [queue("qa")]), ONLY_PROPORTION)
    attr = attributes(ssn, "qa")
    # deserved is (2000, 2Gi); a cpu-only task is judged on cpu alone
    cpu_only = add_task(job, "cpu-only", cpu=2000, memory=0)
    assert ssn.allocatable(ssn.queues["qa"], cpu_only)
    too_big = add_task(job, "too-big", cpu=2001, memory=0)
    assert not ssn.allocatable(ssn.queues["qa"], too_big)
    assert ssn.preemptive(ssn.queues["qa"], cpu_only)
    assert not ssn.preemptive(ssn.queues["qa"], too_big)
    assert approx(attr.deserved) == {"cpu": 2000, "memory": 2 * GiB}


def test_closed_queue_allocates_nothing_but_still_has_a_share() -> None:
    job = gang("a", 1, queue="qa")
    ssn = open_flow(snapshot(nodes(1), [job], [queue("qa", state="Closed")]), ONLY_PROPORTION)
    assert approx(attributes(ssn, "qa").deserved) == {"cpu": 1000, "memory": GiB}
    assert not ssn.allocatable(ssn.queues["qa"], next(iter(job.tasks.values())))


def test_queue_order_puts_higher_priority_before_lower_share() -> None:
    low = gang("low", 2, queue="low", phase="Running", min_available=1)
    add_task(low, "low-run", status=TaskStatus.RUNNING, node="n0")
    high = gang("high", 2, queue="high", phase="Running", min_available=1)
    add_task(high, "high-run", cpu=3000, status=TaskStatus.RUNNING, node="n0")
    queues = [queue("low"), queue("high", priority=5)]
    ssn = open_flow(snapshot(nodes(2), [low, high], queues), ONLY_PROPORTION)
    assert attributes(ssn, "high").share > attributes(ssn, "low").share
    assert [q.name for q in ssn.sort_queues(ssn.queues.values())] == ["high", "low"]


# -- admission --------------------------------------------------------------------------------


def test_enqueueable_counts_what_admitted_jobs_reserved() -> None:
    # queue capped at 5 cpu; each job needs 3 cpu to start
    minimum = res(cpu=3000)
    first = gang("first", 3, queue="q", min_resources=minimum, phase="Pending", created=1)
    second = gang("second", 3, queue="q", min_resources=minimum, phase="Pending", created=2)
    free = gang("free", 1, queue="q", phase="Pending", created=3)
    snap = snapshot(nodes(2), [first, second, free], [queue("q", capability=res(cpu=5000))])
    ssn = open_flow(snap, ONLY_PROPORTION)
    attr = attributes(ssn, "q")
    assert ssn.job_enqueueable(first)
    assert approx(attr.inqueue) == {"cpu": 3000}
    first.phase = "Inqueue"  # what the enqueue action does with a permit
    assert not ssn.job_enqueueable(second)  # 3000 + 3000 > 5000
    assert ssn.job_reasons[second.uid] == (
        "queue q: cpu minResources 3 + allocated 0 + inqueue 3 exceeds capability 5"
    )
    assert ssn.job_enqueueable(free)  # no minimum: permitted


def test_inqueue_and_elastic_at_open() -> None:
    minimum = res(cpu=2000, memory=GiB)
    waiting = gang("waiting", 2, queue="q", min_resources=minimum, phase="Inqueue")
    running = gang("running", 1, queue="q", min_resources=minimum, phase="Running", min_available=2)
    add_task(running, "r0", cpu=1500, memory=GiB, status=TaskStatus.RUNNING, node="n0")
    add_task(running, "r1", cpu=1500, memory=GiB, status=TaskStatus.RUNNING, node="n1")
    snap = snapshot(nodes(2), [waiting, running], [queue("q")])
    attr = attributes(open_flow(snap, ONLY_PROPORTION), "q")
    # waiting reserves its whole minimum; running holds (3000, 2Gi) > minimum: nothing reserved
    assert approx(attr.inqueue) == {"cpu": 2000, "memory": GiB}
    assert approx(attr.elastic) == {"cpu": 1000, "memory": GiB}


def test_a_permit_that_another_plugin_overrules_gives_its_reservation_back() -> None:
    def refuse_first(self: Any, job: Any) -> Vote:
        return Vote.REJECT if job.name == "first" else Vote.ABSTAIN

    picky = make_plugin("picky", job_enqueueable=refuse_first)
    minimum = res(cpu=3000)
    jobs = [
        gang(n, 1, cpu=3000, queue="q", min_resources=minimum, phase="Pending", created=i)
        for i, n in enumerate(("first", "second", "third"))
    ]
    snap = snapshot(nodes(2), jobs, [queue("q", capability=res(cpu=5000))])
    ssn = open_flow(snap, [["proportion", "picky"]], actions=["enqueue"], plugins={"picky": picky})
    run_actions(ssn)
    assert [j.phase for j in jobs] == ["Pending", "Inqueue", "Pending"]
    assert approx(attributes(ssn, "q").inqueue) == {"cpu": 3000}


def test_closed_or_unknown_queue_is_not_enqueueable() -> None:
    closed = gang("c", 1, queue="shut", phase="Pending")
    ssn = open_flow(snapshot(nodes(1), [closed], [queue("shut", state="Closed")]), ONLY_PROPORTION)
    assert not ssn.job_enqueueable(closed)
    stray = gang("stray", 1, queue="nowhere", phase="Pending")
    assert not ssn.job_enqueueable(stray)


# -- reclaim ----------------------------------------------------------------------------------


def test_reclaimable_takes_victims_while_their_queue_is_above_its_share() -> None:
    # qa runs 3 x 2 cpu on 8 cpu, but qb asks for 6 cpu too: deserved 4000 each
    qa_job = gang("a", 0, queue="qa", phase="Running", min_available=1)
    victims = [
        add_task(qa_job, f"a{i}", cpu=2000, memory=0, status=TaskStatus.RUNNING, node=f"n{i % 2}")
        for i in range(3)
    ]
    qb_job = gang("b", 3, queue="qb", cpu=2000, memory=0)
    snap = snapshot(nodes(2), [qa_job, qb_job], [queue("qa"), queue("qb")])
    ssn = open_flow(snap, ONLY_PROPORTION)
    assert approx(attributes(ssn, "qa").deserved) == {"cpu": 4000}
    reclaimer = next(iter(qb_job.tasks.values()))
    # 6000 > 4000: a0 goes (-> 4000, at its share); a1 and a2 stay
    assert [t.name for t in ssn.reclaimable(reclaimer, victims)] == ["a0"]


@given(
    st.lists(
        st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 4000)),
        max_size=8,
    ),
    st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), st.integers(0, 9000)),
)
def test_adding_to_a_queue_keeps_the_share_update_share_would_compute(
    additions: list[dict[str, int]], deserved: dict[str, int]
) -> None:
    attr = QueueAttributes(QueueInfo("q"), 1, None, Resource.zero())
    attr.deserved = Resource(deserved)
    attr.update_share()
    for added in additions:
        attr.add_allocated(Resource(added))
        kept = attr.share
        attr.update_share()
        assert kept == attr.share
