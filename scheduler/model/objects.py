"""Jobs and queues: the scheduler's view of PodGroups and Queues (tasks, one per pod, are
``pumice.model.tasks``).

Objects are built from plain-dict Kubernetes objects (``from_podgroup``, ``from_queue``) or
directly in code. A ``JobInfo`` owns its tasks and keeps an index by status and the sum of its
allocated requests current as task statuses change; everything that changes a task's status
must go through ``JobInfo.update_task_status`` so the index stays right.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice.model.resource import Resource
from pumice.model.tasks import (
    ALLOCATED_STATUSES,
    READY_STATUSES,
    VALID_STATUSES,
    TaskInfo,
    TaskStatus,
    parse_timestamp,
    pod_name_index,
)
from pumice.plain import PumiceError, reads_object

__all__ = [
    "DEFAULT_QUEUE",
    "JobInfo",
    "JobTaskError",
    "QueueInfo",
    "TaskInfo",
    "pod_name_index",
]

_ALLOCATED = int(ALLOCATED_STATUSES)
_READY = int(READY_STATUSES)
_PENDING = TaskStatus.PENDING
_and = int.__and__
"""Status tests as int arithmetic in C (``status & X`` builds a new enum member in Python)."""

DEFAULT_QUEUE = "default"

_new_object = object.__new__


class JobTaskError(PumiceError, KeyError):
    """A job asked to change a task that is not one of its own."""


@dataclass(slots=True, eq=False)
class JobInfo:
    """A gang of tasks: a PodGroup, or a lone pod as a job of one.

    Readiness follows Volcano: ready tasks are those allocated, binding, bound, running or
    succeeded; ``min_available`` of them make the job ready, and pipelined tasks count
    towards being pipelined.
    """

    uid: str
    name: str
    namespace: str = "default"
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    min_available: int = 1
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    min_resources: Resource | None = None
    phase: str = "Pending"
    creation_timestamp: float = 0.0
    preemptable: bool = True
    podgroup: Mapping[str, Any] | None = None
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    allocated: Resource = field(default_factory=Resource.zero)
    total_request: Resource = field(default_factory=Resource.zero)
    pending_best_effort_num: int = 0
    """Pending tasks that request nothing (kept current, so readiness costs O(1))."""
    ready_task_num: int = 0
    """Tasks in ``READY_STATUSES`` (kept current by the index, asked after every placement)."""
    owner: object | None = field(default=None, repr=False)
    """The snapshot that may change this job in place (see ``ClusterSnapshot``)."""

    @classmethod
    def for_lone_pod(cls, task: TaskInfo, queue: str = DEFAULT_QUEUE) -> JobInfo:
        """The job of one task for a pod without a PodGroup (its ``task.job`` is the uid)."""
        job = cls(
            uid=task.job,
            name=task.name,
            namespace=task.namespace,
            queue=queue,
            priority=task.priority,
            min_available=1,
            creation_timestamp=task.creation_timestamp,
            preemptable=task.preemptable,
        )
        job.add_task(task)
        return job

    def clone(self, owner: object) -> JobInfo:
        """A copy that ``owner`` may change: the tasks are copied, everything else shared.
        Written out slot by slot as ``TaskInfo.copy`` is: every session clones each job it
        changes, and ``copy.copy`` of a slotted dataclass costs ten times more (4-5 % of the
        daemon's CPU under a flood of pods). tests/model/test_objects.py checks every slot."""
        other: JobInfo = _new_object(JobInfo)
        other.uid = self.uid
        other.name = self.name
        other.namespace = self.namespace
        other.queue = self.queue
        other.priority = self.priority
        other.min_available = self.min_available
        other.min_task_member = self.min_task_member
        other.min_resources = self.min_resources
        other.phase = self.phase
        other.creation_timestamp = self.creation_timestamp
        other.preemptable = self.preemptable
        other.podgroup = self.podgroup
        other.allocated = self.allocated
        other.total_request = self.total_request
        other.pending_best_effort_num = self.pending_best_effort_num
        other.ready_task_num = self.ready_task_num
        other.owner = owner
        other.tasks = {uid: task.copy() for uid, task in self.tasks.items()}
        other.task_status_index = {
            status: {uid: other.tasks[uid] for uid in bucket}
            for status, bucket in self.task_status_index.items()
        }
        return other

    def with_metadata_of(self, newer: JobInfo) -> JobInfo:
        """``newer`` (built from an updated PodGroup) holding this job's tasks and counters."""
        newer.tasks = self.tasks
        newer.task_status_index = self.task_status_index
        newer.allocated = self.allocated
        newer.total_request = self.total_request
        newer.pending_best_effort_num = self.pending_best_effort_num
        newer.ready_task_num = self.ready_task_num
        return newer

    @classmethod
    @reads_object
    def from_podgroup(cls, podgroup: Mapping[str, Any], priority: int = 0) -> JobInfo:
        """Build an empty job from a plain-dict Volcano PodGroup; add tasks with add_task."""
        meta = podgroup.get("metadata") or {}
        spec = podgroup.get("spec") or {}
        namespace = meta.get("namespace") or "default"
        name = meta["name"]
        min_res = spec.get("minResources")
        return cls(
            uid=f"{namespace}/{name}",
            name=name,
            namespace=namespace,
            queue=spec.get("queue") or DEFAULT_QUEUE,
            priority=priority,
            min_available=int(spec.get("minMember") or 0),
            min_task_member={str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
            min_resources=None if min_res is None else Resource.from_k8s(min_res),
            phase=(podgroup.get("status") or {}).get("phase") or "Pending",
            creation_timestamp=parse_timestamp(meta.get("creationTimestamp")),
            podgroup=podgroup,
        )

    # -- membership -------------------------------------------------------------------------

    def add_task(self, task: TaskInfo) -> None:
        """Add a task (its ``job`` is set to this job's uid)."""
        if task.uid in self.tasks:
            self.delete_task(self.tasks[task.uid])
        task.job = self.uid
        self.tasks[task.uid] = task
        self.total_request = self.total_request + task.resreq
        self._index(task)

    def delete_task(self, task: TaskInfo) -> None:
        """Remove a task; unknown tasks are ignored."""
        known = self.tasks.pop(task.uid, None)
        if known is None:
            return
        self.total_request = self.total_request.sub(known.resreq, clip=True)
        self._unindex(known)

    def replace_task(self, task: TaskInfo) -> None:
        """Put ``task`` in the place of this job's task with the same uid and an equal request
        (the same pod, moved to another status or node): the sums stay as they are where the
        status allows, as in ``update_task_status``, instead of being taken apart and added up
        again."""
        old = self.tasks[task.uid]
        task.job = self.uid
        self.tasks[task.uid] = task
        status = task.status
        if old.status == status:
            self.task_status_index[status][task.uid] = task
            return
        if _and(old.status, _ALLOCATED) and _and(status, _ALLOCATED):
            bucket = self.task_status_index[old.status]
            del bucket[task.uid]
            if not bucket:
                del self.task_status_index[old.status]
            self.task_status_index.setdefault(status, {})[task.uid] = task
            return
        self._unindex(old)
        self._index(task)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task of this job to ``status``, keeping the index and ``allocated`` right.

        ``_unindex``, the change and ``_index`` written out (this runs for every placement
        and every commit of one)."""
        uid = task.uid
        if uid not in self.tasks:
            raise JobTaskError(f"task {task.key} is not in job {self.uid}")
        old = task.status
        index = self.task_status_index
        if _and(old, _ALLOCATED) and _and(status, _ALLOCATED):
            # Allocated -> Binding -> Bound -> Running: ``allocated`` is unchanged, so only the
            # index moves (no Resource arithmetic on the commit of every placement)
            bucket = index[old]
            del bucket[uid]
            if not bucket:
                del index[old]
            task.status = status
            into = index.get(status)
            if into is None:
                into = index[status] = {}
            into[uid] = task
            return
        leaving = index.get(old)
        if leaving is not None:
            if leaving.pop(uid, None) is not None and _and(old, _READY):
                self.ready_task_num -= 1
            if not leaving:
                del index[old]
        if _and(old, _ALLOCATED):
            self.allocated = self.allocated.sub(task.resreq, clip=True)
        elif old == _PENDING and task.resreq.is_empty():
            self.pending_best_effort_num -= 1
        task.status = status
        entering = index.get(status)
        if entering is None:
            entering = index[status] = {}
        if _and(status, _READY) and uid not in entering:
            self.ready_task_num += 1
        entering[uid] = task
        if _and(status, _ALLOCATED):
            self.allocated = self.allocated + task.resreq
        elif status == _PENDING and task.resreq.is_empty():
            self.pending_best_effort_num += 1

    def _index(self, task: TaskInfo) -> None:
        bucket = self.task_status_index.setdefault(task.status, {})
        if task.uid not in bucket and _and(task.status, _READY):
            self.ready_task_num += 1
        bucket[task.uid] = task
        if _and(task.status, _ALLOCATED):
            self.allocated = self.allocated + task.resreq
        elif task.status == TaskStatus.PENDING and task.best_effort:
            self.pending_best_effort_num += 1

    def _unindex(self, task: TaskInfo) -> None:
        bucket = self.task_status_index.get(task.status)
        if bucket is not None:
            if bucket.pop(task.uid, None) is not None and _and(task.status, _READY):
                self.ready_task_num -= 1
            if not bucket:
                del self.task_status_index[task.status]
        if _and(task.status, _ALLOCATED):
            self.allocated = self.allocated.sub(task.resreq, clip=True)
        elif task.status == TaskStatus.PENDING and task.best_effort:
            self.pending_best_effort_num -= 1

    # -- counters ---------------------------------------------------------------------------

    def tasks_in(self, statuses: TaskStatus) -> Iterator[TaskInfo]:
        """Tasks whose status is any of ``statuses`` (a flag combination)."""
        wanted = int(statuses)
        for status, bucket in self.task_status_index.items():
            if _and(status, wanted):
                yield from bucket.values()

    def count(self, statuses: TaskStatus) -> int:
        """How many tasks have any of ``statuses`` (O(number of statuses), not of tasks)."""
        wanted = int(statuses)
        return sum(len(b) for s, b in self.task_status_index.items() if _and(s, wanted))

    @property
    def waiting_task_num(self) -> int:
        return self.count(TaskStatus.PIPELINED)

    @property
    def valid_task_num(self) -> int:
        return self.count(VALID_STATUSES)

    def is_ready(self) -> bool:
        """Enough tasks hold resources for the gang to run."""
        return self.ready_task_num + self.pending_best_effort_num >= self.min_available

    def is_pipelined(self) -> bool:
        """Enough tasks hold or are promised resources."""
        ready = self.waiting_task_num + self.ready_task_num + self.pending_best_effort_num
        return ready >= self.min_available

    def is_starving(self) -> bool:
        """Fewer tasks hold or are promised resources than the gang needs."""
        return self.waiting_task_num + self.ready_task_num < self.min_available

    def is_pending(self) -> bool:
        """The PodGroup has not been admitted (phase Pending or unset)."""
        return self.phase in ("", "Pending")

    def __repr__(self) -> str:
        return f"JobInfo({self.uid}, queue={self.queue}, tasks={len(self.tasks)})"


@dataclass(slots=True, eq=False)
class QueueInfo:
    """A Volcano Queue: weight, hard capability, guaranteed floor, priority and state."""

    name: str
    weight: int = 1
    capability: Resource | None = None
    guarantee: Resource = field(default_factory=Resource.zero)
    deserved: Resource | None = None
    priority: int = 0
    state: str = "Open"
    reclaimable: bool = True
    parent: str | None = None
    creation_timestamp: float = 0.0
    queue: Mapping[str, Any] | None = None

    @property
    def uid(self) -> str:
        return self.name

    def is_open(self) -> bool:
        return self.state == "Open"

    @classmethod
    @reads_object
    def from_queue(cls, queue: Mapping[str, Any]) -> QueueInfo:
        """Build from a plain-dict ``scheduling.volcano.sh/v1beta1`` Queue."""
        meta = queue.get("metadata") or {}
        spec = queue.get("spec") or {}
        status = queue.get("status") or {}
        capability = spec.get("capability")
        deserved = spec.get("deserved")
        guarantee = (spec.get("guarantee") or {}).get("resource")
        reclaimable = spec.get("reclaimable")
        return cls(
            name=meta["name"],
            weight=int(spec.get("weight") or 1),
            capability=Resource.from_k8s(capability) if capability else None,
            guarantee=Resource.from_k8s(guarantee) if guarantee else Resource.zero(),
            deserved=Resource.from_k8s(deserved) if deserved else None,
            priority=int(spec.get("priority") or 0),
            state=status.get("state") or "Open",
            reclaimable=True if reclaimable is None else bool(reclaimable),
            parent=spec.get("parent") or None,
            creation_timestamp=parse_timestamp(meta.get("creationTimestamp")),
            queue=queue,
        )

    def __repr__(self) -> str:
        return f"QueueInfo({self.name}, weight={self.weight}, state={self.state})"
