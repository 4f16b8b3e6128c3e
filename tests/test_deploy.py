"""conf/deploy: the manifests load, the Deployment and its config agree (two replicas, leader
election, probes on the health port, every interface), and the RBAC is least privilege — each
request pumice.kube makes is allowed under pumice's ServiceAccount (through the real client,
against the sim with --authorization rbac), every grant is used, a request outside them is
refused, and removing any one grant refuses exactly the request that needs it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException
from sim.simkit import binding, node, pod
from sim.volumekit import claim, volume

from pumice.cli import main
from pumice.framework.configfile import parse_config
from pumice.kube.rest import PODGROUPS, QUEUES
from pumice.manifests import load_manifests
from support.deploy_rbac import (
    DEPLOY,
    PUMICE_ACCOUNT,
    Grant,
    grants,
    rbac_objects,
    run_as_pumice,
    start_rbac_sim,
    without_grant,
)

MERGE = "application/merge-patch+json"
VOLCANO = ("scheduling.volcano.sh", "v1beta1")


def deploy() -> Any:
    return load_manifests(*sorted(DEPLOY.glob("*.yaml")))


def test_every_manifest_loads() -> None:
    manifests = deploy()
    assert {kind: len(manifests.kind(kind)) for kind in manifests.by_kind} == {
        "ServiceAccount": 1,
        "ClusterRole": 1,
        "ClusterRoleBinding": 1,
        "Role": 1,
        "RoleBinding": 1,
        "ConfigMap": 1,
        "Deployment": 1,
        "CustomResourceDefinition": 2,
    }


def test_the_deployment_runs_two_replicas_with_leader_election_and_probes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests = deploy()
    (deployment,) = manifests.kind("Deployment")
    (config_map,) = manifests.kind("ConfigMap")
    (account,) = manifests.kind("ServiceAccount")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod_spec = spec["template"]["spec"]
    assert pod_spec["serviceAccountName"] == account["metadata"]["name"]
    assert deployment["metadata"]["namespace"] == account["metadata"]["namespace"]
    assert pod_spec.get("schedulerName", "default-scheduler") == "default-scheduler"
    (container,) = pod_spec["containers"]
    args = container["args"]
    assert args[0] == "run" and "--leader-elect" in args
    assert args[args.index("--http-address") + 1] == "0.0.0.0:11251"
    assert container["livenessProbe"]["httpGet"] == {"path": "/livez", "port": 11251}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 11251}
    # the mounted config is valid, and says the same as the flags
    mount = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["config"]
    assert args[args.index("--config") + 1] == f"{mount}/scheduler.yaml"
    text = config_map["data"]["scheduler.yaml"]
    path = tmp_path / "scheduler.yaml"
    path.write_text(text)
    assert main(["check-config", str(path)]) == 0
    assert capsys.readouterr().err == ""  # not even a warning
    settings = parse_config(text).scheduler
    assert settings.http_address == "0.0.0.0:11251"
    assert settings.leader_election.enabled
    (role,) = manifests.kind("Role")
    assert settings.leader_election.lease_namespace == role["metadata"]["namespace"]


def test_the_crds_define_the_kinds_pumice_reads() -> None:
    crds = {
        c["spec"]["names"]["kind"]: c["spec"] for c in deploy().kind("CustomResourceDefinition")
    }
    for kind in (PODGROUPS, QUEUES):
        spec = crds[kind.kind]
        assert spec["group"] == kind.group and spec["names"]["plural"] == kind.plural
        assert spec["scope"] == ("Namespaced" if kind.namespaced else "Cluster")
        (version,) = spec["versions"]
        assert version["name"] == kind.version and version["subresources"] == {"status": {}}


# -- RBAC ----------------------------------------------------------------------------------

Operation = tuple[str, Grant, Callable[[k8s_client.ApiClient], Awaitable[Any]]]


def _core(api: k8s_client.ApiClient) -> k8s_client.CoreV1Api:
    return k8s_client.CoreV1Api(api)


def _custom(api: k8s_client.ApiClient) -> k8s_client.CustomObjectsApi:
    return k8s_client.CustomObjectsApi(api)


def _watch(call: Callable[..., Awaitable[Any]], *args: Any) -> Awaitable[Any]:
    return call(*args, watch=True, timeout_seconds=1, _preload_content=False)


def _list_and_watch(resource: str, method: str) -> list[Operation]:
    """Listing and watching a storage kind, as its informer does."""
    group = "" if resource.startswith("persistentvolume") else "storage.k8s.io"

    def lister(a: k8s_client.ApiClient) -> Callable[..., Awaitable[Any]]:
        api = _core(a) if not group else k8s_client.StorageV1Api(a)
        return getattr(api, method)  # type: ignore[no-any-return]

    return [
        (f"list {resource}", (group, resource, "list"), lambda a: lister(a)()),
        (f"watch {resource}", (group, resource, "watch"), lambda a: _watch(lister(a))),
    ]


def core_event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web"},
        "reason": "Scheduled",
        "message": "Successfully assigned default/web to n1",
        "type": "Normal",
        "source": {"component": "pumice"},
    }


def new_event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "pumice",
        "reportingInstance": "pumice-0",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "type": "Warning",
        "note": "0/1 nodes are available: 1 Insufficient cpu.",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "default"},
    }


LEASE = {
    "apiVersion": "coordination.k8s.io/v1",
    "kind": "Lease",
    "metadata": {"name": "pumice", "namespace": "kube-system"},
    "spec": {"holderIdentity": "pumice-0", "leaseDurationSeconds": 15},
}
CONDITION = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
SERIES = {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:10.000000Z"}}


async def _renew_lease(api: k8s_client.ApiClient) -> Any:
    coord = k8s_client.CoordinationV1Api(api)
    lease = await coord.read_namespaced_lease("pumice", "kube-system")
    lease.spec.holder_identity = "pumice-1"
    return await coord.replace_namespaced_lease("pumice", "kube-system", lease)


# Every request pumice.kube sends, with the grant it needs, in an order that works (the lease
# is created before it is read, an event before it is patched).
OPERATIONS: list[Operation] = [
    ("list nodes", ("", "nodes", "list"), lambda a: _core(a).list_node()),
    ("watch nodes", ("", "nodes", "watch"), lambda a: _watch(_core(a).list_node)),
    ("list namespaces", ("", "namespaces", "list"), lambda a: _core(a).list_namespace()),
    (
        "watch namespaces",
        ("", "namespaces", "watch"),
        lambda a: _watch(_core(a).list_namespace),
    ),
    ("list pods", ("", "pods", "list"), lambda a: _core(a).list_pod_for_all_namespaces()),
    (
        "watch pods",
        ("", "pods", "watch"),
        lambda a: _watch(_core(a).list_pod_for_all_namespaces),
    ),
    ("get a pod", ("", "pods", "get"), lambda a: _core(a).read_namespaced_pod("web", "default")),
    (
        "bind a pod",
        ("", "pods/binding", "create"),
        lambda a: _core(a).create_namespaced_pod_binding(
            "web", "default", binding("web", "n1"), _preload_content=False
        ),
    ),
    (
        "write a pod's condition",
        ("", "pods/status", "patch"),
        lambda a: _core(a).patch_namespaced_pod_status(
            "web", "default", {"status": {"conditions": [CONDITION]}}, _content_type=MERGE
        ),
    ),
    (
        "evict a pod",
        ("", "pods/eviction", "create"),
        lambda a: _core(a).create_namespaced_pod_eviction(
            "victim",
            "default",
            {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "victim"}},
            _preload_content=False,
        ),
    ),
    (
        "create a core event",
        ("", "events", "create"),
        lambda a: _core(a).create_namespaced_event("default", core_event("web.1")),
    ),
    (
        "patch a core event",
        ("", "events", "patch"),
        lambda a: _core(a).patch_namespaced_event(
            "web.1", "default", {"count": 2}, _content_type=MERGE
        ),
    ),
    (
        "create an events.k8s.io event",
        ("events.k8s.io", "events", "create"),
        lambda a: k8s_client.EventsV1Api(a).create_namespaced_event("default", new_event("web.2")),
    ),
    (
        "patch an events.k8s.io event",
        ("events.k8s.io", "events", "patch"),
        lambda a: k8s_client.EventsV1Api(a).patch_namespaced_event(
            "web.2", "default", SERIES, _content_type=MERGE
        ),
    ),
    (
        "list podgroups",
        ("scheduling.volcano.sh", "podgroups", "list"),
        lambda a: _custom(a).list_cluster_custom_object(*VOLCANO, "podgroups"),
    ),
    (
        "watch podgroups",
        ("scheduling.volcano.sh", "podgroups", "watch"),
        lambda a: _watch(_custom(a).list_cluster_custom_object, *VOLCANO, "podgroups"),
    ),
    (
        "write a podgroup's status",
        ("scheduling.volcano.sh", "podgroups/status", "patch"),
        lambda a: _custom(a).patch_namespaced_custom_object_status(
            *VOLCANO,
            "default",
            "podgroups",
            "pg1",
            {"status": {"phase": "Inqueue"}},
            _content_type=MERGE,
        ),
    ),
    (
        "list queues",
        ("scheduling.volcano.sh", "queues", "list"),
        lambda a: _custom(a).list_cluster_custom_object(*VOLCANO, "queues"),
    ),
    (
        "watch queues",
        ("scheduling.volcano.sh", "queues", "watch"),
        lambda a: _watch(_custom(a).list_cluster_custom_object, *VOLCANO, "queues"),
    ),
    (
        "write a queue's status",
        ("scheduling.volcano.sh", "queues/status", "patch"),
        lambda a: _custom(a).patch_cluster_custom_object_status(
            *VOLCANO,
            "queues",
            "default",
            {"status": {"allocated": {"cpu": "1"}}},
            _content_type=MERGE,
        ),
    ),
    (
        "list priority classes",
        ("scheduling.k8s.io", "priorityclasses", "list"),
        lambda a: k8s_client.SchedulingV1Api(a).list_priority_class(),
    ),
    (
        "watch priority classes",
        ("scheduling.k8s.io", "priorityclasses", "watch"),
        lambda a: _watch(k8s_client.SchedulingV1Api(a).list_priority_class),
    ),
    (
        "pre-bind a volume to a claim",
        ("", "persistentvolumes", "patch"),
        lambda a: _core(a).patch_persistent_volume(
            "pv1",
            {"spec": {"claimRef": {"namespace": "default", "name": "data"}}},
            _content_type=MERGE,
        ),
    ),
    (
        "select a claim's node",
        ("", "persistentvolumeclaims", "patch"),
        lambda a: _core(a).patch_namespaced_persistent_volume_claim(
            "data",
            "default",
            {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}},
            _content_type=MERGE,
        ),
    ),
    *[
        op
        for resource, method in (
            ("persistentvolumeclaims", "list_persistent_volume_claim_for_all_namespaces"),
            ("persistentvolumes", "list_persistent_volume"),
            ("storageclasses", "list_storage_class"),
            ("csinodes", "list_csi_node"),
            ("csidrivers", "list_csi_driver"),
        )
        for op in _list_and_watch(resource, method)
    ],
    (
        "create the lease",
        ("coordination.k8s.io", "leases", "create"),
        lambda a: k8s_client.CoordinationV1Api(a).create_namespaced_lease("kube-system", LEASE),
    ),
    (
        "read the lease",
        ("coordination.k8s.io", "leases", "get"),
        lambda a: k8s_client.CoordinationV1Api(a).read_namespaced_lease("pumice", "kube-system"),
    ),
    ("renew the lease", ("coordination.k8s.io", "leases", "update"), _renew_lease),
]

# Things pumice never does: each must be refused.
OUTSIDE: list[tuple[str, Callable[[k8s_client.ApiClient], Awaitable[Any]]]] = [
    ("delete a pod", lambda a: _core(a).delete_namespaced_pod("web", "default")),
    ("create a pod", lambda a: _core(a).create_namespaced_pod("default", pod("new"))),
    (
        "change a pod's spec",
        lambda a: _core(a).patch_namespaced_pod(
            "web", "default", {"metadata": {"labels": {"x": "1"}}}, _content_type=MERGE
        ),
    ),
    ("get a node", lambda a: _core(a).read_node("n1")),
    ("delete a node", lambda a: _core(a).delete_node("n1")),
    (
        "create a lease elsewhere",
        lambda a: k8s_client.CoordinationV1Api(a).create_namespaced_lease(
            "default", {**LEASE, "metadata": {"name": "x", "namespace": "default"}}
        ),
    ),
    (
        "create a podgroup",
        lambda a: _custom(a).create_namespaced_custom_object(
            *VOLCANO,
            "default",
            "podgroups",
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "pg2"},
                "spec": {"minMember": 1},
            },
        ),
    ),
    (
        "change a queue's spec",
        lambda a: _custom(a).patch_cluster_custom_object(
            *VOLCANO, "queues", "default", {"spec": {"weight": 9}}, _content_type=MERGE
        ),
    ),
    ("get a namespace", lambda a: _core(a).read_namespace("default")),
    (
        "delete a claim",
        lambda a: _core(a).delete_namespaced_persistent_volume_claim("data", "default"),
    ),
    ("get a volume", lambda a: _core(a).read_persistent_volume("pv1")),
    ("delete a volume", lambda a: _core(a).delete_persistent_volume("pv1")),
    ("delete a namespace", lambda a: _core(a).delete_namespace("batch")),
]


def seed_cluster(sim: Any) -> None:
    """What the operations act on: a node, a pending pod, a running victim, a PodGroup, a
    volume and a claim."""
    sim.create(node("n1"))
    sim.create(volume("pv1", "1Gi"))
    sim.create(claim("data", "1Gi", "none"))
    sim.create(pod("web"))
    sim.create(pod("victim", node_name="n1"))
    sim.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg1", "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default"},
        }
    )


async def status_of(call: Callable[[k8s_client.ApiClient], Awaitable[Any]], api: Any) -> int:
    """The HTTP status of one call (a raw response is read, a typed one is 200)."""
    try:
        result = await call(api)
    except ApiException as exc:
        return int(exc.status)
    code = result.status if isinstance(getattr(result, "status", None), int) else 200
    if hasattr(result, "release"):
        result.release()
    return int(code)


async def pumice_operations(sim: Any) -> dict[str, int]:
    """Every operation of OPERATIONS as pumice's ServiceAccount: name -> HTTP status."""
    seed_cluster(sim)
    codes = {}
    async with await sim.client(PUMICE_ACCOUNT) as api:
        for name, _, call in OPERATIONS:
            codes[name] = await status_of(call, api)
    return codes


def test_the_operations_cover_every_grant_once() -> None:
    needed = [grant for _, grant, _ in OPERATIONS]
    assert len(needed) == len(set(needed))
    assert set(needed) == grants(rbac_objects())


async def test_the_sim_serves_the_rbac_manifests(make_sim: Any) -> None:
    sim = await start_rbac_sim(make_sim)
    async with await sim.client() as api:
        rbac = k8s_client.RbacAuthorizationV1Api(api)
        role = await rbac.read_cluster_role("pumice")
        assert role.rules and role.rules[0].resources == ["nodes"]
        await rbac.read_cluster_role_binding("pumice")
        await rbac.read_namespaced_role("pumice-leader-election", "kube-system")
        await rbac.read_namespaced_role_binding("pumice-leader-election", "kube-system")
        await k8s_client.CoreV1Api(api).read_namespaced_service_account("pumice", "kube-system")
    answer = await sim.kubectl(
        "auth", "can-i", "create", "pods", "--subresource=binding", "-A", account=PUMICE_ACCOUNT
    )
    assert answer.stdout.strip() == "yes", answer.stderr


async def test_pumice_may_do_everything_it_does_and_uses_every_grant(make_sim: Any) -> None:
    run = await run_as_pumice(make_sim, pumice_operations)
    failed = {name: code for name, code in run.result.items() if code >= 300}
    assert failed == {}
    assert run.refused == []
    assert run.used == grants(rbac_objects())  # nothing granted that pumice does not use


async def test_anything_else_is_refused(make_sim: Any) -> None:
    sim = await start_rbac_sim(make_sim)
    seed_cluster(sim)
    async with await sim.client(PUMICE_ACCOUNT) as api:
        codes = {name: await status_of(call, api) for name, call in OUTSIDE}
    assert codes == {name: 403 for name, _ in OUTSIDE}


@pytest.mark.parametrize(
    "grant", [grant for _, grant, _ in OPERATIONS], ids=[name for name, _, _ in OPERATIONS]
)
async def test_without_one_grant_exactly_its_operation_is_refused(
    make_sim: Any, grant: Grant
) -> None:
    run = await run_as_pumice(make_sim, pumice_operations, without_grant(rbac_objects(), grant))
    refused = {name for name, code in run.result.items() if code == 403}
    (name,) = [name for name, needed, _ in OPERATIONS if needed == grant]
    assert name in refused
    assert grant in run.refused
    # later operations that depend on a refused one (e.g. renewing a lease never created)
    # may fail otherwise, but nothing else is refused
    assert set(run.refused) == {grant}, json.dumps(run.refused)
