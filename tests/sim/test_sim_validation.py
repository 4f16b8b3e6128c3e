"""Decoding and validation as the real API server does them, seen through kubectl and
kubernetes_asyncio: malformed and negative quantities, canonical quantities, unknown fields
under each ``fieldValidation`` mode, label keys, the Volcano CRDs' rules, immutable fields,
printer columns; and the in-process way to store what a real server refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from pumice.sim.errors import ApiError
from sim.simkit import binding, body_of, node, pod

QUANTITY_RE = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def pod_yaml(cpu: str = "100m", extra: str = "", labels: str = "{app: web}") -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {labels}
spec:
  containers:
  - name: c
    image: busybox:1.36
    resources:
      requests: {{cpu: {cpu}}}
{extra}"""


async def create(sim: Any, text: str, *flags: str) -> Any:
    path = sim.workdir / "manifest.yaml"
    path.write_text(text)
    return await sim.kubectl("create", "-f", str(path), *flags)


async def test_malformed_quantities_are_refused_at_decoding(sim: Any) -> None:
    result = await create(sim, pod_yaml(cpu="lots"))
    assert result.code != 0
    assert "Error from server (BadRequest)" in result.stderr
    assert (
        'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
        f"expression {QUANTITY_RE}" in result.stderr
    )
    eight_cores = json.dumps(node("n1", cpu="8 cores"))
    result = await sim.kubectl("create", "-f", "-", stdin=eight_cores)
    assert result.code != 0
    assert 'Node in version "v1" cannot be handled as a Node: quantities must match' in (
        result.stderr
    )
    assert sim.store.get("/pods", ("default", "web")) is None
    assert sim.store.get("/nodes", ("", "n1")) is None


async def test_a_negative_request_is_invalid_naming_the_field(sim: Any) -> None:
    result = await create(sim, pod_yaml(cpu='"-1"'))
    assert result.code != 0
    assert (
        'The Pod "web" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: '
        '"-1": must be greater than or equal to 0' in result.stderr
    )


async def test_requests_above_limits_are_invalid(sim: Any) -> None:
    extra = "      limits: {cpu: 500m}\n"
    result = await create(sim, pod_yaml(cpu="1", extra=extra))
    assert result.code != 0
    assert (
        'spec.containers[0].resources.requests[cpu]: Invalid value: "1": must be less than or '
        "equal to cpu limit of 500m" in result.stderr
    )


async def test_quantities_are_stored_in_canonical_form(sim: Any) -> None:
    created = await create(sim, pod_yaml(cpu="1000m"))
    assert created.code == 0, created.stderr
    got = await sim.kubectl(
        "get", "pod", "web", "-o", "jsonpath={.spec.containers[0].resources.requests.cpu}"
    )
    assert got.stdout == "1"
    sim.create(node("n1", cpu="0.5", memory="1024Mi", pods="1e3"))
    capacity = sim.store.get("/nodes", ("", "n1"))["status"]["capacity"]
    assert capacity == {"cpu": "500m", "memory": "1Gi", "pods": "1e3"}


async def test_unknown_fields_are_refused_under_strict(sim: Any) -> None:
    text = pod_yaml(extra="    colour: blue\n")
    result = await create(sim, text)  # kubectl's default is --validate=strict
    assert result.code != 0
    assert 'strict decoding error: unknown field "spec.containers[0].colour"' in result.stderr
    assert sim.store.get("/pods", ("default", "web")) is None


async def test_unknown_fields_warn_or_are_ignored_and_dropped(sim: Any) -> None:
    text = pod_yaml(extra="    colour: blue\n")
    warned = await create(sim, text, "--validate=warn")
    assert warned.code == 0, warned.stderr
    assert 'Warning: unknown field "spec.containers[0].colour"' in warned.stderr
    stored = sim.store.get("/pods", ("default", "web"))
    assert "colour" not in stored["spec"]["containers"][0]
    await sim.kubectl("delete", "pod", "web", "--grace-period=0")
    ignored = await create(sim, text, "--validate=false")
    assert ignored.code == 0, ignored.stderr
    assert "Warning" not in ignored.stderr
    assert "colour" not in sim.store.get("/pods", ("default", "web"))["spec"]["containers"][0]


async def test_the_server_default_is_warn(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    body = pod("p")
    body["spec"]["nodeSelecter"] = {"disk": "ssd"}  # a typo
    resp = await core.create_namespaced_pod("default", body, _preload_content=False)
    assert resp.status == 201
    assert resp.headers.getall("Warning") == ['299 - "unknown field \\"spec.nodeSelecter\\""']
    created = await body_of(resp)
    assert "nodeSelecter" not in created["spec"]


async def test_an_invalid_label_key_is_invalid(sim: Any) -> None:
    result = await create(sim, pod_yaml(labels='{"bad key!": x}'))
    assert result.code != 0
    assert 'The Pod "web" is invalid: metadata.labels: Invalid value: "bad key!": name part ' in (
        result.stderr
    )
    label = await sim.kubectl("label", "node", "--all", "x=ok")
    assert label.code == 0
    sim.create(node("n1"))
    bad_value = await sim.kubectl("label", "node", "n1", "zone=not ok")
    assert bad_value.code != 0
    assert "a valid label must be an empty string" in bad_value.stderr


async def test_volcano_fields_follow_the_crds(sim: Any) -> None:
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": -1, "minResources": {"cpu": "lots"}},
    }
    result = await sim.kubectl("create", "-f", "-", stdin=json.dumps(podgroup))
    assert result.code != 0
    assert (
        "spec.minMember: Invalid value: -1: spec.minMember in body should be greater than or "
        in (result.stderr)
    )
    assert (
        'spec.minResources.cpu: Invalid value: "lots": spec.minResources.cpu in body should '
        in (result.stderr)
    )
    podgroup["spec"] = {"minMember": "two"}
    result = await sim.kubectl("create", "-f", "-", stdin=json.dumps(podgroup))
    assert 'spec.minMember in body must be of type integer: "string"' in result.stderr
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"weight": 0},
    }
    result = await sim.kubectl("create", "-f", "-", stdin=json.dumps(queue))
    assert result.code != 0
    assert "spec.weight in body should be greater than or equal to 1" in result.stderr
    queue["spec"] = {"weight": 3, "dequeueStrategy": "random"}
    result = await sim.kubectl("create", "-f", "-", stdin=json.dumps(queue))
    assert 'spec.dequeueStrategy: Unsupported value: "random"' in result.stderr
    assert sim.store.get("scheduling.volcano.sh/queues", ("", "q")) is None


async def test_immutable_fields_cannot_change(sim: Any) -> None:
    created = await sim.kubectl("create", "priorityclass", "low", "--value=10", "-o", "name")
    if created.code != 0:  # kubectl sends this one as protobuf: seed it instead
        sim.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "low"},
                "value": 10,
            }
        )
    result = await sim.kubectl("patch", "priorityclass", "low", "-p", '{"value": 20}')
    assert result.code != 0
    assert (
        'The PriorityClass "low" is invalid: value: Forbidden: may not be changed in an update.'
        in result.stderr
    )


async def test_printer_columns_of_podgroups_and_queues(sim: Any) -> None:
    sim.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"},
            "spec": {"minMember": 3, "queue": "default"},
            "status": {"phase": "Inqueue", "running": 2},
        }
    )
    result = await sim.kubectl("get", "podgroups", "-o", "wide")
    assert result.code == 0, result.stderr
    header, row = (line.split() for line in result.stdout.strip().splitlines())
    assert header == ["NAME", "STATUS", "MINMEMBER", "RUNNINGS", "AGE", "QUEUE"]
    assert row[:4] == ["pg", "Inqueue", "3", "2"] and row[5] == "default"
    queues = await sim.kubectl("get", "queues")
    assert [line.split() for line in queues.stdout.strip().splitlines()] == [
        ["NAME", "PARENT"],
        ["default"],  # no parent: an empty cell
    ]


async def test_tests_can_still_store_what_a_real_server_refuses(sim: Any, api: Any) -> None:
    bad = pod("odd", cpu="-2")
    with pytest.raises(ApiError) as caught:
        sim.server.registry.create_object(bad)
    assert caught.value.problem.startswith("spec.containers[0].resources.requests[cpu]: ")
    sim.server.seed([bad], validate=False)
    core = k8s_client.CoreV1Api(api)
    got = await body_of(await core.read_namespaced_pod("odd", "default", _preload_content=False))
    assert got["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "-2"


async def test_updates_are_validated_too(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    core = k8s_client.CoreV1Api(api)
    with pytest.raises(ApiException) as caught:
        await core.patch_node_status("n1", {"status": {"capacity": {"cpu": "eight"}}})
    assert caught.value.status == 400
    with pytest.raises(ApiException) as caught:
        await core.patch_node("n1", {"metadata": {"labels": {"a/b/c": "x"}}})
    assert caught.value.status == 422
    assert sim.store.get("/nodes", ("", "n1"))["status"]["capacity"]["cpu"] == "8"


async def test_a_binding_is_decoded_strictly_when_asked(sim: Any, api: Any) -> None:
    sim.create(node("n1"))
    sim.create(pod("p"))
    core = k8s_client.CoreV1Api(api)
    body = binding("p", "n1")
    body["target"] = {"kind": "Node", "name": "n1"}
    body["extra"] = 1
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_pod_binding("p", "default", body, field_validation="Strict")
    assert caught.value.status == 400
    assert 'unknown field "extra"' in json.loads(caught.value.body)["message"]
    assert sim.store.get("/pods", ("default", "p"))["spec"].get("nodeName") is None
    resp = await core.create_namespaced_pod_binding("p", "default", body, _preload_content=False)
    assert resp.status == 201
    assert resp.headers.getall("Warning") == ['299 - "unknown field \\"extra\\""']
    assert sim.store.get("/pods", ("default", "p"))["spec"]["nodeName"] == "n1"


async def test_generate_name_must_make_a_valid_name(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    body = pod("")
    body["metadata"] = {"generateName": "Web_"}
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_pod("default", body)
    assert caught.value.status == 422
    message = json.loads(caught.value.body)["message"]
    assert 'metadata.generateName: Invalid value: "Web_": a lowercase RFC 1123 subdomain' in message
    body["metadata"] = {"generateName": "web-"}
    created = await body_of(
        await core.create_namespaced_pod("default", body, _preload_content=False)
    )
    assert created["metadata"]["name"].startswith("web-")
