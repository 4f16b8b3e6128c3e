"""Kubernetes node-selection terms, evaluated over a whole ``NodeTable`` once per distinct term.

Shared by the ``predicates`` and ``nodeorder`` plugins (a private helper, not a plugin).

A pod's scheduling constraints come in hashable *canonical forms* from the model
(``task.terms``, a ``pumice.model.terms.PodTerms`` parsed once per pod object): requirements
``(key, operator, sorted values)``, terms, a nodeSelector, tolerations ``(key, operator, value,
effect)``, host ports. Two pods with the same constraints written in a different order share
every form, so a job of a thousand identical pods costs one evaluation.

``NodeTerms`` answers questions about those forms for every node of one table at once and
remembers each answer (a read-only numpy array) under the form, so a distinct requirement, term,
selector, preferred-term list or toleration set is evaluated once per session. ``evaluations``
counts the cache misses by kind.

Label matching (``labels.Selector`` and the node-affinity helpers of Kubernetes):

* each label key becomes a column of small integer codes (one per distinct value, ``-1`` for a
  node without the label), built the first time the key is asked about; a requirement is then
  decided once per *distinct value* and gathered over the nodes with one numpy index;
* ``In`` / ``NotIn`` need at least one value; a node without the label fails ``In`` and passes
  ``NotIn``; ``Exists`` / ``DoesNotExist`` take no values; ``Gt`` / ``Lt`` take exactly one
  value, an int64 in decimal, and a node passes only if its label is an int64 greater / less;
* ``matchFields`` knows only ``metadata.name`` with ``In`` / ``NotIn`` and exactly one value;
* a requirement that breaks these rules makes its term match no node (as Kubernetes, where a
  term that fails to parse matches nothing); an empty term matches no node;
* the terms of a ``nodeSelectorTerms`` list are ORed, the requirements of a term ANDed; the
  pod's ``nodeSelector`` must also hold (every key equal).

Taints and tolerations (``Toleration.ToleratesTaint``): a toleration tolerates a taint when its
effect is empty or equal, its key is empty or equal, and its operator is ``Exists`` or ``Equal``
with an equal value. ``NoSchedule`` and ``NoExecute`` taints must all be tolerated; the reason
names the node's first untolerated one, ``node(s) had untolerated taint {key: value}``.
``PreferNoSchedule`` taints are only counted for scoring, against the tolerations whose effect
is empty or ``PreferNoSchedule``.

Host ports (``NodePorts``): ``(hostIP, protocol, hostPort)`` of every container port with a
host port, from app containers and sidecars; an empty IP is ``0.0.0.0`` (every address), an
empty protocol ``TCP``. A wanted port on ``0.0.0.0`` conflicts with the same protocol and port
on any address; a wanted port on one address conflicts with that address or ``0.0.0.0``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import (
    ALL_ADDRESSES,
    BoolVector,
    FloatVector,
    HostPort,
    NodeTable,
    Preferred,
    Requirement,
    Selector,
    Term,
    Toleration,
    Tolerations,
)

IntVector = npt.NDArray[np.intp]
ObjectVector = npt.NDArray[np.object_]

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
HARD_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
NAME_FIELD = "metadata.name"

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# -- taints and ports ----------------------------------------------------------------------


def tolerates(toleration: Toleration, key: str, value: str, effect: str) -> bool:
    """Does one toleration tolerate the taint ``key=value:effect``?"""
    t_key, t_op, t_value, t_effect = toleration
    if t_effect and t_effect != effect:
        return False
    if t_key and t_key != key:
        return False
    if t_op == "Exists":
        return True
    return t_op == "Equal" and t_value == value


@dataclass(slots=True)
class PortsInUse:
    """Host ports taken on one node, indexed for the conflict rule."""

    exact: set[HostPort]
    any_address: set[tuple[str, int]]

    @classmethod
    def of(cls, ports: Iterable[HostPort]) -> PortsInUse:
        exact = set(ports)
        return cls(exact, {(proto, port) for _, proto, port in exact})

    def conflicts(self, wanted: Iterable[HostPort]) -> bool:
        """Would binding ``wanted`` clash with the ports in use?"""
        for ip, proto, port in wanted:
            if ip == ALL_ADDRESSES:
                if (proto, port) in self.any_address:
                    return True
            elif (ip, proto, port) in self.exact or (ALL_ADDRESSES, proto, port) in self.exact:
                return True
        return False


# -- evaluation over a table ---------------------------------------------------------------


def _int64(text: str) -> int | None:
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


ValueTest = tuple[Callable[[str], bool], bool]
"""A test of one present value, and the answer for a node without the label."""


def _label_test(op: str, values: tuple[str, ...]) -> ValueTest | None:
    """How a label requirement decides a value; None when the requirement is invalid."""
    if op in ("In", "NotIn"):
        if not values:
            return None
        wanted = frozenset(values)
        if op == "In":
            return (wanted.__contains__, False)
        return (lambda v: v not in wanted, True)
    if op in ("Exists", "DoesNotExist"):
        if values:
            return None
        return (lambda v: op == "Exists", op == "DoesNotExist")
    if op in ("Gt", "Lt"):
        bound = _int64(values[0]) if len(values) == 1 else None
        if bound is None:
            return None

        def compare(v: str) -> bool:
            number = _int64(v)
            if number is None:
                return False
            return number > bound if op == "Gt" else number < bound

        return (compare, False)
    return None


def _field_test(key: str, op: str, values: tuple[str, ...]) -> ValueTest | None:
    if key != NAME_FIELD or op not in ("In", "NotIn") or len(values) != 1:
        return None
    name = values[0]
    if op == "In":
        return (lambda v: v == name, False)
    return (lambda v: v != name, True)


def _frozen(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    arr.flags.writeable = False
    return arr


class NodeTerms:
    """Answers about canonical terms for every row of one ``NodeTable``, each computed once.

    Built for a table as it stands: labels, taints and names are read when it is made. Use
    ``fits`` to check that it still describes a table before reusing it.
    """

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.size = len(table)
        nodes = list(table.nodes)
        self._labels = [n.labels for n in nodes]
        self._names = [n.name for n in nodes]
        self._columns: dict[tuple[str, str], tuple[IntVector, list[str]]] = {}
        self._requirements: dict[tuple[str, Requirement], BoolVector] = {}
        self._terms: dict[Term, BoolVector] = {}
        self._selectors: dict[Selector, BoolVector] = {}
        self._preferred: dict[Preferred, FloatVector] = {}
        self._hard: dict[Tolerations, tuple[BoolVector, ObjectVector]] = {}
        self._soft: dict[Tolerations, FloatVector] = {}
        self._unschedulable: dict[Tolerations, bool] = {}
        self._untolerated_any: dict[Tolerations, bool] = {}
        self.evaluations: Counter[str] = Counter()
        """Cache misses by kind: requirement, term, selector, preferred, taints, soft-taints."""
        # distinct taint (key, value, effect) -> rows having it and its index in each row's list
        where: dict[tuple[str, str, str], tuple[list[int], list[int]]] = {}
        for row, node in enumerate(nodes):
            for pos, taint in enumerate(node.taints):
                ident = (
                    str(taint.get("key") or ""),
                    str(taint.get("value") or ""),
                    str(taint.get("effect") or ""),
                )
                rows, positions = where.setdefault(ident, ([], []))
                rows.append(row)
                positions.append(pos)
        self._taints = [
            (ident, np.asarray(rows, dtype=np.intp), np.asarray(positions, dtype=np.intp))
            for ident, (rows, positions) in where.items()
        ]

    def fits(self, table: NodeTable) -> bool:
        """Does this cache still describe ``table`` (same table, same number of rows)?"""
        return table is self.table and len(table) == self.size

    # -- labels and fields ---------------------------------------------------------------

    def _column(self, kind: str, key: str) -> tuple[IntVector, list[str]]:
        """Codes of each node's value for a label (or the name field), and the values."""
        col = self._columns.get((kind, key))
        if col is None:
            vocab: dict[str, int] = {}
            if kind == "field":
                values: Iterable[str | None] = self._names
            else:
                values = (labels.get(key) for labels in self._labels)
            codes = np.fromiter(
                (-1 if v is None else vocab.setdefault(str(v), len(vocab)) for v in values),
                dtype=np.intp,
                count=self.size,
            )
            col = (codes, list(vocab))
            self._columns[(kind, key)] = col
        return col

    def requirement(self, kind: str, req: Requirement) -> BoolVector:
        """Nodes meeting one label (``kind="label"``) or field (``"field"``) requirement."""
        cached = self._requirements.get((kind, req))
        if cached is not None:
            return cached
        self.evaluations["requirement"] += 1
        key, op, values = req
        test = _field_test(key, op, values) if kind == "field" else _label_test(op, values)
        if test is None:
            mask = np.zeros(self.size, dtype=np.bool_)
        else:
            codes, vocab = self._column(kind, key)
            decide, absent = test
            per_value = np.empty(len(vocab) + 1, dtype=np.bool_)
            per_value[:-1] = [decide(v) for v in vocab]
            per_value[-1] = absent  # code -1 picks the last entry
            mask = per_value[codes]
        self._requirements[(kind, req)] = _frozen(mask)
        return mask

    def term(self, term: Term) -> BoolVector:
        """Nodes matching a node selector term (all of its requirements; none if empty)."""
        cached = self._terms.get(term)
        if cached is not None:
            return cached
        self.evaluations["term"] += 1
        exprs, fields = term
        if not exprs and not fields:
            mask = np.zeros(self.size, dtype=np.bool_)
        else:
            mask = np.ones(self.size, dtype=np.bool_)
            for req in exprs:
                mask &= self.requirement("label", req)
            for req in fields:
                mask &= self.requirement("field", req)
        self._terms[term] = _frozen(mask)
        return mask

    def selector(self, selector: Selector) -> BoolVector:
        """Nodes meeting a pod's nodeSelector and required node affinity."""
        cached = self._selectors.get(selector)
        if cached is not None:
            return cached
        self.evaluations["selector"] += 1
        items, terms = selector
        mask = np.ones(self.size, dtype=np.bool_)
        for key, value in items:
            mask &= self.requirement("label", (key, "In", (value,)))
        if terms is not None:
            anyof = np.zeros(self.size, dtype=np.bool_)
            for term in terms:
                anyof |= self.term(term)
            mask &= anyof
        self._selectors[selector] = _frozen(mask)
        return mask

    def preferred(self, preferred: Preferred) -> FloatVector:
        """Sum of the weights of the preferred terms each node matches (not normalised)."""
        cached = self._preferred.get(preferred)
        if cached is not None:
            return cached
        self.evaluations["preferred"] += 1
        total = np.zeros(self.size)
        for weight, term in preferred:
            total += weight * self.term(term)
        self._preferred[preferred] = _frozen(total)
        return total

    # -- taints ----------------------------------------------------------------------------

    def tolerates_unschedulable(self, tolerations: Tolerations) -> bool:
        """Do the tolerations tolerate ``node.kubernetes.io/unschedulable:NoSchedule``?"""
        cached = self._unschedulable.get(tolerations)
        if cached is None:
            cached = any(
                tolerates(t, UNSCHEDULABLE_TAINT_KEY, "", NO_SCHEDULE) for t in tolerations
            )
            self._unschedulable[tolerations] = cached
        return cached

    def untolerated(self, tolerations: Tolerations) -> tuple[BoolVector, ObjectVector]:
        """Nodes with a NoSchedule/NoExecute taint the tolerations miss, and for each such node
        the reason naming its first one (``""`` elsewhere)."""
        cached = self._hard.get(tolerations)
        if cached is not None:
            return cached
        self.evaluations["taints"] += 1
        first = np.full(self.size, np.iinfo(np.intp).max, dtype=np.intp)
        which = np.full(self.size, -1, dtype=np.intp)
        reasons: list[str] = []
        for (key, value, effect), rows, positions in self._taints:
            if effect not in HARD_EFFECTS:
                continue
            if any(tolerates(t, key, value, effect) for t in tolerations):
                continue
            earlier = positions < first[rows]
            first[rows[earlier]] = positions[earlier]
            which[rows[earlier]] = len(reasons)
            reasons.append(f"node(s) had untolerated taint {{{key}: {value}}}")
        failed = which >= 0
        why = np.full(self.size, "", dtype=object)
        if reasons:
            why[failed] = np.array(reasons, dtype=object)[which[failed]]
        answer = (_frozen(failed), _frozen(why))
        self._hard[tolerations] = answer
        return answer

    def taints_anywhere(self, tolerations: Tolerations) -> bool:
        """Does any node have a NoSchedule / NoExecute taint the tolerations miss (does
        ``untolerated`` reject any node)? Kept with its answer."""
        known = self._untolerated_any.get(tolerations)
        if known is None:
            known = self._untolerated_any[tolerations] = bool(
                self.untolerated(tolerations)[0].any()
            )
        return known

    def prefer_no_schedule_counts(self, tolerations: Tolerations) -> FloatVector:
        """How many PreferNoSchedule taints of each node the tolerations do not tolerate."""
        cached = self._soft.get(tolerations)
        if cached is not None:
            return cached
        self.evaluations["soft-taints"] += 1
        soft = [t for t in tolerations if t[3] in ("", PREFER_NO_SCHEDULE)]
        counts = np.zeros(self.size)
        for (key, value, effect), rows, _ in self._taints:
            if effect != PREFER_NO_SCHEDULE or any(tolerates(t, key, value, effect) for t in soft):
                continue
            np.add.at(counts, rows, 1.0)
        self._soft[tolerations] = _frozen(counts)
        return counts
