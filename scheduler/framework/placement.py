"""Choosing a node for one task: from the per-shape candidates, or from given scores.

``Session.best_node`` answers the general question (a score vector and a mask, from any
action). ``choose_node`` answers allocate's, the hot one, from the shape's ``Candidates``
(``pumice.framework.evaluation``): the feasible rows, their counts and their summed scores are
kept current by the shape cache, so a task whose plugins answer nothing new costs an argmax,
not a pass per plugin and per mask. Both give the same node for the same inputs: the first
``best_node`` plugin naming a feasible node, else the top score, ties to the smallest name (or
a random one with ``tieBreak: random``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from pumice.framework.candidates import Candidates, total_plus
from pumice.framework.hookcalls import read_only, vector_answer
from pumice.model.objects import TaskInfo

if TYPE_CHECKING:
    from pumice.framework.session import Session

log = logging.getLogger("pumice.session")

FloatVector = npt.NDArray[np.float64]
BoolVector = npt.NDArray[np.bool_]

_NO_SCORE = -np.inf


def pick_best(
    session: Session, task: TaskInfo, masked: FloatVector, mask: BoolVector
) -> str | None:
    """The node for ``task`` given ``masked`` (its scores, ``-inf`` off ``mask``)."""
    table = session.table
    nodes = table.nodes
    hooks = session.hooks("best_node")
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
    if session.tie_break != "random" and table.rows_in_name_order:
        return nodes[top_row].name  # argmax names the first of the tied rows: the smallest
    ties = np.flatnonzero(masked == top)
    if len(ties) == 1:
        return nodes[top_row].name
    if session.tie_break == "random":
        return nodes[int(session.rng.choice(list(ties)))].name
    return nodes[int(ties[table.name_rank[ties].argmin()])].name


def choose_node(session: Session, task: TaskInfo, cands: Candidates, now: bool) -> str | None:
    """The node for ``task`` among its ``now`` (else its future) candidates.

    Decides exactly as ``best_node(task, node_scores(task, mask), mask)`` over the same
    candidate mask. Scores that plugins compute per task are added on top of the cached
    total: a ``normalized_score`` answered as the same read-only vector as last time is kept in
    the shape's candidates (nodeorder's constant taint score is one), any other answer is
    summed afresh for this task."""
    table = session.table
    if now:
        mask, count = cands.now, cands.now_count
    else:
        mask, count = cands.future, cands.future_count
    if count == 0:
        return None
    if count == 1:
        return table.nodes[int(mask.argmax())].name
    if session.has_unshaped_scores:
        return session.best_node(task, session.node_scores(task, mask), mask)
    shapes = session.shapes
    hooks = session.hooks("normalized_score")
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
            return pick_best(session, task, np.where(mask, summed, -np.inf), mask)
        cands = shapes.with_extras(task, cands, tuple(answers))
    elif cands.extras:
        cands = shapes.with_extras(task, cands, ())
    best = cands.best_now if now else cands.best_future
    decides = shapes.argmax_decides
    if decides is None or decides[0] != table.epoch:
        decides = shapes.argmax_decides = (table.epoch, argmax_decides(session))
    if decides[1]:
        row = int(best.argmax())
        if best.item(row) == _NO_SCORE and not mask[row]:  # as pick_best: no node
            return None
        return table.nodes[row].name
    return pick_best(session, task, best, mask)


def argmax_decides(session: Session) -> bool:
    """Is the first row of the top score the node ``pick_best`` chooses? When no best_node
    plugin may name another, ties go to the smallest name and the rows are in name order."""
    return (
        session.tie_break != "random"
        and not session.hooks("best_node")
        and session.table.rows_in_name_order
    )


def score_parts(
    session: Session, task: TaskInfo, mask: BoolVector | None
) -> dict[str, FloatVector]:
    """``Session.node_score_parts``: each scoring plugin's vector, in tier order."""
    table = session.table
    n = len(table)
    cached = session.shapes.scores(task)
    parts: dict[str, FloatVector] = {}
    for name, hook in session.hooks("node_score"):
        if session.row_local("node_score", name):
            vector = cached.get(name)
            if vector is not None:
                parts[name] = np.array(vector)
            continue
        answer = hook(task, table, None)
        if answer is not None:
            parts[name] = np.array(vector_answer(name, "node_score", answer, n, np.float64))
    candidates = mask if mask is not None else np.ones(n, dtype=np.bool_)
    for name, hook in session.hooks("normalized_score"):
        answer = hook(task, table, candidates)
        if answer is not None:
            vector = vector_answer(name, "normalized_score", answer, n, np.float64)
            parts[name] = parts[name] + vector if name in parts else np.array(vector)
    return parts


def node_scores(session: Session, task: TaskInfo, mask: BoolVector | None) -> FloatVector:
    """``Session.node_scores``: the cached row-local total plus every per-task answer."""
    table = session.table
    n = len(table)
    total = session.shapes.score_total(task)
    others = [
        (name, hook)
        for name, hook in session.hooks("node_score")
        if not session.row_local("node_score", name)
    ]
    normalized = session.hooks("normalized_score")
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
