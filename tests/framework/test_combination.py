"""Every combination rule of the plugin contract, through a real Session with test plugins."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pumice import (
    ClusterSnapshot,
    Feasibility,
    JobInvalid,
    NodeInfo,
    PredicateResult,
    QueueInfo,
    Resource,
    TaskInfo,
    Vote,
)
from pumice.framework.session import PluginContractError
from support.builders import add_job, cluster, make_plugin, open_session


def const(hook: str, value: Any, log: list[Any] | None = None, tag: str = "") -> Any:
    """A hook implementation returning ``value`` (recording ``tag`` in ``log``)."""
    args = {
        "overused": "self, queue",
        "allocatable": "self, queue, task",
        "preemptive": "self, queue, task",
        "job_ready": "self, job",
        "job_pipelined": "self, job",
        "job_enqueueable": "self, job",
        "job_starving": "self, job",
        "job_valid": "self, job",
    }[hook]
    scope: dict[str, Any] = {"value": value, "log": log, "tag": tag}
    body = "    if log is not None: log.append(tag)\n    return value\n"
    exec(f"def f({args}):\n{body}", scope)
    return scope["f"]


# -- ordering ---------------------------------------------------------------------------------


def test_job_order_first_distinguishing_plugin_decides() -> None:
    snap = cluster()
    a = add_job(snap, "a", created=3)
    b = add_job(snap, "b", created=1)
    c = add_job(snap, "c", created=2)
    prio = {"a": 0, "b": 0, "c": 1}  # first plugin separates c from a and b only
    size = {"a": 0, "b": 5, "c": -10}
    plugins = {
        "by-prio": make_plugin("ByPrio", job_order_key=lambda self, job: -prio[job.name]),
        "by-size": make_plugin("BySize", job_order_key=lambda self, job: size[job.name]),
    }
    ssn = open_session(plugins, [["by-prio"], ["by-size"]], snap)
    # c first (prio); a before b because by-size decides between them, not creation time.
    assert [j.name for j in ssn.sort_jobs([a, b, c])] == ["c", "a", "b"]


def test_job_order_falls_back_to_creation_time_then_name() -> None:
    snap = cluster()
    jobs = [add_job(snap, "z", created=1), add_job(snap, "y", created=2), add_job(snap, "x", 1)]
    plugins = {"flat": make_plugin("Flat", job_order_key=lambda self, job: 0)}
    ssn = open_session(plugins, [["flat"]], snap)
    assert [j.name for j in ssn.sort_jobs(jobs)] == ["x", "z", "y"]


def test_task_order_falls_back_to_the_pod_name_index_then_creation_then_name() -> None:
    snap = cluster()
    job = add_job(snap, "job", tasks=0)
    names = [("job-w-10", 1), ("job-w-2", 5), ("job-w-3", 0), ("solo", 0), ("alone", 0)]
    tasks = [
        TaskInfo(uid=name, name=name, resreq=Resource({"cpu": 100}), creation_timestamp=t)
        for name, t in names
    ]
    for task in tasks:
        job.add_task(task)
    ssn = open_session({}, [], snap)
    # indexed pods by index (2 < 3 < 10, not as text), then the rest by creation time, then name
    assert [t.name for t in ssn.sort_tasks(tasks)] == [
        "job-w-2",
        "job-w-3",
        "job-w-10",
        "alone",
        "solo",
    ]


def test_disabled_order_flag_removes_the_plugin_from_ordering() -> None:
    snap = cluster()
    jobs = [add_job(snap, "a", created=1), add_job(snap, "b", created=2)]
    plugins = {"rev": make_plugin("Rev", job_order_key=lambda self, job: -job.creation_timestamp)}
    on = open_session(plugins, [["rev"]], snap)
    assert [j.name for j in on.sort_jobs(jobs)] == ["b", "a"]
    off = open_session(plugins, [[{"name": "rev", "enableJobOrder": False}]], snap)
    assert [j.name for j in off.sort_jobs(jobs)] == ["a", "b"]


# -- predicates, scores, best node --------------------------------------------------------------


def test_predicate_is_and_over_tiers_with_first_failure_reason() -> None:
    plugins = {
        "no-n0": make_plugin(
            "NoN0",
            predicate=lambda self, task, nodes: PredicateResult(
                np.array([False, True, True]), "node(s) were n0"
            ),
        ),
        "no-n0-n1": make_plugin(
            "NoN0N1",
            predicate=lambda self, task, nodes: PredicateResult(
                np.array([False, False, True]), np.array(["a", "b", "c"], dtype=object)
            ),
        ),
        "silent": make_plugin("Silent", predicate=lambda self, task, nodes: None),
    }
    snap = cluster()
    task = next(iter(add_job(snap, "j").tasks.values()))
    ssn = open_session(plugins, [["silent", "no-n0"], ["no-n0-n1"]], snap)
    fit = ssn.predicate(task)
    assert fit.mask.tolist() == [False, False, True]
    assert fit.reasons.tolist() == ["node(s) were n0", "b", ""]
    assert fit.message() == "1/3 nodes are available: 1 b, 1 node(s) were n0."


def test_predicate_plain_mask_names_the_plugin_and_flag_disables_it() -> None:
    plugins = {"odd": make_plugin("Odd", predicate=lambda self, task, nodes: np.array([1, 0, 1]))}
    snap = cluster()
    task = next(iter(add_job(snap, "j").tasks.values()))
    fit = open_session(plugins, [["odd"]], snap).predicate(task)
    assert fit.mask.tolist() == [True, False, True]
    assert fit.reasons[1] == "node(s) rejected by odd"
    off = open_session(plugins, [[{"name": "odd", "enablePredicate": False}]], snap)
    assert off.predicate(task).mask.all()


def test_predicate_of_wrong_shape_is_a_contract_error() -> None:
    plugins = {"bad": make_plugin("Bad", predicate=lambda self, task, nodes: np.array([True]))}
    snap = cluster()
    task = next(iter(add_job(snap, "j").tasks.values()))
    with pytest.raises(PluginContractError, match="bad returned predicate of shape"):
        open_session(plugins, [["bad"]], snap).predicate(task)


def test_node_scores_sum_over_all_tiers_and_respect_the_flag() -> None:
    plugins = {
        "one": make_plugin("One", node_score=lambda self, task, nodes: np.array([1.0, 2.0, 3.0])),
        "ten": make_plugin("Ten", node_score=lambda self, task, nodes: np.array([10.0, 0, 0])),
        "none": make_plugin("NoneScore", node_score=lambda self, task, nodes: None),
    }
    snap = cluster()
    task = next(iter(add_job(snap, "j").tasks.values()))
    ssn = open_session(plugins, [["one"], ["none", "ten"]], snap)
    assert ssn.node_scores(task).tolist() == [11.0, 2.0, 3.0]
    off = open_session(plugins, [["one"], [{"name": "ten", "enableNodeOrder": False}]], snap)
    assert off.node_scores(task).tolist() == [1.0, 2.0, 3.0]


def test_best_node_first_naming_plugin_wins_and_infeasible_choices_are_ignored() -> None:
    plugins = {
        "wants-n0": make_plugin("WantsN0", best_node=lambda self, task, scores, nodes: "n0"),
        "wants-n2": make_plugin("WantsN2", best_node=lambda self, task, scores, nodes: "n2"),
        "pass": make_plugin("Pass", best_node=lambda self, task, scores, nodes: None),
    }
    snap = cluster()
    task = next(iter(add_job(snap, "j").tasks.values()))
    ssn = open_session(plugins, [["pass", "wants-n0"], ["wants-n2"]], snap)
    scores = np.array([0.0, 5.0, 1.0])
    assert ssn.best_node(task, scores) == "n0"
    # n0 not feasible: the next plugin's choice wins.
    assert ssn.best_node(task, scores, np.array([False, True, True])) == "n2"


def test_best_node_falls_back_to_top_score_with_tie_break() -> None:
    snap = cluster(node_count=4)
    task = next(iter(add_job(snap, "j").tasks.values()))
    scores = np.array([1.0, 7.0, 3.0, 7.0])
    plugins = {"p": make_plugin("P", node_score=lambda self, task, nodes: None)}
    ssn = open_session(plugins, [["p"]], snap)
    assert ssn.best_node(task, scores) == "n1"  # smallest name among n1 and n3
    assert ssn.best_node(task, scores, np.array([True, False, True, True])) == "n3"
    assert ssn.best_node(task, scores, np.zeros(4, dtype=bool)) is None
    picks = set()
    for seed in range(40):
        rnd = open_session(
            plugins, [["p"]], snap, scheduler={"tieBreak": "random"}, rng=random.Random(seed)
        )
        picks.add(rnd.best_node(task, scores))
    assert picks == {"n1", "n3"}


def test_tied_top_scores_go_to_the_smallest_name_whatever_the_row_order() -> None:
    # rows out of name order (n3 was added first): the tie is settled by name, not by row
    nodes = [NodeInfo(name, Resource({"cpu": 4000.0})) for name in ("n3", "n1", "n2")]
    snap = ClusterSnapshot.build(nodes=nodes, queues=[QueueInfo("default")])
    task = next(iter(add_job(snap, "j").tasks.values()))
    plugins = {"p": make_plugin("P", node_score=lambda self, task, nodes: None)}
    ssn = open_session(plugins, [["p"]], snap)
    assert not ssn.table.rows_in_name_order
    assert ssn.best_node(task, np.array([5.0, 5.0, 1.0])) == "n1"
    assert ssn.best_node(task, np.array([5.0, 1.0, 5.0])) == "n2"
    # in name order, the first tied row is the smallest name
    ordered = cluster(node_count=3)
    task = next(iter(add_job(ordered, "j").tasks.values()))
    ssn = open_session(plugins, [["p"]], ordered)
    assert ssn.table.rows_in_name_order
    assert ssn.best_node(task, np.array([1.0, 5.0, 5.0])) == "n1"
    ordered.put_node(NodeInfo("a0", Resource({"cpu": 4000.0})))  # a new row, first by name
    assert not ordered.table.rows_in_name_order


# -- queue and job decisions -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("hook", "answers", "expected", "default"),
    [
        ("overused", [False, True], True, False),
        ("overused", [False, False], False, False),
        ("allocatable", [True, False], False, True),
        ("allocatable", [True, True], True, True),
        ("preemptive", [True, False], False, True),
        ("job_ready", [False, True], False, True),
        ("job_ready", [True, True], True, True),
    ],
)
def test_any_and_all_rules(hook: str, answers: list[bool], expected: bool, default: bool) -> None:
    snap = cluster()
    job = add_job(snap, "j")
    task = next(iter(job.tasks.values()))
    queue = snap.queues["default"]
    plugins = {
        f"p{i}": make_plugin(f"P{i}", **{hook: const(hook, a)}) for i, a in enumerate(answers)
    }
    tiers: list[list[str | dict[str, Any]]] = [["p0"], ["p1"]]
    ssn = open_session(plugins, tiers, snap)
    args = {"overused": (queue,), "allocatable": (queue, task), "preemptive": (queue, task)}
    call = getattr(ssn, hook)
    assert call(*args.get(hook, (job,))) is expected
    empty = open_session({"x": make_plugin("X")}, [["x"]], snap)
    assert getattr(empty, hook)(*args.get(hook, (job,))) is default


@pytest.mark.parametrize("hook", ["job_pipelined", "job_enqueueable"])
@pytest.mark.parametrize(
    ("tiers", "expected", "asked"),
    [
        # a permit ends the walk at the end of its tier: tier 2's reject is never asked
        ([["permit"], ["reject"]], True, ["permit"]),
        # a reject in the same tier as a permit wins, wherever it stands
        ([["permit", "reject"]], False, ["permit", "reject"]),
        ([["reject", "permit"]], False, ["reject"]),
        # abstentions pass to the next tier
        ([["abstain"], ["reject"]], False, ["abstain", "reject"]),
        ([["abstain"], ["abstain2"]], True, ["abstain", "abstain2"]),
        ([["abstain", "permit"], ["reject"]], True, ["abstain", "permit"]),
    ],
)
def test_vote_rules(
    hook: str, tiers: Any, expected: bool, asked: list[str], calls: list[Any]
) -> None:
    votes = {"permit": Vote.PERMIT, "reject": Vote.REJECT, "abstain": Vote.ABSTAIN}
    votes["abstain2"] = Vote.ABSTAIN
    plugins = {
        name: make_plugin(name.title(), **{hook: const(hook, v, calls, name)})
        for name, v in votes.items()
    }
    snap = cluster()
    job = add_job(snap, "j")
    ssn = open_session(plugins, tiers, snap)
    assert getattr(ssn, hook)(job) is expected
    assert calls == asked


def test_job_enqueueable_flag_is_volcanos_enable_job_enqueued(calls: list[Any]) -> None:
    plugins = {"no": make_plugin("No", job_enqueueable=const("job_enqueueable", Vote.REJECT))}
    snap = cluster()
    job = add_job(snap, "j")
    assert open_session(plugins, [["no"]], snap).job_enqueueable(job) is False
    tiers: Any = [[{"name": "no", "enableJobEnqueued": False}]]
    assert open_session(plugins, tiers, snap).job_enqueueable(job) is True


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        ([["none"], ["yes", "no"]], False),  # the first tier with an implementation decides
        ([["yes"], ["no"]], True),  # later tiers are not consulted
        ([["yes", "yes2"]], True),
        ([["none"]], False),  # nobody implements it
    ],
)
def test_job_starving_first_tier_with_an_implementation_decides(tiers: Any, expected: bool) -> None:
    plugins = {
        "yes": make_plugin("Yes", job_starving=const("job_starving", True)),
        "yes2": make_plugin("Yes2", job_starving=const("job_starving", True)),
        "no": make_plugin("No", job_starving=const("job_starving", False)),
        "none": make_plugin("NoStarving"),
    }
    snap = cluster()
    job = add_job(snap, "j")
    assert open_session(plugins, tiers, snap).job_starving(job) is expected


def test_job_valid_first_failure_wins(calls: list[Any]) -> None:
    plugins = {
        "ok": make_plugin("Ok", job_valid=const("job_valid", None, calls, "ok")),
        "bad1": make_plugin("Bad1", job_valid=const("job_valid", JobInvalid("one"), calls, "b1")),
        "bad2": make_plugin("Bad2", job_valid=const("job_valid", JobInvalid("two"), calls, "b2")),
    }
    snap = cluster()
    job = add_job(snap, "j")
    assert open_session(plugins, [["ok"], ["bad1", "bad2"]], snap).job_valid(job) == JobInvalid(
        "one"
    )
    assert calls == ["ok", "b1"]
    assert open_session(plugins, [["ok"]], snap).job_valid(job) is None


# -- victims ----------------------------------------------------------------------------------


def victims_plugin(name: str, keep: set[str] | None) -> Any:
    """A preemptable/reclaimable plugin keeping the named candidates (None abstains)."""

    def preemptable(self: Any, preemptor: Any, candidates: Any) -> Any:
        return None if keep is None else [c for c in candidates if c.name in keep]

    def reclaimable(self: Any, reclaimer: Any, candidates: Any) -> Any:
        return preemptable(self, reclaimer, candidates)

    return make_plugin(name, preemptable=preemptable, reclaimable=reclaimable)


@pytest.mark.parametrize("hook", ["preemptable", "reclaimable"])
@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        ([["ab", "bc"]], ["v-b"]),  # intersected inside a tier
        ([["ab"], ["bc"]], ["v-a", "v-b"]),  # the first tier with an answer wins
        ([["empty"], ["bc"]], ["v-b", "v-c"]),  # an empty answer does not veto: next tier
        ([["ab", "empty", "bc"]], []),  # …and stops its own tier: bc is never asked
        ([["ab", "empty", "bc"], ["c"]], ["v-c"]),
        ([["a", "c"], ["bc"]], ["v-b", "v-c"]),  # empty intersection: next tier
        ([["abstain"], ["ab"]], ["v-a", "v-b"]),  # abstaining tier falls through
        ([["abstain", "ab"]], ["v-a", "v-b"]),
        ([["abstain"]], []),
    ],
)
def test_victim_rules(hook: str, tiers: Any, expected: list[str]) -> None:
    plugins = {
        "ab": victims_plugin("AB", {"v-a", "v-b"}),
        "bc": victims_plugin("BC", {"v-b", "v-c"}),
        "a": victims_plugin("A", {"v-a"}),
        "c": victims_plugin("C", {"v-c"}),
        "empty": victims_plugin("Empty", set()),
        "abstain": victims_plugin("Abstain", None),
    }
    snap = cluster()
    preemptor = next(iter(add_job(snap, "p").tasks.values()))
    victims = add_job(snap, "v", tasks=3)
    for task, suffix in zip(victims.tasks.values(), "abc", strict=True):
        task.name = f"v-{suffix}"
    ssn = open_session(plugins, tiers, snap)
    chosen = getattr(ssn, hook)(preemptor, list(victims.tasks.values()))
    assert sorted(t.name for t in chosen) == expected


def test_victim_flags_switch_one_kind_only() -> None:
    plugins = {"ab": victims_plugin("AB", {"v-a", "v-b"})}
    snap = cluster()
    preemptor = next(iter(add_job(snap, "p").tasks.values()))
    victims = list(add_job(snap, "v", tasks=2).tasks.values())
    victims[0].name, victims[1].name = "v-a", "v-b"
    ssn = open_session(plugins, [[{"name": "ab", "enablePreemptable": False}]], snap)
    assert ssn.preemptable(preemptor, victims) == []
    assert [t.name for t in ssn.reclaimable(preemptor, victims)] == ["v-a", "v-b"]


def test_feasibility_message_counts_resource_shortfalls_of_nodes_that_passed() -> None:
    fit = Feasibility(
        np.array([False, True, True, True]),
        np.array(["node(s) were unschedulable", "", "", ""], dtype=object),
    )
    shortfall = np.array(
        [[True, True], [True, True], [False, True], [False, False]]  # cpu, memory
    )
    assert fit.message(shortfall, ["cpu", "memory"]) == (
        "1/4 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable, "
        "2 Insufficient memory."
    )
    assert fit.message() == "3/4 nodes are available: 1 node(s) were unschedulable."


def test_feasibility_message_sorts_parts_as_strings_like_kube_scheduler() -> None:
    reasons = ["Too many pods"] * 10 + ["node(s) were unschedulable"] * 2
    fit = Feasibility(np.zeros(12, dtype=np.bool_), np.array(reasons, dtype=object))
    # "10 …" sorts before "2 …" as text, which is what kubectl describe shows for other pods
    assert fit.message() == (
        "0/12 nodes are available: 10 Too many pods, 2 node(s) were unschedulable."
    )


def test_a_pod_count_shortfall_reads_too_many_pods() -> None:
    fit = Feasibility(np.ones(3, dtype=np.bool_), np.array(["", "", ""], dtype=object))
    shortfall = np.array([[True, False], [True, True], [False, False]])  # pods, cpu
    assert fit.message(shortfall, ["pods", "cpu"]) == (
        "1/3 nodes are available: 1 Insufficient cpu, 2 Too many pods."
    )


@pytest.mark.parametrize("reads_queue", [True, False])
def test_row_local_answers_are_cached_per_queue_unless_every_plugin_says_they_need_not_be(
    reads_queue: bool,
) -> None:
    def node_score(self: Any, task: TaskInfo, nodes: Any, rows: Any = None) -> Any:
        # the queue's name length as a score: a plugin whose answer depends on the queue
        queue = self.view.jobs[task.job].queue if self.view is not None else ""
        return np.full(len(nodes) if rows is None else len(rows), float(len(queue)))

    def session_open(self: Any, session: Any) -> None:
        self.view = session

    cls = make_plugin("ByQueue", node_score=node_score, session_open=session_open)
    cls.row_local_reads_queue = reads_queue
    snap = cluster(node_count=2)
    snap.put_queue(QueueInfo("a-long-queue-name"))
    short = next(iter(add_job(snap, "short").tasks.values()))
    long = next(iter(add_job(snap, "long", queue="a-long-queue-name").tasks.values()))
    ssn = open_session({"p": cls}, [["p"]], snap)
    assert ssn.node_scores(short)[0] == float(len("default"))
    # a plugin that reads the queue gets each queue's own cache entry (and the right answer);
    # one that says it does not shares the entry of the same shape
    assert ssn.node_scores(long)[0] == float(len("a-long-queue-name" if reads_queue else "default"))
    assert len(ssn.shapes.entries) == (2 if reads_queue else 1)


def test_a_plain_number_answers_for_one_row_only() -> None:
    from pumice.framework.hookcalls import vector_answer

    assert vector_answer("p", "node_score", 3.5, 1, np.float64).tolist() == [3.5]
    with pytest.raises(PluginContractError, match="plugin p returned node_score of shape"):
        vector_answer("p", "node_score", 3.5, 2, np.float64)


def test_preemption_candidates_pass_or_fail_only_for_resolvable_reasons() -> None:
    from pumice.framework.results import Feasibility, PredicatePart

    ports = "node(s) didn't have free ports for the requested pod ports"
    pods = PredicatePart(
        "predicates",
        np.array([True, False, False, False]),
        np.array(["", "Too many pods", "node(s) were unschedulable", ports], dtype=object),
        frozenset({"Too many pods", ports}),
    )
    # a plugin without resolvable reasons: its rejections stand
    zone = PredicatePart("zone", np.array([True, True, True, False]), "wrong zone")
    feasibility = Feasibility(pods.mask & zone.mask, parts=[pods, zone])
    assert feasibility.preemption_candidates().tolist() == [True, True, False, False]
    # one reason for every rejected node, and it is resolvable
    full = PredicatePart(
        "predicates", np.array([False, True]), "Too many pods", frozenset({"Too many pods"})
    )
    assert Feasibility(full.mask, parts=[full]).preemption_candidates().tolist() == [True, True]
