"""The ``pre_bind`` extension point: every plugin, in tier order, for every allocation of a
committed statement before the first bind; a plugin's failure fails only that bind; the
committer gives the writer (ignored when it has none); and the pod's own reasons
(``PredicateResult.prefilter``) and a node's several reasons (``ReasonList``) in messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from pumice import PredicateResult, ReasonList, TaskStatus
from pumice.framework.committer import IGNORED_WRITES, RecordingCommitter
from pumice.framework.results import Feasibility, PredicatePart
from support.builders import add_job, cluster, make_plugin, open_session


def writer_plugin(name: str, log: list[Any]) -> Any:
    def pre_bind(self: Any, task: Any, node: str, writer: Any) -> None:
        log.append((name, task.name, node))
        writer.provision_volume(claim=f"default/{task.name}-data", node=node)

    return make_plugin(name, pre_bind=pre_bind)


def test_every_allocation_goes_through_every_plugin_before_the_first_bind() -> None:
    log: list[Any] = []

    class Watching(RecordingCommitter):
        def bind(self, task: Any, node: str) -> None:
            log.append(("bind", task.name, node))
            super().bind(task, node)

    snap = cluster()
    t0, t1 = add_job(snap, "j", tasks=2).tasks.values()
    committer = Watching()
    plugins = {"a": writer_plugin("a", log), "b": writer_plugin("b", log)}
    ssn = open_session(plugins, [["a"], ["b"]], snap, committer=committer)
    stmt = ssn.statement()
    stmt.allocate(t0, "n0")
    stmt.allocate(t1, "n1")
    assert stmt.commit() == []
    assert log == [
        ("a", "j-0", "n0"),
        ("b", "j-0", "n0"),
        ("a", "j-1", "n1"),
        ("b", "j-1", "n1"),
        ("bind", "j-0", "n0"),
        ("bind", "j-1", "n1"),
    ]
    assert committer.volume_writes == [
        ("default/j-0-data", None, "n0"),
        ("default/j-0-data", None, "n0"),
        ("default/j-1-data", None, "n1"),
        ("default/j-1-data", None, "n1"),
    ]


def test_a_plugin_that_fails_pre_bind_fails_only_that_bind() -> None:
    def refuse(self: Any, task: Any, node: str, writer: Any) -> None:
        if task.name.endswith("-1"):
            raise ValueError("no volume for it")

    snap = cluster()
    t0, t1 = add_job(snap, "j", tasks=2).tasks.values()
    committer = RecordingCommitter()
    ssn = open_session({"r": make_plugin("R", pre_bind=refuse)}, [["r"]], snap, committer=committer)
    stmt = ssn.statement()
    stmt.allocate(t0, "n0")
    stmt.allocate(t1, "n1")
    failures = stmt.commit()
    assert [(op.task.name, str(exc)) for op, exc in failures] == [("j-1", "no volume for it")]
    assert t0.status == TaskStatus.BINDING and t1.status == TaskStatus.PENDING
    assert ssn.nodes["n1"].used.is_empty()
    assert committer.decisions == [("bind", "default/j-0", "n0")]


def test_a_committer_without_a_writer_gives_one_that_ignores() -> None:
    seen: list[Any] = []

    def keep(self: Any, task: Any, node: str, writer: Any) -> None:
        seen.append(writer)
        writer.bind_volume(claim="default/data", volume="pv-1")

    class BindOnly:
        def bind(self, task: Any, node: str) -> None:
            seen.append(node)

        def evict(self, task: Any, reason: str) -> None:
            raise AssertionError("no eviction here")

    snap = cluster()
    task = next(iter(add_job(snap, "j").tasks.values()))
    ssn = open_session({"k": make_plugin("K", pre_bind=keep)}, [["k"]], snap, committer=BindOnly())
    stmt = ssn.statement()
    stmt.allocate(task, "n0")
    assert stmt.commit() == []
    assert seen == [IGNORED_WRITES, "n0"]


def test_the_pods_own_reason_is_the_whole_message_without_a_count() -> None:
    mask = np.zeros(3, dtype=np.bool_)
    taint = PredicatePart(
        "a", np.array([True, False, True]), "node(s) had untolerated taint {x: y}"
    )
    own = PredicatePart("b", mask, 'persistentvolumeclaim "data" not found', prefilter=True)
    feasibility = Feasibility(mask, parts=[taint, own])
    assert feasibility.message() == (
        '0/3 nodes are available: persistentvolumeclaim "data" not found.'
    )
    # a plugin answers with it as a PredicateResult
    result = PredicateResult(
        mask, "pod has unbound immediate PersistentVolumeClaims", prefilter=True
    )
    assert result.prefilter and result.reasons == "pod has unbound immediate PersistentVolumeClaims"


def test_a_node_with_several_reasons_counts_each() -> None:
    both = ReasonList(
        (
            "node(s) didn't match PersistentVolume's node affinity",
            "node(s) didn't find available persistent volumes to bind",
        )
    )
    reasons = np.array(
        [both, "node(s) didn't find available persistent volumes to bind", ""], dtype=object
    )
    mask = np.array([False, False, True])
    feasibility = Feasibility(mask, reasons=reasons)
    assert feasibility.message() == (
        "1/3 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity, "
        "2 node(s) didn't find available persistent volumes to bind."
    )
    assert str(both) == (
        "node(s) didn't match PersistentVolume's node affinity, "
        "node(s) didn't find available persistent volumes to bind"
    )
