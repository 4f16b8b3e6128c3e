"""Allocatable columns prepared once per session for the resource-scoring plugins.

A node's allocatable does not change during a session (the snapshot is fixed; only ``used``
moves as tasks are placed), so what the scores derive from it — which nodes have the resource,
the reciprocal, the fit limit — is computed once per column and reused for every task, in
contiguous arrays. The cache is tied to one table (and its number of rows): scoring another
table starts afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pumice import FIT_TOLERANCE, NodeTable

FloatVector = npt.NDArray[np.float64]
BoolVector = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Capacity:
    """One resource's allocatable over the nodes, with what the scores derive from it."""

    allocatable: FloatVector
    has: BoolVector
    """Nodes with some allocatable of the resource."""
    present: FloatVector
    """``has`` as 1.0 / 0.0."""
    inverse: FloatVector
    """``1 / allocatable``, 0 where the node has none (so a ratio there is 0)."""
    limit: FloatVector
    """The most a node can hold (allocatable plus the fit tolerance); infinite where the node
    has none, so a missing resource never counts as overflowing."""

    @classmethod
    def of(cls, allocatable: FloatVector) -> Capacity:
        allocatable = np.ascontiguousarray(allocatable, dtype=np.float64)
        has = allocatable > 0
        inverse = np.zeros(len(allocatable))
        np.divide(1.0, allocatable, out=inverse, where=has)
        limit = np.where(has, allocatable + FIT_TOLERANCE, np.inf)
        arrays = (allocatable, has, has.astype(np.float64), inverse, limit)
        for array in arrays:
            array.flags.writeable = False
        return cls(*arrays)


class CapacityCache:
    """``Capacity`` per resource column of one table, and other vectors that depend only on
    allocatable, made on first use."""

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._size = 0
        self._columns: dict[int, Capacity] = {}
        self._derived: dict[Hashable, FloatVector] = {}

    def fits(self, nodes: NodeTable) -> bool:
        """Does the cache describe ``nodes`` (same table, same number of rows)?"""
        return nodes is self._table and len(nodes) == self._size

    def _check(self, nodes: NodeTable) -> None:
        if not self.fits(nodes):
            self._table, self._size = nodes, len(nodes)
            self._columns = {}
            self._derived = {}

    def column(self, nodes: NodeTable, col: int) -> Capacity:
        self._check(nodes)
        found = self._columns.get(col)
        if found is None:
            found = self._columns[col] = Capacity.of(nodes.allocatable[:, col])
        return found

    def derived(
        self, nodes: NodeTable, key: Hashable, make: Callable[[], FloatVector]
    ) -> FloatVector:
        """The vector ``make()`` computes for ``nodes`` (which must depend on allocatable
        only), computed once per ``key``; read-only."""
        self._check(nodes)
        found = self._derived.get(key)
        if found is None:
            found = self._derived[key] = make()
            found.flags.writeable = False
        return found
