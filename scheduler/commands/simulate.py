"""``pumice simulate CLUSTER.yaml …``: replay a cluster offline and show what pumice would do.

The manifests (multi-document YAML, or a ``kind: List`` as ``kubectl get
nodes,pods,podgroups,queues,priorityclasses -A -o yaml`` writes it) are read once into plain
dicts (``simulate_state.ClusterState``). Then cycles run until nothing changes, at most
``--cycles``: each builds a snapshot from the dicts, opens a session with a committer that
records every decision (the same snapshot → session → commit path as the daemon), runs the
configured actions, and writes the committed decisions back into the dicts — bound pods get
their node and turn Running, evicted pods disappear, preemptors get their nominated node,
PodGroups their phase, Queues their node reservation (``status.reservation``). One cycle is one
``period`` of the configuration on the simulated clock. The report (``simulate_report``) is a
table or JSON.

Exit codes: 0, or 2 with one line for a bad flag, configuration or manifest
(``FILE: Pod default/small-1: spec.containers[0].resources.requests.cpu: …``).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field

import orjson

from pumice.commands.common import load_checked
from pumice.commands.simulate_report import (
    Eviction,
    NodeUsage,
    Placement,
    QueueFigures,
    Report,
    render_table,
)
from pumice.commands.simulate_state import ClusterState
from pumice.commands.whatif_command import add_arguments as add_whatif_arguments
from pumice.commands.whatif_command import run as run_whatif
from pumice.commands.whatif_command import wanted as whatif_wanted
from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.host import PluginConflictError, PluginHost
from pumice.framework.session import Session
from pumice.manifests import ManifestError
from pumice.model import ClusterSnapshot, Resource, TaskInfo
from pumice.plugins.node_reservation import NodeReservationPlugin
from pumice.plugins.proportion import ProportionPlugin

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
        default=DEFAULT_CYCLES,
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
    if args.cycles < 1:
        print(f"--cycles: must be at least 1, got {args.cycles}", file=sys.stderr)
        return 2
    try:
        config, host = load_checked(args.config)
    except (ConfigError, PluginConflictError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    name = args.scheduler_name or config.scheduler.scheduler_name
    try:
        state = ClusterState.load(list(args.cluster), name, config.scheduler.default_queue)
    except ManifestError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    for note in state.notes:
        print(note, file=sys.stderr)
    report = simulate(state, config, host, cycles=args.cycles, explain=args.explain)
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


@dataclass
class CycleRecorder:
    """The committer of one simulated cycle: keeps binds, evictions and nominations."""

    cycle: int
    session: Session | None = None
    binds: list[tuple[TaskInfo, str, str]] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    nominations: list[tuple[TaskInfo, str]] = field(default_factory=list)

    def _action(self) -> str:
        return self.session.action if self.session is not None else ""

    def bind(self, task: TaskInfo, node: str) -> None:
        self.binds.append((task, node, self._action()))

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.evictions.append(Eviction(task.key, task.node_name or "", self._action(), self.cycle))

    def nominate(self, task: TaskInfo, node: str) -> None:
        # the victims a statement evicted on this node were evicted for this task
        for eviction in self.evictions:
            if eviction.preemptor is None and eviction.node == node:
                eviction.preemptor = task.key
        self.nominations.append((task, node))


def simulate(
    state: ClusterState,
    config: SchedulerConfig,
    host: PluginHost,
    *,
    cycles: int = DEFAULT_CYCLES,
    explain: bool = False,
) -> Report:
    """Run cycles over ``state`` (changing it) until nothing changes; what was decided."""
    report = Report()
    last: Session | None = None
    left_out: dict[str, str] = {}
    changed = True
    for cycle in range(1, cycles + 1):
        snap, left_out = state.snapshot()
        # the figures of the state this cycle starts from: final if the cycle changes nothing
        _figures(snap, config, host, report, state)
        recorder = CycleRecorder(cycle)
        session = Session.open(snap, config, host, committer=recorder)
        recorder.session = session
        session.explain = explain
        try:
            session.run_actions()
            _carry_reservations(session, state, report)
        finally:
            session.close()
        state.clock += config.scheduler.period
        for task, node, action in recorder.binds:
            state.bind(task.key, node)
            scores = session.placement_scores.get(task.uid) if explain else None
            report.placements.append(Placement(task.key, node, action, cycle, scores))
        for eviction in recorder.evictions:
            state.evict(eviction.pod)
            report.evictions.append(eviction)
        for task, node in recorder.nominations:
            state.nominate(task.key, node)
        phases = {uid: job.phase for uid, job in session.jobs.items() if uid in state.podgroups}
        report.podgroups = state.update_podgroup_phases(phases)
        report.cycles = cycle
        last = session
        changed = bool(recorder.binds or recorder.evictions)
        if not changed:
            break
    if last is not None:
        report.unschedulable = _reasons(state, last, left_out)
    if changed:  # stopped by --cycles: the figures of the state the last cycle left
        _figures(state.snapshot()[0], config, host, report, state)
    return report


def _carry_reservations(session: Session, state: ClusterState, report: Report) -> None:
    """Write the cycle's node reservations into the Queues, for the next cycle and the report."""
    for _, _, plugin in session.plugins:
        if isinstance(plugin, NodeReservationPlugin):
            statuses = plugin.statuses()
            for name, reservation in statuses.items():
                state.set_reservation(name, reservation)
            report.reservations = {k: v for k, v in statuses.items() if v is not None}


def _reasons(state: ClusterState, session: Session, left_out: dict[str, str]) -> dict[str, str]:
    """Pending pod -> why: its own reason this session, else its job's, else a plain note."""
    where: dict[str, tuple[str, str]] = {}
    for job in session.jobs.values():
        for task in job.tasks.values():
            where[task.key] = (task.uid, job.uid)
    reasons: dict[str, str] = {}
    for key in state.pending_pods():
        if key in left_out:
            reasons[key] = left_out[key]
            continue
        task_uid, job_uid = where.get(key, ("", ""))
        reasons[key] = (
            session.task_reasons.get(task_uid)
            or session.job_reasons.get(job_uid)
            or "not scheduled in this cycle"
        )
    return reasons


def _figures(
    snap: ClusterSnapshot,
    config: SchedulerConfig,
    host: PluginHost,
    report: Report,
    state: ClusterState,
) -> None:
    """Node usage and queue shares of ``snap``, from a session that runs no action (it
    changes nothing in the snapshot, so the cycle's own session can use it afterwards). Its
    node reservations are carried into ``state`` at once: the cycle's session then finds them
    decided (the same decision, made and logged once)."""
    report.nodes = [
        NodeUsage(n.name, n.allocatable, n.used, n.pod_count, n.max_pods)
        for n in sorted(snap.nodes.values(), key=lambda n: n.name)
    ]
    report.queues = {}
    session = Session.open(snap, config, host, committer=CycleRecorder(0))
    try:
        _carry_reservations(session, state, report)
        proportion = next(
            (p for _, _, p in session.plugins if isinstance(p, ProportionPlugin)), None
        )
        for name in snap.queues:
            attr = proportion.attributes.get(name) if proportion is not None else None
            if attr is not None:
                report.queues[name] = QueueFigures(attr.deserved, attr.allocated, attr.share)
                continue
            allocated = Resource.zero()
            for job in snap.jobs.values():
                if job.queue == name:
                    allocated = allocated + job.allocated
            report.queues[name] = QueueFigures(Resource.zero(), allocated, 0.0)
    finally:
        session.close()
