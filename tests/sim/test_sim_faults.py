"""Every fault knob, observed from the client side (kubernetes_asyncio and plain HTTP)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from sim.simkit import EventStream, bind, brief, node, pod, wait_until


async def test_injected_500s_for_one_kind_of_request(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    sim.faults.fail(500, verb="create", resource="pods/binding", count=2)
    for _ in range(2):
        status, body = await bind(api, "p1", "n1")
        assert status == 500
        assert (body["kind"], body["reason"], body["code"]) == ("Status", "InternalError", 500)
        # other kinds of request are untouched
        assert (await core.read_namespaced_pod("p1", "default")).spec.node_name is None
    status, _ = await bind(api, "p1", "n1")
    assert status == 201
    assert sim.faults.injected == 2


async def test_injected_429_carries_retry_after(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    sim.faults.fail(429, verb="list", resource="pods", retry_after=3)
    with pytest.raises(ApiException) as err:
        await core.list_namespaced_pod("default")
    assert err.value.status == 429
    assert err.value.headers["Retry-After"] == "3"
    body = json.loads(err.value.body)
    assert body["reason"] == "TooManyRequests"
    assert body["details"]["retryAfterSeconds"] == 3
    await core.list_node()  # a different resource is not affected


async def test_a_fraction_of_requests_fails(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    sim.faults.fail(500, fraction=0.5, verb="get", resource="namespaces")
    codes = []
    for _ in range(60):
        try:
            await core.read_namespace("default")
            codes.append(200)
        except ApiException as exc:
            codes.append(exc.status)
    assert set(codes) == {200, 500}
    failures = codes.count(500)
    assert 0 < failures < 60
    assert failures == sim.faults.injected
    sim.faults.clear()
    for _ in range(5):
        await core.read_namespace("default")


async def test_latency(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.read_namespace("default", _request_timeout=5)
    sim.faults.set_latency(3.0)
    with pytest.raises(asyncio.TimeoutError):
        await core.read_namespace("default", _request_timeout=0.05)
    sim.faults.set_latency(0)
    await core.read_namespace("default", _request_timeout=5)


async def test_close_every_watch_now(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    rv = (await core.list_node()).metadata.resource_version
    stream = EventStream(core.list_node, resource_version=rv, timeout_seconds=300)
    pending = asyncio.ensure_future(stream.next(timeout=20))
    await wait_until(lambda: len(sim.server.hub.watchers) == 1)
    assert sim.faults.close_watches() == 1
    with pytest.raises(StopAsyncIteration):
        await pending  # a clean end of stream, as when the server's timeout expires
    await stream.close()


async def test_close_watches_every_n_seconds(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    sim.faults.set_watch_close_interval(0.2)
    for _ in range(2):  # each new watch is ended again
        rv = (await core.list_node()).metadata.resource_version
        stream = EventStream(core.list_node, resource_version=rv, timeout_seconds=300)
        with pytest.raises(StopAsyncIteration):
            await stream.next(timeout=20)
        await stream.close()


async def test_compaction_makes_old_versions_gone(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    rv = (await core.list_node()).metadata.resource_version
    sim.create(node("n1"))
    sim.faults.compact()
    stream = EventStream(core.list_node, resource_version=rv, timeout_seconds=30)
    with pytest.raises(ApiException) as err:
        await stream.next()
    await stream.close()
    assert err.value.status == 410


async def test_restart_drops_connections_and_refuses_new_ones_for_a_while(
    sim: Any, api: Any
) -> None:
    core = k8s_client.CoreV1Api(api)
    rv = (await core.list_node()).metadata.resource_version
    stream = EventStream(core.list_node, resource_version=rv, timeout_seconds=300)
    pending = asyncio.ensure_future(stream.next(timeout=20))
    await wait_until(lambda: len(sim.server.hub.watchers) == 1)
    restart = asyncio.ensure_future(sim.faults.restart(downtime=1.0))
    # the open watch is cut off, not ended cleanly
    with pytest.raises(aiohttp.ClientError):
        await pending
    await stream.close()
    await wait_until(lambda: sim.server._site is None)
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"{sim.url}/version")
    await restart
    async with await sim.client() as fresh:
        nodes = await k8s_client.CoreV1Api(fresh).list_node()
        assert nodes.metadata.resource_version == rv  # the data survived the restart


async def test_admin_endpoint_controls_the_same_knobs(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    sim.create(node("n1"))
    await core.create_namespaced_pod("default", pod("p1"))
    async with aiohttp.ClientSession() as http:
        rule = {
            "code": 503,
            "fraction": 1.0,
            "verb": "create",
            "resource": "pods/binding",
            "count": 1,
        }
        async with http.put(f"{sim.url}/sim/faults", json={"errors": [rule], "latency": 0}) as r:
            assert r.status == 200
            assert (await r.json())["errors"][0]["code"] == 503
        assert (await bind(api, "p1", "n1"))[0] == 503
        assert (await bind(api, "p1", "n1"))[0] == 201
        async with http.get(f"{sim.url}/sim/faults") as r:
            assert (await r.json())["injected"] == 1

        rv = (await core.list_node()).metadata.resource_version
        stream = EventStream(core.list_node, resource_version=rv, timeout_seconds=300)
        pending = asyncio.ensure_future(stream.next(timeout=20))
        await wait_until(lambda: len(sim.server.hub.watchers) == 1)
        async with http.post(f"{sim.url}/sim/faults/close-watches") as r:
            assert (await r.json()) == {"closed": 1}
        with pytest.raises(StopAsyncIteration):
            await pending
        await stream.close()

        sim.create(node("n2"))
        async with http.post(f"{sim.url}/sim/faults/compact") as r:
            compacted = (await r.json())["resourceVersion"]
        stream = EventStream(core.list_node, resource_version=rv, timeout_seconds=30)
        with pytest.raises(ApiException) as err:
            await stream.next()
        await stream.close()
        assert err.value.status == 410
        assert int(compacted) > int(rv)

        async with http.put(f"{sim.url}/sim/faults", json={"watchCloseInterval": 0.2}) as r:
            assert (await r.json())["watchCloseInterval"] == 0.2
        stream = EventStream(core.list_node, resource_version=compacted, timeout_seconds=300)
        with pytest.raises(StopAsyncIteration):
            await stream.next()
        await stream.close()
        async with http.delete(f"{sim.url}/sim/faults") as r:
            assert (await r.json())["watchCloseInterval"] is None

        async with http.post(f"{sim.url}/sim/faults/restart") as r:
            assert r.status == 200
            assert "dropped" in await r.json()
        async with http.put(f"{sim.url}/sim/faults", json={"errors": [{"code": 200}]}) as r:
            assert r.status == 400
        async with http.get(f"{sim.url}/sim/state") as r:
            state = await r.json()
            assert state["objects"]["pods"] == 1


async def test_restart_via_admin_cuts_watches(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    rv = (await core.list_node()).metadata.resource_version
    async with EventStream(core.list_node, resource_version=rv, timeout_seconds=300) as stream:
        pending = asyncio.ensure_future(stream.next(timeout=20))
        await wait_until(lambda: len(sim.server.hub.watchers) == 1)
        async with aiohttp.ClientSession() as http, http.post(f"{sim.url}/sim/faults/restart") as r:
            assert (await r.json())["dropped"] >= 1
        with pytest.raises(aiohttp.ClientError):
            await pending
    sim.create(node("n2"))
    async with await sim.client() as fresh:
        fresh_core = k8s_client.CoreV1Api(fresh)
        async with EventStream(
            fresh_core.list_node, resource_version=rv, timeout_seconds=30
        ) as again:
            assert brief((await again.take(1))[0]) == ("ADDED", "n2")
