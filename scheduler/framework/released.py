"""Predicates on a node as it will be once pods have left it: what preempt and reclaim check.

An eviction does not free a node at once: the evicted (Releasing) pods stay on it, counted in
its pods and its used resources, until the kubelet has stopped them. A preemptor is pipelined
to run once they are gone, so whether it may go there is a question about the node *without*
them: the pod count, host ports, and — for the pod-to-pod filters — the pods whose
anti-affinity kept it out, which may be among the victims.

``predicate_once_gone`` asks every predicate plugin of the shape cache (enabled, in tier order)
about one node while its Releasing tasks, and any others given, are taken off it
(``NodeInfo.without``: ``node.tasks`` and the node's row read as if they had gone, and are
restored exactly afterwards). Victims evicted through a statement have also been through the
plugins' ``on_deallocate``; a plugin that keeps counting them there (the pod-to-pod filters: a
terminating pod still counts for InterPodAffinity) sees them gone by their absence from
``node.tasks``. The answer is evaluated afresh, never from the shape cache: it describes a
state the session does not hold.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from pumice.framework.evaluation import ShapeCache, predicate_part
from pumice.framework.hookcalls import vector_answer
from pumice.model.node import NodeInfo
from pumice.model.objects import TaskInfo
from pumice.model.status import TaskStatus

__all__ = ["predicate_once_gone"]


def predicate_once_gone(
    shapes: ShapeCache, task: TaskInfo, node: NodeInfo, gone: Iterable[TaskInfo] = ()
) -> str:
    """'' when every predicate passes ``task`` on ``node`` once its Releasing tasks and
    ``gone`` have left it; else the first failing plugin's reason for that node."""
    leaving = [t for t in node.tasks.values() if t.status == TaskStatus.RELEASING]
    seen = {t.uid for t in leaving}
    leaving += [t for t in gone if t.uid not in seen]
    table = shapes.table
    row = node.row
    rows = np.array((row,), dtype=np.int64)
    with node.without(leaving):
        for name, hook, local in shapes.predicates:
            answer = hook(task, table, rows if local else None)
            if answer is None:
                continue
            part = predicate_part(name, answer, 1 if local else len(table), vector_answer)
            at = 0 if local else row
            if not part.mask[at]:
                reasons = part.reasons
                return str(reasons if isinstance(reasons, str) else reasons[at])
    return ""
