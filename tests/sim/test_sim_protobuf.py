"""Protobuf request bodies: what kubectl 1.32 sends for ``create namespace`` and
``create priorityclass`` is decoded and stored; kinds without a decoder get 415 naming them."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from pumice.sim.errors import ApiError
from pumice.sim.protobuf import MAGIC, decode_object
from sim.simkit import protobuf_envelope, protobuf_field


async def test_kubectl_create_namespace(sim: Any) -> None:
    result = await sim.kubectl("create", "namespace", "team-a")
    assert result.code == 0, result.stderr
    assert result.stdout.strip() == "namespace/team-a created"
    stored = sim.store.get("/namespaces", ("", "team-a"))
    assert stored["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert stored["status"] == {"phase": "Active"}
    writes = sim.writes.select(user_agent="kubectl")
    assert [(w.verb, w.resource, w.code) for w in writes] == [("create", "namespaces", 201)]
    again = await sim.kubectl("create", "namespace", "team-a")
    assert 'namespaces "team-a" already exists' in again.stderr


async def test_kubectl_create_priorityclass(sim: Any) -> None:
    result = await sim.kubectl(
        "create",
        "priorityclass",
        "low",
        "--value=10",
        "--description=batch work",
        "--preemption-policy=Never",
    )
    assert result.code == 0, result.stderr
    assert result.stdout.strip() == "priorityclass.scheduling.k8s.io/low created"
    stored = sim.store.get("scheduling.k8s.io/priorityclasses", ("", "low"))
    assert stored["value"] == 10
    assert stored["description"] == "batch work"
    assert stored["preemptionPolicy"] == "Never"
    assert "globalDefault" not in stored
    shown = await sim.kubectl("get", "priorityclass", "low", "-o", "jsonpath={.value}")
    assert shown.stdout == "10"


async def test_a_kind_without_a_decoder_is_refused_naming_it(sim: Any) -> None:
    body = protobuf_envelope("v1", "Pod", protobuf_field(1, protobuf_field(1, "web")))
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{sim.url}/api/v1/namespaces/default/pods",
            data=body,
            headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
        ) as resp,
    ):
        status = await resp.json()
    assert resp.status == 415
    assert status["reason"] == "UnsupportedMediaType"
    assert (
        "cannot decode Pod (v1) sent as application/vnd.kubernetes.protobuf" in (status["message"])
    )
    assert sim.store.get("/pods", ("default", "web")) is None


def test_labels_negative_values_and_flags_decode() -> None:
    meta = (
        protobuf_field(1, "urgent")
        + protobuf_field(2, "")
        + protobuf_field(11, protobuf_field(1, "tier") + protobuf_field(2, "gold"))
        + protobuf_field(11, protobuf_field(1, "team") + protobuf_field(2, "a"))
        + protobuf_field(14, "example.com/keep")
        + protobuf_field(8, b"")  # creationTimestamp: skipped
    )
    raw = (
        protobuf_field(1, meta)
        + protobuf_field(2, -5)
        + protobuf_field(3, 1)
        + protobuf_field(4, "")
    )
    obj = decode_object(protobuf_envelope("scheduling.k8s.io/v1", "PriorityClass", raw))
    assert obj == {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {
            "name": "urgent",
            "labels": {"tier": "gold", "team": "a"},
            "finalizers": ["example.com/keep"],
        },
        "value": -5,
        "globalDefault": True,
    }


def test_a_zero_value_is_kept_and_empty_fields_dropped() -> None:
    raw = (
        protobuf_field(1, protobuf_field(1, "zero"))
        + protobuf_field(2, 0)
        + protobuf_field(3, 0)
        + protobuf_field(4, "")
    )
    obj = decode_object(protobuf_envelope("scheduling.k8s.io/v1", "PriorityClass", raw))
    assert obj["value"] == 0
    assert "globalDefault" not in obj and "description" not in obj


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"kind": "Namespace"}', 400),
        (MAGIC + b"\x0a\x05\x0a", 400),  # length past the end
        (MAGIC + b"\x08\xff\xff", 400),  # truncated varint
        (protobuf_envelope("v1", "Secret", b""), 415),
    ],
)
def test_malformed_bodies_are_refused(body: bytes, code: int) -> None:
    with pytest.raises(ApiError) as refused:
        decode_object(body)
    assert refused.value.code == code
