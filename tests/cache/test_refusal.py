"""Refuse, never violate: a pod with a constraint pumice does not evaluate stays pending."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.cache import ClusterCache, PodState
from pumice.model.volumes import refusal, unevaluated_field

Obj = dict[str, Any]

CLAIM_TEMPLATE = {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}


def pod(name: str, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "schedulerName": "pumice",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            **spec,
        },
        "status": {"phase": "Pending"},
    }


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-0"}]},
            "spec.resourceClaims",
        ),
        (
            {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]},
            "spec.volumes[].persistentVolumeClaim",
        ),
        ({"volumes": [{"name": "s", "ephemeral": CLAIM_TEMPLATE}]}, "spec.volumes[].ephemeral"),
        (
            {
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-0"}],
            },
            "spec.resourceClaims",
        ),
    ],
)
def test_each_unevaluated_field_is_named(spec: Obj, field: str) -> None:
    assert unevaluated_field(pod("p", **spec)) == field
    assert refusal(pod("p", **spec)) == f"pumice does not evaluate {field}; the pod stays pending"


def test_volumes_that_do_not_constrain_placement_are_not_refused() -> None:
    volumes = [
        {"name": "a", "emptyDir": {}},
        {"name": "b", "configMap": {"name": "cfg"}},
        {"name": "c", "hostPath": {"path": "/data"}},
    ]
    assert refusal(pod("p", volumes=volumes)) is None
    assert refusal(pod("p", resourceClaims=[])) is None


@pytest.mark.parametrize("slim", [False, True], ids=["as-listed", "slimmed"])
def test_the_cache_keeps_a_refused_pod_out_of_sessions_with_its_reason(slim: bool) -> None:
    cache = ClusterCache("pumice")
    cache.nodes.on_add({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})
    claim = pod("claim", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "x"}}])
    plain = pod("plain", volumes=[{"name": "tmp", "emptyDir": {}}])
    for p in (claim, plain):
        cache.pending_pods.on_add(cache.slim_pod(p) if slim else p)
    entry = cache.pods["uid-claim"]
    assert entry.state is PodState.BLOCKED
    assert entry.reason == (
        "pumice does not evaluate spec.volumes[].persistentVolumeClaim; the pod stays pending"
    )
    snap = cache.snapshot()
    assert snap.task("uid-claim") is None and snap.task("uid-plain") is not None
    # the claim goes away: the pod is offered again
    cache.pending_pods.on_update(claim, pod("claim"))
    assert cache.pods["uid-claim"].state is PodState.INITIAL
    assert cache.snapshot().task("uid-claim") is not None


def test_a_bound_pod_with_a_claim_still_counts_on_its_node() -> None:
    cache = ClusterCache("pumice")
    cache.nodes.on_add({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})
    running = pod("run", nodeName="n1", resourceClaims=[{"name": "g", "resourceClaimName": "g"}])
    running["status"] = {"phase": "Running"}
    cache.assigned_pods.on_add(running)
    assert cache.pods["uid-run"].state is PodState.ADDED
    assert cache.snapshot().nodes["n1"].pod_count == 1


def test_where_storage_is_served_claims_are_evaluated_and_dra_still_refused() -> None:
    pvc = pod("p", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    eph = pod("e", volumes=[{"name": "s", "ephemeral": CLAIM_TEMPLATE}])
    dra = pod("g", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-0"}])
    assert refusal(pvc, storage=True) is None and refusal(eph, storage=True) is None
    assert refusal(dra, storage=True) == (
        "pumice does not evaluate spec.resourceClaims; the pod stays pending"
    )


def test_in_tree_disks_are_kept_by_the_slimmer_and_not_refused() -> None:
    disk = {"name": "d", "gcePersistentDisk": {"pdName": "data"}}
    volumes = [{"name": "tmp", "emptyDir": {}}, disk]
    assert refusal(pod("p", volumes=volumes)) is None
    cache = ClusterCache("pumice")
    assert cache.slim_pod(pod("p", volumes=volumes))["spec"]["volumes"] == [disk]
