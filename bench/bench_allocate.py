"""Decision speed: pumice's allocate against a bare numpy kernel on the same workload.

Scenarios (``bench/workload.py`` builds them; deterministic):

* ``gangs``: 5,000 nodes, 10,000 pending pods in 1,000 gangs of identical pods, two queues,
  the default configuration (enqueue, allocate, backfill over the default tiers);
* ``big-gang``: 1,000 nodes and one gang of 1,000 pods (shows there is no O(T²) per gang);
* ``cycle``: 5,000 nodes, 150,000 pods of which 50,000 pending: model building, snapshot,
  one whole cycle, and the process's peak RSS;
* ``constraints``: the gangs workload with pod-to-pod constraints (``workload.constrained``):
  5,000 nodes in 50 zones, 10,000 pending pods in apps of 10, a third with required hostname
  anti-affinity, a third spread over zones (maxSkew 1, DoNotSchedule), a third with preferred
  affinity to their app. Printed as pods/s and as a ratio to the plain gangs scenario measured
  in the same run (no kernel: it knows no constraints).

The kernel is what the decision costs without a framework: per pod, a fit mask over every
node, Volcano's binpack score over cpu and memory, argmax, and an update of the chosen row; it
places the same pods in the same order. Speed is printed as pods/s for both and their ratio,
measured in the same process one after the other, so a loaded machine slows both. The bench
prints figures and never fails the build. Times are the process's CPU time, not wall-clock
time, so other jobs on a shared machine slow neither side much (they still shift both, through
caches and frequency): each side runs three times, alternating, and the best run of each is
reported with their ratio, beside every run's own ratio.

Two things are done as the daemon does them, outside the timed session:

* the model is built as the cache builds it, which parses each pod as it arrives
  (``pumice.cache.pods.derive``: shape, pod-to-pod constraints, labels, kept with the pod
  object for every later session), so the session does not parse the pending pods; the
  "model built" time includes that parsing;
* CPython's automatic garbage collection is off while a session runs, as the daemon keeps it
  (``pumice.daemon.collector``: collections only between cycles); the bench collects before
  each session, untimed.

    .venv/bin/python -P bench/bench_allocate.py
        [--scenario gangs|big-gang|cycle|constraints|all]
        [--record FILE]   # write the decisions (pod -> node, reasons) of the gangs scenario,
                          # or of big-gang or constraints when it alone runs, as JSON
        [--time-hooks]    # clock every plugin hook call, as the daemon does for its metrics
        [--count-ops]     # instead of timing: one session under an opcode tracer, printing
                          # the Python opcodes and calls it ran (and the functions that ran
                          # most): a count that a loaded machine does not change, for
                          # comparing two versions when CPU times are too noisy to
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workload

from pumice import (
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    QueueInfo,
    TaskInfo,
)
from pumice.cache.pods import derive
from pumice.framework import Session, run_actions
from pumice.framework.configfile import load_default_config
from pumice.framework.host import PluginHost
from pumice.framework.session import RecordingCommitter

TARGET_PODS_PER_S = 5000.0
TARGET_RATIO = 4.0
TARGET_CONSTRAINED_SHARE = 0.5


def to_model(w: workload.Workload) -> ClusterSnapshot:
    """Model objects for every node, queue, PodGroup and pod, as the cache would build them."""
    nodes = [NodeInfo.from_node(n) for n in w.nodes]
    queues = [QueueInfo.from_queue(q) for q in w.queues]
    jobs: dict[str, JobInfo] = {}
    for pg in w.podgroups:
        job = JobInfo.from_podgroup(pg)
        jobs[job.uid] = job
    for p in w.pods:
        task = TaskInfo.from_pod(p)
        derive(task)  # as the cache does when the pod arrives
        job = jobs.get(task.job)
        if job is None:
            job = JobInfo(uid=task.job, name=task.name, namespace=task.namespace, min_available=1)
            jobs[job.uid] = job
        job.add_task(task)
    return ClusterSnapshot.build(nodes=nodes, jobs=jobs.values(), queues=queues)


HOST = PluginHost.discover()  # every plugin imported up front, as a daemon does at start
TIME_HOOKS = False


def run_session(snap: ClusterSnapshot) -> tuple[Session, float]:
    config = load_default_config()
    host = HOST
    gc.collect()  # between cycles, untimed; none during the session (as the daemon runs)
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.process_time()
        session = Session.open(
            snap, config, host, committer=RecordingCommitter(), time_hooks=TIME_HOOKS
        )
        run_actions(session)
        session.close()
        elapsed = time.process_time() - start
    finally:
        if enabled:
            gc.enable()
    return session, elapsed


def kernel(w: workload.Workload, order: list[str]) -> tuple[float, int]:
    """The bare numpy placement of ``order`` (pod names): fit, binpack, argmax, update."""
    snap = to_model(w)
    table = snap.table
    cpu, mem = table.dim("cpu"), table.dim("memory")
    assert cpu is not None and mem is not None
    # One contiguous vector per column, as a hand-written scheduler would keep them.
    alloc_c = np.ascontiguousarray(table.allocatable[:, cpu])
    alloc_m = np.ascontiguousarray(table.allocatable[:, mem])
    used_c = np.ascontiguousarray(table.used[:, cpu])
    used_m = np.ascontiguousarray(table.used[:, mem])
    requests = {
        t.name: (t.resreq.get("cpu", 0.0), t.resreq.get("memory", 0.0))
        for job in snap.jobs.values()
        for t in job.tasks.values()
    }
    start = time.process_time()
    placed = 0
    for name in order:
        req_c, req_m = requests[name]
        after_c = used_c + req_c
        after_m = used_m + req_m
        fits = (after_c <= alloc_c) & (after_m <= alloc_m)
        if not fits.any():
            continue
        score = after_c / alloc_c + after_m / alloc_m
        score[~fits] = -1.0
        row = int(score.argmax())
        used_c[row] += req_c
        used_m[row] += req_m
        placed += 1
    return time.process_time() - start, placed


def decisions_of(session: Session) -> dict[str, Any]:
    committer = session.committer
    assert isinstance(committer, RecordingCommitter)
    keys = {t.uid: t.key for j in session.jobs.values() for t in j.tasks.values()}
    return {
        "decisions": [list(d) for d in committer.decisions],
        "task_reasons": {keys.get(u, u): r for u, r in sorted(session.task_reasons.items())},
        "job_reasons": dict(sorted(session.job_reasons.items())),
    }


def pods_per_s(pods: int, seconds: float) -> float:
    return pods / seconds if seconds > 0 else float("inf")


def compare(label: str, w: workload.Workload, record: str | None = None, runs: int = 3) -> None:
    """Pumice and the kernel on the same workload, ``runs`` times each, alternating; the best
    run of each side is reported, and their ratio (the machines are shared: a neighbour's
    burst slows one run, never speeds one up). Every pumice run places the same pods."""
    best_build = best_ours = best_kernel = float("inf")
    ratios: list[float] = []
    for _ in range(runs):
        t0 = time.process_time()
        snap = to_model(w)
        best_build = min(best_build, time.process_time() - t0)
        session, elapsed = run_session(snap)
        committer = session.committer
        assert isinstance(committer, RecordingCommitter)
        order = [key.split("/", 1)[1] for kind, key, _ in committer.decisions if kind == "bind"]
        k_elapsed, k_placed = kernel(w, order)
        ratios.append(elapsed / k_elapsed if k_elapsed > 0 else float("inf"))
        best_ours, best_kernel = min(best_ours, elapsed), min(best_kernel, k_elapsed)
    bound = len(order)
    ours, theirs = pods_per_s(bound, best_ours), pods_per_s(k_placed, best_kernel)
    print(
        f"{label}: {len(w.nodes):,} nodes, {w.pending:,} pending pods; model built in "
        f"{best_build:.2f} s; pumice bound {bound:,} in {best_ours:.2f} s = {ours:,.0f} pods/s; "
        f"numpy kernel {k_placed:,} in {best_kernel:.2f} s = {theirs:,.0f} pods/s; "
        f"pumice is {theirs / ours:.1f}x the kernel's time, best of {runs} runs each "
        f"(per run: {', '.join(f'{r:.1f}x' for r in ratios)}) "
        f"(targets: >= {TARGET_PODS_PER_S:,.0f} pods/s, <= {TARGET_RATIO:.0f}x)"
    )
    if session.hook_time:
        calls = sum(t.calls for t in session.hook_time.values())
        inside = sum(t.seconds for t in session.hook_time.values())
        print(f"  {calls:,} hook calls clocked, {inside:.2f} s inside them")
    if record:
        Path(record).write_text(json.dumps(decisions_of(session), indent=1, sort_keys=True))
        print(f"  decisions written to {record}")


def count_ops(label: str, w: workload.Workload, top: int = 12) -> None:
    """One session of ``w`` under an opcode tracer: the Python opcodes and calls it ran, in
    total and for the functions that ran most. Deterministic for a given workload and code
    (numpy's C work is not counted: compare versions whose vector work is the same)."""
    session = Session.open(to_model(w), load_default_config(), HOST, committer=RecordingCommitter())
    ops: Counter[str] = Counter()
    calls: Counter[str] = Counter()

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        code = frame.f_code
        where = f"{Path(code.co_filename).name}:{code.co_name}"
        if event == "call":
            calls[where] += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            ops[where] += 1
        return tracer

    sys.settrace(tracer)
    try:
        run_actions(session)
    finally:
        sys.settrace(None)
    session.close()
    total = sum(ops.values())
    print(f"{label}: {total:,} Python opcodes, {sum(calls.values()):,} Python calls")
    for where, count in ops.most_common(top):
        print(f"  {count / total:6.1%} {count:>11,} opcodes {calls[where]:>8,} calls  {where}")


def cycle() -> None:
    w = workload.build(nodes=5000, gangs=5000, gang_size=10, running=100_000)
    t0 = time.process_time()
    state = to_model(w)
    build = time.process_time() - t0
    t0 = time.process_time()
    snap = state.clone() if hasattr(state, "clone") else state
    clone = time.process_time() - t0
    session, elapsed = run_session(snap)
    committer = session.committer
    assert isinstance(committer, RecordingCommitter)
    bound = sum(1 for d in committer.decisions if d[0] == "bind")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"cycle: 5,000 nodes, {len(w.pods):,} pods ({w.pending:,} pending): model built in "
        f"{build:.2f} s ({build / len(w.pods) * 1e6:.1f} us/pod), snapshot {clone * 1000:.1f} ms, "
        f"session {elapsed:.2f} s binding {bound:,}; peak RSS {rss:,.0f} MiB "
        f"(targets: cycle <= 10 s, snapshot <= 50 ms, RSS <= 1,024 MiB)"
    )


def best_session(w: workload.Workload, runs: int) -> tuple[Session, float]:
    """Pumice alone on ``w``, ``runs`` times: the last session and the best CPU time."""
    best = float("inf")
    for _ in range(runs):
        session, elapsed = run_session(to_model(w))
        best = min(best, elapsed)
    return session, best


def bound_of(session: Session) -> int:
    committer = session.committer
    assert isinstance(committer, RecordingCommitter)
    return sum(1 for d in committer.decisions if d[0] == "bind")


def constraints(record: str | None = None, runs: int = 3) -> None:
    """The constraints scenario beside the plain gangs one, alternating, best of ``runs``."""
    plain_w = workload.build(nodes=5000, gangs=1000, gang_size=10)
    linked_w = workload.constrained(workload.build(nodes=5000, gangs=1000, gang_size=10))
    plain_best = linked_best = float("inf")
    ratios: list[float] = []
    for _ in range(runs):
        plain, plain_elapsed = best_session(plain_w, 1)
        plain_best = min(plain_best, plain_elapsed)
        linked, elapsed = best_session(linked_w, 1)
        linked_best = min(linked_best, elapsed)
        ratios.append(
            pods_per_s(bound_of(linked), elapsed) / pods_per_s(bound_of(plain), plain_elapsed)
        )
    plain_rate = pods_per_s(bound_of(plain), plain_best)
    linked_rate = pods_per_s(bound_of(linked), linked_best)
    print(
        f"constraints: 5,000 nodes in 50 zones, {linked_w.pending:,} pending pods; pumice "
        f"bound {bound_of(linked):,} in {linked_best:.2f} s = {linked_rate:,.0f} pods/s; plain "
        f"gangs bound {bound_of(plain):,} in {plain_best:.2f} s = {plain_rate:,.0f} pods/s; "
        f"ratio {linked_rate / plain_rate:.2f}x, best of {runs} runs each (per run: "
        f"{', '.join(f'{r:.2f}x' for r in ratios)}) (targets: >= "
        f"{TARGET_PODS_PER_S:,.0f} pods/s, >= {TARGET_CONSTRAINED_SHARE}x gangs)"
    )
    reasons = {r.split(": ", 1)[-1] for r in linked.task_reasons.values()}
    if reasons:
        print(f"  pending reasons: {sorted(reasons)[:3]}")
    if record:
        Path(record).write_text(json.dumps(decisions_of(linked), indent=1, sort_keys=True))
        print(f"  decisions written to {record}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenario", default="all", choices=["gangs", "big-gang", "cycle", "constraints", "all"]
    )
    parser.add_argument(
        "--record",
        help="write the decisions of the gangs scenario (or of big-gang or constraints when it "
        "alone runs) to this file",
    )
    parser.add_argument("--time-hooks", action="store_true", help="clock every hook call")
    parser.add_argument(
        "--count-ops",
        action="store_true",
        help="count the Python opcodes and calls of one session of gangs or big-gang instead "
        "of timing it",
    )
    args = parser.parse_args()
    global TIME_HOOKS
    TIME_HOOKS = args.time_hooks
    print(
        f"bench_allocate.py {' '.join(sys.argv[1:]) or '(no flags)'}: --scenario "
        f"{args.scenario}, --record {args.record or '(none)'}, --time-hooks "
        f"{'on' if args.time_hooks else 'off'}, --count-ops {'on' if args.count_ops else 'off'}; "
        + (
            "Python opcodes and calls of one session, counted by a tracer; "
            if args.count_ops
            else "CPU time, best of 3 alternating runs; "
        )
        + "pods parsed as the cache parses them, at model build; no automatic GC in sessions"
    )
    if args.count_ops:
        if args.scenario in ("gangs", "all"):
            count_ops("gangs", workload.build(nodes=5000, gangs=1000, gang_size=10))
        if args.scenario in ("big-gang", "all"):
            count_ops("big-gang", workload.build(nodes=1000, gangs=1, gang_size=1000))
        return
    if args.scenario in ("gangs", "all"):
        compare("gangs", workload.build(nodes=5000, gangs=1000, gang_size=10), args.record)
    if args.scenario in ("big-gang", "all"):
        big_gang_record = args.record if args.scenario == "big-gang" else None
        compare("big-gang", workload.build(nodes=1000, gangs=1, gang_size=1000), big_gang_record)
    if args.scenario in ("cycle", "all"):
        cycle()
    if args.scenario in ("constraints", "all"):
        constraints(args.record if args.scenario == "constraints" else None)


if __name__ == "__main__":
    main()
