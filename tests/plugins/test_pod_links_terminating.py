"""A terminating pod counts for InterPodAffinity and not for PodTopologySpread, wherever it
comes from; only a node asked about as it will be once its Releasing pods have gone
(``predicate_once_gone``, preempt's and reclaim's question) is answered without it.

kube-scheduler's rule (``shared/reference/kube-constraints.md`` 8.4, read from
``pkg/scheduler/framework/plugins/podtopologyspread/common.go``: countPodsMatchSelector skips a
pod with a ``deletionTimestamp``; ``interpodaffinity/filtering.go`` counts every pod of the
node): a pod evicted by preempt or reclaim keeps running until its grace period ends, so for
the rest of the session it must count as a pod that was terminating when the session opened —
for the existing pods' anti-affinity and the incoming pod's affinity and anti-affinity, but no
longer for spread. Each row is checked three ways on a session over hosts h1 and h2 whose pod
``v`` runs on h1:

* evicted through a statement, the pending pod's verdict is the verdict of a fresh session in
  which ``v`` is terminating from the start (and, for the affinity rows, the verdict before);
* the preemptor's question, ``predicate_once_gone``, is answered as by a session without ``v``,
  for ``v`` evicted in the session and for ``v`` terminating from the start alike;
* a discarded eviction gives back the verdict before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pumice import NodeInfo, TaskInfo, TaskStatus
from pumice.framework import Session, predicate_once_gone
from support.constraint_cases import exists, in_, pod, sel, spread, term
from support.flow import GiB, open_flow, res
from support.links import job_of, links_snapshot, running

Obj = dict[str, Any]
Verdict = tuple[frozenset[str], list[str]]
HOSTS = ("h1", "h2")
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"


@dataclass(frozen=True)
class Row:
    """``v`` (on h1) and the pending pod ``q``; ``q``'s feasible hosts while ``v`` runs
    (``before``), once ``v`` is evicted in the session (``evicted``) and with ``v`` gone."""

    name: str
    victim: Obj
    incoming: Obj
    before: frozenset[str]
    evicted: frozenset[str]
    gone: frozenset[str]
    reason: str


ROWS = [
    Row(
        "existing pod's required anti-affinity",
        pod("v", {"app": "guard"}, on="h1", anti=[term(sel(in_("app", "web")), "host")]),
        pod("q", {"app": "web"}),
        frozenset({"h2"}),
        frozenset({"h2"}),
        frozenset(HOSTS),
        EXISTING_ANTI,
    ),
    Row(
        "incoming pod's required anti-affinity",
        pod("v", {"app": "guard"}, on="h1"),
        pod("q", {"app": "web"}, anti=[term(sel(in_("app", "guard")), "host")]),
        frozenset({"h2"}),
        frozenset({"h2"}),
        frozenset(HOSTS),
        ANTI,
    ),
    Row(
        "incoming pod's required affinity",
        pod("v", {"app": "db"}, on="h1"),
        pod("q", {"app": "web"}, affinity=[term(sel(in_("app", "db")), "host")]),
        frozenset({"h1"}),
        frozenset({"h1"}),
        frozenset(),  # no db pod anywhere, and q does not select itself
        AFFINITY,
    ),
    Row(
        "DoNotSchedule spread (terminating pods left out)",
        pod("v", {"foo": ""}, on="h1"),
        pod("q", {"foo": ""}, spreads=[spread(1, "host", sel(exists("foo")))]),
        frozenset({"h2"}),
        frozenset(HOSTS),
        frozenset(HOSTS),
        SPREAD,
    ),
]


def session_with(row: Row, victim: str) -> Session:
    """h1 and h2, ``q`` pending, and ``v`` on h1: running, terminating (Releasing with a
    ``deletionTimestamp``, as the cache gives a pod being deleted) or absent."""
    nodes = [
        NodeInfo(h, res(16000, 32 * GiB), labels={"host": h, "kubernetes.io/hostname": h})
        for h in HOSTS
    ]
    jobs = [job_of("q", [row.incoming])]
    if victim != "absent":
        manifest = pod(
            "v",
            row.victim["metadata"]["labels"],
            on="h1",
            terminating=victim == "terminating",
        )
        manifest["spec"] = row.victim["spec"]
        job = running("v", "h1", manifest)
        if victim == "terminating":
            task = next(iter(job.tasks.values()))
            job.update_task_status(task, TaskStatus.RELEASING)
        jobs.append(job)
    return open_flow(links_snapshot(nodes, jobs))


def named(session: Session, name: str) -> TaskInfo:
    found = [t for j in session.jobs.values() for t in j.tasks.values() if t.name == name]
    assert len(found) == 1, name
    return found[0]


def verdict(session: Session) -> Verdict:
    """``q``'s feasible hosts, and each host's reason ('' where it passes)."""
    feasible = session.predicate(named(session, "q"))
    hosts = [n.name for n in session.table.nodes]
    passing = frozenset(h for h, ok in zip(hosts, feasible.mask, strict=True) if ok)
    return passing, [str(r) for r in feasible.reasons]


def once_gone(session: Session) -> Verdict:
    """preempt's and reclaim's question for ``q``: every host without its Releasing pods."""
    task = named(session, "q")
    reasons = [predicate_once_gone(session.shapes, task, n) for n in session.table.nodes]
    hosts = [n.name for n in session.table.nodes]
    return frozenset(h for h, r in zip(hosts, reasons, strict=True) if r == ""), reasons


def params(rows: Sequence[Row]) -> list[Any]:
    return [pytest.param(row, id=row.name) for row in rows]


@pytest.mark.parametrize("row", params(ROWS))
def test_a_pod_evicted_in_the_session_counts_as_a_terminating_pod(row: Row) -> None:
    session = session_with(row, "running")
    before = verdict(session)
    assert before[0] == row.before, row.name
    assert row.reason in before[1]

    statement = session.statement()
    statement.evict(named(session, "v"), "preempt")
    after = verdict(session)
    assert after[0] == row.evicted, row.name
    assert after == verdict(session_with(row, "terminating")), "counted unlike a terminating pod"

    statement.discard()
    assert verdict(session) == before, "the discarded eviction still shows"


@pytest.mark.parametrize("row", params(ROWS))
def test_the_preemptors_question_is_answered_without_the_evicted_pod(row: Row) -> None:
    session = session_with(row, "running")
    session.statement().evict(named(session, "v"), "preempt")
    without = session_with(row, "absent")
    assert verdict(without)[0] == row.gone, row.name
    assert once_gone(session) == verdict(without), "the evicted pod still counts once gone"
    # asking leaves the counts as they were: the pod still counts for everybody else
    assert verdict(session)[0] == row.evicted


@pytest.mark.parametrize("row", params(ROWS))
def test_a_pod_terminating_when_the_session_opens_counts_until_it_has_gone(row: Row) -> None:
    session = session_with(row, "terminating")
    assert verdict(session)[0] == row.evicted, row.name
    without = session_with(row, "absent")
    assert once_gone(session) == verdict(without), "the terminating pod still counts once gone"
    assert verdict(session)[0] == row.evicted
