"""Nodes: ``NodeInfo`` per node, and the accounting rules of the columnar ``NodeTable``
(the ``ColumnTable`` of ``pumice.model.table`` with ``NodeInfo`` rows) that holds their numbers.

The table is the single store of every node's numbers (allocatable, used, releasing,
pipelined, pod counts, flags), one numpy row per node and one column per resource dimension,
so predicates and scores work on whole columns at once. A ``NodeInfo`` reads its resources from
its row and changes them only through ``add_task`` / ``remove_task`` / ``update_task``; the two
views therefore cannot disagree.

Accounting follows Volcano (``FutureIdle = Idle + Releasing - Pipelined``):

* a Releasing task uses resources and also counts as releasing;
* a Pipelined task only counts as pipelined (promised, not yet used);
* Allocated and Binding tasks must fit the idle resources, or ``NodeAccountingError``;
* Bound, Running and Unknown tasks use resources even when the node is overcommitted (the
  cluster is the truth; idle then goes negative in the table and nothing more fits);
* Succeeded and Failed tasks hold nothing.

Every non-terminal task counts towards the node's pod count.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from pumice.model.objects import TaskInfo
from pumice.model.resource import Resource
from pumice.model.table import (
    FIT_TOLERANCE,
    ColumnTable,
    FloatVector,
    NodeTableError,
    RequestCells,
)
from pumice.model.tasks import COMPLETED_STATUSES, TaskStatus
from pumice.plain import PumiceError

__all__ = [
    "DEFAULT_MAX_PODS",
    "FIT_TOLERANCE",
    "NodeAccountingError",
    "NodeFields",
    "NodeInfo",
    "NodeTable",
    "add_new_nodes",
]

DEFAULT_MAX_PODS = 110

# Status tests as int arithmetic in C: ``status & COMPLETED_STATUSES`` (or even
# ``int & status``, which Python hands to the enum's reflected operator) builds a new enum
# member in Python on every call, and these run for every placement.
_and = int.__and__
_COMPLETED = int(COMPLETED_STATUSES)
_NEEDS_IDLE = int(TaskStatus.ALLOCATED | TaskStatus.BINDING)
_PENDING, _PIPELINED, _RELEASING = TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.RELEASING


class NodeAccountingError(PumiceError, ValueError):
    """A task cannot be placed on, or taken off, a node as asked."""


class NodeFields(NamedTuple):
    """What a node is made of, read from a plain-dict Kubernetes Node (``of``)."""

    name: str
    allocatable: Resource
    max_pods: int
    labels: Mapping[str, str]
    taints: Sequence[Mapping[str, Any]]
    unschedulable: bool
    capacity: Resource
    node: Mapping[str, Any] | None

    @classmethod
    def of(cls, node: Mapping[str, Any]) -> NodeFields:
        """``pods`` of allocatable is the pod limit (110 without one)."""
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        alloc_list = dict(status.get("allocatable") or {})
        cap_list = dict(status.get("capacity") or alloc_list)
        pods = alloc_list.pop("pods", None)
        cap_list.pop("pods", None)
        max_pods = (
            DEFAULT_MAX_PODS if pods is None else int(Resource.from_k8s({"pods": pods})["pods"])
        )
        return cls(
            meta["name"],
            Resource.from_k8s(alloc_list),
            max_pods,
            meta.get("labels") or {},
            spec.get("taints") or (),
            bool(spec.get("unschedulable")),
            Resource.from_k8s(cap_list),
            node,
        )


def add_new_nodes(table: NodeTable, nodes: Sequence[NodeFields]) -> list[NodeInfo]:
    """Nodes made from ``nodes`` straight into ``table``, without tasks (as ``NodeInfo`` then
    ``table.add`` for each): the table grows once and each column is written in one step. A
    cluster's nodes arrive together (an initial list, a manifest), and building each in a
    table of its own first was most of what 5,000 nodes cost."""
    names = [f.name for f in nodes]
    if len(set(names)) != len(names) or any(name in table for name in names):
        raise NodeTableError("a node is named twice, or is already in the table")
    if not nodes:
        return []
    table.ensure_dims(k for f in nodes for k, v in f.allocatable.items() if v > 0)
    rows = table._new_rows(len(nodes))
    allocatable = np.array([table.vector(f.allocatable) for f in nodes]).T
    for column in (table._alloc, table._idle, table._future):
        column[:, rows] = allocatable
    table._max_pods[rows] = [f.max_pods for f in nodes]
    table._unschedulable[rows] = [f.unschedulable for f in nodes]
    made = []
    new = NodeInfo.__new__
    for r, f in enumerate(nodes, rows.start):
        info = new(NodeInfo)
        info.name = f.name
        info.allocatable = f.allocatable
        info.capacity = f.capacity
        info.labels = dict(f.labels)
        info.taints = tuple(f.taints)
        info.node = f.node
        info.tasks = {}
        info._accounted = {}
        info._table, info._row = table, r
        made.append(info)
    table._own_rows(made)
    return made


class NodeInfo:
    """One node: its labels, taints and flags, its tasks, and a row in a ``NodeTable``.

    A node made on its own lives in a one-row table of its own; ``NodeTable.add`` moves it,
    numbers and all, into a shared table.
    """

    __slots__ = (
        "_accounted",
        "_row",
        "_table",
        "allocatable",
        "capacity",
        "labels",
        "name",
        "node",
        "taints",
        "tasks",
    )

    def __init__(
        self,
        name: str,
        allocatable: Resource,
        *,
        max_pods: int = DEFAULT_MAX_PODS,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, Any]] = (),
        unschedulable: bool = False,
        capacity: Resource | None = None,
        node: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.allocatable = allocatable
        self.capacity = capacity if capacity is not None else allocatable
        self.labels: Mapping[str, str] = dict(labels or {})
        self.taints: tuple[Mapping[str, Any], ...] = tuple(taints)
        self.node = node
        self.tasks: dict[str, TaskInfo] = {}
        self._accounted: dict[str, tuple[TaskStatus, RequestCells]] = {}
        """Task uid -> the status and request cells it was accounted with (undone by those)."""
        # a one-row table of its own, with the node's dimensions from the start
        self._table = NodeTable([k for k, v in allocatable.items() if v > 0], capacity=1)
        self._row = 0
        t = self._table
        t._append_row(self)
        vec = t.vector(allocatable)
        t._alloc[:, 0] = vec
        t._idle[:, 0] = vec
        t._future[:, 0] = vec
        t._max_pods[0] = max_pods
        t._unschedulable[0] = unschedulable

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> NodeInfo:
        """Build from a plain-dict Kubernetes Node; ``pods`` of allocatable is the pod limit."""
        return cls.from_fields(NodeFields.of(node))

    @classmethod
    def from_fields(cls, f: NodeFields) -> NodeInfo:
        return cls(
            f.name,
            f.allocatable,
            max_pods=f.max_pods,
            labels=f.labels,
            taints=f.taints,
            unschedulable=f.unschedulable,
            capacity=f.capacity,
            node=f.node,
        )

    def _copy_into(self, table: NodeTable) -> NodeInfo:
        """A copy of this node living in ``table`` at the same row (for ``NodeTable.clone``)."""
        other = NodeInfo.__new__(NodeInfo)
        other.name = self.name
        other.allocatable = self.allocatable
        other.capacity = self.capacity
        other.labels = self.labels
        other.taints = self.taints
        other.node = self.node
        other.tasks = dict(self.tasks)
        other._accounted = dict(self._accounted)
        other._table = table
        other._row = self._row
        return other

    def _move_to(self, table: NodeTable, row: int) -> None:
        """Now in ``table`` at ``row`` (for ``NodeTable``, which has moved the numbers)."""
        self._table, self._row = table, row

    def set_spec(self, other: NodeInfo) -> None:
        """Take ``other``'s allocatable, labels, taints and flags, keeping this node's tasks
        and their accounting (a Node object was updated)."""
        t, r = self._table, self._row
        self.allocatable = other.allocatable
        self.capacity = other.capacity
        self.labels = other.labels
        self.taints = other.taints
        self.node = other.node
        t._set_allocatable(r, _padded(t.vector(other.allocatable), len(t._dims)))
        t._max_pods[r] = other.max_pods
        t._unschedulable[r] = other.unschedulable
        t.epoch += 1  # labels, taints or flags may have changed: cached masks are stale

    # -- the row ----------------------------------------------------------------------------

    @property
    def table(self) -> NodeTable:
        return self._table

    @property
    def row(self) -> int:
        return self._row

    @property
    def used(self) -> Resource:
        return self._table.resource(self._table._used[:, self._row])

    @property
    def releasing(self) -> Resource:
        return self._table.resource(self._table._releasing[:, self._row])

    @property
    def pipelined(self) -> Resource:
        return self._table.resource(self._table._pipelined[:, self._row])

    @property
    def idle(self) -> Resource:
        """Allocatable minus used (clipped at zero)."""
        return self._table.resource(self._table._idle[:, self._row])

    @property
    def future_idle(self) -> Resource:
        """Idle plus releasing minus pipelined (clipped at zero)."""
        return self._table.resource(self._table._future[:, self._row])

    @property
    def pod_count(self) -> int:
        return int(self._table._pods[self._row])

    @property
    def max_pods(self) -> int:
        return int(self._table._max_pods[self._row])

    @property
    def unschedulable(self) -> bool:
        return bool(self._table._unschedulable[self._row])

    # -- tasks ------------------------------------------------------------------------------

    def add_task(self, task: TaskInfo) -> None:
        """Account ``task`` on this node according to its status (see the module docstring)."""
        uid = task.uid
        if uid in self.tasks:
            raise NodeAccountingError(f"task {task.key} is already on node {self.name}")
        status = task.status
        t, r = self._table, self._row
        # One cell at a time, and only where the request is non-zero: a task asks for two or
        # three resources, and a numpy call per row slice costs more than the additions
        # (adding 0.0 changes no number, so the result is the same as adding the vector).
        cells = t.request_cells(task.resreq)
        if _and(status, _COMPLETED):
            pass
        elif status == _PIPELINED:
            pipelined, future = t._pipelined, t._future
            for i, amount in cells:
                pipelined[i, r] += amount
                future[i, r] -= amount
        elif status == _PENDING:
            raise NodeAccountingError(f"pending task {task.key} cannot be added to a node")
        else:
            used, idle_matrix, future = t._used, t._idle, t._future
            if _and(status, _NEEDS_IDLE):
                # the request within the idle resources in every dimension: an amount the
                # task does not ask for is 0.0, and 0.0 - idle > tolerance is idle < -tolerance
                idle = idle_matrix[:, r].tolist()
                fits = not (idle and min(idle) < -FIT_TOLERANCE)
                for i, amount in cells:
                    if amount - idle[i] > FIT_TOLERANCE:
                        fits = False
                if not fits:
                    self._refuse(task, t.vector(task.resreq).tolist(), idle)
                for i, amount in cells:  # idle is read already: set, not add in place
                    used[i, r] += amount
                    idle_matrix[i, r] = idle[i] - amount
                    future[i, r] -= amount
            elif status == _RELEASING:
                releasing = t._releasing
                for i, amount in cells:
                    used[i, r] += amount
                    idle_matrix[i, r] -= amount
                    releasing[i, r] += amount
            else:
                for i, amount in cells:
                    used[i, r] += amount
                    idle_matrix[i, r] -= amount
                    future[i, r] -= amount
        if not _and(status, _COMPLETED):
            t._pods[r] += 1
        self.tasks[uid] = task
        self._accounted[uid] = (status, cells)
        t._changes.append(r)  # NodeTable._touch, inline

    def _refuse(self, task: TaskInfo, need: list[float], idle: list[float]) -> None:
        """The ``NodeAccountingError`` of an Allocated or Binding task that does not fit."""
        t = self._table
        short = [t._dims[i] for i, amount in enumerate(need) if amount - idle[i] > FIT_TOLERANCE]
        raise NodeAccountingError(
            f"task {task.key} does not fit node {self.name}: insufficient {', '.join(short)}"
        )

    def remove_task(self, task: TaskInfo) -> None:
        """Undo the accounting done when the task was added (by the status it had then)."""
        entry = self._accounted.pop(task.uid, None)
        if entry is None:
            raise NodeAccountingError(f"task {task.key} is not on node {self.name}")
        del self.tasks[task.uid]
        status, cells = entry
        t, r = self._table, self._row
        if _and(status, _COMPLETED):
            return
        t._pods[r] -= 1
        t._touch(r)
        if status == TaskStatus.PIPELINED:
            pipelined, future = t._pipelined, t._future
            for i, amount in cells:
                pipelined[i, r] -= amount
                future[i, r] += amount
            return
        used, idle, future = t._used, t._idle, t._future
        other = t._releasing if status == TaskStatus.RELEASING else None
        for i, amount in cells:
            used[i, r] -= amount
            idle[i, r] += amount
            if other is not None:
                other[i, r] -= amount
            else:
                future[i, r] += amount

    def update_task(self, task: TaskInfo) -> None:
        """Re-account a task whose status changed."""
        entry = self._accounted.get(task.uid)
        if entry is not None and _and(entry[0], _USED_ONLY) and _and(task.status, _USED_ONLY):
            # Allocated -> Binding -> Bound -> Running all count as used and nothing else:
            # the row's numbers stay as they are (and are not logged as changed)
            self._accounted[task.uid] = (task.status, entry[1])
            return
        self.remove_task(task)
        self.add_task(task)

    @contextlib.contextmanager
    def without(self, tasks: Iterable[TaskInfo]) -> Iterator[None]:
        """This node as it will be once ``tasks`` (those of them on it) have gone, for the
        length of the block: their accounting is undone, and afterwards the row's numbers,
        ``tasks`` and their order are put back exactly as they were (saved, not recomputed,
        so no rounding creeps in). The row is logged as changed both times."""
        gone = [task for task in tasks if task.uid in self.tasks]
        if not gone:
            yield
            return
        t, r = self._table, self._row
        columns = [getattr(t, name)[:, r].copy() for name in t._MATRICES]
        pods = int(t._pods[r])
        held, accounted = dict(self.tasks), dict(self._accounted)
        for task in gone:
            self.remove_task(task)
        try:
            yield
        finally:
            for name, column in zip(t._MATRICES, columns, strict=True):
                getattr(t, name)[: len(column), r] = column
            t._pods[r] = pods
            self.tasks.clear()
            self.tasks.update(held)
            self._accounted = accounted
            t._touch(r)

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, tasks={len(self.tasks)})"


class NodeTable(ColumnTable[NodeInfo]):
    """Every node's accounting in columns, one row per ``NodeInfo`` (see ``ColumnTable``)."""


# Statuses accounted as used only (not releasing, pipelined, pending or done).
_USED_ONLY = int(
    TaskStatus.ALLOCATED
    | TaskStatus.BINDING
    | TaskStatus.BOUND
    | TaskStatus.RUNNING
    | TaskStatus.UNKNOWN
)


def _padded(vec: FloatVector, dims: int) -> FloatVector:
    """``vec`` extended with zeros to ``dims`` entries (dimensions added since it was made)."""
    if len(vec) >= dims:
        return vec
    return np.concatenate([vec, np.zeros(dims - len(vec))])
