"""Arguments: a read-only raw map with Volcano's typed getters (wrong type: warn, default)."""

from __future__ import annotations

import logging
import types
from typing import Any

import pytest

from pumice.framework.arguments import Arguments

ARGS = Arguments(
    {
        "int": 10,
        "float": 0.5,
        "bool": True,
        "str": "hello",
        "int-string": "10",
        "float-int": 10.0,
        "bool-string": "TRUE",
        "zero": 0,
        "null": None,
        "nested": {"weights": [1, 2], "inner": {"a": 1}},
    }
)


@pytest.mark.parametrize(
    ("getter", "key", "expected"),
    [
        ("get_int", "int", 10),
        ("get_int", "zero", 0),
        ("get_int", "bool", -1),  # a bool is not an integer
        ("get_int", "int-string", -1),
        ("get_int", "float-int", -1),
        ("get_int", "missing", -1),
        ("get_float", "float", 0.5),
        ("get_float", "int", 10.0),
        ("get_float", "bool", -1),
        ("get_float", "str", -1),
        ("get_bool", "bool", True),
        ("get_bool", "bool-string", True),
        ("get_bool", "int", -1),  # an integer is not a bool
        ("get_bool", "str", -1),
        ("get_str", "str", "hello"),
        ("get_str", "int", -1),
        ("get_str", "bool", -1),
        ("get_str", "nested", -1),
        ("get_str", "null", -1),  # null counts as missing
    ],
)
def test_typed_getters_follow_volcanos_rules(getter: str, key: str, expected: Any) -> None:
    value = getattr(ARGS, getter)(key, -1)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("True", True),
        ("false", False),
        ("FALSE", False),
    ],
)
def test_bool_strings(text: str, value: bool) -> None:
    assert Arguments({"k": text}).get_bool("k", not value) is value


@pytest.mark.parametrize("text", ["yes", "no", "on", "", "2", "truthy", "t", "f", "1", "0"])
def test_strings_that_are_not_bools_give_the_default(text: str) -> None:
    assert Arguments({"k": text}).get_bool("k", None) is None


def test_a_wrong_type_is_logged_with_the_key_and_context(caplog: pytest.LogCaptureFixture) -> None:
    args = Arguments({"binpack.weight": "10"}, context="plugin 'binpack'")
    with caplog.at_level(logging.WARNING, logger="pumice.config"):
        assert args.get_int("binpack.weight", 1) == 1
    [record] = caplog.records
    assert record.name == "pumice.config"
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "plugin 'binpack': argument 'binpack.weight': expected an integer, got str '10'; "
        "using the default 1"
    )


def test_a_missing_key_is_silent(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="pumice.config"):
        assert ARGS.get_float("absent", 2.5) == 2.5
    assert caplog.records == []


def test_arguments_are_a_read_only_mapping() -> None:
    assert len(ARGS) == 10
    assert "int" in ARGS
    assert ARGS["str"] == "hello"
    with pytest.raises(TypeError):
        ARGS["int"] = 5  # type: ignore[index]
    with pytest.raises(AttributeError):
        ARGS._data = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del ARGS._data


def test_nested_values_are_frozen_too() -> None:
    nested = ARGS["nested"]
    assert isinstance(nested, types.MappingProxyType)
    assert nested["weights"] == (1, 2)
    with pytest.raises(TypeError):
        nested["inner"]["a"] = 2


def test_a_copy_is_taken() -> None:
    source: dict[str, Any] = {"k": [1]}
    args = Arguments(source)
    source["k"].append(2)
    source["j"] = 1
    assert args == {"k": (1,)}


def test_equality_is_by_content_not_context() -> None:
    assert Arguments({"a": 1}, context="x") == Arguments({"a": 1}, context="y")
    assert Arguments({"a": 1}) == {"a": 1}
    assert Arguments({"a": {"b": [1]}}) == Arguments({"a": {"b": [1]}})
    assert Arguments({"a": 1}) != Arguments({"a": 2})
    assert Arguments() == Arguments({}) == Arguments(None)


def test_argument_names_must_be_strings() -> None:
    with pytest.raises(TypeError, match="argument names must be strings"):
        Arguments({1: "x"})  # type: ignore[dict-item]


def test_repr_shows_the_content() -> None:
    assert repr(Arguments({"a": 1})) == "Arguments({'a': 1})"
