"""Property: whatever pumice places, it places within every required pod-to-pod constraint,
and it leaves no pod pending that could go somewhere.

Random clusters go through ``pumice simulate``, with the filters-only configuration or the
shipped one (drf and binpack scoring): nodes with hostnames, zones (now and then none), racks,
a ``pool`` label and a NoSchedule taint on some; existing pods in three namespaces (one without
a Namespace object, two with team labels), some terminating, bound by default-scheduler or by
pumice, some with required anti-affinity; pending pods (some of them a gang) with random
required affinity / anti-affinity terms (In or NotIn selectors; the owner's namespace, a list,
a label namespaceSelector or every namespace; matchLabelKeys / mismatchLabelKeys), up to two
DoNotSchedule spread constraints (minDomains, nodeAffinityPolicy, nodeTaintsPolicy,
matchLabelKeys), a ``pool`` node selector and a toleration now and then. The independent checker
of ``support/constraint_checker.py`` (written from the Kubernetes spec, no pumice import)
replays ``placements`` in order and must find no pod that broke a required term or a
DoNotSchedule constraint against the pods placed before it, existing pods' required
anti-affinity included; and in the final cluster it must find no node for any pod left pending
outside a gang (a gang waits whole). A pod that no term can select and that carries none is
always placed, so an example cannot pass by placing nothing. Shrinking is off (each example is a
whole simulate run): a failure names the pod, node and reason, and hypothesis prints the example.

The first tests pin the checker itself down on hand-made placements: it must be able to fail.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pumice.framework.configfile import default_config_text
from support.constraint_cases import (
    FILTER_CONFIG,
    HOST,
    NO_SCHEDULE,
    ZONE,
    Capsys,
    in_,
    namespace,
    node,
    not_in,
    pod,
    sel,
    spread,
    term,
)
from support.constraint_checker import (
    AFFINITY,
    ANTI_AFFINITY,
    EXISTING_ANTI_AFFINITY,
    SPREAD,
    SPREAD_MISSING_LABEL,
    Cluster,
    feasible_nodes,
    pod_key,
    replay,
    selector_matches,
    with_label_keys,
)
from support.manifests import pending, podgroup, simulate

Obj = dict[str, Any]


# -- the checker can fail ------------------------------------------------------------------------


def two_hosts_one_zone() -> list[Obj]:
    return [node("n1", {HOST: "n1", ZONE: "z1"}), node("n2", {HOST: "n2", ZONE: "z1"})]


def test_selectors_follow_the_api_rules() -> None:
    assert not selector_matches(None, {"app": "a"})  # nil selects nothing
    assert selector_matches({}, {})  # {} selects everything
    assert selector_matches(sel(in_("app", "a")), {"app": "a"})
    assert not selector_matches(sel(in_("app", "a")), {})
    assert selector_matches(
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}, {}
    )
    once = with_label_keys(sel(), {"app": "a"}, ["app"])
    assert with_label_keys(once, {"app": "a"}, ["app"]) != once  # merged twice …
    for labels in ({"app": "a"}, {"app": "b"}, {}):  # … selects the same pods
        assert selector_matches(once, labels) == selector_matches(
            with_label_keys(once, {"app": "a"}, ["app"]), labels
        )
    assert with_label_keys(None, {"app": "a"}, ["app"]) is None


def test_checker_flags_two_anti_affine_replicas_on_one_host() -> None:
    anti = [term(sel(in_("app", "web")), HOST)]
    objects = [
        *two_hosts_one_zone(),
        pod("w0", {"app": "web"}, anti=anti),
        pod("w1", {"app": "web"}, anti=anti),
    ]
    ok, _ = replay(
        objects, [{"pod": "default/w0", "node": "n1"}, {"pod": "default/w1", "node": "n2"}]
    )
    assert ok == []
    bad, _ = replay(
        objects, [{"pod": "default/w0", "node": "n1"}, {"pod": "default/w1", "node": "n1"}]
    )
    assert [(v.pod, v.reason) for v in bad] == [("default/w1", ANTI_AFFINITY)]


def test_checker_flags_a_pod_placed_next_to_an_existing_pods_anti_affinity() -> None:
    objects = [
        *two_hosts_one_zone(),
        pod("e", {"app": "db"}, on="n1", anti=[term(sel(in_("app", "web")), ZONE)]),
        pod("w", {"app": "web"}),
    ]
    bad, _ = replay(objects, [{"pod": "default/w", "node": "n2"}])
    assert [v.reason for v in bad] == [EXISTING_ANTI_AFFINITY]  # same zone, other host


def test_checker_knows_the_first_pod_exception() -> None:
    affine = [term(sel(in_("app", "web")), ZONE)]
    objects = [
        node("n1", {HOST: "n1", ZONE: "z1"}),
        node("n2", {HOST: "n2", ZONE: "z2"}),
        pod("w0", {"app": "web"}, affinity=affine),
        pod("w1", {"app": "web"}, affinity=affine),
    ]
    ok, _ = replay(
        objects, [{"pod": "default/w0", "node": "n2"}, {"pod": "default/w1", "node": "n2"}]
    )
    assert ok == []
    bad, _ = replay(
        objects, [{"pod": "default/w0", "node": "n2"}, {"pod": "default/w1", "node": "n1"}]
    )
    assert [v.reason for v in bad] == [AFFINITY]
    stranger = [*objects[:2], pod("x", {"app": "other"}, affinity=affine)]
    bad, _ = replay(stranger, [{"pod": "default/x", "node": "n1"}])
    assert [v.reason for v in bad] == [AFFINITY]  # no self-match: no exception


def test_checker_counts_spread_and_missing_keys() -> None:
    hard = [spread(1, HOST, sel(in_("app", "w")))]
    objects = [
        *two_hosts_one_zone(),
        node("n3", {ZONE: "z1"}),
        *(pod(f"w{i}", {"app": "w"}, spreads=hard) for i in range(3)),
    ]
    ok, _ = replay(
        objects, [{"pod": f"default/w{i}", "node": n} for i, n in enumerate(("n1", "n2", "n1"))]
    )
    assert ok == []
    bad, _ = replay(
        objects,
        [
            {"pod": "default/w0", "node": "n1"},
            {"pod": "default/w1", "node": "n1"},
            {"pod": "default/w2", "node": "n3"},
        ],
    )
    assert [v.reason for v in bad] == [SPREAD, SPREAD_MISSING_LABEL]


def test_checker_scopes_terms_to_namespaces() -> None:
    anti = [term(sel(in_("app", "web")), HOST)]
    everywhere = [term(sel(in_("app", "web")), HOST, ns_selector=sel())]
    objects = [
        *two_hosts_one_zone(),
        pod("e", {"app": "web"}, ns="other", on="n1"),
        pod("w", {"app": "web"}, anti=anti),
        pod("v", {"app": "web"}, anti=everywhere),
    ]
    cluster = Cluster.of(objects)
    assert cluster.ns_labels("other") == {"kubernetes.io/metadata.name": "other"}
    ok, _ = replay(objects, [{"pod": "default/w", "node": "n1"}])
    assert ok == []
    bad, _ = replay(objects, [{"pod": "default/v", "node": "n1"}])
    assert [v.reason for v in bad] == [ANTI_AFFINITY]


# -- the property --------------------------------------------------------------------------------

APPS = ("a", "b")
TIERS = ("t1", "t2")
NAMESPACES = ("default", "other", "third")
"""default has no Namespace object (only its name label); other is team x, third team y."""
KEYS = (HOST, ZONE, "rack")
TOLERATE_INFRA = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
CONFIGS = {"filters": FILTER_CONFIG, "default": default_config_text()}
"""The filters-only configuration, and the shipped one (drf and binpack score the nodes)."""


@st.composite
def selectors(draw: st.DrawFn) -> Obj:
    """``app In [x]``, or now and then ``app NotIn [x]`` among the apps (so that the free pod,
    app=free, is never selected)."""
    app = draw(st.sampled_from(APPS))
    if draw(st.integers(0, 4)) == 0:
        return sel(in_("app", *APPS), not_in("app", app))
    return sel(in_("app", app))


@st.composite
def affinity_terms(draw: st.DrawFn) -> Obj:
    """A term over one of three keys; its namespaces: the owner's, a list, a label selector
    (team x), or every namespace; now and then with match / mismatch label keys."""
    scope: dict[str, Any] = draw(
        st.sampled_from(
            (
                {},
                {},
                {"namespaces": [draw(st.sampled_from(NAMESPACES))]},
                {"ns_selector": sel(team="x")},
                {"ns_selector": sel()},
            )
        )
    )
    keys = draw(st.sampled_from(({}, {}, {"match_keys": ["tier"]}, {"mismatch_keys": ["tier"]})))
    return term(draw(selectors()), draw(st.sampled_from(KEYS)), **scope, **keys)


@st.composite
def spread_constraints(draw: st.DrawFn) -> Obj:
    key = draw(st.sampled_from(KEYS))
    options: dict[str, Any] = {
        "min_domains": draw(st.sampled_from((None, None, 2, 4))),
        "affinity_policy": draw(st.sampled_from((None, "Honor", "Ignore"))),
        "taints_policy": draw(st.sampled_from((None, "Honor", "Ignore"))),
    }
    skew = draw(st.integers(1, 2))
    if draw(st.booleans()):
        return spread(skew, key, sel(in_("app", draw(st.sampled_from(APPS)))), **options)
    return spread(skew, key, sel(), match_keys=["app"], **options)


def labels_of(draw: st.DrawFn) -> dict[str, str]:
    labels = {"app": draw(st.sampled_from(APPS))}
    if draw(st.booleans()):
        labels["tier"] = draw(st.sampled_from(TIERS))
    return labels


@st.composite
def scenarios(draw: st.DrawFn) -> list[Obj]:
    zones = draw(st.integers(1, 3))
    nodes = []
    for i in range(draw(st.integers(2, 7))):
        labels = {HOST: f"n{i}"}
        if draw(st.integers(0, 7)) > 0:  # now and then a node without a zone
            labels[ZONE] = f"z{draw(st.integers(0, zones - 1))}"
        if draw(st.booleans()):
            labels["rack"] = f"r{draw(st.integers(0, 1))}"
        if draw(st.integers(0, 2)) == 0:
            labels["pool"] = "gpu"
        tainted = draw(st.integers(0, 3)) == 0
        nodes.append(node(f"n{i}", labels, taints=[NO_SCHEDULE] if tainted else ()))
    objects: list[Obj] = [
        namespace("other", {"team": "x"}),
        namespace("third", {"team": "y"}),
        *nodes,
    ]
    for i in range(draw(st.integers(0, 6))):
        anti = [draw(affinity_terms())] if draw(st.integers(0, 2)) == 0 else []
        objects.append(
            pod(
                f"e{i}",
                labels_of(draw),
                ns=draw(st.sampled_from(NAMESPACES)),
                on=f"n{draw(st.integers(0, len(nodes) - 1))}",
                anti=anti,
                terminating=draw(st.integers(0, 5)) == 0,
                scheduler=draw(st.sampled_from(("default-scheduler", "pumice"))),
            )
        )
    count = draw(st.integers(2, 12))
    gang = draw(st.integers(0, count)) if draw(st.booleans()) else 0
    if gang >= 2:
        objects.append(podgroup("gang", gang))
    for i in range(count):
        objects.append(
            pod(
                f"q{i}",
                labels_of(draw),
                ns=draw(st.sampled_from(NAMESPACES)) if gang < 2 or i >= gang else "default",
                affinity=[draw(affinity_terms())] if draw(st.integers(0, 2)) == 0 else [],
                anti=[draw(affinity_terms())] if draw(st.integers(0, 1)) == 0 else [],
                spreads=draw(st.lists(spread_constraints(), max_size=2))
                if draw(st.integers(0, 2)) > 0
                else [],
                node_selector={"pool": "gpu"} if draw(st.integers(0, 2)) == 0 else None,
                tolerations=[TOLERATE_INFRA] if draw(st.integers(0, 3)) == 0 else (),
                group="gang" if i < gang and gang >= 2 else None,
            )
        )
    objects.append(pod("free", {"app": "free"}, tolerations=[TOLERATE_INFRA]))
    return objects


def in_a_gang(p: Obj) -> bool:
    return "scheduling.k8s.io/group-name" in (p["metadata"].get("annotations") or {})


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: minutes on 2 cores
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(objects=scenarios(), config=st.sampled_from(sorted(CONFIGS)))
def test_placements_respect_every_required_constraint(
    objects: list[Obj], config: str, capsys: Capsys
) -> None:
    """Every placement keeps every required constraint against the pods placed before it, and
    no pod outside a gang is left pending while the final cluster has a node for it (pumice
    refuses only what it must)."""
    with tempfile.TemporaryDirectory() as tmp:
        result = simulate(Path(tmp), objects, capsys, config=CONFIGS[config])
    placements = result["placements"]
    assert len({p["pod"] for p in placements}) == len(placements), "a pod placed twice"
    violations, cluster = replay(objects, placements)
    assert violations == [], "\n".join(map(str, violations))
    assert "default/free" in {p["pod"] for p in placements}, pending(result).get("default/free")
    pods = {pod_key(o): o for o in objects if o["kind"] == "Pod"}
    for key, message in pending(result).items():
        if in_a_gang(pods[key]):
            continue  # a gang waits whole: one member's room is not enough
        room = feasible_nodes(cluster, pods[key])
        assert not room, f"{key} pending ({message}) but {sorted(room)} would take it"


@pytest.mark.parametrize("replicas", [3, 4])
def test_anti_affine_replicas_spread_over_hosts_or_wait(
    replicas: int, tmp_path: Path, capsys: Capsys
) -> None:
    """The issue's first report, as a fixed example of the property: three hosts, required
    hostname anti-affinity; three replicas land on three hosts, a fourth waits."""
    anti = [term(sel(in_("app", "web")), HOST)]
    objects = [
        *(node(f"n{i}", {HOST: f"n{i}", ZONE: "z1"}) for i in range(3)),
        *(pod(f"web-{i}", {"app": "web"}, anti=anti) for i in range(replicas)),
    ]
    result = simulate(tmp_path, objects, capsys, config=FILTER_CONFIG)
    violations, _ = replay(objects, result["placements"])
    assert violations == [], "\n".join(map(str, violations))
    assert sorted(p["node"] for p in result["placements"]) == ["n0", "n1", "n2"]
    if replicas == 4:
        assert pending(result) == {
            "default/web-3": "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity "
            "rules."
        }


def test_a_gang_sees_its_own_tentative_placements(tmp_path: Path, capsys: Capsys) -> None:
    """Issue 19, build item 4: a gang of 4 with hostname spread maxSkew 1 over 2 nodes lands
    2-2, never 4-0 (its pods count each other's placements within the session)."""
    hard = [spread(1, HOST, sel(in_("app", "g")))]
    objects = [
        *(node(f"n{i}", {HOST: f"n{i}", ZONE: "z1"}) for i in range(2)),
        podgroup("g", 4),
        *(pod(f"g-{i}", {"app": "g"}, spreads=hard, group="g") for i in range(4)),
    ]
    result = simulate(tmp_path, objects, capsys, config=FILTER_CONFIG)
    violations, _ = replay(objects, result["placements"])
    assert violations == [], "\n".join(map(str, violations))
    assert sorted(p["node"] for p in result["placements"]) == ["n0", "n0", "n1", "n1"]
