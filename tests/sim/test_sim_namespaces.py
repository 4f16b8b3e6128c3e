"""Namespaces: the system ones cannot be deleted (403 in the real wording); deleting another
goes through Terminating and takes its objects with it."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client

from sim.simkit import EventStream, node, pod


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
async def test_system_namespaces_cannot_be_deleted(sim: Any, name: str) -> None:
    sim.create(pod("keep", namespace=name))
    result = await sim.kubectl("delete", "namespace", name)
    assert result.code != 0
    assert (
        f'Error from server (Forbidden): namespaces "{name}" is forbidden: this namespace may '
        "not be deleted" in result.stderr
    )
    assert sim.store.get("/namespaces", ("", name)) is not None
    assert sim.store.get("/pods", (name, "keep")) is not None


async def test_deleting_a_namespace_goes_through_terminating(sim: Any, api: Any) -> None:
    sim.create(node("node-a"))
    sim.create(pod("a", namespace="team-a"))
    sim.create(pod("b", namespace="team-a", node_name="node-a"))
    sim.create(pod("other", namespace="team-b"))
    sim.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "team-a"},
            "spec": {"minMember": 1},
        }
    )
    core = k8s_client.CoreV1Api(api)
    start = str(sim.store.rv)
    async with (
        EventStream(core.list_namespace, resource_version=start) as namespaces,
        EventStream(core.list_pod_for_all_namespaces, resource_version=start) as pods,
    ):
        result = await sim.kubectl("delete", "namespace", "team-a")
        assert result.code == 0, result.stderr
        assert result.stdout.strip() == 'namespace "team-a" deleted'
        ns_events = await namespaces.take(2)
        assert [e["type"] for e in ns_events] == ["MODIFIED", "DELETED"]
        assert ns_events[0]["raw_object"]["status"]["phase"] == "Terminating"
        assert ns_events[0]["raw_object"]["metadata"]["deletionTimestamp"]
        deleted = [
            (await pods.until(lambda e: e["type"] == "DELETED"))["raw_object"]["metadata"]["name"]
            for _ in range(2)
        ]
        assert sorted(deleted) == ["a", "b"]
    assert sim.store.get("/namespaces", ("", "team-a")) is None
    assert sim.store.get("scheduling.volcano.sh/podgroups", ("team-a", "pg")) is None
    assert sim.store.get("/pods", ("team-b", "other")) is not None


async def test_every_namespace_carries_its_name_label_whatever_a_client_writes(
    sim: Any, api: Any
) -> None:
    sim.create(pod("implicit", namespace="team-c"))  # a namespace made on the fly
    core = k8s_client.CoreV1Api(api)
    body = {"metadata": {"name": "team-d", "labels": {"kubernetes.io/metadata.name": "x"}}}
    await core.create_namespace(body)
    made = await sim.kubectl("create", "namespace", "team-e")
    assert made.code == 0, made.stderr
    for name in ("default", "team-c", "team-d", "team-e"):
        labels = (await core.read_namespace(name)).metadata.labels
        assert labels["kubernetes.io/metadata.name"] == name
    # a patch may add labels but never drop or change the name label
    patch = [{"op": "replace", "path": "/metadata/labels", "value": {"team": "d"}}]
    await core.patch_namespace("team-d", patch)
    labels = (await core.read_namespace("team-d")).metadata.labels
    assert labels == {"team": "d", "kubernetes.io/metadata.name": "team-d"}
