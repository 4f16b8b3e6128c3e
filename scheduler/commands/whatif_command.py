"""``pumice simulate --until-done [--trace FILE] [--compare CONFIG2] [--plot FILE]``.

The flags ``pumice simulate`` takes for runs in virtual time (``whatif``), and the command
around such a run: load the cluster files, the trace and the configurations, run, print the
report (``whatif_report``: a table, or with ``--output json`` ``{"timeline": …}`` and, with
``--compare``, ``"compare"``: the second configuration's timeline) and draw it
(``whatif_report.plot``).

Exit codes: 0, or 2 with one line for a bad flag, configuration, manifest or trace line, for
``--plot`` without matplotlib (the ``pumice[plot]`` extra) and for a ``--plot`` file that cannot
be written (checked before the run; a failure to write after it comes after the report).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from pumice.commands.config_commands import load_checked
from pumice.framework.config import ConfigError
from pumice.framework.host import PluginConflictError
from pumice.manifests import ManifestError

if TYPE_CHECKING:
    from pumice.commands.whatif_inputs import TraceJob
    from pumice.commands.whatif_report import Timeline

PLOT_SUFFIXES = (".png", ".svg")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("virtual time (what if?)")
    group.add_argument(
        "--until-done",
        action="store_true",
        help="run the pods to completion in virtual time (runtime: pumice.sim/complete-after)",
    )
    group.add_argument(
        "--trace", metavar="FILE", help="jobs arriving over time (JSON lines or CSV)"
    )
    group.add_argument(
        "--compare", metavar="CONFIG2", help="run the same again under a second configuration"
    )
    group.add_argument(
        "--plot", metavar="FILE", help="draw utilisation and queue shares (.png or .svg)"
    )


def wanted(args: argparse.Namespace) -> bool:
    """Did the command line ask for a run in virtual time?"""
    return bool(args.until_done or args.trace or args.compare or args.plot)


def run(args: argparse.Namespace) -> int:
    problem = _check_flags(args)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(
                "--plot needs matplotlib: install the extra, pip install 'pumice[plot]'",
                file=sys.stderr,
            )
            return 2
    # loaded here: ``pumice simulate`` without --until-done (most runs) needs none of it
    from pumice.commands.whatif import VirtualRun
    from pumice.commands.whatif_inputs import Cluster, TraceError, load_trace

    try:
        configs = [load_checked(args.config)]
        if args.compare is not None:
            configs.append(load_checked(args.compare))
        cluster = Cluster.load(list(args.cluster))
        trace: list[TraceJob] = load_trace(args.trace) if args.trace else []
        labels = [args.config or "default", args.compare]
        runs = [
            VirtualRun(
                cluster,
                trace,
                config,
                host,
                scheduler_name=args.scheduler_name or config.scheduler.scheduler_name,
                label=str(label),
            )
            for (config, host), label in zip(configs, labels, strict=False)
        ]
    except (ConfigError, PluginConflictError, ManifestError, TraceError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    for note in cluster.notes:
        print(note, file=sys.stderr)
    timelines = [r.run() for r in runs]
    _write(_render(timelines, args.output))
    if args.plot is not None:
        from pumice.commands.whatif_report import plot

        try:
            plot(timelines, args.plot)
        except OSError as exc:  # the report is out; the picture could not be written
            print(f"--plot: {args.plot}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0


def _check_flags(args: argparse.Namespace) -> str | None:
    if not args.until_done:
        used = [f for f, v in (("--trace", args.trace), ("--compare", args.compare)) if v]
        used += ["--plot"] if args.plot else []
        return f"{used[0]} needs --until-done"
    if args.explain:
        return "--explain cannot be used with --until-done"
    if args.cycles is not None:
        return "--cycles cannot be used with --until-done (it runs until every pod is done)"
    if args.plot is not None:
        if Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
            return f"--plot: {args.plot}: the file must end in .png or .svg"
        # said before a run of minutes, not after it
        folder = Path(args.plot).parent
        if not folder.is_dir():
            return f"--plot: {args.plot}: no such directory {str(folder)!r}"
        if not os.access(folder, os.W_OK):
            return f"--plot: {args.plot}: the directory {str(folder)!r} is not writable"
    return None


def _render(timelines: list[Timeline], output: str) -> str:
    from pumice.commands.whatif_report import render_table

    if output == "json":
        doc = {"timeline": timelines[0].to_json()}
        if len(timelines) > 1:
            doc["compare"] = timelines[1].to_json()
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
    return render_table(timelines)


def _write(text: str) -> None:
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # piped into head: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
