"""``overcommit``: admit jobs while the cluster, inflated by a factor, still has room for them.

Volcano's default configuration has this plugin in tier 2; it keeps ``enqueue`` from admitting
far more PodGroups than the cluster could ever run, while still letting it run a little ahead
of what is free now (the factor), so ``allocate`` always has work queued.

At session open:

* ``idle`` = the cluster's total allocatable x ``overcommit-factor`` - what the tasks on the
  nodes use (every node's ``used``), per dimension, at least 0;
* ``inqueue`` = what admitted jobs have reserved but not yet got: for every Inqueue job with
  ``min_resources``, all of ``min_resources``; for every Running job with ``min_resources`` whose
  allocated task count reaches ``min_available``, ``min_resources - job.allocated`` (clipped at 0).

Hooks:

* ``job_enqueueable(job)``: PERMIT for a job without ``min_resources``; otherwise PERMIT iff
  ``inqueue + min_resources <= idle`` on the dimensions ``min_resources`` names, else REJECT
  with the reason "resource in cluster is overused" in ``session.job_reasons``;
* ``job_enqueued(job)``: the admitted job's ``min_resources`` is added to ``inqueue``.

Arguments: ``overcommit-factor`` (float, default 1.2; a value below 1 is replaced by 1.2 with a
warning, as Volcano does).

Differences from Volcano: scheduling-gated tasks do not exist in pumice, so nothing is deducted
for them.
"""

from __future__ import annotations

import logging

from pumice import (
    ALLOCATED_STATUSES,
    Arguments,
    ArgumentSpec,
    JobInfo,
    Plugin,
    Resource,
    SessionView,
    Vote,
    config_warning,
    hookimpl,
)

log = logging.getLogger("pumice.plugins.overcommit")

FACTOR = "overcommit-factor"
DEFAULT_FACTOR = 1.2
OVERUSED = "resource in cluster is overused"


class OvercommitPlugin(Plugin):
    """Volcano's overcommit plugin (see the module docstring)."""

    declared_arguments = (
        ArgumentSpec(
            FACTOR, "float", DEFAULT_FACTOR, minimum=0, doc="admit up to total x this factor"
        ),
    )

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        factor = float(arguments.get_float(FACTOR, DEFAULT_FACTOR))
        if factor < 1.0:
            config_warning(
                log,
                plugin="overcommit",
                key=FACTOR,
                message=f"{factor:g} is below 1; using {DEFAULT_FACTOR:g} (as Volcano does)",
            )
            factor = DEFAULT_FACTOR
        self.factor = factor
        self.idle = Resource.zero()
        self.inqueue = Resource.zero()
        self._session: SessionView | None = None

    @hookimpl
    def session_open(self, session: SessionView) -> None:
        self._session = session
        table = session.table
        used = table.resource(table.used.sum(axis=0))
        total = session.snapshot.total_allocatable
        self.idle = total.scale(self.factor).sub(used, clip=True)
        inqueue = Resource.zero()
        for job in session.jobs.values():
            minimum = job.min_resources
            if minimum is None:
                continue
            if job.phase == "Inqueue":
                inqueue = inqueue + minimum
            elif job.phase == "Running" and job.count(ALLOCATED_STATUSES) >= job.min_available:
                inqueue = inqueue + minimum.sub(job.allocated, clip=True)
        self.inqueue = inqueue
        log.debug("overcommit: idle %s, inqueue %s", self.idle, self.inqueue)

    @hookimpl
    def job_enqueueable(self, job: JobInfo) -> Vote:
        minimum = job.min_resources
        if minimum is None:
            return Vote.PERMIT
        wanted = self.inqueue + minimum
        for name in minimum.names():
            if wanted[name] > self.idle[name] * (1 + 1e-12) + 1e-6:
                if self._session is not None:
                    self._session.job_reasons[job.uid] = OVERUSED
                return Vote.REJECT
        return Vote.PERMIT

    @hookimpl
    def job_enqueued(self, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.inqueue = self.inqueue + job.min_resources
