"""A simulated cluster without Volcano's CRDs (``SimConfig(volcano=False)``, ``pumice
sim-cluster --without-volcano``), seen through kubernetes_asyncio and kubectl: discovery and
OpenAPI never name ``scheduling.volcano.sh``, every path under it answers 404 as any unknown
path does, and seeding one of its kinds is an error naming the kind. A server with Volcano in
the same process keeps serving it (each server has its own set of types)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from pumice.sim.errors import ApiError
from sim.simkit import node, run_kubectl
from sim.test_sim_cli import banner, failing, start, stop

GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"
NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server could not find the requested resource",
    "reason": "NotFound",
    "details": {},
    "code": 404,
}


def podgroup(name: str = "pg1") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": 1, "queue": "default"},
    }


async def get_json(api: k8s_client.ApiClient, path: str) -> Any:
    return await api.call_api(
        path,
        "GET",
        response_types_map={200: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )


def status_of(err: pytest.ExceptionInfo[ApiException]) -> Any:
    assert err.value.status == 404
    return json.loads(err.value.body)


@pytest.fixture
async def bare(make_sim: Any) -> Any:
    return await make_sim(volcano=False)


async def test_discovery_names_no_volcano_group(bare: Any, make_sim: Any) -> None:
    with_volcano = await make_sim()
    async with await bare.client() as api, await with_volcano.client() as full:
        groups = await k8s_client.ApisApi(api).get_api_versions()
        names = {g.name for g in groups.groups}
        assert "scheduling.k8s.io" in names and GROUP not in names
        full_groups = await k8s_client.ApisApi(full).get_api_versions()
        assert GROUP in {g.name for g in full_groups.groups}

        for path in (f"/apis/{GROUP}", f"/apis/{GROUP}/{VERSION}"):
            with pytest.raises(ApiException) as err:
                await get_json(api, path)
            assert status_of(err) == NOT_FOUND
        listed = await k8s_client.CustomObjectsApi(full).get_api_resources(GROUP, VERSION)
        assert {r.name for r in listed.resources} >= {"podgroups", "queues"}

        root = await get_json(api, "/openapi/v3")
        assert f"apis/{GROUP}/{VERSION}" not in root["paths"]
        assert "apis/scheduling.k8s.io/v1" in root["paths"]
        with pytest.raises(ApiException) as err:
            await get_json(api, f"/openapi/v3/apis/{GROUP}/{VERSION}")
        assert status_of(err) == NOT_FOUND
        full_root = await get_json(full, "/openapi/v3")
        assert f"apis/{GROUP}/{VERSION}" in full_root["paths"]


async def test_every_volcano_path_answers_404_like_an_unknown_group(bare: Any) -> None:
    async with await bare.client() as api:
        custom = k8s_client.CustomObjectsApi(api)
        calls = [
            lambda: custom.list_cluster_custom_object(GROUP, VERSION, "queues"),
            lambda: custom.get_cluster_custom_object(GROUP, VERSION, "queues", "default"),
            lambda: custom.list_namespaced_custom_object(GROUP, VERSION, "default", "podgroups"),
            lambda: custom.list_cluster_custom_object(GROUP, VERSION, "podgroups", watch=True),
            lambda: custom.create_namespaced_custom_object(
                GROUP, VERSION, "default", "podgroups", podgroup()
            ),
            lambda: custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, "default", "podgroups", "pg1", [{"op": "remove", "path": "/x"}]
            ),
            lambda: custom.delete_cluster_custom_object(GROUP, VERSION, "queues", "default"),
            # a group nobody serves answers the same
            lambda: custom.list_cluster_custom_object("nothing.example.com", "v1", "things"),
        ]
        for call in calls:
            with pytest.raises(ApiException) as err:
                await call()
            assert status_of(err) == NOT_FOUND
    # the refused writes are in the write log like any other; nothing was stored
    refused = [(w.method, w.resource, w.code) for w in bare.writes]
    assert refused == [
        ("POST", "podgroups", 404),
        ("PATCH", "podgroups/status", 404),
        ("DELETE", "queues", 404),
    ]
    assert bare.store.table(f"{GROUP}/podgroups") == {}
    assert bare.store.table(f"{GROUP}/queues") == {}
    # every request for the absent group was noted, the unknown one's was not
    assert len(bare.server.unserved) == 7
    assert all(path.startswith(f"/apis/{GROUP}/") for _, path in bare.server.unserved)


async def test_seeding_a_volcano_kind_is_an_error_naming_it(bare: Any, make_sim: Any) -> None:
    # no default Queue either: that is Volcano's
    assert bare.store.table(f"{GROUP}/queues") == {}
    assert ("", "default") in (await make_sim()).store.table(f"{GROUP}/queues")
    with pytest.raises(ApiError) as err:
        bare.create(podgroup())
    assert err.value.code == 400
    assert "'PodGroup'" in err.value.message
    assert GROUP in err.value.message
    queue = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": "q"}}
    with pytest.raises(ApiError, match="'Queue'"):
        bare.server.seed([queue])
    bare.create(node("n1"))  # the rest is served as usual
    assert ("", "n1") in bare.store.table("/nodes")


async def test_kubectl_has_no_resource_type_for_podgroups(bare: Any, make_sim: Any) -> None:
    bare.create(node("n1"))
    for resource in ("podgroups", "queues", "pg"):
        result = await bare.kubectl("get", resource)
        assert result.code != 0
        assert f'the server doesn\'t have a resource type "{resource}"' in result.stderr
    resources = await bare.kubectl("api-resources", "-o", "name")
    assert resources.code == 0, resources.stderr
    names = set(resources.stdout.split())
    assert {"pods", "nodes", "priorityclasses.scheduling.k8s.io"} <= names
    assert not any(GROUP in name for name in names)
    assert (await bare.kubectl("get", "nodes", "-o", "name")).stdout.split() == ["node/n1"]
    # the same kubectl against a server with Volcano lists them
    full = await make_sim()
    listed = await full.kubectl("api-resources", "-o", "name")
    assert {f"podgroups.{GROUP}", f"queues.{GROUP}"} <= set(listed.stdout.split())


async def test_sim_cluster_without_volcano(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node("n1")]))
    proc = await start(
        "--without-volcano", "--cluster", str(cluster), "--kubeconfig-out", str(kubeconfig)
    )
    try:
        info = await banner(proc)
        assert "1 Node" in info["serving"]
        result = await run_kubectl(kubeconfig, tmp_path, "get", "queues")
        assert 'the server doesn\'t have a resource type "queues"' in result.stderr
    finally:
        code, err = await stop(proc)
    assert code == 0, err
    # a PodGroup in a file for such a cluster is refused before anything is served
    cluster.write_text(yaml.safe_dump_all([node("n1"), podgroup("train")]))
    code, err = await asyncio.wait_for(failing("--without-volcano", "--cluster", str(cluster)), 60)
    assert code == 2
    assert err.startswith(f"pumice sim-cluster: error: {cluster}: PodGroup default/train: ")
    assert "'PodGroup'" in err and len(err.strip().splitlines()) == 1
