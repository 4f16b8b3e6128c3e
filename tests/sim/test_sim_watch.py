"""List + watch through the real kubernetes_asyncio client: resourceVersions, bookmarks,
410 Gone, selectors (DELETED when an object stops matching) and timeouts."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from sim.simkit import EventStream, bind, brief, node, pod, wait_until


async def test_list_then_watch_from_the_list_resource_version(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("before"))
    listed = await core.list_pod_for_all_namespaces()
    assert [p.metadata.name for p in listed.items] == ["before"]
    rv = listed.metadata.resource_version
    assert isinstance(rv, str) and rv.isdigit()
    await core.create_namespaced_pod("default", pod("after"))
    await core.delete_namespaced_pod("after", "default")
    async with EventStream(
        core.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=30
    ) as stream:
        events = await stream.take(2)
        # the watch starts after the list: "before" is not replayed, the later changes are
        assert [brief(e) for e in events] == [("ADDED", "after"), ("DELETED", "after")]
        versions = [int(e["raw_object"]["metadata"]["resourceVersion"]) for e in events]
        assert int(rv) < versions[0] < versions[1]
        await core.create_namespaced_pod("default", pod("live"))
        (live,) = await stream.take(1)
        assert brief(live) == ("ADDED", "live")


async def test_watch_without_resource_version_starts_with_synthetic_added_events(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    for name in ("a", "b"):
        await core.create_namespaced_pod("default", pod(name))
    async with EventStream(core.list_namespaced_pod, "default", timeout_seconds=30) as stream:
        events = await stream.take(2)
        assert [brief(e) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


async def test_bookmarks_carry_only_a_resource_version(make_sim: Any) -> None:
    sim = await make_sim(bookmark_interval=0.05)
    async with await sim.client() as api:
        core = k8s_client.CoreV1Api(api)
        listed = await core.list_node()
        async with EventStream(
            core.list_node,
            resource_version=listed.metadata.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=30,
        ) as stream:
            event = await stream.next()
            assert event["type"] == "BOOKMARK"
            obj = event["raw_object"]
            assert obj["kind"] == "Node"
            assert obj["apiVersion"] == "v1"
            assert set(obj["metadata"]) == {"resourceVersion"}
            assert int(obj["metadata"]["resourceVersion"]) >= int(listed.metadata.resource_version)


async def test_no_bookmarks_unless_asked(make_sim: Any) -> None:
    sim = await make_sim(bookmark_interval=0.05)
    async with await sim.client() as api:
        core = k8s_client.CoreV1Api(api)
        rv = (await core.list_node()).metadata.resource_version
        async with EventStream(core.list_node, resource_version=rv, timeout_seconds=1) as stream:
            sim.create(node("n9"))
            first = await stream.next()
            assert brief(first) == ("ADDED", "n9")
            with pytest.raises(StopAsyncIteration):
                await stream.next()  # the server ends the stream at timeoutSeconds, no bookmark


async def test_sendinitialevents_ends_with_an_annotated_bookmark(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    async with EventStream(
        core.list_node,
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True,
        timeout_seconds=30,
    ) as stream:
        added = await stream.next()
        assert brief(added) == ("ADDED", "n1")
        mark = await stream.next()
        assert mark["type"] == "BOOKMARK"
        assert mark["raw_object"]["metadata"]["annotations"] == {
            "k8s.io/initial-events-end": "true"
        }


async def test_watch_from_a_compacted_resource_version_gets_410(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    old_rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    await core.create_namespaced_pod("default", pod("p1"))
    sim.faults.compact()
    stream = EventStream(
        core.list_namespaced_pod, "default", resource_version=old_rv, timeout_seconds=30
    )
    with pytest.raises(ApiException) as err:
        await stream.next()
    await stream.close()
    assert err.value.status == 410
    assert "too old resource version" in str(err.value.reason)
    # a fresh list gives a version the watch accepts again
    fresh = (await core.list_namespaced_pod("default")).metadata.resource_version
    async with EventStream(
        core.list_namespaced_pod, "default", resource_version=fresh, timeout_seconds=30
    ) as again:
        await core.create_namespaced_pod("default", pod("p2"))
        assert brief((await again.take(1))[0]) == ("ADDED", "p2")


async def test_410_arrives_as_an_error_event_with_a_status(sim: Any) -> None:
    sim.create(pod("p1"))
    sim.faults.compact()
    async with aiohttp.ClientSession() as session:
        url = f"{sim.url}/api/v1/namespaces/default/pods?watch=1&resourceVersion=1"
        async with session.get(url) as resp:
            assert resp.status == 200
            line = await resp.content.readline()
    event = json.loads(line)
    assert event["type"] == "ERROR"
    status = event["object"]
    assert status["kind"] == "Status"
    assert status["code"] == 410
    assert status["reason"] == "Expired"


async def test_history_overflow_also_means_410(make_sim: Any) -> None:
    sim = await make_sim(history_size=3)
    async with await sim.client() as api:
        core = k8s_client.CoreV1Api(api)
        rv = (await core.list_namespaced_pod("default")).metadata.resource_version
        for i in range(5):
            await core.create_namespaced_pod("default", pod(f"p{i}"))
        stream = EventStream(
            core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=30
        )
        with pytest.raises(ApiException) as err:
            await stream.next()
        await stream.close()
        assert err.value.status == 410


async def test_field_selector_watch_delivers_deleted_when_the_pod_is_bound(
    sim: Any, api: Any
) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    await core.create_namespaced_pod("default", pod("other", scheduler="default-scheduler"))
    selector = "spec.schedulerName=pumice,spec.nodeName="
    listed = await core.list_pod_for_all_namespaces(field_selector=selector)
    assert [p.metadata.name for p in listed.items] == ["p1"]
    async with EventStream(
        core.list_pod_for_all_namespaces,
        field_selector=selector,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=30,
    ) as stream:
        status, _ = await bind(api, "p1", "n1")
        assert status == 201
        (event,) = await stream.take(1)
        assert brief(event) == ("DELETED", "p1")
        obj = event["raw_object"]
        # the DELETED event carries the last state that matched, at the new version
        assert obj["spec"].get("nodeName") in (None, "")
        assert int(obj["metadata"]["resourceVersion"]) > int(listed.metadata.resource_version)
        # later changes to the bound pod (Running) are not sent to this watch
        await core.create_namespaced_pod("default", pod("p2"))
        (nxt,) = await stream.take(1)
        assert brief(nxt) == ("ADDED", "p2")


async def test_object_that_starts_matching_arrives_as_added(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    async with EventStream(
        core.list_namespaced_pod,
        "default",
        field_selector="spec.nodeName=n1",
        resource_version=rv,
        timeout_seconds=30,
    ) as stream:
        await bind(api, "p1", "n1")
        first = (await stream.take(1))[0]
        assert brief(first) == ("ADDED", "p1")
        assert first["raw_object"]["spec"]["nodeName"] == "n1"
        running = await stream.until(lambda e: e["raw_object"]["status"].get("phase") == "Running")
        assert running["type"] == "MODIFIED"


async def test_label_selector_watch_and_list(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("a", labels={"app": "x", "tier": "1"}))
    await core.create_namespaced_pod("default", pod("b", labels={"app": "y"}))
    await core.create_namespaced_pod("default", pod("c"))
    names = lambda lst: [p.metadata.name for p in lst.items]  # noqa: E731
    assert names(await core.list_namespaced_pod("default", label_selector="app=x")) == ["a"]
    assert names(await core.list_namespaced_pod("default", label_selector="app!=x")) == ["b", "c"]
    assert names(await core.list_namespaced_pod("default", label_selector="app in (x,y)")) == [
        "a",
        "b",
    ]
    assert names(await core.list_namespaced_pod("default", label_selector="app notin (x)")) == [
        "b",
        "c",
    ]
    assert names(await core.list_namespaced_pod("default", label_selector="app,!tier")) == ["b"]
    assert names(await core.list_namespaced_pod("default", label_selector="tier>0")) == ["a"]
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    async with EventStream(
        core.list_namespaced_pod,
        "default",
        label_selector="app=x",
        resource_version=rv,
        timeout_seconds=30,
    ) as stream:
        await core.patch_namespaced_pod("b", "default", {"metadata": {"labels": {"app": "x"}}})
        await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"app": "z"}}})
        events = await stream.take(2)
        assert [brief(e) for e in events] == [("ADDED", "b"), ("DELETED", "a")]


async def test_bad_selectors_are_400(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    with pytest.raises(ApiException) as err:
        await core.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert err.value.status == 400
    assert "field label not supported: spec.bogus" in err.value.body
    with pytest.raises(ApiException) as err:
        await core.list_namespaced_pod("default", label_selector="a in (b")
    assert err.value.status == 400


async def test_timeout_seconds_ends_the_stream_cleanly(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    rv = (await core.list_node()).metadata.resource_version
    stream = EventStream(core.list_node, resource_version=rv, timeout_seconds=1)
    with pytest.raises(StopAsyncIteration):
        await stream.next(timeout=20)
    await stream.close()


async def test_legacy_watch_path(sim: Any) -> None:
    sim.create(pod("p1"))
    async with aiohttp.ClientSession() as session:
        url = f"{sim.url}/api/v1/watch/namespaces/default/pods/p1?timeoutSeconds=5"
        async with session.get(url) as resp:
            assert resp.status == 200
            line = await asyncio.wait_for(resp.content.readline(), 10)
    event = json.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "p1"


async def test_one_event_is_serialized_once_for_many_watchers(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    streams = [
        EventStream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=30)
        for _ in range(3)
    ]
    try:
        first = [asyncio.ensure_future(s.next()) for s in streams]
        await wait_until(lambda: len(sim.server.hub.watchers) == 3)
        await core.create_namespaced_pod("default", pod("p1"))
        events = await asyncio.gather(*first)
        assert {brief(e) for e in events} == {("ADDED", "p1")}
        (change,) = sim.store.changes_since("/pods", int(rv))
        assert len(change._lines) == 1
    finally:
        for s in streams:
            await s.close()


async def test_non_terminal_pod_watch_drops_a_pod_that_succeeds(sim: Any, api: Any) -> None:
    # kube-scheduler's own informer selector: a pod that finishes leaves it as DELETED
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    selector = "status.phase!=Succeeded,status.phase!=Failed"
    rv = (await core.list_pod_for_all_namespaces(field_selector=selector)).metadata.resource_version
    async with EventStream(
        core.list_pod_for_all_namespaces,
        field_selector=selector,
        resource_version=rv,
        timeout_seconds=30,
    ) as stream:
        await core.create_namespaced_pod(
            "default",
            pod("job", node_name="n1", annotations={"pumice.sim/complete-after": "50ms"}),
        )
        events = []
        while not events or events[-1]["type"] != "DELETED":
            events.append(await stream.next())
    phases = [(e["type"], e["raw_object"]["status"]["phase"]) for e in events]
    # the DELETED event carries the last state that matched (Running)
    assert phases == [("ADDED", "Pending"), ("MODIFIED", "Running"), ("DELETED", "Running")]


async def test_metadata_field_selectors(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    sim.create(pod("a"))
    sim.create(pod("a", namespace="other"))
    sim.create(pod("b", namespace="other"))

    def keys(listed: Any) -> list[tuple[str, str]]:
        return [(p.metadata.namespace, p.metadata.name) for p in listed.items]

    by_name = await core.list_pod_for_all_namespaces(field_selector="metadata.name==a")
    assert keys(by_name) == [("default", "a"), ("other", "a")]
    by_ns = await core.list_pod_for_all_namespaces(field_selector="metadata.namespace=other")
    assert keys(by_ns) == [("other", "a"), ("other", "b")]
    both = await core.list_namespaced_pod("other", field_selector="metadata.name!=a")
    assert keys(both) == [("other", "b")]


async def test_node_status_patch_merges_conditions(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    patched = await core.patch_node_status(
        "n1",
        {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}]}},
    )
    types = sorted(c.type for c in patched.status.conditions)
    assert types == ["MemoryPressure", "Ready"]
    cordoned = await core.patch_node("n1", {"spec": {"unschedulable": True}})
    assert cordoned.spec.unschedulable is True
    listed = await core.list_node(field_selector="spec.unschedulable=true")
    assert [n.metadata.name for n in listed.items] == ["n1"]
