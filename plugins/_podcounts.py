"""Pod identities and the counters a ``PodIndex`` keeps over them (a private helper of the
pod-to-pod filters and scores, not a plugin).

What is counted, and when, is the index's business (``pumice.plugins._podindex``); this module
holds the values it counts with, which the filters and scores read directly on their hot
paths:

* ``ident_of``: a pod's *identity* (namespace and labels), interned, so that the caches keyed by
  it hit by identity without comparing label sets;
* ``Domains``: the topology domains of one node label key, as a code per row;
* ``DomainCounter``: pods per domain, kept as the domains whose count is not zero;
* ``RowCounter``: pods per row, likewise.

A counter tells its listeners (``Listener``) of every change, with the domain or row, so the
shapes that read it know which rows to evaluate again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from pumice import BoolVector, IntVector, NodeTable, TaskInfo

Ident = tuple[str, frozenset[tuple[str, str]]]
"""A pod's namespace and labels."""

Listener = Callable[[int, int], None]
"""Called with (domain code or row, change) after a counter changed."""


_idents: dict[Ident, Ident] = {}
_of_labels: dict[int, tuple[Mapping[str, str], Ident]] = {}
"""id of a pod's labels mapping -> (that mapping, its identity): a task's labels are made once
per pod object (``TaskInfo.labels``), and several helpers ask for its identity per task. The
mapping is kept with the answer, so its id cannot be reused while the entry lives."""


def ident_of(task: TaskInfo) -> Ident:
    """The pod's identity, one object per distinct value: the caches keyed by it then hit
    by identity, without comparing the label sets."""
    labels = task.labels
    known = _of_labels.get(id(labels))
    if known is not None and known[0] is labels and known[1][0] == task.namespace:
        return known[1]
    ident = (task.namespace, frozenset(labels.items()))
    found = _idents.get(ident)
    if found is None:
        if len(_idents) >= 1 << 16:
            _idents.clear()
        found = _idents[ident] = ident
    if len(_of_labels) >= 1 << 16:
        _of_labels.clear()
    _of_labels[id(labels)] = (labels, found)
    return found


class Domains:
    """The topology domains of one label key: a code per row (-1: the node lacks the key)."""

    def __init__(self, table: NodeTable, key: str) -> None:
        vocab: dict[str, int] = {}
        self.codes: IntVector = np.fromiter(
            (
                -1 if (v := node.labels.get(key)) is None else vocab.setdefault(str(v), len(vocab))
                for node in table.nodes
            ),
            dtype=np.int64,
            count=len(table),
        )
        self.count = len(vocab)
        self.has = self.codes >= 0
        self.complete = bool(self.has.all())
        """Does every node have the key?"""
        self._rows: list[IntVector] | None = None
        self._row_lists: dict[int, list[int]] = {}

    def rows_of(self, code: int) -> IntVector:
        """The rows of one domain."""
        if self._rows is None:
            order = np.argsort(self.codes, kind="stable")
            order.flags.writeable = False  # each domain's rows are a view of it: read-only
            bounds = np.searchsorted(self.codes[order], np.arange(self.count + 1))
            self._rows = [order[bounds[c] : bounds[c + 1]] for c in range(self.count)]
        return self._rows[code]

    def row_list(self, code: int) -> list[int]:
        """The rows of one domain as a list of Python ints (kept: read it, never change it)."""
        found = self._row_lists.get(code)
        if found is None:
            found = self._row_lists[code] = self.rows_of(code).tolist()
        return found


@dataclass(slots=True)
class DomainCounter:
    """Selected pods per domain of ``domains``, kept as the domains whose count is not zero
    (``occupied``): a few, for a hostname key, and no vector over every domain to allocate
    per term (``counts`` makes one when a question needs it)."""

    domains: Domains
    total: int = 0
    listeners: list[Listener] = field(default_factory=list)
    occupied: dict[int, int] = field(default_factory=dict)
    """Domain code -> its count, for the counts that are not zero."""

    def counts(self) -> IntVector:
        """The count of every domain, with a last, always-zero entry for code -1 (so
        ``counts()[codes]`` reads 0 for nodes without the key); made afresh."""
        out = np.zeros(self.domains.count + 1, dtype=np.int64)
        if self.occupied:
            out[list(self.occupied)] = list(self.occupied.values())
        return out

    def hits(self, rows: IntVector | None) -> BoolVector:
        """For each of ``rows`` (every row when None): does its domain hold a counted pod?"""
        domains = self.domains
        occupied = self.occupied
        if rows is None and len(occupied) * 8 <= domains.count:
            out = np.zeros(len(domains.codes), dtype=np.bool_)
            for code in occupied:
                out[domains.rows_of(code)] = True
            return out
        flags = np.zeros(domains.count + 1, dtype=np.bool_)
        if occupied:
            flags[list(occupied)] = True
        return flags[domains.codes if rows is None else domains.codes[rows]]

    def add(self, row: int, delta: int) -> None:
        code: int = self.domains.codes.item(row)
        if code < 0:
            return
        self.total += delta
        value = self.occupied.get(code, 0) + delta
        if value:
            self.occupied[code] = value
        else:
            self.occupied.pop(code, None)
        for listener in self.listeners:
            listener(code, delta)


@dataclass(slots=True)
class RowCounter:
    """Selected pods per row, kept as the rows whose count is not zero (``occupied``)."""

    size: int
    """The number of rows."""
    listeners: list[Listener] = field(default_factory=list)
    occupied: dict[int, int] = field(default_factory=dict)
    """Row -> its count, for the counts that are not zero."""

    def counts(self) -> IntVector:
        """The count of every row; made afresh."""
        out = np.zeros(self.size, dtype=np.int64)
        if self.occupied:
            out[list(self.occupied)] = list(self.occupied.values())
        return out

    def add(self, row: int, delta: int) -> None:
        value = self.occupied.get(row, 0) + delta
        if value:
            self.occupied[row] = value
        else:
            self.occupied.pop(row, None)
        for listener in self.listeners:
            listener(row, delta)


Counter = DomainCounter | RowCounter
