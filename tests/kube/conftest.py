"""A ``kube`` fixture: pumice.kube's client connected to the ``sim`` server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pumice.kube import Kube, KubeSettings, connect


async def connect_to(sim: Any, **settings: Any) -> Kube:
    """A client for ``sim`` through its kubeconfig (unthrottled unless asked)."""
    return await connect(KubeSettings(kubeconfig=str(sim.kubeconfig), **{"qps": 0.0, **settings}))


@pytest.fixture
async def kube(sim: Any) -> AsyncIterator[Kube]:
    client = await connect_to(sim)
    yield client
    await client.close()
