"""Benchmark ``pumice simulate --until-done`` on a week of jobs.

Writes a cluster of 500 nodes (32 cpu, 128Gi, 110 pods) with three queues (``prod`` weight 2,
``research`` and ``batch`` weight 1) and a trace (JSON lines) of 10,000 jobs of 5 pods each
(50,000 pods) arriving at random over a simulated week, each pod asking for 1, 2, 4 or 8 cpu
(4Gi of memory per cpu) for a runtime drawn uniformly around a mean chosen so that the work
offered is about 80 % of the cluster's cpu over the week. The trace is the same for a seed.
Then it runs ``pumice simulate CLUSTER --until-done --trace TRACE --output json`` in a
subprocess with the shipped default configuration (period 1 s) and prints the wall time of
the whole command, its CPU time, peak RSS, and the run's own figures (makespan, cycles,
sessions, waits, mean utilisation). It never fails on a figure.

Run with ``make bench`` or ``.venv/bin/python -P bench/bench_whatif.py [--nodes N]
[--jobs J] [--pods P] [--load 0.8] [--days 7] [--seed S] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NODE_CPU = 32
QUEUES = {"prod": 2, "research": 1, "batch": 1}
SIZES = (1, 2, 4, 8)


def cluster(nodes: int) -> dict[str, Any]:
    allocatable = {"cpu": str(NODE_CPU), "memory": f"{NODE_CPU * 4}Gi", "pods": "110"}
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i:04d}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "spec": {},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
        }
        for i in range(nodes)
    ]
    for name, weight in QUEUES.items():
        items.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": weight, "reclaimable": True},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def trace(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Jobs in arrival order; runtimes scaled so the offered cpu load is ``args.load``."""
    rng = random.Random(args.seed)
    span = args.days * 86400
    capacity = args.nodes * NODE_CPU * span
    mean_cpu = sum(SIZES) / len(SIZES)
    mean_runtime = args.load * capacity / (args.jobs * args.pods * mean_cpu)
    arrivals = sorted(rng.uniform(0, span) for _ in range(args.jobs))
    queues = list(QUEUES)
    jobs = []
    for i, arrival in enumerate(arrivals):
        cpu = rng.choice(SIZES)
        runtime = rng.uniform(0.2, 1.8) * mean_runtime
        jobs.append(
            {
                "arrival": f"{int(arrival)}s",
                "namespace": "bench",
                "job": f"job-{i:05d}",
                "pods": args.pods,
                "requests": {"cpu": str(cpu), "memory": f"{cpu * 4}Gi"},
                "runtime": f"{int(runtime)}s",
                "queue": queues[i % len(queues)],
            }
        )
    return jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=5, help="pods per job")
    parser.add_argument("--load", type=float, default=0.8)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--keep", metavar="DIR", help="write the inputs and the report here")
    args = parser.parse_args()
    pumice = Path(sys.executable).with_name("pumice")
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        cluster_path, trace_path = where / "cluster.json", where / "trace.jsonl"
        cluster_path.write_text(json.dumps(cluster(args.nodes)))
        trace_path.write_text("".join(json.dumps(j) + "\n" for j in trace(args)))
        command = [
            str(pumice),
            "simulate",
            str(cluster_path),
            "--until-done",
            "--trace",
            str(trace_path),
            "--output",
            "json",
        ]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        if args.keep:
            (where / "report.json").write_text(done.stdout)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    if done.returncode != 0:
        # no figure to give: say so with a failing exit (benches are not part of the build)
        print(f"pumice simulate --until-done failed ({done.returncode}): {done.stderr.strip()}")
        return 1
    timeline = json.loads(done.stdout)["timeline"]
    pods = args.jobs * args.pods
    print(
        f"whatif: {args.nodes} nodes x {NODE_CPU} cpu, {args.jobs} jobs / {pods} pods over "
        f"{args.days:g} days at {args.load:.0%} offered cpu load, default config (period 1s)"
    )
    print(
        f"  whole command {elapsed:.1f} s wall, {cpu:.1f} s CPU, peak RSS "
        f"{usage.ru_maxrss / 1024:,.0f} MiB"
    )
    print(
        f"  makespan {timeline['makespan_seconds'] / 86400:.2f} days; "
        f"{timeline['cycles']} cycles, {timeline['sessions']} sessions; "
        f"{timeline['pending_pods']} pods left pending"
    )
    for name, figures in timeline["queues"].items():
        waits = figures["wait_seconds"]
        shown = ", ".join(
            f"{k} {v / 60:.1f} min" if v is not None else f"{k} -" for k, v in waits.items()
        )
        print(f"  queue {name}: {figures['jobs_done']}/{figures['jobs']} jobs done; wait {shown}")
    samples = timeline["utilisation"]
    if samples:
        end = max(timeline["makespan_seconds"], samples[-1]["t"]) or 1.0
        area = sum(s["cpu"] * (n["t"] - s["t"]) for s, n in itertools.pairwise(samples))
        print(f"  mean cpu utilisation over the makespan {area / end:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
