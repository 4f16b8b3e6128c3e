"""What the cache takes from Volcano where pumice simulate and the daemon used to disagree:
the config's default queue, the globalDefault priority, completed members, lone-pod jobs."""

from __future__ import annotations

from typing import Any

from pumice.cache import ClusterCache
from pumice.model import TaskStatus
from pumice.model.tasks import lone_pod_job

Obj = dict[str, Any]


def node(name: str) -> Obj:
    return {"metadata": {"name": name}, "spec": {}, "status": {"allocatable": {"cpu": "4"}}}


def pod(name: str, *, group: str | None = None, **extra: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: Obj = {"schedulerName": "pumice", "containers": [{"name": "c"}]}
    spec.update(extra.pop("spec", {}))
    return {"metadata": {**meta, **extra.pop("meta", {})}, "spec": spec, **extra}


def podgroup(name: str, **spec: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"minMember": 2, **spec}}


def test_a_podgroup_without_a_queue_is_in_the_configured_default_queue() -> None:
    cache = ClusterCache("pumice", default_queue="batch")
    cache.podgroups_handler.on_add(podgroup("g"))
    assert cache.snapshot().jobs["ns/g"].queue == "batch"
    cache.podgroups_handler.on_add(podgroup("named", queue="batch"))
    cache.podgroups_handler.on_add(podgroup("elsewhere", queue="default"))
    assert "ns/named" in cache.snapshot().jobs
    assert cache.podgroups["ns/elsewhere"].job is None  # no queue "default" here


def test_the_global_default_priority_class_gives_unnamed_podgroups_and_pods_their_priority() -> (
    None
):
    cache = ClusterCache("pumice")
    cache.podgroups_handler.on_add(podgroup("plain"))
    cache.podgroups_handler.on_add(podgroup("low", priorityClassName="low"))
    cache.priority_classes.on_add({"metadata": {"name": "low"}, "value": 5})
    cache.priority_classes.on_add({"metadata": {"name": "d"}, "value": 70, "globalDefault": True})
    cache.pending_pods.on_add(pod("lone"))
    snap = cache.snapshot()
    assert snap.jobs["ns/plain"].priority == 70
    assert snap.jobs["ns/low"].priority == 5
    assert snap.task("uid-lone").priority == 70  # type: ignore[union-attr]
    cache.priority_classes.on_update({}, {"metadata": {"name": "d"}, "value": 70})
    assert cache.snapshot().jobs["ns/plain"].priority == 0  # no longer the default


def test_finished_members_stay_in_their_podgroups_job_off_their_nodes() -> None:
    cache = ClusterCache("pumice")
    cache.nodes.on_add(node("n1"))
    cache.podgroups_handler.on_add(podgroup("g"))
    done = pod("g-0", group="g", spec={"nodeName": "n1"}, status={"phase": "Succeeded"})
    running = pod("g-1", group="g", spec={"nodeName": "n1"}, status={"phase": "Running"})
    theirs = pod("x", spec={"nodeName": "n1", "schedulerName": "other"})
    theirs["status"] = {"phase": "Succeeded"}
    for p in (done, running, theirs):
        cache.assigned_pods.on_add(p)
    job = cache.snapshot().jobs["ns/g"]
    assert job.count(TaskStatus.SUCCEEDED) == 1 and job.count(TaskStatus.RUNNING) == 1
    assert cache.snapshot().nodes["n1"].pod_count == 1
    assert "uid-x" not in cache.pods  # another scheduler's finished pod is kept nowhere
    # g-1 finishes: a watch that leaves finished pods out says so with a delete
    finished = {**running, "status": {"phase": "Failed"}}
    cache.assigned_pods.on_delete(finished)
    job = cache.snapshot().jobs["ns/g"]
    assert job.count(TaskStatus.SUCCEEDED | TaskStatus.FAILED) == 2
    # a finished pod deleted for good leaves its job
    cache.assigned_pods.on_delete(finished)
    assert cache.snapshot().jobs["ns/g"].count(TaskStatus.FAILED) == 0


def test_a_lone_pods_job_is_preemptable_as_its_pod_says() -> None:
    cache = ClusterCache("pumice")
    cache.nodes.on_add(node("n1"))
    keep = pod("keep", meta={"annotations": {"volcano.sh/preemptable": "false"}})
    keep["spec"]["nodeName"] = "n1"
    cache.assigned_pods.on_add(keep)
    cache.pending_pods.on_add(pod("free"))
    snap = cache.snapshot()
    assert snap.jobs[lone_pod_job("ns", "uid-keep")].preemptable is False
    assert snap.jobs[lone_pod_job("ns", "uid-free")].preemptable is True
