"""The cache's state machine and bad-object handling, fed plain dicts as the informers would."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.cache import NO_QUEUE, ClusterCache, PodState
from pumice.model import TaskStatus

Obj = dict[str, Any]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def node(name: str, cpu: str = "4", memory: str = "8Gi") -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod(
    name: str,
    *,
    cpu: str = "1",
    node_name: str | None = None,
    scheduler: str = "pumice",
    group: str | None = None,
    phase: str = "Pending",
    **spec: Any,
) -> Obj:
    meta: Obj = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    body: Obj = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        **spec,
    }
    if node_name:
        body["nodeName"] = node_name
    return {"metadata": meta, "spec": body, "status": {"phase": phase}}


def bound(p: Obj, node_name: str, phase: str = "Pending") -> Obj:
    return {**p, "spec": {**p["spec"], "nodeName": node_name}, "status": {"phase": phase}}


def podgroup(name: str, *, queue: str = "default", min_member: int = 1, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"queue": queue, "minMember": min_member, **spec},
    }


def queue(name: str, **spec: Any) -> Obj:
    return {"metadata": {"name": name}, "spec": {"weight": 1, **spec}}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(clock: Clock) -> ClusterCache:
    c = ClusterCache("pumice", clock=clock)
    c.nodes.on_add(node("n1"))
    c.nodes.on_add(node("n2"))
    return c


def used_cpu(c: ClusterCache, name: str) -> float:
    return c.snapshot().nodes[name].used.get("cpu") / 1000  # millicores


def test_a_lone_pending_pod_is_a_job_of_its_own_in_the_default_queue(cache: ClusterCache) -> None:
    cache.pending_pods.on_add(pod("a"))
    snap = cache.snapshot()
    task = snap.task("uid-a")
    assert task is not None and task.status == TaskStatus.PENDING
    assert task.job == "ns/podgroup-uid-a"
    assert snap.jobs[task.job].queue == "default"
    assert "default" in snap.queues


def test_assume_counts_the_pod_on_its_node_and_forget_undoes_it(cache: ClusterCache) -> None:
    cache.pending_pods.on_add(pod("a", cpu="3"))
    assert cache.assume("uid-a", node="n1")
    assert used_cpu(cache, "n1") == pytest.approx(3.0)
    assert cache.snapshot().task("uid-a").status == TaskStatus.BINDING  # type: ignore[union-attr]
    assert not cache.assume("uid-a", node="n2")  # never assumed twice
    cache.forget("uid-a")
    assert used_cpu(cache, "n1") == 0.0
    assert cache.pods["uid-a"].state is PodState.INITIAL
    assert cache.snapshot().task("uid-a").status == TaskStatus.PENDING  # type: ignore[union-attr]


@pytest.mark.parametrize("pending_first", [True, False])
def test_a_bind_seen_on_both_watches_in_either_order_is_a_move(
    cache: ClusterCache, pending_first: bool
) -> None:
    p = pod("a", cpu="2")
    cache.pending_pods.on_add(p)
    cache.assume("uid-a", node="n1")
    cache.finish_binding("uid-a")
    if pending_first:
        cache.pending_pods.on_delete(p)
        assert used_cpu(cache, "n1") == pytest.approx(2.0)
        cache.assigned_pods.on_add(bound(p, "n1"))
    else:
        cache.assigned_pods.on_add(bound(p, "n1"))
        cache.pending_pods.on_delete(p)
    assert cache.pods["uid-a"].state is PodState.ADDED
    assert used_cpu(cache, "n1") == pytest.approx(2.0)
    assert cache.snapshot().task("uid-a").status == TaskStatus.BOUND  # type: ignore[union-attr]


def test_an_unassumed_pod_leaving_the_pending_watch_then_seen_bound_is_a_move(
    cache: ClusterCache,
) -> None:
    p = pod("a", cpu="2")
    cache.pending_pods.on_add(p)
    cache.pending_pods.on_delete(p)
    assert cache.snapshot().task("uid-a") is None  # not offered to a session any more
    cache.assigned_pods.on_add(bound(p, "n2"))
    assert cache.pods["uid-a"].state is PodState.ADDED
    assert used_cpu(cache, "n2") == pytest.approx(2.0)


def test_pods_of_other_schedulers_use_capacity_but_belong_to_no_queue(cache: ClusterCache) -> None:
    cache.assigned_pods.on_add(pod("x", cpu="3", node_name="n1", scheduler="default-scheduler"))
    snap = cache.snapshot()
    assert snap.nodes["n1"].used.get("cpu") == pytest.approx(3000.0)
    task = snap.task("uid-x")
    assert task is not None and snap.jobs[task.job].queue == NO_QUEUE
    assert cache.counts() == {"other/Added": 1}
    cache.assigned_pods.on_delete(pod("x", node_name="n1", scheduler="default-scheduler"))
    assert used_cpu(cache, "n1") == 0.0 and "uid-x" not in cache.pods


def test_a_deleted_node_with_pods_stays_a_ghost_until_they_go(cache: ClusterCache) -> None:
    running = pod("r", cpu="1", node_name="n1", phase="Running")
    cache.assigned_pods.on_add(running)
    cache.nodes.on_delete(node("n1"))
    snap = cache.snapshot()
    assert "n1" in snap.nodes and snap.nodes["n1"].unschedulable
    assert cache.ghosts == {"n1"}
    cache.assigned_pods.on_delete(running)
    assert "n1" not in cache.snapshot().nodes and not cache.ghosts


def test_a_node_without_pods_goes_at_once(cache: ClusterCache) -> None:
    cache.nodes.on_delete(node("n2"))
    assert "n2" not in cache.snapshot().nodes


def test_gated_pods_wait_untouched_until_their_gates_go(cache: ClusterCache) -> None:
    gated = pod("g", schedulingGates=[{"name": "wait"}])
    cache.pending_pods.on_add(gated)
    assert cache.pods["uid-g"].state is PodState.GATED
    assert cache.snapshot().task("uid-g") is None
    ungated = {**gated, "spec": {k: v for k, v in gated["spec"].items() if k != "schedulingGates"}}
    cache.pending_pods.on_update(gated, ungated)
    assert cache.snapshot().task("uid-g") is not None


def test_without_volcano_every_pod_is_a_job_of_its_own(clock: Clock) -> None:
    c = ClusterCache("pumice", volcano=False, clock=clock)
    c.nodes.on_add(node("n1"))
    c.pending_pods.on_add(pod("a", group="gang"))
    task = c.snapshot().task("uid-a")
    assert task is not None and task.job == "ns/podgroup-uid-a"
    assert c.pods["uid-a"].state is PodState.INITIAL


def test_the_default_queue_is_implicit_until_a_queue_object_names_it(cache: ClusterCache) -> None:
    assert cache.snapshot().queues["default"].weight == 1
    cache.queues.on_add(queue("default", weight=5))
    assert cache.snapshot().queues["default"].weight == 5
    cache.queues.on_delete(queue("default"))
    assert cache.snapshot().queues["default"].weight == 1


def test_a_pod_naming_a_missing_podgroup_waits_with_a_reason_until_it_exists(
    cache: ClusterCache,
) -> None:
    cache.pending_pods.on_add(pod("a", group="gang"))
    entry = cache.pods["uid-a"]
    assert entry.state is PodState.BLOCKED and "ns/gang" in entry.reason
    assert cache.snapshot().task("uid-a") is None
    cache.podgroups_handler.on_add(podgroup("gang"))
    assert entry.state is PodState.INITIAL
    task = cache.snapshot().task("uid-a")
    assert task is not None and task.job == "ns/gang"


def test_a_podgroup_naming_an_unknown_queue_blocks_its_pods_until_the_queue_exists(
    cache: ClusterCache,
) -> None:
    cache.podgroups_handler.on_add(podgroup("gang", queue="nope"))
    cache.pending_pods.on_add(pod("a", group="gang"))
    entry = cache.pods["uid-a"]
    assert entry.state is PodState.BLOCKED and "'nope'" in entry.reason
    cache.queues.on_add(queue("nope"))
    assert entry.state is PodState.INITIAL
    assert cache.snapshot().jobs["ns/gang"].queue == "nope"


def test_a_podgroup_with_unparseable_min_resources_is_refused(cache: ClusterCache) -> None:
    cache.podgroups_handler.on_add(podgroup("gang", minResources={"cpu": "lots"}))
    cache.pending_pods.on_add(pod("a", group="gang"))
    entry = cache.pods["uid-a"]
    assert entry.state is PodState.BLOCKED
    assert "ns/gang" in entry.reason and "lots" in entry.reason
    assert "ns/gang" not in cache.snapshot().jobs


def test_a_pod_with_a_malformed_quantity_is_blocked_and_the_rest_go_on(cache: ClusterCache) -> None:
    cache.pending_pods.on_add(pod("bad", cpu="one"))
    cache.pending_pods.on_add(pod("good"))
    assert cache.pods["uid-bad"].state is PodState.BLOCKED
    assert "one" in cache.pods["uid-bad"].reason
    snap = cache.snapshot()
    assert snap.task("uid-bad") is None and snap.task("uid-good") is not None


def test_priority_classes_give_podgroups_their_priority(cache: ClusterCache) -> None:
    cache.podgroups_handler.on_add(podgroup("gang", priorityClassName="high"))
    assert cache.snapshot().jobs["ns/gang"].priority == 0
    cache.priority_classes.on_add({"metadata": {"name": "high"}, "value": 1000})
    assert cache.snapshot().jobs["ns/gang"].priority == 1000


def test_a_failed_bind_holds_the_pod_back_for_its_backoff(
    cache: ClusterCache, clock: Clock
) -> None:
    cache.pending_pods.on_add(pod("a"))
    cache.assume("uid-a", node="n1")
    cache.forget("uid-a", hold=2.0)
    assert cache.snapshot().task("uid-a") is None and cache.held() == 1
    clock.now += 2.5
    assert cache.snapshot().task("uid-a") is not None and cache.held() == 0


def test_bound_elsewhere_forgets_and_waits_for_the_watch(cache: ClusterCache) -> None:
    p = pod("a", cpu="2")
    cache.pending_pods.on_add(p)
    cache.assume("uid-a", node="n1")
    cache.bound_elsewhere("uid-a")
    assert used_cpu(cache, "n1") == 0.0 and cache.snapshot().task("uid-a") is None
    cache.assigned_pods.on_add(bound(p, "n2"))
    assert cache.pods["uid-a"].node == "n2" and used_cpu(cache, "n2") == pytest.approx(2.0)


def test_a_snapshot_is_independent_of_the_cache(cache: ClusterCache) -> None:
    cache.pending_pods.on_add(pod("a", cpu="1"))
    snap = cache.snapshot()
    cache.assume("uid-a", node="n1")
    assert snap.task("uid-a").status == TaskStatus.PENDING  # type: ignore[union-attr]
    assert snap.nodes["n1"].used.get("cpu") == 0.0
    snap.remove_task("uid-a")
    assert cache.snapshot().task("uid-a") is not None


def test_a_gang_assembles_in_its_job(cache: ClusterCache) -> None:
    cache.podgroups_handler.on_add(podgroup("gang", min_member=3))
    for i in range(3):
        cache.pending_pods.on_add(pod(f"w-{i}", group="gang"))
    job = cache.snapshot().jobs["ns/gang"]
    assert len(job.tasks) == 3 and job.min_available == 3
    cache.podgroups_handler.on_delete(podgroup("gang"))
    assert all(cache.pods[f"uid-w-{i}"].state is PodState.BLOCKED for i in range(3))
    assert "ns/gang" not in cache.snapshot().jobs


def test_a_pod_that_left_and_never_showed_up_bound_is_dropped_after_a_while(
    cache: ClusterCache, clock: Clock
) -> None:
    p = pod("a")
    cache.pending_pods.on_add(p)
    cache.pending_pods.on_delete(p)
    cache.tidy()
    assert cache.pods["uid-a"].state is PodState.LEFT
    clock.now += 61.0
    cache.tidy()
    assert "uid-a" not in cache.pods


def test_an_eviction_counts_the_pod_as_releasing_until_it_fails(cache: ClusterCache) -> None:
    cache.assigned_pods.on_add(pod("v", node_name="n1", phase="Running"))
    cache.evicting("uid-v")
    task = cache.snapshot().task("uid-v")
    assert task is not None and task.status == TaskStatus.RELEASING
    assert cache.snapshot().nodes["n1"].releasing.get("cpu") == pytest.approx(1000.0)
    cache.evicting("uid-v", asked=False)
    assert cache.snapshot().task("uid-v").status == TaskStatus.RUNNING  # type: ignore[union-attr]


def test_slim_pod_keeps_what_scheduling_reads_and_drops_the_rest() -> None:
    from pumice.cache import slim_pod
    from pumice.model import pod_requests

    full = pod("a", cpu="2")
    container = full["spec"]["containers"][0]
    container.update(
        env=[{"name": "X", "value": "y" * 1000}], command=["sleep"], ports=[{"hostPort": 80}]
    )
    full["spec"].update(
        volumes=[{"name": "v"}], nodeSelector={"zone": "a"}, tolerations=[{"key": "k"}]
    )
    full["status"]["containerStatuses"] = [{"name": "c", "ready": False}]
    full["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    full["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": "{...}",
        "scheduling.k8s.io/group-name": "g",
    }
    slim = slim_pod(full)
    kept = slim["spec"]["containers"][0]
    assert "env" not in kept and "command" not in kept and kept["ports"] == [{"hostPort": 80}]
    assert "volumes" not in slim["spec"] and slim["spec"]["nodeSelector"] == {"zone": "a"}
    assert "containerStatuses" not in slim["status"] and slim["status"]["conditions"]
    assert slim["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "g"}
    assert pod_requests(slim) == pod_requests(full)
    assert "env" in full["spec"]["containers"][0]  # the original is left alone


def test_nodes_added_together_skip_a_bad_one_and_take_the_rest(
    cache: ClusterCache, caplog: pytest.LogCaptureFixture
) -> None:
    bad = node("bad")
    bad["status"]["allocatable"]["cpu"] = "lots"
    cache.add_nodes([node("n3", cpu="8"), bad, node("n1", cpu="16")])
    assert sorted(cache.state.nodes) == ["n1", "n2", "n3"]
    assert cache.state.nodes["n3"].allocatable["cpu"] == 8000
    assert cache.state.nodes["n1"].allocatable["cpu"] == 16000  # known: its new spec
    assert "cannot apply Node bad" in caplog.text
    cache.pending_pods.on_add(pod("a", cpu="6"))
    assert cache.assume("uid-a", node="n3")
    assert used_cpu(cache, "n3") == pytest.approx(6.0)
