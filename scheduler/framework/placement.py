"""Choosing a node for one task: from the per-shape candidates, or from given scores.

Everything here reads a ``Scoring``: the node table, the shape cache, the scoring and
``best_node`` hooks and the tie rule, handed over by the session once its plugins are built, so
choosing a node never calls back into the session. ``pick_best`` answers the general question
(a score vector and a mask, from any action). ``choose_node`` answers allocate's, the hot one,
from the shape's ``Candidates``
(``pumice.framework.evaluation``): the feasible rows, their counts and their summed scores are
kept current by the shape cache, so a task whose plugins answer nothing new costs an argmax,
not a pass per plugin and per mask. Both give the same node for the same inputs: the first
``best_node`` plugin naming a feasible node, else the top score, ties to the smallest name (or
a random one with ``tieBreak: random``).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from pumice.framework.candidates import Candidates, total_plus
from pumice.framework.evaluation import ShapeCache
from pumice.framework.hookcalls import Hook, read_only, vector_answer
from pumice.model.node import NodeTable
from pumice.model.objects import TaskInfo

log = logging.getLogger("pumice.session")

FloatVector = npt.NDArray[np.float64]
BoolVector = npt.NDArray[np.bool_]
Hooks = Sequence[tuple[str, Hook]]


class Scoring:
    """What choosing a node reads of one session, fixed once its plugins are built.

    ``hooks`` maps ``node_score``, ``normalized_score`` and ``best_node`` to their enabled
    implementations in tier order; ``local_scorers`` names the plugins whose ``node_score`` is
    row-local (answered from ``shapes``); ``tie_break`` is the config's ``tieBreak`` and
    ``rng`` the session's random source for ``random``."""

    __slots__ = (
        "best_node_hooks",
        "has_unshaped_scores",
        "local_scorers",
        "node_score_hooks",
        "normalized_hooks",
        "rng",
        "shapes",
        "table",
        "tie_break",
    )

    def __init__(
        self,
        table: NodeTable,
        shapes: ShapeCache,
        hooks: Mapping[str, Hooks],
        local_scorers: frozenset[str],
        tie_break: str,
        rng: random.Random,
    ) -> None:
        self.table = table
        self.shapes = shapes
        self.node_score_hooks = hooks["node_score"]
        self.normalized_hooks = hooks["normalized_score"]
        self.best_node_hooks = hooks["best_node"]
        self.local_scorers = local_scorers
        self.has_unshaped_scores = any(n not in local_scorers for n, _ in self.node_score_hooks)
        """Does a ``node_score`` plugin not accept ``rows`` (is it called per task)?"""
        self.tie_break = tie_break
        self.rng = rng


_NO_SCORE = -np.inf


def pick_best(
    scoring: Scoring, task: TaskInfo, masked: FloatVector, mask: BoolVector
) -> str | None:
    """The node for ``task`` given ``masked`` (its scores, ``-inf`` off ``mask``): the first
    ``best_node`` plugin naming a node of ``mask``, else the top score; ties to the smallest
    name (by name ranks computed once per table) or, with ``tieBreak: random``, a random one."""
    table = scoring.table
    nodes = table.nodes
    hooks = scoring.best_node_hooks
    if hooks:
        view = read_only(masked)
        for name, hook in hooks:
            choice = hook(task, view, table)
            if choice is None:
                continue
            if choice in table and mask[table.row(choice)]:
                return str(choice)
            log.warning("plugin %s named node %r, which is not feasible; ignored", name, choice)
    top_row = int(masked.argmax())
    top = masked[top_row]
    if top == -np.inf and not mask[top_row]:
        return None
    if scoring.tie_break != "random" and table.rows_in_name_order:
        return nodes[top_row].name  # argmax names the first of the tied rows: the smallest
    ties = np.flatnonzero(masked == top)
    if len(ties) == 1:
        return nodes[top_row].name
    if scoring.tie_break == "random":
        return nodes[int(scoring.rng.choice(list(ties)))].name
    return nodes[int(ties[table.name_rank[ties].argmin()])].name


def choose_node(scoring: Scoring, task: TaskInfo, cands: Candidates, now: bool) -> str | None:
    """The node for ``task`` among its ``now`` (else its future) candidates.

    Decides exactly as ``pick_best`` over ``node_scores(scoring, task, mask)`` on the same
    candidate mask. Scores that plugins compute per task are added on top of the cached
    total: a ``normalized_score`` answered as the same read-only vector as last time is kept in
    the shape's candidates (nodeorder's constant taint score is one), any other answer is
    summed afresh for this task."""
    table = scoring.table
    if now:
        mask, count = cands.now, cands.now_count
    else:
        mask, count = cands.future, cands.future_count
    if count == 0:
        return None
    if count == 1:
        return table.nodes[int(mask.argmax())].name
    if scoring.has_unshaped_scores:
        masked = np.where(mask, node_scores(scoring, task, mask), -np.inf)
        return pick_best(scoring, task, masked, mask)
    shapes = scoring.shapes
    hooks = scoring.normalized_hooks
    if hooks:
        view = cands.view(now)
        answers = []
        fresh = False  # did a plugin answer a vector it may change (made for this task)?
        checked = shapes.checked_answers
        for name, hook in hooks:
            answer = hook(task, table, view)
            if answer is None:
                continue
            known = checked.get(name)
            if known is not None and known[0] is answer:
                answer = known[1]  # the read-only vector checked last time, unchanged
            else:
                given = answer
                answer = vector_answer(name, "normalized_score", answer, len(table), np.float64)
                if answer.flags.writeable:
                    fresh = True
                else:
                    checked[name] = (given, answer)
            answers.append(answer)
        if fresh:
            summed = total_plus(shapes.score_total(task), answers, len(table))
            return pick_best(scoring, task, np.where(mask, summed, -np.inf), mask)
        known_extras = cands.extras
        if len(answers) == 1 and len(known_extras) == 1 and answers[0] is known_extras[0]:
            shapes.last_extras = known_extras  # ``with_extras``'s common case, without a call
        else:
            cands = shapes.with_extras(task, cands, tuple(answers))
    elif cands.extras:
        cands = shapes.with_extras(task, cands, ())
    best = cands.best_now if now else cands.best_future
    decides = shapes.argmax_decides
    if decides is None or decides[0] != table.epoch:
        decides = shapes.argmax_decides = (table.epoch, argmax_decides(scoring))
    if decides[1]:
        row = int(best.argmax())
        if best.item(row) == _NO_SCORE and not mask[row]:  # as pick_best: no node
            return None
        return table.nodes[row].name
    return pick_best(scoring, task, best, mask)


def argmax_decides(scoring: Scoring) -> bool:
    """Is the first row of the top score the node ``pick_best`` chooses? When no best_node
    plugin may name another, ties go to the smallest name and the rows are in name order."""
    return (
        scoring.tie_break != "random"
        and not scoring.best_node_hooks
        and scoring.table.rows_in_name_order
    )


def score_parts(
    scoring: Scoring, task: TaskInfo, mask: BoolVector | None
) -> dict[str, FloatVector]:
    """Each scoring plugin's vector for ``task`` (weight included; ``node_score`` and
    ``normalized_score`` over ``mask`` together), in tier order, summing to ``node_scores``;
    a plugin that answers None is left out."""
    table = scoring.table
    n = len(table)
    cached = scoring.shapes.scores(task)
    parts: dict[str, FloatVector] = {}
    for name, hook in scoring.node_score_hooks:
        if name in scoring.local_scorers:
            vector = cached.get(name)
            if vector is not None:
                parts[name] = np.array(vector)
            continue
        answer = hook(task, table, None)
        if answer is not None:
            parts[name] = np.array(vector_answer(name, "node_score", answer, n, np.float64))
    candidates = mask if mask is not None else np.ones(n, dtype=np.bool_)
    for name, hook in scoring.normalized_hooks:
        answer = hook(task, table, candidates)
        if answer is not None:
            vector = vector_answer(name, "normalized_score", answer, n, np.float64)
            parts[name] = parts[name] + vector if name in parts else np.array(vector)
    return parts


def node_scores(scoring: Scoring, task: TaskInfo, mask: BoolVector | None) -> FloatVector:
    """The summed score of every node for ``task``: the cached row-local total plus every
    per-task answer (``normalized_score`` over ``mask``, every node when None)."""
    table = scoring.table
    n = len(table)
    total = scoring.shapes.score_total(task)
    others = [
        (name, hook) for name, hook in scoring.node_score_hooks if name not in scoring.local_scorers
    ]
    normalized = scoring.normalized_hooks
    if not others and not normalized:
        return read_only(total if total is not None else np.zeros(n))
    summed = np.zeros(n) if total is None else total.copy()
    for name, hook in others:
        answer = hook(task, table, None)
        if answer is not None:
            summed += vector_answer(name, "node_score", answer, n, np.float64)
    if normalized:
        candidates = mask if mask is not None else np.ones(n, dtype=np.bool_)
        for name, hook in normalized:
            answer = hook(task, table, candidates)
            if answer is not None:
                summed += vector_answer(name, "normalized_score", answer, n, np.float64)
    return summed
