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

**Shaped binpack** (kube-scheduler's RequestedToCapacityRatio, as its documentation states it)
replaces the formula above when the arguments contain ``shape``:

* ``shape``: a list of ``{utilization, score}`` points, utilization integers 0-100 strictly
  ascending, scores integers 0-10. The points are joined by a broken line, flat before the first
  point and after the last; a reversed shape (``{0, 10}, {100, 0}``) spreads instead of packing.
* ``resources`` (optional): a list of ``{name, weight}``, weight a non-negative integer (default
  1); default cpu 1 and memory 1.

Per listed resource r of node N: ``utilization = (used(N, r) + request(r)) * 100 /
allocatable(N, r)`` (capped at 100, as kube-scheduler scores a request beyond capacity), mapped
through the broken line and truncated to an integer 0-10. The node's raw score is the weighted
mean, rounded half up; a resource N has no allocatable of, or that maps to 0, leaves the weight
sum (all left out: 0). Every listed resource counts, requested or not, and requests are the real
ones (kube-scheduler counts 100m / 200Mi for a container without a cpu / memory request). The
contribution is ``raw * 10 * binpack.weight``, in the 0-100 range of the other plugins.
kube-scheduler's code multiplies the shape's scores by 10 before interpolating (the worked
example of the tests scores 60 and 69 there, 50 and 70 here). A nonsense shape or a negative
weight is a ``ConfigError`` when the plugin is built. Per task shape, a few numpy operations
per listed resource over its column; like Volcano's formula it is row-local (a node's score
reads only its own row), so after a placement only the changed rows are scored again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import (
    FIT_TOLERANCE,
    Arguments,
    ArgumentSpec,
    FloatVector,
    NodeTable,
    Plugin,
    Resource,
    RowScore,
    TaskInfo,
    argument_error,
    check_known_keys,
    check_weight,
    config_warning,
    hookimpl,
    is_int,
)

log = logging.getLogger("pumice.plugins.binpack")


WEIGHT = "binpack.weight"
CPU = "binpack.cpu"
MEMORY = "binpack.memory"
RESOURCES = "binpack.resources"
RESOURCE_PREFIX = "binpack.resources."

SHAPE = "shape"
SHAPE_RESOURCES = "resources"

MAX_NODE_SCORE = 100
MAX_SHAPE_SCORE = 10
MAX_UTILIZATION = 100
SHAPE_SCALE = MAX_NODE_SCORE // MAX_SHAPE_SCORE
_TRUNCATION_SLACK = 1e-9
"""Added before truncating an interpolated score, so float noise never drops a whole point."""


def _resource_weight(arguments: Arguments, key: str) -> int:
    weight = arguments.get_int(key, 1)
    return 1 if weight < 0 else weight


class BinpackPlugin(Plugin):
    """Volcano's binpack node order (see the module docstring for the formula)."""

    row_local_reads_queue = False  # its row-local answers read the row and the shape only

    declared_arguments = (
        ArgumentSpec(WEIGHT, "int", 1, minimum=0, doc="the plugin's weight; 0 switches it off"),
        ArgumentSpec(CPU, "int", 1, minimum=0, doc="the weight of cpu"),
        ArgumentSpec(MEMORY, "int", 1, minimum=0, doc="the weight of memory"),
        ArgumentSpec(RESOURCES, "str", "", doc="more resources to weigh, comma-separated"),
        ArgumentSpec(RESOURCE_PREFIX + "*", "int", 1, minimum=0, doc="a listed resource's weight"),
        ArgumentSpec(SHAPE, "any", doc="shaped binpack: [{utilization, score}, ...]"),
        ArgumentSpec(SHAPE_RESOURCES, "any", doc="shaped binpack: [{name, weight}, ...]"),
    )

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight: int = arguments.get_int(WEIGHT, 1)
        self.shape: Shape | None = None
        """The shaped (RequestedToCapacityRatio) scoring, when ``shape`` is given."""
        if SHAPE in arguments:
            self.shape = Shape.parse(arguments[SHAPE], arguments.get(SHAPE_RESOURCES))
        elif SHAPE_RESOURCES in arguments:
            config_warning(
                log,
                plugin="binpack",
                key=SHAPE_RESOURCES,
                message=f"only used with {SHAPE!r}; ignored",
            )
        weights: dict[str, int] = {}
        for name in arguments.get_str(RESOURCES, "").split(","):
            name = name.strip()
            if name:
                weights[name] = _resource_weight(arguments, RESOURCE_PREFIX + name)
        weights["cpu"] = _resource_weight(arguments, CPU)
        weights["memory"] = _resource_weight(arguments, MEMORY)
        self.resource_weights = weights
        """Resource name -> weight; resources not listed here are ignored."""
        self._row_functions: dict[Resource, tuple[NodeTable, int, RowScore]] = {}

    @hookimpl
    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> FloatVector | float | None:
        # Row-local: a node's score reads only its own allocatable and used columns.
        if self.weight == 0:
            return None
        if self.shape is not None:
            return self.shape.node_score(task, nodes, rows) * float(SHAPE_SCALE * self.weight)
        if rows is not None and len(rows) == 1:
            return self._row_function(task, nodes)(int(rows[0]))  # one row: a plain number
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

    def node_score_row(self, task: TaskInfo, nodes: NodeTable) -> RowScore | None:
        """``node_score`` as a function of one row (see ``_row_function``)."""
        if self.weight == 0:
            return None
        if self.shape is not None:
            shape, scale = self.shape, float(SHAPE_SCALE * self.weight)

            def shaped(row: int) -> float:
                rows = np.array((row,), dtype=np.int64)
                return float((shape.node_score(task, nodes, rows) * scale)[0])

            return shaped
        return self._row_function(task, nodes)

    def _row_function(self, task: TaskInfo, nodes: NodeTable) -> RowScore:
        """The formula for one row in Python floats (a placement changes one row, and numpy's
        per-call overhead dominates on one element); IEEE double arithmetic in the same order,
        so the result is bit-for-bit the vector path's. A resource the table lacks counts as
        capacity 0, which adds nothing, as in the vector path. Made once per distinct request
        while the table's layout lasts."""
        known = self._row_functions.get(task.resreq)
        if known is not None and known[0] is nodes and known[1] == nodes.layout:
            return known[2]
        names, requests, weights, weight_sum = self._row_plan(task)
        columns: list[tuple[Callable[[int], float], Callable[[int], float], float, int]] = []
        for name, request, factor in zip(names, requests, weights, strict=True):
            cap, used = nodes.column("allocatable", name), nodes.column("used", name)
            if cap is not None and used is not None and factor != 0:
                columns.append((cap.item, used.item, request, factor))
        scale = float(MAX_NODE_SCORE * self.weight)

        def score(row: int) -> float:
            parts = 0.0
            fits = True
            for cap_of, used_of, request, factor in columns:
                cap = cap_of(row)
                after = used_of(row) + request
                if cap > 0:
                    fits = fits and after - cap <= FIT_TOLERANCE
                    parts += after * factor / cap
            value = parts / weight_sum * scale
            return value if fits else 0.0

        function: RowScore = score if weight_sum else _no_score
        if weight_sum and len(columns) == 2:  # cpu and memory: the loop written out
            (cap0_of, used0_of, request0, factor0), (cap1_of, used1_of, request1, factor1) = columns
            tolerance = FIT_TOLERANCE

            def score_two(row: int) -> float:
                # ``score`` for a row with both capacities (every node with cpu and memory):
                # one test for the fit, the same operations in the same order
                cap0, cap1 = cap0_of(row), cap1_of(row)
                if not (cap0 > 0 and cap1 > 0):
                    return score(row)
                after0, after1 = used0_of(row) + request0, used1_of(row) + request1
                if after0 - cap0 <= tolerance and after1 - cap1 <= tolerance:
                    parts = 0.0 + after0 * factor0 / cap0 + after1 * factor1 / cap1
                    return parts / weight_sum * scale
                return 0.0

            function = score_two
        self._row_functions[task.resreq] = (nodes, nodes.layout, function)
        return function

    def _row_plan(self, task: TaskInfo) -> tuple[tuple[str, ...], list[float], list[int], int]:
        """The weighed resources of the task's request: names, amounts, weights, and the
        weight sum (each weighed resource the task asks for counts, as in the vector path)."""
        names: list[str] = []
        requests: list[float] = []
        weights: list[int] = []
        for name, request in task.resreq.items():
            weight = self.resource_weights.get(name)
            if request <= 0 or weight is None:
                continue
            names.append(name)
            requests.append(request)
            weights.append(weight)
        return tuple(names), requests, weights, sum(weights)


def _no_score(row: int) -> float:
    """The score of a request that weighs no resource: 0 on every row."""
    return 0.0


# -- shaped binpack (RequestedToCapacityRatio) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Shape:
    """A validated shape and resource list (see the module docstring)."""

    utilization: tuple[int, ...]
    scores: tuple[int, ...]
    resources: tuple[tuple[str, int], ...]

    @classmethod
    def parse(cls, shape: object, resources: object) -> Shape:
        """Validate the ``shape`` and ``resources`` arguments; ConfigError names the bad key."""
        if not isinstance(shape, Sequence) or isinstance(shape, str) or not shape:
            raise _error(SHAPE, "must be a non-empty list of {utilization, score} points")
        utilization: list[int] = []
        scores: list[int] = []
        for i, point in enumerate(shape):
            key = f"{SHAPE}[{i}]"
            if not isinstance(point, Mapping):
                raise _error(key, f"must be a mapping {{utilization, score}}, got {point!r}")
            check_known_keys("binpack", key, point, ("utilization", "score"))
            u = _bounded_int(point, key, "utilization", MAX_UTILIZATION)
            if utilization and u <= utilization[-1]:
                raise _error(
                    f"{key}.utilization",
                    f"must be greater than the previous point's ({utilization[-1]}), got {u}",
                )
            utilization.append(u)
            scores.append(_bounded_int(point, key, "score", MAX_SHAPE_SCORE))
        return cls(tuple(utilization), tuple(scores), _shape_resources(resources))

    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> FloatVector:
        """The raw score (0-10) of every node for ``task`` (of ``rows`` only, when given)."""
        allocatable: list[FloatVector] = []
        used: list[FloatVector] = []
        requests: list[float] = []
        weights: list[float] = []
        for name, w in self.resources:
            cap = nodes.column("allocatable", name)
            use = nodes.column("used", name)
            if cap is None or use is None or w == 0:
                continue  # no node has any: it leaves the weight sum everywhere
            if rows is not None:
                cap, use = cap[rows], use[rows]
            allocatable.append(cap)
            used.append(use)
            requests.append(task.resreq[name])
            weights.append(float(w))
        if not used:
            return np.zeros(len(nodes) if rows is None else len(rows))
        xs = np.array(self.utilization, dtype=np.float64)
        ys = np.array(self.scores, dtype=np.float64)
        return requested_to_capacity_ratio(allocatable, used, requests, weights, xs, ys)


def broken_line(x: FloatVector, xs: FloatVector, ys: FloatVector) -> FloatVector:
    """The broken line through the points ``(xs, ys)`` (``xs`` ascending) at every ``x``,
    flat before the first point and after the last, truncated to an integer (a slack of
    ``_TRUNCATION_SLACK`` keeps float noise from dropping a whole point)."""
    out: FloatVector = np.floor(np.interp(x, xs, ys) + _TRUNCATION_SLACK)
    return out


def requested_to_capacity_ratio(
    allocatable: Sequence[FloatVector],
    used: Sequence[FloatVector],
    requests: Sequence[float],
    weights: Sequence[float],
    xs: FloatVector,
    ys: FloatVector,
) -> FloatVector:
    """Raw RequestedToCapacityRatio node scores (0-10) from each resource's columns.

    ``allocatable`` and ``used`` are aligned with ``requests`` and ``weights``; resources a
    node has no allocatable of, or whose shape score is 0, are left out of its weighted mean.
    """
    n = len(used[0])
    total = np.zeros(n)
    weight_sum = np.zeros(n)
    for cap, column, request, w in zip(allocatable, used, requests, weights, strict=True):
        has = cap > 0
        utilization = np.zeros(n)
        np.divide((column + request) * float(MAX_UTILIZATION), cap, out=utilization, where=has)
        np.minimum(utilization, float(MAX_UTILIZATION), out=utilization)
        raw = broken_line(utilization, xs, ys)
        raw[~has] = 0.0  # no allocatable: left out
        total += raw * w
        weight_sum += (raw > 0) * w
    mean = total / np.where(weight_sum > 0, weight_sum, 1.0)
    # math.Round of a non-negative mean: half away from zero (numpy's round is half to even)
    out: FloatVector = np.where(weight_sum > 0, np.floor(mean + 0.5), 0.0)
    return out


def _error(key: str, message: str) -> Exception:
    return argument_error("binpack", key=key, message=message)


def _bounded_int(point: Mapping[str, Any], key: str, field: str, top: int) -> int:
    value = point.get(field)
    if value is None:
        raise _error(key, f"missing {field!r}")
    if not is_int(value) or not 0 <= value <= top:
        raise _error(f"{key}.{field}", f"must be an integer from 0 to {top}, got {value!r}")
    assert isinstance(value, int)
    return value


def _shape_resources(value: object) -> tuple[tuple[str, int], ...]:
    if value is None:
        return (("cpu", 1), ("memory", 1))
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise _error(SHAPE_RESOURCES, "must be a non-empty list of {name, weight}")
    out: dict[str, int] = {}
    for i, item in enumerate(value):
        key = f"{SHAPE_RESOURCES}[{i}]"
        if not isinstance(item, Mapping):
            raise _error(key, f"must be a mapping {{name, weight}}, got {item!r}")
        check_known_keys("binpack", key, item, ("name", "weight"))
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _error(f"{key}.name", f"must be a resource name, got {name!r}")
        name = name.strip()
        if name in out:
            raise _error(f"{key}.name", f"{name!r} is listed twice")
        out[name] = check_weight("binpack", f"{key}.weight", item.get("weight"), 1)
    return tuple(out.items())
