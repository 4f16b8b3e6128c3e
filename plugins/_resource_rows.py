"""nodeorder's resource scores for one row, in Python floats (a private helper, not a plugin).

LeastAllocated, MostAllocated and BalancedAllocation over cpu and memory, as
``pumice.plugins.nodeorder``'s vector path computes them, operation for operation: the same
IEEE double arithmetic in the same order, ``floor`` and ``trunc`` alike, so every score is bit
for bit the vector path's (ties stay ties). After a placement the session refreshes one row of
each cached shape with these (``Plugin.node_score_row``), where numpy's per-call cost on one
element is more than the arithmetic.

``resource_row_score`` makes the function once per distinct request. The general function
follows the vector path's formulas literally; the common configuration (LeastAllocated and
BalancedAllocation, no MostAllocated) on a node with both resources gets a function with the
helpers written out, which computes the very same sums.
"""

from __future__ import annotations

import math

from pumice import NodeTable, RowScore

MAX_NODE_SCORE = 100
SCORED = ("cpu", "memory")

_floor, _trunc = math.floor, math.trunc


def no_score(row: int) -> float:
    """The resource scores when every one of them has weight 0."""
    return 0.0


def cell(nodes: NodeTable, quantity: str, dim: str) -> RowScore:
    """A reader of one column's cell as a Python float (0.0 for a dimension the table lacks)."""
    column = nodes.column(quantity, dim)
    return no_score if column is None else column.item


def combine_two(score0: float, score1: float, alloc0: float, alloc1: float) -> float:
    """nodeorder's ``_combine`` for one node's two resources."""
    total = 0.0
    count = 0.0
    if alloc0 > 0:
        total += score0
        count += 1
    if alloc1 > 0:
        total += score1
        count += 1
    return float(math.floor(total / count)) if count > 0 else 0.0


def resource_row_score(
    nodes: NodeTable,
    weights: tuple[int, int, int],
    request: tuple[float, float, float, float],
) -> RowScore:
    """The summed resource scores of one row for a task whose non-zero request of cpu and
    memory and own request of them are ``request`` (``n0, n1, o0, o1``), with the
    ``(least, most, balanced)`` weights."""
    least_weight, most_weight, balanced_weight = weights
    if not (least_weight or most_weight or balanced_weight):
        return no_score
    a0_of, a1_of = (cell(nodes, "allocatable", name) for name in SCORED)
    u0_of, u1_of = (cell(nodes, "used", name) for name in SCORED)
    n0, n1, o0, o1 = request
    balanced = bool(balanced_weight and (o0 or o1))

    def score(row: int) -> float:
        a0, a1, u0, u1 = a0_of(row), a1_of(row), u0_of(row), u1_of(row)
        score = 0.0
        if least_weight or most_weight:
            q0, q1 = u0 + n0, u1 + n1
            if least_weight:
                least0 = (
                    0.0
                    if q0 > a0
                    else math.floor((a0 - q0) * MAX_NODE_SCORE / (a0 if a0 > 0 else 1))
                )
                least1 = (
                    0.0
                    if q1 > a1
                    else math.floor((a1 - q1) * MAX_NODE_SCORE / (a1 if a1 > 0 else 1))
                )
                score += least_weight * combine_two(least0, least1, a0, a1)
            if most_weight:
                most0 = math.floor(min(q0, a0) * MAX_NODE_SCORE / (a0 if a0 > 0 else 1))
                most1 = math.floor(min(q1, a1) * MAX_NODE_SCORE / (a1 if a1 > 0 else 1))
                score += most_weight * combine_two(most0, most1, a0, a1)
        if balanced:
            f0 = min((u0 + o0) / (a0 if a0 > 0 else 1.0), 1.0)
            f1 = min((u1 + o1) / (a1 if a1 > 0 else 1.0), 1.0)
            std = abs((f0 - f1) / 2) if a0 > 0 and a1 > 0 else 0.0
            score += balanced_weight * float(math.trunc((1.0 - std) * MAX_NODE_SCORE))
        return score

    if not (least_weight and not most_weight and balanced):
        return score

    def least_and_balanced(row: int) -> float:
        # ``score`` for a node with both resources, its helpers written out: with a0 > 0 and
        # a1 > 0, ``combine_two`` is floor((0.0 + least0 + least1) / 2.0), min(x, 1.0) keeps
        # x unless x > 1.0, and the score starts from 0.0
        a0, a1 = a0_of(row), a1_of(row)
        if not (a0 > 0 and a1 > 0):
            return score(row)
        u0, u1 = u0_of(row), u1_of(row)
        q0, q1 = u0 + n0, u1 + n1
        least0 = 0.0 if q0 > a0 else _floor((a0 - q0) * MAX_NODE_SCORE / a0)
        least1 = 0.0 if q1 > a1 else _floor((a1 - q1) * MAX_NODE_SCORE / a1)
        total = 0.0 + least_weight * float(_floor((0.0 + least0 + least1) / 2.0))
        f0 = (u0 + o0) / a0
        if f0 > 1.0:
            f0 = 1.0
        f1 = (u1 + o1) / a1
        if f1 > 1.0:
            f1 = 1.0
        std = abs((f0 - f1) / 2)
        return total + balanced_weight * float(_trunc((1.0 - std) * MAX_NODE_SCORE))

    return least_and_balanced
