"""Why a task went where it went: each plugin's score of every node it could go to.

One path for every explanation. When a session's ``explain`` is on, a statement asks for
``candidate_scores`` just before it places a task (``Session.record_scores``), so the figures
are those the choice was made on: the same candidates, the same ``node_score`` and
``normalized_score`` answers, before the placement changed the node. ``pumice simulate
--explain`` shows them as a table per pod; the daemon's dry-run log says them in one line
(``describe_choice``). Either way the chosen node's total is never below the next best's, unless
a ``best_node`` plugin or the pod's nominated node decided.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pumice.framework.placement import Scoring, score_parts
from pumice.model.objects import TaskInfo

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
