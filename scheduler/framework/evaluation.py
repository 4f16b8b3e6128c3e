"""Node evaluation once per task shape: predicate masks, resource fit and scores, kept current.

Tasks with the same *shape* — the same request and scheduling terms, as all pods of a gang or
of a Deployment have — in the same queue get the same predicate mask and the same scores from
plugins that depend on the task only through its shape (and queue). So the session evaluates a
shape once, caches the answer, and after placements refreshes only the rows of the
``NodeTable`` whose accounting changed (``NodeTable.changed_rows``).

A plugin opts in by accepting a ``rows`` argument in ``predicate`` or ``node_score``: it then
promises that its answer for a node depends only on that node's row (and on the task's shape
and queue), and when ``rows`` is not None it returns values for exactly those rows, in that
order. The cache is kept per (queue, shape) unless every row-local plugin of the session
declares ``row_local_reads_queue = False`` (its answers ignore the queue; the built-in ones but
node-reservation do): then tasks of one shape share it across queues. Plugins that do not
accept ``rows`` are called in full for every task, as before. The predicate cache
is used only when every enabled predicate plugin is row-local (the first failing plugin names a
node's reason, so the order of all of them matters); scores are summed, so row-local plugins'
scores are cached and the others' added per task.

Two additions to that promise (``pumice.framework.hookspecs``): a plugin's ``shape_key`` names
what else of a task its answers depend on (tasks whose keys differ get separate entries), and its
``stale_rows`` reports rows whose predicate answers changed because *other* rows changed
(pod-to-pod constraints); those rows are refreshed with the changed ones.

A refresh touching more than an eighth of the rows, or a change of the table's rows themselves
(``NodeTable.epoch``), evaluates the shape in full again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice.framework.candidates import (
    FULL_REFRESH_FRACTION,
    NO_ROWS,
    Candidates,
    ShapeEntry,
    base_of,
    fit_mask,
    full_candidates,
    merge_rows,
    reasons_vector,
    refresh_candidate_row,
    refresh_candidate_rows,
    rows_changed,
)
from pumice.framework.onerow import FEW_ROWS, base_rows, few_rows_candidates
from pumice.framework.results import PredicatePart, PredicateResult
from pumice.framework.rowprograms import RowMaker
from pumice.model.node import NodeTable
from pumice.model.objects import TaskInfo
from pumice.model.table import BoolVector, FloatVector, IntVector

ObjectVector = npt.NDArray[np.object_]
Hook = Callable[..., Any]


def predicate_part(name: str, answer: Any, n: int, check: Callable[..., Any]) -> PredicatePart:
    """Normalise a predicate hook's answer (mask or PredicateResult) to a part of length n."""
    resolvable: frozenset[str] = frozenset()
    prefilter = False
    if isinstance(answer, PredicateResult):
        mask, reasons, resolvable = answer.mask, answer.reasons, answer.resolvable
        prefilter = answer.prefilter
    else:
        mask, reasons = answer, f"node(s) rejected by {name}"
    mask = check(name, "predicate", mask, n, np.bool_)
    if not isinstance(reasons, str):
        reasons = check(name, "predicate reasons", reasons, n, object)
    return PredicatePart(name, mask, reasons, resolvable, prefilter)


class ShapeCache:
    """Per-shape predicate masks, fit masks and row-local scores over one ``NodeTable``.

    ``predicates`` and ``scorers`` are ``(plugin name, hook, row_local)``; every hook is called
    as ``hook(task, table, rows)``.
    """

    def __init__(
        self,
        table: NodeTable,
        predicates: Sequence[tuple[str, Hook, bool]],
        scorers: Sequence[tuple[str, Hook, bool]],
        check: Callable[..., Any],
        group_of: Callable[[TaskInfo], Hashable] | None = None,
        shape_keys: Sequence[Hook] = (),
        stale: Sequence[Hook] = (),
        row_makers: tuple[dict[str, RowMaker | None], dict[str, RowMaker | None]] | None = None,
    ) -> None:
        self.table = table
        self.group_of = group_of
        """Tasks of different groups never share an entry, whatever their shape: the session
        groups by queue, so a row-local plugin may answer per queue (node-reservation)."""
        self.predicates = predicates
        self.local_scorers = [(name, hook) for name, hook, local in scorers if local]
        self.cached_predicates = bool(predicates) and all(local for _, _, local in predicates)
        self.check = check
        self.shape_keys = list(shape_keys)
        """Plugins' ``shape_key`` hooks: their answers are part of an entry's key."""
        self.stale = list(stale)
        """Plugins' ``stale_rows`` hooks: rows to refresh beyond the table's changed rows."""
        self._predicate_makers: list[tuple[str, RowMaker | None]] | None = None
        self._score_makers: list[tuple[str, RowMaker | None]] | None = None
        if row_makers is not None and self.cached_predicates:
            by_predicate, by_scorer = row_makers
            self._predicate_makers = [(name, by_predicate.get(name)) for name, _, _ in predicates]
            self._score_makers = [(name, by_scorer.get(name)) for name, _ in self.local_scorers]
        """Each row-local plugin's row function maker (None: it has none), in plugin order;
        None without row functions (then the one-row path calls the hooks)."""
        self.entries: dict[Hashable, ShapeEntry] = {}
        self._last_changed: tuple[tuple[int, int, int], IntVector | None] | None = None
        self._last_for: tuple[tuple[int, int, int, int], IntVector | None] | None = None
        self._of_task: dict[str, ShapeEntry] = {}
        """Task uid -> its shape's entry, so a shape key is built once per task."""
        self.keyed_kept: dict[int, ShapeEntry] = {}
        """Keyed entries holding their vectors, oldest first (``pumice.framework.onerow``)."""
        self.argmax_decides: tuple[int, bool] | None = None
        """(epoch, whether the first row of the top score is the node to choose): set by
        ``pumice.framework.placement`` (no best_node plugin, no random tie-break, rows in
        name order)."""
        self.checked_answers: dict[str, tuple[object, FloatVector]] = {}
        """Plugin -> the last read-only ``normalized_score`` answer that passed the contract
        check, as given and as checked: the same object again needs no second check."""
        self.last_extras: tuple[FloatVector, ...] = ()
        """The extras of the last ``with_extras``: a new shape's candidates start with them
        (tasks of many shapes answer the same read-only vectors), so they are rarely rescored."""

    def entry(self, task: TaskInfo) -> ShapeEntry:
        """The entry of the task's shape (a new one when the table's rows changed)."""
        entry = self._of_task.get(task.uid)
        if entry is not None and entry.epoch == self.table.epoch:
            return entry
        key: Hashable = task.shape
        if self.group_of is not None:
            key = (self.group_of(task), key)
        base: ShapeEntry | None = None
        keys = self.shape_keys
        if keys:
            if len(keys) == 1:  # one plugin names a key (predicates): no tuple to count
                one = keys[0](task)
                extra = () if one is None else (one,)
            else:
                extra = tuple([hook(task) for hook in keys])
                if extra.count(None) == len(extra):
                    extra = ()
            if extra:
                base = self.entries.get(key)
                if base is None or base.epoch != self.table.epoch:
                    base = self.entries[key] = ShapeEntry(self.table.epoch, task, borrowed=True)
                key = (key, extra)
        entry = self.entries.get(key)
        if entry is None or entry.epoch != self.table.epoch:
            entry = self.entries[key] = ShapeEntry(self.table.epoch, task, base=base)
        elif entry.borrowed and base is None:
            # made as another entry's base, with that entry's task; it is this task's own
            # entry now, so plugins are asked with a task whose shape_key is None
            entry.task, entry.borrowed = task, False
        self._of_task[task.uid] = entry
        return entry

    def _changed(self, version: int) -> IntVector | None:
        # predicate, fit and scores of one task usually ask with the same version: answer once
        key = (version, self.table.version, self.table.epoch)
        if self._last_changed is not None and self._last_changed[0] == key:
            return self._last_changed[1]
        rows = rows_changed(self.table, version)
        self._last_changed = (key, rows)
        return rows

    def _stale(self, entry: ShapeEntry, version: int) -> IntVector | bool:
        """Rows the ``stale_rows`` hooks report for the entry's shape since ``version``:
        True for every row, an empty vector for none."""
        found: list[IntVector] = []
        for hook in self.stale:
            answer = hook(entry.task, self.table, version)
            if answer is None or answer is False:
                continue
            if answer is True:
                return True
            if len(answer):
                found.append(np.asarray(answer, dtype=np.int64))
        if not found:
            return NO_ROWS
        return np.concatenate(found) if len(found) > 1 else found[0]

    def _changed_for(self, entry: ShapeEntry, version: int) -> IntVector | None:
        """``_changed`` plus the entry's stale rows (None: evaluate in full); predicates and
        candidates of one task ask the same question: answered once."""
        rows = self._changed(version)
        if rows is None or not self.stale:
            return rows
        key = (id(entry), version, self.table.version, self.table.epoch)
        if self._last_for is not None and self._last_for[0] == key:
            return self._last_for[1]
        extra = self._stale(entry, version)
        merged = None if extra is True else rows
        if not isinstance(extra, bool) and len(extra):
            merged = merge_rows(rows, extra)
            if len(merged) * FULL_REFRESH_FRACTION > len(self.table):
                merged = None
        self._last_for = (key, merged)
        return merged

    # -- predicates -------------------------------------------------------------------------

    def predicate(self, task: TaskInfo) -> tuple[list[PredicatePart], BoolVector]:
        """Every predicate plugin's part and their AND, from the cache where allowed."""
        table = self.table
        if not self.cached_predicates:
            return self._evaluate_predicates(task)
        entry = self.entry(task)
        task = entry.task
        if entry.parts is not None and entry.mask is not None:
            rows = self._changed_for(entry, entry.mask_version)
            entry.mask_version = table.version
            if rows is None or (len(rows) and not self._refresh_predicates(task, entry, rows)):
                entry.parts = None
        if entry.parts is None or entry.mask is None:
            entry.parts, entry.mask = self._evaluate_predicates(task)
            entry.parts_by_name = {part.name: part for part in entry.parts}
            entry.predicate_program = None
            entry.mask_version = table.version
        return entry.parts, entry.mask

    def _evaluate_predicates(self, task: TaskInfo) -> tuple[list[PredicatePart], BoolVector]:
        n = len(self.table)
        parts = [
            predicate_part(name, answer, n, self.check)
            for name, hook, _ in self.predicates
            if (answer := hook(task, self.table, None)) is not None
        ]
        mask = np.ones(n, dtype=np.bool_)
        for part in parts:
            mask &= part.mask
        return parts, mask

    def _refresh_predicates(self, task: TaskInfo, entry: ShapeEntry, rows: IntVector) -> bool:
        """Re-evaluate ``rows``; False when a plugin's opinion appeared or vanished (then the
        shape must be evaluated in full)."""
        assert entry.parts is not None and entry.mask is not None
        by_name = entry.parts_by_name
        combined: BoolVector | None = None  # the parts' AND over ``rows`` (None: no part)
        for name, hook, _ in self.predicates:
            answer = hook(task, self.table, rows)
            part = by_name.get(name)
            if (answer is None) != (part is None):
                return False
            if answer is None or part is None:
                continue
            fresh = predicate_part(name, answer, len(rows), self.check)
            if fresh.prefilter or part.prefilter:
                return False  # a reason of the pod's own is for every row: evaluate in full
            if not fresh.resolvable <= part.resolvable:
                part.resolvable = part.resolvable | fresh.resolvable
            if isinstance(part.reasons, str) and fresh.reasons != part.reasons:
                part.reasons = reasons_vector(len(self.table), part.reasons)
            if not part.mask.flags.writeable:
                part.mask = part.mask.copy()
            part.mask[rows] = fresh.mask
            if not isinstance(part.reasons, str):
                part.reasons[rows] = fresh.reasons
            combined = fresh.mask if combined is None else combined & fresh.mask
        entry.mask[rows] = True if combined is None else combined
        return True

    # -- resource fit -----------------------------------------------------------------------

    def fit(self, task: TaskInfo) -> tuple[BoolVector, BoolVector]:
        """Rows where the request fits the idle and the future-idle resources."""
        table = self.table
        entry = base_of(self.entry(task))
        request = table.vector(entry.task.resreq)
        rows = None
        if entry.fit_now is not None:
            rows = self._changed(entry.fit_version)
        if entry.fit_now is None or entry.fit_future is None or rows is None:
            entry.fit_now = fit_mask(table, request, "idle", None)
            entry.fit_future = fit_mask(table, request, "future_idle", None)
        elif len(rows) == 1:  # the common case after one placement: no per-column passes
            row = int(rows[0])
            entry.fit_now[row], entry.fit_future[row] = table.row_fits(row, request)
        elif len(rows) <= FEW_ROWS and base_rows(entry, rows.tolist(), table.layout, fit=True):
            pass  # a few rows, by the program's fit test
        elif len(rows):
            entry.fit_now[rows] = fit_mask(table, request, "idle", rows)
            entry.fit_future[rows] = fit_mask(table, request, "future_idle", rows)
        entry.fit_version = table.version
        return entry.fit_now, entry.fit_future

    # -- scores -----------------------------------------------------------------------------

    def scores(self, task: TaskInfo) -> dict[str, FloatVector]:
        """Each row-local scorer's vector for the task's shape (empty if there are none);
        the cache's own vectors: read them, never change them."""
        if not self.local_scorers:
            return {}
        table = self.table
        entry = base_of(self.entry(task))
        task = entry.task
        rows = None if entry.score_total is None else self._changed(entry.score_version)
        if (
            rows is not None
            and len(rows)
            and not (
                len(rows) <= FEW_ROWS and base_rows(entry, rows.tolist(), table.layout, fit=False)
            )
            and not self._refresh_scores(task, entry, rows)
        ):
            rows = None
        if rows is None:
            entry.scores = {}
            for name, hook in self.local_scorers:
                answer = hook(task, table, None)
                if answer is not None:
                    vec = np.array(self.check(name, "node_score", answer, len(table), np.float64))
                    entry.scores[name] = vec
            entry.score_total = sum(entry.scores.values(), np.zeros(len(table)))
            entry.base_program = None
        entry.score_version = table.version
        return entry.scores

    def _refresh_scores(self, task: TaskInfo, entry: ShapeEntry, rows: IntVector) -> bool:
        if len(rows) == 1:
            return self._score_row(entry, rows)
        assert entry.score_total is not None
        total = np.zeros(len(rows))
        for name, hook in self.local_scorers:
            answer = hook(task, self.table, rows)
            vec = entry.scores.get(name)
            if (answer is None) != (vec is None):
                return False
            if answer is not None and vec is not None:
                vec[rows] = self.check(name, "node_score", answer, len(rows), np.float64)
                total += vec[rows]
        # summed in the same order as a full evaluation, so ties stay exact ties
        entry.score_total[rows] = total
        return True

    # -- candidates ---------------------------------------------------------------------------

    def candidates(self, task: TaskInfo) -> Candidates:
        """The shape's ``Candidates`` at the table's current version.

        Kept per shape when every predicate is row-local (as the predicate masks are); made
        afresh on each call otherwise."""
        table = self.table
        fast = few_rows_candidates(self, task)
        if fast is not None:
            return fast
        parts, mask = self.predicate(task)
        fit_now, fit_future = self.fit(task)
        total = self.score_total(task)
        entry = self.entry(task)
        cands = entry.candidates if self.cached_predicates else None
        rows = None if cands is None else self._changed_for(entry, cands.version)
        if cands is None or rows is None:
            extras = self.last_extras if cands is None else cands.extras
            cands = full_candidates(mask, fit_now, fit_future, total, extras)
        elif len(rows) == 1:
            refresh_candidate_row(cands, int(rows[0]), mask, fit_now, fit_future, total)
        elif len(rows):
            refresh_candidate_rows(cands, rows, mask, fit_now, fit_future, total)
        cands.version = table.version
        cands.parts = parts
        if self.cached_predicates:
            entry.candidates = cands
        return cands

    def _score_row(self, entry: ShapeEntry, rows: IntVector) -> bool:
        """Row-local scores of one row in Python floats, as the vector path sums them."""
        assert entry.score_total is not None
        row, total = int(rows[0]), 0.0
        for name, hook in self.local_scorers:
            answer = hook(entry.task, self.table, rows)
            vec = entry.scores.get(name)
            if answer is None or vec is None:
                if (answer is None) != (vec is None):
                    return False
                continue
            if type(answer) is not float:
                answer = float(self.check(name, "node_score", answer, 1, np.float64)[0])
            vec[row] = answer
            total += answer
        entry.score_total[row] = total
        return True

    def with_extras(
        self, task: TaskInfo, cands: Candidates, extras: tuple[FloatVector, ...]
    ) -> Candidates:
        """``cands`` with ``extras`` (read-only vectors) in its best scores: the same object
        when they are the vectors already in, else recomputed in full (and kept)."""
        known, self.last_extras = cands.extras, extras
        if len(extras) == 1 and len(known) == 1:  # the common case (nodeorder's taint score)
            if extras[0] is known[0]:
                return cands
        elif len(extras) == len(known):
            for given, kept in zip(extras, known, strict=True):  # a loop: asked per task
                if given is not kept:
                    break
            else:
                return cands
        cands.rescore(self.score_total(task), extras)
        return cands

    def score_total(self, task: TaskInfo) -> FloatVector | None:
        """The sum of the row-local scorers' vectors, or None if there are none (the cache's
        own vector: read it, never change it)."""
        self.scores(task)
        return base_of(self.entry(task)).score_total if self.local_scorers else None
