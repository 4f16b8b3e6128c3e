"""SIGTERM to a leading ``pumice run`` during a burst of binds, with systemd's notification
socket: binds in flight complete, the Lease is released and the standby takes it at once,
exit 0; READY=1 after sync, WATCHDOG=1 while the loop turns, STATUS=, STOPPING=1."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from daemon.test_leader_e2e import alive, holder, writes_by
from daemon.workload import gang, node, seed
from support.daemonrun import Ledger, kill_hard, start_process, wait_for, write_config

pytestmark = pytest.mark.slow

# A Lease that would take a minute to expire: a standby holding it sooner proves the release.
ELECTION = "{enabled: true, leaseDuration: 60s, renewDeadline: 40s, retryPeriod: 200ms}"


def start_notified(
    kubeconfig: Path, config: Path, identity: str, log: Path, notify: Path
) -> subprocess.Popen[bytes]:
    """``pumice run`` as systemd would start it: $NOTIFY_SOCKET and $WATCHDOG_USEC set."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NOTIFY_SOCKET": str(notify)}
    env["WATCHDOG_USEC"] = "400000"  # a ping every 0.2 s
    env.pop("WATCHDOG_PID", None)
    # -vv: the test counts the "bound" lines, a debug line per bind outside dry-run
    argv = [sys.executable, "-m", "pumice.cli", "-vv", "run", "--kubeconfig", str(kubeconfig)]
    argv += ["--config", str(config), "--identity", identity]
    return subprocess.Popen(argv, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env)


async def test_sigterm_finishes_binds_releases_the_lease_and_exits_0(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node(f"n{i:02d}", cpu="16") for i in range(10)])
    config = write_config(tmp_path, leaderElection=ELECTION)
    holders: list[str] = []

    def on_change(change: Any) -> None:
        if change.table.endswith("leases") and change.obj is not None:
            holders.append(str((change.obj.get("spec") or {}).get("holderIdentity") or ""))

    sim.store.subscribe(on_change)
    ledger = Ledger(sim)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(tmp_path / "notify.sock"))
    listener.setblocking(False)
    heard: list[str] = []

    def drain() -> list[str]:
        with contextlib.suppress(BlockingIOError):
            while True:
                heard.extend(listener.recv(4096).decode().splitlines())
        return heard

    logs = {who: tmp_path / f"{who}.log" for who in ("a", "b")}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        procs["a"] = start_notified(
            sim.kubeconfig, config, "replica-a", logs["a"], tmp_path / "notify.sock"
        )
        await wait_for(lambda: alive(procs, logs) or "READY=1" in drain(), timeout=120)
        await wait_for(lambda: alive(procs, logs) or holder(sim) == "replica-a", timeout=120)
        procs["b"] = start_process(sim.kubeconfig, config, "--identity", "replica-b", log=logs["b"])
        await wait_for(lambda: alive(procs, logs) or "WATCHDOG=1" in drain(), timeout=120)

        workload = []
        for g in range(40):
            workload += gang(f"burst-{g:02d}", 5)
        sim.faults.set_latency(0.3)  # binds take a while: SIGTERM lands among them
        seed(sim, workload)
        await wait_for(lambda: alive(procs, logs) or len(ledger.bound()) >= 20, timeout=180)
        a = procs.pop("a")
        a.send_signal(signal.SIGTERM)
        bound_at_signal = len(ledger.bound())
        code = await asyncio.to_thread(a.wait, 120)
        assert code == 0, logs["a"].read_text()[-3000:]
        # Released: empty holder, and the standby holds the Lease long before 60 s are up.
        assert "" in holders[holders.index("replica-a") :], holders
        await wait_for(lambda: alive(procs, logs) or holder(sim) == "replica-b", timeout=30)
        sim.faults.set_latency(0.0)
        # What the old leader had committed it bound before leaving; later pods are the
        # standby's.
        late = []
        for g in range(10):
            late += gang(f"late-{g}", 5)
        seed(sim, late)
        await wait_for(lambda: alive(procs, logs) or len(ledger.bound()) == 250, timeout=240)
    finally:
        for proc in procs.values():
            kill_hard(proc)
        drain()
        listener.close()
        sim.store.unsubscribe(on_change)
    # Every bind replica A sent was answered and seen through: one "bound" line per accepted
    # bind in its log, none cut off by the shutdown.
    accepted_a = [
        w for w in writes_by(sim, "replica-a") if w.resource == "pods/binding" and w.code == 201
    ]
    logged = re.findall(r"bound batch/\S+ to \S+", logs["a"].read_text())
    assert bound_at_signal < len(accepted_a) == len(logged)
    binds_b = {w.name for w in writes_by(sim, "replica-b") if w.resource == "pods/binding"}
    assert {f"late-{g}-{i}" for g in range(10) for i in range(5)} <= binds_b
    accepted = ledger.accepted_binds()
    assert len(accepted) == 250 and set(accepted.values()) == {1}
    assert ledger.rebinds() == {}
    # systemd heard the whole life of replica A.
    assert heard.index("READY=1") < heard.index("WATCHDOG=1") < heard.index("STOPPING=1")
    assert any(h.startswith("STATUS=cycle ") for h in heard)
    ledger.close()
