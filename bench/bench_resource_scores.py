"""Cost of one node-score call per task on 5,000 nodes: resource-strategy-fit (with and without
its sra score), shaped binpack and sra, each against Volcano's binpack, printed as ratios (and
the proportional predicate, for scale).

Half the nodes have 8 GPUs; the tasks alternate between a CPU pod and a one-GPU pod. Each
plugin scores the same tasks on the same table (best of interleaved rounds) over the same
resources (cpu, memory and GPUs), so the ratio is the price of the plugin's formula.

Then the decision cost where it counts: ``bench_allocate.py``'s gangs workload (5,000 nodes,
gangs of 10 identical pods) through a whole session with the default tiers, once as shipped
and once with resource-strategy-fit (cpu and memory MostAllocated) in binpack's place. Both
are row-local, so each scores a gang's shape once and then only the rows placements changed.
Times are CPU seconds of this process (as ``bench_allocate.py`` measures), so other jobs on a
shared machine slow neither side. Run with ``make bench`` or
``.venv/bin/python -P bench/bench_resource_scores.py [--gangs N]``; it takes under a minute.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pumice import Arguments, ClusterSnapshot, NodeInfo, NodeTable, QueueInfo, Resource, TaskInfo
from pumice.plugins.binpack import BinpackPlugin
from pumice.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from pumice.plugins.scarce import ProportionalPlugin, SraPlugin

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workload
from bench_allocate import to_model

from pumice.commands.config_commands import load_checked
from pumice.framework import Session, run_actions
from pumice.framework.configfile import default_config_text, parse_config
from pumice.framework.session import RecordingCommitter

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
    start = time.process_time()
    for task in work:
        score(task, table)
    return (time.process_time() - start) / len(work)


RSF_FOR_BINPACK = """\
  - name: resource-strategy-fit
    arguments:
      resources:
        cpu: {type: MostAllocated}
        memory: {type: MostAllocated}
"""


def decisions(gangs: int, rounds: int) -> None:
    """The allocate benchmark's gangs workload under the default tiers, once with binpack and
    once with resource-strategy-fit in its place (packing cpu and memory as binpack does)."""
    text = default_config_text()
    assert "  - name: binpack\n" in text
    configs = {
        "binpack": parse_config(text, "<default>"),
        "resource-strategy-fit": parse_config(
            text.replace("  - name: binpack\n", RSF_FOR_BINPACK), "<rsf>"
        ),
    }
    _, host = load_checked(None)
    w = workload.build(nodes=5000, gangs=gangs, gang_size=10)
    seconds = dict.fromkeys(configs, float("inf"))
    bound: dict[str, int] = {}
    for _ in range(rounds):  # interleaved, best of the rounds: the machine is shared
        for name, config in configs.items():
            snap = to_model(w)
            start = time.process_time()
            session = Session.open(snap, config, host, committer=RecordingCommitter())
            run_actions(session)
            session.close()
            seconds[name] = min(seconds[name], time.process_time() - start)
            committer = session.committer
            assert isinstance(committer, RecordingCommitter)
            bound[name] = sum(1 for d in committer.decisions if d[0] == "bind")
    base = seconds["binpack"]
    print(
        f"allocate, 5,000 nodes, {gangs * 10:,} pending pods in gangs of 10, default tiers "
        f"(best of {rounds}):"
    )
    for name, elapsed in seconds.items():
        print(
            f"  with {name:24s} {elapsed:6.2f} s for {bound[name]:,} binds "
            f"({bound[name] / elapsed:,.0f} pods/s)   {elapsed / base:5.2f} x binpack"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gangs", type=int, default=300, help="gangs of 10 in the decision run")
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
    decisions(args.gangs, args.rounds)


if __name__ == "__main__":
    main()
