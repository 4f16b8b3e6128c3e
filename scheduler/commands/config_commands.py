"""Loading a configuration for a command, and the commands that show what one loads, without
scheduling anything.

* ``pumice check-config FILE``: exit 0 if the file is a valid configuration, else print one line
  naming the file, line and key, and exit 2. Warnings (an argument no plugin declares, a known
  trap) go to stderr as ``FILE:LINE: KEY: warning: ...`` and do not change the exit code.
* ``pumice plugins [--config FILE] [--arguments]``: every plugin and action with the package it
  came from (with ``--config``, after that config's ``scheduler.plugins`` allow/deny lists);
  with ``--arguments``, the arguments each one declares.
* ``pumice run-example [--config FILE]``: load the default configuration (or the given one) and
  show what it would run: its scheduler settings, actions and tiers, then the plugin table.

Each is a ``Subcommand``: the ``add_arguments(parser)`` and ``run(args) -> int`` pair that
``pumice.cli`` wires for every command.

``load_checked`` and ``load_validated``, shared by every subcommand: loading a config with the
plugins it allows.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.configcheck import ConfigWarning, validate
from pumice.framework.configfile import check_names, load_config, load_default_config
from pumice.framework.host import PluginConflictError, PluginHost
from pumice.logs import collect_config_warnings

__all__ = ["CHECK_CONFIG", "PLUGINS", "RUN_EXAMPLE", "Subcommand", "render", "render_arguments"]


@dataclass(frozen=True)
class Subcommand:
    """One command of ``pumice`` that shares its module with others."""

    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# -- pumice check-config --------------------------------------------------------------------


def _check_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="scheduler configuration (Volcano format + scheduler:)")


def _check_config(args: argparse.Namespace) -> int:
    try:
        config, _, warnings = load_validated(args.file)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except PluginConflictError as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 2
    for warning in warnings:
        print(str(warning), file=sys.stderr)
    plugins = sum(len(t.plugins) for t in config.tiers)
    print(
        f"{args.file}: ok: {len(config.actions)} actions ({', '.join(config.actions)}), "
        f"{plugins} plugins in {len(config.tiers)} tiers"
    )
    return 0


CHECK_CONFIG = Subcommand(_check_config_arguments, _check_config)


# -- pumice plugins -------------------------------------------------------------------------


def _plugins_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", metavar="FILE", help="apply this config's scheduler.plugins allow/deny lists"
    )
    parser.add_argument(
        "--arguments", action="store_true", help="list the arguments each one declares"
    )


def _plugins(args: argparse.Namespace) -> int:
    try:
        if args.config:
            # the config is checked as every command checks it, its warnings shown
            _, host = load_checked(args.config)
        else:
            host = PluginHost.discover()
    except (ConfigError, PluginConflictError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(render_arguments(host) if args.arguments else render(host))
    return 0


PLUGINS = Subcommand(_plugins_arguments, _plugins)


def render(host: PluginHost) -> str:
    """A table of everything the host knows, then what was skipped or denied."""
    rows = [("NAME", "KIND", "PACKAGE", "HOOKS")]
    for p in host.all():
        package = f"{p.package} {p.version}".strip()
        hooks = ", ".join(p.hooks) if p.kind == "plugin" else "execute"
        rows.append((p.name, p.kind, package, hooks))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip()
        for r in rows
    ]
    for f in host.failures:
        lines.append(f"skipped: {f.name} from {f.package} ({f.target}): {f.error}")
    for package in host.denied:
        lines.append(f"denied: package {package}")
    return "\n".join(lines)


def render_arguments(host: PluginHost) -> str:
    """One line per declared argument: owner, name, kind/range/default, what it does."""
    lines = []
    for p in host.all():
        declared = getattr(p.cls, "declared_arguments", None)
        if declared is None:
            lines.append(f"{p.name}: undeclared (every argument accepted)")
        elif not declared:
            lines.append(f"{p.name}: no arguments")
        for spec in declared or ():
            doc = f"  {spec.doc}" if spec.doc else ""
            lines.append(f"{p.name}: {spec.name} ({spec.describe()}){doc}")
    return "\n".join(lines)


# -- pumice run-example ---------------------------------------------------------------------


def _run_example_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="a config instead of the default")


def _run_example(args: argparse.Namespace) -> int:
    try:
        config, host = load_checked(args.config)
    except (ConfigError, PluginConflictError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"configuration: {config.source}")
    print(f"  scheduler name: {config.scheduler.scheduler_name}")
    print(f"  period: {config.scheduler.period}s  dry-run: {config.scheduler.dry_run}")
    print(f"  actions: {', '.join(config.actions)}")
    for i, tier in enumerate(config.tiers, 1):
        print(f"  tier {i}: {', '.join(p.name for p in tier.plugins)}")
    print()
    print(render(host))
    return 0


RUN_EXAMPLE = Subcommand(_run_example_arguments, _run_example)


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
