"""Dry run and validation together with protobuf bodies, server-side apply and RBAC.

A dry-run server-side apply (creating or updating) answers the would-be object, managedFields
included, and keeps nothing; apply configurations are validated like other writes; a protobuf
body is refused by validation like a JSON one; and a dry run needs the permission of the real
request under ``--authorization rbac``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from sim.simkit import binding, body_of, node, pod, protobuf_envelope, protobuf_field

QUEUE = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
spec:
  weight: %s
"""
QUEUES = "scheduling.volcano.sh/queues"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def state(sim: Any) -> tuple[int, dict[str, Any], int]:
    """What a dry run must not change: the resourceVersion, every table, the write log."""
    tables = {name: copy.deepcopy(sim.store.table(name)) for name in sim.store.tables()}
    return sim.store.rv, tables, len(sim.writes)


async def apply(sim: Any, manifest: str, *flags: str) -> Any:
    path = sim.workdir / "applied.yaml"
    path.write_text(manifest)
    return await sim.kubectl("apply", "--server-side", *flags, "-f", str(path))


# -- server-side apply ----------------------------------------------------------------------


async def test_a_dry_run_apply_that_would_create_keeps_nothing(sim: Any) -> None:
    before = state(sim)
    result = await apply(sim, QUEUE % 3, "--dry-run=server", "-o", "json", "--show-managed-fields")
    assert result.code == 0, result.stderr
    answered = json.loads(result.stdout)
    assert answered["spec"]["weight"] == 3
    assert [e["manager"] for e in answered["metadata"]["managedFields"]] == ["kubectl"]
    assert state(sim) == before
    assert sim.store.get(QUEUES, ("", "research")) is None


async def test_a_dry_run_apply_that_would_update_keeps_nothing(sim: Any) -> None:
    assert (await apply(sim, QUEUE % 3, "--field-manager=alice")).code == 0
    before = state(sim)
    stored_before = copy.deepcopy(sim.store.get(QUEUES, ("", "research")))
    result = await apply(
        sim,
        QUEUE % 5,
        "--field-manager=bob",
        "--force-conflicts",
        "--dry-run=server",
        "-o",
        "json",
        "--show-managed-fields",
    )
    assert result.code == 0, result.stderr
    answered = json.loads(result.stdout)
    # the answer is the would-be object: bob took spec.weight over from alice
    assert answered["spec"]["weight"] == 5
    owners = {e["manager"]: e["fieldsV1"] for e in answered["metadata"]["managedFields"]}
    assert owners["bob"] == {"f:spec": {"f:weight": {}}}
    assert answered["metadata"]["resourceVersion"] == stored_before["metadata"]["resourceVersion"]
    # ... and none of it was kept: no weight, no managedFields entry, no write, no version
    assert state(sim) == before
    stored = sim.store.get(QUEUES, ("", "research"))
    assert stored == stored_before
    assert [e["manager"] for e in stored["metadata"]["managedFields"]] == ["alice"]


async def test_an_apply_is_validated_like_any_write(sim: Any) -> None:
    too_heavy = await apply(sim, QUEUE % 70000)
    assert too_heavy.code != 0
    assert "spec.weight in body should be less than or equal to 65535" in too_heavy.stderr
    unknown = QUEUE % 3 + "  colour: blue\n"
    strict = await apply(sim, unknown)
    assert strict.code != 0
    assert 'strict decoding error: unknown field "spec.colour"' in strict.stderr
    assert sim.store.get(QUEUES, ("", "research")) is None
    # without Strict the unknown field is dropped with a warning, and owned by nobody
    relaxed = await apply(sim, unknown, "--validate=warn")
    assert relaxed.code == 0, relaxed.stderr
    assert 'unknown field "spec.colour"' in relaxed.stderr
    stored = sim.store.get(QUEUES, ("", "research"))
    assert stored["spec"]["weight"] == 3
    assert "colour" not in stored["spec"]
    [entry] = stored["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:spec": {"f:weight": {}}}


# -- protobuf bodies ------------------------------------------------------------------------


def _priority_class(name: str, label_key: str, value: int) -> bytes:
    labels = protobuf_field(11, protobuf_field(1, label_key) + protobuf_field(2, "x"))
    raw = protobuf_field(1, protobuf_field(1, name) + labels) + protobuf_field(2, value)
    return protobuf_envelope("scheduling.k8s.io/v1", "PriorityClass", raw)


async def _post_protobuf(sim: Any, path: str, body: bytes) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.url}{path}", data=body, headers={"Content-Type": PROTOBUF}) as resp,
    ):
        return resp.status, await resp.json()


async def test_a_protobuf_create_with_a_bad_field_is_refused_by_validation(sim: Any) -> None:
    path = "/apis/scheduling.k8s.io/v1/priorityclasses"
    code, status = await _post_protobuf(sim, path, _priority_class("urgent", "bad key!", 10))
    assert code == 422, status
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('PriorityClass.scheduling.k8s.io "urgent" is invalid: ')
    [cause] = status["details"]["causes"]
    assert cause["field"] == "metadata.labels"
    assert 'Invalid value: "bad key!": name part must consist of' in cause["message"]
    assert sim.store.get("scheduling.k8s.io/priorityclasses", ("", "urgent")) is None
    # the same body with a good label key goes through
    code, stored = await _post_protobuf(sim, path, _priority_class("urgent", "tier", 10))
    assert code == 201, stored
    assert stored["metadata"]["labels"] == {"tier": "x"}


async def test_a_protobuf_dry_run_create_keeps_nothing(sim: Any) -> None:
    before = state(sim)
    result = await sim.kubectl("create", "namespace", "team-z", "--dry-run=server")
    assert result.code == 0, result.stderr
    assert result.stdout.strip() == "namespace/team-z created (server dry run)"
    assert state(sim) == before
    assert sim.store.get("/namespaces", ("", "team-z")) is None


# -- RBAC -----------------------------------------------------------------------------------

ACCOUNT = "team-a/ci"
SA_USER = "system:serviceaccount:team-a:ci"
POLICY: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "ci", "namespace": "team-a"},
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "binder", "namespace": "team-a"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "ci-binds", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "binder"},
        "subjects": [{"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"}],
    },
]


@pytest.fixture
async def rbac_sim(make_sim: Any) -> Any:
    sim = await make_sim(authorization="rbac")
    sim.server.seed(POLICY)
    sim.create(node("node-a"))
    sim.create(pod("web", "team-a"))
    return sim


async def test_a_dry_run_without_the_verbs_permission_is_forbidden(rbac_sim: Any) -> None:
    tables_before = state(rbac_sim)[1]
    client = await rbac_sim.client(ACCOUNT)
    async with client:
        core = k8s_client.CoreV1Api(client)
        with pytest.raises(ApiException) as refused:
            await core.create_namespaced_pod("team-a", pod("new", "team-a"), dry_run="All")
        assert refused.value.status == 403
        assert json.loads(refused.value.body)["message"] == (
            f'pods is forbidden: User "{SA_USER}" cannot create resource "pods" in API group '
            '"" in the namespace "team-a"'
        )
        with pytest.raises(ApiException) as refused_delete:
            await core.delete_namespaced_pod("web", "team-a", dry_run="All")
        assert refused_delete.value.status == 403
        # the verb it may use works as a dry run, and binds nothing
        resp = await core.create_namespaced_pod_binding(
            "web",
            "team-a",
            binding("web", "node-a", "team-a"),
            dry_run="All",
            _preload_content=False,
        )
        assert resp.status == 201, await body_of(resp)
        resp.release()
    kubectl = await rbac_sim.kubectl("delete", "pod", "web", "--dry-run=server", account=ACCOUNT)
    assert kubectl.code != 0
    assert 'cannot delete resource "pods"' in kubectl.stderr
    assert state(rbac_sim)[1] == tables_before
    assert "nodeName" not in rbac_sim.store.get("/pods", ("team-a", "web"))["spec"]
    seen = {
        (a.verb, a.resource, a.subresource, a.allowed)
        for a in rbac_sim.server.access.accesses
        if a.user == SA_USER
    }
    assert seen == {
        ("create", "pods", "", False),
        ("delete", "pods", "", False),
        ("create", "pods", "binding", True),
    }
