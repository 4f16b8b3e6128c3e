"""The paced collector: automatic collection off while it runs, cycles freed at its turns."""

from __future__ import annotations

import gc
import weakref

from pumice.daemon.collector import PacedCollector


class Node:
    def __init__(self) -> None:
        self.table: list[Node] = [self]  # a cycle, as a NodeTable and its NodeInfos make


def test_collection_waits_for_a_turn_and_young_limit() -> None:
    was_enabled = gc.isenabled()
    collector = PacedCollector(young_limit=1_000)
    collector.start()
    try:
        assert not gc.isenabled()
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage
        assert gone() is not None
        assert gone() is not None  # nothing automatic: it stays until a turn
        keep = [[i] for i in range(2_000)]  # enough young objects for the next turn
        collector.turn()
        assert gone() is None and collector.collections == 1
        del keep
    finally:
        collector.stop()
    assert gc.isenabled() == was_enabled
    assert gc.get_freeze_count() == 0


def test_a_turn_below_the_young_limit_collects_nothing() -> None:
    collector = PacedCollector(young_limit=10**9)
    collector.start()
    try:
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage
        collector.turn()
        assert gone() is not None and collector.collections == 0
    finally:
        collector.stop()
    gc.collect()
    assert gone() is None


def test_full_collection_on_its_interval_and_nested_daemons_share_the_collector() -> None:
    now = [0.0]
    first = PacedCollector(full_interval=60.0, young_limit=10**9, clock=lambda: now[0])
    second = PacedCollector()
    first.start()
    second.start()
    try:
        garbage = Node()
        gone = weakref.ref(garbage)
        del garbage
        now[0] = 61.0
        first.turn()
        assert gone() is None and first.collections == 1
        first.stop()
        assert not gc.isenabled()  # the second daemon still runs
    finally:
        first.stop()
        second.stop()
    assert gc.isenabled()
