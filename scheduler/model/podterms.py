"""A pod's pod-to-pod constraints in canonical, hashable form (parsing only).

``pod_links(pod)`` reads ``spec.affinity.podAffinity`` / ``podAntiAffinity`` (required and
preferred terms) and ``spec.topologySpreadConstraints`` of a plain-dict pod into a ``PodLinks``;
what they mean for nodes is decided by the plugins (``pumice.plugins._interpod``,
``pumice.plugins._spread``). ``TaskInfo.links`` computes it once per pod object.

Forms:

* a label selector is a sorted tuple of requirements ``(key, operator, sorted values)``,
  ``matchLabels`` read as ``key In [value]``; ``None`` is a nil selector (matches nothing),
  ``()`` the empty selector ``{}`` (matches everything). A selector with an operator other than
  In / NotIn / Exists / DoesNotExist, In / NotIn without values, or Exists / DoesNotExist with
  values does not parse: it is kept as ``INVALID`` and matches nothing.
* ``matchLabelKeys`` / ``mismatchLabelKeys`` of an affinity term with a non-nil selector add
  ``key In [own value]`` / ``key NotIn [own value]`` for each listed key the pod has, as the API
  server does at creation; the requirements are a sorted set, so merging twice changes nothing.
  ``matchLabelKeys`` of a spread constraint adds ``key In [own value]`` the same way.
* an affinity term is ``(namespaces, namespace selector, selector, topologyKey)``: both
  namespace fields empty give the pod's own namespace; a ``{}`` namespace selector gives every
  namespace (``namespaces`` None).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "INVALID",
    "NO_LINKS",
    "AffinityTerm",
    "LabelSelector",
    "PodLinks",
    "SpreadConstraint",
    "WeightedTerm",
    "pod_links",
    "selector_matches",
]

SelectorRequirement = tuple[str, str, tuple[str, ...]]
LabelSelector = tuple[SelectorRequirement, ...]
INVALID: LabelSelector = (("", "Invalid", ()),)
"""A selector that does not parse: it matches nothing."""

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One pod (anti-)affinity term: which pods it selects, and the topology key."""

    namespaces: frozenset[str] | None
    """The namespaces whose pods the term may select (None: every namespace)."""
    namespace_selector: LabelSelector | None
    """Further namespaces, by their labels (None: none; never ``()``, folded into None
    namespaces)."""
    selector: LabelSelector | None
    topology_key: str


WeightedTerm = tuple[int, AffinityTerm]


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One topology spread constraint, with its selector merged with ``matchLabelKeys``."""

    max_skew: int
    topology_key: str
    hard: bool
    """``whenUnsatisfiable: DoNotSchedule`` (a filter); else ``ScheduleAnyway`` (a score)."""
    selector: LabelSelector | None
    min_domains: int
    honor_affinity: bool
    """``nodeAffinityPolicy`` Honor (the default): only nodes matching the pod's node
    selector and required node affinity count."""
    honor_taints: bool
    """``nodeTaintsPolicy`` Honor (default Ignore): nodes with an untolerated NoSchedule /
    NoExecute taint do not count."""


@dataclass(frozen=True, slots=True)
class PodLinks:
    """A pod's pod-to-pod constraints (see the module docstring); hashable."""

    affinity: tuple[AffinityTerm, ...] = ()
    anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    _hash: int = field(init=False, repr=False, compare=False)
    hard_spread: tuple[SpreadConstraint, ...] = field(init=False, repr=False, compare=False)
    """The DoNotSchedule constraints (filters), in spec order."""
    soft_spread: tuple[SpreadConstraint, ...] = field(init=False, repr=False, compare=False)
    """The ScheduleAnyway constraints (scores), in spec order."""
    _empty: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = (
            self.affinity,
            self.anti_affinity,
            self.preferred_affinity,
            self.preferred_anti_affinity,
            self.spread,
        )
        object.__setattr__(self, "_hash", hash(parts))
        object.__setattr__(self, "_empty", not any(parts))
        object.__setattr__(self, "hard_spread", tuple(c for c in self.spread if c.hard))
        object.__setattr__(self, "soft_spread", tuple(c for c in self.spread if not c.hard))

    def __hash__(self) -> int:
        return self._hash

    @property
    def empty(self) -> bool:
        return self._empty

    def label_keys(self) -> set[str]:
        """Every label key a selector of these constraints reads."""
        keys: set[str] = set()
        terms = [*self.affinity, *self.anti_affinity]
        terms += [t for _, t in (*self.preferred_affinity, *self.preferred_anti_affinity)]
        for term in terms:
            keys.update(r[0] for r in term.selector or ())
        for constraint in self.spread:
            keys.update(r[0] for r in constraint.selector or ())
        return keys


NO_LINKS = PodLinks()


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Does a canonical label selector select ``labels``? (nil: never; ``{}``: always)."""
    if selector is None:
        return False
    for key, op, values in selector:
        value = labels.get(key)
        if op == "In":
            if value is None or value not in values:
                return False
        elif op == "NotIn":
            if value is not None and value in values:
                return False
        elif op == "Exists":
            if value is None:
                return False
        elif op == "DoesNotExist":
            if value is not None:
                return False
        else:
            return False
    return True


def label_selector(
    raw: Mapping[str, Any] | None, extra: Iterable[SelectorRequirement] = ()
) -> LabelSelector | None:
    """The canonical form of a Kubernetes ``LabelSelector`` dict (module docstring)."""
    if raw is None:
        return None
    out: set[SelectorRequirement] = set()
    for key, value in (raw.get("matchLabels") or {}).items():
        out.add((str(key), "In", (str(value),)))
    for expr in raw.get("matchExpressions") or ():
        op = str(expr.get("operator") or "")
        values = tuple(sorted({str(v) for v in expr.get("values") or ()}))
        if op not in _OPERATORS or (op in ("In", "NotIn")) != bool(values):
            return INVALID
        out.add((str(expr.get("key") or ""), op, values))
    out.update(extra)
    return tuple(sorted(out))


def _own_value_requirements(
    keys: Iterable[Any] | None, labels: Mapping[str, Any], op: str
) -> list[SelectorRequirement]:
    out: list[SelectorRequirement] = []
    for key in keys or ():
        if key in labels:
            out.append((str(key), op, (str(labels[key]),)))
    return out


def _affinity_term(
    raw: Mapping[str, Any], namespace: str, labels: Mapping[str, Any]
) -> AffinityTerm:
    raw_selector = raw.get("labelSelector")
    extra: list[SelectorRequirement] = []
    if raw_selector is not None:
        extra += _own_value_requirements(raw.get("matchLabelKeys"), labels, "In")
        extra += _own_value_requirements(raw.get("mismatchLabelKeys"), labels, "NotIn")
    selector = label_selector(raw_selector, extra)
    listed = frozenset(str(n) for n in raw.get("namespaces") or ())
    raw_ns_selector = raw.get("namespaceSelector")
    ns_selector = label_selector(raw_ns_selector)
    namespaces: frozenset[str] | None = listed
    if ns_selector == ():
        namespaces, ns_selector = None, None  # {}: every namespace
    elif not listed and ns_selector is None:
        namespaces = frozenset({namespace})
    return AffinityTerm(namespaces, ns_selector, selector, str(raw.get("topologyKey") or ""))


def _weighted(
    raw_terms: Iterable[Mapping[str, Any]], namespace: str, labels: Mapping[str, Any]
) -> tuple[WeightedTerm, ...]:
    out = []
    for raw in raw_terms:
        weight = raw.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or weight == 0:
            continue
        out.append((weight, _affinity_term(raw.get("podAffinityTerm") or {}, namespace, labels)))
    return tuple(out)


def _spread(raw: Mapping[str, Any], labels: Mapping[str, Any]) -> SpreadConstraint:
    raw_selector = raw.get("labelSelector")
    extra = _own_value_requirements(raw.get("matchLabelKeys"), labels, "In")
    selector = label_selector(raw_selector, extra) if raw_selector is not None else None
    min_domains = raw.get("minDomains")
    return SpreadConstraint(
        max_skew=int(raw.get("maxSkew") or 1),
        topology_key=str(raw.get("topologyKey") or ""),
        hard=raw.get("whenUnsatisfiable", "DoNotSchedule") != "ScheduleAnyway",
        selector=selector,
        min_domains=int(min_domains) if isinstance(min_domains, int) and min_domains > 0 else 1,
        honor_affinity=raw.get("nodeAffinityPolicy") != "Ignore",
        honor_taints=raw.get("nodeTaintsPolicy") == "Honor",
    )


def pod_links(pod: Mapping[str, Any] | None) -> PodLinks:
    """The pod-to-pod constraints of a plain-dict pod (``NO_LINKS`` when it has none)."""
    if not pod:
        return NO_LINKS
    spec = pod.get("spec") or _NOTHING
    affinity = spec.get("affinity") or _NOTHING
    pod_affinity = affinity.get("podAffinity") or _NOTHING
    pod_anti = affinity.get("podAntiAffinity") or _NOTHING
    spread = spec.get("topologySpreadConstraints") or ()
    if not pod_affinity and not pod_anti and not spread:
        return NO_LINKS
    meta = pod.get("metadata") or _NOTHING
    namespace = str(meta.get("namespace") or "default")
    labels = meta.get("labels") or _NOTHING
    # Pods of one template carry the very same affinity, spread and label objects once
    # slimmed (``pumice.cache.slim``): their links are read once. The entry holds those
    # objects, so an id in the key cannot be reused by another object while it is there.
    key = (namespace, id(affinity), id(spread), id(labels))
    known = _by_parts.get(key)
    if known is not None and known[0] is affinity and known[1] is spread and known[2] is labels:
        return known[3]
    links = _links(pod_affinity, pod_anti, spread, namespace, labels)
    if len(_by_parts) >= _INTERN_LIMIT:
        _by_parts.clear()
    _by_parts[key] = (affinity, spread, labels, links)
    return links


def _links(
    pod_affinity: Mapping[str, Any],
    pod_anti: Mapping[str, Any],
    spread: Iterable[Any],
    namespace: str,
    labels: Mapping[str, Any],
) -> PodLinks:
    def required(part: Mapping[str, Any]) -> tuple[AffinityTerm, ...]:
        raw = part.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        return tuple(_affinity_term(t or {}, namespace, labels) for t in raw)

    def preferred(part: Mapping[str, Any]) -> tuple[WeightedTerm, ...]:
        raw = part.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        return _weighted(raw, namespace, labels)

    links = PodLinks(
        affinity=required(pod_affinity),
        anti_affinity=required(pod_anti),
        preferred_affinity=preferred(pod_affinity),
        preferred_anti_affinity=preferred(pod_anti),
        spread=tuple(_spread(c or {}, labels) for c in spread),
    )
    if links == NO_LINKS:
        return NO_LINKS
    # One object per distinct value: sessions key their caches by a pod's links, and a dict
    # lookup with the very object it holds skips the field-by-field comparison.
    interned = _interned.get(links)
    if interned is None:
        if len(_interned) >= _INTERN_LIMIT:
            _interned.clear()
        interned = _interned[links] = links
    return interned


_NOTHING: Mapping[str, Any] = MappingProxyType({})
_INTERN_LIMIT = 1 << 16
_interned: dict[PodLinks, PodLinks] = {}
_by_parts: dict[tuple[str, int, int, int], tuple[object, object, object, PodLinks]] = {}
"""(namespace, ids of the affinity, spread and labels objects) -> those objects, their links."""
