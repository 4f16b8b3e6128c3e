"""Create/read/update/patch/delete semantics through the real client: generateName,
optimistic concurrency, limit/continue, status subresources, patch formats and Status errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from sim.simkit import node, pod

VOLCANO = ("scheduling.volcano.sh", "v1beta1")


def status_of(err: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(err.value.body)
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == err.value.status
    return body


def lease(name: str, holder: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
    }


async def test_generate_name(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    body = pod("ignored")
    body["metadata"] = {"generateName": "job-", "namespace": "default"}
    first = await core.create_namespaced_pod("default", body)
    second = await core.create_namespaced_pod("default", body)
    for created in (first, second):
        assert created.metadata.name.startswith("job-")
        assert len(created.metadata.name) == len("job-") + 5
        assert created.metadata.generate_name == "job-"
    assert first.metadata.name != second.metadata.name
    assert first.metadata.uid != second.metadata.uid
    assert first.metadata.creation_timestamp is not None


async def test_lease_create_then_update_conflicts_on_a_stale_resource_version(api: Any) -> None:
    coord = k8s_client.CoordinationV1Api(api)
    created = await coord.create_namespaced_lease("kube-system", lease("pumice", "a"))
    with pytest.raises(ApiException) as err:
        await coord.create_namespaced_lease("kube-system", lease("pumice", "b"))
    assert err.value.status == 409
    assert status_of(err)["reason"] == "AlreadyExists"
    assert status_of(err)["message"] == 'leases.coordination.k8s.io "pumice" already exists'

    stale = created
    renewed = await coord.read_namespaced_lease("pumice", "kube-system")
    renewed.spec.holder_identity = "a"
    renewed.spec.lease_transitions = 1
    updated = await coord.replace_namespaced_lease("pumice", "kube-system", renewed)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)

    stale.spec.holder_identity = "b"
    with pytest.raises(ApiException) as err:
        await coord.replace_namespaced_lease("pumice", "kube-system", stale)
    assert err.value.status == 409
    body = status_of(err)
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on leases.coordination.k8s.io "pumice": the object has '
        "been modified; please apply your changes to the latest version and try again"
    )
    assert body["details"] == {"name": "pumice", "group": "coordination.k8s.io", "kind": "leases"}
    assert (await coord.read_namespaced_lease("pumice", "kube-system")).spec.holder_identity == "a"


async def test_a_no_op_update_keeps_the_resource_version(api: Any) -> None:
    coord = k8s_client.CoordinationV1Api(api)
    created = await coord.create_namespaced_lease("kube-system", lease("l", "a"))
    same = await coord.replace_namespaced_lease("l", "kube-system", created)
    assert same.metadata.resource_version == created.metadata.resource_version


async def test_limit_and_continue_give_a_consistent_list(sim: Any, api: Any) -> None:
    for i in range(7):
        sim.create(node(f"n{i}"))
    core = k8s_client.CoreV1Api(api)
    page = await core.list_node(limit=3)
    names = [n.metadata.name for n in page.items]
    assert names == ["n0", "n1", "n2"]
    assert page.metadata.remaining_item_count == 4
    rv = page.metadata.resource_version
    sim.create(node("n00"))  # created after the first page: not in this list
    seen = list(names)
    token = page.metadata._continue
    while token:
        page = await core.list_node(limit=3, _continue=token)
        assert page.metadata.resource_version == rv
        seen += [n.metadata.name for n in page.items]
        token = page.metadata._continue
    assert seen == [f"n{i}" for i in range(7)]
    sim.faults.compact()
    first = await core.list_node(limit=2)
    sim.create(node("late"))
    sim.faults.compact()
    with pytest.raises(ApiException) as err:
        await core.list_node(limit=2, _continue=first.metadata._continue)
    assert err.value.status == 410
    assert status_of(err)["reason"] == "Expired"


async def test_exact_list_at_an_old_version(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    sim.create(node("a"))
    rv = (await core.list_node()).metadata.resource_version
    sim.create(node("b"))
    old = await core.list_node(resource_version=rv, resource_version_match="Exact")
    assert [n.metadata.name for n in old.items] == ["a"]
    sim.faults.compact()
    with pytest.raises(ApiException) as err:
        await core.list_node(resource_version=rv, resource_version_match="Exact")
    assert err.value.status == 410


async def test_status_subresource_split(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    # a main-resource patch cannot change status ...
    patched = await core.patch_namespaced_pod(
        "p1", "default", {"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Failed"}}
    )
    assert patched.status.phase == "Pending"
    assert patched.metadata.labels == {"a": "b"}
    # ... and a status patch cannot change the spec
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 Insufficient cpu.",
    }
    patched = await core.patch_namespaced_pod_status(
        "p1",
        "default",
        {"spec": {"nodeName": "n1"}, "status": {"conditions": [condition]}},
    )
    assert patched.spec.node_name is None
    conditions = {c.type: (c.status, c.reason) for c in patched.status.conditions}
    assert conditions["PodScheduled"] == ("False", "Unschedulable")


async def test_strategic_merge_keeps_other_conditions(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1", node_name="n1"))
    from sim.simkit import poll

    async def running() -> bool:
        return bool((await core.read_namespaced_pod("p1", "default")).status.phase == "Running")

    await poll(running)
    before = await core.read_namespaced_pod("p1", "default")
    count = len(before.status.conditions)
    patched = await core.patch_namespaced_pod_status(
        "p1", "default", {"status": {"conditions": [{"type": "Example", "status": "True"}]}}
    )
    assert len(patched.status.conditions) == count + 1  # merged by "type", not replaced
    merged = await core.patch_namespaced_pod_status(
        "p1",
        "default",
        {"status": {"conditions": [{"type": "Example", "status": "False"}]}},
        _content_type="application/merge-patch+json",
    )
    assert [c.type for c in merged.status.conditions] == ["Example"]  # merge patch replaces


async def test_json_patch_and_its_errors(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    patched = await core.patch_namespaced_pod(
        "p1", "default", [{"op": "add", "path": "/metadata/labels", "value": {"x": "1"}}]
    )
    assert patched.metadata.labels == {"x": "1"}
    with pytest.raises(ApiException) as err:
        await core.patch_namespaced_pod(
            "p1", "default", [{"op": "test", "path": "/metadata/labels/x", "value": "2"}]
        )
    assert err.value.status == 422


async def test_volcano_objects_and_their_patch_formats(sim: Any, api: Any) -> None:
    custom = k8s_client.CustomObjectsApi(api)
    group, version = VOLCANO
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg1", "namespace": "default"},
        "spec": {"minMember": 2, "queue": "default"},
    }
    created = await custom.create_namespaced_custom_object(
        group, version, "default", "podgroups", pg
    )
    assert created["metadata"]["generation"] == 1
    queues = await custom.list_cluster_custom_object(group, version, "queues")
    assert [q["metadata"]["name"] for q in queues["items"]] == ["default"]
    assert queues["items"][0]["status"]["state"] == "Open"
    # a dict body becomes a JSON patch in kubernetes_asyncio unless told otherwise: the real
    # server rejects it, and so does the simulation
    with pytest.raises(ApiException) as err:
        await custom.patch_namespaced_custom_object_status(
            group, version, "default", "podgroups", "pg1", {"status": {"phase": "Inqueue"}}
        )
    assert err.value.status == 400
    patched = await custom.patch_namespaced_custom_object_status(
        group,
        version,
        "default",
        "podgroups",
        "pg1",
        {"status": {"phase": "Inqueue"}},
        _content_type="application/merge-patch+json",
    )
    assert patched["status"] == {"phase": "Inqueue"}
    assert patched["metadata"]["generation"] == 1
    spec_change = await custom.patch_namespaced_custom_object(
        group,
        version,
        "default",
        "podgroups",
        "pg1",
        {"spec": {"minMember": 3}},
        _content_type="application/merge-patch+json",
    )
    assert spec_change["metadata"]["generation"] == 2
    assert spec_change["status"] == {"phase": "Inqueue"}
    with pytest.raises(ApiException) as err:
        await custom.patch_namespaced_custom_object(
            group,
            version,
            "default",
            "podgroups",
            "pg1",
            {"spec": {"minMember": 4}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert err.value.status == 415
    assert status_of(err)["reason"] == "UnsupportedMediaType"


async def test_error_statuses(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod("nope", "default")
    assert err.value.status == 404
    assert status_of(err) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "pods"},
        "code": 404,
    }
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("missing-ns", pod("p", namespace="missing-ns"))
    assert err.value.status == 404
    assert status_of(err)["message"] == 'namespaces "missing-ns" not found'
    bad = pod("Bad_Name")
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("default", bad)
    assert err.value.status == 422
    body = status_of(err)
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    no_containers = pod("empty")
    no_containers["spec"]["containers"] = []
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("default", no_containers)
    assert status_of(err)["message"] == 'Pod "empty" is invalid: spec.containers: Required value'
    other_ns = pod("x", namespace="kube-system")
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("default", other_ns)
    assert err.value.status == 400


async def test_pod_spec_is_immutable_except_allowed_fields(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("p1"))
    with pytest.raises(ApiException) as err:
        await core.patch_namespaced_pod("p1", "default", {"spec": {"schedulerName": "other"}})
    assert err.value.status == 422
    assert "pod updates may not change fields" in status_of(err)["message"]
    patched = await core.patch_namespaced_pod(
        "p1", "default", {"spec": {"activeDeadlineSeconds": 60}}
    )
    assert patched.spec.active_deadline_seconds == 60


async def test_pod_defaults_and_priority_admission(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    sched = k8s_client.SchedulingV1Api(api)
    await sched.create_priority_class(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    body = pod("p1", priorityClassName="high")
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    created = await core.create_namespaced_pod("default", body)
    assert created.spec.priority == 1000
    assert created.spec.preemption_policy == "PreemptLowerPriority"
    assert created.spec.containers[0].resources.requests == {"cpu": "1", "memory": "1Gi"}
    assert created.status.qos_class == "Guaranteed"
    assert created.status.phase == "Pending"
    plain = await core.create_namespaced_pod("default", pod("p2", scheduler=""))
    assert plain.spec.scheduler_name == "default-scheduler"
    assert plain.spec.priority == 0
    assert plain.spec.termination_grace_period_seconds == 30
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("default", pod("p3", priorityClassName="nope"))
    assert err.value.status == 403
    assert "no PriorityClass with name nope was found" in status_of(err)["message"]


async def test_unknown_paths_and_methods(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    with pytest.raises(ApiException) as err:
        await core.list_namespaced_config_map("default")
    assert err.value.status == 404
    assert status_of(err)["message"] == "the server could not find the requested resource"


async def test_delete_preconditions_and_finalizers(sim: Any, api: Any) -> None:
    coord = k8s_client.CoordinationV1Api(api)
    body = lease("held", "a")
    body["metadata"]["finalizers"] = ["example.com/keep"]
    created = await coord.create_namespaced_lease("kube-system", body)
    with pytest.raises(ApiException) as err:
        await coord.delete_namespaced_lease(
            "held", "kube-system", body={"preconditions": {"uid": "not-the-uid"}}
        )
    assert err.value.status == 409
    await coord.delete_namespaced_lease(
        "held", "kube-system", body={"preconditions": {"uid": created.metadata.uid}}
    )
    marked = await coord.read_namespaced_lease("held", "kube-system")
    assert marked.metadata.deletion_timestamp is not None
    await coord.patch_namespaced_lease(
        "held",
        "kube-system",
        {"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )
    with pytest.raises(ApiException) as err:
        await coord.read_namespaced_lease("held", "kube-system")
    assert err.value.status == 404


async def test_create_assigns_identity_and_drops_status(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    body = pod("p1")
    body["metadata"]["uid"] = "11111111-1111-4111-8111-111111111111"
    body["status"] = {"phase": "Running", "podIP": "1.2.3.4"}
    created = await core.create_namespaced_pod("default", body)
    assert created.metadata.uid != body["metadata"]["uid"]
    assert created.status.phase == "Pending"
    assert created.status.pod_ip is None


async def test_delete_collection_with_a_label_selector(api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("a", labels={"batch": "1"}))
    await core.create_namespaced_pod("default", pod("b", labels={"batch": "1"}))
    await core.create_namespaced_pod("default", pod("c"))
    await core.delete_collection_namespaced_pod("default", label_selector="batch=1")
    left = await core.list_namespaced_pod("default")
    assert [p.metadata.name for p in left.items] == ["c"]
