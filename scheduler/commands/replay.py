"""``pumice replay DIR``: re-run recorded cycles through the session code, and compare.

Each recorded cycle (``pumice.daemon.recordfile``) gives back the snapshot a daemon's session was
opened on, its clock, config and random seed, and what it decided. Replay opens a session on that
snapshot with the same seed — with the recorded config, or with ``--config OTHER`` — runs the
actions and compares the binds and evictions, pod by pod (and whether the session raised, as a
recorded session that failed after committing some binds did). ``DIR`` is a recording directory:
the last run's recordings are replayed (``DIR/run-…``), or a run's directory itself.

* without ``--config``: exit 0 and ``identical`` when every decision matches; exit 1 naming the
  first cycle, pod, recorded node and replayed node that differ;
* with ``--config OTHER`` (a counterfactual): every pod whose node or outcome changes; exit 0.

``--output json`` prints ``{"cycles": N, "changed": [{"cycle", "pod", "recorded",
"replayed"}]}`` (plus ``"identical"`` without ``--config``). An outcome is a node name,
``evicted`` (from that node) or ``pending`` (no decision). A missing directory, an unknown
``--cycle``, a bad ``--config``, any file that is not a recording of this pumice version
(truncated, damaged, another version's) and a recorded session that cannot be opened with what
is installed (a plugin it names is gone) exit 2 with one line naming the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from pumice.commands.config_commands import load_checked
from pumice.daemon.recordfile import (
    CycleRecord,
    Decision,
    Reader,
    RecordingError,
    recordings,
    runs,
)
from pumice.framework.action import run_actions
from pumice.framework.committer import RecordingCommitter
from pumice.framework.config import ConfigError, SchedulerConfig
from pumice.framework.host import PluginConflictError, PluginHost
from pumice.framework.session import Session

PENDING = "pending"
FAILED = "failed"
COMPLETED = "completed"


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
    pod: str | None
    """``namespace/name``; None: the session itself (it raised in one run, not in the other)."""
    recorded: str
    replayed: str

    def line(self) -> str:
        what = f"pod {self.pod}" if self.pod is not None else "the session"
        return f"cycle {self.cycle}: {what}: recorded {self.recorded}, replayed {self.replayed}"

    def as_dict(self) -> dict[str, object]:
        return {
            "cycle": self.cycle,
            "pod": self.pod,
            "recorded": self.recorded,
            "replayed": self.replayed,
        }


def open_session(record: CycleRecord, config: SchedulerConfig, host: PluginHost) -> Session:
    """The session the recorded cycle opened, on its snapshot with its seed (any error: the
    recording cannot be replayed here — a plugin it names is not installed, say)."""
    committer = RecordingCommitter(quiet=True)
    session = Session.open(
        record.snapshot, config, host, committer=committer, rng=record.rng(), time_hooks=True
    )
    committer.session = session
    return session


def replay_cycle(session: Session) -> tuple[list[Decision], bool]:
    """Run the actions of an opened session; its binds and evictions in commit order, and
    whether it raised (after committing those)."""
    failed = False
    try:
        try:
            run_actions(session)
        except Exception:  # as the daemon's session may have: compared with the recording
            failed = True
        finally:
            session.close()
        committer = session.committer
        assert isinstance(committer, RecordingCommitter)
        made = committer.made
        return [
            (d.kind, d.task.uid, d.task.key, d.node) for d in made if d.kind != "nominate"
        ], failed
    finally:
        session.dispose()


def outcomes(decisions: list[Decision]) -> dict[str, tuple[str, str]]:
    """Pod uid -> (``namespace/name``, its outcome), in the order pods were first decided."""
    result: dict[str, tuple[str, str]] = {}
    for kind, uid, key, node in decisions:
        result[uid] = (key, node if kind == "bind" else f"evicted from {node}")
    return result


def compare(
    cycle: int, recorded: list[Decision], replayed: list[Decision], failed: tuple[bool, bool]
) -> list[Change]:
    """Every pod whose outcome differs, in the order the recording decided them; first the
    session itself if it raised in one run and not in the other (``failed``: recorded,
    replayed)."""
    changes = []
    if failed[0] != failed[1]:
        was, now = (FAILED, COMPLETED) if failed[0] else (COMPLETED, FAILED)
        changes.append(Change(cycle, None, was, now))
    before, after = outcomes(recorded), outcomes(replayed)
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


def recording_of(directory: Path) -> Path:
    """The directory whose recordings are replayed: ``directory`` itself if it holds any, else
    its last run's (``DIR/run-…``, one per daemon run)."""
    if recordings(directory):
        return directory
    found = runs(directory)
    if len(found) > 1:
        print(
            f"pumice replay: replaying {found[-1]}, the last of {len(found)} runs in {directory}",
            file=sys.stderr,
        )
    return found[-1] if found else directory


def run(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if not directory.is_dir():
        print(f"pumice replay: {directory}: no such directory", file=sys.stderr)
        return 2
    directory = recording_of(directory)
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
    for _, path in found:
        try:
            record = reader.read(path)
            config, host = other if other is not None else (record.config, None)
            session = open_session(record, config, host or _hosts(config, hosts))
        except RecordingError as exc:
            print(f"pumice replay: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:  # the recorded config cannot be opened with what is installed
            print(f"pumice replay: {path}: cannot open its session: {exc}", file=sys.stderr)
            return 2
        replayed, failed = replay_cycle(session)
        changes += compare(record.cycle, record.decisions, replayed, (record.failed, failed))
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
            print(f"  {c.line()}")
    elif changes:
        print(changes[0].line())
    else:
        print(f"identical: {cycles} cycles replayed, every decision matches")
    return 1 if changes and not counterfactual else 0
