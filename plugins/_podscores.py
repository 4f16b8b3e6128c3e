"""The pod-to-pod scores of ``nodeorder``: InterPodAffinity and PodTopologySpread
(ScheduleAnyway), normalised over the candidate nodes as kube-scheduler normalises them (a
private helper, not a plugin).

InterPodAffinity, for an incoming pod over the pods already placed (``PodIndex`` counters):
each pod in a domain of a term's key adds, where the node has that key, the term's weight for
the incoming pod's preferred affinity terms that select it, minus the weight for its preferred
anti-affinity terms; and each placed pod whose required affinity term selects the incoming pod
adds ``hardPodAffinityWeight``, whose preferred affinity term adds its weight, whose preferred
anti-affinity term takes its weight off. Normalised min-max over the candidates:
``trunc(100 * ((s - min) / (max - min)))``, every node 0 when all are equal.

PodTopologySpread, for the pod's ScheduleAnyway constraints: candidates lacking a key are
ignored (score 0); for the others, per constraint, the matching pods of the node's domain
(counted over the nodes with every key that pass the inclusion policies; for
``kubernetes.io/hostname`` the node's own pods) times ``ln(domains + 2)`` plus ``maxSkew - 1``,
summed and rounded; then ``100 * (max + min - s) // max`` (100 everywhere when max is 0), so
fewer matching pods score higher. kube-scheduler's system-default constraints (from Services and
ReplicaSets, which pumice does not watch) are not applied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pumice import (
    BoolVector,
    FloatVector,
    NodeTable,
    PodLinks,
    PodTerms,
    SessionView,
    SpreadConstraint,
    TaskInfo,
)
from pumice.plugins._interpod import TermIndex
from pumice.plugins._k8s_terms import NodeTerms
from pumice.plugins._podcounts import DomainCounter, Domains, Ident, RowCounter, ident_of
from pumice.plugins._podindex import OwnerKey, PodIndex, shared_index

MAX_NODE_SCORE = 100.0
HOSTNAME = "kubernetes.io/hostname"


@dataclass(slots=True)
class _SoftPart:
    constraint: SpreadConstraint
    domains: Domains
    pods: RowCounter
    eligible: BoolVector


@dataclass(slots=True)
class _ScoreState:
    affinity: list[tuple[DomainCounter, float]]
    spread: list[_SoftPart]
    has_all: BoolVector | None
    empty: bool
    """Neither score concerns the shape."""


class PodLinkScores:
    """Both scores for one session, each times its weight (see the module docstring)."""

    def __init__(self, affinity_weight: int, spread_weight: int, hard_weight: int) -> None:
        self.affinity_weight = affinity_weight
        self.spread_weight = spread_weight
        self.hard_weight = hard_weight
        self.active = False
        self.session: SessionView | None = None
        self._owner_keys: list[OwnerKey] = []
        self._owners: TermIndex | None = None
        self.index: PodIndex | None = None
        self._states: dict[tuple[int, int], tuple[Ident, PodLinks, _ScoreState | None]] = {}
        """(id of identity, id of constraints) -> them and their state (None: it reads the
        node terms too, see ``_by_terms``)."""
        self._by_terms: dict[
            tuple[int, int, int], tuple[Ident, PodLinks, PodTerms, _ScoreState]
        ] = {}
        self._of_task: dict[str, _ScoreState] = {}
        """Task uid -> its state: asked twice per task (``applies``, then ``score``), found
        with one lookup (a task's labels and constraints do not change in a session)."""

    def open(self, session: SessionView) -> None:
        if not (self.affinity_weight or self.spread_weight):
            return
        self.session = session
        keys: list[OwnerKey] = []
        for job in session.jobs.values():
            for task in job.tasks.values():
                links = task.links
                if links.empty:
                    continue
                if self.affinity_weight:
                    owned = [("preferred", t, w) for w, t in links.preferred_affinity]
                    owned += [("preferred-anti", t, w) for w, t in links.preferred_anti_affinity]
                    if self.hard_weight:
                        owned += [("affinity", t, 0) for t in links.affinity]
                    keys += owned
                    self.active = self.active or bool(owned)
                if self.spread_weight and links.soft_spread:
                    self.active = True
        self._owner_keys = keys

    def place(self, task: TaskInfo) -> None:
        if self.index is not None:
            self.index.place(task)

    def unplace(self, task: TaskInfo) -> None:
        if self.index is not None:
            self.index.unplace(task)

    def _index(self) -> PodIndex:
        if self.index is None:
            assert self.session is not None
            self.index = shared_index(self.session)
            self._owners = TermIndex(self._owner_keys)
        return self.index

    def applies(self, task: TaskInfo, terms: NodeTerms) -> bool:
        """Does either score concern ``task`` (else ``score`` answers None)?"""
        return self.active and not self._state(task, terms).empty

    def _state(self, task: TaskInfo, terms: NodeTerms) -> _ScoreState:
        """The state of the task's identity and constraints (and node terms, for a
        ScheduleAnyway spread, which reads them), once per task."""
        state = self._of_task.get(task.uid)
        if state is None:
            state = self._of_task[task.uid] = self._find_state(task, terms)
        return state

    def _find_state(self, task: TaskInfo, terms: NodeTerms) -> _ScoreState:
        """``_state`` for a task not asked about yet: shared by the tasks of one identity and
        constraints, found by the identity of those interned objects, checked on a hit."""
        ident, links = ident_of(task), task.links
        key = (id(ident), id(links))
        found = self._states.get(key)
        if found is None or found[0] is not ident or found[1] is not links:
            soft = bool(self.spread_weight and links.soft_spread)
            made = None if soft else self._shape_state(task, terms, ident, links, None)
            found = self._states[key] = (ident, links, made)
        if found[2] is not None:
            return found[2]
        pod = task.terms
        by_terms = (*key, id(pod))
        known = self._by_terms.get(by_terms)
        if known is None or known[0] is not ident or known[1] is not links or known[2] is not pod:
            state = self._shape_state(task, terms, ident, links, pod)
            known = self._by_terms[by_terms] = (ident, links, pod, state)
        return known[3]

    def _shape_state(
        self,
        task: TaskInfo,
        terms: NodeTerms,
        ident: Ident,
        links: PodLinks,
        pod: PodTerms | None,
    ) -> _ScoreState:
        index = self._index()
        affinity: list[tuple[DomainCounter, float]] = []
        if self.affinity_weight:
            for sign, weighted in (
                (1.0, links.preferred_affinity),
                (-1.0, links.preferred_anti_affinity),
            ):
                for w, t in weighted:
                    counter = index.domain_counter(("terms", (t,)), t.topology_key)
                    affinity.append((counter, sign * w))
            assert self._owners is not None
            for owned in self._owners.candidates(ident):
                kind, term, weight = owned
                if not index.term_selects(term, ident):
                    continue
                factor = {
                    "affinity": float(self.hard_weight),
                    "preferred": float(weight),
                    "preferred-anti": -float(weight),
                }[kind]
                counter = index.domain_counter(("owners", owned), term.topology_key)
                affinity.append((counter, factor))
        spread: list[_SoftPart] = []
        has_all: BoolVector | None = None
        soft = links.soft_spread if self.spread_weight else ()
        if soft:
            assert pod is not None  # asked with the node terms (``_state``)
            has_all = np.ones(len(index.table), dtype=np.bool_)
            for c in soft:
                has_all &= index.domains(c.topology_key).has
            for c in soft:
                eligible = has_all.copy()
                if c.honor_affinity and pod.selector is not None:
                    eligible &= terms.selector(pod.selector)
                if c.honor_taints:
                    eligible &= ~terms.untolerated(pod.tolerations)[0]
                pods = index.row_counter(task.namespace, c.selector)
                spread.append(_SoftPart(c, index.domains(c.topology_key), pods, eligible))
        return _ScoreState(affinity, spread, has_all, not (affinity or spread))

    def score(
        self, task: TaskInfo, nodes: NodeTable, terms: NodeTerms, mask: BoolVector
    ) -> FloatVector | SparseScore | None:
        """Both weighted scores over every row (meaningful on ``mask``); None when neither
        applies to the task. A ``SparseScore`` when only the affinity score applies and its
        counted pods sit in few domains (the caller adds its own constant to it)."""
        state = self._state(task, terms)
        out: FloatVector | SparseScore | None = None
        if state.affinity:
            candidates = int(np.count_nonzero(mask))
            if candidates:
                sparse = _affinity_sparse(state.affinity, mask, candidates)
                if isinstance(sparse, SparseScore):
                    out = sparse.times(self.affinity_weight)
                elif sparse is _DENSE:
                    raw = _affinity_raw(state.affinity, len(nodes))
                    if raw is not None:
                        out = self.affinity_weight * _min_max(raw, mask)
        if state.spread:
            assert state.has_all is not None
            spread = self.spread_weight * _spread_score(state.spread, state.has_all, mask)
            if isinstance(out, SparseScore):
                out = out.dense(len(nodes))
            out = spread if out is None else out + spread
        return out


@dataclass(frozen=True, slots=True)
class SparseScore:
    """A score vector that is ``base`` on every row but ``rows`` (ascending), where it is
    ``values``: the affinity score when the counted pods sit in a few domains (hostname
    ones). Its numbers are those the vector operations would give, element by element (the
    same IEEE operations on Python floats), so ``dense`` is bit-for-bit the vector."""

    base: float
    rows: tuple[int, ...]
    values: tuple[float, ...]

    def times(self, weight: int) -> SparseScore:
        """``weight * vector``."""
        return SparseScore(weight * self.base, self.rows, tuple([weight * v for v in self.values]))

    def plus(self, constant: float) -> SparseScore:
        """``constant + vector``."""
        return SparseScore(
            constant + self.base, self.rows, tuple([constant + v for v in self.values])
        )

    def dense(self, n: int) -> FloatVector:
        out = np.full(n, self.base)
        if self.rows:
            out[list(self.rows)] = self.values
        return out


def _affinity_raw(counters: list[tuple[DomainCounter, float]], n: int) -> FloatVector | None:
    """The raw affinity score of every row (None: 0 everywhere). Only the rows of domains
    that hold a counted pod are touched (few, for a hostname key)."""
    raw: FloatVector | None = None
    for counter, factor in counters:
        if not counter.total:
            continue
        if raw is None:
            raw = np.zeros(n)
        domains = counter.domains
        if len(counter.occupied) * 8 > domains.count:
            raw += factor * counter.counts()[domains.codes]
            continue
        for code in sorted(counter.occupied):
            raw[domains.rows_of(code)] += factor * float(counter.occupied[code])
    return raw if raw is not None and raw.any() else None


class _Dense:
    """``_affinity_sparse``'s answer when a counter holds pods in too many domains."""


_DENSE = _Dense()


def _affinity_sparse(
    counters: list[tuple[DomainCounter, float]], mask: BoolVector, candidates: int
) -> SparseScore | _Dense | None:
    """``_min_max(_affinity_raw(...))`` when every counter holds pods in few domains (as a
    hostname key's do), as a ``SparseScore``: the raw scores of the few rows of those domains
    are summed in Python, in the same order, and normalised with the same operations, the
    untouched rows (raw 0) as one value, so the answer is bit-for-bit the dense one without a
    pass over every row. ``candidates`` is the number of rows of ``mask``. None when every
    raw score is 0; ``_DENSE`` when a counter is not sparse."""
    raw: dict[int, float] = {}
    for counter, factor in counters:
        if not counter.total:
            continue
        domains = counter.domains
        occupied = counter.occupied
        if len(occupied) * 8 > domains.count:
            return _DENSE
        # each row gets at most one value per counter: the order of domains does not matter
        for code, count in occupied.items():
            value = factor * float(count)
            for row in domains.row_list(code):
                raw[row] = raw.get(row, 0.0) + value
    if not any(raw.values()):
        return None
    # the few rows' values on the candidates: min and max are exact, and the arithmetic
    # below is the same IEEE operations numpy would do on each element
    is_candidate = mask.item
    seen = [value for row, value in raw.items() if is_candidate(row)]
    if candidates > len(seen):  # untouched candidates score raw 0
        lo = min(min(seen), 0.0) if seen else 0.0
        hi = max(max(seen), 0.0) if seen else 0.0
    else:
        lo, hi = min(seen), max(seen)
    if hi - lo <= 0:
        return SparseScore(0.0, (), ())
    span = hi - lo
    rows = sorted(raw)
    values = tuple([_trunc(MAX_NODE_SCORE * ((raw[row] - lo) / span)) for row in rows])
    return SparseScore(_trunc(MAX_NODE_SCORE * ((0.0 - lo) / span)), tuple(rows), values)


def _trunc(value: float) -> float:
    """``np.trunc`` of one float (its sign kept, as for -0.0)."""
    return math.copysign(float(math.trunc(value)), value)


def _min_max(raw: FloatVector, mask: BoolVector) -> FloatVector:
    """InterPodAffinity's NormalizeScore over the candidates."""
    lo, hi = float(raw[mask].min()), float(raw[mask].max())
    if hi - lo <= 0:
        return np.zeros(len(raw))
    return np.trunc(MAX_NODE_SCORE * ((raw - lo) / (hi - lo)))


def _spread_score(parts: list[_SoftPart], has_all: BoolVector, mask: BoolVector) -> FloatVector:
    """PodTopologySpread's Score and NormalizeScore over the candidates."""
    scored = mask & has_all
    out = np.zeros(len(mask))
    if not scored.any():
        return out
    raw = np.zeros(len(mask))
    for part in parts:
        counts = part.pods.counts()
        codes = part.domains.codes
        if part.constraint.topology_key == HOSTNAME:
            per_node = counts.astype(np.float64)
            size = int(np.count_nonzero(scored))
        else:
            eligible = part.eligible
            by_domain = np.bincount(
                codes[eligible], weights=counts[eligible], minlength=part.domains.count + 1
            )
            per_node = by_domain[codes].astype(np.float64)
            size = int(np.count_nonzero(np.bincount(codes[scored], minlength=1)))
        raw += per_node * np.log(size + 2) + float(part.constraint.max_skew - 1)
    raw = np.floor(raw + 0.5)  # Go's math.Round on non-negative values
    hi, lo = float(raw[scored].max()), float(raw[scored].min())
    if hi == 0:
        out[scored] = MAX_NODE_SCORE
    else:
        out[scored] = np.floor(MAX_NODE_SCORE * (hi + lo - raw[scored]) / hi)
    return out
