"""The daemon's suggestions in the cluster (``pumice.daemon.advice``): ``pumice run`` finds,
outside its cycles, what would admit a pending PodGroup and appends ``; suggestion: TEXT`` to
the PodGroup's ``Unschedulable`` condition, once per change, within 1 KiB — never while binds
are due, never in dry-run, and not at all once ``scheduler.suggestions`` is false (a reload
included)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from daemon.workload import node, pod, podgroup, seed
from pumice.commands.config_commands import load_validated
from pumice.commands.explain import daemon_suggestions
from pumice.daemon import Daemon, DaemonOptions
from pumice.daemon.advice import MAX_MESSAGE, with_suggestions
from pumice.kube import KubeSettings
from support.daemonrun import Ledger, start_process, wait_for, write_config

HELD = "queue research: cpu allocated 2 + request 2 exceeds capability 3"
RAISE = "raise the cpu capability of queue research to 4"
RESEARCH = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "research"},
    "spec": {"weight": 1, "capability": {"cpu": "3"}},
}


def gang_message(sim: Any, name: str = "train") -> str:
    groups = "scheduling.volcano.sh/podgroups"
    status = sim.store.table(groups).get(("batch", name), {}).get("status") or {}
    return " ".join(
        str(c.get("message"))
        for c in status.get("conditions") or []
        if c.get("type") == "Unschedulable"
    )


def seed_held_gang(sim: Any) -> None:
    seed(sim, [node("n1", cpu="4"), node("n2", cpu="4"), RESEARCH])
    group = podgroup("train", 2, queue="research")
    seed(
        sim, [group, pod("train-0", cpu="2", group="train"), pod("train-1", cpu="2", group="train")]
    )


@contextlib.asynccontextmanager
async def advising_daemon(
    kubeconfig: Path, config: Path, *, dry_run: bool = False, bound: list[int] | None = None
) -> AsyncIterator[Daemon]:
    """The daemon in this event loop with ``pumice run``'s suggester; the config reloads."""
    cfg, host, _ = load_validated(str(config))
    stop = asyncio.Event()
    holder: list[Daemon] = []

    def on_bound(*, namespace: str, name: str, node: str) -> None:
        # the search's progress when each bind completes
        advisor = holder[0].reporter.advisor if holder[0].reporter else None
        if bound is not None and advisor is not None and advisor.pacer is not None:
            running = advisor.running is not None and not advisor.running.done()
            bound.append((advisor.pacer, advisor.pacer.steps) if running else -1)

    daemon = Daemon(
        DaemonOptions(
            config=cfg,
            host=host,
            kube=KubeSettings(kubeconfig=str(kubeconfig)),
            dry_run=dry_run,
            stop=stop,
            on_bound=on_bound,
            config_path=str(config),
            config_loader=load_validated,
            suggester=daemon_suggestions,
        )
    )
    holder.append(daemon)
    assert daemon.reloader is not None
    daemon.reloader.interval = 0.1
    task = asyncio.get_running_loop().create_task(daemon.run())
    try:
        yield daemon
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 60) == 0


async def test_pumice_run_appends_the_verified_suggestion(sim: Any, tmp_path: Path) -> None:
    seed_held_gang(sim)
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


async def test_binds_are_never_held_back_by_a_search(sim: Any, tmp_path: Path) -> None:
    """While pods are bound, a running search takes not one step: counted at every bind."""
    nodes = [node(f"n{i:03}", cpu="4") for i in range(300)]
    # a gang no node can hold: its search verifies on all 300 nodes, which takes a while
    seed(
        sim,
        [*nodes, podgroup("huge", 2), *(pod(f"huge-{i}", cpu="6", group="huge") for i in range(2))],
    )
    steps_at_bind: list[Any] = []
    ledger = Ledger(sim)
    async with advising_daemon(
        sim.kubeconfig, write_config(tmp_path), bound=steps_at_bind
    ) as daemon:

        def search_started() -> bool:
            advisor = daemon.reporter.advisor if daemon.reporter else None
            return advisor is not None and advisor.pacer is not None and advisor.pacer.steps > 0

        await wait_for(search_started, timeout=60)
        advisor = daemon.reporter.advisor if daemon.reporter else None
        assert advisor is not None and advisor.pacer is not None
        # binds that take a while (each in flight 0.3 s): the search meets them due and waits
        sim.faults.set_latency(0.3)
        seed(sim, [pod(f"small-{i}", cpu="100m") for i in range(60)])
        await wait_for(lambda: len(ledger.bound()) == 60, timeout=60)
        sim.faults.set_latency(0.0)
        await wait_for(lambda: "; suggestion: " in gang_message(sim, "huge"), timeout=180)

    ledger.close()
    assert len(steps_at_bind) == 60
    # every bind completed while one search was running (not after it, nor over two), and it
    # took no step between the first bind and the last: it waited while binds were due
    assert -1 not in steps_at_bind
    assert len(set(steps_at_bind)) == 1, steps_at_bind
    assert steps_at_bind[0][0].waits >= 1
    assert "lower the cpu request of pod batch/huge-0 to 4" in gang_message(sim, "huge")


async def test_switched_off_by_a_reload_and_never_in_dry_run(sim: Any, tmp_path: Path) -> None:
    seed_held_gang(sim)
    config = write_config(tmp_path)
    async with advising_daemon(sim.kubeconfig, config) as daemon:
        await wait_for(lambda: RAISE in gang_message(sim), timeout=120)
        assert daemon.reloader is not None
        config.write_text(config.read_text() + "  suggestions: false\n")
        await wait_for(lambda: daemon.reloader.results.get("applied") == 1)  # type: ignore[union-attr]
        # the reloaded config is the one in force: what was found is taken back
        await wait_for(lambda: "; suggestion: " not in gang_message(sim), timeout=60)
        assert HELD in gang_message(sim)
    config = write_config(tmp_path)
    async with advising_daemon(sim.kubeconfig, config, dry_run=True) as daemon:
        await wait_for(lambda: daemon.cycles >= 1, timeout=60)
        assert daemon.reporter is not None and daemon.reporter.advisor is None


def test_each_change_once_and_the_message_within_1_kib() -> None:
    message = with_suggestions("held", ["a", "b", "a"])
    assert message == "held; suggestion: a; suggestion: b"
    assert with_suggestions(message, ["a", "b"]) == message
    long = with_suggestions("x" * 1000, ["fits", "y" * 50])
    assert long == "x" * 1000 + "; suggestion: fits"
    assert len(long.encode()) <= MAX_MESSAGE
    # a text is compared whole: one that is the start of another is still added
    message = with_suggestions("held", ["add 1 node(s) like n1-2"])
    assert with_suggestions(message, ["add 1 node(s) like n1"]) == (
        "held; suggestion: add 1 node(s) like n1-2; suggestion: add 1 node(s) like n1"
    )
