"""The shape cache's two additive hooks: ``shape_key`` keeps tasks apart, ``stale_rows``
refreshes rows that another row's change made stale."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import NodeTable, Plugin, PredicateResult, TaskInfo, hookimpl
from support.builders import add_job, cluster, open_session


class Neighbour(Plugin):
    """Row r passes while row r + 1 holds no pod (not row-local in the plain sense); with
    ``honest`` it reports the rows it made stale."""

    honest = True
    calls: list[int | None]

    def __init__(self, arguments: Any) -> None:
        super().__init__(arguments)
        self.calls = []
        self.log: list[tuple[int, int]] = []

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult:
        self.calls.append(None if rows is None else len(rows))
        picked = np.arange(len(nodes)) if rows is None else rows
        nxt = np.minimum(picked + 1, len(nodes) - 1)
        ok = (nodes.pod_count[nxt] == 0) | (picked == len(nodes) - 1)
        return PredicateResult(ok, "neighbour busy")

    @hookimpl
    def on_allocate(self, task: TaskInfo) -> None:
        row = self.table.row(task.node_name or "")
        self.log.append((self.table.version, row - 1))

    @hookimpl
    def session_open(self, session: Any) -> None:
        self.table = session.table

    @hookimpl
    def stale_rows(self, task: TaskInfo, nodes: NodeTable, since: int) -> Any:
        if not self.honest:
            return None
        rows = [row for version, row in self.log if version > since and row >= 0]
        return np.array(rows, dtype=np.int64)

    @hookimpl
    def shape_key(self, task: TaskInfo) -> Any:
        return task.name.split("-")[0]


class Dishonest(Neighbour):
    honest = False


def masks(plugin: type[Plugin]) -> tuple[list[bool], list[bool]]:
    snap = cluster(20)
    job = add_job(snap, "j", tasks=2, cpu=100)
    other = add_job(snap, "k", tasks=1, cpu=100)
    session = open_session({"neighbour": plugin}, [["neighbour"]], snap)
    first, second = sorted(job.tasks.values(), key=lambda t: t.name)
    (probe,) = other.tasks.values()
    session.candidates(second)
    session.candidates(probe)
    session.statement().allocate(first, "n5")
    return list(session.candidates(second).future), list(session.candidates(probe).future)


def test_stale_rows_are_refreshed_with_the_changed_one() -> None:
    expected = [row != 4 for row in range(20)]
    assert masks(Neighbour) == (expected, expected)


def test_without_stale_rows_the_cache_would_keep_the_old_answer() -> None:
    second, probe = masks(Dishonest)
    assert second[4] and probe[4]  # what the contract guards against


def test_shape_key_keeps_tasks_of_one_shape_apart() -> None:
    snap = cluster(3)
    add_job(snap, "j", tasks=1, cpu=100)
    add_job(snap, "k", tasks=1, cpu=100)
    session = open_session({"neighbour": Neighbour}, [["neighbour"]], snap)
    tasks = [t for job in snap.jobs.values() for t in job.tasks.values()]
    entries = {id(session.shapes.entry(t)) for t in tasks}
    assert len(entries) == 2
    assert session.shapes.entry(tasks[0]).base is session.shapes.entry(tasks[1]).base


def test_merge_rows_is_the_sorted_union() -> None:
    """The changed row and the stale rows merged as np.unique would, on every branch: the
    row among the stale ones, the row not among them, no row, and unsorted stale rows."""
    from pumice.framework.candidates import merge_rows

    stale = np.array([3, 5, 9], dtype=np.int64)
    for rows, extra in (
        ([5], stale),
        ([4], stale),
        ([0], stale),
        ([12], stale),
        ([], stale),
        ([4], np.array([9, 3, 5], dtype=np.int64)),
        ([1, 7], stale),
    ):
        changed = np.array(rows, dtype=np.int64)
        expected = np.unique(np.concatenate([changed, extra]))
        assert merge_rows(changed, extra).tolist() == expected.tolist()
