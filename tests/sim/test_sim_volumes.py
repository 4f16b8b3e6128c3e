"""The sim's volume controllers, seen through kubernetes_asyncio: an Immediate claim bound to
the smallest volume that fits, provisioning for a class with a provisioner, a
WaitForFirstConsumer claim provisioned once a node is selected (node affinity to that node's
hostname, or to the class's allowedTopologies), a claimRef completed into a binding, released
and lost volumes, and the provisioning faults (``fail_provisioning``, ``provisioning_delay``)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s_client

from sim.simkit import node, pod, wait_until
from sim.volumekit import (
    SELECTED_NODE,
    bound_to,
    claim,
    claim_events,
    storage_class,
    stored_claim,
    stored_volume,
    volume,
)


async def create_claim(api: Any, body: dict[str, Any]) -> Any:
    core = k8s_client.CoreV1Api(api)
    return await core.create_namespaced_persistent_volume_claim(
        body["metadata"].get("namespace", "default"), body
    )


async def select_node(api: Any, name: str, node_name: str, namespace: str = "default") -> None:
    """What a scheduler writes to ask for provisioning on ``node_name``."""
    patch = {"metadata": {"annotations": {SELECTED_NODE: node_name}}}
    await k8s_client.CoreV1Api(api).patch_namespaced_persistent_volume_claim(name, namespace, patch)


def hostname_affinity(values: list[str], key: str = "kubernetes.io/hostname") -> Any:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
    return {"required": {"nodeSelectorTerms": [term]}}


async def test_an_immediate_claim_binds_the_smallest_volume_that_fits(sim: Any, api: Any) -> None:
    sim.server.seed(
        [
            volume("tiny", "1Gi"),
            volume("huge", "100Gi"),
            volume("mid", "5Gi"),
            volume("snug-rox", "2Gi", modes=("ReadOnlyMany",)),
            volume("snug-classy", "2Gi", cls="gold"),
            volume("labelled", "50Gi", labels={"tier": "fast"}),
        ]
    )
    created = await create_claim(api, claim("data", "2Gi"))
    assert created.status.phase == "Pending"
    await wait_until(lambda: bound_to(sim, "data") is not None)
    assert bound_to(sim, "data") == "mid"
    core = k8s_client.CoreV1Api(api)
    read = await core.read_namespaced_persistent_volume_claim("data", "default")
    assert read.status.phase == "Bound"
    assert read.status.capacity == {"storage": "5Gi"}
    assert read.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    pv = await core.read_persistent_volume("mid")
    assert pv.status.phase == "Bound"
    assert (pv.spec.claim_ref.namespace, pv.spec.claim_ref.name) == ("default", "data")
    assert pv.spec.claim_ref.uid == read.metadata.uid
    # the others are left Available; a selector picks among the labelled ones only
    await wait_until(lambda: (stored_volume(sim, "huge") or {})["status"]["phase"] == "Available")
    await create_claim(api, claim("fast", "2Gi", selector={"matchLabels": {"tier": "fast"}}))
    await wait_until(lambda: bound_to(sim, "fast") == "labelled")
    assert not stored_volume(sim, "huge")["spec"].get("claimRef")  # type: ignore[index]


async def test_a_class_with_a_provisioner_provisions_an_immediate_claim(sim: Any, api: Any) -> None:
    sim.server.seed(
        [
            storage_class("fast", reclaimPolicy="Retain"),
            storage_class("static", "kubernetes.io/no-provisioner"),
        ]
    )
    created = await create_claim(api, claim("data", "3Gi", cls="fast"))
    name = f"pvc-{created.metadata.uid}"
    await wait_until(lambda: bound_to(sim, "data") == name)
    pv = stored_volume(sim, name)
    assert pv is not None
    assert pv["spec"]["capacity"] == {"storage": "3Gi"}
    assert pv["spec"]["storageClassName"] == "fast"
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["claimRef"]["uid"] == created.metadata.uid
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "csi.example.com"
    assert "nodeAffinity" not in pv["spec"]
    assert [e["message"] for e in claim_events(sim, "data", "ProvisioningSucceeded")] == [
        f"Successfully provisioned volume {name}"
    ]
    # a class that cannot provision leaves the claim pending, saying so
    await create_claim(api, claim("manual", "1Gi", cls="static"))
    await wait_until(lambda: claim_events(sim, "manual", "ExternalProvisioning"))
    assert bound_to(sim, "manual") is None
    assert len(sim.store.table("/persistentvolumes")) == 1


async def test_wait_for_first_consumer_provisions_on_the_selected_node(sim: Any, api: Any) -> None:
    n2 = node("n2")
    n2["metadata"]["labels"]["kubernetes.io/hostname"] = "host-of-n2"
    sim.server.seed([node("n1"), n2, storage_class("local", mode="WaitForFirstConsumer")])
    created = await create_claim(api, claim("data", cls="local"))
    await wait_until(lambda: claim_events(sim, "data", "WaitForFirstConsumer"))
    assert len(sim.store.table("/persistentvolumes")) == 0  # waits for a scheduler's choice
    assert stored_claim(sim, "data")["status"]["phase"] == "Pending"
    await select_node(api, "data", "n2")
    name = f"pvc-{created.metadata.uid}"
    await wait_until(lambda: bound_to(sim, "data") == name)
    pv = stored_volume(sim, name)
    assert pv is not None and pv["status"]["phase"] == "Bound"
    assert pv["spec"]["nodeAffinity"] == hostname_affinity(["host-of-n2"])
    assert claim_events(sim, "data", "Provisioning")
    assert sim.server.volumes.provisioner.provisioned == 1


async def test_allowed_topologies_give_the_volume_its_node_affinity(sim: Any, api: Any) -> None:
    zone = "topology.kubernetes.io/zone"
    allowed = [{"matchLabelExpressions": [{"key": zone, "values": ["a", "b"]}]}]
    in_a, outside = node("n1"), node("n9")
    in_a["metadata"]["labels"][zone] = "a"
    outside["metadata"]["labels"][zone] = "z"
    sim.server.seed(
        [
            in_a,
            outside,
            storage_class("zonal", mode="WaitForFirstConsumer", allowedTopologies=allowed),
        ]
    )
    created = await create_claim(api, claim("data", cls="zonal"))
    await select_node(api, "data", "n1")
    name = f"pvc-{created.metadata.uid}"
    await wait_until(lambda: bound_to(sim, "data") == name)
    assert stored_volume(sim, name)["spec"]["nodeAffinity"] == hostname_affinity(["a"], zone)  # type: ignore[index]
    # a node outside the allowed topologies cannot have one: the choice is given back
    await create_claim(api, claim("other", cls="zonal"))
    await select_node(api, "other", "n9")
    await wait_until(lambda: claim_events(sim, "other", "ProvisioningFailed"))
    await wait_until(
        lambda: (
            SELECTED_NODE not in (stored_claim(sim, "other")["metadata"].get("annotations") or {})
        )
    )
    assert bound_to(sim, "other") is None


async def test_a_claim_ref_is_completed_into_a_binding(sim: Any, api: Any) -> None:
    sim.server.seed(
        [storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer")]
    )
    # pre-bound by an administrator before the claim exists: the volume waits for it
    prebound = volume("reserved", "10Gi", cls="local")
    prebound["spec"]["claimRef"] = {"namespace": "default", "name": "data"}
    sim.server.seed([prebound, volume("static", "10Gi", cls="local")])
    await wait_until(lambda: stored_volume(sim, "reserved")["status"]["phase"] == "Available")  # type: ignore[index]
    await create_claim(api, claim("data", cls="local"))
    await wait_until(lambda: bound_to(sim, "data") == "reserved")
    # as a scheduler binds a static volume: the claimRef, with the claim's uid
    late = await create_claim(api, claim("late", cls="local"))
    ref = {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": "late",
        "uid": late.metadata.uid,
        "apiVersion": "v1",
    }
    core = k8s_client.CoreV1Api(api)
    await core.patch_persistent_volume("static", {"spec": {"claimRef": ref}})
    await wait_until(lambda: bound_to(sim, "late") == "static")
    read = await core.read_namespaced_persistent_volume_claim("late", "default")
    assert read.status.phase == "Bound"
    assert read.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert (await core.read_persistent_volume("static")).status.phase == "Bound"


async def test_released_and_lost(sim: Any, api: Any) -> None:
    sim.server.seed([storage_class("fast"), volume("kept", "1Gi")])
    core = k8s_client.CoreV1Api(api)
    await create_claim(api, claim("static"))
    provisioned = await create_claim(api, claim("dynamic", cls="fast"))
    await wait_until(lambda: bound_to(sim, "static") and bound_to(sim, "dynamic"))
    await core.delete_namespaced_persistent_volume_claim("static", "default")
    await core.delete_namespaced_persistent_volume_claim("dynamic", "default")
    await wait_until(lambda: stored_volume(sim, "kept")["status"]["phase"] == "Released")  # type: ignore[index]
    await wait_until(lambda: stored_volume(sim, f"pvc-{provisioned.metadata.uid}") is None)
    # a bound claim whose volume goes is lost
    sim.server.seed([volume("gone", "1Gi")])
    await create_claim(api, claim("orphan"))
    await wait_until(lambda: bound_to(sim, "orphan") == "gone")
    await core.delete_persistent_volume("gone")
    await wait_until(lambda: stored_claim(sim, "orphan")["status"]["phase"] == "Lost")
    assert claim_events(sim, "orphan", "ClaimLost")


async def test_failed_provisioning_gives_the_node_back(make_sim: Any) -> None:
    sim = await make_sim(fail_provisioning=1.0)
    sim.server.seed([node("n1"), storage_class("local", mode="WaitForFirstConsumer")])
    async with await sim.client() as api:
        await create_claim(api, claim("data", cls="local"))
        await select_node(api, "data", "n1")
        await wait_until(lambda: claim_events(sim, "data", "ProvisioningFailed"))
        await wait_until(
            lambda: (
                SELECTED_NODE
                not in (stored_claim(sim, "data")["metadata"].get("annotations") or {})
            )
        )
        [event] = claim_events(sim, "data", "ProvisioningFailed")
        assert event["type"] == "Warning"
        assert event["message"].startswith(
            'failed to provision volume with StorageClass "local": rpc error: '
            "code = ResourceExhausted"
        )
        assert len(sim.store.table("/persistentvolumes")) == 0
        assert bound_to(sim, "data") is None
        described = await sim.kubectl("describe", "pvc", "data")
        assert "ProvisioningFailed" in described.stdout, described.stderr


async def test_a_third_failing_converges_as_the_node_is_selected_again(make_sim: Any) -> None:
    sim = await make_sim(fail_provisioning=0.3, seed=11)
    names = [f"data-{i}" for i in range(12)]
    sim.server.seed([node("n1"), storage_class("local", mode="WaitForFirstConsumer")])
    async with await sim.client() as api:
        for name in names:
            await create_claim(api, claim(name, cls="local"))

        async def reselect() -> bool:
            for name in names:
                found = stored_claim(sim, name)
                notes = found["metadata"].get("annotations") or {}
                if bound_to(sim, name) is None and SELECTED_NODE not in notes:
                    await select_node(api, name, "n1")
            return all(bound_to(sim, name) for name in names)

        for _ in range(2000):
            if await reselect():
                break
            await asyncio.sleep(0.01)
    volumes = {bound_to(sim, name) for name in names}
    assert len(volumes) == len(names) == len(sim.store.table("/persistentvolumes"))
    # seeded: whichever claim each draw serves, the failures are those the seed's draws make
    # before the twelfth success
    draws, expected, successes = random.Random(11), 0, 0
    while successes < len(names):
        if draws.random() < 0.3:
            expected += 1
        else:
            successes += 1
    assert sim.server.volumes.provisioner.failed == expected > 0
    assert len(claim_events(sim, "data-0")) >= 1


async def test_a_provisioning_delay_keeps_the_claim_pending_meanwhile(make_sim: Any) -> None:
    sim = await make_sim(provisioning_delay=60.0)
    sim.server.seed([storage_class("slow")])
    async with await sim.client() as api:
        await create_claim(api, claim("data", cls="slow"))
        await wait_until(lambda: claim_events(sim, "data", "Provisioning"))
        assert len(sim.store.table("/persistentvolumes")) == 0
        assert stored_claim(sim, "data")["status"]["phase"] == "Pending"


async def test_the_faults_change_at_run_time_through_the_admin_endpoint(sim: Any) -> None:
    sim.server.seed([node("n1"), storage_class("local", mode="WaitForFirstConsumer")])
    async with aiohttp.ClientSession() as http:
        put = await http.put(f"{sim.url}/sim/volumes", json={"failProvisioning": 1})
        assert put.status == 200
        assert (await put.json())["failProvisioning"] == 1.0
        bad = await http.put(f"{sim.url}/sim/volumes", json={"failProvisioning": 2})
        assert bad.status == 400
        async with await sim.client() as api:
            await create_claim(api, claim("data", cls="local"))
            await select_node(api, "data", "n1")
            await wait_until(lambda: claim_events(sim, "data", "ProvisioningFailed"))
            await http.put(f"{sim.url}/sim/volumes", json={"failProvisioning": 0})
            await wait_until(
                lambda: (
                    SELECTED_NODE
                    not in (stored_claim(sim, "data")["metadata"].get("annotations") or {})
                )
            )
            await select_node(api, "data", "n1")
            await wait_until(lambda: bound_to(sim, "data") is not None)
        got = await (await http.get(f"{sim.url}/sim/volumes")).json()
    assert (got["failed"], got["provisioned"]) == (1, 1)


async def test_a_claim_in_use_is_deleted_only_once_its_pods_are_gone(sim: Any, api: Any) -> None:
    sim.server.seed([volume("pv1", "1Gi"), node("n1")])
    created = await create_claim(api, claim("data"))
    assert created.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    uses = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    sim.server.seed([pod("user", node_name="n1", volumes=uses), pod("bystander")])
    await wait_until(lambda: bound_to(sim, "data") == "pv1")
    core = k8s_client.CoreV1Api(api)
    await core.delete_namespaced_persistent_volume_claim("data", "default")
    read = await core.read_namespaced_persistent_volume_claim("data", "default")
    assert read.metadata.deletion_timestamp is not None  # Terminating while "user" runs
    await core.delete_namespaced_pod("user", "default", grace_period_seconds=0)
    await wait_until(lambda: sim.store.get("/persistentvolumeclaims", ("default", "data")) is None)
    await wait_until(lambda: stored_volume(sim, "pv1")["status"]["phase"] == "Released")  # type: ignore[index]
