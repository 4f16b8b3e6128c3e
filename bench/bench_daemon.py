"""The daemon end to end on the simulated API server, beside a bare greedy binder.

One ``pumice sim-cluster`` process (its own core) serves N nodes and two sets of M pending pods:
``greedy`` pods for a bare binder (no scheduling: the first node that fits, bound through the
same ``pumice.kube`` Binder) and ``pumice`` pods for ``pumice run`` started as a process with
the bundled config. Figures, in the same run and against the same server:

* the bare binder: list → all bound, pods/s;
* the daemon: process start → all bound, pods/s (and the start → first bind time, which is
  start-up plus the initial list of every informer), cycles, and its peak RSS (VmHWM).

Run: ``.venv/bin/python -P bench/bench_daemon.py [--nodes 5000] [--pods 10000] [--limit 600]``.
It prints figures and never fails; a run that is not done within ``--limit`` seconds reports
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

from pumice.kube import PODS, Binder, BindOutcome, KubeSettings, connect
from pumice.model import Resource, pod_requests

Obj = dict[str, Any]


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
        for i in range(pods):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"{scheduler}-{i:05d}", "namespace": scheduler},
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
            )
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


async def accepted_binds(http: aiohttp.ClientSession, url: str, namespace: str) -> int:
    async with http.get(f"{url}/sim/writes") as resp:
        items = (await resp.json())["items"]
    return sum(
        1
        for w in items
        if w["resource"] == "pods/binding" and w["code"] == 201 and w["namespace"] == namespace
    )


async def greedy(kubeconfig: Path, pods: int) -> float:
    """List nodes and the greedy pods, bind each to the first node it fits; pods/s."""
    kube = await connect(KubeSettings(kubeconfig=str(kubeconfig), qps=1e9, burst=10**9))
    try:
        start = time.perf_counter()
        nodes = (await kube.request("GET", "/api/v1/nodes"))["items"]
        pending = (
            await kube.request(
                "GET", PODS.path("greedy"), query={"fieldSelector": "spec.nodeName="}
            )
        )["items"]
        free = [
            Resource.from_k8s({k: v for k, v in n["status"]["allocatable"].items() if k != "pods"})
            for n in nodes
        ]
        binder = Binder(kube, concurrency=64)
        cursor = 0
        jobs = []
        for p in pending:
            need = pod_requests(p)
            for _ in range(len(nodes)):
                if need.less_equal(free[cursor]):
                    break
                cursor = (cursor + 1) % len(nodes)
            free[cursor] = free[cursor].sub(need, clip=True)
            meta = p["metadata"]
            jobs.append(
                binder.bind(
                    meta["namespace"], meta["name"], meta["uid"], nodes[cursor]["metadata"]["name"]
                )
            )
        results = await asyncio.gather(*jobs)
        elapsed = time.perf_counter() - start
    finally:
        await kube.close()
    bound = sum(1 for r in results if r.outcome is BindOutcome.BOUND)
    rate = bound / elapsed
    print(f"bare greedy binder: {bound}/{pods} pods bound in {elapsed:.2f} s = {rate:,.0f} pods/s")
    return rate


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def daemon(
    kubeconfig: Path, config: Path, url: str, pods: int, limit: float, *extra: str
) -> float:
    """``pumice run`` as a process until every pumice pod is bound (or ``limit``); pods/s."""
    log = config.parent / "daemon.log"
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "pumice.cli", "run",
        "--kubeconfig", str(kubeconfig), "--config", str(config), *extra,
        stdout=log.open("wb"), stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    first: float | None = None
    bound = 0
    rss = float("nan")
    async with aiohttp.ClientSession() as http:
        while time.perf_counter() - start < limit:
            await asyncio.sleep(0.5)
            if proc.returncode is not None:
                break
            bound = await accepted_binds(http, url, "pumice")
            rss = peak_rss_mib(proc.pid)
            if bound and first is None:
                first = time.perf_counter() - start
            if bound >= pods:
                break
    elapsed = time.perf_counter() - start
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    cycle_lines = [line for line in log.read_text().splitlines() if ": cycle " in line]
    cycles = len(cycle_lines)
    for line in cycle_lines[:3]:
        print("  " + line.split(": ", 3)[-1])
    done = "" if bound >= pods else f" (stopped at the {limit:.0f} s limit)"
    first_text = "never" if first is None else f"after {first:.2f} s"
    rate = bound / elapsed
    print(f"pumice daemon: {bound}/{pods} pods bound in {elapsed:.2f} s = {rate:,.0f} pods/s{done}")
    print(f"  first bind {first_text}; {cycles} cycles with binds; peak RSS {rss:,.0f} MiB")
    return bound / elapsed


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
        "--kubeconfig", str(kubeconfig), "--config", str(config), "--qps", "1e9",
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
    parser.add_argument("--limit", type=float, default=600.0, help="seconds for the daemon")
    parser.add_argument(
        "--sync-only",
        type=int,
        metavar="BOUND",
        help="only start-up: BOUND running pods of another scheduler besides the pending ones; "
        "time to a synced cache and the daemon's RSS (dry-run, nothing bound)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pumice-bench-") as tmp:
        cluster, kubeconfig = Path(tmp) / "cluster.yaml", Path(tmp) / "kubeconfig"
        write_cluster(cluster, args.nodes, args.pods, args.sync_only or 0)
        config = Path(tmp) / "scheduler.yaml"
        conf = Path(__file__).resolve().parent.parent / "conf" / "scheduler.yaml"
        config.write_text(conf.read_text() + "\nscheduler:\n  period: 100ms\n")
        print(f"cluster: {args.nodes} nodes, {args.pods} pending pods per scheduler")
        server, url = await start_server(cluster, kubeconfig)
        try:
            if args.sync_only is not None:
                print(f"  and {args.sync_only} running pods of another scheduler")
                await sync_only(kubeconfig, config, args.limit)
                return 0
            bare = await greedy(kubeconfig, args.pods)
            # The same unthrottled client as the bare binder (the daemon's default is 50 QPS).
            ours = await daemon(
                kubeconfig, config, url, args.pods, args.limit, "--qps", "1e9", "--burst", "1000000"
            )
            print(f"daemon / bare binder: {ours / bare:.2f}x" if bare else "")
        finally:
            server.send_signal(signal.SIGTERM)
            await server.wait()
    return 0


if __name__ == "__main__":
    os.environ.pop("KUBECONFIG", None)
    sys.exit(asyncio.run(main()))
