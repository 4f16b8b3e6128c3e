"""Keyed shape entries give up their vectors beyond ``KEPT_KEYED`` and answer the same when
asked again; a rescore that moves a few rows equals one in full."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from pumice import NodeTable, Plugin, PredicateResult, TaskInfo, hookimpl
from pumice.framework import onerow
from pumice.framework.candidates import full_candidates
from support.builders import add_job, cluster, open_session


class Neighbour(Plugin):
    """Row r passes while row r + 1 holds no pod; tasks are keyed by their job's name."""

    def __init__(self, arguments: Any) -> None:
        super().__init__(arguments)
        self.log: list[tuple[int, int]] = []

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult:
        picked = np.arange(len(nodes)) if rows is None else rows
        nxt = np.minimum(picked + 1, len(nodes) - 1)
        ok = (nodes.pod_count[nxt] == 0) | (picked == len(nodes) - 1)
        return PredicateResult(ok, "neighbour busy")

    @hookimpl
    def session_open(self, session: Any) -> None:
        self.table = session.table

    @hookimpl
    def on_allocate(self, task: TaskInfo) -> None:
        self.log.append((self.table.version, self.table.row(task.node_name or "") - 1))

    @hookimpl
    def stale_rows(self, task: TaskInfo, nodes: NodeTable, since: int) -> Any:
        rows = [row for version, row in self.log if version > since and row >= 0]
        return np.array(rows, dtype=np.int64)

    @hookimpl
    def shape_key(self, task: TaskInfo) -> Any:
        return task.name.split("-")[0]


def answers(kept: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[bool], list[bool], bool]:
    """Tasks of two keys (j, k) asked in turn, a placement between: the masks of j's second
    task and of k's task afterwards, and whether j's entry still held its candidates once k's
    entry was evaluated."""
    monkeypatch.setattr(onerow, "KEPT_KEYED", kept)
    snap = cluster(20)
    job = add_job(snap, "j", tasks=2, cpu=100)
    other = add_job(snap, "k", tasks=1, cpu=100)
    session = open_session({"neighbour": Neighbour}, [["neighbour"]], snap)
    first, second = sorted(job.tasks.values(), key=lambda t: t.name)
    (probe,) = other.tasks.values()
    session.candidates(second)
    session.candidates(probe)
    held = session.shapes.entry(second).candidates is not None
    session.statement().allocate(first, "n5")
    return list(session.candidates(second).future), list(session.candidates(probe).future), held


def test_an_entry_beyond_the_limit_gives_up_its_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    assert answers(1, monkeypatch)[2] is False
    assert answers(2, monkeypatch)[2] is True


def test_an_entry_that_gave_up_its_vectors_answers_as_one_that_kept_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stripped = answers(1, monkeypatch)[:2]
    kept = answers(256, monkeypatch)[:2]
    expected = [row != 4 for row in range(20)]
    assert stripped == kept == (expected, expected)


def test_a_rescore_on_the_rows_that_moved_equals_one_in_full() -> None:
    rng = np.random.default_rng(19)
    n = 400
    mask, fit_now, fit_future = (rng.random(n) < p for p in (0.8, 0.6, 0.9))
    total = rng.random(n) * 100
    flat = np.full(n, 100.0)
    moved = flat.copy()
    moved[[3, 17, 250]] = [0.0, 50.0, 125.5]  # a score that moved on three nodes
    for extras, then in (((flat,), (moved,)), ((flat, moved), (moved, flat)), ((), (moved,))):
        cands = full_candidates(mask, fit_now, fit_future, total, extras)
        cands.rescore(total, then)
        fresh = full_candidates(mask, fit_now, fit_future, total, then)
        assert cands.extras == then
        assert np.array_equal(cands.best_future, fresh.best_future)
        assert np.array_equal(cands.best_now, fresh.best_now)
    wide = np.arange(n, dtype=np.float64)  # differs on every row: rescored in full
    cands = full_candidates(mask, fit_now, fit_future, None, (flat,))
    cands.rescore(None, (wide,))
    fresh = full_candidates(mask, fit_now, fit_future, None, (wide,))
    assert np.array_equal(cands.best_now, fresh.best_now)
