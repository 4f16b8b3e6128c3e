"""``pumice run``: schedule a cluster through its API server.

The kubeconfig is the ``--kubeconfig`` flag, else the config's ``scheduler.kubeconfig``, else
``$KUBECONFIG``, else the in-cluster service account, else ``~/.kube/config``. ``--sim`` starts
the simulated API server in this process on loopback, seeded from cluster files (default: the
bundled ``conf/examples/cluster.yaml``), and schedules it through the same client code path.
``--until-idle`` exits 0 once a cycle finds nothing it can schedule and no bind or eviction is in
flight; with it (or ``--sim``) each bind is printed, and the nodes' utilisation at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import tempfile
from importlib import resources
from pathlib import Path

from pumice.cache import ClusterCache
from pumice.commands.common import load_checked, load_validated
from pumice.daemon import Daemon, DaemonOptions
from pumice.daemon.leadership import default_identity
from pumice.framework.config import ConfigError
from pumice.framework.configparse import split_host_port
from pumice.framework.host import PluginConflictError
from pumice.kube import KubeConfigError, KubeError, KubeSettings
from pumice.logsetup import LOG_FORMATS
from pumice.manifests import ManifestError, load_manifests
from pumice.sim import SimConfig, SimServer

DEFAULT_LOG_LEVEL = logging.INFO
"""``pumice run`` logs its decisions at info unless told otherwise."""

STRUCTURED_LOGS = True
"""Log through structlog: JSON lines off a terminal, key=value on one (``pumice.logsetup``)."""

log = logging.getLogger("pumice.run")


def log_format(args: argparse.Namespace) -> str:
    """The log format (``pumice.logsetup``): as asked; by default readable with ``--sim`` (a
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
        "--until-idle",
        action="store_true",
        help="exit 0 once a cycle finds nothing to schedule and nothing is in flight",
    )
    parser.add_argument(
        "--qps", type=float, default=50.0, help="client-side request rate limit (default: 50/s)"
    )
    parser.add_argument(
        "--burst", type=int, default=100, help="requests allowed above --qps at once (100)"
    )
    parser.add_argument(
        "--sim",
        nargs="*",
        metavar="CLUSTER.yaml",
        help="schedule a simulated cluster started in-process (default: the bundled example)",
    )


def example_cluster() -> Path:
    return Path(str(resources.files("pumice.conf") / "examples" / "cluster.yaml"))


def run(args: argparse.Namespace) -> int:
    try:
        config, host = load_checked(args.config)
    except (ConfigError, PluginConflictError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    files: list[Path] | None = None
    if args.sim is not None:
        files = [Path(f) for f in args.sim] or [example_cluster()]
        try:
            manifests = load_manifests(*files)
        except ManifestError as exc:
            print(f"pumice run: --sim: {exc}", file=sys.stderr)
            return 2
    if args.qps <= 0 or args.burst < 1:
        print("pumice run: --qps must be positive and --burst at least 1", file=sys.stderr)
        return 2
    show = args.until_idle or args.sim is not None
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
    except ValueError as exc:
        print(f"pumice run: --http-address {http_address!r}: {exc}", file=sys.stderr)
        return 2

    def on_bound(namespace: str, name: str, node: str) -> None:
        if show:
            print(f"bound {namespace}/{name} -> {node}", flush=True)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        kubeconfig = args.kubeconfig or config.scheduler.kubeconfig
        server: SimServer | None = None
        with tempfile.TemporaryDirectory(prefix="pumice-run-") as tmp:
            if files is not None:
                # the simulated server's access log would drown the decisions
                logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
                server = SimServer(SimConfig())
                server.seed(manifests.objects)
                await server.start()
                kubeconfig = str(server.write_kubeconfig(Path(tmp) / "kubeconfig"))
                log.info("simulated cluster at %s (%s)", server.url, ", ".join(map(str, files)))
            options = DaemonOptions(
                config=config,
                host=host,
                kube=KubeSettings(
                    kubeconfig=kubeconfig,
                    qps=args.qps,
                    burst=args.burst,
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
            )
            daemon = Daemon(options)
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGHUP, daemon.request_reload)
            try:
                code = await daemon.run()
            finally:
                if server is not None:
                    await server.stop()
            if show and daemon.cache is not None:
                print(utilisation(daemon.cache), flush=True)
            return code

    try:
        return asyncio.run(main())
    except KubeConfigError as exc:
        print(f"pumice run: {exc}", file=sys.stderr)
        return 2
    except KubeError as exc:
        print(f"pumice run: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


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
