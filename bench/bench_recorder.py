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
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pumice.cache import ClusterCache
from pumice.commands.config_commands import load_checked
from pumice.daemon.collector import CollectorPolicy
from pumice.daemon.recorder import Recorder, tee
from pumice.framework import run_actions
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


class Driver:
    """One cache driven as the daemon drives it: ``step`` runs one cycle."""

    def __init__(self, args: argparse.Namespace, directory: Path | None) -> None:
        self.args = args
        self.config, self.host = load_checked(None)
        self.recorder = Recorder(RecordSettings(str(directory))) if directory else None
        make = self.recorder.cache if self.recorder is not None else ClusterCache
        self.cache = make("pumice", volcano=True, default_queue="default")
        for i in range(args.nodes):
            self.cache.nodes.on_add(node(f"node-{i:05d}"))
        for i in range(args.running):
            other = pod(f"running-{i}", "other", "default-scheduler", f"node-{i % args.nodes:05d}")
            self.cache.assigned_pods.on_add(self.cache.slim_pod(other))
        self.placed: list[tuple[str, str]] = []
        self.bound = 0
        self.seconds = 0.0
        """The driving thread's CPU time over the cycles."""

    def step(self, cycle: int) -> None:
        cache, recorder, started = self.cache, self.recorder, time.thread_time()
        for name, node_name in self.placed:  # last cycle's binds: accepted, seen on the watch
            cache.finish_binding(f"pumice-{name}")
            cache.pending_pods.on_delete(cache.slim_pod(pod(name, "pumice", "pumice")))
            cache.assigned_pods.on_add(cache.slim_pod(pod(name, "pumice", "pumice", node_name)))
        for i in range(self.args.pods):
            cache.pending_pods.on_add(cache.slim_pod(pod(f"p{cycle}-{i}", "pumice", "pumice")))
        cache.tidy()
        snapshot = cache.snapshot()
        record = recorder.begin(snapshot, cycle + 1, self.config) if recorder else None
        committer = RecordingCommitter(quiet=True)
        rng = record.rng() if record is not None else None
        session = Session.open(
            snapshot,
            self.config,
            self.host,
            committer=tee(committer, record),
            rng=rng,
            time_hooks=True,
        )
        try:
            run_actions(session)
            session.close()
        finally:
            session.dispose()
        if recorder is not None and record is not None:
            recorder.finish(record)
        self.placed = [(d.task.name, d.node) for d in committer.of_kind("bind")]
        for d in committer.of_kind("bind"):
            cache.assume(d.task.uid, node=d.node)
        self.bound += len(self.placed)
        self.seconds += time.thread_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--running", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=200, help="pods arriving per cycle")
    parser.add_argument("--cycles", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(
        f"cache: {args.nodes} nodes, {args.running} pods of another scheduler running;"
        f" {args.cycles} cycles of {args.pods} pods arriving (bundled config); the plain and the"
        " recorded cache driven cycle by cycle in turn (the machine's load hits both alike)"
    )
    ratios = []
    with tempfile.TemporaryDirectory(prefix="pumice-bench-recorder-") as tmp:
        for r in range(args.rounds):
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            plain, recorded = Driver(args, None), Driver(args, Path(tmp) / f"rec-{r}")
            collector = CollectorPolicy()  # as the daemon: the heap frozen, collections at turns
            collector.synced()
            for cycle in range(args.cycles):
                collector.turn()
                for driver in (plain, recorded) if cycle % 2 == 0 else (recorded, plain):
                    driver.step(cycle)
            collector.stop()
            assert recorded.recorder is not None
            recorded.recorder.close()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            child = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
            a = plain.seconds / max(1, plain.bound) * 1e3
            b = recorded.seconds / max(1, recorded.bound) * 1e3
            ratios.append(b / a - 1)
            print(
                f"round {r + 1}: plain {a:.3f}, recorded {b:.3f} ms of the driving thread's CPU"
                f" per pod ({plain.bound} and {recorded.bound} pods) = {ratios[-1] * 100:+.1f} %;"
                f" the recorder's process {child / max(1, recorded.bound) * 1e3:.3f} ms per pod"
                " (its start-up included)"
            )
    print(
        f"recorder's cost to the daemon's thread: median {statistics.median(ratios) * 100:+.1f} %"
        f" over {len(ratios)} rounds"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
