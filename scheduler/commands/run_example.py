"""``pumice run-example``: load the default configuration and show what it would run.

This is what ``make run`` does until the daemon can schedule the bundled example cluster.
"""

from __future__ import annotations

import argparse
import sys

from pumice.commands.common import load_checked
from pumice.commands.plugins import render
from pumice.framework.config import ConfigError
from pumice.framework.host import PluginConflictError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="a config instead of the default")


def run(args: argparse.Namespace) -> int:
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
