"""The cached, incrementally refreshed pod-to-pod masks against a brute-force check written
from the Kubernetes rules, after random placements and discards in one session."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from pumice import NodeInfo, TaskInfo, TaskStatus
from pumice.framework import Session
from pumice.model.podterms import AffinityTerm, SpreadConstraint, selector_matches
from support.flow import open_flow
from support.links import HOST, ZONE, job_of, link_pod, links_snapshot, spread, term

APPS = ("a", "b", "c")


def selects(term_: AffinityTerm, pod: TaskInfo) -> bool:
    if term_.namespaces is not None and pod.namespace not in term_.namespaces:
        return False
    return selector_matches(term_.selector, pod.labels)


def placed(session: Session) -> list[tuple[TaskInfo, NodeInfo]]:
    out = []
    for node in session.table.nodes:
        for task in node.tasks.values():
            if not task.status & (TaskStatus.SUCCEEDED | TaskStatus.FAILED):
                out.append((task, node))
    return out


def spread_ok(c: SpreadConstraint, pod: TaskInfo, node: NodeInfo, session: Session) -> bool:
    keys = [k.topology_key for k in pod.links.hard_spread]
    counts: dict[str, int] = {}
    for other in session.table.nodes:
        if all(k in other.labels for k in keys):
            counts.setdefault(other.labels[c.topology_key], 0)
    for task, where in placed(session):
        value = where.labels.get(c.topology_key)
        if (
            value in counts
            and all(k in where.labels for k in keys)
            and (
                task.namespace == pod.namespace
                and c.selector
                and selector_matches(c.selector, task.labels)
            )
        ):
            counts[value] += 1
    if c.topology_key not in node.labels:
        return False
    low = min(counts.values()) if len(counts) >= c.min_domains else 0
    own = counts.get(node.labels[c.topology_key], 0)
    return own + int(selector_matches(c.selector, pod.labels)) - low <= c.max_skew


def brute_force(pod: TaskInfo, node: NodeInfo, session: Session) -> bool:
    links = pod.links
    pods = [(t, n) for t, n in placed(session) if t.uid != pod.uid]
    for c in links.hard_spread:
        if not spread_ok(c, pod, node, session):
            return False
    if links.affinity:
        keys = [t.topology_key for t in links.affinity]
        if not all(k in node.labels for k in keys):
            return False
        matching = [(t, n) for t, n in pods if all(selects(a, t) for a in links.affinity)]
        anywhere = any(any(k in n.labels for k in keys) for _, n in matching)
        alone = not anywhere and all(selects(a, pod) for a in links.affinity)
        if not alone:
            for a in links.affinity:
                value = node.labels[a.topology_key]
                if not any(n.labels.get(a.topology_key) == value for _, n in matching):
                    return False
    for a in links.anti_affinity:
        value = node.labels.get(a.topology_key)
        if value is not None and any(
            selects(a, t) and n.labels.get(a.topology_key) == value for t, n in pods
        ):
            return False
    for t, n in pods:
        for a in t.links.anti_affinity:
            value = node.labels.get(a.topology_key)
            if value is not None and selects(a, pod) and n.labels.get(a.topology_key) == value:
                return False
    return True


def random_pod(rng: random.Random, name: str) -> Mapping[str, Any]:
    app = {"app": rng.choice(APPS)}
    other = {"app": rng.choice(APPS)}
    key = rng.choice((HOST, ZONE, "rack"))
    kind = rng.randrange(5)
    kwargs: dict[str, Any] = {}
    if kind == 0:
        kwargs["anti"] = [term(other, key)]
    elif kind == 1:
        kwargs["affinity"] = [term(other, key)]
    elif kind == 2:
        kwargs["spreads"] = [spread(other, key, max_skew=rng.choice((1, 2)))]
    elif kind == 3:
        kwargs["spreads"] = [spread(app, ZONE, minDomains=rng.choice((1, 4)))]
        kwargs["anti"] = [term(other, HOST)]
    return link_pod(name, app, cpu="100m", **kwargs)


def random_nodes(rng: random.Random) -> list[NodeInfo]:
    from support.links import zoned_nodes

    # enough rows that one zone is less than an eighth of them: refreshed by its rows alone
    nodes = zoned_nodes(rng.randrange(40, 60), zones=rng.randrange(8, 12))
    for node in nodes:
        if rng.random() < 0.6:
            node.labels = {**node.labels, "rack": f"r{rng.randrange(12)}"}
    return nodes


@pytest.mark.parametrize("seed", range(15))
def test_cached_masks_agree_with_a_brute_force_check(seed: int) -> None:
    rng = random.Random(seed)
    pods = [random_pod(rng, f"p{i}") for i in range(10)]
    job = job_of("j", pods, min_available=1)
    snap = links_snapshot(random_nodes(rng), [job])
    session = open_flow(snap)
    tasks = sorted(job.tasks.values(), key=lambda t: t.name)
    statements = [session.statement()]
    for _ in range(25):
        for probe in tasks:
            if probe.status != TaskStatus.PENDING:
                continue
            mask = session.predicate(probe).mask
            cands = session.candidates(probe).future
            expected = [brute_force(probe, n, session) for n in session.table.nodes]
            assert list(mask) == expected, (seed, probe.name)
            assert list(cands) == [e and bool(f) for e, f in zip(expected, cands, strict=True)]
        step = rng.random()
        if step < 0.2 and len(statements) > 1:
            statements.pop().discard()
            continue
        if step < 0.35:
            statements.append(session.statement())
        pending = [t for t in tasks if t.status == TaskStatus.PENDING]
        if not pending:
            break
        task = rng.choice(pending)
        feasible = [
            n.name
            for n, ok in zip(session.table.nodes, session.predicate(task).mask, strict=True)
            if ok
        ]
        if feasible:
            statements[-1].allocate(task, rng.choice(feasible))
