"""The installed kubectl against the simulated server: get, create -f, delete, describe,
and a ``kubectl get -o yaml`` dump loaded back through the manifest loader."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k8s_client

from pumice.manifests import parse_manifests
from sim.simkit import bind, node, pod

POD_MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: hello
  labels: {app: hello}
spec:
  schedulerName: pumice
  containers:
  - name: hello
    image: busybox:1.36
    resources:
      requests: {cpu: 100m, memory: 64Mi}
"""


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


async def test_get_nodes(sim: Any) -> None:
    sim.create(node("node-a"))
    cordoned = node("node-b")
    cordoned["spec"] = {"unschedulable": True}
    cordoned["metadata"]["labels"]["node-role.kubernetes.io/gpu"] = ""
    sim.create(cordoned)
    result = await sim.kubectl("get", "nodes")
    assert result.code == 0, result.stderr
    table = rows(result.stdout)
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [r[:3] for r in table[1:]] == [
        ["node-a", "Ready", "<none>"],
        ["node-b", "Ready,SchedulingDisabled", "gpu"],
    ]


async def test_get_pods_all_namespaces_wide(sim: Any, api: Any) -> None:
    sim.create(node("node-a"))
    sim.create(pod("waiting"))
    sim.create(pod("worker", namespace="batch"))
    assert (await bind(api, "worker", "node-a", namespace="batch"))[0] == 201
    result = await sim.kubectl("get", "pods", "-A", "-o", "wide")
    assert result.code == 0, result.stderr
    table = rows(result.stdout)
    assert table[0][:3] == ["NAMESPACE", "NAME", "READY"]
    assert "NODE" in table[0] and "IP" in table[0]
    by_name = {r[1]: r for r in table[1:]}
    assert set(by_name) == {"waiting", "worker"}
    assert by_name["worker"][0] == "batch"
    assert "node-a" in by_name["worker"]
    assert by_name["waiting"][3] == "Pending"


async def test_create_and_delete_a_pod_manifest(sim: Any) -> None:
    manifest = sim.workdir / "pod.yaml"
    manifest.write_text(POD_MANIFEST)
    created = await sim.kubectl("create", "-f", str(manifest))
    assert created.code == 0, created.stderr
    assert created.stdout.strip() == "pod/hello created"
    again = await sim.kubectl("create", "-f", str(manifest))
    assert again.code != 0
    assert 'pods "hello" already exists' in again.stderr
    listed = await sim.kubectl("get", "pods")
    assert rows(listed.stdout)[1][:3] == ["hello", "0/1", "Pending"]
    deleted = await sim.kubectl("delete", "pod", "hello")
    assert deleted.code == 0, deleted.stderr
    assert deleted.stdout.strip() == 'pod "hello" deleted'
    missing = await sim.kubectl("get", "pod", "hello")
    assert missing.code != 0
    assert 'Error from server (NotFound): pods "hello" not found' in missing.stderr
    writes = sim.writes.select(user_agent="kubectl")
    assert [(w.verb, w.resource, w.code) for w in writes] == [
        ("create", "pods", 201),
        ("create", "pods", 409),
        ("delete", "pods", 200),
    ]


async def test_delete_of_a_running_pod_waits_for_its_removal(sim: Any) -> None:
    sim.create(node("node-a"))
    sim.create(pod("busy", node_name="node-a"))
    result = await sim.kubectl("delete", "pod", "busy", "--grace-period=5")
    assert result.code == 0, result.stderr
    assert sim.store.get("/pods", ("default", "busy")) is None  # gone when kubectl returns


async def test_describe_pod_shows_its_events(sim: Any, api: Any) -> None:
    sim.create(node("node-a"))
    created = sim.create(pod("web"))
    events = k8s_client.EventsV1Api(api)
    regarding = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "web",
        "namespace": "default",
        "uid": created["metadata"]["uid"],
    }
    for reason, kind, note in [
        ("FailedScheduling", "Warning", "0/1 nodes are available: 1 Insufficient cpu."),
        ("Scheduled", "Normal", "Successfully assigned default/web to node-a"),
    ]:
        await events.create_namespaced_event(
            "default",
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"generateName": "web.", "namespace": "default"},
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "reportingController": "pumice",
                "reportingInstance": "pumice-host-1",
                "action": "Scheduling" if kind == "Warning" else "Binding",
                "reason": reason,
                "type": kind,
                "note": note,
                "regarding": regarding,
            },
        )
    result = await sim.kubectl("describe", "pod", "web")
    assert result.code == 0, result.stderr
    section = result.stdout.split("Events:", 1)[1]
    lines = [line.split(None, 4) for line in section.strip().splitlines()[2:]]
    assert [(t, r, src) for t, r, _age, src, _msg in lines] == [
        ("Warning", "FailedScheduling", "pumice"),
        ("Normal", "Scheduled", "pumice"),
    ]
    assert "0/1 nodes are available: 1 Insufficient cpu." in section
    get_events = await sim.kubectl("get", "events")
    assert "pod/web" in get_events.stdout


async def test_a_kubectl_yaml_dump_loads_back(sim: Any, make_sim: Any, api: Any) -> None:
    sim.create(node("node-a"))
    sim.create(pod("p1", labels={"app": "x"}))
    sim.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"},
            "spec": {"minMember": 1},
        }
    )
    dump = await sim.kubectl("get", "nodes,pods,podgroups,queues", "-A", "-o", "yaml")
    assert dump.code == 0, dump.stderr
    manifests = parse_manifests(dump.stdout, "dump.yaml")
    assert sorted(manifests.by_kind) == ["Node", "Pod", "PodGroup", "Queue"]
    copy = await make_sim()
    copy.server.seed(manifests.objects)
    for table, key in [
        ("/nodes", ("", "node-a")),
        ("/pods", ("default", "p1")),
        ("scheduling.volcano.sh/podgroups", ("default", "pg")),
    ]:
        original = sim.store.get(table, key)
        loaded = copy.store.get(table, key)
        assert loaded is not None
        assert loaded["spec"] == original["spec"]
        assert loaded["metadata"]["uid"] == original["metadata"]["uid"]
        assert loaded["metadata"].get("labels") == original["metadata"].get("labels")


async def test_get_watch_prints_rows_as_pods_change(sim: Any, api: Any) -> None:
    import asyncio

    sim.create(node("node-a"))
    sim.create(pod("first"))
    proc = await asyncio.create_subprocess_exec(
        "/usr/bin/kubectl",
        "--kubeconfig",
        str(sim.kubeconfig),
        "--cache-dir",
        str(sim.workdir / "kube-cache"),
        "get",
        "pods",
        "-w",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"HOME": str(sim.workdir), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout is not None

    async def line() -> list[str]:
        return (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().split()

    try:
        assert (await line())[:3] == ["NAME", "READY", "STATUS"]
        assert (await line())[:3] == ["first", "0/1", "Pending"]
        await bind(api, "first", "node-a")
        seen = [await line() for _ in range(2)]
        assert [row[:3] for row in seen] == [
            ["first", "0/1", "Pending"],
            ["first", "1/1", "Running"],
        ]
    finally:
        proc.kill()
        await proc.wait()
