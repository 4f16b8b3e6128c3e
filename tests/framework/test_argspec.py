"""Declared arguments: each kind's type rules, ranges, choices, wildcards, and the three cases
(undeclared, declared empty, declared) of ``check_arguments``."""

from __future__ import annotations

import pytest

from pumice import Arguments, ArgumentSpec
from pumice.framework.argspec import check_arguments


@pytest.mark.parametrize(
    ("spec", "value", "words"),
    [
        (ArgumentSpec("w", "int", 1), "lots", "expected an integer, got string 'lots'"),
        (ArgumentSpec("w", "int", 1), True, "expected an integer, got bool true"),
        (ArgumentSpec("w", "int", 1), 2.0, "expected an integer, got number 2"),
        (ArgumentSpec("w", "int", 1, minimum=0), -1, "must be at least 0, got -1"),
        (ArgumentSpec("w", "int", 1, maximum=10), 11, "must be at most 10, got 11"),
        (ArgumentSpec("f", "float", 1.2), "1.5", "expected a number, got string '1.5'"),
        (ArgumentSpec("f", "float", 1.2), float("nan"), "expected a finite number"),
        (ArgumentSpec("b", "bool", True), "maybe", "expected true or false, got string 'maybe'"),
        (ArgumentSpec("b", "bool", True), 1, "expected true or false, got integer 1"),
        (ArgumentSpec("s", "str", ""), 3, "expected a string, got integer 3"),
        (ArgumentSpec("s", "str", "a", choices=("a", "b")), "c", "expected one of 'a', 'b'"),
    ],
)
def test_a_value_outside_its_declaration_is_refused_with_a_reason(
    spec: ArgumentSpec, value: object, words: str
) -> None:
    reason = spec.problem(value)
    assert reason is not None and words in reason


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        (ArgumentSpec("w", "int", 1, minimum=0), 0),
        (ArgumentSpec("f", "float", 1.2, minimum=0), 3),
        (ArgumentSpec("f", "float", 1.2), 0.5),
        (ArgumentSpec("b", "bool", True), "False"),
        (ArgumentSpec("b", "bool", True), False),
        (ArgumentSpec("s", "str", "a", choices=("a", "b")), "b"),
    ],
)
def test_a_value_within_its_declaration_passes(spec: ArgumentSpec, value: object) -> None:
    assert spec.problem(value) is None


def test_a_default_outside_the_declaration_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="default -1 is not allowed"):
        ArgumentSpec("w", "int", -1, minimum=0)
    with pytest.raises(ValueError, match="unknown kind"):
        ArgumentSpec("w", "integer", 1)  # type: ignore[arg-type]


def test_a_wildcard_covers_every_key_under_its_prefix_only() -> None:
    spec = ArgumentSpec("binpack.resources.*", "int", 1)
    assert spec.covers("binpack.resources.nvidia.com/gpu")
    assert not spec.covers("binpack.resources")
    assert not spec.covers("binpack.resources.")
    assert not spec.covers("binpack.cpu")


def test_undeclared_arguments_are_all_accepted_silently() -> None:
    assert check_arguments(Arguments({"anything": "lots", "x": -1}), None, "plugin 'x'") == []


def test_declared_empty_warns_about_every_argument() -> None:
    problems = check_arguments(Arguments({"a": 1, "b": 2}), (), "plugin 'gang'")
    assert [(p.key, p.warning) for p in problems] == [("a", True), ("b", True)]
    assert "plugin 'gang' takes no arguments" in problems[0].message


def test_declared_arguments_give_errors_for_bad_values_and_warnings_for_strangers() -> None:
    specs = (ArgumentSpec("w", "int", 1, minimum=0), ArgumentSpec("r.*", "int", 1, minimum=0))
    values = Arguments({"w": 3, "r.gpu": -2, "typo": 1})
    problems = check_arguments(values, specs, "plugin 'p'")
    assert [(p.key, p.warning) for p in problems] == [("r.gpu", False), ("typo", True)]
    assert "must be at least 0" in problems[0].message
    assert "it takes: w, r.*" in problems[1].message


def test_a_spec_describes_itself() -> None:
    spec = ArgumentSpec("w", "int", 1, minimum=0, maximum=9)
    assert spec.describe() == "int >= 0 <= 9, default 1"
