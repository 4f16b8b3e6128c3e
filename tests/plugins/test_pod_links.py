"""Pod-to-pod constraints through allocate: inter-pod (anti-)affinity and topology spread,
with the pods a session places counting for the pods after them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pumice.framework import Session
from pumice.plugins._interpod import (
    AFFINITY_MISMATCH,
    ANTI_AFFINITY_MISMATCH,
    EXISTING_ANTI_AFFINITY,
)
from pumice.plugins._spread import SPREAD_MISMATCH, SPREAD_MISSING_LABEL
from pumice.plugins.binpack import BinpackPlugin
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


def test_a_gang_spread_over_many_zones_puts_one_pod_in_each() -> None:
    """64 nodes in 16 zones: after each placement only the zone's 4 rows are stale, few
    enough for the shape cache's one-row path to refresh them beside the placed row."""
    pods = [link_pod(f"g-{i}", APP, spreads=[spread(APP, ZONE)]) for i in range(16)]
    # zone z0's four nodes (n0, n16, n32, n48) are the fullest: binpack's first choices
    fillers = [running(f"f{n}", f"n{n}", link_pod(f"f{n}", cpu="4")) for n in (0, 16, 32, 48)]
    snap = links_snapshot(zoned_nodes(64, zones=16), [*fillers, job_of("g", pods)])
    tiers: PluginSpecList = [["gang"], ["predicates", "proportion", "binpack"]]
    session = run_flow(snap, tiers, plugins={"binpack": BinpackPlugin})
    zone_of = {n.name: n.labels[ZONE] for n in snap.table.nodes}
    assert sorted(Counter(zone_of[n] for n in binds(session).values()).values()) == [1] * 16


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


def test_a_discarded_statement_gives_the_counts_back() -> None:
    pods = [link_pod(f"r-{i}", APP, anti=[term(APP)]) for i in range(2)]
    job = job_of("r", pods)
    session = open_flow(links_snapshot(zoned_nodes(2), [job]))
    first, second = sorted(job.tasks.values(), key=lambda t: t.name)
    assert list(session.predicate(second).mask) == [True, True]
    stmt = session.statement()
    stmt.allocate(first, "n0")
    feasible = session.predicate(second)
    assert list(feasible.mask) == [False, True]
    assert feasible.reason_counts() == {ANTI_AFFINITY_MISMATCH: 1}
    stmt.discard()
    assert list(session.predicate(second).mask) == [True, True]
    assert session.candidates(second).future_count == 2


def test_placements_reach_other_shapes_through_existing_anti_affinity() -> None:
    guard = job_of("guard", [link_pod("guard", {"app": "guard"}, anti=[term(APP, ZONE)])])
    web = job_of("web", [link_pod("web", APP, cpu="2")])
    session = open_flow(links_snapshot(zoned_nodes(4, zones=2), [guard, web]))
    (web_task,) = web.tasks.values()
    (guard_task,) = guard.tasks.values()
    assert session.candidates(web_task).future_count == 4
    stmt = session.statement()
    stmt.allocate(guard_task, "n1")  # zone z1: n1 and n3
    assert list(session.candidates(web_task).future) == [True, False, True, False]
    stmt.discard()
    assert session.candidates(web_task).future_count == 4


def test_namespaces_and_namespace_selector_choose_whose_pods_count() -> None:
    other = running("other", "n0", link_pod("other", APP, namespace="team-b"))
    same = job_of("same", [link_pod("same", anti=[term(APP)])])
    listed = job_of("listed", [link_pod("listed", anti=[term(APP, namespaces=["team-b"])])])
    by_label = job_of(
        "by-label",
        [link_pod("by-label", anti=[term(APP, namespaceSelector={"matchLabels": {"t": "b"}})])],
    )
    everywhere = job_of("all", [link_pod("all", anti=[term(APP, namespaceSelector={})])])
    snap = links_snapshot(zoned_nodes(2), [other, same, listed, by_label, everywhere])
    snap.namespaces = {"team-b": {"t": "b"}}
    session = open_flow(snap)

    def mask(job: Any) -> list[bool]:
        (task,) = job.tasks.values()
        return list(session.predicate(task).mask)

    assert mask(same) == [True, True]  # only its own namespace, default
    assert mask(listed) == [False, True]
    assert mask(by_label) == [False, True]
    assert mask(everywhere) == [False, True]


def test_match_label_keys_narrow_the_selector_to_the_pods_own_value() -> None:
    old = running("old", "n0", link_pod("old", {"app": "web", "rev": "1"}))
    pod = link_pod("new", {"app": "web", "rev": "2"}, anti=[term(APP, matchLabelKeys=["rev"])])
    mismatch = link_pod(
        "mis", {"app": "web", "rev": "2"}, anti=[term(APP, mismatchLabelKeys=["rev"])]
    )
    jobs = [old, job_of("new", [pod]), job_of("mis", [mismatch])]
    session = open_flow(links_snapshot(zoned_nodes(2), jobs))
    new_task = next(iter(jobs[1].tasks.values()))
    mis_task = next(iter(jobs[2].tasks.values()))
    assert list(session.predicate(new_task).mask) == [True, True]  # rev 1 is not selected
    assert list(session.predicate(mis_task).mask) == [False, True]


def test_spread_node_affinity_policy_and_min_domains() -> None:
    nodes = zoned_nodes(3, zones=3)
    for n in nodes[:2]:
        n.labels = {**n.labels, "pool": "main"}
    here = [running(f"e{i}", f"n{node}", link_pod(f"e{i}", APP)) for i, node in enumerate("001")]

    def pending(name: str, **constraint: Any) -> Any:
        return job_of(
            name,
            [
                link_pod(
                    name,
                    APP,
                    spreads=[spread(APP, ZONE, **constraint)],
                    node_selector={"pool": "main"},
                )
            ],
        )

    honor, ignore, few = (
        pending("h"),
        pending("i", nodeAffinityPolicy="Ignore"),
        pending("m", minDomains=3),
    )
    session = open_flow(links_snapshot(nodes, [*here, honor, ignore, few]))

    def check(job: Any) -> list[str]:
        (task,) = job.tasks.values()
        return [str(r) for r in session.predicate(task).reasons]

    selector = "node(s) didn't match Pod's node affinity/selector"
    # Honor: z0 (2) and z1 (1) count, minimum 1: n1 takes it (1 + 1 - 1), n0 would skew 2
    assert check(honor) == [SPREAD_MISMATCH, "", selector]
    # Ignore: z2 (0) counts too, minimum 0
    assert check(ignore) == [SPREAD_MISMATCH, SPREAD_MISMATCH, selector]
    # minDomains 3 > 2 eligible domains: the minimum is taken as 0
    assert check(few) == [SPREAD_MISMATCH, SPREAD_MISMATCH, selector]


def test_taints_policy_honor_leaves_tainted_nodes_out_of_the_domains() -> None:
    nodes = zoned_nodes(3, zones=3)
    nodes[2].taints = ({"key": "dedicated", "value": "x", "effect": "NoSchedule"},)
    here = [running(f"e{i}", f"n{node}", link_pod(f"e{i}", APP)) for i, node in enumerate("01")]
    pod = link_pod("t", APP, spreads=[spread(APP, ZONE, nodeTaintsPolicy="Honor")])
    job = job_of("t", [pod])
    session = open_flow(links_snapshot(nodes, [*here, job]))
    (task,) = job.tasks.values()
    # z2 is left out: the minimum is 1, so n0 and n1 pass (1 + 1 - 1)
    assert list(session.predicate(task).mask) == [True, True, False]


def test_affinity_and_missing_label_are_unresolvable_the_others_are_not() -> None:
    from pumice.plugins.predicates import unresolvable

    assert unresolvable(AFFINITY_MISMATCH) and unresolvable(SPREAD_MISSING_LABEL)
    assert unresolvable("node(s) had untolerated taint {a: b}")
    for reason in (ANTI_AFFINITY_MISMATCH, EXISTING_ANTI_AFFINITY, SPREAD_MISMATCH):
        assert not unresolvable(reason)
