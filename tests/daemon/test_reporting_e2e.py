"""What the daemon writes (or, in dry-run, only logs) about pods it cannot or may not place."""

from __future__ import annotations

import asyncio
import copy
import logging
from pathlib import Path
from typing import Any

import pytest

from daemon.workload import condition, events_about, node, pod, podgroup, seed
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow


def malformed_pod(sim: Any, name: str) -> None:
    """A pod whose cpu request is not a quantity, stored without the server's validation (a
    real API server would refuse it; the cache must cope with it all the same)."""
    sim.create(pod(name))
    stored = copy.deepcopy(sim.store.table("/pods")[("batch", name)])
    stored["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "two-and-a-bit"
    sim.store.commit("/pods", ("batch", name), stored)


def malformed_podgroup(sim: Any, name: str) -> None:
    """A PodGroup whose minResources do not parse, stored past the server's validation."""
    table = "scheduling.volcano.sh/podgroups"
    sim.create(podgroup(name, 1))
    stored = copy.deepcopy(sim.store.table(table)[("batch", name)])
    stored["spec"]["minResources"] = {"cpu": "plenty"}
    sim.store.commit(table, ("batch", name), stored)


async def test_dry_run_writes_nothing_and_logs_every_decision(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seed(sim, [node(f"n{i}", cpu="4") for i in range(1, 5)])
    # huge fits the queue's share (16 cpu) but no node (4 cpu each)
    seed(sim, [pod(f"p{i}", cpu="1") for i in range(4)] + [pod("huge", cpu="5")])
    before = len(sim.writes)
    ledger = Ledger(sim)
    caplog.set_level(logging.INFO, logger="pumice")
    async with running_daemon(sim.kubeconfig, write_config(tmp_path), dry_run=True) as daemon:
        await wait_for(lambda: daemon.cycles >= 1 and "pending: batch/huge" in caplog.text)
        await asyncio.sleep(1.0)  # more periods: still nothing may be written
        # Nothing changed, so no session decided it all again (and logged it twice).
        assert daemon.cycles == 1
    assert len(sim.writes) == before, [w.path for w in list(sim.writes)[before:]]
    assert ledger.bound("pumice") == [] and ledger.placements == {}
    text = caplog.text
    for i in range(4):
        assert f"dry-run: bind batch/p{i} to n" in text
    assert "nodeorder=" in text and "next best" in text
    assert "pending: batch/huge: 0/4 nodes are available: 4 Insufficient cpu" in text
    ledger.close()


async def test_bad_objects_are_reported_and_everything_else_is_scheduled(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node("n1", cpu="8"), node("n2", cpu="8")])
    seed(
        sim,
        [
            pod("orphan", group="missing"),  # names a PodGroup that does not exist
            podgroup("lost", 1, queue="nowhere"),  # names a queue that does not exist
            pod("lost-0", group="lost"),
            pod("odd-0", group="odd"),
            podgroup("fine", 2),
            pod("fine-0", group="fine"),
            pod("fine-1", group="fine"),
            pod("loose"),
        ],
    )
    malformed_pod(sim, "garbled")
    malformed_podgroup(sim, "odd")  # its minResources do not parse
    ledger = Ledger(sim)
    expected = {
        "orphan": "podgroup batch/missing does not exist",
        "lost-0": "'nowhere'",
        "odd-0": "plenty",
        "garbled": "two-and-a-bit",
    }

    # The server refuses any write to a pod it cannot decode (the status patch of "garbled"
    # is a 400, as on a real API server), so that pod can only get the event.
    conditioned = {n: w for n, w in expected.items() if n != "garbled"}

    def reported() -> bool:
        return all(
            (c := condition(sim, name)) is not None and words in str(c.get("message"))
            for name, words in conditioned.items()
        )

    def status(table: str, key: tuple[str, str]) -> dict[str, Any]:
        return dict(sim.store.table(table).get(key, {}).get("status") or {})

    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: len(ledger.bound("pumice")) == 3, timeout=120)
        await wait_for(reported, timeout=60)
        await wait_for(lambda: all(events_about(sim, n) for n in expected), timeout=60)
        # PodGroup and Queue status as Volcano writes them
        groups = "scheduling.volcano.sh/podgroups"
        await wait_for(lambda: status(groups, ("batch", "fine")).get("phase") == "Running")
        queues = "scheduling.volcano.sh/queues"
        await wait_for(lambda: status(queues, ("", "default")).get("running", 0) >= 1)
    fine = status(groups, ("batch", "fine"))
    assert [c["type"] for c in fine.get("conditions", [])] == ["Scheduled"]
    allocated = status(queues, ("", "default"))["allocated"]
    assert allocated.get("cpu") in ("750m", "0.75")  # three pods of 250m
    bound = sorted(p["metadata"]["name"] for p in ledger.bound("pumice"))
    assert bound == ["fine-0", "fine-1", "loose"]
    for name, words in expected.items():
        if name in conditioned:
            c = condition(sim, name)
            assert c is not None and c["status"] == "False" and c["reason"] == "Unschedulable"
        assert any(
            reason == "FailedScheduling" and words in message
            for reason, message in events_about(sim, name)
        ), events_about(sim, name)
    ledger.close()


async def test_kubectl_describe_shows_our_events_and_the_unschedulable_message(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node("n1", cpu="2"), node("n2", cpu="2")])
    # too-big is within the queue's share (4 cpu) but larger than any node
    seed(sim, [pod("fits", cpu="1"), pod("too-big", cpu="3")])
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        await wait_for(lambda: condition(sim, "too-big") is not None, timeout=60)
        await wait_for(lambda: events_about(sim, "fits"), timeout=60)
    big = await sim.kubectl("describe", "pod", "too-big", "-n", "batch")
    assert big.code == 0, big.stderr
    assert "FailedScheduling" in big.stdout
    assert "0/2 nodes are available: 2 Insufficient cpu." in big.stdout
    assert "pumice" in big.stdout  # the reporting controller
    fits = await sim.kubectl("describe", "pod", "fits", "-n", "batch")
    assert fits.code == 0, fits.stderr
    assert "Scheduled" in fits.stdout and "Successfully assigned batch/fits to n" in fits.stdout
    ledger.close()
