"""Shaped binpack (RequestedToCapacityRatio): the documented worked example, the broken line,
the weight-sum rules, and the arguments refused when the plugin is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pumice import Arguments, ClusterSnapshot, ConfigError, QueueInfo, TaskInfo
from pumice.commands.config_commands import load_checked
from pumice.plugins.binpack import BinpackPlugin, broken_line
from support.builders import open_session
from support.flow import binds, gang, nodes, run_flow, snapshot
from support.nodes import GiB, MiB, bare_task, node, place, table

FOO = "intel.com/foo"
PACK = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
SPREAD = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
WORKED = {
    "shape": PACK,
    "resources": [
        {"name": FOO, "weight": 5},
        {"name": "memory", "weight": 1},
        {"name": "cpu", "weight": 3},
    ],
}


def worked_cluster() -> ClusterSnapshot:
    snap = ClusterSnapshot.build(
        nodes=[
            node("node1", 8000, GiB, extra={FOO: 4}),
            node("node2", 8000, GiB, extra={FOO: 8}),
        ],
        queues=[QueueInfo("default")],
    )
    snap.nodes["node1"].add_task(place(bare_task("used1", 1000, 256 * MiB, **{FOO: 1}), "node1"))
    snap.nodes["node2"].add_task(place(bare_task("used2", 6000, 512 * MiB, **{FOO: 2}), "node2"))
    return snap


def worked_task() -> TaskInfo:
    return bare_task("t", 2000, 256 * MiB, **{FOO: 2})


def scores(task: TaskInfo, *nodes: Any, arguments: dict[str, Any], tasks: Any = ()) -> list[float]:
    answer = BinpackPlugin(Arguments(arguments)).node_score(task, table(*nodes, tasks=tasks))
    assert answer is not None
    return answer.tolist()


def test_documented_worked_example_scores_5_and_7_through_a_session() -> None:
    ssn = open_session(
        {"binpack": BinpackPlugin}, [[{"name": "binpack", "arguments": WORKED}]], worked_cluster()
    )
    # node1: foo 75% -> 7, memory 50% -> 5, cpu 37.5% -> 3: (35 + 5 + 9) / 9 = 5.44 -> 5
    # node2: foo 50% -> 5, memory 75% -> 7, cpu 100% -> 10: (25 + 7 + 30) / 9 = 6.89 -> 7
    # each raw score times 10 (the 0-100 range) times binpack.weight 1
    assert ssn.node_scores(worked_task()).tolist() == [50.0, 70.0]


def test_binpack_weight_multiplies_the_contribution() -> None:
    plugin = BinpackPlugin(Arguments({**WORKED, "binpack.weight": 3}))
    answer = plugin.node_score(worked_task(), worked_cluster().table)
    assert answer is not None and answer.tolist() == [150.0, 210.0]
    assert (
        BinpackPlugin(Arguments({**WORKED, "binpack.weight": 0})).node_score(
            worked_task(), worked_cluster().table
        )
        is None
    )


def test_reversed_shape_spreads() -> None:
    reverse = {**WORKED, "shape": SPREAD}
    plugin = BinpackPlugin(Arguments(reverse))
    answer = plugin.node_score(worked_task(), worked_cluster().table)
    # node1: foo 25% left -> 2, memory 5, cpu 62.5 -> 6: (10 + 5 + 18) / 9 = 3.67 -> 4
    # node2: foo 5, memory 2, cpu 0 (leaves the weight sum): (25 + 2) / 6 = 4.5 -> 5 (half up)
    assert answer is not None and answer.tolist() == [40.0, 50.0]


@pytest.mark.parametrize(
    ("utilization", "expected"),
    [
        (0.0, 2.0),  # flat before the first point
        (19.9, 2.0),
        (20.0, 2.0),
        (50.0, 5.0),  # 2 + 6 * 30 / 60 = 5
        (60.0, 6.0),  # exactly whole: not truncated to 5 by float noise
        (79.9, 7.0),  # 7.99 truncated
        (80.0, 8.0),
        (95.0, 8.0),  # flat after the last point
        (100.0, 8.0),
    ],
)
def test_broken_line_is_flat_outside_and_truncated(utilization: float, expected: float) -> None:
    xs = np.array([20.0, 80.0])
    ys = np.array([2.0, 8.0])
    assert broken_line(np.array([[utilization]]), xs, ys).tolist() == [[expected]]


def test_broken_line_with_one_point_is_constant_and_with_three_bends() -> None:
    assert broken_line(np.array([[0.0, 100.0]]), np.array([50.0]), np.array([4.0])).tolist() == [
        [4.0, 4.0]
    ]
    xs, ys = np.array([0.0, 50.0, 100.0]), np.array([0.0, 10.0, 0.0])
    assert broken_line(np.array([[25.0, 50.0, 75.0]]), xs, ys).tolist() == [[5.0, 10.0, 5.0]]


def test_default_resources_are_cpu_and_memory_with_weight_one() -> None:
    n = node("n", 4000, 8 * GiB)
    # cpu 50% -> 5, memory 25% -> 2: (5 + 2) / 2 = 3.5 -> 4
    assert scores(bare_task("t", 2000, 2 * GiB), n, arguments={"shape": PACK}) == [40.0]


def test_a_resource_the_node_lacks_leaves_the_weight_sum() -> None:
    args = {"shape": PACK, "resources": [{"name": FOO, "weight": 5}, {"name": "cpu", "weight": 1}]}
    without = node("without", 4000, 8 * GiB)
    with_foo = node("with", 4000, 8 * GiB, extra={FOO: 4})
    task = bare_task("t", 2000, GiB, **{FOO: 4})
    # without: only cpu counts (50% -> 5); with: (5 * 10 + 5) / 6 = 9.17 -> 9
    assert scores(task, without, with_foo, arguments=args) == [50.0, 90.0]


def test_a_resource_scoring_zero_leaves_the_weight_sum_and_all_zero_scores_zero() -> None:
    args = {"shape": PACK, "resources": [{"name": "cpu", "weight": 1}, {"name": "memory"}]}
    n = node("n", 4000, 8 * GiB)
    # memory 0.5 GiB of 8 is 6.25% -> 0: left out, so the node scores cpu's 5 alone
    assert scores(bare_task("t", 2000, GiB // 2), n, arguments=args) == [50.0]
    assert scores(bare_task("u", 100, GiB // 2), n, arguments=args) == [0.0]


def test_resources_the_task_does_not_request_still_count() -> None:
    args = {"shape": PACK, "resources": [{"name": FOO}, {"name": "cpu"}]}
    busy = node("busy", 4000, 8 * GiB, extra={FOO: 4})
    used = place(bare_task("r", 0, 0, **{FOO: 4}), "busy")
    # cpu 25% -> 2, foo 100% (already used) -> 10: 6
    assert scores(bare_task("t", 1000), busy, arguments=args, tasks=[used]) == [60.0]


def test_a_request_beyond_capacity_scores_as_full() -> None:
    n = node("n", 4000, 8 * GiB)
    args = {"shape": PACK, "resources": [{"name": "cpu"}]}
    assert scores(bare_task("t", 6000), n, arguments=args) == [100.0]
    spread = {"shape": SPREAD, "resources": [{"name": "cpu"}]}
    assert scores(bare_task("t", 6000), n, arguments=spread) == [0.0]


def test_weight_zero_resource_counts_nothing() -> None:
    args = {"shape": PACK, "resources": [{"name": "cpu", "weight": 0}, {"name": "memory"}]}
    assert scores(bare_task("t", 4000, 2 * GiB), node("n"), arguments=args) == [20.0]


def test_without_shape_binpack_keeps_volcano_formula_and_ignores_resources() -> None:
    args = {"resources": [{"name": "cpu", "weight": 9}]}
    # Volcano's formula: (1000/4000 + 1/8) / 2 * 100
    assert scores(bare_task("t", 1000, GiB), node("n"), arguments=args) == [18.75]


@pytest.mark.parametrize(
    ("arguments", "key", "message"),
    [
        ({"shape": []}, "shape", "non-empty list"),
        ({"shape": "0:0,100:10"}, "shape", "non-empty list"),
        ({"shape": [5]}, "shape[0]", "must be a mapping"),
        ({"shape": [{"utilization": 0}]}, "shape[0]", "missing 'score'"),
        ({"shape": [{"utilization": 0, "score": 0, "x": 1}]}, "shape[0].x", "unknown key"),
        ({"shape": [{"utilization": 101, "score": 0}]}, "shape[0].utilization", "0 to 100"),
        ({"shape": [{"utilization": -1, "score": 0}]}, "shape[0].utilization", "0 to 100"),
        ({"shape": [{"utilization": 50.5, "score": 0}]}, "shape[0].utilization", "integer"),
        ({"shape": [{"utilization": 0, "score": 11}]}, "shape[0].score", "0 to 10"),
        ({"shape": [{"utilization": 0, "score": True}]}, "shape[0].score", "integer"),
        (
            {"shape": [{"utilization": 50, "score": 0}, {"utilization": 50, "score": 1}]},
            "shape[1].utilization",
            "greater than the previous point's (50)",
        ),
        ({"shape": PACK, "resources": []}, "resources", "non-empty list"),
        ({"shape": PACK, "resources": ["cpu"]}, "resources[0]", "must be a mapping"),
        ({"shape": PACK, "resources": [{"weight": 1}]}, "resources[0].name", "resource name"),
        (
            {"shape": PACK, "resources": [{"name": "cpu", "weight": -1}]},
            "resources[0].weight",
            "must not be negative",
        ),
        (
            {"shape": PACK, "resources": [{"name": "cpu"}, {"name": "cpu"}]},
            "resources[1].name",
            "listed twice",
        ),
    ],
)
def test_bad_shape_arguments_are_refused(arguments: dict[str, Any], key: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BinpackPlugin(Arguments(arguments))
    assert caught.value.key == key
    assert message in caught.value.message


def test_check_config_reports_a_bad_shape_with_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(
        "actions: allocate\n"
        "tiers:\n"
        "- plugins:\n"
        "  - name: binpack\n"
        "    arguments:\n"
        "      shape:\n"
        "      - {utilization: 0, score: 0}\n"
        "      - {utilization: 100, score: 10}\n"
        "      resources:\n"
        "      - {name: nvidia.com/gpu, weight: -2}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_checked(str(path))
    assert str(caught.value) == (
        f"{path}:10: tiers[0].plugins[0].arguments.resources[0].weight: "
        "must not be negative, got -2"
    )


@pytest.mark.parametrize(
    ("shape", "expected"),
    [(PACK, {"p-0-0": "n0", "p-1-0": "n0"}), (SPREAD, {"p-0-0": "n0", "p-1-0": "n1"})],
    ids=["packs", "reversed-spreads"],
)
def test_through_a_session_the_shape_packs_or_spreads(
    shape: list[dict[str, int]], expected: dict[str, str]
) -> None:
    jobs = [gang(f"p-{i}", 1, cpu=1000, memory=GiB, created=i) for i in range(2)]
    binpack = {"name": "binpack", "arguments": {"shape": shape}}
    ssn = run_flow(
        snapshot(nodes(2), jobs),
        [["predicates", binpack]],
        ["allocate"],
        {"binpack": BinpackPlugin},
    )
    assert binds(ssn) == expected
