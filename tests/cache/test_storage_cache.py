"""The cache's storage stores, fed plain dicts as their informers would: claims by
``namespace/name`` and the cluster-scoped kinds by name, slimmed, and handed to sessions as a
read-only picture on the snapshot that changes only when an object does."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.cache import ClusterCache, PodState
from pumice.cache.storage import KINDS, slimmer
from pumice.model import NO_STORAGE, ClusterSnapshot

Obj = dict[str, Any]


def claim(name: str, volume: str = "", phase: str = "Pending") -> Obj:
    annotations = {"kubectl.kubernetes.io/last-applied-configuration": "{...}"}
    if volume:
        annotations["pv.kubernetes.io/bind-completed"] = "yes"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": "batch",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": annotations,
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "fast",
            "volumeName": volume,
        },
        "status": {"phase": phase, "conditions": [{"type": "Resizing"}]},
    }


def volume(name: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "a"}},
        "spec": {
            "capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce"],
            "mountOptions": ["noatime"],
            "csi": {"driver": "csi.example.com", "volumeHandle": "h"},
        },
        "status": {"phase": "Available", "lastPhaseTransitionTime": "2026-01-01T00:00:00Z"},
    }


def cache_with_storage() -> ClusterCache:
    cache = ClusterCache()
    for kind in KINDS:
        cache.storage.handler(kind)
    return cache


def test_each_kind_is_kept_by_its_key_slimmed() -> None:
    cache = ClusterCache()
    claims = cache.storage.handler("claims")
    volumes = cache.storage.handler("volumes")
    classes = cache.storage.handler("classes")
    csinodes = cache.storage.handler("csinodes")
    claims.on_add(claim("data"))
    volumes.on_add(volume("pv1"))
    classes.on_add(
        {"metadata": {"name": "fast"}, "provisioner": "csi.example.com", "mountOptions": ["x"]}
    )
    csinodes.on_add({"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "d"}]}})
    kept = cache.storage.claims["batch/data"]
    assert kept["metadata"] == {
        "name": "data",
        "namespace": "batch",
        "uid": "uid-data",
        "resourceVersion": "7",  # the precondition of pumice's own writes
        "annotations": {},
    }
    assert kept["spec"]["resources"] == {"requests": {"storage": "1Gi"}}
    assert kept["status"] == {"phase": "Pending"}
    assert "mountOptions" not in cache.storage.volumes["pv1"]["spec"]
    assert cache.storage.volumes["pv1"]["status"] == {"phase": "Available"}
    assert cache.storage.volumes["pv1"]["metadata"]["labels"] == {
        "topology.kubernetes.io/zone": "a"
    }
    assert cache.storage.classes["fast"] == {
        "metadata": {"name": "fast"},
        "provisioner": "csi.example.com",
    }
    assert cache.storage.csinodes["n1"]["spec"] == {"drivers": [{"name": "d"}]}


def test_what_the_informer_slimmed_is_kept_as_it_is_not_copied_again() -> None:
    cache = ClusterCache()
    claims, volumes = cache.storage.handler("claims"), cache.storage.handler("volumes")
    slim_claim, slim_volume = slimmer("claims"), slimmer("volumes")
    # what the daemon's informers store (their transform) is what the handlers are given
    listed_claim = slim_claim(claim("data", volume="pv1", phase="Bound"))
    listed_volume = slim_volume(volume("pv1"))
    claims.on_add(listed_claim)
    volumes.on_add(listed_volume)
    # one object for the informer's store and the cache's: not a second copy of each
    assert cache.storage.claims["batch/data"] is listed_claim
    assert cache.storage.volumes["pv1"] is listed_volume
    # slimming twice keeps what slimming once keeps
    assert slim_claim(listed_claim) == slim_claim(claim("data", volume="pv1", phase="Bound"))
    assert slim_volume(listed_volume) == slim_volume(volume("pv1"))
    # an object slimming would change is slimmed, as before
    raw = claim("other")
    claims.on_add(raw)
    assert cache.storage.claims["batch/other"] is not raw
    assert "managedFields" not in cache.storage.claims["batch/other"]["metadata"]
    no_phase = {**slim_volume(volume("pv2")), "status": {"phase": ""}}
    volumes.on_add(no_phase)
    assert cache.storage.volumes["pv2"]["status"] == {}


def test_updates_and_deletes_follow_the_objects() -> None:
    cache = cache_with_storage()
    claims = cache.storage.handler("claims")
    before = cache.generation
    claims.on_add(claim("data"))
    claims.on_update(claim("data"), claim("data", volume="pv1", phase="Bound"))
    assert cache.generation > before  # a session over the old picture would decide otherwise
    bound = cache.storage.claims["batch/data"]
    assert bound["spec"]["volumeName"] == "pv1"
    assert bound["metadata"]["annotations"] == {"pv.kubernetes.io/bind-completed": "yes"}
    claims.on_delete(claim("data", volume="pv1", phase="Bound"))
    assert cache.storage.claims == {}


def test_sessions_get_a_read_only_picture_that_changes_with_the_objects() -> None:
    cache = cache_with_storage()
    claims = cache.storage.handler("claims")
    claims.on_add(claim("data"))
    first = cache.snapshot()
    assert first.storage.served
    assert first.storage.claim("batch", "data") is cache.storage.claims["batch/data"]
    with pytest.raises(TypeError):
        first.storage.claims["batch/other"] = claim("other")  # type: ignore[index]
    assert cache.snapshot().storage is first.storage  # unchanged: the same picture
    claims.on_add(claim("other"))
    second = cache.snapshot()
    assert set(second.storage.claims) == {"batch/data", "batch/other"}
    assert set(first.storage.claims) == {"batch/data"}  # the older session's picture holds
    assert second.clone().storage is second.storage


def test_without_storage_informers_the_picture_is_empty() -> None:
    cache = ClusterCache()
    snap = cache.snapshot()
    assert snap.storage is NO_STORAGE and not snap.storage.served
    assert ClusterSnapshot().storage is NO_STORAGE
    assert snap.storage.claim("batch", "data") is None


def test_a_bad_object_is_skipped_not_raised() -> None:
    cache = cache_with_storage()
    cache.storage.handler("volumes").on_add({"metadata": {"name": "pv1"}, "spec": "nonsense"})
    cache.storage.handler("volumes").on_add(volume("pv2"))
    assert "pv2" in cache.storage.volumes


def test_an_assumed_write_stands_until_the_informer_shows_it() -> None:
    """The daemon's selected node, laid over the claim at once (the next session sees it),
    kept through informer updates that do not carry it yet, dropped once one does."""
    cache = cache_with_storage()
    claims = cache.storage.handler("claims")
    claims.on_add(claim("data"))
    selected = "volume.kubernetes.io/selected-node"
    mine = {
        **claim("data"),
        "metadata": {**claim("data")["metadata"], "annotations": {selected: "n2"}},
    }
    cache.storage.assume(
        "claims", "batch/data", mine, lambda c: selected in c["metadata"]["annotations"]
    )
    assert cache.snapshot().storage.claims["batch/data"] is mine
    assert cache.storage.claims["batch/data"]["metadata"]["annotations"] == {}  # the informer's
    other = claim("data")
    other["metadata"]["annotations"] = {"volume.kubernetes.io/storage-provisioner": "csi"}
    claims.on_update(claim("data"), other)  # an update from before the write landed
    assert cache.snapshot().storage.claims["batch/data"] is mine
    landed = claim("data")
    landed["metadata"]["annotations"] = {selected: "n2"}
    claims.on_update(other, landed)
    assert cache.storage.assumed["claims"] == {}
    seen = cache.snapshot().storage.claims["batch/data"]
    assert seen["metadata"]["annotations"] == {selected: "n2"}


def test_a_forgotten_write_is_no_longer_seen() -> None:
    cache = cache_with_storage()
    cache.storage.handler("volumes").on_add(volume("pv1"))
    taken = {**volume("pv1"), "spec": {**volume("pv1")["spec"], "claimRef": {"name": "data"}}}
    cache.storage.assume("volumes", "pv1", taken, lambda v: bool(v["spec"].get("claimRef")))
    assert cache.snapshot().storage.volumes["pv1"]["spec"]["claimRef"] == {"name": "data"}
    cache.storage.forget("volumes", "pv1")
    assert "claimRef" not in cache.snapshot().storage.volumes["pv1"]["spec"]


def test_claims_are_refused_only_where_the_storage_apis_are_not_served() -> None:
    spec = {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}
    pending = {
        "metadata": {"name": "p", "namespace": "batch", "uid": "uid-p"},
        "spec": {"schedulerName": "pumice", "containers": [{"name": "c"}], **spec},
        "status": {"phase": "Pending"},
    }
    served, unserved = cache_with_storage(), ClusterCache()
    for cache in (served, unserved):
        cache.nodes.on_add({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})
        cache.pending_pods.on_add(cache.slim_pod(pending))
    assert served.pods["uid-p"].state is PodState.INITIAL
    assert served.snapshot().task("uid-p") is not None  # the filters decide
    assert unserved.pods["uid-p"].state is PodState.BLOCKED
