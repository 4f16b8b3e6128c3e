"""Shared fixtures: the simulated API server, in-process, on a free loopback port.

``sim`` is a ``SimHandle``: the base URL, a kubeconfig path, the store and registry for direct
seeding (``sim.create(manifest)``), the fault controls (``sim.faults``), the write log
(``sim.writes``), a kubernetes_asyncio client factory (``sim.client()``) and a kubectl runner
(``sim.kubectl(...)``); both take ``account="ns/name"`` to act as a ServiceAccount, which
``make_sim(authorization="rbac")`` then holds to the seeded RBAC rules.
``make_sim(**SimConfig fields)`` starts more servers or servers with other settings; every
server is stopped when the test ends.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from sim.simkit import KubectlResult, run_kubectl

from pumice.sim import SimConfig, SimServer

# Short delays keep lifecycle tests fast; tests never assert on wall-clock time.
FAST = {"pod_start_delay": 0.05, "pod_termination_delay": 0.1}


@dataclass
class SimHandle:
    server: SimServer
    kubeconfig: Path
    workdir: Path

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def store(self) -> Any:
        return self.server.store

    @property
    def registry(self) -> Any:
        return self.server.registry

    @property
    def faults(self) -> Any:
        return self.server.faults

    @property
    def writes(self) -> Any:
        return self.server.writes

    def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Store a manifest directly (namespace created if missing); returns the object."""
        return copy.deepcopy(self.server.registry.create_object(manifest))

    def kubeconfig_for(self, account: str) -> Path:
        """A kubeconfig acting as the ServiceAccount ``account`` ("namespace/name"), created
        if missing; with ``make_sim(authorization="rbac")`` its requests are authorized."""
        namespace, _, name = account.partition("/")
        path = self.workdir / f"kubeconfig-{namespace}-{name}"
        return self.server.write_kubeconfig_for(namespace, name, path)

    async def client(self, account: str | None = None) -> k8s_client.ApiClient:
        """A kubernetes_asyncio ApiClient: the admin, or the ServiceAccount ``account``."""
        kubeconfig = self.kubeconfig if account is None else self.kubeconfig_for(account)
        configuration = k8s_client.Configuration()
        await k8s_config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration
        )
        return k8s_client.ApiClient(configuration=configuration)

    async def kubectl(
        self, *args: str, stdin: str | None = None, timeout: float = 60, account: str | None = None
    ) -> KubectlResult:
        """Run the installed kubectl against this server (loopback only), as the admin or as
        the ServiceAccount ``account`` ("namespace/name")."""
        kubeconfig = self.kubeconfig if account is None else self.kubeconfig_for(account)
        return await run_kubectl(kubeconfig, self.workdir, *args, stdin=stdin, timeout=timeout)


MakeSim = Callable[..., Awaitable[SimHandle]]


@pytest.fixture
async def make_sim(tmp_path: Path) -> AsyncIterator[MakeSim]:
    servers: list[SimServer] = []

    async def make(**config: Any) -> SimHandle:
        server = SimServer(SimConfig(**{**FAST, **config}))
        await server.start()
        servers.append(server)
        workdir = tmp_path / f"sim-{len(servers)}"
        workdir.mkdir()
        kubeconfig = server.write_kubeconfig(workdir / "kubeconfig")
        return SimHandle(server, kubeconfig, workdir)

    yield make
    for server in servers:
        await server.stop()


@pytest.fixture
async def sim(make_sim: MakeSim) -> SimHandle:
    return await make_sim()


@pytest.fixture
async def api(sim: SimHandle) -> AsyncIterator[k8s_client.ApiClient]:
    """A kubernetes_asyncio client for ``sim``."""
    client = await sim.client()
    async with client:
        yield client
