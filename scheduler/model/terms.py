"""A pod's scheduling terms in canonical form, and the *shape* of a task.

``pod_terms(pod)`` turns a plain-dict pod's node constraints into hashable canonical forms:
requirements ``(key, operator, sorted values)``, terms (their requirements, sorted), a
nodeSelector (its sorted items), tolerations ``(key, operator, value, effect)`` (sorted and
de-duplicated; operator ``""`` read as ``Equal``, the value dropped under ``Exists``),
preferred terms ``(weight, term)`` (zero weights and empty terms dropped), and host ports
``(hostIP, protocol, hostPort)`` of the app containers and sidecars (an empty IP is
``0.0.0.0``, an empty protocol ``TCP``). Two pods with the same constraints written in a
different order get equal forms. Parsing only: what the forms mean for nodes is decided by the
plugins (``pumice.plugins._k8s_terms``), once per distinct form per session.

A ``TaskShape`` is what the built-in plugins read of a task when they filter and score nodes:
its request and its non-zero (scoring) request — each as ``(name, amount)`` pairs in the
request's own order, zeros left out, whole amounts as ``int`` — and its ``PodTerms``. Two
tasks with equal shapes get identical predicate masks and scores from the built-in plugins, so
they can be evaluated once (the pods of a gang usually share one shape). The pairs keep the
request's order rather than being sorted because score sums run in that order; equal shapes
must give bit-identical floats. The hash is computed once, and ``task.shape`` hands tasks of
equal shape one shared object.

``TaskInfo.terms`` and ``TaskInfo.shape`` compute these once per pod object and cache them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice.model.resource import Resource

__all__ = [
    "ALL_ADDRESSES",
    "NO_TERMS",
    "HostPort",
    "PodTerms",
    "Preferred",
    "Requirement",
    "Selector",
    "TaskShape",
    "Term",
    "Toleration",
    "Tolerations",
    "canonical_tolerations",
    "pod_host_ports",
    "pod_terms",
]

ALL_ADDRESSES = "0.0.0.0"

Requirement = tuple[str, str, tuple[str, ...]]
"""``(key, operator, sorted values)`` of a matchExpressions or matchFields entry."""
Term = tuple[tuple[Requirement, ...], tuple[Requirement, ...]]
"""A node selector term: its sorted (matchExpressions, matchFields); ANDed."""
Selector = tuple[tuple[tuple[str, str], ...], tuple[Term, ...] | None]
"""The pod's sorted nodeSelector items and its required terms (ORed; None if not set)."""
Preferred = tuple[tuple[int, Term], ...]
"""Preferred scheduling terms: (weight, term), zero weights and empty terms dropped."""
Toleration = tuple[str, str, str, str]
"""``(key, operator, value, effect)`` with the operator ``Equal`` or as written."""
Tolerations = tuple[Toleration, ...]
HostPort = tuple[str, str, int]
"""``(hostIP, protocol, hostPort)``."""


@dataclass(frozen=True, slots=True)
class PodTerms:
    """A pod's node constraints in canonical, hashable form (the hash is computed once)."""

    selector: Selector | None
    """Required placement (nodeSelector and required node affinity); None if unconstrained."""
    preferred: Preferred
    tolerations: Tolerations
    host_ports: frozenset[HostPort]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = (self.selector, self.preferred, self.tolerations, self.host_ports)
        object.__setattr__(self, "_hash", hash(parts))

    def __hash__(self) -> int:
        return self._hash


NO_TERMS = PodTerms(None, (), (), frozenset())

_interned: dict[tuple[Any, ...], PodTerms] = {}
"""Canonical forms -> the one PodTerms holding them: the pods of a gang share one object."""
_INTERN_LIMIT = 1 << 16


def pod_terms(pod: Mapping[str, Any] | None) -> PodTerms:
    """The canonical constraints of a plain-dict pod (none at all for ``None``)."""
    if not pod:
        return NO_TERMS
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity")
    node_selector = spec.get("nodeSelector")
    tolerations = spec.get("tolerations")
    host_ports = _host_ports(spec)
    raw: tuple[Any, ...] | None = None
    if not affinity:  # the common case: remembered by the raw selector and tolerations
        raw = (
            tuple(node_selector.items()) if node_selector else (),
            tuple([tuple(t.items()) for t in tolerations]) if tolerations else (),
            host_ports,
        )
        try:
            known = _by_raw.get(raw)
        except TypeError:  # an unhashable value somewhere: parse as usual
            known = raw = None
        if known is not None:
            return known
    terms = _parse(spec, affinity, node_selector, tolerations, host_ports)
    if raw is not None and _plain(raw):
        if len(_by_raw) >= _INTERN_LIMIT:
            _by_raw.clear()
        _by_raw[raw] = terms
    return terms


_by_raw: dict[tuple[Any, ...], PodTerms] = {}
"""(nodeSelector items, each toleration's items, host ports) -> terms, for pods without
affinity: a gang's or a Deployment's pods repeat them."""

_TOLERATION_FIELDS = frozenset({"key", "operator", "value", "effect"})


def _plain(raw: tuple[Any, ...]) -> bool:
    """Only strings (or nulls) where the canonical form reads them: a raw key equal to such a
    key has them too (``1 == 1.0 == True``, whose ``str`` differ, never equals a string), so a
    remembered answer is never given to a pod it is wrong for."""
    selector, tolerations, _ = raw
    if not all(type(k) is str and type(v) is str for k, v in selector):
        return False
    return all(
        type(v) is str or v is None
        for items in tolerations
        for k, v in items
        if k in _TOLERATION_FIELDS
    )


def _parse(
    spec: Mapping[str, Any],
    affinity: Mapping[str, Any] | None,
    node_selector: Mapping[str, Any] | None,
    tolerations: Iterable[Mapping[str, Any]] | None,
    host_ports: frozenset[HostPort],
) -> PodTerms:
    node_affinity = (affinity.get("nodeAffinity") or {}) if affinity else {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    selector: Selector | None = None
    if node_selector or required is not None:
        items = tuple(sorted((str(k), str(v)) for k, v in (node_selector or {}).items()))
        terms = None
        if required is not None:
            raw_terms = required.get("nodeSelectorTerms") or ()
            terms = tuple(sorted({_term(t) for t in raw_terms}))
        selector = (items, terms)
    preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    if selector is None and not preferred and not tolerations and not host_ports:
        return NO_TERMS
    key = (
        selector,
        _preferred(preferred) if preferred else (),
        canonical_tolerations(tolerations) if tolerations else (),
        host_ports,
    )
    interned = _interned.get(key)
    if interned is None:
        interned = PodTerms(*key)
        if len(_interned) >= _INTERN_LIMIT:
            _interned.clear()
        _interned[key] = interned
    return interned


def _requirement(raw: Mapping[str, Any]) -> Requirement:
    values = tuple(sorted(str(v) for v in raw.get("values") or ()))
    return (str(raw.get("key") or ""), str(raw.get("operator") or ""), values)


def _term(raw: Mapping[str, Any] | None) -> Term:
    raw = raw or {}
    exprs = tuple(sorted(_requirement(r) for r in raw.get("matchExpressions") or ()))
    fields = tuple(sorted(_requirement(r) for r in raw.get("matchFields") or ()))
    return (exprs, fields)


def _preferred(raw_terms: Iterable[Mapping[str, Any]]) -> Preferred:
    out: list[tuple[int, Term]] = []
    for raw in raw_terms:
        weight = raw.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or weight == 0:
            continue
        term = _term(raw.get("preference"))
        if term != ((), ()):
            out.append((weight, term))
    return tuple(sorted(out))


def canonical_tolerations(raw: Iterable[Mapping[str, Any]]) -> Tolerations:
    """Sorted, de-duplicated ``(key, operator, value, effect)`` tuples."""
    out = set()
    for tol in raw:
        op = str(tol.get("operator") or "Equal")
        value = "" if op == "Exists" else str(tol.get("value") or "")
        out.add((str(tol.get("key") or ""), op, value, str(tol.get("effect") or "")))
    return tuple(sorted(out))


_NO_PORTS: frozenset[HostPort] = frozenset()


def pod_host_ports(pod: Mapping[str, Any] | None) -> frozenset[HostPort]:
    """Host ports the pod's app containers and sidecars bind."""
    if not pod:
        return _NO_PORTS
    return _host_ports(pod.get("spec") or {})


def _host_ports(spec: Mapping[str, Any]) -> frozenset[HostPort]:
    ports: set[HostPort] | None = None
    for containers, sidecars_only in (
        (spec.get("containers"), False),
        (spec.get("initContainers"), True),
    ):
        for container in containers or ():
            raw_ports = container.get("ports")
            if not raw_ports or (sidecars_only and container.get("restartPolicy") != "Always"):
                continue
            for port in raw_ports:
                host_port = port.get("hostPort")
                if not isinstance(host_port, int) or host_port <= 0:
                    continue
                ip = str(port.get("hostIP") or ALL_ADDRESSES)
                if ports is None:
                    ports = set()
                ports.add((ip, str(port.get("protocol") or "TCP"), host_port))
    return _NO_PORTS if ports is None else frozenset(ports)


# -- the shape of a task ------------------------------------------------------------------------

Amounts = tuple[tuple[str, int | float], ...]
"""``(name, amount)`` pairs of a request in its own order, zeros left out."""


def request_key(request: Resource) -> Amounts:
    """A request as hashable pairs: whole amounts as ``int``, zeros left out."""
    items = tuple(request.items())
    known = _request_keys.get(items)
    if known is not None:
        return known
    out: list[tuple[str, int | float]] = []
    for name, amount in items:
        if amount:
            whole = int(amount)
            out.append((name, whole if whole == amount else amount))
    key = tuple(out)
    if len(_request_keys) >= _INTERN_LIMIT:
        _request_keys.clear()
    _request_keys[items] = key
    return key


_request_keys: dict[tuple[tuple[str, float], ...], Amounts] = {}
"""A request's stored pairs, in order -> its key (the pods of a gang repeat one request)."""


class TaskShape:
    """What the built-in plugins read of a task to filter and score nodes (module docstring).

    Hashable, with the hash computed once; equal when request, non-zero request and terms are.
    """

    __slots__ = ("_hash", "nonzero", "request", "terms")

    request: Amounts
    nonzero: Amounts
    terms: PodTerms
    _hash: int

    def __init__(self, request: Resource, nonzero: Resource, terms: PodTerms) -> None:
        self.request = request_key(request)
        self.nonzero = request_key(nonzero)
        self.terms = terms
        self._hash = hash((self.request, self.nonzero, terms))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, TaskShape):
            return NotImplemented
        return (
            self._hash == other._hash
            and self.request == other.request
            and self.nonzero == other.nonzero
            and self.terms == other.terms
        )

    def __repr__(self) -> str:
        return f"TaskShape(request={self.request}, nonzero={self.nonzero}, terms={self.terms})"

    @classmethod
    def of(cls, request: Resource, nonzero: Resource, terms: PodTerms) -> TaskShape:
        """The shape, shared: tasks of equal shape get the very same object (so comparing
        them is an identity test)."""
        shape = cls(request, nonzero, terms)
        known = _shapes.get(shape)
        if known is not None:
            return known
        if len(_shapes) >= _INTERN_LIMIT:
            _shapes.clear()
        _shapes[shape] = shape
        return shape


_shapes: dict[TaskShape, TaskShape] = {}
