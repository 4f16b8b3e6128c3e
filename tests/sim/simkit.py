"""Builders and small async helpers shared by the simulated-API-server tests."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.watch import Watch

from pumice.sim.protobuf import MAGIC

Obj = dict[str, Any]


def node(name: str, cpu: str = "8", memory: str = "32Gi", pods: str = "110", **extra: str) -> Obj:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, **extra}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def pod(
    name: str,
    namespace: str = "default",
    scheduler: str = "pumice",
    cpu: str = "100m",
    node_name: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": cpu}}}
            ],
            **spec,
        },
    }
    if node_name:
        body["spec"]["nodeName"] = node_name
    if labels:
        body["metadata"]["labels"] = labels
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


def binding(name: str, node_name: str, namespace: str = "default", uid: str | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


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


def protobuf_field(number: int, payload: bytes | int | str) -> bytes:
    """One protobuf field: a varint for ints, length-delimited for text and bytes."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def protobuf_envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """A body as kubectl sends it with ``application/vnd.kubernetes.protobuf``."""
    type_meta = protobuf_field(1, api_version) + protobuf_field(2, kind)
    return (
        MAGIC
        + protobuf_field(1, type_meta)
        + protobuf_field(2, raw)
        + protobuf_field(3, "")
        + protobuf_field(4, "")
    )


async def body_of(response: Any) -> Obj:
    """The JSON body of a ``_preload_content=False`` response."""
    data = await response.read()
    response.release()
    parsed: Obj = json.loads(data)
    return parsed


async def bind(api: k8s_client.ApiClient, name: str, node_name: str, **kw: Any) -> tuple[int, Obj]:
    """POST a Binding through the real client; returns (status, body)."""
    core = k8s_client.CoreV1Api(api)
    ns = kw.pop("namespace", "default")
    resp = await core.create_namespaced_pod_binding(
        name, ns, binding(name, node_name, ns, **kw), _preload_content=False
    )
    return resp.status, await body_of(resp)


class EventStream:
    """Events of one watch, consumed with timeouts so a test can never hang."""

    def __init__(self, func: Any, *args: Any, **kwargs: Any) -> None:
        self.watch = Watch(return_type="object")
        self._iter: AsyncIterator[Obj] = self.watch.stream(func, *args, **kwargs).__aiter__()

    async def next(self, timeout: float = 10.0) -> Obj:
        event: Obj = await asyncio.wait_for(self._iter.__anext__(), timeout)
        return event

    async def take(
        self, count: int, timeout: float = 10.0, skip_bookmarks: bool = True
    ) -> list[Obj]:
        out: list[Obj] = []
        while len(out) < count:
            event = await self.next(timeout)
            if skip_bookmarks and event["type"] == "BOOKMARK":
                continue
            out.append(event)
        return out

    async def until(self, predicate: Any, timeout: float = 10.0) -> Obj:
        while True:
            event = await self.next(timeout)
            if predicate(event):
                return event

    async def close(self) -> None:
        self.watch.stop()
        await self.watch.close()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def brief(event: Obj) -> tuple[str, str]:
    """(type, name) of a watch event."""
    return event["type"], event["raw_object"].get("metadata", {}).get("name", "")


async def wait_until(predicate: Any, timeout: float = 10.0, step: float = 0.01) -> None:
    """Poll ``predicate`` until it is true (fails the test after ``timeout`` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(step)


async def poll(check: Any, timeout: float = 10.0, step: float = 0.01) -> None:
    """Await ``check()`` until it returns true (fails the test after ``timeout`` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(step)


KUBECTL = "/usr/bin/kubectl"


@dataclass
class KubectlResult:
    code: int
    stdout: str
    stderr: str


async def run_kubectl(
    kubeconfig: Path, workdir: Path, *args: str, stdin: str | None = None, timeout: float = 60
) -> KubectlResult:
    """Run the installed kubectl with only this kubeconfig (HOME and caches in ``workdir``)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "KUBECONFIG": str(kubeconfig),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--kubeconfig",
        str(kubeconfig),
        "--cache-dir",
        str(workdir / "kube-cache"),
        *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(
        proc.communicate(stdin.encode() if stdin is not None else None), timeout
    )
    return KubectlResult(proc.returncode or 0, out.decode(), err.decode())
