"""The sim's ephemeral-volume controller, seen through kubernetes_asyncio: a pod's generic
ephemeral volume gets its claim ``<pod>-<volume>`` from the template, owned by the pod; a
claim of that name the pod does not own is left alone and the pod told; the pod's deletion
takes its claims with it."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k8s_client

from sim.simkit import pod, wait_until
from sim.volumekit import claim, storage_class

CLAIMS = "/persistentvolumeclaims"


def with_ephemeral(body: dict[str, Any], volume: str = "scratch") -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"made-for": "scratch"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "fast",
        },
    }
    body["spec"]["volumes"] = [{"name": volume, "ephemeral": {"volumeClaimTemplate": template}}]
    return body


async def test_the_claim_is_made_from_the_template_and_owned_by_the_pod(sim: Any, api: Any) -> None:
    sim.server.seed([storage_class("fast", mode="WaitForFirstConsumer")])
    core = k8s_client.CoreV1Api(api)
    made = await core.create_namespaced_pod("default", with_ephemeral(pod("worker")))
    await wait_until(lambda: sim.store.get(CLAIMS, ("default", "worker-scratch")) is not None)
    found = await core.read_namespaced_persistent_volume_claim("worker-scratch", "default")
    (owner,) = found.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Pod",
        "worker",
        made.metadata.uid,
        True,
    )
    assert found.metadata.labels == {"made-for": "scratch"}
    assert found.spec.storage_class_name == "fast"
    assert "kubernetes.io/pvc-protection" in found.metadata.finalizers  # through admission
    await core.delete_namespaced_pod("worker", "default", grace_period_seconds=0)
    await wait_until(lambda: sim.store.get(CLAIMS, ("default", "worker-scratch")) is None)


async def test_a_claim_the_pod_does_not_own_is_left_alone_and_the_pod_told(
    sim: Any, api: Any
) -> None:
    sim.server.seed(
        [storage_class("fast", mode="WaitForFirstConsumer"), claim("worker-scratch", "1Gi", "fast")]
    )
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", with_ephemeral(pod("worker")))
    note = (
        "ephemeral volume scratch: PVC default/worker-scratch was not created for pod "
        "default/worker (pod is not owner)"
    )

    def told() -> bool:
        return any(
            e.get("reason") == "FailedBinding" and e.get("message") == note
            for e in sim.store.table("/events").values()
        )

    await wait_until(told)
    kept = sim.store.get(CLAIMS, ("default", "worker-scratch"))
    assert not kept["metadata"].get("ownerReferences")
