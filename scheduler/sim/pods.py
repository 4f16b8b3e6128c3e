"""Pod-only behaviour: the label keys merged at create, binding, eviction, graceful deletion.

Binding (``pods/{name}/binding`` or the legacy ``bindings`` collection) answers 201 with a
``Status``; it sets ``spec.nodeName``, merges the Binding's annotations and sets
``PodScheduled=True``. It is refused with 409 Conflict when the pod is already assigned, is
being deleted, still has scheduling gates, or when the Binding's uid/resourceVersion
preconditions do not match; 404 when the pod does not exist.

Deletion is graceful like the real server's: a pod running on a node gets
``deletionTimestamp`` + ``deletionGracePeriodSeconds`` and stays until the (simulated) kubelet
removes it; a pod that was never scheduled, or already finished, goes at once; a second delete
may only shorten the grace period; ``gracePeriodSeconds=0`` removes it now. Eviction is a
delete behind the eviction subresource (no PodDisruptionBudgets exist in the simulation).

**At create** (``merge_label_keys``), what the API server does with ``matchLabelKeys`` /
``mismatchLabelKeys`` of pod affinity terms (gate ``MatchLabelKeysInPodAffinity``: beta and on
since 1.31, the version line the simulated server answers to). Every required and preferred term
of ``podAffinity`` and ``podAntiAffinity`` that has a ``labelSelector`` gets, for each key of
``matchLabelKeys`` the pod carries, the requirement ``key In [the pod's value]`` appended to
``matchExpressions``, and for each key of ``mismatchLabelKeys`` ``key NotIn [the pod's value]``;
keys the pod lacks are skipped, a term without a selector (it selects nothing) is left alone, and
the key lists stay on the term. This happens at create only: the pod's affinity is immutable
afterwards. The merge is idempotent: a requirement already in the selector is not appended
again, so a pod seeded from a dump of a real cluster (already merged there) comes out unchanged.
The real server appends unconditionally, but only once per pod; the two select the same pods.
Topology spread constraints' ``matchLabelKeys`` are merged by the API server only from 1.34
(``MatchLabelKeysInPodTopologySpreadSelectorMerge``), newer than the simulated version, so they
are left as written (the scheduler merges them itself).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pumice.sim.errors import (
    bad_request,
    conflict,
    invalid,
    namespace_mismatch,
    rv_precondition,
    success_status,
    uid_precondition,
)
from pumice.sim.objects import Obj, get_path, meta, now_rfc3339, set_condition, with_meta
from pumice.sim.resources import PODS, ResourceType

if TYPE_CHECKING:
    from pumice.sim.store import Store


class PodRegistry(Protocol):
    """What the pod verbs use of the registry (``pumice.sim.registry.Registry``, which imports
    this module for graceful deletion, so this one knows it only by this shape)."""

    store: Store

    def current(self, rtype: ResourceType, namespace: str, name: str) -> Obj: ...

    def delete(self, rtype: ResourceType, namespace: str, name: str, options: Obj) -> Obj: ...

    def remove_or_finalize(self, rtype: ResourceType, old: Obj, grace: int) -> Obj: ...


def bind(registry: PodRegistry, namespace: str, name: str, body: Any, dry_run: bool = False) -> Obj:
    """POST pods/{name}/binding (``name`` is empty for the legacy ``bindings`` collection)."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a JSON object")
    m = meta(body)
    body_name = str(m.get("name") or "")
    if name and body_name and body_name != name:
        raise bad_request(f"name in URL ({name}) does not match name in Binding ({body_name})")
    name = name or body_name
    if m.get("namespace") not in (None, "", namespace):
        raise namespace_mismatch()
    target = body.get("target") or {}
    if not target.get("name"):
        raise invalid(
            "Binding",
            "",
            name=name,
            causes=[("target.name", "FieldValueRequired", "Required value")],
        )
    if target.get("kind") not in (None, "", "Node"):
        raise invalid(
            "Binding",
            "",
            name=name,
            causes=[
                (
                    "target.kind",
                    "FieldValueNotSupported",
                    f'Unsupported value: "{target.get("kind")}": supported values: "Node"',
                )
            ],
        )
    pod = registry.current(PODS, namespace, name)
    pm = meta(pod)
    if m.get("uid") and m["uid"] != pm.get("uid"):
        raise uid_precondition("pods", "", name=name, wanted=m["uid"], actual=pm.get("uid"))
    if m.get("resourceVersion") and m["resourceVersion"] != pm.get("resourceVersion"):
        raise rv_precondition(
            "pods", "", name=name, wanted=m["resourceVersion"], actual=pm.get("resourceVersion")
        )
    if pm.get("deletionTimestamp"):
        raise conflict(
            "pods/binding",
            "",
            name=name,
            why=f"pod {name} is being deleted, cannot be assigned to a host",
        )
    node = get_path(pod, "spec", "nodeName")
    if node:
        raise conflict(
            "pods/binding", "", name=name, why=f'pod {name} is already assigned to node "{node}"'
        )
    if get_path(pod, "spec", "schedulingGates"):
        raise conflict(
            "pods/binding", "", name=name, why=f"pod {name} has non-empty .spec.schedulingGates"
        )
    if dry_run:
        return success_status(201)
    spec = {**pod["spec"], "nodeName": target["name"]}
    status = dict(pod.get("status") or {})
    status["conditions"] = set_condition(
        status.get("conditions"),
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None},
        now_rfc3339(),
    )
    annotations = m.get("annotations")
    updated = {**pod, "spec": spec, "status": status}
    if annotations:
        updated = with_meta(updated, annotations={**(pm.get("annotations") or {}), **annotations})
    registry.store.commit(PODS.table, (namespace, name), updated)
    return success_status(201)


def grace_period(pod: Obj, options: Obj) -> int:
    """The grace period the server grants a pod deletion with these DeleteOptions."""
    if not get_path(pod, "spec", "nodeName"):
        return 0
    if get_path(pod, "status", "phase") in ("Succeeded", "Failed"):
        return 0
    asked = options.get("gracePeriodSeconds")
    if asked is None:
        asked = get_path(pod, "spec", "terminationGracePeriodSeconds")
    try:
        grace = int(asked if asked is not None else 30)
    except (TypeError, ValueError):
        raise bad_request(f"invalid gracePeriodSeconds: {asked!r}") from None
    return max(grace, 0)


def delete_pod(registry: PodRegistry, pod: Obj, options: Obj) -> Obj:
    grace = grace_period(pod, options)
    m = meta(pod)
    key = (str(m.get("namespace")), str(m.get("name")))
    if m.get("deletionTimestamp"):
        current = int(m.get("deletionGracePeriodSeconds") or 0)
        if grace == 0 and not m.get("finalizers"):
            return registry.store.commit(PODS.table, key, None).obj
        if grace < current:
            shorter = with_meta(
                pod, deletionGracePeriodSeconds=grace, deletionTimestamp=now_rfc3339()
            )
            return registry.store.commit(PODS.table, key, shorter).obj
        return pod
    return registry.remove_or_finalize(PODS, pod, grace)


def evict(registry: PodRegistry, namespace: str, name: str, body: Any) -> Obj:
    """POST pods/{name}/eviction: a graceful delete; 201 with a Status on success."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a JSON object")
    body_name = meta(body).get("name")
    if body_name and body_name != name:
        raise bad_request(f"name in URL ({name}) does not match name in Eviction ({body_name})")
    options = body.get("deleteOptions") or {}
    registry.delete(PODS, namespace, name, options)
    return success_status(201)


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
