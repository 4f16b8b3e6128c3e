"""Nodes: ``NodeInfo`` per node, and the columnar ``NodeTable`` that holds their accounting.

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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice.model.objects import TaskInfo
from pumice.model.resource import Resource
from pumice.model.status import COMPLETED_STATUSES, TaskStatus

FloatMatrix = npt.NDArray[np.float64]
FloatVector = npt.NDArray[np.float64]
IntVector = npt.NDArray[np.int64]
BoolVector = npt.NDArray[np.bool_]

FIT_TOLERANCE = 1e-6
"""Slack allowed when checking that a request fits idle resources (canonical units)."""

DEFAULT_MAX_PODS = 110


class NodeAccountingError(ValueError):
    """A task cannot be placed on, or taken off, a node as asked."""


class NodeTable:
    """Accounting of every node in columns: rows are nodes, columns are resource dimensions."""

    def __init__(self, dims: Iterable[str] = ("cpu", "memory")) -> None:
        self._dims: list[str] = []
        self._dim_index: dict[str, int] = {}
        self._n = 0
        self._cap = 8
        self._alloc = np.zeros((self._cap, 0))
        self._used = np.zeros((self._cap, 0))
        self._releasing = np.zeros((self._cap, 0))
        self._pipelined = np.zeros((self._cap, 0))
        self._pods = np.zeros(self._cap, dtype=np.int64)
        self._max_pods = np.zeros(self._cap, dtype=np.int64)
        self._unschedulable = np.zeros(self._cap, dtype=np.bool_)
        self.nodes: list[NodeInfo] = []
        self._row_of: dict[str, int] = {}
        self.ensure_dims(dims)

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
        pad = np.zeros((self._cap, len(new)))
        self._alloc = np.hstack([self._alloc, pad])
        self._used = np.hstack([self._used, pad])
        self._releasing = np.hstack([self._releasing, pad])
        self._pipelined = np.hstack([self._pipelined, pad])

    def vector(self, resource: Resource) -> FloatVector:
        """``resource`` as a row vector over this table's dimensions (adding new ones)."""
        self.ensure_dims(k for k, v in resource.items() if v > 0)
        vec = np.zeros(len(self._dims))
        index = self._dim_index
        for k, v in resource.items():
            if v > 0:
                vec[index[k]] = v
        return vec

    def resource(self, vec: FloatVector) -> Resource:
        """A row vector back as a Resource (negative values clipped to zero)."""
        return Resource({d: float(v) for d, v in zip(self._dims, vec, strict=True) if v > 0})

    # -- columns (read-only views over live rows) ----------------------------------------------

    @property
    def allocatable(self) -> FloatMatrix:
        return self._alloc[: self._n]

    @property
    def used(self) -> FloatMatrix:
        return self._used[: self._n]

    @property
    def releasing(self) -> FloatMatrix:
        return self._releasing[: self._n]

    @property
    def pipelined(self) -> FloatMatrix:
        return self._pipelined[: self._n]

    @property
    def idle(self) -> FloatMatrix:
        """Allocatable minus used; negative where a node is overcommitted."""
        return self.allocatable - self.used

    @property
    def future_idle(self) -> FloatMatrix:
        """Idle plus releasing minus pipelined: what will be free once releasing pods go."""
        return self.idle + self.releasing - self.pipelined

    @property
    def pod_count(self) -> IntVector:
        return self._pods[: self._n]

    @property
    def max_pods(self) -> IntVector:
        return self._max_pods[: self._n]

    @property
    def unschedulable(self) -> BoolVector:
        return self._unschedulable[: self._n]

    # -- rows -------------------------------------------------------------------------------

    def add(self, node: NodeInfo) -> None:
        """Move ``node``, with its current accounting, into this table."""
        if node.name in self._row_of:
            raise ValueError(f"node {node.name!r} is already in the table")
        old, old_row = node._table, node._row
        self._copy_row_in(node, old, old_row)
        old._drop_row(node.name)
        node._table, node._row = self, self._n - 1

    def remove(self, name: str) -> NodeInfo:
        """Take a node out (it keeps its accounting in a table of its own)."""
        node = self.nodes[self._row_of[name]]
        own = NodeTable(self._dims)
        own._copy_row_in(node, self, node._row)
        self._drop_row(name)
        node._table, node._row = own, 0
        return node

    def _append_row(self, node: NodeInfo) -> int:
        """A new zeroed row for ``node``; returns its index."""
        if self._n == self._cap:
            self._grow()
        r = self._n
        for arr in (self._alloc, self._used, self._releasing, self._pipelined):
            arr[r] = 0.0
        self._pods[r] = self._max_pods[r] = 0
        self._unschedulable[r] = False
        self.nodes.append(node)
        self._row_of[node.name] = r
        self._n += 1
        return r

    def _copy_row_in(self, node: NodeInfo, src: NodeTable, src_row: int) -> None:
        self.ensure_dims(src._dims)
        r = self._append_row(node)
        cols = [self._dim_index[d] for d in src._dims]
        for mine, theirs in (
            (self._alloc, src._alloc),
            (self._used, src._used),
            (self._releasing, src._releasing),
            (self._pipelined, src._pipelined),
        ):
            mine[r, cols] = theirs[src_row]
        self._pods[r] = src._pods[src_row]
        self._max_pods[r] = src._max_pods[src_row]
        self._unschedulable[r] = src._unschedulable[src_row]

    def _drop_row(self, name: str) -> None:
        """Forget a row; the last row moves into its place."""
        r = self._row_of.pop(name)
        last = self._n - 1
        if r != last:
            for arr in (self._alloc, self._used, self._releasing, self._pipelined):
                arr[r] = arr[last]
            for vec in (self._pods, self._max_pods, self._unschedulable):
                vec[r] = vec[last]
            moved = self.nodes[last]
            self.nodes[r] = moved
            self._row_of[moved.name] = r
            moved._row = r
        self.nodes.pop()
        self._n -= 1

    def _grow(self) -> None:
        self._cap *= 2
        d = len(self._dims)
        for attr in ("_alloc", "_used", "_releasing", "_pipelined"):
            old = getattr(self, attr)
            new = np.zeros((self._cap, d))
            new[: old.shape[0]] = old
            setattr(self, attr, new)
        for attr in ("_pods", "_max_pods", "_unschedulable"):
            old = getattr(self, attr)
            new = np.zeros(self._cap, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, attr, new)


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
        self._accounted: dict[str, tuple[TaskStatus, FloatVector]] = {}
        self._table = NodeTable(())
        self._row = 0
        t = self._table
        t._append_row(self)
        t._alloc[0] = t.vector(allocatable)
        t._max_pods[0] = max_pods
        t._unschedulable[0] = unschedulable

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> NodeInfo:
        """Build from a plain-dict Kubernetes Node; ``pods`` of allocatable is the pod limit."""
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
            max_pods=max_pods,
            labels=meta.get("labels") or {},
            taints=spec.get("taints") or (),
            unschedulable=bool(spec.get("unschedulable")),
            capacity=Resource.from_k8s(cap_list),
            node=node,
        )

    # -- the row ----------------------------------------------------------------------------

    @property
    def table(self) -> NodeTable:
        return self._table

    @property
    def row(self) -> int:
        return self._row

    @property
    def used(self) -> Resource:
        return self._table.resource(self._table._used[self._row])

    @property
    def releasing(self) -> Resource:
        return self._table.resource(self._table._releasing[self._row])

    @property
    def pipelined(self) -> Resource:
        return self._table.resource(self._table._pipelined[self._row])

    @property
    def idle(self) -> Resource:
        """Allocatable minus used (clipped at zero)."""
        t, r = self._table, self._row
        return t.resource(t._alloc[r] - t._used[r])

    @property
    def future_idle(self) -> Resource:
        """Idle plus releasing minus pipelined (clipped at zero)."""
        t, r = self._table, self._row
        return t.resource(t._alloc[r] - t._used[r] + t._releasing[r] - t._pipelined[r])

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
        if task.uid in self.tasks:
            raise NodeAccountingError(f"task {task.key} is already on node {self.name}")
        status = task.status
        t, r = self._table, self._row
        vec = t.vector(task.resreq)
        if status & COMPLETED_STATUSES:
            pass
        elif status == TaskStatus.PIPELINED:
            t._pipelined[r] += vec
        elif status == TaskStatus.PENDING:
            raise NodeAccountingError(f"pending task {task.key} cannot be added to a node")
        else:
            if status & (TaskStatus.ALLOCATED | TaskStatus.BINDING):
                short = vec - (t._alloc[r] - t._used[r]) > FIT_TOLERANCE
                if short.any():
                    names = [t._dims[i] for i in np.flatnonzero(short)]
                    raise NodeAccountingError(
                        f"task {task.key} does not fit node {self.name}: "
                        f"insufficient {', '.join(names)}"
                    )
            t._used[r] += vec
            if status == TaskStatus.RELEASING:
                t._releasing[r] += vec
        if not status & COMPLETED_STATUSES:
            t._pods[r] += 1
        self.tasks[task.uid] = task
        self._accounted[task.uid] = (status, vec)

    def remove_task(self, task: TaskInfo) -> None:
        """Undo the accounting done when the task was added (by the status it had then)."""
        entry = self._accounted.pop(task.uid, None)
        if entry is None:
            raise NodeAccountingError(f"task {task.key} is not on node {self.name}")
        del self.tasks[task.uid]
        status, vec = entry
        t, r = self._table, self._row
        if len(vec) < len(t._dims):
            vec = np.concatenate([vec, np.zeros(len(t._dims) - len(vec))])
        if status & COMPLETED_STATUSES:
            return
        t._pods[r] -= 1
        if status == TaskStatus.PIPELINED:
            t._pipelined[r] -= vec
            return
        t._used[r] -= vec
        if status == TaskStatus.RELEASING:
            t._releasing[r] -= vec

    def update_task(self, task: TaskInfo) -> None:
        """Re-account a task whose status changed."""
        self.remove_task(task)
        self.add_task(task)

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, tasks={len(self.tasks)})"
