"""The argument checker: what a plugin or action accepts, so a bad value is a config error.

A plugin or action declares its arguments in the class attribute ``declared_arguments``::

    class Binpack(Plugin):
        declared_arguments = (
            ArgumentSpec("binpack.weight", "int", 1, minimum=0, doc="0 switches it off"),
            ArgumentSpec("binpack.resources", "str", ""),
            ArgumentSpec("binpack.resources.*", "int", 1, minimum=0),   # any key under it
        )

Three cases, read by ``check_arguments``:

* ``declared_arguments = None`` (the default, for plugins written before declarations
  existed): every argument is accepted and nothing is warned — the plugin reads what it likes;
* ``declared_arguments = ()``: the plugin takes no arguments; any given is warned about;
* a tuple of ``ArgumentSpec``: a declared argument with a value of the wrong type, outside its
  range or not among its choices is an error; an argument nobody declared is a warning (Volcano
  ignores it silently; pumice says so, but still runs).

The kinds follow ``Arguments``' typed getters: ``int`` is an integer (not a bool, not
``"10"``, not ``10.0``), ``float`` an integer or a decimal, ``bool`` a bool or the string
``true`` or ``false`` (``as_bool``, the one boolean rule), ``str`` a string; ``any`` is a
structured value (a list or a map) that the plugin checks itself when it is built, with the
``check_…`` functions below: each returns the value it checked, or raises a ``ConfigError``
whose ``key`` is the path inside the plugin's arguments (``shape[1].score``), which ``pumice
check-config`` (it builds every configured plugin once) turns into the file, line and full key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from pumice.framework.arguments import as_bool
from pumice.framework.config import ConfigError
from pumice.plain import PumiceError

__all__ = [
    "ArgumentKind",
    "ArgumentProblem",
    "ArgumentSpec",
    "ArgumentSpecError",
    "argument_error",
    "as_bool",
    "check_arguments",
    "check_flag",
    "check_known_keys",
    "check_mapping",
    "check_resource_names",
    "check_weight",
    "describe",
    "is_int",
    "is_number",
]

ArgumentKind = Literal["int", "float", "bool", "str", "any"]

_EXPECTED: Mapping[str, str] = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "any": "anything the plugin checks itself when it is built",
}

WILDCARD = ".*"
"""A declared name ending in this covers every key under its prefix (``binpack.resources.*``)."""


class ArgumentSpecError(PumiceError, ValueError):
    """A plugin's or action's argument declaration that cannot be right: an unknown kind, a
    default its own checks refuse (a bug in the plugin, found when its module is loaded)."""


@dataclass(frozen=True, slots=True)
class ArgumentSpec:
    """One declared argument: its name (or ``prefix.*``), kind, default, and allowed values.

    ``minimum`` / ``maximum`` bound ``int`` and ``float`` values (inclusive); ``choices``, when
    not empty, lists every allowed value. ``doc`` says what the argument does.
    """

    name: str
    kind: ArgumentKind
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] = ()
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _EXPECTED:
            raise ArgumentSpecError(f"argument {self.name!r}: unknown kind {self.kind!r}")
        if self.default is not None and self.problem(self.default) is not None:
            raise ArgumentSpecError(
                f"argument {self.name!r}: default {self.default!r} is not allowed"
            )

    def covers(self, key: str) -> bool:
        """Does this declaration cover the argument ``key``?"""
        if self.name.endswith(WILDCARD):
            prefix = self.name[: -len(WILDCARD) + 1]  # keeps the dot: "binpack.resources."
            return key.startswith(prefix) and len(key) > len(prefix)
        return key == self.name

    def problem(self, value: object) -> str | None:
        """Why ``value`` is not allowed, or None when it is."""
        number: float | None = None
        if self.kind == "int":
            if not is_int(value):
                return f"expected {_EXPECTED['int']}, got {describe(value)}"
            number = value
        elif self.kind == "float":
            if not is_number(value):
                return f"expected {_EXPECTED['float']}, got {describe(value)}"
            number = value
            if not math.isfinite(number):
                return f"expected a finite number, got {describe(value)}"
        elif self.kind == "bool":
            if as_bool(value) is None:
                return f"expected {_EXPECTED['bool']}, got {describe(value)}"
        elif self.kind == "any":
            return None  # structured: the plugin refuses it with a ConfigError when built
        elif not isinstance(value, str):
            return f"expected {_EXPECTED['str']}, got {describe(value)}"
        if number is not None:
            if self.minimum is not None and number < self.minimum:
                return f"must be at least {self.minimum:g}, got {number:g}"
            if self.maximum is not None and number > self.maximum:
                return f"must be at most {self.maximum:g}, got {number:g}"
        if self.choices and value not in self.choices:
            allowed = ", ".join(repr(c) for c in self.choices)
            return f"expected one of {allowed}, got {describe(value)}"
        return None

    def describe(self) -> str:
        """``int >= 0, default 1`` — for listings and docs."""
        parts: list[str] = [self.kind]
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        if self.choices:
            parts.append("one of " + "|".join(str(c) for c in self.choices))
        text = " ".join(parts)
        return text if self.default is None else f"{text}, default {self.default!r}"


@dataclass(frozen=True, slots=True)
class ArgumentProblem:
    """A problem with one argument: its name, what is wrong, and whether it only warns."""

    key: str
    message: str
    warning: bool = False


def check_arguments(
    values: Mapping[str, Any], declared: Sequence[ArgumentSpec] | None, owner: str
) -> list[ArgumentProblem]:
    """Every problem of ``values`` against the ``declared`` arguments of ``owner`` (such as
    ``plugin 'binpack'``), in the order of ``values``; see the module docstring."""
    if declared is None:
        return []
    problems = []
    for key, value in values.items():
        spec = next((s for s in declared if s.covers(key)), None)
        if spec is None:
            problems.append(ArgumentProblem(key, _undeclared(owner, key, declared), warning=True))
            continue
        why = spec.problem(value)
        if why is not None:
            problems.append(ArgumentProblem(key, why))
    return problems


def _undeclared(owner: str, key: str, declared: Sequence[ArgumentSpec]) -> str:
    if not declared:
        return f"{owner} takes no arguments; ignored"
    names = ", ".join(s.name for s in declared)
    return f"{owner} does not declare this argument; ignored (it takes: {names})"


def describe(value: object) -> str:
    """A value as an error message shows it: ``string 'lots'``, ``integer -1``, ``a mapping``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"bool {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value:g}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


# -- structured values: checked by the plugin that reads them, when it is built ----------------


def is_int(value: object) -> TypeGuard[int]:
    """An integer, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """An integer or a float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def argument_error(owner: str, *, key: str, message: str) -> ConfigError:
    """A config error about argument ``key`` of plugin ``owner``; its source names the plugin
    until the config loader relocates it to the file and line."""
    return ConfigError(message, source=f"plugin {owner!r} arguments", key=key)


def check_weight(owner: str, key: str, value: object, default: int) -> int:
    """A non-negative integer weight; ``default`` when absent (None)."""
    if value is None:
        return default
    if not is_int(value):
        raise argument_error(owner, key=key, message=f"must be an integer, got {value!r}")
    if value < 0:
        raise argument_error(owner, key=key, message=f"must not be negative, got {value}")
    return value


def check_mapping(owner: str, key: str, value: object) -> Mapping[str, Any]:
    """``value`` as a mapping (an absent value is an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise argument_error(
            owner, key=key, message=f"must be a mapping, got {type(value).__name__}"
        )
    return value


def check_known_keys(owner: str, key: str, value: Mapping[str, Any], known: Sequence[str]) -> None:
    """Refuse the first key of ``value`` (sorted) that is not among ``known``."""
    unknown = sorted(set(value) - set(known))
    if unknown:
        where = f"{key}.{unknown[0]}" if key else unknown[0]
        raise argument_error(
            owner, key=where, message=f"unknown key; expected one of {', '.join(known)}"
        )


def check_resource_names(owner: str, key: str, value: object) -> tuple[str, ...]:
    """Resource names from Volcano's comma-separated string (spaces trimmed, empty parts
    dropped) or from a YAML list of strings; duplicates keep their first place."""
    if value is None:
        return ()
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
    elif isinstance(value, list | tuple) and all(isinstance(p, str) for p in value):
        parts = [p.strip() for p in value]
    else:
        raise argument_error(
            owner,
            key=key,
            message=f"must be a comma-separated string of resource names, got {value!r}",
        )
    return tuple(dict.fromkeys(p for p in parts if p))


def check_flag(owner: str, key: str, value: object, default: bool) -> bool:
    """A boolean by the one rule (``as_bool``); ``default`` when absent (None)."""
    if value is None:
        return default
    flag = as_bool(value)
    if flag is None:
        raise argument_error(owner, key=key, message=f"must be true or false, got {value!r}")
    return flag
