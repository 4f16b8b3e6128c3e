"""``ProportionPlugin.shares()``: what the daemon's queue metrics read — each queue's deserved,
allocated and share as the session leaves them, unaffected by later changes."""

from __future__ import annotations

import pytest

from support.flow import gang, nodes, open_flow, proportion_of, queue, snapshot


def test_shares_follow_allocations_and_are_a_copy() -> None:
    # cpu 8000 between two equal queues, each asking for 6 x 1 cpu -> deserved 4000 cpu each
    jobs = [gang("a", 6, queue="qa", memory=0), gang("b", 6, queue="qb", memory=0)]
    ssn = open_flow(snapshot(nodes(2), jobs, [queue("qa"), queue("qb")]), [["proportion"]])
    plugin = proportion_of(ssn)
    before = plugin.shares()
    assert set(before) == {"qa", "qb"}
    assert before["qa"].deserved["cpu"] == pytest.approx(4000)
    assert before["qa"].allocated["cpu"] == 0 and before["qa"].share == 0.0
    stmt = ssn.statement()
    for i, task in enumerate(sorted(jobs[0].tasks.values(), key=lambda t: t.name)[:2]):
        stmt.allocate(task, f"n{i}")
    after = plugin.shares()
    assert after["qa"].allocated["cpu"] == pytest.approx(2000)
    assert after["qa"].share == pytest.approx(0.5)
    assert after["qb"].share == 0.0
    # the first answer did not move with the allocations
    assert before["qa"].allocated["cpu"] == 0 and before["qa"].share == 0.0
