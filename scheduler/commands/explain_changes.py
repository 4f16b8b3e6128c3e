"""The changes ``pumice explain`` suggests, applied to a copy of the cluster's objects, and
verified.

A change is the JSON object the report lists (``{"kind": "request", …}``); ``apply_change``
makes it on a copy of the objects, exactly as a user would make it on the manifests, so that
the run that verifies a suggestion and the user's own ``pumice simulate`` see the same input.
A request or a toleration is changed on every pending pod of the target's *job* that it is
meant for (a pod's whole gang: ``explain_target.job_target``). Where Kubernetes allows no
overcommitment — extended resources such as ``nvidia.com/gpu``, and hugepages — a request
must equal its limit, so both are set (``overcommit_allowed``). ``describe_change`` is the
sentence for people.

Verifying a suggestion (``Verifier``) is the whole run again, on the objects with the change
made, exactly as ``pumice simulate`` runs it (``explain_core.run_cluster``: the same feed
through the cache handlers, the same sessions, every other pending job included, in the
session's own order, cycle after cycle). The change admits the job when that run places
every pod of the target that waits; the run stops as soon as it has. Anything less — one
session on the explaining run's settled cache, say — decides on a state the changed manifests
never produce (the other pending jobs already placed), and what it "verifies" may then fail
when the user applies it.

A run costs as much as the explaining run itself, so verification has a CPU budget
(``Verifier.budget``, in seconds of this thread's CPU): no run starts once it is spent, and
a candidate not run is not verified, so it is not listed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pumice.commands.explain_core import Pace, run_cluster
from pumice.commands.explain_target import (
    Target,
    _key,
    copy_objects,
    job_target,
    pod_order,
    target_pods,
)
from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.model import canonical_amount
from pumice.model.resource import format_amount
from pumice.plain import Obj

HOSTNAME = "kubernetes.io/hostname"


def overcommit_allowed(resource: str) -> bool:
    """May a request of ``resource`` be below its limit? Only for Kubernetes' own resources
    (no domain, or ``kubernetes.io/``), hugepages excepted, as the API server validates."""
    native = "/" not in resource or "kubernetes.io/" in resource
    return native and not resource.startswith("hugepages-")


def _amount(container: Obj, resource: str) -> float:
    """A container's request of ``resource`` (its limit when no request is given, as the API
    server defaults it)."""
    resources = (container.get("resources") or {}) if isinstance(container, dict) else {}
    for part in ("requests", "limits"):
        given = resources.get(part) or {}
        if resource in given:
            return canonical_amount(resource, given[resource])
    return 0.0


def pod_request(pod: Obj, resource: str) -> float:
    """The pod's request of ``resource`` over its containers, in canonical units."""
    return sum(_amount(c, resource) for c in (pod.get("spec") or {}).get("containers") or ())


def sharing_pods(objects: list[Obj], target: Target, pod_key: str, resource: str) -> list[Obj]:
    """The pending pods of the target's job whose request of ``resource`` equals that of
    ``pod_key``, first first (``pod_order``)."""
    job = job_target(objects, target)
    pods = [p for p in target_pods(objects, job) if not (p.get("spec") or {}).get("nodeName")]
    first = next((p for p in pods if _key(p) == pod_key), None)
    if first is None:
        return []
    amount = pod_request(first, resource)
    return sorted((p for p in pods if pod_request(p, resource) == amount), key=pod_order)


def _set_request(pod: Obj, resource: str, to: float) -> None:
    """Lower the pod's request of ``resource`` to ``to`` in all: its containers keep theirs
    in order while the total allows (a limit equal to it where no overcommitment is allowed,
    and never below it)."""
    left = to
    for container in (pod.get("spec") or {}).get("containers") or ():
        amount = _amount(container, resource)
        if not amount:
            continue
        new = min(amount, max(left, 0.0))
        left -= new
        resources = container.setdefault("resources", {})
        requests = resources.setdefault("requests", {})
        requests[resource] = format_amount(resource, new)
        limits = resources.get("limits") or {}
        if not overcommit_allowed(resource):
            resources["limits"] = {**limits, resource: format_amount(resource, new)}
        elif resource in limits and canonical_amount(resource, limits[resource]) < new:
            limits[resource] = format_amount(resource, new)


def apply_change(objects: list[Obj], change: Obj, target: Target) -> list[Obj]:
    """A copy of ``objects`` with ``change`` made: a new list in which the objects the change
    touches are copies, the others the same objects (a run never changes the objects it is
    given once ``api_defaults`` has filled them in, as the explaining run has; a deep copy of
    all 20,000 objects of the bench cluster took a tenth of a verifying run)."""
    out = list(objects)
    where = {id(obj): index for index, obj in enumerate(out)}

    def own(obj: Obj) -> Obj:
        """The copy of ``obj`` that takes its place in ``out``."""
        copy = copy_objects([obj])[0]
        out[where[id(obj)]] = copy
        return copy

    kind = change["kind"]
    if kind == "request":
        resource = change["resource"]
        to = canonical_amount(resource, change["to"])
        for pod in sharing_pods(objects, target, change["pod"], resource):
            _set_request(own(pod), resource, to)
    elif kind == "toleration":
        toleration: Obj = {"key": change["key"], "effect": change["effect"]}
        if change.get("value"):
            toleration.update(operator="Equal", value=change["value"])
        else:
            toleration["operator"] = "Exists"
        for pod in job_pods(objects, target):
            spec = own(pod).setdefault("spec", {})
            spec["tolerations"] = [*(spec.get("tolerations") or []), toleration]
    elif kind == "node-label":
        key, _, value = change["label"].partition("=")
        wanted = set(change["nodes"])
        for node in objects:
            if node.get("kind") == "Node" and node["metadata"]["name"] in wanted:
                own(node)["metadata"].setdefault("labels", {})[key] = value
    elif kind == "queue-capability":
        for queue in objects:
            if queue.get("kind") == "Queue" and queue["metadata"]["name"] == change["queue"]:
                spec = own(queue).setdefault("spec", {})
                spec["capability"] = {
                    **(spec.get("capability") or {}),
                    change["resource"]: change["to"],
                }
    elif kind == "evict":
        gone = set(change["pods"])
        out = [o for o in out if not (o.get("kind") == "Pod" and _key(o) in gone)]
    elif kind == "add-node":
        like = next(
            o for o in out if o.get("kind") == "Node" and o["metadata"]["name"] == change["like"]
        )
        taken = {o["metadata"]["name"] for o in out if o.get("kind") == "Node"}
        index = 0
        for _ in range(int(change["count"])):
            index += 1
            while f"{change['like']}-{index}" in taken:
                index += 1
            out.append(clone_node(like, f"{change['like']}-{index}"))
    else:
        raise AssertionError(f"unknown change kind {kind!r}")  # explain_search makes them all
    return out


def job_pods(objects: list[Obj], target: Target) -> list[Obj]:
    """The pending pods of the target's job (a pod's gang included): what a toleration is
    added to."""
    job = job_target(objects, target)
    return [p for p in target_pods(objects, job) if not (p.get("spec") or {}).get("nodeName")]


def clone_node(node: Obj, name: str) -> Obj:
    """A new node like ``node``: its labels (hostname changed), taints and allocatable."""
    new = copy_objects([node])[0]
    labels: dict[str, str] = dict((new.get("metadata") or {}).get("labels") or {})
    if HOSTNAME in labels:
        labels[HOSTNAME] = name
    new["metadata"] = {"name": name, "labels": labels}
    status = new.get("status") or {}
    new["status"] = {k: v for k, v in status.items() if k in ("allocatable", "capacity")}
    return new


def describe_change(change: Obj, sharing: int = 1) -> str:
    kind = change["kind"]
    if kind == "request":
        others = (
            f" (and of the {sharing - 1} other pod(s) with the same request)" if sharing > 1 else ""
        )
        resource = change["resource"]
        if overcommit_allowed(resource):
            what = f"the {resource} request of pod {change['pod']}"
            return f"lower {what} to {change['to']}{others}"
        what = f"the {resource} request and limit of pod {change['pod']}"
        equal = f" (Kubernetes requires them equal for {resource})"
        return f"lower {what} to {change['to']}{others}{equal}"
    if kind == "toleration":
        value = f"={change['value']}" if change.get("value") else ""
        pods = "the pod" if sharing == 1 else f"each of the job's {sharing} pending pods"
        return f"add the toleration {change['key']}{value}:{change['effect']} to {pods}"
    if kind == "node-label":
        nodes = ", ".join(change["nodes"])
        return f"label node(s) {nodes} with {change['label']}"
    if kind == "queue-capability":
        what = f"the {change['resource']} capability of queue {change['queue']}"
        return f"raise {what} to {change['to']}"
    if kind == "evict":
        return f"evict {len(change['pods'])} pod(s): {', '.join(change['pods'])}"
    if kind == "add-node":
        return f"add {change['count']} node(s) like {change['like']}"
    raise AssertionError(f"unknown change kind {kind!r}")  # explain_search makes them all


MIN_BUDGET = 2.0
"""Seconds of CPU verification may always take (small clusters never come near it)."""


class Verifier:
    """Runs candidate changes of ``objects`` and says which admit the target."""

    def __init__(
        self,
        objects: list[Obj],
        target: Target,
        config: SchedulerConfig,
        host: PluginHost,
        scheduler_name: str,
        *,
        budget: float = MIN_BUDGET,
        pace: Pace | None = None,
        tidy: Callable[[], object] | None = None,
    ) -> None:
        self.objects = objects
        self.target = target
        self.config = config
        self.host = host
        self.scheduler_name = scheduler_name
        self.budget = budget
        self.pace = pace
        self.tidy = tidy
        """Called before each run but the first: the command frees the garbage of the runs
        before it there (its collector is paused), and so never pays for the last run's
        (0.2 s on the bench cluster) nor for the explaining run's when one run verifies."""
        self.runs = 0
        self.spent = 0.0
        """Seconds of this thread's CPU the runs took."""

    def admits(self, change: Obj) -> bool:
        """Does the run of the changed objects place every waiting pod of the target?"""
        if self.spent >= self.budget:
            return False
        started = time.thread_time()
        try:
            if self.runs and self.tidy is not None:
                self.tidy()
            self.runs += 1
            changed = apply_change(self.objects, change, self.target)
            result = run_cluster(
                changed,
                self.target,
                self.config,
                self.host,
                self.scheduler_name,
                detail=False,
                until_placed=True,
                pace=self.pace,
            )
        finally:
            self.spent += time.thread_time() - started
        return result.exists and not result.pending and bool(result.placed)
