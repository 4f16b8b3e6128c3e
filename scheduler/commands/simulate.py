"""``pumice simulate CLUSTER.yaml …``: replay a cluster offline and show what pumice would do.

The manifests (multi-document YAML, or a ``kind: List`` as ``kubectl get
nodes,pods,podgroups,queues,priorityclasses -A -o yaml`` writes it) are read and checked once
(``cluster_input``) and fed to the daemon's cache through its informer handlers
(``simulate_cluster.SimulatedCluster``). Then cycles run until nothing changes, at most
``--cycles``: each takes the cache's snapshot, opens a session with a committer that records
every decision (the same snapshot → session → commit path as the daemon), runs the configured
actions, and hands the committed decisions back to the cache as the API server's answers —
bound pods turn Running on their node, evicted pods disappear, preemptors get their nominated
node, PodGroups and Queues the status the daemon would write (``pumice.daemon.outcome``, the
plugins' fields included), and the volume writes asked before a bind (a volume's claimRef, a
claim's selected node) are answered as the volume controllers would, the claim bound. Nothing
is written anywhere. One cycle is one ``period`` of the configuration on the simulated
clock. The report (``simulate_report``) is a table or JSON.

Exit codes: 0, or 2 with one line for a bad flag, configuration or manifest
(``FILE: Pod default/small-1: spec.containers[0].resources.requests.cpu: …``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Callable, Iterator

import orjson

from pumice.commands.cluster_input import CACHE_KINDS, api_defaults, read_cluster
from pumice.commands.config_commands import load_checked
from pumice.commands.simulate_cluster import SimulatedCluster
from pumice.commands.simulate_report import (
    Eviction,
    NodeUsage,
    Placement,
    Report,
    VolumeBinding,
    render_table,
)
from pumice.commands.whatif_command import add_arguments as add_whatif_arguments
from pumice.commands.whatif_command import run as run_whatif
from pumice.commands.whatif_command import wanted as whatif_wanted
from pumice.daemon.outcome import decide
from pumice.framework.committer import RecordingCommitter
from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.host import PluginConflictError, PluginHost
from pumice.framework.session import Session
from pumice.manifests import ManifestError
from pumice.model import TaskInfo

DEFAULT_CYCLES = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cluster", nargs="+", metavar="CLUSTER.yaml", help="manifest files")
    parser.add_argument("--config", metavar="FILE", help="scheduler configuration (default: ours)")
    parser.add_argument("--output", choices=("table", "json"), default="table")
    parser.add_argument(
        "--explain", action="store_true", help="each plugin's score of every feasible node"
    )
    parser.add_argument(
        "--cycles",
        type=int,
        metavar="N",
        help=f"stop after N cycles even if decisions still change (default {DEFAULT_CYCLES})",
    )
    parser.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="pods with this spec.schedulerName are scheduled (default: the config's)",
    )
    add_whatif_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if whatif_wanted(args):
        return run_whatif(args)  # virtual time: pumice.commands.whatif
    if args.cycles is None:
        args.cycles = DEFAULT_CYCLES
    elif args.cycles < 1:
        print(f"--cycles: must be at least 1, got {args.cycles}", file=sys.stderr)
        return 2
    try:
        config, host = load_checked(args.config)
    except (ConfigError, PluginConflictError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    name = args.scheduler_name or config.scheduler.scheduler_name
    with collector_paused() as loaded:
        try:
            given = read_cluster(list(args.cluster), lambda obj: obj.get("kind") in CACHE_KINDS)
        except ManifestError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        for note in given.notes:
            print(note, file=sys.stderr)
        state = SimulatedCluster(name, config.scheduler.default_queue)
        state.add(api_defaults(obj) for obj in given.objects)
        del given
        loaded()
        report = simulate(state, config, host, cycles=args.cycles, explain=args.explain)
    if report.contract_errors:
        for error in report.contract_errors:
            print(f"pumice simulate: {error}", file=sys.stderr)
        return 2
    if args.output == "json":
        text = orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode()
    else:
        text = render_table(report, explain=args.explain)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # piped into head: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


@contextlib.contextmanager
def collector_paused() -> Iterator[Callable[[], None]]:
    """No automatic garbage collection while the files are read and fed to the cache, and the
    cluster frozen out of the collector once they are (call what this gives then), as the
    daemon's ``collector`` does around its initial lists: the objects read live as long as the
    command and hold no reference cycles, and every automatic full pass over them (one each
    time the heap grew by a quarter) found nothing to free — a fifth of the command's CPU time
    on 5,000 nodes and 10,000 pods. What the cycles leave behind is collected between them
    (``simulate``); the collector is put back as it was at the end."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


class CycleRecorder(RecordingCommitter):
    """The committer of one simulated cycle: the one decision recorder
    (``pumice.framework.committer``), read as the report wants it — each bind with the action
    that made it, each eviction with the preemptor it made room for."""

    def __init__(self, cycle: int) -> None:
        super().__init__(quiet=True)
        self.cycle = cycle

    @property
    def binds(self) -> list[tuple[TaskInfo, str, str]]:
        return [(d.task, d.node, d.action) for d in self.of_kind("bind")]

    @property
    def evictions(self) -> list[tuple[TaskInfo, Eviction]]:
        evictions: list[tuple[TaskInfo, Eviction]] = []
        for d in self.made:
            if d.kind == "evict":
                evictions.append((d.task, Eviction(d.task.key, d.node, d.action, self.cycle)))
            elif d.kind == "nominate":
                # the victims a statement evicted on this node were evicted for this task
                for _, eviction in evictions:
                    if eviction.preemptor is None and eviction.node == d.node:
                        eviction.preemptor = d.task.key
        return evictions

    @property
    def nominations(self) -> list[tuple[TaskInfo, str]]:
        return [(d.task, d.node) for d in self.of_kind("nominate")]


def simulate(
    state: SimulatedCluster,
    config: SchedulerConfig,
    host: PluginHost,
    *,
    cycles: int = DEFAULT_CYCLES,
    explain: bool = False,
) -> Report:
    """Run cycles over ``state`` (changing it) until nothing changes; what was decided."""
    report = Report()
    reasons: dict[str, str] = {}
    for cycle in range(1, cycles + 1):
        recorder = CycleRecorder(cycle)
        session = Session.open(state.snapshot(), config, host, committer=recorder)
        recorder.session = session
        session.explain = explain
        try:
            outcome = decide(session)
            for error in map(str, session.contributions.errors):
                if error not in report.contract_errors:
                    report.contract_errors.append(error)
            scores = dict(session.placement_scores) if explain else {}
        finally:
            session.dispose()
            if not gc.isenabled():
                gc.collect(1)  # the cycle's garbage (a snapshot holds cycles), not the cluster
        state.clock += config.scheduler.period
        for claim, volume, node in recorder.volume_writes:
            report.volumes.setdefault(claim, VolumeBinding(node, volume))
            state.bind_volume(claim_key=claim, volume=volume, node=node)
        for task, node, action in recorder.binds:
            state.bind(task, node)
            report.placements.append(Placement(task.key, node, action, cycle, scores.get(task.uid)))
        for task, eviction in recorder.evictions:
            state.evict(task)
            report.evictions.append(eviction)
        for task, node in recorder.nominations:
            state.nominate(task, node)
        state.write_statuses(outcome)
        report.queues = outcome.queues
        reasons = outcome.task_reasons
        report.cycles = cycle
        if not (recorder.binds or recorder.evictions):
            break
    report.podgroups = state.podgroup_phases()
    report.unschedulable = {
        key: why or reasons.get(uid) or "not scheduled in this cycle"
        for key, (uid, why) in state.pending().items()
    }
    report.nodes = [
        NodeUsage(n.name, n.allocatable, n.used, n.pod_count, n.max_pods)
        for n in sorted(state.cache.state.nodes.values(), key=lambda n: n.name)
    ]
    return report
