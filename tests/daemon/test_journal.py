"""The cache's journal: a cache rebuilt from it, line by line, takes the same snapshots as the
journaled one, whatever the daemon did to it (every handler, every method, the clock)."""

from __future__ import annotations

import time

import pytest

from daemon.workload import gang, node, pod, podgroup
from pumice.cache import ClusterCache, PodState
from pumice.daemon.journal import READS, Journal, JournalError, Replica, fingerprint, mutators


def journaled() -> tuple[Journal, ClusterCache, list[bytes]]:
    lines: list[bytes] = []
    journal = Journal(lines.append)
    cache = journal.cache("pumice", volcano=True, default_queue="default")
    return journal, cache, lines


def replayed(lines: list[bytes]) -> Replica:
    replica = Replica()
    for line in lines:
        replica.apply(line)
    return replica


def claim(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "batch", "uid": f"claim-{name}"},
        "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"},
    }


def test_the_methods_that_change_the_cache_are_journaled_and_the_reads_are_not() -> None:
    _, cache, lines = journaled()
    assert {"assume", "forget", "gone", "snapshot", "tidy"} <= set(mutators())
    assert not READS & set(mutators())
    cache.nodes.on_add(node("n0"))
    before = len(lines)
    cache.waiting(), cache.counts(), cache.holding(), cache.evicted(), cache.held()
    list(cache.entries(PodState.INITIAL))
    assert len(lines) == before
    cache.tidy()
    cache.snapshot()  # which calls tidy() itself: one line, not two
    assert [line[:18] for line in lines[before:]] == [b'["call","tidy",[],', b'["call","snapshot"']


def test_a_replica_takes_the_same_snapshots_after_everything_the_daemon_does() -> None:
    _, cache, lines = journaled()
    marks: list[tuple[int, int]] = []

    def mark() -> None:
        """A cycle: the snapshot the session would get, and where the journal stood."""
        taken = cache.snapshot()
        marks.append((len(lines), fingerprint(taken)))

    for i in range(4):
        cache.nodes.on_add(node(f"n{i}", cpu="4"))
    cache.namespaces.on_add({"metadata": {"name": "batch", "labels": {"team": "a"}}})
    cache.priority_classes.on_add(
        {"metadata": {"name": "high"}, "value": 1000, "kind": "PriorityClass"}
    )
    cache.queues.on_add({"metadata": {"name": "default"}, "spec": {"weight": 1}})
    claims = cache.storage.handler("claims")
    claims.on_add(claim("data"))
    for obj in gang("g", 2):
        if obj["kind"] == "PodGroup":
            cache.podgroups_handler.on_add(obj)
        else:
            cache.pending_pods.on_add(cache.slim_pod(obj))
    for i in range(3):
        cache.pending_pods.on_add(cache.slim_pod(pod(f"loose-{i}")))
    cache.assigned_pods.on_add(cache.slim_pod(pod("running", node_name="n3")))
    mark()
    uids = {e.key: e.uid for e in cache.pods.values()}
    cache.assume(uids["batch/g-0"], node="n0")
    cache.assume(uids["batch/g-1"], node="n1")
    cache.assume(uids["batch/loose-0"], node="n2")
    cache.assume(uids["batch/loose-1"], node="n2")
    cache.finish_binding(uids["batch/g-0"])
    cache.forget(uids["batch/loose-1"], hold=30.0)  # a failed bind: held back, by the clock
    cache.bound_elsewhere(uids["batch/loose-0"])
    mark()
    cache.pending_pods.on_delete(cache.slim_pod(pod("g-0")))
    cache.assigned_pods.on_add(cache.slim_pod(pod("g-0", group="g", node_name="n0")))
    cache.evicting(uids["batch/running"])
    cache.gone(uids["batch/loose-2"])
    cache.nodes.on_update(node("n3", cpu="4"), {**node("n3", cpu="8"), "spec": {}})
    cache.nodes.on_delete(node("n2"))
    claims.on_update(claim("data"), {**claim("data"), "status": {"phase": "Bound"}})
    cache.podgroups_handler.on_update(podgroup("g", 2), podgroup("g", 1))
    cache.tidy()
    mark()
    cache.evicting(uids["batch/running"], asked=False)
    cache.assigned_pods.on_delete(cache.slim_pod(pod("running", node_name="n3")))
    mark()
    # replayed up to each mark, the replica's snapshot is the live one's
    for end, expected in marks:
        replica = replayed(lines[:end])
        assert replica.snapshot is not None and fingerprint(replica.snapshot) == expected
    assert len({f for _, f in marks}) == len(marks)  # each cycle saw a different cluster


def test_the_held_back_pod_comes_back_when_the_recorded_clock_says_so() -> None:
    _, cache, lines = journaled()
    cache.nodes.on_add(node("n0"))
    cache.pending_pods.on_add(cache.slim_pod(pod("p")))
    [uid] = list(cache.pods)
    cache.assume(uid, node="n0")
    cache.forget(uid, hold=0.05)
    held = cache.snapshot()
    assert held.task(uid) is None  # backing off: not offered
    time.sleep(0.06)
    back = cache.snapshot()
    assert back.task(uid) is not None
    replica = Replica()
    taken = []
    for line in lines:
        replica.apply(line)
        if line.startswith(b'["call","snapshot"'):
            assert replica.snapshot is not None
            taken.append(replica.snapshot.task(uid) is not None)
    assert taken == [False, True]


def test_a_journal_out_of_step_with_the_cache_is_refused() -> None:
    _, cache, lines = journaled()
    cache.nodes.on_add(node("n0"))
    cache.pending_pods.on_add(cache.slim_pod(pod("p")))
    cache.snapshot()  # reads the clock: its reading is in the line
    snapshot_line = lines[-1]
    assert snapshot_line.startswith(b'["call","snapshot"')
    replica = replayed(lines[:-1])
    with pytest.raises(JournalError, match="clock"):
        replica.apply(snapshot_line.replace(b"]]", b",1.0]]"))  # one reading too many
    with pytest.raises(JournalError, match="no method"):
        replica.apply(b'["call","_sync",[],{},[]]\n')
    with pytest.raises(JournalError, match="no handler"):
        replica.apply(b'["ev","elsewhere","add",{},[]]\n')
    with pytest.raises(JournalError, match="unreadable"):
        replica.apply(b'["ev","nodes"')
    with pytest.raises(JournalError, match="start"):
        Replica().apply(lines[1])


def test_a_call_it_cannot_write_stops_the_journal_and_says_why() -> None:
    journal, cache, lines = journaled()
    before = len(lines)
    cache.nodes.on_add({**node("n0"), "odd": {1, 2}})  # not JSON: no line, and why
    assert journal.broken is not None and "cannot journal" in journal.broken
    cache.nodes.on_add(node("n1"))
    assert len(lines) == before  # nothing more: a journal with a hole is no journal
