"""The command lines: ``pumice`` and ``kubectl-pumice``.

Each subcommand of ``pumice`` lives in the module that owns its work and exposes two functions,
``add_arguments(parser)`` and ``run(args) -> int`` (``module:NAME`` in ``SUBCOMMANDS``: an
object of that module with the two, where small commands share a module); this module only
wires them. Exit codes: 0 success, 1 runtime failure, 2 bad input (flag, config, manifest).

``kubectl-pumice`` is pumice's kubectl plugin (kubectl finds it on ``PATH``):
``kubectl pumice explain (pod | podgroup) NAME [-n NS] [--context C] [-o json]`` is
``pumice explain`` spelled as kubectl's, ``-n`` defaulting to the kubeconfig context's
namespace as kubectl's does.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

# subcommand -> (module or module:NAME, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check-config": (
        "pumice.commands.config_commands:CHECK_CONFIG",
        "validate a scheduler configuration file",
    ),
    "explain": ("pumice.commands.explain", "why a job is pending, and what would admit it"),
    "plugins": (
        "pumice.commands.config_commands:PLUGINS",
        "list every plugin and action and its package",
    ),
    "replay": ("pumice.commands.replay", "re-run a flight recording's cycles and compare"),
    "run": ("pumice.commands.run", "schedule a cluster (or a simulated one) through its API"),
    "run-example": (
        "pumice.commands.config_commands:RUN_EXAMPLE",
        "load the default config and show it",
    ),
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


def _load(target: str) -> Any:
    """The module, or the object ``NAME`` of it for ``module:NAME``, that has ``add_arguments``
    and ``run``."""
    module, _, name = target.partition(":")
    loaded: ModuleType = importlib.import_module(module)
    return getattr(loaded, name) if name else loaded


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    command = _load(args._module)
    # A command may log more by default (``pumice run`` logs its decisions at info).
    quiet = int(getattr(command, "DEFAULT_LOG_LEVEL", logging.ERROR))
    level = {0: quiet, 1: min(quiet, logging.WARNING)}.get(args.verbose, logging.DEBUG)
    if getattr(command, "STRUCTURED_LOGS", False):
        from pumice.logs import configure_daemon_logging  # structlog only where used

        chosen = getattr(command, "log_format", None)
        # JSON lines, or key=value on a terminal, unless the command chooses
        configure_daemon_logging(level, log_format=chosen(args) if chosen else "auto")
    else:
        logging.basicConfig(level=level, format="pumice: %(levelname)s: %(name)s: %(message)s")
    code = command.run(args)
    return int(code)


# -- kubectl-pumice -------------------------------------------------------------------------


def kubectl_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl pumice", description="pumice's kubectl plugin: why is my job pending?"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    explain = sub.add_parser(
        "explain", help="why a pod or PodGroup is pending, and what would admit it"
    )
    explain.add_argument("resource", choices=("pod", "pods", "po", "podgroup", "podgroups", "pg"))
    explain.add_argument("name")
    explain.add_argument("-n", "--namespace", default=None)
    explain.add_argument("--context", default=None)
    explain.add_argument("--kubeconfig", default=None)
    explain.add_argument("--config", default=None, help="scheduler configuration (default: ours)")
    explain.add_argument("-o", "--output", choices=("table", "json"), default="table")
    return parser


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """``kubectl-pumice``: the same command as ``pumice explain``, spelled as kubectl's
    (kubectl hands a plugin every word after its name; its own flags cannot come first)."""
    args = kubectl_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    namespace = args.namespace or context_namespace(args.kubeconfig, args.context)
    flag = "--podgroup" if args.resource in ("podgroup", "podgroups", "pg") else "--pod"
    forwarded = [flag, f"{namespace}/{args.name}", "--output", args.output]
    for option in ("context", "kubeconfig", "config"):
        value = getattr(args, option)
        if value:
            forwarded += [f"--{option}", value]
    from pumice.commands import explain as explain_command  # loaded only for this command

    parser = argparse.ArgumentParser(prog="kubectl pumice explain")
    explain_command.add_arguments(parser)
    logging.basicConfig(level=logging.ERROR, format="kubectl-pumice: %(levelname)s: %(message)s")
    return explain_command.run(parser.parse_args(forwarded))


def context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace of the kubeconfig's context (``--context``, else its current-context),
    as kubectl defaults ``-n``; ``default`` when none is set or the file cannot be read."""
    paths = kubeconfig or os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
    for path in paths.split(os.pathsep):
        try:
            loaded = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        wanted = context or loaded.get("current-context")
        for entry in loaded.get("contexts") or ():
            if isinstance(entry, dict) and entry.get("name") == wanted:
                return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


if __name__ == "__main__":
    sys.exit(main())
