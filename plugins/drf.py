"""``drf``: dominant resource fairness between jobs.

A job's *share* is its dominant share of the cluster::

    share(job) = max over resources r with total(r) > 0 of  allocated(job, r) / total(r)

``total`` is the cluster's allocatable summed over every node
(``session.snapshot.total_allocatable``), taken once when the session opens. A resource the
cluster has none of counts as share 0 (whatever the job holds of it); a job holding nothing
has share 0.

``allocated(job)`` starts, when the session opens, as the requests of the job's tasks that are
Allocated, Binding, Bound or Running. It then follows the statement events: ``on_allocate``
adds the task's request (allocations and pipelines, and evictions being undone) and
``on_deallocate`` subtracts it (evictions, and allocations or pipelines being undone), so a
job's share is current after every statement operation and back where it was after a discard.

Hooks:

* ``job_order_key(job)`` — the job's current share: the smaller share goes first.
* ``preemptable(preemptor, candidates)`` — with ``ls`` the preemptor job's share after adding
  the preemptor's request, a candidate is a victim when ``ls < rs`` or ``|ls - rs| <= 1e-6``,
  where ``rs`` is its job's share after removing the candidate's request *and the requests
  of every earlier candidate of the same job, victim or not* (Volcano's running subtraction:
  taking several tasks of one job is judged on what the job would keep). Candidates of jobs
  not in the session are skipped; a preemptor whose job is not in the session gets an empty
  answer.
* ``on_allocate`` / ``on_deallocate`` — keep the shares current (see above).
* ``session_open`` — computes the totals and initial shares.

Arguments: none. The ``enableHierarchy`` option (hierarchical DRF across queues) is not
supported: when it is set the plugin behaves as plain DRF, and every command that loads the
config warns about it (``FILE:LINE: KEY: warning: …``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pumice import (
    Arguments,
    JobInfo,
    Plugin,
    Resource,
    SessionView,
    TaskInfo,
    hookimpl,
)

log = logging.getLogger("pumice.plugins.drf")

SHARE_DELTA = 1e-6
"""Shares this close count as equal when choosing victims (Volcano's ``shareDelta``)."""


class DrfPlugin(Plugin):
    """Volcano's drf plugin without hierarchy (see the module docstring)."""

    declared_arguments = ()  # no arguments: any given is warned about

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.session: SessionView | None = None
        self.dims: tuple[str, ...] = ()
        """The resources the cluster has (total > 0), in a fixed order."""
        self.total: tuple[float, ...] = ()
        self.allocated: dict[str, list[float]] = {}
        """Job uid -> what the job holds, over ``dims``, for the jobs whose holding changed
        or was asked for this session (see ``holding``)."""
        self._opened: dict[str, Resource] = {}
        """Job uid -> what it held when the session opened (Resources are immutable, so this
        costs a reference per job; vectors are made only for jobs that are looked at)."""
        self._share_cache: dict[Resource, float] = {}
        self.shares: dict[str, float] = {}
        """Job uid -> current dominant share."""
        self._vectors: dict[Resource, tuple[float, ...]] = {}

    # -- arithmetic -------------------------------------------------------------------------
    # Vectors over ``dims`` are Python floats, not numpy arrays: there are a few resources,
    # and every allocation changes one job's vector, where numpy's per-call overhead costs
    # more than the arithmetic (the IEEE operations are the same either way).

    def vector(self, resource: Resource) -> list[float]:
        """``resource`` over ``dims`` (resources the cluster lacks are dropped)."""
        return [float(resource[d]) for d in self.dims]

    def request(self, task: TaskInfo) -> tuple[float, ...]:
        """``task``'s request over ``dims``, cached per distinct request (tasks of one job
        usually ask for the same)."""
        vec = self._vectors.get(task.resreq)
        if vec is None:
            vec = self._vectors[task.resreq] = tuple(self.vector(task.resreq))
        return vec

    def share_of(self, allocated: Sequence[float]) -> float:
        """Dominant share of an allocation vector over ``dims``."""
        if not self.dims:
            return 0.0
        share = 0.0
        for a, t in zip(allocated, self.total, strict=True):
            fraction = a / t
            if fraction > share:
                share = fraction
        return share

    def holding(self, job: str) -> list[float] | None:
        """What ``job`` holds now, over ``dims`` (None for a job this session does not know);
        the vector is this plugin's own, kept current by the allocate events."""
        allocated = self.allocated.get(job)
        if allocated is None:
            opened = self._opened.get(job)
            if opened is None:
                return None
            allocated = self.allocated[job] = self.vector(opened)
        return allocated

    def share(self, job: str) -> float:
        """The current share of job ``job`` (0.0 for a job this session does not know)."""
        return self.shares.get(job, 0.0)

    def dominant_resource(self, job: str) -> str | None:
        """The resource that gives ``job`` its share; None when it holds nothing."""
        allocated = self.holding(job)
        if allocated is None or not self.dims or self.shares.get(job, 0.0) <= 0.0:
            return None
        fractions = [a / t for a, t in zip(allocated, self.total, strict=True)]
        return self.dims[fractions.index(max(fractions))]

    # -- session ----------------------------------------------------------------------------

    @hookimpl
    def session_open(self, session: SessionView) -> None:
        self.session = session
        total = session.snapshot.total_allocatable
        self.dims = tuple(sorted(name for name, amount in total.items() if amount > 0))
        self.total = tuple(float(total[d]) for d in self.dims)
        cache = self._share_cache
        for job in session.jobs.values():
            held = job.allocated
            self._opened[job.uid] = held
            share = cache.get(held)
            if share is None:  # jobs holding the same (lone pods of one Deployment) share it
                share = cache[held] = self.share_of(self.vector(held))
            self.shares[job.uid] = share

    @hookimpl
    def job_order_key(self, job: JobInfo) -> float:
        share = self.shares.get(job.uid)
        return share if share is not None else self.share_of(self.vector(job.allocated))

    @hookimpl
    def on_allocate(self, task: TaskInfo) -> None:
        # ``_change(task, +1.0)`` written out (once per placement): adding ``1.0 * amount``
        # is adding ``amount``, and the share is ``share_of`` of the new holding
        job = task.job
        allocated = self.allocated.get(job) or self.holding(job)
        if allocated is None:
            log.debug("drf: task %s belongs to no job of this session", task.key)
            return
        request = self._vectors.get(task.resreq) or self.request(task)  # ``request``, inline
        total = self.total
        share = 0.0
        for i, amount in enumerate(request):
            held = allocated[i] + amount
            held = held if held > 0.0 else 0.0
            allocated[i] = held
            fraction = held / total[i]
            if fraction > share:
                share = fraction
        self.shares[job] = share

    @hookimpl
    def on_deallocate(self, task: TaskInfo) -> None:
        self._change(task, -1.0)

    def _change(self, task: TaskInfo, sign: float) -> None:
        allocated = self.holding(task.job)
        if allocated is None:
            log.debug("drf: task %s belongs to no job of this session", task.key)
            return
        for i, amount in enumerate(self.request(task)):
            held = allocated[i] + sign * amount
            allocated[i] = held if held > 0.0 else 0.0
        self.shares[task.job] = self.share_of(allocated)

    # -- victims ----------------------------------------------------------------------------

    @hookimpl
    def preemptable(self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        own = self.holding(preemptor.job)
        if own is None:
            log.warning("drf: preemptor %s belongs to no job of this session", preemptor.key)
            return []
        ls = self.share_of([a + r for a, r in zip(own, self.request(preemptor), strict=True)])
        remaining: dict[str, list[float]] = {}
        victims: list[TaskInfo] = []
        for candidate in candidates:
            left = remaining.get(candidate.job)
            if left is None:
                held = self.holding(candidate.job)
                if held is None:
                    log.warning(
                        "drf: candidate %s belongs to no job of this session", candidate.key
                    )
                    continue
                left = remaining[candidate.job] = list(held)
            for i, amount in enumerate(self.request(candidate)):
                rest = left[i] - amount
                left[i] = rest if rest > 0.0 else 0.0
            rs = self.share_of(left)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(candidate)
        return victims
