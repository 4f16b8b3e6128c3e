"""``pumice run`` as a process: killed hard mid-run and restarted, and the ``make run`` demo."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from daemon.workload import gang, node, seed
from support.daemonrun import Ledger, kill_hard, run_demo, start_process, wait_for, write_config

pytestmark = pytest.mark.slow


async def test_kill_9_mid_run_then_restart_binds_nothing_twice(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node(f"n{i:02d}", cpu="8") for i in range(20)])
    workload = []
    for g in range(40):
        workload += gang(f"job-{g:02d}", 10)
    seed(sim, workload)
    ledger = Ledger(sim)
    config = write_config(tmp_path)
    log = tmp_path / "daemon.log"
    first = start_process(sim.kubeconfig, config, log=log)
    try:
        # Slow the binds down so that the kill lands while some are in flight.
        sim.faults.set_latency(0.02)
        await wait_for(lambda: len(ledger.bound("pumice")) >= 60, timeout=180)
    finally:
        kill_hard(first)
    killed_at = len(ledger.bound("pumice"))
    sim.faults.set_latency(0.0)
    assert killed_at < 400, "the first run finished before it was killed"
    second = start_process(sim.kubeconfig, config, log=log)
    try:
        await wait_for(lambda: len(ledger.bound("pumice")) == 400, timeout=300)
    finally:
        second.terminate()
        await asyncio.to_thread(second.wait, 60)
    assert second.returncode == 0, log.read_text()[-3000:]
    accepted = ledger.accepted_binds()
    assert len(accepted) == 400 and set(accepted.values()) == {1}
    assert ledger.rebinds() == {}
    assert ledger.overcommitted() == {}
    ledger.close()


async def test_the_make_run_demo_binds_the_example_and_exits_0(tmp_path: Path) -> None:
    """What ``make run`` runs: the bundled example, simulated in-process, until idle, in the
    environment ``make run`` has (without the test-only plugin packages conftest adds)."""
    result = await run_demo(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    binds = [line for line in result.stdout.splitlines() if line.startswith("bound ")]
    assert len(binds) >= 5, result.stdout
    assert any("batch/" in line for line in binds)
    assert "node utilisation" in result.stdout
    assert "cpu-1" in result.stdout
    assert "broken-plugin" not in result.stderr  # test-only packages are not in this env


@pytest.mark.parametrize(
    ("args", "words"),
    [
        # the missing file is named as missing (the loader alone said "Expected key
        # current-context")
        (
            ["--kubeconfig", "/nonexistent/kubeconfig"],
            "kubeconfig /nonexistent/kubeconfig (from --kubeconfig or scheduler.kubeconfig): "
            "no such file",
        ),
        (["--sim", "/nonexistent/cluster.yaml"], "/nonexistent/cluster.yaml"),
        (["--qps", "-1"], "--qps"),
        (["--burst", "-5"], "--burst"),
    ],
)
def test_bad_input_exits_2_naming_it(args: list[str], words: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pumice.cli", "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    # one line and nothing before it (no health server's address, no log line); the test-only
    # broken plugin package's own warning aside
    lines = [line for line in result.stderr.splitlines() if "broken-plugin" not in line]
    assert len(lines) == 1 and lines[0].startswith("pumice run:"), result.stderr
    assert words in lines[0]
