"""The live form of ``pumice explain``: list the cluster once, read-only, and the ``kubectl``
plugin's command line (``kubectl pumice explain (pod | podgroup) NAME [-n NS] [--context C]
[-o json]``, installed as the ``kubectl-pumice`` console script).

``read_objects`` gives the command its input: the files, else the cluster, found as kubectl
finds it (``--kubeconfig``, ``$KUBECONFIG``, ``~/.kube/config``) through ``pumice.kube``
(loaded only then); the client is ``read_only``, so a write would be refused before it is
sent. Volcano's kinds are listed only where the cluster serves them.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from pumice.commands.cluster_input import CACHE_KINDS, read_cluster

Obj = dict[str, Any]


class LiveError(Exception):
    """The cluster could not be found or listed (one line, exit 2)."""


def read_objects(args: argparse.Namespace) -> list[Obj]:
    """The manifests named on the command line, else the live cluster, listed once.

    Raises ``ManifestError`` for a bad file, ``LiveError`` for a cluster that cannot be
    reached or listed."""
    if args.cluster:
        given = read_cluster(list(args.cluster), lambda obj: obj.get("kind") in CACHE_KINDS)
        for note in given.notes:
            print(note, file=sys.stderr)
        return given.objects
    try:
        return asyncio.run(list_cluster(args.kubeconfig, args.context))
    except Exception as exc:  # KubeConfigError, KubeError
        raise LiveError(str(exc)) from None


async def list_cluster(kubeconfig: str | None, context: str | None) -> list[Obj]:
    """Every object the scheduler's cache takes, listed once (each with its ``kind``)."""
    # the kube client is loaded only for the live form
    from pumice.kube import (
        NAMESPACES,
        NODES,
        PODGROUPS,
        PODS,
        PRIORITYCLASSES,
        QUEUES,
        KubeSettings,
        connect,
        served,
    )
    from pumice.kube.resources import STORAGE_KINDS

    # Volcano's kinds and the storage kinds, where the cluster serves them
    optional = (QUEUES, PODGROUPS, *STORAGE_KINDS)
    settings = KubeSettings(
        kubeconfig=kubeconfig, context=context, read_only=True, user_agent="pumice-explain"
    )
    objects: list[Obj] = []
    async with await connect(settings) as kube:
        for kind in (NAMESPACES, PRIORITYCLASSES, NODES, *STORAGE_KINDS, QUEUES, PODGROUPS, PODS):
            if kind in optional and not await served(kube, kind):
                continue
            listed = await kube.request("GET", kind.path())
            for item in listed.get("items") or ():
                objects.append({**item, "apiVersion": kind.api_version, "kind": kind.kind})
    return objects


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
    from pumice.commands import explain  # the command imports this module where used

    args = kubectl_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    namespace = args.namespace or context_namespace(args.kubeconfig, args.context)
    flag = "--podgroup" if args.resource in ("podgroup", "podgroups", "pg") else "--pod"
    forwarded = [flag, f"{namespace}/{args.name}", "--output", args.output]
    for option in ("context", "kubeconfig", "config"):
        value = getattr(args, option)
        if value:
            forwarded += [f"--{option}", value]
    parser = argparse.ArgumentParser(prog="kubectl pumice explain")
    explain.add_arguments(parser)
    logging.basicConfig(level=logging.ERROR, format="kubectl-pumice: %(levelname)s: %(message)s")
    return explain.run(parser.parse_args(forwarded))


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
