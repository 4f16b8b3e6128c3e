"""Shadow runs on the sim: pumice decides beside a live scheduler and reports where they differ.

Each shadow is ``pumice run --shadow`` in a process of its own, as a user runs it. The live
scheduler's binds are slowed by the sim's ``latency`` fault, so that the shadow sees every pod
pending before it is bound (a pod first seen bound would count nothing); the shadow's period
(``SHADOW_PERIOD``) is longer than those binds take, since a pod the live scheduler has not
bound by the end of the shadow's next cycle is ``only_shadow``. Every test also reads the sim's
write log: the shadow, told apart by the identity in its User-Agent, never wrote anything.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sim.simkit import bind

from daemon.workload import gang, node, pod, seed
from support.daemonrun import Ledger, kill_hard, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

KEYS = ["cycle", "pods", "same", "different", "only_shadow", "only_live"]
LIVE_BIND_LATENCY = 0.3
"""Seconds the sim waits before handling each request once the pods come (binds included)."""
SHADOW_PERIOD = "3s"
"""The shadow's period: its next cycle ends well after the live scheduler's binds arrive."""


def report_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def totals(lines: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"same": 0, "different": [], "only_shadow": 0, "only_live": 0}
    for line in lines:
        assert list(line) == KEYS, line
        out["same"] += line["same"]
        out["different"] += line["different"]
        out["only_shadow"] += line["only_shadow"]
        out["only_live"] += line["only_live"]
    return out


def settled(lines: list[dict[str, Any]]) -> int:
    """Pods the report settled, whatever the outcome."""
    t = totals(lines)
    return int(t["same"] + len(t["different"]) + t["only_shadow"] + t["only_live"])


def config_dir(
    tmp_path: Path, name: str, binpack_weight: int | None = None, period: str = "100ms"
) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    path = write_config(directory, period=period)
    if binpack_weight is not None:
        text = path.read_text()
        binpack = "  - name: binpack\n"
        assert text.count(binpack) == 1
        weighted = f"{binpack}    arguments:\n      binpack.weight: {binpack_weight}\n"
        path.write_text(text.replace(binpack, weighted))
    return path


def shadow_process(
    kubeconfig: Path, config: Path, *flags: str, log: Path, stdout: Path | None = None
) -> subprocess.Popen[bytes]:
    """``pumice run --shadow FLAGS`` as a child: stderr to ``log``, stdout to ``stdout``
    (or to ``log`` too)."""
    err = log.open("ab")
    out = stdout.open("ab") if stdout is not None else err
    command = [sys.executable, "-m", "pumice.cli", "run", "--kubeconfig", str(kubeconfig)]
    return subprocess.Popen(
        [*command, "--config", str(config), "--shadow", *flags],
        stdout=out,
        stderr=err if stdout is not None else subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


async def scrape_metrics(log: Path) -> str:
    """The /metrics exposition of the process that wrote ``log`` (its address is logged)."""
    found = re.search(r"health and metrics on (http://[0-9.:]+)", log.read_text())
    assert found, log.read_text()[-2000:]
    async with aiohttp.ClientSession() as http, http.get(f"{found.group(1)}/metrics") as resp:
        assert resp.status == 200
        return await resp.text()


def in_log(log: Path, *words: str) -> bool:
    text = log.read_text() if log.exists() else ""
    return all(w in text for w in words)


async def test_beside_a_live_pumice_with_the_same_config_the_shadow_agrees_fully(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node(f"n{i}", cpu="4") for i in range(1, 4)])
    report, log = tmp_path / "report.jsonl", tmp_path / "shadow.log"
    ledger = Ledger(sim)
    # Gangs: neither scheduler places a batch before all of it is there, so both decide it in
    # one session, in the same order.
    batches = [("g0", 3, "1"), ("g1", 2, "500m"), ("g2", 4, "250m"), ("g3", 2, "2")]
    proc = shadow_process(
        sim.kubeconfig,
        config_dir(tmp_path, "shadow", period=SHADOW_PERIOD),
        *("--identity", "shadow-a", "--report", str(report)),
        "--leader-elect",  # a shadow never campaigns: no Lease written either
        log=log,
    )
    try:
        async with running_daemon(sim.kubeconfig, config_dir(tmp_path, "live")):
            await wait_for(lambda: in_log(log, "cache synced"), timeout=120)
            sim.faults.set_latency(LIVE_BIND_LATENCY)
            placed = 0
            for name, members, cpu in batches:
                seed(sim, gang(name, members, cpu=cpu))
                placed += members
                await wait_for(lambda n=placed: len(ledger.bound()) == n, timeout=60)  # type: ignore[misc]
                # ... and the shadow has seen the binds (its cache follows the cluster)
                await wait_for(lambda n=placed: settled(report_lines(report)) >= n)  # type: ignore[misc]
        os.kill(proc.pid, signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 60) == 0, log.read_text()[-3000:]
    finally:
        kill_hard(proc)
    lines = report_lines(report)
    assert totals(lines) == {"same": 11, "different": [], "only_shadow": 0, "only_live": 0}
    assert sum(line["pods"] for line in lines) == 11  # every pod was decided once, pending
    assert len(ledger.accepted_binds()) == 11 and ledger.rebinds() == {}
    assert ledger.mutating("pumice") != []  # the log sees the live scheduler's writes ...
    assert ledger.mutating("shadow-a") == []  # ... and none from the shadow
    ledger.close()


async def test_beside_a_live_pumice_with_another_binpack_weight_the_movers_are_named(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node("n1", cpu="4"), node("n2", cpu="4")])
    # n1 is the fuller node: the packing shadow (binpack weight 10) puts every free pod there,
    # the live scheduler (binpack off) spreads them to the emptier n2. Pinned pods agree.
    seed(sim, [pod("base", cpu="2", node_name="n1")])
    ledger = Ledger(sim)
    report, log = tmp_path / "report.jsonl", tmp_path / "shadow.log"
    live_config = config_dir(tmp_path, "live", binpack_weight=0)
    shadow_config = config_dir(tmp_path, "shadow", binpack_weight=10, period=SHADOW_PERIOD)
    proc = shadow_process(
        sim.kubeconfig,
        shadow_config,
        *("--identity", "shadow-b", "--report", str(report)),
        log=log,
    )
    try:
        async with running_daemon(sim.kubeconfig, live_config):
            await wait_for(lambda: in_log(log, "cache synced"), timeout=120)
            sim.faults.set_latency(LIVE_BIND_LATENCY)
            for i in range(3):
                pinned = pod(f"pinned-{i}")
                pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n1"}
                seed(sim, [pinned, pod(f"free-{i}")])
                await wait_for(lambda n=i: len(ledger.bound()) == 2 * (n + 1) + 1, timeout=60)  # type: ignore[misc]
                await wait_for(lambda n=i: settled(report_lines(report)) == 2 * (n + 1))  # type: ignore[misc]
            sim.faults.set_latency(0)
            metrics = await scrape_metrics(log)
        os.kill(proc.pid, signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 60) == 0, log.read_text()[-3000:]
    finally:
        kill_hard(proc)
    lines = report_lines(report)
    assert totals(lines) == {
        "same": 3,
        "different": [{"pod": f"batch/free-{i}", "shadow": "n1", "live": "n2"} for i in range(3)],
        "only_shadow": 0,
        "only_live": 0,
    }
    assert 'pumice_shadow_decisions_total{outcome="different"} 3.0' in metrics
    assert 'pumice_shadow_decisions_total{outcome="same"} 3.0' in metrics
    assert 'pumice_shadow_decisions_total{outcome="only_live"} 0.0' in metrics
    assert "pumice_shadow_agreement_ratio 0.5" in metrics
    assert "pumice_shadow_open_predictions 0.0" in metrics
    assert ledger.mutating("shadow-b") == []
    assert ledger.mutating("pumice") != []
    ledger.close()


async def test_beside_a_scheduler_of_another_name_on_pods_the_test_binds(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node("n1", cpu="4"), node("n2", cpu="4")])
    nowhere = pod("nowhere", scheduler="other")
    nowhere["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n9"}  # the shadow: pending
    seed(
        sim,
        [
            pod("early", scheduler="other", node_name="n1"),  # bound before the shadow: nothing
            pod("agreed", scheduler="other"),
            pod("moved", scheduler="other"),
            pod("ignored", scheduler="other"),  # never bound: only the shadow would place it
            nowhere,
            pod("theirs", scheduler="pumice"),  # pumice's own pod: not watched by this shadow
        ],
    )
    ledger = Ledger(sim)
    log, out = tmp_path / "shadow.log", tmp_path / "report.jsonl"
    proc = shadow_process(
        sim.kubeconfig,
        config_dir(tmp_path, "shadow", period=SHADOW_PERIOD),
        *("--shadow-of", "other", "--identity", "shadow-c", "--until-idle"),
        log=log,
        stdout=out,  # without --report the report is the process's stdout
    )
    try:
        chose = "shadow: would bind batch/{} to "
        await wait_for(
            lambda: (
                in_log(log, *(chose.format(p) for p in ("agreed", "moved", "ignored")))
                and in_log(log, "pending: batch/nowhere")
            ),
            timeout=120,
        )
        text = log.read_text()
        shadow = {p: text.split(chose.format(p), 1)[1][:2] for p in ("agreed", "moved", "ignored")}
        other = {"n1": "n2", "n2": "n1"}
        api = await sim.client()
        try:
            for name, target in [
                ("nowhere", "n2"),
                ("agreed", shadow["agreed"]),
                ("moved", other[shadow["moved"]]),
            ]:
                status, body = await bind(api, name, target, namespace="batch")
                assert status == 201, body
        finally:
            await api.close()
        code = await asyncio.to_thread(proc.wait, 60)  # --until-idle: it ends by itself
        assert code == 0, log.read_text()[-3000:]
    finally:
        kill_hard(proc)
    lines = report_lines(out)  # every line of stdout is a report line
    assert lines[0]["pods"] == 4 and sum(line["pods"] for line in lines) == 4
    assert totals(lines) == {
        "same": 1,
        "different": [
            {"pod": "batch/moved", "shadow": shadow["moved"], "live": other[shadow["moved"]]}
        ],
        "only_shadow": 1,
        "only_live": 1,
    }
    assert sim.store.table("/pods")[("batch", "theirs")]["spec"].get("nodeName") is None
    assert ledger.mutating("shadow-c") == []
    assert len(ledger.accepted_binds()) == 3  # the test's own binds are in the log
    ledger.close()
