"""``binpack``: prefer nodes that the task fills up, so whole nodes stay free for big jobs.

Hook: ``node_score(task, nodes)`` — a score for every node. When ``binpack.weight`` is 0 the
plugin has no opinion (it returns None, like Volcano not registering its callback).

Arguments (integers, Volcano's names and defaults):

* ``binpack.weight`` (1): the plugin's weight;
* ``binpack.cpu`` (1), ``binpack.memory`` (1): resource weights;
* ``binpack.resources`` (a string): extra resource names, comma-separated, spaces trimmed;
* ``binpack.resources.<name>`` (1): the weight of each listed resource.

Every weight must be an integer >= 0 (``declared_arguments``): where Volcano silently turns a
negative resource weight into 1, pumice's configuration check refuses it. A plugin built in code
with a negative resource weight still gets Volcano's 1.
  cpu and memory always take ``binpack.cpu`` / ``binpack.memory``, even if listed.

Score of task T on node N, over every resource r that T requests a non-zero amount of and that
has a weight w (other resources are ignored)::

    w is added to the weight sum
    part(r) = 0                          if allocatable(N, r) == 0 or w == 0
    whole score = 0                      if request(r) + used(N, r) > allocatable(N, r)
    part(r) = (request(r) + used(N, r)) * w / allocatable(N, r)    otherwise
    score   = sum(parts) / sum(weights) * 100 * binpack.weight     (0 if no weights)

``used`` is the table's ``used`` column: allocated-state and releasing tasks, not pipelined
ones. Units are pumice's canonical ones (cpu millicores, memory bytes, other resources counts);
every part is a ratio, so they do not change the result: Volcano's worked example (weights cpu
2, memory 3, gpu 7, binpack.weight 10; a 2 cpu / 10Gi / 2 GPU task on an empty 4 cpu / 16Gi /
4 GPU node) scores (1 + 1.875 + 3.5) / 12 * 1000 = 531.25 here too. The overflow test allows
``FIT_TOLERANCE`` of float noise.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pumice import FIT_TOLERANCE, Arguments, ArgumentSpec, NodeTable, Plugin, TaskInfo, hookimpl

FloatVector = npt.NDArray[np.float64]

WEIGHT = "binpack.weight"
CPU = "binpack.cpu"
MEMORY = "binpack.memory"
RESOURCES = "binpack.resources"
RESOURCE_PREFIX = "binpack.resources."

MAX_NODE_SCORE = 100


def _resource_weight(arguments: Arguments, key: str) -> int:
    weight = arguments.get_int(key, 1)
    return 1 if weight < 0 else weight


class BinpackPlugin(Plugin):
    """Volcano's binpack node order (see the module docstring for the formula)."""

    declared_arguments = (
        ArgumentSpec(WEIGHT, "int", 1, minimum=0, doc="the plugin's weight; 0 switches it off"),
        ArgumentSpec(CPU, "int", 1, minimum=0, doc="the weight of cpu"),
        ArgumentSpec(MEMORY, "int", 1, minimum=0, doc="the weight of memory"),
        ArgumentSpec(RESOURCES, "str", "", doc="more resources to weigh, comma-separated"),
        ArgumentSpec(RESOURCE_PREFIX + "*", "int", 1, minimum=0, doc="a listed resource's weight"),
    )

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight: int = arguments.get_int(WEIGHT, 1)
        weights: dict[str, int] = {}
        for name in arguments.get_str(RESOURCES, "").split(","):
            name = name.strip()
            if name:
                weights[name] = _resource_weight(arguments, RESOURCE_PREFIX + name)
        weights["cpu"] = _resource_weight(arguments, CPU)
        weights["memory"] = _resource_weight(arguments, MEMORY)
        self.resource_weights = weights
        """Resource name -> weight; resources not listed here are ignored."""

    @hookimpl
    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> FloatVector | None:
        # Row-local: a node's score reads only its own allocatable and used columns.
        if self.weight == 0:
            return None
        if rows is not None and len(rows) == 1:
            return np.array([self._score_row(task, nodes, int(rows[0]))])
        n = len(nodes) if rows is None else len(rows)
        parts = np.zeros(n)
        fits = np.ones(n, dtype=np.bool_)
        weight_sum = 0
        for name, request in task.resreq.items():
            weight = self.resource_weights.get(name)
            if request <= 0 or weight is None:
                continue
            weight_sum += weight
            cap = nodes.column("allocatable", name)
            used = nodes.column("used", name)
            if cap is None or used is None or weight == 0:
                continue
            if rows is not None:
                cap, used = cap[rows], used[rows]
            after = used + request
            has = cap > 0
            fits &= ~has | (after - cap <= FIT_TOLERANCE)
            parts += np.where(has, after * weight / np.where(has, cap, 1.0), 0.0)
        if weight_sum == 0:
            return np.zeros(n)
        score: FloatVector = parts / weight_sum * float(MAX_NODE_SCORE * self.weight)
        return np.where(fits, score, 0.0)

    def _score_row(self, task: TaskInfo, nodes: NodeTable, row: int) -> float:
        """The same formula for one row in Python floats (a placement changes one row, and
        numpy's per-call overhead dominates on one element); IEEE double arithmetic in the
        same order, so the result is bit-for-bit the vector path's."""
        parts = 0.0
        fits = True
        weight_sum = 0
        for name, request in task.resreq.items():
            weight = self.resource_weights.get(name)
            if request <= 0 or weight is None:
                continue
            weight_sum += weight
            cap_col = nodes.column("allocatable", name)
            used_col = nodes.column("used", name)
            if cap_col is None or used_col is None or weight == 0:
                continue
            cap = float(cap_col[row])
            after = float(used_col[row]) + request
            if cap > 0:
                fits = fits and after - cap <= FIT_TOLERANCE
                parts += after * weight / cap
            else:
                parts += 0.0
        if weight_sum == 0:
            return 0.0
        score = parts / weight_sum * float(MAX_NODE_SCORE * self.weight)
        return score if fits else 0.0
