"""Where the pods are, for pod-to-pod constraints: match counts kept current placement by
placement (a private helper of ``predicates`` and ``nodeorder``, not a plugin).

A ``PodIndex`` is built once per session (``shared_index``: one for every plugin that asks),
when the first pod-to-pod question is asked, from the session's pods on the table's nodes
(every pod that is not Succeeded or Failed), and then follows the session's statements:
``place(task)`` on ``on_allocate``, ``unplace(task)`` on ``on_deallocate`` (undoing exactly
what that pod added, so a discarded statement takes its pods back; an eviction is not undone
but counted, see below).

Pods are grouped by *identity* (namespace and labels): a Deployment's replicas share one, so a
selector is matched once per identity, never once per pod, and an index from each label
``(key, value)`` to the identities that carry it finds the candidates of a selector with an
``In`` requirement without a scan.

Counters (``pumice.plugins._podcounts``), each made the first time it is asked for and kept
current afterwards:

* ``DomainCounter``: for a pod *selector* (see ``Selects``) and a topology key, how many
  selected pods sit in each domain (value of that key; a pod on a node without the key counts
  nowhere), and in all;
* an *owner* counter is a ``DomainCounter`` whose pods are those that carry a given required
  anti-affinity term (existing pods' anti-affinity, the symmetric rule);
* ``RowCounter``: for a spread selector, how many selected pods sit on each row
  (terminating pods left out, as PodTopologySpread counts).

A pod that is terminating — being deleted when the session opened, or evicted in it (its task
Releasing) — still runs on its node until its grace period ends, and kube-scheduler counts it
for InterPodAffinity (not for PodTopologySpread): so ``unplace`` of an evicted pod keeps it
counted as terminating. Only the node asked about as it will be once its Releasing pods have
gone (``predicate_once_gone``: they are then missing from ``node.tasks``) is answered without
them: ``leaving`` finds them, ``recount`` takes them out and puts them back.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pumice import (
    COMPLETED_STATUSES,
    AffinityTerm,
    IntVector,
    LabelSelector,
    NodeTable,
    PodLinks,
    SessionView,
    TaskInfo,
    TaskStatus,
    selector_matches,
)
from pumice.plugins._podcounts import (
    Counter,
    DomainCounter,
    Domains,
    Ident,
    RowCounter,
    ident_of,
)

_and = int.__and__
"""Status tests as int arithmetic in C (``status & X`` builds a new enum member in Python)."""
_COMPLETED = int(COMPLETED_STATUSES)
_PENDING, _RELEASING = TaskStatus.PENDING, TaskStatus.RELEASING
NAME_LABEL = "kubernetes.io/metadata.name"

OwnerKey = tuple[str, AffinityTerm, int]
"""A term some pods carry: ``("anti" | "affinity" | "preferred" | "preferred-anti", term,
weight)`` (required terms have weight 0)."""

Selects = tuple[str, object]
"""What a counter counts: ``("terms", (term, ...))`` pods every term selects;
``("owners", owner key)`` pods carrying that term; ``("spread",
(namespace, selector))`` non-terminating pods of the namespace the selector selects (``{}``
selects no existing pod, as kube-scheduler counts)."""

_shared: weakref.WeakValueDictionary[str, PodIndex] = weakref.WeakValueDictionary()


def shared_index(session: SessionView) -> PodIndex:
    """The session's one index, shared by the plugins that ask (``place`` and ``unplace``
    are idempotent per pod, so each of them may forward every event); it lives as long as
    one of them holds it."""
    index = _shared.get(session.uid)
    if index is None:
        # from the jobs' tasks, not from ``node.tasks``: a node asked about without its
        # Releasing pods (``predicate_once_gone``) may be the first question of the session
        tasks = (task for job in session.jobs.values() for task in job.tasks.values())
        index = PodIndex(session.table, session.snapshot.namespaces, tasks)
        _shared[session.uid] = index
    return index


@dataclass(slots=True)
class _Placed:
    row: int
    ident: Ident
    owns: tuple[OwnerKey, ...]
    spread: bool


Leaving = list[_Placed]
"""Pods taken out of the counts while their node is asked about without them."""


class PodIndex:
    """Pods by identity and row, and the counters over them (module docstring)."""

    def __init__(
        self,
        table: NodeTable,
        namespaces: Mapping[str, Mapping[str, str]],
        tasks: Iterable[TaskInfo] | None = None,
    ) -> None:
        """``tasks``: every task of the session (those on the table's nodes are counted);
        None: the tasks ``node.tasks`` holds now."""
        self.table = table
        self.namespaces = namespaces
        self._domains: dict[str, Domains] = {}
        self._rows: dict[Ident, dict[int, int]] = {}
        self._spread_rows: dict[Ident, dict[int, int]] = {}
        self._by_label: dict[tuple[str, str], set[Ident]] = {}
        self._owners_rows: dict[OwnerKey, dict[int, int]] = {}
        self._placed: dict[str, _Placed] = {}
        self._releasing: dict[int, set[str]] = {}
        """Row -> the Releasing pods counted there (uids), for ``leaving``."""
        self._matches: dict[tuple[Selects, Ident], bool] = {}
        self._domain_counters: dict[tuple[Selects, str], DomainCounter] = {}
        self._row_counters: dict[Selects, RowCounter] = {}
        self._of_ident: dict[Ident, list[tuple[Selects, Counter]]] = {}
        """Identity -> the match counters (not owner counters) that select it."""
        self._owner_counters: dict[OwnerKey, list[DomainCounter]] = {}
        self._owned: dict[
            int, tuple[tuple[OwnerKey, ...], list[tuple[dict[int, int], list[DomainCounter]]]]
        ] = {}
        """id of an interned ``owner_keys`` answer -> it and its ``_owned_by`` slots."""
        self._watch: dict[tuple[str, str] | None, list[tuple[Selects, Counter]]] = {}
        """Every match counter, for identities not seen yet (pods placed later), filed under
        one ``(key, value)`` a selected identity must carry (None: no such pair)."""
        for task in tasks if tasks is not None else _on_nodes(table):
            self.place(task)

    # -- domains and matching -----------------------------------------------------------------

    def domains(self, key: str) -> Domains:
        found = self._domains.get(key)
        if found is None:
            found = self._domains[key] = Domains(self.table, key)
        return found

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        labels = self.namespaces.get(namespace)
        return labels if labels is not None else {NAME_LABEL: namespace}

    def term_selects(self, term: AffinityTerm, ident: Ident) -> bool:
        """Does an affinity term select a pod of this identity?"""
        namespace, labels = ident
        listed = term.namespaces is None or namespace in term.namespaces
        if not listed and (
            term.namespace_selector is None
            or not selector_matches(term.namespace_selector, self.namespace_labels(namespace))
        ):
            return False
        return selector_matches(term.selector, dict(labels))

    def selects(self, selects: Selects, ident: Ident) -> bool:
        """Does a match counter's selector select this identity? (cached)"""
        key = (selects, ident)
        known = self._matches.get(key)
        if known is None:
            kind, what = selects
            if kind == "terms":
                assert isinstance(what, tuple)
                known = all(self.term_selects(t, ident) for t in what)
            else:
                assert isinstance(what, tuple)
                namespace: str = what[0]
                selector: LabelSelector | None = what[1]
                known = bool(
                    ident[0] == namespace
                    and selector
                    and selector_matches(selector, dict(ident[1]))
                )
            self._matches[key] = known
        return known

    def _candidates(self, selectors: Iterable[LabelSelector | None]) -> Iterable[Ident]:
        """Identities that may be selected: those with one of an ``In`` requirement's values,
        or every identity when no selector has one."""
        for selector in selectors:
            for key, op, values in selector or ():
                if op == "In":
                    found: set[Ident] = set()
                    for value in values:
                        found |= self._by_label.get((key, value), set())
                    return found
        return list(self._rows)

    @staticmethod
    def _selectors_of(selects: Selects) -> list[LabelSelector | None]:
        kind, what = selects
        if kind == "terms":
            assert isinstance(what, tuple)
            return [t.selector for t in what]
        return [what[1]]  # type: ignore[index]

    # -- counters -----------------------------------------------------------------------------

    def domain_counter(self, selects: Selects, key: str) -> DomainCounter:
        """Pods selected per domain of ``key`` (made and filled on first use)."""
        counter = self._domain_counters.get((selects, key))
        if counter is not None:
            return counter
        counter = DomainCounter(self.domains(key))
        self._domain_counters[(selects, key)] = counter
        if selects[0] == "owners":
            owned: OwnerKey = selects[1]  # type: ignore[assignment]
            self._owner_counters.setdefault(owned, []).append(counter)
            for row, n in self._owners_rows.get(owned, {}).items():
                counter.add(row, n)
            return counter
        for ident in self._candidates(self._selectors_of(selects)):
            if ident in self._rows and self.selects(selects, ident):
                for row, n in self._rows[ident].items():
                    counter.add(row, n)
                self._of_ident.setdefault(ident, []).append((selects, counter))
        self._pending_watch(selects, counter)
        return counter

    def row_counter(self, namespace: str, selector: LabelSelector | None) -> RowCounter:
        """Non-terminating pods of ``namespace`` that ``selector`` selects, per row."""
        selects: Selects = ("spread", (namespace, selector))
        counter = self._row_counters.get(selects)
        if counter is not None:
            return counter
        counter = RowCounter(len(self.table))
        self._row_counters[selects] = counter
        for ident in self._candidates([selector]):
            if self.selects(selects, ident):
                for row, n in self._spread_rows.get(ident, {}).items():
                    counter.add(row, n)
                self._of_ident.setdefault(ident, []).append((selects, counter))
        self._pending_watch(selects, counter)
        return counter

    def _pending_watch(self, selects: Selects, counter: Counter) -> None:
        anchors: list[tuple[str, str] | None] = [None]
        for selector in self._selectors_of(selects):
            found = next((r for r in selector or () if r[1] == "In"), None)
            if found is not None:
                anchors = [(found[0], value) for value in found[2]]
                break
        for anchor in anchors:
            self._watch.setdefault(anchor, []).append((selects, counter))

    def _counters_of(self, ident: Ident) -> list[tuple[Selects, Counter]]:
        """The match counters that select ``ident`` (worked out once per new identity)."""
        found = self._of_ident.get(ident)
        if found is None:
            candidates = list(self._watch.get(None, ()))
            for item in ident[1]:
                candidates += self._watch.get(item, ())
            found = [(s, c) for s, c in candidates if self.selects(s, ident)]
            self._of_ident[ident] = found
        return found

    # -- placements ---------------------------------------------------------------------------

    def place(self, task: TaskInfo) -> None:
        """Count a pod that was placed (or found on a node); Succeeded / Failed pods and
        pods without a node count nowhere. A pod counted already is brought up to date (an
        eviction undone: it counts for spread again)."""
        known = self._placed.get(task.uid)
        if known is not None:
            if not known.spread or task.status == _RELEASING:  # else: nothing can change
                self._restate(task, known)
            return
        if task.node_name is None:
            return
        status = task.status
        if _and(status, _COMPLETED) or status == _PENDING:
            return
        try:
            row = self.table.row(task.node_name)
        except KeyError:
            return  # a node not in the table
        ident = ident_of(task)
        owns = owner_keys(task)
        if status == _RELEASING:
            placed = _Placed(row, ident, owns, False)
            self._releasing.setdefault(row, set()).add(task.uid)
        else:
            placed = _Placed(row, ident, owns, not _deleting(task))
        self._placed[task.uid] = placed
        self._apply(placed, 1)

    def unplace(self, task: TaskInfo) -> None:
        """Take back what ``place`` counted for this pod (an allocation undone); but a pod
        evicted in the session (Releasing on its node) terminates there: it keeps counting,
        as a terminating pod (module docstring)."""
        placed = self._placed.get(task.uid)
        if placed is None:
            return
        if task.status == _RELEASING and task.node_name is not None:
            self._restate(task, placed)
            return
        del self._placed[task.uid]
        self._releasing_on(placed.row, task.uid, False)
        self._apply(placed, -1)

    def _restate(self, task: TaskInfo, placed: _Placed) -> None:
        """A counted pod whose status changed on its node (evicted, or its eviction undone):
        only whether it is Releasing and whether spread counts it can change."""
        self._releasing_on(placed.row, task.uid, task.status == _RELEASING)
        spread = not _terminating(task)
        if spread == placed.spread:
            return
        placed.spread = spread
        row, ident, delta = placed.row, placed.ident, 1 if spread else -1
        _bump(self._spread_rows[ident], row, delta)
        for _, counter in self._counters_of(ident):
            if isinstance(counter, RowCounter):
                counter.add(row, delta)

    def _releasing_on(self, row: int, uid: str, releasing: bool) -> None:
        uids = self._releasing.get(row)
        if releasing:
            if uids is None:
                uids = self._releasing[row] = set()
            uids.add(uid)
        elif uids is not None:
            uids.discard(uid)
            if not uids:
                del self._releasing[row]

    def leaving(self, rows: IntVector | int | None) -> Leaving:
        """The Releasing pods counted that their node's ``tasks`` no longer holds: the node is
        being asked about as it will be once they have gone (``predicate_once_gone``); none
        at any other time. Asked for one row, only that row's pods are looked at."""
        releasing = self._releasing
        if not releasing:
            return []
        where: Iterable[int]
        if isinstance(rows, int):
            where = (rows,)
        elif rows is not None and len(rows) == 1:
            where = (int(rows.item(0)),)
        else:
            where = list(releasing)
        out: Leaving = []
        nodes = self.table.nodes
        for row in where:
            uids = releasing.get(row)
            if uids:
                held = nodes[row].tasks
                out += [self._placed[uid] for uid in uids if uid not in held]
        return out

    def recount(self, pods: Leaving, delta: int) -> None:
        """Take ``pods`` (from ``leaving``) out of every count (-1), or put them back (+1)."""
        for placed in pods:
            self._apply(placed, delta)

    def _apply(self, placed: _Placed, delta: int) -> None:
        row, ident = placed.row, placed.ident
        rows = self._rows.get(ident)
        if rows is None:
            rows = self._rows[ident] = {}
            self._spread_rows[ident] = {}
            for item in ident[1]:
                self._by_label.setdefault(item, set()).add(ident)
        # the bookkeeping of every placement: ``_bump`` and ``_counters_of`` written out
        value = rows.get(row, 0) + delta
        if value:
            rows[row] = value
        else:
            rows.pop(row, None)
        spread = placed.spread
        if spread:
            _bump(self._spread_rows[ident], row, delta)
        counters = self._of_ident.get(ident)
        if counters is None:
            counters = self._counters_of(ident)
        for _, counter in counters:
            if spread or counter.__class__ is DomainCounter:  # a terminating pod: no spread
                counter.add(row, delta)
        if placed.owns:
            for owned_rows, owners in self._owned_by(placed.owns):
                _bump(owned_rows, row, delta)
                for owner in owners:
                    owner.add(row, delta)

    def _owned_by(
        self, owns: tuple[OwnerKey, ...]
    ) -> list[tuple[dict[int, int], list[DomainCounter]]]:
        """Per term of ``owns``: its pods per row and its owner counters (the lists
        ``domain_counter`` adds to), found by the identity of the interned ``owns``, so a
        placement hashes no term."""
        found = self._owned.get(id(owns))
        if found is None or found[0] is not owns:
            slots = [
                (self._owners_rows.setdefault(o, {}), self._owner_counters.setdefault(o, []))
                for o in owns
            ]
            found = self._owned[id(owns)] = (owns, slots)
        return found[1]


_owner_keys: dict[int, tuple[PodLinks, tuple[OwnerKey, ...]]] = {}
"""id of a pod's (interned) constraints -> them and their owner keys: one answer object per
distinct constraints, found without hashing the terms."""


def owner_keys(task: TaskInfo) -> tuple[OwnerKey, ...]:
    """The terms a pod carries, as owner keys (see ``OwnerKey``)."""
    links = task.links
    if links.empty:
        return ()
    known = _owner_keys.get(id(links))
    if known is not None and known[0] is links:
        return known[1]
    if len(_owner_keys) >= 1 << 14:
        _owner_keys.clear()
    keys: list[OwnerKey] = [("anti", t, 0) for t in links.anti_affinity]
    keys += [("affinity", t, 0) for t in links.affinity]
    keys += [("preferred", t, w) for w, t in links.preferred_affinity]
    keys += [("preferred-anti", t, w) for w, t in links.preferred_anti_affinity]
    owned = tuple(keys)
    _owner_keys[id(links)] = (links, owned)
    return owned


def _on_nodes(table: NodeTable) -> Iterable[TaskInfo]:
    for node in table.nodes:
        yield from node.tasks.values()


def _terminating(task: TaskInfo) -> bool:
    """Releasing (evicted, or being deleted) or marked for deletion: spread leaves it out."""
    return task.status == _RELEASING or _deleting(task)


def _deleting(task: TaskInfo) -> bool:
    """Is the pod marked for deletion?"""
    pod = task.pod
    if not pod:
        return False
    meta = pod.get("metadata")
    return bool(meta and meta.get("deletionTimestamp"))


def _bump(counts: dict[int, int], row: int, delta: int) -> None:
    value = counts.get(row, 0) + delta
    if value:
        counts[row] = value
    else:
        counts.pop(row, None)
