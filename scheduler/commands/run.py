"""``pumice run``: schedule a cluster through its API server.

The kubeconfig is the ``--kubeconfig`` flag, else the config's ``scheduler.kubeconfig``, else
``$KUBECONFIG``, else the in-cluster service account, else ``~/.kube/config``. ``--sim`` starts
the simulated API server in this process on loopback, seeded from cluster files, and schedules
it through the same client code path (``pumice.commands.run_sim``, imported only then); a file
that cannot be read (or an object the sim refuses) exits 2 with one line.
``--until-idle`` exits 0 once a cycle finds nothing it can schedule and no bind or eviction is in
flight; with it (or ``--sim``) each bind is printed, and the nodes' utilisation at the end (with
``--sim`` also where each of our pods runs and every PodGroup's phase in the simulated cluster).
``--shadow`` decides beside a live scheduler and writes nothing (``pumice.daemon.shadow``): its
report goes to ``--report FILE`` or, alone, to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pumice.cache import ClusterCache
from pumice.commands.config_commands import load_checked, load_validated
from pumice.daemon import Daemon, DaemonOptions
from pumice.daemon.leadership import default_identity
from pumice.framework.config import AddressError, ConfigError, RecordSettings
from pumice.framework.configparse import split_host_port
from pumice.framework.host import PluginConflictError
from pumice.kube import KubeConfigError, KubeError, KubeSettings
from pumice.logs import LOG_FORMATS
from pumice.manifests import ManifestError

if TYPE_CHECKING:
    from pumice.commands.explain_core import Pace
    from pumice.commands.run_sim import SimulatedCluster
    from pumice.daemon.shadow import ShadowOptions
    from pumice.framework.config import SchedulerConfig
    from pumice.framework.host import PluginHost
    from pumice.plain import Obj

DEFAULT_LOG_LEVEL = logging.INFO
"""``pumice run`` logs its decisions at info unless told otherwise."""

STRUCTURED_LOGS = True
"""Log through structlog: JSON lines off a terminal, key=value on one (``pumice.logs``)."""


def log_format(args: argparse.Namespace) -> str:
    """The log format (``pumice.logs``): as asked; by default readable with ``--sim`` (a
    demo: its log and the ``bound`` lines are read by people, whatever stderr is), else JSON
    off a terminal."""
    chosen = str(getattr(args, "log_format", None) or "auto")
    if chosen == "auto" and getattr(args, "sim", None) is not None:
        return "text"
    return chosen


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="scheduler config (default: bundled)")
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="auto",
        help="log lines as text (key=value) or JSON; auto: JSON off a terminal, text on one "
        "and with --sim",
    )
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig of the cluster")
    elect = parser.add_mutually_exclusive_group()
    elect.add_argument(
        "--leader-elect",
        dest="leader_elect",
        action="store_true",
        default=None,
        help="take part in leader election (default: scheduler.leaderElection.enabled)",
    )
    elect.add_argument(
        "--no-leader-elect",
        dest="leader_elect",
        action="store_false",
        help="lead alone, whatever the config says",
    )
    parser.add_argument(
        "--identity",
        metavar="NAME",
        help="holderIdentity in the Lease (default: the host's name and a random suffix)",
    )
    parser.add_argument(
        "--http-address",
        metavar="HOST:PORT",
        help="serve /livez, /readyz and /metrics there; port 0 picks a free one "
        "(default: the config's scheduler.httpAddress, 127.0.0.1:11251; with --sim, port 0)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="decide and log every decision; write nothing"
    )
    parser.add_argument(
        "--shadow",
        action="store_true",
        help="decide beside the cluster's live scheduler, write nothing, and report where "
        "its binds differ (JSON lines)",
    )
    parser.add_argument(
        "--shadow-of",
        metavar="SCHEDULER_NAME",
        help="with --shadow: the live scheduler whose pods to watch (default: the config's "
        "schedulerName)",
    )
    parser.add_argument(
        "--report", metavar="FILE", help="with --shadow: append the report there (default: stdout)"
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="keep a flight recording of every cycle that decides something in DIR, for "
        "pumice replay (ring bounds: scheduler.record's keepCycles and maxBytes)",
    )
    parser.add_argument(
        "--until-idle",
        action="store_true",
        help="exit 0 once a cycle finds nothing to schedule and nothing is in flight",
    )
    parser.add_argument(
        "--qps",
        type=float,
        help="client-side requests per second; 0: no limit (default: the config's "
        "scheduler.qps, else none when the API server shows API Priority and Fairness, else 2000)",
    )
    parser.add_argument(
        "--burst",
        type=int,
        help="requests allowed above --qps at once; 0: no limit (default: scheduler.burst, "
        "else as --qps)",
    )
    parser.add_argument(
        "--sim",
        nargs="*",
        metavar="CLUSTER.yaml",
        help="schedule a simulated cluster started in-process (default: the bundled example)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        config, host = load_checked(args.config)
    except (ConfigError, PluginConflictError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    sim: SimulatedCluster | None = None
    if args.sim is not None:
        from pumice.commands.run_sim import SimulatedCluster  # the sim is loaded only for --sim

        try:
            sim = SimulatedCluster.read(args.sim)
        except ManifestError as exc:
            print(f"pumice run: --sim: {exc}", file=sys.stderr)
            return 2
    qps = args.qps if args.qps is not None else config.scheduler.qps
    burst = args.burst if args.burst is not None else config.scheduler.burst
    if (qps is not None and not qps >= 0) or (burst is not None and burst < 0):
        print("pumice run: --qps and --burst must be 0 (no limit) or positive", file=sys.stderr)
        return 2
    record = record_settings(args.record, config.scheduler.record)
    if isinstance(record, str):
        print(f"pumice run: {record}", file=sys.stderr)
        return 2
    shadow = shadow_options(args)
    if isinstance(shadow, str):
        print(f"pumice run: {shadow}", file=sys.stderr)
        return 2
    # A shadow's stdout is its report: nothing else may be printed there.
    show = (args.until_idle or args.sim is not None) and shadow is None
    http_address = args.http_address
    if http_address is None:
        # A demo on a simulated cluster must not fight a real scheduler for the port.
        http_address = "127.0.0.1:0" if args.sim is not None else config.scheduler.http_address
    identity = args.identity or default_identity()
    if any(c.isspace() for c in identity):
        print(f"pumice run: --identity {identity!r}: must not contain spaces", file=sys.stderr)
        return 2
    try:
        split_host_port(http_address)
    except AddressError as exc:
        print(f"pumice run: --http-address {http_address!r}: {exc}", file=sys.stderr)
        return 2

    def on_bound(*, namespace: str, name: str, node: str) -> None:
        if show:
            print(f"bound {namespace}/{name} -> {node}", flush=True)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        kubeconfig = args.kubeconfig or config.scheduler.kubeconfig
        with tempfile.TemporaryDirectory(prefix="pumice-run-") as tmp:
            if sim is not None:
                kubeconfig = await sim.start(Path(tmp))
            options = DaemonOptions(
                config=config,
                host=host,
                kube=KubeSettings(
                    kubeconfig=kubeconfig,
                    qps=qps,
                    burst=burst,
                    # The identity in every request: the server's audit log tells replicas apart.
                    user_agent=f"pumice ({identity})",
                ),
                dry_run=args.dry_run,
                until_idle=args.until_idle,
                on_bound=on_bound,
                stop=stop,
                http_address=http_address,
                leader_elect=args.leader_elect,
                identity=identity,
                config_path=args.config,
                config_loader=load_validated,
                record=record,
                suggester=suggestions,
            )
            daemon = Daemon(options) if shadow is None else shadow_daemon(options, shadow)
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGHUP, daemon.request_reload)
            summary = ""
            try:
                code = await daemon.run()
                if sim is not None:
                    summary = sim.summary(daemon.scheduler_name)
            finally:
                if sim is not None:
                    await sim.stop()
            if show and daemon.cache is not None:
                print(utilisation(daemon.cache), flush=True)
            if summary:
                print(summary, flush=True)
            return code

    try:
        return asyncio.run(main())
    except KubeConfigError as exc:
        print(f"pumice run: {exc}", file=sys.stderr)
        return 2
    except ManifestError as exc:  # a seeded object the simulated server refuses
        print(f"pumice run: --sim: {exc}", file=sys.stderr)
        return 2
    except KubeError as exc:
        print(f"pumice run: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


# Loaded on first use: ``pumice explain``'s search and the shadow run are ~20 modules that a
# daemon which never meets an unschedulable PodGroup, or runs no shadow, need not compile and
# import before its first bind.


def suggestions(
    objects: list[Obj], key: str, config: SchedulerConfig, host: PluginHost, pace: Pace
) -> list[str]:
    """The daemon's suggester (``pumice.commands.explain.daemon_suggestions``)."""
    from pumice.commands.explain import daemon_suggestions

    return daemon_suggestions(objects, key, config, host, pace)


def shadow_daemon(options: DaemonOptions, shadow: ShadowOptions) -> Daemon:
    from pumice.daemon.shadow import ShadowDaemon

    return ShadowDaemon(options, shadow)


def record_settings(
    flag: str | None, configured: RecordSettings | None
) -> RecordSettings | str | None:
    """The flight recorder's settings: ``--record DIR`` with the config's ring bounds, else the
    config's ``scheduler.record``; a message when the directory cannot be made."""
    chosen = configured if flag is None else RecordSettings(flag, *_bounds(configured))
    if chosen is None:
        return None
    try:
        Path(chosen.dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"--record {chosen.dir!r}: {exc.strerror or exc}"
    return chosen


def _bounds(configured: RecordSettings | None) -> tuple[int, int]:
    default = configured or RecordSettings(".")
    return default.keep_cycles, default.max_bytes


def shadow_options(args: argparse.Namespace) -> ShadowOptions | str | None:
    """The shadow run's options; None without ``--shadow``; a message for a bad flag."""
    given = [
        f
        for f, v in (
            ("--shadow-of", args.shadow_of),
            ("--report", args.report),
        )
        if v is not None
    ]
    if not args.shadow:
        return f"{given[0]} needs --shadow" if given else None
    if args.shadow_of is not None and not args.shadow_of.strip():
        return "--shadow-of: a scheduler name is needed"
    from pumice.daemon.shadow import ShadowOptions  # loaded only for --shadow

    report = Path(args.report) if args.report is not None else None
    if report is not None:
        try:
            report.open("a").close()  # appended to: an unwritable place is a bad flag, now
        except OSError as exc:
            return f"--report {args.report!r}: {exc.strerror or exc}"
    return ShadowOptions(of=args.shadow_of, report=report)


def utilisation(cache: ClusterCache) -> str:
    """One line per node: requested over allocatable cpu and memory, and the pod count."""
    lines = ["node utilisation (requested / allocatable):"]
    for name in sorted(cache.state.nodes):
        node = cache.state.nodes[name]
        alloc, used = node.allocatable, node.used
        parts = []
        for dim in ("cpu", "memory"):
            total = alloc.get(dim)
            share = 100.0 * used.get(dim) / total if total else 0.0
            parts.append(f"{dim} {share:5.1f}%")
        ghost = " (deleted)" if name in cache.ghosts else ""
        lines.append(f"  {name:<20} {'  '.join(parts)}  pods {node.pod_count}{ghost}")
    return "\n".join(lines)
