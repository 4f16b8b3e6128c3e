"""Tasks of equal ``shape`` get identical masks, reasons and scores from the built-in node
plugins (predicates, nodeorder, binpack), whatever else differs between their pods."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pumice import Arguments, NodeTable, TaskInfo
from pumice.plugins.binpack import BinpackPlugin
from pumice.plugins.nodeorder import NodeOrderPlugin
from pumice.plugins.predicates import PredicatesPlugin
from support.nodes import GiB, container, expr, node, place, pod, table, taint, term, toleration

ZONES = ("a", "b", "c")

# Pieces of pods; a pod picks one of each, and the choices that do not change the shape
# (names, container names, the order of selectors and tolerations, limits) vary freely.
REQUESTS = (
    [("500m", "1Gi")],
    [("250m", "512Mi"), ("250m", "512Mi")],  # same request as the one above, split in two
    [("500m", "1Gi"), (None, None)],  # same request again, but a larger non-zero request
    [("500m", None)],
    [(None, None)],
    [("2", "4Gi"), (None, None)],
    [("1500m", "3Gi")],
)
SELECTORS = ({}, {"zone": "a"}, {"zone": "b", "disk": "ssd"})
TOLERATIONS = (
    [],
    [toleration("dedicated", "Exists")],
    [toleration("spot", value="yes", effect="PreferNoSchedule"), toleration("x", "Exists")],
)
PREFERRED = ((), ((7, term(expr("gen", "In", "1", "2"))),), ((3, term(expr("disk", "Exists"))),))
PORTS = ((), (8080,))


Template = tuple[int, int, int, int, int]
"""Indices into REQUESTS, SELECTORS, TOLERATIONS, PREFERRED, PORTS."""


def make_template(rng: random.Random) -> Template:
    return tuple(
        rng.randrange(len(pool)) for pool in (REQUESTS, SELECTORS, TOLERATIONS, PREFERRED, PORTS)
    )  # type: ignore[return-value]


def make_pod(rng: random.Random, name: str, template: Template | None = None) -> dict[str, Any]:
    requests, selector_at, tolerations_at, preferred_at, ports_at = template or make_template(rng)
    containers = []
    for i, (cpu, memory) in enumerate(REQUESTS[requests]):
        c = container(cpu, memory, name=f"c{i}-{rng.randrange(9)}")
        if rng.random() < 0.5:
            c["resources"] = {**c.get("resources", {}), "limits": {"cpu": "8"}}
        containers.append(c)
    ports = PORTS[ports_at]
    if ports:
        containers[0]["ports"] = [{"containerPort": 80, "hostPort": p} for p in ports]
    selector = dict(SELECTORS[selector_at])
    tolerations = list(TOLERATIONS[tolerations_at])
    if rng.random() < 0.5:  # order does not matter
        selector = dict(reversed(selector.items()))
        tolerations.reverse()
    p = pod(
        name,
        containers=containers,
        node_selector=selector,
        tolerations=tolerations,
        preferred=PREFERRED[preferred_at],
    )
    p["metadata"]["labels"] = {"app": name}
    return p


def make_table(rng: random.Random) -> NodeTable:
    nodes, running = [], []
    for i in range(rng.randrange(3, 12)):
        taints = []
        if rng.random() < 0.3:
            taints.append(taint("dedicated", "gpu"))
        if rng.random() < 0.3:
            taints.append(taint("spot", "yes", "PreferNoSchedule"))
        labels = {"zone": ZONES[i % 3], "gen": str(rng.randrange(4))}
        if rng.random() < 0.5:
            labels["disk"] = "ssd"
        name = f"n{i}"
        nodes.append(
            node(
                name,
                cpu=rng.choice([2000, 4000, 8000]),
                memory=rng.choice([4, 8, 16]) * GiB,
                labels=labels,
                taints=taints,
                unschedulable=rng.random() < 0.1,
                max_pods=rng.choice([1, 3, 110]),
            )
        )
        if rng.random() < 0.6:
            running.append(place(TaskInfo.from_pod(make_pod(rng, f"run-{i}")), name))
    return table(*nodes, tasks=running)


PLUGINS = (
    PredicatesPlugin(Arguments({})),
    NodeOrderPlugin(Arguments({"mostrequested.weight": 1})),
    BinpackPlugin(Arguments({})),
)


def answers(task: TaskInfo, nodes: NodeTable) -> list[Any]:
    predicates, nodeorder, binpack = PLUGINS
    result = predicates.predicate(task, nodes)
    reasons = result.reasons
    if isinstance(reasons, str):
        reasons = np.full(len(nodes), reasons, dtype=object)
    reasons = np.where(result.mask, "", reasons)
    return [
        result.mask,
        reasons,
        nodeorder.node_score(task, nodes),
        binpack.node_score(task, nodes),
    ]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_equal_shapes_get_identical_answers(seed: int) -> None:
    rng = random.Random(seed)
    nodes = make_table(rng)
    templates = [make_template(rng) for _ in range(4)]
    tasks = [TaskInfo.from_pod(make_pod(rng, f"p{i}", rng.choice(templates))) for i in range(30)]
    first: dict[Any, tuple[TaskInfo, list[Any]]] = {}
    for task in tasks:
        mine = answers(task, nodes)
        seen = first.setdefault(task.shape, (task, mine))
        for a, b in zip(seen[1], mine, strict=True):
            assert np.array_equal(a, b), (seen[0].pod, task.pod)
    assert len(first) <= len(templates)  # so the test compares something
