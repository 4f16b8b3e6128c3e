"""``pumice plugins``: every plugin and action with the package it came from; with
``--arguments``, the arguments each one declares."""

from __future__ import annotations

import argparse
import sys

from pumice.commands.common import load_checked
from pumice.framework.config import ConfigError
from pumice.framework.host import PluginConflictError, PluginHost


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", metavar="FILE", help="apply this config's scheduler.plugins allow/deny lists"
    )
    parser.add_argument(
        "--arguments", action="store_true", help="list the arguments each one declares"
    )


def run(args: argparse.Namespace) -> int:
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
