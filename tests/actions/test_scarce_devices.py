"""AI clusters through real sessions (allocate over real plugins): GPU pods packed by
resource-strategy-fit, CPU pods kept off GPU nodes by sra, and GPU nodes keeping the cpu and
memory their idle GPUs need through proportional."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pumice import ClusterSnapshot, JobInfo, NodeInfo, Plugin, TaskInfo
from pumice.commands.config_commands import load_checked
from pumice.framework import Session, run_actions
from pumice.framework.session import RecordingCommitter
from pumice.plugins.nodeorder import NodeOrderPlugin
from pumice.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from pumice.plugins.scarce import ProportionalPlugin, SraPlugin
from support.flow import GiB, binds, gang, res, run_flow, snapshot

GPU = "nvidia.com/gpu"
ALLOCATE = ["allocate"]
PLUGINS: dict[str, type[Plugin]] = {
    "nodeorder": NodeOrderPlugin,
    "resource-strategy-fit": ResourceStrategyFitPlugin,
    "sra": SraPlugin,
    "proportional": ProportionalPlugin,
}

AI_CONFIG = Path(__file__).parents[2] / "conf" / "examples" / "ai-scheduler.conf"
"""The shipped AI-cluster configuration that the README shows."""


def run_ai_config(snap: ClusterSnapshot) -> Session:
    """A session with the shipped AI-cluster config and the plugins found through the entry
    points, its actions run."""
    config, host = load_checked(str(AI_CONFIG))
    session = Session.open(snap, config, host, committer=RecordingCommitter())
    run_actions(session)
    return session


def gpu_nodes(count: int, prefix: str = "gpu-") -> list[NodeInfo]:
    return [NodeInfo(f"{prefix}{i}", res(32000, 128 * GiB, **{GPU: 4})) for i in range(count)]


def cpu_nodes(count: int, prefix: str = "cpu-", cpu: float = 16000) -> list[NodeInfo]:
    return [NodeInfo(f"{prefix}{i}", res(cpu, 64 * GiB)) for i in range(count)]


def one_pod_jobs(prefix: str, count: int, start: float, **request: Any) -> list[JobInfo]:
    """``count`` single-pod jobs created two seconds apart from ``start``; job ``web-1``
    has the pod ``web-1-0``."""
    return [gang(f"{prefix}{i}", 1, created=start + 2 * i, **request) for i in range(count)]


def interleaved_ai_jobs() -> list[JobInfo]:
    """8 one-GPU pods and 4 CPU-only pods, alternating in creation order."""
    gpu = one_pod_jobs("train-", 8, 0.0, cpu=4000, memory=16 * GiB, extra={GPU: 1})
    cpu = one_pod_jobs("web-", 4, 1.0, cpu=2000, memory=4 * GiB)
    return sorted([*gpu, *cpu], key=lambda job: job.creation_timestamp)


def placement(bound: dict[str, str], prefix: str) -> Counter[str]:
    """How many pods whose name starts with ``prefix`` went to each node."""
    return Counter(node for pod, node in bound.items() if pod.startswith(prefix))


def test_ai_cluster_packs_gpu_pods_and_spreads_cpu_pods() -> None:
    snap = snapshot([*gpu_nodes(4), *cpu_nodes(4)], interleaved_ai_jobs())
    bound = binds(run_ai_config(snap))
    assert len(bound) == 12
    # 8 one-GPU pods on 4-GPU nodes: the fewest nodes possible, each one full
    assert placement(bound, "train-") == {"gpu-0": 4, "gpu-1": 4}
    # CPU-only pods: one per CPU node, none on a GPU node
    assert placement(bound, "web-") == {"cpu-0": 1, "cpu-1": 1, "cpu-2": 1, "cpu-3": 1}


def test_without_resource_strategy_fit_gpu_pods_spread_over_every_gpu_node() -> None:
    # the control: kube-scheduler's least-requested scoring spreads the GPU pods
    snap = snapshot([*gpu_nodes(4), *cpu_nodes(4)], interleaved_ai_jobs())
    ssn = run_flow(snap, [["gang"], ["predicates", "nodeorder"]], ALLOCATE, PLUGINS)
    assert sorted(placement(binds(ssn), "train-").values()) == [2, 2, 2, 2]


def test_sra_keeps_a_cpu_pod_off_the_gpu_node_while_a_cpu_node_fits() -> None:
    # the GPU node is far emptier, so least-requested scoring alone prefers it
    nodes = [*gpu_nodes(1), *cpu_nodes(1, cpu=8000)]
    jobs = one_pod_jobs("web-", 2, 0.0, cpu=6000, memory=4 * GiB)
    tiers: Any = [["predicates", "nodeorder"]]
    without = binds(run_flow(snapshot(nodes, jobs), tiers, ALLOCATE, PLUGINS))
    assert without == {"web-0-0": "gpu-0", "web-1-0": "gpu-0"}

    nodes = [*gpu_nodes(1), *cpu_nodes(1, cpu=8000)]
    jobs = one_pod_jobs("web-", 2, 0.0, cpu=6000, memory=4 * GiB)
    sra = {"name": "sra", "arguments": {"resources": GPU, "weight": 1}}
    bound = binds(
        run_flow(snapshot(nodes, jobs), [["predicates", "nodeorder", sra]], ALLOCATE, PLUGINS)
    )
    # the first fits the CPU node and goes there; the second no longer fits it: sra only
    # prefers, so it takes the GPU node rather than waiting
    assert bound == {"web-0-0": "cpu-0", "web-1-0": "gpu-0"}


def test_proportional_keeps_cpu_and_memory_for_idle_gpus() -> None:
    # a 16-core GPU node with 4 GPUs keeps 3 cores and 8 GB per idle GPU: 12 cores, 32 GB
    gpu = NodeInfo("gpu-0", res(16000, 64 * 10**9, **{GPU: 4}))
    nodes = [gpu, *cpu_nodes(1, cpu=8000)]
    web = one_pod_jobs("web-", 2, 0.0, cpu=6000, memory=GiB)
    train = one_pod_jobs("train-", 1, 10.0, cpu=3000, memory=GiB, extra={GPU: 1})
    small = one_pod_jobs("small-", 1, 20.0, cpu=4000, memory=GiB)
    proportional = {
        "name": "proportional",
        "arguments": {
            "resources": GPU,
            "resourceProportion": {f"{GPU}.cpu": 3, f"{GPU}.memory": 8},
        },
    }
    ssn = run_flow(
        snapshot(nodes, [*web, *train, *small]),
        [["predicates", "nodeorder", proportional]],
        ALLOCATE,
        PLUGINS,
    )
    bound = binds(ssn)
    # web-0 fits the CPU node; web-1 would leave the GPU node 10 cores for 4 idle GPUs
    assert bound["web-0-0"] == "cpu-0"
    assert "web-1-0" not in bound
    assert ssn.task_reasons["web-1-0"] == (
        "0/2 nodes are available: 1 Insufficient cpu, "
        f"1 proportional of resource {GPU} check failed."
    )
    # a GPU pod is not held back; after it 3 GPUs are idle (9 cores kept of 13 idle), so a
    # 4-core CPU pod now fits beside it
    assert bound["train-0-0"] == "gpu-0"
    assert bound["small-0-0"] == "gpu-0"


def test_the_same_checks_inside_resource_strategy_fit() -> None:
    gpu = NodeInfo("gpu-0", res(16000, 64 * 10**9, **{GPU: 4}))
    nodes = [gpu, *cpu_nodes(1, cpu=8000)]
    web = one_pod_jobs("web-", 2, 0.0, cpu=6000, memory=GiB)
    rsf = {
        "name": "resource-strategy-fit",
        "arguments": {
            "proportional": {
                "enable": True,
                "resources": GPU,
                "resourceProportion": {f"{GPU}.cpu": 3, f"{GPU}.memory": 8},
            },
        },
    }
    ssn = run_flow(snapshot(nodes, web), [["predicates", rsf]], ALLOCATE, PLUGINS)
    assert binds(ssn) == {"web-0-0": "cpu-0"}
    assert "proportional of resource" in ssn.task_reasons["web-1-0"]


# -- Volcano 1.13's allocate test of resource-strategy-fit ------------------------------------


def volcano_pod(name: str, kind: str, gpus: int = 0, node: str | None = None) -> TaskInfo:
    """A 1 cpu / 1G pod of the job ``pg1`` selecting nodes labelled ``nodeResourceType``."""
    requests = {"cpu": "1", "memory": "1G", **({GPU: str(gpus)} if gpus else {})}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}],
        "nodeSelector": {"nodeResourceType": kind},
    }
    if node is not None:
        spec["nodeName"] = node
    pod = {
        "metadata": {"name": name, "namespace": "c1", "uid": name},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }
    return TaskInfo.from_pod(pod)


def volcano_nodes() -> list[NodeInfo]:
    def make(name: str, kind: str, gpus: int) -> NodeInfo:
        extra = {GPU: gpus} if gpus else {}
        return NodeInfo(name, res(5000, 10 * GiB, **extra), labels={"nodeResourceType": kind})

    return [
        make("n1", "gpu", 10),
        make("n2", "gpu", 10),
        make("n3", "cpu", 0),
        make("n4", "cpu", 0),
    ]


@pytest.mark.parametrize(
    ("pending", "running", "expected"),
    [
        # a 2-GPU pod joins the running 2-GPU pod's node: GPUs are packed
        (volcano_pod("p1", "gpu", 2), volcano_pod("p2", "gpu", 2, node="n2"), "n2"),
        # a CPU pod avoids the CPU node that already runs one: cpu is spread
        (volcano_pod("p3", "cpu"), volcano_pod("p4", "cpu", node="n3"), "n4"),
    ],
    ids=["gpu-most-allocated", "cpu-least-allocated"],
)
def test_volcano_allocate_vectors(pending: TaskInfo, running: TaskInfo, expected: str) -> None:
    job = JobInfo(uid="c1/pg1", name="pg1", namespace="c1", min_available=1, phase="Inqueue")
    job.add_task(pending)
    job.add_task(running)
    rsf = {
        "name": "resource-strategy-fit",
        "arguments": {
            "resourceStrategyFitWeight": 10,
            "resources": {
                GPU: {"type": "MostAllocated", "weight": 2},
                "cpu": {"type": "LeastAllocated", "weight": 1},
            },
        },
    }
    tiers: Any = [[rsf, "gang", "proportion", "predicates", "nodeorder"]]
    ssn = run_flow(snapshot(volcano_nodes(), [job]), tiers, ALLOCATE, PLUGINS)
    assert binds(ssn) == {pending.name: expected}


def annotated_pod(name: str, annotations: dict[str, str], created: float) -> JobInfo:
    pod = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": name,
            "annotations": annotations,
            "creationTimestamp": None,
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"},
    }
    task = TaskInfo.from_pod(pod)
    job = JobInfo(
        uid=task.job, name=name, min_available=1, phase="Inqueue", creation_timestamp=created
    )
    job.add_task(task)
    return job


def test_a_pod_overriding_the_strategy_is_scored_by_its_own_annotations() -> None:
    # cpu is packed by the config; the second pod, of the same shape (the session evaluates
    # the shape once), asks for LeastAllocated and spreads
    packed = annotated_pod("packed", {}, 0.0)
    spread = annotated_pod(
        "spread",
        {
            "volcano.sh/resource-strategy-scoring-type": "LeastAllocated",
            "volcano.sh/resource-strategy-weight": '{"cpu": 1}',
        },
        1.0,
    )
    rsf = {
        "name": "resource-strategy-fit",
        "arguments": {"resources": {"cpu": {"type": "MostAllocated"}}},
    }
    ssn = run_flow(
        snapshot(cpu_nodes(2), [packed, spread]), [["predicates", rsf]], ALLOCATE, PLUGINS
    )
    assert binds(ssn) == {"packed": "cpu-0", "spread": "cpu-1"}
