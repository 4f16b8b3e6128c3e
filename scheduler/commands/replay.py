"""``pumice replay DIR``: re-run recorded cycles through the session code, and compare.

Each recording (``pumice.daemon.recordfile``) holds the snapshot a daemon's session was opened
on, its clock, config and random seed, and what it decided. Replay opens a session on that
snapshot with the same seed — with the recorded config, or with ``--config OTHER`` — runs the
actions and compares the binds and evictions, pod by pod:

* without ``--config``: exit 0 and ``identical`` when every decision matches; exit 1 naming the
  first cycle, pod, recorded node and replayed node that differ;
* with ``--config OTHER`` (a counterfactual): every pod whose node or outcome changes; exit 0.

``--output json`` prints ``{"cycles": N, "changed": [{"cycle", "pod", "recorded",
"replayed"}]}`` (plus ``"identical"`` without ``--config``). An outcome is a node name,
``evicted`` (from that node) or ``pending`` (no decision). A missing directory, an unknown
``--cycle``, a bad ``--config`` and any file that is not a recording of this pumice version
(truncated, damaged, another version's) exit 2 with one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from pumice.commands.common import load_checked
from pumice.daemon.recordfile import CycleRecord, Decision, Reader, RecordingError, recordings
from pumice.framework.action import run_actions
from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.host import PluginConflictError, PluginHost
from pumice.framework.session import Session
from pumice.model import TaskInfo

PENDING = "pending"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="a flight recording (pumice run --record)")
    parser.add_argument("--cycle", type=int, metavar="N", help="replay only the daemon's cycle N")
    parser.add_argument(
        "--config",
        metavar="OTHER",
        help="decide with this config instead of the recorded one, and list what changes",
    )
    parser.add_argument("--output", choices=("table", "json"), default="table")


@dataclass(frozen=True)
class Change:
    cycle: int
    pod: str
    recorded: str
    replayed: str

    def as_dict(self) -> dict[str, object]:
        return {
            "cycle": self.cycle,
            "pod": self.pod,
            "recorded": self.recorded,
            "replayed": self.replayed,
        }


class _Collecting:
    """The replayed session's committer: notes decisions as the recorder's tee does."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []

    def bind(self, task: TaskInfo, node: str) -> None:
        self.decisions.append(("bind", task.uid, task.key, node))

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.decisions.append(("evict", task.uid, task.key, task.node_name or ""))

    def nominate(self, task: TaskInfo, node: str) -> None:
        pass


def replay_cycle(record: CycleRecord, config: SchedulerConfig, host: PluginHost) -> list[Decision]:
    """Run one recorded cycle's session again; its decisions, in commit order."""
    committer = _Collecting()
    session = Session.open(
        record.snapshot, config, host, committer=committer, rng=record.rng(), time_hooks=True
    )
    try:
        try:
            run_actions(session)
        finally:
            session.close()
    finally:
        session.dispose()
    return committer.decisions


def outcomes(decisions: list[Decision]) -> dict[str, tuple[str, str]]:
    """Pod uid -> (``namespace/name``, its outcome), in the order pods were first decided."""
    result: dict[str, tuple[str, str]] = {}
    for kind, uid, key, node in decisions:
        result[uid] = (key, node if kind == "bind" else f"evicted from {node}")
    return result


def compare(cycle: int, recorded: list[Decision], replayed: list[Decision]) -> list[Change]:
    """Every pod whose outcome differs, in the order the recording decided them."""
    before, after = outcomes(recorded), outcomes(replayed)
    changes = []
    for uid in [*before, *(u for u in after if u not in before)]:
        key, was = before.get(uid, (after.get(uid, ("?", ""))[0], PENDING))
        now = after.get(uid, (key, PENDING))[1]
        if was != now:
            changes.append(Change(cycle, key, was, now))
    return changes


def _hosts(config: SchedulerConfig, cache: dict[tuple[str, ...], PluginHost]) -> PluginHost:
    packages = config.scheduler.plugin_packages
    key = (*packages.allow, "|", *packages.deny)
    if key not in cache:
        cache[key] = PluginHost.discover(packages)
    return cache[key]


def run(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if not directory.is_dir():
        print(f"pumice replay: {directory}: no such directory", file=sys.stderr)
        return 2
    found = recordings(directory)
    if args.cycle is not None:
        found = [(c, p) for c, p in found if c == args.cycle]
        if not found:
            print(
                f"pumice replay: {directory}: no recording of cycle {args.cycle}", file=sys.stderr
            )
            return 2
    if not found:
        print(f"pumice replay: {directory}: no recordings", file=sys.stderr)
        return 2
    other: tuple[SchedulerConfig, PluginHost] | None = None
    if args.config is not None:
        try:
            other = load_checked(args.config)
        except (ConfigError, PluginConflictError) as exc:
            print(str(exc), file=sys.stderr)
            return 2
    hosts: dict[tuple[str, ...], PluginHost] = {}
    changes: list[Change] = []
    reader = Reader()  # in order, each delta's base is the recording read just before
    for cycle, path in found:
        try:
            record = reader.read(path)
        except RecordingError as exc:
            print(f"pumice replay: {exc}", file=sys.stderr)
            return 2
        config, host = other if other is not None else (record.config, None)
        replayed = replay_cycle(record, config, host or _hosts(config, hosts))
        changes += compare(cycle, record.decisions, replayed)
        if other is None and changes and args.output == "table":
            break  # the first difference is the answer
    return _report(args, len(found), changes, counterfactual=other is not None)


def _report(
    args: argparse.Namespace, cycles: int, changes: list[Change], counterfactual: bool
) -> int:
    if args.output == "json":
        out: dict[str, object] = {"cycles": cycles, "changed": [c.as_dict() for c in changes]}
        if not counterfactual:
            out["identical"] = not changes
        print(json.dumps(out, indent=2))
    elif counterfactual:
        print(f"{cycles} cycles replayed with {args.config}: {len(changes)} pods change")
        for c in changes:
            print(f"  cycle {c.cycle}: {c.pod}: recorded {c.recorded}, replayed {c.replayed}")
    elif changes:
        c = changes[0]
        print(f"cycle {c.cycle}: pod {c.pod}: recorded {c.recorded}, replayed {c.replayed}")
    else:
        print(f"identical: {cycles} cycles replayed, every decision matches")
    return 1 if changes and not counterfactual else 0
