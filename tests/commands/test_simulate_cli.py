"""``pumice simulate`` as a command: input formats, errors, configurations, output."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from support.manifests import (
    CONFIG,
    gang_pods,
    node,
    pending,
    placed,
    pod,
    podgroup,
    priority_class,
    queue,
    run_cli,
    simulate,
    write_list,
    write_yaml,
)

Capsys = pytest.CaptureFixture[str]


def cluster() -> list[dict[str, object]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}},
        node("cpu-1", "8", "16Gi"),
        node("gpu-1", "8", "32Gi", gpu="2"),
        queue("q"),
        priority_class("high", 100),
        podgroup("train", 2, queue="q"),
        *gang_pods("train", 2, "2"),
        pod("cuda", "1", gpu="1", priority_class="high"),
        pod("other", scheduler="default-scheduler"),
    ]


def json_of(args: list[str], capsys: Capsys) -> dict[str, object]:
    code, out, err = run_cli(["simulate", *args, "--output", "json"], capsys)
    assert code == 0, err
    result: dict[str, object] = json.loads(out)
    return result


def test_a_kind_list_dump_and_multi_document_yaml_give_the_same_result(
    tmp_path: Path, capsys: Capsys
) -> None:
    listed = json_of([str(write_list(tmp_path / "dump.yaml", cluster()))], capsys)
    documents = json_of([str(write_yaml(tmp_path / "docs.yaml", cluster()))], capsys)
    as_json = tmp_path / "dump.json"
    as_json.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": cluster()}))
    from_json = json_of([str(as_json)], capsys)
    assert listed == documents == from_json
    assert sorted(placed(listed)) == ["default/cuda", "default/train-0", "default/train-1"]
    assert placed(listed)["default/cuda"] == "gpu-1"
    # pods of other schedulers are not ours to place
    assert "default/other" not in placed(listed)


def test_objects_split_over_several_files(tmp_path: Path, capsys: Capsys) -> None:
    objects = cluster()
    first = write_yaml(tmp_path / "nodes.yaml", objects[:3])
    second = write_list(tmp_path / "work.yaml", objects[3:])
    one = json_of([str(write_yaml(tmp_path / "all.yaml", objects))], capsys)
    assert json_of([str(first), str(second)], capsys) == one


def test_unknown_kinds_are_skipped_with_a_note(tmp_path: Path, capsys: Capsys) -> None:
    path = write_yaml(tmp_path / "c.yaml", cluster())
    code, _, err = run_cli(["simulate", str(path), "--output", "json"], capsys)
    assert code == 0
    assert err.strip().splitlines() == [f"{path}: skipped 1 ConfigMap object(s): not simulated"]


def test_a_malformed_quantity_exits_2_with_one_line(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("n1"), pod("small-1", cpu="2x")]
    path = write_yaml(tmp_path / "bad.yaml", objects)
    code, out, err = run_cli(["simulate", str(path)], capsys)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"{path}: Pod default/small-1: spec.containers[0].resources.requests.cpu: "
        "invalid quantity '2x'"
    )


@pytest.mark.parametrize(
    ("obj", "where"),
    [
        (node("n1", memory="lots"), "Node n1: status.allocatable.memory: "),
        (podgroup("pg", 1, min_resources={"cpu": "-1"}), "PodGroup default/pg: spec.minResources"),
        (priority_class("p", 1) | {"value": "high"}, "PriorityClass p: value: "),
    ],
)
def test_other_bad_fields_name_the_object_and_field(
    tmp_path: Path, capsys: Capsys, obj: dict[str, object], where: str
) -> None:
    path = write_yaml(tmp_path / "bad.yaml", [obj])
    code, _, err = run_cli(["simulate", str(path)], capsys)
    assert code == 2
    assert err.startswith(f"{path}: {where}")


def test_bad_yaml_and_bad_flags_exit_2(tmp_path: Path, capsys: Capsys) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("kind: [unclosed\n")
    code, _, err = run_cli(["simulate", str(bad)], capsys)
    assert code == 2
    assert err.startswith(f"{bad}:")
    good = write_yaml(tmp_path / "ok.yaml", cluster())
    code, _, err = run_cli(["simulate", str(good), "--cycles", "0"], capsys)
    assert (code, err.strip()) == (2, "--cycles: must be at least 1, got 0")


def test_volcanos_scheduler_conf_loads_and_runs_unchanged(tmp_path: Path, capsys: Capsys) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONFIG)  # Volcano's shipped tiers with every action
    code, _, err = run_cli(["check-config", str(conf)], capsys)
    assert code == 0, err
    cluster_file = write_yaml(tmp_path / "c.yaml", cluster())
    result = json_of([str(cluster_file), "--config", str(conf)], capsys)
    assert len(placed(result)) == 3


def test_explain_gives_every_feasible_node_each_plugins_score(
    tmp_path: Path, capsys: Capsys
) -> None:
    objects = [node("a", "4"), node("b", "8"), node("tiny", "1", "1Gi"), pod("p", "2", "2Gi")]
    objects += [pod("gpu", "1", gpu="1"), node("g", "2", "2Gi", gpu="1")]
    result = simulate(tmp_path, objects, capsys, extra=["--explain"])
    by_pod = {p["pod"]: p for p in result["placements"]}
    scores = by_pod["default/p"]["scores"]
    assert sorted(scores) == ["a", "b"]  # tiny and g cannot take 2 cpu
    for parts in scores.values():
        assert set(parts) == {"binpack", "nodeorder", "total"}
        assert parts["total"] == pytest.approx(parts["binpack"] + parts["nodeorder"])
    chosen = by_pod["default/p"]["node"]
    assert scores[chosen]["total"] == max(s["total"] for s in scores.values())
    # one feasible node is explained too
    assert sorted(by_pod["default/gpu"]["scores"]) == ["g"]
    plain = simulate(tmp_path, objects, capsys)
    assert all("scores" not in p for p in plain["placements"])


def test_same_input_same_output_and_the_table(tmp_path: Path, capsys: Capsys) -> None:
    path = str(write_yaml(tmp_path / "c.yaml", cluster()))
    first = run_cli(["simulate", path], capsys)
    second = run_cli(["simulate", path], capsys)
    assert first == second
    table = first[1]
    for section in ("PLACEMENTS (3)", "EVICTIONS (0)", "UNSCHEDULABLE (0)", "NODES", "QUEUES"):
        assert section in table
    assert "gpu-1" in table and "[" in table and "%" in table
    explained = run_cli(["simulate", path, "--explain"], capsys)[1]
    assert "scores of default/cuda (placed on gpu-1):" in explained


EXAMPLES = Path(__file__).parents[2] / "conf" / "examples"


def test_the_shipped_examples_run(capsys: Capsys) -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        code, _, err = run_cli(["simulate", str(path), "--output", "json"], capsys)
        assert code == 0, (path, err)


def test_the_shipped_preemption_case(capsys: Capsys) -> None:
    conf = str(EXAMPLES / "volcano-scheduler.conf")
    result = json_of([str(EXAMPLES / "preemption.yaml"), "--config", conf], capsys)
    evictions = result["evictions"]
    assert isinstance(evictions, list) and evictions
    assert {e["preemptor"] for e in evictions} <= {f"research/train-{i}" for i in range(3)}
    assert all(e["pod"].startswith("research/sweep-") for e in evictions)
    assert result["podgroups"] == {
        "prod/infer": {"phase": "Running"},
        "research/sweep": {"phase": "Running"},
        "research/train": {"phase": "Running"},
    }
    assert placed(result)["prod/infer-0"] == "gpu-1"


def test_limits_stand_in_for_missing_requests(tmp_path: Path, capsys: Capsys) -> None:
    gpu_pod = pod("cuda", "1")
    gpu_pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    result = simulate(tmp_path, [node("cpu", "8"), node("gpu", "2", gpu="1"), gpu_pod], capsys)
    assert placed(result) == {"default/cuda": "gpu"}  # the API server defaults requests


def test_which_pods_are_pending(tmp_path: Path, capsys: Capsys) -> None:
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    leaving = pod("leaving")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    theirs = pod("theirs", scheduler="volcano")
    orphan = pod("orphan", group="missing")
    objects = [node("n1"), gated, leaving, theirs, orphan, pod("mine")]
    result = simulate(tmp_path, objects, capsys)
    assert placed(result) == {"default/mine": "n1"}
    assert pending(result) == {"default/orphan": "podgroup default/missing does not exist"}
    # the same dump read as another scheduler's
    result = simulate(tmp_path, objects, capsys, extra=["--scheduler-name", "volcano"])
    assert placed(result) == {"default/theirs": "n1"}


def test_running_pods_of_any_scheduler_hold_their_nodes(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        node("n1", "4"),
        node("n2", "4"),
        pod("system", "3", node_name="n1", scheduler="default-scheduler"),
        pod("done", "4", node_name="n2", phase="Succeeded"),
        pod("big", "2"),
    ]
    result = simulate(tmp_path, objects, capsys)
    assert placed(result) == {"default/big": "n2"}  # n1 holds only 1 cpu; n2's pod finished


def test_the_json_has_exactly_the_documented_keys(capsys: Capsys) -> None:
    conf = str(EXAMPLES / "volcano-scheduler.conf")
    result = json_of([str(EXAMPLES / "preemption.yaml"), "--config", conf], capsys)
    assert set(result) == {
        "placements",
        "evictions",
        "unschedulable",
        "queues",
        "podgroups",
        "volumes",
    }
    assert result["volumes"] == {}  # always there; no pod of this cluster names a claim
    placements = result["placements"]
    evictions = result["evictions"]
    unschedulable = result["unschedulable"]
    assert isinstance(placements, list) and isinstance(evictions, list)
    assert isinstance(unschedulable, list)
    assert {frozenset(p) for p in placements} == {frozenset({"pod", "node", "action", "cycle"})}
    assert {frozenset(e) for e in evictions} == {
        frozenset({"pod", "node", "action", "cycle", "preemptor"})
    }
    assert {frozenset(u) for u in unschedulable} == {frozenset({"pod", "message"})}
    queues = result["queues"]
    assert isinstance(queues, dict)
    own = {"allocated", "pending", "inqueue", "running", "completed"}
    for figures in queues.values():
        # the Queue status the daemon writes, with proportion's fields for a queue with jobs
        assert own <= set(figures) <= own | {"deserved", "share"}
    # canonical Kubernetes quantities
    assert queues["prod"]["deserved"] == {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}
