"""A third-party plugin (tests/fixtures/status_plugin, installed into build/test-plugins by the
Makefile, never into .venv) reports a Queue status field, a PodGroup condition and a metric
through the status hooks alone; they are read back from the simulated API server and /metrics,
and from pumice simulate's report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from daemon.test_health_e2e import get, samples, serving_daemon
from daemon.workload import node, pod, podgroup, seed
from pumice.framework.host import PluginHost
from support.daemonrun import wait_for
from support.manifests import run_cli

pytestmark = pytest.mark.slow

QUEUES = "scheduling.volcano.sh/queues"
PODGROUPS = "scheduling.volcano.sh/podgroups"

CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - {name: predicates}
  - {name: proportion}
  - {name: queue-tally}
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


def test_the_plugin_comes_from_its_package_not_from_pumice() -> None:
    provided = PluginHost.discover().get("queue-tally")
    assert provided is not None and provided.package == "pumice-status-plugin"
    assert {"queue_status", "podgroup_conditions", "metric_samples"} <= set(provided.hooks)


async def test_a_plugins_queue_field_condition_and_metric_reach_the_cluster(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node("n1", cpu="8"), queue("qa")])
    gang = podgroup("g", 3, queue="qa")
    seed(sim, [gang, *(pod(f"g-{i}", cpu="1", group="g") for i in range(3))])
    config = tmp_path / "scheduler.yaml"
    config.write_text(CONFIG)

    def queue_status() -> dict[str, Any]:
        stored = sim.store.table(QUEUES).get(("", "qa")) or {}
        return dict(stored.get("status") or {})

    async with serving_daemon(sim.kubeconfig, config) as daemon:
        # the pods turn Running in the sim; a later session counts them
        await wait_for(lambda: queue_status().get("tally") == {"running": 3}, timeout=60)
        status, text = await get(daemon, "/metrics")
    assert status == 200
    values = samples(text)
    running = (("queue", "qa"), ("status", "running"))
    assert values[("pumice_queue_tally_tasks", running)] == 3
    assert values[("pumice_queue_tally_tasks", (("queue", "qa"), ("status", "pending")))] == 0
    # the framework's own fields stand beside the plugin's (and proportion's)
    assert queue_status()["running"] == 1 and "deserved" in queue_status()
    group = sim.store.table(PODGROUPS)[("batch", "g")]
    types = [c["type"] for c in group["status"]["conditions"]]
    assert types == ["Scheduled", "Tallied"]


def test_pumice_simulate_reports_the_plugins_queue_field(tmp_path: Path, capsys: Any) -> None:
    objects = [node("n1", cpu="8"), queue("qa"), podgroup("g", 2, queue="qa")]
    objects += [pod(f"g-{i}", cpu="1", group="g", node_name="n1") for i in range(2)]
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["status"] = {"phase": "Running"}
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(objects))
    config = tmp_path / "scheduler.yaml"
    config.write_text(CONFIG)
    code, out, err = run_cli(
        ["simulate", str(cluster), "--config", str(config), "--output", "json"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["queues"]["qa"]["tally"] == {"running": 2}


BROKEN = CONFIG.replace(
    "  - {name: queue-tally}", "  - {name: queue-tally, arguments: {statusKey: allocated}}"
)


async def test_a_plugin_breaking_the_status_contract_costs_only_its_own_answer(
    sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # queue-tally sets "allocated", which the framework writes: its answer is left out, said
    # once, and every other status (the framework's, proportion's, its conditions) still goes out
    seed(sim, [node("n1", cpu="8"), queue("qa")])
    seed(sim, [podgroup("g", 2, queue="qa")])
    seed(sim, [pod(f"g-{i}", cpu="1", group="g") for i in range(2)])
    config = tmp_path / "scheduler.yaml"
    config.write_text(BROKEN)

    def queue_status() -> dict[str, Any]:
        stored = sim.store.table(QUEUES).get(("", "qa")) or {}
        return dict(stored.get("status") or {})

    caplog.set_level("WARNING", logger="pumice.session")
    async with serving_daemon(sim.kubeconfig, config) as daemon:
        await wait_for(lambda: queue_status().get("running") == 1, timeout=60)
        for i in range(3):  # more sessions, each closed with the same broken answer
            seed(sim, [pod(f"more-{i}", cpu="1")])
            await wait_for(lambda n=daemon.cycles: daemon.cycles > n, timeout=60)
    status = queue_status()
    assert status["allocated"]["cpu"] == "2" and "deserved" in status  # the framework's own
    group = sim.store.table(PODGROUPS)[("batch", "g")]
    assert [c["type"] for c in group["status"]["conditions"]] == ["Scheduled", "Tallied"]
    said = [r.getMessage() for r in caplog.records if "framework writes" in r.getMessage()]
    assert said == [
        "plugin queue-tally queue_status sets 'allocated', which the framework writes; "
        "that answer is left out"
    ]


def test_pumice_simulate_names_a_broken_contract_and_exits_2(tmp_path: Path, capsys: Any) -> None:
    objects = [node("n1", cpu="8"), queue("qa"), podgroup("g", 1, queue="qa")]
    objects.append(pod("g-0", group="g"))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(objects))
    config = tmp_path / "scheduler.yaml"
    config.write_text(BROKEN)
    code, out, err = run_cli(["simulate", str(cluster), "--config", str(config)], capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "pumice simulate: plugin queue-tally queue_status sets 'allocated', which the framework "
        "writes"
    )
