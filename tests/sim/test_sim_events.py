"""Events: one object seen through core v1 and events.k8s.io/v1, with the real validation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from sim.simkit import EventStream, pod


def new_event(name: str, **overrides: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "pumice",
        "reportingInstance": "pumice-host",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "type": "Warning",
        "note": "0/3 nodes are available: 3 Insufficient cpu.",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "p1", "namespace": "default"},
    }
    body.update(overrides)
    return body


async def test_an_events_v1_event_is_a_core_event(sim: Any, api: Any) -> None:
    events = k8s_client.EventsV1Api(api)
    core = k8s_client.CoreV1Api(api)
    created = await events.create_namespaced_event("default", new_event("p1.1"))
    assert created.regarding.name == "p1"
    as_core = await core.read_namespaced_event("p1.1", "default")
    assert as_core.involved_object.name == "p1"
    assert as_core.message == "0/3 nodes are available: 3 Insufficient cpu."
    assert as_core.reporting_component == "pumice"
    assert as_core.metadata.resource_version == created.metadata.resource_version
    selected = await core.list_namespaced_event(
        "default", field_selector="involvedObject.name=p1,reason=FailedScheduling"
    )
    assert [e.metadata.name for e in selected.items] == ["p1.1"]
    by_regarding = await events.list_namespaced_event("default", field_selector="regarding.name=p1")
    assert [e.metadata.name for e in by_regarding.items] == ["p1.1"]


async def test_patching_a_series_through_events_v1(api: Any) -> None:
    events = k8s_client.EventsV1Api(api)
    core = k8s_client.CoreV1Api(api)
    await events.create_namespaced_event("default", new_event("p1.2"))
    series = {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:10.000000Z"}}
    patched = await events.patch_namespaced_event(
        "p1.2", "default", series, _content_type="application/merge-patch+json"
    )
    assert patched.series.count == 2
    assert (await core.read_namespaced_event("p1.2", "default")).series.count == 2


async def test_events_v1_validation(api: Any) -> None:
    events = k8s_client.EventsV1Api(api)
    bad = new_event("bad", type="Fatal")
    del bad["eventTime"]
    with pytest.raises(ApiException) as err:
        await events.create_namespaced_event("default", bad)
    assert err.value.status == 422
    body = json.loads(err.value.body)
    assert body["reason"] == "Invalid"
    fields = {c["field"] for c in body["details"]["causes"]}
    assert fields == {"eventTime", "type"}
    too_long = new_event("long", note="x" * 1025)
    with pytest.raises(ApiException) as err:
        await events.create_namespaced_event("default", too_long)
    assert err.value.status == 422


async def test_event_watch_through_both_groups(sim: Any, api: Any) -> None:
    events = k8s_client.EventsV1Api(api)
    core = k8s_client.CoreV1Api(api)
    sim.create(pod("p1"))
    rv = (await core.list_namespaced_event("default")).metadata.resource_version
    async with (
        EventStream(
            events.list_namespaced_event, "default", resource_version=rv, timeout_seconds=30
        ) as v1,
        EventStream(
            core.list_namespaced_event, "default", resource_version=rv, timeout_seconds=30
        ) as legacy,
    ):
        await events.create_namespaced_event("default", new_event("p1.3"))
        (a,) = await v1.take(1)
        (b,) = await legacy.take(1)
    assert a["raw_object"]["apiVersion"] == "events.k8s.io/v1"
    assert a["raw_object"]["note"] == b["raw_object"]["message"]
    assert b["raw_object"]["apiVersion"] == "v1"
    assert b["raw_object"]["involvedObject"]["name"] == "p1"
