"""NodeInfo accounting and the columnar NodeTable kept consistent with it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice.model import (
    ClusterSnapshot,
    JobInfo,
    NodeAccountingError,
    NodeInfo,
    NodeTable,
    Resource,
    TaskInfo,
    TaskStatus,
)
from pumice.model.node import NodeFields, add_new_nodes
from support.nodes import bare_task, place

GPU = "nvidia.com/gpu"


def task(name: str, status: TaskStatus, cpu: float = 1000, gpu: float = 0) -> TaskInfo:
    res = {"cpu": cpu, "memory": 2**30}
    if gpu:
        res[GPU] = gpu
    return TaskInfo(uid=name, name=name, resreq=Resource(res), status=status)


def node(name: str = "n", cpu: float = 4000, gpu: float = 0) -> NodeInfo:
    res = {"cpu": cpu, "memory": 8 * 2**30}
    if gpu:
        res[GPU] = gpu
    return NodeInfo(name, Resource(res), max_pods=3)


@pytest.mark.parametrize(
    ("status", "used", "releasing", "pipelined", "pods"),
    [
        (TaskStatus.RUNNING, 1000, 0, 0, 1),
        (TaskStatus.BOUND, 1000, 0, 0, 1),
        (TaskStatus.ALLOCATED, 1000, 0, 0, 1),
        (TaskStatus.BINDING, 1000, 0, 0, 1),
        (TaskStatus.RELEASING, 1000, 1000, 0, 1),
        (TaskStatus.PIPELINED, 0, 0, 1000, 1),
        (TaskStatus.SUCCEEDED, 0, 0, 0, 0),
        (TaskStatus.FAILED, 0, 0, 0, 0),
    ],
)
def test_accounting_by_status(
    status: TaskStatus, used: float, releasing: float, pipelined: float, pods: int
) -> None:
    n = node()
    t = task("t", status)
    n.add_task(t)
    assert n.used["cpu"] == used
    assert n.releasing["cpu"] == releasing
    assert n.pipelined["cpu"] == pipelined
    assert n.pod_count == pods
    assert n.idle["cpu"] == 4000 - used
    assert n.future_idle["cpu"] == 4000 - used + releasing - pipelined
    n.remove_task(t)
    assert n.used.is_empty() and n.releasing.is_empty() and n.pipelined.is_empty()
    assert n.pod_count == 0


def test_remove_uses_the_status_the_task_had_when_added() -> None:
    n = node()
    t = task("t", TaskStatus.RUNNING)
    n.add_task(t)
    t.status = TaskStatus.RELEASING  # changed behind the node's back
    n.remove_task(t)
    assert n.used.is_empty() and n.releasing.is_empty()
    n.add_task(t)
    assert n.releasing["cpu"] == 1000
    t.status = TaskStatus.RUNNING
    n.update_task(t)
    assert n.releasing.is_empty() and n.used["cpu"] == 1000


def test_allocated_must_fit_idle_but_running_may_overcommit() -> None:
    n = node(cpu=1500)
    n.add_task(task("a", TaskStatus.ALLOCATED))
    with pytest.raises(NodeAccountingError, match="insufficient cpu"):
        n.add_task(task("b", TaskStatus.ALLOCATED))
    with pytest.raises(NodeAccountingError, match=r"insufficient nvidia\.com/gpu"):
        n.add_task(task("g", TaskStatus.BINDING, cpu=1, gpu=1))
    n.add_task(task("c", TaskStatus.RUNNING))  # the cluster says so: accounted anyway
    assert n.used["cpu"] == 2000
    assert n.idle.get("cpu") == 0  # clipped in the Resource view
    assert n.table.idle[0, n.table.dim("cpu")] == -500  # honest in the table
    with pytest.raises(NodeAccountingError, match="pending task"):
        n.add_task(task("p", TaskStatus.PENDING))
    with pytest.raises(NodeAccountingError, match="already on node"):
        n.add_task(task("c", TaskStatus.RUNNING))
    with pytest.raises(NodeAccountingError, match="not on node"):
        n.remove_task(task("zz", TaskStatus.RUNNING))


def test_from_node_reads_allocatable_and_pod_limit() -> None:
    n = NodeInfo.from_node(
        {
            "metadata": {"name": "gpu-1", "labels": {"zone": "a"}},
            "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", GPU: "4"},
                "allocatable": {"cpu": "7500m", "memory": "30Gi", "pods": "58", GPU: "4"},
            },
        }
    )
    assert n.allocatable == Resource({"cpu": 7500, "memory": 30 * 2**30, GPU: 4})
    assert n.capacity["cpu"] == 8000
    assert n.max_pods == 58 and n.unschedulable and n.labels == {"zone": "a"}
    assert n.taints[0]["key"] == "k"


def test_table_rows_follow_nodes_through_add_and_remove() -> None:
    table = NodeTable()
    nodes = [node(f"n{i}", cpu=1000 * (i + 1)) for i in range(5)]
    for n in nodes:
        n.add_task(task(f"t{n.name}", TaskStatus.RUNNING, cpu=100))
        table.add(n)
    assert table.names == ["n0", "n1", "n2", "n3", "n4"]
    removed = table.remove("n1")  # n4 moves into row 1
    assert table.names == ["n0", "n4", "n2", "n3"]
    assert nodes[4].row == 1 and table.allocatable[1, table.dim("cpu")] == 5000
    # the removed node keeps its numbers in a table of its own
    assert (
        removed.used["cpu"] == 100
        and removed.allocatable["cpu"] == 2000
        and len(removed.table) == 1
    )
    # changing a node after the move writes its new row
    nodes[4].add_task(task("late", TaskStatus.RUNNING, cpu=300))
    assert table.used[1, table.dim("cpu")] == 400
    assert table.pod_count.tolist() == [1, 2, 1, 1]
    with pytest.raises(ValueError, match="already in the table"):
        table.add(nodes[0])


def test_new_dimensions_grow_the_table() -> None:
    table = NodeTable()
    a, b = node("a"), node("b", gpu=8)
    table.add(a)
    table.add(b)
    gpu = table.dim(GPU)
    assert gpu is not None
    assert table.allocatable[:, gpu].tolist() == [0, 8]
    b.add_task(task("g", TaskStatus.ALLOCATED, gpu=2))
    assert table.idle[:, gpu].tolist() == [0, 6]
    vec = table.vector(Resource({"cpu": 1, "example.com/fpga": 1}))
    assert len(vec) == len(table.dims) == 4 and table.allocatable.shape == (2, 4)


def test_snapshot_accounts_placed_tasks_and_totals_allocatable() -> None:
    job = JobInfo(uid="ns/j", name="j")
    running = task("r", TaskStatus.RUNNING)
    running.node_name = "n1"
    pending = task("p", TaskStatus.PENDING)
    lost = task("l", TaskStatus.RUNNING)
    lost.node_name = "gone"
    for t in (running, pending, lost):
        job.add_task(t)
    snap = ClusterSnapshot.build(nodes=[node("n0"), node("n1")], jobs=[job])
    assert snap.nodes["n1"].used["cpu"] == 1000
    assert snap.nodes["n0"].used.is_empty()
    assert snap.total_allocatable["cpu"] == 8000
    assert job.allocated["cpu"] == 2000  # running + lost: both hold resources for the job


STATUSES = [
    TaskStatus.RUNNING,
    TaskStatus.RELEASING,
    TaskStatus.PIPELINED,
    TaskStatus.BOUND,
    TaskStatus.SUCCEEDED,
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "remove", "update", "move"]),
            st.integers(0, 3),  # node
            st.integers(0, 7),  # task
            st.sampled_from(STATUSES),
            st.integers(1, 2000),  # cpu
        ),
        max_size=40,
    )
)
def test_table_always_equals_a_recount_of_the_tasks(
    ops: list[tuple[str, int, int, TaskStatus, int]],
) -> None:
    table = NodeTable()
    nodes = [node(f"n{i}", cpu=10_000) for i in range(4)]
    for n in nodes:
        table.add(n)
    where: dict[str, NodeInfo] = {}
    for op, ni, ti, status, cpu in ops:
        name = f"t{ti}"
        if op == "add" and name not in where:
            t = task(name, status, cpu=cpu)
            nodes[ni].add_task(t)
            where[name] = nodes[ni]
        elif op == "remove" and name in where:
            n = where.pop(name)
            n.remove_task(n.tasks[name])
        elif op == "update" and name in where:
            t = where[name].tasks[name]
            t.status = status
            where[name].update_task(t)
        elif op == "move":
            n = nodes[ni]
            if n.name in table.names:
                table.remove(n.name)
            else:
                table.add(n)
    cpu_col = table.dim("cpu")
    for n in nodes:
        tasks = n.tasks.values()
        live = [t for t in tasks if not t.status & (TaskStatus.SUCCEEDED | TaskStatus.FAILED)]
        used = sum(t.resreq["cpu"] for t in live if t.status != TaskStatus.PIPELINED)
        rel = sum(t.resreq["cpu"] for t in live if t.status == TaskStatus.RELEASING)
        pipe = sum(t.resreq["cpu"] for t in live if t.status == TaskStatus.PIPELINED)
        assert n.used.get("cpu") == pytest.approx(used)
        assert n.releasing.get("cpu") == pytest.approx(rel)
        assert n.pipelined.get("cpu") == pytest.approx(pipe)
        assert n.pod_count == len(live)
        if n.name in table.names:
            r = table.row(n.name)
            assert table.nodes[r] is n
            assert table.used[r, cpu_col] == pytest.approx(used)
            assert np.isclose(table.future_idle[r, cpu_col], 10_000 - used + rel - pipe)


def test_without_takes_tasks_off_for_the_block_and_puts_back_exactly() -> None:
    node = NodeInfo("n", Resource({"cpu": 1000.0, "memory": 3.0}), max_pods=3)
    NodeTable().add(node)
    tasks = [bare_task(f"t{i}", cpu=0.1 + i / 3, memory=1) for i in range(3)]
    for task in tasks:
        node.add_task(place(task, "n"))
    node.update_task(place(tasks[1], "n", TaskStatus.RELEASING))
    table = node._table
    before = {m: getattr(table, m)[:, node.row].copy() for m in table._MATRICES}
    order, version = list(node.tasks), table.version
    with node.without([tasks[1], tasks[2], bare_task("elsewhere")]):
        assert list(node.tasks) == ["t0"] and node.pod_count == 1
        assert node.used.get("cpu") == pytest.approx(tasks[0].resreq.get("cpu"))
        assert node.releasing.get("cpu") == 0
    assert list(node.tasks) == order and node.pod_count == 3
    for name, column in before.items():
        assert (getattr(table, name)[:, node.row] == column).all(), name  # bit for bit
    assert table.version > version  # the row is logged as changed: caches look again
    node.remove_task(tasks[2])  # the accounting records are back too
    assert node.pod_count == 2


def node_object(name: str, **allocatable: str) -> dict[str, object]:
    allocatable.setdefault("cpu", "4")
    allocatable.setdefault("memory", "8Gi")
    spec = {"unschedulable": True} if name.endswith("-off") else {}
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocatable": allocatable}}


def test_nodes_added_together_are_the_nodes_added_one_by_one() -> None:
    objects = [
        node_object("a"),
        node_object("b-off", pods="20"),
        node_object("c", **{GPU: "8"}),
        node_object("d", cpu="64"),
    ]
    one_by_one = NodeTable()
    for obj in objects:
        one_by_one.add(NodeInfo.from_node(obj))
    together = NodeTable()
    together.add(NodeInfo.from_node(node_object("first")))
    made = add_new_nodes(together, [NodeFields.of(obj) for obj in objects])
    assert [n.name for n in made] == ["a", "b-off", "c", "d"]
    assert together.names == ["first", "a", "b-off", "c", "d"]
    assert together.dims == one_by_one.dims
    for name in ("allocatable", "used", "idle", "future_idle", "pod_count", "max_pods"):
        assert getattr(together, name)[1:].tolist() == getattr(one_by_one, name).tolist()
    assert together.unschedulable[1:].tolist() == [False, True, False, False]
    # each node reads and writes its own row of the shared table
    c = made[2]
    assert c.table is together and c.row == together.row("c") == 3
    c.add_task(task("g", TaskStatus.ALLOCATED, gpu=2))
    assert c.idle[GPU] == 6 and together.pod_count.tolist() == [0, 0, 0, 1, 0]
    with pytest.raises(ValueError, match="named twice"):
        add_new_nodes(together, [NodeFields.of(node_object("a"))])


def test_a_snapshot_takes_many_nodes_and_accounts_their_waiting_tasks() -> None:
    snap = ClusterSnapshot.build(nodes=[node("known")])
    job = JobInfo(uid="ns/j", name="j")
    early = task("early", TaskStatus.RUNNING)
    early.node_name = "late"  # names a node the snapshot does not have yet
    job.add_task(early)
    snap.put_job(job)
    snap.put_nodes(
        [NodeFields.of(node_object("late")), NodeFields.of(node_object("known", cpu="16"))]
    )
    assert sorted(snap.nodes) == ["known", "late"] and len(snap.table) == 2
    assert snap.nodes["known"].allocatable["cpu"] == 16000  # a known node takes its new spec
    assert snap.nodes["late"].used["cpu"] == 1000 and "early" in snap.nodes["late"].tasks
