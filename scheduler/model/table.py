"""``ColumnTable``: every node's accounting in columns, so predicates and scores work on whole
columns at once (see ``pumice.model.node`` for the accounting rules, ``NodeInfo`` and
``NodeTable``, the table of ``NodeInfo`` rows that everyone else uses).

This module does not import ``pumice.model.node``: it needs only the shape of a row object
(``TableRow``), so the table is generic in it and the two modules form no import circle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic, Protocol, Self, TypeVar

import numpy as np
import numpy.typing as npt

from pumice.model.resource import Resource
from pumice.plain import PumiceError

FloatMatrix = npt.NDArray[np.float64]
FloatVector = npt.NDArray[np.float64]
IntVector = npt.NDArray[np.int64]
BoolVector = npt.NDArray[np.bool_]
RequestCells = tuple[tuple[int, float], ...]

FIT_TOLERANCE = 1e-6
"""Slack allowed when checking that a request fits idle resources (canonical units)."""


class NodeTableError(PumiceError, ValueError):
    """A node the table cannot take: one of that name is in it already."""


class TableRow(Protocol):
    """What the table needs of the object in each of its rows (``NodeInfo``).

    The table arguments are ``Any`` because a row object keeps the concrete table subclass it
    lives in (``NodeTable``), which this module cannot name.
    """

    @property
    def name(self) -> str: ...

    @property
    def table(self) -> ColumnTable[Any]: ...

    @property
    def row(self) -> int: ...

    def _move_to(self, table: Any, row: int) -> None:
        """Now lives in ``table`` at ``row`` (the numbers are already there)."""

    def _copy_into(self, table: Any) -> Self:
        """A copy of this row object living in ``table`` at the same row."""


RowT = TypeVar("RowT", bound=TableRow)


class ColumnTable(Generic[RowT]):
    """Accounting of every node in columns: rows are nodes, columns are resource dimensions.

    Storage is column-major: each quantity (allocatable, used, releasing, pipelined, and the
    stored ``idle`` = allocatable - used and ``future_idle`` = idle + releasing - pipelined) is
    one ``(dims, capacity)`` array, so a resource column over every node is contiguous. The
    public matrices (``allocatable`` …) are ``(nodes, dims)`` views of it.

    Every change of a row's accounting is logged: ``version`` counts them and
    ``changed_rows(since)`` lists the rows changed after a version, so a consumer that cached
    something per row (a predicate mask, a score vector) refreshes only those rows. ``epoch``
    changes when rows are added, removed or moved, which invalidates any such cache.
    ``layout`` changes when the arrays themselves are replaced (a new dimension, more room):
    a view of a column taken earlier (``column``) is then stale.
    """

    _MATRICES = ("_alloc", "_used", "_releasing", "_pipelined", "_idle", "_future")
    _VECTORS = ("_pods", "_max_pods", "_unschedulable")
    _alloc: FloatMatrix
    _used: FloatMatrix
    _releasing: FloatMatrix
    _pipelined: FloatMatrix
    _idle: FloatMatrix
    _future: FloatMatrix

    def __init__(self, dims: Iterable[str] = ("cpu", "memory"), capacity: int = 8) -> None:
        # the columns are made at their size at once (``ensure_dims`` would stack each one)
        self._dims: list[str] = list(dict.fromkeys(dims))
        self._dim_index: dict[str, int] = {d: i for i, d in enumerate(self._dims)}
        self._n = 0
        self._cap = max(1, capacity)
        for attr in self._MATRICES:
            setattr(self, attr, np.zeros((len(self._dims), self._cap)))
        self._pods = np.zeros(self._cap, dtype=np.int64)
        self._max_pods = np.zeros(self._cap, dtype=np.int64)
        self._unschedulable = np.zeros(self._cap, dtype=np.bool_)
        self.nodes: list[RowT] = []
        self._row_of: dict[str, int] = {}
        self._vectors: dict[Resource, FloatVector] = {}
        self._request_cells: dict[Resource, RequestCells] = {}
        self._changes: list[int] = []
        self.epoch = 0
        self.layout = 0
        self._ranks: tuple[int, IntVector] | None = None
        self._in_order: tuple[int, bool] | None = None
        self._positions: dict[tuple[str, ...], tuple[tuple[int, ...], bool]] = {}
        """Dimension names -> their indices (-1: the table lacks it), for ``cells``."""

    # -- shape ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    @property
    def dims(self) -> Sequence[str]:
        """Resource dimension of each column."""
        return tuple(self._dims)

    @property
    def names(self) -> list[str]:
        """Node name of each row."""
        return [n.name for n in self.nodes]

    def __contains__(self, name: object) -> bool:
        return name in self._row_of

    def row(self, name: str) -> int:
        """Row index of the node called ``name`` (KeyError if absent)."""
        return self._row_of[name]

    def dim(self, name: str) -> int | None:
        """Column index of a resource dimension, or None if no node or task has it."""
        return self._dim_index.get(name)

    def ensure_dims(self, names: Iterable[str]) -> None:
        """Add zero columns for dimensions not seen yet."""
        new = [n for n in names if n not in self._dim_index]
        if not new:
            return
        for name in new:
            self._dim_index[name] = len(self._dims)
            self._dims.append(name)
        pad = np.zeros((len(new), self._cap))
        for attr in self._MATRICES:
            setattr(self, attr, np.vstack([getattr(self, attr), pad]))
        self.layout += 1
        self._vectors.clear()  # cached vectors are one entry per dimension
        self._request_cells.clear()
        self._positions.clear()

    def vector(self, resource: Resource) -> FloatVector:
        """``resource`` as a vector over this table's dimensions (adding new ones).

        Vectors are cached per distinct resource (a gang's tasks share one) and read-only.
        """
        vec = self._vectors.get(resource)
        if vec is not None:
            return vec
        self.ensure_dims(k for k, v in resource.items() if v > 0)
        vec = np.zeros(len(self._dims))
        index = self._dim_index
        for k, v in resource.items():
            if v > 0:
                vec[index[k]] = v
        vec.flags.writeable = False
        self._vectors[resource] = vec
        return vec

    def request_cells(self, resource: Resource) -> RequestCells:
        """``(dimension index, amount)`` of ``resource``'s non-zero amounts, cached beside its
        vector: what node accounting adds and takes back cell by cell."""
        cells = self._request_cells.get(resource)
        if cells is None:
            vec = self.vector(resource)
            cells = tuple((i, a) for i, a in enumerate(vec.tolist()) if a != 0.0)
            self._request_cells[resource] = cells
        return cells

    def resource(self, vec: FloatVector) -> Resource:
        """A vector over the dimensions back as a Resource (negative values clipped to zero)."""
        return Resource({d: float(v) for d, v in zip(self._dims, vec, strict=True) if v > 0})

    # -- columns (read-only views over live rows) ----------------------------------------------

    @property
    def allocatable(self) -> FloatMatrix:
        return self._alloc[:, : self._n].T

    @property
    def used(self) -> FloatMatrix:
        return self._used[:, : self._n].T

    @property
    def releasing(self) -> FloatMatrix:
        return self._releasing[:, : self._n].T

    @property
    def pipelined(self) -> FloatMatrix:
        return self._pipelined[:, : self._n].T

    @property
    def idle(self) -> FloatMatrix:
        """Allocatable minus used; negative where a node is overcommitted (stored, not
        recomputed)."""
        return self._idle[:, : self._n].T

    @property
    def future_idle(self) -> FloatMatrix:
        """Idle plus releasing minus pipelined: what will be free once releasing pods go."""
        return self._future[:, : self._n].T

    def column(self, quantity: str, dim: str) -> FloatVector | None:
        """One contiguous column over every node: ``quantity`` is ``allocatable``, ``used``,
        ``releasing``, ``pipelined``, ``idle`` or ``future_idle``; None for an unknown dim."""
        col = self._dim_index.get(dim)
        if col is None:
            return None
        matrix: FloatMatrix = getattr(self, _COLUMN_ATTRS[quantity])
        return matrix[col, : self._n]

    def cells(self, quantity: str, row: int, dims: tuple[str, ...]) -> list[float]:
        """``quantity`` of ``dims`` on one row, as Python floats (0.0 for a dim the table
        lacks): what one-row paths read, with one numpy call instead of one per cell."""
        values: list[float] = getattr(self, _COLUMN_ATTRS[quantity])[:, row].tolist()
        known = self._positions.get(dims)
        if known is None:
            index = self._dim_index
            positions = tuple(index.get(d, -1) for d in dims)
            prefix = positions == tuple(range(len(positions)))
            known = self._positions[dims] = (positions, prefix)
        if known[1]:  # the table's own first dims, in order: a slice
            return values[: len(dims)]
        return [values[i] if i >= 0 else 0.0 for i in known[0]]

    @property
    def pod_count(self) -> IntVector:
        return self._pods[: self._n]

    @property
    def max_pods(self) -> IntVector:
        return self._max_pods[: self._n]

    @property
    def unschedulable(self) -> BoolVector:
        return self._unschedulable[: self._n]

    @property
    def name_rank(self) -> IntVector:
        """Each row's rank when the nodes are sorted by name (for deterministic tie-breaks
        without comparing strings per task); computed once per epoch."""
        if self._ranks is None or self._ranks[0] != self.epoch:
            order = sorted(range(self._n), key=lambda r: self.nodes[r].name)
            ranks = np.empty(self._n, dtype=np.int64)
            ranks[order] = np.arange(self._n)
            self._ranks = (self.epoch, ranks)
        return self._ranks[1]

    @property
    def rows_in_name_order(self) -> bool:
        """Are the rows sorted by node name (then the first of tied rows has the smallest
        name)? Computed once per epoch, with ``name_rank``."""
        if self._in_order is None or self._in_order[0] != self.epoch:
            ranks = self.name_rank
            self._in_order = (self.epoch, bool((ranks == np.arange(len(ranks))).all()))
        return self._in_order[1]

    def row_fits(self, row: int, request: FloatVector) -> tuple[bool, bool]:
        """Does ``request`` (a vector over the dimensions) fit the row's idle, and its future
        idle, resources in every dimension (``FIT_TOLERANCE`` of slack)? In Python floats:
        one row, where numpy's per-call cost is more than the comparisons."""
        d = len(request)
        idle = self._idle[:d, row].tolist()
        future = self._future[:d, row].tolist()
        now = later = True
        for i, amount in enumerate(request.tolist()):
            need = amount - FIT_TOLERANCE
            if not idle[i] >= need:
                now = False
            if not future[i] >= need:
                later = False
        return now, later

    # -- change log -------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """How many row changes have been logged (rows added or removed change ``epoch``)."""
        return len(self._changes)

    def changed_rows(self, since: int) -> list[int]:
        """Rows whose accounting changed after ``version`` was ``since`` (may repeat)."""
        return self._changes[since:]

    def _touch(self, row: int) -> None:
        self._changes.append(row)

    # -- rows -------------------------------------------------------------------------------

    def add(self, node: RowT) -> None:
        """Move ``node``, with its current accounting, into this table."""
        if node.name in self._row_of:
            raise NodeTableError(f"node {node.name!r} is already in the table")
        old, old_row = node.table, node.row
        self._copy_row_in(node, old, old_row)
        old._drop_row(node.name)
        node._move_to(self, self._n - 1)

    def remove(self, name: str) -> RowT:
        """Take a node out (it keeps its accounting in a table of its own)."""
        node = self.nodes[self._row_of[name]]
        own = type(self)(self._dims)
        own._copy_row_in(node, self, node.row)
        self._drop_row(name)
        node._move_to(own, 0)
        return node

    def clone(self) -> Self:
        """An independent copy: arrays copied, every node a new ``NodeInfo`` over the copy
        (its task dictionaries copied, the tasks themselves shared). The change log starts
        empty."""
        other = type(self).__new__(type(self))
        other._dims = list(self._dims)
        other._dim_index = dict(self._dim_index)
        other._n, other._cap = self._n, self._cap
        for attr in (*self._MATRICES, *self._VECTORS):
            setattr(other, attr, getattr(self, attr).copy())
        other._vectors = dict(self._vectors)
        other._request_cells = dict(self._request_cells)
        other._positions = dict(self._positions)
        other._changes = []
        other.epoch = 0
        other.layout = 0
        current = self._ranks is not None and self._ranks[0] == self.epoch
        other._ranks = (0, self._ranks[1]) if current and self._ranks is not None else None
        in_order = self._in_order
        other._in_order = (0, in_order[1]) if in_order and in_order[0] == self.epoch else None
        other._row_of = dict(self._row_of)
        other.nodes = [node._copy_into(other) for node in self.nodes]
        return other

    def _append_row(self, node: RowT) -> int:
        """A new zeroed row for ``node``; returns its index."""
        if self._n == self._cap:
            self._grow()
        r = self._n
        for attr in self._MATRICES:
            getattr(self, attr)[:, r] = 0.0
        self._pods[r] = self._max_pods[r] = 0
        self._unschedulable[r] = False
        self.nodes.append(node)
        self._row_of[node.name] = r
        self._n += 1
        self.epoch += 1
        return r

    def _new_rows(self, count: int) -> slice:
        """``count`` new zeroed rows at the end (``pumice.model.node.add_new_nodes``), grown
        into at once; their nodes are given with ``_own_rows``."""
        first = self._n
        while self._cap < first + count:
            self._grow()
        rows = slice(first, first + count)
        for attr in self._MATRICES:
            getattr(self, attr)[:, rows] = 0.0
        self._pods[rows] = self._max_pods[rows] = 0
        self._unschedulable[rows] = False
        return rows

    def _own_rows(self, nodes: Sequence[RowT]) -> None:
        """The nodes of the rows ``_new_rows`` made, in order."""
        for node in nodes:
            self._row_of[node.name] = self._n
            self._n += 1
        self.nodes.extend(nodes)
        self.epoch += 1

    def _copy_row_in(self, node: RowT, src: ColumnTable[Any], src_row: int) -> None:
        self.ensure_dims(src._dims)
        r = self._append_row(node)
        cols = [self._dim_index[d] for d in src._dims]
        for attr in self._MATRICES:
            getattr(self, attr)[cols, r] = getattr(src, attr)[:, src_row]
        self._pods[r] = src._pods[src_row]
        self._max_pods[r] = src._max_pods[src_row]
        self._unschedulable[r] = src._unschedulable[src_row]

    def _drop_row(self, name: str) -> None:
        """Forget a row; the last row moves into its place."""
        r = self._row_of.pop(name)
        last = self._n - 1
        if r != last:
            for attr in self._MATRICES:
                arr = getattr(self, attr)
                arr[:, r] = arr[:, last]
            for vec in (self._pods, self._max_pods, self._unschedulable):
                vec[r] = vec[last]
            moved = self.nodes[last]
            self.nodes[r] = moved
            self._row_of[moved.name] = r
            moved._move_to(self, r)
        self.nodes.pop()
        self._n -= 1
        self.epoch += 1

    def _grow(self) -> None:
        self._cap *= 2
        self.layout += 1
        d = len(self._dims)
        for attr in self._MATRICES:
            old = getattr(self, attr)
            new = np.zeros((d, self._cap))
            new[:, : old.shape[1]] = old
            setattr(self, attr, new)
        for attr in self._VECTORS:
            old = getattr(self, attr)
            new = np.zeros(self._cap, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, attr, new)

    def _set_allocatable(self, row: int, vec: FloatVector) -> None:
        """Replace a row's allocatable, keeping the stored idle columns right."""
        delta = vec - self._alloc[:, row]
        self._alloc[:, row] = vec
        self._idle[:, row] += delta
        self._future[:, row] += delta
        self._touch(row)


_COLUMN_ATTRS = {
    "allocatable": "_alloc",
    "used": "_used",
    "releasing": "_releasing",
    "pipelined": "_pipelined",
    "idle": "_idle",
    "future_idle": "_future",
}
