"""The node-reservation plugin through real sessions: requests, refusals, ranking, stability."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pumice import ClusterSnapshot, NodeInfo, QueueInfo, Resource, TaskStatus
from pumice.framework import Session
from pumice.logs import forget_warnings
from pumice.plugins.node_reservation import RESERVED_FOR, NodeReservationPlugin
from support.flow import GiB, add_task, binds, gang, nodes, open_flow, res, run_flow, snapshot

PLUGINS = {"node-reservation": NodeReservationPlugin}


def tiers(arguments: dict[str, Any]) -> list[list[str | dict[str, Any]]]:
    return [[{"name": "node-reservation", "arguments": arguments}], ["predicates"]]


def reserving_queue(
    name: str,
    status: dict[str, Any] | None = None,
    *,
    capability: Resource | None = None,
    guarantee: Resource | None = None,
) -> QueueInfo:
    raw: dict[str, Any] = {"metadata": {"name": name}, "spec": {}}
    if status is not None:
        raw["status"] = {"reservation": status}
    return QueueInfo(
        name,
        capability=capability,
        guarantee=guarantee if guarantee is not None else Resource.zero(),
        queue=raw,
    )


def plugin_of(session: Session) -> NodeReservationPlugin:
    for _, _, plugin in session.plugins:
        if isinstance(plugin, NodeReservationPlugin):
            return plugin
    raise AssertionError("no node-reservation plugin in the session")


def open_with(
    snap: ClusterSnapshot, arguments: dict[str, Any], actions: tuple[str, ...] = ()
) -> NodeReservationPlugin:
    session = open_flow(snap, tiers(arguments), actions or ("allocate",), PLUGINS)
    return plugin_of(session)


def cluster(*node_list: NodeInfo, queues: list[QueueInfo], jobs: Any = ()) -> ClusterSnapshot:
    snap = snapshot(node_list, jobs, queues)
    snap.taken_at = 1000.0
    return snap


# -- requests ---------------------------------------------------------------------------------


def test_a_resource_request_locks_the_nodes_that_cover_it() -> None:
    snap = cluster(*nodes(4), queues=[reserving_queue("qa")])
    plugin = open_with(snap, {"qa": {"resource": {"cpu": "8", "memory": "16Gi"}}})
    # four equal empty nodes: two are needed, the tie goes to the smallest names
    assert plugin.locks["qa"].nodes == ("n0", "n1")
    assert plugin.owner == {"n0": "qa", "n1": "qa"}
    assert plugin.refusals == {}


def test_the_guarantee_is_the_default_request() -> None:
    q = reserving_queue("qa", guarantee=res(cpu=6000))
    plugin = open_with(cluster(*nodes(4), queues=[q]), {"qa": {}})
    assert plugin.locks["qa"].nodes == ("n0", "n1")


def test_a_percentage_locks_floor_of_the_node_count() -> None:
    snap = cluster(*nodes(10), queues=[reserving_queue("qa")])
    plugin = open_with(snap, {"qa": {"percentage": {"dimensions": ["cpu"], "value": 0.25}}})
    assert plugin.locks["qa"].nodes == ("n0", "n1")  # floor(10 x 0.25) = 2
    assert plugin.locks["qa"].target.amount == res(cpu=10_000)


def test_with_both_the_larger_fraction_wins() -> None:
    snap = cluster(*nodes(10), queues=[reserving_queue("qa"), reserving_queue("qb")])
    plugin = open_with(
        snap,
        {
            "maxReservedFraction": 1,
            # 4 of 40 cpu is 10%, below the 30% asked as a percentage: 3 nodes
            "qa": {"resource": {"cpu": "4"}, "percentage": {"value": 0.3}},
            # 16 of 40 cpu is 40%, above the 10% percentage: 4 nodes cover 16 cpu
            "qb": {"resource": {"cpu": "16"}, "percentage": {"value": 0.1}},
        },
    )
    assert len(plugin.locks["qa"].nodes) == 3
    assert len(plugin.locks["qb"].nodes) == 4
    assert not set(plugin.locks["qa"].nodes) & set(plugin.locks["qb"].nodes)


# -- validation -------------------------------------------------------------------------------


def test_requests_above_the_total_or_the_capability_are_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queues = [
        reserving_queue("big"),
        reserving_queue("capped", capability=res(cpu=2000)),
        reserving_queue("gpu"),
    ]
    snap = cluster(*nodes(4), queues=queues)
    with caplog.at_level(logging.WARNING, "pumice.plugins.node_reservation"):
        plugin = open_with(
            snap,
            {
                "maxReservedFraction": 1.0,
                "big": {"resource": {"cpu": "17"}},
                "capped": {"resource": {"cpu": "3"}},
                "gpu": {"resource": {"nvidia.com/gpu": 1}},
            },
        )
    assert plugin.locks == {}
    assert plugin.refusals["big"] == (
        "request cpu=17 is above the cluster's total cpu=16,memory=32Gi (cpu)"
    )
    assert plugin.refusals["capped"] == (
        "request cpu=3 is above the queue's capability cpu=2 (cpu)"
    )
    assert "above the cluster's total" in plugin.refusals["gpu"]
    assert "queue capped: request cpu=3 is above the queue's capability" in caplog.text
    assert plugin.new_refusals == plugin.refusals
    statuses = plugin.statuses()
    assert statuses["big"] == {"refused": plugin.refusals["big"]}


def test_a_refusal_already_in_the_status_is_not_logged_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reason = "request cpu=17 is above the cluster's total cpu=16,memory=32Gi (cpu)"
    snap = cluster(*nodes(4), queues=[reserving_queue("big", {"refused": reason})])
    with caplog.at_level(logging.WARNING, "pumice.plugins.node_reservation"):
        plugin = open_with(snap, {"big": {"resource": {"cpu": "17"}}})
    assert plugin.refusals["big"] == reason
    assert plugin.new_refusals == {}
    assert "above the cluster's total" not in caplog.text


def test_the_cap_refuses_what_goes_beyond_it() -> None:
    queues = [reserving_queue("qa"), reserving_queue("qb"), reserving_queue("qc")]
    snap = cluster(*nodes(4), queues=queues)
    arguments = {
        "qa": {"resource": {"cpu": "4"}},
        "qb": {"resource": {"cpu": "4"}},
        "qc": {"resource": {"cpu": "4"}},
    }
    plugin = open_with(snap, arguments)  # default cap: half of 16 cpu
    assert sorted(plugin.locks) == ["qa", "qb"]
    assert plugin.refusals["qc"].endswith("above maxReservedFraction 0.5 of the cluster (cpu)")
    wider = open_with(cluster(*nodes(4), queues=queues), {**arguments, "maxReservedFraction": 0.75})
    assert sorted(wider.locks) == ["qa", "qb", "qc"]


def test_bad_entries_are_refusals_and_bad_own_keys_fall_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    snap = cluster(*nodes(4), queues=[reserving_queue("qa"), reserving_queue("qb")])
    forget_warnings()  # bad own keys are config warnings: said once per process
    with caplog.at_level(logging.WARNING, "pumice.plugins.node_reservation"):
        plugin = open_with(
            snap,
            {
                "relockPeriod": "soon",
                "maxReservedFraction": 2,
                "qa": {"policy": "Sometimes"},
                "qb": {"resource": {"cpu": "4"}},
            },
        )
    assert "policy must be Best-Effort or Guaranteed" in plugin.refusals["qa"]
    assert plugin.locks["qb"].nodes == ("n0",)
    assert plugin.settings.relock_period == 10.0
    assert plugin.settings.max_reserved_fraction == 0.5
    assert "plugin node-reservation: relockPeriod: bad duration 'soon'" in caplog.text


# -- ranking ----------------------------------------------------------------------------------


def test_fewer_fuller_nodes_win() -> None:
    small = nodes(3, cpu=4000, memory=8 * GiB, prefix="a")
    big = NodeInfo("z-big", res(8000, 16 * GiB))
    snap = cluster(*small, big, queues=[reserving_queue("qa")])
    plugin = open_with(snap, {"qa": {"resource": {"cpu": "8", "memory": "16Gi"}}})
    # two small nodes fit as exactly as the big one, but one node beats two
    assert plugin.locks["qa"].nodes == ("z-big",)
    tight = open_with(
        cluster(*small, big, queues=[reserving_queue("qa")]),
        {"qa": {"resource": {"cpu": "4", "memory": "8Gi"}}},
    )
    assert tight.locks["qa"].nodes == ("a0",)  # one small node wastes nothing


def test_the_queues_own_usage_wins() -> None:
    job = gang("mine", 1, cpu=1000, queue="qa", phase="Running")
    task = next(iter(job.tasks.values()))
    job.update_task_status(task, TaskStatus.RUNNING)
    task.node_name = "n2"
    snap = cluster(*nodes(4), queues=[reserving_queue("qa")], jobs=[job])
    plugin = open_with(snap, {"qa": {"resource": {"cpu": "4"}}})
    assert plugin.locks["qa"].nodes == ("n2",)


# -- stability --------------------------------------------------------------------------------


def test_a_lock_that_still_satisfies_is_kept() -> None:
    held = {"nodes": ["n3"], "lockedAt": "1970-01-01T00:00:00Z"}
    snap = cluster(*nodes(4), queues=[reserving_queue("qa", held)])
    plugin = open_with(snap, {"qa": {"resource": {"cpu": "4"}}})
    assert plugin.locks["qa"].nodes == ("n3",)  # a fresh choice would be n0
    assert plugin.locks["qa"].locked_at == 0.0


def test_a_lock_that_no_longer_fits_waits_for_the_relock_period() -> None:
    held = {"nodes": ["n2", "n3"], "lockedAt": "1970-01-01T00:16:35Z"}  # 995 s
    arguments = {"relockPeriod": "10s", "qa": {"resource": {"cpu": "4"}}}
    early = open_with(cluster(*nodes(4), queues=[reserving_queue("qa", held)]), arguments)
    assert early.locks["qa"].nodes == ("n2", "n3")  # 5 s old: kept although one would do
    late = open_with(
        cluster(*nodes(4), queues=[reserving_queue("qa", held)]),
        {**arguments, "relockPeriod": "4s"},
    )
    assert late.locks["qa"].nodes == ("n0",)
    assert late.locks["qa"].locked_at == 1000.0


def test_a_vanished_node_is_replaced_and_the_others_kept() -> None:
    held = {"nodes": ["gone", "n2"], "lockedAt": "1970-01-01T00:16:39Z"}
    snap = cluster(*nodes(4), queues=[reserving_queue("qa", held)])
    plugin = open_with(snap, {"qa": {"resource": {"cpu": "8"}}})
    assert plugin.locks["qa"].nodes == ("n0", "n2")  # a fresh choice would be n0, n1
    assert plugin.statuses()["qa"] == {
        "nodes": ["n0", "n2"],
        "resource": {"cpu": "8", "memory": "16Gi"},
        "lockedAt": "1970-01-01T00:16:40Z",
    }


def test_a_removed_reservation_releases_its_nodes() -> None:
    held = {"nodes": ["n0"], "lockedAt": "1970-01-01T00:00:00Z"}
    snap = cluster(*nodes(2), queues=[reserving_queue("qa", held)])
    plugin = open_with(snap, {})
    assert plugin.locks == {}
    assert plugin.statuses() == {"qa": None}


# -- effect -----------------------------------------------------------------------------------


def test_other_queues_stay_off_locked_nodes_and_the_owner_lands_there() -> None:
    # the same shape in both queues: the session must not share the predicate mask
    theirs = gang("theirs", 2, cpu=3000, queue="qb", created=1)
    mine = gang("mine", 1, cpu=3000, queue="qa", created=2)
    snap = cluster(
        *nodes(2),
        queues=[reserving_queue("qa"), reserving_queue("qb")],
        jobs=[theirs, mine],
    )
    session = run_flow(snap, tiers({"qa": {"resource": {"cpu": "4"}}}), ("allocate",), PLUGINS)
    assert plugin_of(session).locks["qa"].nodes == ("n0",)
    placed = binds(session)
    # qb's first pod takes the free node; its second finds only qa's node
    assert placed == {"theirs-0": "n1", "mine-0": "n0"}
    assert any(RESERVED_FOR.format("qa") in r for r in session.task_reasons.values())


def test_the_owner_may_use_free_nodes_too() -> None:
    mine = gang("mine", 2, cpu=3000, queue="qa")
    snap = cluster(*nodes(2), queues=[reserving_queue("qa")], jobs=[mine])
    session = run_flow(snap, tiers({"qa": {"resource": {"cpu": "4"}}}), ("allocate",), PLUGINS)
    assert sorted(binds(session).values()) == ["n0", "n1"]


def test_a_lone_pod_of_another_queue_reads_the_reason() -> None:
    theirs = gang("theirs", 1, cpu=1000, queue="qb")
    add_task(theirs, "extra", cpu=1000)
    snap = cluster(*nodes(1), queues=[reserving_queue("qa"), reserving_queue("qb")], jobs=[theirs])
    arguments = {"maxReservedFraction": 1, "qa": {"resource": {"cpu": "4"}}}
    session = run_flow(snap, tiers(arguments), ("allocate",), PLUGINS)
    assert binds(session) == {}
    assert any(RESERVED_FOR.format("qa") in r for r in session.task_reasons.values())


def test_a_deleted_queue_gets_nothing_and_refuses_nothing() -> None:
    snap = cluster(*nodes(2), queues=[reserving_queue("qb")])
    plugin = open_with(snap, {"qa": {"resource": {"cpu": "4"}}})
    assert plugin.locks == {}
    assert plugin.refusals == {}
    assert plugin.owner == {}


def test_a_cordoned_locked_node_is_replaced_and_never_chosen() -> None:
    node_list = nodes(3)
    cordoned = NodeInfo.from_node(
        {"metadata": {"name": "n0"}, "spec": {"unschedulable": True},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}
    )  # fmt: skip
    held = {"nodes": ["n0"], "lockedAt": "1970-01-01T00:00:00Z"}
    snap = cluster(cordoned, *node_list[1:], queues=[reserving_queue("qa", held)])
    plugin = open_with(snap, {"qa": {"resource": {"cpu": "4"}}})
    assert plugin.locks["qa"].nodes == ("n1",)


def test_a_percentage_lock_missing_a_node_is_topped_up() -> None:
    held = {"nodes": ["gone", "n3"], "lockedAt": "1970-01-01T00:00:00Z"}
    snap = cluster(*nodes(8), queues=[reserving_queue("qa", held)])
    plugin = open_with(snap, {"qa": {"percentage": {"value": 0.25}}})
    assert plugin.locks["qa"].nodes == ("n0", "n3")


def test_the_clock_is_the_snapshots() -> None:
    snap = cluster(*nodes(2), queues=[reserving_queue("qa")])
    snap.taken_at = 86_400.5
    plugin = open_with(snap, {"qa": {"resource": {"cpu": "4"}}})
    assert plugin.statuses()["qa"]["lockedAt"] == "1970-01-02T00:00:00.500000Z"  # type: ignore[index]
    assert snap.clone().taken_at > 1e9  # a clone is a picture taken now
