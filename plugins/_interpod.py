"""InterPodAffinity's filter for one shape, over a ``PodIndex`` (a private helper of
``predicates``; kube-scheduler's semantics as in the module docstring of ``predicates``).

An ``AffinityFilter`` is made once per (pod identity, constraints) per session and reads three
kinds of counters from the index, each per topology domain:

1. the pod's required affinity terms: pods that *every* term selects, per domain of each
   term's key (a node passes a term when it has the key and its domain holds one); when no
   such pod exists anywhere and the pod selects itself with every term, a node with every key
   passes (the first pod of a group);
2. the pod's required anti-affinity terms: pods each term selects, per domain of its key (a
   node with the key fails when its domain holds one; a node without it passes);
3. existing pods' required anti-affinity terms that select this pod: their *owners* per
   domain (a node fails when its domain holds an owner).

A counter change that takes a domain's count from or to zero (the only changes these checks
see) marks, in the filter's ``DirtyLog``, the rows of that domain; a change that ends (or
restores) the first-pod exception marks every row.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import numpy as np

from pumice import AffinityTerm, BoolVector, IntVector, NodeTable, PodLinks
from pumice.plugins._podcounts import DomainCounter, Ident, Listener
from pumice.plugins._podindex import OwnerKey, PodIndex

AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

_EMPTY = np.zeros(0, dtype=np.int64)


class DirtyLog:
    """Rows whose answers changed, by the table version at which they changed."""

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.versions: list[int] = []
        self.rows: list[IntVector | None] = []

    def mark(self, rows: IntVector | None) -> None:
        """``rows`` changed now (None: every row)."""
        version = self.table.version
        if self.versions and self.versions[-1] == version and self.rows[-1] is rows:
            # the same (read-only) rows again at this version: an anti-affine pod's placement
            # moves its term's counter and its owner counter in the same domain
            return
        self.versions.append(version)
        self.rows.append(rows)

    def since(self, version: int) -> IntVector | bool:
        """Rows marked after the table's version was ``version`` (True: every row)."""
        if not self.versions or self.versions[-1] <= version:
            return _EMPTY
        start = bisect.bisect_right(self.versions, version)
        found = self.rows[start:]
        if any(rows is None for rows in found):
            return True
        if len(found) == 1:
            assert found[0] is not None
            return found[0]
        return np.concatenate(found)  # type: ignore[arg-type]


class TermIndex:
    """Terms that pods of the session carry (as ``OwnerKey``), found by the labels they may
    select (a term with an ``In`` requirement is filed under each of its values)."""

    def __init__(self, keys: Iterable[OwnerKey]) -> None:
        self._anchored: dict[tuple[str, str], list[OwnerKey]] = {}
        self._loose: list[OwnerKey] = []
        for key in set(keys):
            selector = key[1].selector
            if selector is None:
                continue  # selects nothing
            anchor = next((r for r in selector if r[1] == "In"), None)
            if anchor is None:
                self._loose.append(key)
            else:
                for value in anchor[2]:
                    self._anchored.setdefault((anchor[0], value), []).append(key)

    def candidates(self, ident: Ident) -> list[OwnerKey]:
        found = list(self._loose)
        for item in ident[1]:
            found += self._anchored.get(item, ())
        return found


class AffinityFilter:
    """Required pod affinity, anti-affinity and existing pods' anti-affinity for one shape."""

    def __init__(
        self, index: PodIndex, ident: Ident, links: PodLinks, owners: TermIndex, log: DirtyLog
    ) -> None:
        self.index = index
        self.log = log
        terms = links.affinity
        self.affinity: list[tuple[AffinityTerm, DomainCounter]] = []
        if terms:
            selects = ("terms", terms)
            self.affinity = [(t, index.domain_counter(selects, t.topology_key)) for t in terms]
            self.self_match = index.selects(selects, ident)
            for counter in {id(c): c for _, c in self.affinity}.values():
                counter.listeners.append(self._affinity_changed(counter))
        self.anti = [
            index.domain_counter(("terms", (t,)), t.topology_key) for t in links.anti_affinity
        ]
        self.existing = [
            index.domain_counter(("owners", key), key[1].topology_key)
            for key in owners.candidates(ident)
            if index.term_selects(key[1], ident)
        ]
        for counter in (*self.anti, *self.existing):
            counter.listeners.append(self._domain_changed(counter))

    @property
    def active(self) -> bool:
        """Does this filter ever reject a node?"""
        return bool(self.affinity or self.anti or self.existing)

    def _exception(self) -> bool:
        """The first pod of a group: nothing matches every affinity term anywhere."""
        return self.self_match and all(c.total == 0 for _, c in self.affinity)

    def _affinity_changed(self, counter: DomainCounter) -> Listener:
        def changed(code: int, delta: int) -> None:
            others = sum(c.total for _, c in self.affinity if c is not counter)
            before = others + counter.total - delta == 0
            after = others + counter.total == 0
            if self.self_match and before != after:
                self.log.mark(None)
            elif _crossed_zero(counter, code, delta):
                self.log.mark(counter.domains.rows_of(code))

        return changed

    def _domain_changed(self, counter: DomainCounter) -> Listener:
        def changed(code: int, delta: int) -> None:
            if _crossed_zero(counter, code, delta):
                self.log.mark(counter.domains.rows_of(code))

        return changed

    def failures(self, rows: IntVector | None) -> list[tuple[BoolVector, str]]:
        """Per check, in kube-scheduler's order: the rows that fail it, and the reason."""
        out: list[tuple[BoolVector, str]] = []
        if self.affinity:
            exception = self._exception()
            ok: BoolVector | None = None
            for _, counter in self.affinity:
                passed = _codes(counter, rows) >= 0 if exception else counter.hits(rows)
                ok = passed if ok is None else ok & passed
            assert ok is not None
            out.append((~ok, AFFINITY_MISMATCH))
        for counters, reason in (
            (self.anti, ANTI_AFFINITY_MISMATCH),
            (self.existing, EXISTING_ANTI_AFFINITY),
        ):
            failed: BoolVector | None = None
            for counter in counters:
                if counter.total <= 0:
                    continue
                hit = counter.hits(rows)
                failed = hit if failed is None else failed | hit
            if failed is not None:
                out.append((failed, reason))
        return out

    def row_reason(self, row: int) -> str:
        """The first failing check's reason for one row ("" when it passes)."""
        # cells read with .item() and dict lookups: Python ints, not numpy scalars
        if self.affinity:
            exception = self._exception()
            for _, counter in self.affinity:
                code = counter.domains.codes.item(row)
                if code < 0 or not (exception or code in counter.occupied):
                    return AFFINITY_MISMATCH
        for counters, reason in (
            (self.anti, ANTI_AFFINITY_MISMATCH),
            (self.existing, EXISTING_ANTI_AFFINITY),
        ):
            for counter in counters:
                if counter.total > 0 and counter.domains.codes.item(row) in counter.occupied:
                    return reason
        return ""


def _crossed_zero(counter: DomainCounter, code: int, delta: int) -> bool:
    """Did the domain's count go from zero or to zero (the only changes the checks see)?"""
    after = counter.occupied.get(code, 0)
    return after == 0 or after == delta


def _codes(counter: DomainCounter, rows: IntVector | None) -> IntVector:
    codes = counter.domains.codes
    return codes if rows is None else codes[rows]
