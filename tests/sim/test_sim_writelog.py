"""The write log records every mutating request: time, verb, path, user agent, outcome."""

from __future__ import annotations

import itertools
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s_client

from sim.simkit import bind, node, pod


async def test_every_write_is_logged_and_reads_are_not(sim: Any, api: Any) -> None:
    sim.create(node("n1"))  # direct seeding is not a request
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    await core.read_namespaced_pod("p1", "default")
    await core.list_pod_for_all_namespaces()
    await bind(api, "p1", "n1")
    await bind(api, "p1", "n1")  # 409
    await core.patch_namespaced_pod_status(
        "p1", "default", {"status": {"conditions": [{"type": "Example", "status": "True"}]}}
    )
    await core.delete_namespaced_pod("p1", "default", grace_period_seconds=0)
    entries = list(sim.writes)
    assert [(e.verb, e.method, e.resource, e.code) for e in entries] == [
        ("create", "POST", "pods", 201),
        ("create", "POST", "pods/binding", 201),
        ("create", "POST", "pods/binding", 409),
        ("patch", "PATCH", "pods/status", 200),
        ("delete", "DELETE", "pods", 200),
    ]
    assert entries[1].path == "/api/v1/namespaces/default/pods/p1/binding"
    assert entries[1].namespace == "default"
    assert entries[1].name == "p1"
    assert entries[-1].query == "gracePeriodSeconds=0"
    assert all(e.user_agent.startswith("OpenAPI-Generator/") for e in entries)
    assert all(a.time <= b.time for a, b in itertools.pairwise(entries))
    assert len(sim.writes.select(resource="pods/binding")) == 2
    assert len(sim.writes.select(code=409)) == 1


async def test_faulted_writes_are_logged_too(sim: Any, api: Any) -> None:
    sim.faults.fail(500, verb="create", resource="pods", count=1)
    core = k8s_client.CoreV1Api(api)
    with pytest.raises(k8s_client.ApiException) as err:
        await core.create_namespaced_pod("default", pod("p1"))
    assert err.value.status == 500
    await core.create_namespaced_pod("default", pod("p1"))
    assert [e.code for e in sim.writes] == [500, 201]


async def test_write_log_over_http(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    async with aiohttp.ClientSession(headers={"User-Agent": "tester/1"}) as http:
        async with http.post(
            f"{sim.url}/api/v1/namespaces/default/pods",
            json=pod("p2"),
        ) as resp:
            assert resp.status == 201
        async with http.get(f"{sim.url}/sim/writes") as resp:
            body = await resp.json()
        assert body["total"] == 2
        assert [(i["verb"], i["path"]) for i in body["items"]] == [
            ("create", "/api/v1/namespaces/default/pods"),
            ("create", "/api/v1/namespaces/default/pods"),
        ]
        assert body["items"][1]["user_agent"] == "tester/1"
        async with http.get(f"{sim.url}/sim/writes?since=1") as resp:
            assert len((await resp.json())["items"]) == 1
        async with http.delete(f"{sim.url}/sim/writes") as resp:
            assert resp.status == 200
    assert len(sim.writes) == 0
