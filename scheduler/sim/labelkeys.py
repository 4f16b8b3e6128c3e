"""What the API server does with ``matchLabelKeys`` / ``mismatchLabelKeys`` of pod affinity terms
when a pod is created (gate ``MatchLabelKeysInPodAffinity``: beta and on since 1.31, the
version line the simulated server answers to).

Every required and preferred term of ``podAffinity`` and ``podAntiAffinity`` that has a
``labelSelector`` gets, for each key of ``matchLabelKeys`` the pod carries, the requirement
``key In [the pod's value]`` appended to ``matchExpressions``, and for each key of
``mismatchLabelKeys`` ``key NotIn [the pod's value]``; keys the pod lacks are skipped, a term
without a selector (it selects nothing) is left alone, and the key lists stay on the term. This
happens at create only: the pod's affinity is immutable afterwards.

The merge is idempotent: a requirement already in the selector is not appended again, so a pod
seeded from a dump of a real cluster (already merged there) comes out unchanged. The real
server appends unconditionally, but only once per pod; the two select the same pods.

Topology spread constraints' ``matchLabelKeys`` are merged by the API server only from 1.34
(``MatchLabelKeysInPodTopologySpreadSelectorMerge``), newer than the simulated version, so they
are left as written (the scheduler merges them itself).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pumice.plain import Obj

AFFINITY_KINDS = ("podAffinity", "podAntiAffinity")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def merge_label_keys(pod: Obj) -> Obj:
    """``pod`` with its affinity terms' label keys merged into their selectors (a copy when
    anything changes, else ``pod`` itself)."""
    affinity = (pod.get("spec") or {}).get("affinity")
    if not isinstance(affinity, dict) or not _has_label_keys(affinity):
        return pod
    labels = (pod.get("metadata") or {}).get("labels") or {}
    out = copy.deepcopy(pod)
    for kind in AFFINITY_KINDS:
        block = out["spec"]["affinity"].get(kind)
        if not isinstance(block, dict):
            continue
        for term in block.get(REQUIRED) or ():
            _merge_term(term, labels)
        for weighted in block.get(PREFERRED) or ():
            if isinstance(weighted, dict):
                _merge_term(weighted.get("podAffinityTerm"), labels)
    return out


def _terms(affinity: Mapping[str, Any]) -> list[Any]:
    out: list[Any] = []
    for kind in AFFINITY_KINDS:
        block = affinity.get(kind)
        if not isinstance(block, dict):
            continue
        out += list(block.get(REQUIRED) or ())
        out += [w.get("podAffinityTerm") for w in block.get(PREFERRED) or () if isinstance(w, dict)]
    return out


def _has_label_keys(affinity: Mapping[str, Any]) -> bool:
    return any(
        isinstance(t, dict) and (t.get("matchLabelKeys") or t.get("mismatchLabelKeys"))
        for t in _terms(affinity)
    )


def _merge_term(term: Any, labels: Mapping[str, Any]) -> None:
    if not isinstance(term, dict) or not isinstance(term.get("labelSelector"), dict):
        return
    selector = term["labelSelector"]
    expressions = list(selector.get("matchExpressions") or ())
    for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        for key in term.get(field) or ():
            if not isinstance(key, str) or key not in labels:
                continue
            requirement = {"key": key, "operator": operator, "values": [str(labels[key])]}
            if requirement not in expressions:
                expressions.append(requirement)
    if expressions:
        selector["matchExpressions"] = expressions
