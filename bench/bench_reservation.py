"""Benchmark the node-reservation search at 5,000 nodes (target: within 100 ms).

Builds a cluster of 5,000 nodes of three sizes (4, 8 and 16 cpu, 2 GiB memory per cpu), a third
of them half used by other queues and some by the reserving queue, and times:

* ``choose`` alone (the heuristic: greedy seeds + exact search over a 16-node shortlist) for a
  small request (2 nodes' worth), a medium one (1% of the cluster) and a large one (20%), and a
  percentage request of 10% of the nodes;
* a whole ``session_open`` of the plugin with three reserving queues (candidates built from the
  node table, validation, search), the cost a scheduling cycle pays.

Run with ``make bench`` or ``.venv/bin/python -P bench/bench_reservation.py [--nodes N]``.
Prints figures; never fails on a slow machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from pumice import ClusterSnapshot, JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from pumice.framework.configfile import parse_config
from pumice.framework.host import PluginHost
from pumice.framework.session import RecordingCommitter, Session
from pumice.plugins._reservation_search import Candidates, choose
from pumice.plugins.node_reservation import NodeReservationPlugin

GiB = 2**30
TARGET_MS = 100.0


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Median milliseconds of ``repeat`` calls, and the last answer."""
    times = []
    answer: object = None
    for _ in range(repeat):
        start = time.perf_counter()
        answer = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), answer


def candidates(nodes: int, rng: np.random.Generator) -> Candidates:
    cpu = rng.choice([4.0, 8.0, 16.0], size=nodes)
    alloc = np.stack([cpu, cpu * 2], axis=1)
    total = alloc.sum(axis=0)
    used = alloc * rng.choice([0.0, 0.0, 0.0, 0.25], size=(nodes, 1))
    busy = alloc * rng.choice([0.0, 0.0, 0.5], size=(nodes, 1))
    idle = alloc - used - busy
    names = [f"node-{i:05d}" for i in range(nodes)]
    return Candidates(names, alloc / total, used / total, idle / total, nodes)


def snapshot(nodes: int, rng: np.random.Generator) -> ClusterSnapshot:
    infos = []
    for i in range(nodes):
        cpu = float(rng.choice([4, 8, 16]))
        infos.append(
            NodeInfo(f"node-{i:05d}", Resource({"cpu": cpu * 1000, "memory": cpu * 2 * GiB}))
        )
    queues = [
        QueueInfo(name, queue={"metadata": {"name": name}}) for name in ("qa", "qb", "qc", "other")
    ]
    job = JobInfo(uid="default/running", name="running", queue="qa", phase="Running")
    for i in range(0, nodes, 7):
        task = TaskInfo(
            uid=f"t{i}",
            name=f"t{i}",
            namespace="default",
            resreq=Resource({"cpu": 1000, "memory": GiB}),
            status=TaskStatus.RUNNING,
            node_name=f"node-{i:05d}",
        )
        job.add_task(task)
    return ClusterSnapshot.build(nodes=infos, jobs=[job], queues=queues)


CONFIG = """\
actions: "allocate"
tiers:
- plugins:
  - name: node-reservation
    arguments:
      qa: {policy: Guaranteed, resource: {cpu: "400", memory: 800Gi}}
      qb: {percentage: {dimensions: [cpu, memory], value: 0.1}}
      qc: {resource: {cpu: "12", memory: 24Gi}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    cand = candidates(args.nodes, rng)
    print(f"node-reservation search over {args.nodes} candidate nodes (target <= {TARGET_MS} ms)")
    cases = [
        ("small request (0.1% of the cluster)", np.array([0.001, 0.001]), None),
        ("medium request (1%)", np.array([0.01, 0.01]), None),
        ("large request (20%)", np.array([0.2, 0.2]), None),
        ("percentage: 10% of the nodes", np.array([0.1, 0.1]), args.nodes // 10),
    ]
    for label, target, count in cases:
        ms, choice = timed(lambda t=target, c=count: choose(cand, t, c), args.repeat)
        chosen = len(choice.rows) if choice is not None else 0  # type: ignore[attr-defined]
        print(f"  {label:40s} {ms:7.1f} ms  ({chosen} nodes)")
    snap = snapshot(args.nodes, rng)
    config = parse_config(CONFIG, source="<bench>")
    host = PluginHost()
    host.register("node-reservation", NodeReservationPlugin)

    def open_session() -> Session:
        session = Session.open(snap.clone(), config, host, committer=RecordingCommitter())
        session.close()
        return session

    ms, _ = timed(open_session, max(3, args.repeat // 2))
    clone_ms, _ = timed(snap.clone, max(3, args.repeat // 2))
    print(
        f"  {'session_open, 3 reserving queues':40s} {ms:7.1f} ms "
        f"(of which {clone_ms:.1f} ms is the snapshot clone)"
    )


if __name__ == "__main__":
    main()
