"""What ``pumice explain`` is asked about, read from the input objects before any session.

The *target* is a pod or a PodGroup (``Target``); its *job* is what the scheduler admits as
one: a PodGroup's pods, and for a pod that names an existing PodGroup, that PodGroup's pods too
(``job_target``) — a gang member is placed with its gang or not at all, so a change meant to
admit it (a request, a toleration) is made on every pod of the gang, and the room it needs is
the whole gang's.

Each pod of the target falls in one of these classes (``classify``), which the run then
completes with its own verdicts (placed, or left pending with a reason): *finished* (phase
Succeeded or Failed), *bound* (``spec.nodeName`` set), *foreign* (another scheduler's pod,
not bound: pumice never schedules it), *gated* (``spec.schedulingGates``: no scheduler may
place it until they are gone), or *ours* (pumice's to place).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from pumice.model.tasks import pod_name_index
from pumice.plain import Obj

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Target:
    kind: str  # "Pod" or "PodGroup"
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def copy_objects(objects: list[Obj]) -> list[Obj]:
    return list(orjson.loads(orjson.dumps(objects)))


def pod_order(pod: Obj) -> tuple[tuple[int, int], str]:
    """The order in which a job's pods are named "first": Volcano's numeric pod-name index
    (``job-w-2`` before ``job-w-10``), then the name."""
    name = str((pod.get("metadata") or {}).get("name") or "")
    return pod_name_index(name), name


def target_pods(objects: list[Obj], target: Target) -> list[Obj]:
    """The target's pods among ``objects`` (a pod alone, or a PodGroup's members)."""
    pods = [o for o in objects if o.get("kind") == "Pod"]
    if target.kind == "Pod":
        return [p for p in pods if _key(p) == target.key]
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("namespace") or "default") != target.namespace:
            continue
        if (meta.get("annotations") or {}).get(GROUP_ANNOTATION) == target.name:
            out.append(pod)
    return out


def target_exists(objects: list[Obj], target: Target) -> bool:
    if target.kind == "Pod":
        return bool(target_pods(objects, target))
    return any(o.get("kind") == "PodGroup" and _key(o) == target.key for o in objects)


def job_target(objects: list[Obj], target: Target) -> Target:
    """The PodGroup a pod target belongs to (when that PodGroup exists), else the target."""
    if target.kind != "Pod":
        return target
    for pod in target_pods(objects, target):
        group = ((pod.get("metadata") or {}).get("annotations") or {}).get(GROUP_ANNOTATION)
        if group:
            podgroup = Target("PodGroup", target.namespace, str(group))
            if target_exists(objects, podgroup):
                return podgroup
    return target


def queue_name(objects: list[Obj], target: Target, default_queue: str) -> str:
    """The queue the target's job is in, as the input says (when no session saw it)."""
    job = job_target(objects, target)
    if job.kind == "PodGroup":
        for group in objects:
            if group.get("kind") == "PodGroup" and _key(group) == job.key:
                return str((group.get("spec") or {}).get("queue") or default_queue)
    return default_queue


@dataclass
class TargetPods:
    """The target's pods by what the input already decides about them."""

    ours: list[str] = field(default_factory=list)
    """Pods pumice is to place (the run says whether it does)."""
    bound: dict[str, str] = field(default_factory=dict)
    finished: list[str] = field(default_factory=list)
    held: list[tuple[str, str]] = field(default_factory=list)
    """(pod, why) of pods no scheduler session will ever see: gated or another scheduler's."""


def classify(objects: list[Obj], target: Target, scheduler_name: str) -> TargetPods:
    out = TargetPods()
    for pod in target_pods(objects, target):
        key = _key(pod)
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        if phase in TERMINAL:
            out.finished.append(key)
        elif spec.get("nodeName"):
            out.bound[key] = str(spec["nodeName"])
        elif (spec.get("schedulerName") or "default-scheduler") != scheduler_name:
            scheduler = spec.get("schedulerName") or "default-scheduler"
            why = f"pod {key} is for scheduler {scheduler!r}, not {scheduler_name!r}"
            out.held.append((key, why))
        elif spec.get("schedulingGates"):
            gates = ", ".join(
                str((gate or {}).get("name")) for gate in spec["schedulingGates"] if gate
            )
            out.held.append((key, f"pod {key} waits for its scheduling gates: {gates}"))
        else:
            out.ours.append(key)
    return out


def empty_podgroup(objects: list[Obj], target: Target) -> str:
    """Why a PodGroup without pods is pending ("" when it has pods or is no PodGroup)."""
    if target.kind != "PodGroup" or target_pods(objects, target):
        return ""
    minimum = 1
    for group in objects:
        if group.get("kind") == "PodGroup" and _key(group) == target.key:
            minimum = (group.get("spec") or {}).get("minMember") or minimum
    return f"podgroup {target.key} has no pods (minMember {minimum})"
