"""Choosing a node for one task (from the per-shape candidates, or from given scores), and
explaining the choice.

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

**Why a task went where it went** (``candidate_scores``): each plugin's score of every node it
could go to. One path for every explanation. When a session's ``explain`` is on, a statement
asks for ``candidate_scores`` just before it places a task (``Session.record_scores``), so the
figures are those the choice was made on: the same candidates, the same ``node_score`` and
``normalized_score`` answers, before the placement changed the node. ``pumice simulate
--explain`` shows them as a table per pod; the daemon's dry-run log says them in one line
(``describe_choice``). Either way the chosen node's total is never below the next best's, unless
a ``best_node`` plugin or the pod's nominated node decided.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence

import numpy as np

from pumice.framework.candidates import Candidates, total_plus
from pumice.framework.evaluation import ShapeCache
from pumice.framework.hookcalls import Hook, read_only, vector_answer
from pumice.model.node import NodeTable
from pumice.model.objects import TaskInfo
from pumice.model.table import BoolVector, FloatVector

log = logging.getLogger("pumice.session")

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


TOTAL = "total"

NodeScores = Mapping[str, Mapping[str, float]]
"""Node name -> plugin -> score, with the sum under ``total``."""


def candidate_scores(scoring: Scoring, task: TaskInfo) -> dict[str, dict[str, float]]:
    """Node name -> plugin -> score (and ``total``) over the nodes the task may go to now: the
    nodes that pass the predicates and hold its request in their idle resources, or, when there
    are none, in their future idle resources (the candidates allocate chooses among, over which
    scores are normalised)."""
    table = scoring.table
    fit_now, fit_future = scoring.shapes.fit(task)
    _, feasible = scoring.shapes.predicate(task)
    candidates = feasible & fit_now
    if not candidates.any():
        candidates = feasible & fit_future
    parts = score_parts(scoring, task, candidates)
    scores: dict[str, dict[str, float]] = {}
    for row in np.flatnonzero(candidates):
        entry = {name: float(vector[row]) for name, vector in parts.items()}
        entry[TOTAL] = float(sum(entry.values()))
        scores[table.nodes[int(row)].name] = entry
    return scores


def runner_up(scores: NodeScores, chosen: str) -> str | None:
    """The best scored node other than ``chosen`` (ties to the smallest name), or None."""
    others = [(-parts[TOTAL], node) for node, parts in scores.items() if node != chosen]
    return min(others)[1] if others else None


def describe_choice(scores: NodeScores | None, node: str) -> str:
    """``scores before placement: <node> <total> [<plugin>=<score> …]; next best <node>
    <total> […]`` for a task placed on ``node``; "" when nothing was recorded."""
    if scores is None:
        return ""
    chosen = scores.get(node)
    if chosen is None:
        return f"{node} was not among the nodes scored before placement"
    if len(chosen) == 1:
        return "no scoring plugins"
    text = f"scores before placement: {node} {_fmt(chosen[TOTAL])} [{_per_plugin(chosen)}]"
    other = runner_up(scores, node)
    if other is None:
        return text + "; no other node fits"
    parts = scores[other]
    return text + f"; next best {other} {_fmt(parts[TOTAL])} [{_per_plugin(parts)}]"


def _per_plugin(parts: Mapping[str, float]) -> str:
    return " ".join(f"{name}={_fmt(score)}" for name, score in parts.items() if name != TOTAL)


def _fmt(value: float) -> str:
    return f"{float(value):.4g}"
