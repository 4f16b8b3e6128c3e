"""Preempt and reclaim with the real pod-to-pod filters, through ``pumice simulate``.

Issue 19, build item 7: a victim set is taken only if the preemptor passes every filter on that
node once the victims are gone, so the pod whose anti-affinity kept the preemptor out may be
the one to go, and an eviction that cannot help (pod affinity, a missing spread label, a
blocker that may not be evicted) is not made. Each scenario runs the shipped configuration's
actions for several cycles: cycle 1 evicts, cycle 2 places the preemptor into the room (the
evicted pods are gone by then). The placement is then replayed by the independent checker of
``support/constraint_checker.py`` on the cluster without the evicted pods: it must break no
required term or DoNotSchedule constraint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.constraint_cases import (
    HOST,
    NO_SCHEDULE,
    Capsys,
    exists,
    in_,
    node,
    node_not_in,
    pod,
    sel,
    spread,
    term,
)
from support.constraint_checker import (
    AFFINITY,
    EXISTING_ANTI_AFFINITY,
    SPREAD_MISSING_LABEL,
    replay,
)
from support.constraint_checker import ANTI_AFFINITY as OWN_ANTI_AFFINITY
from support.manifests import evicted, pending, placed, podgroup, priority_class, queue, simulate

Obj = dict[str, Any]
WEB = {"app": "web"}
GUARD = {"app": "guard"}
AWAY_FROM_WEB = [term(sel(in_("app", "web")), HOST)]
AWAY_FROM_GUARD = [term(sel(in_("app", "guard")), HOST)]
CLASSES = [
    priority_class("low", 1),
    priority_class("mid", 2),
    priority_class("high", 1000),
    priority_class("top", 5000),
]


def ranked(p: Obj, priority_class: str, cpu: str | None = None, group: str | None = None) -> Obj:
    """The pod with a PriorityClass (and a cpu request, a PodGroup), scheduled by pumice."""
    p["spec"]["priorityClassName"] = priority_class
    p["spec"]["schedulerName"] = "pumice"
    if cpu is not None:
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    if group is not None:
        p["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = group
    return p


def sized(name: str, labels: dict[str, str], cpu: str) -> Obj:
    """A node with ``cpu`` cores and a hostname label."""
    out = node(name, {HOST: name, **labels})
    out["status"]["allocatable"]["cpu"] = cpu
    out["status"]["capacity"]["cpu"] = cpu
    return out


def assert_placements_hold(objects: list[Obj], result: dict[str, Any]) -> None:
    """Every placement keeps every required constraint, the evicted pods gone."""
    gone = set(evicted(result))
    left = [o for o in objects if not (o["kind"] == "Pod" and _key(o) in gone)]
    violations, _ = replay(left, result["placements"])
    assert violations == [], "\n".join(map(str, violations))


def _key(o: Obj) -> str:
    return f"{o['metadata']['namespace']}/{o['metadata']['name']}"


def assert_placements_hold_while_the_evicted_terminate(
    objects: list[Obj], result: dict[str, Any]
) -> None:
    """The placements of the eviction cycle keep every required constraint with the evicted
    pods still on their nodes, terminating (``simulate`` deletes them only after the cycle):
    the checker counts them for InterPodAffinity, not for PodTopologySpread."""
    cycles = {e["cycle"] for e in result["evictions"]}
    assert len(cycles) == 1, result["evictions"]
    gone = set(evicted(result))
    during = [_terminating(o) if o["kind"] == "Pod" and _key(o) in gone else o for o in objects]
    early = [p for p in result["placements"] if p["cycle"] <= min(cycles)]
    violations, _ = replay(during, early)
    assert violations == [], "\n".join(map(str, violations))


def _terminating(o: Obj) -> Obj:
    return {**o, "metadata": {**o["metadata"], "deletionTimestamp": "2026-01-01T00:01:00Z"}}


# -- preempt ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blocker", "web"),
    [
        pytest.param(
            pod("blocker", GUARD, on="n1", anti=AWAY_FROM_WEB),
            pod("web", WEB),
            id="the victim's own anti-affinity (existing pods' rule)",
        ),
        pytest.param(
            pod("blocker", GUARD, on="n1"),
            pod("web", WEB, anti=AWAY_FROM_GUARD),
            id="the preemptor's anti-affinity toward the victim",
        ),
    ],
)
def test_preempt_evicts_the_pod_whose_anti_affinity_kept_the_preemptor_out(
    blocker: Obj, web: Obj, tmp_path: Path, capsys: Capsys
) -> None:
    """n1 holds a low-priority blocker, n2 a guard more important than the preemptor under the
    same rule: only the blocker may go, and does; the preemptor then runs on n1."""
    guard = pod("guard", GUARD, on="n2", anti=AWAY_FROM_WEB)
    objects = [
        *CLASSES,
        node("n1", {HOST: "n1"}),
        node("n2", {HOST: "n2"}),
        ranked(blocker, "low"),
        ranked(guard, "top"),
        ranked(web, "high"),
    ]
    result = simulate(tmp_path, objects, capsys)
    assert evicted(result) == {"default/blocker": "default/web"}
    assert [(e["action"], e["cycle"]) for e in result["evictions"]] == [("preempt", 1)]
    assert placed(result) == {"default/web": "n1"}
    assert_placements_hold(objects, result)


def test_preempt_takes_no_victim_while_a_protected_pod_still_blocks(
    tmp_path: Path, capsys: Capsys
) -> None:
    """The only node holds a low-priority pod and, beside it, a guard more important than the
    preemptor whose anti-affinity keeps it out: evicting the low pod would not let it in, so
    nothing is evicted and the pod waits with kube-scheduler's reason."""
    objects = [
        *CLASSES,
        node("n1", {HOST: "n1"}),
        ranked(pod("bystander", on="n1"), "low"),
        ranked(pod("guard", GUARD, on="n1", anti=AWAY_FROM_WEB), "top"),
        ranked(pod("web", WEB), "high"),
    ]
    result = simulate(tmp_path, objects, capsys)
    assert result["evictions"] == []
    assert pending(result)["default/web"].startswith(
        f"0/1 nodes are available: 1 {EXISTING_ANTI_AFFINITY}."
    )


@pytest.mark.parametrize(
    ("web", "reason"),
    [
        pytest.param(
            pod("web", WEB, affinity=[term(sel(in_("app", "cache")), HOST)]),
            AFFINITY,
            id="required affinity to a pod nowhere",
        ),
        pytest.param(
            pod("web", WEB, spreads=[spread(1, "rack", sel(in_("app", "web")))]),
            SPREAD_MISSING_LABEL,
            id="a spread key the node lacks",
        ),
        pytest.param(pod("web", WEB), None, id="control: no such term, one pod evicted"),
    ],
)
def test_an_unresolvable_reason_evicts_nothing(
    web: Obj, reason: str | None, tmp_path: Path, capsys: Capsys
) -> None:
    """n1 is full of low-priority pods, so the preemptor's cpu justifies an eviction (the
    control row takes one); but pod affinity to a pod that exists nowhere, or a spread key the
    node lacks, fails whatever leaves (kube-scheduler's UnschedulableAndUnresolvable): no victim
    is taken and the pod waits with that reason."""
    objects = [
        *CLASSES,
        sized("n1", {}, "2"),
        ranked(pod("low-0", on="n1"), "low", cpu="1"),
        ranked(pod("low-1", on="n1"), "low", cpu="1"),
        ranked(web, "high", cpu="1"),
    ]
    result = simulate(tmp_path, objects, capsys)
    if reason is None:
        assert len(result["evictions"]) == 1
        assert placed(result) == {"default/web": "n1"}
        return
    assert result["evictions"] == []
    assert placed(result) == {}
    assert reason in pending(result)["default/web"]


def test_a_high_priority_pod_preempts_to_keep_its_spread(tmp_path: Path, capsys: Capsys) -> None:
    """integration/scheduler/filters/filters_test.go: TestPodTopologySpreadFilter: 'high
    priority pod can preempt others'. node-0/1 in zone-0, node-2/3 in zone-1; low-priority foo
    pods spread 0/2/2/1; the incoming pod (priority 100, not on node-0) spreads maxSkew 1 by
    zone and by node, which no node allows until some pod goes. It lands on node-1, node-2 or
    node-3, within both constraints once its victims are gone."""
    foo = sel(exists("foo"))
    nodes = [node(f"node-{i}", {"node": f"node-{i}", "zone": f"zone-{i // 2}"}) for i in range(4)]
    existing = [
        ranked(pod(name, {"foo": ""}, on=f"node-{name[1]}"), "low")
        for name in ("p1a", "p1b", "p2a", "p2b", "p3")
    ]
    incoming = pod(
        "p",
        {"foo": ""},
        spreads=[spread(1, "zone", foo), spread(1, "node", foo)],
        node_affinity=node_not_in("node", "node-0"),
    )
    objects = [priority_class("low", 1), priority_class("p100", 100), *nodes, *existing]
    objects.append(ranked(incoming, "p100"))
    result = simulate(tmp_path, objects, capsys)
    assert result["evictions"], pending(result)
    assert all(e["action"] == "preempt" and e["cycle"] == 1 for e in result["evictions"])
    assert set(evicted(result).values()) == {"default/p"}
    assert placed(result)["default/p"] in {"node-1", "node-2", "node-3"}
    assert_placements_hold(objects, result)


# -- reclaim ----------------------------------------------------------------------------------


def reclaim_cluster(blocker_queue: str) -> list[Obj]:
    """Two 2-cpu nodes. n1 (pool a): the blocker (1 cpu, anti-affinity to web) and a keeper of
    queue qc, which may not be reclaimed from; n2 (pool b): two pods of queue qa. Queue qb's
    web pod (1 cpu) must go to pool a. qa holds 3 of the 4 cpu when the blocker is its, above
    its share, so it may lose one pod."""
    blocker = pod("blocker", GUARD, on="n1", anti=AWAY_FROM_WEB)
    web = pod("web", WEB, node_selector={"pool": "a"})
    return [
        queue("qa"),
        queue("qb"),
        queue("qc", reclaimable=False),
        podgroup("hog", 1, queue="qa", phase="Running"),
        podgroup("keep", 1, queue="qc", phase="Running"),
        podgroup("late", 1, queue="qb"),
        sized("n1", {"pool": "a"}, "2"),
        sized("n2", {"pool": "b"}, "2"),
        ranked(blocker, "low", cpu="1", group="hog" if blocker_queue == "qa" else "keep"),
        ranked(pod("keeper", on="n1"), "low", cpu="1", group="keep"),
        ranked(pod("hog-0", on="n2"), "low", cpu="1", group="hog"),
        ranked(pod("hog-1", on="n2"), "low", cpu="1", group="hog"),
        ranked(web, "low", cpu="1", group="late"),
    ]


def test_reclaim_evicts_the_pod_whose_anti_affinity_kept_the_reclaimer_out(
    tmp_path: Path, capsys: Capsys
) -> None:
    objects = [*CLASSES, *reclaim_cluster("qa")]
    result = simulate(tmp_path, objects, capsys)
    assert evicted(result) == {"default/blocker": "default/web"}
    assert [e["action"] for e in result["evictions"]] == ["reclaim"]
    assert placed(result) == {"default/web": "n1"}
    assert_placements_hold(objects, result)


def test_reclaim_takes_nothing_when_the_blocker_may_not_be_reclaimed(
    tmp_path: Path, capsys: Capsys
) -> None:
    """The blocker now belongs to qc (not reclaimable): reclaiming qa's pods frees cpu but not
    n1, so no pod is evicted and web waits."""
    objects = [*CLASSES, *reclaim_cluster("qc")]
    result = simulate(tmp_path, objects, capsys)
    assert result["evictions"] == []
    assert "default/web" in pending(result)


def test_without_preempt_the_blocked_pod_waits(tmp_path: Path, capsys: Capsys) -> None:
    """The control: without preempt among the actions, the blocked pod stays pending with its
    own anti-affinity reason (so in the tests above the eviction is what placed it)."""
    config = (
        'actions: "enqueue, allocate, backfill"\ntiers:\n'
        "- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]\n"
    )
    objects = [
        *CLASSES,
        node("n1", {HOST: "n1"}),
        ranked(pod("blocker", GUARD, on="n1"), "low"),
        ranked(pod("web", WEB, anti=AWAY_FROM_GUARD), "high"),
    ]
    result = simulate(tmp_path, objects, capsys, config=config)
    assert pending(result) == {"default/web": f"0/1 nodes are available: 1 {OWN_ANTI_AFFINITY}."}


def test_a_pod_evicted_in_the_session_still_counts_for_anti_affinity_while_it_terminates(
    tmp_path: Path, capsys: Capsys
) -> None:
    """n1 (2 cpu) holds v (low priority, anti-affinity to web) and x; preempt evicts v for p.
    In the same cycle backfill must not put the best-effort web pod on n1 while v terminates
    there: kube-scheduler counts a terminating pod for InterPodAffinity, so v's anti-affinity
    holds until v is gone (the next cycle), and then w goes there."""
    web = pod("w", WEB)
    web["spec"]["containers"][0]["resources"] = {}
    objects = [
        *CLASSES,
        sized("n1", {}, "2"),
        ranked(pod("v", GUARD, on="n1", anti=AWAY_FROM_WEB), "low", cpu="1"),
        ranked(pod("x", {"app": "x"}, on="n1"), "mid", cpu="1"),
        ranked(pod("p", {"app": "p"}), "high", cpu="1"),
        web,
    ]
    result = simulate(tmp_path, objects, capsys)
    assert evicted(result) == {"default/v": "default/p"}
    eviction_cycle = result["evictions"][0]["cycle"]
    placed_w = [p for p in result["placements"] if p["pod"] == "default/w"]
    assert placed_w, result["placements"]
    assert all(p["cycle"] > eviction_cycle for p in placed_w), placed_w
    assert placed(result)["default/w"] == "n1"
    assert_placements_hold(objects, result)
    assert_placements_hold_while_the_evicted_terminate(objects, result)


def test_a_pod_evicted_in_the_session_no_longer_counts_for_spread(
    tmp_path: Path, capsys: Capsys
) -> None:
    """The other half of kube-scheduler's rule: PodTopologySpread leaves terminating pods out.
    n1 (2 cpu) holds v (app=s, low priority) and x; n2 is tainted, so the best-effort pod w
    (app=s, hostname spread maxSkew 1 over app=s) can only go to n1, which its spread forbids
    while v counts there (1 + 1 - 0 > 1: n2 is a domain, the taint policy being Ignore).
    Preempt evicts v for p; in the same cycle backfill puts w on n1, v terminating."""
    spread_s = [spread(1, HOST, sel(in_("app", "s")))]
    w = pod("w", {"app": "s"}, spreads=spread_s)
    w["spec"]["containers"][0]["resources"] = {}
    tainted = sized("n2", {}, "2")
    tainted["spec"] = {"taints": [NO_SCHEDULE]}
    objects = [
        *CLASSES,
        sized("n1", {}, "2"),
        tainted,
        ranked(pod("v", {"app": "s"}, on="n1"), "low", cpu="1"),
        ranked(pod("x", {"app": "x"}, on="n1"), "mid", cpu="1"),
        ranked(pod("p", {"app": "p"}), "high", cpu="1"),
        w,
    ]
    result = simulate(tmp_path, objects, capsys)
    assert evicted(result) == {"default/v": "default/p"}
    eviction_cycle = result["evictions"][0]["cycle"]
    placed_w = [p for p in result["placements"] if p["pod"] == "default/w"]
    assert [(p["node"], p["cycle"]) for p in placed_w] == [("n1", eviction_cycle)]
    assert_placements_hold_while_the_evicted_terminate(objects, result)
