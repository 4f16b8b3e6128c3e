"""The drf plugin: dominant shares, job order, shares following statements, victims."""

from __future__ import annotations

import logging

import pytest

from pumice import ClusterSnapshot, NodeInfo, QueueInfo, Resource, TaskStatus
from pumice.framework.configcheck import lint
from pumice.framework.configfile import parse_config
from pumice.logs import forget_warnings
from pumice.plugins.drf import DrfPlugin
from support.tier1 import job, names, plugin_of, running, session, snapshot, task

GiB = 2**30


def two_nodes() -> ClusterSnapshot:
    """Total: 16000 millicores and 32 GiB."""
    return snapshot(("n0", 8000, 16 * GiB), ("n1", 8000, 16 * GiB))


def drf_of(ssn: object) -> DrfPlugin:
    plugin = plugin_of(ssn, "drf")  # type: ignore[arg-type]
    assert isinstance(plugin, DrfPlugin)
    return plugin


# -- shares and order -------------------------------------------------------------------------


def test_share_is_the_dominant_resource_fraction_of_the_cluster() -> None:
    snap = two_nodes()
    job(snap, "cpu-heavy", running("c0", cpu=4000, memory=GiB), running("c1", cpu=4000, memory=GiB))
    job(snap, "mem-heavy", running("m0", cpu=1000, memory=12 * GiB, node="n1"))
    job(snap, "idle", task("i0"), task("i1", status=TaskStatus.SUCCEEDED))
    ssn = session(snap, ["drf"])
    drf = drf_of(ssn)
    assert drf.share("default/cpu-heavy") == 0.5  # cpu 8000/16000 beats memory 2/32
    assert drf.dominant_resource("default/cpu-heavy") == "cpu"
    assert drf.share("default/mem-heavy") == 0.375  # memory 12/32 beats cpu 1000/16000
    assert drf.dominant_resource("default/mem-heavy") == "memory"
    assert drf.share("default/idle") == 0.0  # pending and succeeded tasks hold nothing
    assert drf.dominant_resource("default/idle") is None


def test_lower_share_goes_first_and_ties_fall_back_to_creation_time() -> None:
    snap = two_nodes()
    big = job(snap, "big", running("b0", cpu=8000), created=0)
    small = job(snap, "small", running("s0", cpu=2000), created=1)
    empty_late = job(snap, "empty-late", task("e0"), created=3)
    empty_early = job(snap, "empty-early", task("f0"), created=2)
    ssn = session(snap, ["drf"])
    order = ssn.sort_jobs([big, small, empty_late, empty_early])
    assert [j.name for j in order] == ["empty-early", "empty-late", "small", "big"]


def test_a_resource_the_cluster_lacks_counts_as_share_zero() -> None:
    snap = ClusterSnapshot.build(
        nodes=[NodeInfo("n0", Resource({"cpu": 4000, "memory": 8 * GiB, "example.com/fpga": 0}))],
        queues=[QueueInfo("default")],
    )
    gpu_task = running("g0", cpu=1000, memory=GiB)
    gpu_task.resreq = Resource({"cpu": 1000, "memory": GiB, "nvidia.com/gpu": 2})
    job(snap, "gpu", gpu_task)
    ssn = session(snap, ["drf"])
    assert drf_of(ssn).share("default/gpu") == 0.25
    assert drf_of(ssn).dims == ("cpu", "memory")


# -- shares follow the statement --------------------------------------------------------------


def test_shares_follow_allocate_pipeline_and_discard() -> None:
    snap = two_nodes()
    a0, a1 = task("a0", cpu=4000, memory=GiB), task("a1", cpu=2000, memory=10 * GiB)
    a = job(snap, "a", a0, a1, created=0)
    b = job(snap, "b", running("b0", cpu=3000, memory=GiB), created=1)
    ssn = session(snap, ["drf"])
    drf = drf_of(ssn)
    assert [j.name for j in ssn.sort_jobs([a, b])] == ["a", "b"]
    stmt = ssn.statement()
    stmt.allocate(a0, "n0")
    assert drf.share(a.uid) == 0.25
    assert [j.name for j in ssn.sort_jobs([a, b])] == ["b", "a"]  # 0.1875 < 0.25
    stmt.pipeline(a1, "n1")  # a promise counts as held, as in Volcano
    assert drf.share(a.uid) == 0.375  # cpu 6000/16000; memory 11/32 = 0.34375
    stmt.discard()
    assert drf.share(a.uid) == 0.0
    assert [j.name for j in ssn.sort_jobs([a, b])] == ["a", "b"]


def test_shares_follow_evict_and_its_undo_and_survive_commit() -> None:
    snap = two_nodes()
    v0, v1 = running("v0", cpu=4000), running("v1", cpu=4000, node="n1")
    v = job(snap, "v", v0, v1)
    ssn = session(snap, ["drf"])
    drf = drf_of(ssn)
    assert drf.share(v.uid) == 0.5
    stmt = ssn.statement()
    stmt.evict(v0, "preempted")
    assert drf.share(v.uid) == 0.25
    stmt.discard()
    assert drf.share(v.uid) == 0.5
    stmt = ssn.statement()
    stmt.evict(v1, "preempted")
    stmt.commit()
    assert drf.share(v.uid) == 0.25
    assert v1.status == TaskStatus.RELEASING


def test_a_vetoed_allocation_leaves_the_share_unchanged() -> None:
    from pumice import StatementError
    from support.builders import make_plugin

    def refuse(self: object, task: object) -> None:
        raise RuntimeError("no")

    snap = two_nodes()
    t = task("t0", cpu=4000)
    j = job(snap, "j", t)
    veto = make_plugin("Veto", on_allocate=refuse)
    ssn = session(snap, ["drf", "veto"], extra={"veto": veto})
    with pytest.raises(StatementError):
        ssn.statement().allocate(t, "n0")
    assert drf_of(ssn).share(j.uid) == 0.0
    assert t.status == TaskStatus.PENDING


# -- victims ----------------------------------------------------------------------------------


def rich_and_poor(preemptor_memory: float = GiB) -> tuple[ClusterSnapshot, object, list[object]]:
    snap = two_nodes()
    preemptor = task("p", cpu=2000, memory=preemptor_memory)
    job(snap, "poor", preemptor, running("poor-0", cpu=2000, memory=GiB))
    rich = [running(f"rich-{i}", cpu=2000, memory=GiB, node=f"n{i % 2}") for i in range(4)]
    job(snap, "rich", *rich)
    return snap, preemptor, rich


def test_victims_while_the_victim_job_keeps_at_least_the_preemptors_share() -> None:
    snap, preemptor, rich = rich_and_poor()
    ssn = session(snap, ["drf"])
    # ls = (2000 + 2000) / 16000 = 0.25; rich keeps 6000, 4000, 2000, 0 millicores as
    # victims are taken: 0.375 and 0.25 (equal) qualify, 0.125 and 0 do not.
    assert names(ssn.preemptable(preemptor, rich)) == ["rich-0", "rich-1"]  # type: ignore[arg-type]


@pytest.mark.parametrize(("extra_bytes", "victims"), [(3000, 2), (100_000, 1)])
def test_shares_within_one_millionth_count_as_equal(extra_bytes: int, victims: int) -> None:
    # The preemptor's share comes from memory: 0.25 + extra/32GiB (3000 bytes ~ 8.7e-8,
    # 100000 bytes ~ 2.9e-6); the second victim leaves rich at exactly 0.25.
    snap, preemptor, rich = rich_and_poor(preemptor_memory=7 * GiB + extra_bytes)
    ssn = session(snap, ["drf"])
    assert len(ssn.preemptable(preemptor, rich)) == victims  # type: ignore[arg-type]


def test_victims_of_several_jobs_are_counted_down_per_job() -> None:
    snap = two_nodes()
    preemptor = task("p", cpu=2000)
    job(snap, "poor", preemptor)
    x = [running(f"x-{i}", cpu=2000) for i in range(3)]  # 6000: keeps 0.25 after one victim
    y = [running(f"y-{i}", cpu=2000, node="n1") for i in range(2)]  # 4000: keeps 0.125
    job(snap, "x", *x)
    job(snap, "y", *y)
    ssn = session(snap, ["drf"])
    # ls = 0.125: x keeps 0.25, 0.125 -> both; y keeps 0.125 (equal) -> yes, then 0 -> no;
    # x's third keeps 0 -> no.
    got = ssn.preemptable(preemptor, [x[0], y[0], x[1], y[1], x[2]])
    assert names(got) == ["x-0", "y-0", "x-1"]


def test_unknown_jobs_are_skipped() -> None:
    snap = two_nodes()
    preemptor = task("p", cpu=2000)
    job(snap, "poor", preemptor)
    victim = running("v", cpu=4000)
    job(snap, "rich", victim, running("w", cpu=4000))  # keeps 0.25 > 0.125 without v
    stray = running("stray", cpu=8000, node="n1")
    stray.job = "default/gone"
    ssn = session(snap, ["drf"])
    assert names(ssn.preemptable(preemptor, [stray, victim])) == ["v"]
    orphan = task("orphan")
    orphan.job = "default/gone"
    assert ssn.preemptable(orphan, [victim]) == []


def test_drf_and_priority_victims_intersect_and_the_flag_removes_drf() -> None:
    snap = two_nodes()
    preemptor = task("p", cpu=2000)
    job(snap, "poor", preemptor, priority=5)
    rich_low = [running(f"low-{i}", cpu=2000) for i in range(3)]
    tiny_low = running("tiny", cpu=500, node="n1")
    job(snap, "rich-low", *rich_low, priority=1)
    job(snap, "tiny-low", tiny_low, priority=1)
    ssn = session(snap, ["priority", "drf"])
    # priority allows all four; drf (ls = 0.125) keeps rich-low above or at 0.125 twice only.
    assert names(ssn.preemptable(preemptor, [*rich_low, tiny_low])) == ["low-0", "low-1"]
    off = session(snap, ["priority", {"name": "drf", "enablePreemptable": False}])
    assert len(off.preemptable(preemptor, [*rich_low, tiny_low])) == 4


# -- hierarchy --------------------------------------------------------------------------------


def test_enable_hierarchy_is_a_config_warning_and_drf_stays_plain(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the config loader warns, with file, line and key (tests/test_check_config_arguments.py);
    # the sessions that build the plugin say nothing more, every cycle or once
    forget_warnings()
    text = (
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n'
        "  - name: predicates\n"
    )
    warnings = [str(w) for w in lint(parse_config(text, "c.yaml"))]
    assert warnings == [
        "c.yaml:5: tiers[0].plugins[0].enableHierarchy: warning: hierarchical sharing is not "
        "supported by pumice; drf shares as if it were off"
    ]
    snap = two_nodes()
    job(snap, "a", running("a0", cpu=4000))
    with caplog.at_level(logging.WARNING, logger="pumice.plugins.drf"):
        ssn = session(snap, [{"name": "drf", "enableHierarchy": True}])
        ssn.sort_jobs(ssn.jobs.values())
        ssn.close()
    assert not [r for r in caplog.records if r.name == "pumice.plugins.drf"]
    assert drf_of(ssn).share("default/a") == 0.25  # plain DRF all the same
