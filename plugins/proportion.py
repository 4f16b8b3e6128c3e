"""``proportion``: share the cluster between queues by weight, capped and floored per queue.

At session open every queue that has at least one job gets a ``QueueAttributes`` record:

* ``allocated``: the requests of the queue's tasks in allocated states (Allocated, Binding,
  Bound, Running); kept current by ``on_allocate`` / ``on_deallocate`` (a pipelined task counts
  as allocated once the session pipelines it, as in Volcano);
* ``request``: ``allocated`` plus the requests of the queue's Pending tasks;
* ``inqueue``: what admitted jobs have reserved but not yet got: for every Inqueue job with
  ``min_resources``, and every Running job with ``min_resources`` whose allocated task count
  reaches ``min_available``, ``min_resources - job.allocated`` per dimension named in
  ``min_resources``, clipped at 0;
* ``elastic``: the sum over jobs of what each holds beyond its ``min_resources``
  (``max(job.allocated - min_resources, 0)`` per dimension; all of ``job.allocated`` when the
  job has no ``min_resources``);
* ``capability``: the queue's hard cap; a missing dimension, and cpu or memory of 0, mean
  unlimited;
* ``guarantee``: the queue's reserved floor;
* ``real_capability``: ``max(total - Σ guarantees of all queues, 0) + guarantee``, then the
  per-dimension minimum with ``capability`` (unlimited where the capability says nothing);
* ``deserved``: the queue's fair share for this session, by water-filling (below);
* ``share``: ``max over deserved's dimensions of allocated / deserved``.

Water-filling. ``remaining`` starts as the cluster's total allocatable. Each round, every queue
not yet satisfied receives ``remaining * weight / Σ weights of unsatisfied queues`` (all from the
round's starting ``remaining``), then its ``deserved`` is capped by ``real_capability`` (missing
dimension = unlimited), then by ``request`` (missing dimension = 0, so a queue gets nothing of a
resource it does not ask for), then raised to ``guarantee``. A queue is satisfied when its request
is within its deserved or its deserved did not change in the round. What the queues gained is
taken from ``remaining`` and what they lost (a cap lowering deserved) is given back, clipped at
0. The rounds end when ``remaining`` is empty (every dimension below Volcano's 0.1 threshold in
Volcano's units: 0.1 millicore, 0.1 byte, 0.0001 of a count), did not change, or no unsatisfied
queue has weight. A weight-0 queue therefore only ever gets its guarantee, and when every queue
has weight 0 nothing is distributed at all.

Hooks:

* ``queue_order_key``: higher queue ``priority`` first, then lower ``share``;
* ``overused``: ``deserved <= allocated`` in every dimension (the queue has reached its fair
  share everywhere; an empty ``deserved`` is therefore always reached);
* ``allocatable``: the queue is Open and ``allocated + task request <= deserved`` on the
  dimensions the task requests;
* ``preemptive``: the same resource test without the state check;
* ``reclaimable``: walking the candidates in the given order with a running copy of each victim
  queue's ``allocated``, a candidate is a victim while its queue holds more than it deserves in
  some dimension; its request is then taken off the copy;
* ``job_enqueueable``: REJECT when the job's queue is unknown or not Open; PERMIT without
  ``min_resources``; otherwise PERMIT iff ``min_resources + allocated + inqueue - elastic <=
  real_capability`` on the dimensions ``min_resources`` names (a REJECT records, in
  ``session.job_reasons``, the queue, the limit and the figures: ``pumice.plugins._queue_reasons``);
* ``overused_reason`` / ``allocatable_reason``: the same tests, explained with the queue's
  figures (``queue q: cpu allocated 14 + request 2 exceeds deserved 15``);
* ``on_allocate`` / ``on_deallocate``: ``allocated`` ± the task's request, ``share`` recomputed.

Differences from Volcano:

* pumice puts no ``pods`` dimension in task requests (a node's pod limit is checked by the
  predicates), so Volcano's quirk of a ``pods`` dimension in request, deserved and share is
  dropped: ``pods`` never takes part in deserved, share or overused;
* comparisons use ``Resource``'s tolerance instead of a strict ``>``, so float noise in the
  water-filling never refuses a task that fits exactly;
* pumice has no ``JobEnqueued`` hook. A permitted job's reservation is added to ``inqueue`` at
  once and given back at the next ``job_enqueueable`` call if the job was not admitted after
  all (another plugin rejected it), which is what ``JobEnqueued`` achieves;
* Volcano's "queue resource quota insufficient" is replaced by the queue, the limit and the
  figures (``pumice.plugins._queue_reasons``), and allocate asks ``allocatable_reason`` /
  ``overused_reason`` to explain a refusal with them;
* scheduling-gated tasks do not exist in pumice, so nothing is deducted for them;
* its numbers reach the cluster through the status and metric hooks: ``queue_status`` adds
  ``deserved`` and ``share`` to a Queue's status, ``metric_samples`` gives
  ``pumice_proportion_queue_deserved`` / ``pumice_proportion_queue_share``; no PodGroup event
  is written (the reason goes to ``session.job_reasons``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pumice import (
    ALLOCATED_STATUSES,
    Arguments,
    JobInfo,
    MetricSample,
    Plugin,
    QueueInfo,
    Resource,
    SessionView,
    TaskInfo,
    TaskStatus,
    Vote,
    hookimpl,
    resource_list,
)
from pumice.plugins import _queue_reasons as reasons
from pumice.plugins._queue_reasons import QueueAttributes

log = logging.getLogger("pumice.plugins.proportion")

_UNKNOWN = object()

_VOLCANO_THRESHOLD = {"cpu": 0.1, "memory": 0.1}
"""Below these amounts a dimension of ``remaining`` counts as exhausted (Volcano's 0.1 in its
own units: millicores and bytes)."""
_SCALAR_THRESHOLD = 1e-4
"""The same for every other resource: Volcano counts them in thousandths, pumice in units."""
_MAX_ROUNDS = 10_000
"""A safety net against a float sequence that never settles; real clusters need a few rounds."""


@dataclass(frozen=True, slots=True)
class QueueShare:
    """One queue's fair share as a session leaves it (``ProportionPlugin.shares``)."""

    deserved: Resource
    allocated: Resource
    share: float


class _Sums:
    """A queue's sums over its jobs while a session opens, as plain dicts: adding a job's
    amounts in place, in the same order as ``Resource`` additions would (so the same floats),
    without a new ``Resource`` per job and per sum (a cluster has tens of thousands of jobs,
    most of them lone pods)."""

    __slots__ = ("allocated", "elastic", "inqueue", "request")

    def __init__(self) -> None:
        self.allocated: dict[str, float] = {}
        self.request: dict[str, float] = {}
        self.inqueue: dict[str, float] = {}
        self.elastic: dict[str, float] = {}

    def into(self, attr: QueueAttributes) -> None:
        """Set the queue's sums (its attributes are new: nothing to add to)."""
        attr.allocated = Resource(self.allocated)
        attr.request = Resource(self.request)
        attr.inqueue = Resource(self.inqueue)
        attr.elastic = Resource(self.elastic)


def _accumulate(into: dict[str, float], amounts: Iterable[tuple[str, float]]) -> None:
    for name, amount in amounts:
        into[name] = into.get(name, 0.0) + amount


def capped(value: Resource, cap: Resource | None) -> Resource:
    """Per-dimension minimum of ``value`` and ``cap``, a dimension missing in ``cap`` being
    unlimited."""
    if cap is None:
        return value
    limits = dict(cap.items())
    return Resource(
        {
            name: min(amount, limits[name]) if name in limits else amount
            for name, amount in value.items()
        }
    )


def only(resource: Resource, names: frozenset[str]) -> Resource:
    """``resource`` restricted to ``names`` (each present, absent ones as 0)."""
    return Resource({name: resource[name] for name in names})


def fits_on_requested(used: Resource, limit: Resource, request: Resource) -> bool:
    """``used <= limit`` on the dimensions ``request`` asks for (above zero) only."""
    return only(used, request.names()).less_equal(limit, "zero")


def _exhausted(remaining: Resource) -> bool:
    for name, amount in remaining.items():
        if amount >= _VOLCANO_THRESHOLD.get(name, _SCALAR_THRESHOLD):
            return False
    return True


def _normalised_capability(queue: QueueInfo) -> Resource | None:
    """The queue's capability with cpu and memory of 0 read as unlimited (left out)."""
    capability = queue.capability
    if capability is None:
        return None
    return Resource(
        {
            name: amount
            for name, amount in capability.items()
            if not (name in ("cpu", "memory") and amount <= 0)
        }
    )


class ProportionPlugin(Plugin):
    """Volcano's proportion plugin: weighted fair share of the cluster between queues."""

    declared_arguments = ()  # no arguments: any given is warned about

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.attributes: dict[str, QueueAttributes] = {}
        """Queue name -> its attributes, for the queues that have jobs in this session."""
        self.total = Resource.zero()
        self._session: SessionView | None = None
        self._promised: tuple[JobInfo, QueueAttributes, Resource] | None = None
        self._by_job: dict[str, QueueAttributes | None] = {}

    # -- session ----------------------------------------------------------------------------

    @hookimpl
    def session_open(self, session: SessionView) -> None:
        self._session = session
        self.total = session.snapshot.total_allocatable
        attributes = self.attributes
        sums: dict[str, _Sums] = {}
        for job in session.jobs.values():
            queue = session.queues.get(job.queue)
            if queue is None:
                continue
            attr = attributes.get(queue.name)
            if attr is None:
                attr = QueueAttributes(
                    queue=queue,
                    weight=queue.weight,
                    capability=_normalised_capability(queue),
                    guarantee=queue.guarantee,
                )
                attributes[queue.name] = attr
                sums[queue.name] = _Sums()
            self._add_job(sums[queue.name], job)
        for name, total in sums.items():
            total.into(attributes[name])
        guarantees = Resource.zero()
        for queue in session.queues.values():
            guarantees = guarantees + queue.guarantee
        free = self.total.sub(guarantees, clip=True)
        for attr in attributes.values():
            attr.real_capability = capped(free + attr.guarantee, attr.capability)
        self._water_fill()
        for attr in attributes.values():
            attr.update_share()
            log.debug(
                "queue %s: deserved %s, allocated %s, request %s, share %.3f",
                attr.queue.name,
                attr.deserved,
                attr.allocated,
                attr.request,
                attr.share,
            )

    @staticmethod
    def _add_job(sums: _Sums, job: JobInfo) -> None:
        allocated = job.allocated.items()
        _accumulate(sums.allocated, allocated)
        _accumulate(sums.request, allocated)
        pending = Resource.zero()
        for task in job.tasks_in(TaskStatus.PENDING):
            pending = pending + task.resreq
        _accumulate(sums.request, pending.items())
        minimum = job.min_resources
        if minimum is not None:
            reserving = job.phase == "Inqueue" or (
                job.phase == "Running" and job.count(ALLOCATED_STATUSES) >= job.min_available
            )
            if reserving:
                _accumulate(sums.inqueue, _still_reserved(job, minimum).items())
            _accumulate(sums.elastic, job.allocated.sub(minimum, clip=True).items())
        else:
            _accumulate(sums.elastic, allocated)

    def _water_fill(self) -> None:
        remaining = self.total
        satisfied: set[str] = set()
        queues = list(self.attributes.values())
        for _ in range(_MAX_ROUNDS):
            hungry = [a for a in queues if a.queue.name not in satisfied]
            total_weight = sum(a.weight for a in hungry)
            if total_weight <= 0:
                break
            gained = Resource.zero()
            lost = Resource.zero()
            for attr in hungry:
                before = attr.deserved
                deserved = before + remaining.scale(attr.weight / total_weight)
                deserved = capped(deserved, attr.real_capability)
                deserved = deserved.min(attr.request)
                deserved = deserved.max(attr.guarantee)
                attr.deserved = deserved
                if attr.request.less_equal(deserved, "zero") or deserved.equal(before, "zero"):
                    satisfied.add(attr.queue.name)
                gained = gained + deserved.sub(before, clip=True)
                lost = lost + before.sub(deserved, clip=True)
            previous = remaining
            remaining = (remaining + lost).sub(gained, clip=True)
            if _exhausted(remaining) or remaining.equal(previous, "zero"):
                break
        else:
            log.warning("proportion: water-filling stopped after %d rounds", _MAX_ROUNDS)

    # -- ordering ---------------------------------------------------------------------------

    @hookimpl
    def queue_order_key(self, queue: QueueInfo) -> tuple[int, float]:
        attr = self.attributes.get(queue.name)
        return (-queue.priority, attr.share if attr is not None else 0.0)

    # -- queue limits -----------------------------------------------------------------------

    @hookimpl
    def overused(self, queue: QueueInfo) -> bool:
        attr = self.attributes.get(queue.name)
        if attr is None:
            return False
        return attr.deserved.less_equal(attr.allocated, "zero")

    @hookimpl
    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if not queue.is_open():
            return False
        attr = self.attributes.get(queue.name)
        if attr is None:
            return True
        return attr.room_for(task.resreq)

    @hookimpl
    def overused_reason(self, queue: QueueInfo) -> str | None:
        attr = self.attributes.get(queue.name)
        return reasons.overused(attr) if attr is not None and self.overused(queue) else None

    @hookimpl
    def allocatable_reason(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        attr = self.attributes.get(queue.name)
        if attr is None:
            return None if queue.is_open() else reasons.not_open(queue)
        return reasons.allocatable_refusal(attr, task.resreq)

    @hookimpl
    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        attr = self.attributes.get(queue.name)
        if attr is None:
            return True
        return attr.allocated.sum_within(task.resreq, attr.deserved)

    @hookimpl
    def reclaimable(self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        session = self._session
        if session is None:
            return []
        victims: list[TaskInfo] = []
        running: dict[str, Resource] = {}
        for candidate in candidates:
            job = session.jobs.get(candidate.job)
            if job is None:
                continue
            attr = self.attributes.get(job.queue)
            if attr is None:
                continue
            allocated = running.get(job.queue, attr.allocated)
            if not allocated.less_equal(attr.deserved, "zero"):
                running[job.queue] = allocated.sub(candidate.resreq, clip=True)
                victims.append(candidate)
            else:
                running[job.queue] = allocated
        return victims

    # -- admission --------------------------------------------------------------------------

    @hookimpl
    def job_enqueueable(self, job: JobInfo) -> Vote:
        self._settle_promise()
        attr = self.attributes.get(job.queue)
        if attr is None or not attr.queue.is_open():
            return Vote.REJECT
        minimum = job.min_resources
        if minimum is None or minimum.is_empty():
            return Vote.PERMIT
        wanted = (minimum + attr.allocated + attr.inqueue).sub(attr.elastic, clip=True)
        if not fits_on_requested(wanted, attr.real_capability, minimum):
            if self._session is not None:
                self._session.job_reasons[job.uid] = reasons.enqueue_refusal(attr, minimum)
            return Vote.REJECT
        reserved = _still_reserved(job, minimum)
        attr.inqueue = attr.inqueue + reserved
        self._promised = (job, attr, reserved)
        return Vote.PERMIT

    def _settle_promise(self) -> None:
        """Give back the reservation of the last permitted job if it was not admitted."""
        promised, self._promised = self._promised, None
        if promised is None:
            return
        job, attr, reserved = promised
        if job.is_pending():
            attr.inqueue = attr.inqueue.sub(reserved, clip=True)

    def shares(self) -> dict[str, QueueShare]:
        """Queue name -> its deserved, allocated and share now, for the queues that have jobs
        (a copy: ``Resource`` values are never changed in place)."""
        return {
            name: QueueShare(attr.deserved, attr.allocated, attr.share)
            for name, attr in self.attributes.items()
        }

    # -- status and metrics -------------------------------------------------------------------

    @hookimpl
    def queue_status(self, queue: QueueInfo) -> dict[str, Any]:
        """``deserved`` and ``share`` of a queue that has jobs this session."""
        attr = self.attributes.get(queue.name)
        if attr is None:
            return {}
        return {"deserved": resource_list(attr.deserved), "share": round(attr.share, 6)}

    @hookimpl
    def metric_samples(self) -> Iterable[MetricSample]:
        """``pumice_proportion_queue_deserved{queue,resource}`` (cpu in cores, memory in bytes)
        and ``pumice_proportion_queue_share{queue}``, for the queues that have jobs."""
        for name, attr in sorted(self.attributes.items()):
            for dim, value in sorted(attr.deserved.items()):
                yield MetricSample(
                    "queue_deserved",
                    value / 1000 if dim == "cpu" else value,
                    {"queue": name, "resource": dim},
                    "Each queue's fair share at the last session (cpu in cores, memory in "
                    "bytes, others in their own unit)",
                )
            yield MetricSample(
                "queue_share",
                attr.share,
                {"queue": name},
                "allocated / deserved in the queue's most used dimension at the end of the "
                "last session (1 = at its fair share)",
            )

    # -- events -----------------------------------------------------------------------------

    def _attributes_of(self, task: TaskInfo) -> QueueAttributes | None:
        """The attributes of the task's queue, looked up once per job (a job's queue stays
        the same through a session)."""
        known = self._by_job.get(task.job, _UNKNOWN)
        if known is not _UNKNOWN:
            return known  # type: ignore[return-value]
        session = self._session
        job = session.jobs.get(task.job) if session is not None else None
        attr = self.attributes.get(job.queue) if job is not None else None
        if job is not None:
            self._by_job[task.job] = attr
        return attr

    @hookimpl
    def on_allocate(self, task: TaskInfo) -> None:
        attr = self._attributes_of(task)
        if attr is not None:
            attr.add_allocated(task.resreq)

    @hookimpl
    def on_deallocate(self, task: TaskInfo) -> None:
        attr = self._attributes_of(task)
        if attr is not None:
            attr.allocated = attr.allocated.sub(task.resreq, clip=True)
            attr.update_share()


def _still_reserved(job: JobInfo, minimum: Resource) -> Resource:
    """``min_resources - job.allocated`` on the dimensions ``min_resources`` names, at least 0."""
    return minimum.sub(job.allocated, clip=True)
