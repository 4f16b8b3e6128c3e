"""node-reservation through ``pumice simulate``: what a user sees of locked nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.manifests import (
    evicted,
    node,
    pending,
    placed,
    pod,
    podgroup,
    queue,
    run_cli,
    simulate,
    write_yaml,
)

Capsys = pytest.CaptureFixture[str]

TIERS = """\
- plugins:
  - name: priority
  - name: gang
    enableReclaimable: false
  - name: conformance
    enableReclaimable: false
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def config(arguments: dict[str, Any], actions: str = "enqueue, allocate, backfill") -> str:
    """Volcano's shipped tiers with node-reservation in a tier of its own before them, so a
    Guaranteed queue's victims are not second-guessed by proportion; gang and conformance
    leave reclaim to proportion (in tier 1 their answers would offer any pod beyond a gang's
    minimum, whoever asks)."""
    reservation = yaml.safe_dump(
        [{"plugins": [{"name": "node-reservation", "arguments": arguments}]}], sort_keys=False
    )
    return f'actions: "{actions}"\ntiers:\n{reservation}{TIERS}'


def pods_of(group: str, count: int, cpu: str = "1", **kwargs: Any) -> list[dict[str, Any]]:
    return [pod(f"{group}-{i}", cpu, "1Gi", group=group, **kwargs) for i in range(count)]


def reservation(result: dict[str, Any], queue_name: str) -> dict[str, Any]:
    """The queue's ``status.reservation`` without its ``lockedAt`` (a wall-clock time)."""
    found: dict[str, Any] = dict(result["queues"][queue_name]["reservation"])
    assert "refused" in found or isinstance(found.pop("lockedAt"), str)
    return found


# -- requests ---------------------------------------------------------------------------------


def test_a_resource_request_locks_nodes_and_reports_them(tmp_path: Path, capsys: Capsys) -> None:
    objects = [*(node(f"n{i}") for i in range(4)), queue("qa"), queue("qb")]
    arguments = {"qa": {"resource": {"cpu": "8", "memory": "16Gi"}}}
    result = simulate(tmp_path, objects, capsys, config=config(arguments))
    assert reservation(result, "qa") == {
        "nodes": ["n0", "n1"],
        "resource": {"cpu": "8", "memory": "16Gi"},
    }
    assert "reservation" not in result["queues"]["qb"]


def test_a_percentage_request_locks_a_share_of_the_nodes(tmp_path: Path, capsys: Capsys) -> None:
    objects = [*(node(f"n{i}") for i in range(10)), queue("qa")]
    arguments = {"qa": {"percentage": {"dimensions": ["cpu"], "value": 0.35}}}
    result = simulate(tmp_path, objects, capsys, config=config(arguments))
    assert reservation(result, "qa")["nodes"] == ["n0", "n1", "n2"]  # floor(10 x 0.35)


def test_refusals_are_reported_with_their_reason(tmp_path: Path, capsys: Capsys) -> None:
    capped = queue("capped")
    capped["spec"]["capability"] = {"cpu": "2"}
    objects = [*(node(f"n{i}") for i in range(4)), queue("big"), capped, queue("qa"), queue("qb")]
    arguments = {
        "big": {"resource": {"cpu": "20"}},
        "capped": {"resource": {"cpu": "4"}},
        "qa": {"resource": {"cpu": "6"}},
        "qb": {"resource": {"cpu": "4"}},  # 6 + 4 > half of 16 cpu
    }
    result = simulate(tmp_path, objects, capsys, config=config(arguments))
    assert reservation(result, "big") == {
        "refused": "request cpu=20 is above the cluster's total cpu=16,memory=32Gi (cpu)"
    }
    assert reservation(result, "capped") == {
        "refused": "request cpu=4 is above the queue's capability cpu=2 (cpu)"
    }
    assert reservation(result, "qa")["nodes"] == ["n0", "n1"]
    assert reservation(result, "qb") == {
        "refused": "request cpu=4 would take the reserved total above maxReservedFraction 0.5 "
        "of the cluster (cpu)"
    }


def test_the_queues_usage_decides_which_nodes(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        *(node(f"n{i}") for i in range(4)),
        queue("qa"),
        podgroup("a", 1, queue="qa", phase="Running"),
        pod("a-0", "2", group="a", node_name="n2"),
    ]
    result = simulate(tmp_path, objects, capsys, config=config({"qa": {"resource": {"cpu": "4"}}}))
    assert reservation(result, "qa") == {"nodes": ["n2"], "resource": {"cpu": "2", "memory": "7Gi"}}


def test_fewer_fuller_nodes_win(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("a0"), node("a1"), node("z-big", "8", "16Gi"), queue("qa")]
    arguments = {"maxReservedFraction": 1, "qa": {"resource": {"cpu": "8", "memory": "16Gi"}}}
    result = simulate(tmp_path, objects, capsys, config=config(arguments))
    assert reservation(result, "qa")["nodes"] == ["z-big"]


# -- effect -----------------------------------------------------------------------------------


def test_others_stay_off_locked_nodes_and_the_owner_uses_them(
    tmp_path: Path, capsys: Capsys
) -> None:
    objects = [
        *(node(f"n{i}") for i in range(3)),
        queue("qa"),
        queue("qb"),
        podgroup("a", 1, queue="qa"),
        *pods_of("a", 2),
        podgroup("b", 1, queue="qb"),
        *pods_of("b", 10),
    ]
    result = simulate(tmp_path, objects, capsys, config=config({"qa": {"resource": {"cpu": "4"}}}))
    assert reservation(result, "qa")["nodes"] == ["n0"]
    where = placed(result)
    assert {n for p, n in where.items() if p.startswith("default/b-")} == {"n1", "n2"}
    assert where["default/a-0"] == where["default/a-1"] == "n0"
    waiting = pending(result)
    assert sorted(waiting) == ["default/b-8", "default/b-9"]
    # n0 has room for them, but it is qa's
    assert "1 node(s) were reserved for queue qa" in waiting["default/b-8"]
    assert reservation(result, "qa")["resource"] == {"cpu": "2", "memory": "6Gi"}


def evictable_cluster() -> list[dict[str, Any]]:
    """qb fills n0 and n1; n2 is full of pods of another scheduler. qa wants 2 cpu."""
    return [
        *(node(f"n{i}") for i in range(3)),
        queue("qa"),
        queue("qb"),
        podgroup("b", 1, queue="qb", phase="Running"),
        *(pod(f"b-{i}", "1", "1Gi", group="b", node_name=f"n{i // 4}") for i in range(8)),
        pod("other", "4", "1Gi", node_name="n2", scheduler="default-scheduler"),
        podgroup("a", 1, queue="qa"),
        pod("a-0", "2", "1Gi", group="a"),
    ]


def test_best_effort_never_evicts(tmp_path: Path, capsys: Capsys) -> None:
    arguments = {"qa": {"policy": "Best-Effort", "resource": {"cpu": "4"}}}
    conf = config(arguments, "enqueue, allocate, reclaim, backfill")
    result = simulate(tmp_path, evictable_cluster(), capsys, config=conf)
    assert reservation(result, "qa")["nodes"] == ["n0"]
    assert result["evictions"] == []
    assert list(pending(result)) == ["default/a-0"]


def test_guaranteed_takes_its_locked_node_back(tmp_path: Path, capsys: Capsys) -> None:
    arguments = {"qa": {"policy": "Guaranteed", "resource": {"cpu": "4"}}}
    conf = config(arguments, "enqueue, allocate, reclaim, backfill")
    result = simulate(tmp_path, evictable_cluster(), capsys, config=conf)
    assert reservation(result, "qa")["nodes"] == ["n0"]
    victims = evicted(result)
    assert len(victims) == 2
    assert all(name.startswith("default/b-") for name in victims)
    assert {e["node"] for e in result["evictions"]} == {"n0"}
    assert placed(result) == {"default/a-0": "n0"}


# -- stability --------------------------------------------------------------------------------


def test_locks_hold_across_cycles(tmp_path: Path, capsys: Capsys) -> None:
    # cycle 1 locks n0 (all nodes equal) and binds qa's pod to n1 (its node selector); in
    # cycle 2, one relock period later, a fresh choice would take n1 (qa's usage is there),
    # but the lock still satisfies the request and is kept
    objects = [
        *(node(f"n{i}") for i in range(3)),
        queue("qa"),
        podgroup("a", 1, queue="qa"),
        pod("a-0", "1", "1Gi", group="a", node_selector={"kubernetes.io/hostname": "n1"}),
    ]
    arguments = {"relockPeriod": "1s", "qa": {"resource": {"cpu": "4"}}}
    result = simulate(tmp_path, objects, capsys, config=config(arguments))
    assert placed(result) == {"default/a-0": "n1"}
    assert result["placements"][0]["cycle"] == 1
    assert reservation(result, "qa")["nodes"] == ["n0"]
    # the same cluster with the pod already running on n1 from the start locks n1
    objects[-1]["spec"]["nodeName"] = "n1"
    objects[-1]["status"]["phase"] = "Running"
    objects[-2]["status"] = {"phase": "Running"}
    fresh = simulate(tmp_path, objects, capsys, config=config(arguments))
    assert reservation(fresh, "qa")["nodes"] == ["n1"]


def test_a_lock_in_the_input_is_kept_and_its_vanished_node_replaced(
    tmp_path: Path, capsys: Capsys
) -> None:
    qa = queue("qa")
    qa["status"] = {"reservation": {"nodes": ["gone", "n2"], "lockedAt": "2026-01-01T00:00:00Z"}}
    objects = [*(node(f"n{i}") for i in range(4)), qa]
    result = simulate(tmp_path, objects, capsys, config=config({"qa": {"resource": {"cpu": "8"}}}))
    assert reservation(result, "qa")["nodes"] == ["n0", "n2"]  # n2 kept; fresh would be n0, n1


def test_the_table_lists_reservations(tmp_path: Path, capsys: Capsys) -> None:
    objects = [*(node(f"n{i}") for i in range(4)), queue("qa"), queue("big")]
    cluster = write_yaml(tmp_path / "cluster.yaml", objects)
    conf = tmp_path / "scheduler.yaml"
    arguments = {"qa": {"resource": {"cpu": "4"}}, "big": {"resource": {"cpu": "99"}}}
    conf.write_text(config(arguments))
    code, out, _ = run_cli(["simulate", str(cluster), "--config", str(conf)], capsys)
    assert code == 0
    lines = out.splitlines()
    start = lines.index("QUEUE STATUS FROM PLUGINS")
    assert lines[start + 1].split() == ["QUEUE", "FIELD", "VALUE"]
    rows = {tuple(line.split()[:2]): line for line in lines[start + 2 :] if line.strip()}
    assert "refused=request cpu=99 is above" in rows[("big", "reservation")]
    assert '"nodes":["n0"]' in rows[("qa", "reservation")]
    assert '"resource":{"cpu":"4","memory":"8Gi"}' in rows[("qa", "reservation")]


def test_the_shipped_reservation_example(capsys: Capsys) -> None:
    examples = Path(__file__).parents[2] / "conf" / "examples"
    result = simulate_files(
        [str(examples / "reservation.yaml"), "--config", str(examples / "reservation.conf")],
        capsys,
    )
    assert reservation(result, "prod") == {"nodes": ["n1"], "resource": {"memory": "12Gi"}}
    assert {e["node"] for e in result["evictions"]} == {"n1"}
    assert all(e["pod"].startswith("batch/sweep-") for e in result["evictions"])
    assert placed(result) == {"prod/serve-0": "n1", "prod/serve-1": "n1"}


def simulate_files(args: list[str], capsys: Capsys) -> dict[str, Any]:
    code, out, err = run_cli(["simulate", *args, "--output", "json"], capsys)
    assert code == 0, err
    parsed: dict[str, Any] = json.loads(out)
    return parsed
