"""``pumice explain`` on random small clusters: every suggestion it lists admits the job.

For a random cluster (nodes of random sizes, some tainted or labelled, some of pumice's pods
already running, a queue that may be capped) and a random pending gang, every listed change
is made on the manifests (``apply_change``, which makes exactly the edit a user would) and
``pumice simulate`` must then place every pod of the gang. A job explain calls placed gets
no suggestions; one it calls pending either gets suggestions or a blocker that says none
was found.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.commands.explain_changes import apply_change
from pumice.commands.explain_core import Target
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


@st.composite
def clusters(draw: st.DrawFn) -> list[Obj]:
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
        capped["spec"]["capability"] = {"cpu": draw(st.sampled_from(["2", "4"]))}
    objects.append(capped)
    size = draw(st.integers(1, 3))
    cpu = draw(st.sampled_from(["1", "2", "3", "5"]))
    extra: Obj = {}
    if draw(st.booleans()):
        extra["node_selector"] = {"disk": "ssd"}
    objects.append(podgroup("job", size, queue="q1", priority_class="high"))
    objects += gang_pods("job", size, cpu, priority_class="high", **extra)
    return objects


def run(tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> Obj:
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    result: Obj = json.loads(out)
    return result


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(objects=clusters())
def test_every_suggestion_admits_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[Obj]
) -> None:
    conf = tmp_path / "conf.yaml"
    conf.write_text(DEFAULT_CONFIG)
    cluster = write_yaml(tmp_path / "cluster.yaml", objects)
    report = run(
        tmp_path,
        ["explain", str(cluster), "--config", str(conf), "--podgroup", "default/job", "-o", "json"],
        capsys,
    )
    gang = {f"default/{o['metadata']['name']}" for o in objects if o["kind"] == "Pod"}
    gang = {key for key in gang if key.startswith("default/job-")}
    if report["status"] == "placed":
        assert report["suggestions"] == []
        assert set(report["nodes"]) == gang
        return
    assert report["status"] == "pending"
    assert report["blockers"]
    if not report["suggestions"]:
        assert report["blockers"][-1]["message"] == "no change pumice tried admits it"
    kinds = [s["change"]["kind"] for s in report["suggestions"]]
    order = ["request", "toleration", "node-label", "queue-capability", "evict", "add-node"]
    assert kinds == sorted(kinds, key=order.index) and len(kinds) <= 5
    for suggestion in report["suggestions"]:
        changed = apply_change(objects, suggestion["change"], Target("PodGroup", "default", "job"))
        path = write_yaml(tmp_path / "changed.yaml", changed)
        result = run(
            tmp_path, ["simulate", str(path), "--config", str(conf), "--output", "json"], capsys
        )
        assert gang <= set(placed(result)), suggestion["text"]
