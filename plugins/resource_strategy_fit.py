"""``resource-strategy-fit``: pack some resources, spread others (Volcano 1.13).

Hooks: ``node_score`` (row-local), ``normalized_score`` (pods with override annotations only)
and, when its ``proportional:`` map is enabled, ``predicate`` (row-local). With GPUs
MostAllocated and cpu LeastAllocated, GPU pods pack onto as few GPU nodes as possible while CPU
pods spread.

Arguments (Volcano's names):

* ``resourceStrategyFitWeight`` (integer, default 10; 0 switches this score off; negative is a
  config error);
* ``resources``: a map from a resource name or pattern to ``{type, weight}``; ``type`` is
  ``MostAllocated`` or ``LeastAllocated`` (default; anything else is a config error), ``weight``
  a non-negative integer (absent or 0 means 1, as in Volcano). Default when absent or empty: cpu
  and memory, LeastAllocated, weight 1.
* ``sra`` and ``proportional``: maps with the arguments of the ``sra`` and ``proportional``
  plugins plus ``enable`` (default false), as Volcano configures them (``pumice.plugins.scarce``).

**Patterns**: a key may end in a single ``*`` after a non-empty prefix (``nvidia.com/gpu/*``).
Anything else with a ``*`` (``*``, ``vendor.*/gpu``, ``*/gpu``, ``vendor.com/**``) is dropped
with a warning naming it (once per process; ``pumice -v check-config`` shows it). An exact name
beats every pattern; among matching patterns the longest prefix wins.

Score of task T on node N, over every resource r that T requests (a real request above 0; no
kube-scheduler non-zero defaults) and that has a strategy with weight w::

    w is added to the weight sum
    part(r) = 0                                if allocatable(N, r) == 0 (or w == 0)
    whole score = 0                            if used(N, r) + request(r) > allocatable(N, r)
    part(r) = w * (used + request) / allocatable                    MostAllocated
    part(r) = w * (allocatable - used - request) / allocatable      LeastAllocated
    score   = sum(parts) / sum(weights) * 100 * resourceStrategyFitWeight   (0 if no weight)

plus the ``sra`` score when enabled. ``used`` is the table's ``used`` column, as for binpack.

**Pod overrides**: the annotation ``volcano.sh/resource-strategy-scoring-type`` (a type) with
``volcano.sh/resource-strategy-weight`` (a JSON map resource -> weight) replaces the configured
strategies for that pod: only the resources in the map are scored, all with that type. A type
annotation whose weight annotation is missing, empty or not a JSON map of non-negative integers,
or whose type is neither MostAllocated nor LeastAllocated, scores the pod 0 on every node (Volcano
scores an unknown type 0 too; it would use a negative weight as it is).

Speed: row-local (``rows``): a node's score reads only its own allocatable and used columns, so
the session scores a task shape once and then only the rows a placement changed (one changed
row in Python floats, bit-for-bit the vector's). The pod annotations are not part of a task's
shape, so ``node_score`` scores by the configured strategies only, and the per-pod override
comes from ``normalized_score`` (called for every task, never cached): the pod's own fit score
minus the configured one, so the two add up to the pod's own score. Pods without the
annotations cost one dictionary look-up there. Per call, a few numpy operations over the
requested resources' columns; each resource name's strategy is looked up once per session
and each pod's annotations parsed once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import (
    FIT_TOLERANCE,
    Arguments,
    FloatVector,
    NodeTable,
    Plugin,
    PredicateResult,
    Resource,
    TaskInfo,
    argument_error,
    check_known_keys,
    check_mapping,
    check_weight,
    config_warning,
    hookimpl,
)
from pumice.plugins.scarce import Proportional, Sra

log = logging.getLogger("pumice.plugins.resource_strategy_fit")


NAME = "resource-strategy-fit"
WEIGHT = "resourceStrategyFitWeight"
RESOURCES = "resources"
SRA = "sra"
PROPORTIONAL = "proportional"
DEFAULT_WEIGHT = 10
MAX_NODE_SCORE = 100

MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
TYPES = (MOST_ALLOCATED, LEAST_ALLOCATED)

SCORING_TYPE_ANNOTATION = "volcano.sh/resource-strategy-scoring-type"
WEIGHT_ANNOTATION = "volcano.sh/resource-strategy-weight"


@dataclass(frozen=True, slots=True)
class Strategy:
    """How one resource is scored: packed (MostAllocated) or spread, and its weight."""

    most: bool
    weight: int


def pattern_problem(key: str) -> str | None:
    """Why ``key`` is not a usable name or pattern, or None if it is."""
    if "*" not in key:
        return None
    if key == "*":
        return "a lone '*' is not supported as a default; name a prefix such as 'nvidia.com/*'"
    if key.count("*") > 1 or not key.endswith("*"):
        return "only a single trailing '*' after a prefix is supported (e.g. 'nvidia.com/gpu/*')"
    return None


class Strategies:
    """Resource name or pattern -> strategy, with Volcano's lookup rules, memoised by name."""

    def __init__(self, entries: Mapping[str, Strategy]) -> None:
        self.exact = {k: v for k, v in entries.items() if not k.endswith("*")}
        self.patterns = sorted(
            ((k[:-1], v) for k, v in entries.items() if k.endswith("*")),
            key=lambda item: -len(item[0]),
        )
        self._memo: dict[str, Strategy | None] = {}

    def lookup(self, name: str) -> Strategy | None:
        """The exact entry for ``name``, else the longest matching prefix pattern's."""
        try:
            return self._memo[name]
        except KeyError:
            pass
        found = self.exact.get(name)
        if found is None:
            found = next((s for prefix, s in self.patterns if name.startswith(prefix)), None)
        self._memo[name] = found
        return found


def parse_strategies(value: object) -> tuple[Strategies, list[str]]:
    """The ``resources`` argument as strategies, and the patterns dropped (each warned)."""
    entries = check_mapping(NAME, RESOURCES, value)
    if not entries:
        default = Strategy(most=False, weight=1)
        return Strategies({"cpu": default, "memory": default}), []
    out: dict[str, Strategy] = {}
    dropped: list[str] = []
    for key, spec in entries.items():
        where = f"{RESOURCES}.{key}"
        if not key.strip():
            raise argument_error(NAME, key=where, message="a resource name must not be empty")
        problem = pattern_problem(key)
        if problem is not None:
            dropped.append(key)
            config_warning(
                log, plugin=NAME, key=where, message=f"pattern {key!r} dropped: {problem}"
            )
            continue
        fields = check_mapping(NAME, where, spec)
        check_known_keys(NAME, where, fields, ("type", "weight"))
        kind = fields.get("type", LEAST_ALLOCATED)
        if kind not in TYPES:
            raise argument_error(
                NAME,
                key=f"{where}.type",
                message=f"must be one of {', '.join(TYPES)}, got {kind!r}",
            )
        w = check_weight(NAME, f"{where}.weight", fields.get("weight"), 1) or 1
        out[key] = Strategy(most=kind == MOST_ALLOCATED, weight=w)
    return Strategies(out), dropped


@dataclass(frozen=True, slots=True)
class PodOverride:
    """A pod's own strategies from its annotations; ``valid`` False scores it 0 everywhere."""

    strategies: Mapping[str, Strategy]
    valid: bool


def pod_override(pod: Mapping[str, Any] | None) -> PodOverride | None:
    """The override the pod's annotations ask for, or None when it has none."""
    annotations = ((pod or {}).get("metadata") or {}).get("annotations") or {}
    kind = annotations.get(SCORING_TYPE_ANNOTATION)
    if not kind:
        return None
    invalid = PodOverride({}, valid=False)
    if kind not in TYPES:
        return invalid
    try:
        weights = json.loads(annotations.get(WEIGHT_ANNOTATION) or "")
    except (TypeError, ValueError):
        return invalid
    if not isinstance(weights, dict) or not all(
        isinstance(w, int) and not isinstance(w, bool) and w >= 0 for w in weights.values()
    ):
        return invalid
    most = kind == MOST_ALLOCATED
    return PodOverride({str(k): Strategy(most, w) for k, w in weights.items()}, valid=True)


def strategy_fit(
    allocatable: Sequence[FloatVector],
    used: Sequence[FloatVector],
    requests: Sequence[float],
    strategies: Sequence[Strategy],
    weight_sum: float,
) -> FloatVector:
    """Per node, ``sum(w * value) / weight_sum`` over the task's scored resources (0..1).

    ``allocatable`` and ``used`` hold each resource's column over the nodes, aligned with
    ``requests`` and ``strategies``. ``value`` is ``(used + request) / allocatable`` for packed
    resources and ``(allocatable - used - request) / allocatable`` for spread ones; a node with
    no allocatable adds nothing for that resource (the weight still counts in ``weight_sum``,
    which also holds the resources no node has); a weighted resource that does not fit zeroes
    the node.
    """
    n = len(used[0])
    parts = np.zeros(n)
    over = np.zeros(n, dtype=np.bool_)
    for cap, column, request, strategy in zip(allocatable, used, requests, strategies, strict=True):
        if strategy.weight == 0:
            continue
        after = column + request
        has = cap > 0
        over |= has & (after - cap > FIT_TOLERANCE)
        value = after if strategy.most else cap - after
        part = np.zeros(n)
        np.divide(value * float(strategy.weight), cap, out=part, where=has)
        parts += part
    out: FloatVector = parts / weight_sum
    out[over] = 0.0
    return out


def strategy_fit_row(
    allocatable: Sequence[float],
    used: Sequence[float],
    requests: Sequence[float],
    strategies: Sequence[Strategy],
    weight_sum: float,
) -> float:
    """``strategy_fit`` for one node in Python floats: the same operations in the same order,
    so the result is bit-for-bit the vector's (one changed row is cheaper without numpy)."""
    parts = 0.0
    over = False
    for cap, column, request, strategy in zip(allocatable, used, requests, strategies, strict=True):
        if strategy.weight == 0:
            continue
        after = column + request
        if cap > 0:
            over = over or after - cap > FIT_TOLERANCE
            value = after if strategy.most else cap - after
            parts += value * float(strategy.weight) / cap
        else:
            parts += 0.0
    return 0.0 if over else parts / weight_sum


@dataclass(frozen=True, slots=True)
class Scoring:
    """What one task has scored: the requested resources with a strategy that some node has,
    and the weight sum (which also counts the requested, configured resources no node has)."""

    names: tuple[str, ...]
    requests: tuple[float, ...]
    strategies: tuple[Strategy, ...]
    weight_sum: float


class ResourceStrategyFitPlugin(Plugin):
    """Volcano's resource-strategy-fit, with its sra score and proportional predicate."""

    row_local_reads_queue = False  # its row-local answers read the row and the shape only

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = check_weight(NAME, WEIGHT, arguments.get(WEIGHT), DEFAULT_WEIGHT)
        self.strategies, self.dropped = parse_strategies(arguments.get(RESOURCES))
        self.sra = Sra.parse(NAME, check_mapping(NAME, SRA, arguments.get(SRA)), SRA, enabled=False)
        self.proportional = Proportional.parse(
            NAME,
            check_mapping(NAME, PROPORTIONAL, arguments.get(PROPORTIONAL)),
            PROPORTIONAL,
            False,
        )
        self._overrides: dict[str, tuple[Mapping[str, Any] | None, PodOverride | None]] = {}
        self._scorings: dict[str, tuple[tuple[Resource, Sequence[str]], Scoring | None]] = {}

    def _override(self, task: TaskInfo) -> PodOverride | None:
        cached = self._overrides.get(task.uid)
        if cached is None or cached[0] is not task.pod:
            cached = (task.pod, pod_override(task.pod))
            if cached[1] is not None and not cached[1].valid:
                log.debug("task %s: invalid resource-strategy annotations; scores 0", task.key)
            self._overrides[task.uid] = cached
        return cached[1]

    def scoring(
        self, task: TaskInfo, nodes: NodeTable, override: PodOverride | None = None
    ) -> Scoring | None:
        """What ``task`` has scored on ``nodes`` by the configured strategies, or by
        ``override`` when given; None when it scores 0 everywhere. The configured answer is
        kept per task (for its request and the table's dimensions): a gang's shape is scored
        again after every placement."""
        if override is not None:
            return self._scoring(task, nodes, override)
        key = (task.resreq, nodes.dims)
        cached = self._scorings.get(task.uid)
        if cached is None or cached[0] != key:
            cached = (key, self._scoring(task, nodes, None))
            self._scorings[task.uid] = cached
        return cached[1]

    def _scoring(
        self, task: TaskInfo, nodes: NodeTable, override: PodOverride | None
    ) -> Scoring | None:
        if override is not None and not override.valid:
            return None
        names: list[str] = []
        requests: list[float] = []
        strategies: list[Strategy] = []
        weight_sum = 0.0
        for name, amount in task.resreq.items():
            if amount <= 0:
                continue
            if override is not None:
                strategy = override.strategies.get(name)
            else:
                strategy = self.strategies.lookup(name)
            if strategy is None:
                continue
            weight_sum += strategy.weight
            if nodes.dim(name) is None:
                continue  # no node has any: scores 0 everywhere but keeps its weight
            names.append(name)
            requests.append(amount)
            strategies.append(strategy)
        if weight_sum <= 0 or not names:
            return None
        return Scoring(tuple(names), tuple(requests), tuple(strategies), weight_sum)

    def fit_score(
        self,
        task: TaskInfo,
        nodes: NodeTable,
        rows: npt.NDArray[np.int64] | None = None,
        override: PodOverride | None = None,
    ) -> FloatVector:
        """The resource-strategy-fit part of the score (without sra), 0..100 * weight, by the
        configured strategies or by ``override``."""
        n = len(nodes) if rows is None else len(rows)
        scoring = self.scoring(task, nodes, override)
        if scoring is None:
            return np.zeros(n)
        allocatable: list[FloatVector] = []
        used: list[FloatVector] = []
        for name in scoring.names:
            cap, use = nodes.column("allocatable", name), nodes.column("used", name)
            assert cap is not None and use is not None  # scoring() kept known dims only
            allocatable.append(cap if rows is None else cap[rows])
            used.append(use if rows is None else use[rows])
        share = strategy_fit(
            allocatable, used, scoring.requests, scoring.strategies, scoring.weight_sum
        )
        return share * float(MAX_NODE_SCORE * self.weight)

    def _score_row(self, task: TaskInfo, nodes: NodeTable, row: int) -> float:
        """The node score of one row in Python floats, bit-for-bit the vector path's."""
        score = 0.0
        if self.weight:
            scoring = self.scoring(task, nodes)
            if scoring is not None:
                allocatable, used = [], []
                for name in scoring.names:
                    cap, use = nodes.column("allocatable", name), nodes.column("used", name)
                    assert cap is not None and use is not None
                    allocatable.append(float(cap[row]))
                    used.append(float(use[row]))
                share = strategy_fit_row(
                    allocatable, used, scoring.requests, scoring.strategies, scoring.weight_sum
                )
                score = share * float(MAX_NODE_SCORE * self.weight)
        if self.sra is not None:
            score = score + self.sra.score_row(task, nodes, row)
        return score

    @hookimpl
    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> FloatVector | float | None:
        # Row-local: a node's score reads only its own allocatable and used columns, and the
        # task only through its shape (the pod's annotations are normalized_score's part).
        if self.weight == 0 and self.sra is None:
            return None
        if rows is not None and len(rows) == 1:
            return self._score_row(task, nodes, int(rows[0]))  # one row: a plain number
        n = len(nodes) if rows is None else len(rows)
        score = self.fit_score(task, nodes, rows) if self.weight else np.zeros(n)
        if self.sra is not None:
            score = score + self.sra.node_score(task, nodes, rows)
        return score

    @hookimpl
    def normalized_score(
        self, task: TaskInfo, nodes: NodeTable, mask: npt.NDArray[np.bool_]
    ) -> FloatVector | None:
        """The per-pod part, called for every task and never cached: for a pod whose
        annotations override the strategies, its own fit score minus the configured one that
        ``node_score`` gave its shape (None for every other pod)."""
        if self.weight == 0:
            return None
        override = self._override(task)
        if override is None:
            return None
        own = self.fit_score(task, nodes, override=override)
        correction: FloatVector = own - self.fit_score(task, nodes)
        return correction

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult | None:
        # Row-local: the headroom check reads only the node's own idle columns.
        if self.proportional is None:
            return None
        return self.proportional.predicate(task, nodes, rows)
