"""The shape cache's few-rows path: a shape's candidates refreshed row by row, in scalars.

After a placement, each cached shape has the rows changed since it was last asked to refresh
(the one row of the placement, for the next task of the same shape; a few rows, for a shape
whose last task was placed a few placements ago). Over a few rows, numpy's per-call cost is
more than the arithmetic, so ``few_rows_candidates`` refreshes them one by one.

With row functions. A plugin may hand the session a *row function* per shape
(``Plugin.predicate_row`` / ``node_score_row``), made once with everything that depends only on
the shape worked out. The session keeps, per shape entry, *programs*: each plugin's row
function beside the part or score vector it refreshes, in plugin order, and the fit test of
the request (``predicate_program``, ``base_program``). ``refresh_rows`` runs them and updates
the entry's predicate parts and mask, its base's fit masks and score vectors, and the
candidates in one pass per row, with Python scalars, in the same order and with the same IEEE
arithmetic as the vector path (so every number, and therefore every decision, is the same).
Up to ``FEW_ROWS`` rows, the rows ``stale_rows`` reports included.

A program is made only when every row-local plugin has a row function for the shape, or agrees
(answering None) that it has no opinion on it, exactly as its full answer said. A program is
bound to the parts, the score vectors and the table layout it was made for, and made again
when any of them is replaced (a full evaluation, a new dimension, a grown table).

Without row functions, only a single changed row is refreshed here, by calling the hooks with
a one-row ``rows`` (and the stale rows' predicates with a vector). Anything else is left to
``ShapeCache.candidates``, which refreshes part by part with vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from pumice.framework.candidates import (
    FULL_REFRESH_FRACTION,
    Candidates,
    ShapeEntry,
    merge_rows,
    reasons_vector,
    refresh_candidate_row,
    refresh_candidate_rows,
)
from pumice.framework.results import PredicatePart, PredicateResult
from pumice.framework.rowprograms import (
    BaseProgram,
    PredicateProgram,
    RowMaker,
    base_program,
    predicate_program,
)
from pumice.model.node import NodeTable
from pumice.model.objects import TaskInfo
from pumice.model.table import IntVector

_NEG_INF = -np.inf

FEW_ROWS = 64
"""Up to this many changed rows are refreshed one by one with the row functions (numpy's
per-call cost over a few rows is more than the scalar arithmetic); more, part by part."""
FEW_CHANGES = 4 * FEW_ROWS
"""Beyond this many logged changes, the distinct rows are not counted: part by part."""
KEPT_KEYED = 256
"""How many keyed entries (shapes a plugin's ``shape_key`` tells apart: one per app of pods
with pod-to-pod constraints) keep their vectors. Beyond it, the one evaluated longest ago gives
them up (a full evaluation again, should it be asked once more), so a session over thousands
of such shapes holds, and makes the machine fault in, the memory of a few hundred (each holds
about 150 KB at 5,000 nodes) and reuses it."""


class ShapeSource(Protocol):
    """What the few-rows path reads and calls of its ``ShapeCache``
    (``pumice.framework.evaluation``, which calls this module: named by shape, not imported)."""

    table: NodeTable
    predicates: Sequence[tuple[str, Callable[..., Any], bool]]
    local_scorers: list[tuple[str, Callable[..., Any]]]
    cached_predicates: bool
    check: Callable[..., Any]
    stale: list[Callable[..., Any]]
    _of_task: dict[str, ShapeEntry]
    keyed_kept: dict[int, ShapeEntry]
    _predicate_makers: list[tuple[str, RowMaker | None]] | None
    _score_makers: list[tuple[str, RowMaker | None]] | None

    def entry(self, task: TaskInfo) -> ShapeEntry: ...

    def _stale(self, entry: ShapeEntry, version: int) -> IntVector | bool: ...

    def _refresh_predicates(self, task: TaskInfo, entry: ShapeEntry, rows: IntVector) -> bool: ...

    def _score_row(self, entry: ShapeEntry, rows: IntVector) -> bool: ...


def few_rows_candidates(cache: ShapeSource, task: TaskInfo) -> Candidates | None:
    """The common case: everything of the shape was current a few row changes ago (one,
    after the placement of a task of the same shape). With row functions those rows,
    and the rows ``stale_rows`` adds, are refreshed one by one in Python scalars, up to
    ``FEW_ROWS`` of them; without, only a single changed row is, by hook calls, and the
    stale rows' predicates as a vector. None when this is not the case (or a plugin's
    opinion appeared or vanished): the caller evaluates part by part."""
    if not cache.cached_predicates:
        return None
    table = cache.table
    entry = cache._of_task.get(task.uid)  # ShapeCache.entry's first step, inline
    if entry is None or entry.epoch != table.epoch:
        entry = cache.entry(task)
    cands = entry.candidates
    if cands is None:
        if entry.base is not None:
            _keep(cache.keyed_kept, entry)  # to be evaluated in full by the caller
        return None
    version, latest = cands.version, table.version
    if latest == version or latest - version > FEW_CHANGES:
        return None
    base = entry if entry.base is None else entry.base
    if entry.mask_version != version or entry.parts is None:
        return None
    fit_version = base.fit_version
    if (fit_version != version and fit_version != latest) or base.fit_now is None:
        return None
    if cache.local_scorers:
        score_version = base.score_version
        if (score_version != version and score_version != latest) or base.score_total is None:
            return None
    programs = _programs(cache, entry, base) if cache._predicate_makers is not None else None
    rows: list[int]
    if latest == version + 1:
        rows = table.changed_rows(version)
    elif programs is None:
        return None
    else:
        distinct = set(table.changed_rows(version))
        if len(distinct) > FEW_ROWS:
            return None
        rows = sorted(distinct)
    stale: IntVector | None = None  # rows only ``stale_rows`` names: their predicates changed
    if cache.stale:
        extra = cache._stale(entry, version)
        if isinstance(extra, bool):
            return None
        if len(extra) == 1 and len(rows) == 1 and extra.item(0) == rows[0]:
            pass  # the placed row itself (a hostname domain): changed already
        elif len(extra):
            only = _stale_only(extra, rows)
            if not len(only):
                pass  # every stale row is changed already
            elif programs is not None and len(only) + len(rows) <= FEW_ROWS:
                rows = sorted([*rows, *only.tolist()])
            elif (len(only) + len(rows)) * FULL_REFRESH_FRACTION > len(table):
                return None
            elif programs is not None:
                stale = only
            elif len(rows) == 1:
                merged = merge_rows(np.array(rows, dtype=np.int64), only)
                return _by_hooks(cache, entry, base, cands, rows[0], merged)
            else:
                return None
    if programs is None:
        return _by_hooks(cache, entry, base, cands, rows[0], None)
    refresh_rows(entry, base, programs[0], programs[1], cands, rows, latest)
    if stale is not None and not _stale_rows(cache, entry, base, cands, stale):
        return None
    return cands


_ASCENDING: dict[int, IntVector] = {}
"""id -> a read-only ``stale_rows`` answer found ascending and distinct (a domain's rows,
which the pod-to-pod filters answer as the same array each time), held so that its id stays
its own."""


def _keep(kept: dict[int, ShapeEntry], entry: ShapeEntry) -> None:
    """Note a keyed entry about to be evaluated in full, last; beyond ``KEPT_KEYED`` entries,
    the first noted gives up its predicate parts, mask and candidates."""
    key = id(entry)
    kept.pop(key, None)
    kept[key] = entry
    if len(kept) > KEPT_KEYED:
        oldest = kept.pop(next(iter(kept)))
        oldest.parts = oldest.mask = oldest.candidates = None
        oldest.parts_by_name = {}
        oldest.predicate_program = None


def _stale_only(extra: IntVector, rows: list[int]) -> IntVector:
    """The distinct rows of ``extra`` that are not among ``rows``, ascending. The common case,
    a placement's row among its zone's rows (ascending already), costs two numpy calls and
    the check that they are ascending; the same array again (a zone marked again), nothing:
    it is answered whole, the changed rows among it refreshed twice, to the same values."""
    if _ASCENDING.get(id(extra)) is extra:
        return extra
    only: IntVector
    if len(rows) == 1:
        only = extra[extra != rows[0]]
    else:
        only = np.array(sorted(set(extra.tolist()).difference(rows)), dtype=np.int64)
    if len(only) > 1 and not bool((only[1:] > only[:-1]).all()):
        only = np.unique(only)
    elif (
        len(extra) > FEW_ROWS
        and not extra.flags.writeable  # a read-only answer cannot change: worth knowing
        and bool((extra[1:] > extra[:-1]).all())
    ):
        if len(_ASCENDING) >= 1 << 12:
            _ASCENDING.clear()
        _ASCENDING[id(extra)] = extra
    return only


def _stale_rows(
    cache: ShapeSource, entry: ShapeEntry, base: ShapeEntry, cands: Candidates, stale: IntVector
) -> bool:
    """Refresh rows whose predicate answers changed though their accounting did not (a zone
    spread's zone after a placement in it): the predicates by one vector call per plugin, the
    candidates from the fit masks and scores that stay as they were. False when a plugin's
    opinion appeared or vanished (the entry is then dropped, to be evaluated in full)."""
    if not cache._refresh_predicates(entry.task, entry, stale):
        entry.parts = entry.candidates = None
        base.fit_now = base.score_total = base.candidates = None
        return False
    mask, fit_now, fit_future = entry.mask, base.fit_now, base.fit_future
    assert mask is not None and fit_now is not None and fit_future is not None
    refresh_candidate_rows(cands, stale, mask, fit_now, fit_future, base.score_total)
    return True


def _by_hooks(
    cache: ShapeSource,
    entry: ShapeEntry,
    base: ShapeEntry,
    cands: Candidates,
    row: int,
    merged: IntVector | None,
) -> Candidates | None:
    """``few_rows_candidates`` without row functions: the hooks asked for one row, the
    stale rows of ``merged`` (the row among them) by a vector."""
    table = cache.table
    if not _row_by_hooks(cache, entry, row) or (
        merged is not None
        and not cache._refresh_predicates(entry.task, entry, merged[merged != row])
    ):
        entry.parts = entry.candidates = None
        base.fit_now = base.score_total = base.candidates = None
        return None
    mask, fit_now, fit_future = entry.mask, base.fit_now, base.fit_future
    assert mask is not None and fit_now is not None and fit_future is not None
    entry.mask_version = base.fit_version = base.score_version = table.version
    vectors = (mask, fit_now, fit_future, base.score_total)
    if merged is None:
        refresh_candidate_row(cands, row, *vectors)
    else:
        refresh_candidate_rows(cands, merged, *vectors)
    cands.version = table.version
    return cands


def _programs(
    cache: ShapeSource, entry: ShapeEntry, base: ShapeEntry
) -> tuple[PredicateProgram, BaseProgram] | None:
    """The entry's row predicates and its base's fit test and row scores, made when
    missing or stale; None when the plugins cannot answer by row functions."""
    table = cache.table
    preds, program = entry.predicate_program, base.base_program
    if (  # the common case: both made and current
        preds.__class__ is PredicateProgram
        and program.__class__ is BaseProgram
        and preds.parts is entry.parts
        and preds.layout == program.layout == table.layout
        and program.scores is (base.scores if cache.local_scorers else None)
    ):
        return preds, program
    assert cache._predicate_makers is not None and cache._score_makers is not None
    if preds is None or (
        isinstance(preds, PredicateProgram)
        and (preds.parts is not entry.parts or preds.layout != table.layout)
    ):
        assert entry.parts is not None
        made = predicate_program(entry.task, table, entry.parts, cache._predicate_makers)
        preds = entry.predicate_program = False if made is None else made
    if not isinstance(preds, PredicateProgram):
        return None
    program = base.base_program
    scores = base.scores if cache.local_scorers else None
    if program is None or (
        isinstance(program, BaseProgram)
        and (program.scores is not scores or program.layout != table.layout)
    ):
        made_base = base_program(base.task, table, scores, cache._score_makers)
        program = base.base_program = False if made_base is None else made_base
    if not isinstance(program, BaseProgram):
        return None
    return preds, program


def _row_by_hooks(cache: ShapeSource, entry: ShapeEntry, row: int) -> bool:
    """Predicate parts, fit and row-local scores of one row (see ``few_rows_candidates``)."""
    table, task, check = cache.table, entry.task, cache.check
    assert entry.parts is not None and entry.mask is not None
    rows = np.array((row,), dtype=np.int64)
    by_name = entry.parts_by_name
    passed = True
    for name, hook, _ in cache.predicates:
        answer = hook(task, table, rows)
        part = by_name.get(name)
        if answer is None or part is None:
            if (answer is None) != (part is None):
                return False
            continue
        if isinstance(answer, PredicateResult):
            mask, reasons = answer.mask, answer.reasons
            if answer.resolvable and not answer.resolvable <= part.resolvable:
                part.resolvable = part.resolvable | answer.resolvable
        else:
            mask, reasons = answer, f"node(s) rejected by {name}"
        ok = bool(check(name, "predicate", mask, 1, np.bool_)[0])
        if not isinstance(reasons, str):
            reasons = check(name, "predicate reasons", reasons, 1, object)[0]
        if isinstance(part.reasons, str) and reasons != part.reasons:
            part.reasons = reasons_vector(len(table), part.reasons)
        if not isinstance(part.reasons, str):
            part.reasons[row] = reasons
        if not part.mask.flags.writeable:
            part.mask = part.mask.copy()
        part.mask[row] = ok
        passed = passed and ok
    entry.mask[row] = passed
    base = entry if entry.base is None else entry.base
    assert base.fit_now is not None and base.fit_future is not None
    if base.fit_version != table.version:
        fits = table.row_fits(row, table.vector(base.task.resreq))
        base.fit_now[row], base.fit_future[row] = fits
    if not cache.local_scorers or base.score_version == table.version:
        return True
    return cache._score_row(base, rows)


def base_rows(base: ShapeEntry, rows: list[int], layout: int, *, fit: bool) -> bool:
    """Refresh ``rows`` of a base entry's fit masks (``fit``) or of its score vectors and
    total (else) by its program, one by one; False when it has no current program (the
    caller then uses the vector path). A new entry of a shape key brings its shared base
    up to date this way, over the few rows changed since another entry used it."""
    program = base.base_program
    if not isinstance(program, BaseProgram) or program.layout != layout:
        return False
    if fit:
        fits, fit_now, fit_future = program.fits, base.fit_now, base.fit_future
        assert fit_now is not None and fit_future is not None
        for row in rows:
            fit_now[row], fit_future[row] = fits(row)
        return True
    total, score_total = program.total, base.score_total
    if program.scores is not base.scores or score_total is None:
        return False
    for row in rows:
        score_total[row] = total(row)
    return True


def refresh_rows(
    entry: ShapeEntry,
    base: ShapeEntry,
    preds: PredicateProgram,
    program: BaseProgram,
    cands: Candidates,
    rows: Iterable[int],
    version: int,
) -> None:
    """Bring ``rows`` of the entry (predicate parts and mask), of its base (fit masks, score
    vectors and their total, unless already current at ``version``) and of its candidates
    up to date, as of the table's ``version``."""
    mask, fit_now, fit_future = entry.mask, base.fit_now, base.fit_future
    assert mask is not None and fit_now is not None and fit_future is not None
    fit_due = base.fit_version != version
    score_total = base.score_total if program.scores is not None else None
    scores_due = score_total is not None and base.score_version != version
    steps, fits, totals, extras = preds.steps, program.fits, program.total, cands.extras
    future_of, now_of = cands.future, cands.now
    was_future, was_now = future_of.item, now_of.item  # Python bools: numpy's compare is slow
    best_future, best_now = cands.best_future, cands.best_now
    for row in rows:
        passed = True
        for part, function in steps:
            reason = function(row)
            if reason:
                passed = False
                _reject(part, row, reason)
            else:
                part.mask[row] = True
        mask[row] = passed
        if fit_due:
            now, later = fits(row)
            fit_now[row] = now
            fit_future[row] = later
        else:
            now, later = fit_now.item(row), fit_future.item(row)
        if scores_due:
            total = score_total[row] = totals(row)  # type: ignore[index]
        elif score_total is not None:
            total = score_total.item(row)
        else:
            total = 0.0
        # the candidates, as refresh_candidate_row makes them from the vectors just written
        future = passed and later
        now = future and now
        if future != was_future(row):
            future_of[row] = future
            cands.future_count += 1 if future else -1
        if now != was_now(row):
            now_of[row] = now
            cands.now_count += 1 if now else -1
        for extra in extras:
            total += extra.item(row)
        best_future[row] = total if future else _NEG_INF
        best_now[row] = total if now else _NEG_INF
    entry.mask_version = version
    if fit_due:
        base.fit_version = version
    if scores_due:
        base.score_version = version
    cands.version = version


def _reject(part: PredicatePart, row: int, reason: str) -> None:
    """Record that ``part`` rejects ``row`` for ``reason``."""
    known = part.reasons
    if isinstance(known, str):
        if reason != known:
            part.reasons = known = reasons_vector(len(part.mask), known)
            known[row] = reason
    else:
        known[row] = reason
    part.mask[row] = False
