"""Row programs: a shape's row functions, made once, run row by row in Python scalars.

A plugin may hand the session a *row function* per shape (``Plugin.predicate_row`` /
``node_score_row``). A *program* keeps each plugin's row function beside the part or score
vector it refreshes, in plugin order, and the fit test of the request: ``predicate_program``
and ``base_program`` make them, ``pumice.framework.onerow`` runs them. Their arithmetic is the
vector path's, in the same order (so every number, and every decision, is the same).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pumice.framework.base import RowPredicate, RowScore
from pumice.framework.results import PredicatePart
from pumice.model.node import FIT_TOLERANCE, NodeTable
from pumice.model.objects import TaskInfo
from pumice.model.table import FloatVector

RowMaker = Callable[[TaskInfo, NodeTable], Any]
"""A plugin's ``predicate_row`` or ``node_score_row`` (bound), or None: it has none."""


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
    fits: Callable[[int], tuple[bool, bool]]
    """Does the request fit the row's idle, and its future idle, resources (``fit_mask``)?"""
    total: Callable[[int], float]
    """Each scorer's value of the row written into its vector, and their sum."""


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
    fit: list[tuple[Callable[[int], float], Callable[[int], float], float]] = []
    for dim, amount in zip(table.dims, request, strict=True):
        idle, future = table.column("idle", dim), table.column("future_idle", dim)
        assert idle is not None and future is not None
        fit.append((idle.item, future.item, amount - FIT_TOLERANCE))
    return BaseProgram(scores, table.layout, _fit_test(fit), _score_sum(steps))


def _fit_test(
    fit: list[tuple[Callable[[int], float], Callable[[int], float], float]],
) -> Callable[[int], tuple[bool, bool]]:
    """``table.row_fits`` for one request as a function of the row: every dimension's idle
    and future idle at least the request less the tolerance (written out for two)."""
    if len(fit) == 2:
        (idle0, future0, need0), (idle1, future1, need1) = fit

        def fits_two(row: int) -> tuple[bool, bool]:
            return (
                idle0(row) >= need0 and idle1(row) >= need1,
                future0(row) >= need0 and future1(row) >= need1,
            )

        return fits_two

    def fits(row: int) -> tuple[bool, bool]:
        now = later = True
        for idle_of, future_of, need in fit:
            if not idle_of(row) >= need:
                now = False
            if not future_of(row) >= need:
                later = False
        return now, later

    return fits


def _score_sum(steps: list[tuple[FloatVector, RowScore]]) -> Callable[[int], float]:
    """Each scorer's value of the row written into its vector, and their sum from 0.0 in
    scorer order (as the vector path sums them; written out for two)."""
    if len(steps) == 2:
        (vec0, score0), (vec1, score1) = steps

        def total_two(row: int) -> float:
            first = vec0[row] = score0(row)
            second = vec1[row] = score1(row)
            return 0.0 + first + second

        return total_two

    def total(row: int) -> float:
        summed = 0.0
        for vec, score_of in steps:
            value = vec[row] = score_of(row)
            summed += value
        return summed

    return total
