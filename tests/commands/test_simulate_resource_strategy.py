"""The resource-scoring plugins through ``pumice simulate``: the AI cluster with the shipped
configuration, and shaped binpack's worked example as ``--explain`` shows it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from support.manifests import node, placed, pod, simulate

Capsys = pytest.CaptureFixture[str]
ROOT = Path(__file__).resolve().parents[2]
AI_CONFIG = (ROOT / "conf" / "examples" / "ai-scheduler.conf").read_text()
FOO = "intel.com/foo"


def at(second: int) -> str:
    return f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}Z"


def test_ai_cluster_packs_gpu_pods_and_spreads_cpu_pods(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        *(node(f"gpu-{i}", "32", "128Gi", gpu="4") for i in range(4)),
        *(node(f"cpu-{i}", "16", "64Gi") for i in range(4)),
        # eight one-GPU pods and four CPU pods, alternating in creation order
        *(pod(f"train-{i}", "4", "16Gi", gpu="1", created=at(2 * i)) for i in range(8)),
        *(pod(f"web-{i}", "2", "4Gi", created=at(2 * i + 1)) for i in range(4)),
    ]
    result = simulate(tmp_path, objects, capsys, config=AI_CONFIG)
    bound = placed(result)
    assert len(bound) == 12
    gpu = Counter(node for name, node in bound.items() if "/train-" in name)
    cpu = Counter(node for name, node in bound.items() if "/web-" in name)
    assert gpu == {"gpu-0": 4, "gpu-1": 4}  # the fewest GPU nodes, each full
    assert cpu == {"cpu-0": 1, "cpu-1": 1, "cpu-2": 1, "cpu-3": 1}


def with_foo(obj: dict[str, Any], amount: str) -> dict[str, Any]:
    """``obj`` (a node or a pod) with ``amount`` of intel.com/foo allocatable or requested."""
    if obj["kind"] == "Node":
        obj["status"]["allocatable"][FOO] = amount
        obj["status"]["capacity"][FOO] = amount
    else:
        obj["spec"]["containers"][0]["resources"]["requests"][FOO] = amount
    return obj


SHAPED = """\
actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: binpack
    arguments:
      shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
      resources:
      - {name: intel.com/foo, weight: 5}
      - {name: memory, weight: 1}
      - {name: cpu, weight: 3}
"""


def test_explain_shows_the_documented_shaped_binpack_scores(tmp_path: Path, capsys: Capsys) -> None:
    objects = [
        with_foo(node("node1", "8", "1Gi"), "4"),
        with_foo(node("node2", "8", "1Gi"), "8"),
        with_foo(pod("used1", "1", "256Mi", node_name="node1"), "1"),
        with_foo(pod("used2", "6", "512Mi", node_name="node2"), "2"),
        with_foo(pod("t", "2", "256Mi"), "2"),
    ]
    result = simulate(tmp_path, objects, capsys, config=SHAPED, extra=["--explain"])
    (placement,) = result["placements"]
    assert placement["pod"] == "default/t" and placement["node"] == "node2"
    # the documentation's node scores 5 and 7, times 10, times binpack.weight 1
    assert placement["scores"] == {
        "node1": {"binpack": 50.0, "total": 50.0},
        "node2": {"binpack": 70.0, "total": 70.0},
    }
