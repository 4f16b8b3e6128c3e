"""Why a task went where it went: each plugin's score of every node it could go to.

``pumice simulate --explain`` and the tests read these figures; the daemon's dry-run log uses
its own summary (``pumice.daemon.explain``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pumice.framework.session import Session
    from pumice.model.objects import TaskInfo


def candidate_scores(session: Session, task: TaskInfo) -> dict[str, dict[str, float]]:
    """Node name -> plugin -> score (and ``total``) over the nodes the task may go to now: the
    nodes that pass the predicates and hold its request in their idle resources, or, when there
    are none, in their future idle resources (the candidates allocate chooses among, over which
    scores are normalised)."""
    table = session.table
    fit_now, fit_future = session.fit(task)
    feasible = session.predicate(task).mask
    candidates = feasible & fit_now
    if not candidates.any():
        candidates = feasible & fit_future
    parts = session.node_score_parts(task, candidates)
    scores: dict[str, dict[str, float]] = {}
    for row in np.flatnonzero(candidates):
        entry = {name: float(vector[row]) for name, vector in parts.items()}
        entry["total"] = float(sum(entry.values()))
        scores[table.nodes[int(row)].name] = entry
    return scores
