"""The status lane: writes wait behind binds, Scheduled events are shed beyond the bound."""

from __future__ import annotations

import asyncio

from pumice.daemon.writes import StatusLane


class Writes:
    """Status writes that finish when told to, recording how many ran at once."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0
        self.done: list[str] = []
        self.release = asyncio.Event()

    async def write(self, name: str) -> None:
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await self.release.wait()
            self.done.append(name)
        finally:
            self.running -= 1


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_writes_go_one_at_a_time_while_binds_are_in_flight() -> None:
    binds = 3
    lane = StatusLane(lambda: binds > 0, concurrency=8)
    writes = Writes()
    for i in range(20):
        lane.submit(writes.write(f"w{i}"))
    await settle()
    assert writes.running == 1 and lane.pending == 20
    binds = 0
    lane.pump()  # what BackgroundWork does when its last bind settles
    await settle()
    assert writes.running == 8
    writes.release.set()
    assert await lane.drain(5.0)
    assert writes.done == [f"w{i}" for i in range(20)]
    assert lane.pending == 0 and lane.sent == 20 and writes.peak == 8


async def test_scheduled_events_beyond_the_bound_are_shed_and_counted() -> None:
    binds = 1
    lane = StatusLane(lambda: binds > 0, capacity=5, concurrency=4)
    writes = Writes()
    accepted = [lane.submit(writes.write(f"e{i}"), sheddable=True) for i in range(10)]
    # Binds are in flight: none is sent, five wait; the rest are dropped.
    await settle()
    assert accepted.count(True) == 5 and lane.shed == 5 and writes.running == 0
    # Other writes (conditions, statuses) are never dropped, bound or not, and do not wait
    # for the binds to drain.
    assert lane.submit(writes.write("condition"))
    await settle()
    assert writes.running == 1
    writes.release.set()
    await settle()
    assert writes.done == ["condition"]
    binds = 0
    lane.pump()  # the last bind settled
    assert await lane.drain(5.0)
    assert writes.done == ["condition", "e0", "e1", "e2", "e3", "e4"]


async def test_a_full_lane_says_so_before_the_event_is_made_and_counts_it_shed() -> None:
    lane = StatusLane(lambda: True, capacity=2, concurrency=1)
    writes = Writes()
    made = 0
    for i in range(6):  # as BackgroundWork settles a bind: ask first, make only if it goes
        if lane.shedding:
            lane.shed_one()
        else:
            made += 1
            assert lane.submit(writes.write(f"e{i}"), sheddable=True)
        await settle()
    # two wait: the other four were never made, and are counted
    assert made == 2 and lane.shed == 4 and lane.pending == 2
    writes.release.set()
    lane.later_limit = 0.0  # (they would go once binds drained or after the limit)
    assert await lane.drain(5.0)
    assert not lane.shedding and len(writes.done) == 2


async def test_scheduled_events_wait_for_the_binds_at_most_the_limit() -> None:
    now = 100.0
    lane = StatusLane(lambda: True, concurrency=4, later_limit=10.0, clock=lambda: now)
    writes = Writes()
    writes.release.set()
    lane.submit(writes.write("scheduled"), sheddable=True)
    await settle()
    lane.pump()
    await settle()
    assert writes.done == [] and lane.pending == 1
    now += 10.0  # binds never drained: it goes beside them, through the busy worker
    lane.pump()
    assert await lane.drain(5.0)
    assert writes.done == ["scheduled"]


async def test_a_failing_write_is_logged_and_the_rest_still_go(caplog: object) -> None:
    lane = StatusLane(lambda: False)

    async def broken() -> None:
        raise RuntimeError("server said no")

    writes = Writes()
    writes.release.set()
    lane.submit(broken())
    lane.submit(writes.write("after"))
    assert await lane.drain(5.0)
    assert writes.done == ["after"]
    assert "server said no" in caplog.text  # type: ignore[attr-defined]


async def test_cancel_drops_what_waits_without_running_it() -> None:
    lane = StatusLane(lambda: True)
    writes = Writes()
    lane.submit(writes.write("sending"))
    lane.submit(writes.write("waiting"))
    await settle()
    await lane.cancel()
    assert writes.done == [] and lane.pending == 0
