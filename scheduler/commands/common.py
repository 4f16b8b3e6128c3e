"""Helpers shared by subcommands: loading a config with the plugins it allows."""

from __future__ import annotations

import sys

from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.configcheck import ConfigWarning, validate
from pumice.framework.configfile import check_names, load_config, load_default_config
from pumice.framework.host import PluginHost
from pumice.logs import collect_config_warnings


def load_checked(path: str | None) -> tuple[SchedulerConfig, PluginHost]:
    """``load_validated``, with its warnings shown (``show_warnings``)."""
    config, host, warnings = load_validated(path)
    show_warnings(warnings)
    return config, host


def show_warnings(warnings: list[ConfigWarning]) -> None:
    """Each config warning as a plain ``FILE:LINE: KEY: warning: …`` line on stderr, whatever
    the log level and format: a user must see them without ``-v``."""
    for warning in warnings:
        print(str(warning), file=sys.stderr, flush=True)


def load_validated(path: str | None) -> tuple[SchedulerConfig, PluginHost, list[ConfigWarning]]:
    """Load a config (the default when ``path`` is None), discover the plugin packages it
    allows, check every plugin and action name against them and every argument against what
    its plugin or action declares; return the config, the host and the warnings (undeclared
    arguments, known traps).

    A configured name whose package failed to load is reported with that failure. Raises
    ConfigError or PluginConflictError.
    """
    config = load_config(path) if path is not None else load_default_config()
    host = PluginHost.discover(config.scheduler.plugin_packages)
    failed = {f.name: f for f in host.failures}
    used = [("actions", name) for name in config.actions] + [
        (f"tiers[{t}].plugins[{p}].name", option.name)
        for t, tier in enumerate(config.tiers)
        for p, option in enumerate(tier.plugins)
    ]
    for key, name in used:
        if name in failed:
            f = failed[name]
            raise ConfigError(
                f"{name!r} could not be loaded from package {f.package} ({f.target}): {f.error}",
                source=config.source,
                line=config.line_of(key),
                key=key,
            )
    check_names(config, plugins=host.plugins, actions=host.actions)
    warnings = validate(config, host)
    warnings += check_plugin_arguments(config, host)
    return config, host, warnings


def check_plugin_arguments(config: SchedulerConfig, host: PluginHost) -> list[ConfigWarning]:
    """Build every configured plugin once from its arguments, as a session would, so that a
    plugin refusing its arguments (a ``ConfigError`` keyed inside ``arguments``) is reported
    with the file, line and full key; return the warnings it made about its arguments
    (``pumice.config_warning``), placed the same way."""
    warnings: list[ConfigWarning] = []
    for t, tier in enumerate(config.tiers):
        for p, option in enumerate(tier.plugins):
            provided = host.get(option.name)
            if provided is None or provided.kind != "plugin":
                continue
            arguments = f"tiers[{t}].plugins[{p}].arguments"
            try:
                with collect_config_warnings() as collected:
                    provided.cls(option.arguments)
            except ConfigError as exc:
                key = f"{arguments}.{exc.key}" if exc.key else arguments
                raise ConfigError(
                    exc.message, source=config.source, line=config.line_of(key), key=key
                ) from None
            for relative, message in collected:
                key = f"{arguments}.{relative}"
                warnings.append(ConfigWarning(message, config.source, config.line_of(key), key))
    return warnings
