"""The binpack plugin: Volcano's formula, its worked example and its corner cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pumice import Arguments, ClusterSnapshot, QueueInfo, TaskInfo, TaskStatus
from pumice.plugins.binpack import BinpackPlugin
from support.builders import open_session
from support.nodes import GiB, bare_task, node, place, table

GPU = "nvidia.com/gpu"
FOO = "example.com/foo"

WORKED_EXAMPLE = {
    "binpack.weight": 10,
    "binpack.cpu": 2,
    "binpack.memory": 3,
    "binpack.resources": f"{GPU}, {FOO}",
    f"binpack.resources.{GPU}": 7,
    f"binpack.resources.{FOO}": 8,
}


def scores(task: TaskInfo, *nodes: Any, arguments: dict[str, Any] | None = None) -> list[float]:
    nodes_table = table(*nodes)
    answer = BinpackPlugin(Arguments(arguments or {})).node_score(task, nodes_table)
    assert answer is not None
    return [float(x) for x in answer]


def test_volcano_worked_example_scores_exactly_531_25_through_a_session() -> None:
    snap = ClusterSnapshot.build(
        nodes=[node("n", 4000, 16 * GiB, extra={GPU: 4})], queues=[QueueInfo("default")]
    )
    ssn = open_session(
        {"binpack": BinpackPlugin}, [[{"name": "binpack", "arguments": WORKED_EXAMPLE}]], snap
    )
    task = bare_task("t", 2000, 10 * GiB, **{GPU: 2})
    # cpu 2000*2/4000 = 1, memory 10*3/16 = 1.875, gpu 2*7/4 = 3.5; 6.375/12 * 100 * 10
    assert ssn.node_scores(task).tolist() == [531.25]


def test_used_resources_count_and_overflow_zeroes_the_whole_score() -> None:
    gpu_node = node("busy", 4000, 16 * GiB, extra={GPU: 4})
    empty = node("empty", 4000, 16 * GiB, extra={GPU: 4})
    running = place(bare_task("r", 1000, 2 * GiB, **{GPU: 1}), "busy")
    nodes = table(gpu_node, empty, tasks=[running])
    plugin = BinpackPlugin(Arguments(WORKED_EXAMPLE))
    task = bare_task("t", 2000, 10 * GiB, **{GPU: 2})
    # busy: cpu 3000*2/4000 = 1.5, memory 12*3/16 = 2.25, gpu 3*7/4 = 5.25 -> 9/12 * 1000
    assert plugin.node_score(task, nodes).tolist() == [750.0, 531.25]
    # four GPUs do not fit on busy (1 used + 4 > 4): the whole score is 0 though cpu fits
    big = bare_task("big", 2000, 10 * GiB, **{GPU: 4})
    assert plugin.node_score(big, nodes).tolist() == [0.0, (1 + 1.875 + 7) / 12 * 1000]


def test_exactly_full_still_fits() -> None:
    assert scores(bare_task("t", 4000, 8 * GiB), node("n", 4000, 8 * GiB)) == [100.0]


def test_used_means_allocated_and_releasing_but_not_pipelined() -> None:
    nodes = table(
        node("releasing"),
        node("pipelined"),
        tasks=[
            place(bare_task("a", 2000, 4 * GiB), "releasing", TaskStatus.RELEASING),
            place(bare_task("b", 2000, 4 * GiB), "pipelined", TaskStatus.PIPELINED),
        ],
    )
    task = bare_task("t", 1000, 2 * GiB)
    answer = BinpackPlugin(Arguments({})).node_score(task, nodes)
    # releasing: (3000/4000 + 6/8) / 2 * 100 = 75; pipelined: (1000/4000 + 2/8) / 2 * 100 = 25
    assert answer.tolist() == [75.0, 25.0]


def test_default_weights() -> None:
    # (1000/4000 + 1/8) / 2 * 100 = 18.75
    assert scores(bare_task("t", 1000, GiB), node("n", 4000, 8 * GiB)) == [18.75]


def test_unlisted_resources_are_ignored_and_listed_ones_need_a_request() -> None:
    task = bare_task("t", 1000, GiB, **{GPU: 4})
    n = node("n", 4000, 8 * GiB, extra={GPU: 4})
    assert scores(task, n) == [18.75]  # gpu not listed: ignored even though it fills the node
    listed = {"binpack.resources": f"{GPU},{FOO}"}
    # gpu listed with the default weight 1: (0.25 + 0.125 + 1) / 3 * 100
    assert scores(task, n, arguments=listed) == [pytest.approx(1.375 / 3 * 100)]
    # foo listed but not requested: not counted in the weight sum
    assert scores(bare_task("u", 1000, GiB), n, arguments=listed) == [18.75]


def test_a_resource_the_node_lacks_scores_zero_but_keeps_its_weight() -> None:
    task = bare_task("t", 1000, GiB, **{GPU: 1})
    args = {"binpack.resources": GPU, f"binpack.resources.{GPU}": 2}
    no_gpu = node("cpu-only", 4000, 8 * GiB)
    with_gpu = node("gpu", 4000, 8 * GiB, extra={GPU: 4})
    # cpu-only: (0.25 + 0.125 + 0) / 4 * 100; gpu: (0.25 + 0.125 + 2 * 1/4) / 4 * 100
    assert scores(task, no_gpu, with_gpu, arguments=args) == [9.375, 21.875]


def test_weight_zero_resource_counts_nothing_and_cannot_overflow() -> None:
    task = bare_task("t", 8000, GiB)
    args = {"binpack.cpu": 0}
    # cpu part is skipped entirely (no overflow check), memory 1/8 over weight 1
    assert scores(task, node("n", 4000, 8 * GiB), arguments=args) == [12.5]


def test_negative_resource_weights_mean_one() -> None:
    args = {"binpack.cpu": -5, "binpack.memory": -1, "binpack.resources": GPU}
    args[f"binpack.resources.{GPU}"] = -3
    task = bare_task("t", 1000, GiB, **{GPU: 2})
    n = node("n", 4000, 8 * GiB, extra={GPU: 4})
    assert scores(task, n, arguments=args) == [pytest.approx((0.25 + 0.125 + 0.5) / 3 * 100)]


def test_cpu_and_memory_weights_win_over_the_resource_list() -> None:
    args = {"binpack.resources": "cpu", "binpack.resources.cpu": 9, "binpack.cpu": 3}
    # (3 * 0.25 + 0.125) / 4 * 100
    assert scores(bare_task("t", 1000, GiB), node("n"), arguments=args) == [21.875]


def test_plugin_weight_scales_and_negative_spreads() -> None:
    n = node("n")
    assert scores(bare_task("t", 1000, GiB), n, arguments={"binpack.weight": 4}) == [75.0]
    assert scores(bare_task("t", 1000, GiB), n, arguments={"binpack.weight": -1}) == [-18.75]


def test_weight_zero_means_no_opinion() -> None:
    plugin = BinpackPlugin(Arguments({"binpack.weight": 0}))
    assert plugin.node_score(bare_task("t", 1000, GiB), table(node("n"))) is None


def test_task_requesting_nothing_scores_zero() -> None:
    assert scores(bare_task("t"), node("a"), node("b")) == [0.0, 0.0]


def test_wrongly_typed_arguments_keep_the_defaults() -> None:
    args = {"binpack.weight": "10", "binpack.cpu": 2.5, "binpack.resources": ["x"]}
    assert scores(bare_task("t", 1000, GiB), node("n"), arguments=args) == [18.75]


def test_scores_are_vectorised_over_many_nodes() -> None:
    nodes = [node(f"n{i}", 1000 * (i + 1), 8 * GiB) for i in range(50)]
    answer = scores(bare_task("t", 1000, 4 * GiB), *nodes)
    expected = [(1000 / (1000 * (i + 1)) + 0.5) / 2 * 100 for i in range(50)]
    assert np.allclose(answer, expected, rtol=0, atol=1e-9)
