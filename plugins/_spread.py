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
import numpy.typing as npt

from pumice import SpreadConstraint, selector_matches
from pumice.plugins._interpod import DirtyLog
from pumice.plugins._podindex import Domains, Ident, Listener, PodIndex

BoolVector = npt.NDArray[np.bool_]
IntVector = npt.NDArray[np.int64]

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
    at_minimum: int = 0
    """How many domains hold exactly ``minimum`` pods (the minimum rises when none is left)."""

    def compute_minimum(self) -> int:
        if self.domain_count < self.constraint.min_domains or self.domain_count == 0:
            return 0
        present = self.counts[:-1][self.present]
        minimum = int(present.min())
        self.at_minimum = int(np.count_nonzero(present == minimum))
        return minimum


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
    ) -> None:
        self.log = log
        n = len(index.table)
        has_all = np.ones(n, dtype=np.bool_)
        for c in constraints:
            has_all &= index.domains(c.topology_key).has
        labels = dict(ident[1])
        self.parts: list[_Part] = []
        for c in constraints:
            domains = index.domains(c.topology_key)
            eligible = has_all.copy()
            if c.honor_affinity and selector_mask is not None:
                eligible &= selector_mask
            if c.honor_taints and tainted is not None:
                eligible &= ~tainted
            rows = index.row_counter(ident[0], c.selector)
            codes = domains.codes[eligible]
            counts = np.bincount(
                codes, weights=rows.counts[eligible], minlength=domains.count + 1
            ).astype(np.int64)
            present = np.bincount(codes, minlength=domains.count)[: domains.count] > 0
            part = _Part(
                constraint=c,
                domains=domains,
                eligible=eligible,
                counts=counts,
                present=present,
                domain_count=int(present.sum()),
                self_match=int(selector_matches(c.selector, labels)),
                minimum=0,
            )
            part.minimum = part.compute_minimum()
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
                    self.log.mark(None)
                    return
            # the domain's rows pass while count + self - minimum <= maxSkew
            limit = part.constraint.max_skew + part.minimum - part.self_match
            if (before <= limit) != (after <= limit):
                self.log.mark(part.domains.rows_of(code))

        return changed

    def failures(self, rows: IntVector | None) -> list[tuple[BoolVector, str]]:
        """Per constraint, in spec order: the rows without the key, and the rows whose skew
        is too high, each with its reason."""
        out: list[tuple[BoolVector, str]] = []
        for part in self.parts:
            codes = part.domains.codes if rows is None else part.domains.codes[rows]
            out.append((codes < 0, SPREAD_MISSING_LABEL))
            skew = part.counts[codes] + part.self_match - part.minimum
            out.append((skew > part.constraint.max_skew, SPREAD_MISMATCH))
        return out

    def row_reason(self, row: int) -> str:
        """The first failing constraint's reason for one row ("" when every one passes)."""
        for part in self.parts:  # cells read with .item(): Python ints, not numpy scalars
            code = part.domains.codes.item(row)
            if code < 0:
                return SPREAD_MISSING_LABEL
            if part.counts.item(code) + part.self_match - part.minimum > part.constraint.max_skew:
                return SPREAD_MISMATCH
        return ""
