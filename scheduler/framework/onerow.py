"""The shape cache's one-row path with row functions: predicate, fit and scores of one row.

After a placement, each cached shape refreshes the one row whose accounting changed. Asking
every row-local plugin again with a one-row ``rows`` vector costs a hook call, a vector and a
contract check per plugin; most of it is the same for every row of the shape. So a plugin may
hand the session a *row function* per shape (``Plugin.predicate_row`` / ``node_score_row``),
made once with everything that depends only on the shape worked out, and the session keeps,
per shape entry, *programs*: each plugin's row function beside the part or score vector it
refreshes, in plugin order. ``refresh_row`` runs them for one row and updates the entry's
predicate parts and mask, fit masks, score vectors and candidates in one pass, with Python
scalars, in the same order and with the same IEEE arithmetic as the vector path (so every
number, and therefore every decision, is the same).

A program is made only when every row-local plugin has a row function for the shape, or agrees
(answering None) that it has no opinion on it, exactly as its full answer said; otherwise the
entry keeps to the hook calls (``ShapeCache._refresh_row``). A program is bound to the parts,
the score vectors and the table layout it was made for, and made again when any of them is
replaced (a full evaluation, a new dimension, a grown table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pumice.framework.base import RowPredicate, RowScore
from pumice.framework.candidates import Candidates
from pumice.framework.results import PredicatePart
from pumice.model.node import FIT_TOLERANCE, NodeTable
from pumice.model.objects import TaskInfo

if TYPE_CHECKING:
    from pumice.framework.evaluation import ShapeEntry

FloatVector = npt.NDArray[np.float64]
RowMaker = Callable[[TaskInfo, NodeTable], Any]
"""A plugin's ``predicate_row`` or ``node_score_row`` (bound), or None: it has none."""

_NEG_INF = -np.inf


@dataclass(slots=True, frozen=True)
class PredicateProgram:
    """The row predicates of one entry, beside the parts they refresh (plugin order)."""

    parts: list[PredicatePart]
    """The entry's parts list it was made for (a full evaluation makes a new one)."""
    layout: int
    steps: tuple[tuple[PredicatePart, RowPredicate], ...]


@dataclass(slots=True, frozen=True)
class BaseProgram:
    """The fit test and the row scores of one base entry, beside the vectors they refresh."""

    scores: dict[str, FloatVector] | None
    """The base entry's score vectors it was made for (a full scoring makes a new dict);
    None when the session has no row-local scorer."""
    layout: int
    steps: tuple[tuple[FloatVector, RowScore], ...]
    fit: tuple[tuple[Callable[[int], float], Callable[[int], float], float], ...]
    """Per dimension: the idle and future-idle cell readers and the request less the
    tolerance (every dimension, as ``fit_mask`` tests)."""


def predicate_program(
    task: TaskInfo,
    table: NodeTable,
    parts: list[PredicatePart],
    makers: Sequence[tuple[str, RowMaker | None]],
) -> PredicateProgram | None:
    """The program for ``parts`` (made with ``task``), or None when a plugin has no row
    function for the shape or disagrees with its full answer about having an opinion."""
    by_name = {part.name: part for part in parts}
    steps: list[tuple[PredicatePart, RowPredicate]] = []
    for name, maker in makers:
        if maker is None:
            return None
        function = maker(task, table)
        part = by_name.get(name)
        if (function is None) != (part is None):
            return None
        if function is None or part is None:
            continue
        if not part.mask.flags.writeable:
            part.mask = part.mask.copy()
        steps.append((part, function))
    return PredicateProgram(parts, table.layout, tuple(steps))


def base_program(
    task: TaskInfo,
    table: NodeTable,
    scores: dict[str, FloatVector] | None,
    makers: Sequence[tuple[str, RowMaker | None]],
) -> BaseProgram | None:
    """The program for a base entry's ``scores`` (made with its ``task``; None when the
    session has no row-local scorer), or None when a scorer cannot take part."""
    steps: list[tuple[FloatVector, RowScore]] = []
    for name, maker in makers:
        if maker is None or scores is None:
            return None
        function = maker(task, table)
        vec = scores.get(name)
        if (function is None) != (vec is None):
            return None
        if function is not None and vec is not None:
            steps.append((vec, function))
    request = table.vector(task.resreq).tolist()
    fit = []
    for dim, amount in zip(table.dims, request, strict=True):
        idle, future = table.column("idle", dim), table.column("future_idle", dim)
        assert idle is not None and future is not None
        fit.append((idle.item, future.item, amount - FIT_TOLERANCE))
    return BaseProgram(scores, table.layout, tuple(steps), tuple(fit))


def refresh_row(
    entry: ShapeEntry,
    base: ShapeEntry,
    preds: PredicateProgram,
    program: BaseProgram,
    cands: Candidates,
    row: int,
    version: int,
) -> None:
    """Bring ``row`` of the entry (predicate parts and mask), of its base (fit masks, score
    vectors and their total, unless already current at ``version``) and of its candidates
    up to date, as of the table's ``version``."""
    assert entry.mask is not None and base.fit_now is not None and base.fit_future is not None
    passed = True
    for part, function in preds.steps:
        reason = function(row)
        if reason:
            passed = False
            known = part.reasons
            if isinstance(known, str):
                if reason != known:
                    part.reasons = known = np.full(len(part.mask), known, dtype=object)
                    known[row] = reason
            else:
                known[row] = reason
            part.mask[row] = False
        else:
            part.mask[row] = True
    entry.mask[row] = passed
    entry.mask_version = version
    if base.fit_version != version:
        now = later = True
        for idle_of, future_of, need in program.fit:
            if not idle_of(row) >= need:
                now = False
            if not future_of(row) >= need:
                later = False
        base.fit_now[row] = now
        base.fit_future[row] = later
        base.fit_version = version
    else:
        now, later = bool(base.fit_now[row]), bool(base.fit_future[row])
    total = 0.0
    if program.scores is not None:
        assert base.score_total is not None
        if base.score_version != version:
            for vec, score_of in program.steps:
                value = score_of(row)
                vec[row] = value
                total += value
            base.score_total[row] = total
            base.score_version = version
        else:
            total = float(base.score_total[row])
    # the candidates, as refresh_candidate_row makes them from the vectors just written
    future = passed and later
    now = future and now
    if future != cands.future[row]:
        cands.future[row] = future
        cands.future_count += 1 if future else -1
    if now != cands.now[row]:
        cands.now[row] = now
        cands.now_count += 1 if now else -1
    for extra in cands.extras:
        total += float(extra[row])
    cands.best_future[row] = total if future else _NEG_INF
    cands.best_now[row] = total if now else _NEG_INF
    cands.version = version
