"""Benchmark the simulated API server through the real kubernetes_asyncio client on loopback.

Starts ``pumice sim-cluster`` in a subprocess (its own core), seeded with pending pods, then:

1. binds every pod with ``create_namespaced_pod_binding`` (``_preload_content=False``, as
   pumice's binder does) from a pool of concurrent workers while one pod watch is open;
   prints binds/s;
2. replays the resulting history to fresh watches (``Watch(return_type="object")``, one and
   then several at once) and prints watch events/s received by the client.

Run with ``make bench`` or ``.venv/bin/python -P bench/bench_sim.py [--pods N]``; the whole run
is bounded to well under a minute. Target: at least 2,000 binds/s with the client configured
as pumice configures it (``trust_env`` off, see ``client``); the stock client is reported too.
The server's own CPU per bind and per watch event is read from /proc, which shows how far
the server is from being the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.watch import Watch

TARGET_BINDS = 2000.0
RUN_LIMIT = 50.0  # seconds; the whole run normally takes under 15


def write_cluster(path: Path, pods: int, nodes: int) -> None:
    docs: list[dict[str, Any]] = []
    for i in range(nodes):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}"},
                "status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "500"}},
            }
        )
    for i in range(pods):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{i}", "namespace": "bench"},
                "spec": {
                    "schedulerName": "pumice",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:1.36",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        }
                    ],
                },
            }
        )
    # JSON is valid YAML and much faster to load
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))


async def start_server(cluster: Path, kubeconfig: Path, history: int) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys; from pumice.cli import main; sys.exit(main())",
        "sim-cluster",
        "--cluster",
        str(cluster),
        "--kubeconfig-out",
        str(kubeconfig),
        "--history-size",
        str(history),
        "--pod-start-delay",
        "3600",  # keep the kubelet simulation out of the measurement
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line.startswith(b"pumice sim-cluster: serving"):
        raise SystemExit(f"sim-cluster did not start: {line!r}")
    await asyncio.wait_for(proc.stdout.readline(), 10)
    return proc


async def client(kubeconfig: Path, trust_env: bool = True) -> k8s_client.ApiClient:
    """A stock ApiClient, or one whose aiohttp session has ``trust_env`` off.

    kubernetes_asyncio opens its session with ``trust_env=True``, which makes aiohttp look up
    ~/.netrc and the proxy environment in a worker thread on every request; that costs more
    client CPU than the request itself on loopback.
    """
    configuration = k8s_client.Configuration()
    await k8s_config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=configuration
    )
    configuration.connection_pool_maxsize = 256
    api = k8s_client.ApiClient(configuration=configuration)
    if not trust_env:
        stock = api.rest_client.pool_manager
        api.rest_client.pool_manager = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=256), trust_env=False, read_bufsize=2**21
        )
        await stock.close()
    return api


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def count_watch(api: k8s_client.ApiClient, rv: str, expected: int) -> float:
    """Seconds until ``expected`` pod events arrived on a watch from ``rv``."""
    core = k8s_client.CoreV1Api(api)
    watch = Watch(return_type="object")
    seen = 0
    start = time.perf_counter()
    try:
        async for event in watch.stream(
            core.list_namespaced_pod, "bench", resource_version=rv, timeout_seconds=60
        ):
            if event["type"] != "BOOKMARK":
                seen += 1
                if seen >= expected:
                    break
    finally:
        watch.stop()
        await watch.close()
    if seen < expected:
        raise SystemExit(f"watch ended after {seen} of {expected} events")
    return time.perf_counter() - start


async def bind_all(api: k8s_client.ApiClient, pods: range, nodes: int, workers: int) -> float:
    core = k8s_client.CoreV1Api(api)
    queue = list(pods)
    failures: list[int] = []

    async def worker() -> None:
        while queue:
            i = queue.pop()
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": f"pod-{i}", "namespace": "bench"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": f"node-{i % nodes}"},
            }
            resp = await core.create_namespaced_pod_binding(
                f"pod-{i}", "bench", body, _preload_content=False
            )
            await resp.read()
            if resp.status != 201:
                failures.append(resp.status)
            resp.release()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = time.perf_counter() - start
    if failures:
        raise SystemExit(f"{len(failures)} binds failed: {sorted(set(failures))}")
    return elapsed


async def bind_phase(
    label: str, kubeconfig: Path, pods: range, args: argparse.Namespace, server_pid: int
) -> tuple[float, str]:
    """Bind ``pods``; returns binds/s and the resourceVersion from before the first bind."""
    async with await client(kubeconfig, trust_env=label == "stock") as api:
        core = k8s_client.CoreV1Api(api)
        listed = await core.list_namespaced_pod("bench", limit=1, _preload_content=False)
        rv = json.loads(await listed.read())["metadata"]["resourceVersion"]
        listed.release()
        # one live pod watch in the same process, as the scheduler keeps, sees every bind
        live = asyncio.ensure_future(count_watch(api, rv, len(pods)))
        await asyncio.sleep(0.2)
        cpu_before = cpu_seconds(server_pid)
        seconds = await bind_all(api, pods, args.nodes, args.workers)
        server_cpu = cpu_seconds(server_pid) - cpu_before
        await live
    rate = len(pods) / seconds
    print(
        f"binds ({label} client): {len(pods)} in {seconds:.2f} s = {rate:,.0f} binds/s; "
        f"server CPU {server_cpu / len(pods) * 1e6:.0f} us/bind"
    )
    return rate, rv


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5000, help="pods bound per phase")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--workers", type=int, default=64, help="concurrent binds")
    parser.add_argument("--watchers", type=int, default=8)
    args = parser.parse_args()
    n = args.pods

    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        cluster = Path(tmp) / "cluster.yaml"
        kubeconfig = Path(tmp) / "kubeconfig"
        write_cluster(cluster, 2 * n, args.nodes)
        proc = await start_server(cluster, kubeconfig, history=4 * n)
        try:
            print(
                f"sim-cluster in its own process, {args.nodes} nodes, {2 * n} pending pods; "
                f"{args.workers} concurrent binds, one pod watch open"
            )
            stock, before = await bind_phase("stock", kubeconfig, range(n), args, proc.pid)
            lean, _ = await bind_phase(
                "trust_env=False", kubeconfig, range(n, 2 * n), args, proc.pid
            )
            async with await client(kubeconfig) as api:
                # replay the binds of both phases (2n MODIFIED events) from the seeded state
                total = await _replay(api, before, 2 * n, 1)
                print(f"watch: {2 * n} events to 1 watcher = {total:,.0f} events/s")
                cpu_before = cpu_seconds(proc.pid)
                total = await _replay(api, before, 2 * n, args.watchers)
                server_cpu = cpu_seconds(proc.pid) - cpu_before
                print(
                    f"watch: {2 * n} events to each of {args.watchers} concurrent watchers = "
                    f"{total:,.0f} events/s in total; server CPU "
                    f"{server_cpu / (2 * n * args.watchers) * 1e6:.1f} us/event"
                )
        finally:
            proc.terminate()
            await proc.wait()
    # The stock client spends most of its time in aiohttp's per-request netrc and proxy
    # lookups (trust_env); the target is judged on the client as pumice configures it.
    verdict = "meets" if lean >= TARGET_BINDS else "MISSES"
    print(
        f"target {TARGET_BINDS:,.0f} binds/s: {verdict} it with trust_env=False "
        f"({lean:,.0f}/s); stock client {stock:,.0f}/s"
    )
    return 0 if lean >= TARGET_BINDS else 1


async def _replay(api: k8s_client.ApiClient, rv: str, events: int, watchers: int) -> float:
    start = time.perf_counter()
    await asyncio.gather(*(count_watch(api, rv, events) for _ in range(watchers)))
    return events * watchers / (time.perf_counter() - start)


async def bounded() -> int:
    try:
        return await asyncio.wait_for(main(), RUN_LIMIT)
    except TimeoutError:
        print(f"bench_sim: gave up after {RUN_LIMIT:.0f} s", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(bounded()))
