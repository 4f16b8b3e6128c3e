"""Protobuf request bodies: what kubectl 1.32 sends for ``create namespace`` and
``create priorityclass`` is decoded and stored; kinds without a decoder get 415 naming them."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from pumice.sim.errors import ApiError
from pumice.sim.protobuf import MAGIC, decode_object


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes | int | str) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version) + _field(2, kind)
    return MAGIC + _field(1, type_meta) + _field(2, raw) + _field(3, "") + _field(4, "")


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
    body = _envelope("v1", "Pod", _field(1, _field(1, "web")))
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
        _field(1, "urgent")
        + _field(2, "")
        + _field(11, _field(1, "tier") + _field(2, "gold"))
        + _field(11, _field(1, "team") + _field(2, "a"))
        + _field(14, "example.com/keep")
        + _field(8, b"")  # creationTimestamp: skipped
    )
    raw = _field(1, meta) + _field(2, -5) + _field(3, 1) + _field(4, "")
    obj = decode_object(_envelope("scheduling.k8s.io/v1", "PriorityClass", raw))
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
    raw = _field(1, _field(1, "zero")) + _field(2, 0) + _field(3, 0) + _field(4, "")
    obj = decode_object(_envelope("scheduling.k8s.io/v1", "PriorityClass", raw))
    assert obj["value"] == 0
    assert "globalDefault" not in obj and "description" not in obj


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"kind": "Namespace"}', 400),
        (MAGIC + b"\x0a\x05\x0a", 400),  # length past the end
        (MAGIC + b"\x08\xff\xff", 400),  # truncated varint
        (_envelope("v1", "Secret", b""), 415),
    ],
)
def test_malformed_bodies_are_refused(body: bytes, code: int) -> None:
    with pytest.raises(ApiError) as refused:
        decode_object(body)
    assert refused.value.code == code
