"""Informers converge on the server's state through drops, compaction, restarts and errors."""

from __future__ import annotations

from typing import Any

from sim.simkit import node, pod, wait_until

from kube.conftest import connect_to
from kube.kubekit import MERGE, SIM_NODES, Mirror, running, server_versions
from pumice.kube import NODES, PODS, Informer, Kube

FAST = {"backoff_initial": 0.01, "backoff_cap": 0.05, "resync_period": 0.0}


def seed_nodes(sim: Any, count: int) -> None:
    for i in range(count):
        sim.create(node(f"n{i}"))


async def converged(mirror: Mirror, kube: Kube) -> None:
    """Wait until the mirror holds exactly what the server has, version for version."""
    want = await server_versions(kube, NODES)

    async def check() -> bool:
        return mirror.versions() == want

    await wait_until(lambda: mirror.versions() == want)
    assert await check()
    assert mirror.problems == []


def churn(sim: Any, tag: str) -> None:
    """Add, change and delete nodes directly in the server (no await: nobody sees it happen)."""
    sim.create(node(f"added-{tag}"))
    sim.registry.patch(SIM_NODES, "", "n1", MERGE, {"metadata": {"labels": {"tag": tag}}})
    sim.registry.delete(SIM_NODES, "", "n2", {})
    sim.create(node("n2", cpu="4"))  # same name, new uid: a delete and an add
    sim.registry.delete(SIM_NODES, "", "n3", {})


async def test_first_list_then_watch_events(sim: Any, kube: Kube) -> None:
    seed_nodes(sim, 5)
    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", page_size=2, **FAST)
    async with running(informer):
        assert sorted(mirror.calls) == [("add", f"n{i}") for i in range(5)]
        await kube.request("POST", NODES.path(), body=node("n9"))
        await kube.request(
            "PATCH",
            NODES.path(None, "n0"),
            body={"spec": {"unschedulable": True}},
            content_type=MERGE,
        )
        await kube.request("DELETE", NODES.path(None, "n4"))
        await converged(mirror, kube)
        assert mirror.calls[5:] == [("add", "n9"), ("update", "n0"), ("delete", "n4")]
        assert mirror.objects[("", "n0")]["spec"]["unschedulable"] is True
        assert informer.stats.events == 3
        assert informer.stats.relists == 0
        assert informer.store.keys() == mirror.objects.keys()


async def test_cleanly_closed_watches_resume_without_a_relist(sim: Any, kube: Kube) -> None:
    seed_nodes(sim, 4)
    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", **FAST)
    async with running(informer):
        for round_ in range(3):
            sim.faults.close_watches()
            churn(sim, str(round_)) if round_ == 0 else sim.create(node(f"more-{round_}"))
            await converged(mirror, kube)
        assert informer.stats.watch_restarts >= 1
        assert informer.stats.relists == 0  # history covered the gap


async def test_compaction_forces_a_relist_that_reconciles_deletions(sim: Any, kube: Kube) -> None:
    seed_nodes(sim, 4)
    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", **FAST)
    async with running(informer):
        n3 = mirror.objects[("", "n3")]
        old_n2_uid = mirror.objects[("", "n2")]["metadata"]["uid"]
        mirror.calls.clear()
        sim.faults.close_watches()
        churn(sim, "x")
        sim.faults.compact()  # the informer's resourceVersion is now too old: 410
        await converged(mirror, kube)
        assert informer.stats.relists == 1
        assert ("delete", "n3") in mirror.calls
        assert ("", "n3") not in mirror.objects
        assert n3["metadata"]["name"] == "n3"
        # n2 was deleted and recreated while we were away: delete, then add, never an update
        assert mirror.calls.count(("delete", "n2")) == 1
        assert mirror.calls.count(("add", "n2")) == 1
        assert mirror.objects[("", "n2")]["metadata"]["uid"] != old_n2_uid
        assert ("update", "n1") in mirror.calls
        assert mirror.objects[("", "n1")]["metadata"]["labels"]["tag"] == "x"


async def test_dropped_connections_relist(sim: Any, kube: Kube) -> None:
    seed_nodes(sim, 4)
    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", **FAST)
    async with running(informer):
        restart = sim.faults.restart(downtime=0.3)
        churn(sim, "r")
        await restart
        await converged(mirror, kube)
        assert informer.stats.relists >= 1
        assert ("delete", "n3") in mirror.calls


async def test_watch_churn_with_compaction_converges(make_sim: Any) -> None:
    sim = await make_sim(bookmark_interval=0.02)
    kube = await connect_to(sim)
    try:
        seed_nodes(sim, 12)
        mirror = Mirror()
        informer = Informer(kube, NODES, mirror, name="nodes", **FAST)
        async with running(informer):
            for round_ in range(6):
                await kube.request("POST", NODES.path(), body=node(f"live-{round_}"))
                sim.faults.close_watches()
                sim.registry.patch(
                    SIM_NODES, "", f"n{round_}", MERGE, {"metadata": {"labels": {"r": "x"}}}
                )
                sim.registry.delete(SIM_NODES, "", f"n{round_ + 6}", {})
                if round_ % 2:
                    sim.faults.compact()
                await kube.request("DELETE", NODES.path(None, f"live-{round_}"))
            await converged(mirror, kube)
            assert informer.stats.relists >= 1
            assert informer.stats.watch_restarts >= 6
    finally:
        await kube.close()


async def test_list_errors_back_off_and_recover(sim: Any, kube: Kube) -> None:
    seed_nodes(sim, 2)
    sim.faults.fail(500, verb="list", resource="nodes", count=3)
    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", **FAST)
    async with running(informer):
        assert informer.stats.errors == 3
        assert len(mirror.objects) == 2
        assert informer.stats.relists == 0  # the errors came before the first list


async def test_field_selector_turns_a_bind_into_a_delete(sim: Any, kube: Kube) -> None:
    sim.create(node("n1"))
    for name in ("a", "b"):
        sim.create(pod(name))
    mirror = Mirror()
    informer = Informer(kube, PODS, mirror, name="pending", field_selector="spec.nodeName=", **FAST)
    async with running(informer):
        assert set(mirror.objects) == {("default", "a"), ("default", "b")}
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "a", "namespace": "default"},
            "target": {"kind": "Node", "name": "n1"},
        }
        await kube.request("POST", PODS.path("default", "a", "binding"), body=body)
        await wait_until(lambda: ("default", "a") not in mirror.objects)
        assert mirror.calls[-1] == ("delete", "a")
        assert mirror.problems == []


async def test_resync_counts_drift_and_repairs_it(sim: Any, kube: Kube) -> None:
    seed_nodes(sim, 3)
    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", **FAST)
    async with running(informer):
        assert await informer.check_drift() == 0
        # as if two watch events had been lost: one object missing, one stale
        lost = informer.store.pop(("", "n0"))
        mirror.objects.pop(("", "n0"))
        stale = informer.store[("", "n1")]
        informer.store[("", "n1")] = {
            **stale,
            "metadata": {**stale["metadata"], "resourceVersion": "1"},
        }
        assert await informer.check_drift() == 2
        assert informer.stats.drift == 2
        await wait_until(lambda: ("", "n0") in mirror.objects)
        assert mirror.objects[("", "n0")]["metadata"]["uid"] == lost["metadata"]["uid"]
        assert informer.stats.relists == 1
        assert await informer.check_drift() == 0
        assert informer.stats.resyncs == 3
    # stopped, then history compacted past its version: nothing to compare against, skipped
    sim.create(node("after"))
    sim.faults.compact()
    assert await informer.check_drift() == 0
    assert informer.stats.resyncs_skipped == 1


async def test_periodic_resync_finds_drift_by_itself(sim: Any, kube: Kube) -> None:
    seed_nodes(sim, 2)
    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", **{**FAST, "resync_period": 0.02})
    async with running(informer):
        informer.store.pop(("", "n1"))
        mirror.objects.pop(("", "n1"))
        await wait_until(lambda: informer.stats.drift >= 1)
        await wait_until(lambda: ("", "n1") in mirror.objects)
        assert mirror.problems == []


async def test_refused_watches_back_off_and_recover(sim: Any, kube: Kube) -> None:
    seed_nodes(sim, 2)
    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", **FAST)
    async with running(informer):
        sim.faults.fail(429, verb="watch", resource="nodes", count=2, retry_after=0)
        sim.faults.fail(500, verb="watch", resource="nodes", count=1)
        sim.faults.close_watches()
        await wait_until(lambda: sim.faults.injected == 3)
        await kube.request("POST", NODES.path(), body=node("late"))
        await converged(mirror, kube)  # watching again after three refusals
        assert informer.stats.errors == 3
        assert informer.stats.relists == 3  # each refusal may have hidden a change


async def test_objects_are_slimmed_before_they_are_stored(sim: Any, kube: Kube) -> None:
    sim.create(node("n0"))

    def slim(obj: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": obj["metadata"], "kind": obj["kind"], "unschedulable": "spec" in obj}

    mirror = Mirror()
    informer = Informer(kube, NODES, mirror, name="nodes", transform=slim, **FAST)
    async with running(informer):
        await kube.request("POST", NODES.path(), body=node("n1"))
        await converged(mirror, kube)
        for obj in [*mirror.objects.values(), *informer.store.values()]:
            assert set(obj) == {"metadata", "kind", "unschedulable"}


async def test_a_deleted_object_is_delivered_as_the_server_sent_it(sim: Any, kube: Kube) -> None:
    """Nothing stores a DELETED object, so slimming it would be work for nothing."""
    sim.create(node("n0"))
    slimmed: list[str] = []

    def slim(obj: dict[str, Any]) -> dict[str, Any]:
        slimmed.append(obj["metadata"]["name"])
        return {"metadata": obj["metadata"], "kind": obj["kind"]}

    deleted: list[dict[str, Any]] = []

    class Deletions(Mirror):
        def on_delete(self, obj: dict[str, Any]) -> None:
            deleted.append(obj)
            super().on_delete(obj)

    mirror = Deletions()
    informer = Informer(kube, NODES, mirror, name="nodes", transform=slim, **FAST)
    async with running(informer):
        await kube.request("POST", NODES.path(), body=node("n1"))
        await kube.request("DELETE", NODES.path(None, "n1"))
        await converged(mirror, kube)
    assert slimmed == ["n0", "n1"]  # the list's object and the watch's ADDED, not the DELETED
    assert [d["metadata"]["name"] for d in deleted] == ["n1"]
    assert "status" in deleted[0] and "n1" not in [k for _, k in informer.store]


async def test_a_page_that_fails_after_the_first_makes_the_whole_list_again(
    sim: Any, kube: Kube
) -> None:
    seed_nodes(sim, 7)
    mirror = Mirror()
    armed: list[bool] = []

    def fail_a_later_page(obj: dict[str, Any]) -> dict[str, Any]:
        # runs while the first page is prepared, when the next one is already asked for
        if not armed:
            armed.append(True)
            sim.faults.fail(500, verb="list", resource="nodes", count=1)
        return obj

    informer = Informer(
        kube, NODES, mirror, name="nodes", page_size=2, transform=fail_a_later_page, **FAST
    )
    async with running(informer):
        await converged(mirror, kube)
        assert sim.faults.injected == 1
        assert informer.stats.errors == 1
        assert sorted(mirror.calls) == [("add", f"n{i}") for i in range(7)]  # each once
