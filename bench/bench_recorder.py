"""The flight recorder's cost to the daemon, in one process, without an API server.

``bench_daemon.py --record`` measures the recorder end to end, but on a shared 2-core machine
its rates move by tens of percent from one run to the next. This bench isolates what the
recorder adds to the daemon's own thread: it drives a cache as the daemon does — N nodes, M pods
of another scheduler running, then cycles in which P pods arrive pending, a session (the bundled
config) places them, the cache assumes them, the binds are confirmed and the watch moves them to
the assigned side — once with a plain cache and once with the recorder's journaled cache
(``pumice run --record``: the journal, the cycle marks, the decisions, the pipe to the recorder's
process), alternating, and reports the CPU time of the thread that does it all (``thread_time``:
other processes' load does not count), per pod. The recorder's own process is measured apart
(its CPU until it has written everything).

Run: ``.venv/bin/python -P bench/bench_recorder.py [--nodes 2000] [--running 5000] [--pods 200]
[--cycles 25] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pumice.cache import ClusterCache
from pumice.commands.common import load_checked
from pumice.daemon.recorder import Recorder, tee
from pumice.framework.committer import RecordingCommitter
from pumice.framework.config import RecordSettings
from pumice.framework.session import Session

Obj = dict[str, Any]


def node(name: str) -> Obj:
    capacity = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str, namespace: str, scheduler: str, node_name: str | None = None) -> Obj:
    spec: Obj = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            }
        ],
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    meta = {"name": name, "namespace": namespace, "uid": f"{namespace}-{name}"}
    status = {"phase": "Running"} if node_name else {"phase": "Pending"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def run(args: argparse.Namespace, recorded: bool, directory: Path) -> tuple[float, int]:
    """One run: the driving thread's CPU seconds over the cycles, and the pods placed."""
    config, host = load_checked(None)
    recorder = Recorder(RecordSettings(str(directory))) if recorded else None
    make = recorder.cache if recorder is not None else ClusterCache
    cache = make("pumice", volcano=True, default_queue="default")
    for i in range(args.nodes):
        cache.nodes.on_add(node(f"node-{i:05d}"))
    for i in range(args.running):
        other = pod(f"running-{i}", "other", "default-scheduler", f"node-{i % args.nodes:05d}")
        cache.assigned_pods.on_add(cache.slim_pod(other))
    gc.collect()
    gc.freeze()  # as the daemon does once its cache is synced
    placed: list[tuple[str, str]] = []
    bound = 0
    started = time.thread_time()
    for cycle in range(args.cycles):
        for name, node_name in placed:  # last cycle's binds: accepted, then seen on the watch
            uid = f"pumice-{name}"
            cache.finish_binding(uid)
            cache.pending_pods.on_delete(cache.slim_pod(pod(name, "pumice", "pumice")))
            cache.assigned_pods.on_add(cache.slim_pod(pod(name, "pumice", "pumice", node_name)))
        for i in range(args.pods):
            cache.pending_pods.on_add(cache.slim_pod(pod(f"p{cycle}-{i}", "pumice", "pumice")))
        cache.tidy()
        snapshot = cache.snapshot()
        record = recorder.begin(snapshot, cycle + 1, config) if recorder is not None else None
        committer = RecordingCommitter(quiet=True)
        rng = record.rng() if record is not None else None
        session = Session.open(
            snapshot, config, host, committer=tee(committer, record), rng=rng, time_hooks=True
        )
        try:
            session.run_actions()
            session.close()
        finally:
            session.dispose()
        if recorder is not None and record is not None:
            recorder.finish(record)
        placed = [(d.task.name, d.node) for d in committer.of_kind("bind")]
        for d in committer.of_kind("bind"):
            cache.assume(d.task.uid, d.node)
        bound += len(placed)
    used = time.thread_time() - started
    gc.unfreeze()
    if recorder is not None:
        recorder.close()
    return used, bound


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--running", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=200, help="pods arriving per cycle")
    parser.add_argument("--cycles", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3, help="plain and recorded, alternating")
    args = parser.parse_args()
    print(
        f"cache: {args.nodes} nodes, {args.running} pods of another scheduler running;"
        f" {args.cycles} cycles of {args.pods} pods arriving (bundled config)"
    )
    plain: list[float] = []
    recorded: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pumice-bench-recorder-") as tmp:
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            for with_recorder in order:
                children = resource.getrusage(resource.RUSAGE_CHILDREN)
                used, bound = run(args, with_recorder, Path(tmp) / f"rec-{r}")
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                per_pod = used / max(1, bound) * 1e3
                (recorded if with_recorder else plain).append(per_pod)
                extra = ""
                if with_recorder:
                    child = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
                    extra = f"; the recorder's process {child:.1f} s in all (start-up included)"
                print(
                    f"round {r + 1}, {'recorded' if with_recorder else 'plain   '}: {bound} pods,"
                    f" {used:.2f} s of the driving thread's CPU = {per_pod:.3f} ms per pod{extra}"
                )
    if plain and recorded:
        ratios = [b / a - 1 for a, b in zip(plain, recorded, strict=True)]
        median = statistics.median(ratios) * 100
        print(
            f"recorder's cost to the daemon's thread: median {median:+.1f} %"
            f" (rounds: {', '.join(f'{x * 100:+.1f}' for x in ratios)});"
            f" {statistics.median(plain):.3f} -> {statistics.median(recorded):.3f} ms per pod"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
