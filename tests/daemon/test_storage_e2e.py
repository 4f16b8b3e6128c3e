"""The daemon's storage informers against the sim, through kubernetes_asyncio: the cache's
stores follow claims, volumes, StorageClasses, CSINodes and CSIDrivers as they are created,
bound by the sim's volume controllers and deleted, and sessions see them on their snapshot;
on a cluster without the storage APIs the daemon schedules as before and says so once."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from sim.volumekit import claim, storage_class, volume

from daemon.workload import node, pod, seed
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

STORAGE_INFORMERS = {
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses",
    "csinodes",
    "csidrivers",
}
NO_STORAGE = "the API server serves no storage APIs"


def csi_node(name: str, count: int) -> dict[str, Any]:
    driver = {"name": "csi.example.com", "nodeID": name, "allocatable": {"count": count}}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": [driver]},
    }


def bound_volume(cache: Any, key: str) -> str | None:
    found = cache.storage.claims.get(key)
    if found is None or "pv.kubernetes.io/bind-completed" not in found["metadata"].get(
        "annotations", {}
    ):
        return None
    return str(found["spec"].get("volumeName") or "") or None


async def test_the_cache_follows_the_storage_objects(
    make_sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pumice")
    sim = await make_sim()
    seed(
        sim,
        [
            node("n1"),
            csi_node("n1", 3),
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIDriver",
                "metadata": {"name": "csi.example.com"},
                "spec": {},
            },
            storage_class("local", mode="WaitForFirstConsumer"),
            volume("pv-old", "5Gi"),
            claim("old", "1Gi", namespace="batch"),
        ],
    )
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: daemon.synced, timeout=60)
        assert {i.name for i in daemon.informers} >= STORAGE_INFORMERS
        cache = daemon.cache
        assert cache is not None
        await wait_for(lambda: bound_volume(cache, "batch/old") == "pv-old")
        assert cache.storage.classes["local"]["volumeBindingMode"] == "WaitForFirstConsumer"
        assert cache.storage.csinodes["n1"]["spec"]["drivers"][0]["allocatable"] == {"count": 3}
        assert set(cache.storage.csidrivers) == {"csi.example.com"}
        async with await sim.client() as api:
            core = k8s_client.CoreV1Api(api)
            created = await core.create_namespaced_persistent_volume_claim(
                "batch", claim("data", "2Gi", cls="local", namespace="batch")
            )
            await wait_for(lambda: "batch/data" in cache.storage.claims)
            assert bound_volume(cache, "batch/data") is None  # waits for a node
            await core.patch_namespaced_persistent_volume_claim(
                "data",
                "batch",
                {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}},
            )
            provisioned = f"pvc-{created.metadata.uid}"
            await wait_for(lambda: bound_volume(cache, "batch/data") == provisioned)
            await wait_for(
                lambda: (
                    cache.storage.volumes.get(provisioned, {}).get("status") == {"phase": "Bound"}
                )
            )
            snapshot = cache.snapshot()
            assert snapshot.storage.served
            assert set(snapshot.storage.claims) == {"batch/old", "batch/data"}
            assert set(snapshot.storage.volumes) == {"pv-old", provisioned}
            await core.delete_namespaced_persistent_volume_claim("data", "batch")
            await wait_for(lambda: "batch/data" not in cache.storage.claims)
            # reclaim policy Delete: the provisioned volume goes with its claim
            await wait_for(lambda: provisioned not in cache.storage.volumes)
            assert "batch/data" in snapshot.storage.claims  # a taken picture does not change
    assert not [r for r in caplog.records if NO_STORAGE in r.getMessage()]
    assert [r for r in caplog.records if r.getMessage().startswith("storage synced:")]


async def test_without_storage_apis_pods_are_scheduled_as_before(
    make_sim: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pumice")
    sim = await make_sim(storage=False)
    seed(sim, [node("n1", cpu="4")] + [pod(f"p-{i}", cpu="500m") for i in range(4)])
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: daemon.synced, timeout=60)
        await wait_for(lambda: len(ledger.bound("pumice")) == 4, timeout=60)
        assert not STORAGE_INFORMERS & {i.name for i in daemon.informers}
        assert daemon.cache is not None
        assert not daemon.cache.snapshot().storage.served
        turned = daemon.ticks
        await wait_for(lambda: daemon.ticks >= turned + 5)
    ledger.close()
    warnings = [r for r in caplog.records if NO_STORAGE in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert set(ledger.accepted_binds().values()) == {1}
    # nothing of storage requested beyond discovery
    assert not [w for w in sim.writes if "persistentvolume" in w.resource]
