"""The flight recorder end to end: the daemon on the simulated API server records its cycles,
and ``pumice replay`` re-runs them through the same session code.

Replays go through the command line's ``main`` (as a user runs them), in this process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from daemon.workload import gang, node, pod, seed
from pumice.cli import main
from pumice.daemon.recordfile import decode, encode, read_header, recordings, runs
from pumice.model import NodeInfo
from support.daemonrun import Ledger, running_daemon, start_process, wait_for, write_config

pytestmark = pytest.mark.slow

BINPACK_ONLY = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: predicates
  - name: binpack
    arguments:
      binpack.weight: {weight}
"""


def record_config(directory: Path, record: Path, **scheduler: str) -> Path:
    return write_config(directory, record=f"{{dir: '{record}'}}", **scheduler)


def last_run(record: Path) -> Path:
    """The directory of the daemon run's recordings (one per run: ``DIR/run-…``)."""
    [run] = runs(record)
    return run


def replay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["replay", *args])
    out, err = capsys.readouterr()
    return code, out, err


async def test_a_run_under_churn_and_failing_binds_replays_identical(
    sim: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pumice.daemon")
    # identical nodes and random tie-breaks: replaying needs the recorded seed
    seed(sim, [node(f"n{i}", cpu="8") for i in range(6)])
    record = tmp_path / "rec"
    config = record_config(tmp_path, record, tieBreak="random")
    sim.faults.fail(code=500, fraction=0.2, verb="create", resource="pods/binding")
    ledger = Ledger(sim)
    rng = random.Random(7)
    kept = 0
    async with running_daemon(sim.kubeconfig, config) as daemon:
        for wave in range(6):
            batch = gang(f"w{wave}", 4) + [pod(f"w{wave}-loose-{i}") for i in range(8)]
            seed(sim, batch)
            kept += 12
            await asyncio.sleep(0.3)
            # churn: delete some loose pods, pending or bound, while the daemon works
            for i in rng.sample(range(8), 3):
                sim.store.commit("/pods", ("batch", f"w{wave}-loose-{i}"), None)
                kept -= 1
        await wait_for(lambda: len(ledger.bound("pumice")) == kept, timeout=300)
        await wait_for(lambda: daemon.work is not None and daemon.work.in_flight == 0)
        recorder = daemon.recorder
    ledger.close()
    assert recorder is not None and recorder.close()  # everything it was sent is on disk
    assert sim.writes.select(resource="pods/binding", code=500), "no bind ever failed"
    assert recorder.written >= 3
    cycles = [c for c, _ in recordings(last_run(record))]
    assert len(cycles) == recorder.written
    # numbered as the daemon numbers (and logs) its cycles: exactly those that bound pods
    said = [m for r in caplog.records if (m := re.match(r"cycle (\d+): (\d+) binds", r.message))]
    assert cycles == [int(m.group(1)) for m in said if int(m.group(2))]
    bases = [read_header(p, p.read_bytes())[0]["base"] for _, p in recordings(last_run(record))]
    assert bases[0] is None and any(b is not None for b in bases)  # deltas replayed too
    code, out, err = replay(capsys, str(record))
    assert (code, err) == (0, "")
    assert out.startswith(f"identical: {len(cycles)} cycles replayed")
    code, out, _ = replay(capsys, str(record), "--cycle", str(cycles[-1]), "--output", "json")
    assert code == 0 and '"identical": true' in out


async def test_an_altered_snapshot_replays_with_the_difference_named(
    sim: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(sim, [node("n1", cpu="4"), node("n2", cpu="4"), pod("solo", cpu="1")])
    record = tmp_path / "rec"
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, record_config(tmp_path, record)) as daemon:
        await wait_for(lambda: len(ledger.bound("pumice")) == 1)
    ledger.close()
    assert daemon.recorder is not None and daemon.recorder.close()
    [(cycle, path)] = recordings(last_run(record))
    recorded = decode(path)
    [(kind, _, key, chosen)] = recorded.decisions
    assert (kind, key) == ("bind", "batch/solo")
    other = "n2" if chosen == "n1" else "n1"
    # the node the pod went to is cordoned in the recorded picture: replay must go elsewhere
    cordoned = node(chosen, cpu="4")
    cordoned["spec"] = {"unschedulable": True}
    recorded.snapshot.put_node(NodeInfo.from_node(cordoned))
    path.write_bytes(encode(recorded))
    code, out, _ = replay(capsys, str(record))
    assert code == 1
    assert out.strip() == f"cycle {cycle}: pod batch/solo: recorded {chosen}, replayed {other}"


async def test_another_binpack_weight_names_exactly_the_pods_that_move(
    sim: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # b-node is half full with another scheduler's pod. Binpack (weight 10) fills it first;
    # at weight 0 every score ties and the smallest name, a-node, wins. "pinned" can only go
    # to b-node either way, so it is not a change.
    pinned = pod("pinned", cpu="1")
    pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "b-node"}
    seed(
        sim,
        [
            node("a-node", cpu="8"),
            node("b-node", cpu="8"),
            pod("theirs", cpu="4", scheduler="default-scheduler", node_name="b-node"),
            pinned,
            *[pod(f"mover-{i}", cpu="1") for i in range(3)],
        ],
    )
    record = tmp_path / "rec"
    config = tmp_path / "binpack10.yaml"
    config.write_text(
        BINPACK_ONLY.format(weight=10) + "scheduler:\n  period: 100ms\n"
        f"  httpAddress: 127.0.0.1:0\n  record: {{dir: '{record}'}}\n"
    )
    other = tmp_path / "binpack0.yaml"
    other.write_text(BINPACK_ONLY.format(weight=0))
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, config) as daemon:
        await wait_for(lambda: len(ledger.bound("pumice")) == 4)
    assert daemon.recorder is not None and daemon.recorder.close()
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in ledger.bound("pumice")}
    ledger.close()
    assert set(placed.values()) == {"b-node"}
    code, out, _ = replay(capsys, str(record))
    assert code == 0  # the recorded config decides as it did
    code, out, _ = replay(capsys, str(record), "--config", str(other), "--output", "json")
    assert code == 0
    report = json.loads(out)
    assert report["cycles"] == len(recordings(last_run(record)))
    moved = {(c["pod"], c["recorded"], c["replayed"]) for c in report["changed"]}
    assert moved == {(f"batch/mover-{i}", "b-node", "a-node") for i in range(3)}
    assert len(report["changed"]) == 3


def test_run_record_on_the_bundled_example_replays_identical(tmp_path: Path) -> None:
    """``pumice run --sim --until-idle --record DIR`` as a user runs it, then ``replay``."""
    record = tmp_path / "rec"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pumice.cli",
            "run",
            "--sim",
            "--until-idle",
            "--record",
            str(record),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert recordings(last_run(record))
    replayed = subprocess.run(
        [sys.executable, "-m", "pumice.cli", "replay", str(record)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.startswith("identical: ")


def test_run_record_into_a_place_that_cannot_be_a_directory_exits_2(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    ran = subprocess.run(
        [sys.executable, "-m", "pumice.cli", "run", "--record", str(tmp_path / "file" / "rec")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 2
    # (the test environment's broken plugin package is logged before it)
    last = ran.stderr.splitlines()[-1]
    assert last.startswith("pumice run: --record") and last.endswith("Not a directory")


def logged_cycles_that_decided(log: Path) -> list[int]:
    """The cycle numbers of the daemon's ``cycle N: B binds, E evictions, …`` lines with B or
    E above zero (its log: one JSON object a line)."""
    found = []
    for line in log.read_text().splitlines():
        try:
            event = str(json.loads(line).get("event", ""))
        except (ValueError, AttributeError):
            continue
        m = re.match(r"cycle (\d+): (\d+) binds, (\d+) evictions", event)
        if m and (int(m.group(2)) or int(m.group(3))):
            found.append(int(m.group(1)))
    return found


async def test_run_record_dir_keeps_the_configs_bounds_and_the_daemons_cycle_numbers(
    sim: Any, tmp_path: Path
) -> None:
    """``pumice run --record DIR`` records into DIR with the config's keepCycles and maxBytes;
    the cycles kept are the last ones the daemon's log says decided something."""
    seed(sim, [node(f"n{i}", cpu="8") for i in range(3)])
    configured = tmp_path / "configured"
    config = write_config(tmp_path, record=f"{{dir: '{configured}', keepCycles: 3, maxBytes: 1Mi}}")
    record, log = tmp_path / "rec", tmp_path / "daemon.log"
    ledger = Ledger(sim)
    proc = start_process(sim.kubeconfig, config, "--record", str(record), log=log)
    try:
        for wave in range(6):  # each after the last is bound: a deciding cycle each, at least
            seed(sim, [pod(f"wave{wave}-{i}", cpu="100m") for i in range(3)])
            await wait_for(lambda w=wave: len(ledger.bound("pumice")) == 3 * (w + 1), timeout=120)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0, log.read_text()[-2000:]
        ledger.close()
    decided = logged_cycles_that_decided(log)
    assert len(decided) >= 6, decided
    assert [c for c, _ in recordings(last_run(record))] == decided[-3:]
    assert not configured.exists()  # --record's DIR, not the config's dir
    total = sum(p.stat().st_size for p in record.rglob("*") if p.is_file())
    assert 0 < total <= 1 << 20
