"""Malformed manifests are bad input: ``pumice explain`` and ``pumice simulate`` exit 2 with
one line naming the file, the object and the field — never a traceback, never exit 1 (which
explain keeps for "no such target"), never a pod dropped with a logged exception.

The hand-written cases are the ones an audit found (``containers: 5``, ``tolerations: 5``,
``annotations: 5``); the property replaces any field of a pod, node, PodGroup or queue that
the scheduler reads with a value of a wrong type."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.manifests import node, pod, podgroup, priority_class, queue, run_cli, write_yaml

Capsys = pytest.CaptureFixture[str]
Obj = dict[str, Any]


def rich_pod() -> Obj:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    spread = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "x"}},
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
            ]
        },
    }
    extra = {
        "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
        "affinity": affinity,
        "topologySpreadConstraints": [spread],
        "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "1"}}}],
        "schedulingGates": [],
        "volumes": [{"name": "v", "emptyDir": {}}],
    }
    made = pod(
        "p",
        group="g",
        priority_class="high",
        node_selector={"zone": "a"},
        host_port=80,
        extra_spec=extra,
    )
    made["metadata"]["labels"] = {"app": "x"}
    return made


def cluster() -> list[Obj]:
    capped = queue("q")
    capped["spec"]["capability"] = {"cpu": "4"}
    tainted = node(
        "n1", labels={"zone": "a"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]
    )
    group = podgroup("g", 1, queue="q", priority_class="high", min_resources={"cpu": "1"})
    return [priority_class("high", 10), tainted, capped, group, rich_pod()]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            out += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += paths(inner, (*prefix, i))
    return out


def commands(path: Path) -> list[list[str]]:
    return [
        ["explain", str(path), "--pod", "default/p", "--no-suggestions", "-o", "json"],
        ["simulate", str(path), "--output", "json"],
    ]


def assert_bad_input(path: Path, capsys: Capsys, what: str) -> None:
    for args in commands(path):
        code, _, err = run_cli(args, capsys)
        assert code == 2, (args[0], err)
        assert err.count("\n") == 1 and err.startswith(f"{path}: "), err
        assert what in err, err


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        (("spec", "containers"), 5, "Pod default/p: spec.containers: expected a list"),
        (("spec", "tolerations"), 5, "Pod default/p: spec.tolerations: expected a list"),
        (("metadata", "annotations"), 5, "Pod default/p: metadata.annotations: expected a mapping"),
        (
            ("spec", "containers", 0, "resources"),
            "x",
            "spec.containers[0].resources: expected a mapping",
        ),
        (("spec", "topologySpreadConstraints", 0, "maxSkew"), "x", "maxSkew: expected an integer"),
        (("spec", "nodeSelector"), ["a"], "spec.nodeSelector: expected a mapping"),
    ],
)
def test_a_malformed_pod_is_one_line_and_exit_2(
    tmp_path: Path, capsys: Capsys, field: tuple[Any, ...], value: Any, what: str
) -> None:
    objects = cluster()
    target: Any = objects[-1]
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] = value
    assert_bad_input(write_yaml(tmp_path / "bad.yaml", objects), capsys, what)


WRONG = st.sampled_from([5, "x", True, [1], {"a": 1}, [None], {"a": [1]}])
NAMES = {("metadata", "name"), ("metadata", "namespace"), ("kind",), ("apiVersion",)}


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_field_of_a_wrong_type_is_bad_input_or_harmless(
    tmp_path: Path, capsys: Capsys, data: st.DataObject
) -> None:
    objects = cluster()
    index = data.draw(st.integers(1, len(objects) - 1))
    choices = [p for p in paths(objects[index]) if p not in NAMES]
    field = data.draw(st.sampled_from(choices))
    value = data.draw(WRONG)
    changed = copy.deepcopy(objects)
    target: Any = changed[index]
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] = value
    path = write_yaml(tmp_path / "maybe.yaml", changed)
    for args in commands(path):
        code, _, err = run_cli(args, capsys)
        # a value of the right kind of wrong may be harmless (a label that reads as text)
        assert code in (0, 2), (field, value, args[0], err)
        if code == 2:
            assert err.count("\n") == 1 and err.startswith(f"{path}: "), err
        assert "Traceback" not in err and "exception" not in err.lower(), err
