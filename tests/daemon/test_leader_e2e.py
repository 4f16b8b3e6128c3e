"""Leader election: a Lease held by another instance keeps the daemon from scheduling until it
expires; then the daemon takes it, schedules, and hands it back at exit."""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.workload import node, pod, seed
from pumice.kube.leader import LeadershipLost
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

LEASES = "coordination.k8s.io/leases"


def lease(sim: Any) -> dict[str, Any]:
    return dict(sim.store.table(LEASES).get(("kube-system", "pumice"), {}).get("spec") or {})


async def test_the_daemon_schedules_only_while_it_holds_the_lease(sim: Any, tmp_path: Path) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    sim.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "pumice", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "someone-else",
                "leaseDurationSeconds": 2,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
    )
    seed(sim, [node("n1"), pod("p")])
    ledger = Ledger(sim)
    config = write_config(
        tmp_path,
        leaderElection="{enabled: true, leaseDuration: 2s, renewDeadline: 1500ms, "
        "retryPeriod: 200ms}",
    )
    async with running_daemon(sim.kubeconfig, config) as daemon:
        await asyncio.sleep(1.0)
        assert daemon.cycles == 0 and ledger.bound("pumice") == []  # someone else leads
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        spec = lease(sim)
        assert spec["holderIdentity"].startswith("pumice-")
        assert spec["leaseTransitions"] == 1
    assert not lease(sim).get("holderIdentity")  # handed back at exit
    ledger.close()


async def test_a_lost_lease_ends_the_run(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1")])
    config = write_config(
        tmp_path,
        leaderElection="{enabled: true, leaseDuration: 2s, renewDeadline: 1s, retryPeriod: 200ms}",
    )

    async def steal() -> None:  # another instance that keeps renewing the Lease as its own
        while True:
            stored = copy.deepcopy(sim.store.table(LEASES)[("kube-system", "pumice")])
            stored["spec"]["holderIdentity"] = "thief"
            stored["spec"]["renewTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            sim.store.commit(LEASES, ("kube-system", "pumice"), stored)
            await asyncio.sleep(0.1)

    async def lead_then_lose() -> None:
        async with running_daemon(sim.kubeconfig, config) as daemon:
            await wait_for(lambda: daemon.cycles >= 1, timeout=60)
            thief = asyncio.get_running_loop().create_task(steal())
            try:
                await asyncio.sleep(3.0)  # the run ends on its own; leaving the block reports it
            finally:
                thief.cancel()

    with pytest.raises(LeadershipLost):
        await lead_then_lose()


async def test_health_and_metrics_are_served(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1"), pod("p")])
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        assert daemon.health is not None and daemon.health.port
        base = f"http://127.0.0.1:{daemon.health.port}"
        async with aiohttp.ClientSession() as http:
            for path in ("/livez", "/readyz"):
                async with http.get(base + path) as resp:
                    assert resp.status == 200
            async with http.get(base + "/metrics") as resp:
                text = await resp.text()
    assert 'scheduler_schedule_attempts_total{result="bound"} 1' in text
    assert "pumice_sessions_total" in text and "pumice_leader 1" in text
    ledger.close()
