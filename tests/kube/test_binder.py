"""Binder: exactly-once binding through 500s and 409s; Evictor: 429 retries, gone pods."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from sim.simkit import node, pod

from kube.kubekit import SIM_PODS
from pumice.kube import (
    PODS,
    Binder,
    BindOutcome,
    Conflict,
    Evictor,
    EvictOutcome,
    Kube,
    ServerError,
)


def seed(sim: Any, pods: int, nodes: int = 3) -> dict[str, str]:
    """Nodes n0.., pending pods p0..; returns each pod's uid."""
    for i in range(nodes):
        sim.create(node(f"n{i}"))
    return {f"p{i}": sim.create(pod(f"p{i}"))["metadata"]["uid"] for i in range(pods)}


async def node_of(kube: Kube, name: str) -> str | None:
    got = await kube.request("GET", PODS.path("default", name))
    value: str | None = got["spec"].get("nodeName")
    return value


def successful_binds(sim: Any) -> Counter[str]:
    return Counter(w.name for w in sim.writes if w.resource == "pods/binding" and w.code == 201)


async def test_bind_sets_the_node_once(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 1)
    binder = Binder(kube)
    result = await binder.bind(namespace="default", name="p0", uid=uids["p0"], node="n1")
    assert (result.outcome, result.node, result.error) == (BindOutcome.BOUND, "n1", None)
    assert await node_of(kube, "p0") == "n1"
    assert successful_binds(sim) == {"p0": 1}


async def test_exactly_once_through_injected_500s_and_409s(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 30)
    sim.faults.fail(500, fraction=0.3, verb="create", resource="pods/binding")
    sim.faults.fail(409, fraction=0.2, verb="create", resource="pods/binding")
    binder = Binder(kube, concurrency=8)
    target = {name: f"n{i % 3}" for i, name in enumerate(uids)}
    attempts: Counter[str] = Counter()
    errors: set[type] = set()

    async def bind_until_settled(name: str) -> BindOutcome:
        while True:
            attempts[name] += 1
            result = await binder.bind(
                namespace="default", name=name, uid=uids[name], node=target[name]
            )
            if result.outcome is not BindOutcome.FAILED:
                return result.outcome
            assert result.error is not None
            errors.add(type(result.error))

    outcomes = await asyncio.gather(*(bind_until_settled(n) for n in uids))
    assert set(outcomes) == {BindOutcome.BOUND}
    assert successful_binds(sim) == dict.fromkeys(uids, 1)
    for name in uids:
        assert await node_of(kube, name) == target[name]
    assert sum(attempts.values()) > len(uids)  # the faults did fire
    assert errors == {ServerError, Conflict}  # injected 409s leave the pod unbound: retry
    assert binder.stats.peak_inflight <= 8


async def test_a_lost_response_is_recognised_by_reading_the_pod(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 1)
    binder = Binder(kube)
    first = await binder.bind(namespace="default", name="p0", uid=uids["p0"], node="n2")
    # the retry of a bind whose answer got lost: 409 "already assigned", pod on our node
    again = await binder.bind(namespace="default", name="p0", uid=uids["p0"], node="n2")
    assert (first.outcome, again.outcome, again.node) == (
        BindOutcome.BOUND,
        BindOutcome.BOUND,
        "n2",
    )
    assert successful_binds(sim) == {"p0": 1}


async def test_someone_else_bound_it(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 1)
    await Binder(kube).bind(namespace="default", name="p0", uid=uids["p0"], node="n0")
    result = await Binder(kube).bind(namespace="default", name="p0", uid=uids["p0"], node="n1")
    assert result.outcome is BindOutcome.BOUND_ELSEWHERE
    assert result.node == "n0"
    assert isinstance(result.error, Conflict)
    assert await node_of(kube, "p0") == "n0"


async def test_deleted_or_replaced_pods_are_gone(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 2)
    binder = Binder(kube)
    await kube.request("DELETE", PODS.path("default", "p0"), query={"gracePeriodSeconds": 0})
    assert (
        await binder.bind(namespace="default", name="p0", uid=uids["p0"], node="n0")
    ).outcome is BindOutcome.GONE
    # p1 deleted and recreated under the same name: the uid precondition protects the new one
    sim.registry.delete(SIM_PODS, "default", "p1", {"gracePeriodSeconds": 0})
    sim.create(pod("p1"))
    result = await binder.bind(namespace="default", name="p1", uid=uids["p1"], node="n0")
    assert result.outcome is BindOutcome.GONE
    assert await node_of(kube, "p1") is None
    assert binder.stats.outcomes == {"gone": 2}


async def test_concurrency_is_bounded(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 20)
    sim.faults.set_latency(0.02)
    binder = Binder(kube, concurrency=3)
    results = await asyncio.gather(
        *(
            binder.bind(namespace="default", name=name, uid=uid, node="n0")
            for name, uid in uids.items()
        )
    )
    assert {r.outcome for r in results} == {BindOutcome.BOUND}
    assert binder.stats.peak_inflight == 3


async def test_evict_deletes_the_pod(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 1)
    evictor = Evictor(kube)
    assert (
        await evictor.evict(namespace="default", name="p0", uid=uids["p0"]) is EvictOutcome.EVICTED
    )
    evictions = [w for w in sim.writes if w.resource == "pods/eviction"]
    assert [(w.name, w.code) for w in evictions] == [("p0", 201)]


async def test_evict_retries_429_then_succeeds(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 1)
    sim.faults.fail(429, verb="create", resource="pods/eviction", count=2, retry_after=0)
    evictor = Evictor(kube, backoff_initial=0.01, backoff_cap=0.02)
    assert (
        await evictor.evict(namespace="default", name="p0", uid=uids["p0"]) is EvictOutcome.EVICTED
    )
    codes = [w.code for w in sim.writes if w.resource == "pods/eviction"]
    assert codes == [429, 429, 201]


async def test_evict_gives_up_blocked_after_its_bound(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 1)
    sim.faults.fail(429, verb="create", resource="pods/eviction", retry_after=0)
    evictor = Evictor(kube, max_attempts=4, backoff_initial=0.01, backoff_cap=0.02)
    assert (
        await evictor.evict(namespace="default", name="p0", uid=uids["p0"]) is EvictOutcome.BLOCKED
    )
    assert len([w for w in sim.writes if w.resource == "pods/eviction"]) == 4
    assert await node_of(kube, "p0") is None  # still there


async def test_evict_of_a_gone_or_replaced_pod(sim: Any, kube: Kube) -> None:
    uids = seed(sim, 1)
    evictor = Evictor(kube)
    assert await evictor.evict(namespace="default", name="nope", uid="uid-x") is EvictOutcome.GONE
    assert (
        await evictor.evict(namespace="default", name="p0", uid="not-its-uid") is EvictOutcome.GONE
    )
    await kube.request("GET", PODS.path("default", "p0"))  # the other pod is untouched
    sim.faults.fail(500, verb="create", resource="pods/eviction", count=1)
    assert (
        await evictor.evict(namespace="default", name="p0", uid=uids["p0"]) is EvictOutcome.FAILED
    )
    assert evictor.stats.outcomes == {"gone": 2, "failed": 1}
