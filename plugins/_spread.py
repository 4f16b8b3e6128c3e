"""PodTopologySpread's filter for one shape, over a ``PodIndex`` (a private helper of
``predicates``; kube-scheduler's semantics as in the module docstring of ``predicates``).

For each ``DoNotSchedule`` constraint of the pod, in spec order:

* the *eligible* nodes are those with every constraint's topology key that pass the
  constraint's inclusion policies (``nodeAffinityPolicy`` Honor: the pod's nodeSelector and
  required node affinity; ``nodeTaintsPolicy`` Honor: no untolerated NoSchedule / NoExecute
  taint); a domain exists when one of its nodes is eligible;
* a domain's count is the number of pods of the pod's namespace that the constraint's selector
  selects, on its eligible nodes (terminating pods left out; a ``{}`` selector counts none);
* the global minimum is the smallest count over existing domains, or 0 when there are fewer
  domains than ``minDomains``;
* a node without the key fails (unresolvable,
  ``node(s) didn't match pod topology spread constraints (missing required label)``); a node
  whose domain count + (1 if the selector selects the pod itself) - minimum exceeds
  ``maxSkew`` fails (``node(s) didn't match pod topology spread constraints``). The policies
  are not applied to the node being judged: it is judged with its domain's count.

Counts follow placements through the index's row counters: a change that flips the domain's
answer marks its rows in the filter's ``DirtyLog``; a change that moves the minimum marks every
row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pumice import BoolVector, IntVector, SpreadConstraint, selector_matches
from pumice.plugins._interpod import DirtyLog
from pumice.plugins._podcounts import Domains, Ident, Listener
from pumice.plugins._podindex import PodIndex

SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD_MISMATCH + " (missing required label)"


@dataclass(slots=True)
class _Part:
    """One constraint's counts over its eligible nodes."""

    constraint: SpreadConstraint
    domains: Domains
    eligible: BoolVector
    counts: IntVector
    """Per domain code, with a last always-zero entry for code -1."""
    present: BoolVector
    """Per domain code: does the domain have an eligible node?"""
    domain_count: int
    self_match: int
    minimum: int
    skewed: BoolVector
    """Per domain code (and a last entry for code -1): does a node of the domain fail the
    skew (count + self - minimum > maxSkew)? Kept with the counts, so a question reads it."""
    at_minimum: int = 0
    """How many domains hold exactly ``minimum`` pods (the minimum rises when none is left)."""

    def compute_minimum(self) -> int:
        if self.domain_count < self.constraint.min_domains or self.domain_count == 0:
            return 0
        present = self.counts[:-1][self.present]
        minimum = int(present.min())
        self.at_minimum = int(np.count_nonzero(present == minimum))
        return minimum

    def compute_skewed(self) -> None:
        self.skewed = self.counts + self.self_match - self.minimum > self.constraint.max_skew


@dataclass(slots=True)
class _Eligibility:
    """What the inclusion policies make of one constraint's domains: the eligible nodes, the
    domains that have one, and how many there are (shared by the shapes that agree on them)."""

    eligible: BoolVector
    present: BoolVector
    domain_count: int
    keep: tuple[object, ...]
    """The masks the key was made from, kept alive while the entry is (the key holds ids)."""


EligibilityCache = dict[tuple[object, ...], _Eligibility]


class SpreadFilter:
    """The DoNotSchedule spread constraints of one shape (see the module docstring)."""

    def __init__(
        self,
        index: PodIndex,
        ident: Ident,
        constraints: tuple[SpreadConstraint, ...],
        selector_mask: BoolVector | None,
        tainted: BoolVector | None,
        log: DirtyLog,
        shared: EligibilityCache,
    ) -> None:
        self.log = log
        keys = tuple(c.topology_key for c in constraints)
        labels = dict(ident[1])
        self.parts: list[_Part] = []
        for c in constraints:
            domains = index.domains(c.topology_key)
            by_affinity = selector_mask if c.honor_affinity else None
            by_taints = tainted if c.honor_taints else None
            known = _eligibility(index, shared, keys, c.topology_key, by_affinity, by_taints)
            rows = index.row_counter(ident[0], c.selector)
            counts = np.zeros(domains.count + 1, dtype=np.int64)
            codes, eligible = domains.codes, known.eligible
            for row, pods in rows.occupied.items():  # the few occupied rows, not every row
                if eligible.item(row):
                    code = codes.item(row)
                    counts[code] = counts.item(code) + pods
            part = _Part(
                constraint=c,
                domains=domains,
                eligible=eligible,
                counts=counts,
                present=known.present,
                domain_count=known.domain_count,
                self_match=int(selector_matches(c.selector, labels)),
                minimum=0,
                skewed=_NO_DOMAINS,
            )
            part.minimum = part.compute_minimum()
            part.compute_skewed()
            self.parts.append(part)
            rows.listeners.append(self._changed(part))

    def _changed(self, part: _Part) -> Listener:
        def changed(row: int, delta: int) -> None:
            if not part.eligible.item(row):
                return
            code: int = part.domains.codes.item(row)
            before: int = part.counts.item(code)
            after = before + delta
            part.counts[code] = after
            if part.domain_count >= part.constraint.min_domains:
                # the domain is eligible (its count moved), so it takes part in the minimum
                part.at_minimum += (after == part.minimum) - (before == part.minimum)
                if after < part.minimum or part.at_minimum == 0:
                    part.minimum = part.compute_minimum()
                    part.compute_skewed()
                    self.log.mark(None)
                    return
            # the domain's rows pass while count + self - minimum <= maxSkew
            limit = part.constraint.max_skew + part.minimum - part.self_match
            part.skewed[code] = after > limit
            if (before <= limit) != (after <= limit):
                self.log.mark(part.domains.rows_of(code))

        return changed

    def failures(self, rows: IntVector | None) -> list[tuple[BoolVector, str]]:
        """Per constraint, in spec order: the rows without the key (when a node lacks it),
        and the rows whose skew is too high, each with its reason."""
        out: list[tuple[BoolVector, str]] = []
        for part in self.parts:
            codes = part.domains.codes if rows is None else part.domains.codes[rows]
            if not part.domains.complete:
                out.append((codes < 0, SPREAD_MISSING_LABEL))
            out.append((part.skewed[codes], SPREAD_MISMATCH))
        return out

    def row_reason(self, row: int) -> str:
        """The first failing constraint's reason for one row ("" when every one passes)."""
        for part in self.parts:  # cells read with .item(): Python ints, not numpy scalars
            code = part.domains.codes.item(row)
            if code < 0:
                return SPREAD_MISSING_LABEL
            if part.skewed.item(code):
                return SPREAD_MISMATCH
        return ""


_NO_DOMAINS = np.zeros(0, dtype=np.bool_)


def _eligibility(
    index: PodIndex,
    shared: EligibilityCache,
    keys: tuple[str, ...],
    key: str,
    by_affinity: BoolVector | None,
    by_taints: BoolVector | None,
) -> _Eligibility:
    """The eligible nodes of a constraint on ``key`` among the shape's constraints on
    ``keys``: every key present, the node selector honoured (``by_affinity``), the untolerated
    taints avoided (``by_taints``); made once per distinct combination."""
    cache_key = (keys, key, id(by_affinity), id(by_taints))
    known = shared.get(cache_key)
    if known is not None:
        return known
    eligible = np.ones(len(index.table), dtype=np.bool_)
    for each in keys:
        eligible &= index.domains(each).has
    if by_affinity is not None:
        eligible &= by_affinity
    if by_taints is not None:
        eligible &= ~by_taints
    domains = index.domains(key)
    present = np.bincount(domains.codes[eligible], minlength=domains.count)[: domains.count] > 0
    known = shared[cache_key] = _Eligibility(
        eligible, present, int(present.sum()), (by_affinity, by_taints)
    )
    return known
