"""Claims, volumes, StorageClasses, CSINodes and CSIDrivers as served kinds, through kubectl and
kubernetes_asyncio: discovery with short names (``pvc``, ``pv``, ``sc``), the columns kubectl
prints, the server's validation and defaults, seeding from manifests, the sim-cluster flags,
and a cluster without storage APIs (``SimConfig(storage=False)``, ``--without-storage``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from pumice.sim.errors import ApiError
from sim.simkit import run_kubectl, wait_until
from sim.test_sim_cli import banner, failing, start, stop
from sim.volumekit import bound_to, claim, storage_class, volume

CSI_NODE = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSINode",
    "metadata": {"name": "n1"},
    "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1", "allocatable": {"count": 3}}]},
}
CSI_DRIVER = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSIDriver",
    "metadata": {"name": "csi.example.com"},
    "spec": {},
}


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines() if line.strip()]


async def test_kubectl_get_pvc_pv_sc_prints_kubectls_columns(sim: Any) -> None:
    gold = storage_class("gold", reclaimPolicy="Retain", allowVolumeExpansion=True)
    gold["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    sim.server.seed([volume("pv1", "5Gi", modes=("ReadWriteOnce", "ReadOnlyMany")), gold])
    sim.server.seed([claim("data", "2Gi", cls=""), claim("waiting", "1Gi", cls="none")])
    await wait_until(lambda: bound_to(sim, "data") == "pv1")
    result = await sim.kubectl("get", "pvc,pv,sc")
    assert result.code == 0, result.stderr
    claims, volumes, classes = (rows(block) for block in result.stdout.split("\n\n"))
    assert claims[0] == [
        "NAME",
        "STATUS",
        "VOLUME",
        "CAPACITY",
        "ACCESS",
        "MODES",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "AGE",
    ]
    assert claims[1][:5] == ["persistentvolumeclaim/data", "Bound", "pv1", "5Gi", "RWO,ROX"]
    assert claims[2][:3] == ["persistentvolumeclaim/waiting", "Pending", "none"]
    assert volumes[0] == [
        "NAME",
        "CAPACITY",
        "ACCESS",
        "MODES",
        "RECLAIM",
        "POLICY",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "REASON",
        "AGE",
    ]
    assert volumes[1][:6] == [
        "persistentvolume/pv1",
        "5Gi",
        "RWO,ROX",
        "Retain",
        "Bound",
        "default/data",
    ]
    assert classes[0] == [
        "NAME",
        "PROVISIONER",
        "RECLAIMPOLICY",
        "VOLUMEBINDINGMODE",
        "ALLOWVOLUMEEXPANSION",
        "AGE",
    ]
    assert classes[1][:6] == [
        "storageclass.storage.k8s.io/gold",
        "(default)",
        "csi.example.com",
        "Retain",
        "Immediate",
        "true",
    ]
    wide = await sim.kubectl("get", "pv", "-o", "wide")
    assert rows(wide.stdout)[0][-1] == "VOLUMEMODE" and rows(wide.stdout)[1][-1] == "Filesystem"


async def test_kubectl_get_csinodes_and_csidrivers(sim: Any) -> None:
    sim.server.seed([CSI_NODE, CSI_DRIVER])
    nodes = await sim.kubectl("get", "csinodes")
    assert nodes.code == 0, nodes.stderr
    assert rows(nodes.stdout) == [["NAME", "DRIVERS", "AGE"], ["n1", "1", rows(nodes.stdout)[1][2]]]
    drivers = await sim.kubectl("get", "csidrivers")
    assert rows(drivers.stdout)[0][:7] == [
        "NAME",
        "ATTACHREQUIRED",
        "PODINFOONMOUNT",
        "STORAGECAPACITY",
        "TOKENREQUESTS",
        "REQUIRESREPUBLISH",
        "MODES",
    ]
    # the server's defaults
    assert rows(drivers.stdout)[1][:7] == [
        "csi.example.com",
        "true",
        "false",
        "false",
        "<unset>",
        "false",
        "Persistent",
    ]


async def test_defaults_on_create(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    pv = await core.create_persistent_volume(volume("pv1"))
    assert pv.spec.persistent_volume_reclaim_policy == "Retain"
    assert pv.spec.volume_mode == "Filesystem"
    sc = await k8s_client.StorageV1Api(api).create_storage_class(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "x"},
            "provisioner": "csi.example.com",
        }
    )
    assert (sc.reclaim_policy, sc.volume_binding_mode) == ("Delete", "Immediate")


@pytest.mark.parametrize(
    ("kind", "body", "field", "message"),
    [
        (
            "pvc",
            claim("c", modes=()),
            "spec.accessModes",
            "Required value: at least 1 access mode is required",
        ),
        ("pvc", claim("c", modes=("ReadWriteSometimes",)), "spec.accessModes", "Unsupported value"),
        (
            "pvc",
            claim("c", modes=("ReadWriteOncePod", "ReadWriteOnce")),
            "spec.accessModes",
            "Forbidden: may not use ReadWriteOncePod with other access modes",
        ),
        (
            "pvc",
            {**claim("c"), "spec": {"accessModes": ["ReadWriteOnce"]}},
            "spec.resources[storage]",
            "Required value",
        ),
        (
            "pvc",
            claim("c", "0"),
            "spec.resources[storage]",
            'Invalid value: "0": must be greater than zero',
        ),
        (
            "pv",
            {**volume("v"), "spec": {"accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}},
            "spec.capacity",
            "Required value",
        ),
        (
            "pv",
            {
                **volume("v"),
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]},
            },
            "spec",
            "Required value: must specify a volume type",
        ),
        (
            "pv",
            volume("v", local={"path": "/mnt"}, hostPath=None),
            "spec.nodeAffinity",
            "Required value: Local volume requires node affinity",
        ),
        ("sc", {**storage_class("s"), "provisioner": ""}, "provisioner", "Required value"),
        ("sc", storage_class("s", mode="Later"), "volumeBindingMode", 'Unsupported value: "Later"'),
    ],
)
async def test_validation_errors(
    sim: Any, api: Any, kind: str, body: dict[str, Any], field: str, message: str
) -> None:
    body = json.loads(json.dumps(body))
    if kind == "pv" and body["spec"].get("hostPath", 1) is None:
        del body["spec"]["hostPath"]
    core, storage = k8s_client.CoreV1Api(api), k8s_client.StorageV1Api(api)
    create = {
        "pvc": lambda: core.create_namespaced_persistent_volume_claim("default", body),
        "pv": lambda: core.create_persistent_volume(body),
        "sc": lambda: storage.create_storage_class(body),
    }[kind]
    with pytest.raises(ApiException) as err:
        await create()
    assert err.value.status == 422
    causes = json.loads(err.value.body)["details"]["causes"]
    assert any(c["field"] == field and message in c["message"] for c in causes), causes


async def test_immutable_fields(sim: Any, api: Any) -> None:
    sim.server.seed([storage_class("fast", "kubernetes.io/no-provisioner")])
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_persistent_volume_claim("default", claim("c", cls="fast"))
    with pytest.raises(ApiException) as err:
        await core.patch_namespaced_persistent_volume_claim(
            "c", "default", {"spec": {"accessModes": ["ReadWriteMany"]}}
        )
    assert err.value.status == 422
    assert "spec is immutable after creation" in json.loads(err.value.body)["message"]
    with pytest.raises(ApiException) as err:
        await k8s_client.StorageV1Api(api).patch_storage_class("fast", {"provisioner": "other"})
    assert "updates to provisioner are forbidden." in json.loads(err.value.body)["message"]
    # the claim's request may grow, and a volume name be set once
    await core.patch_namespaced_persistent_volume_claim(
        "c", "default", {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
    )


async def test_kubectl_create_refuses_with_the_servers_words(sim: Any) -> None:
    path = sim.workdir / "pvc.yaml"
    path.write_text(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\n"
        "spec: {accessModes: [ReadWriteOnce]}\n"
    )
    result = await sim.kubectl("create", "-f", str(path))
    assert result.code != 0
    assert 'PersistentVolumeClaim "c" is invalid: spec.resources[storage]: Required value' in (
        result.stderr
    )


async def test_seeding_refuses_a_bad_object_naming_the_field(sim: Any) -> None:
    with pytest.raises(ApiError) as err:
        sim.server.seed([claim("c", modes=())])
    assert err.value.problem.startswith("spec.accessModes: Required value")


async def test_a_cluster_without_storage_apis(make_sim: Any) -> None:
    sim = await make_sim(storage=False)
    result = await sim.kubectl("get", "pvc")
    assert result.code != 0
    assert 'the server doesn\'t have a resource type "pvc"' in result.stderr
    async with await sim.client() as api:
        groups = await k8s_client.ApisApi(api).get_api_versions()
        assert "storage.k8s.io" not in [g.name for g in groups.groups]
    with pytest.raises(ApiError):
        sim.server.seed([storage_class("fast")])


async def test_sim_cluster_flags(tmp_path: Any) -> None:
    code, err = await failing("--fail-provisioning", "1.5")
    assert code == 2 and "--fail-provisioning 1.5: must be within 0..1" in err
    code, err = await failing("--provisioning-delay", "-1")
    assert code == 2 and "--provisioning-delay: must not be negative" in err
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\n"
        "provisioner: csi.example.com\nvolumeBindingMode: WaitForFirstConsumer\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "status: {capacity: {cpu: '1', memory: 1Gi, pods: '10'}}\n---\n"
        "apiVersion: v1\nkind: PersistentVolumeClaim\n"
        "metadata: {name: c, annotations: {volume.kubernetes.io/selected-node: n1}}\n"
        "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, "
        "storageClassName: fast}\n"
    )
    proc = await start("--cluster", str(cluster), "--fail-provisioning", "1", "--without-volcano")
    try:
        lines = await banner(proc)
        assert (
            "1 PersistentVolumeClaim" in lines["serving"] and "1 StorageClass" in lines["serving"]
        )
        kubeconfig = Path(lines["kubeconfig"])

        async def failed() -> bool:
            args = ("get", "events", "--field-selector", "reason=ProvisioningFailed", "-o", "name")
            got = await run_kubectl(kubeconfig, tmp_path, *args)
            return bool(got.stdout.strip())

        for _ in range(300):
            if await failed():
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("no ProvisioningFailed event")
    finally:
        code, _ = await stop(proc)
    assert code == 0
    code, err = await failing("--without-storage", "--cluster", str(cluster))
    assert code == 2, err
    assert "this server does not serve the group storage.k8s.io" in err, err


async def test_a_claim_naming_no_class_gets_the_default_one(sim: Any, api: Any) -> None:
    marked = {"storageclass.kubernetes.io/is-default-class": "true"}
    plain = storage_class("plain", "kubernetes.io/no-provisioner")
    default = storage_class("standard", "kubernetes.io/no-provisioner")
    default["metadata"]["annotations"] = marked
    sim.server.seed([plain, default])
    core = k8s_client.CoreV1Api(api)
    unnamed = await core.create_namespaced_persistent_volume_claim("default", claim("a"))
    assert unnamed.spec.storage_class_name == "standard"
    # "" asks for no class at all, and a named class is kept
    empty = await core.create_namespaced_persistent_volume_claim("default", claim("b", cls=""))
    assert empty.spec.storage_class_name == ""
    named = await core.create_namespaced_persistent_volume_claim("default", claim("c", cls="plain"))
    assert named.spec.storage_class_name == "plain"
