"""Why a node was chosen: each plugin's score for it and for the runner-up (dry-run logs).

Scores are asked again of the session's own plugin instances when the decision is committed,
so they reflect the session at that moment (the task already placed), which is what an
operator can reproduce; they are for reading, not for replaying the choice.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from pumice.framework.hookspecs import HOOK_FLAGS
from pumice.model import TaskInfo

if TYPE_CHECKING:
    from pumice.framework.session import Session

log = logging.getLogger("pumice.daemon")


def plugin_scores(session: Session, task: TaskInfo) -> dict[str, Any]:
    """Each enabled ``node_score`` plugin's score vector over the session's nodes."""
    flag = HOOK_FLAGS["node_score"]
    out: dict[str, Any] = {}
    for _, option, instance in session.plugins:
        provided = session.host.get(option.name)
        if provided is None or "node_score" not in provided.hooks:
            continue
        if flag is not None and not option.enabled(flag):
            continue
        args = {"task": task, "nodes": session.table}
        try:
            hook = getattr(instance, "node_score")  # noqa: B009 - a hookimpl, not on Plugin
            answer = hook(*(args[a] for a in provided.hooks["node_score"]))
        except Exception as exc:  # an explanation must never break a session
            log.debug("plugin %s could not explain a score: %s", option.name, exc)
            continue
        if answer is not None:
            out[option.name] = np.asarray(answer, dtype=np.float64)
    return out


def explain_choice(session: Session, task: TaskInfo, node: str) -> str:
    """``score <total> [<plugin>=<score> …]; next best <node> …`` for a bind of ``task`` to
    ``node``, as the plugins score it at commit time (with the task already placed)."""
    table = session.table
    if node not in table:
        return ""
    scores = plugin_scores(session, task)
    if not scores:
        return "no scoring plugins"
    chosen = table.row(node)
    total = sum(scores.values())
    feasible = session.predicate(task).mask.copy()
    feasible[chosen] = False
    text = f"scores at commit: {node} {_fmt(total[chosen])} [{_per_plugin(scores, chosen)}]"
    if feasible.any():
        masked = np.where(feasible, total, -np.inf)
        runner = int(np.argmax(masked))
        text += (
            f"; next best {table.nodes[runner].name} {_fmt(total[runner])} "
            f"[{_per_plugin(scores, runner)}]"
        )
    else:
        text += "; no other node fits"
    return text


def _per_plugin(scores: dict[str, Any], row: int) -> str:
    return " ".join(f"{name}={_fmt(vec[row])}" for name, vec in scores.items())


def _fmt(value: float) -> str:
    return f"{float(value):.4g}"
