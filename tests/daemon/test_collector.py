"""The collector policy: automatic collection off from the first list on, the heap frozen once
synced, cycles freed only at the loop's turns, everything given back at stop (the last of
several daemons in one process restoring it)."""

from __future__ import annotations

import asyncio
import gc
import weakref

from pumice.daemon.collector import CollectorPolicy


class Node:
    def __init__(self) -> None:
        self.table: list[Node] = [self]  # a cycle, as a NodeTable and its NodeInfos make


async def test_paused_while_listing_then_frozen_until_stopped() -> None:
    assert gc.isenabled()
    frozen_before = gc.get_freeze_count()
    policy = CollectorPolicy()
    policy.listing()
    assert not gc.isenabled()
    kept = [{"pod": i} for i in range(1000)]  # what the cache would hold
    policy.synced()
    assert not gc.isenabled()  # automatic collection stays off while the daemon runs
    assert gc.get_freeze_count() >= frozen_before + len(kept)
    policy.stop()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    policy.stop()  # again: nothing left to undo
    assert gc.isenabled()


async def test_a_listing_that_drags_on_collects_on_its_interval() -> None:
    policy = CollectorPolicy(listing_limit=0.01)
    policy.listing()
    try:
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage
        assert gone() is not None
        await asyncio.sleep(0.1)
        assert gone() is None and policy.collections >= 1
        assert not gc.isenabled()
    finally:
        policy.stop()
    assert gc.isenabled()


async def test_a_daemon_stopped_before_it_synced_leaves_the_collector_on() -> None:
    policy = CollectorPolicy(listing_limit=0.01)
    policy.listing()
    policy.stop()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    await asyncio.sleep(0.05)  # the listing timer was cancelled: it collects nothing more
    assert policy.collections == 0


async def test_collection_waits_for_a_turn_and_young_limit() -> None:
    policy = CollectorPolicy(young_limit=1_000)
    policy.listing()
    policy.synced()
    try:
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage
        assert gone() is not None  # nothing automatic: it stays until a turn
        keep = [[i] for i in range(2_000)]  # enough young objects for the next turn
        policy.turn()
        assert gone() is None and policy.collections == 1
        del keep
    finally:
        policy.stop()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


async def test_a_turn_before_sync_or_below_the_young_limit_collects_nothing() -> None:
    policy = CollectorPolicy(young_limit=10**9)
    policy.listing()
    try:
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage
        policy.turn()  # still listing: turns do nothing
        policy.synced()
        policy.turn()
        assert gone() is not None and policy.collections == 0
    finally:
        policy.stop()
    gc.collect()
    assert gone() is None


async def test_full_collection_on_its_interval_and_daemons_share_the_collector() -> None:
    now = [0.0]
    first = CollectorPolicy(full_interval=60.0, young_limit=10**9, clock=lambda: now[0])
    second = CollectorPolicy()
    first.listing()
    first.synced()
    second.listing()  # a second daemon starts listing while the first runs
    try:
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage
        now[0] = 61.0
        first.turn()
        assert gone() is None and first.collections == 1
        first.stop()
        assert not gc.isenabled()  # the second daemon still lists
        assert gc.get_freeze_count() > 0  # and what the first froze stays frozen
    finally:
        first.stop()
        second.stop()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
