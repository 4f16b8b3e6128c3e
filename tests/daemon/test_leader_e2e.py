"""Two ``pumice run --leader-elect`` replicas against one sim: one binds, the other stands by
warm; killed hard, the leader's Lease is taken over and the standby binds the rest."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import re
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.workload import gang, node, pod, seed
from pumice.commands.config_commands import load_checked
from pumice.daemon import Daemon, DaemonOptions
from pumice.kube import KubeSettings
from support.daemonrun import (
    Ledger,
    kill_hard,
    running_daemon,
    start_process,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.slow

# Short periods keep the test quick; nothing asserts on how long anything took.
ELECTION = "{enabled: true, leaseDuration: 3s, renewDeadline: 2s, retryPeriod: 200ms}"


def lease(sim: Any, name: str = "pumice") -> dict[str, Any] | None:
    for table in sim.store.tables():
        if table.endswith("leases"):
            found = sim.store.table(table).get(("kube-system", name))
            if found is not None:
                return dict(found)
    return None


def holder(sim: Any) -> str:
    return str(((lease(sim) or {}).get("spec") or {}).get("holderIdentity") or "")


def http_address(log: Path) -> str | None:
    found = re.search(r"health and metrics on http://(\S+)", log.read_text(errors="replace"))
    return found.group(1) if found else None


async def readyz(address: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as client,
        client.get(f"http://{address}/readyz") as response,
    ):
        return response.status, await response.text()


def alive(procs: dict[str, subprocess.Popen[bytes]], logs: dict[str, Path]) -> None:
    for who, proc in procs.items():
        if proc.poll() is not None:
            raise AssertionError(f"replica {who} exited {proc.returncode}: {logs[who].read_text()}")


def writes_by(sim: Any, identity: str) -> list[Any]:
    return list(sim.writes.select(user_agent=f"({identity})"))


async def test_only_the_leader_binds_and_the_standby_takes_over(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node(f"n{i:02d}", cpu="8") for i in range(10)])
    config = write_config(tmp_path, leaderElection=ELECTION)
    ledger = Ledger(sim)
    logs = {who: tmp_path / f"{who}.log" for who in ("a", "b")}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        procs["a"] = start_process(sim.kubeconfig, config, "--identity", "replica-a", log=logs["a"])
        await wait_for(lambda: alive(procs, logs) or holder(sim) == "replica-a", timeout=120)
        procs["b"] = start_process(sim.kubeconfig, config, "--identity", "replica-b", log=logs["b"])
        # The standby is ready (its cache synced) though it does not lead.
        await wait_for(lambda: alive(procs, logs) or http_address(logs["b"]), timeout=120)
        address_b = http_address(logs["b"])
        assert address_b is not None
        for _ in range(600):
            status, body = await readyz(address_b)
            if status == 200:
                break
            await asyncio.sleep(0.2)
        assert status == 200 and "standby" in body, body

        first = []
        for g in range(10):
            first += gang(f"first-{g}", 4)
        seed(sim, first)
        await wait_for(lambda: alive(procs, logs) or len(ledger.bound()) == 40, timeout=180)
        binds_a = [w for w in writes_by(sim, "replica-a") if w.resource == "pods/binding"]
        assert len(binds_a) == 40
        # The standby wrote nothing but its attempts on the Lease.
        assert {w.resource for w in writes_by(sim, "replica-b")} <= {"leases"}

        kill_hard(procs.pop("a"))
        second = []
        for g in range(10):
            second += gang(f"second-{g}", 4)
        seed(sim, second)
        await wait_for(lambda: alive(procs, logs) or holder(sim) == "replica-b", timeout=180)
        await wait_for(lambda: alive(procs, logs) or len(ledger.bound()) == 80, timeout=180)
        binds_b = [w for w in writes_by(sim, "replica-b") if w.resource == "pods/binding"]
        assert {w.name for w in binds_b} == {
            p["metadata"]["name"] for p in second if p["kind"] == "Pod"
        }
    finally:
        for proc in procs.values():
            kill_hard(proc)
    accepted = ledger.accepted_binds()
    assert len(accepted) == 80 and set(accepted.values()) == {1}
    assert ledger.rebinds() == {}
    assert (lease(sim) or {})["spec"]["leaseTransitions"] >= 1
    ledger.close()


async def test_a_leader_that_cannot_renew_exits_non_zero(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1")])
    cfg, host = load_checked(str(write_config(tmp_path, leaderElection=ELECTION)))
    daemon = Daemon(
        DaemonOptions(
            config=cfg,
            host=host,
            kube=KubeSettings(kubeconfig=str(sim.kubeconfig)),
            identity="doomed",
        )
    )
    task = asyncio.get_running_loop().create_task(daemon.run())
    try:
        await wait_for(lambda: task.done() or daemon.leading, timeout=60)
        assert holder(sim) == "doomed"
        sim.faults.fail(500, verb="update", resource="leases")
        code = await asyncio.wait_for(task, 120)
    finally:
        task.cancel()
    assert code == 1
    assert daemon.leadership.lost.is_set() and not daemon.leading


async def test_a_dry_run_instance_never_touches_the_lease(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1"), *gang("g", 2)])
    cfg, host = load_checked(str(write_config(tmp_path, leaderElection=ELECTION)))
    stop = asyncio.Event()
    daemon = Daemon(
        DaemonOptions(
            config=cfg,
            host=host,
            kube=KubeSettings(kubeconfig=str(sim.kubeconfig)),
            dry_run=True,
            leader_elect=True,
            stop=stop,
        )
    )
    task = asyncio.get_running_loop().create_task(daemon.run())
    await wait_for(lambda: task.done() or daemon.cycles >= 1, timeout=60)
    stop.set()
    assert await asyncio.wait_for(task, 60) == 0
    assert lease(sim) is None
    assert sim.writes.select() == []


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def test_the_daemon_schedules_only_once_another_holders_lease_expires(
    sim: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(tmp_path / "notify.sock"))
    listener.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify.sock"))
    heard: list[str] = []

    def drain() -> list[str]:
        with contextlib.suppress(BlockingIOError):
            while True:
                heard.extend(listener.recv(4096).decode().splitlines())
        return heard

    now = _now()
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
        await wait_for(lambda: daemon.synced, timeout=60)
        assert daemon.cycles == 0 and ledger.bound("pumice") == []  # someone else leads
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        spec = (lease(sim) or {})["spec"]
        assert spec["holderIdentity"] == daemon.leadership.identity
        assert spec["leaseTransitions"] == 1
    assert holder(sim) == ""  # handed back at exit
    ledger.close()
    drain()
    listener.close()
    # systemd's status said who led while this one stood by.
    assert any(h.startswith("STATUS=standby") and "someone-else" in h for h in heard), heard


async def test_a_lease_taken_by_another_ends_the_run_with_1(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1")])
    config = write_config(
        tmp_path,
        leaderElection="{enabled: true, leaseDuration: 2s, renewDeadline: 1s, retryPeriod: 200ms}",
    )
    cfg, host = load_checked(str(config))
    daemon = Daemon(
        DaemonOptions(config=cfg, host=host, kube=KubeSettings(kubeconfig=str(sim.kubeconfig)))
    )

    async def steal() -> None:  # another instance that keeps renewing the Lease as its own
        while True:
            for table in list(sim.store.tables()):
                stored = sim.store.table(table).get(("kube-system", "pumice"))
                if table.endswith("leases") and stored is not None:
                    stored = copy.deepcopy(stored)
                    stored["spec"]["holderIdentity"] = "thief"
                    stored["spec"]["renewTime"] = _now()
                    sim.store.commit(table, ("kube-system", "pumice"), stored)
            await asyncio.sleep(0.1)

    task = asyncio.get_running_loop().create_task(daemon.run())
    await wait_for(lambda: task.done() or daemon.cycles >= 1, timeout=60)
    thief = asyncio.get_running_loop().create_task(steal())
    try:
        assert await asyncio.wait_for(task, 60) == 1
    finally:
        thief.cancel()
        task.cancel()
    assert daemon.leadership.lost.is_set() and holder(sim) == "thief"
