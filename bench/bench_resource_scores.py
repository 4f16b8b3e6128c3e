"""Cost of one node-score call per task on 5,000 nodes: resource-strategy-fit (with and without
its sra score), shaped binpack and sra, each against Volcano's binpack, printed as ratios (and
the proportional predicate, for scale).

Half the nodes have 8 GPUs; the tasks alternate between a CPU pod and a one-GPU pod. Each
plugin scores the same tasks on the same table (best of interleaved rounds) over the same
resources (cpu, memory and GPUs), so the ratio is the price of the plugin's formula. Run
with ``make bench`` or ``.venv/bin/python -P bench/bench_resource_scores.py``; it takes a
few seconds.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from pumice import Arguments, ClusterSnapshot, NodeInfo, NodeTable, QueueInfo, Resource, TaskInfo
from pumice.plugins.binpack import BinpackPlugin
from pumice.plugins.proportional import ProportionalPlugin
from pumice.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from pumice.plugins.sra import SraPlugin

GPU = "nvidia.com/gpu"
GiB = 2**30

PLUGINS: dict[str, Callable[[], object]] = {
    "binpack (Volcano)": lambda: BinpackPlugin(
        Arguments({"binpack.resources": GPU, f"binpack.resources.{GPU}": 2})
    ),
    "binpack (shape)": lambda: BinpackPlugin(
        Arguments(
            {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                "resources": [{"name": GPU, "weight": 5}, {"name": "cpu"}, {"name": "memory"}],
            }
        )
    ),
    "resource-strategy-fit": lambda: ResourceStrategyFitPlugin(
        Arguments(
            {
                "resources": {
                    f"{GPU}*": {"type": "MostAllocated", "weight": 2},
                    "cpu": {"type": "LeastAllocated"},
                    "memory": {"type": "LeastAllocated"},
                }
            }
        )
    ),
    "resource-strategy-fit + sra": lambda: ResourceStrategyFitPlugin(
        Arguments(
            {
                "resources": {
                    GPU: {"type": "MostAllocated", "weight": 2},
                    "cpu": {"type": "LeastAllocated"},
                    "memory": {"type": "LeastAllocated"},
                },
                "sra": {"enable": True, "resources": GPU, "weight": 10},
            }
        )
    ),
    "sra": lambda: SraPlugin(Arguments({"resources": GPU, "weight": 10})),
    "proportional (predicate)": lambda: ProportionalPlugin(
        Arguments({"resources": GPU, "resourceProportion": {f"{GPU}.cpu": 4}})
    ),
}


def cluster(nodes: int) -> NodeTable:
    infos = [
        NodeInfo(
            f"n{i:05d}",
            Resource({"cpu": 64000, "memory": 256 * GiB, **({GPU: 8} if i % 2 else {})}),
        )
        for i in range(nodes)
    ]
    return ClusterSnapshot.build(nodes=infos, queues=[QueueInfo("default")]).table


def tasks(count: int) -> list[TaskInfo]:
    out = []
    for i in range(count):
        request = {"cpu": 2000.0, "memory": 4.0 * GiB}
        if i % 2:
            request[GPU] = 1.0
        out.append(TaskInfo(uid=f"t{i}", name=f"t{i}", resreq=Resource(request)))
    return out


def per_task(plugin: object, table: NodeTable, work: list[TaskInfo]) -> float:
    """Seconds per call of the plugin's hook (node_score, or predicate) over ``work``."""
    score = getattr(plugin, "node_score", None) or plugin.predicate  # type: ignore[attr-defined]
    start = time.perf_counter()
    for task in work:
        score(task, table)
    return (time.perf_counter() - start) / len(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    table = cluster(args.nodes)
    work = tasks(args.tasks)
    plugins = {name: make() for name, make in PLUGINS.items()}
    times = dict.fromkeys(plugins, float("inf"))
    for _ in range(args.rounds):  # interleaved, so a busy moment hits every plugin alike
        for name, plugin in plugins.items():
            times[name] = min(times[name], per_task(plugin, table, work))
    base = times["binpack (Volcano)"]
    print(f"node_score per task on {args.nodes} nodes ({args.tasks} tasks, best of {args.rounds}):")
    for name, seconds in times.items():
        print(f"  {name:30s} {seconds * 1e6:8.1f} us   {seconds / base:5.2f} x binpack")


if __name__ == "__main__":
    main()
