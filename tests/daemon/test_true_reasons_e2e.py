"""What a user reads about a pending pod, through kubectl and the daemon's log: node reasons
before queue reasons, a queue's limit with its figures, each reason logged once, and a cycle
line that counts every pod that waits."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

from daemon.workload import condition, events_about, node, pod, podgroup, seed
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

NO_NODE = "0/2 nodes are available: 2 Insufficient cpu."
HELD = "queue research: cpu allocated 2 + request 2 exceeds capability 3"


def research_queue(cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research"},
        "spec": {"weight": 1, "capability": {"cpu": cpu}},
    }


async def jsonpath(sim: Any, kind: str, name: str, path: str) -> str:
    result = await sim.kubectl("get", kind, name, "-n", "batch", "-o", f"jsonpath={path}")
    assert result.code == 0, result.stderr
    return str(result.stdout)


async def test_a_pod_no_node_can_hold_is_told_so_in_describe_the_condition_and_the_log(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # 100 cpu asked of nodes of 8 and 16 cpu, alone in its queue
    seed(sim, [node("small", cpu="8", memory="32Gi"), node("large", cpu="16", memory="64Gi")])
    seed(sim, [pod("huge", cpu="100"), pod("fits", cpu="1"), pod("orphan", group="missing")])
    ledger = Ledger(sim)
    caplog.set_level(logging.DEBUG, logger="pumice")
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        await wait_for(lambda: condition(sim, "huge") is not None, timeout=60)
        await wait_for(lambda: events_about(sim, "huge"), timeout=60)
        cycles = daemon.cycles
        sim.create(pod("later", cpu="100"))  # a change: more sessions see huge again
        await wait_for(lambda: daemon.cycles > cycles and condition(sim, "later") is not None)
    described = await sim.kubectl("describe", "pod", "huge", "-n", "batch")
    assert described.code == 0, described.stderr
    assert "FailedScheduling" in described.stdout and NO_NODE in described.stdout
    assert "does not allow" not in described.stdout
    message = await jsonpath(
        sim, "pod", "huge", '{.status.conditions[?(@.type=="PodScheduled")].message}'
    )
    assert message == NO_NODE
    # the live daemon (not dry-run) logs the reason at info, once while it does not change
    lines = [r for r in caplog.records if r.getMessage().startswith("pending: batch/huge:")]
    assert [(r.levelno, r.getMessage()) for r in lines] == [
        (logging.INFO, f"pending: batch/huge: {NO_NODE}")
    ]
    # the cycle line counts the pod with a bad PodGroup too: huge and orphan wait
    first = next(r.getMessage() for r in caplog.records if re.match(r"cycle \d+:", r.getMessage()))
    assert re.fullmatch(r"cycle 1: 1 binds, 0 evictions, 2 pending, [0-9.]+s", first), first
    ledger.close()


async def test_a_gang_held_by_its_queue_names_the_queue_its_limit_and_the_figures(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # two 4-cpu nodes; the queue is capped at 3 cpu, the gang asks 2 x 2 cpu: the second pod
    # would fit a node, but not the queue
    seed(sim, [node("n1", cpu="4"), node("n2", cpu="4"), research_queue("3")])
    group = podgroup("train", 2, queue="research")
    seed(
        sim, [group, pod("train-0", cpu="2", group="train"), pod("train-1", cpu="2", group="train")]
    )
    caplog.set_level(logging.INFO, logger="pumice")
    groups = "scheduling.volcano.sh/podgroups"

    def gang_condition() -> str:
        status = sim.store.table(groups).get(("batch", "train"), {}).get("status") or {}
        return " ".join(str(c.get("message")) for c in status.get("conditions") or [])

    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: HELD in gang_condition(), timeout=60)
        await wait_for(lambda: events_about(sim, "train-1"), timeout=60)
    described = await sim.kubectl("describe", "pod", "train-1", "-n", "batch")
    assert described.code == 0, described.stderr
    assert "FailedScheduling" in described.stdout and HELD in described.stdout
    message = await jsonpath(
        sim, "pod", "train-1", '{.status.conditions[?(@.type=="PodScheduled")].message}'
    )
    assert message == HELD
    # the PodGroup keeps Volcano's gang form, with the queue's figures as the origin
    assert gang_condition() == (
        "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        f"Pending: 1 Schedulable, 1 Unschedulable. Origin reason is train-1: {HELD}"
    )
    # its partner waits for the gang, and says so
    partner = await jsonpath(
        sim, "pod", "train-0", '{.status.conditions[?(@.type=="PodScheduled")].message}'
    )
    assert partner.startswith("1/2 tasks in gang unschedulable")
    assert f"pending: batch/train-1: {HELD}" in caplog.text


async def test_a_gang_whose_minimum_no_node_can_hold_is_told_about_the_nodes_not_its_queue(
    sim: Any, tmp_path: Path
) -> None:
    # minResources of 100 cpu: enqueue turns the gang down, and its queue could never hold it
    # either; but the pod asks 100 cpu of nodes of 8 and 16, which is what the user must read
    seed(sim, [node("small", cpu="8", memory="32Gi"), node("large", cpu="16", memory="64Gi")])
    group = podgroup("big", 1, minResources={"cpu": "100"})
    seed(sim, [group, pod("big-0", cpu="100", group="big")])
    groups = "scheduling.volcano.sh/podgroups"

    def gang_condition() -> str:
        status = sim.store.table(groups).get(("batch", "big"), {}).get("status") or {}
        return " ".join(str(c.get("message")) for c in status.get("conditions") or [])

    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: NO_NODE in gang_condition(), timeout=60)
        await wait_for(lambda: events_about(sim, "big-0"), timeout=60)
    described = await sim.kubectl("describe", "pod", "big-0", "-n", "batch")
    assert described.code == 0, described.stderr
    assert "FailedScheduling" in described.stdout and NO_NODE in described.stdout
    assert "capability" not in described.stdout and "minResources" not in described.stdout
    message = await jsonpath(
        sim, "pod", "big-0", '{.status.conditions[?(@.type=="PodScheduled")].message}'
    )
    assert message == NO_NODE
    # the PodGroup keeps Volcano's gang form, the nodes' reason its origin
    assert gang_condition().endswith(f"Origin reason is: {NO_NODE}")
    assert gang_condition().startswith("1/1 tasks in gang unschedulable: pod group is not ready")


async def test_a_reason_that_changes_is_logged_again_once(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # first no node carries the label the pod selects; once kubectl labels the node, the pod
    # still waits, now for cpu: each reason is logged once, in that order
    seed(sim, [node("n1", cpu="2")])
    wants = pod("picky", cpu="4")
    wants["spec"]["nodeSelector"] = {"disk": "ssd"}
    seed(sim, [wants])
    selector = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    cpu = "0/1 nodes are available: 1 Insufficient cpu."
    caplog.set_level(logging.INFO, logger="pumice")

    def said() -> list[str]:
        prefix = "pending: batch/picky: "
        return [
            r.getMessage()[len(prefix) :]
            for r in caplog.records
            if r.getMessage().startswith(prefix)
        ]

    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: said() == [selector], timeout=60)
        labelled = await sim.kubectl("label", "node", "n1", "disk=ssd")
        assert labelled.code == 0, labelled.stderr
        await wait_for(lambda: len(said()) == 2, timeout=60)
        cycles = daemon.cycles
        sim.create(pod("other", cpu="4"))  # more sessions that see picky wait for cpu again
        await wait_for(lambda: daemon.cycles > cycles, timeout=60)
    assert said() == [selector, cpu]
