"""Hook timing for the daemon's metrics: with ``time_hooks`` every implementation's calls are
counted and clocked per (plugin, hook); without it nothing is recorded."""

from __future__ import annotations

import time

import pytest

from pumice import Plugin
from support.builders import add_job, cluster, make_plugin, open_session

PAUSE = 0.002


def slow_and_fast() -> dict[str, type[Plugin]]:
    def slow_allocatable(self: object, queue: object, task: object) -> bool:
        time.sleep(PAUSE)
        return True

    return {
        "slow": make_plugin("Slow", allocatable=slow_allocatable),
        "fast": make_plugin("Fast", job_order_key=lambda self, job: 0),
    }


def test_each_hook_call_is_counted_and_clocked_per_plugin() -> None:
    snap = cluster()
    jobs = [add_job(snap, name) for name in ("a", "b", "c")]
    ssn = open_session(slow_and_fast(), [["slow", "fast"]], snap, time_hooks=True)
    queue = next(iter(snap.queues.values()))
    task = next(iter(jobs[0].tasks.values()))
    for _ in range(4):
        assert ssn.allocatable(queue, task)
    ssn.sort_jobs(jobs)
    slow, fast = ssn.hook_time[("slow", "allocatable")], ssn.hook_time[("fast", "job_order_key")]
    assert (slow.calls, fast.calls) == (4, 3)
    assert slow.seconds >= 4 * PAUSE  # a sleep lasts at least as long as asked
    assert 0 <= fast.seconds < slow.seconds
    assert set(ssn.hook_time) == {("slow", "allocatable"), ("fast", "job_order_key")}


def test_a_hook_that_raises_is_still_clocked() -> None:
    def failing(self: object, job: object) -> int:
        raise RuntimeError("no order")

    snap = cluster()
    job = add_job(snap, "a")
    ssn = open_session(
        {"bad": make_plugin("Bad", job_order_key=failing)}, [["bad"]], snap, time_hooks=True
    )
    with pytest.raises(RuntimeError, match="no order"):
        ssn.job_order_key(job)
    assert ssn.hook_time[("bad", "job_order_key")].calls == 1


def test_without_time_hooks_nothing_is_recorded() -> None:
    snap = cluster()
    jobs = [add_job(snap, name) for name in ("a", "b")]
    ssn = open_session(slow_and_fast(), [["slow", "fast"]], snap)
    ssn.sort_jobs(jobs)
    assert ssn.hook_time == {}
