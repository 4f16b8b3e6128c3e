"""``pumice explain`` on random small clusters: every suggestion it lists admits the job.

A random cluster: nodes of random sizes, some tainted or labelled, some of pumice's pods
already running, a queue that may be capped, **other pending pods and gangs** that compete
with the target (older or newer, of higher or lower priority), and a pending gang ``job``.
The target is the PodGroup, or one of its pods (``--pod``: the gang is admitted as one).
Every listed change is then made on the manifests by this test's own hand (``edit``, written
from the change's documented meaning, not explain's code) and ``pumice simulate`` must place
the target. A job explain calls placed gets no suggestions; one it calls pending either gets
suggestions or a blocker that says none was found.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    write_yaml,
)

Obj = dict[str, Any]
DEFAULT_CONFIG = (Path(conf_init).parent / "scheduler.yaml").read_text()
TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
GROUP = "scheduling.k8s.io/group-name"
ORDER = ["request", "toleration", "node-label", "queue-capability", "evict", "add-node"]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Obj], list[str]]:
    """The objects, and the target's command-line words."""
    objects: list[Obj] = [priority_class("low", 10), priority_class("high", 1000)]
    nodes = draw(st.integers(1, 4))
    for i in range(nodes):
        cpu = draw(st.sampled_from(["2", "4", "8"]))
        taints = [TAINT] if draw(st.booleans()) and i else []
        labels = {"disk": "ssd"} if draw(st.booleans()) else {}
        objects.append(node(f"n{i}", cpu, "16Gi", taints=taints, labels=labels))
        for j in range(draw(st.integers(0, 2))):
            used = draw(st.sampled_from(["1", "2"]))
            objects.append(pod(f"run-{i}-{j}", used, node_name=f"n{i}", priority_class="low"))
    capped = queue("q1")
    if draw(st.booleans()):
        capped["spec"]["capability"] = {"cpu": draw(st.sampled_from(["2", "4", "6"]))}
    objects.append(capped)
    # the others that wait too: lone pods and a gang, older or newer, more or less urgent
    times = ["2025-12-31T00:00:00Z", "2026-01-02T00:00:00Z"]
    for k in range(draw(st.integers(0, 3))):
        objects.append(
            pod(
                f"other-{k}",
                draw(st.sampled_from(["1", "2", "3"])),
                priority_class=draw(st.sampled_from(["low", "high"])),
                created=draw(st.sampled_from(times)),
            )
        )
    if draw(st.booleans()):
        size = draw(st.integers(1, 2))
        objects.append(podgroup("rival", size, priority_class="high"))
        objects += gang_pods(
            "rival",
            size,
            draw(st.sampled_from(["1", "2"])),
            priority_class="high",
            created=draw(st.sampled_from(times)),
        )
    size = draw(st.integers(1, 3))
    cpu = draw(st.sampled_from(["1", "2", "3", "5"]))
    extra: Obj = {}
    if draw(st.booleans()):
        extra["node_selector"] = {"disk": "ssd"}
    objects.append(podgroup("job", size, queue="q1", priority_class="high"))
    objects += gang_pods("job", size, cpu, priority_class="high", **extra)
    which = draw(st.sampled_from(["podgroup", *(f"pod-{i}" for i in range(size))]))
    if which == "podgroup":
        return objects, ["--podgroup", "default/job"]
    return objects, ["--pod", f"default/job-{which.removeprefix('pod-')}"]


def requested(item: Obj, resource: str) -> str | None:
    containers = item["spec"]["containers"]
    return containers[0]["resources"]["requests"].get(resource) if containers else None


def edit(objects: list[Obj], change: Obj) -> list[Obj]:
    """The change made on the manifests as a user reads it: a request or a toleration on
    every pending pod of the gang it is meant for, labels on nodes, a queue's capability,
    pods deleted, nodes added (named LIKE-1, LIKE-2, …)."""
    out = copy.deepcopy(objects)
    gang = [
        o
        for o in out
        if o["kind"] == "Pod"
        and o["metadata"].get("annotations", {}).get(GROUP) == "job"
        and not o["spec"].get("nodeName")
    ]
    kind = change["kind"]
    if kind == "request":
        named = next(o for o in gang if f"default/{o['metadata']['name']}" == change["pod"])
        before = requested(named, change["resource"])
        for member in gang:
            if requested(member, change["resource"]) == before:
                member["spec"]["containers"][0]["resources"]["requests"][change["resource"]] = (
                    change["to"]
                )
    elif kind == "toleration":
        toleration = {
            "key": change["key"],
            "operator": "Equal",
            "value": change["value"],
            "effect": change["effect"],
        }
        for member in gang:
            member["spec"].setdefault("tolerations", []).append(toleration)
    elif kind == "node-label":
        key, value = change["label"].split("=", 1)
        for item in out:
            if item["kind"] == "Node" and item["metadata"]["name"] in change["nodes"]:
                item["metadata"]["labels"][key] = value
    elif kind == "queue-capability":
        for item in out:
            if item["kind"] == "Queue" and item["metadata"]["name"] == change["queue"]:
                item["spec"]["capability"][change["resource"]] = change["to"]
    elif kind == "evict":
        out = [
            o
            for o in out
            if not (o["kind"] == "Pod" and f"default/{o['metadata']['name']}" in change["pods"])
        ]
    elif kind == "add-node":
        like = next(
            o for o in out if o["kind"] == "Node" and o["metadata"]["name"] == change["like"]
        )
        for i in range(1, change["count"] + 1):
            added = copy.deepcopy(like)
            added["metadata"]["name"] = f"{change['like']}-{i}"
            added["metadata"]["labels"]["kubernetes.io/hostname"] = f"{change['like']}-{i}"
            out.append(added)
    else:
        raise AssertionError(f"unknown change {change}")
    return out


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> Obj:
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    result: Obj = json.loads(out)
    return result


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(drawn=clusters())
def test_every_suggestion_admits_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], drawn: tuple[list[Obj], list[str]]
) -> None:
    objects, target = drawn
    conf = tmp_path / "conf.yaml"
    conf.write_text(DEFAULT_CONFIG)
    cluster = write_yaml(tmp_path / "cluster.yaml", objects)
    report = run_json(
        ["explain", str(cluster), "--config", str(conf), *target, "-o", "json"], capsys
    )
    gang = {f"default/{o['metadata']['name']}" for o in objects if o["kind"] == "Pod"}
    gang = {key for key in gang if key.startswith("default/job-")}
    wanted = gang if target[0] == "--podgroup" else {target[1]}
    if report["status"] == "placed":
        assert report["suggestions"] == []
        assert set(report["nodes"]) == wanted
        return
    assert report["status"] == "pending"
    assert report["blockers"]
    if target[0] == "--pod":  # a gang member gets its gang's origin reason
        origin = [b for b in report["blockers"] if "nodes are available" in b["message"]]
        assert bool(report["node_reasons"]) == bool(origin)
    if not report["suggestions"]:
        assert report["blockers"][-1]["message"] == "no change pumice tried admits it"
    kinds = [s["change"]["kind"] for s in report["suggestions"]]
    assert kinds == sorted(kinds, key=ORDER.index) and len(kinds) <= 5
    for suggestion in report["suggestions"]:
        change = suggestion["change"]
        if change["kind"] == "request":
            assert change["pod"] == min(
                (
                    k
                    for k in gang
                    if requested_of(objects, k) == requested_of(objects, change["pod"])
                ),
                key=lambda k: int(k.rsplit("-", 1)[1]),
            ), "the request change names the first pod of the job it is meant for"
        path = write_yaml(tmp_path / "changed.yaml", edit(objects, change))
        result = run_json(
            ["simulate", str(path), "--config", str(conf), "--output", "json"], capsys
        )
        assert wanted <= set(placed(result)), suggestion["text"]


def requested_of(objects: list[Obj], key: str) -> str | None:
    item = next(
        o for o in objects if o["kind"] == "Pod" and f"default/{o['metadata']['name']}" == key
    )
    return requested(item, "cpu")
