"""Pod lifecycle through the real client: KWOK-like Running/Succeeded/Failed transitions,
graceful deletion, force deletion and eviction."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from sim.simkit import EventStream, bind, body_of, brief, node, pod, poll


async def phase_of(core: Any, name: str) -> str | None:
    try:
        return str((await core.read_namespaced_pod(name, "default")).status.phase)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


async def test_completion_annotation_turns_the_pod_succeeded(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    async with EventStream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=30
    ) as stream:
        await core.create_namespaced_pod(
            "default", pod("job", annotations={"pumice.sim/complete-after": "100ms"})
        )
        await bind(api, "job", "n1")
        phases = []
        while not phases or phases[-1] != "Succeeded":
            event = await stream.next()
            phases.append(event["raw_object"]["status"]["phase"])
    # Pending (created) -> Pending (bound) -> Running -> Succeeded, nothing skipped
    assert phases == ["Pending", "Pending", "Running", "Succeeded"]
    done = await core.read_namespaced_pod("job", "default")
    terminated = done.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (0, "Completed")
    ready = {c.type: c.status for c in done.status.conditions}
    assert ready["Ready"] == "False"


async def test_exit_code_annotation_turns_the_pod_failed(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    annotations = {"pumice.sim/complete-after": "0.05", "pumice.sim/exit-code": "3"}
    await core.create_namespaced_pod(
        "default", pod("bad", node_name="n1", annotations=annotations, restartPolicy="Never")
    )

    async def failed() -> bool:
        return await phase_of(core, "bad") == "Failed"

    await poll(failed)
    done = await core.read_namespaced_pod("bad", "default")
    assert done.status.container_statuses[0].state.terminated.exit_code == 3


async def test_graceful_delete_then_removal(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1", node_name="n1"))

    async def running() -> bool:
        return await phase_of(core, "p1") == "Running"

    await poll(running)
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    async with EventStream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=30
    ) as stream:
        deleted = await core.delete_namespaced_pod("p1", "default", grace_period_seconds=20)
        assert deleted.metadata.deletion_timestamp is not None
        assert deleted.metadata.deletion_grace_period_seconds == 20
        events = await stream.take(2)
        assert [brief(e) for e in events] == [("MODIFIED", "p1"), ("DELETED", "p1")]
        # the pod was kept (terminating) until the simulated kubelet let it go
        marked = events[0]["raw_object"]["metadata"]
        assert marked["deletionTimestamp"]
        assert marked["deletionGracePeriodSeconds"] == 20
    assert await phase_of(core, "p1") is None


async def test_unscheduled_pod_is_deleted_at_once(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    await core.delete_namespaced_pod("p1", "default")
    assert await phase_of(core, "p1") is None


async def test_force_delete_of_a_terminating_pod(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    body = pod("p1", node_name="n1")
    body["metadata"]["finalizers"] = []
    await core.create_namespaced_pod("default", body)
    await core.delete_namespaced_pod("p1", "default", grace_period_seconds=600)
    assert (await core.read_namespaced_pod("p1", "default")).metadata.deletion_timestamp
    await core.delete_namespaced_pod("p1", "default", grace_period_seconds=0)
    assert await phase_of(core, "p1") is None


async def test_eviction(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("victim", node_name="n1"))
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "victim", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 5},
    }
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    async with EventStream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=30
    ) as stream:
        resp = await core.create_namespaced_pod_eviction(
            "victim", "default", eviction, _preload_content=False
        )
        assert resp.status == 201
        body = await body_of(resp)
        assert (body["kind"], body["status"]) == ("Status", "Success")
        marked = await stream.until(lambda e: e["raw_object"]["metadata"].get("deletionTimestamp"))
        assert marked["raw_object"]["metadata"]["deletionGracePeriodSeconds"] == 5
        assert brief(await stream.until(lambda e: e["type"] == "DELETED")) == ("DELETED", "victim")
    missing = await core.create_namespaced_pod_eviction(
        "victim", "default", eviction, _preload_content=False
    )
    assert missing.status == 404
    await body_of(missing)


async def test_deleting_a_namespace_removes_its_objects(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespace(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    )
    await core.create_namespaced_pod("team", pod("p1", namespace="team"))
    await core.delete_namespace("team")
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod("p1", "team")
    assert err.value.status == 404
