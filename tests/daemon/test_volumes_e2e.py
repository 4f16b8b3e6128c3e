"""Volumes, end to end: the daemon against the sim (its volume controllers included), seen
through kubernetes_asyncio and kubectl.

* a WaitForFirstConsumer claim is annotated with the pod's node, the sim provisions it, and
  the pod is bound after the claim, once;
* a static local volume on n2 brings its pod to n2;
* a missing claim leaves the pod pending with kube-scheduler's message in ``kubectl describe``;
* a ReadWriteOncePod claim in use keeps a second pod out;
* a CSI attach limit keeps the pod that would exceed it pending;
* with 30 % of provisioning failing, every pod is bound once and every claim to one volume;
* a gang binds only once all its placed pods' volumes are bound;
* dry-run on a cluster with claims writes nothing.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sim.volumekit import SELECTED_NODE, bound_to, claim, claim_events, storage_class, stored_claim

from daemon.workload import node, pod, seed
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

Obj = dict[str, Any]
CLAIMS = "/persistentvolumeclaims"
PODS = "/pods"


def with_claims(manifest: Obj, *claims: str) -> Obj:
    """The pod with a volume for each claim."""
    manifest["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return manifest


def local_volume(name: str, node_name: str, size: str = "10Gi", cls: str = "local") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node_name],
                                }
                            ]
                        }
                    ]
                }
            },
        },
    }


class Timeline:
    """The order in which the server committed claim bindings and pod binds."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.events: list[tuple[str, str]] = []
        self._bound: set[tuple[str, str]] = set()
        sim.store.subscribe(self._on_change)

    def close(self) -> None:
        self.sim.store.unsubscribe(self._on_change)

    def _on_change(self, change: Any) -> None:
        if change.type == "DELETED":
            return
        obj = change.obj
        if change.table == CLAIMS:
            done = "pv.kubernetes.io/bind-completed" in (obj["metadata"].get("annotations") or {})
            if done and change.key not in self._bound:
                self._bound.add(change.key)
                self.events.append(("claim-bound", change.key[1]))
        elif change.table == PODS:
            before = ((change.prev or {}).get("spec") or {}).get("nodeName")
            if obj["spec"].get("nodeName") and not before:
                self.events.append(("pod-bound", change.key[1]))

    def index(self, kind: str, name: str) -> int:
        return self.events.index((kind, name))


async def test_a_wait_for_first_consumer_claim_is_provisioned_on_the_pods_node_then_the_pod_bound(
    make_sim: Any, tmp_path: Path
) -> None:
    sim = await make_sim()
    seed(
        sim,
        [
            node("n1", cpu="4"),
            node("n2", cpu="4"),
            storage_class("fast", mode="WaitForFirstConsumer"),
            claim("data", "2Gi", "fast", namespace="batch"),
            with_claims(pod("trainer", cpu="3"), "data"),
            pod("filler", cpu="3", node_name="n1", scheduler="default-scheduler"),
        ],
    )
    ledger, timeline = Ledger(sim), Timeline(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: len(ledger.bound()) == 1, timeout=60)
    ledger.close()
    timeline.close()
    stored = stored_claim(sim, "data", "batch")
    assert stored["metadata"]["annotations"][SELECTED_NODE] == "n2"  # the only node with room
    volume = bound_to(sim, "data", "batch")
    assert volume == f"pvc-{stored['metadata']['uid']}"
    assert timeline.index("claim-bound", "data") < timeline.index("pod-bound", "trainer")
    assert ledger.accepted_binds() == Counter({("batch", "trainer"): 1})
    assert not ledger.rebinds()
    writes = [(w.verb, w.resource, w.name) for w in ledger.mutating() if "persistent" in w.resource]
    assert writes == [("patch", "persistentvolumeclaims", "data")]  # the annotation, once
    assert len(claim_events(sim, "data", "ProvisioningSucceeded")) == 1
