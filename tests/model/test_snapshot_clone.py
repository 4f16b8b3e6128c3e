"""``ClusterSnapshot.clone``: a session on a clone never changes the source, updates to the
source never reach the clone, and a discarded session leaves no trace."""

from __future__ import annotations

from typing import Any

from pumice import ClusterSnapshot, JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from pumice.framework import run_actions
from pumice.framework.configfile import load_default_config
from pumice.framework.host import PluginHost
from pumice.framework.session import RecordingCommitter, Session

GiB = 2**30


def fingerprint(snap: ClusterSnapshot) -> dict[str, Any]:
    """Every number and state a session could change, by value (bit-for-bit for arrays)."""
    table = snap.table
    return {
        "arrays": {
            q: getattr(table, q).tobytes()
            for q in ("allocatable", "used", "releasing", "pipelined", "idle", "future_idle")
        },
        "pods": table.pod_count.tobytes(),
        "nodes": {n.name: sorted(n.tasks) for n in table.nodes},
        "node_task_states": {
            n.name: sorted((t.uid, t.status.name, t.node_name) for t in n.tasks.values())
            for n in table.nodes
        },
        "jobs": {
            uid: (
                job.phase,
                job.allocated,
                job.pending_best_effort_num,
                sorted((t.uid, t.status.name, t.node_name) for t in job.tasks.values()),
                {s.name: sorted(b) for s, b in job.task_status_index.items()},
            )
            for uid, job in snap.jobs.items()
        },
        "queues": {name: (q.weight, q.state) for name, q in snap.queues.items()},
    }


def task(
    name: str, cpu: float, status: TaskStatus = TaskStatus.PENDING, node: str = ""
) -> TaskInfo:
    return TaskInfo(
        uid=name,
        name=name,
        job=f"default/{name.split('-')[0]}",
        resreq=Resource({"cpu": cpu, "memory": GiB}),
        status=status,
        node_name=node or None,
        priority=10 if status == TaskStatus.PENDING else 1,
    )


def source() -> ClusterSnapshot:
    nodes = [NodeInfo(f"n{i}", Resource({"cpu": 4000.0, "memory": 8.0 * GiB})) for i in range(4)]
    running = JobInfo(uid="default/old", name="old", min_available=1, phase="Running")
    for i in range(6):
        running.add_task(task(f"old-{i}", 1000, TaskStatus.RUNNING, f"n{i % 4}"))
    pending = JobInfo(uid="default/new", name="new", min_available=3, phase="Inqueue")
    for i in range(3):
        pending.add_task(task(f"new-{i}", 1000))
    admitted = JobInfo(uid="default/later", name="later", min_available=1)  # phase Pending
    admitted.add_task(task("later-0", 500))
    return ClusterSnapshot.build(
        nodes=nodes, jobs=[running, pending, admitted], queues=[QueueInfo("default")]
    )


def run_default(snap: ClusterSnapshot) -> Session:
    session = Session.open(
        snap, load_default_config(), PluginHost.discover(), committer=RecordingCommitter()
    )
    run_actions(session)
    return session


def test_a_session_on_a_clone_leaves_the_source_bit_for_bit_unchanged() -> None:
    state = source()
    before = fingerprint(state)
    clone = state.clone()
    session = run_default(clone)
    # the session did change its clone: admitted, placed and evicted
    victim = clone.task("old-0")
    assert victim is not None
    statement = session.statement()
    statement.evict(victim, "test")
    statement.commit()
    session.close()
    committer = session.committer
    assert isinstance(committer, RecordingCommitter)
    assert [d[0] for d in committer.decisions].count("bind") == 4
    assert clone.jobs["default/later"].phase == "Inqueue"
    assert fingerprint(clone) != before
    assert fingerprint(state) == before


def test_updates_to_the_source_never_reach_a_clone() -> None:
    state = source()
    clone = state.clone()
    before = fingerprint(clone)
    state.put_task(task("old-9", 500, TaskStatus.RUNNING, "n1"))
    state.remove_task("old-0")
    state.put_node(NodeInfo("n9", Resource({"cpu": 1000.0})))
    state.remove_job("default/later")
    assert fingerprint(clone) == before
    # and the source is consistent on its own
    assert "old-9" in state.nodes["n1"].tasks and "old-0" not in state.nodes["n0"].tasks


def test_a_discarded_session_leaves_no_trace() -> None:
    clone = source().clone()
    before = fingerprint(clone)
    session = Session.open(
        clone, load_default_config(), PluginHost.discover(), committer=RecordingCommitter()
    )
    statement = session.statement()
    statement.enqueue(clone.jobs["default/later"])
    for i, name in enumerate(["new-0", "new-1"]):
        placed = clone.task(name)
        assert placed is not None
        statement.allocate(placed, f"n{i}")
    victim = clone.task("old-1")
    assert victim is not None
    statement.evict(victim, "test")
    assert fingerprint(clone) != before
    statement.discard()
    session.close()
    assert fingerprint(clone) == before


def test_put_task_replaces_and_moves_accounting() -> None:
    state = source()
    moved = task("old-1", 1000, TaskStatus.RUNNING, "n3")
    state.put_task(moved)
    assert "old-1" not in state.nodes["n1"].tasks and "old-1" in state.nodes["n3"].tasks
    assert state.nodes["n3"].used == Resource({"cpu": 2000.0, "memory": 2.0 * GiB})
    # a task naming a node not there yet is accounted when the node arrives
    state.put_task(task("old-7", 700, TaskStatus.RUNNING, "late"))
    state.put_node(NodeInfo("late", Resource({"cpu": 1000.0, "memory": 2.0 * GiB})))
    assert state.nodes["late"].used["cpu"] == 700.0
