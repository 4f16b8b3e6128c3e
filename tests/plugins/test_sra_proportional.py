"""sra (scarce-resource avoidance score) and proportional (headroom predicate): formulas,
corner cases and arguments, standalone and inside resource-strategy-fit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pumice import Arguments, ConfigError, PredicateResult, TaskInfo
from pumice.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from pumice.plugins.scarce import ProportionalPlugin, SraPlugin
from support.nodes import GiB, bare_task, node, place, table

GPU = "nvidia.com/gpu"
NPU = "huawei.com/npu"
GB = 10**9


def sra_scores(task: TaskInfo, *nodes: Any, arguments: dict[str, Any]) -> list[float]:
    answer = SraPlugin(Arguments(arguments)).node_score(task, table(*nodes))
    assert answer is not None
    return answer.tolist()


def verdict(task: TaskInfo, *nodes: Any, arguments: dict[str, Any], tasks: Any = ()) -> Any:
    """(mask, reason of each rejected node) of the proportional predicate, or None."""
    answer = ProportionalPlugin(Arguments(arguments)).predicate(task, table(*nodes, tasks=tasks))
    if answer is None:
        return None
    assert isinstance(answer, PredicateResult)
    mask = answer.mask.tolist()
    reasons = answer.reasons
    if isinstance(reasons, str):
        return mask, [reasons for ok in mask if not ok]
    return mask, [str(r) for r, ok in zip(reasons, mask, strict=True) if not ok]


# -- sra ----------------------------------------------------------------------------------------


def test_sra_keeps_a_cpu_task_off_nodes_with_scarce_devices() -> None:
    cpu_node, gpu_node = node("cpu"), node("gpu", extra={GPU: 4})
    args = {"resources": GPU, "weight": 2}
    # cpu node: (1 - 0/1) * 100 * 2; gpu node: (1 - 1/1) * 100 * 2
    assert sra_scores(bare_task("t", 1000, GiB), cpu_node, gpu_node, arguments=args) == [200, 0]


def test_sra_is_neutral_for_a_task_that_needs_the_device() -> None:
    cpu_node, gpu_node = node("cpu"), node("gpu", extra={GPU: 4})
    task = bare_task("t", 1000, GiB, **{GPU: 1})
    # the cpu node lacks a requested resource: 0; the gpu node has the only scarce one: 0
    assert sra_scores(task, cpu_node, gpu_node, arguments={"resources": GPU}) == [0.0, 0.0]
    # no node has the requested resource at all
    assert sra_scores(bare_task("u", 1000, 0, **{NPU: 1}), cpu_node, arguments={}) == [0.0]


def test_sra_weighs_each_scarce_resource() -> None:
    nodes = [node("none"), node("gpu", extra={GPU: 1}), node("npu", extra={NPU: 1})]
    nodes.append(node("both", extra={GPU: 1, NPU: 1}))
    args = {"resources": f"{GPU}, {NPU}", "resourceWeight": {GPU: 3}}
    # weights gpu 3, npu 1 (default): 1 - has / 4
    assert sra_scores(bare_task("t", 1000), *nodes, arguments=args) == [100.0, 25.0, 75.0, 0.0]


def test_sra_without_resources_scores_zero_and_weight_zero_has_no_opinion() -> None:
    n = node("n")
    assert sra_scores(bare_task("t", 1000), n, arguments={}) == [0.0]
    plugin = SraPlugin(Arguments({"resources": GPU, "weight": 0}))
    assert plugin.node_score(bare_task("t", 1000), table(n)) is None
    off = SraPlugin(Arguments({"resources": GPU, "enable": False}))
    assert off.node_score(bare_task("t", 1000), table(n)) is None


@pytest.mark.parametrize(
    ("arguments", "key"),
    [
        ({"weight": -1}, "weight"),
        ({"resources": GPU, "resourceWeight": {GPU: -1}}, f"resourceWeight.{GPU}"),
        ({"resourceWeight": [1]}, "resourceWeight"),
        ({"resources": {GPU: 1}}, "resources"),
        ({"resource": GPU}, "resource"),
    ],
)
def test_sra_bad_arguments_are_refused(arguments: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        SraPlugin(Arguments(arguments))
    assert caught.value.key == key


def test_sra_inside_resource_strategy_fit_adds_to_its_score() -> None:
    arguments: dict[str, Any] = {"resources": {"cpu": {"type": "LeastAllocated"}}}
    nodes = table(node("cpu"), node("gpu", extra={GPU: 4}))
    task = bare_task("t", 1000, GiB)
    plain = ResourceStrategyFitPlugin(Arguments(arguments)).node_score(task, nodes)
    assert plain is not None and plain.tolist() == [750.0, 750.0]
    # Volcano's default: the sra map is off unless enabled
    listed = {**arguments, "sra": {"resources": GPU, "weight": 5}}
    answer = ResourceStrategyFitPlugin(Arguments(listed)).node_score(task, nodes)
    assert answer is not None and answer.tolist() == [750.0, 750.0]
    enabled = {**arguments, "sra": {"enable": True, "resources": GPU, "weight": 5}}
    answer = ResourceStrategyFitPlugin(Arguments(enabled)).node_score(task, nodes)
    assert answer is not None and answer.tolist() == [1250.0, 750.0]
    # sra alone (the fit weight 0) still scores
    only = {**enabled, "resourceStrategyFitWeight": 0}
    answer = ResourceStrategyFitPlugin(Arguments(only)).node_score(task, nodes)
    assert answer is not None and answer.tolist() == [500.0, 0.0]


# -- proportional -------------------------------------------------------------------------------

RATES = {"resources": GPU, "resourceProportion": {f"{GPU}.cpu": 2, f"{GPU}.memory": 8}}


def gpu_node(name: str = "gpu", cpu: float = 16000, memory: float = 64 * GB) -> Any:
    return node(name, cpu, memory, extra={GPU: 4})


def test_a_cpu_task_must_leave_cpu_and_memory_for_the_idle_gpus() -> None:
    # 4 idle GPUs * 2 cores = 8 cores and 4 * 8 GB = 32 GB to keep on a 16 core / 64 GB node
    assert verdict(bare_task("t", 8000, 32 * GB), gpu_node(), arguments=RATES) == ([True], [])
    reason = f"proportional of resource {GPU} check failed"
    assert verdict(bare_task("t", 8001, GB), gpu_node(), arguments=RATES) == ([False], [reason])
    assert verdict(bare_task("t", 1000, 33 * GB), gpu_node(), arguments=RATES) == (
        [False],
        [reason],
    )


def test_only_idle_devices_reserve_headroom() -> None:
    busy = place(bare_task("r", 2000, 8 * GB, **{GPU: 2}), "gpu")
    # 2 idle GPUs keep 4 cores and 16 GB; idle is 14 cores and 56 GB
    task = bare_task("t", 10000, 40 * GB)
    assert verdict(task, gpu_node(), arguments=RATES, tasks=[busy]) == ([True], [])
    over = bare_task("u", 10001, 40 * GB)
    assert verdict(over, gpu_node(), arguments=RATES, tasks=[busy])[0] == [False]


def test_tasks_asking_for_a_listed_device_and_nodes_without_one_are_not_checked() -> None:
    assert verdict(bare_task("t", 15000, 0, **{GPU: 1}), gpu_node(), arguments=RATES) is None
    # a node without GPUs passes (fitting its cpu is the predicates plugin's job)
    cpu_only = node("cpu", 4000, 8 * GB)
    assert verdict(bare_task("t", 9000), cpu_only, gpu_node(), arguments=RATES) == (
        [True, False],
        [f"proportional of resource {GPU} check failed"],
    )


def test_default_and_negative_rates_are_one_core_and_one_gb() -> None:
    for arguments in (
        {"resources": GPU},
        {"resources": GPU, "resourceProportion": {f"{GPU}.cpu": -3, f"{GPU}.memory": -1}},
    ):
        n = node("gpu", 8000, 8 * GB, extra={GPU: 4})
        # keep 4 cores and 4 GB
        assert verdict(bare_task("t", 4000, 4 * GB), n, arguments=arguments) == ([True], [])
        assert verdict(bare_task("t", 4001, 0), n, arguments=arguments)[0] == [False]


def test_fractional_rates_and_the_reason_of_the_first_failing_resource() -> None:
    arguments = {
        "resources": f"{GPU},{NPU}",
        "resourceProportion": {f"{GPU}.cpu": 0.5, f"{NPU}.cpu": 4, f"{NPU}.memory": 0},
    }
    nodes = [
        node("gpu", 8000, 16 * GB, extra={GPU: 4}),  # keeps 2 cores, 4 GB
        node("npu", 8000, 16 * GB, extra={NPU: 1}),  # keeps 4 cores
        node("both", 8000, 16 * GB, extra={GPU: 4, NPU: 1}),
    ]
    assert verdict(bare_task("t", 4000, GB), *nodes, arguments=arguments) == (
        [True, True, True],
        [],
    )
    assert verdict(bare_task("t", 5000, GB), *nodes, arguments=arguments) == (
        [True, False, False],
        [f"proportional of resource {NPU} check failed"] * 2,
    )
    assert verdict(bare_task("t", 7000, GB), *nodes, arguments=arguments) == (
        [False, False, False],
        [f"proportional of resource {r} check failed" for r in (GPU, NPU, GPU)],
    )


def test_proportional_switched_off_or_without_resources_has_no_opinion() -> None:
    task = bare_task("t", 15000)
    assert verdict(task, gpu_node(), arguments={}) is None
    assert verdict(task, gpu_node(), arguments={**RATES, "enable": "false"}) is None
    inside = ResourceStrategyFitPlugin(Arguments({"proportional": RATES}))
    assert inside.predicate(task, table(gpu_node())) is None  # off unless enabled in Volcano
    enabled = {"proportional": {**RATES, "enable": True}}
    answer = ResourceStrategyFitPlugin(Arguments(enabled)).predicate(task, table(gpu_node()))
    assert isinstance(answer, PredicateResult) and answer.mask.tolist() == [False]


def test_proportional_is_one_vector_over_many_nodes() -> None:
    nodes = [node(f"n{i}", 16000, 64 * GB, extra={GPU: i % 5}) for i in range(200)]
    answer = ProportionalPlugin(Arguments(RATES)).predicate(bare_task("t", 9000), table(*nodes))
    assert isinstance(answer, PredicateResult)
    # 16 - 9 = 7 cores left: nodes with 4 idle GPUs (8 cores) fail, those with 0-3 pass
    expected = np.array([i % 5 < 4 for i in range(200)])
    assert answer.mask.tolist() == expected.tolist()


# -- Volcano's own test vectors -----------------------------------------------------------------
# The clusters and expected scores of Volcano 1.13's sra and proportional unit tests; each pod
# is scored on empty nodes.

T4, A10 = "nvidia.com/t4", "nvidia.com/a10"


def volcano_sra_cluster() -> Any:
    return table(
        node("n1", 32000, 64 * GiB),
        node("n2", 8000, 16 * GiB, extra={T4: 16}),
        node("n3", 8000, 16 * GiB, extra={A10: 16}),
        node("n4", 8000, 16 * GiB, extra={T4: 8, A10: 16}),
    )


VOLCANO_PODS = {
    "p1": bare_task("p1", 1000, GiB),
    "p2": bare_task("p2", 1500, 0, **{T4: 2}),
    "p3": bare_task("p3", 2000, 4 * GiB, **{A10: 2}),
    "p4": bare_task("p4", 3000, 4 * GiB, **{T4: 1, A10: 3}),
}
BOTH = {"enable": True, "resources": f"{T4}, {A10}", "weight": 5, "resourceWeight": {T4: 2, A10: 3}}
STRATEGY = {T4: {"type": "MostAllocated", "weight": 3}, "cpu": {"type": "LeastAllocated"}}
T4_ONLY = {"enable": True, "resources": T4, "weight": 5, "resourceWeight": {T4: 2}}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (  # sra alone over two devices (t4 weight 2, a10 weight 3)
            {"resourceStrategyFitWeight": 0, "sra": BOTH},
            {
                "p1": [500, 300, 200, 0],
                "p2": [0, 300, 0, 0],
                "p3": [0, 0, 200, 0],
                "p4": [0, 0, 0, 0],
            },
        ),
        (  # sra alone over t4
            {"resourceStrategyFitWeight": 0, "sra": T4_ONLY},
            {
                "p1": [500, 0, 500, 0],
                "p2": [0, 0, 0, 0],
                "p3": [0, 0, 500, 0],
                "p4": [0, 0, 0, 0],
            },
        ),
        (  # resource-strategy-fit (t4 packed, cpu spread) with sra at weight 0
            {
                "resourceStrategyFitWeight": 8,
                "resources": STRATEGY,
                "sra": {**T4_ONLY, "weight": 0},
            },
            {
                "p1": [775, 700, 700, 700],
                "p2": [190.625, 237.5, 162.5, 312.5],
                "p3": [750, 600, 600, 600],
                "p4": [181.25, 162.5, 125, 200],
            },
        ),
        (  # both together
            {"resourceStrategyFitWeight": 8, "resources": STRATEGY, "sra": T4_ONLY},
            {
                "p1": [1275, 700, 1200, 700],
                "p2": [190.625, 237.5, 162.5, 312.5],
                "p3": [750, 600, 1100, 600],
                "p4": [181.25, 162.5, 125, 200],
            },
        ),
    ],
    ids=["sra-two-devices", "sra-one-device", "fit-with-sra-off", "fit-and-sra"],
)
def test_volcano_sra_vectors(arguments: dict[str, Any], expected: dict[str, list[float]]) -> None:
    built = ResourceStrategyFitPlugin(Arguments(arguments))
    nodes = volcano_sra_cluster()
    for pod, want in expected.items():
        answer = built.node_score(VOLCANO_PODS[pod], nodes)
        assert answer is not None
        assert answer.tolist() == pytest.approx(want), pod


@pytest.mark.parametrize(
    ("task", "idle", "passes"),
    [
        (bare_task("cpu-small", 4000, 4 * GB), (30000, 30 * GB, 6), True),
        (bare_task("cpu-big", 10000, 10 * GB), (30000, 30 * GB, 6), False),  # 20 < 6 * 4
        (bare_task("gpu", 10000, 10 * GB, **{GPU: 1}), (30000, 30 * GB, 6), True),
        (bare_task("cpu-big", 10000, 10 * GB), (26000, 26 * GB, 2), True),  # 16 >= 2 * 4
    ],
)
def test_volcano_proportional_vectors(
    task: TaskInfo, idle: tuple[float, float, float], passes: bool
) -> None:
    cpu, memory, gpus = idle
    n = node("n", cpu, memory, extra={GPU: gpus})
    arguments = {"resources": GPU, "resourceProportion": {f"{GPU}.cpu": 4, f"{GPU}.memory": 4}}
    answer = verdict(task, n, arguments=arguments)
    assert (answer is None or answer[0] == [True]) == passes
