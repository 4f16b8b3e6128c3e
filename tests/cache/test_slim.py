"""PodSlimmer: pods keep what scheduling reads, drop the rest, and share their equal parts."""

from __future__ import annotations

import copy
from typing import Any

from pumice.cache import PodSlimmer
from pumice.model import TaskInfo, pod_requests, pod_terms
from pumice.model.requests import non_zero_request
from pumice.model.terms import pod_host_ports

Obj = dict[str, Any]


def replica(name: str, node: str) -> Obj:
    """A pod of a ReplicaSet as the API server sends it: much the kubelet reads, little else."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "web",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "generateName": "web-",
            "labels": {"app": "web", "pod-template-hash": "abc"},
            "annotations": {"volcano.sh/task-spec": "worker"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-abc", "uid": "rs"}],
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "nodeName": node,
            "priority": 100,
            "priorityClassName": "high",
            "serviceAccountName": "default",
            "dnsPolicy": "ClusterFirst",
            "securityContext": {"runAsUser": 1000},
            "volumes": [{"name": "data", "emptyDir": {}}],
            "nodeSelector": {"zone": "a"},
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
            "initContainers": [
                {
                    "name": "proxy",
                    "image": "envoy",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "100m"}},
                    "ports": [{"containerPort": 9901, "hostPort": 9901}],
                    "env": [{"name": "X", "value": "y"}],
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "image": "web:1",
                    "command": ["serve"],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "livenessProbe": {"httpGet": {"path": "/", "port": 80}},
                }
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "ready": True}],
        },
    }


def test_what_scheduling_reads_is_unchanged() -> None:
    full = replica("web-1", "n1")
    original = copy.deepcopy(full)
    slim = PodSlimmer()(full)
    assert full == original  # the original is left alone
    assert pod_requests(slim) == pod_requests(full)
    assert non_zero_request(slim, pod_requests(slim)) == non_zero_request(full, pod_requests(full))
    assert pod_terms(slim) == pod_terms(full)
    assert pod_host_ports(slim) == pod_host_ports(full) != frozenset()
    task, whole = TaskInfo.from_pod(slim), TaskInfo.from_pod(full)
    for field in ("uid", "name", "namespace", "job", "role", "priority", "status", "node_name"):
        assert getattr(task, field) == getattr(whole, field), field
    assert task.creation_timestamp == whole.creation_timestamp
    assert slim["spec"]["priorityClassName"] == "high"
    ready = [{"type": "Ready", "status": "True"}]
    assert slim["status"] == {"phase": "Running", "conditions": ready}


def test_what_nothing_reads_is_dropped() -> None:
    slim = PodSlimmer()(replica("web-1", "n1"))
    spec = slim["spec"]
    for dropped in ("volumes", "serviceAccountName", "dnsPolicy", "securityContext"):
        assert dropped not in spec
    assert spec["containers"] == [
        {
            "name": "app",
            "image": "web:1",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            "ports": [{"containerPort": 80, "hostPort": 8080}],
        }
    ]
    assert "env" not in spec["initContainers"][0]
    assert spec["initContainers"][0]["restartPolicy"] == "Always"  # a sidecar stays one
    assert "ownerReferences" not in slim["metadata"] and "generateName" not in slim["metadata"]
    assert slim["metadata"]["resourceVersion"] == "7"


def test_pods_of_one_template_share_their_equal_parts() -> None:
    slimmer = PodSlimmer()
    a, b = slimmer(replica("web-1", "n1")), slimmer(replica("web-2", "n2"))
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"]
    assert a["status"] is b["status"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert a["metadata"] is not b["metadata"] and a["spec"] is not b["spec"]
    assert (a["metadata"]["name"], b["metadata"]["name"]) == ("web-1", "web-2")
    assert (a["spec"]["nodeName"], b["spec"]["nodeName"]) == ("n1", "n2")
    other = replica("web-3", "n1")
    other["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    c = slimmer(other)
    assert c["spec"]["containers"] is not a["spec"]["containers"]
    assert pod_requests(c)["cpu"] == 2100.0 and pod_requests(a)["cpu"] == 1100.0  # + sidecar


def test_the_memory_of_shared_parts_is_bounded() -> None:
    slimmer = PodSlimmer(limit=4)
    pods = []
    for i in range(20):
        p = replica(f"web-{i}", "n1")
        p["metadata"]["labels"] = {"app": f"web-{i}"}  # a new shared part each time
        pods.append(slimmer(p))
    assert len(slimmer) <= 4
    assert [p["metadata"]["labels"]["app"] for p in pods] == [f"web-{i}" for i in range(20)]


def test_containers_that_differ_only_in_what_is_dropped_are_one_shared_list() -> None:
    slimmer = PodSlimmer()
    first, second = replica("web-1", "n1"), replica("web-2", "n1")
    second["spec"]["containers"][0]["env"] = [{"name": "INDEX", "value": "2"}]
    a, b = slimmer(first), slimmer(second)
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert "env" not in b["spec"]["containers"][0]


def test_the_memory_of_container_lists_as_they_came_is_bounded() -> None:
    from pumice.cache.slim import SLIMMED_LIMIT

    slimmer = PodSlimmer()
    for i in range(SLIMMED_LIMIT + 10):
        p = replica(f"web-{i}", "n1")
        p["spec"]["containers"][0]["env"] = [{"name": "INDEX", "value": str(i)}]
        slimmed = slimmer(p)
        assert slimmed["spec"]["containers"][0]["name"] == "app"
        assert len(slimmer._slimmed) <= SLIMMED_LIMIT
