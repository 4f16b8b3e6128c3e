"""The pod-to-pod filters of ``predicates`` for one session: InterPodAffinity and
PodTopologySpread over a shared ``PodIndex`` (a private helper, not a plugin).

``open`` surveys the session's pods once: when none carries pod affinity, anti-affinity or a
spread constraint, the filters are inactive and the plugin decides exactly as without them.
Otherwise the index is built on the first question and follows every placement; each distinct
(pod identity, constraints, node terms) gets one ``_ShapeState`` holding its filters and the
``DirtyLog`` that ``stale_rows`` reads.

``shape_key`` keeps apart tasks the filters may answer differently for: the namespace, the
labels that some selector of the session reads, and the pod's own constraints. A task the
filters can never concern (no constraints of its own, selected by no required anti-affinity
term of the session) gets None and shares its shape's mask as before.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from pumice import BoolVector, IntVector, NodeTable, PodLinks, PodTerms, SessionView, TaskInfo
from pumice.plugins._interpod import AffinityFilter, DirtyLog, TermIndex
from pumice.plugins._k8s_terms import NodeTerms
from pumice.plugins._podcounts import Ident, ident_of
from pumice.plugins._podindex import Leaving, OwnerKey, PodIndex, shared_index
from pumice.plugins._spread import EligibilityCache, SpreadFilter


@dataclass(slots=True)
class _ShapeState:
    log: DirtyLog
    spread: SpreadFilter | None
    affinity: AffinityFilter | None


class PodLinkFilters:
    """InterPodAffinity (``affinity``) and PodTopologySpread (``spread``) for one session."""

    def __init__(self, *, affinity: bool, spread: bool) -> None:
        self.affinity = affinity
        self.spread = spread
        self.active = False
        self.session: SessionView | None = None
        self.keys: frozenset[str] = frozenset()
        """Label keys some selector of the session reads."""
        self.anti_terms: list[OwnerKey] = []
        self._owners: TermIndex | None = None
        self.index: PodIndex | None = None
        self._states: dict[Hashable, _ShapeState] = {}
        self._of_task: dict[str, _ShapeState] = {}
        self._by_ids: dict[tuple[int, int, int], tuple[Ident, PodLinks, PodTerms, _ShapeState]] = {}
        """(ids of identity, constraints, terms) -> them and their state (``_state``)."""
        self._key_of: dict[tuple[int, int], tuple[Ident, PodLinks, Hashable]] = {}
        """(id of identity, id of constraints) -> them and their shape key."""
        self._distinct: dict[Hashable, Hashable] = {}
        self._eligibility: EligibilityCache = {}

    def open(self, session: SessionView) -> None:
        """Survey the session's pods: which constraints exist, which label keys they read."""
        if not (self.affinity or self.spread):
            return
        self.session = session
        keys: set[str] = set()
        anti: list[OwnerKey] = []
        for job in session.jobs.values():
            for task in job.tasks.values():
                links = task.links
                if links.empty:
                    continue
                if self.affinity and (links.affinity or links.anti_affinity):
                    self.active = True
                if self.spread and links.hard_spread:
                    self.active = True
                keys |= links.label_keys()
                anti.extend(("anti", t, 0) for t in links.anti_affinity)
        self.keys = frozenset(keys)
        self.anti_terms = anti

    def _index(self) -> PodIndex:
        if self.index is None:
            assert self.session is not None
            self.index = shared_index(self.session)
            self._owners = TermIndex(self.anti_terms)
        return self.index

    # -- framework hooks ------------------------------------------------------------------------

    def shape_key(self, task: TaskInfo) -> Hashable:
        if not self.active:
            return None
        ident, links = ident_of(task), task.links
        # per distinct (identity, constraints), keyed by identity (both are interned)
        found = self._key_of.get((id(ident), id(links)))
        if found is not None and found[0] is ident and found[1] is links:
            return found[2]
        known: Hashable = None
        if self._concerns(links, ident):
            keys = self.keys
            seen = frozenset(item for item in ident[1] if item[0] in keys)
            known = (ident[0], seen, links)
            # one object per distinct key: the shape cache's lookups then hit by identity
            known = self._distinct.setdefault(known, known)
        self._key_of[(id(ident), id(links))] = (ident, links, known)
        return known

    def _concerns(self, links: PodLinks, ident: Ident) -> bool:
        """Can the filters ever reject a node for a pod of this identity and constraints? Not
        when it has no constraints of its own that are switched on and no required
        anti-affinity term of the session selects it: then it shares its shape's mask with
        every such task."""
        if self.affinity and (links.affinity or links.anti_affinity):
            return True
        if self.spread and links.hard_spread:
            return True
        if not self.affinity:
            return False
        index = self._index()
        assert self._owners is not None
        return any(index.term_selects(key[1], ident) for key in self._owners.candidates(ident))

    def stale_rows(self, task: TaskInfo, since: int) -> IntVector | bool | None:
        state = self._of_task.get(task.uid) if self.active else None
        return None if state is None else state.log.since(since)

    def place(self, task: TaskInfo) -> None:
        if self.index is not None:
            self.index.place(task)

    def unplace(self, task: TaskInfo) -> None:
        if self.index is not None:
            self.index.unplace(task)

    # -- filtering ------------------------------------------------------------------------------

    def _state(self, task: TaskInfo, nodes: NodeTable, terms: NodeTerms) -> _ShapeState:
        state = self._of_task.get(task.uid)
        if state is not None:
            return state
        ident, links, pod = ident_of(task), task.links, task.terms
        # by the identity of the three (interned) objects: hashing the terms costs more
        by_ids = (id(ident), id(links), id(pod))
        found = self._by_ids.get(by_ids)
        if found is not None and found[0] is ident and found[1] is links and found[2] is pod:
            self._of_task[task.uid] = found[3]
            return found[3]
        key = (ident, links, pod)
        state = self._states.get(key)
        if state is None:
            index = self._index()
            log = DirtyLog(nodes)
            spread = None
            hard = links.hard_spread
            if self.spread and hard:
                selector = terms.selector(pod.selector) if pod.selector is not None else None
                tainted = terms.untolerated(pod.tolerations)[0]
                spread = SpreadFilter(index, ident, hard, selector, tainted, log, self._eligibility)
            affinity = None
            if self.affinity:
                assert self._owners is not None
                affinity = AffinityFilter(index, ident, links, self._owners, log)
                if not affinity.active:
                    affinity = None
            state = self._states[key] = _ShapeState(log, spread, affinity)
        self._by_ids[by_ids] = (ident, links, pod, state)
        self._of_task[task.uid] = state
        return state

    def failures(
        self, task: TaskInfo, nodes: NodeTable, terms: NodeTerms, rows: IntVector | None
    ) -> list[tuple[BoolVector, str]]:
        """The rows each pod-to-pod check rejects, with its reason, in kube-scheduler's order
        (PodTopologySpread, then InterPodAffinity)."""
        state = self._state(task, nodes, terms)
        gone = self._leave(rows)
        out: list[tuple[BoolVector, str]] = []
        try:
            if state.spread is not None:
                out += state.spread.failures(rows)
            if state.affinity is not None:
                out += state.affinity.failures(rows)
        finally:
            if gone:
                self._return(gone)
        return out

    def row_function(
        self, task: TaskInfo, nodes: NodeTable, terms: NodeTerms
    ) -> Callable[[int], str] | None:
        """``row_reason`` of ``task`` as a function of the row (None when neither filter
        concerns the task): its filters looked up once."""
        state = self._state(task, nodes, terms)
        spread, affinity = state.spread, state.affinity
        if spread is None and affinity is None:
            return None
        if affinity is None:
            assert spread is not None
            return spread.row_reason
        if spread is None:
            return affinity.row_reason
        spread_reason, affinity_reason = spread.row_reason, affinity.row_reason

        def reason(row: int) -> str:
            return spread_reason(row) or affinity_reason(row)

        return reason

    def row_reason(self, task: TaskInfo, nodes: NodeTable, terms: NodeTerms, row: int) -> str:
        state = self._state(task, nodes, terms)
        gone = self._leave(row)
        reason = ""
        try:
            if state.spread is not None:
                reason = state.spread.row_reason(row)
            if not reason and state.affinity is not None:
                reason = state.affinity.row_reason(row)
        finally:
            if gone:
                self._return(gone)
        return reason

    def _leave(self, rows: IntVector | int | None) -> Leaving:
        """Take out of the counts the Releasing pods whose node is asked about as it will be
        once they have gone (``predicate_once_gone``); ``_return`` puts them back."""
        assert self.index is not None  # made by ``_state``
        gone = self.index.leaving(rows)
        if gone:
            self.index.recount(gone, -1)
        return gone

    def _return(self, gone: Leaving) -> None:
        assert self.index is not None
        self.index.recount(gone, 1)
