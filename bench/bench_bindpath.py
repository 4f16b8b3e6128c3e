"""The daemon's own work for each bind, in process, without the request.

``bench_daemon.py`` measures the daemon end to end, where the bind request itself (the same
``pumice.kube`` Binder as the bare binder's) and the machine's neighbours swamp a change of a
few microseconds per pod. This isolates what the daemon adds around each bind:

* a worker thread hands N binds over through ``LoopCommitter`` (as ``Statement.commit`` does);
* on the event loop ``BackgroundWork`` assumes each pod in a real ``ClusterCache`` (5,000
  nodes, N pending pods), sends it through a binder that answers BOUND at once (one loop turn),
  and settles it: the cache, the scheduling-SLI histogram, the ``Scheduled`` event into the
  status lane (whose writes cost nothing here);
* the cycle's metrics are observed (``observe_cycle``) and the lane drained.

It prints the process CPU per pod for that whole path, and ``ClusterCache.assume`` alone (the
cache's part, in a fresh cache), per round; the difference is the daemon's own. Run it with
another checkout's interpreter to compare (that checkout's ``pumice`` is imported; the
stand-ins below follow its interfaces):

    .venv/bin/python -P bench/bench_bindpath.py [--pods 10000] [--rounds 3]
    /other/checkout/.venv/bin/python -P bench/bench_bindpath.py
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemonkit import pending_pod

from pumice.cache import ClusterCache
from pumice.daemon.binding import BackgroundWork
from pumice.daemon.committers import LoopCommitter
from pumice.daemon.metrics import DaemonMetrics
from pumice.daemon.outcome import CycleOutcome
from pumice.kube import BindOutcome, BindResult

NODES = 5000


class InstantBinder:
    """Answers every bind BOUND after one turn of the loop (no request)."""

    concurrency = 64

    async def bind(self, *, namespace: str, name: str, uid: str, node: str) -> BindResult:
        await asyncio.sleep(0)
        return BindResult(BindOutcome.BOUND, node)


class FreeWriter:
    """Status writes that cost one loop turn."""

    async def _written(self) -> bool:
        await asyncio.sleep(0)
        return True

    def pod_event(self, pod: dict[str, Any], **_: object) -> Any:
        return self._written()


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    capacity = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-uid-{i}", "resourceVersion": "1",
                     "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }  # fmt: skip


def cache_with_pods(pods: int) -> ClusterCache:
    cache = ClusterCache("pumice", volcano=False, default_queue="default")
    for i in range(NODES):
        cache.nodes.on_add(node(i))
    for i in range(pods):
        pod = pending_pod("pumice", "backlog", i)
        pod["metadata"].update(
            uid=f"uid-{i}", resourceVersion=str(10 + i), creationTimestamp="2026-11-28T00:00:00Z"
        )
        pod["status"] = {"phase": "Pending"}
        cache.pending_pods.on_add(cache.slim_pod(pod))
    return cache


async def one_round(pods: int) -> tuple[float, float]:
    """CPU seconds of the whole path, and of ``ClusterCache.assume`` alone."""
    cache = cache_with_pods(pods)
    daemon = types.SimpleNamespace(
        work=None, failures=0, synced=True, reloader=None, informers=[], cache=cache, leading=True
    )
    metrics = DaemonMetrics(daemon)
    work = BackgroundWork(cache, InstantBinder(), None, FreeWriter())  # type: ignore[arg-type]
    work.on_bound_uid = metrics.bound
    daemon.work = work
    committer = LoopCommitter(asyncio.get_running_loop(), work.bind, work.evict, work.nominate)
    tasks = [
        types.SimpleNamespace(uid=f"uid-{i}", namespace="backlog", name=f"pumice-{i:05d}")
        for i in range(pods)
    ]
    metrics.attempting([t.uid for t in tasks], time.monotonic())

    def session() -> None:
        for i, task in enumerate(tasks):
            committer.bind(task, f"node-{i % NODES:05d}")  # type: ignore[arg-type]

    started = time.process_time()
    await asyncio.to_thread(session)
    await asyncio.sleep(0)
    while work.tasks or work.in_flight:
        await asyncio.sleep(0.001)
    metrics.observe_cycle(CycleOutcome(binds=pods, seconds=1.0))
    await work.lane.drain(60.0)
    whole = time.process_time() - started
    if work.outcomes.get("BOUND") != pods:
        raise SystemExit(f"not every bind settled: {work.outcomes}")
    fresh = cache_with_pods(pods)
    started = time.process_time()
    for i in range(pods):
        fresh.assume(f"uid-{i}", node=f"node-{i % NODES:05d}")
    return whole, time.process_time() - started


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the lane's shedding warnings
    rows = [await one_round(args.pods) for _ in range(args.rounds)]
    per_pod = [(w / args.pods * 1e6, a / args.pods * 1e6) for w, a in rows]
    best = min(w for w, _ in per_pod)
    assume = min(a for _, a in per_pod)
    import pumice

    print(
        f"pumice from {Path(pumice.__file__).resolve().parent.parent}; --pods {args.pods}"
        f" --rounds {args.rounds};"
        f" whole path {', '.join(f'{w:.1f}' for w, _ in per_pod)} µs per pod (best {best:.1f});"
        f" ClusterCache.assume alone {assume:.1f}; the daemon's own {best - assume:.1f} µs per pod;"
        f" load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
