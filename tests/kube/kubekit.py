"""Helpers for the pumice.kube tests: a handler that mirrors what an informer tells it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from pumice.kube import Informer, Kind, Kube
from pumice.sim import resources as sim_resources

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"
SIM_NODES = sim_resources.NODES
SIM_PODS = sim_resources.PODS


def key(obj: Obj) -> tuple[str, str]:
    m = obj["metadata"]
    return (m.get("namespace") or "", m["name"])


class Mirror:
    """An InformerHandler that rebuilds the server's state from the callbacks alone and
    refuses impossible sequences (an add of a known key, an update or delete of an unknown
    one), so a wrong informer fails the test instead of converging by accident."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}
        self.calls: list[tuple[str, str]] = []
        self.problems: list[str] = []

    def on_add(self, obj: Obj) -> None:
        k = key(obj)
        if k in self.objects:
            self.problems.append(f"add of known {k}")
        self.objects[k] = obj
        self.calls.append(("add", k[1]))

    def on_update(self, old: Obj, new: Obj) -> None:
        k = key(new)
        if self.objects.get(k) is not old:
            self.problems.append(f"update of {k} with an old object that is not the current one")
        self.objects[k] = new
        self.calls.append(("update", k[1]))

    def on_delete(self, obj: Obj) -> None:
        k = key(obj)
        if self.objects.pop(k, None) is None:
            self.problems.append(f"delete of unknown {k}")
        self.calls.append(("delete", k[1]))

    def versions(self) -> dict[tuple[str, str], str]:
        return {k: o["metadata"]["resourceVersion"] for k, o in self.objects.items()}


async def server_versions(kube: Kube, kind: Kind, **query: Any) -> dict[tuple[str, str], str]:
    listed = await kube.request("GET", kind.path(), query=query or None)
    return {key(o): o["metadata"]["resourceVersion"] for o in listed["items"]}


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    """Run the informer in a task for the block; wait for its first list."""
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 10)
        yield informer
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
