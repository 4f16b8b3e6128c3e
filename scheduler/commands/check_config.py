"""``pumice check-config FILE``: exit 0 if the file is a valid configuration, else print one
line naming the file, line and key, and exit 2. Warnings (an argument no plugin declares, a
known trap) go to stderr as ``FILE:LINE: KEY: warning: ...`` and do not change the exit code."""

from __future__ import annotations

import argparse
import sys

from pumice.commands.common import load_validated
from pumice.framework.config import ConfigError
from pumice.framework.host import PluginConflictError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="scheduler configuration (Volcano format + scheduler:)")


def run(args: argparse.Namespace) -> int:
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
