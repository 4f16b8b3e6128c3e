"""Pod-to-pod constraints through allocate: inter-pod (anti-)affinity and topology spread,
with the pods a session places counting for the pods after them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pumice import Session
from pumice.plugins._interpod import (
    AFFINITY_MISMATCH,
    ANTI_AFFINITY_MISMATCH,
    EXISTING_ANTI_AFFINITY,
)
from pumice.plugins._spread import SPREAD_MISMATCH, SPREAD_MISSING_LABEL
from support.builders import PluginSpecList
from support.flow import binds, open_flow, run_flow
from support.links import (
    ZONE,
    job_of,
    link_pod,
    links_snapshot,
    running,
    spread,
    term,
    zoned_nodes,
)

APP = {"app": "web"}


def predicates_with(arguments: dict[str, Any]) -> PluginSpecList:
    return [["gang"], [{"name": "predicates", "arguments": arguments}, "proportion"]]


def placed_per_node(session: Session) -> Counter[str]:
    return Counter(binds(session).values())


def test_a_gang_of_four_spread_by_hostname_over_two_nodes_lands_two_and_two() -> None:
    pods = [link_pod(f"g-{i}", APP, spreads=[spread(APP)]) for i in range(4)]
    snap = links_snapshot(zoned_nodes(2), [job_of("g", pods)])
    session = run_flow(snap)
    assert sorted(placed_per_node(session).values()) == [2, 2]


def test_without_the_spread_filter_the_gang_piles_onto_one_node() -> None:
    pods = [link_pod(f"g-{i}", APP, spreads=[spread(APP)]) for i in range(4)]
    snap = links_snapshot(zoned_nodes(2), [job_of("g", pods)])
    tiers = [
        ["gang"],
        [
            {"name": "predicates", "arguments": {"predicate.PodTopologySpreadEnable": False}},
            "proportion",
        ],
    ]
    session = run_flow(snap, tiers)
    assert sorted(placed_per_node(session).values()) == [4]


def test_three_anti_affine_replicas_take_three_nodes() -> None:
    pods = [link_pod(f"r-{i}", APP, anti=[term(APP)]) for i in range(3)]
    snap = links_snapshot(zoned_nodes(3), [job_of("r", pods)])
    session = run_flow(snap)
    assert sorted(placed_per_node(session).values()) == [1, 1, 1]


def test_a_fourth_anti_affine_replica_stays_pending_with_the_reason() -> None:
    pods = [link_pod(f"r-{i}", APP, anti=[term(APP)]) for i in range(4)]
    snap = links_snapshot(zoned_nodes(3), [job_of("r", pods, min_available=1)])
    session = run_flow(snap)
    assert sorted(placed_per_node(session).values()) == [1, 1, 1]
    (reason,) = session.task_reasons.values()
    assert reason == f"0/3 nodes are available: 3 {ANTI_AFFINITY_MISMATCH}."


def test_affinity_to_a_pod_on_n3_lands_on_n3() -> None:
    target = running("db", "n3", link_pod("db", {"app": "db"}))
    pod = link_pod("client", affinity=[term({"app": "db"})])
    snap = links_snapshot(zoned_nodes(5), [target, job_of("client", [pod])])
    session = run_flow(snap)
    assert binds(session) == {"client": "n3"}


def test_affinity_that_matches_no_pod_stays_pending_with_the_reason() -> None:
    pod = link_pod("client", affinity=[term({"app": "db"})])
    snap = links_snapshot(zoned_nodes(3), [job_of("client", [pod])])
    session = run_flow(snap)
    assert binds(session) == {}
    assert list(session.task_reasons.values()) == [
        f"0/3 nodes are available: 3 {AFFINITY_MISMATCH}."
    ]


def test_the_first_pod_of_a_group_that_selects_itself_may_go_anywhere() -> None:
    pods = [link_pod(f"a-{i}", APP, affinity=[term(APP, ZONE)]) for i in range(3)]
    snap = links_snapshot(zoned_nodes(4, zones=2), [job_of("a", pods)])
    session = run_flow(snap)
    zones = {snap.nodes[n].labels[ZONE] for n in binds(session).values()}
    assert len(binds(session)) == 3 and len(zones) == 1


def test_an_existing_pods_anti_affinity_keeps_matching_pods_away() -> None:
    guard = running("guard", "n0", link_pod("guard", {"app": "guard"}, anti=[term(APP)]))
    pods = [link_pod(f"w-{i}", APP) for i in range(2)]
    snap = links_snapshot(zoned_nodes(2), [guard, job_of("w", pods, min_available=1)])
    session = run_flow(snap)
    assert binds(session) == {"w-0": "n1", "w-1": "n1"}


def test_existing_anti_affinity_reason() -> None:
    guard = running("guard", "n0", link_pod("guard", {"app": "guard"}, anti=[term(APP, ZONE)]))
    pod = link_pod("w", APP)
    snap = links_snapshot(zoned_nodes(2), [guard, job_of("w", [pod])])
    session = run_flow(snap)
    assert binds(session) == {}
    assert list(session.task_reasons.values()) == [
        f"0/2 nodes are available: 2 {EXISTING_ANTI_AFFINITY}."
    ]


def test_pod_affinity_flag_off_ignores_the_terms() -> None:
    pod = link_pod("client", affinity=[term({"app": "db"})])
    snap = links_snapshot(zoned_nodes(3), [job_of("client", [pod])])
    tiers = [
        ["gang"],
        [{"name": "predicates", "arguments": {"predicate.PodAffinityEnable": False}}, "proportion"],
    ]
    session = run_flow(snap, tiers)
    assert len(binds(session)) == 1


def test_a_node_without_the_spread_key_fails_with_missing_label() -> None:
    nodes = zoned_nodes(3)
    nodes[1].labels = {**nodes[1].labels, "rack": "r1"}
    nodes[2].labels = {**nodes[2].labels, "rack": "r2"}
    there = running("there", "n1", link_pod("there", APP))
    pending = job_of("s", [link_pod("s", APP, spreads=[spread(APP, "rack")])])
    session = open_flow(links_snapshot(nodes, [there, pending]))
    (task,) = pending.tasks.values()
    feasible = session.predicate(task)
    assert list(feasible.mask) == [False, False, True]
    assert feasible.reason_counts() == {SPREAD_MISSING_LABEL: 1, SPREAD_MISMATCH: 1}


def test_zone_spread_fills_zones_evenly_and_reports_skew() -> None:
    pods = [link_pod(f"s-{i}", APP, spreads=[spread(APP, ZONE)]) for i in range(7)]
    snap = links_snapshot(zoned_nodes(6, zones=3), [job_of("s", pods, min_available=1)])
    session = run_flow(snap)
    zones = Counter(snap.nodes[n].labels[ZONE] for n in binds(session).values())
    assert sorted(zones.values()) == [2, 2, 3]
