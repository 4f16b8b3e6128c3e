"""The daemon end to end on the simulated API server, beside a bare greedy binder.

One ``pumice sim-cluster`` process (its own core) serves N nodes. Two schedulers run against
it in turn, each as its own process, and each is measured the same way, as kube-scheduler's
scheduler_perf measures: the scheduler is started and left to sync and go idle, then M pods
naming it are created through the API (one creator, ``--create-concurrency`` requests at once),
and the figure is **creation → bound**: the sim's write log from the first pod created to the
last bind accepted, in pods/s.

* the bare greedy binder (``--greedy-binder``, this file as a process): an informer of its
  pending pods binds each pod as it arrives to the first node that fits (no scheduling),
  through the same ``pumice.kube`` Binder;
* the daemon: ``pumice run`` with the bundled config (period 100ms) and no rate flags: its
  client's default sets no limit against the sim, which shows API Priority and Fairness.

Then, as a secondary figure, the daemon is stopped, M more pods are created while it is down and
it is started again: process start → all bound (start-up, the initial lists, the backlog), and
its peak RSS (VmHWM).

Run: ``.venv/bin/python -P bench/bench_daemon.py [--nodes 5000] [--pods 10000] [--limit 600]``.
``--record`` measures the daemon a second time with its flight recorder on (``pumice run
--record DIR``) after each plain run and prints the recorder's overhead. It prints figures and
never fails; a phase that is not done within ``--limit`` seconds reports
how far it got.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from pumice.kube import PODS, Binder, Conflict, Informer, KubeSettings, connect
from pumice.model import Resource, pod_requests

Obj = dict[str, Any]


def pending_pod(scheduler: str, namespace: str, i: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{scheduler}-{i:05d}", "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
        },
    }


def write_cluster(path: Path, nodes: int, pods: int, bound: int = 0) -> None:
    """N nodes, ``pods`` pending pods per scheduler, and ``bound`` pods of another scheduler
    already running on the nodes (round robin)."""
    docs: list[Obj] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        capacity = {"cpu": "32", "memory": "128Gi", "pods": "110"}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
    for scheduler in ("greedy", "pumice"):
        docs.extend(pending_pod(scheduler, scheduler, i) for i in range(pods))
    for i in range(bound):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"running-{i:06d}", "namespace": "running"},
                "spec": {
                    "schedulerName": "default-scheduler",
                    "nodeName": f"node-{i % nodes:05d}",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:1.36",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ],
                },
                "status": {"phase": "Running"},
            }
        )
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))  # JSON is YAML, and fast


async def start_server(cluster: Path, kubeconfig: Path) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "pumice.cli", "sim-cluster",
        "--cluster", str(cluster), "--kubeconfig-out", str(kubeconfig),
        "--history-size", "100000", "--pod-start-delay", "3600",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 300)).decode()
    if "serving" not in line:
        raise SystemExit(f"sim-cluster did not start: {line!r}")
    url = line.split("serving ", 1)[1].split(" ", 1)[0]
    await proc.stdout.readline()
    return proc, url


class WriteLog:
    """The sim's write log, read a little at a time (``?since=``): the accepted pod creates and
    binds per namespace, with the server's timestamps."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.cursor = 0
        self.created: dict[str, list[float]] = {}
        self.bound: dict[str, list[float]] = {}
        self.other: dict[str, int] = {}
        """Other accepted writes by namespace (events, status) while pods were bound."""

    async def poll(self) -> None:
        async with self.http.get(f"{self.url}/sim/writes", params={"since": self.cursor}) as resp:
            items = (await resp.json())["items"]
        self.cursor += len(items)
        for w in items:
            if w["code"] != 201:
                continue
            if w["resource"] == "pods/binding":
                self.bound.setdefault(w["namespace"], []).append(w["time"])
            elif w["resource"] == "pods" and w["verb"] == "create":
                self.created.setdefault(w["namespace"], []).append(w["time"])
            else:
                self.other[w["namespace"]] = self.other.get(w["namespace"], 0) + 1

    def binds(self, namespace: str) -> int:
        return len(self.bound.get(namespace, ()))

    def span(self, namespace: str) -> float:
        """Seconds from the first pod created to the last pod bound in ``namespace``."""
        created, bound = self.created.get(namespace), self.bound.get(namespace)
        if not created or not bound:
            return float("nan")
        return max(bound) - min(created)


async def create_pods(
    kubeconfig: Path, scheduler: str, namespace: str, count: int, concurrency: int
) -> float:
    """Create ``count`` pending pods naming ``scheduler``, ``concurrency`` at a time; seconds."""
    kube = await connect(KubeSettings(kubeconfig=str(kubeconfig), qps=1e9, burst=10**9))
    try:
        try:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            await kube.request("POST", "/api/v1/namespaces", body=body)
        except Conflict:
            pass
        indices = iter(range(count))
        start = time.perf_counter()

        async def creator() -> None:
            for i in indices:
                await kube.request(
                    "POST", PODS.path(namespace), body=pending_pod(scheduler, namespace, i)
                )

        await asyncio.gather(*(creator() for _ in range(concurrency)))
        return time.perf_counter() - start
    finally:
        await kube.close()


async def wait_bound(
    writes: WriteLog, namespace: str, pods: int, limit: float, proc: asyncio.subprocess.Process
) -> None:
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline and proc.returncode is None:
        await writes.poll()
        if writes.binds(namespace) >= pods:
            return
        await asyncio.sleep(0.25)


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process used so far (the machine's other load does not count)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(
    who: str, writes: WriteLog, namespace: str, pods: int, created: float, cpu: float
) -> float:
    """Print and return the creation → bound figure of one scheduler."""
    bound, span = writes.binds(namespace), writes.span(namespace)
    rate = bound / span if span == span and span > 0 else 0.0
    done = "" if bound >= pods else " (not all: stopped at the limit)"
    print(
        f"{who}: {bound}/{pods} pods created -> bound in {span:.2f} s = {rate:,.0f} pods/s{done}"
        f" (creating them took {created:.2f} s); its CPU meanwhile {cpu:.1f} s"
        f" = {cpu / max(1, bound) * 1e3:.2f} ms per pod;"
        f" {writes.other.get(namespace, 0)} other writes (events, status)"
    )
    return rate


# -- the bare greedy binder ------------------------------------------------------------------


class GreedyBinder:
    """Binds each pending pod as its informer sees it to the first node that fits."""

    def __init__(self, nodes: list[Obj], binder: Binder) -> None:
        self.names = [n["metadata"]["name"] for n in nodes]
        self.free = [
            Resource.from_k8s({k: v for k, v in n["status"]["allocatable"].items() if k != "pods"})
            for n in nodes
        ]
        self.binder = binder
        self.cursor = 0
        self.tasks: set[asyncio.Task[Any]] = set()

    def on_add(self, pod: Obj) -> None:
        if pod["spec"].get("nodeName"):
            return
        need = pod_requests(pod)
        for _ in range(len(self.names)):
            if need.less_equal(self.free[self.cursor]):
                break
            self.cursor = (self.cursor + 1) % len(self.names)
        self.free[self.cursor] = self.free[self.cursor].sub(need, clip=True)
        meta = pod["metadata"]
        node = self.names[self.cursor]
        task = asyncio.get_running_loop().create_task(
            self.binder.bind(
                namespace=meta["namespace"], name=meta["name"], uid=meta["uid"], node=node
            )
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def on_update(self, old: Obj, new: Obj) -> None:
        pass

    def on_delete(self, obj: Obj) -> None:
        pass


async def greedy_binder(kubeconfig: str) -> int:
    """The ``--greedy-binder`` process: prints ``ready`` once its informer synced, then binds
    until SIGTERM."""
    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    kube = await connect(KubeSettings(kubeconfig=kubeconfig, qps=1e9, burst=10**9))
    try:
        nodes = (await kube.request("GET", "/api/v1/nodes"))["items"]
        handler = GreedyBinder(nodes, Binder(kube, concurrency=64))
        informer = Informer(
            kube,
            PODS,
            handler,
            name="greedy",
            field_selector="spec.schedulerName=greedy,spec.nodeName=",
        )
        runner = asyncio.get_running_loop().create_task(informer.run())
        await informer.synced.wait()
        print("ready", flush=True)
        await done.wait()
        runner.cancel()
        await asyncio.gather(runner, *handler.tasks, return_exceptions=True)
    finally:
        await kube.close()
    return 0


async def greedy(
    kubeconfig: Path, writes: WriteLog, pods: int, limit: float, width: int, namespace: str
) -> float:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", __file__, "--greedy-binder", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 120)
        if b"ready" not in line:
            print(f"bare greedy binder did not start: {line!r}")
            return 0.0
        cpu = cpu_seconds(proc.pid)
        created = await create_pods(kubeconfig, "greedy", namespace, pods, width)
        await wait_bound(writes, namespace, pods, limit, proc)
        cpu = cpu_seconds(proc.pid) - cpu
    finally:
        await stop(proc)
    return report("bare greedy binder", writes, namespace, pods, created, cpu)


# -- the daemon ------------------------------------------------------------------------------


async def start_daemon(
    kubeconfig: Path, config: Path, log: Path, extra: tuple[str, ...] = ()
) -> tuple[asyncio.subprocess.Process, float]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "pumice.cli", "run", "--http-address", "127.0.0.1:0",
        "--kubeconfig", str(kubeconfig), "--config", str(config), *extra,
        stdout=log.open("wb"), stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    return proc, time.perf_counter()


def cycle_summaries(log: Path) -> list[str]:
    """The daemon's ``cycle N: ...`` lines with binds (its log is JSON lines)."""
    found = []
    for line in log.read_text().splitlines():
        try:
            event = str(json.loads(line).get("event", ""))
        except (ValueError, AttributeError):
            continue
        if event.startswith("cycle ") and not event.split(": ", 1)[-1].startswith("0 binds"):
            found.append(event)
    return found


def print_cycles(log: Path) -> None:
    cycles = cycle_summaries(log)
    shown = "; ".join(cycles[:3]) + ("; ..." if len(cycles) > 3 else "")
    print(f"  {len(cycles)} cycles with binds: {shown}")


async def start_py_spy(pid: int, profile: str | None) -> asyncio.subprocess.Process | None:
    """``py-spy record`` of the daemon (every thread, idle frames left out) into ``profile``,
    in py-spy's collapsed-stack format; None without ``--py-spy`` or without py-spy."""
    if profile is None:
        return None
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        print("  (py-spy is not installed in this environment: no profile)")
        return None
    return await asyncio.create_subprocess_exec(
        str(spy), "record", "--pid", str(pid), "--rate", "200", "--format", "raw", "--gil",
        "--output", profile, "--nonblocking",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def daemon(
    kubeconfig: Path,
    config: Path,
    writes: WriteLog,
    pods: int,
    limit: float,
    width: int,
    namespace: str,
    profile: str | None = None,
    extra: tuple[str, ...] = (),
) -> float:
    """``pumice run`` synced and idle, then the pods are created: creation → bound, pods/s."""
    log = config.parent / f"daemon-{namespace}.log"
    proc, started = await start_daemon(kubeconfig, config, log, extra)
    created = 0.0
    try:
        while "cache synced" not in log.read_text():
            if proc.returncode is not None or time.perf_counter() - started > limit:
                print("pumice daemon did not sync")
                return 0.0
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # idle: its first cycles found nothing to do
        spy = await start_py_spy(proc.pid, profile)
        cpu = cpu_seconds(proc.pid)
        created = await create_pods(kubeconfig, "pumice", namespace, pods, width)
        await wait_bound(writes, namespace, pods, limit, proc)
        cpu = cpu_seconds(proc.pid) - cpu
        rss = peak_rss_mib(proc.pid)
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its profile on SIGINT
            await spy.wait()
    finally:
        await stop(proc)
    who = "pumice daemon" + (" " + " ".join(extra) if extra else "")
    rate = report(who, writes, namespace, pods, created, cpu)
    print_cycles(log)
    print(f"  peak RSS {rss:,.0f} MiB")
    return rate


async def recorded(
    kubeconfig: Path,
    config: Path,
    writes: WriteLog,
    args: argparse.Namespace,
    suffix: str,
    plain: float,
) -> None:
    """The daemon again with ``--record``: the recorder's cost on creation → bound."""
    directory = config.parent / f"recording{suffix}"
    extra = ("--record", str(directory))
    rate = await daemon(
        kubeconfig, config, writes, args.pods, args.limit, args.create_concurrency,
        f"recorded{suffix}", extra=extra,
    )  # fmt: skip
    files = [p for p in directory.iterdir() if p.suffix == ".rec"] if directory.is_dir() else []
    size = sum(p.stat().st_size for p in files)
    print(f"  recording: {len(files)} cycles, {size / 2**20:,.1f} MiB")
    if plain and rate:
        print(
            f"recorder overhead: {plain:,.0f} -> {rate:,.0f} pods/s = "
            f"{(1 - rate / plain) * 100:+.1f} % slower (creation -> bound)"
        )


async def daemon_backlog(
    kubeconfig: Path, config: Path, writes: WriteLog, pods: int, limit: float, width: int
) -> None:
    """The pods are created while no daemon runs, then it starts: process start → all bound."""
    await create_pods(kubeconfig, "pumice", "backlog", pods, width)
    log = config.parent / "backlog.log"
    proc, started = await start_daemon(kubeconfig, config, log)
    first: float | None = None
    rss = float("nan")
    try:
        while time.perf_counter() - started < limit and proc.returncode is None:
            await asyncio.sleep(0.25)
            await writes.poll()
            rss = peak_rss_mib(proc.pid)
            if writes.binds("backlog") and first is None:
                first = time.perf_counter() - started
            if writes.binds("backlog") >= pods:
                break
        elapsed = time.perf_counter() - started
    finally:
        await stop(proc)
    bound = writes.binds("backlog")
    done = "" if bound >= pods else f" (stopped at the {limit:.0f} s limit)"
    first_text = "never" if first is None else f"after {first:.2f} s"
    print(
        f"pumice daemon, backlog: {bound}/{pods} pods created before it started, process start"
        f" -> all bound in {elapsed:.2f} s = {bound / elapsed:,.0f} pods/s{done}"
    )
    print(f"  first bind {first_text}; peak RSS {rss:,.0f} MiB")
    print_cycles(log)


async def sync_only(kubeconfig: Path, config: Path, limit: float) -> None:
    """``pumice run --dry-run`` until its cache is synced and one cycle ran: time and RSS."""
    log = config.parent / "sync.log"

    def events() -> list[str]:
        """The log's messages (JSON lines when not on a terminal, else plain text)."""
        out = []
        for line in log.read_text().splitlines():
            try:
                out.append(str(json.loads(line)["event"]))
            except (ValueError, KeyError, TypeError):
                out.append(line)
        return out

    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "pumice.cli", "run", "--dry-run",
        "--kubeconfig", str(kubeconfig), "--config", str(config),
        "--http-address", "127.0.0.1:0",
        stdout=log.open("wb"), stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    synced = cycled = None
    synced_rss = rss = float("nan")
    while time.perf_counter() - start < limit and proc.returncode is None:
        await asyncio.sleep(0.2)
        said = events()
        rss = peak_rss_mib(proc.pid)
        if synced is None and any("cache synced" in e for e in said):
            synced, synced_rss = time.perf_counter() - start, rss
        if any(re.search(r"\bcycle \d+:", e) for e in said):
            cycled = time.perf_counter() - start
            break
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
    said = events()
    print(f"start-up: {next((e for e in said if 'cache synced' in e), 'not synced')}")
    cycle = next((e for e in said if re.search(r"\bcycle \d+:", e)), None)
    if cycle:
        print(f"  first {cycle}")
    nan = float("nan")
    print(
        f"  process start -> cache synced {synced if synced is not None else nan:.1f} s"
        f" (peak RSS {synced_rss:,.0f} MiB); -> first cycle"
        f" {cycled if cycled is not None else nan:.1f} s; peak RSS {rss:,.0f} MiB"
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--limit", type=float, default=600.0, help="seconds for each phase")
    parser.add_argument(
        "--create-concurrency",
        type=int,
        default=64,
        metavar="N",
        help="pod creates in flight at once (the same for both schedulers)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure both schedulers this many times, alternating (the machine's other load "
        "varies); the best of each is compared too",
    )
    parser.add_argument(
        "--no-backlog",
        action="store_true",
        help="skip the secondary figure (daemon start with the pods already there)",
    )
    parser.add_argument(
        "--sync-only",
        type=int,
        metavar="BOUND",
        help="only start-up: BOUND running pods of another scheduler besides the pending ones; "
        "time to a synced cache and the daemon's RSS (dry-run, nothing bound)",
    )
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        help="profile the daemon while the pods are created and bound (py-spy record, "
        "collapsed stacks) into FILE; needs py-spy in the environment (pip install py-spy)",
    )
    parser.add_argument(
        "--logs", metavar="DIR", help="keep the daemon's logs there (default: thrown away)"
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="also measure the daemon with its flight recorder on (pumice run --record DIR) "
        "after each plain run, and print the recorder's overhead",
    )
    parser.add_argument("--greedy-binder", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.greedy_binder:
        return await greedy_binder(args.greedy_binder)
    with tempfile.TemporaryDirectory(prefix="pumice-bench-") as scratch:
        tmp = args.logs or scratch
        Path(tmp).mkdir(parents=True, exist_ok=True)
        cluster, kubeconfig = Path(tmp) / "cluster.yaml", Path(tmp) / "kubeconfig"
        # Pending pods are seeded only for --sync-only: the other phases create theirs.
        seeded = args.pods if args.sync_only is not None else 0
        write_cluster(cluster, args.nodes, seeded, args.sync_only or 0)
        config = Path(tmp) / "scheduler.yaml"
        conf = Path(__file__).resolve().parent.parent / "conf" / "scheduler.yaml"
        config.write_text(conf.read_text() + "\nscheduler:\n  period: 100ms\n")
        server, url = await start_server(cluster, kubeconfig)
        try:
            if args.sync_only is not None:
                print(f"cluster: {args.nodes} nodes, {args.pods} pending pods per scheduler")
                print(f"  and {args.sync_only} running pods of another scheduler")
                await sync_only(kubeconfig, config, args.limit)
                return 0
            print(
                f"cluster: {args.nodes} nodes; {args.pods} pods created per scheduler,"
                f" {args.create_concurrency} creates in flight"
            )
            print(
                "daemon: pumice run --config <bundled conf/scheduler.yaml + period 100ms>"
                " --http-address 127.0.0.1:0 (no --qps/--burst: the defaults)"
            )
            async with aiohttp.ClientSession() as http:
                writes = WriteLog(http, url)
                width = args.create_concurrency
                rates: list[tuple[float, float]] = []
                for r in range(args.rounds):
                    suffix = f"-{r + 1}" if args.rounds > 1 else ""
                    if suffix:
                        print(f"round {r + 1}:")
                    bare = await greedy(
                        kubeconfig, writes, args.pods, args.limit, width, f"greedy{suffix}"
                    )
                    ours = await daemon(
                        kubeconfig,
                        config,
                        writes,
                        args.pods,
                        args.limit,
                        width,
                        f"pumice{suffix}",
                        args.py_spy,
                    )
                    rates.append((bare, ours))
                    if bare:
                        print(f"daemon / bare binder: {ours / bare:.2f}x (creation -> bound)")
                    if args.record:
                        await recorded(kubeconfig, config, writes, args, suffix, ours)
                if len(rates) > 1:
                    bare, ours = max(b for b, _ in rates), max(o for _, o in rates)
                    print(
                        f"best of {len(rates)}: bare binder {bare:,.0f} pods/s, daemon"
                        f" {ours:,.0f} pods/s, daemon / bare binder {ours / max(bare, 1e-9):.2f}x"
                    )
                if not args.no_backlog:
                    await daemon_backlog(kubeconfig, config, writes, args.pods, args.limit, width)
        finally:
            server.send_signal(signal.SIGTERM)
            await server.wait()
    return 0


if __name__ == "__main__":
    os.environ.pop("KUBECONFIG", None)
    sys.exit(asyncio.run(main()))
