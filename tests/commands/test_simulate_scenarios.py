"""Every action and plugin through ``pumice simulate``: the scenarios a Volcano user checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.manifests import (
    evicted,
    gang_pods,
    node,
    pending,
    placed,
    pod,
    podgroup,
    priority_class,
    queue,
    simulate,
)

Capsys = pytest.CaptureFixture[str]


# -- gangs ------------------------------------------------------------------------------------


def test_a_gang_is_placed_whole_or_not_at_all(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        node("n1"),
        node("n2"),
        podgroup("big", 3),
        *gang_pods("big", 3, "3"),  # 3 x 3 cpu on two 4-cpu nodes: only two fit
        podgroup("small", 2),
        *gang_pods("small", 2, "1"),
    ]
    result = simulate(tmp_path, objects, capsys)
    assert sorted(placed(result)) == ["default/small-0", "default/small-1"]
    reasons = pending(result)
    assert sorted(reasons) == ["default/big-0", "default/big-1", "default/big-2"]
    # the third pod fits no node (1 cpu left on each): node reasons come before the queue's
    # fair share (8 cpu), which would refuse it too; the others wait for the gang
    assert reasons["default/big-2"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert reasons["default/big-0"].startswith("1/3 tasks in gang unschedulable")
    assert result["podgroups"]["default/big"]["phase"] == "Inqueue"
    assert result["podgroups"]["default/small"]["phase"] == "Running"


def test_gang_tasks_go_in_pod_index_order(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("n1", "16", "32Gi"), podgroup("job", 11), *gang_pods("job", 11, prefix="job-w")]
    result = simulate(tmp_path, objects, capsys)
    # Volcano's pod-name index: job-w-2 before job-w-10 (not text order)
    assert [p["pod"] for p in result["placements"]] == [f"default/job-w-{i}" for i in range(11)]


# -- fair share -------------------------------------------------------------------------------


def test_two_equal_queues_split_a_full_cluster(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        *(node(f"n{i}") for i in range(4)),  # 16 cpu
        queue("qa"),
        queue("qb"),
        podgroup("a", 1, queue="qa"),
        podgroup("b", 1, queue="qb"),
        *gang_pods("a", 16),
        *gang_pods("b", 16),
    ]
    result = simulate(tmp_path, objects, capsys)
    by_queue = {"a": 0, "b": 0}
    for name in placed(result):
        by_queue[name.split("/")[1].split("-")[0]] += 1
    assert by_queue == {"a": 8, "b": 8}
    for name in ("qa", "qb"):
        assert result["queues"][name]["allocated"] == {"cpu": "8", "memory": "8Gi"}
        assert result["queues"][name]["deserved"]["cpu"] == "8"
        assert result["queues"][name]["share"] == 1.0
    assert len(pending(result)) == 16


# -- preempt ----------------------------------------------------------------------------------


def low_and_high(high_pods: int, high_cpu: str, high_min: int) -> list[dict[str, object]]:
    return [
        node("n1"),
        priority_class("low", 10),
        priority_class("high", 1000),
        podgroup("low", 1, priority_class="low", phase="Running"),
        *gang_pods("low", 4, node_name="n1", priority_class="low"),
        podgroup("high", high_min, priority_class="high"),
        *gang_pods("high", high_pods, high_cpu, priority_class="high"),
    ]


def test_a_high_priority_gang_preempts_lower_priority_pods(tmp_path: Path, capsys: Capsys) -> None:
    result = simulate(tmp_path, low_and_high(2, "1", 2), capsys)
    victims = evicted(result)
    assert len(victims) == 2
    assert set(victims.values()) == {"default/high-0", "default/high-1"}
    assert all(e["action"] == "preempt" and e["cycle"] == 1 for e in result["evictions"])
    # the next cycle binds the preemptors into the room they freed
    assert placed(result) == {"default/high-0": "n1", "default/high-1": "n1"}
    assert {p["cycle"] for p in result["placements"]} == {2}
    assert result["podgroups"]["default/high"]["phase"] == "Running"


def test_nothing_is_evicted_when_the_preemptor_could_not_run(
    tmp_path: Path, capsys: Capsys
) -> None:
    # three pods of 2 cpu on a 4-cpu node can never run together
    result = simulate(tmp_path, low_and_high(3, "2", 3), capsys)
    assert result["evictions"] == []
    assert result["placements"] == []
    assert sorted(pending(result)) == ["default/high-0", "default/high-1", "default/high-2"]


def test_preemption_policy_never_waits(tmp_path: Path, capsys: Capsys) -> None:
    objects = low_and_high(1, "1", 1)
    objects[-1]["spec"]["preemptionPolicy"] = "Never"  # type: ignore[index]
    result = simulate(tmp_path, objects, capsys)
    assert result["evictions"] == []


def test_gang_safe_victims(tmp_path: Path, capsys: Capsys) -> None:
    # with gang's preemptable on, a running gang is never broken below its minMember
    config = (
        'actions: "enqueue, allocate, preempt, backfill"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]\n"
    )
    objects = low_and_high(1, "2", 1)
    objects[3]["spec"]["minMember"] = 3  # type: ignore[index]
    result = simulate(tmp_path, objects, capsys, config=config)
    assert result["evictions"] == []  # two victims needed, only one may go
    objects = low_and_high(1, "1", 1)
    objects[3]["spec"]["minMember"] = 3  # type: ignore[index]
    result = simulate(tmp_path, objects, capsys, config=config)
    assert len(result["evictions"]) == 1
    assert placed(result) == {"default/high-0": "n1"}


# -- protections ------------------------------------------------------------------------------


def protected_cluster() -> list[dict[str, object]]:
    return [
        node("n1", "2"),
        priority_class("high", 1000),
        pod("dns", namespace="kube-system", node_name="n1"),
        pod("critical", node_name="n1", priority_class="system-cluster-critical"),
        pod("urgent", priority_class="high"),
    ]


def test_kube_system_and_critical_pods_are_never_victims(tmp_path: Path, capsys: Capsys) -> None:
    result = simulate(tmp_path, protected_cluster(), capsys)
    assert result["evictions"] == []
    assert "default/urgent" in pending(result)


def test_protection_holds_whatever_a_later_tier_answers(tmp_path: Path, capsys: Capsys) -> None:
    # conformance alone in tier 1 answers nothing; Volcano would let priority in tier 2 pick
    config = (
        'actions: "allocate, preempt"\n'
        "tiers:\n- plugins: [{name: conformance}]\n"
        "- plugins: [{name: priority}, {name: predicates}, {name: nodeorder}]\n"
    )
    result = simulate(tmp_path, protected_cluster(), capsys, config=config)
    assert result["evictions"] == []
    unprotected = [
        *protected_cluster()[:2],
        pod("web", node_name="n1"),
        pod("batch", node_name="n1"),
    ]
    unprotected.append(pod("urgent", priority_class="high"))
    result = simulate(tmp_path, unprotected, capsys, config=config)
    assert len(result["evictions"]) == 1  # the same rules evict an ordinary pod


# -- reclaim ----------------------------------------------------------------------------------


def reclaim_cluster(reclaimable: bool | None = None) -> list[dict[str, object]]:
    return [
        node("n1"),
        queue("qa", reclaimable=reclaimable),
        queue("qb"),
        podgroup("hog", 1, queue="qa", phase="Running"),
        *gang_pods("hog", 4, node_name="n1"),
        podgroup("late", 2, queue="qb"),
        *gang_pods("late", 2),
    ]


def test_a_starving_queue_reclaims_from_one_above_its_share(tmp_path: Path, capsys: Capsys) -> None:
    result = simulate(tmp_path, reclaim_cluster(), capsys)
    assert len(result["evictions"]) == 2
    assert all(e["action"] == "reclaim" for e in result["evictions"])
    assert set(evicted(result)) <= {f"default/hog-{i}" for i in range(4)}
    assert placed(result) == {"default/late-0": "n1", "default/late-1": "n1"}
    assert result["queues"]["qa"]["allocated"]["cpu"] == "2"
    assert result["queues"]["qb"]["allocated"]["cpu"] == "2"


def test_a_non_reclaimable_queue_is_never_reclaimed_from(tmp_path: Path, capsys: Capsys) -> None:
    result = simulate(tmp_path, reclaim_cluster(reclaimable=False), capsys)
    assert result["evictions"] == []
    assert sorted(pending(result)) == ["default/late-0", "default/late-1"]


# -- admission --------------------------------------------------------------------------------


def test_a_closed_queue_admits_nothing(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        node("n1"),
        queue("shut", state="Closed"),
        podgroup("a", 1, queue="shut", min_resources={"cpu": "1"}),
        *gang_pods("a", 1),
        podgroup("empty-min", 1, queue="shut", min_resources={}),
        *gang_pods("empty-min", 1),
    ]
    result = simulate(tmp_path, objects, capsys)
    assert result["placements"] == []
    assert result["podgroups"] == {
        "default/a": {"phase": "Pending"},
        "default/empty-min": {"phase": "Pending"},
    }


# -- predicates and messages ------------------------------------------------------------------


def test_taints_affinity_and_host_ports(tmp_path: Path, capsys: Capsys) -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    objects = [
        node("a", "8", labels={"zone": "za"}, taints=[taint]),
        node("b", "8", labels={"disk": "ssd"}),
        node("c", "8", labels={"plain": "yes"}),
        pod("web", node_name="c", host_port=8080, scheduler="default-scheduler"),
        pod("ssd", node_selector={"disk": "ssd"}),
        pod("port", host_port=8080, created="2026-01-01T00:00:01Z"),
        pod(
            "tolerant",
            node_selector={"zone": "za"},
            tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu"}],
        ),
        pod("stuck", host_port=8080, node_selector={"plain": "yes"}),
        pod("intolerant", node_selector={"zone": "za"}),
    ]
    result = simulate(tmp_path, objects, capsys)
    assert placed(result) == {"default/ssd": "b", "default/port": "b", "default/tolerant": "a"}
    assert pending(result) == {
        "default/stuck": "0/3 nodes are available: "
        "1 node(s) didn't have free ports for the requested pod ports, "
        "1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {dedicated: gpu}.",
        "default/intolerant": "0/3 nodes are available: "
        "1 node(s) had untolerated taint {dedicated: gpu}, "
        "2 node(s) didn't match Pod's node affinity/selector.",
    }


def test_messages_in_kube_schedulers_format(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        *(node(f"small-{i}", "1", "1Gi") for i in range(10)),
        *(node(f"off-{i}", "16", "64Gi", unschedulable=True) for i in range(2)),
        node("full", "16", "64Gi", pods="1"),
        pod("filler", "100m", "100Mi", node_name="full"),
        pod("wide", "2", "2Gi"),
    ]
    result = simulate(tmp_path, objects, capsys)
    # parts sorted as strings ("10 …" before "2 …"); a node short of cpu and memory counts
    # under both; the pod limit is "Too many pods"; Volcano's wording is not used
    assert pending(result) == {
        "default/wide": "0/13 nodes are available: 1 Too many pods, 10 Insufficient cpu, "
        "10 Insufficient memory, 2 node(s) were unschedulable."
    }


def test_a_nominated_pod_goes_to_the_room_freed_for_it(tmp_path: Path, capsys: Capsys) -> None:
    waiting = pod("preemptor", "1")
    waiting["status"]["nominatedNodeName"] = "busy"
    objects = [node("busy", "4"), pod("other", "3", node_name="busy"), node("idle", "8")]
    result = simulate(tmp_path, [*objects, waiting], capsys)
    # without the nomination the emptier node would score higher
    assert placed(result) == {"default/preemptor": "busy"}
    del waiting["status"]["nominatedNodeName"]
    result = simulate(tmp_path, [*objects, waiting], capsys)
    assert placed(result) == {"default/preemptor": "idle"}
