"""Binding through the real client: 201 with a Status, then 409; 404; UID preconditions."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k8s_client

from sim.simkit import bind, binding, body_of, node, pod, poll


async def test_bind_returns_201_with_a_status_then_409(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    sim.create(node("n2"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    status, body = await bind(api, "p1", "n1")
    assert status == 201
    assert body["kind"] == "Status"
    assert body["status"] == "Success"
    bound = await core.read_namespaced_pod("p1", "default")
    assert bound.spec.node_name == "n1"
    scheduled = [c for c in bound.status.conditions if c.type == "PodScheduled"]
    assert [(c.status, c.last_transition_time is not None) for c in scheduled] == [("True", True)]

    status, status_body = await bind(api, "p1", "n2")
    assert status == 409
    assert status_body["code"] == 409
    assert status_body["kind"] == "Status"
    assert status_body["reason"] == "Conflict"
    assert status_body["message"] == (
        'Operation cannot be fulfilled on pods/binding "p1": '
        'pod p1 is already assigned to node "n1"'
    )
    assert status_body["details"] == {"name": "p1", "kind": "pods/binding"}
    assert (await core.read_namespaced_pod("p1", "default")).spec.node_name == "n1"


async def test_binding_a_missing_pod_is_404(api: Any) -> None:
    status, body = await bind(api, "ghost", "n1")
    assert status == 404
    assert body["reason"] == "NotFound"
    assert body["message"] == 'pods "ghost" not found'


async def test_uid_precondition_mismatch_is_409(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    old = await core.create_namespaced_pod("default", pod("p1"))
    await core.delete_namespaced_pod("p1", "default")
    await core.create_namespaced_pod("default", pod("p1"))  # same name, new uid
    status, body = await bind(api, "p1", "n1", uid=old.metadata.uid)
    assert status == 409
    assert body["reason"] == "Conflict"
    assert "Precondition failed: UID in precondition" in body["message"]
    fresh = await core.read_namespaced_pod("p1", "default")
    assert fresh.spec.node_name is None
    status, _ = await bind(api, "p1", "n1", uid=fresh.metadata.uid)
    assert status == 201


async def test_binding_a_gated_or_terminating_pod_is_409(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    gated = pod("gated", schedulingGates=[{"name": "example.com/wait"}])
    created = await core.create_namespaced_pod("default", gated)
    cond = {c.type: (c.status, c.reason) for c in created.status.conditions}
    assert cond["PodScheduled"] == ("False", "SchedulingGated")
    status, body = await bind(api, "gated", "n1")
    assert status == 409
    assert "non-empty .spec.schedulingGates" in body["message"]
    sim.create(
        {
            **pod("dying"),
            "metadata": {
                "name": "dying",
                "namespace": "default",
                "finalizers": ["example.com/hold"],
            },
        }
    )
    await core.delete_namespaced_pod("dying", "default")
    status, body = await bind(api, "dying", "n1")
    assert status == 409
    assert "is being deleted, cannot be assigned to a host" in body["message"]


async def test_binding_name_mismatch_is_400_and_dry_run_persists_nothing(
    sim: Any, api: Any
) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    mismatch = await core.create_namespaced_pod_binding(
        "p1", "default", binding("p2", "n1"), _preload_content=False
    )
    assert mismatch.status == 400
    assert (await body_of(mismatch))["reason"] == "BadRequest"
    resp = await core.create_namespaced_pod_binding(
        "p1", "default", binding("p1", "n1"), dry_run="All", _preload_content=False
    )
    assert resp.status == 201
    await body_of(resp)
    assert (await core.read_namespaced_pod("p1", "default")).spec.node_name is None


async def test_legacy_bindings_collection(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    resp = await core.create_namespaced_binding(
        "default", binding("p1", "n1"), _preload_content=False
    )
    assert resp.status == 201
    assert (await body_of(resp))["status"] == "Success"
    assert (await core.read_namespaced_pod("p1", "default")).spec.node_name == "n1"


async def test_bound_pod_on_a_node_turns_running(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    await bind(api, "p1", "n1")
    seen: list[Any] = []

    async def running() -> bool:
        seen.append(await core.read_namespaced_pod("p1", "default"))
        return bool(seen[-1].status.phase == "Running")

    await poll(running)
    pod_now = seen[-1]
    assert pod_now.status.pod_ip
    assert pod_now.status.host_ip
    assert pod_now.status.start_time is not None
    assert pod_now.status.container_statuses[0].ready is True
    ready = {c.type: c.status for c in pod_now.status.conditions}
    assert ready["Ready"] == "True"
    assert ready["PodScheduled"] == "True"


async def test_pod_bound_to_a_missing_node_stays_pending(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    assert (await bind(api, "p1", "nowhere"))[0] == 201
    # a node appearing later lets its (simulated) kubelet start the pod
    assert (await core.read_namespaced_pod("p1", "default")).status.phase == "Pending"
    sim.create(node("nowhere"))

    async def running() -> bool:
        return bool((await core.read_namespaced_pod("p1", "default")).status.phase == "Running")

    await poll(running)
