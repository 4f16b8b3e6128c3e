"""node-reservation through the daemon: the locks are written to the Queue's status and read
back from it, other queues' pods stay off the locked nodes, and a refused request gets a Queue
event and says why in the status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from daemon.workload import node, pod, podgroup, seed
from support.daemonrun import Ledger, running_daemon, wait_for

pytestmark = pytest.mark.slow

QUEUES = "scheduling.volcano.sh/queues"

CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: node-reservation
    arguments:
      gold: {resource: {cpu: "8"}}
      huge: {resource: {cpu: "1000"}}
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - {name: drf}
  - {name: predicates}
  - {name: proportion}
  - {name: nodeorder}
  - {name: binpack}
scheduler:
  period: 100ms
  httpAddress: 127.0.0.1:0
"""


def queue(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1},
    }


def status_of(sim: Any, name: str) -> dict[str, Any]:
    stored = sim.store.table(QUEUES).get(("", name)) or {}
    return dict(stored.get("status") or {})


def queue_events(sim: Any, name: str) -> list[tuple[str, str]]:
    out = []
    for event in sim.store.table("/events").values():
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if involved.get("kind") == "Queue" and involved.get("name") == name:
            out.append((str(event.get("reason")), str(event.get("message") or event.get("note"))))
    return out


async def test_locks_are_written_back_and_kept_for_their_queue(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node(f"n{i}", cpu="8") for i in range(1, 5)])
    seed(sim, [queue("gold"), queue("other"), queue("huge")])
    # other's gang would happily spread over every node; gold's pod must land on its lock
    seed(sim, [podgroup("spread", 6, queue="other")])
    seed(sim, [pod(f"spread-{i}", group="spread", cpu="1") for i in range(6)])
    seed(sim, [podgroup("mine", 1, queue="gold"), pod("mine-0", group="mine", cpu="2")])
    config = tmp_path / "scheduler.yaml"
    config.write_text(CONFIG)
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, config) as daemon:
        await wait_for(lambda: len(ledger.placements) == 7)
        await wait_for(lambda: "nodes" in (status_of(sim, "gold").get("reservation") or {}))
        await wait_for(lambda: bool(queue_events(sim, "huge")))
        first = status_of(sim, "gold")["reservation"]
        cycles = daemon.cycles
        # a later session reads the lock back from the Queue's status and keeps it
        seed(sim, [pod("late", cpu="1")])  # a lone pod: queue default, not gold
        await wait_for(lambda: len(ledger.placements) == 8 and daemon.cycles > cycles)
        assert status_of(sim, "gold")["reservation"]["nodes"] == first["nodes"]
    locked = set(first["nodes"])
    assert len(locked) == 1
    placed = {key: nodes[-1] for key, nodes in ledger.placements.items()}
    assert placed[("batch", "mine-0")] in locked
    for name in [f"spread-{i}" for i in range(6)] + ["late"]:
        assert placed[("batch", name)] not in locked
    refused = status_of(sim, "huge")["reservation"]["refused"]
    assert "cluster" in refused
    reasons = queue_events(sim, "huge")
    assert [r for r, _ in reasons] == ["ReservationRefused"]
    assert refused in reasons[0][1]
    ledger.close()
