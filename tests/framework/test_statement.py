"""Statements: allocate / pipeline / evict, events fired synchronously, commit and discard."""

from __future__ import annotations

from typing import Any

import pytest

from pumice import Resource, TaskStatus
from pumice.framework.session import RecordingCommitter
from pumice.framework.statement import StatementError
from support.builders import add_job, cluster, make_plugin, open_session, running_task


def recorder(name: str, log: list[Any], nodes: list[Any] | None = None) -> Any:
    def on_deallocate(self: Any, task: Any) -> None:
        log.append((name, "dealloc", task.name))
        if nodes is not None:
            nodes.append(task.node_name)

    return make_plugin(
        name,
        on_allocate=lambda self, task: log.append((name, "alloc", task.name)),
        on_deallocate=on_deallocate,
    )


def test_allocate_changes_node_job_and_fires_events_on_every_plugin(calls: list[Any]) -> None:
    snap = cluster()
    job = add_job(snap, "j", tasks=2, cpu=1500)
    t0, t1 = job.tasks.values()
    ssn = open_session(
        {"r1": recorder("r1", calls), "r2": recorder("r2", calls)}, [["r1"], ["r2"]], snap
    )
    stmt = ssn.statement()
    stmt.allocate(t0, "n1")
    # the event happened before allocate returned, on both plugins, in tier order
    assert calls == [("r1", "alloc", "j-0"), ("r2", "alloc", "j-0")]
    assert t0.status == TaskStatus.ALLOCATED and t0.node_name == "n1"
    assert ssn.nodes["n1"].idle["cpu"] == 2500
    assert ssn.table.idle[ssn.table.row("n1"), ssn.table.dim("cpu")] == 2500
    assert job.allocated["cpu"] == 1500
    assert job.ready_task_num == 1
    stmt.allocate(t1, "n1")
    assert ssn.nodes["n1"].idle["cpu"] == 1000
    assert job.is_ready()


def test_discard_undoes_in_reverse_order(calls: list[Any]) -> None:
    snap = cluster()
    job = add_job(snap, "j", tasks=2)
    t0, t1 = job.tasks.values()
    left: list[str | None] = []
    ssn = open_session({"r": recorder("r", calls, left)}, [["r"]], snap)
    stmt = ssn.statement()
    stmt.allocate(t0, "n0")
    stmt.pipeline(t1, "n2")
    assert ssn.nodes["n2"].pipelined["cpu"] == 1000
    assert ssn.nodes["n2"].future_idle["cpu"] == 3000
    calls.clear()
    stmt.discard()
    assert calls == [("r", "dealloc", "j-1"), ("r", "dealloc", "j-0")]
    assert left == ["n2", "n0"]  # the event still names the node being left
    for task in (t0, t1):
        assert task.status == TaskStatus.PENDING and task.node_name is None
    assert ssn.table.used.sum() == 0 and ssn.table.pipelined.sum() == 0
    assert job.allocated.is_empty()
    assert stmt.operations == []


def test_allocate_that_does_not_fit_is_refused_and_leaves_nothing_behind() -> None:
    snap = cluster(cpu=1000)
    job = add_job(snap, "j", cpu=1500)
    task = next(iter(job.tasks.values()))
    ssn = open_session({"r": recorder("r", [])}, [["r"]], snap)
    with pytest.raises(StatementError, match="insufficient cpu"):
        ssn.statement().allocate(task, "n0")
    assert task.status == TaskStatus.PENDING and task.node_name is None
    assert ssn.table.used.sum() == 0
    with pytest.raises(StatementError, match="no node"):
        ssn.statement().allocate(task, "nowhere")


def test_a_plugin_can_veto_an_allocation(calls: list[Any]) -> None:
    def veto(self: Any, task: Any) -> None:
        raise RuntimeError("quota exhausted")

    plugins = {"r": recorder("r", calls), "v": make_plugin("Veto", on_allocate=veto)}
    snap = cluster()
    task = next(iter(add_job(snap, "j").tasks.values()))
    ssn = open_session(plugins, [["r", "v"]], snap)
    with pytest.raises(StatementError, match="vetoed: quota exhausted"):
        ssn.statement().allocate(task, "n0")
    # r heard of the allocation, then of its undoing
    assert calls == [("r", "alloc", "j-0"), ("r", "dealloc", "j-0")]
    assert task.status == TaskStatus.PENDING and ssn.nodes["n0"].tasks == {}


def test_evict_marks_releasing_and_commit_sends_decisions() -> None:
    snap = cluster()
    victim = running_task(snap, "old", "n0")
    newcomer = next(iter(add_job(snap, "new").tasks.values()))
    committer = RecordingCommitter()
    ssn = open_session({"r": recorder("r", [])}, [["r"]], snap, committer=committer)
    stmt = ssn.statement()
    stmt.evict(victim, "preempted by new")
    node = ssn.nodes["n0"]
    assert victim.status == TaskStatus.RELEASING
    assert node.releasing["cpu"] == 1000 and node.used["cpu"] == 1000
    assert node.future_idle["cpu"] == 4000
    stmt.allocate(newcomer, "n1")
    failures = stmt.commit()
    assert failures == []
    assert committer.decisions == [
        ("evict", "default/old-0", "preempted by new"),
        ("bind", "default/new-0", "n1"),
    ]
    assert newcomer.status == TaskStatus.BINDING
    assert ssn.nodes["n1"].used["cpu"] == 1000


def test_discarded_eviction_restores_running(calls: list[Any]) -> None:
    snap = cluster()
    task = running_task(snap, "old", "n0")
    ssn = open_session({"r": recorder("r", calls)}, [["r"]], snap)
    stmt = ssn.statement()
    stmt.evict(task, "test")
    stmt.discard()
    assert task.status == TaskStatus.RUNNING
    assert ssn.nodes["n0"].releasing.is_empty()
    assert calls == [("r", "dealloc", "old-0"), ("r", "alloc", "old-0")]
    with pytest.raises(StatementError, match="cannot evict"):
        ssn.statement().evict(next(iter(add_job(snap, "p").tasks.values())), "pending")


class FailingBinder(RecordingCommitter):
    def bind(self, task: Any, node: str) -> None:
        if task.name.endswith("-1"):
            raise ConnectionError("api server down")
        super().bind(task, node)


def test_a_failed_bind_undoes_only_that_allocation(calls: list[Any]) -> None:
    snap = cluster()
    t0, t1 = add_job(snap, "j", tasks=2).tasks.values()
    committer = FailingBinder()
    ssn = open_session({"r": recorder("r", calls)}, [["r"]], snap, committer=committer)
    stmt = ssn.statement()
    stmt.allocate(t0, "n0")
    stmt.allocate(t1, "n1")
    failures = stmt.commit()
    assert [(op.task.name, str(exc)) for op, exc in failures] == [("j-1", "api server down")]
    assert t0.status == TaskStatus.BINDING and t1.status == TaskStatus.PENDING
    assert ssn.nodes["n1"].used.is_empty()
    assert committer.decisions == [("bind", "default/j-0", "n0")]


def test_merge_moves_operations() -> None:
    snap = cluster()
    t0, t1 = add_job(snap, "j", tasks=2).tasks.values()
    ssn = open_session({"r": recorder("r", [])}, [["r"]], snap)
    a, b = ssn.statement(), ssn.statement()
    a.allocate(t0, "n0")
    b.allocate(t1, "n0")
    a.merge(b)
    assert [op.task.name for op in a.operations] == ["j-0", "j-1"] and b.operations == []
    a.discard()
    assert ssn.nodes["n0"].used == Resource.zero()


def test_a_statement_that_evicts_nominates_its_pipelined_tasks() -> None:
    snap = cluster(1, cpu=2000)
    victim = running_task(snap, "victim", "n0", cpu=2000)
    preemptor = next(iter(add_job(snap, "p", cpu=2000).tasks.values()))
    ssn = open_session({}, [], snap)
    statement = ssn.statement()
    statement.evict(victim, "preempted")
    statement.pipeline(preemptor, "n0")
    statement.commit()
    committer = ssn.committer
    assert isinstance(committer, RecordingCommitter)
    assert committer.decisions == [
        ("evict", "default/victim-0", "preempted"),
        ("nominate", "default/p-0", "n0"),
    ]
    assert preemptor.status == TaskStatus.PIPELINED


def test_nominate_is_optional_for_a_committer() -> None:
    class BindOnly:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def bind(self, task: Any, node: str) -> None:
            self.seen.append(f"bind {task.name}")

        def evict(self, task: Any, reason: str) -> None:
            self.seen.append(f"evict {task.name}")

    snap = cluster(1, cpu=2000)
    victim = running_task(snap, "victim", "n0", cpu=2000)
    preemptor = next(iter(add_job(snap, "p", cpu=2000).tasks.values()))
    committer = BindOnly()
    ssn = open_session({}, [], snap, committer=committer)
    statement = ssn.statement()
    statement.evict(victim, "preempted")
    statement.pipeline(preemptor, "n0")
    assert statement.commit() == []
    assert committer.seen == ["evict victim-0"]


def test_explain_records_each_plugins_score_of_every_feasible_node() -> None:
    snap = cluster(3, cpu=2000)
    running_task(snap, "busy", "n2", cpu=2000)  # n2 is full: not feasible
    task = next(iter(add_job(snap, "j").tasks.values()))
    plugins = {
        "ten": make_plugin("Ten", node_score=lambda self, task, nodes: [10.0, 20.0, 30.0]),
        "one": make_plugin("One", node_score=lambda self, task, nodes: [1.0, 0.0, 5.0]),
    }
    ssn = open_session(plugins, [["ten"], ["one"]], snap)
    parts = ssn.node_score_parts(task)
    assert {k: v.tolist() for k, v in parts.items()} == {
        "ten": [10.0, 20.0, 30.0],
        "one": [1.0, 0.0, 5.0],
    }
    assert (parts["ten"] + parts["one"]).tolist() == ssn.node_scores(task).tolist()
    ssn.explain = True
    ssn.statement().allocate(task, "n1")
    assert ssn.placement_scores[task.uid] == {
        "n0": {"ten": 10.0, "one": 1.0, "total": 11.0},
        "n1": {"ten": 20.0, "one": 0.0, "total": 20.0},
    }
