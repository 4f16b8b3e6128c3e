"""Pod-to-pod constraints and the refusal rule, through the daemon on the sim, seen by kubectl.

Pods are created with ``kubectl apply`` and read back with ``kubectl describe``, as a user
would: the refusal rule, anti-affine replicas on separate nodes, a gang spread 2-2, and a pod
whose required affinity cannot be met pending with kube-scheduler's words.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from daemon.workload import condition, events_about, node, pod, podgroup, seed
from support.daemonrun import Ledger, running_daemon, wait_for, write_config

pytestmark = pytest.mark.slow

Obj = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"


def with_spec(obj: Obj, **spec: Any) -> Obj:
    return {**obj, "spec": {**obj["spec"], **spec}}


def labelled(obj: Obj, **labels: str) -> Obj:
    return {**obj, "metadata": {**obj["metadata"], "labels": labels}}


async def apply(sim: Any, objects: list[Obj]) -> None:
    """Create ``objects`` with kubectl (their namespace ``batch`` first, if it is missing)."""
    if (await sim.kubectl("get", "namespace", "batch")).code != 0:
        made = await sim.kubectl("create", "namespace", "batch")
        assert made.code == 0, made.stderr
    items = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    result = await sim.kubectl("create", "--validate=false", "-f", "-", stdin=items)
    assert result.code == 0, result.stderr


def nodes_of(ledger: Ledger, prefix: str) -> Counter[str]:
    return Counter(
        p["spec"]["nodeName"]
        for p in ledger.bound("pumice")
        if p["metadata"]["name"].startswith(prefix)
    )


# -- refuse, never violate --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "field", "storage"),
    [
        (
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-0"}]},
            "spec.resourceClaims",
            True,
        ),
        # evaluated where the storage APIs are served (tests/daemon/test_volumes_e2e.py)
        (
            {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]},
            "spec.volumes[].persistentVolumeClaim",
            False,
        ),
    ],
    ids=["resourceClaims", "persistentVolumeClaim-without-storage-apis"],
)
async def test_a_pod_with_an_unevaluated_constraint_stays_pending_and_says_why(
    make_sim: Any, tmp_path: Path, spec: Obj, field: str, storage: bool
) -> None:
    message = f"pumice does not evaluate {field}; the pod stays pending"
    sim = await make_sim(storage=storage)
    seed(sim, [node("n1", cpu="4"), node("n2", cpu="4")])
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await apply(sim, [pod("plain"), with_spec(pod("refused"), **spec)])
        await wait_for(lambda: len(ledger.bound("pumice")) == 1, timeout=60)
        await wait_for(lambda: condition(sim, "refused") is not None, timeout=60)
        await wait_for(lambda: events_about(sim, "refused"), timeout=60)
    assert [p["metadata"]["name"] for p in ledger.bound("pumice")] == ["plain"]
    c = condition(sim, "refused")
    assert c is not None
    assert (c["status"], c["reason"], c["message"]) == ("False", "Unschedulable", message)
    assert ("FailedScheduling", message) in events_about(sim, "refused")
    described = await sim.kubectl("describe", "pod", "refused", "-n", "batch")
    assert described.code == 0, described.stderr
    assert "FailedScheduling" in described.stdout
    assert message in described.stdout  # the event's note
    assert re.search(r"PodScheduled\s+False", described.stdout)  # the condition
    ledger.close()


# -- namespaces -------------------------------------------------------------------------------


async def test_the_daemon_keeps_namespace_labels_as_the_api_server_has_them(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node("n1")])
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)) as daemon:
        await wait_for(lambda: daemon.synced, timeout=60)
        made = await sim.kubectl("create", "namespace", "ml")
        assert made.code == 0, made.stderr
        labelled_ns = await sim.kubectl("label", "namespace", "ml", "tier=gold")
        assert labelled_ns.code == 0, labelled_ns.stderr

        def labels() -> Any:
            assert daemon.cache is not None
            return daemon.cache.snapshot().namespaces.get("ml")

        want = {"tier": "gold", "kubernetes.io/metadata.name": "ml"}
        await wait_for(lambda: labels() == want, timeout=30)
        assert daemon.cache is not None
        snap = daemon.cache.snapshot()
        assert snap.namespace_labels("kube-system") == {
            "kubernetes.io/metadata.name": "kube-system"
        }
        assert "namespaces" in {i.name for i in daemon.informers}


# -- pod-to-pod constraints (need the filters) ------------------------------------------------


def busy(name: str, node_name: str, cpu: str) -> Obj:
    """Another scheduler's pod holding ``cpu`` of ``node_name``."""
    return pod(name, cpu=cpu, scheduler="default-scheduler", node_name=node_name)


async def test_three_anti_affine_replicas_land_on_three_nodes(sim: Any, tmp_path: Path) -> None:
    # n1 is empty, n2 and n3 half full: without the constraint all three would share a node
    seed(sim, [node("n1", cpu="8"), node("n2", cpu="8"), node("n3", cpu="8")])
    seed(sim, [busy("busy-2", "n2", "4"), busy("busy-3", "n3", "4")])
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}
            ]
        }
    }
    replicas = [
        with_spec(labelled(pod(f"web-{i}", cpu="1"), app="web"), affinity=anti) for i in range(3)
    ]
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await apply(sim, replicas)
        await wait_for(lambda: len(ledger.bound("pumice")) == 3, timeout=60)
    assert sorted(nodes_of(ledger, "web-").values()) == [1, 1, 1]
    ledger.close()


async def test_a_gang_spread_by_hostname_lands_two_and_two(sim: Any, tmp_path: Path) -> None:
    seed(sim, [node("n1", cpu="8"), node("n2", cpu="8")])
    seed(sim, [busy("busy-2", "n2", "6")])  # without the constraint the gang would go 4-0
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"job": "train"}},
        }
    ]
    members = [
        with_spec(
            labelled(pod(f"train-{i}", cpu="1", group="train"), job="train"),
            topologySpreadConstraints=spread,
        )
        for i in range(4)
    ]
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await apply(sim, [podgroup("train", 4), *members])
        await wait_for(lambda: len(ledger.bound("pumice")) == 4, timeout=60)
    assert nodes_of(ledger, "train-") == {"n1": 2, "n2": 2}
    ledger.close()


async def test_a_pod_whose_required_affinity_cannot_be_met_stays_pending(
    sim: Any, tmp_path: Path
) -> None:
    seed(sim, [node("n1", cpu="4"), node("n2", cpu="4")])
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME}
            ]
        }
    }
    lonely = with_spec(labelled(pod("lonely"), app="web"), affinity=affinity)
    ledger = Ledger(sim)
    async with running_daemon(sim.kubeconfig, write_config(tmp_path)):
        await apply(sim, [pod("plain"), lonely])
        await wait_for(lambda: len(ledger.bound("pumice")) >= 1, timeout=60)
        # either it is refused (the condition says why) or, wrongly, bound
        await wait_for(
            lambda: condition(sim, "lonely") is not None or len(ledger.bound("pumice")) == 2,
            timeout=60,
        )
    assert [p["metadata"]["name"] for p in ledger.bound("pumice")] == ["plain"]
    described = await sim.kubectl("describe", "pod", "lonely", "-n", "batch")
    assert described.code == 0, described.stderr
    assert "node(s) didn't match pod affinity rules" in described.stdout
    ledger.close()
