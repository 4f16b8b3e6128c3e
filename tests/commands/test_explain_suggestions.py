"""``pumice explain``: each kind of suggestion on a small cluster whose fix is known by hand.

Every test checks the exact change explain proposes, then makes that change on the manifests
itself (not through explain's code) and checks that ``pumice simulate`` places the job —
with other pending pods in the way, and for a pod of a gang (``--pod``: the gang is admitted
as one, so its changes are for every pod of the gang).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pumice.commands.explain_changes import apply_change
from pumice.commands.explain_target import Target
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


def test_verified_with_the_other_pending_pods_placed_first(tmp_path: Path, capsys: Capsys) -> None:
    """Two more urgent pending pods take the room a new node makes before ``t`` gets any:
    verified on the whole run, one new node is not enough, two are."""
    objects = [
        priority_class("high", 1000),
        node("s1", "4"),
        pod("a1", "2", priority_class="high"),
        pod("a2", "2", priority_class="high"),
        pod("t", "3"),
    ]
    report = explain(tmp_path, objects, capsys, "--pod", "default/t")
    assert report["status"] == "pending"
    assert [c for c in changes(report) if c["kind"] == "add-node"] == [
        {"kind": "add-node", "like": "s1", "count": 2}
    ]
    one_more = placed_after(tmp_path, [*objects, node("s1-1", "4")], capsys)
    assert "default/t" not in one_more
    two_more = placed_after(tmp_path, [*objects, node("s1-1", "4"), node("s1-2", "4")], capsys)
    assert "default/t" in two_more


def test_a_gang_members_request_is_lowered_with_its_gang(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("g1", "4"), node("g2", "4"), podgroup("gg", 2), *gang_pods("gg", 2, "6")]
    report = explain(tmp_path, objects, capsys, "--pod", "default/gg-1")
    # the gang's origin reason, though gg-1 is not the task that failed first
    assert report["node_reasons"] == {"Insufficient cpu": 2}
    request = [s for s in report["suggestions"] if s["change"]["kind"] == "request"]
    assert [s["change"] for s in request] == [
        {"kind": "request", "pod": "default/gg-0", "resource": "cpu", "to": "4"}
    ]
    assert "(and of the 1 other pod(s) with the same request)" in request[0]["text"]
    for member in objects[3:]:
        member["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    assert set(placed_after(tmp_path, objects, capsys)) == {"default/gg-0", "default/gg-1"}


def test_a_gang_members_toleration_is_for_the_whole_gang(tmp_path: Path, capsys: Capsys) -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    objects = [
        node("g1", "4", taints=[taint]),
        node("g2", "4", taints=[taint]),
        podgroup("gg", 2),
        *gang_pods("gg", 2, "1"),
    ]
    report = explain(tmp_path, objects, capsys, "--pod", "default/gg-1")
    assert report["node_reasons"] == {"node(s) had untolerated taint {k: v}": 2}
    toleration = [s for s in report["suggestions"] if s["change"]["kind"] == "toleration"]
    assert [s["change"] for s in toleration] == [{"kind": "toleration", **taint}]
    assert toleration[0]["text"].endswith("to each of the job's 2 pending pods")
    for member in objects[3:]:
        member["spec"]["tolerations"] = [{"operator": "Equal", **taint}]
    assert set(placed_after(tmp_path, objects, capsys)) == {"default/gg-0", "default/gg-1"}


def test_a_gang_members_new_nodes_hold_the_whole_gang(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        node("n1", "4"),
        pod("other", "4", node_name="n1", scheduler="default-scheduler"),
        podgroup("job", 2),
        *gang_pods("job", 2, "3"),
    ]
    report = explain(tmp_path, objects, capsys, "--pod", "default/job-1")
    assert changes(report) == [{"kind": "add-node", "like": "n1", "count": 2}]


def test_a_gang_members_labels_go_on_enough_nodes(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        node("n1", "4"),
        node("n2", "4"),
        podgroup("job", 2),
        *gang_pods("job", 2, "3", node_selector={"disk": "ssd"}),
    ]
    report = explain(tmp_path, objects, capsys, "--pod", "default/job-0")
    assert changes(report) == [{"kind": "node-label", "nodes": ["n1", "n2"], "label": "disk=ssd"}]
    for item in objects[:2]:
        item["metadata"]["labels"]["disk"] = "ssd"
    assert set(placed_after(tmp_path, objects, capsys)) == {"default/job-0", "default/job-1"}


def test_the_request_change_names_the_first_pod_of_the_job(tmp_path: Path, capsys: Capsys) -> None:
    objects = [node("h0", "4"), node("h1", "4"), podgroup("j", 3), *gang_pods("j", 3, "3")]
    report = explain(tmp_path, objects, capsys, "--podgroup", "default/j")
    request = [s for s in report["suggestions"] if s["change"]["kind"] == "request"]
    assert request[0]["change"] == {
        "kind": "request",
        "pod": "default/j-0",
        "resource": "cpu",
        "to": "2",
    }
    assert "(and of the 2 other pod(s) with the same request)" in request[0]["text"]
    for member in objects[3:]:
        member["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert len(placed_after(tmp_path, objects, capsys)) == 3


def test_a_gpu_request_is_lowered_with_its_limit(tmp_path: Path, capsys: Capsys) -> None:
    """Kubernetes refuses an extended-resource request that differs from its limit (it allows
    no overcommitment of them): the change sets both, and says so."""
    cuda = pod("cuda", "1", gpu="2")
    cuda["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "2"}
    objects = [node("gpu-1", "8", gpu="1"), cuda]
    report = explain(tmp_path, objects, capsys, "--pod", "default/cuda")
    request = [s for s in report["suggestions"] if s["change"]["kind"] == "request"]
    change = {"kind": "request", "pod": "default/cuda", "resource": "nvidia.com/gpu", "to": "1"}
    assert [s["change"] for s in request] == [change]
    assert request[0]["text"].startswith(
        "lower the nvidia.com/gpu request and limit of pod default/cuda to 1"
    )
    changed = apply_change(objects, change, Target("Pod", "default", "cuda"))
    resources = changed[1]["spec"]["containers"][0]["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == "1"
    resources = cuda["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = resources["limits"]["nvidia.com/gpu"] = "1"
    assert placed_after(tmp_path, objects, capsys) == {"default/cuda": "gpu-1"}
