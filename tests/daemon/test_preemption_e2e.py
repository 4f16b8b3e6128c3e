"""Preemption end to end: victims evicted once each through the Eviction API (a 429 retried),
the preemptor nominated and bound once its room is free; in dry-run nothing is evicted."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from daemon.workload import node, pod, seed
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

ACTIONS = "enqueue, allocate, preempt, backfill"


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def prioritised(name: str, cls: str, cpu: str) -> dict[str, Any]:
    p = pod(name, cpu=cpu, memory="64Mi")
    p["spec"]["priorityClassName"] = cls
    return p


def running(sim: Any, name: str) -> bool:
    p = sim.store.table("/pods").get(("batch", name))
    return p is not None and (p.get("status") or {}).get("phase") == "Running"


async def fill_the_node(sim: Any, ledger: Ledger) -> None:
    seed(sim, [priority_class("low", 10), priority_class("high", 1000), node("n1", cpu="4")])
    seed(sim, [prioritised(f"low-{i}", "low", "1") for i in range(4)])
    await wait_for(lambda: all(running(sim, f"low-{i}") for i in range(4)), timeout=60)


async def test_preemption_evicts_victims_once_and_binds_the_preemptor(
    sim: Any, tmp_path: Path
) -> None:
    ledger = Ledger(sim)
    config = write_config(tmp_path, actions=ACTIONS)
    async with running_daemon(sim.kubeconfig, config):
        await fill_the_node(sim, ledger)
        sim.faults.fail(code=429, verb="create", resource="pods/eviction", count=1)
        seed(sim, [prioritised("urgent", "high", "2")])
        await wait_for(lambda: ("batch", "urgent") in ledger.placements, timeout=120)
    evictions = sim.writes.select(resource="pods/eviction")
    assert any(w.code == 429 for w in evictions), "the 429 was never injected"
    evicted = Counter(w.name for w in evictions if w.code == 201)
    assert evicted and set(evicted.values()) == {1}, evicted
    assert all(name.startswith("low-") for name in evicted)
    assert len(evicted) <= 2  # room for 2 cpu, no more
    assert ledger.accepted_binds()[("batch", "urgent")] == 1
    nominated = [
        w for w in sim.writes.select(resource="pods/status") if w.name == "urgent" and w.code == 200
    ]
    assert nominated, "the preemptor's nominatedNodeName was never written"
    assert ledger.rebinds() == {} and ledger.overcommitted() == {}
    ledger.close()


async def test_in_dry_run_nothing_is_evicted(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = Ledger(sim)
    seed(sim, [priority_class("low", 10), priority_class("high", 1000), node("n1", cpu="4")])
    for i in range(4):  # running already, bound by someone before us
        p = prioritised(f"low-{i}", "low", "1")
        p["spec"]["nodeName"] = "n1"
        seed(sim, [p])
    await wait_for(lambda: all(running(sim, f"low-{i}") for i in range(4)), timeout=60)
    seed(sim, [prioritised("urgent", "high", "2")])
    before = len(sim.writes)
    caplog.set_level(logging.INFO, logger="pumice")
    config = write_config(tmp_path, actions=ACTIONS)
    async with running_daemon(sim.kubeconfig, config, dry_run=True):
        await wait_for(lambda: "dry-run: evict batch/low-" in caplog.text, timeout=60)
    assert len(sim.writes) == before
    assert all(running(sim, f"low-{i}") for i in range(4))
    ledger.close()
