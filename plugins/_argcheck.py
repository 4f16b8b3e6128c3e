"""Checks shared by the resource-scoring plugins' arguments: each bad value is a
``ConfigError`` whose ``key`` is the path inside the plugin's ``arguments`` (for example
``shape[1].score``), which ``pumice check-config`` turns into the file's line and full key.

Only the newer, structured arguments (shaped binpack, resource-strategy-fit, sra,
proportional) are checked this strictly; Volcano's flat binpack arguments keep Volcano's
forgiving rules (a negative weight means 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice import ConfigError


def argument_error(plugin: str, key: str, message: str) -> ConfigError:
    """A config error about argument ``key`` of ``plugin``; the source names the plugin until
    the config loader relocates it to the file and line."""
    return ConfigError(message, source=f"plugin {plugin!r} arguments", key=key)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def weight(plugin: str, key: str, value: object, default: int) -> int:
    """A non-negative integer weight; ``default`` when absent (None)."""
    if value is None:
        return default
    if not is_int(value):
        raise argument_error(plugin, key, f"must be an integer, got {value!r}")
    assert isinstance(value, int)
    if value < 0:
        raise argument_error(plugin, key, f"must not be negative, got {value}")
    return value


def mapping(plugin: str, key: str, value: object) -> Mapping[str, Any]:
    """``value`` as a mapping (an absent value is an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise argument_error(plugin, key, f"must be a mapping, got {type(value).__name__}")
    return value


def no_unknown_keys(
    plugin: str, key: str, value: Mapping[str, Any], known: tuple[str, ...]
) -> None:
    unknown = sorted(set(value) - set(known))
    if unknown:
        where = f"{key}.{unknown[0]}" if key else unknown[0]
        raise argument_error(plugin, where, f"unknown key; expected one of {', '.join(known)}")


def resource_names(plugin: str, key: str, value: object) -> tuple[str, ...]:
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
            plugin, key, f"must be a comma-separated string of resource names, got {value!r}"
        )
    return tuple(dict.fromkeys(p for p in parts if p))


def flag(plugin: str, key: str, value: object, default: bool) -> bool:
    """A bool, or a string reading as one (Volcano's ``enable: "true"``)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise argument_error(plugin, key, f"must be true or false, got {value!r}")
