"""The arguments of one plugin or action: its raw YAML map, read-only, with typed getters.

Arguments are kept exactly as YAML produced them (integers as ``int``, decimals as ``float``,
nested maps and lists frozen into read-only mappings and tuples), because plugins decide what
their arguments mean. The typed getters follow Volcano's rules, and so do the declared arguments'
checks (``pumice.framework.argspec``) and the ``enable…`` flags: one rule for each kind.

==============  ======================================================================
``get_int``     an integer only (not a bool, not ``"10"``, not ``10.0``)
``get_float``   an integer or a float (not a bool)
``get_bool``    a bool, or the string ``true`` or ``false`` (any case): ``as_bool``
``get_str``     a string only
==============  ======================================================================

A missing key gives the caller's default. A value of the wrong type is logged as a warning
(logger ``pumice.config``) naming the key, and the default is returned: a bad argument never
stops a session.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from pumice.plain import PumiceError

log = logging.getLogger("pumice.config")

_T = TypeVar("_T")

BOOL_STRINGS: Mapping[str, bool] = types.MappingProxyType({"true": True, "false": False})


def as_bool(value: object) -> bool | None:
    """The one rule for a boolean anywhere in a configuration (Volcano's): a YAML boolean, or
    the string ``true`` or ``false`` in any case (``enable: "true"``); None for anything else
    (``yes``, ``1``, ``t``, an integer)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return BOOL_STRINGS.get(value.lower())
    return None


def freeze(value: Any) -> Any:
    """A deep read-only copy: mappings become ``MappingProxyType``, lists become tuples."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


class ArgumentNameError(PumiceError, TypeError):
    """Arguments keyed by something other than a string (YAML's ``1: x``, say)."""


class Arguments(Mapping[str, Any]):
    """A read-only mapping of argument name (e.g. ``binpack.weight``) to its raw YAML value.

    ``context`` (e.g. ``"plugin 'binpack'"``) only labels warnings; it takes no part in
    equality, which is by content.
    """

    __slots__ = ("_context", "_data")

    _data: Mapping[str, Any]
    _context: str

    def __init__(self, data: Mapping[str, Any] | None = None, *, context: str = "") -> None:
        data = data or {}
        for key in data:
            if not isinstance(key, str):
                raise ArgumentNameError(f"argument names must be strings, got {key!r}")
        object.__setattr__(self, "_data", freeze(data))
        object.__setattr__(self, "_context", context)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Arguments are read-only (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Arguments are read-only (cannot delete {name!r})")

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Arguments({dict(self._data)!r})"

    # -- typed getters -------------------------------------------------------------------

    def get_int(self, key: str, default: _T) -> int | _T:
        """The integer under ``key``; ``default`` if missing or not an integer."""
        value = self._data.get(key)
        if value is None:
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return self._wrong(key, value, "an integer", default)

    def get_float(self, key: str, default: _T) -> float | _T:
        """The number under ``key`` as a float; ``default`` if missing or not a number."""
        value = self._data.get(key)
        if value is None:
            return default
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return self._wrong(key, value, "a number", default)

    def get_bool(self, key: str, default: _T) -> bool | _T:
        """The bool under ``key`` (``as_bool``: ``"true"`` counts); else ``default``."""
        value = self._data.get(key)
        if value is None:
            return default
        flag = as_bool(value)
        if flag is not None:
            return flag
        return self._wrong(key, value, "true or false", default)

    def get_str(self, key: str, default: _T) -> str | _T:
        """The string under ``key``; ``default`` if missing or not a string."""
        value = self._data.get(key)
        if value is None:
            return default
        if isinstance(value, str):
            return value
        return self._wrong(key, value, "a string", default)

    def _wrong(self, key: str, value: object, expected: str, default: _T) -> _T:
        where = f"{self._context}: " if self._context else ""
        log.warning(
            "%sargument %r: expected %s, got %s %r; using the default %r",
            where,
            key,
            expected,
            type(value).__name__,
            value,
            default,
        )
        return default
