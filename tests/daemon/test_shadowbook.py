"""The shadow's books: each pod the shadow decided resolves once, into the outcome it earned."""

from __future__ import annotations

from daemon.workload import node, pod
from pumice.cache import ClusterCache
from pumice.daemon.shadow import live_state, tee_binds
from pumice.daemon.shadowbook import Live, ShadowBook


class Cluster:
    """Where the live cluster has each pod (what the shadow's cache would say)."""

    def __init__(self) -> None:
        self.pods: dict[str, tuple[Live, str | None]] = {}

    def pending(self, *uids: str) -> dict[str, str]:
        for uid in uids:
            self.pods[uid] = (Live.PENDING, None)
        return {uid: f"batch/{uid}" for uid in uids}

    def bind(self, book: ShadowBook, uid: str, node: str) -> None:
        self.pods[uid] = (Live.BOUND, node)
        book.bound(uid, node=node)

    def where(self, uid: str) -> tuple[Live, str | None]:
        return self.pods.get(uid, (Live.GONE, None))


def test_each_outcome_is_counted_once_and_reported_in_the_next_line() -> None:
    book, cluster = ShadowBook(), Cluster()
    seen = cluster.pending("a", "b", "c", "d")
    assert (
        book.decide(
            seen=seen, placed={"a": "n1", "b": "n1", "c": "n2"}, cycle=1, where=cluster.where
        )
        == 4
    )
    assert book.open == 3 and book.undecided([*seen, "e"]) == 1
    cluster.bind(book, "a", "n1")  # same
    cluster.bind(book, "b", "n2")  # different
    cluster.bind(book, "d", "n2")  # the shadow left it pending: only_live
    cluster.bind(book, "a", "n1")  # a repeated event counts nothing more
    book.expire(1, cluster.where)  # the end of the deciding cycle: c is not due yet
    assert book.line(1, pods=4) == {
        "cycle": 1,
        "pods": 4,
        "same": 1,
        "different": [{"pod": "batch/b", "shadow": "n1", "live": "n2"}],
        "only_shadow": 0,
        "only_live": 1,
    }
    assert book.open == 1 and not book.unreported
    assert (
        book.decide(seen=cluster.pending("c"), placed={"c": "n2"}, cycle=2, where=cluster.where)
        == 0
    )  # again
    book.expire(2, cluster.where)  # the end of the next cycle, c still pending: only_shadow
    assert book.line(2, pods=0)["only_shadow"] == 1
    assert book.totals == {"same": 1, "different": 1, "only_shadow": 1, "only_live": 1}
    assert book.agreement() == 0.5
    cluster.bind(book, "c", "n2")  # too late: c already counted
    assert not book.unreported and book.open == 0


def test_a_bind_that_arrives_during_the_next_cycle_is_in_time() -> None:
    book, cluster = ShadowBook(), Cluster()
    book.decide(seen=cluster.pending("p"), placed={"p": "n1"}, cycle=7, where=cluster.where)
    book.expire(7, cluster.where)
    cluster.bind(book, "p", "n1")  # while cycle 8 runs
    book.expire(8, cluster.where)
    assert book.line(8, pods=0)["same"] == 1 and book.totals["only_shadow"] == 0


def test_a_pod_first_seen_bound_or_deleted_counts_nothing() -> None:
    book, cluster = ShadowBook(), Cluster()
    cluster.bind(book, "early", "n1")  # bound before any session saw it pending
    seen = cluster.pending("gone")
    book.decide(seen=seen, placed={"gone": "n1"}, cycle=1, where=cluster.where)
    del cluster.pods["gone"]  # deleted before anyone bound it
    book.expire(5, cluster.where)
    assert not book.unreported and book.open == 0 and book.records == {}
    assert book.agreement() is None
    assert book.undecided(["early", "new"]) == 2


def test_a_bind_during_the_session_resolves_when_the_decision_is_entered() -> None:
    book, cluster = ShadowBook(), Cluster()
    seen = cluster.pending("p")
    cluster.bind(book, "p", "n2")  # the watch delivered it while the session decided
    book.decide(seen=seen, placed={"p": "n1"}, cycle=1, where=cluster.where)
    assert book.line(1, pods=1)["different"] == [{"pod": "batch/p", "shadow": "n1", "live": "n2"}]


def test_the_latest_opinion_counts_and_the_deadline_runs_from_the_first_choice() -> None:
    book, cluster = ShadowBook(), Cluster()
    seen = cluster.pending("p", "q")
    book.decide(seen=seen, placed={"q": "n1"}, cycle=1, where=cluster.where)  # p left pending
    book.expire(1, cluster.where)
    book.decide(seen=seen, placed={"p": "n1", "q": "n2"}, cycle=2, where=cluster.where)
    book.expire(2, cluster.where)  # q was first chosen in cycle 1: due; p only in cycle 2
    assert book.line(2, pods=2)["only_shadow"] == 1 and book.open == 1
    cluster.bind(book, "p", "n1")
    assert book.line(3, pods=0)["same"] == 1


def test_a_pod_that_left_the_pending_watch_is_waited_for_until_the_cache_knows() -> None:
    book, cluster = ShadowBook(), Cluster()
    book.decide(
        seen=cluster.pending("bound", "deleted"),
        placed={"bound": "n1", "deleted": "n1"},
        cycle=1,
        where=cluster.where,
    )
    cluster.pods["bound"] = cluster.pods["deleted"] = (Live.LEFT, None)
    for cycle in range(2, 6):  # left the pending watch before the deadline: not only_shadow
        book.expire(cycle, cluster.where)
    assert book.open == 2 and not book.unreported
    cluster.bind(book, "bound", "n2")  # the assigned watch's ADD: the bind did happen
    del cluster.pods["deleted"]  # the cache let it go: it was deleted
    book.expire(6, cluster.where)
    assert book.open == 0
    assert book.line(6, pods=0)["different"] == [
        {"pod": "batch/bound", "shadow": "n1", "live": "n2"}
    ]
    assert book.totals == {"same": 0, "different": 1, "only_shadow": 0, "only_live": 0}


def test_the_assigned_pods_informer_tells_the_book_at_once() -> None:
    cache = ClusterCache("other")
    book = ShadowBook()
    tee_binds(cache, book)
    cache.nodes.on_add(node("n1"))
    cache.nodes.on_add(node("n2"))
    cache.pending_pods.on_add(pod("p", scheduler="other"))
    uid = next(iter(cache.pods))
    assert live_state(cache, uid) == (Live.PENDING, None)
    book.decide(
        seen={uid: "batch/p"}, placed={uid: "n1"}, cycle=1, where=lambda u: live_state(cache, u)
    )
    cache.assigned_pods.on_add(pod("p", scheduler="other", node_name="n2"))
    # settled by the watch event itself, not at the end of a cycle, and the cache has it too
    assert book.line(1, pods=0)["different"] == [{"pod": "batch/p", "shadow": "n1", "live": "n2"}]
    assert live_state(cache, uid) == (Live.BOUND, "n2")
