"""An independent reading of kube-scheduler's pod-to-pod filters, for checking what pumice did.

Written from the Kubernetes API documentation and ``shared/reference/kube-constraints.md``
(sections 1 to 3), never from pumice's plugins: it imports nothing from ``pumice``. It works on
the same plain manifests that ``pumice simulate`` reads (Node, Pod and Namespace dicts), and it
is deliberately naive: every question is answered by walking all pods on all nodes.

What it decides, for a pod and a node, given the pods already on nodes:

* the node filters the pod-to-pod tables touch: untolerated ``NoSchedule`` / ``NoExecute``
  taints, ``nodeSelector`` and required node affinity (needed for the spread constraints'
  inclusion policies anyway);
* PodTopologySpread for ``whenUnsatisfiable: DoNotSchedule`` (maxSkew, minDomains,
  nodeAffinityPolicy, nodeTaintsPolicy, matchLabelKeys; a node without a constraint's key is
  rejected; terminating pods do not count);
* InterPodAffinity: the pod's required affinity (with the first-pod exception), its required
  anti-affinity, and the required anti-affinity of the pods already placed (symmetry);
  ``namespaces`` / ``namespaceSelector``; ``matchLabelKeys`` / ``mismatchLabelKeys`` merged into
  the selector as the API server does (merging twice changes nothing).

``first_reason`` gives the reason of the first failing filter in kube-scheduler's order (taints,
node affinity, spread, inter-pod affinity), in kube-scheduler's words; ``fit_error`` builds the
``0/N nodes are available: …`` summary; ``replay`` walks a list of placements and returns every
placement that broke a required term or a DoNotSchedule constraint against the pods before it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Obj = Mapping[str, Any]
Labels = Mapping[str, str]

AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD + " (missing required label)"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


# -- label selectors -------------------------------------------------------------------------


def selector_matches(selector: Obj | None, labels: Labels) -> bool:
    """A metav1.LabelSelector: ``None`` selects nothing, ``{}`` everything; requirements AND."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_requirement(req, labels) for req in selector.get("matchExpressions") or ())


def _requirement(req: Obj, labels: Labels) -> bool:
    key, op, values = req["key"], req["operator"], list(req.get("values") or ())
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise ValueError(f"label selector operator {op!r}")


def with_label_keys(
    selector: Obj | None, labels: Labels, match: Iterable[str], mismatch: Iterable[str] = ()
) -> Obj | None:
    """The selector with ``key In [value]`` for each ``match`` key and ``key NotIn [value]`` for
    each ``mismatch`` key that ``labels`` has (what the API server merges at create). A nil
    selector stays nil."""
    if selector is None:
        return None
    extra = [{"key": k, "operator": "In", "values": [labels[k]]} for k in match if k in labels]
    extra += [
        {"key": k, "operator": "NotIn", "values": [labels[k]]} for k in mismatch if k in labels
    ]
    if not extra:
        return selector
    merged = dict(selector)
    merged["matchExpressions"] = [*(selector.get("matchExpressions") or ()), *extra]
    return merged


# -- node-level filters ------------------------------------------------------------------------


def _node_requirement(req: Obj, labels: Labels) -> bool:
    op = req["operator"]
    if op in ("Gt", "Lt"):
        key = req["key"]
        if key not in labels:
            return False
        try:
            have, want = int(labels[key]), int(req["values"][0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return _requirement(req, labels)


def matches_node_affinity(pod: Obj, node: Obj) -> bool:
    """The pod's ``nodeSelector`` and required node affinity (terms ORed) against the node."""
    spec = pod.get("spec") or {}
    labels = node_labels(node)
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchExpressions") or ()
        fields = term.get("matchFields") or ()
        if not exprs and not fields:
            continue  # an empty term matches no node
        name = {"metadata.name": node["metadata"]["name"]}
        if all(_node_requirement(r, labels) for r in exprs) and all(
            _node_requirement(r, name) for r in fields
        ):
            return True
    return False


def _tolerates(toleration: Obj, taint: Obj) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or bool(toleration["key"] == taint["key"])
    same_key = toleration.get("key") == taint["key"]
    return bool(same_key and toleration.get("value", "") == taint.get("value", ""))


def untolerated_taint(pod: Obj, node: Obj) -> Obj | None:
    """The node's first ``NoSchedule`` / ``NoExecute`` taint the pod does not tolerate."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    for taint in (node.get("spec") or {}).get("taints") or ():
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            found: Obj = taint
            return found
    return None


# -- the cluster -------------------------------------------------------------------------------


def node_labels(node: Obj) -> Labels:
    labels: Labels = (node.get("metadata") or {}).get("labels") or {}
    return labels


def pod_labels(pod: Obj) -> Labels:
    labels: Labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels


def pod_namespace(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("namespace") or "default")


def pod_key(pod: Obj) -> str:
    return f"{pod_namespace(pod)}/{pod['metadata']['name']}"


def _terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


@dataclass
class Cluster:
    """Nodes, namespaces' labels, and the pods on nodes (in the order they were placed)."""

    nodes: dict[str, Obj]
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    placed: list[tuple[Obj, str]] = field(default_factory=list)

    @classmethod
    def of(cls, objects: Iterable[Obj]) -> Cluster:
        """From manifests: Nodes, Namespaces, and the Pods bound to a known node that have not
        finished (existing pods)."""
        objects = list(objects)
        nodes = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Node"}
        cluster = cls(nodes)
        for o in objects:
            if o.get("kind") == "Namespace":
                name = o["metadata"]["name"]
                cluster.namespace_labels[name] = dict(o["metadata"].get("labels") or {})
        for o in objects:
            if o.get("kind") != "Pod":
                continue
            node = (o.get("spec") or {}).get("nodeName")
            phase = (o.get("status") or {}).get("phase")
            if isinstance(node, str) and node in nodes and phase not in ("Succeeded", "Failed"):
                cluster.placed.append((o, node))
        return cluster

    def ns_labels(self, namespace: str) -> Labels:
        """A namespace's labels; one that is not given exists with only its name label."""
        return {**self.namespace_labels.get(namespace, {}), NAMESPACE_NAME_LABEL: namespace}


# -- inter-pod affinity -------------------------------------------------------------------------


def _pod_affinity(pod: Obj) -> Obj:
    affinity: Obj = (pod.get("spec") or {}).get("affinity") or {}
    return affinity


def required_terms(pod: Obj, kind: str) -> list[Obj]:
    """``kind`` is podAffinity or podAntiAffinity; the terms with their label keys merged."""
    block = _pod_affinity(pod).get(kind) or {}
    terms = block.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    labels = pod_labels(pod)
    out: list[Obj] = []
    for term in terms:
        merged = dict(term)
        merged["labelSelector"] = with_label_keys(
            term.get("labelSelector"),
            labels,
            term.get("matchLabelKeys") or (),
            term.get("mismatchLabelKeys") or (),
        )
        out.append(merged)
    return out


def term_matches(cluster: Cluster, term: Obj, owner_namespace: str, target: Obj) -> bool:
    """Whether an affinity term of a pod in ``owner_namespace`` selects the pod ``target``."""
    namespace = pod_namespace(target)
    names = term.get("namespaces") or ()
    ns_selector = term.get("namespaceSelector")
    if not names and ns_selector is None:
        in_scope = namespace == owner_namespace
    else:
        in_scope = namespace in names or (
            ns_selector is not None and selector_matches(ns_selector, cluster.ns_labels(namespace))
        )
    return in_scope and selector_matches(term.get("labelSelector"), pod_labels(target))


def inter_pod_affinity_reason(cluster: Cluster, pod: Obj, node_name: str) -> str | None:
    labels = node_labels(cluster.nodes[node_name])
    owner = pod_namespace(pod)
    affinity = required_terms(pod, "podAffinity")
    if affinity:
        if any(t["topologyKey"] not in labels for t in affinity):
            return AFFINITY
        counts: Counter[tuple[str, str]] = Counter()
        for other, where in cluster.placed:
            if all(term_matches(cluster, t, owner, other) for t in affinity):
                where_labels = node_labels(cluster.nodes[where])
                for t in affinity:
                    if t["topologyKey"] in where_labels:
                        counts[(t["topologyKey"], where_labels[t["topologyKey"]])] += 1
        short = any(counts[(t["topologyKey"], labels[t["topologyKey"]])] <= 0 for t in affinity)
        if short:
            first_of_group = not counts and all(
                term_matches(cluster, t, owner, pod) for t in affinity
            )
            if not first_of_group:
                return AFFINITY
    for t in required_terms(pod, "podAntiAffinity"):
        key = t["topologyKey"]
        if key not in labels:
            continue
        for other, where in cluster.placed:
            if node_labels(cluster.nodes[where]).get(key) == labels[key] and term_matches(
                cluster, t, owner, other
            ):
                return ANTI_AFFINITY
    for other, where in cluster.placed:
        where_labels = node_labels(cluster.nodes[where])
        for t in required_terms(other, "podAntiAffinity"):
            key = t["topologyKey"]
            if (
                key in where_labels
                and labels.get(key) == where_labels[key]
                and term_matches(cluster, t, pod_namespace(other), pod)
            ):
                return EXISTING_ANTI_AFFINITY
    return None


# -- topology spread ---------------------------------------------------------------------------


def hard_constraints(pod: Obj) -> list[Obj]:
    constraints = (pod.get("spec") or {}).get("topologySpreadConstraints") or ()
    return [c for c in constraints if c.get("whenUnsatisfiable") == "DoNotSchedule"]


def _spread_selector(constraint: Obj, pod: Obj) -> Obj | None:
    return with_label_keys(
        constraint.get("labelSelector"), pod_labels(pod), constraint.get("matchLabelKeys") or ()
    )


def _included(constraint: Obj, pod: Obj, node: Obj) -> bool:
    if constraint.get("nodeAffinityPolicy", "Honor") == "Honor" and not matches_node_affinity(
        pod, node
    ):
        return False
    return not (
        constraint.get("nodeTaintsPolicy", "Ignore") == "Honor"
        and untolerated_taint(pod, node) is not None
    )


def spread_reason(cluster: Cluster, pod: Obj, node_name: str) -> str | None:
    constraints = hard_constraints(pod)
    if not constraints:
        return None
    labels = node_labels(cluster.nodes[node_name])
    keys = [c["topologyKey"] for c in constraints]
    namespace = pod_namespace(pod)
    for c in constraints:
        key = c["topologyKey"]
        if key not in labels:
            return SPREAD_MISSING_LABEL
        selector = _spread_selector(c, pod)
        counts: dict[str, int] = {}
        for node in cluster.nodes.values():
            node_l = node_labels(node)
            if all(k in node_l for k in keys) and _included(c, pod, node):
                counts.setdefault(node_l[key], 0)
        for other, where in cluster.placed:
            where_labels = node_labels(cluster.nodes[where])
            domain = where_labels.get(key)
            if (
                domain in counts
                and all(k in where_labels for k in keys)
                and _included(c, pod, cluster.nodes[where])
                and pod_namespace(other) == namespace
                and not _terminating(other)
                and selector_matches(selector, pod_labels(other))
            ):
                counts[domain] += 1
        min_domains = c.get("minDomains") or 1
        global_min = min(counts.values()) if counts and len(counts) >= min_domains else 0
        self_match = 1 if selector_matches(selector, pod_labels(pod)) else 0
        skew = counts.get(labels[key], 0) + self_match - global_min
        if skew > c["maxSkew"]:
            return SPREAD
    return None


# -- putting it together -----------------------------------------------------------------------


def first_reason(cluster: Cluster, pod: Obj, node_name: str) -> str | None:
    """Why ``pod`` may not go to ``node_name`` now (the first failing filter), or None."""
    node = cluster.nodes[node_name]
    taint = untolerated_taint(pod, node)
    if taint is not None:
        return f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"
    if not matches_node_affinity(pod, node):
        return NODE_AFFINITY
    return spread_reason(cluster, pod, node_name) or inter_pod_affinity_reason(
        cluster, pod, node_name
    )


def feasible_nodes(cluster: Cluster, pod: Obj) -> set[str]:
    return {name for name in cluster.nodes if first_reason(cluster, pod, name) is None}


def fit_error(reasons: Mapping[str, int], nodes: int) -> str:
    """kube-scheduler's ``0/N nodes are available: …`` for per-reason node counts."""
    parts = ", ".join(sorted(f"{n} {reason}" for reason, n in reasons.items()))
    return f"0/{nodes} nodes are available: {parts}."


def reason_counts(cluster: Cluster, pod: Obj) -> Counter[str]:
    counts: Counter[str] = Counter()
    for name in cluster.nodes:
        reason = first_reason(cluster, pod, name)
        if reason is not None:
            counts[reason] += 1
    return counts


@dataclass(frozen=True)
class Violation:
    pod: str
    node: str
    reason: str

    def __str__(self) -> str:
        return f"{self.pod} on {self.node}: {self.reason}"


def replay(
    objects: Iterable[Obj], placements: Sequence[Mapping[str, Any]]
) -> tuple[list[Violation], Cluster]:
    """Place the pods of ``placements`` (``{"pod": "ns/name", "node": ...}``, in order) into the
    cluster the manifests describe, each checked against the pods placed before it. Returns the
    violations and the final cluster."""
    objects = list(objects)
    cluster = Cluster.of(objects)
    pods = {pod_key(o): o for o in objects if o.get("kind") == "Pod"}
    violations = []
    for placement in placements:
        pod, node = pods[placement["pod"]], placement["node"]
        reason = first_reason(cluster, pod, node)
        if reason is not None:
            violations.append(Violation(placement["pod"], node, reason))
        cluster.placed.append((pod, node))
    return violations, cluster
