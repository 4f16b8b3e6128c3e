"""StatusWriter: events de-duplicated into one series, conditions and statuses written once."""

from __future__ import annotations

from typing import Any

from sim.simkit import pod

from pumice.kube import CORE_EVENTS, EVENTS, PODGROUPS, PODS, QUEUES, Kube, StatusWriter
from pumice.kube.events import truncate_note

MESSAGE = "0/3 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."


def writer(kube: Kube, **kw: Any) -> StatusWriter:
    return StatusWriter(kube, scheduler_name="pumice", instance="pumice-host1", **kw)


def podgroup(name: str, queue: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": 2, "queue": queue},
    }


async def events_about(kube: Kube, name: str) -> list[dict[str, Any]]:
    listed = await kube.request(
        "GET", EVENTS.path("default"), query={"fieldSelector": f"regarding.name={name}"}
    )
    items: list[dict[str, Any]] = listed["items"]
    return items


def writes(sim: Any, resource: str) -> list[tuple[str, int]]:
    return [(w.method, w.code) for w in sim.writes if w.resource == resource]


async def test_an_event_has_every_required_field(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    status = writer(kube)
    assert await status.pod_event(
        p, reason="Scheduled", note="Successfully assigned default/p1 to n1"
    )
    [event] = await events_about(kube, "p1")
    assert event["reportingController"] == "pumice"
    assert event["reportingInstance"] == "pumice-host1"
    assert event["action"] == "Binding"
    assert event["type"] == "Normal"
    assert event["eventTime"].endswith("Z")
    assert event["regarding"]["uid"] == p["metadata"]["uid"]
    assert event["regarding"]["kind"] == "Pod"
    # kubectl describe reads the same event through core v1
    core = await kube.request("GET", CORE_EVENTS.path("default"))
    assert [e["message"] for e in core["items"]] == ["Successfully assigned default/p1 to n1"]


async def test_repeats_bump_one_series(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    status = writer(kube, series_interval=0.0)
    for _ in range(5):
        await status.pod_event(p, reason="FailedScheduling", note=MESSAGE, type="Warning")
    [event] = await events_about(kube, "p1")
    assert event["series"]["count"] == 5
    assert event["series"]["lastObservedTime"].endswith("Z")
    assert writes(sim, "events") == [("POST", 201)] + [("PATCH", 200)] * 4
    # a different message is a different event
    await status.pod_event(
        p, reason="FailedScheduling", note=MESSAGE + " (changed)", type="Warning"
    )
    assert len(await events_about(kube, "p1")) == 2


async def test_repeats_within_the_interval_are_counted_and_flushed(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    status = writer(kube, series_interval=3600.0)
    for _ in range(4):
        await status.pod_event(p, reason="FailedScheduling", note=MESSAGE, type="Warning")
    assert writes(sim, "events") == [("POST", 201)]  # rate-limited: nothing patched yet
    await status.flush()
    [event] = await events_about(kube, "p1")
    assert event["series"]["count"] == 4
    assert writes(sim, "events") == [("POST", 201), ("PATCH", 200)]
    await status.flush()
    assert len(writes(sim, "events")) == 2  # nothing new to write


async def test_an_expired_event_is_created_again(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    status = writer(kube, series_interval=0.0)
    await status.pod_event(p, reason="FailedScheduling", note=MESSAGE, type="Warning")
    [event] = await events_about(kube, "p1")
    await kube.request("DELETE", EVENTS.path("default", event["metadata"]["name"]))
    # the repeat's patch gets 404: it creates a new event instead
    assert await status.pod_event(p, reason="FailedScheduling", note=MESSAGE, type="Warning")
    [again] = await events_about(kube, "p1")
    assert again["metadata"]["name"] != event["metadata"]["name"]
    assert "series" not in again
    assert writes(sim, "events") == [("POST", 201), ("DELETE", 200), ("PATCH", 404), ("POST", 201)]


async def test_long_notes_are_cut_to_one_kib(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    note = "é" * 2000  # 4000 bytes
    assert await writer(kube).pod_event(p, reason="FailedScheduling", note=note, type="Warning")
    [event] = await events_about(kube, "p1")
    assert len(event["note"].encode()) <= 1024
    assert event["note"].endswith(" ...")
    assert truncate_note("short") == "short"


async def test_spam_filter_drops_a_flood_of_distinct_events(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    status = writer(kube)
    written = [
        await status.pod_event(p, reason="FailedScheduling", note=f"try {i}", type="Warning")
        for i in range(30)
    ]
    assert written.count(True) == 25
    assert status.events.stats.dropped == 5
    assert len(await events_about(kube, "p1")) == 25


async def test_object_events_for_cluster_scoped_objects(sim: Any, kube: Kube) -> None:
    queue = await kube.request("GET", QUEUES.path(None, "default"))
    assert await writer(kube).object_event(queue, reason="Invalid", note="bad queue")
    listed = await kube.request("GET", EVENTS.path("default"))
    [event] = listed["items"]
    assert event["regarding"]["kind"] == "Queue"
    assert event["type"] == "Warning"
    assert event["action"] == "Invalid"


async def test_unschedulable_condition_written_once(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    status = writer(kube)
    assert await status.pod_unschedulable(p, MESSAGE)
    assert not await status.pod_unschedulable(p, MESSAGE)  # we wrote it: skipped
    fresh = await kube.request("GET", PODS.path("default", "p1"))
    [cond] = [c for c in fresh["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", MESSAGE)
    # a new writer (a restarted daemon) sees the condition on the pod and skips too
    assert not await writer(kube).pod_unschedulable(fresh, MESSAGE)
    assert writes(sim, "pods/status") == [("PATCH", 200)]
    # a new message is written, keeping lastTransitionTime (the status did not flip)
    assert await writer(kube).pod_unschedulable(fresh, "0/3 nodes are available: 3 Too many pods.")
    again = await kube.request("GET", PODS.path("default", "p1"))
    [cond2] = [c for c in again["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond2["message"] == "0/3 nodes are available: 3 Too many pods."
    assert cond2["lastTransitionTime"] == cond["lastTransitionTime"]
    assert len(writes(sim, "pods/status")) == 2


async def test_condition_of_a_gone_or_bound_pod_is_not_written(sim: Any, kube: Kube) -> None:
    ghost = {"metadata": {"name": "nope", "namespace": "default", "uid": "u"}}
    assert not await writer(kube).pod_unschedulable(ghost, MESSAGE)
    bound = sim.create(pod("p1", node_name="n1"))
    assert not await writer(kube).pod_unschedulable(bound, MESSAGE)
    assert writes(sim, "pods/status") == [("PATCH", 404)]


async def test_podgroup_and_queue_status_skip_unchanged(sim: Any, kube: Kube) -> None:
    sim.create(podgroup("pg1"))
    status = writer(kube)
    first = {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True"}]}
    assert await status.podgroup_status("default", "pg1", first)
    assert not await status.podgroup_status("default", "pg1", dict(first))
    assert await status.podgroup_status("default", "pg1", {"phase": "Running", "running": 2})
    got = await kube.request("GET", PODGROUPS.path("default", "pg1"))
    # exactly the last status: the conditions written before were removed
    assert got["status"] == {"phase": "Running", "running": 2}
    assert got["spec"]["minMember"] == 2
    assert writes(sim, "podgroups/status") == [("PATCH", 200)] * 2
    queue = {"state": "Open", "allocated": {"cpu": "2"}, "pending": 1, "running": 2}
    assert await status.queue_status("default", queue)
    assert not await status.queue_status("default", queue)
    got_queue = await kube.request("GET", QUEUES.path(None, "default"))
    assert got_queue["status"]["allocated"] == {"cpu": "2"}
    assert writes(sim, "queues/status") == [("PATCH", 200)]
    assert not await status.podgroup_status("default", "missing", first)
    assert status.stats.failed == 0


async def test_core_v1_events_count_repeats(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    status = writer(kube, series_interval=0.0, core_events=True)
    for _ in range(3):
        assert await status.pod_event(p, reason="FailedScheduling", note=MESSAGE, type="Warning")
    listed = await kube.request("GET", CORE_EVENTS.path("default"))
    [event] = listed["items"]
    assert (event["count"], event["source"]["component"]) == (3, "pumice")
    assert event["involvedObject"]["name"] == "p1"
    assert event["message"] == MESSAGE
    assert writes(sim, "events") == [("POST", 201), ("PATCH", 200), ("PATCH", 200)]


async def test_kubectl_describe_shows_what_was_written(sim: Any, kube: Kube) -> None:
    p = sim.create(pod("p1"))
    status = writer(kube, series_interval=0.0)
    for _ in range(3):
        await status.pod_event(p, reason="FailedScheduling", note=MESSAGE, type="Warning")
    await status.pod_unschedulable(p, MESSAGE)
    described = await sim.kubectl("describe", "pod", "p1")
    assert described.code == 0, described.stdout
    text = described.stdout
    assert "FailedScheduling" in text
    assert "pumice" in text  # the From column: reportingController
    assert MESSAGE in text
    assert "PodScheduled" in text
    assert "(x3 over" in text  # the series: one event object seen three times
