"""Benchmark the whole ``pumice simulate`` command on a large cluster.

Writes a ``kind: List`` dump (JSON, as ``kubectl get … -o json`` writes it) of 5,000 nodes
(32 cpu, 256Gi, 110 pods), two queues of equal weight, and 10,000 pending pods in 1,000 gangs
of 10 (1 cpu, 2Gi each, half of the gangs in each queue), then runs ``pumice simulate FILE
--output json`` in a subprocess with the shipped default configuration (default tiers).

pumice's modules are compiled to bytecode first, as an installed package has them.
Prints the wall time of the whole command (start-up, parsing, every cycle, the report), the
pods placed per second of that time and per second of the command's CPU time (steadier on a
shared machine), and the command's peak RSS. It never fails on a figure.
Run with ``make bench`` or ``.venv/bin/python -P bench/bench_simulate.py [--nodes N]
[--gangs G] [--size S]``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def node(i: int) -> dict[str, Any]:
    allocatable = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def gang(g: int, size: int, queue: str) -> list[dict[str, Any]]:
    name = f"gang-{g:04d}"
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"minMember": size, "queue": queue},
        }
    ]
    for i in range(size):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-w-{i}",
                    "namespace": "bench",
                    "uid": f"{name}-{i}",
                    "annotations": {"scheduling.k8s.io/group-name": name},
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                },
                "spec": {
                    "schedulerName": "pumice",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                        }
                    ],
                },
                "status": {"phase": "Pending"},
            }
        )
    return objects


def write_dump(path: Path, nodes: int, gangs: int, size: int) -> None:
    items: list[dict[str, Any]] = [node(i) for i in range(nodes)]
    for q in ("team-a", "team-b"):
        items.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": q},
                "spec": {"weight": 1},
            }
        )
    for g in range(gangs):
        items.extend(gang(g, size, "team-a" if g % 2 == 0 else "team-b"))
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def compile_bytecode() -> str:
    """Compile pumice's modules to bytecode first, as an installed wheel has them: with
    ``PYTHONDONTWRITEBYTECODE`` set (as on the shared bench machine) an editable install
    compiles every module again at each start, a cost no installed copy pays."""
    found = subprocess.run(
        [sys.executable, "-c", "import pumice, pumice.plugins, pumice.actions as a;"
         "print(*pumice.__path__, *pumice.plugins.__path__, *a.__path__, sep='\\n')"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    folders = found.stdout.split()
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)
    return f"bytecode compiled first ({len(folders)} package folders)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--gangs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=10)
    args = parser.parse_args()
    pumice = Path(sys.executable).with_name("pumice")
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "cluster.json"
        write_dump(dump, args.nodes, args.gangs, args.size)
        size_mb = dump.stat().st_size / 2**20
        command = [str(pumice), "simulate", str(dump), "--output", "json"]
        print(f"bench_simulate.py {' '.join(sys.argv[1:])}".rstrip() + f"; {_load()}")
        print(
            f"runs: pumice simulate {dump.name} --output json (the shipped default config);"
            f" {compile_bytecode()}"
        )
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mb = usage.ru_maxrss / 1024
    cpu = usage.ru_utime + usage.ru_stime
    if done.returncode != 0:
        print(f"pumice simulate failed ({done.returncode}): {done.stderr.strip()}")
        return 0
    report = json.loads(done.stdout)
    placed = len(report["placements"])
    pods = args.gangs * args.size
    print(
        f"simulate: {args.nodes} nodes, {pods} pending pods in {args.gangs} gangs, "
        f"2 queues, default tiers; dump {size_mb:.1f} MiB"
    )
    print(f"  placed {placed}/{pods} pods in {elapsed:.1f} s (whole command, parsing included)")
    print(f"  {placed / elapsed:,.0f} pods/s of wall time")
    # on a shared machine the wall time depends on the neighbours; the CPU time does not
    print(f"  {cpu:.1f} s of CPU: {placed / cpu:,.0f} pods per CPU-second")
    print(f"  peak RSS {peak_mb:,.0f} MiB; {_load()}")
    return 0


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


if __name__ == "__main__":
    sys.exit(main())
