"""Per-shape evaluation: after every placement the cached masks and scores equal a full
recomputation, for random clusters and random task shapes (the default plugins)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice import (
    ClusterSnapshot,
    Feasibility,
    JobInfo,
    NodeInfo,
    QueueInfo,
    Resource,
    StatementError,
    TaskInfo,
)
from pumice.framework.configfile import load_default_config
from pumice.framework.evaluation import ShapeCache
from pumice.framework.host import PluginHost
from pumice.framework.session import RecordingCommitter, Session
from support.nodes import container, pod, taint, term, toleration

GiB = 2**30
HOST = PluginHost.discover()

node_specs = st.lists(
    st.fixed_dictionaries(
        {
            "cpu": st.sampled_from([2000, 4000, 8000, 16000]),
            "memory": st.sampled_from([4 * GiB, 8 * GiB, 32 * GiB]),
            "gpu": st.sampled_from([0, 0, 2, 4]),
            "zone": st.sampled_from(["a", "b"]),
            "tainted": st.booleans(),
            "cordoned": st.integers(0, 9).map(lambda i: i == 0),
            "max_pods": st.sampled_from([3, 8, 110]),
        }
    ),
    min_size=2,
    max_size=12,
)
shape_specs = st.lists(
    st.fixed_dictionaries(
        {
            "cpu": st.sampled_from(["100m", "500m", "1", "3"]),
            "memory": st.sampled_from(["128Mi", "1Gi", "3Gi"]),
            "zone": st.sampled_from([None, "a", "b"]),
            "tolerates": st.booleans(),
            "port": st.sampled_from([None, None, 8080]),
            "prefer": st.sampled_from([None, "a", "b"]),
        }
    ),
    min_size=1,
    max_size=4,
)
steps = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 11), st.booleans()), max_size=25)


def make_node(i: int, spec: dict[str, Any]) -> NodeInfo:
    extra = {"nvidia.com/gpu": float(spec["gpu"])} if spec["gpu"] else {}
    return NodeInfo(
        f"n{i:02d}",
        Resource({"cpu": float(spec["cpu"]), "memory": float(spec["memory"]), **extra}),
        labels={"zone": spec["zone"]},
        taints=[taint("dedicated", "x")] if spec["tainted"] else (),
        unschedulable=spec["cordoned"],
        max_pods=spec["max_pods"],
    )


def make_pod(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    ports = [spec["port"]] if spec["port"] else []
    return pod(
        name,
        containers=[container(spec["cpu"], spec["memory"], host_ports=ports)],
        node_selector={"zone": spec["zone"]} if spec["zone"] else None,
        tolerations=[toleration("dedicated", "x")] if spec["tolerates"] else (),
        preferred=[(5, term({"key": "zone", "operator": "In", "values": [spec["prefer"]]}))]
        if spec["prefer"]
        else (),
    )


def full(session: Session, task: TaskInfo) -> tuple[Any, Any, Any, Any, Any]:
    """Mask, reasons, fit masks and scores from a cache that has never seen the task."""
    fresh = ShapeCache(
        session.table,
        session.shapes.predicates,
        [(n, h, True) for n, h in session.shapes.local_scorers],
        session.shapes.check,
    )
    parts, mask = fresh.predicate(task)
    now, future = fresh.fit(task)
    total = fresh.score_total(task)
    return mask.copy(), Feasibility(mask, parts=parts).reasons, now.copy(), future.copy(), total


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=node_specs, shapes=shape_specs, moves=steps)
def test_cached_evaluation_equals_full_recomputation(
    nodes: list[dict[str, Any]], shapes: list[dict[str, Any]], moves: list[tuple[int, int, bool]]
) -> None:
    snap = ClusterSnapshot.build(nodes=[make_node(i, s) for i, s in enumerate(nodes)])
    job = JobInfo(uid="default/j", name="j", min_available=1)
    tasks: list[list[TaskInfo]] = []
    for s, spec in enumerate(shapes):
        group = []
        for k in range(6):
            task = TaskInfo.from_pod(make_pod(f"s{s}-{k}", spec))
            job.add_task(task)
            group.append(task)
        tasks.append(group)
    snap.put_queue(QueueInfo("default"))
    snap.put_job(job)
    session = Session.open(snap, load_default_config(), HOST, committer=RecordingCommitter())
    statement = session.statement()
    used = [0] * len(shapes)
    for shape_index, node_index, pipeline in moves:
        shape_index %= len(shapes)
        # evaluate every shape through the cache, then compare with a full evaluation
        for group in tasks:
            probe = group[-1]
            # candidates first: one placement ago everything was current, so the one-row
            # path of the shape cache runs; then the parts on their own
            check_candidates(session, probe)
            feasibility = session.predicate(probe)
            now, future = session.fit(probe)
            scores = session.shapes.score_total(probe)
            mask, reasons, full_now, full_future, total = full(session, probe)
            assert np.array_equal(feasibility.mask, mask)
            assert list(feasibility.reasons) == list(reasons)
            assert np.array_equal(now, full_now) and np.array_equal(future, full_future)
            assert total is not None and np.array_equal(scores, total)
        group = tasks[shape_index]
        if used[shape_index] >= len(group) - 1:
            continue
        task = group[used[shape_index]]
        node = session.table.nodes[node_index % len(session.table)].name
        try:
            if pipeline:
                statement.pipeline(task, node)
            else:
                statement.allocate(task, node)
        except StatementError:
            continue
        used[shape_index] += 1
    statement.discard()  # every row changes back: the caches follow removals too
    for group in tasks:
        check_candidates(session, group[-1])
    session.close()


def check_candidates(session: Session, task: TaskInfo) -> None:
    """The shape's kept candidates equal ones made afresh, and the node chosen from them is
    ``best_node`` over ``node_scores`` on the same mask."""
    cands = session.candidates(task)
    mask, _, now, future, _ = full(session, task)
    assert np.array_equal(cands.future, mask & future)
    assert np.array_equal(cands.now, mask & future & now)
    assert cands.future_count == int((mask & future).sum())
    assert cands.now_count == int((mask & future & now).sum())
    summed = session.shapes.score_total(task).copy()
    for extra in cands.extras:
        summed += extra
    assert np.array_equal(cands.best_future, np.where(cands.future, summed, -np.inf))
    assert np.array_equal(cands.best_now, np.where(cands.now, summed, -np.inf))
    for is_now, candidates in ((True, cands.now.copy()), (False, cands.future.copy())):
        expected = session.best_node(task, session.node_scores(task, candidates), candidates)
        if not candidates.any():
            expected = None
        assert session.choose_node(task, session.candidates(task), is_now) == expected
