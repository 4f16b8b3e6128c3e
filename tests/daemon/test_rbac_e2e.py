"""The daemon itself under conf/deploy's RBAC: a whole scenario — binds, a preemption, an
unschedulable gang, PodGroup and Queue status, leader election — as pumice's ServiceAccount,
against a sim that enforces RBAC, is never refused anything."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from daemon.test_preemption_e2e import ACTIONS, prioritised, priority_class, running
from daemon.workload import events_about, gang, node, seed
from pumice.commands.common import load_checked
from pumice.daemon import Daemon, DaemonOptions
from pumice.kube import KubeSettings
from support.daemonrun import Ledger, wait_for, write_config
from support.deploy_rbac import PUMICE_ACCOUNT, grants, rbac_objects, run_as_pumice

pytestmark = pytest.mark.slow

ELECTION = "{enabled: true, leaseDuration: 3s, renewDeadline: 2s, retryPeriod: 200ms}"


async def test_the_daemon_needs_nothing_beyond_the_deploy_rbac(
    make_sim: Any, tmp_path: Path
) -> None:
    config = write_config(tmp_path, actions=ACTIONS, leaderElection=ELECTION)

    async def scenario(sim: Any) -> Ledger:
        ledger = Ledger(sim)
        # (the sim serves the "default" Queue already, as Volcano's controller creates it)
        seed(sim, [priority_class("low", 10), priority_class("high", 1000)])
        seed(sim, [node("n1", cpu="4")])
        cfg, host = load_checked(str(config))
        stop = asyncio.Event()
        daemon = Daemon(
            DaemonOptions(
                config=cfg,
                host=host,
                kube=KubeSettings(kubeconfig=str(sim.kubeconfig_for(PUMICE_ACCOUNT))),
                stop=stop,
                identity="pumice-under-rbac",
            )
        )
        task = asyncio.get_running_loop().create_task(daemon.run())
        try:
            seed(sim, [prioritised(f"low-{i}", "low", "1") for i in range(4)])
            await wait_for(lambda: task.done() or all(running(sim, f"low-{i}") for i in range(4)))
            seed(sim, gang("huge", 1, cpu="64"))  # fits nowhere: events, conditions, status
            seed(sim, [prioritised("urgent", "high", "2")])  # evicts two of the low ones
            await wait_for(lambda: task.done() or ("batch", "urgent") in ledger.placements)
            await wait_for(lambda: task.done() or events_about(sim, "huge-0"))
        finally:
            stop.set()
            code = await asyncio.wait_for(task, 60)
        assert code == 0
        return ledger

    run = await run_as_pumice(make_sim, scenario)
    assert run.refused == [], run.refused
    needed = {
        ("", "pods/binding", "create"),
        ("", "pods/eviction", "create"),
        ("", "pods/status", "patch"),
        ("scheduling.volcano.sh", "podgroups/status", "patch"),
        ("scheduling.volcano.sh", "queues/status", "patch"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    }
    assert needed <= run.used, needed - run.used
    assert run.used <= grants(rbac_objects())
    assert run.result.accepted_binds()[("batch", "urgent")] == 1
    run.result.close()
