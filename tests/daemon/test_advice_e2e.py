"""The daemon's suggestions in the cluster (``pumice.daemon.advice``): ``pumice run`` finds,
outside its cycles, what would admit a pending PodGroup and appends ``; suggestion: TEXT`` to
the PodGroup's ``Unschedulable`` condition, once per change, within 1 KiB."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from daemon.workload import node, pod, podgroup, seed
from pumice.daemon.advice import MAX_MESSAGE, with_suggestions
from support.daemonrun import start_process, wait_for, write_config

HELD = "queue research: cpu allocated 2 + request 2 exceeds capability 3"
RAISE = "raise the cpu capability of queue research to 4"


def gang_message(sim: Any) -> str:
    groups = "scheduling.volcano.sh/podgroups"
    status = sim.store.table(groups).get(("batch", "train"), {}).get("status") or {}
    return " ".join(
        str(c.get("message"))
        for c in status.get("conditions") or []
        if c.get("type") == "Unschedulable"
    )


async def test_pumice_run_appends_the_verified_suggestion(sim: Any, tmp_path: Path) -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research"},
        "spec": {"weight": 1, "capability": {"cpu": "3"}},
    }
    seed(sim, [node("n1", cpu="4"), node("n2", cpu="4"), queue])
    group = podgroup("train", 2, queue="research")
    seed(
        sim, [group, pod("train-0", cpu="2", group="train"), pod("train-1", cpu="2", group="train")]
    )
    log = tmp_path / "daemon.log"
    proc = start_process(sim.kubeconfig, write_config(tmp_path), log=log)
    try:
        await wait_for(lambda: "; suggestion: " in gang_message(sim), timeout=120)
        # later cycles keep it, once
        await asyncio.sleep(1.0)
        message = gang_message(sim)
    finally:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 60)
    assert HELD in message, log.read_text()[-3000:]
    assert message.endswith(f"; suggestion: {RAISE}")
    assert message.count("; suggestion: ") == 1
    assert len(message.encode()) <= MAX_MESSAGE


def test_each_change_once_and_the_message_within_1_kib() -> None:
    message = with_suggestions("held", ["a", "b", "a"])
    assert message == "held; suggestion: a; suggestion: b"
    assert with_suggestions(message, ["a", "b"]) == message
    long = with_suggestions("x" * 1000, ["fits", "y" * 50])
    assert long == "x" * 1000 + "; suggestion: fits"
    assert len(long.encode()) <= MAX_MESSAGE
