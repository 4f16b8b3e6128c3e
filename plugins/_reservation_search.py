"""Which nodes to lock for one queue: the node-reservation plugin's search.

Every quantity is a fraction of the cluster's total in one requested dimension, so the four
terms of the score share a unit. For a combination of ``n`` nodes (``N`` in the cluster)::

    score = 0.40 * (1 - waste / total)      waste = Σ allocatable - target
          + 0.35 * used / target            used  = the queue's own requests on the nodes
          + 0.15 * (1 - n / N)
          + 0.10 * idle / total             idle  = the nodes' idle resources

``waste / total`` and ``idle / total`` are the mean over the requested dimensions of each
dimension's fraction (so each term stays within [0, 1] however many dimensions are asked
for); ``used / target`` is Σ used fractions / Σ target fractions, capped at 1. This is the
normalised form of the design's ``0.4 / (sum - target) + …``, which divides by zero at a
perfect fit and adds quantities of different units. The highest score wins; equal scores (within
1e-12) go to the lexicographically smallest sorted list of node names.

A *resource* request is met by a combination whose allocatable covers the target in every
requested dimension; a *count* request (a percentage) by exactly that many nodes. Nodes in
``fixed`` (the survivors of an existing lock being repaired) are always part of the answer.

Search. With at most ``EXACT_LIMIT`` (16) candidates every combination is scored at once
(at most 65,536 rows of a numpy matrix). Beyond that, the heuristic:

1. *greedy seeds*: the candidates are walked in three orders — the queue's own usage first,
   the largest allocatable first, the best per-node score first (names break ties) — adding
   nodes until the next one would complete the cover; the completing node is then the best
   scoring one of *all* remaining candidates that completes it, and nodes whose removal still
   leaves a cover are dropped again;
2. *shortlist*: the seeds' nodes plus the leading nodes of each order, up to 16, are searched
   exactly;
3. the best of the seeds and the shortlist's answer wins.

A count request with more than 16 candidates takes the ``k`` nodes of highest per-node
contribution (the score is a sum over nodes for a fixed ``n``, so this is exact except where
the cap on ``used / target`` binds). ``bench/bench_reservation.py`` times the search at 5,000
nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pumice import FloatMatrix, FloatVector, IntVector

EXACT_LIMIT = 16
"""Up to this many candidate nodes, every combination is scored."""
W_WASTE, W_USED, W_COUNT, W_IDLE = 0.40, 0.35, 0.15, 0.10
COVER_TOLERANCE = 1e-9
"""Slack (as a fraction of the cluster total) when checking that nodes cover a target."""
TIE = 1e-12


@dataclass(frozen=True, slots=True)
class Candidates:
    """The nodes a queue may lock, sorted by name, with their figures as fractions of the
    cluster total over the requested dimensions (rows: nodes, columns: dimensions)."""

    names: Sequence[str]
    allocatable: FloatMatrix
    used: FloatMatrix
    idle: FloatMatrix
    cluster_nodes: int


@dataclass(frozen=True, slots=True)
class Choice:
    """The chosen nodes (indices into the candidates, ascending) and their score."""

    rows: tuple[int, ...]
    score: float


def scores(
    cand: Candidates, target: FloatVector, alloc: FloatMatrix, used: FloatMatrix,
    idle: FloatMatrix, count: npt.NDArray[np.float64],
) -> FloatVector:  # fmt: skip
    """The score of combinations given their summed figures (one row per combination)."""
    dims = max(len(target), 1)
    waste = (alloc - target).sum(axis=1) / dims
    wanted = float(target.sum())
    used_part = np.minimum(used.sum(axis=1) / wanted, 1.0) if wanted > 0 else 0.0
    idle_part = idle.sum(axis=1) / dims
    n_part = 1.0 - count / max(cand.cluster_nodes, 1)
    result: FloatVector = (
        W_WASTE * (1.0 - waste) + W_USED * used_part + W_COUNT * n_part + W_IDLE * idle_part
    )
    return result


def score_of(cand: Candidates, target: FloatVector, rows: Sequence[int]) -> float:
    """The score of one combination."""
    idx = np.asarray(rows, dtype=np.int64)
    return float(
        scores(
            cand,
            target,
            cand.allocatable[idx].sum(axis=0, keepdims=True),
            cand.used[idx].sum(axis=0, keepdims=True),
            cand.idle[idx].sum(axis=0, keepdims=True),
            np.array([float(len(idx))]),
        )[0]
    )


def covers(cand: Candidates, target: FloatVector, rows: Sequence[int]) -> bool:
    """Does the allocatable of ``rows`` cover ``target`` in every dimension?"""
    total = cand.allocatable[np.asarray(rows, dtype=np.int64)].sum(axis=0)
    return bool(np.all(total >= target - COVER_TOLERANCE))


def _better(a: Choice, b: Choice | None, names: Sequence[str]) -> bool:
    """Does ``a`` beat ``b``: a higher score, or an equal one and smaller sorted names?"""
    if b is None:
        return True
    if a.score > b.score + TIE:
        return True
    if a.score < b.score - TIE:
        return False
    return [names[r] for r in a.rows] < [names[r] for r in b.rows]


def choose(
    cand: Candidates,
    target: FloatVector,
    count: int | None = None,
    fixed: Sequence[int] = (),
) -> Choice | None:
    """The best combination for ``target`` (a resource request) or of exactly ``count`` nodes
    (a count request) that includes ``fixed``; None when no combination qualifies."""
    n = len(cand.names)
    if count is not None and not len(fixed) <= count <= n:
        return None
    if n <= EXACT_LIMIT:
        return _exact(cand, target, count, np.arange(n, dtype=np.int64), fixed)
    if count is not None:
        return _top_count(cand, target, count, fixed)
    return _heuristic(cand, target, fixed)


def _exact(
    cand: Candidates,
    target: FloatVector,
    count: int | None,
    pool: IntVector,
    fixed: Sequence[int],
) -> Choice | None:
    """Score every combination of the nodes in ``pool`` (at most ``EXACT_LIMIT``)."""
    m = len(pool)
    if m == 0:
        return None
    masks = np.arange(1, 1 << m, dtype=np.int64)
    keep = np.ones(len(masks), dtype=np.bool_)
    position = {int(row): i for i, row in enumerate(pool)}
    for row in fixed:
        keep &= ((masks >> position[int(row)]) & 1) > 0
    sizes = _subset_sums(np.ones((m, 1)))[:, 0]
    alloc = _subset_sums(cand.allocatable[pool])
    if count is not None:
        keep &= sizes == count
    else:
        keep &= np.all(alloc >= target - COVER_TOLERANCE, axis=1)
    if not keep.any():
        return None
    values = scores(
        cand,
        target,
        alloc[keep],
        _subset_sums(cand.used[pool])[keep],
        _subset_sums(cand.idle[pool])[keep],
        sizes[keep],
    )
    best = float(values.max())
    tied = masks[keep][values >= best - TIE]
    bits = ((tied[:, None] >> np.arange(m, dtype=np.int64)) & 1).astype(np.float64)
    winner = bits[_smallest_list(bits)]
    rows = tuple(int(pool[j]) for j in np.flatnonzero(winner))
    return Choice(rows, score_of(cand, target, rows))


def _subset_sums(values: FloatMatrix) -> FloatMatrix:
    """Row ``mask - 1`` holds the sum of ``values``' rows in the non-empty subset ``mask``
    (bit i = row i), built by doubling: O(2^m) additions, no matrix product."""
    sums = np.zeros((1, values.shape[1]))
    for row in values:
        sums = np.concatenate([sums, sums + row])
    result: FloatMatrix = sums[1:]
    return result


def _smallest_list(bits: FloatMatrix) -> int:
    """The row whose ascending list of set columns is lexicographically smallest (columns are
    in name order, so this is the smallest sorted list of node names)."""
    alive = np.arange(len(bits))
    seen = np.cumsum(bits, axis=1)
    for step in range(bits.shape[1]):
        # each row's (step+1)-th chosen column; a row that has no more is a prefix: it wins
        has_more = seen[alive, -1] > step
        if not has_more.all():
            return int(alive[~has_more][0])
        column = np.argmax(seen[alive] > step, axis=1)
        alive = alive[column == column.min()]
        if len(alive) == 1:
            break
    return int(alive[0])


def _per_node(cand: Candidates, target: FloatVector) -> FloatVector:
    """Each node's own part of the score (what it adds to a combination of fixed size)."""
    dims = max(len(target), 1)
    wanted = float(target.sum())
    used = cand.used.sum(axis=1) / wanted if wanted > 0 else np.zeros(len(cand.names))
    part: FloatVector = (
        -W_WASTE * cand.allocatable.sum(axis=1) / dims
        + W_USED * used
        + W_IDLE * cand.idle.sum(axis=1) / dims
    )
    return part


def _orders(cand: Candidates, target: FloatVector) -> list[IntVector]:
    """The candidate orders the heuristic walks (ties by name: rows are sorted by name)."""
    rank = np.arange(len(cand.names))
    by_used = np.lexsort((rank, -cand.used.sum(axis=1)))
    by_size = np.lexsort((rank, -cand.allocatable.sum(axis=1)))
    by_score = np.lexsort((rank, -_per_node(cand, target)))
    return [by_used, by_size, by_score]


def _top_count(
    cand: Candidates, target: FloatVector, count: int, fixed: Sequence[int]
) -> Choice | None:
    fixed_set = {int(r) for r in fixed}
    order = _orders(cand, target)[2]
    rest = [int(r) for r in order if int(r) not in fixed_set][: count - len(fixed_set)]
    rows = sorted(fixed_set | set(rest))
    return Choice(tuple(rows), score_of(cand, target, rows))


def _greedy(
    cand: Candidates, target: FloatVector, order: IntVector, fixed: Sequence[int]
) -> Choice | None:
    """Walk ``order`` until some node completes the cover, complete it with the best
    completing node of all, then drop nodes that are not needed."""
    alloc = cand.allocatable
    fixed_rows = np.array(sorted({int(r) for r in fixed}), dtype=np.int64)
    base = alloc[fixed_rows].sum(axis=0)
    walk = order[~np.isin(order, fixed_rows)]
    # have[i]: what the fixed nodes and the first i walked nodes hold
    have = base + np.vstack([np.zeros((1, len(target))), np.cumsum(alloc[walk], axis=0)])
    if not np.all(have[-1] >= target - COVER_TOLERANCE):
        return None

    def completing(i: int) -> npt.NDArray[np.bool_]:
        ok: npt.NDArray[np.bool_] = np.all(alloc >= target - have[i] - COVER_TOLERANCE, axis=1)
        ok[fixed_rows] = False
        ok[walk[:i]] = False
        return ok

    if np.all(base >= target - COVER_TOLERANCE):
        chosen = fixed_rows.tolist()
    else:
        # the deficit shrinks along the walk, so "some node completes it" is (nearly)
        # monotone: bisect for the first prefix it holds for
        lo, hi = 0, len(walk) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if completing(mid).any():
                hi = mid
            else:
                lo = mid + 1
        rows = np.flatnonzero(completing(lo))
        if not len(rows):
            return None
        prefix = np.concatenate([fixed_rows, walk[:lo]])
        values = scores(
            cand,
            target,
            alloc[rows] + have[lo],
            cand.used[rows] + cand.used[prefix].sum(axis=0),
            cand.idle[rows] + cand.idle[prefix].sum(axis=0),
            np.full(len(rows), float(len(prefix) + 1)),
        )
        best = int(rows[int(np.argmax(values))])  # the first maximum: the smallest name
        chosen = [*prefix.tolist(), best]
    total = alloc[chosen].sum(axis=0)
    fixed_set = set(fixed_rows.tolist())
    kept: list[int] = []
    for row in chosen:  # drop what is not needed, in walk order
        rest = total - alloc[row]
        if row not in fixed_set and np.all(rest >= target - COVER_TOLERANCE):
            total = rest
        else:
            kept.append(row)
    rows_kept = sorted(kept)
    return Choice(tuple(rows_kept), score_of(cand, target, rows_kept))


def _heuristic(cand: Candidates, target: FloatVector, fixed: Sequence[int]) -> Choice | None:
    best: Choice | None = None
    orders = _orders(cand, target)
    shortlist: list[int] = [int(r) for r in fixed]
    for order in orders:
        seed = _greedy(cand, target, order, fixed)
        if seed is not None:
            if _better(seed, best, cand.names):
                best = seed
            shortlist += [r for r in seed.rows if r not in shortlist]
    for depth in range(len(cand.names)):
        if len(shortlist) >= EXACT_LIMIT:
            break
        for order in orders:
            row = int(order[depth])
            if row not in shortlist and len(shortlist) < EXACT_LIMIT:
                shortlist.append(row)
    pool = np.array(sorted(shortlist[:EXACT_LIMIT]), dtype=np.int64)
    in_pool = set(pool.tolist())
    if all(int(r) in in_pool for r in fixed):
        exact = _exact(cand, target, None, pool, fixed)
        if exact is not None and _better(exact, best, cand.names):
            best = exact
    return best
