"""resource-strategy-fit: Volcano's formula, patterns, pod-annotation overrides and the
arguments refused when the plugin is built."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pumice import (
    Arguments,
    ClusterSnapshot,
    ConfigError,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from pumice.commands.config_commands import load_checked
from pumice.logs import forget_warnings
from pumice.plugins import resource_strategy_fit as rsf
from pumice.plugins.resource_strategy_fit import ResourceStrategyFitPlugin, parse_strategies
from support.builders import open_session
from support.nodes import GiB, bare_task, node, place, table

GPU = "nvidia.com/gpu"
MOST = {"type": "MostAllocated"}
LEAST = {"type": "LeastAllocated"}


def plugin(arguments: dict[str, Any] | None = None) -> ResourceStrategyFitPlugin:
    return ResourceStrategyFitPlugin(Arguments(arguments or {}))


def scores(task: TaskInfo, *nodes: Any, arguments: Any = None, tasks: Any = ()) -> list[float]:
    """What a session adds up for ``task``: the (shape's) node score and the per-pod part."""
    return total(plugin(arguments), task, table(*nodes, tasks=tasks))


def total(built: ResourceStrategyFitPlugin, task: TaskInfo, nodes: Any) -> list[float]:
    answer = built.node_score(task, nodes)
    assert answer is not None
    own = built.normalized_score(task, nodes, np.ones(len(nodes), dtype=np.bool_))
    return (answer if own is None else answer + own).tolist()


def annotated(name: str, resreq: dict[str, float], annotations: dict[str, str]) -> TaskInfo:
    pod = {"metadata": {"name": name, "namespace": "default", "annotations": annotations}}
    return TaskInfo(uid=name, name=name, resreq=Resource(resreq), pod=pod)


# -- the formula --------------------------------------------------------------------------------


def test_volcano_example_466_67_through_a_session() -> None:
    # Volcano's own test: task (100m, 100 bytes) on a node with (200m, 200) used of (500m, 500)
    arguments = {
        "resourceStrategyFitWeight": 10,
        "resources": {"cpu": {**LEAST, "weight": 2}, "memory": {**MOST, "weight": 1}},
    }
    snap = ClusterSnapshot.build(nodes=[node("n", 500, 500)], queues=[QueueInfo("default")])
    snap.nodes["n"].add_task(place(bare_task("r", 200, 200), "n"))
    ssn = open_session(
        {"resource-strategy-fit": ResourceStrategyFitPlugin},
        [[{"name": "resource-strategy-fit", "arguments": arguments}]],
        snap,
    )
    # cpu (500 - 300) / 500 * 2 = 0.8, memory 300 / 500 * 1 = 0.6: 1.4 / 3 * 100 * 10
    assert ssn.node_scores(bare_task("t", 100, 100)).tolist() == [pytest.approx(1400 / 3)]


def test_default_is_cpu_and_memory_least_allocated_weight_one_times_ten() -> None:
    n = node("n", 4000, 8 * GiB)
    # cpu 3/4 free, memory 6/8 free: 0.75 * 100 * 10
    assert scores(bare_task("t", 1000, 2 * GiB), n) == [750.0]


def test_most_allocated_packs_and_least_allocated_spreads() -> None:
    task = bare_task("t", 1000, GiB)
    packed = {"resourceStrategyFitWeight": 1, "resources": {"cpu": MOST, "memory": MOST}}
    spread = {"resourceStrategyFitWeight": 1}
    answers = []
    for arguments in (packed, spread):
        busy, empty = node("busy", 4000, 8 * GiB), node("empty", 4000, 8 * GiB)
        running = place(bare_task("r", 2000, 4 * GiB), "busy")
        answers.append(scores(task, busy, empty, arguments=arguments, tasks=[running]))
    # packed: busy cpu 3/4, memory 5/8 -> (0.75 + 0.625) / 2; empty (0.25 + 0.125) / 2
    assert answers[0] == [68.75, 18.75]
    # spread: busy (0.25 + 0.375) / 2; empty (0.75 + 0.875) / 2
    assert answers[1] == [31.25, 81.25]


def test_a_request_that_does_not_fit_scores_the_node_zero() -> None:
    arguments = {"resources": {GPU: {**MOST, "weight": 3}, "cpu": LEAST}}
    small, big = node("small", extra={GPU: 1}), node("big", extra={GPU: 4})
    task = bare_task("t", 1000, GiB, **{GPU: 2})
    # small: 2 GPUs of 1 do not fit -> 0 although cpu fits; big: (3 * 2/4 + 3/4) / 4 * 1000
    assert scores(task, small, big, arguments=arguments) == [0.0, 562.5]
    # cpu beyond the node zeroes it too, whatever the GPU part
    assert scores(bare_task("u", 5000, 0, **{GPU: 1}), big, arguments=arguments) == [0.0]


def test_a_resource_the_node_lacks_scores_zero_but_keeps_its_weight() -> None:
    arguments = {"resources": {GPU: {**MOST, "weight": 3}, "cpu": LEAST}}
    task = bare_task("t", 1000, GiB, **{GPU: 1})
    cpu_only, gpu = node("cpu-only"), node("gpu", extra={GPU: 4})
    # cpu-only: (0 + 0.75) / 4; gpu: (3 * 1/4 + 0.75) / 4
    assert scores(task, cpu_only, gpu, arguments=arguments) == [187.5, 375.0]
    # no node has the resource at all: same rule
    assert scores(task, cpu_only, arguments=arguments) == [187.5]


def test_only_requested_and_configured_resources_count() -> None:
    arguments = {"resources": {GPU: {**MOST, "weight": 5}, "cpu": LEAST}}
    gpu = node("gpu", extra={GPU: 4})
    # no GPU requested: its weight is not counted; memory requested but not configured
    assert scores(bare_task("t", 1000, 4 * GiB), gpu, arguments=arguments) == [750.0]
    # a task requesting nothing configured scores 0
    assert scores(bare_task("u", 0, GiB), gpu, arguments=arguments) == [0.0]


def test_real_requests_not_kube_scheduler_defaults() -> None:
    # a memory-only task: cpu is not requested, so it does not count (no 100m default)
    assert scores(bare_task("t", 0, 2 * GiB), node("n", 4000, 8 * GiB)) == [750.0]


def test_weight_zero_is_no_opinion_and_resource_weight_zero_means_one() -> None:
    n = node("n")
    assert (
        plugin({"resourceStrategyFitWeight": 0}).node_score(bare_task("t", 1000), table(n)) is None
    )
    arguments = {"resourceStrategyFitWeight": 1, "resources": {"cpu": {**MOST, "weight": 0}}}
    assert scores(bare_task("t", 1000), n, arguments=arguments) == [25.0]


def test_used_counts_running_and_not_pipelined_tasks() -> None:
    arguments = {"resourceStrategyFitWeight": 1, "resources": {"cpu": MOST}}
    running = node("running")
    pipelined = node("pipelined")
    tasks = [
        place(bare_task("a", 2000), "running"),
        place(bare_task("b", 2000), "pipelined", TaskStatus.PIPELINED),
    ]
    assert scores(bare_task("t", 1000), running, pipelined, arguments=arguments, tasks=tasks) == [
        75.0,
        25.0,
    ]


# -- patterns -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patterns", "resource", "expected"),
    [
        # exact names only
        ({"nvidia.com/gpu": 2}, "nvidia.com/gpu", 2),
        ({"nvidia.com/gpu": 2}, "nvidia.com/gpu-mem", None),
        # a trailing '*' matches the prefix, and the prefix itself
        ({"nvidia.com/*": 3}, "nvidia.com/gpu", 3),
        ({"nvidia.com/*": 3}, "nvidia.com/", 3),
        ({"nvidia.com/*": 3}, "nvidia.co", None),
        ({"nvidia.com/gpu/*": 4}, "nvidia.com/gpu/a100", 4),
        ({"nvidia.com/gpu/*": 4}, "nvidia.com/gpu", None),
        # an exact name beats any pattern
        ({"nvidia.com/*": 3, "nvidia.com/gpu": 2}, "nvidia.com/gpu", 2),
        # among patterns the longest prefix wins, whatever the order
        ({"nvidia.*": 1, "nvidia.com/*": 3}, "nvidia.com/gpu", 3),
        ({"nvidia.com/*": 3, "nvidia.*": 1}, "nvidia.com/gpu", 3),
        ({"nvidia.com/*": 3, "nvidia.*": 1}, "nvidia.io/gpu", 1),
        # dropped patterns match nothing
        ({"*": 9}, "nvidia.com/gpu", None),
        ({"vendor.*/gpu": 9}, "vendor.com/gpu", None),
        ({"*/gpu": 9}, "vendor.com/gpu", None),
        ({"vendor.com/**": 9}, "vendor.com/gpu", None),
        ({"vendor.com/**": 9, "vendor.*": 5}, "vendor.com/gpu", 5),
    ],
)
def test_wildcard_matching(patterns: dict[str, int], resource: str, expected: int | None) -> None:
    strategies, _ = parse_strategies({k: {"weight": w} for k, w in patterns.items()})
    found = strategies.lookup(resource)
    assert (found.weight if found is not None else None) == expected


@pytest.mark.parametrize(
    ("pattern", "valid"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/gpu/*", True),
        ("nvidia.*", True),
        ("a*", True),
        ("*", False),
        ("vendor.*/gpu", False),
        ("*/gpu", False),
        ("vendor.com/**", False),
        ("*gpu*", False),
    ],
)
def test_pattern_validation_warns_naming_the_dropped_pattern(
    pattern: str, valid: bool, caplog: pytest.LogCaptureFixture
) -> None:
    forget_warnings()  # warnings are once per process
    with caplog.at_level(logging.WARNING, logger="pumice.plugins.resource_strategy_fit"):
        built = plugin({"resources": {pattern: MOST, "cpu": LEAST}})
    assert built.dropped == ([] if valid else [pattern])
    warned = [r.getMessage() for r in caplog.records]
    if valid:
        assert warned == []
    else:
        assert len(warned) == 1 and f"pattern {pattern!r} dropped" in warned[0]


def test_a_pattern_scores_like_the_exact_name() -> None:
    task = bare_task("t", 1000, GiB, **{"nvidia.com/gpu-a100": 1})
    n = node("n", extra={"nvidia.com/gpu-a100": 2})
    by_pattern = {"resources": {"nvidia.com/*": {**MOST, "weight": 3}, "cpu": LEAST}}
    by_name = {"resources": {"nvidia.com/gpu-a100": {**MOST, "weight": 3}, "cpu": LEAST}}
    # (3 * 1/2 + 3/4) / 4 * 1000
    assert scores(task, n, arguments=by_pattern) == scores(task, n, arguments=by_name) == [562.5]


# -- pod annotations ----------------------------------------------------------------------------


def override(kind: str | None, weights: str | None) -> dict[str, str]:
    out = {}
    if kind is not None:
        out[rsf.SCORING_TYPE_ANNOTATION] = kind
    if weights is not None:
        out[rsf.WEIGHT_ANNOTATION] = weights
    return out


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        # no annotation: the config (cpu and GPU MostAllocated): (1 * 3/4 + 1 * 1/4) / 2
        ({}, [500.0]),
        # only the resources in the map are scored, all with the annotation's type
        (override("LeastAllocated", json.dumps({"cpu": 1})), [250.0]),
        (override("LeastAllocated", json.dumps({"cpu": 1, GPU: 3})), [(0.25 + 3 * 0.75) * 250]),
        (override("MostAllocated", json.dumps({GPU: 1})), [250.0]),
        # a resource in the map that the pod does not request is not scored
        (override("MostAllocated", json.dumps({"example.com/foo": 1})), [0.0]),
        # a type without a usable weight map: 0 on every node
        (override("MostAllocated", None), [0.0]),
        (override("MostAllocated", ""), [0.0]),
        (override("MostAllocated", "{not json"), [0.0]),
        (override("MostAllocated", json.dumps([1, 2])), [0.0]),
        (override("MostAllocated", json.dumps({"cpu": "2"})), [0.0]),
        (override("MostAllocated", json.dumps({"cpu": -1})), [0.0]),
        (override("Balanced", json.dumps({"cpu": 1})), [0.0]),
        # a weight map without a type is ignored
        (override(None, json.dumps({"cpu": 9})), [500.0]),
        (override("", json.dumps({"cpu": 9})), [500.0]),
    ],
)
def test_pod_annotations_override_the_config(
    annotations: dict[str, str], expected: list[float]
) -> None:
    arguments = {"resources": {"cpu": MOST, GPU: MOST}}
    n = node("n", 4000, 8 * GiB, extra={GPU: 4})
    busy = place(bare_task("r", 2000), "n")
    task = annotated("p", {"cpu": 1000, "memory": GiB, GPU: 1}, annotations)
    assert scores(task, n, arguments=arguments, tasks=[busy]) == [
        pytest.approx(x) for x in expected
    ]


def test_annotations_are_read_again_when_the_pod_changes() -> None:
    built = plugin({"resources": {"cpu": MOST}})
    nodes = table(node("n"))
    task = annotated("p", {"cpu": 1000}, {})
    assert total(built, task, nodes) == [250.0]
    assert built.normalized_score(task, nodes, np.ones(1, dtype=np.bool_)) is None
    task.pod = annotated("p", {"cpu": 1000}, override("LeastAllocated", '{"cpu": 1}')).pod
    assert total(built, task, nodes) == [750.0]
    # node_score is the shape's (configured) part; the pod's own part comes on top
    assert built.node_score(task, nodes).tolist() == [250.0]


# -- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "key", "message"),
    [
        ({"resourceStrategyFitWeight": -1}, "resourceStrategyFitWeight", "must not be negative"),
        ({"resourceStrategyFitWeight": "10"}, "resourceStrategyFitWeight", "must be an integer"),
        ({"resources": ["cpu"]}, "resources", "must be a mapping"),
        ({"resources": {"cpu": 1}}, "resources.cpu", "must be a mapping"),
        ({"resources": {"cpu": {"type": "Most"}}}, "resources.cpu.type", "must be one of"),
        ({"resources": {"cpu": {"weight": -2}}}, "resources.cpu.weight", "must not be negative"),
        ({"resources": {"cpu": {"wieght": 2}}}, "resources.cpu.wieght", "unknown key"),
        ({"resources": {"": MOST}}, "resources.", "must not be empty"),
        ({"sra": {"enable": True, "weight": -1}}, "sra.weight", "must not be negative"),
        ({"sra": {"enable": "yes"}}, "sra.enable", "true or false"),
        ({"sra": {"resources": 5}}, "sra.resources", "comma-separated"),
        ({"proportional": {"ratio": 1}}, "proportional.ratio", "unknown key"),
        (
            {"proportional": {"resourceProportion": {f"{GPU}.cpu": "4"}}},
            f"proportional.resourceProportion.{GPU}.cpu",
            "must be a number",
        ),
    ],
)
def test_bad_arguments_are_refused(arguments: dict[str, Any], key: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plugin(arguments)
    assert caught.value.key == key
    assert message in caught.value.message
    assert str(caught.value).startswith("plugin 'resource-strategy-fit' arguments: ")


def test_check_config_locates_a_bad_type(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(
        "actions: allocate\n"
        "tiers:\n"
        "- plugins:\n"
        "  - name: predicates\n"
        "  - name: resource-strategy-fit\n"
        "    arguments:\n"
        "      resources:\n"
        "        nvidia.com/gpu: {type: MostAllocated, weight: 2}\n"
        "        cpu:\n"
        "          type: leastallocated\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_checked(str(path))
    assert str(caught.value) == (
        f"{path}:10: tiers[0].plugins[1].arguments.resources.cpu.type: "
        "must be one of MostAllocated, LeastAllocated, got 'leastallocated'"
    )


def test_one_plugin_scoring_two_tables_uses_each_tables_allocatable() -> None:
    # allocatable-derived columns are kept per table for the session; another table is new
    built = plugin({"resourceStrategyFitWeight": 1, "resources": {"cpu": MOST}})
    task = bare_task("t", 1000)
    assert built.node_score(task, table(node("a", 4000))).tolist() == [25.0]
    assert built.node_score(task, table(node("b", 2000), node("c", 8000))).tolist() == [50.0, 12.5]


# -- Volcano's own test vectors -----------------------------------------------------------------


def strategies(weight: int, cpu: tuple[str, int], memory: tuple[str, int]) -> dict[str, Any]:
    return {
        "resourceStrategyFitWeight": weight,
        "resources": {
            "cpu": {"type": cpu[0], "weight": cpu[1]},
            "memory": {"type": memory[0], "weight": memory[1]},
        },
    }


L, M = "LeastAllocated", "MostAllocated"


@pytest.mark.parametrize(
    ("request_", "used", "allocatable", "arguments", "annotations", "expected"),
    [
        ((100, 100), (200, 200), (500, 500), strategies(10, (L, 1), (L, 1)), {}, 400),
        ((100, 100), (200, 200), (400, 400), strategies(10, (L, 1), (L, 1)), {}, 250),
        ((100, 100), (200, 200), (500, 500), strategies(10, (M, 1), (M, 1)), {}, 600),
        ((100, 100), (200, 200), (400, 400), strategies(10, (M, 1), (M, 1)), {}, 750),
        ((100, 100), (200, 200), (500, 500), strategies(10, (L, 2), (M, 1)), {}, 1400 / 3),
        ((100, 100), (200, 200), (500, 500), strategies(10, (L, 1), (M, 2)), {}, 1600 / 3),
        ((0, 100), (200, 200), (500, 500), strategies(10, (L, 1), (M, 2)), {}, 600),
        ((100, 100), (200, 200), (0, 400), strategies(10, (L, 1), (M, 2)), {}, 500),
        (
            (100, 100),
            (200, 200),
            (500, 500),
            {"resources": {"memory": {"type": M, "weight": 2}}},
            {},
            600,
        ),
        (
            (100, 100),
            (200, 200),
            (500, 500),
            strategies(10, (L, 1), (L, 1)),
            override(L, '{"cpu": 2, "memory": 1}'),
            400,
        ),
        (
            (100, 100),
            (200, 200),
            (500, 500),
            strategies(10, (L, 1), (L, 1)),
            override(M, '{"cpu": 1, "memory": 2}'),
            600,
        ),
        (
            (100, 100),
            (200, 200),
            (500, 500),
            strategies(10, (L, 1), (L, 1)),
            override(L, "invalid-json"),
            0,
        ),
        (
            (100, 100),
            (200, 200),
            (500, 500),
            strategies(10, (L, 1), (L, 1)),
            override(L, '{"cpu": 2}'),
            400,
        ),
        ((0, 0), (200, 200), (500, 500), strategies(10, (L, 1), (L, 1)), {}, 0),
        ((100, 100), (500, 500), (500, 500), strategies(10, (L, 1), (L, 1)), {}, 0),
        ((100, 100), (200, 200), (500, 500), strategies(10, (L, 3), (M, 1)), {}, 450),
        ((100, 100), (200, 200), (500, 500), strategies(20, (L, 5), (L, 5)), {}, 800),
    ],
)
def test_volcano_score_vectors(
    request_: tuple[float, float],
    used: tuple[float, float],
    allocatable: tuple[float, float],
    arguments: dict[str, Any],
    annotations: dict[str, str],
    expected: float,
) -> None:
    # Volcano 1.13's TestScore: one node with (cpu, memory) used of allocatable
    n = node("n", *allocatable)
    running = place(bare_task("used", *used), "n")
    resreq = {k: v for k, v in zip(("cpu", "memory"), request_, strict=True) if v}
    task = annotated("p", resreq, annotations)
    assert scores(task, n, arguments=arguments, tasks=[running]) == [pytest.approx(expected)]
