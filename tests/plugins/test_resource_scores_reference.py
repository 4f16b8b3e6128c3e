"""The vectorised scores against plain per-node references written from the formulas, on
random clusters: resource-strategy-fit in floats, shaped binpack in exact fractions (so float
noise in the vector code can never drop a whole point of the shape's scale); and the answers
for some rows (the row-local refresh) against the full evaluation."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice import Arguments, PredicateResult, Resource, TaskInfo
from pumice.plugins.binpack import BinpackPlugin
from pumice.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from pumice.plugins.scarce import ProportionalPlugin, SraPlugin
from support.nodes import node, place, table

GPU = "nvidia.com/gpu"
NAMES = ("cpu", "memory", GPU)

amounts = st.integers(min_value=0, max_value=64)
node_shapes = st.tuples(amounts, amounts, amounts)  # allocatable of cpu, memory, gpu
usage = st.tuples(amounts, amounts, amounts)


def cluster(nodes: list[tuple[int, int, int]], used: list[tuple[int, int, int]]) -> Any:
    """Nodes n0.. with the given allocatable and a running task using at most that."""
    infos, tasks = [], []
    for i, (alloc, use) in enumerate(zip(nodes, used, strict=True)):
        infos.append(node(f"n{i}", alloc[0], alloc[1], extra={GPU: alloc[2]}))
        load = {k: min(u, a) for k, u, a in zip(NAMES, use, alloc, strict=True) if min(u, a)}
        if load:
            tasks.append(place(TaskInfo(uid=f"u{i}", name=f"u{i}", resreq=Resource(load)), f"n{i}"))
    return table(*infos, tasks=tasks)


def rows(nodes: Any) -> list[dict[str, tuple[float, float]]]:
    """Per node: resource -> (allocatable, used)."""
    out = []
    for info in nodes.nodes:
        out.append({k: (info.allocatable[k], info.used[k]) for k in NAMES})
    return out


# -- resource-strategy-fit ----------------------------------------------------------------------


def rsf_reference(
    request: dict[str, float],
    node_row: dict[str, tuple[float, float]],
    config: dict[str, tuple[bool, int]],
    plugin_weight: int,
) -> float:
    """Volcano's formula for one node, written out plainly."""
    total, weights = 0.0, 0
    for name, amount in request.items():
        if amount <= 0 or name not in config:
            continue
        most, w = config[name]
        cap, used = node_row[name]
        weights += w
        if cap == 0:
            continue
        after = used + amount
        if after > cap:
            return 0.0
        total += (after if most else cap - after) * w / cap
    return total / weights * 100 * plugin_weight if weights else 0.0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(node_shapes, usage), min_size=1, max_size=8),
    st.tuples(amounts, amounts, amounts),
    st.fixed_dictionaries({name: st.tuples(st.booleans(), st.integers(1, 5)) for name in NAMES}),
    st.integers(0, 12),
)
def test_resource_strategy_fit_matches_the_per_node_formula(
    layout: list[Any],
    request: tuple[int, int, int],
    config: dict[str, tuple[bool, int]],
    plugin_weight: int,
) -> None:
    nodes = cluster([a for a, _ in layout], [u for _, u in layout])
    arguments = {
        "resourceStrategyFitWeight": plugin_weight,
        "resources": {
            k: {"type": "MostAllocated" if most else "LeastAllocated", "weight": w}
            for k, (most, w) in config.items()
        },
    }
    resreq = {k: float(v) for k, v in zip(NAMES, request, strict=True) if v}
    task = TaskInfo(uid="t", name="t", resreq=Resource(resreq))
    answer = ResourceStrategyFitPlugin(Arguments(arguments)).node_score(task, nodes)
    if plugin_weight == 0:
        assert answer is None
        return
    assert answer is not None
    expected = [rsf_reference(resreq, row, config, plugin_weight) for row in rows(nodes)]
    assert answer.tolist() == pytest.approx(expected, abs=1e-9)


# -- shaped binpack ------------------------------------------------------------------------------


def broken_line_exact(x: Fraction, points: list[tuple[int, int]]) -> int:
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x0 <= x <= x1:
            return math.floor(y0 + Fraction(y1 - y0) * (x - x0) / (x1 - x0))
    raise AssertionError("unreachable")


def shape_reference(
    request: dict[str, float],
    node_row: dict[str, tuple[float, float]],
    points: list[tuple[int, int]],
    weights: dict[str, int],
) -> int:
    """The documented RequestedToCapacityRatio for one node, in exact fractions."""
    total, weight_sum = Fraction(0), 0
    for name, w in weights.items():
        cap, used = node_row[name]
        if cap == 0 or w == 0:
            continue
        utilization = min(Fraction(int(used + request.get(name, 0)) * 100, int(cap)), Fraction(100))
        score = broken_line_exact(utilization, points)
        if score > 0:
            total += score * w
            weight_sum += w
    return math.floor(total / weight_sum + Fraction(1, 2)) if weight_sum else 0


shapes = st.lists(st.tuples(st.integers(0, 100), st.integers(0, 10)), min_size=1, max_size=5).map(
    lambda pts: sorted(dict(pts).items())
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(node_shapes, usage), min_size=1, max_size=8),
    st.tuples(amounts, amounts, amounts),
    shapes,
    st.fixed_dictionaries({name: st.integers(0, 5) for name in NAMES}),
)
def test_shaped_binpack_matches_the_documented_method_exactly(
    layout: list[Any],
    request: tuple[int, int, int],
    points: list[tuple[int, int]],
    weights: dict[str, int],
) -> None:
    nodes = cluster([a for a, _ in layout], [u for _, u in layout])
    arguments = {
        "shape": [{"utilization": u, "score": s} for u, s in points],
        "resources": [{"name": k, "weight": w} for k, w in weights.items()],
    }
    resreq = {k: float(v) for k, v in zip(NAMES, request, strict=True) if v}
    task = TaskInfo(uid="t", name="t", resreq=Resource(resreq))
    answer = BinpackPlugin(Arguments(arguments)).node_score(task, nodes)
    assert answer is not None
    expected = [10.0 * shape_reference(resreq, row, points, weights) for row in rows(nodes)]
    assert answer.tolist() == expected


# -- row-local answers ---------------------------------------------------------------------------

ROW_LOCAL_SCORERS: dict[str, Any] = {
    "resource-strategy-fit": lambda: ResourceStrategyFitPlugin(
        Arguments(
            {
                "resources": {
                    GPU: {"type": "MostAllocated", "weight": 3},
                    "cpu": {"type": "LeastAllocated"},
                    "memory": {"type": "MostAllocated", "weight": 2},
                },
                "sra": {"enable": True, "resources": GPU, "weight": 4},
            }
        )
    ),
    "sra": lambda: SraPlugin(Arguments({"resources": GPU, "weight": 3})),
    "binpack (shape)": lambda: BinpackPlugin(
        Arguments(
            {
                "shape": [{"utilization": 20, "score": 1}, {"utilization": 90, "score": 9}],
                "resources": [{"name": GPU, "weight": 2}, {"name": "cpu"}, {"name": "memory"}],
            }
        )
    ),
}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(node_shapes, usage), min_size=2, max_size=8),
    st.tuples(amounts, amounts, amounts),
    st.data(),
)
def test_row_answers_equal_the_full_vector_bit_for_bit(
    layout: list[Any], request: tuple[int, int, int], data: st.DataObject
) -> None:
    # A row-local plugin is asked again for the changed rows only; one row takes a Python
    # float path. Both must give exactly the full evaluation's values.
    nodes = cluster([a for a, _ in layout], [u for _, u in layout])
    resreq = {k: float(v) for k, v in zip(NAMES, request, strict=True) if v}
    task = TaskInfo(uid="t", name="t", resreq=Resource(resreq))
    rows = np.array(
        data.draw(st.lists(st.integers(0, len(layout) - 1), min_size=1, unique=True)),
        dtype=np.int64,
    )
    for make in ROW_LOCAL_SCORERS.values():
        plugin = make()
        full = plugin.node_score(task, nodes)
        assert full is not None
        some = plugin.node_score(task, nodes, rows)
        # asked for one row, a plugin may answer a plain number (the hook's contract)
        assert some is not None and np.atleast_1d(some).tolist() == full[rows].tolist()
        for row in rows:
            one = plugin.node_score(task, nodes, np.array([row], dtype=np.int64))
            assert one is not None and np.atleast_1d(one).tolist() == [full[row]]
    answer = ProportionalPlugin(Arguments(PROPORTION)).predicate(task, nodes)
    some_answer = ProportionalPlugin(Arguments(PROPORTION)).predicate(task, nodes, rows)
    if answer is None:
        assert some_answer is None
    else:
        assert isinstance(answer, PredicateResult) and isinstance(some_answer, PredicateResult)
        assert some_answer.mask.tolist() == answer.mask[rows].tolist()


PROPORTION = {"resources": GPU, "resourceProportion": {f"{GPU}.cpu": 0.004, f"{GPU}.memory": 0}}
"""Rates small enough for the random clusters' tiny amounts (4 millicores per idle GPU)."""
