"""The kubectl form of ``pumice explain``: the ``kubectl`` plugin's command line
(``kubectl pumice explain (pod | podgroup) NAME [-n NS] [--context C] [-o json]``, installed as
the ``kubectl-pumice`` console script), which hands the same arguments to the command.

The live cluster is listed by ``pumice.commands.cluster_input.read_objects``, below the command;
this module sits above it (it calls the command), so the two never import each other.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from pumice.commands import explain as explain_command


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


def console_main() -> None:
    sys.exit(kubectl_main())
