"""What the commands tell a user, without ``-v``: every config warning as a plain
``FILE:LINE: KEY: warning: …`` line on stderr, from ``check-config``, ``simulate`` and
``run`` alike (whatever the log format); and ``simulate``'s reason for a pod no node can hold."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.manifests import (
    node,
    pending,
    pod,
    podgroup,
    queue,
    run_cli,
    simulate,
    write_yaml,
)

Capsys = pytest.CaptureFixture[str]

# Each warned value on its own line (the comments give the line numbers).
WARNED = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: drf
    enableHierarchy: true            # line 7
- plugins:
  - name: predicates
    arguments:
      predicate.VolumeBindingEnable: true # line 11
  - name: nodeorder
    arguments:
      imagelocality.weight: 2        # line 14
  - name: resource-strategy-fit
    arguments:
      resources:
        "*":                         # line 18
          type: MostAllocated
          weight: 2
        cpu:
          type: LeastAllocated
          weight: 1
"""


def expected_warnings(path: Path) -> list[str]:
    return [
        f"{path}:7: tiers[0].plugins[2].enableHierarchy: warning: hierarchical sharing is not "
        "supported by pumice; drf shares as if it were off",
        f"{path}:11: tiers[1].plugins[0].arguments.predicate.VolumeBindingEnable: warning: set "
        "but not implemented in pumice; ignored",
        f"{path}:14: tiers[1].plugins[1].arguments.imagelocality.weight: warning: set but not "
        "implemented in pumice; ignored",
        f"{path}:18: tiers[1].plugins[2].arguments.resources.*: warning: pattern '*' dropped: "
        "a lone '*' is not supported as a default; name a prefix such as 'nvidia.com/*'",
    ]


def warned_config(tmp_path: Path) -> Path:
    path = tmp_path / "scheduler.yaml"
    path.write_text(WARNED)
    return path


def test_check_config_shows_every_warning_without_v_and_exits_0(
    tmp_path: Path, capsys: Capsys
) -> None:
    path = warned_config(tmp_path)
    code, out, err = run_cli(["check-config", str(path)], capsys)
    assert code == 0
    assert err.splitlines() == expected_warnings(path)
    assert out.startswith(f"{path}: ok: ")


def test_simulate_shows_the_same_warnings(tmp_path: Path, capsys: Capsys) -> None:
    path = warned_config(tmp_path)
    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1"), pod("p")])
    code, _, err = run_cli(["simulate", str(cluster), "--config", str(path)], capsys)
    assert code == 0
    assert err.splitlines() == expected_warnings(path)


@pytest.mark.slow
@pytest.mark.parametrize("log_format", ["json", "text"])
def test_run_shows_them_as_plain_lines_whatever_the_log_format(
    tmp_path: Path, log_format: str
) -> None:
    path = warned_config(tmp_path)
    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1"), pod("p")])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pumice.cli",
            "run",
            "--sim",
            str(cluster),
            "--until-idle",
            "--config",
            str(path),
            "--log-format",
            log_format,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        # without the test-only plugin packages (one of them warns that it cannot load)
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    assert lines[:4] == expected_warnings(path)
    # said once: the sessions that build the plugins do not log them again
    assert not [line for line in lines[4:] if "not implemented" in line or "dropped" in line]


def test_simulate_tells_a_pod_bigger_than_every_node_about_the_nodes(
    tmp_path: Path, capsys: Capsys
) -> None:
    objects = [node("small", "8", "32Gi"), node("large", "16", "64Gi"), pod("huge", cpu="100")]
    result = simulate(tmp_path, objects, capsys)
    assert pending(result) == {"default/huge": "0/2 nodes are available: 2 Insufficient cpu."}


def test_simulate_tells_a_gang_whose_minimum_no_node_holds_about_the_nodes(
    tmp_path: Path, capsys: Capsys
) -> None:
    # enqueue turns the gang down (its minResources exceed the cluster); the nodes come first
    group = podgroup("big", 1, min_resources={"cpu": "100"})
    objects = [node("small", "8", "32Gi"), node("large", "16", "64Gi"), group]
    objects.append(pod("big-0", cpu="100", group="big"))
    result = simulate(tmp_path, objects, capsys)
    assert pending(result) == {"default/big-0": "0/2 nodes are available: 2 Insufficient cpu."}
    assert result["podgroups"]["default/big"]["phase"] == "Pending"


RESERVATION_WARNED = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: node-reservation
    arguments:
      maxReservedFraction: 2         # line 6
      relockPeriod: -5               # line 7
"""


def test_check_config_shows_node_reservations_bad_values_as_warnings(
    tmp_path: Path, capsys: Capsys
) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(RESERVATION_WARNED)
    code, out, err = run_cli(["check-config", str(path)], capsys)
    assert code == 0 and out.startswith(f"{path}: ok: ")
    where = "tiers[0].plugins[0].arguments"
    assert err.splitlines() == [
        f"{path}:6: {where}.maxReservedFraction: warning: must be a number in [0, 1], got 2; "
        "using 0.5",
        f"{path}:7: {where}.relockPeriod: warning: must not be negative, got -5; using 10s",
    ]
    # and the sessions that build the plugin later do not say it again
    cluster = write_yaml(tmp_path / "cluster.yaml", [node("n1"), pod("p")])
    code, _, err = run_cli(["simulate", str(cluster), "--config", str(path)], capsys)
    assert code == 0
    assert err.count("maxReservedFraction") == 1 and err.count("relockPeriod") == 1


def test_simulate_names_a_closed_queue_and_a_queue_past_its_deserved_share(
    tmp_path: Path, capsys: Capsys
) -> None:
    # one 8-cpu node, three queues of weight 1 asking 5 cpu (a: 3 running + 2), 4 (b) and 1
    # (shut, Closed): shut's 1 is met, a and b deserve (8 - 1) / 2 = 3.5 each, so neither a's
    # 2 more nor b's 4 may go though the node has room; the closed queue admits nothing.
    objects: list[dict[str, object]] = [node("n1", "8", "64Gi"), queue("a"), queue("b")]
    objects.append(queue("shut", state="Closed"))
    objects.append(podgroup("run", 1, queue="a", phase="Running"))
    objects.append(pod("run-0", cpu="3", group="run", node_name="n1", phase="Running"))
    objects += [podgroup("more", 1, queue="a"), pod("more-0", cpu="2", group="more")]
    objects += [podgroup("bee", 1, queue="b"), pod("bee-0", cpu="4", group="bee")]
    objects += [podgroup("closed", 1, queue="shut"), pod("closed-0", cpu="1", group="closed")]
    result = simulate(tmp_path, objects, capsys)
    assert pending(result) == {
        "default/more-0": "queue a: cpu allocated 3 + request 2 exceeds deserved 3500m",
        "default/bee-0": "queue b: cpu allocated 0 + request 4 exceeds deserved 3500m",
        "default/closed-0": "queue shut is not open (state Closed)",
    }
