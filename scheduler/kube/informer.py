"""Informers: list, then watch from the list's resourceVersion, into a store of plain dicts.

(skeleton: the loop lands in the next commit)
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from pumice.kube.client import Kube
from pumice.kube.resources import Kind

Obj = dict[str, Any]


class InformerHandler(Protocol):
    """Receives an informer's changes, on the event-loop thread, in order."""

    def on_add(self, obj: Obj) -> None: ...

    def on_update(self, old: Obj, new: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


@dataclass
class InformerStats:
    relists: int = 0
    watch_restarts: int = 0
    events: int = 0
    drift: int = 0


class Informer:
    def __init__(
        self,
        kube: Kube,
        kind: Kind,
        handler: InformerHandler,
        *,
        name: str,
        field_selector: str | None = None,
        label_selector: str | None = None,
        watch_timeout: int = 300,
        resync_period: float = 300.0,
    ) -> None:
        self.kube = kube
        self.kind = kind
        self.handler = handler
        self.name = name
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.resync_period = resync_period
        self.synced = asyncio.Event()
        self.stats = InformerStats()

    async def run(self) -> None:
        """List, then watch, until cancelled."""
        raise NotImplementedError
