"""nodeorder's pod-to-pod scores: InterPodAffinity (preferred terms, existing pods' terms) and
PodTopologySpread (ScheduleAnyway), normalised as kube-scheduler does."""

from __future__ import annotations

from typing import Any

import numpy as np

from pumice import JobInfo
from pumice.framework import Session
from pumice.plugins.nodeorder import NodeOrderPlugin
from support.flow import binds, open_flow, run_flow
from support.links import (
    HOST,
    ZONE,
    job_of,
    link_pod,
    links_snapshot,
    running,
    spread,
    term,
    zoned_nodes,
)

DB = {"app": "db"}
ONLY_LINKS = {"tainttoleration.weight": 0, "nodeaffinity.weight": 0}


def session_with(jobs: list[JobInfo], nodes: int = 3, **arguments: Any) -> Session:
    tiers = [["gang"], ["predicates", "proportion", {"name": "nodeorder", "arguments": arguments}]]
    return open_flow(
        links_snapshot(zoned_nodes(nodes), jobs), tiers, plugins={"nodeorder": NodeOrderPlugin}
    )


def link_scores(session: Session, job: JobInfo) -> list[float]:
    plugin = next(p for _, _, p in session.plugins if isinstance(p, NodeOrderPlugin))
    (task,) = job.tasks.values()
    mask = np.ones(len(session.table), dtype=np.bool_)
    answer = plugin.normalized_score(task, session.table, mask)
    assert answer is not None
    return [float(x) for x in answer]


def dbs(*nodes: str) -> list[JobInfo]:
    return [running(f"db{i}", n, link_pod(f"db{i}", DB)) for i, n in enumerate(nodes)]


def test_preferred_affinity_is_normalised_min_max_times_the_weight() -> None:
    pod = job_of("p", [link_pod("p", preferred=[(5, term(DB))])])
    session = session_with([*dbs("n0", "n0", "n1"), pod], **ONLY_LINKS)
    assert link_scores(session, pod) == [200.0, 100.0, 0.0]  # raw 10, 5, 0


def test_preferred_anti_affinity_reverses_it() -> None:
    pod = job_of("p", [link_pod("p", preferred_anti=[(5, term(DB))])])
    session = session_with([*dbs("n0", "n0", "n1"), pod], **ONLY_LINKS)
    assert link_scores(session, pod) == [0.0, 100.0, 200.0]


def test_existing_pods_required_affinity_counts_with_the_hard_weight() -> None:
    fans = [
        running(f"f{i}", n, link_pod(f"f{i}", {"app": "fan"}, affinity=[term(DB)]))
        for i, n in enumerate(("n2", "n2", "n1"))
    ]
    pod = job_of("p", [link_pod("p", DB)])
    session = session_with([*fans, pod], **ONLY_LINKS, **{"podaffinity.hardPodAffinityWeight": 3})
    assert link_scores(session, pod) == [0.0, 100.0, 200.0]  # raw 0, 3, 6
    off = session_with([*fans, pod], **ONLY_LINKS, **{"podaffinity.hardPodAffinityWeight": 0})
    plugin = next(p for _, _, p in off.plugins if isinstance(p, NodeOrderPlugin))
    (task,) = pod.tasks.values()
    assert plugin.normalized_score(task, off.table, np.ones(3, dtype=np.bool_)) is None


def test_all_equal_affinity_scores_are_zero_everywhere() -> None:
    pod = job_of("p", [link_pod("p", preferred=[(5, term(DB, ZONE))])])
    session = session_with([*dbs("n0"), pod], **ONLY_LINKS)  # one zone: every node equal
    assert link_scores(session, pod) == [0.0, 0.0, 0.0]


def test_schedule_anyway_spread_scores_fewer_pods_higher() -> None:
    pod = job_of("p", [link_pod("p", DB, spreads=[spread(DB, HOST, when="ScheduleAnyway")])])
    session = session_with([*dbs("n0", "n0", "n1"), pod], **ONLY_LINKS)
    # raw round(c * ln 5): 3, 2, 0 -> 100 * (3 + 0 - s) // 3 = 0, 33, 100; times 2
    assert link_scores(session, pod) == [0.0, 66.0, 200.0]


def test_preferred_affinity_draws_a_pod_to_its_app() -> None:
    pods = [link_pod(f"w-{i}", {"app": "w"}, preferred=[(100, term(DB))]) for i in range(2)]
    job = job_of("w", pods)
    tiers = [["gang"], ["predicates", "proportion", "nodeorder"]]
    snap = links_snapshot(zoned_nodes(4), [*dbs("n2"), job])
    session = run_flow(snap, tiers, plugins={"nodeorder": NodeOrderPlugin})
    assert binds(session) == {"w-0": "n2", "w-1": "n2"}


def test_preferred_scores_on_many_nodes_touch_only_the_occupied_ones() -> None:
    """On 20 nodes the counted pods sit in few hostname domains, so the sparse path answers
    (raw 0 on the untouched nodes): the same min-max as on 3 nodes, and with a negative
    raw score the untouched nodes score above the lowest."""
    pod = job_of("p", [link_pod("p", preferred=[(5, term(DB))])])
    session = session_with([*dbs("n0", "n0", "n1"), pod], nodes=20, **ONLY_LINKS)
    assert link_scores(session, pod) == [200.0, 100.0] + [0.0] * 18
    web = {"app": "web"}
    webs = [running(f"w{i}", n, link_pod(f"w{i}", web)) for i, n in enumerate(("n1", "n2"))]
    mixed = job_of("m", [link_pod("m", preferred=[(5, term(DB))], preferred_anti=[(3, term(web))])])
    session = session_with([*dbs("n0", "n0", "n1"), *webs, mixed], nodes=20, **ONLY_LINKS)
    # raw: n0 10, n1 5 - 3 = 2, n2 -3, the rest 0; trunc(100 * (raw + 3) / 13), times 2
    assert link_scores(session, mixed) == [200.0, 76.0, 0.0] + [46.0] * 17
