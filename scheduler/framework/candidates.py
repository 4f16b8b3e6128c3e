"""A shape's candidate nodes: where its tasks may go now and later, with their summed scores;
and the ``ShapeEntry`` that holds them with everything else the session knows of the shape.

Kept per shape by ``pumice.framework.evaluation.ShapeCache`` beside the predicate masks, fit
masks and scores they are made of, and refreshed on the same changed rows (worked out here
too: ``rows_changed``, ``merge_rows``); allocate chooses from them
(``pumice.framework.placement``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pumice.framework.hookcalls import read_only
from pumice.framework.results import Feasibility, PredicatePart
from pumice.framework.rowprograms import BaseProgram, PredicateProgram
from pumice.model.node import FIT_TOLERANCE, NodeTable
from pumice.model.objects import TaskInfo
from pumice.model.table import BoolVector, FloatVector, IntVector


@dataclass(slots=True)
class Candidates:
    """Where a shape may go now and later, with the summed scores there; the cache's own
    vectors, kept current row by row (read them, never change them).

    ``future``: every predicate passes and the request fits the future idle resources;
    ``now``: and the idle ones too. ``best_future`` / ``best_now`` hold, on those rows, the
    row-local scores' total plus each vector of ``extras`` (per-task scores that a plugin
    answered as the same read-only vector as before, so they can be kept too), summed in
    that order, and ``-inf`` elsewhere: the values ``Session.best_node`` would compare.
    """

    future: BoolVector
    now: BoolVector
    future_count: int
    now_count: int
    best_future: FloatVector
    best_now: FloatVector
    extras: tuple[FloatVector, ...] = ()
    version: int = 0
    _views: tuple[BoolVector, BoolVector] | None = None
    parts: list[PredicatePart] = field(default_factory=list)
    """The predicate plugins' parts behind ``future`` (for the reasons of a task that fails)."""

    def view(self, now: bool) -> BoolVector:
        """A read-only view of ``now`` or ``future`` (made once: the arrays change in place)."""
        views = self._views
        if views is None:
            views = self._views = (read_only(self.now), read_only(self.future))
        return views[0] if now else views[1]

    def rescore(self, total: FloatVector | None, extras: tuple[FloatVector, ...]) -> None:
        """Set both best-score vectors from the row-local ``total`` and ``extras``: only on
        the rows where the new extras differ from the ones in (a per-task score that moved
        on a few nodes, as a pod-to-pod affinity score does), else in full. ``total`` must
        be the total the vectors were last made with (the candidates are current)."""
        rows = self._differing_rows(extras)
        if rows is None:
            summed = total_plus(total, extras, len(self.future))
            self.best_future, self.best_now = _best(self.future, self.now, summed)
        elif len(rows):
            # the same sums in the same order as ``total_plus``, on those rows alone
            part = np.zeros(len(rows)) if total is None else total[rows]
            for extra in extras:
                part = part + extra[rows]
            self.best_future[rows] = np.where(self.future[rows], part, -np.inf)
            self.best_now[rows] = np.where(self.now[rows], part, -np.inf)
        self.extras = extras

    def _differing_rows(self, extras: tuple[FloatVector, ...]) -> IntVector | None:
        """The rows where ``extras`` differ from the extras in, ascending; None when they
        differ on too many rows (or in number) for a partial rescore to pay."""
        known = self.extras
        if len(known) != len(extras):
            return None
        differ: BoolVector | None = None
        for old, new in zip(known, extras, strict=True):
            if old is not new:
                if len(old) != len(new):
                    return None
                changed = old != new
                differ = changed if differ is None else differ | changed
        if differ is None:
            return NO_ROWS
        rows = np.flatnonzero(differ)
        return None if len(rows) * FULL_REFRESH_FRACTION > len(self.future) else rows

    def feasibility(self) -> Feasibility:
        """What the predicates said: the mask and, on demand, each node's first reason."""
        mask = np.ones(len(self.future), dtype=np.bool_)
        for part in self.parts:
            mask &= part.mask
        return Feasibility(mask, parts=self.parts)


def total_plus(total: FloatVector | None, extras: Sequence[FloatVector], n: int) -> FloatVector:
    """The row-local total plus each extra, in order (as ``Session.node_scores`` adds)."""
    if total is not None and len(extras) == 1:
        return total + extras[0]  # the common case: one pass, the same sums
    summed = np.zeros(n) if total is None else total.copy()
    for extra in extras:
        summed += extra
    return summed


def full_candidates(
    mask: BoolVector,
    fit_now: BoolVector,
    fit_future: BoolVector,
    total: FloatVector | None,
    extras: tuple[FloatVector, ...],
) -> Candidates:
    future = mask & fit_future
    now = future & fit_now
    best_future, best_now = _best(future, now, total_plus(total, extras, len(mask)))
    return Candidates(
        future=future,
        now=now,
        future_count=int(np.count_nonzero(future)),
        now_count=int(np.count_nonzero(now)),
        best_future=best_future,
        best_now=best_now,
        extras=extras,
    )


def _best(
    future: BoolVector, now: BoolVector, summed: FloatVector
) -> tuple[FloatVector, FloatVector]:
    """The summed scores on the future and on the now candidates, ``-inf`` elsewhere.
    ``summed`` (a vector of the caller's own) becomes the first: one vector fewer to make."""
    best_now = np.where(now, summed, -np.inf)
    np.copyto(summed, -np.inf, where=~future)
    return summed, best_now


def refresh_candidate_row(
    cands: Candidates,
    row: int,
    mask: BoolVector,
    fit_now: BoolVector,
    fit_future: BoolVector,
    total: FloatVector | None,
) -> None:
    """One changed row in Python scalars: the same IEEE sums as the vector path."""
    future = bool(mask[row]) and bool(fit_future[row])
    now = future and bool(fit_now[row])
    if future != cands.future.item(row):  # Python bools: numpy's compare costs more
        cands.future[row] = future
        cands.future_count += 1 if future else -1
    if now != cands.now.item(row):
        cands.now[row] = now
        cands.now_count += 1 if now else -1
    score = 0.0 if total is None else float(total[row])
    for extra in cands.extras:
        score += float(extra[row])
    cands.best_future[row] = score if future else -np.inf
    cands.best_now[row] = score if now else -np.inf


def refresh_candidate_rows(
    cands: Candidates,
    rows: IntVector,
    mask: BoolVector,
    fit_now: BoolVector,
    fit_future: BoolVector,
    total: FloatVector | None,
) -> None:
    passed = mask[rows]
    if not np.count_nonzero(passed):
        # every row rejected (a zone that a spread constraint closed): no candidate there,
        # whatever the fit and the scores, which are not gathered; the values of the general
        # case below (a row that was no candidate holds -inf in both best vectors already)
        lost = int(np.count_nonzero(cands.future[rows]))
        if lost:
            cands.future_count -= lost
            cands.now_count -= int(np.count_nonzero(cands.now[rows]))
            cands.future[rows] = False
            cands.now[rows] = False
            cands.best_future[rows] = -np.inf
            cands.best_now[rows] = -np.inf
        return
    future = passed & fit_future[rows]
    now = future & fit_now[rows]
    cands.future_count += int(np.count_nonzero(future)) - int(np.count_nonzero(cands.future[rows]))
    cands.now_count += int(np.count_nonzero(now)) - int(np.count_nonzero(cands.now[rows]))
    cands.future[rows] = future
    cands.now[rows] = now
    score = np.zeros(len(rows)) if total is None else total[rows]
    for extra in cands.extras:
        score = score + extra[rows]
    cands.best_future[rows] = np.where(future, score, -np.inf)
    cands.best_now[rows] = np.where(now, score, -np.inf)


_REASON_TEMPLATES: dict[tuple[int, str], npt.NDArray[np.object_]] = {}


def reasons_vector(n: int, reason: str) -> npt.NDArray[np.object_]:
    """A fresh object vector of ``n`` entries, each ``reason`` (a predicate part's reasons,
    once its rows disagree): a copy of a template kept per (n, reason), about three times
    cheaper than ``np.full``, which sets every entry one by one (made once per shape that
    rejects a node: hundreds of times a session with pod-to-pod constraints)."""
    key = (n, reason)
    template = _REASON_TEMPLATES.get(key)
    if template is None:
        if len(_REASON_TEMPLATES) >= 64:
            _REASON_TEMPLATES.clear()
        template = _REASON_TEMPLATES[key] = np.full(n, reason, dtype=object)
    return template.copy()


# -- rows to refresh ------------------------------------------------------------------------

FULL_REFRESH_FRACTION = 8
"""Refresh in full when more than 1/8 of the rows changed since the cached evaluation."""

NO_ROWS = np.zeros(0, dtype=np.int64)


def rows_changed(table: NodeTable, since: int) -> IntVector | None:
    """Distinct rows changed since version ``since``, ascending; None when a full evaluation
    is due."""
    if since == table.version:
        return NO_ROWS
    changed = table.changed_rows(since)
    if len(changed) * FULL_REFRESH_FRACTION > len(table):
        return None
    return np.array(sorted(set(changed)), dtype=np.int64)


def merge_rows(rows: IntVector, extra: IntVector) -> IntVector:
    """``rows`` and ``extra`` as one ascending vector of distinct rows. The common case after
    a placement, one changed row beside one domain's rows (ascending already), is merged
    without sorting (the answer may then be ``extra`` itself: read it, never change it)."""
    if len(rows) <= 1 and len(extra) > 1 and bool((extra[1:] > extra[:-1]).all()):
        if not len(rows):
            return extra
        row = rows[0]
        at = int(np.searchsorted(extra, row))
        if at < len(extra) and extra[at] == row:
            return extra
        return np.insert(extra, at, row)
    return np.unique(np.concatenate([rows, extra]))


def fit_mask(
    table: NodeTable, request: FloatVector, quantity: str, rows: IntVector | None
) -> BoolVector:
    """Where ``request`` fits ``quantity`` (idle or future_idle), column by column."""
    n = len(table) if rows is None else len(rows)
    fits = np.ones(n, dtype=np.bool_)
    for index, dim in enumerate(table.dims):
        # every dimension: a node overcommitted in one the task does not ask for fits nothing
        column = table.column(quantity, dim)
        assert column is not None
        values = column if rows is None else column[rows]
        fits &= values >= request[index] - FIT_TOLERANCE
    return fits


@dataclass(slots=True)
class ShapeEntry:
    """What the session knows of one shape; each part records the table version it is
    current at (all are dropped when the table's epoch changes)."""

    epoch: int
    task: TaskInfo
    """The first task of this shape: every plugin call for the shape is made with it, so a
    plugin's own per-task caches hit on every refresh (the answer depends only on the shape)."""
    parts: list[PredicatePart] | None = None
    parts_by_name: dict[str, PredicatePart] = field(default_factory=dict)
    """``parts`` by plugin name (set with them)."""
    mask: BoolVector | None = None
    mask_version: int = 0
    fit_now: BoolVector | None = None
    fit_future: BoolVector | None = None
    fit_version: int = 0
    scores: dict[str, FloatVector] = field(default_factory=dict)
    score_total: FloatVector | None = None
    score_version: int = 0
    candidates: Candidates | None = None
    borrowed: bool = False
    """Made as another entry's base and not yet any task's own entry (its ``task`` then has
    a ``shape_key``: fit and scores do not mind, predicates would)."""
    base: ShapeEntry | None = None
    """The entry of the same shape without the plugins' ``shape_key`` parts, which holds the
    fit masks and row-local scores (None: this entry is its own base). Tasks that
    ``shape_key`` tells apart get their own predicate masks and candidates but share the
    rest, which depends on the shape alone."""
    predicate_program: PredicateProgram | bool | None = None
    """The row predicates of the one-row path (``pumice.framework.onerow``); None: not made
    yet, False: cannot be made for the current parts."""
    base_program: BaseProgram | bool | None = None
    """On a base entry: its fit test and row scores, likewise."""


def base_of(entry: ShapeEntry) -> ShapeEntry:
    """Where ``entry``'s fit masks and row-local scores live."""
    return entry if entry.base is None else entry.base
