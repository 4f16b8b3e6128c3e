"""Row functions (``Plugin.predicate_row`` / ``node_score_row``): the shape cache's one-row path
calls them instead of the hooks. Each built-in one answers exactly as its hook does for the row
(random clusters, with pods placed); the one-row path uses them; a row-local plugin without
them, or at odds with its full answer, keeps the one-row path on the hook calls, and the
candidates stay equal to a full evaluation either way."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice import (
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    NodeTable,
    Plugin,
    PredicateResult,
    QueueInfo,
    Resource,
    RowPredicate,
    StatementError,
    TaskInfo,
    hookimpl,
)
from pumice.framework.candidates import FULL_REFRESH_FRACTION
from pumice.framework.configfile import load_default_config
from pumice.framework.evaluation import ShapeCache
from pumice.framework.host import PluginHost
from pumice.framework.onerow import FEW_ROWS, BaseProgram, PredicateProgram
from pumice.framework.session import RecordingCommitter, Session
from support.builders import make_config
from support.links import ZONE, job_of, link_pod, links_snapshot, spread, zoned_nodes
from support.nodes import container, pod, taint, toleration

GiB = 2**30
HOST = PluginHost.discover()

nodes_strategy = st.lists(
    st.tuples(
        st.sampled_from([1000, 2000, 8000]),  # cpu
        st.sampled_from([2 * GiB, 8 * GiB]),  # memory
        st.sampled_from([0, 0, 2]),  # GPUs
        st.booleans(),  # tainted
        st.integers(0, 5).map(lambda i: i == 0),  # cordoned
        st.sampled_from([2, 4, 110]),  # max pods
    ),
    min_size=2,
    max_size=8,
)
task_strategy = st.tuples(
    st.sampled_from(["100m", "500m", "1500m"]),
    st.sampled_from(["256Mi", "1Gi", "3Gi"]),
    st.booleans(),  # node selector
    st.booleans(),  # tolerates the taint
    st.booleans(),  # host port
    st.sampled_from([0, 0, 1]),  # GPUs
)


def make_snapshot(specs: list[Any]) -> ClusterSnapshot:
    nodes = []
    for i, (cpu, memory, gpus, tainted, cordoned, max_pods) in enumerate(specs):
        extra = {"nvidia.com/gpu": float(gpus)} if gpus else {}
        nodes.append(
            NodeInfo(
                f"n{i}",
                Resource({"cpu": float(cpu), "memory": float(memory), **extra}),
                labels={"parity": str(i % 2)},
                taints=[taint("dedicated", "x")] if tainted else (),
                unschedulable=cordoned,
                max_pods=max_pods,
            )
        )
    return ClusterSnapshot.build(nodes=nodes, queues=[QueueInfo("default")])


def make_task(name: str, spec: Any) -> TaskInfo:
    cpu, memory, selector, tolerates, port, gpus = spec
    main = container(cpu, memory, host_ports=[8080] if port else [])
    if gpus:
        main["resources"]["requests"]["nvidia.com/gpu"] = str(gpus)
    return TaskInfo.from_pod(
        pod(
            name,
            containers=[main],
            node_selector={"parity": "0"} if selector else None,
            tolerations=[toleration("dedicated", "x")] if tolerates else (),
        )
    )


def default_session(snap: ClusterSnapshot, tasks: list[TaskInfo], **kwargs: Any) -> Session:
    job = JobInfo(uid="default/j", name="j", min_available=1)
    for task in tasks:
        job.add_task(task)
    snap.put_job(job)
    config = kwargs.pop("config", None) or load_default_config()
    host = kwargs.pop("host", HOST)
    return Session.open(snap, config, host, committer=RecordingCommitter(), **kwargs)


def plugin(session: Session, name: str) -> Any:
    return next(p for _, option, p in session.plugins if option.name == name)


def one_row(answer: Any) -> tuple[bool, str]:
    if isinstance(answer, PredicateResult):
        mask, reasons = answer.mask, answer.reasons
    else:
        mask, reasons = answer, ""
    ok = bool(np.asarray(mask)[0])
    return ok, "" if ok else (reasons if isinstance(reasons, str) else str(reasons[0]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=nodes_strategy, specs=st.lists(task_strategy, min_size=1, max_size=3), data=st.data())
def test_builtin_row_functions_answer_as_their_hooks(
    nodes: list[Any], specs: list[Any], data: st.DataObject
) -> None:
    tasks = [make_task(f"t{i}", spec) for i, spec in enumerate(specs)]
    placed = [make_task(f"p{i}", specs[i % len(specs)]) for i in range(4)]
    session = default_session(make_snapshot(nodes), tasks + placed)
    table = session.table
    statement = session.statement()
    for task in placed:  # pods on the nodes: pod counts, used resources, host ports
        row = data.draw(st.integers(0, len(table) - 1))
        with contextlib.suppress(StatementError):
            statement.allocate(task, table.nodes[row].name)
    predicates = plugin(session, "predicates")
    scorers = [plugin(session, "binpack"), plugin(session, "nodeorder")]
    for task in tasks:
        full = predicates.predicate(task, table, None)
        reason_of = predicates.predicate_row(task, table)
        for row in range(len(table)):
            reason = reason_of(row)
            hook = one_row(predicates.predicate(task, table, np.array([row])))
            assert hook == (not reason, reason)
            assert bool(full.mask[row]) == (not reason)
            if reason:
                why = full.reasons
                assert reason == (why if isinstance(why, str) else why[row])
        for scorer in scorers:
            score_of = scorer.node_score_row(task, table)
            vector = scorer.node_score(task, table, None)
            if score_of is None:  # no row function for this shape (a GPU task for nodeorder)
                assert vector is not None and task.resreq["nvidia.com/gpu"] > 0
                continue
            for row in range(len(table)):
                value = score_of(row)
                assert type(value) is float
                assert value == float(vector[row])  # bit for bit: ties stay ties
                assert value == float(scorer.node_score(task, table, np.array([row])))


def test_the_one_row_path_runs_the_row_functions_and_they_are_clocked() -> None:
    snap = make_snapshot([(8000, 8 * GiB, 0, False, False, 110)] * 4)
    tasks = [make_task(f"t{i}", ("500m", "1Gi", False, False, False, 0)) for i in range(3)]
    session = default_session(snap, tasks, time_hooks=True)
    statement = session.statement()
    shapes = session.shapes
    for task in tasks[:2]:
        cands = session.candidates(task)
        node = session.choose_node(task, cands, True)
        assert node is not None
        statement.allocate(task, node)
    calls = session.hook_time[("binpack", "node_score")].calls
    session.candidates(tasks[2])  # one placement ago: the one-row path
    entry = shapes.entry(tasks[2])
    assert isinstance(entry.predicate_program, PredicateProgram)
    assert isinstance(entry.base_program, BaseProgram)
    assert session.hook_time[("binpack", "node_score")].calls == calls + 1
    assert_candidates_are_fresh(session, tasks[2])


class EvenRows(Plugin):
    """Row-local, without row functions: even rows only."""

    row_local_reads_queue = False

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult:
        picked = np.arange(len(nodes)) if rows is None else rows
        return PredicateResult(picked % 2 == 0, "odd row")


class Contrary(EvenRows):
    """Has a row function, yet its predicate has no opinion: the row function is not used."""

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult | None:
        return None

    def predicate_row(self, task: TaskInfo, nodes: NodeTable) -> RowPredicate:
        return lambda row: "never asked"


def test_a_plugin_without_row_functions_keeps_the_one_row_path_on_hook_calls() -> None:
    for extra in (EvenRows, Contrary):
        host = PluginHost.discover()
        host.register("extra", extra)
        tiers = [[p.name for p in tier.plugins] for tier in load_default_config().tiers]
        config = make_config([*tiers[:-1], [*tiers[-1], "extra"]], actions=("allocate",))
        snap = make_snapshot([(8000, 8 * GiB, 0, False, False, 110)] * 6)
        tasks = [make_task(f"t{i}", ("500m", "1Gi", False, False, False, 0)) for i in range(4)]
        session = default_session(snap, tasks, config=config, host=host)
        statement = session.statement()
        for task in tasks[:3]:
            cands = session.candidates(task)
            assert_candidates_are_fresh(session, task)
            node = session.choose_node(task, cands, True)
            assert node is not None
            assert extra is Contrary or session.table.row(node) % 2 == 0
            statement.allocate(task, node)
        session.candidates(tasks[3])
        assert session.shapes.entry(tasks[3]).predicate_program is False
        assert_candidates_are_fresh(session, tasks[3])


def assert_candidates_are_fresh(session: Session, task: TaskInfo) -> None:
    """The kept candidates equal those of a cache that has never seen the task."""
    cands = session.candidates(task)
    shapes = session.shapes
    fresh = ShapeCache(
        session.table,
        shapes.predicates,
        [(n, h, True) for n, h in shapes.local_scorers],
        shapes.check,
    )
    _, mask = fresh.predicate(task)
    now, future = fresh.fit(task)
    total = fresh.score_total(task)
    assert np.array_equal(cands.future, mask & future)
    assert np.array_equal(cands.now, mask & future & now)
    assert cands.future_count == int((mask & future).sum())
    summed = np.zeros(len(mask)) if total is None else total.copy()
    for extra in cands.extras:
        summed += extra
    assert np.array_equal(cands.best_now, np.where(cands.now, summed, -np.inf))
    assert np.array_equal(cands.best_future, np.where(cands.future, summed, -np.inf))


def test_a_zone_spread_refreshes_its_zone_by_vector_beside_the_row_functions() -> None:
    """A zone spread's placement makes its whole zone's predicates stale: more rows than the
    row functions take one by one (``FEW_ROWS``), fewer than an eighth of the table. The
    placed row goes through the program, the rest of the zone through the predicate hook as
    a vector; the candidates equal a full evaluation after every placement."""
    zones = 13
    per_zone = FEW_ROWS + 16
    nodes = zoned_nodes(zones * per_zone, zones=zones)
    app = {"app": "spread"}
    pods = [link_pod(f"s{i}", app, spreads=[spread(app, key=ZONE)], cpu="500m") for i in range(8)]
    job = job_of("spread", pods, min_available=1)
    snap = links_snapshot(nodes, [job])
    assert per_zone * FULL_REFRESH_FRACTION <= len(snap.table)
    session = Session.open(snap, load_default_config(), HOST, committer=RecordingCommitter())
    statement = session.statement()
    tasks = sorted(session.jobs[job.uid].tasks.values(), key=lambda t: t.name)
    zones_used = []
    for placed, task in enumerate(tasks):
        cands = session.candidates(task)
        assert_candidates_are_fresh(session, task)
        if placed:  # one placement ago: the one-row path, with the programs
            assert isinstance(session.shapes.entry(task).predicate_program, PredicateProgram)
        node = session.choose_node(task, cands, True)
        assert node is not None
        statement.allocate(task, node)
        zones_used.append(session.nodes[node].labels[ZONE])
    # maxSkew 1 over 13 zones: eight pods in eight different zones
    assert len(set(zones_used)) == len(tasks)


def test_a_shape_asked_after_others_placed_brings_its_fit_and_scores_up_by_program() -> None:
    """Shape a is placed twice (its programs are made), then shape b three times on other
    rows; asked for its fit masks and scores, shape a refreshes the rows b changed with its
    program, and they equal a full evaluation (40 nodes: three changed rows are too few for
    a full evaluation)."""
    snap = make_snapshot([(8000, 8 * GiB, 0, False, False, 110)] * 40)
    first = [make_task(f"a{i}", ("500m", "1Gi", False, False, False, 0)) for i in range(3)]
    second = [make_task(f"b{i}", ("1500m", "3Gi", False, False, False, 0)) for i in range(3)]
    session = default_session(snap, first + second)
    statement = session.statement()
    for task in first[:2]:
        cands = session.candidates(task)
        node = session.choose_node(task, cands, True)
        assert node is not None
        statement.allocate(task, node)
    session.candidates(first[2])  # the one-row path: the programs are made
    assert isinstance(session.shapes.entry(first[2]).base_program, BaseProgram)
    for row, task in zip((5, 6, 7), second, strict=True):
        statement.allocate(task, session.table.nodes[row].name)
    now, future = session.fit(first[2])
    total = session.shapes.score_total(first[2])
    fresh = ShapeCache(
        session.table,
        session.shapes.predicates,
        [(n, h, True) for n, h in session.shapes.local_scorers],
        session.shapes.check,
    )
    fresh_now, fresh_future = fresh.fit(first[2])
    assert np.array_equal(now, fresh_now) and np.array_equal(future, fresh_future)
    fresh_total = fresh.score_total(first[2])
    assert total is not None and fresh_total is not None
    assert np.array_equal(total, fresh_total)
    for name, vector in session.shapes.scores(first[2]).items():
        assert np.array_equal(vector, fresh.scores(first[2])[name])
