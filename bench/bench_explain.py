"""Benchmark ``pumice explain`` on the 5,000-node bench cluster (``workload.build``).

The cluster is ``workload.build()`` (5,000 nodes of three sizes, two queues, 1,000 pending
gangs of 10) with ``--running`` pods already bound, plus one gang that cannot be placed: four
pods of 48 cpu that select ``pool=big``, a label no node has (``--scenario selector``), or
four pods of 70 cpu, more than any node has (``--scenario oversize``).
``pumice explain FILE --podgroup bench/explain-me --output json`` runs in a subprocess with
the shipped default configuration; the figure is its wall time (start-up, reading, the
explaining run and every verifying run), which the issue wants within 10 s, and its CPU
time. Prints the figures and the suggestions; never fails on a figure. Run with
``.venv/bin/python -P bench/bench_explain.py [--scenario selector|oversize] [--nodes N]``.
"""

from __future__ import annotations

import argparse
import json
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
        command = [pumice, "explain", str(path), "--podgroup", "bench/explain-me", "-o", "json"]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
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
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"explain wall time: {elapsed:.2f} s, CPU {cpu.ru_utime + cpu.ru_stime:.2f} s (goal: 10 s)"
    )


if __name__ == "__main__":
    main()
