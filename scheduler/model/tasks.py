"""Tasks: the scheduler's view of pods, one unit of scheduling each, and their statuses.

A ``TaskInfo`` is built from a plain-dict Pod (``from_pod``) or directly in code; what is
computed from its pod object (terms, links, non-zero request, shape) is computed once per pod
object. The helpers here read what Volcano reads off a pod: its group, priority, role,
preemptability and name index. Jobs and queues, which own tasks, are ``pumice.model.objects``.

**Statuses** (``TaskStatus``), as Volcano has them, and the groups the scheduler reasons about.
Statuses are bit flags so that a group test is one ``&``: ``status & ALLOCATED_STATUSES``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from pumice.model.podterms import PodLinks, pod_links
from pumice.model.requests import non_zero_request, pod_requests
from pumice.model.resource import Resource
from pumice.model.terms import PodTerms, TaskShape, pod_terms
from pumice.plain import reads_object


class TaskStatus(enum.IntFlag):
    """Where a task (pod) stands, from the scheduler's point of view."""

    PENDING = 1
    """Waiting for a node."""
    ALLOCATED = 2
    """Given a node in this session; not yet committed."""
    PIPELINED = 4
    """Promised a node that will be free once releasing tasks are gone."""
    BINDING = 8
    """Committed; the bind request is on its way to the API server."""
    BOUND = 16
    """Bound to a node; not running yet."""
    RUNNING = 32
    RELEASING = 64
    """Being deleted or evicted; its resources come back when it is gone."""
    SUCCEEDED = 128
    FAILED = 256
    UNKNOWN = 512


ALLOCATED_STATUSES = (
    TaskStatus.ALLOCATED | TaskStatus.BINDING | TaskStatus.BOUND | TaskStatus.RUNNING
)
"""Statuses whose requests count against the job's and the queue's allocation."""

PREEMPTABLE_STATUSES = TaskStatus.BOUND | TaskStatus.RUNNING
COMPLETED_STATUSES = TaskStatus.SUCCEEDED | TaskStatus.FAILED
SCHEDULED_STATUSES = (
    TaskStatus.RUNNING | TaskStatus.BOUND | TaskStatus.SUCCEEDED | TaskStatus.FAILED
)
READY_STATUSES = ALLOCATED_STATUSES | TaskStatus.SUCCEEDED
"""Statuses counted as ready for gang readiness (Volcano's ReadyTaskNum)."""
VALID_STATUSES = (
    ALLOCATED_STATUSES | TaskStatus.SUCCEEDED | TaskStatus.PIPELINED | TaskStatus.PENDING
)


def status_of_pod(pod: Mapping[str, Any]) -> TaskStatus:
    """The task status of a plain-dict pod, following Volcano's mapping of pod phases.

    Running is Releasing when the pod is being deleted; Pending is Releasing when deleted,
    Pending when it has no node, else Bound.
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    deleting = meta.get("deletionTimestamp") is not None
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if spec.get("nodeName") else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
PREEMPTABLE_KEY = "volcano.sh/preemptable"

_new_object = object.__new__
_NO_LABELS: Mapping[str, str] = MappingProxyType({})
_ONLY_TEXT = {str}


class _Derived:
    """What is computed from one pod object and request (see ``TaskInfo._derived``). Filling
    it from a session thread while the cache's thread holds the same task is safe: the values
    are functions of ``pod`` and ``resreq`` alone, and a task whose pod is replaced gets a new
    holder."""

    __slots__ = ("labels", "links", "nonzero", "pod", "resreq", "shape", "terms")

    def __init__(self, pod: Mapping[str, Any] | None, resreq: Resource) -> None:
        self.pod = pod
        self.resreq = resreq
        self.terms: PodTerms | None = None
        self.nonzero: Resource | None = None
        self.shape: TaskShape | None = None
        self.links: PodLinks | None = None
        self.labels: Mapping[str, str] | None = None


def parse_timestamp(value: str | None) -> float:
    """Seconds since the epoch for a Kubernetes RFC 3339 timestamp; 0.0 when absent."""
    if not value:
        return 0.0
    seconds = _timestamps.get(value)
    if seconds is None:
        if len(_timestamps) >= 4096:
            _timestamps.clear()
        seconds = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        _timestamps[value] = seconds
    return seconds


_timestamps: dict[str, float] = {}
"""Timestamps already read: pods made together share their creation second."""


def lone_pod_job(namespace: str, pod_uid: str) -> str:
    """The job id of a pod without a PodGroup: ``ns/podgroup-<pod uid>``, never a name a
    PodGroup could have, so a lone pod never joins a gang that happens to share its name."""
    return f"{namespace}/podgroup-{pod_uid}"


def pod_priority(pod: Mapping[str, Any]) -> int:
    """A pod's priority as a task has it: ``spec.priority`` (1 without one), unless Volcano's
    ``volcano.sh/task-priority`` label or annotation gives another."""
    meta: Mapping[str, Any] = pod.get("metadata") or _NO_LABELS
    return _priority(
        pod.get("spec") or _NO_LABELS,
        meta.get("annotations") or _NO_LABELS,
        meta.get("labels") or _NO_LABELS,
    )


def _priority(
    spec: Mapping[str, Any], annotations: Mapping[str, Any], labels: Mapping[str, Any]
) -> int:
    raw = spec.get("priority")
    priority = 1 if raw is None else int(raw)
    override = _label_or_annotation(annotations, labels, TASK_PRIORITY_ANNOTATION)
    if override is not None and override.lstrip("-").isdigit():
        priority = int(override)
    return priority


def _label_or_annotation(
    annotations: Mapping[str, Any], labels: Mapping[str, Any], key: str
) -> str | None:
    """The annotation ``key``, else the label (the annotation wins when both are there)."""
    value = annotations.get(key, _ABSENT)
    if value is _ABSENT:
        value = labels.get(key)
    return None if value is None else str(value)


_ABSENT = object()


@dataclass(slots=True, eq=False)
class TaskInfo:
    """One pod as a unit of scheduling.

    ``resreq`` is the pod's request as Kubernetes computes it (containers, init containers,
    sidecars, overhead), in canonical units. ``job`` is the uid of the job the task belongs to.

    Computed on first use and kept until ``pod`` or ``resreq`` is replaced: ``terms`` (the
    pod's scheduling constraints, ``pumice.model.terms.PodTerms``), ``nonzero_request`` (the
    request scoring uses: containers without a cpu / memory request count the defaults of
    ``pumice.model.requests``) and ``shape`` (a hashable ``TaskShape``: tasks of equal shape
    get the same predicate masks and scores from the built-in plugins).
    """

    uid: str
    name: str
    namespace: str = "default"
    job: str = ""
    resreq: Resource = field(default_factory=Resource.zero)
    init_resreq: Resource | None = None
    role: str = ""
    priority: int = 1
    preemptable: bool = True
    status: TaskStatus = TaskStatus.PENDING
    node_name: str | None = None
    creation_timestamp: float = 0.0
    pod: Mapping[str, Any] | None = None
    _derived: _Derived | None = field(default=None, init=False, repr=False)
    """terms, nonzero_request and shape, made from ``pod`` and ``resreq`` on first use; the
    holder is shared with the task's copies (a session's), so what one of them works out
    stays with the pod object for every later session."""

    def __post_init__(self) -> None:
        if self.init_resreq is None:
            self.init_resreq = self.resreq
        self._derived = _Derived(self.pod, self.resreq)

    def _fresh(self) -> _Derived:
        """The derived attributes' holder, new if ``pod`` or ``resreq`` was replaced."""
        derived = self._derived
        if derived is None or derived.pod is not self.pod or derived.resreq is not self.resreq:
            derived = self._derived = _Derived(self.pod, self.resreq)
        return derived

    @property
    def terms(self) -> PodTerms:
        """The pod's scheduling terms in canonical form (none for a task without a pod)."""
        derived = self._fresh()
        terms = derived.terms
        if terms is None:
            terms = derived.terms = pod_terms(self.pod)
        return terms

    @property
    def links(self) -> PodLinks:
        """The pod's pod-to-pod constraints in canonical form (``pumice.model.podterms``)."""
        derived = self._fresh()
        links = derived.links
        if links is None:
            links = derived.links = pod_links(self.pod)
        return links

    @property
    def labels(self) -> Mapping[str, str]:
        """The pod's labels (values as strings; empty without a pod)."""
        derived = self._fresh()
        labels = derived.labels
        if labels is None:
            meta = (self.pod or {}).get("metadata") or {}
            raw = meta.get("labels") or _NO_LABELS
            # (the types of keys and values gathered in C: this runs for every pod at start-up)
            if not raw or {*map(type, raw), *map(type, raw.values())} == _ONLY_TEXT:
                labels = derived.labels = raw  # as the API server sends them: no copy
            else:
                labels = derived.labels = {str(k): str(v) for k, v in raw.items()}
        return labels

    @property
    def nonzero_request(self) -> Resource:
        """The request for scoring: per container, an omitted cpu / memory request counts as
        the default; without a pod (or with a pod whose requests do not parse) the task's
        request with the defaults where it has no cpu / memory."""
        derived = self._fresh()
        nonzero = derived.nonzero
        if nonzero is None:
            nonzero = derived.nonzero = non_zero_request(self.pod, self.resreq)
        return nonzero

    @property
    def shape(self) -> TaskShape:
        """What the built-in plugins read of this task to filter and score nodes."""
        derived = self._fresh()
        shape = derived.shape
        if shape is None:
            shape = derived.shape = TaskShape.of(self.resreq, self.nonzero_request, self.terms)
        return shape

    def copy(self) -> TaskInfo:
        """A shallow copy, as ``copy.copy`` makes (sharing the derived holder), written out:
        sessions copy every task of each job they change, and the generic protocol costs
        ten times more. tests/model/test_objects.py checks that every slot is copied."""
        other: TaskInfo = _new_object(TaskInfo)
        other.uid = self.uid
        other.name = self.name
        other.namespace = self.namespace
        other.job = self.job
        other.resreq = self.resreq
        other.init_resreq = self.init_resreq
        other.role = self.role
        other.priority = self.priority
        other.preemptable = self.preemptable
        other.status = self.status
        other.node_name = self.node_name
        other.creation_timestamp = self.creation_timestamp
        other.pod = self.pod
        other._derived = self._derived
        return other

    def placed_as(self, pod: Mapping[str, Any]) -> TaskInfo:
        """A copy for ``pod``, a newer object of the same pod that differs from this task's
        only in its node, status and resourceVersion (the caller checked the rest: see
        ``pumice.cache.pods.same_but_placement``): status and node are read from ``pod``;
        the request, terms, links and labels worked out so far carry over, since they are
        functions of what did not change. This is how a pod moves from pending to bound
        without being parsed again."""
        other = self.copy()
        other.pod = pod
        other.status = status_of_pod(pod)
        other.node_name = (pod.get("spec") or {}).get("nodeName") or None
        old = self._derived
        if old is None or old.pod is not self.pod or old.resreq is not self.resreq:
            other._derived = _Derived(pod, self.resreq)
        elif old.pod is not pod:
            carried = other._derived = _Derived(pod, self.resreq)
            carried.terms, carried.nonzero, carried.shape = old.terms, old.nonzero, old.shape
            carried.links, carried.labels = old.links, old.labels
        return other

    @property
    def key(self) -> str:
        """``namespace/name``, as Kubernetes names a pod."""
        return f"{self.namespace}/{self.name}"

    @property
    def best_effort(self) -> bool:
        """True when the pod requests nothing."""
        return self.resreq.is_empty()

    @classmethod
    @reads_object
    def from_pod(cls, pod: Mapping[str, Any]) -> TaskInfo:
        """Build a task from a plain-dict pod. A pod without a group is a job of its own."""
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        namespace = meta.get("namespace") or "default"
        name = meta["name"]
        annotations = meta.get("annotations") or _NO_LABELS
        labels = meta.get("labels") or _NO_LABELS
        group = annotations.get(GROUP_NAME_ANNOTATION)
        if annotations or labels:
            priority = _priority(spec, annotations, labels)
            preemptable_value = _label_or_annotation(annotations, labels, PREEMPTABLE_KEY)
            role = _label_or_annotation(annotations, labels, TASK_SPEC_KEY) or ""
        else:  # nothing to look up
            raw_priority = spec.get("priority")
            priority = 1 if raw_priority is None else int(raw_priority)
            preemptable_value, role = None, ""
        resreq = pod_requests(pod)
        uid = meta.get("uid") or f"{namespace}/{name}"
        # Every slot set here, as the generated __init__ and __post_init__ would (a test
        # compares the two): 150,000 pods at start-up pay for keyword passing otherwise.
        task: TaskInfo = _new_object(cls)
        task.uid = uid
        task.name = name
        task.namespace = namespace
        task.job = f"{namespace}/{group}" if group else lone_pod_job(namespace, uid)
        task.resreq = task.init_resreq = resreq
        task.role = role
        task.priority = priority
        task.preemptable = preemptable_value is None or preemptable_value.lower() != "false"
        task.status = status_of_pod(pod)
        task.node_name = spec.get("nodeName") or None
        task.creation_timestamp = parse_timestamp(meta.get("creationTimestamp"))
        task.pod = pod
        task._derived = _Derived(pod, resreq)
        return task

    def __repr__(self) -> str:
        return f"TaskInfo({self.key}, {self.status.name}, node={self.node_name})"


def pod_name_index(name: str) -> tuple[int, int]:
    """Volcano's pod index as a sort key: ``(0, 10)`` for ``job-w-10``, ``(1, 0)`` for none.

    A name of at least three ``-``-separated parts whose last part is an integer has that index
    (the pods a Volcano Job or a StatefulSet-like controller makes), so ``job-w-2`` sorts before
    ``job-w-10``. Volcano compares indices only when both tasks have one; as a sort key, tasks
    with an index here come before tasks without one.
    """
    parts = name.split("-")
    if len(parts) >= 3:
        last = parts[-1]
        if last.isdigit():
            return (0, int(last))
    return (1, 0)
