"""StatusWriter: events, the PodScheduled condition, PodGroup and Queue status.

(skeleton: the writes land in a later commit)
"""

from __future__ import annotations

from typing import Any

from pumice.kube.client import Kube

Obj = dict[str, Any]


class StatusWriter:
    def __init__(
        self, kube: Kube, *, scheduler_name: str, instance: str, max_inflight: int = 16
    ) -> None:
        self.kube = kube
        self.scheduler_name = scheduler_name
        self.instance = instance
        self.max_inflight = max_inflight

    async def pod_event(self, pod: Obj, reason: str, note: str, type: str = "Normal") -> bool:
        raise NotImplementedError

    async def object_event(self, obj: Obj, reason: str, note: str, type: str = "Warning") -> bool:
        raise NotImplementedError

    async def pod_unschedulable(self, pod: Obj, message: str) -> bool:
        raise NotImplementedError

    async def podgroup_status(self, namespace: str, name: str, status: Obj) -> bool:
        raise NotImplementedError

    async def queue_status(self, name: str, status: Obj) -> bool:
        raise NotImplementedError
