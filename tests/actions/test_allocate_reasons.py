"""What allocate tells a pending task: node reasons before queue reasons, and a queue's limit
with its figures, through real sessions with the proportion plugin."""

from __future__ import annotations

from pumice import NodeInfo, TaskStatus
from support.flow import GiB, add_task, binds, gang, nodes, queue, res, run_default, snapshot

GPU = "nvidia.com/gpu"


def test_a_pod_bigger_than_every_node_is_told_about_the_nodes_not_the_queue() -> None:
    # 100 cpu asked of nodes of 8 and 16 cpu: the queue's fair share (24 cpu) would refuse it
    # too, but no queue could make it fit
    big = gang("big", 1, cpu=100_000, phase="Pending")
    cluster = [NodeInfo("small", res(8000, 16 * GiB)), NodeInfo("large", res(16_000, 32 * GiB))]
    ssn = run_default(snapshot(cluster, [big]))
    assert binds(ssn) == {}
    assert ssn.task_reasons["big-0"] == "0/2 nodes are available: 2 Insufficient cpu."


def test_two_gpus_where_one_is_free_is_told_about_the_gpu() -> None:
    busy = gang("busy", 0, phase="Running", min_available=0)
    add_task(busy, "busy-0", status=TaskStatus.RUNNING, node="gpu0", extra={GPU: 1})
    wants = gang("wants", 1, phase="Pending", extra={GPU: 2})
    cluster = [NodeInfo("gpu0", res(16_000, 32 * GiB, **{GPU: 2}))]
    ssn = run_default(snapshot(cluster, [busy, wants]))
    assert binds(ssn) == {}
    assert ssn.task_reasons["wants-0"] == f"0/1 nodes are available: 1 Insufficient {GPU}."


def test_a_queue_at_its_capability_names_the_capability_and_its_figures() -> None:
    held = gang("held", 0, queue="research", phase="Running", min_available=0)
    add_task(held, "held-0", cpu=14_000, memory=0, status=TaskStatus.RUNNING, node="n0")
    more = gang("more", 1, cpu=2000, memory=0, queue="research", phase="Pending")
    snap = snapshot(
        nodes(2, cpu=16_000, memory=64 * GiB),
        [held, more],
        [queue("research", capability=res(cpu=15_000))],
    )
    ssn = run_default(snap)
    assert binds(ssn) == {}  # n1 has room: the queue is what holds it back
    assert ssn.task_reasons["more-0"] == (
        "queue research: cpu allocated 14 + request 2 exceeds capability 15"
    )


def test_a_queue_at_its_fair_share_names_the_deserved_share() -> None:
    # another queue's guarantee of 8 cpu leaves research 8 of the 16: its deserved share
    held = gang("held", 0, queue="research", phase="Running", min_available=0)
    add_task(held, "held-0", cpu=7000, memory=0, status=TaskStatus.RUNNING, node="n0")
    more = gang("more", 1, cpu=2000, memory=0, queue="research", phase="Pending")
    queues = [queue("research"), queue("reserved", guarantee=res(cpu=8000))]
    ssn = run_default(snapshot(nodes(2, cpu=8000, memory=64 * GiB), [held, more], queues))
    assert binds(ssn) == {}
    assert ssn.task_reasons["more-0"] == (
        "queue research: cpu allocated 7 + request 2 exceeds deserved 8"
    )


def test_a_gang_held_by_its_queue_keeps_volcanos_form_with_the_figures_as_origin() -> None:
    running = gang("running", 0, queue="q", phase="Running", min_available=0)
    add_task(running, "running-0", cpu=3000, memory=0, status=TaskStatus.RUNNING, node="n0")
    waiting = gang("waiting", 2, cpu=2000, memory=0, queue="q", phase="Pending")
    snap = snapshot(nodes(2), [running, waiting], [queue("q", capability=res(cpu=6000))])
    ssn = run_default(snap)
    ssn.close()
    # the first pod fits the queue (3 + 2 <= 6), the second does not, and the gang waits whole
    assert binds(ssn) == {}
    assert ssn.job_reasons[waiting.uid] == (
        "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 1 Schedulable, 1 Unschedulable. Origin reason is waiting-1: "
        "queue q: cpu allocated 5 + request 2 exceeds capability 6"
    )


def test_a_gang_its_queue_cannot_admit_gets_the_reservation_figures() -> None:
    minimum = res(cpu=4000)
    running = gang("running", 0, queue="q", phase="Running", min_available=1, min_resources=minimum)
    add_task(running, "running-0", cpu=3000, memory=0, status=TaskStatus.RUNNING, node="n0")
    waiting = gang("waiting", 2, cpu=2000, memory=0, queue="q", min_resources=minimum)
    waiting.phase = "Pending"
    snap = snapshot(nodes(2), [running, waiting], [queue("q", capability=res(cpu=6000))])
    ssn = run_default(snap)
    ssn.close()
    assert binds(ssn) == {}
    assert ssn.job_reasons[waiting.uid].endswith(
        "Origin reason is: queue q: cpu minResources 4 + allocated 3 + inqueue 1 exceeds "
        "capability 6"
    )
