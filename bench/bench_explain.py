"""Benchmark ``pumice explain`` on the 5,000-node bench cluster (``workload.build``).

The cluster is ``workload.build()`` (5,000 nodes of three sizes, two queues, 1,000 pending
gangs of 10) with ``--running`` pods already bound, plus one gang that cannot be placed: four
pods of 48 cpu that select ``pool=big``, a label no node has (``--scenario selector``), or
four pods of 70 cpu, more than any node has (``--scenario oversize``).
``pumice explain FILE --podgroup bench/explain-me --output json`` runs in a subprocess with
the shipped default configuration; the figure is its wall time (start-up, reading, the
explaining run and every verifying run), which the issue wants within 10 s, and its CPU
time. Beside it, as the baseline that the machine's load affects alike, ``pumice simulate
FILE`` of the same cluster (one run of it; explain is that run, read for its reasons, plus a
run of each candidate change until the target is placed): the ratio of the two CPU times
says what explaining costs whatever the load. Prints the figures, the suggestions and the
machine's load average before and after; never fails on a figure. Run with
``.venv/bin/python -P bench/bench_explain.py [--scenario selector|oversize] [--nodes N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from workload import build, pod


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--gangs", type=int, default=1000)
    parser.add_argument("--running", type=int, default=5000)
    parser.add_argument(
        "--scenario",
        choices=("selector", "oversize"),
        default="selector",
        help="the gang selects a label no node has, or asks more cpu than any node has",
    )
    args = parser.parse_args()
    w = build(nodes=args.nodes, gangs=args.gangs, running=args.running)
    w.podgroups.append(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "explain-me", "namespace": "bench"},
            "spec": {"minMember": 4, "queue": "q1"},
        }
    )
    for i in range(4):
        cpu = "48" if args.scenario == "selector" else "70"
        p = pod(f"explain-me-{i}", "explain-me", cpu, "64Gi", None, 10**6)
        if args.scenario == "selector":
            p["spec"]["nodeSelector"] = {"pool": "big"}
        w.pods.append(p)
    items = [*w.nodes, *w.queues, *w.podgroups, *w.pods]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        dump = {"apiVersion": "v1", "kind": "List", "items": items}
        path.write_text(json.dumps(dump))
        pumice = str(Path(sys.executable).parent / "pumice")
        base = [pumice, "simulate", str(path), "--output", "json"]
        load_before = os.getloadavg()[0]
        base_wall, base_cpu, _ = timed(base)
        command = [pumice, "explain", str(path), "--podgroup", "bench/explain-me", "-o", "json"]
        elapsed, cpu, done = timed(command)
        load_after = os.getloadavg()[0]
    print(
        f"scenario={args.scenario} nodes={args.nodes} gangs={args.gangs}"
        f" running={args.running} exit={done.returncode}"
    )
    if done.returncode != 0:
        print(done.stderr)
        return
    report = json.loads(done.stdout)
    print(f"status={report['status']} node_reasons={report['node_reasons']}")
    for suggestion in report["suggestions"]:
        print(f"  suggestion: {suggestion['text']}")
    print(f"explain wall time: {elapsed:.2f} s, CPU {cpu:.2f} s (goal: 10 s)")
    print(
        f"baseline simulate: wall {base_wall:.2f} s, CPU {base_cpu:.2f} s;"
        f" explain / simulate CPU = {cpu / base_cpu:.2f}x"
    )
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after")


def timed(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, CPU seconds and the outcome of one subprocess."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu, done


if __name__ == "__main__":
    main()
