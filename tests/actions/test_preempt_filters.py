"""Preempt and reclaim decide on every filter, not only on resources: a victim set is taken only
if the preemptor then passes every predicate on that node with the victims gone."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pumice import (
    JobInfo,
    NodeInfo,
    NodeTable,
    Plugin,
    PredicateResult,
    Resource,
    TaskInfo,
    TaskStatus,
    hookimpl,
)
from support.flow import GiB, add_task, decisions, gang, queue, res, run_flow, snapshot
from support.nodes import container, pod, task_of

ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
WRONG_ZONE = "node(s) didn't match Pod's node affinity/selector"


def evictions(session: object) -> list[str]:
    return [key.split("/")[1] for kind, key, _ in decisions(session) if kind == "evict"]  # type: ignore[arg-type]


def job_of(name: str, priority: int, q: str = "default", min_available: int = 1) -> JobInfo:
    job = gang(name, 0, queue=q, phase="Running", min_available=min_available)
    job.priority = priority
    return job


def run_on(job: JobInfo, name: str, node: str, cpu: float = 1000, memory: float = GiB) -> TaskInfo:
    return add_task(job, name, cpu=cpu, memory=memory, status=TaskStatus.RUNNING, node=node)


# -- Volcano's TestPreempt, pkg/scheduler/actions/preempt/preempt_test.go -----------------------
# Volcano counts pods as a resource dimension; pumice checks the pod limit in the predicates
# plugin, so the tiers below add predicates to Volcano's conformance, gang, priority, proportion.

VOLCANO_TIER = [["conformance", "gang", "priority", "predicates", "proportion"]]


def _volcano_case_3335(preemptor_request: Resource) -> list[str]:
    q1 = queue("q1", capability=res(6000, 6 * GiB))
    n1 = NodeInfo("n1", res(12000, 12 * GiB), max_pods=1)
    low = job_of("pg1", priority=10, q="q1", min_available=0)
    run_on(low, "preemptee1", "n1", cpu=0, memory=0)  # best-effort
    high = gang("pg2", 0, queue="q1", min_available=1)
    high.priority = 100000
    preemptor = add_task(high, "preemptor1", cpu=preemptor_request.get("cpu"), memory=0)
    preemptor.resreq = preemptor_request
    ssn = run_flow(snapshot([n1], [low, high], [q1]), VOLCANO_TIER, ["preempt"])
    assert ssn.snapshot.jobs["default/pg2"].tasks["preemptor1"].status == TaskStatus.PIPELINED
    return evictions(ssn)


def test_volcano_unbesteffort_high_priority_pod_preempts_besteffort_low_priority_pod() -> None:
    """Volcano TestPreempt: "unBestEffort high-priority pod preempt BestEffort low-priority pod
    in same queue" (case about #3335): n1 holds one pod, a best-effort one; a 3 cpu / 3G pod of
    a higher-priority job evicts it."""
    assert _volcano_case_3335(res(3000, 3 * GiB)) == ["preemptee1"]


def test_volcano_besteffort_high_priority_pod_preempts_besteffort_low_priority_pod() -> None:
    """Volcano TestPreempt: "BestEffort high-priority pod preempt BestEffort low-priority pod in
    same queue" (case about #3335): the same with a best-effort preemptor."""
    assert _volcano_case_3335(Resource.zero()) == ["preemptee1"]


# -- pod count and host ports ---------------------------------------------------------------

PREEMPT_TIERS = [["priority", "conformance"], ["predicates", "proportion"]]


def test_a_node_full_by_pod_count_is_freed_by_one_eviction() -> None:
    n0 = NodeInfo("n0", res(8000, 16 * GiB), max_pods=3)
    low = job_of("low", priority=1)
    for i in range(3):
        run_on(low, f"low-{i}", "n0")
    high = gang("high", 1)
    high.priority = 10
    ssn = run_flow(snapshot([n0], [low, high]), PREEMPT_TIERS, ["allocate", "preempt"])
    assert evictions(ssn) == ["low-2"]  # plenty of cpu: one pod fewer is all it takes
    assert ("nominate", "default/high-0", "n0") in decisions(ssn)


def test_a_host_port_is_freed_by_evicting_the_pod_that_holds_it() -> None:
    n0 = NodeInfo("n0", res(8000, 16 * GiB))
    low = job_of("low", priority=1)
    holder = task_of(pod("holder", containers=[container(cpu="1", host_ports=[8080])]))
    holder.status, holder.node_name = TaskStatus.RUNNING, "n0"
    low.add_task(holder)
    run_on(low, "bystander", "n0")
    high = gang("high", 0)
    high.priority = 10
    wants = task_of(pod("wants", containers=[container(cpu="1", host_ports=[8080])]))
    high.add_task(wants)
    ssn = run_flow(snapshot([n0], [low, high]), PREEMPT_TIERS, ["allocate", "preempt"])
    # evictions stop as soon as the port is free: the holder is the last to go
    assert evictions(ssn)[-1] == "holder"
    assert ssn.snapshot.jobs["default/high"].tasks[wants.uid].status == TaskStatus.PIPELINED


# -- a pod-to-pod filter of another package (reads the pods on each node) ----------------------


class KeepAway(Plugin):
    """A predicate in the style of the pod-to-pod filters: a task named ``shy-*`` may not share
    a node with a task named ``blocker*`` (resolvable), nor go to a node labelled
    ``zone=wrong`` (unresolvable). Not row-local: called over every node."""

    @hookimpl
    def predicate(self, task: TaskInfo, nodes: NodeTable) -> PredicateResult:
        reasons = np.full(len(nodes), "", dtype=object)
        for row, node in enumerate(nodes.nodes):
            if not task.name.startswith("shy"):
                continue
            if node.labels.get("zone") == "wrong":
                reasons[row] = WRONG_ZONE
            elif any(t.name.startswith("blocker") for t in node.tasks.values()):
                reasons[row] = ANTI_AFFINITY
        mask: npt.NDArray[np.bool_] = reasons == ""
        return PredicateResult(mask, reasons, frozenset({ANTI_AFFINITY}))


FILTER_TIERS = [["priority", "conformance"], ["predicates", "keep-away", "proportion"]]


def shy(priority: int = 10) -> JobInfo:
    job = gang("shy", 1)
    job.priority = priority
    return job


def test_a_victim_whose_anti_affinity_kept_the_preemptor_out_may_be_the_one_to_go() -> None:
    n0 = NodeInfo("n0", res(4000, 8 * GiB))
    low, mid = job_of("low", priority=1), job_of("mid", priority=2)
    run_on(low, "low-0", "n0")
    run_on(mid, "blocker", "n0")
    ssn = run_flow(
        snapshot([n0], [low, mid, shy()]),
        FILTER_TIERS,
        ["allocate", "preempt"],
        plugins={"keep-away": KeepAway},
    )
    # plenty of cpu: low-0 goes first (least important), which does not help; then the blocker
    assert evictions(ssn) == ["low-0", "blocker"]
    assert ("nominate", "default/shy-0", "n0") in decisions(ssn)


def test_no_victims_are_taken_when_the_preemptor_still_fails_without_them() -> None:
    n0 = NodeInfo("n0", res(2000, 8 * GiB))
    low = job_of("low", priority=1)
    run_on(low, "low-0", "n0")
    run_on(low, "low-1", "n0")
    guard = job_of("guard", priority=50)  # more important than the preemptor: no victim
    run_on(guard, "blocker", "n0", cpu=0)
    ssn = run_flow(
        snapshot([n0], [low, guard, shy()]),
        FILTER_TIERS,
        ["allocate", "preempt"],
        plugins={"keep-away": KeepAway},
    )
    assert evictions(ssn) == []
    assert ssn.snapshot.jobs["default/shy"].tasks["shy-0"].status == TaskStatus.PENDING
    assert all(
        t.status == TaskStatus.RUNNING for t in ssn.snapshot.jobs["default/low"].tasks.values()
    )


def test_a_node_rejected_for_an_unresolvable_reason_is_never_tried() -> None:
    n0 = NodeInfo("n0", res(1000, 8 * GiB), labels={"zone": "wrong"})
    low = job_of("low", priority=1)
    run_on(low, "low-0", "n0")
    ssn = run_flow(
        snapshot([n0], [low, shy()]),
        FILTER_TIERS,
        ["allocate", "preempt"],
        plugins={"keep-away": KeepAway},
    )
    assert evictions(ssn) == []


# -- reclaim ---------------------------------------------------------------------------------

RECLAIM_TIERS = [
    [{"name": "gang", "enableReclaimable": False}],
    ["conformance", "predicates", "proportion"],
]


def test_reclaim_frees_a_node_full_by_pod_count() -> None:
    # big holds 6 of 8 cpu in 4 pods, above its deserved 4 (hungry asks for 3): the node has
    # cpu to spare but no room for a fifth pod
    n0 = NodeInfo("n0", res(8000, 16 * GiB), max_pods=4)
    hog = job_of("hog", priority=0, q="big")
    for i in range(4):
        run_on(hog, f"hog-{i}", "n0", cpu=1500)
    late = gang("late", 3, cpu=1000, queue="hungry", min_available=1)
    snap = snapshot([n0], [hog, late], [queue("big"), queue("hungry")])
    ssn = run_flow(snap, RECLAIM_TIERS, ["allocate", "reclaim"])
    assert len(evictions(ssn)) == 1
    assert ssn.snapshot.jobs["default/late"].tasks["late-0"].status == TaskStatus.PIPELINED
