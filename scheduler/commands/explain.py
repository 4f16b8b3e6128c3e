"""``pumice explain [CLUSTER.yaml …] (--pod | --podgroup) NS/NAME``: why a job is pending, and
the smallest change that would admit it.

With files, the manifests are read and checked as ``pumice simulate`` reads them
(``cluster_input``); with none, the cluster is found as kubectl finds it (``--kubeconfig``,
``$KUBECONFIG``, ``~/.kube/config``; ``--context``) and listed once through ``pumice.kube``
with a read-only client, so nothing is ever written. Either way the objects go through the
daemon's cache handlers and sessions (``explain_core.run_cluster``); the counterfactual
suggestions are found and verified by ``explain_search``.

The report (JSON keys): ``target``, ``kind``, ``status`` (``pending`` while any pod of the
target waits — a gated pod, another scheduler's and a PodGroup without pods included, each
with a blocker saying so —, ``placed`` when the run would place it now, ``bound`` when every
pod is bound, ``finished`` when every pod has Succeeded or Failed), ``nodes`` (pod → node),
``blockers`` (``{action, plugin, message}``),
``node_reasons`` (reason → nodes), ``queue`` (``{name, deserved, allocated, capability,
guarantee, request}``, unset limits absent) and ``suggestions`` (``{change, text,
verified}``). Exit codes: 0 explained, 1 the target does not exist, 2 bad input.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable

import orjson

from pumice.commands.cluster_input import LiveError, read_objects
from pumice.commands.config_commands import load_checked
from pumice.commands.explain_changes import MIN_BUDGET, Verifier
from pumice.commands.explain_core import Pace, RunResult, run_cluster
from pumice.commands.explain_search import suggest
from pumice.commands.explain_target import Target, copy_objects
from pumice.commands.simulate import collector_paused
from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.host import PluginConflictError, PluginHost
from pumice.manifests import ManifestError
from pumice.plain import Obj

NOTHING_ADMITS = "no change pumice tried admits it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cluster", nargs="*", metavar="CLUSTER.yaml", help="manifests (else live)")
    parser.add_argument("--config", metavar="FILE", help="scheduler configuration (default: ours)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--pod", metavar="NS/NAME", help="explain this pod")
    which.add_argument("--podgroup", metavar="NS/NAME", help="explain this PodGroup")
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table")
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (live form)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (live form)")
    parser.add_argument("--scheduler-name", metavar="NAME", help="default: the config's")
    parser.add_argument(
        "--no-suggestions", action="store_true", help="explain only; search no changes"
    )


def parse_target(args: argparse.Namespace) -> Target:
    kind, text = ("Pod", args.pod) if args.pod else ("PodGroup", args.podgroup)
    namespace, slash, name = str(text).partition("/")
    if not slash:
        namespace, name = "default", namespace
    if not namespace or not name or "/" in name:
        raise ConfigError(f"expected NS/NAME, got {text!r}", source=f"--{kind.lower()}")
    return Target(kind, namespace, name)


def run(args: argparse.Namespace) -> int:
    try:
        target = parse_target(args)
        config, host = load_checked(args.config)
    except (ValueError, ConfigError, PluginConflictError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    # as simulate: no automatic collection (its full passes over the cluster found nothing to
    # free and took a tenth of the command), the read objects frozen out of the collector
    with collector_paused() as loaded:
        try:
            objects = read_objects(args)
        except ManifestError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        except LiveError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        loaded()
        name = args.scheduler_name or config.scheduler.scheduler_name
        report = explain(
            objects,
            target,
            config,
            host,
            name,
            suggestions=not args.no_suggestions,
            tidy=collect_young,
        )
    if report is None:
        print(f"{target.kind} {target.key} does not exist", file=sys.stderr)
        return 1
    if args.output == "json":
        text = orjson.dumps(report, option=orjson.OPT_INDENT_2).decode()
    else:
        text = render_table(report)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def explain(
    objects: list[Obj],
    target: Target,
    config: SchedulerConfig,
    host: PluginHost,
    scheduler_name: str,
    *,
    suggestions: bool = True,
    pace: Pace | None = None,
    tidy: Callable[[], object] | None = None,
) -> Obj | None:
    """The report for ``target`` (None when it does not exist). ``pace``: called between the
    steps of every run (the daemon's search waits there while binds are due); ``tidy``: before
    each verifying run but the first (``Verifier.tidy``)."""
    started = time.thread_time()
    base = run_cluster(objects, target, config, host, scheduler_name, pace=pace)
    if not base.exists:
        return None
    report = to_json(base, target)
    if report["status"] == "pending" and suggestions:
        found: list[Obj] = []
        if base.failed is not None and base.job_pending:
            # verifying may take as much CPU again as explaining took (at least MIN_BUDGET)
            budget = max(MIN_BUDGET, time.thread_time() - started)
            verifier = Verifier(
                objects,
                target,
                config,
                host,
                scheduler_name,
                budget=budget,
                pace=pace,
                tidy=tidy,
            )
            found = suggest(objects, target, base, verifier.admits, scheduler_name)
        report["suggestions"] = found
        if not found:
            report["blockers"].append(
                {"action": "explain", "plugin": "", "message": NOTHING_ADMITS}
            )
    return report


def collect_young() -> int:
    """A young collection (``gc.collect(1)``): what the runs since the last one left behind
    (a run's cache and snapshots refer to each other: only the collector frees them), never
    the frozen objects read."""
    return gc.collect(1)


def daemon_suggestions(
    objects: list[Obj], key: str, config: SchedulerConfig, host: PluginHost, pace: Pace
) -> list[str]:
    """The daemon's suggester (``pumice.daemon.advice``): the texts of the verified changes
    that would admit the PodGroup ``key``, found on a copy of the cluster as the cache holds
    it, under the configuration the daemon runs now."""
    namespace, _, name = key.partition("/")
    target = Target("PodGroup", namespace, name)
    found = explain(
        copy_objects(objects), target, config, host, config.scheduler.scheduler_name, pace=pace
    )
    return [str(s["text"]) for s in found["suggestions"]] if found else []


def to_json(result: RunResult, target: Target) -> Obj:
    nodes = dict(result.placed) if result.pending else {**result.bound, **result.placed}
    return {
        "target": target.key,
        "kind": target.kind,
        "status": result.status,
        "nodes": dict(sorted(nodes.items())),
        "blockers": [
            {"action": b.action, "plugin": b.plugin, "message": b.message} for b in result.blockers
        ],
        "node_reasons": dict(sorted(result.node_reasons.items())),
        "queue": result.queue,
        "suggestions": [],
    }


def render_table(report: Obj) -> str:
    lines = [f"{report['kind']} {report['target']}: {report['status']}"]
    for pod, node in report["nodes"].items():
        lines.append(f"  {pod} -> {node}")
    if report["blockers"]:
        lines.append("")
        lines.append(f"{'ACTION':<14} {'PLUGIN':<12} MESSAGE")
        for b in report["blockers"]:
            lines.append(f"{b['action'] or '-':<14} {b['plugin'] or '-':<12} {b['message']}")
    if report["node_reasons"]:
        lines.append("")
        lines.append(f"{'NODES':>5}  REASON")
        for reason, count in report["node_reasons"].items():
            lines.append(f"{count:>5}  {reason}")
    queue = report.get("queue") or {}
    if queue:
        lines.append("")
        lines.append(f"queue {queue.get('name')}:")
        for key in ("deserved", "allocated", "capability", "guarantee", "request"):
            if key in queue:
                figures = ", ".join(f"{r}={q}" for r, q in queue[key].items()) or "-"
                lines.append(f"  {key:<10} {figures}")
    if report["suggestions"]:
        lines.append("")
        lines.append("SUGGESTIONS")
        for index, suggestion in enumerate(report["suggestions"], 1):
            lines.append(f"{index}. {suggestion['text']}")
    return "\n".join(lines)
