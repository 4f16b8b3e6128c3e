"""Preempt and the volume filters: evicting pods may cure a ReadWriteOncePod claim in use and
a CSI attach limit (kube-scheduler's VolumeRestrictions and NodeVolumeLimits answer
Unschedulable), never what VolumeBinding says (UnschedulableAndUnresolvable: a volume's node
affinity, a missing claim).

Source of the rule: kube-scheduler 1.35's ``volumerestrictions``, ``nodevolumelimits`` and
``volumebinding`` plugins (``kube-constraints.md`` §5, §8.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pumice import JobInfo, NodeInfo, TaskInfo, TaskStatus
from pumice.model.volumes import StorageObjects
from support.flow import GiB, decisions, gang, res, run_flow, snapshot
from support.nodes import container, pod, task_of

TIERS = [["priority", "conformance"], ["predicates", "proportion"]]
DRIVER = "csi.example.com"
Obj = dict[str, Any]


def bound_claim(name: str, volume: str, modes: Sequence[str] = ("ReadWriteOnce",)) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        },
        "spec": {
            "accessModes": list(modes),
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": volume,
        },
        "status": {"phase": "Bound"},
    }


def csi_volume(name: str, claim: str, hostname: str | None = None) -> Obj:
    spec: Obj = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
        "csi": {"driver": DRIVER, "volumeHandle": name},
        "claimRef": {"namespace": "default", "name": claim, "uid": f"uid-{claim}"},
    }
    if hostname is not None:
        term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}}
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": "Bound"}}


def csinode(name: str, count: int) -> Obj:
    driver = {"name": DRIVER, "nodeID": name, "allocatable": {"count": count}}
    return {"metadata": {"name": name}, "spec": {"drivers": [driver]}}


def using(name: str, *claims: str, cpu: str = "1", node: str | None = None) -> TaskInfo:
    manifest = pod(name, containers=[container(cpu=cpu)])
    manifest["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    task = task_of(manifest)
    if node is not None:
        task.status, task.node_name = TaskStatus.RUNNING, node
    return task


def job_with(name: str, priority: int, *tasks: TaskInfo, running: bool = False) -> JobInfo:
    job = gang(name, 0, phase="Running" if running else "Inqueue", min_available=1)
    job.priority = priority
    for task in tasks:
        job.add_task(task)
    return job


def storage(*objects: tuple[str, Obj]) -> StorageObjects:
    stores: dict[str, dict[str, Obj]] = {"claims": {}, "volumes": {}, "csinodes": {}}
    for kind, obj in objects:
        m = obj["metadata"]
        key = f"{m['namespace']}/{m['name']}" if kind == "claims" else m["name"]
        stores[kind][key] = obj
    return StorageObjects(served=True, **stores)  # type: ignore[arg-type]


def run(nodes: list[NodeInfo], jobs: list[JobInfo], objects: StorageObjects) -> Any:
    snap = snapshot(nodes, jobs)
    snap.storage = objects
    return run_flow(snap, TIERS, ["allocate", "preempt"])


def evictions(session: Any) -> list[str]:
    return [key.split("/")[1] for kind, key, _ in decisions(session) if kind == "evict"]


def status_of(session: Any, job: str, task: str) -> TaskStatus:
    found = session.snapshot.jobs[f"default/{job}"].tasks
    return next(t.status for t in found.values() if t.name == task)


def test_the_pod_holding_a_read_write_once_pod_claim_is_evicted_for_a_more_important_one() -> None:
    """VolumeRestrictions: the RWOP conflict is Unschedulable on every node; evicting the
    claim's user (on n0) cures it there, and only there."""
    objects = storage(
        ("claims", bound_claim("solo", "pv-solo", modes=("ReadWriteOncePod",))),
        ("volumes", csi_volume("pv-solo", "solo")),
    )
    nodes = [NodeInfo("n0", res(4000, 8 * GiB)), NodeInfo("n1", res(4000, 8 * GiB))]
    low = job_with("low", 1, using("holder", "solo", node="n0"), running=True)
    high = job_with("high", 100, using("wants", "solo"))
    ssn = run(nodes, [low, high], objects)
    assert evictions(ssn) == ["holder"]
    assert ("nominate", "default/wants", "n0") in decisions(ssn)
    assert status_of(ssn, "high", "wants") == TaskStatus.PIPELINED


def test_a_pod_attached_under_the_csi_limit_is_evicted_for_a_more_important_one() -> None:
    """NodeVolumeLimits: over the limit is Unschedulable; evicting a pod whose volume counts
    makes room. A bystander without volumes is not taken."""
    objects = storage(
        ("claims", bound_claim("c-low", "pv-low")),
        ("claims", bound_claim("c-high", "pv-high")),
        ("volumes", csi_volume("pv-low", "c-low")),
        ("volumes", csi_volume("pv-high", "c-high")),
        ("csinodes", csinode("n0", 1)),
    )
    nodes = [NodeInfo("n0", res(4000, 8 * GiB))]
    bystander = using("bystander", node="n0")
    low = job_with("low", 1, bystander, using("attached", "c-low", node="n0"), running=True)
    high = job_with("high", 100, using("wants", "c-high"))
    ssn = run(nodes, [low, high], objects)
    assert "attached" in evictions(ssn)
    assert evictions(ssn)[-1] == "attached"  # evictions stop once the volume fits
    assert status_of(ssn, "high", "wants") == TaskStatus.PIPELINED


def test_no_pod_is_evicted_for_a_volume_whose_node_affinity_excludes_the_node() -> None:
    """VolumeBinding: a bound claim's volume pinned to another node is
    UnschedulableAndUnresolvable: the full node is never freed for it."""
    objects = storage(
        ("claims", bound_claim("data", "pv-elsewhere")),
        ("volumes", csi_volume("pv-elsewhere", "data", hostname="n9")),
    )
    nodes = [NodeInfo("n0", res(2000, 8 * GiB))]
    low = job_with("low", 1, using("low-0", cpu="2", node="n0"), running=True)
    high = job_with("high", 100, using("wants", "data"))
    ssn = run(nodes, [low, high], objects)
    assert evictions(ssn) == []
    assert status_of(ssn, "high", "wants") == TaskStatus.PENDING


def test_no_pod_is_evicted_for_a_claim_that_does_not_exist() -> None:
    """The pod's own reason (a PreFilter rejection): nothing to try on any node."""
    nodes = [NodeInfo("n0", res(2000, 8 * GiB))]
    low = job_with("low", 1, using("low-0", cpu="2", node="n0"), running=True)
    high = job_with("high", 100, using("wants", "nope"))
    ssn = run(nodes, [low, high], storage())
    assert evictions(ssn) == []
    assert status_of(ssn, "high", "wants") == TaskStatus.PENDING
