"""``dryRun=All``: every mutating verb is answered as if it ran, and nothing changes.

kubectl's ``--dry-run=server`` (label, patch, replace, delete), ``kubectl diff``, the status,
binding and eviction subresources and deletecollection through kubernetes_asyncio, and a
property: a random sequence of requests run with some of them dry-run leaves the cluster, its
resourceVersions, its watch streams and its write log exactly as the same sequence without
them does.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.watch import Watch

from pumice.sim import SimConfig, SimServer
from sim.simkit import binding, body_of, node, pod, wait_until

POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: busybox:1.36
    resources: {requests: {cpu: 100m}}
"""


def state(sim: Any) -> tuple[int, dict[str, Any], int]:
    """What a dry run must not change: the resourceVersion, every table, the write log."""
    tables = {
        name: copy.deepcopy(sim.store.table(name))
        for name in sim.store.tables()
        if sim.store.table(name)
    }
    return sim.store.rv, tables, len(sim.writes)


async def test_kubectl_dry_run_server_changes_nothing(sim: Any) -> None:
    manifest = sim.workdir / "pod.yaml"
    manifest.write_text(POD_YAML)
    assert (await sim.kubectl("create", "-f", str(manifest))).code == 0
    before = state(sim)
    label = await sim.kubectl("label", "pod", "web", "tier=db", "--dry-run=server")
    assert label.code == 0, label.stderr
    assert label.stdout.strip() == "pod/web labeled (server dry run)"
    patch = await sim.kubectl(
        "patch",
        "pod",
        "web",
        "-p",
        '{"metadata":{"labels":{"p":"q"}}}',
        "--dry-run=server",
        "-o",
        "jsonpath={.metadata.labels.p}",
    )
    assert patch.code == 0, patch.stderr
    assert patch.stdout == "q"  # answered with the would-be object
    changed = sim.workdir / "changed.yaml"
    changed.write_text(POD_YAML.replace("app: web", "app: changed"))
    replace = await sim.kubectl("replace", "-f", str(changed), "--dry-run=server")
    assert replace.code == 0, replace.stderr
    assert replace.stdout.strip() == "pod/web replaced (server dry run)"
    diff = await sim.kubectl("diff", "-f", str(changed))
    assert diff.code == 1, diff.stderr  # 1: differences found
    assert "-    app: web" in diff.stdout and "+    app: changed" in diff.stdout
    delete = await sim.kubectl("delete", "pod", "web", "--dry-run=server")
    assert delete.code == 0, delete.stderr
    assert delete.stdout.strip() == 'pod "web" deleted (server dry run)'
    assert state(sim) == before
    assert sim.store.get("/pods", ("default", "web"))["metadata"]["labels"] == {"app": "web"}


async def test_dry_run_create_is_validated_and_answered_without_a_version(sim: Any) -> None:
    manifest = sim.workdir / "pod.yaml"
    manifest.write_text(POD_YAML)
    before = state(sim)
    out = await sim.kubectl("create", "-f", str(manifest), "--dry-run=server", "-o", "json")
    assert out.code == 0, out.stderr
    assert '"resourceVersion"' not in out.stdout
    assert '"schedulerName": "default-scheduler"' in out.stdout  # defaulted like a real create
    invalid = sim.workdir / "invalid.yaml"
    invalid.write_text(POD_YAML.replace("cpu: 100m", 'cpu: "-1"'))
    refused = await sim.kubectl("create", "-f", str(invalid), "--dry-run=server")
    assert refused.code != 0
    assert "spec.containers[0].resources.requests[cpu]" in refused.stderr
    assert state(sim) == before


async def test_subresources_and_collections_dry_run(sim: Any, api: Any) -> None:
    sim.create(node("node-a"))
    sim.create(pod("a", labels={"app": "x"}))
    sim.create(pod("b", labels={"app": "x"}, node_name="node-a"))
    # let the simulated kubelet start "b" first: its own write must not race the snapshot
    await wait_until(
        lambda: sim.store.get("/pods", ("default", "b"))["status"]["phase"] == "Running"
    )
    core = k8s_client.CoreV1Api(api)
    before = state(sim)
    bound = await core.create_namespaced_pod_binding(
        "a", "default", binding("a", "node-a"), dry_run="All", _preload_content=False
    )
    assert bound.status == 201
    status = await core.patch_namespaced_pod_status(
        "a",
        "default",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        dry_run="All",
        _preload_content=False,
    )
    patched = await body_of(status)
    assert patched["status"]["conditions"][-1]["type"] == "Ready"
    evicted = await core.create_namespaced_pod_eviction(
        "b",
        "default",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "b"}},
        dry_run="All",
        _preload_content=False,
    )
    assert evicted.status == 201
    gone = await core.delete_collection_namespaced_pod(
        "default", label_selector="app=x", dry_run="All", _preload_content=False
    )
    assert sorted(p["metadata"]["name"] for p in (await body_of(gone))["items"]) == ["a", "b"]
    sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    sim.create(pod("c", namespace="team-a"))
    before = state(sim)
    ns = await core.delete_namespace("team-a", dry_run="All", _preload_content=False)
    assert (await body_of(ns))["status"]["phase"] == "Terminating"
    assert state(sim) == before
    # the same binding for real still works: the dry run reserved nothing
    assert (
        await core.create_namespaced_pod_binding(
            "a", "default", binding("a", "node-a"), _preload_content=False
        )
    ).status == 201


async def test_dry_run_value_other_than_all_is_refused(sim: Any, api: Any) -> None:
    core = k8s_client.CoreV1Api(api)
    with pytest.raises(ApiException) as caught:
        await core.create_namespace({"metadata": {"name": "x"}}, dry_run="Some")
    assert caught.value.status == 422
    assert 'supported values: "All"' in json.loads(caught.value.body)["message"]
    assert sim.store.get("/namespaces", ("", "x")) is None


# -- property: dry-run requests are invisible -----------------------------------------------

POD_NAMES = ("p0", "p1", "p2")
PG = ("scheduling.volcano.sh", "v1beta1", "default", "podgroups")

op_names = st.sampled_from(
    [
        "create_pod",
        "generate_pod",
        "delete_pod",
        "label_pod",
        "json_patch_pod",
        "replace_pod",
        "status_pod",
        "bind_pod",
        "evict_pod",
        "delete_pods",
        "create_pg",
        "patch_pg",
        "delete_pg",
        "create_ns",
        "delete_ns",
        "label_node",
    ]
)
ops_strategy = st.lists(
    st.tuples(op_names, st.sampled_from(POD_NAMES), st.booleans()), min_size=1, max_size=12
)


async def _run(api: k8s_client.ApiClient, op: str, name: str, dry: bool) -> int:
    """One request through kubernetes_asyncio; the HTTP status it got."""
    core = k8s_client.CoreV1Api(api)
    custom = k8s_client.CustomObjectsApi(api)
    kw: dict[str, Any] = {"_preload_content": False}
    if dry:
        kw["dry_run"] = "All"
    try:
        if op == "create_pod":
            resp = await core.create_namespaced_pod("default", pod(name), **kw)
        elif op == "generate_pod":
            body = pod("")
            body["metadata"] = {"generateName": "gen-"}
            resp = await core.create_namespaced_pod("default", body, **kw)
        elif op == "delete_pod":
            resp = await core.delete_namespaced_pod(name, "default", **kw)
        elif op == "label_pod":
            patch = {"metadata": {"labels": {"touched": name}}}
            resp = await core.patch_namespaced_pod(name, "default", patch, **kw)
        elif op == "json_patch_pod":
            patch = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]
            resp = await core.patch_namespaced_pod(name, "default", patch, **kw)
        elif op == "replace_pod":
            current = await body_of(
                await core.read_namespaced_pod(name, "default", _preload_content=False)
            )
            current["metadata"].setdefault("labels", {})["replaced"] = "yes"
            resp = await core.replace_namespaced_pod(name, "default", current, **kw)
        elif op == "status_pod":
            patch = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
            resp = await core.patch_namespaced_pod_status(name, "default", patch, **kw)
        elif op == "bind_pod":
            body = binding(name, "node-a")
            resp = await core.create_namespaced_pod_binding(name, "default", body, **kw)
        elif op == "evict_pod":
            body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
            resp = await core.create_namespaced_pod_eviction(name, "default", body, **kw)
        elif op == "delete_pods":
            resp = await core.delete_collection_namespaced_pod(
                "default", label_selector=f"touched={name}", **kw
            )
        elif op == "create_pg":
            body = {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name},
                "spec": {"minMember": 1},
            }
            resp = await custom.create_namespaced_custom_object(*PG, body, **kw)
        elif op == "patch_pg":
            patch = {"spec": {"minMember": 3}}
            resp = await custom.patch_namespaced_custom_object(*PG, name, patch, **kw)
        elif op == "delete_pg":
            resp = await custom.delete_namespaced_custom_object(*PG, name, **kw)
        elif op == "create_ns":
            resp = await core.create_namespace({"metadata": {"name": f"ns-{name}"}}, **kw)
        elif op == "delete_ns":
            resp = await core.delete_namespace(f"ns-{name}", **kw)
        else:
            patch = {"metadata": {"labels": {"seen": name}}}
            resp = await core.patch_node("node-a", patch, **kw)
    except ApiException as exc:
        return int(exc.status)
    status = int(resp.status)
    resp.release()
    return status


_VOLATILE = frozenset(
    {
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "lastTransitionTime",
        "lastProbeTime",
        "lastHeartbeatTime",
        "startTime",
        "machineID",
        "systemUUID",
        "bootID",
    }
)


def _stable(value: Any) -> Any:
    """``value`` without what differs between two servers by nature (uids, clock times)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _tables(server: SimServer) -> dict[str, Any]:
    return {t: dict(server.store.table(t)) for t in server.store.tables() if server.store.table(t)}


WATCHED = ("pods", "namespaces", "nodes", "podgroups")


async def _watch(api: k8s_client.ApiClient, what: str, rv: str, out: list[Any]) -> None:
    core = k8s_client.CoreV1Api(api)
    custom = k8s_client.CustomObjectsApi(api)
    watch = Watch()
    if what == "pods":
        stream = watch.stream(core.list_pod_for_all_namespaces, resource_version=rv)
    elif what == "namespaces":
        stream = watch.stream(core.list_namespace, resource_version=rv)
    elif what == "nodes":
        stream = watch.stream(core.list_node, resource_version=rv)
    else:
        stream = watch.stream(
            custom.list_cluster_custom_object,
            "scheduling.volcano.sh",
            "v1beta1",
            "podgroups",
            resource_version=rv,
        )
    async with watch:
        async for event in stream:
            m = event["raw_object"]["metadata"]
            out.append((event["type"], m.get("namespace"), m["name"], m["resourceVersion"]))
            if m["name"].startswith("zz-end"):
                return


async def _marker(api: k8s_client.ApiClient) -> None:
    """One last real write per watched resource, so every stream has a known end."""
    core = k8s_client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("zz-end"))
    await core.create_namespace({"metadata": {"name": "zz-end"}})
    await core.create_node(node("zz-end"))
    await k8s_client.CustomObjectsApi(api).create_namespaced_custom_object(
        *PG,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "zz-end"},
            "spec": {"minMember": 1},
        },
    )


async def _scenario(ops: list[tuple[str, str, bool]], keep_dry: bool, workdir: Path) -> Any:
    # lifecycle delays far beyond the test, so no timer writes race the requests
    server = SimServer(SimConfig(pod_start_delay=3600, pod_termination_delay=3600))
    await server.start()
    try:
        server.seed([node("node-a"), pod("p0", labels={"touched": "p0"}), pod("p1")])
        kubeconfig = server.write_kubeconfig(workdir / f"kubeconfig-{keep_dry}")
        configuration = k8s_client.Configuration()
        await k8s_config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration
        )
        async with k8s_client.ApiClient(configuration=configuration) as api:
            events: dict[str, list[Any]] = {w: [] for w in WATCHED}
            start = str(server.store.rv)
            watchers = [asyncio.create_task(_watch(api, w, start, events[w])) for w in WATCHED]
            codes = []
            for op, name, dry in ops:
                if dry and not keep_dry:
                    continue
                before = (server.store.rv, len(server.writes))
                tables = _tables(server)
                code = await _run(api, op, name, dry)
                if dry:
                    assert (server.store.rv, len(server.writes)) == before, op
                    assert _tables(server) == tables, op
                else:
                    codes.append(code)
            await _marker(api)
            await asyncio.wait_for(asyncio.gather(*watchers), 20)
        objects = _stable(_tables(server))
        writes = [(w.verb, w.path, w.query, w.code) for w in server.writes]
        return codes, server.store.rv, objects, events, writes
    finally:
        await server.stop()


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=ops_strategy)
def test_dry_run_requests_change_nothing_observable(
    ops: list[tuple[str, str, bool]], tmp_path: Path
) -> None:
    with_dry = asyncio.run(_scenario(ops, True, tmp_path))
    without = asyncio.run(_scenario(ops, False, tmp_path))
    codes, rv, objects, events, writes = with_dry
    assert codes == without[0]
    assert rv == without[1]
    assert objects == without[2]
    assert events == without[3]
    assert writes == without[4]
