"""Benchmark pumice.kube against the simulated API server in its own process.

Starts ``pumice sim-cluster`` (seeded with pending pods, as ``bench_sim.py`` does), then:

1. an ``Informer`` on pods lists them all (pages of 500) and reports the initial sync rate;
2. ``Binder`` binds every pod (bounded concurrency, uid precondition) while that informer
   watches; binds/s, and the informer's watch events/s until it has seen every bind;
3. the same binds through a stock kubernetes_asyncio ApiClient (``trust_env`` on), for the
   side-by-side figure: what turning ``trust_env`` off in pumice's own session is worth.

Run with ``make bench`` or ``.venv/bin/python -P bench/bench_kube.py [--pods N]``; bounded to
well under a minute. Tests never assert on these figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sim import cpu_seconds, start_server, write_cluster

from pumice.kube import PODS, Binder, BindOutcome, Informer, KubeSettings, connect

RUN_LIMIT = 50.0


class Counter:
    """An informer handler that only counts."""

    def __init__(self) -> None:
        self.adds = 0
        self.bound = 0

    def on_add(self, obj: dict[str, Any]) -> None:
        self.adds += 1

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if new["spec"].get("nodeName") and not old["spec"].get("nodeName"):
            self.bound += 1

    def on_delete(self, obj: dict[str, Any]) -> None:
        pass


async def pumice_phase(kubeconfig: Path, pods: range, args: argparse.Namespace, pid: int) -> float:
    kube = await connect(KubeSettings(kubeconfig=str(kubeconfig), qps=0, burst=1))
    counter = Counter()
    informer = Informer(kube, PODS, counter, name="pods", resync_period=0)
    start = time.perf_counter()
    task = asyncio.create_task(informer.run())
    try:
        await informer.synced.wait()
        listed = counter.adds
        seconds = time.perf_counter() - start
        print(
            f"informer: initial list of {listed:,} pods in {seconds:.2f} s "
            f"= {listed / seconds:,.0f} objects/s"
        )
        uids = {key[1]: obj["metadata"]["uid"] for key, obj in informer.store.items()}
        binder = Binder(kube, concurrency=args.workers)
        cpu_before = cpu_seconds(pid)
        own_before = time.process_time()
        start = time.perf_counter()
        results = await asyncio.gather(
            *(
                binder.bind(
                    namespace="bench",
                    name=f"pod-{i}",
                    uid=uids[f"pod-{i}"],
                    node=f"node-{i % args.nodes}",
                )
                for i in pods
            )
        )
        bind_seconds = time.perf_counter() - start
        server_cpu = cpu_seconds(pid) - cpu_before
        own_cpu = time.process_time() - own_before
        bad = [r for r in results if r.outcome is not BindOutcome.BOUND]
        if bad:
            raise SystemExit(f"{len(bad)} binds failed: {bad[0]}")
        while counter.bound < len(pods):
            await asyncio.sleep(0.005)
        seen_seconds = time.perf_counter() - start
        rate = len(pods) / bind_seconds
        print(
            f"binds (pumice.kube Binder): {len(pods):,} in {bind_seconds:.2f} s = "
            f"{rate:,.0f} binds/s; client CPU {own_cpu / len(pods) * 1e6:.0f} us/bind "
            f"(informer included), server CPU {server_cpu / len(pods) * 1e6:.0f} us/bind"
        )
        print(
            f"informer: every bind seen after {seen_seconds:.2f} s "
            f"({informer.stats.events:,} watch events)"
        )
        return rate
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await kube.close()


async def stock_phase(kubeconfig: Path, pods: range, args: argparse.Namespace) -> float:
    configuration = k8s_client.Configuration()
    await k8s_config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=configuration
    )
    async with k8s_client.ApiClient(configuration=configuration) as api:
        core = k8s_client.CoreV1Api(api)
        todo = list(pods)

        async def worker() -> None:
            while todo:
                i = todo.pop()
                body = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": f"pod-{i}", "namespace": "bench"},
                    "target": {"kind": "Node", "name": f"node-{i % args.nodes}"},
                }
                resp = await core.create_namespaced_pod_binding(
                    f"pod-{i}", "bench", body, _preload_content=False
                )
                await resp.read()
                resp.release()

        own_before = time.process_time()
        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.workers)))
        rate = len(pods) / (time.perf_counter() - start)
        own_cpu = time.process_time() - own_before
    print(
        f"binds (stock kubernetes_asyncio, trust_env on): {len(pods):,} = {rate:,.0f} binds/s; "
        f"client CPU {own_cpu / len(pods) * 1e6:.0f} us/bind (no watch)"
    )
    return rate


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5000, help="pods bound per phase")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--workers", type=int, default=64, help="concurrent binds")
    args = parser.parse_args()
    n = args.pods
    with tempfile.TemporaryDirectory(prefix="bench-kube-") as tmp:
        cluster = Path(tmp) / "cluster.yaml"
        kubeconfig = Path(tmp) / "kubeconfig"
        write_cluster(cluster, 2 * n, args.nodes)
        proc = await start_server(cluster, kubeconfig, history=4 * n)
        try:
            ours = await pumice_phase(kubeconfig, range(n), args, proc.pid)
            stock = await stock_phase(kubeconfig, range(n, 2 * n), args)
        finally:
            proc.terminate()
            await proc.wait()
    print(f"pumice.kube binds at {ours / stock:.1f}x the stock client's rate")
    return 0


async def bounded() -> int:
    try:
        return await asyncio.wait_for(main(), RUN_LIMIT)
    except TimeoutError:
        print(f"bench_kube: gave up after {RUN_LIMIT:.0f} s", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(bounded()))
