"""Reading a scheduler configuration: a file or a text into a validated ``SchedulerConfig``,
the shipped default, and the check of its plugin and action names against those installed.

The dataclasses are ``pumice.framework.config``'s and the validation is
``pumice.framework.configparse``'s; this module sits above both, so neither needs the other's
entry points.
"""

from __future__ import annotations

import importlib.resources
import os
from collections.abc import Collection

from pumice.framework.config import ConfigError, SchedulerConfig, closest_name
from pumice.framework.configparse import parse_document
from pumice.framework.yamlsource import YamlSourceError, load_document

__all__ = [
    "check_names",
    "default_config_text",
    "load_config",
    "load_default_config",
    "parse_config",
]


def parse_config(text: str, source: str = "<string>") -> SchedulerConfig:
    """Parse and validate a configuration; ``source`` names it in errors."""
    try:
        document = load_document(text)
    except YamlSourceError as exc:
        raise ConfigError(exc.message, source=source, line=exc.line, key=exc.key) from None
    return parse_document(document, source)


def load_config(path: str | os.PathLike[str]) -> SchedulerConfig:
    """Read and parse the configuration file at ``path``."""
    source = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"cannot read: {reason}", source=source) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"not UTF-8 text: {exc.reason}", source=source, line=line) from None
    return parse_config(text, source)


def _default_resource() -> importlib.resources.abc.Traversable:
    return importlib.resources.files("pumice.conf").joinpath("scheduler.yaml")


def default_config_text() -> str:
    """The text of the shipped default configuration, ``pumice/conf/scheduler.yaml``."""
    return _default_resource().read_text(encoding="utf-8")


def load_default_config() -> SchedulerConfig:
    """Parse the shipped default configuration."""
    return parse_config(default_config_text(), str(_default_resource()))


def check_names(
    config: SchedulerConfig, *, plugins: Collection[str], actions: Collection[str]
) -> None:
    """Raise ConfigError for the first action or plugin of ``config`` whose name is not among
    the known ``plugins`` / ``actions`` (those of the allowed plugin packages)."""
    for name in config.actions:
        if name not in actions:
            hint = " (that is a plugin: list it in a tier)" if name in plugins else ""
            raise ConfigError(
                f"unknown action {name!r}{hint}{_did_you_mean(name, actions)}; "
                f"known: {_known(actions)}",
                source=config.source,
                line=config.line_of("actions"),
                key="actions",
            )
    for t, tier in enumerate(config.tiers):
        for p, option in enumerate(tier.plugins):
            if option.name not in plugins:
                key = f"tiers[{t}].plugins[{p}].name"
                hint = " (that is an action: list it in actions)" if option.name in actions else ""
                raise ConfigError(
                    f"unknown plugin {option.name!r}{hint}{_did_you_mean(option.name, plugins)}; "
                    f"known: {_known(plugins)}",
                    source=config.source,
                    line=config.line_of(key),
                    key=key,
                )


def _known(names: Collection[str]) -> str:
    return ", ".join(sorted(names)) or "(none)"


def _did_you_mean(name: str, known: Collection[str]) -> str:
    match = closest_name(name, known)
    return f" (did you mean {match!r}?)" if match else ""
