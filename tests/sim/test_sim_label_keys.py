"""Pod affinity terms' matchLabelKeys / mismatchLabelKeys, through the real client: the
simulated API server merges them into the terms' selectors when a pod is created, as the real
one does (kube-constraints.md 1.1), once, and leaves them alone afterwards."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k8s_client

from sim.simkit import body_of, pod

Obj = dict[str, Any]
LABELS = {"app": "web", "rev": "7", "tier": "front"}


def exists(key: str) -> Obj:
    return {"key": key, "operator": "Exists"}


def keyed(match: list[str], mismatch: list[str], selector: Obj | None = None) -> Obj:
    term: Obj = {"topologyKey": "kubernetes.io/hostname"}
    term["labelSelector"] = {"matchExpressions": [exists("app")]} if selector is None else selector
    if match:
        term["matchLabelKeys"] = match
    if mismatch:
        term["mismatchLabelKeys"] = mismatch
    return term


def affinity() -> Obj:
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [keyed(["rev"], [])],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": keyed(["rev", "absent"], ["tier"])}
            ],
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                keyed([], ["tier"], selector={"matchLabels": {"app": "web"}}),
                {"topologyKey": "zone", "matchLabelKeys": ["rev"]},  # no selector: selects nothing
            ],
        },
    }


async def read(core: Any, name: str) -> Obj:
    return await body_of(await core.read_namespaced_pod(name, "default", _preload_content=False))


def rev_in() -> Obj:
    return {"key": "rev", "operator": "In", "values": ["7"]}


def tier_not_in() -> Obj:
    return {"key": "tier", "operator": "NotIn", "values": ["front"]}


async def test_a_created_pod_has_its_label_keys_merged_into_every_selector(
    sim: Any, api: Any
) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("web", labels=LABELS, affinity=affinity()))
    stored = (await read(core, "web"))["spec"]["affinity"]

    required = stored["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert required["labelSelector"]["matchExpressions"] == [exists("app"), rev_in()]
    assert required["matchLabelKeys"] == ["rev"]  # the key lists stay on the term
    preferred = stored["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    # "absent" is not among the pod's labels: skipped
    assert preferred["podAffinityTerm"]["labelSelector"]["matchExpressions"] == [
        exists("app"),
        rev_in(),
        tier_not_in(),
    ]
    anti, no_selector = stored["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["labelSelector"] == {
        "matchLabels": {"app": "web"},
        "matchExpressions": [tier_not_in()],
    }
    assert "labelSelector" not in no_selector


async def test_a_pod_already_merged_is_not_merged_twice(sim: Any, api: Any) -> None:
    """A pod copied from a real cluster carries the merged selector already (seeded here, and
    created again through the client): nothing is appended a second time."""
    core = k8s_client.CoreV1Api(api)
    merged = {"matchExpressions": [exists("app"), rev_in()]}
    term = keyed(["rev"], [], selector=merged)
    spec_affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    sim.create(pod("seeded", labels=LABELS, affinity=spec_affinity))
    await core.create_namespaced_pod("default", pod("again", labels=LABELS, affinity=spec_affinity))
    for name in ("seeded", "again"):
        stored = (await read(core, name))["spec"]["affinity"]["podAntiAffinity"]
        selector = stored["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]
        assert selector == merged, name


async def test_labels_changed_later_do_not_change_the_merged_selector(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("web", labels=LABELS, affinity=affinity()))
    await core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"rev": "8"}}})
    stored = await read(core, "web")
    assert stored["metadata"]["labels"]["rev"] == "8"
    required = stored["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    assert required["labelSelector"]["matchExpressions"] == [exists("app"), rev_in()]


async def test_spread_constraints_keep_their_match_label_keys_as_written(
    sim: Any, api: Any
) -> None:
    """The server merges a spread constraint's matchLabelKeys only from 1.34; the simulated one
    answers as 1.32, so the constraint is stored as written (the scheduler merges it)."""
    core = k8s_client.CoreV1Api(api)
    constraint = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["rev"],
    }
    body = pod("web", labels=LABELS, topologySpreadConstraints=[constraint])
    await core.create_namespaced_pod("default", body)
    stored = (await read(core, "web"))["spec"]["topologySpreadConstraints"]
    assert stored == [constraint]


async def test_integration_pod_affinity_match_label_key_enablement(sim: Any, api: Any) -> None:
    """kubernetes/kubernetes test/integration/scheduler/filters/filters_test.go:
    TestPodAffinityMatchLabelKeyEnablement, with MatchLabelKeysInPodAffinity on (its first and
    third creates): the stored selector has ``bar In [a]`` appended, and keeps it when read
    again after later creates. Its create with the gate off is not re-expressed: the gate is on
    by default in the version the sim answers as, and the sim has no switch for it."""
    core = k8s_client.CoreV1Api(api)
    term = keyed(["bar"], [], selector={"matchExpressions": [exists("foo")]})
    term["topologyKey"] = "node"
    spec_affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    labels = {"foo": "", "bar": "a"}
    expected = {
        "matchExpressions": [exists("foo"), {"key": "bar", "operator": "In", "values": ["a"]}]
    }

    def selector_of(stored: Obj) -> Obj:
        terms = stored["spec"]["affinity"]["podAffinity"]
        return dict(terms["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"])

    await core.create_namespaced_pod("default", pod("p1", labels=labels, affinity=spec_affinity))
    assert selector_of(await read(core, "p1")) == expected
    await core.create_namespaced_pod("default", pod("p3", labels=labels, affinity=spec_affinity))
    assert selector_of(await read(core, "p3")) == expected
    assert selector_of(await read(core, "p1")) == expected
