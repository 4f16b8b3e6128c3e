"""LeaderElector: two candidates against one sim; one leads, release hands over at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sim.simkit import poll, wait_until

from kube.conftest import connect_to
from pumice.kube import EVENTS, LEASES, EventRecorder, Kube
from pumice.kube.lease import LeaderElector

# Short periods keep the tests quick; nothing below asserts on how long anything took.
TIMES = {"lease_duration": 2.5, "renew_deadline": 2.0, "retry_period": 0.05}


class Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def callbacks(self, who: str) -> dict[str, Any]:
        return {
            "on_started_leading": lambda: self.lines.append(f"{who} started"),
            "on_stopped_leading": lambda: self.lines.append(f"{who} stopped"),
        }


def elector(kube: Kube, who: str, log: Log, **kw: Any) -> LeaderElector:
    return LeaderElector(
        kube,
        name="pumice",
        namespace="kube-system",
        identity=who,
        **{**TIMES, **log.callbacks(who), **kw},
    )


async def lease(kube: Kube) -> dict[str, Any]:
    return await kube.request("GET", LEASES.path("kube-system", "pumice"))


@contextlib.asynccontextmanager
async def running(*electors: LeaderElector) -> AsyncIterator[dict[str, asyncio.Task[None]]]:
    tasks = {e.identity: asyncio.create_task(e.run()) for e in electors}
    try:
        yield tasks
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)


async def test_one_of_two_leads_and_release_hands_over(sim: Any, kube: Kube) -> None:
    log = Log()
    other = await connect_to(sim)
    try:
        a, b = elector(kube, "a", log), elector(other, "b", log)
        async with running(a, b) as tasks:
            await wait_until(lambda: a.is_leader or b.is_leader)
            first, second = (a, b) if a.is_leader else (b, a)
            got = await lease(kube)
            assert got["spec"]["holderIdentity"] == first.identity
            assert got["spec"]["leaseTransitions"] == 0
            assert got["spec"]["renewTime"].endswith("Z")
            # renewals keep it: the standby stays a standby through several periods
            renewed = got["spec"]["renewTime"]
            for _ in range(5):
                await asyncio.sleep(TIMES["retry_period"])
            assert not second.is_leader
            later = await lease(kube)
            assert later["spec"]["renewTime"] != renewed
            assert later["spec"]["acquireTime"] == got["spec"]["acquireTime"]
            # graceful shutdown of the leader releases; the standby takes over
            tasks[first.identity].cancel()
            with pytest.raises(asyncio.CancelledError):
                await tasks[first.identity]
            await wait_until(lambda: second.is_leader)
            taken = await lease(kube)
            assert taken["spec"]["holderIdentity"] == second.identity
            assert taken["spec"]["leaseTransitions"] == 1
        assert log.lines[:3] == [
            f"{first.identity} started",
            f"{first.identity} stopped",
            f"{second.identity} started",
        ]
        released = [w for w in sim.writes if w.resource == "leases" and w.method == "PUT"]
        assert all(w.code in (200, 409) for w in released)
    finally:
        await other.close()


async def test_a_crashed_leader_is_replaced_after_the_lease_expires(sim: Any, kube: Kube) -> None:
    log = Log()
    other = await connect_to(sim)
    try:
        a = elector(kube, "a", log)
        async with running(a):
            await wait_until(lambda: a.is_leader)
        # a was cancelled and released; "crashed" takes it and dies without releasing
        crashed = elector(kube, "crashed", log, release_on_cancel=False)
        async with running(crashed):
            await wait_until(lambda: crashed.is_leader)
        assert (await lease(kube))["spec"]["holderIdentity"] == "crashed"
        b = elector(other, "b", log)
        async with running(b):
            await wait_until(lambda: b.is_leader, timeout=10)
        got = await lease(kube)
        # a took it (0), crashed took it after a's release (1), b after it expired (2)
        assert got["spec"]["leaseTransitions"] == 2
    finally:
        await other.close()


async def test_leader_that_cannot_renew_stops_leading(sim: Any, kube: Kube) -> None:
    log = Log()
    a = elector(kube, "a", log)
    task = asyncio.create_task(a.run())
    try:
        await wait_until(lambda: a.is_leader)
        sim.faults.fail(500, verb="update", resource="leases")
        await asyncio.wait_for(task, 10)  # run() returns: the lease is lost
        assert not a.is_leader
        assert log.lines == ["a started", "a stopped"]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_two_writers_of_one_version_cannot_both_win(sim: Any, kube: Kube) -> None:
    log = Log()
    a, b = elector(kube, "a", log), elector(kube, "b", log)
    assert await a.try_acquire_or_renew()
    await a.release()
    # both read the released lease, then both write the same resourceVersion
    results = await asyncio.gather(a.try_acquire_or_renew(), b.try_acquire_or_renew())
    assert sorted(results) == [False, True]
    assert [w.code for w in sim.writes if w.method == "PUT"][-2:] in ([200, 409], [409, 200])


async def test_leader_election_event(sim: Any, kube: Kube) -> None:
    log = Log()
    recorder = EventRecorder(kube, controller="pumice", instance="pumice-a")
    a = elector(kube, "a", log, recorder=recorder)
    async with running(a):
        await wait_until(lambda: a.is_leader)

        async def notes() -> list[str]:
            listed = await kube.request("GET", EVENTS.path("kube-system"))
            return [e["note"] for e in listed["items"]]

        async def announced() -> bool:
            return bool(await notes())

        await poll(announced)
        assert await notes() == ["a became leader"]


def test_periods_must_nest() -> None:
    with pytest.raises(ValueError, match="leaseDuration > renewDeadline > retryPeriod"):
        LeaderElector(
            None,
            name="x",
            namespace="y",
            identity="z",  # type: ignore[arg-type]
            lease_duration=5,
            renew_deadline=10,
            retry_period=2,
        )
