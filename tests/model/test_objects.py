"""Tasks, jobs and queues built from plain-dict Kubernetes objects, and job bookkeeping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pumice.model import JobInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from pumice.model.tasks import READY_STATUSES


def pod(name: str, phase: str = "Pending", node: str | None = None, **meta: object) -> dict:
    spec: dict[str, object] = {
        "schedulerName": "pumice",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}", **meta},
        "spec": spec,
        "status": {"phase": phase},
    }


def test_task_from_pod_reads_group_role_priority_and_requests() -> None:
    p = pod(
        "w-0",
        annotations={
            "scheduling.k8s.io/group-name": "train",
            "volcano.sh/task-spec": "worker",
            "volcano.sh/preemptable": "false",
        },
        creationTimestamp="2026-01-02T03:04:05Z",
    )
    p["spec"]["priority"] = 100  # type: ignore[index]
    t = TaskInfo.from_pod(p)
    assert (t.uid, t.name, t.namespace, t.key) == ("uid-w-0", "w-0", "team", "team/w-0")
    assert t.job == "team/train" and t.role == "worker" and t.priority == 100
    assert t.preemptable is False
    assert t.resreq == Resource({"cpu": 500, "memory": 2**30})
    assert t.status == TaskStatus.PENDING and t.node_name is None
    assert t.creation_timestamp == 1767323045.0


@pytest.mark.parametrize(
    ("phase", "node", "deleting", "status"),
    [
        ("Pending", None, False, TaskStatus.PENDING),
        ("Pending", "n1", False, TaskStatus.BOUND),
        ("Pending", "n1", True, TaskStatus.RELEASING),
        ("Running", "n1", False, TaskStatus.RUNNING),
        ("Running", "n1", True, TaskStatus.RELEASING),
        ("Succeeded", "n1", False, TaskStatus.SUCCEEDED),
        ("Failed", "n1", False, TaskStatus.FAILED),
        ("Weird", "n1", False, TaskStatus.UNKNOWN),
    ],
)
def test_status_from_pod_phase(
    phase: str, node: str | None, deleting: bool, status: TaskStatus
) -> None:
    extra = {"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {}
    t = TaskInfo.from_pod(pod("p", phase, node, **extra))
    assert t.status == status


def test_lone_pod_is_a_job_of_its_own_with_default_priority() -> None:
    t = TaskInfo.from_pod(pod("solo", annotations={"volcano.sh/task-priority": "7"}))
    assert t.job == "team/podgroup-uid-solo" and t.priority == 7 and t.preemptable is True
    assert TaskInfo.from_pod(pod("plain")).priority == 1


def test_lone_pod_never_joins_a_podgroup_of_its_own_name() -> None:
    grouped = TaskInfo.from_pod(pod("worker", annotations={"scheduling.k8s.io/group-name": "demo"}))
    lone = TaskInfo.from_pod(pod("demo"))
    group = JobInfo.from_podgroup({"metadata": {"name": "demo", "namespace": "team"}})
    assert grouped.job == group.uid == "team/demo"
    assert lone.job != group.uid
    job = JobInfo.for_lone_pod(lone)
    assert job.uid == lone.job and list(job.tasks) == [lone.uid] and job.min_available == 1


def test_job_counters_follow_status_changes() -> None:
    job = JobInfo.from_podgroup(
        {
            "metadata": {"name": "train", "namespace": "team"},
            "spec": {"minMember": 2, "queue": "gpu", "minResources": {"cpu": "2"}},
            "status": {"phase": "Inqueue"},
        }
    )
    assert (job.uid, job.queue, job.min_available, job.phase) == ("team/train", "gpu", 2, "Inqueue")
    assert job.min_resources == Resource({"cpu": 2000})
    tasks = [TaskInfo(uid=f"t{i}", name=f"t{i}", resreq=Resource({"cpu": 1000})) for i in range(3)]
    for t in tasks:
        job.add_task(t)
    assert job.total_request["cpu"] == 3000 and job.allocated.is_empty()
    assert job.is_starving() and not job.is_ready() and not job.is_pipelined()
    job.update_task_status(tasks[0], TaskStatus.ALLOCATED)
    job.update_task_status(tasks[1], TaskStatus.PIPELINED)
    assert job.ready_task_num == 1 and job.waiting_task_num == 1
    assert job.is_pipelined() and not job.is_ready() and not job.is_starving()
    assert job.allocated["cpu"] == 1000
    job.update_task_status(tasks[1], TaskStatus.RUNNING)
    assert job.is_ready() and job.allocated["cpu"] == 2000
    assert sorted(t.name for t in job.tasks_in(TaskStatus.PENDING | TaskStatus.RUNNING)) == [
        "t1",
        "t2",
    ]
    job.delete_task(tasks[1])
    assert job.allocated["cpu"] == 1000 and job.total_request["cpu"] == 2000
    assert job.count(TaskStatus.RUNNING) == 0
    with pytest.raises(KeyError):
        job.update_task_status(tasks[1], TaskStatus.PENDING)


def test_best_effort_tasks_count_towards_readiness() -> None:
    job = JobInfo(uid="ns/j", name="j", min_available=2)
    job.add_task(TaskInfo(uid="a", name="a", resreq=Resource({"cpu": 100})))
    job.add_task(TaskInfo(uid="b", name="b"))  # requests nothing
    job.update_task_status(job.tasks["a"], TaskStatus.ALLOCATED)
    assert job.pending_best_effort_num == 1 and job.is_ready()


def test_queue_from_volcano_queue() -> None:
    q = QueueInfo.from_queue(
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "weight": 3,
                "capability": {"cpu": "64", "nvidia.com/gpu": "8"},
                "guarantee": {"resource": {"cpu": "8"}},
                "reclaimable": False,
                "priority": 5,
            },
            "status": {"state": "Closed"},
        }
    )
    assert (q.name, q.weight, q.priority, q.reclaimable, q.state) == ("gpu", 3, 5, False, "Closed")
    assert q.capability == Resource({"cpu": 64000, "nvidia.com/gpu": 8})
    assert q.guarantee == Resource({"cpu": 8000}) and not q.is_open()
    default = QueueInfo.from_queue({"metadata": {"name": "default"}})
    assert default.weight == 1 and default.reclaimable and default.is_open()
    assert default.capability is None and default.guarantee.is_empty()


def test_task_copy_copies_every_slot_and_shares_what_was_derived() -> None:
    task = TaskInfo.from_pod(
        {
            "metadata": {"name": "p", "namespace": "ml", "uid": "u-1"},
            "spec": {
                "nodeSelector": {"zone": "a"},
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
    )
    twin = task.copy()
    assert twin is not task
    for slot in TaskInfo.__slots__:
        assert getattr(twin, slot) is getattr(task, slot), slot
    # what a session's copy works out stays with the pod object for the original too
    shape = twin.shape
    assert task.shape is shape and task.terms is twin.terms
    # a copy whose pod is replaced works its terms out again, and leaves the original's
    twin.pod = {**task.pod, "spec": {"containers": []}} if task.pod else None
    assert twin.terms is not task.terms and task.shape is shape


def test_from_pod_sets_every_slot_as_the_constructor_does() -> None:
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "ml",
            "uid": "u-1",
            "labels": {"volcano.sh/task-spec": "worker"},
            "annotations": {"scheduling.k8s.io/group-name": "g", "volcano.sh/preemptable": "false"},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "nodeName": "n1",
            "priority": 7,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }
    task = TaskInfo.from_pod(pod)
    built = TaskInfo(
        uid="u-1",
        name="p",
        namespace="ml",
        job="ml/g",
        resreq=Resource({"cpu": 1000}),
        role="worker",
        priority=7,
        preemptable=False,
        status=TaskStatus.RUNNING,
        node_name="n1",
        creation_timestamp=1767225600.0,
        pod=pod,
    )
    for slot in TaskInfo.__slots__:
        if slot == "_derived":
            assert task._derived is not None and built._derived is not None
            assert (task._derived.pod, task._derived.resreq) == (pod, built.resreq)
        else:
            assert getattr(task, slot) == getattr(built, slot), slot
    assert task.init_resreq is task.resreq


@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(list(TaskStatus))), max_size=40))
def test_ready_task_num_follows_every_status_change(moves: list[tuple[int, TaskStatus]]) -> None:
    job = JobInfo(uid="ns/j", name="j", min_available=2)
    tasks = [TaskInfo(uid=f"u{i}", name=f"t{i}", job="ns/j") for i in range(5)]
    for task in tasks:
        job.add_task(task)
    for index, status in moves:
        job.update_task_status(tasks[index], status)
        assert job.ready_task_num == job.count(READY_STATUSES)
    twin = job.clone(owner=object())
    job.delete_task(tasks[0])
    assert job.ready_task_num == job.count(READY_STATUSES)
    assert twin.ready_task_num == twin.count(READY_STATUSES)


def test_job_clone_carries_every_slot_and_copies_the_tasks() -> None:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", min_available=2)
    for i in range(3):
        job.add_task(TaskInfo(uid=f"t{i}", name=f"j-{i}", resreq=Resource({"cpu": 500.0})))
    owner = object()
    twin = job.clone(owner)
    fresh = {"tasks", "task_status_index", "owner"}
    for slot in JobInfo.__slots__:
        if slot not in fresh:
            assert getattr(twin, slot) is getattr(job, slot), slot
    assert twin.owner is owner
    assert twin.tasks.keys() == job.tasks.keys()
    assert all(twin.tasks[u] is not job.tasks[u] for u in job.tasks)
    for status, bucket in job.task_status_index.items():
        assert {u: twin.tasks[u] for u in bucket} == twin.task_status_index[status]


def test_task_labels_are_text_and_kept_as_sent_when_they_are() -> None:
    sent = {"app": "web", "tier": "1"}
    task = TaskInfo.from_pod({"metadata": {"name": "p", "labels": sent}, "spec": {}})
    assert task.labels is sent  # the API server's strings: no copy
    # a manifest read as YAML may say ``zone: 1`` or ``1: x``; a task's labels are text
    odd = TaskInfo.from_pod({"metadata": {"name": "q", "labels": {"zone": 1, 2: "x"}}, "spec": {}})
    assert odd.labels == {"zone": "1", "2": "x"}
    assert TaskInfo.from_pod({"metadata": {"name": "r"}, "spec": {}}).labels == {}
