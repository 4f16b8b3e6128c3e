"""The daemon end to end: the real client against the simulated API server on loopback.

Invariants are checked over everything the server saw (``Ledger``): each of our pods bound
exactly once and never moved, no node's bound requests over allocatable, other schedulers'
pods never written to.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import socket
from pathlib import Path
from typing import Any

import pytest

from daemon.workload import gang, node, pod, podgroup, seed
from pumice import Action
from pumice.cache import PodState
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow


def assert_bound_exactly_once(ledger: Ledger, expected: int) -> None:
    bound = ledger.bound("pumice")
    assert len(bound) == expected
    accepted = ledger.accepted_binds()
    keys = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in bound}
    assert set(accepted) == keys
    assert all(n == 1 for n in accepted.values()), {k: n for k, n in accepted.items() if n > 1}
    assert ledger.rebinds() == {}
    assert ledger.overcommitted() == {}


async def test_a_thousand_pods_in_gangs_are_bound_exactly_once(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node(f"n{i:02d}", cpu="8", memory="32Gi") for i in range(40)])
    # Other schedulers' pods: some bound (they use capacity), some pending (never ours).
    others = [
        pod(f"other-{i}", cpu="4", scheduler="default-scheduler", node_name=f"n{i:02d}")
        for i in range(10)
    ] + [pod(f"waiting-{i}", scheduler="default-scheduler") for i in range(5)]
    seed(sim, others)
    workload = []
    for g in range(100):
        workload += gang(f"job-{g:03d}", 10)
    seed(sim, workload)
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: len(ledger.bound("pumice")) == 1000, timeout=600)
        assert daemon.cache is not None
        counts = daemon.cache.counts()
        assert counts.get("other/Added") == 10  # counted, on their nodes
    assert_bound_exactly_once(ledger, 1000)
    written = {(w.namespace, w.name) for w in ledger.mutating()}
    assert not any(name.startswith(("other-", "waiting-")) for _, name in written)
    assert all(not p["spec"].get("nodeName") for p in ledger.pods() if "waiting" in str(p))
    ledger.close()


async def test_failing_binds_end_with_every_pod_bound_once(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node(f"n{i}", cpu="8") for i in range(8)])
    workload = []
    for g in range(10):
        workload += gang(f"g{g}", 6)
    workload += [pod(f"loose-{i}") for i in range(40)]
    seed(sim, workload)
    # 10% of binds fail with 500, a few with 409 (the binder reads the pod to resolve those).
    sim.faults.fail(code=500, fraction=0.1, verb="create", resource="pods/binding")
    sim.faults.fail(code=409, fraction=0.05, verb="create", resource="pods/binding")
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: len(ledger.bound("pumice")) == 100, timeout=300)
    failed = sim.writes.select(resource="pods/binding", code=500)
    assert failed, "the fault injection did not fire"
    assert_bound_exactly_once(ledger, 100)
    ledger.close()


async def test_dropped_watches_and_compaction_converge(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node(f"n{i}", cpu="16", memory="64Gi") for i in range(10)])
    ledger = Ledger(sim)
    sim.faults.set_watch_close_interval(1.0)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        for wave in range(6):
            batch = gang(f"w{wave}", 5) + [pod(f"w{wave}-loose-{i}") for i in range(15)]
            seed(sim, batch)
            sim.faults.compact()  # history gone: a watch resuming from before gets 410
            await asyncio.sleep(0.7)
        await wait_for(lambda: len(ledger.bound("pumice")) == 120, timeout=300)
        restarts = sum(i.stats.relists + i.stats.watch_restarts for i in daemon.informers)
        assert restarts > 0, "no watch was ever cut"
    sim.faults.set_watch_close_interval(None)
    assert_bound_exactly_once(ledger, 120)
    ledger.close()


async def test_a_pod_deleted_while_pending_is_simply_gone(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1", cpu="1")])
    seed(sim, [pod("big", cpu="2"), podgroup("pg", 1)])
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: daemon.cycles >= 2)
        sim.store.commit("/pods", ("batch", "big"), None)
        seed(sim, [pod("small", cpu="500m")])
        await wait_for(lambda: len(ledger.bound("pumice")) == 1)
        assert daemon.cache is not None
        [big] = [e for e in daemon.cache.pods.values() if e.key == "batch/big"]
        assert big.state is PodState.LEFT  # out of every session; dropped after a while
        assert daemon.cache.snapshot().task(big.uid) is None
    ledger.close()


async def test_no_session_runs_before_every_initial_list_is_in(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1"), pod("early")])
    # The PriorityClass list fails a few times: the informer retries, and meanwhile the
    # cache is incomplete, so nothing may be scheduled.
    sim.faults.fail(code=500, verb="list", resource="priorityclasses", count=3)
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: sim.faults.injected >= 2, timeout=60)
        assert daemon.cycles == 0 and ledger.bound("pumice") == []
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
    assert sim.faults.injected == 3
    ledger.close()


async def test_gated_pods_wait_untouched_until_their_gates_are_removed(
    sim: Any, tmp_path: Path
) -> None:
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    seed(sim, [node("n1"), gated, pod("free")])
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        await wait_for(lambda: daemon.cycles >= 1)
        assert not [w for w in ledger.mutating() if w.name == "gated"]
        stored = copy.deepcopy(sim.store.table("/pods")[("batch", "gated")])
        del stored["spec"]["schedulingGates"]
        sim.store.commit("/pods", ("batch", "gated"), stored)
        await wait_for(lambda: len(ledger.bound("pumice")) == 2, timeout=60)
    assert_bound_exactly_once(ledger, 2)
    ledger.close()


class FailsTwice(Action):
    """An action that raises in its first two sessions."""

    calls = 0

    def execute(self, session: Any) -> None:
        FailsTwice.calls += 1
        if FailsTwice.calls <= 2:
            raise RuntimeError("this action is broken today")


async def test_a_failing_session_never_stops_the_daemon(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seed(sim, [node("n1"), pod("p")])
    ledger = Ledger(sim)
    config = write_config(tmp_path, actions="fails-twice, enqueue, allocate, backfill")
    async with running_daemon(sim.kubeconfig, config, extra={"fails-twice": FailsTwice}) as d:
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        assert d.failures == 2
    assert "this action is broken today" in caplog.text
    ledger.close()


async def test_systemd_hears_ready_status_watchdog_and_stopping(
    sim: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(path))
    listener.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    monkeypatch.setenv("WATCHDOG_USEC", "200000")  # a ping every 0.1 s
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    seed(sim, [node("n1"), pod("p")])
    heard: list[str] = []

    def drain() -> list[str]:
        with contextlib.suppress(BlockingIOError):
            while True:
                heard.extend(listener.recv(4096).decode().splitlines())
        return heard

    try:
        async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
            await wait_for(lambda: any(h.startswith("STATUS=cycle 1:") for h in drain()))
            await wait_for(lambda: "WATCHDOG=1" in drain())
        drain()
    finally:
        listener.close()
    assert heard.index("READY=1") < heard.index("WATCHDOG=1")
    assert "STOPPING=1" in heard


async def test_a_pod_that_arrives_between_sessions_does_not_wait_a_whole_period(
    sim: Any, tmp_path: Path
) -> None:
    # A period far longer than the test may take: only the early wake can bind the late pod.
    seed(sim, [node("n1", cpu="8", memory="32Gi")])
    seed(sim, [pod("first", cpu="1")])
    ledger = Ledger(sim)
    config = write_config(tmp_path, period="1h")
    async with running_daemon(sim.kubeconfig, config) as daemon:
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        cycles = daemon.cycles
        seed(sim, [pod("late", cpu="1")])
        await wait_for(lambda: len(ledger.bound("pumice")) == 2, timeout=60)
        assert daemon.cycles == cycles + 1  # one session for the late pod, not a busy loop
    assert_bound_exactly_once(ledger, 2)
    ledger.close()
