"""``conformance``: never evict what keeps the cluster itself running.

Hooks ``preemptable(preemptor, candidates)`` and ``reclaimable(reclaimer, candidates)`` give
back every candidate except:

* tasks in the ``kube-system`` namespace;
* tasks whose pod has ``spec.priorityClassName`` ``system-cluster-critical`` or
  ``system-node-critical``.

A task without a pod (built in code) is judged by its namespace alone. The answer keeps the
candidates' order.

The plugin sets ``protects_victims``: the session applies its answer to the candidates before
any tier is asked, so a protected task is never a victim whatever a later tier answers. In
Volcano an empty answer here (every candidate protected) lets the next tier decide, which
could pick a protected pod; pumice does not allow that.

Arguments: none.
"""

from __future__ import annotations

from collections.abc import Sequence

from pumice import Plugin, TaskInfo, hookimpl

SYSTEM_NAMESPACE = "kube-system"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def is_protected(task: TaskInfo) -> bool:
    """True for a task that conformance never offers as a victim."""
    if task.namespace == SYSTEM_NAMESPACE:
        return True
    if task.pod is None:
        return False
    spec = task.pod.get("spec") or {}
    return spec.get("priorityClassName") in CRITICAL_PRIORITY_CLASSES


class ConformancePlugin(Plugin):
    """Volcano's conformance plugin (see the module docstring)."""

    protects_victims = True
    declared_arguments = ()  # no arguments: any given is warned about

    @hookimpl
    def preemptable(self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return [t for t in candidates if not is_protected(t)]

    @hookimpl
    def reclaimable(self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return [t for t in candidates if not is_protected(t)]
