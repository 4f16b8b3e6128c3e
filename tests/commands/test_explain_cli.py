"""``pumice explain`` offline: the report's keys, blockers, node reasons, queue figures and exit
codes, on the README's ``conf/examples/pending.yaml`` and small clusters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pumice.conf import __file__ as conf_init
from support.manifests import gang_pods, node, pod, podgroup, run_cli, write_yaml

Capsys = pytest.CaptureFixture[str]
PENDING = str(Path(conf_init).parent / "examples" / "pending.yaml")
KEYS = ["target", "kind", "status", "nodes", "blockers", "node_reasons", "queue", "suggestions"]


def report(capsys: Capsys, *args: str) -> dict[str, Any]:
    code, out, err = run_cli(["explain", *args, "-o", "json"], capsys)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    assert list(result) == KEYS
    return result


def test_a_gang_held_by_its_queue(capsys: Capsys) -> None:
    got = report(capsys, PENDING, "--podgroup", "research/train")
    assert got["kind"] == "PodGroup" and got["status"] == "pending" and got["nodes"] == {}
    limit = "queue research: cpu allocated 15 + request 1 exceeds capability 15"
    assert got["blockers"][0] == {"action": "allocate", "plugin": "proportion", "message": limit}
    assert got["blockers"][1]["plugin"] == "gang"
    assert got["blockers"][1]["message"].endswith(f"Origin reason is train-1: {limit}")
    assert got["node_reasons"] == {}
    assert got["queue"] == {
        "name": "research",
        "deserved": {"cpu": "15", "memory": "10Gi"},
        "allocated": {"cpu": "14", "memory": "8Gi"},
        "capability": {"cpu": "15"},
        "request": {"cpu": "2", "memory": "2Gi"},
    }
    change = {"kind": "queue-capability", "queue": "research", "resource": "cpu", "to": "16"}
    assert [s["change"] for s in got["suggestions"]] == [change]


def test_a_pod_no_node_can_hold(capsys: Capsys) -> None:
    got = report(capsys, PENDING, "--pod", "default/cuda")
    assert got["node_reasons"] == {"Insufficient nvidia.com/gpu": 3}
    assert got["blockers"][0]["action"] == "allocate"
    assert got["blockers"][0]["message"] == (
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    )
    assert got["queue"]["request"] == {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "2"}
    assert "capability" not in got["queue"] and "guarantee" not in got["queue"]


def test_bound_and_placed(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", [node("n1"), pod("old", node_name="n1"), pod("new")])
    got = report(capsys, str(cluster), "--pod", "default/old")
    assert got["status"] == "bound" and got["nodes"] == {"default/old": "n1"}
    got = report(capsys, str(cluster), "--pod", "default/new")
    assert got["status"] == "placed" and got["nodes"] == {"default/new": "n1"}
    assert got["suggestions"] == []


def test_exit_codes(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", [node("n1"), pod("p")])
    code, _, err = run_cli(["explain", str(cluster), "--pod", "default/nope"], capsys)
    assert code == 1 and err.strip() == "Pod default/nope does not exist"
    code, _, err = run_cli(["explain", str(cluster), "--podgroup", "default/p"], capsys)
    assert code == 1 and "PodGroup default/p does not exist" in err
    code, _, err = run_cli(["explain", str(cluster), "--pod", "a/b/c"], capsys)
    assert code == 2 and "NS/NAME" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
        "spec:\n  containers:\n  - resources: {requests: {cpu: lots}}\n"
    )
    code, _, err = run_cli(["explain", str(bad), "--pod", "default/x"], capsys)
    assert code == 2 and "cpu" in err


def test_table_shows_reasons_and_suggestions(capsys: Capsys) -> None:
    code, out, _ = run_cli(["explain", PENDING, "--pod", "default/huge"], capsys)
    assert code == 0
    assert out.splitlines()[0] == "Pod default/huge: pending"
    assert "    3  Insufficient cpu" in out
    assert "1. lower the cpu request of pod default/huge to 14" in out


def test_what_the_cache_holds_back_is_a_blocker(capsys: Capsys) -> None:
    got = report(capsys, PENDING, "--pod", "default/orphan")
    assert got["blockers"][0] == {
        "action": "cache",
        "plugin": "",
        "message": "podgroup default/missing does not exist",
    }
    assert got["suggestions"] == []
    assert got["blockers"][-1]["message"] == "no change pumice tried admits it"


def test_a_gang_member_is_admitted_with_its_gang(capsys: Capsys) -> None:
    got = report(capsys, PENDING, "--pod", "research/train-1")
    assert got["queue"]["request"] == {"cpu": "1", "memory": "1Gi"}
    change = {"kind": "queue-capability", "queue": "research", "resource": "cpu", "to": "16"}
    assert [s["change"] for s in got["suggestions"]] == [change]


def test_status_is_bound_only_for_what_is_bound(tmp_path: Path, capsys: Capsys) -> None:
    gated = pod("gated", extra_spec={"schedulingGates": [{"name": "example.com/wait"}]})
    objects = [
        node("n1"),
        pod("theirs", scheduler="default-scheduler"),
        pod("done", phase="Succeeded"),
        gated,
        podgroup("empty", 2),
        podgroup("running", 2),
        *gang_pods("running", 2, node_name="n1"),
        podgroup("half", 2),
        pod("half-0", group="half", node_name="n1"),
        pod("half-1", group="half"),
    ]
    cluster = str(write_yaml(tmp_path / "c.yaml", objects))
    got = report(capsys, cluster, "--pod", "default/theirs")
    assert got["status"] == "pending" and got["nodes"] == {}
    assert got["blockers"][0] == {
        "action": "cache",
        "plugin": "",
        "message": "pod default/theirs is for scheduler 'default-scheduler', not 'pumice'",
    }
    assert got["queue"] == {"name": "default"}  # no session saw it
    got = report(capsys, cluster, "--pod", "default/gated")
    assert got["status"] == "pending"
    assert got["blockers"][0]["message"] == (
        "pod default/gated waits for its scheduling gates: example.com/wait"
    )
    assert report(capsys, cluster, "--pod", "default/done")["status"] == "finished"
    got = report(capsys, cluster, "--podgroup", "default/empty")
    assert got["status"] == "pending"
    assert got["blockers"][0]["message"] == "podgroup default/empty has no pods (minMember 2)"
    got = report(capsys, cluster, "--podgroup", "default/running")
    assert got["status"] == "bound"
    assert got["nodes"] == {"default/running-0": "n1", "default/running-1": "n1"}
    got = report(capsys, cluster, "--podgroup", "default/half")
    assert got["status"] == "placed"
    assert got["nodes"] == {"default/half-0": "n1", "default/half-1": "n1"}


def test_a_placed_targets_queue_allocation_is_without_it(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("n1", "8"), pod("old", "2", node_name="n1"), pod("new", "1")]
    cluster = str(write_yaml(tmp_path / "c.yaml", objects))
    got = report(capsys, cluster, "--pod", "default/new")
    assert got["status"] == "placed"
    assert got["queue"]["allocated"] == {"cpu": "2", "memory": "1Gi"}
    assert got["queue"]["request"] == {"cpu": "1", "memory": "1Gi"}
