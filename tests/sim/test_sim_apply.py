"""Server-side apply through kubectl: creates, field managers in managedFields, conflicts in
the real wording, ``--force-conflicts``, shared ownership and removal of dropped fields."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import yaml

QUEUE = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
  labels: {team: a}
spec:
  weight: %d
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  schedulerName: pumice
  containers:
  - name: main
    image: %s
"""


async def apply(sim: Any, manifest: str, *flags: str) -> Any:
    path = sim.workdir / "applied.yaml"
    path.write_text(manifest)
    return await sim.kubectl("apply", "--server-side", *flags, "-f", str(path))


def managers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """manager -> its fieldsV1, from a stored object."""
    return {e["manager"]: e["fieldsV1"] for e in obj["metadata"].get("managedFields", [])}


def queue(sim: Any) -> dict[str, Any]:
    stored: dict[str, Any] = sim.store.get("scheduling.volcano.sh/queues", ("", "research"))
    return stored


async def test_apply_creates_a_missing_object(sim: Any) -> None:
    result = await apply(sim, QUEUE % 3)
    assert result.code == 0, result.stderr
    assert result.stdout.strip() == "queue.scheduling.volcano.sh/research serverside-applied"
    stored = queue(sim)
    assert stored["spec"]["weight"] == 3
    assert stored["metadata"]["labels"] == {"team": "a"}
    [entry] = stored["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl"
    assert entry["operation"] == "Apply"
    assert entry["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:team": {}}},
        "f:spec": {"f:weight": {}},
    }
    shown = await sim.kubectl("get", "queue", "research", "-o", "yaml", "--show-managed-fields")
    assert "manager: kubectl" in shown.stdout


async def test_a_conflict_is_409_until_forced(sim: Any) -> None:
    assert (await apply(sim, QUEUE % 3, "--field-manager=alice")).code == 0
    refused = await apply(sim, QUEUE % 5, "--field-manager=bob")
    assert refused.code != 0
    assert refused.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "alice": .spec.weight\n'
    )
    assert queue(sim)["spec"]["weight"] == 3
    forced = await apply(sim, QUEUE % 5, "--field-manager=bob", "--force-conflicts")
    assert forced.code == 0, forced.stderr
    stored = queue(sim)
    assert stored["spec"]["weight"] == 5
    owners = managers(stored)
    assert owners["alice"] == {"f:metadata": {"f:labels": {"f:team": {}}}}
    assert owners["bob"]["f:spec"] == {"f:weight": {}}


async def test_the_same_value_is_owned_together(sim: Any) -> None:
    assert (await apply(sim, QUEUE % 3, "--field-manager=alice")).code == 0
    before = queue(sim)["metadata"]["resourceVersion"]
    shared = await apply(sim, QUEUE % 3, "--field-manager=bob")
    assert shared.code == 0, shared.stderr
    owners = managers(queue(sim))
    assert owners["alice"] == owners["bob"]
    # a repeated apply changes nothing: no new resourceVersion
    assert (await apply(sim, QUEUE % 3, "--field-manager=bob")).code == 0
    assert int(queue(sim)["metadata"]["resourceVersion"]) == int(before) + 1


async def test_fields_dropped_from_the_intent_are_removed(sim: Any) -> None:
    two_labels = QUEUE.replace("{team: a}", "{team: a, tier: gold}")
    assert (await apply(sim, two_labels % 3)).code == 0
    assert queue(sim)["metadata"]["labels"] == {"team": "a", "tier": "gold"}
    assert (await apply(sim, QUEUE % 3)).code == 0
    assert queue(sim)["metadata"]["labels"] == {"team": "a"}


async def test_kubectl_create_then_apply_conflicts_with_kubectl_create(sim: Any) -> None:
    path = sim.workdir / "pod.yaml"
    path.write_text(POD % "busybox:1.36")
    assert (await sim.kubectl("create", "-f", str(path))).code == 0
    stored = sim.store.get("/pods", ("default", "web"))
    [entry] = stored["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-create", "Update")
    container = entry["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"main"}']
    # as on a real server, the creator also owns what defaulting filled in
    assert {".", "f:image", "f:name", "f:imagePullPolicy"} <= set(container)
    refused = await apply(sim, POD % "busybox:1.37")
    assert refused.code != 0
    assert refused.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl-create" using v1: '
        '.spec.containers[name="main"].image\n'
    )
    forced = await apply(sim, POD % "busybox:1.37", "--force-conflicts")
    assert forced.code == 0, forced.stderr
    stored = sim.store.get("/pods", ("default", "web"))
    assert stored["spec"]["containers"][0]["image"] == "busybox:1.37"
    assert stored["spec"]["schedulerName"] == "pumice"


async def test_kubectl_label_takes_the_label_over(sim: Any) -> None:
    assert (await apply(sim, QUEUE % 3)).code == 0
    labelled = await sim.kubectl("label", "queue", "research", "team=b", "--overwrite")
    assert labelled.code == 0, labelled.stderr
    owners = managers(queue(sim))
    assert owners["kubectl-label"] == {"f:metadata": {"f:labels": {"f:team": {}}}}
    assert owners["kubectl"] == {"f:spec": {"f:weight": {}}}
    refused = await apply(sim, QUEUE % 3)
    assert 'conflict with "kubectl-label" using scheduling.volcano.sh/v1beta1' in refused.stderr


async def test_several_conflicts_are_listed_by_manager(sim: Any) -> None:
    body = yaml.safe_load(QUEUE % 3)
    assert (await apply(sim, QUEUE % 3, "--field-manager=alice")).code == 0
    body["spec"]["weight"] = 9
    body["metadata"]["labels"]["team"] = "z"
    async with aiohttp.ClientSession() as session:
        async with session.patch(
            f"{sim.url}/apis/scheduling.volcano.sh/v1beta1/queues/research?fieldManager=bob",
            data=orjson.dumps(body),
            headers={"Content-Type": "application/apply-patch+yaml"},
        ) as resp:
            status = await resp.json()
        assert resp.status == 409
        assert status["reason"] == "Conflict"
        assert status["message"] == (
            'Apply failed with 2 conflicts: conflicts with "alice"\n'
            "- .metadata.labels.team\n- .spec.weight"
        )
        assert [c["field"] for c in status["details"]["causes"]] == [
            ".metadata.labels.team",
            ".spec.weight",
        ]
        async with session.patch(
            f"{sim.url}/apis/scheduling.volcano.sh/v1beta1/queues/research",
            data=orjson.dumps(body),
            headers={"Content-Type": "application/apply-patch+yaml"},
        ) as resp:
            unnamed = await resp.json()
        assert resp.status == 422
        assert "fieldManager: Required value" in unnamed["message"]


async def test_writes_without_a_field_manager_are_not_tracked(sim: Any, api: Any) -> None:
    from kubernetes_asyncio import client as k8s_client

    core = k8s_client.CoreV1Api(api)
    await core.create_namespace({"metadata": {"name": "quiet"}})
    stored = sim.store.get("/namespaces", ("", "quiet"))
    assert "managedFields" not in stored["metadata"]
