"""The gang barrier of ``pumice.daemon.volumes`` when a write fails between two of a session's
commits: a session hands its binds to the event loop one by one, so a gang member's volumes can
fail (here: its claim does not exist) before the bind of another member arrives. That member is
given up with the gang, not bound alone; the next cycle forgets the failure."""

from __future__ import annotations

import asyncio

from cache.test_cache import Clock, node, pod, podgroup

from pumice.cache import ClusterCache
from pumice.daemon.volumes import VolumeBinder


def gang_cache() -> ClusterCache:
    cache = ClusterCache("pumice", clock=Clock())
    cache.nodes.on_add(node("n1"))
    cache.podgroups_handler.on_add(podgroup("train", min_member=3))
    for name in ("a", "b", "c"):
        cache.pending_pods.on_add(pod(name, group="train"))
    return cache


async def test_a_member_handed_over_after_its_gang_failed_is_given_up() -> None:
    cache = gang_cache()
    bound: list[str] = []
    given_up: dict[str, str] = {}

    def bind(*, uid: str, namespace: str, name: str, node: str) -> None:
        bound.append(name)

    def give_up(*, uid: str, namespace: str, name: str, node: str, message: str) -> None:
        given_up[name] = message

    task = cache.state.task("uid-a")
    assert task is not None
    job = task.job
    binder = VolumeBinder(cache, None, bind, give_up)  # type: ignore[arg-type]
    # the session asks for a's claim and hands a's bind over ...
    binder.expect(uid="uid-a", job=job, claim="ns/missing", volume=None, node="n1")
    for name in ("a",):
        assert cache.assume(f"uid-{name}", node="n1")
        assert binder.holds(uid=f"uid-{name}", namespace="ns", name=name, node="n1")
    # ... the write fails (no such claim) before the session's next commits arrive
    for _ in range(5):
        await asyncio.sleep(0)
    assert "a" in given_up and 'persistentvolumeclaim "missing" not found' in given_up["a"]
    # b (no volumes) arrives afterwards: bound now would be a partial gang
    assert cache.assume("uid-b", node="n1")
    assert binder.holds(uid="uid-b", namespace="ns", name="b", node="n1")
    # and c, with a claim of its own, too
    binder.expect(uid="uid-c", job=job, claim="ns/other", volume=None, node="n1")
    assert cache.assume("uid-c", node="n1")
    assert binder.holds(uid="uid-c", namespace="ns", name="c", node="n1")
    assert bound == []
    assert set(given_up) == {"a", "b", "c"}
    assert "of the same gang, failed" in given_up["b"] and given_up["b"] == given_up["c"]
    assert binder.waiting == 0
    # the next session may place the gang again: its pods are no longer refused on sight
    binder.new_cycle()
    cache.forget("uid-b")
    assert cache.assume("uid-b", node="n1")
    assert not binder.holds(uid="uid-b", namespace="ns", name="b", node="n1")
