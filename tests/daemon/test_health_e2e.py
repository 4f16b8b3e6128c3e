"""/livez, /readyz and /metrics of a running daemon, against the simulated API server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from daemon.workload import gang, node, pod, seed
from pumice.commands.config_commands import load_checked
from pumice.daemon import Daemon, DaemonOptions
from pumice.kube import KubeSettings
from support.daemonrun import Ledger, wait_for, write_config


@contextlib.asynccontextmanager
async def serving_daemon(kubeconfig: Path, config: Path) -> AsyncIterator[Daemon]:
    cfg, host = load_checked(str(config))
    stop = asyncio.Event()
    daemon = Daemon(
        DaemonOptions(
            config=cfg,
            host=host,
            kube=KubeSettings(kubeconfig=str(kubeconfig)),
            stop=stop,
            http_address="127.0.0.1:0",
        )
    )
    task = asyncio.get_running_loop().create_task(daemon.run())
    try:
        await wait_for(lambda: daemon.health is not None and daemon.health.address, timeout=30)
        yield daemon
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 60) == 0


async def get(daemon: Daemon, path: str) -> tuple[int, str]:
    assert daemon.health is not None
    async with (
        aiohttp.ClientSession() as client,
        client.get(f"http://{daemon.health.address}{path}") as response,
    ):
        return response.status, await response.text()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


async def test_readyz_is_503_until_every_informer_has_listed(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1")])
    # Pods cannot be listed: the pod informers cannot sync until the rule goes.
    sim.faults.fail(500, verb="list", resource="pods")
    async with serving_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        assert (await get(daemon, "/livez"))[0] == 200
        await wait_for(lambda: daemon.informers, timeout=30)
        status, body = await get(daemon, "/readyz")
        assert status == 503, body
        assert "pending-pods" in body and "leader election off" in body
        sim.faults.clear()
        await wait_for(lambda: daemon.synced, timeout=60)
        status, body = await get(daemon, "/readyz")
        assert status == 200 and body.startswith("ok"), body


async def test_metrics_count_the_binds_the_server_accepted(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node(f"n{i}", cpu="4") for i in range(3)])
    # 3 gangs of 4 fit (12 x 250m on 12 cpus), and two pods that fit nowhere.
    workload = gang("a", 4) + gang("b", 4) + gang("c", 4)
    workload += [pod("huge-1", cpu="64"), pod("huge-2", cpu="64")]
    seed(sim, workload)
    ledger = Ledger(sim)
    async with serving_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: len(ledger.bound()) == 12, timeout=120)
        await wait_for(lambda: daemon.work is not None and daemon.work.in_flight == 0)
        status, text = await get(daemon, "/metrics")
    assert status == 200
    values = samples(text)
    accepted = sum(ledger.accepted_binds().values())
    assert accepted == 12
    assert values[("scheduler_schedule_attempts_total", (("result", "scheduled"),))] == accepted
    assert values[("scheduler_schedule_attempts_total", (("result", "unschedulable"),))] >= 2
    assert values[("scheduler_schedule_attempts_total", (("result", "error"),))] == 0
    assert values[("pumice_binds_total", (("outcome", "bound"),))] == accepted
    assert values[("pumice_leader", ())] == 1
    assert values[("pumice_pending_pods", (("queue", "default"),))] == 2
    assert values[("pumice_cache_objects", (("kind", "nodes"),))] == 3
    assert values[("pumice_cache_objects", (("kind", "claims"),))] == 0  # served, none made
    assert values[("pumice_session_duration_seconds_count", ())] >= 1
    # Every bound pod had a first attempt: its SLI was observed once.
    assert values[("scheduler_pod_scheduling_sli_duration_seconds_count", ())] == accepted
    assert ("pumice_relists_total", (("informer", "pending-pods"),)) in values
    assert values[("pumice_action_duration_seconds_count", (("action", "allocate"),))] >= 1
    # 12 pods of 250m in the default queue: 3 cores.
    cpu = (("queue", "default"), ("resource", "cpu"))
    assert values[("pumice_queue_allocated", cpu)] == pytest.approx(3.0)
    # proportion: one queue deserves what it asks for, up to the cluster (12 of 131 cores;
    # all of its 14 x 256Mi); its share is its most used dimension, memory: 12/14.
    memory = (("queue", "default"), ("resource", "memory"))
    assert values[("pumice_proportion_queue_deserved", cpu)] == pytest.approx(12.0)
    assert values[("pumice_proportion_queue_deserved", memory)] == pytest.approx(14 * 256 * 2**20)
    assert values[("pumice_proportion_queue_share", (("queue", "default"),))] == pytest.approx(
        12 / 14
    )
    # every plugin hook the sessions called: one observation per session, and its calls
    timed = {
        dict(labels)["plugin"]
        for name, labels in values
        if name == "pumice_plugin_hook_duration_seconds_count"
    }
    assert {"gang", "proportion", "binpack", "predicates"} <= timed
    sessions = values[("pumice_session_duration_seconds_count", ())]
    opened = (("hook", "session_open"), ("plugin", "proportion"))
    assert values[("pumice_plugin_hook_duration_seconds_count", opened)] == sessions
    assert values[("pumice_plugin_hook_calls_total", opened)] == sessions
    allocated = (("hook", "on_allocate"), ("plugin", "proportion"))
    assert values[("pumice_plugin_hook_calls_total", allocated)] >= accepted
    assert values[("pumice_plugin_hook_duration_seconds_sum", allocated)] > 0
    ledger.close()


async def test_queue_metrics_without_volcano_come_from_proportion(
    make_sim: Any, tmp_path: Path
) -> None:
    # Without Volcano's CRDs pods go to the implicit "default" queue, which has no Queue
    # object and so no status; proportion still accounts for it.
    sim = await make_sim(volcano=False)
    seed(sim, [node("n1", cpu="4")])
    seed(sim, [pod(f"p{i}", cpu="500m") for i in range(3)])
    ledger = Ledger(sim)
    async with serving_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: len(ledger.bound()) == 3, timeout=120)
        assert daemon.cache is not None and not daemon.cache.volcano
        await wait_for(lambda: daemon.work is not None and daemon.work.in_flight == 0)
        status, text = await get(daemon, "/metrics")
    assert status == 200
    values = samples(text)
    cpu = (("queue", "default"), ("resource", "cpu"))
    assert values[("pumice_queue_allocated", cpu)] == pytest.approx(1.5)
    assert values[("pumice_proportion_queue_deserved", cpu)] == pytest.approx(1.5)
    assert values[("pumice_proportion_queue_share", (("queue", "default"),))] == pytest.approx(1.0)
    ledger.close()
