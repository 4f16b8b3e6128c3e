"""The ``pumice`` command line.

Each subcommand lives in the module that owns its work and exposes two functions,
``add_arguments(parser)`` and ``run(args) -> int``; this module only wires them. Exit codes:
0 success, 1 runtime failure, 2 bad input (flag, config, manifest).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

# subcommand -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check-config": ("pumice.commands.check_config", "validate a scheduler configuration file"),
    "explain": ("pumice.commands.explain", "why a job is pending, and what would admit it"),
    "plugins": ("pumice.commands.plugins", "list every plugin and action and its package"),
    "replay": ("pumice.commands.replay", "re-run a flight recording's cycles and compare"),
    "run": ("pumice.commands.run", "schedule a cluster (or a simulated one) through its API"),
    "run-example": ("pumice.commands.run_example", "load the default config and show it"),
    "sim-cluster": ("pumice.sim.cli", "run the simulated Kubernetes API server"),
    "simulate": ("pumice.commands.simulate", "replay a cluster's manifests offline"),
}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser; only the subcommand named in ``argv`` has its module imported, so a
    quick command does not pay for loading, say, the simulated API server."""
    chosen = next((a for a in argv if a in SUBCOMMANDS), None)
    parser = argparse.ArgumentParser(prog="pumice", description="A batch scheduler for Kubernetes.")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log warnings (-v) or everything (-vv)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(_module=module)
        if name == chosen:
            _load(module).add_arguments(sp)
    return parser


def _load(module: str) -> ModuleType:
    return importlib.import_module(module)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    command = _load(args._module)
    # A command may log more by default (``pumice run`` logs its decisions at info).
    quiet = int(getattr(command, "DEFAULT_LOG_LEVEL", logging.ERROR))
    level = {0: quiet, 1: min(quiet, logging.WARNING)}.get(args.verbose, logging.DEBUG)
    if getattr(command, "STRUCTURED_LOGS", False):
        from pumice.logsetup import configure_daemon_logging  # structlog only where used

        chosen = getattr(command, "log_format", None)
        # JSON lines, or key=value on a terminal, unless the command chooses
        configure_daemon_logging(level, log_format=chosen(args) if chosen else "auto")
    else:
        logging.basicConfig(level=level, format="pumice: %(levelname)s: %(name)s: %(message)s")
    code = command.run(args)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
