"""StartUpHeap: no collector passes while the informers list; the heap frozen once synced and
given back when the daemon stops; a start-up that takes too long gets the collector back."""

from __future__ import annotations

import asyncio
import gc

from pumice.daemon.heap import StartUpHeap


async def test_paused_until_synced_then_frozen_until_released() -> None:
    assert gc.isenabled()
    frozen_before = gc.get_freeze_count()
    heap = StartUpHeap()
    assert not gc.isenabled()
    kept = [{"pod": i} for i in range(1000)]  # what the cache would hold
    heap.synced()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_before + len(kept)
    heap.release()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    heap.release()  # again: nothing left to undo
    assert gc.isenabled()


async def test_a_start_up_that_never_syncs_gets_the_collector_back() -> None:
    heap = StartUpHeap(limit=0.01)
    assert not gc.isenabled()
    await asyncio.sleep(0.05)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    heap.synced()  # too late to freeze anything
    assert gc.get_freeze_count() == 0
    heap.release()
    assert gc.isenabled()


async def test_a_daemon_stopped_before_it_synced_leaves_the_collector_on() -> None:
    heap = StartUpHeap()
    heap.release()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
