"""Binder and Evictor: the two pod writes whose outcome the cache must know exactly.

(skeleton: the calls land in a later commit)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pumice.kube.client import Kube
from pumice.kube.errors import KubeError


class BindOutcome(enum.Enum):
    BOUND = "bound"
    BOUND_ELSEWHERE = "bound-elsewhere"
    GONE = "gone"
    FAILED = "failed"


@dataclass
class BindResult:
    outcome: BindOutcome
    node: str | None
    error: KubeError | None = None


class Binder:
    def __init__(self, kube: Kube, *, concurrency: int = 64) -> None:
        self.kube = kube
        self.concurrency = concurrency

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> BindResult:
        raise NotImplementedError


class EvictOutcome(enum.Enum):
    EVICTED = "evicted"
    GONE = "gone"
    BLOCKED = "blocked"
    FAILED = "failed"


class Evictor:
    def __init__(self, kube: Kube, *, concurrency: int = 16) -> None:
        self.kube = kube
        self.concurrency = concurrency

    async def evict(self, namespace: str, name: str, uid: str) -> EvictOutcome:
        raise NotImplementedError
