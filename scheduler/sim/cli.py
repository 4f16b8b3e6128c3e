"""``pumice sim-cluster``: run the simulated API server standalone.

Seeds the cluster from manifest files (``--cluster``, repeatable) and/or generated nodes
(``--nodes N --node-template T``), listens on 127.0.0.1, writes a kubeconfig and prints where
it is, then serves until SIGINT or SIGTERM. Bad input (an unreadable or malformed manifest, an
object the server refuses, a bad template, a port that cannot be bound) is a one-line error
naming the file or flag, with exit code 2, before anything is served.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

from pumice.manifests import ManifestError, load_manifests
from pumice.plain import PumiceError
from pumice.sim import quantities
from pumice.sim.access import MODES
from pumice.sim.defaults import (
    DEFAULT_TEMPLATE,
    TemplateError,
    generate_nodes,
    parse_inline_template,
)
from pumice.sim.errors import ApiError
from pumice.sim.objects import Obj, meta
from pumice.sim.resources import for_object
from pumice.sim.server import SimConfig, SimServer

PROG = "pumice sim-cluster"
_SEED_ORDER = {"Namespace": 0, "PriorityClass": 1, "Pod": 3}


class BadInput(PumiceError):
    """A one-line message for exit code 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster",
        metavar="FILE",
        action="append",
        default=[],
        help="manifests to seed the cluster with (multi-document YAML or a kind: List, as "
        "`kubectl get nodes,pods,podgroups,queues -A -o yaml` writes); repeatable",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)"
    )
    parser.add_argument(
        "--kubeconfig-out",
        metavar="PATH",
        help="where to write the kubeconfig (default: a temporary file removed on exit)",
    )
    parser.add_argument(
        "--authorization",
        choices=MODES,
        default="none",
        help="none: every request is allowed; rbac: requests are checked against the seeded "
        "Roles, ClusterRoles and bindings, and the server listens on HTTPS (kubectl sends "
        "tokens only over TLS) (default: none)",
    )
    parser.add_argument(
        "--kubeconfig-out-for",
        metavar="NAMESPACE/NAME=PATH",
        action="append",
        default=[],
        help="also write a kubeconfig acting as ServiceAccount NAMESPACE/NAME (created if "
        "missing) to PATH; repeatable. The --kubeconfig-out one stays cluster-admin",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=0,
        metavar="N",
        help="generate N more nodes (default: %(default)s)",
    )
    parser.add_argument(
        "--node-template",
        metavar="FILE|SPEC",
        default=DEFAULT_TEMPLATE,
        help="a file with one Node manifest (its name is the prefix), or capacities like "
        f"{DEFAULT_TEMPLATE!r} (the default)",
    )
    parser.add_argument(
        "--pod-start-delay",
        type=float,
        default=0.2,
        metavar="S",
        help="seconds from bind to Running (default: %(default)s)",
    )
    parser.add_argument(
        "--pod-termination-delay",
        type=float,
        default=0.5,
        metavar="S",
        help="longest a gracefully deleted pod lingers (default: %(default)s)",
    )
    parser.add_argument(
        "--bookmark-interval",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds between BOOKMARKs, > 0 (default: %(default)s)",
    )
    parser.add_argument(
        "--history-size",
        type=int,
        default=10_000,
        metavar="N",
        help="changes kept per resource (default: %(default)s)",
    )
    parser.add_argument(
        "--no-defaults",
        action="store_true",
        help="start without the default namespaces, system PriorityClasses and default Queue",
    )
    parser.add_argument(
        "--without-volcano",
        action="store_true",
        help="serve no scheduling.volcano.sh group, as a cluster without Volcano's CRDs: "
        "discovery omits PodGroups and Queues, their paths answer 404, and a --cluster file "
        "holding one is an error",
    )
    parser.add_argument(
        "--without-storage",
        action="store_true",
        help="serve no PersistentVolumeClaims, PersistentVolumes or storage.k8s.io kinds, and "
        "play no volume controllers, as a cluster without storage APIs",
    )
    parser.add_argument(
        "--fail-provisioning",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="fail this fraction of volume provisioning attempts (seeded), as a driver out of "
        "capacity: a ProvisioningFailed event, and the claim's selected-node annotation "
        "removed (default: %(default)s)",
    )
    parser.add_argument(
        "--provisioning-delay",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds each volume provisioning attempt takes (default: %(default)s)",
    )
    parser.add_argument(
        "--without-priority-and-fairness",
        action="store_true",
        help="send no X-Kubernetes-PF-* headers, as a server without API Priority and Fairness",
    )
    parser.add_argument(
        "--shed-above",
        type=float,
        metavar="RATE",
        help="answer 429 with Retry-After: 1 to requests beyond RATE per second, as an "
        "overloaded server does (default: never)",
    )


def _identity_outputs(specs: list[str]) -> list[tuple[str, str, Path]]:
    """``NAMESPACE/NAME=PATH`` flags as (namespace, name, path)."""
    out = []
    for spec in specs:
        account, sep, path = spec.partition("=")
        namespace, slash, name = account.partition("/")
        if not sep or not slash or not namespace or not name or not path or "/" in name:
            raise BadInput(f"--kubeconfig-out-for {spec!r}: expected NAMESPACE/NAME=PATH")
        out.append((namespace, name, Path(path)))
    return out


def _write_identities(server: SimServer, outputs: list[tuple[str, str, Path]]) -> None:
    for namespace, name, path in outputs:
        flag = f"--kubeconfig-out-for {namespace}/{name}={path}"
        try:
            written = server.write_kubeconfig_for(namespace, name, path)
        except ApiError as exc:
            raise BadInput(f"{flag}: {exc.message}") from None
        except OSError as exc:
            raise BadInput(f"{flag}: {exc.strerror or exc}") from None
        print(f"kubeconfig for ServiceAccount {namespace}/{name}: {written}", flush=True)


def _problem(exc: ApiError) -> str:
    """``FIELD: MESSAGE`` of a refused seed object (the format ``pumice simulate`` uses)."""
    if exc.problem:
        return exc.problem
    causes = (exc.details or {}).get("causes") or []
    if causes and causes[0].get("field"):
        return f"{causes[0]['field']}: {causes[0]['message']}"
    return exc.message


def _template(text: str) -> Obj:
    path = Path(text)
    if path.is_file():
        try:
            nodes = load_manifests(path).kind("Node")
        except ManifestError as exc:
            raise BadInput(f"--node-template: {exc}") from None
        if len(nodes) != 1:
            raise BadInput(f"--node-template {text}: expected exactly one Node, found {len(nodes)}")
        return nodes[0]
    try:
        template = parse_inline_template(text)
    except TemplateError as exc:
        raise BadInput(f"--node-template {text!r}: not a file, and {exc}") from None
    for name, amount in template["status"]["capacity"].items():
        try:
            if quantities.decode(amount)[0] < 0:
                raise BadInput(f"--node-template {text!r}: {name}={amount}: must not be negative")
        except quantities.BadQuantity as exc:
            raise BadInput(f"--node-template {text!r}: {name}={amount}: {exc}") from None
    return template


def _seed(server: SimServer, args: argparse.Namespace) -> Counter[str]:
    counts: Counter[str] = Counter()
    for file in args.cluster:
        try:
            manifests = load_manifests(file)
        except ManifestError as exc:
            raise BadInput(str(exc)) from None
        skipped: Counter[str] = Counter()
        served = []
        for obj in manifests.objects:
            if for_object(str(obj["apiVersion"]), str(obj["kind"])) is None:
                skipped[f"{obj['kind']} ({obj['apiVersion']})"] += 1
            else:
                served.append(obj)
        for obj in sorted(served, key=lambda o: _SEED_ORDER.get(str(o["kind"]), 2)):
            try:
                added = server.seed([obj])
            except ApiError as exc:
                m = meta(obj)
                rtype = for_object(str(obj["apiVersion"]), str(obj["kind"]))
                ns = (m.get("namespace") or "default") if rtype and rtype.namespaced else ""
                name = "/".join(filter(None, [ns, m.get("name") or m.get("generateName")]))
                raise BadInput(f"{file}: {obj['kind']} {name}: {_problem(exc)}") from None
            counts[str(obj["kind"])] += added
        for note in server.notes:
            print(f"{PROG}: note: {file}: {note}", file=sys.stderr)
        server.notes.clear()
        if skipped:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(skipped.items()))
            print(
                f"{PROG}: warning: {file}: skipped objects of kinds not served: {kinds}",
                file=sys.stderr,
            )
    if args.nodes:
        template = _template(args.node_template)
        taken = set(server.store.table("/nodes"))
        try:
            nodes = [
                n
                for n in generate_nodes(args.nodes, template)
                if ("", meta(n)["name"]) not in taken
            ]
            server.seed(nodes)
        except TemplateError as exc:
            raise BadInput(f"--node-template: {exc}") from None
        except ApiError as exc:
            raise BadInput(f"--node-template: {_problem(exc)}") from None
        counts["Node"] += len(nodes)
    return counts


async def _serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise BadInput(f"--port {args.port}: must be within 0..65535")
    if not 0.0 <= args.fail_provisioning <= 1.0:
        raise BadInput(f"--fail-provisioning {args.fail_provisioning}: must be within 0..1")
    for flag in (
        "pod_start_delay",
        "pod_termination_delay",
        "bookmark_interval",
        "provisioning_delay",
    ):
        if getattr(args, flag) < 0:
            raise BadInput(f"--{flag.replace('_', '-')}: must not be negative")
    # 0 would flood every watcher with bookmarks as fast as the loop turns
    if not args.bookmark_interval > 0:
        raise BadInput(f"--bookmark-interval {args.bookmark_interval}: must be greater than 0")
    if args.history_size < 1:
        raise BadInput("--history-size: must be at least 1")
    server = SimServer(
        SimConfig(
            pod_start_delay=args.pod_start_delay,
            pod_termination_delay=args.pod_termination_delay,
            bookmark_interval=args.bookmark_interval,
            history_size=args.history_size,
            defaults=not args.no_defaults,
            authorization=args.authorization,
            volcano=not args.without_volcano,
            storage=not args.without_storage,
            fail_provisioning=args.fail_provisioning,
            provisioning_delay=args.provisioning_delay,
            priority_and_fairness=not args.without_priority_and_fairness,
        )
    )
    if args.shed_above is not None:
        if not args.shed_above > 0:
            raise BadInput(f"--shed-above {args.shed_above}: must be greater than 0")
        server.flow.shed_above(args.shed_above)
    identities = _identity_outputs(args.kubeconfig_out_for)
    if args.nodes < 0:
        raise BadInput(f"--nodes {args.nodes}: must not be negative")
    _template(args.node_template)  # a bad template is refused even without --nodes
    counts = _seed(server, args)
    try:
        await server.start(args.port)
    except OSError as exc:
        raise BadInput(f"--port {args.port}: {exc.strerror or exc}") from None
    temp_dir: str | None = None
    try:
        if args.kubeconfig_out:
            try:
                kubeconfig = server.write_kubeconfig(args.kubeconfig_out)
            except OSError as exc:
                raise BadInput(
                    f"--kubeconfig-out {args.kubeconfig_out}: {exc.strerror or exc}"
                ) from None
        else:
            temp_dir = tempfile.mkdtemp(prefix="pumice-sim-")
            kubeconfig = server.write_kubeconfig(Path(temp_dir) / "kubeconfig")
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no objects"
        print(f"{PROG}: serving {server.url} ({summary})", flush=True)
        print(f"kubeconfig: {kubeconfig}", flush=True)
        print(f"admin: {server.url}/sim/faults", flush=True)
        _write_identities(server, identities)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await server.stop()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_serve(args))
    except BadInput as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        return 0
