"""Pod-to-pod constraint cases for ``pumice simulate``: builders, case records, runners.

The tables in ``tests/plugins/test_*_tables.py`` re-express kube-scheduler's own test tables
(InterPodAffinity, PodTopologySpread, and the integration filters test) as manifests, in our own
structure. A case names its source (``file: TestFunction: 'case name'``) and says what must
happen to its one incoming pod:

* ``FilterCase``: the set of nodes that pass every filter. When it is not empty the pod must be
  placed on one of them and, with ``--explain``, the nodes it could have gone to must be exactly
  that set; when it is empty the pod must be unschedulable with kube-scheduler's message, built
  from ``reasons`` (reason -> number of nodes).
* ``ScoreCase``: the node that must win, and kube-scheduler's normalised score of every node
  (the plugin under test isolated: every other nodeorder scorer has weight 0).

Nodes are big (16 cpu, 32Gi) and pods small (100m, 128Mi), so resources never decide. Existing
pods are bound (``spec.nodeName``) and were scheduled by ``default-scheduler``; the incoming
pod is ``schedulerName: pumice``. Namespaces other than ``default`` get their own Namespace
objects only where their labels matter (``namespaceSelector``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.constraint_checker import Cluster, feasible_nodes, fit_error, reason_counts
from support.manifests import pending, simulate

Obj = dict[str, Any]
Capsys = pytest.CaptureFixture[str]

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

FILTER_CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
"""The default configuration's plugins (drf and binpack left out: they cannot change which
nodes pass the filters); the predicates plugin with its defaults, so both pod-to-pod filters
are on as in Volcano."""


def score_config(
    podaffinity: int = 0,
    podtopologyspread: int = 0,
    *,
    hard_pod_affinity_weight: int | None = None,
    filters_off: Sequence[str] = (),
) -> str:
    """nodeorder with every scorer at weight 0 except the two pod-to-pod ones given;
    ``hard_pod_affinity_weight`` sets ``podaffinity.hardPodAffinityWeight``; ``filters_off``
    names predicates flags (``predicate.<Filter>Enable``) set false, for the unit tables that
    score a node another filter would reject."""
    weights: dict[str, int] = {
        "leastrequested.weight": 0,
        "mostrequested.weight": 0,
        "balancedresource.weight": 0,
        "nodeaffinity.weight": 0,
        "tainttoleration.weight": 0,
        "imagelocality.weight": 0,
        "podaffinity.weight": podaffinity,
        "podtopologyspread.weight": podtopologyspread,
    }
    if hard_pod_affinity_weight is not None:
        weights["podaffinity.hardPodAffinityWeight"] = hard_pod_affinity_weight
    args = "".join(f"      {k}: {v}\n" for k, v in weights.items())
    predicates = "  - name: predicates\n"
    if filters_off:
        flags = "".join(f"      {flag}: false\n" for flag in filters_off)
        predicates += "    arguments:\n" + flags
    return (
        'actions: "enqueue, allocate, backfill"\n'
        "tiers:\n"
        "- plugins:\n"
        "  - name: priority\n"
        "  - name: gang\n"
        "    enablePreemptable: false\n"
        "- plugins:\n" + predicates + "  - name: nodeorder\n"
        "    arguments:\n" + args
    )


# -- builders ----------------------------------------------------------------------------------


def node(name: str, labels: Mapping[str, str] | None = None, *, taints: Sequence[Obj] = ()) -> Obj:
    """A node with exactly these labels (no implicit hostname label)."""
    allocatable = {"cpu": "16", "memory": "32Gi", "pods": "110"}
    spec: Obj = {"taints": [dict(t) for t in taints]} if taints else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def namespace(name: str, labels: Mapping[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": dict(labels or {})},
    }


NO_SCHEDULE = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
"""The taint the tables use where kube-scheduler's use node.kubernetes.io/unschedulable."""
TAINT_REASON = "node(s) had untolerated taint {dedicated: infra}"


def in_(key: str, *values: str) -> Obj:
    return {"key": key, "operator": "In", "values": list(values)}


def not_in(key: str, *values: str) -> Obj:
    return {"key": key, "operator": "NotIn", "values": list(values)}


def exists(key: str) -> Obj:
    return {"key": key, "operator": "Exists"}


def absent(key: str) -> Obj:
    return {"key": key, "operator": "DoesNotExist"}


def sel(*exprs: Obj, **match_labels: str) -> Obj:
    """A label selector; ``sel()`` is the empty selector (everything)."""
    out: Obj = {}
    if match_labels:
        out["matchLabels"] = dict(match_labels)
    if exprs:
        out["matchExpressions"] = [dict(e) for e in exprs]
    return out


def term(
    selector: Obj | None,
    key: str,
    *,
    namespaces: Sequence[str] | None = None,
    ns_selector: Obj | None = None,
    match_keys: Sequence[str] = (),
    mismatch_keys: Sequence[str] = (),
) -> Obj:
    """A PodAffinityTerm."""
    out: Obj = {"topologyKey": key}
    if selector is not None:
        out["labelSelector"] = selector
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    if ns_selector is not None:
        out["namespaceSelector"] = ns_selector
    if match_keys:
        out["matchLabelKeys"] = list(match_keys)
    if mismatch_keys:
        out["mismatchLabelKeys"] = list(mismatch_keys)
    return out


def weighted(weight: int, affinity_term: Obj) -> Obj:
    return {"weight": weight, "podAffinityTerm": affinity_term}


def spread(
    max_skew: int,
    key: str,
    selector: Obj | None,
    *,
    when: str = "DoNotSchedule",
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_keys: Sequence[str] = (),
) -> Obj:
    """A TopologySpreadConstraint; ``selector=None`` leaves ``labelSelector`` out (nil)."""
    out: Obj = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        out["labelSelector"] = selector
    if min_domains is not None:
        out["minDomains"] = min_domains
    if affinity_policy is not None:
        out["nodeAffinityPolicy"] = affinity_policy
    if taints_policy is not None:
        out["nodeTaintsPolicy"] = taints_policy
    if match_keys:
        out["matchLabelKeys"] = list(match_keys)
    return out


def node_in(key: str, *values: str) -> Obj:
    """Required node affinity: one term, one requirement ``key In values``."""
    return _node_affinity(in_(key, *values))


def node_not_in(key: str, *values: str) -> Obj:
    return _node_affinity(not_in(key, *values))


def _node_affinity(requirement: Obj) -> Obj:
    terms = [{"matchExpressions": [requirement]}]
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    ns: str = "default",
    on: str | None = None,
    affinity: Sequence[Obj] = (),
    anti: Sequence[Obj] = (),
    preferred: Sequence[Obj] = (),
    preferred_anti: Sequence[Obj] = (),
    spreads: Sequence[Obj] = (),
    node_selector: Mapping[str, str] | None = None,
    node_affinity: Obj | None = None,
    tolerations: Sequence[Obj] = (),
    terminating: bool = False,
    group: str | None = None,
    scheduler: str | None = None,
) -> Obj:
    """A pod: bound to ``on`` (Running, scheduled by default-scheduler unless ``scheduler``
    says otherwise) or pending for pumice."""
    spec: Obj = {
        "schedulerName": scheduler or ("default-scheduler" if on else "pumice"),
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        ],
    }
    if on:
        spec["nodeName"] = on
    aff: Obj = {}
    if affinity or preferred:
        aff["podAffinity"] = _block(affinity, preferred)
    if anti or preferred_anti:
        aff["podAntiAffinity"] = _block(anti, preferred_anti)
    if node_affinity is not None:
        aff["nodeAffinity"] = node_affinity
    if aff:
        spec["affinity"] = aff
    if spreads:
        spec["topologySpreadConstraints"] = [dict(s) for s in spreads]
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    meta: Obj = {
        "name": name,
        "namespace": ns,
        "uid": f"uid-{ns}-{name}",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": dict(labels or {}),
    }
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if on else "Pending"},
    }


def _block(required: Sequence[Obj], preferred: Sequence[Obj]) -> Obj:
    out: Obj = {}
    if required:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = [dict(t) for t in required]
    if preferred:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [dict(t) for t in preferred]
    return out


# -- cases -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilterCase:
    """One row of a kube-scheduler filter table, as the manifests and the verdict we expect."""

    source: str
    nodes: Sequence[Obj]
    existing: Sequence[Obj]
    incoming: Obj
    feasible: frozenset[str]
    reasons: Mapping[str, int] = field(default_factory=dict)
    namespaces: Sequence[Obj] = ()
    note: str = ""

    @property
    def objects(self) -> list[Obj]:
        return [*self.namespaces, *self.nodes, *self.existing, self.incoming]

    @property
    def key(self) -> str:
        meta = self.incoming["metadata"]
        return f"{meta['namespace']}/{meta['name']}"

    def message(self) -> str:
        return fit_error(self.reasons, len(self.nodes))


@dataclass(frozen=True)
class ScoreCase:
    """One row of a kube-scheduler score table: the winner and every node's normalised score.

    ``unfit`` nodes stand for the table's nodes that failed filtering: they carry a taint the
    incoming pod does not tolerate."""

    source: str
    nodes: Sequence[Obj]
    existing: Sequence[Obj]
    incoming: Obj
    scores: Mapping[str, int]
    namespaces: Sequence[Obj] = ()
    config: str | None = None
    """The configuration to run with, when not the table's (``score_config``'s options)."""
    note: str = ""

    @property
    def objects(self) -> list[Obj]:
        return [*self.namespaces, *self.nodes, *self.existing, self.incoming]

    @property
    def key(self) -> str:
        meta = self.incoming["metadata"]
        return f"{meta['namespace']}/{meta['name']}"

    def winners(self) -> set[str]:
        top = max(self.scores.values())
        return {n for n, s in self.scores.items() if s == top}


def params(cases: Iterable[FilterCase | ScoreCase]) -> list[Any]:
    """pytest params whose ids are the source cases."""
    out = []
    seen: set[str] = set()
    for case in cases:
        assert case.source not in seen, f"two cases named {case.source}"
        seen.add(case.source)
        out.append(pytest.param(case, id=case.source))
    return out


# -- running -----------------------------------------------------------------------------------


def run(tmp_path: Path, capsys: Capsys, objects: Sequence[Obj], config: str) -> dict[str, Any]:
    """``pumice simulate --explain --output json`` on the objects."""
    return simulate(tmp_path, objects, capsys, config=config, extra=["--explain"])


def placement_of(result: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    found = [p for p in result["placements"] if p["pod"] == key]
    assert len(found) <= 1, found
    return found[0] if found else None


def fit_error_head(message: str) -> str:
    """The ``0/N nodes are available: ….`` part of a message (a PostFilter part is dropped)."""
    return message.split(" preemption: ", 1)[0]


def check_filter_case(tmp_path: Path, capsys: Capsys, case: FilterCase) -> None:
    result = run(tmp_path, capsys, case.objects, FILTER_CONFIG)
    placement = placement_of(result, case.key)
    why = pending(result).get(case.key)
    if case.feasible:
        assert placement is not None, (
            f"{case.source}: expected a placement on one of {sorted(case.feasible)}, "
            f"got unschedulable: {why}"
        )
        assert placement["node"] in case.feasible, (
            f"{case.source}: placed on {placement['node']}, feasible: {sorted(case.feasible)}"
        )
        assert set(placement.get("scores") or {}) == set(case.feasible), (
            f"{case.source}: the nodes that passed the filters"
        )
    else:
        assert placement is None, f"{case.source}: expected unschedulable, placed: {placement}"
        assert why is not None, f"{case.source}: the pod is not listed under unschedulable"
        assert fit_error_head(why) == case.message(), case.source


def check_case_against_checker(case: FilterCase) -> None:
    """The expected verdict agrees with the independent checker (tests the tables themselves)."""
    cluster = Cluster.of(case.objects)
    assert feasible_nodes(cluster, case.incoming) == set(case.feasible), case.source
    if not case.feasible:
        assert dict(reason_counts(cluster, case.incoming)) == dict(case.reasons), case.source


def _scored(
    tmp_path: Path, capsys: Capsys, case: ScoreCase, config: str
) -> tuple[str, dict[str, float]]:
    result = run(tmp_path, capsys, case.objects, config)
    placement = placement_of(result, case.key)
    assert placement is not None, f"{case.source}: not placed: {pending(result).get(case.key)}"
    totals = {n: parts["total"] for n, parts in (placement.get("scores") or {}).items()}
    return str(placement["node"]), totals


def renamed(objects: Sequence[Obj], old: str, new: str) -> list[Obj]:
    """The objects with node ``old`` called ``new`` (its labels unchanged)."""
    out = copy.deepcopy(list(objects))
    for obj in out:
        if obj["kind"] == "Node" and obj["metadata"]["name"] == old:
            obj["metadata"]["name"] = new
        if obj["kind"] == "Pod" and obj["spec"].get("nodeName") == old:
            obj["spec"]["nodeName"] = new
    return out


def check_score_winner(tmp_path: Path, capsys: Capsys, case: ScoreCase, config: str) -> None:
    """The pod goes to the node kube-scheduler scores highest. That node is renamed to sort
    last, so that pumice's tie-break (the smallest name) cannot pick it by chance."""
    (winner,) = case.winners()
    last = "zz-" + winner
    result = run(tmp_path, capsys, renamed(case.objects, winner, last), case.config or config)
    placement = placement_of(result, case.key)
    assert placement is not None, f"{case.source}: not placed: {pending(result).get(case.key)}"
    totals = {n: parts["total"] for n, parts in (placement.get("scores") or {}).items()}
    assert placement["node"] == last, (
        f"{case.source}: placed on {placement['node']}, expected {last}; scores {totals}"
    )


def check_score_values(tmp_path: Path, capsys: Capsys, case: ScoreCase, config: str) -> None:
    """Every feasible node's score is kube-scheduler's normalised score times the weight (1)."""
    _, totals = _scored(tmp_path, capsys, case, case.config or config)
    assert totals == {n: float(s) for n, s in case.scores.items()}, case.source
