"""A terminating pod's required anti-affinity holds until it has gone, through the daemon on
the sim (whose pods linger ``pod_termination_delay`` seconds after a graceful delete).

kube-scheduler counts terminating pods for InterPodAffinity, so a pod that another pod's
anti-affinity keeps out of a node may go there only once that pod has gone: whether it was
being deleted when the daemon saw it (the cache's Releasing pod) or evicted by the daemon's own
preempt action (its session's Releasing task). The test watches every change the server
commits and notes, at the moment ``web`` is bound, whether the pod whose anti-affinity selects
it is still there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from daemon.workload import node, pod, seed
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

Obj = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
AWAY_FROM_WEB = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}
        ]
    }
}
LINGER = 2.0
"""Seconds a deleted pod stays terminating: many 100ms cycles of the daemon."""


def priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def shaped(p: Obj, labels: dict[str, str], **spec: Any) -> Obj:
    return {**p, "metadata": {**p["metadata"], "labels": labels}, "spec": {**p["spec"], **spec}}


def best_effort(p: Obj) -> Obj:
    p["spec"]["containers"][0]["resources"] = {}
    return p


class BindWatch:
    """For the pod ``web``: was ``guard`` still stored (terminating) when web got its node?"""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.guard_there_at_bind: list[bool] = []
        sim.store.subscribe(self._on_change)

    def _on_change(self, change: Any) -> None:
        if change.table != "/pods" or change.key != ("batch", "web") or change.type == "DELETED":
            return
        before = ((change.prev or {}).get("spec") or {}).get("nodeName")
        if (change.obj.get("spec") or {}).get("nodeName") and not before:
            guard = self.sim.store.table("/pods").get(("batch", "guard"))
            self.guard_there_at_bind.append(guard is not None)

    def close(self) -> None:
        self.sim.store.unsubscribe(self._on_change)


def running(sim: Any, name: str) -> bool:
    p = sim.store.table("/pods").get(("batch", name))
    return p is not None and (p.get("status") or {}).get("phase") == "Running"


async def test_a_pod_being_deleted_keeps_its_anti_affinity_until_it_has_gone(
    make_sim: Any, tmp_path: Path
) -> None:
    sim = await make_sim(pod_termination_delay=LINGER)
    seed(sim, [node("n1", cpu="4")])
    guard = shaped(
        pod("guard", scheduler="default-scheduler", node_name="n1"),
        {"app": "guard"},
        affinity=AWAY_FROM_WEB,
    )
    seed(sim, [guard])
    await wait_for(lambda: running(sim, "guard"), timeout=60)
    watch, ledger = BindWatch(sim), Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: daemon.synced, timeout=60)
        deleted = await sim.kubectl("delete", "pod", "guard", "-n", "batch", "--wait=false")
        assert deleted.code == 0, deleted.stderr
        seed(sim, [shaped(pod("web"), {"app": "web"})])
        await wait_for(lambda: ("batch", "web") in ledger.placements, timeout=60)
    assert ("batch", "guard") in ledger.deleted
    assert watch.guard_there_at_bind == [False]
    assert ledger.placements[("batch", "web")] == ["n1"]
    watch.close()
    ledger.close()


async def test_a_pod_the_daemon_evicts_keeps_its_anti_affinity_until_it_has_gone(
    make_sim: Any, tmp_path: Path
) -> None:
    """n1 (2 cpu) runs guard (low priority, anti-affinity to web) and keeper; preempt evicts
    guard for p. The best-effort web pod fits n1 at once, but goes there only once guard has
    gone (before the fix, backfill bound it in the very cycle that evicted guard)."""
    sim = await make_sim(pod_termination_delay=LINGER)
    seed(sim, [priority_class("low", 1), priority_class("mid", 2), priority_class("high", 1000)])
    seed(sim, [node("n1", cpu="2")])
    guard = shaped(pod("guard", cpu="1"), {"app": "guard"}, affinity=AWAY_FROM_WEB)
    guard["spec"]["priorityClassName"] = "low"
    keeper = pod("keeper", cpu="1")
    keeper["spec"]["priorityClassName"] = "mid"
    preemptor = pod("p", cpu="1")
    preemptor["spec"]["priorityClassName"] = "high"
    web = best_effort(shaped(pod("web"), {"app": "web"}))
    watch, ledger = BindWatch(sim), Ledger(sim)
    config = write_config(tmp_path, actions="enqueue, allocate, preempt, backfill")
    async with running_daemon(sim.kubeconfig, config):
        seed(sim, [guard, keeper])
        await wait_for(lambda: running(sim, "guard") and running(sim, "keeper"), timeout=60)
        seed(sim, [preemptor, web])
        await wait_for(
            lambda: ("batch", "web") in ledger.placements and ("batch", "p") in ledger.placements,
            timeout=120,
        )
    evictions = [w.name for w in sim.writes.select(resource="pods/eviction") if w.code == 201]
    assert evictions == ["guard"]
    assert watch.guard_there_at_bind == [False]
    assert ledger.placements[("batch", "web")] == ["n1"]
    assert ledger.rebinds() == {} and ledger.overcommitted() == {}
    watch.close()
    ledger.close()
