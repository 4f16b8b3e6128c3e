"""The cluster that ``pumice simulate`` replays: Kubernetes objects as plain dicts.

The dicts are the source of truth. Every cycle builds a fresh ``ClusterSnapshot`` from them: a
clone of the nodes (``NodeInfo.from_node``, once) with the queues, jobs and tasks put in
(``QueueInfo.from_queue``, ``JobInfo.from_podgroup``, ``TaskInfo.from_pod``, each pod parsed
once); the cycle's decisions are written back into the dicts: a bound pod gets
``spec.nodeName`` and turns Running, an evicted pod disappears, a nominated pod gets
``status.nominatedNodeName``, PodGroups get their phase, and Queues the ``status.reservation``
the node-reservation plugin decided (so its locks last from cycle to cycle, as in a cluster).
Every snapshot is taken at the simulated ``clock``.

Which pods take part:

* pods with our scheduler name and no ``nodeName`` are pending (tasks to schedule), except
  pods with ``schedulingGates`` and pods being deleted, which are left out;
* assigned pods that have not terminated count on their nodes, whatever their scheduler; those
  of our scheduler also belong to their jobs (gang counts, queue shares), the others hold node
  resources only, as in Volcano's cache;
* Namespaces give their labels to the snapshot (``ClusterSnapshot.namespaces``), for pod
  affinity's ``namespaceSelector``;
* PriorityClasses give pods without ``spec.priority`` and PodGroups their priority (the
  ``globalDefault`` class when none is named), and a container's requests default to its
  limits, as the API server's defaulting does;
* a pod without the ``scheduling.k8s.io/group-name`` annotation is a job of its own in the
  default queue; a pod naming a PodGroup that is not in the input stays pending with a reason;
* a pending pod carrying a constraint pumice does not evaluate (``pumice.model.unevaluated``:
  ``spec.resourceClaims``, claim volumes) stays pending with the refusal as its reason.

Input errors are ``ManifestError`` with one line ``FILE: Kind ns/name: field.path: what``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice.cache.namespaces import NamespaceStore
from pumice.manifests import ManifestError, load_manifests
from pumice.model import (
    ClusterSnapshot,
    JobInfo,
    NodeInfo,
    QuantityError,
    QueueInfo,
    TaskInfo,
    parse_quantity,
)
from pumice.model.objects import GROUP_NAME_ANNOTATION
from pumice.model.status import status_of_pod
from pumice.model.unevaluated import refusal

Obj = dict[str, Any]

USED_KINDS = ("Node", "Pod", "PodGroup", "Queue", "PriorityClass", "Namespace")
TERMINAL = ("Succeeded", "Failed")


class InputError(ManifestError):
    """An object of the input that cannot be used: ``FILE: Kind ns/name: field: what``."""

    def __init__(self, source: str, obj: Mapping[str, Any], path: str, message: str) -> None:
        self.object_name = describe(obj)
        self.path = path
        super().__init__(source, f"{self.object_name}: {path}: {message}")

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


def describe(obj: Mapping[str, Any]) -> str:
    """``Pod default/small-1`` or ``Node n1``."""
    meta = obj.get("metadata") or {}
    name = meta.get("name", "?")
    namespace = meta.get("namespace")
    kind = obj.get("kind", "?")
    if kind in ("Pod", "PodGroup"):
        return f"{kind} {namespace or 'default'}/{name}"
    return f"{kind} {name}"


def key_of(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` of a namespaced object."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _resource_lists(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every resource list of an object that holds quantities, with its field path."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        for group in ("containers", "initContainers"):
            for i, container in enumerate(spec.get(group) or ()):
                resources = (container or {}).get("resources") or {}
                for part in ("requests", "limits"):
                    yield f"spec.{group}[{i}].resources.{part}", resources.get(part)
        yield "spec.overhead", spec.get("overhead")
        yield "spec.resources.requests", (spec.get("resources") or {}).get("requests")
    elif kind == "Node":
        status = obj.get("status") or {}
        yield "status.allocatable", status.get("allocatable")
        yield "status.capacity", status.get("capacity")
    elif kind == "PodGroup":
        yield "spec.minResources", spec.get("minResources")
    elif kind == "Queue":
        yield "spec.capability", spec.get("capability")
        yield "spec.deserved", spec.get("deserved")
        yield "spec.guarantee.resource", (spec.get("guarantee") or {}).get("resource")


def check_object(source: str, obj: Obj) -> None:
    """Raise ``InputError`` for the first malformed quantity or priority value."""
    for path, resources in _resource_lists(obj):
        if resources is None:
            continue
        if not isinstance(resources, dict):
            raise InputError(source, obj, path, "must be a mapping of resource to quantity")
        for name, quantity in resources.items():
            if quantity is None:
                continue
            try:
                amount = parse_quantity(quantity)
            except QuantityError as exc:
                raise InputError(source, obj, f"{path}.{name}", str(exc)) from None
            if amount < 0:
                raise InputError(source, obj, f"{path}.{name}", f"negative quantity {quantity!r}")
    if obj.get("kind") == "PriorityClass" and not _is_int(obj.get("value")):
        raise InputError(source, obj, "value", "must be an integer")
    if obj.get("kind") == "Pod":
        priority = (obj.get("spec") or {}).get("priority")
        if priority is not None and not _is_int(priority):
            raise InputError(source, obj, "spec.priority", "must be an integer")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class ClusterState:
    """The replayed cluster (plain dicts) and how to turn it into a snapshot."""

    scheduler_name: str
    default_queue: str = "default"
    nodes: dict[str, Obj] = field(default_factory=dict)
    pods: dict[str, Obj] = field(default_factory=dict)
    podgroups: dict[str, Obj] = field(default_factory=dict)
    queues: dict[str, Obj] = field(default_factory=dict)
    priority_classes: dict[str, int] = field(default_factory=dict)
    namespaces: dict[str, Obj] = field(default_factory=dict)
    """Namespace objects by name: their labels reach the snapshot through the cache's own
    handler (``NamespaceStore``); one that pods name but that is not here exists with only
    the ``kubernetes.io/metadata.name`` label (``ClusterSnapshot.namespace_labels``)."""
    default_priority: int | None = None
    notes: list[str] = field(default_factory=list)
    clock: float = field(default_factory=time.time)
    """The simulated time: every snapshot is taken at it (``ClusterSnapshot.taken_at``), and
    ``pumice simulate`` moves it on by the configured ``period`` each cycle."""
    _nodes_only: ClusterSnapshot | None = field(default=None, repr=False)
    """The nodes without any task, built once; every cycle starts from a clone of it."""
    _tasks: dict[str, TaskInfo] = field(default_factory=dict, repr=False)
    """Pod key -> the task first built from it; later cycles copy it with the pod's current
    status and node, so a pod's requests and terms are parsed once, not every cycle."""

    # -- loading ----------------------------------------------------------------------------

    @classmethod
    def load(
        cls, paths: list[str], scheduler_name: str, default_queue: str = "default"
    ) -> ClusterState:
        """Read every file; raise ``ManifestError`` (``InputError``) on bad input."""
        state = cls(scheduler_name, default_queue)
        for path in paths:
            source = str(Path(path))
            skipped: dict[str, int] = {}
            for obj in load_manifests(path).objects:
                kind = str(obj["kind"])
                if kind not in USED_KINDS:
                    skipped[kind] = skipped.get(kind, 0) + 1
                    continue
                check_object(source, obj)
                state._add(obj)
            for kind, count in sorted(skipped.items()):
                state.notes.append(f"{source}: skipped {count} {kind} object(s): not simulated")
        state._resolve_priorities()
        return state

    def _add(self, obj: Obj) -> None:
        kind = obj["kind"]
        meta = obj["metadata"]
        if kind == "Node":
            self.nodes[meta["name"]] = obj
        elif kind == "Pod":
            self.pods[key_of(obj)] = obj
        elif kind == "PodGroup":
            self.podgroups[key_of(obj)] = obj
        elif kind == "Queue":
            self.queues[meta["name"]] = obj
        elif kind == "Namespace":
            self.namespaces[meta["name"]] = obj
        elif kind == "PriorityClass":
            self.priority_classes[meta["name"]] = int(obj["value"])
            if obj.get("globalDefault"):
                self.default_priority = int(obj["value"])

    def priority_of(self, class_name: str | None) -> int | None:
        """The value of a PriorityClass (the global default when None); None if unknown."""
        if class_name:
            return self.priority_classes.get(class_name)
        return self.default_priority

    def _resolve_priorities(self) -> None:
        """Fill in what the API server's defaulting would have: a container's requests
        default to its limits, and a pod's priority comes from its PriorityClass."""
        for pod in self.pods.values():
            spec = pod.setdefault("spec", {})
            for group in ("containers", "initContainers"):
                for container in spec.get(group) or ():
                    resources = (container or {}).get("resources") or {}
                    limits = resources.get("limits") or {}
                    if limits:
                        requests = resources.setdefault("requests", {}) or {}
                        resources["requests"] = {**limits, **requests}
            if spec.get("priority") is None:
                value = self.priority_of(spec.get("priorityClassName"))
                if value is not None:
                    spec["priority"] = value

    # -- which pods -------------------------------------------------------------------------

    def is_ours(self, pod: Mapping[str, Any]) -> bool:
        return (pod.get("spec") or {}).get("schedulerName") == self.scheduler_name

    def is_pending(self, pod: Mapping[str, Any]) -> bool:
        """Ours, without a node, not gated, not being deleted, not terminated."""
        spec = pod.get("spec") or {}
        if not self.is_ours(pod) or spec.get("nodeName") or spec.get("schedulingGates"):
            return False
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            return False
        return (pod.get("status") or {}).get("phase") not in TERMINAL

    @staticmethod
    def is_placed(pod: Mapping[str, Any]) -> bool:
        """Assigned to a node and not terminated: it holds node resources."""
        phase = (pod.get("status") or {}).get("phase")
        return bool((pod.get("spec") or {}).get("nodeName")) and phase not in TERMINAL

    def pending_pods(self) -> list[str]:
        return [key for key, pod in self.pods.items() if self.is_pending(pod)]

    @staticmethod
    def group_of(pod: Mapping[str, Any]) -> str | None:
        """``ns/podgroup`` named by the pod's group annotation, or None."""
        meta = pod.get("metadata") or {}
        group = (meta.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
        return f"{meta.get('namespace') or 'default'}/{group}" if group else None

    # -- one cycle's snapshot ---------------------------------------------------------------

    def snapshot(self) -> tuple[ClusterSnapshot, dict[str, str]]:
        """A fresh snapshot of the dicts, and the pending pods left out of it with why."""
        jobs: dict[str, JobInfo] = {}
        for key, pg in self.podgroups.items():
            spec = pg.get("spec") or {}
            priority = self.priority_of(spec.get("priorityClassName")) or 0
            job = JobInfo.from_podgroup(pg, priority=priority)
            if spec.get("queue") is None:
                job.queue = self.default_queue
            jobs[key] = job
        foreign: list[TaskInfo] = []
        left_out: dict[str, str] = {}
        for key, pod in self.pods.items():
            pending = self.is_pending(pod)
            if not pending and not self.is_placed(pod):
                continue
            if pending and (refused := refusal(pod)) is not None:
                left_out[key] = refused  # refuse, never violate
                continue
            task = self._task(key, pod)
            if not self.is_ours(pod):
                foreign.append(task)
                continue
            group = self.group_of(pod)
            if group is None:
                lone = JobInfo.for_lone_pod(task, queue=self.default_queue)
                lone.phase = "Pending" if pending else "Running"
                jobs[lone.uid] = lone
                continue
            owner = jobs.get(group)
            if owner is None:
                if pending:
                    left_out[key] = f"podgroup {group} not found"
                else:
                    foreign.append(task)
                continue
            owner.add_task(task)
        queues = [QueueInfo.from_queue(q) for q in self.queues.values()]
        if self.default_queue not in self.queues:
            queues.append(QueueInfo(self.default_queue))
        if self._nodes_only is None:  # nodes never change in a simulation: build them once
            nodes = [NodeInfo.from_node(n) for n in self.nodes.values()]
            self._nodes_only = ClusterSnapshot.build(nodes=nodes)
        snap = self._nodes_only.clone()
        snap.taken_at = self.clock
        namespaces = NamespaceStore(snap.namespaces)
        for namespace in self.namespaces.values():
            namespaces.upsert(namespace)
        for q in queues:
            snap.put_queue(q)
        for job in jobs.values():
            snap.put_job(job)
        for task in foreign:  # held on their nodes, part of no job
            node = snap.nodes.get(task.node_name or "")
            if node is not None:
                node.add_task(task)
        return snap, left_out

    def _task(self, key: str, pod: Obj) -> TaskInfo:
        template = self._tasks.get(key)
        if template is None:
            template = self._tasks[key] = TaskInfo.from_pod(pod)
            _ = template.shape  # computed once here, inherited by every cycle's copy
        task = copy.copy(template)  # keeps the parsed request and the cached terms and shape
        task.status = status_of_pod(pod)
        task.node_name = (pod.get("spec") or {}).get("nodeName") or None
        return task

    # -- applying decisions -----------------------------------------------------------------

    def bind(self, pod_key: str, node: str) -> None:
        pod = self.pods[pod_key]
        pod.setdefault("spec", {})["nodeName"] = node
        status = pod.setdefault("status", {})
        status["phase"] = "Running"
        status.pop("nominatedNodeName", None)

    def evict(self, pod_key: str) -> None:
        self.pods.pop(pod_key, None)
        self._tasks.pop(pod_key, None)

    def nominate(self, pod_key: str, node: str) -> None:
        pod = self.pods.get(pod_key)
        if pod is not None:
            pod.setdefault("status", {})["nominatedNodeName"] = node

    def set_reservation(self, queue: str, reservation: Mapping[str, Any] | None) -> None:
        """Write (None: remove) a Queue's ``status.reservation``, as the daemon would."""
        obj = self.queues.get(queue)
        if obj is None:
            return
        status = obj.setdefault("status", {})
        if reservation is None:
            status.pop("reservation", None)
        else:
            status["reservation"] = dict(reservation)

    def update_podgroup_phases(self, session_phases: Mapping[str, str]) -> dict[str, str]:
        """Write every PodGroup's phase as Volcano computes it at session close: Running
        (Completed when all are done) once ``minMember`` of its pods are scheduled; else
        Inqueue if the session admitted it; else Pending. Returns podgroup -> phase."""
        members: dict[str, list[Obj]] = {}
        for pod in self.pods.values():
            group = self.group_of(pod)
            if group is not None:
                members.setdefault(group, []).append(pod)
        phases: dict[str, str] = {}
        for key, pg in self.podgroups.items():
            minimum = int((pg.get("spec") or {}).get("minMember") or 0)
            scheduled = [p for p in members.get(key, ()) if (p.get("spec") or {}).get("nodeName")]
            status = pg.setdefault("status", {})
            phase = session_phases.get(key) or status.get("phase") or "Pending"
            if scheduled and len(scheduled) >= minimum:
                done = all((p.get("status") or {}).get("phase") in TERMINAL for p in scheduled)
                phase = "Completed" if done else "Running"
            elif phase != "Inqueue":
                phase = "Pending"
            status["phase"] = phase
            phases[key] = phase
        return phases
