"""The decision benchmarks' cluster: nodes, queues, PodGroups and pods as plain dicts.

Deterministic for a given seed, so two runs (or two versions of pumice) decide over exactly the
same input. Nodes come in three sizes; every gang has identical pods (as a Job's or a
Deployment's pods are); two queues of weights 1 and 2 share the gangs. ``running`` pods are
already bound to nodes (spread round-robin, filling at most about half of each node) so a
cycle also carries the cluster's existing load.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

NODE_SIZES = [("16", "64Gi"), ("32", "128Gi"), ("64", "256Gi")]
POD_SHAPES = [("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("4", "8Gi"), ("250m", "512Mi")]
QUEUES = [("q1", 1), ("q2", 2)]
CREATED = "2026-01-01T00:00:00Z"


@dataclass
class Workload:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    queues: list[dict[str, Any]] = field(default_factory=list)
    podgroups: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pending(self) -> int:
        return sum(1 for p in self.pods if not p["spec"].get("nodeName"))


def node(name: str, cpu: str, memory: str) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(
    name: str, group: str | None, cpu: str, memory: str, node_name: str | None, second: int
) -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    spec: dict[str, Any] = {
        "schedulerName": "pumice",
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    status = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-{name}",
            "annotations": annotations,
            "creationTimestamp": f"2026-01-01T{second // 3600 % 24:02d}:"
            f"{second // 60 % 60:02d}:{second % 60:02d}Z",
        },
        "spec": spec,
        "status": status,
    }


def build(
    nodes: int = 5000, gangs: int = 1000, gang_size: int = 10, running: int = 0, seed: int = 7
) -> Workload:
    """``gangs`` pending gangs of ``gang_size`` identical pods, plus ``running`` bound pods."""
    rng = random.Random(seed)
    w = Workload()
    for i in range(nodes):
        cpu, memory = NODE_SIZES[rng.randrange(len(NODE_SIZES))]
        w.nodes.append(node(f"node-{i:05d}", cpu, memory))
    for name, weight in QUEUES:
        w.queues.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name, "creationTimestamp": CREATED},
                "spec": {"weight": weight, "reclaimable": True},
                "status": {"state": "Open"},
            }
        )
    for i in range(running):
        cpu, memory = POD_SHAPES[4]
        w.pods.append(pod(f"run-{i:06d}", None, cpu, memory, f"node-{i % nodes:05d}", 0))
    for g in range(gangs):
        cpu, memory = POD_SHAPES[rng.randrange(len(POD_SHAPES))]
        name = f"gang-{g:05d}"
        w.podgroups.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "bench", "creationTimestamp": CREATED},
                "spec": {"minMember": gang_size, "queue": QUEUES[g % len(QUEUES)][0]},
                "status": {"phase": "Inqueue"},
            }
        )
        for t in range(gang_size):
            w.pods.append(pod(f"{name}-w-{t}", name, cpu, memory, None, g))
    return w


ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def constrained(w: Workload, zones: int = 50) -> Workload:
    """``w`` with pod-to-pod constraints: nodes spread over ``zones`` zones; each gang is an
    app (label ``app``), and of every three gangs one has required hostname anti-affinity to
    its app, one a zone spread of its app (maxSkew 1, DoNotSchedule), one a preferred hostname
    affinity to its app. Changes and returns ``w``."""
    for i, n in enumerate(w.nodes):
        n["metadata"]["labels"][ZONE] = f"zone-{i % zones:02d}"
    apps: dict[str, int] = {}
    for p in w.pods:
        group = p["metadata"]["annotations"].get("scheduling.k8s.io/group-name")
        if not group or p["spec"].get("nodeName"):
            continue
        kind = apps.setdefault(group, len(apps) % 3)
        app = {"app": group}
        p["metadata"]["labels"] = dict(app)
        selector = {"matchLabels": app}
        if kind == 0:
            term = {"labelSelector": selector, "topologyKey": HOSTNAME}
            p["spec"]["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        elif kind == 1:
            p["spec"]["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": selector,
                }
            ]
        else:
            term = {"labelSelector": selector, "topologyKey": HOSTNAME}
            p["spec"]["affinity"] = {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": term}
                    ]
                }
            }
    return w
