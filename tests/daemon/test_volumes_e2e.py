"""Volumes, end to end: the daemon against the sim (its volume controllers included), seen
through kubernetes_asyncio and kubectl.

* a WaitForFirstConsumer claim is annotated with the pod's node, the sim provisions it, and
  the pod is bound after the claim, once;
* a static local volume on n2 brings its pod to n2;
* a missing claim leaves the pod pending with kube-scheduler's message in ``kubectl describe``;
* a ReadWriteOncePod claim in use keeps a second pod out;
* a CSI attach limit keeps the pod that would exceed it pending;
* with 30 % of provisioning failing, every pod is bound once and every claim to one volume;
* a gang binds only once all its placed pods' volumes are bound, and not at all while the
  volumes of one of them fail;
* a pod whose volumes take longer than ``scheduler.volumeBindTimeout`` is given up with
  kube-scheduler's words and placed again on the node its claim was given;
* a pod deleted while it waits stops waiting at once and leaves its node's room free;
* dry-run on a cluster with claims writes nothing;
* kill -9 between the annotation and the bind, then a restart: the pod keeps its node, is
  bound once, and the claim is provisioned once.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from sim.volumekit import SELECTED_NODE, bound_to, claim, claim_events, storage_class, stored_claim

from daemon.test_health_e2e import get, samples
from daemon.workload import condition, events_about, gang, node, pod, seed
from support.daemonrun import (
    Ledger,
    kill_hard,
    running_daemon,
    start_process,
    wait_for,
    write_config,
)

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


async def test_a_static_local_volume_on_n2_brings_its_pod_to_n2(
    make_sim: Any, tmp_path: Path
) -> None:
    sim = await make_sim()
    seed(
        sim,
        [
            node("n1"),
            node("n2"),
            storage_class(
                "local", provisioner="kubernetes.io/no-provisioner", mode="WaitForFirstConsumer"
            ),
            local_volume("local-n2", "n2"),
            claim("data", "5Gi", "local", namespace="batch"),
            with_claims(pod("reader"), "data"),
        ],
    )
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: len(ledger.bound()) == 1, timeout=60)
    ledger.close()
    assert ledger.bound()[0]["spec"]["nodeName"] == "n2"
    assert bound_to(sim, "data", "batch") == "local-n2"
    writes = [(w.verb, w.resource, w.name) for w in ledger.mutating() if "persistent" in w.resource]
    assert writes == [("patch", "persistentvolumes", "local-n2")]  # the claimRef, once
    async with await sim.client() as api:
        pv = await k8s_client.CoreV1Api(api).read_persistent_volume("local-n2")
    assert (pv.spec.claim_ref.namespace, pv.spec.claim_ref.name) == ("batch", "data")
    assert pv.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"


async def test_a_missing_claim_leaves_the_pod_pending_with_kube_schedulers_message(
    make_sim: Any, tmp_path: Path
) -> None:
    sim = await make_sim()
    message = '0/2 nodes are available: persistentvolumeclaim "nope" not found.'
    seed(sim, [node("n1"), node("n2"), with_claims(pod("lost"), "nope")])
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: ("FailedScheduling", message) in events_about(sim, "lost"), 60)
        described = await sim.kubectl("describe", "pod", "lost", "-n", "batch")
    assert described.code == 0, described.stderr
    assert message in described.stdout
    assert re.search(r"PodScheduled\s+False", described.stdout)
    found = condition(sim, "lost")
    assert found is not None and found["message"] == message
    assert not sim.store.get(PODS, ("batch", "lost"))["spec"].get("nodeName")


async def test_a_read_write_once_pod_claim_in_use_keeps_a_second_pod_out(
    make_sim: Any, tmp_path: Path
) -> None:
    sim = await make_sim()
    message = (
        "0/2 nodes are available: 2 node(s) unavailable due to PersistentVolumeClaim with "
        "ReadWriteOncePod access mode already in-use by another pod."
    )
    seed(
        sim,
        [
            node("n1"),
            node("n2"),
            storage_class("now", mode="Immediate"),
            claim("solo", "1Gi", "now", modes=("ReadWriteOncePod",), namespace="batch"),
            with_claims(pod("first"), "solo"),
        ],
    )
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: len(ledger.bound()) == 1, timeout=60)
        async with await sim.client() as api:
            await k8s_client.CoreV1Api(api).create_namespaced_pod(
                "batch", with_claims(pod("second"), "solo")
            )
        await wait_for(lambda: ("FailedScheduling", message) in events_about(sim, "second"), 60)
        described = await sim.kubectl("describe", "pod", "second", "-n", "batch")
    ledger.close()
    assert [p["metadata"]["name"] for p in ledger.bound()] == ["first"]
    assert message in described.stdout


def csi_node(name: str, count: int) -> Obj:
    driver = {"name": "csi.example.com", "nodeID": name, "allocatable": {"count": count}}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": [driver]},
    }


async def test_a_csi_attach_limit_keeps_the_pod_that_would_exceed_it_pending(
    make_sim: Any, tmp_path: Path
) -> None:
    sim = await make_sim()
    message = "0/2 nodes are available: 2 node(s) exceed max volume count."
    claims = [claim(f"c{i}", "1Gi", "now", namespace="batch") for i in range(3)]
    pods = [with_claims(pod(f"p{i}"), f"c{i}") for i in range(3)]
    seed(
        sim,
        [
            node("n1"),
            node("n2"),
            csi_node("n1", 1),
            csi_node("n2", 1),
            storage_class("now", mode="Immediate"),
            *claims,
        ],
    )
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: all(bound_to(sim, f"c{i}", "batch") for i in range(3)), 60)
        seed(sim, pods)
        await wait_for(lambda: len(ledger.bound()) == 2, timeout=60)
        late = next(
            p
            for p in ("p0", "p1", "p2")
            if p not in {b["metadata"]["name"] for b in ledger.bound()}
        )
        await wait_for(lambda: ("FailedScheduling", message) in events_about(sim, late), 60)
    ledger.close()
    assert sorted(p["spec"]["nodeName"] for p in ledger.bound()) == ["n1", "n2"]


async def test_with_30_percent_of_provisioning_failing_every_pod_is_bound_once(
    make_sim: Any, tmp_path: Path
) -> None:
    sim = await make_sim(fail_provisioning=0.3, seed=11)
    count = 8
    seed(
        sim,
        [
            node("n1"),
            node("n2"),
            node("n3"),
            storage_class("fast", mode="WaitForFirstConsumer"),
            *(claim(f"data-{i}", "1Gi", "fast", namespace="batch") for i in range(count)),
            *(with_claims(pod(f"w-{i}"), f"data-{i}") for i in range(count)),
        ],
    )
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: len(ledger.bound()) == count, timeout=240)
        _, text = await get(daemon, "/metrics")
    ledger.close()
    values = samples(text)
    assert values[("pumice_volume_binds_total", (("outcome", "bound"),))] == count
    assert values[("pumice_volume_binds_total", (("outcome", "failed"),))] >= 1
    assert values[("pumice_pods_waiting_for_volumes", ())] == 0
    provisioner = sim.server.volumes.provisioner
    assert provisioner.failed > 0  # the fault did strike
    assert set(ledger.accepted_binds().values()) == {1} and len(ledger.accepted_binds()) == count
    assert not ledger.rebinds()
    volumes = list(sim.store.table("/persistentvolumes").values())
    refs = Counter(
        (v["spec"]["claimRef"]["namespace"], v["spec"]["claimRef"]["name"]) for v in volumes
    )
    assert refs == Counter({("batch", f"data-{i}"): 1 for i in range(count)})
    assert provisioner.provisioned == count
    for i in range(count):
        volume = bound_to(sim, f"data-{i}", "batch")
        placed = sim.store.get(PODS, ("batch", f"w-{i}"))["spec"]["nodeName"]
        terms = sim.store.get("/persistentvolumes", ("", volume))["spec"]["nodeAffinity"]
        assert terms["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [
            placed
        ]
    failed = [
        e for i in range(count) for e in events_about(sim, f"w-{i}") if e[0] == "FailedScheduling"
    ]
    assert failed and all(
        m.startswith('running PreBind plugin "VolumeBinding": binding volumes: provisioning failed')
        for _, m in failed
    )


async def test_a_gang_binds_only_once_every_placed_pod_has_its_volumes(
    make_sim: Any, tmp_path: Path
) -> None:
    sim = await make_sim(provisioning_delay=1.0)
    members = gang("job", 2)
    with_claims(members[1], "data")  # job-0; members[0] is the PodGroup
    seed(
        sim,
        [
            node("n1"),
            node("n2"),
            storage_class("fast", mode="WaitForFirstConsumer"),
            claim("data", "1Gi", "fast", namespace="batch"),
            *members,
        ],
    )
    ledger, timeline = Ledger(sim), Timeline(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: len(ledger.bound()) == 2, timeout=60)
    ledger.close()
    timeline.close()
    claim_bound = timeline.index("claim-bound", "data")
    assert timeline.index("pod-bound", "job-0") > claim_bound
    assert timeline.index("pod-bound", "job-1") > claim_bound  # job-1 has no volume of its own


async def test_a_gang_whose_volumes_fail_is_all_or_nothing(make_sim: Any, tmp_path: Path) -> None:
    """job-0's claim is matched to a local volume (its binding succeeds), job-1's must be
    provisioned and every attempt fails: job-0 is not bound while job-1's volumes fail;
    once provisioning works both are bound, once each."""
    sim = await make_sim(fail_provisioning=1.0)
    members = gang("job", 2)
    with_claims(members[1], "data-0")  # members[0] is the PodGroup
    with_claims(members[2], "data-1")
    seed(
        sim,
        [
            node("n1"),
            node("n2"),
            storage_class("fast", mode="WaitForFirstConsumer"),
            storage_class(
                "local", provisioner="kubernetes.io/no-provisioner", mode="WaitForFirstConsumer"
            ),
            local_volume("local-n2", "n2"),
            claim("data-0", "5Gi", "local", namespace="batch"),
            claim("data-1", "1Gi", "fast", namespace="batch"),
            *members,
        ],
    )
    ledger = Ledger(sim)
    gang_failed = "not bound: the volumes of batch/job-1, of the same gang, failed"

    def job_0_given_up() -> bool:
        return any(
            r == "FailedScheduling" and m.startswith(gang_failed)
            for r, m in events_about(sim, "job-0")
        )

    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(job_0_given_up, timeout=60)
        assert any(
            m.startswith(
                'running PreBind plugin "VolumeBinding": binding volumes: '
                'provisioning failed for PVC "data-1"'
            )
            for r, m in events_about(sim, "job-1")
            if r == "FailedScheduling"
        )
        assert bound_to(sim, "data-0", "batch") == "local-n2"  # its own volume did bind
        assert ledger.bound() == [], "a pod of the gang was bound while the other's failed"
        sim.server.volumes.provisioner.configure({"failProvisioning": 0})
        await wait_for(lambda: len(ledger.bound()) == 2, timeout=120)
    ledger.close()
    assert ledger.accepted_binds() == Counter({("batch", "job-0"): 1, ("batch", "job-1"): 1})
    assert not ledger.rebinds()
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in ledger.bound()}
    assert placed["job-0"] == "n2"  # where its local volume is
    assert bound_to(sim, "data-1", "batch") is not None
    refs = Counter(
        (v["spec"]["claimRef"]["namespace"], v["spec"]["claimRef"]["name"])
        for v in sim.store.table("/persistentvolumes").values()
        if (v["spec"].get("claimRef") or {}).get("name")
    )
    assert refs == Counter({("batch", "data-0"): 1, ("batch", "data-1"): 1})


async def test_a_pod_whose_volumes_take_longer_than_the_timeout_is_offered_again(
    make_sim: Any, tmp_path: Path
) -> None:
    """scheduler.volumeBindTimeout: the wait gives up with kube-scheduler's words; the
    selected node written stays (the provisioner is working on it), so the pod is placed
    there again, nothing is written twice, and it is bound once the volume is made."""
    sim = await make_sim(provisioning_delay=6.0)
    seed(
        sim,
        [
            node("n1"),
            node("n2"),
            storage_class("fast", mode="WaitForFirstConsumer"),
            claim("data", "1Gi", "fast", namespace="batch"),
            with_claims(pod("slow"), "data"),
        ],
    )
    ledger = Ledger(sim)
    timed_out = 'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
    config = write_config(tmp_path, volumeBindTimeout="1s")
    async with running_daemon(sim.kubeconfig, config) as daemon:
        await wait_for(lambda: ("FailedScheduling", timed_out) in events_about(sim, "slow"), 60)
        assert ledger.bound() == []
        await wait_for(lambda: len(ledger.bound()) == 1, timeout=120)
        _, text = await get(daemon, "/metrics")
    ledger.close()
    values = samples(text)
    assert values[("pumice_volume_binds_total", (("outcome", "failed"),))] >= 1
    assert values[("pumice_volume_binds_total", (("outcome", "bound"),))] == 1
    selected = stored_claim(sim, "data", "batch")["metadata"]["annotations"][SELECTED_NODE]
    assert ledger.bound()[0]["spec"]["nodeName"] == selected
    assert ledger.accepted_binds() == Counter({("batch", "slow"): 1})
    writes = [(w.verb, w.resource, w.name) for w in ledger.mutating() if "persistent" in w.resource]
    assert writes == [("patch", "persistentvolumeclaims", "data")]  # the annotation, once
    assert sim.server.volumes.provisioner.provisioned == 1


async def test_a_pod_deleted_while_it_waits_for_its_volumes_stops_waiting_and_frees_its_node(
    make_sim: Any, tmp_path: Path
) -> None:
    """Its wait ends within seconds, not at the 600 s timeout, and its node's room is not
    held for it: a pod that needs that room is bound there."""
    sim = await make_sim(provisioning_delay=60.0)
    seed(
        sim,
        [
            node("n1", cpu="4"),
            storage_class("fast", mode="WaitForFirstConsumer"),
            claim("data", "1Gi", "fast", namespace="batch"),
            with_claims(pod("doomed", cpu="3"), "data"),
        ],
    )
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:

        async def waiting() -> float:
            _, text = await get(daemon, "/metrics")
            return samples(text)[("pumice_pods_waiting_for_volumes", ())]

        await wait_for(lambda: selected_node_of(sim, "data") == "n1", timeout=60)
        assert await waiting() == 1
        async with await sim.client() as api:
            core = k8s_client.CoreV1Api(api)
            await core.delete_namespaced_pod("doomed", "batch", grace_period_seconds=0)
            await core.create_namespaced_pod("batch", pod("next", cpu="3"))
        await wait_for(lambda: len(ledger.bound()) == 1, timeout=30)
        assert await waiting() == 0
    ledger.close()
    assert [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in ledger.bound()] == [
        ("next", "n1")
    ]


def selected_node_of(sim: Any, name: str) -> str:
    notes = stored_claim(sim, name, "batch")["metadata"].get("annotations") or {}
    return str(notes.get(SELECTED_NODE) or "")


async def test_dry_run_on_a_cluster_with_claims_writes_nothing(
    make_sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sim = await make_sim()
    seed(
        sim,
        [
            node("n1"),
            node("n2"),
            storage_class("fast", mode="WaitForFirstConsumer"),
            storage_class(
                "local", provisioner="kubernetes.io/no-provisioner", mode="WaitForFirstConsumer"
            ),
            local_volume("local-n2", "n2"),
            claim("scratch", "1Gi", "fast", namespace="batch"),
            claim("data", "5Gi", "local", namespace="batch"),
            with_claims(pod("a"), "scratch"),
            with_claims(pod("b"), "data"),
            with_claims(pod("c"), "nope"),
        ],
    )
    before = len(sim.writes)
    caplog.set_level(logging.INFO, logger="pumice")
    async with running_daemon(sim.kubeconfig, write_config(tmp_path), dry_run=True) as daemon:
        await wait_for(lambda: daemon.cycles >= 1 and "pending: batch/c" in caplog.text, 60)
        await asyncio.sleep(1.0)  # more periods: still nothing may be written
    assert len(sim.writes) == before, [w.path for w in list(sim.writes)[before:]]
    text = caplog.text
    assert "dry-run: select node n" in text and "for claim batch/scratch" in text
    assert "dry-run: bind volume local-n2 to claim batch/data" in text
    assert "dry-run: bind batch/b to n2" in text


async def test_kill_9_between_the_annotation_and_the_bind_then_restart(
    make_sim: Any, tmp_path: Path
) -> None:
    """The restarted daemon finds the selected node its predecessor wrote, keeps the pod
    there although another node has more room now, writes nothing twice, and the sim
    provisions the claim once."""
    # long enough for the restarted daemon to find the claim still being provisioned
    sim = await make_sim(provisioning_delay=15.0)
    filler = pod("filler", cpu="3", node_name="n1", scheduler="default-scheduler")
    seed(
        sim,
        [
            node("n1", cpu="4"),
            node("n2", cpu="4"),
            storage_class("fast", mode="WaitForFirstConsumer"),
            claim("data", "1Gi", "fast", namespace="batch"),
            with_claims(pod("trainer", cpu="2"), "data"),
            filler,
        ],
    )
    ledger = Ledger(sim)
    config = write_config(tmp_path)
    log = tmp_path / "daemon.log"

    def selected() -> str:
        notes = stored_claim(sim, "data", "batch")["metadata"].get("annotations") or {}
        return str(notes.get(SELECTED_NODE) or "")

    first = start_process(sim.kubeconfig, config, log=log)
    try:
        await wait_for(lambda: selected() == "n2", timeout=60)
    finally:
        kill_hard(first)
    assert ledger.bound() == [], "the pod was bound before the kill"
    assert bound_to(sim, "data", "batch") is None, "the claim was bound before the kill"
    # n1 has room now: a scheduler that forgot the claim's node could go there
    async with await sim.client() as api:
        await k8s_client.CoreV1Api(api).delete_namespaced_pod(
            "filler", "batch", grace_period_seconds=0
        )
    await wait_for(lambda: sim.store.get(PODS, ("batch", "filler")) is None, timeout=30)
    second = start_process(sim.kubeconfig, config, log=log)
    try:
        await wait_for(
            lambda: "waits on n2 for its volumes" in log.read_text().split("synced")[-1], 60
        )
        assert bound_to(sim, "data", "batch") is None, "provisioned before the restart: no test"
        await wait_for(lambda: len(ledger.bound()) == 1, timeout=120)
    finally:
        second.terminate()
        await asyncio.to_thread(second.wait, 60)
    ledger.close()
    assert ledger.bound()[0]["spec"]["nodeName"] == "n2"
    assert ledger.accepted_binds() == Counter({("batch", "trainer"): 1})
    assert sim.server.volumes.provisioner.provisioned == 1
    volumes = list(sim.store.table("/persistentvolumes").values())
    assert [v["metadata"]["name"] for v in volumes] == [bound_to(sim, "data", "batch")]
    annotations = [
        w for w in ledger.mutating() if w.resource == "persistentvolumeclaims" and w.verb == "patch"
    ]
    assert len(annotations) == 1, "the restarted daemon wrote the selected node again"


async def test_an_ephemeral_volume_is_provisioned_on_its_pods_node(
    make_sim: Any, tmp_path: Path
) -> None:
    """The sim makes the claim ``<pod>-<volume>`` as the ephemeral-volume controller does;
    pumice waits for it, then treats it as any claim of the pod."""
    sim = await make_sim()
    worker = pod("worker")
    template = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "fast",
        }
    }
    worker["spec"]["volumes"] = [
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}
    ]
    seed(sim, [node("n1"), storage_class("fast", mode="WaitForFirstConsumer"), worker])
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await wait_for(lambda: len(ledger.bound()) == 1, timeout=60)
    ledger.close()
    assert bound_to(sim, "worker-scratch", "batch") is not None
    stored = stored_claim(sim, "worker-scratch", "batch")
    assert stored["metadata"]["annotations"][SELECTED_NODE] == "n1"
