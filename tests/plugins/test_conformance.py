"""The conformance plugin: system namespaces and critical pods are never victims."""

from __future__ import annotations

from typing import Any

import pytest

from pumice import TaskInfo, TaskStatus
from support.builders import make_plugin
from support.nodes import container, pod
from support.tier1 import job, names, running, session, snapshot, task


def pod_with_class(name: str, namespace: str, priority_class: str | None) -> dict[str, Any]:
    manifest = pod(name, containers=[container("500m", "256Mi")], node_name="n0", phase="Running")
    manifest["metadata"]["namespace"] = namespace
    if priority_class is not None:
        manifest["spec"]["priorityClassName"] = priority_class
    return manifest


def from_pod(name: str, namespace: str = "default", priority_class: str | None = None) -> TaskInfo:
    t = TaskInfo.from_pod(pod_with_class(name, namespace, priority_class))
    assert t.status == TaskStatus.RUNNING
    return t


@pytest.fixture
def candidates() -> list[TaskInfo]:
    return [
        from_pod("plain"),
        from_pod("system", namespace="kube-system"),
        from_pod("cluster-critical", priority_class="system-cluster-critical"),
        from_pod("node-critical", priority_class="system-node-critical"),
        from_pod("high", priority_class="high-priority"),
        running("bare", namespace="team-a"),  # no pod: the namespace rule alone
        running("bare-system", namespace="kube-system"),
    ]


@pytest.mark.parametrize("hook", ["preemptable", "reclaimable"])
def test_protected_candidates_are_dropped_in_order(hook: str, candidates: list[TaskInfo]) -> None:
    snap = snapshot(("n0", 64000, 64 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor)
    for c in candidates:
        job(snap, f"job-{c.name}", c, namespace=c.namespace)
    ssn = session(snap, ["conformance"])
    assert names(getattr(ssn, hook)(preemptor, candidates)) == ["plain", "high", "bare"]


@pytest.mark.parametrize("hook", ["preemptable", "reclaimable"])
def test_protections_hold_whatever_a_later_tier_answers(hook: str) -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor)
    system = running("dns", namespace="kube-system")
    job(snap, "dns", system, namespace="kube-system")
    user = running("web")
    job(snap, "web", user)
    if hook == "preemptable":
        everyone = make_plugin("All", preemptable=lambda self, preemptor, candidates: candidates)
    else:
        everyone = make_plugin("All", reclaimable=lambda self, reclaimer, candidates: candidates)
    # Volcano lets tier 2 decide when tier 1 answers nothing; pumice applies the protection
    # first, so the later tier never sees the kube-system pod.
    later = session(snap, ["conformance"], ["all"], extra={"all": everyone})
    assert getattr(later, hook)(preemptor, [system]) == []
    assert names(getattr(later, hook)(preemptor, [system, user])) == ["web"]
    # the same when the protecting plugin sits in a later tier than the permissive one
    first = session(snap, ["all"], ["conformance"], extra={"all": everyone})
    assert names(getattr(first, hook)(preemptor, [system, user])) == ["web"]


def test_conformance_narrows_another_plugins_victims_in_its_tier() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor)
    system = running("dns", namespace="kube-system")
    user = running("web")
    job(snap, "dns", system, namespace="kube-system")
    job(snap, "web", user)
    everyone = make_plugin("All", reclaimable=lambda self, reclaimer, candidates: list(candidates))
    ssn = session(snap, ["all", "conformance"], extra={"all": everyone})
    assert names(ssn.reclaimable(preemptor, [system, user])) == ["web"]


def test_flags_switch_each_kind_off() -> None:
    snap = snapshot(("n0", 8000, 16 * 2**30))
    preemptor = task("p")
    job(snap, "me", preemptor)
    user = running("web")
    job(snap, "web", user)
    ssn = session(snap, [{"name": "conformance", "enableReclaimable": False}])
    assert names(ssn.preemptable(preemptor, [user])) == ["web"]
    assert ssn.reclaimable(preemptor, [user]) == []
