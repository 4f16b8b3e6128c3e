"""``pumice explain``: each kind of suggestion on a small cluster whose fix is known by hand.

Every test checks the exact change explain proposes, then makes that change on the manifests
itself (not through explain's code) and checks that ``pumice simulate`` places the job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pumice.conf import __file__ as conf_init
from support.manifests import (
    gang_pods,
    node,
    placed,
    pod,
    podgroup,
    priority_class,
    queue,
    run_cli,
    simulate,
    write_yaml,
)

Capsys = pytest.CaptureFixture[str]
Obj = dict[str, Any]
DEFAULT_CONFIG = (Path(conf_init).parent / "scheduler.yaml").read_text()
"""The shipped configuration: no preempt action, so an evictable job stays pending."""


def explain(tmp_path: Path, objects: list[Obj], capsys: Capsys, *target: str) -> Obj:
    cluster = write_yaml(tmp_path / "explain.yaml", objects)
    conf = tmp_path / "explain-conf.yaml"
    conf.write_text(DEFAULT_CONFIG)
    code, out, err = run_cli(
        ["explain", str(cluster), "--config", str(conf), *target, "-o", "json"], capsys
    )
    assert code == 0, err
    report: Obj = json.loads(out)
    return report


def changes(report: Obj) -> list[Obj]:
    assert all(s["verified"] is True and s["text"] for s in report["suggestions"])
    return [s["change"] for s in report["suggestions"]]


def placed_after(tmp_path: Path, objects: list[Obj], capsys: Capsys) -> dict[str, str]:
    return placed(simulate(tmp_path, objects, capsys, config=DEFAULT_CONFIG))


def test_request_lowered_to_the_largest_that_fits(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("n1", "4", "8Gi"), pod("p", "6", "1Gi")]
    report = explain(tmp_path, objects, capsys, "--pod", "default/p")
    assert report["status"] == "pending"
    assert report["node_reasons"] == {"Insufficient cpu": 1}
    change = {"kind": "request", "pod": "default/p", "resource": "cpu", "to": "4"}
    assert changes(report)[0] == change
    assert placed_after(tmp_path, objects, capsys) == {}
    objects[1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    assert placed_after(tmp_path, objects, capsys) == {"default/p": "n1"}


def test_toleration_for_the_taint_that_keeps_the_pod_out(tmp_path: Path, capsys: Capsys) -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    objects = [node("n1", taints=[taint]), pod("p")]
    report = explain(tmp_path, objects, capsys, "--pod", "default/p")
    assert report["node_reasons"] == {"node(s) had untolerated taint {dedicated: gpu}": 1}
    assert changes(report) == [{"kind": "toleration", **taint}]
    objects[1]["spec"]["tolerations"] = [{"operator": "Equal", **taint}]
    assert placed_after(tmp_path, objects, capsys) == {"default/p": "n1"}


def test_node_label_on_the_fewest_roomiest_nodes(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        node("n1", "4"),
        node("n2", "4"),
        pod("busy", "3", node_name="n1"),
        pod("p", "2", node_selector={"disk": "ssd"}),
    ]
    report = explain(tmp_path, objects, capsys, "--pod", "default/p")
    assert report["node_reasons"] == {"node(s) didn't match Pod's node affinity/selector": 2}
    assert changes(report) == [{"kind": "node-label", "nodes": ["n2"], "label": "disk=ssd"}]
    objects[1]["metadata"]["labels"]["disk"] = "ssd"
    assert placed_after(tmp_path, objects, capsys) == {"default/p": "n2"}


def test_queue_capability_raised_to_what_admits(tmp_path: Path, capsys: Capsys) -> None:
    limited = queue("q1")
    limited["spec"]["capability"] = {"cpu": "2", "memory": "16Gi"}
    objects = [
        node("n1", "8", "16Gi"),
        limited,
        podgroup("job", 2, queue="q1"),
        *gang_pods("job", 2, "1500m"),
    ]
    report = explain(tmp_path, objects, capsys, "--podgroup", "default/job")
    assert report["status"] == "pending"
    assert report["queue"]["capability"] == {"cpu": "2", "memory": "16Gi"}
    assert report["queue"]["request"] == {"cpu": "3", "memory": "2Gi"}
    queue_changes = [c for c in changes(report) if c["kind"] == "queue-capability"]
    assert queue_changes == [
        {"kind": "queue-capability", "queue": "q1", "resource": "cpu", "to": "3"}
    ]
    limited["spec"]["capability"]["cpu"] = "3"
    assert placed_after(tmp_path, objects, capsys) == {"default/job-0": "n1", "default/job-1": "n1"}


def test_evict_the_fewest_unprotected_pods(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        priority_class("high", 1000),
        priority_class("low", 10),
        node("n1", "4"),
        node("n2", "4"),
        pod("lo-1", "2", node_name="n1", priority_class="low"),
        pod("lo-2", "1", node_name="n1", priority_class="low"),
        # cheaper to evict (no priority at all), but conformance protects kube-system
        pod("dns", "3", node_name="n2", namespace="kube-system"),
        pod("p", "3", priority_class="high"),
    ]
    report = explain(tmp_path, objects, capsys, "--pod", "default/p")
    evict = [c for c in changes(report) if c["kind"] == "evict"]
    assert evict == [{"kind": "evict", "pods": ["default/lo-1"]}]
    assert placed_after(tmp_path, objects, capsys) == {}
    objects = [o for o in objects if o["metadata"]["name"] != "lo-1"]
    assert placed_after(tmp_path, objects, capsys) == {"default/p": "n1"}


def test_add_nodes_like_an_existing_one(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        node("n1", "4"),
        pod("other", "4", node_name="n1", scheduler="default-scheduler"),
        podgroup("job", 2),
        *gang_pods("job", 2, "3"),
    ]
    report = explain(tmp_path, objects, capsys, "--podgroup", "default/job")
    assert changes(report) == [{"kind": "add-node", "like": "n1", "count": 2}]
    objects += [node("n1-a", "4"), node("n1-b", "4")]
    assert set(placed_after(tmp_path, objects, capsys)) == {"default/job-0", "default/job-1"}


def test_nothing_admits_gives_no_suggestion_and_says_so(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("n1"), pod("p", gpu="1")]
    report = explain(tmp_path, objects, capsys, "--pod", "default/p")
    assert report["suggestions"] == []
    assert report["blockers"][-1]["message"] == "no change pumice tried admits it"


def test_a_job_that_would_be_placed_gets_none(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("n1"), podgroup("job", 2), *gang_pods("job", 2, "1")]
    report = explain(tmp_path, objects, capsys, "--podgroup", "default/job")
    assert report["status"] == "placed"
    assert report["nodes"] == {"default/job-0": "n1", "default/job-1": "n1"}
    assert report["suggestions"] == [] and report["blockers"] == []
