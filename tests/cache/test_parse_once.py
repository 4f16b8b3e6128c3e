"""A pod is parsed once on its way from pending to bound: its task moves between states."""

from __future__ import annotations

import pytest
from cache.test_cache import Clock, bound, node, pod

from pumice.cache import ClusterCache, PodState
from pumice.cache.pods import same_but_placement
from pumice.model import TaskInfo, TaskStatus


@pytest.fixture
def cache() -> ClusterCache:
    c = ClusterCache("pumice", clock=Clock())
    c.nodes.on_add(node("n1"))
    c.nodes.on_add(node("n2"))
    return c


def task_of(cache: ClusterCache, uid: str) -> TaskInfo:
    task = cache.state.task(uid)
    assert task is not None
    return task


def test_what_was_worked_out_of_the_pending_pod_is_the_bound_pods(cache: ClusterCache) -> None:
    p = pod("a", cpu="2", nodeSelector={"zone": "a"})
    p["metadata"]["labels"] = {"app": "web"}
    cache.pending_pods.on_add(p)
    pending = task_of(cache, "uid-a")
    # what a session reads of the pod, worked out as it arrived
    labels, links, request = pending.labels, pending.links, pending.resreq
    cache.assume("uid-a", node="n1")
    cache.assigned_pods.on_add(bound(p, "n1", phase="Running"))
    cache.pending_pods.on_delete(p)
    running = task_of(cache, "uid-a")
    assert running is not pending and running.status == TaskStatus.RUNNING
    assert running.node_name == "n1" and running.pod is not p
    # the same objects, not equal ones built from the bound pod again
    assert running.labels is labels and running.links is links and running.resreq is request


def test_the_node_and_the_job_count_the_moved_pod_once(cache: ClusterCache) -> None:
    p = pod("a", cpu="2")
    cache.pending_pods.on_add(p)
    job = task_of(cache, "uid-a").job
    cache.assume("uid-a", node="n1")
    cache.assigned_pods.on_add(bound(p, "n1", phase="Running"))
    cache.pending_pods.on_delete(p)
    snap = cache.snapshot()
    n1 = snap.nodes["n1"]
    assert n1.used.get("cpu") == pytest.approx(2000.0) and n1.pod_count == 1
    assert list(n1.tasks) == ["uid-a"] and n1.tasks["uid-a"] is snap.task("uid-a")
    assert snap.jobs[job].allocated.get("cpu") == pytest.approx(2000.0)
    assert snap.jobs[job].total_request.get("cpu") == pytest.approx(2000.0)
    assert snap.jobs[job].ready_task_num == 1
    assert list(snap.jobs[job].task_status_index) == [TaskStatus.RUNNING]
    cache.assigned_pods.on_delete(bound(p, "n1", phase="Running"))
    snap = cache.snapshot()
    assert snap.nodes["n1"].used.get("cpu") == 0.0 and snap.nodes["n1"].pod_count == 0


def test_a_pod_bound_elsewhere_than_assumed_moves_to_that_node(cache: ClusterCache) -> None:
    p = pod("a", cpu="3")
    cache.pending_pods.on_add(p)
    cache.assume("uid-a", node="n1")
    cache.assigned_pods.on_add(bound(p, "n2", phase="Running"))
    snap = cache.snapshot()
    assert snap.nodes["n1"].used.get("cpu") == 0.0 and not snap.nodes["n1"].tasks
    assert snap.nodes["n2"].used.get("cpu") == pytest.approx(3000.0)
    assert cache.pods["uid-a"].state is PodState.ADDED


def test_a_bound_pod_whose_spec_changed_is_parsed_again(cache: ClusterCache) -> None:
    p = pod("a", cpu="1")
    cache.pending_pods.on_add(p)
    cache.assume("uid-a", node="n1")
    grown = bound(p, "n1", phase="Running")
    grown["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]
    grown["metadata"] = {**p["metadata"], "labels": {"app": "new"}}
    cache.assigned_pods.on_add(grown)
    task = task_of(cache, "uid-a")
    assert task.resreq.get("cpu") == pytest.approx(2000.0) and task.labels == {"app": "new"}
    assert cache.snapshot().nodes["n1"].used.get("cpu") == pytest.approx(2000.0)


def test_a_moved_pod_takes_its_priority_class_as_it_is_now(cache: ClusterCache) -> None:
    high = {"metadata": {"name": "high"}, "value": 1000}
    cache.priority_classes.on_add(high)
    p = pod("a", priorityClassName="high")
    cache.pending_pods.on_add(p)
    assert task_of(cache, "uid-a").priority == 1000
    cache.assume("uid-a", node="n1")
    cache.priority_classes.on_update(high, {**high, "value": 2000})
    cache.assigned_pods.on_add(bound(p, "n1", phase="Running"))
    assert task_of(cache, "uid-a").priority == 2000  # as a pod parsed now would have it
    cache.priority_classes.on_delete(high)
    cache.assigned_pods.on_update(bound(p, "n1"), bound(p, "n1", phase="Running"))
    assert task_of(cache, "uid-a").priority == 1  # no class: the pod's own (none: 1)


def test_an_assumed_pod_that_no_longer_fits_is_counted_bound(cache: ClusterCache) -> None:
    cache.pending_pods.on_add(pod("a", cpu="3"))
    cache.pending_pods.on_add(pod("b", cpu="3"))
    cache.assigned_pods.on_add(pod("x", cpu="3", node_name="n1", scheduler="other"))
    assert cache.assume("uid-a", node="n1")  # others landed first: it cannot fit any more
    assert task_of(cache, "uid-a").status == TaskStatus.BOUND
    assert cache.snapshot().nodes["n1"].used.get("cpu") == pytest.approx(6000.0)
    job = cache.state.jobs[task_of(cache, "uid-a").job]
    assert list(job.task_status_index) == [TaskStatus.BOUND]  # indexed once, as it is now
    assert job.ready_task_num == 1 and job.allocated.get("cpu") == pytest.approx(3000.0)
    cache.forget("uid-a")
    assert cache.snapshot().nodes["n1"].used.get("cpu") == pytest.approx(3000.0)
    assert task_of(cache, "uid-a").status == TaskStatus.PENDING


def test_same_but_placement_ignores_only_node_status_and_version() -> None:
    p = pod("a", cpu="1", nodeSelector={"zone": "a"})
    placed = bound(p, "n1", phase="Running")
    placed["metadata"] = {**p["metadata"], "resourceVersion": "7"}
    assert same_but_placement(p, placed) and same_but_placement(placed, p)
    assert not same_but_placement(None, p)
    other_selector = {**placed, "spec": {**placed["spec"], "nodeSelector": {"zone": "b"}}}
    assert not same_but_placement(p, other_selector)
    fewer = {**placed, "spec": {k: v for k, v in placed["spec"].items() if k != "nodeSelector"}}
    assert not same_but_placement(p, fewer) and not same_but_placement(fewer, p)
    relabelled = {**placed, "metadata": {**placed["metadata"], "labels": {"x": "y"}}}
    assert not same_but_placement(p, relabelled)
    annotated = {**placed, "metadata": {**placed["metadata"], "annotations": {"a": "b"}}}
    assert not same_but_placement(p, annotated)


def test_a_pod_on_a_node_is_not_shaped_until_a_session_asks(cache: ClusterCache) -> None:
    cache.pending_pods.on_add(pod("waits", cpu="1"))
    cache.assigned_pods.on_add(pod("runs", cpu="1", node_name="n1", phase="Running"))
    waits, runs = task_of(cache, "uid-waits"), task_of(cache, "uid-runs")
    assert waits._derived is not None and waits._derived.shape is not None  # worked out
    assert runs._derived is not None and runs._derived.shape is None  # not yet
    assert runs._derived.links is not None  # what other pods' affinity reads, at once
    assert runs.shape == waits.shape  # and on demand it is the same shape as ever


def test_a_tasks_labels_are_the_pods_own_when_they_are_text() -> None:
    labelled = pod("a")
    labelled["metadata"]["labels"] = {"app": "web", "tier": "1"}
    assert TaskInfo.from_pod(labelled).labels is labelled["metadata"]["labels"]
    odd = pod("b")
    odd["metadata"]["labels"] = {"replicas": 3}
    assert TaskInfo.from_pod(odd).labels == {"replicas": "3"}


def test_a_lone_pods_job_goes_with_its_pod(cache: ClusterCache) -> None:
    cache.assigned_pods.on_add(pod("other", node_name="n1", scheduler="x", phase="Running"))
    job = task_of(cache, "uid-other").job
    assert job in cache.state.jobs and not cache.state.jobs[job].min_task_member
    cache.assigned_pods.on_delete(pod("other", node_name="n1", scheduler="x", phase="Running"))
    assert job not in cache.state.jobs
