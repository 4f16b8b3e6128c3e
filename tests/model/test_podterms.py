"""Canonical pod-to-pod constraints: namespaces, selectors, matchLabelKeys, spread defaults."""

from __future__ import annotations

from typing import Any

from pumice.model.podterms import INVALID, NO_LINKS, pod_links, selector_matches


def pod(affinity: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if affinity:
        body["affinity"] = affinity
    return {
        "metadata": {"name": "p", "namespace": "team", "labels": {"app": "web", "rev": "7"}},
        "spec": body,
    }


def anti(**term: Any) -> dict[str, Any]:
    term.setdefault("topologyKey", "kubernetes.io/hostname")
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_a_pod_without_constraints_has_none() -> None:
    assert pod_links(pod()) is NO_LINKS and pod_links(None) is NO_LINKS


def test_namespaces_default_to_the_pods_own_and_an_empty_selector_means_all() -> None:
    (own,) = pod_links(pod(anti(labelSelector={}))).anti_affinity
    assert own.namespaces == frozenset({"team"}) and own.selector == ()
    (everywhere,) = pod_links(pod(anti(labelSelector={}, namespaceSelector={}))).anti_affinity
    assert everywhere.namespaces is None and everywhere.namespace_selector is None
    (listed,) = pod_links(pod(anti(namespaces=["a"], namespaceSelector=None))).anti_affinity
    assert listed.namespaces == frozenset({"a"}) and listed.selector is None


def test_match_label_keys_merge_once_whether_or_not_the_api_server_did() -> None:
    raw = {"matchLabels": {"app": "web"}}
    merged = {"matchExpressions": [{"key": "rev", "operator": "In", "values": ["7"]}], **raw}
    one = pod_links(pod(anti(labelSelector=raw, matchLabelKeys=["rev", "missing"])))
    two = pod_links(pod(anti(labelSelector=merged, matchLabelKeys=["rev"])))
    assert one == two
    assert one.anti_affinity[0].selector == (("app", "In", ("web",)), ("rev", "In", ("7",)))
    mis = pod_links(pod(anti(labelSelector=raw, mismatchLabelKeys=["rev"])))
    assert ("rev", "NotIn", ("7",)) in (mis.anti_affinity[0].selector or ())


def test_a_selector_that_does_not_parse_selects_nothing() -> None:
    bad = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}
    (term,) = pod_links(pod(anti(labelSelector=bad))).anti_affinity
    assert term.selector == INVALID and not selector_matches(term.selector, {"app": "x"})
    assert not selector_matches(None, {}) and selector_matches((), {})


def test_spread_defaults_and_match_label_keys() -> None:
    spread = {
        "maxSkew": 2,
        "topologyKey": "zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["rev"],
    }
    hard = {"maxSkew": 1, "topologyKey": "zone", "nodeTaintsPolicy": "Honor", "minDomains": 3}
    links = pod_links(pod(topologySpreadConstraints=[spread, hard]))
    soft_c, hard_c = links.spread
    assert links.soft_spread == (soft_c,) and links.hard_spread == (hard_c,)
    assert soft_c.selector == (("app", "In", ("web",)), ("rev", "In", ("7",)))
    assert soft_c.honor_affinity and not soft_c.honor_taints and soft_c.min_domains == 1
    assert hard_c.hard and hard_c.selector is None and hard_c.honor_taints
    assert hard_c.min_domains == 3


def test_pods_sharing_their_parts_share_their_links_and_others_do_not() -> None:
    """Slimmed pods of one template hold the very same affinity and labels objects: read once.
    A pod holding that affinity object with another namespace or other labels is read anew."""
    shared = anti(labelSelector={"matchLabels": {"app": "web"}}, matchLabelKeys=["rev"])
    labels = {"app": "web", "rev": "7"}
    first, second = pod(shared), pod(shared)
    first["metadata"]["labels"] = second["metadata"]["labels"] = labels
    assert pod_links(first) is pod_links(second)
    elsewhere = pod(shared)
    elsewhere["metadata"]["namespace"] = "other"
    (term,) = pod_links(elsewhere).anti_affinity
    assert term.namespaces == frozenset({"other"})
    newer = pod(shared)
    newer["metadata"]["labels"] = {"app": "web", "rev": "8"}
    (term,) = pod_links(newer).anti_affinity
    assert ("rev", "In", ("8",)) in (term.selector or ())
    # and equal parts that are not the same objects give equal links all the same
    copy = pod(anti(labelSelector={"matchLabels": {"app": "web"}}, matchLabelKeys=["rev"]))
    assert pod_links(copy) == pod_links(first)
