"""``node-reservation``: lock whole nodes for the queues that ask for it.

Volcano designed queue resource reservation in 2020 and never shipped it; this is pumice's
version. Arguments: one key per queue name, plus two of the plugin's own::

    - name: node-reservation
      arguments:
        relockPeriod: 10s            # how often a lock that no longer fits is chosen again
        maxReservedFraction: 0.5     # at most this fraction of the cluster is reserved
        team-a:
          policy: Guaranteed         # or Best-Effort (the default)
          resource: {cpu: "16", memory: 64Gi}   # default: the Queue's spec.guarantee.resource
        team-b:
          percentage: {dimensions: [cpu], value: 0.25}   # floor(nodes x 0.25) nodes

The arguments are not declared (``declared_arguments`` stays None): queue names are free keys
that no ``ArgumentSpec`` can cover, so the plugin checks them itself: a malformed queue entry is
refused (see below) and a bad ``relockPeriod`` or ``maxReservedFraction`` is warned about and
its default used. Only queues named here get locks. With both ``resource`` and ``percentage``
the one that is the larger fraction of the cluster total (over its dimensions) wins.

Each session, at open, queues that already hold a lock are handled first (by name), then the
others (by name):

1. *validation*: a request above the cluster's total in any dimension, above the queue's
   capability, or that would take the sum of all reservations above ``maxReservedFraction`` of
   the cluster total, is *refused*: no lock, a warning log (when the reason is new) and the
   reason in ``refusals`` for the session's owner to show (``new_refusals``: those not yet in
   the Queue's status, for a Queue event; ``pumice simulate`` reports them);
2. *stability*: the lock kept in the Queue's ``status.reservation`` (``LockRecord``) is kept
   while it still satisfies the request (covers it and no node can be dropped; for a
   percentage, the right number of nodes). One that no longer does is chosen again once
   ``relockPeriod`` has passed since it was chosen. A locked node that disappeared (or was
   cordoned, or was taken by a queue handled earlier) is replaced at once, keeping the others.
   A queue that is no longer named, or is deleted, loses its lock;
3. *choice*: among the schedulable nodes no other queue locked, the best combination by the
   score of ``_reservation_search`` (exact up to 16 candidates, a heuristic beyond).

Effect:

* ``predicate`` (row-local): a locked node takes only the owning queue's tasks; others get
  ``node(s) were reserved for queue <name>``;
* ``reclaimable``: for a ``Guaranteed`` queue's task, the candidates of other queues that run on
  the queue's locked nodes are the victims (the ``reclaim`` action asks only when the task is
  starving). ``Best-Effort`` queues abstain: the reservation never evicts for them. The answer
  follows the tier rules: in a tier of its own before ``proportion``'s it stands whatever the
  fair share says; in the same tier it is intersected with proportion's.

Status. At session close the ``queue_status`` hook gives a queue that holds a lock, or was
refused one, its ``status.reservation``: ``{nodes, resource, lockedAt}`` (``resource`` = what is
idle on the locked nodes now) or ``{refused}``; the owner of the session writes it back on
change, and the next session reads the lock from there; ``queue_events`` asks for a
``ReservationRefused`` Warning event on the Queue when a refusal's reason is new.
``statuses()`` gives the status for every queue (None: no reservation).

The clock is ``ClusterSnapshot.taken_at``: wall time in the daemon, ``period`` per cycle in
``pumice simulate``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import (
    ALLOCATED_STATUSES,
    Arguments,
    NodeTable,
    Plugin,
    PredicateResult,
    QueueInfo,
    Resource,
    SessionView,
    TaskInfo,
    config_warning,
    hookimpl,
)
from pumice.plugins._reservation_request import (
    GUARANTEED,
    LockRecord,
    QueueRequest,
    ReservationArguments,
    Target,
    above,
    capability_of,
    describe,
    format_time,
    previous_refusal,
    read_record,
    resolve,
    resource_list,
)
from pumice.plugins._reservation_search import Candidates, choose, covers

log = logging.getLogger("pumice.plugins.node_reservation")

RESERVED_FOR = "node(s) were reserved for queue {}"


@dataclass(frozen=True, slots=True)
class Lock:
    """A queue's lock this session."""

    queue: str
    policy: str
    nodes: tuple[str, ...]
    locked_at: float
    target: Target


class NodeReservationPlugin(Plugin):
    """Locks nodes for queues (see the module docstring)."""

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.settings = ReservationArguments(arguments)
        for key, problem in self.settings.problems:
            config_warning(log, plugin="node-reservation", key=key, message=problem)
        self.locks: dict[str, Lock] = {}
        """Queue name -> its lock this session."""
        self.refusals: dict[str, str] = {}
        """Queue name -> why its request was refused this session."""
        self.new_refusals: dict[str, str] = {}
        """The refusals whose reason is not already in the Queue's status: the ones a daemon
        writes a Queue event for (and that were logged as warnings)."""
        self.owner: dict[str, str] = {}
        """Locked node name -> the queue that holds it."""
        self._session: SessionView | None = None
        self._owners: tuple[int, npt.NDArray[np.object_]] | None = None

    # -- session ----------------------------------------------------------------------------

    @hookimpl
    def session_open(self, session: SessionView) -> None:
        self._session = session
        snap = session.snapshot
        total = snap.total_allocatable
        requests = self.settings.requests
        known = [name for name in requests if name in session.queues]
        held = {name: read_record(session.queues[name]) for name in known}
        order = sorted(known, key=lambda name: (held[name] is None, name))
        reserved = Resource.zero()
        cap = total.scale(self.settings.max_reserved_fraction)
        for name in order:
            queue = session.queues[name]
            request = requests[name]
            target, refusal = self._validate(request, queue, total, reserved, cap)
            if refusal is None:
                assert target is not None
                nodes, locked_at, refusal = self._decide(queue, target, held[name], snap.taken_at)
                if refusal is None:
                    reserved = reserved + target.amount
                    self.locks[name] = Lock(name, request.policy, nodes, locked_at, target)
                    for node in nodes:
                        self.owner[node] = name
                    continue
            self.refusals[name] = refusal
            if previous_refusal(queue) != refusal:
                self.new_refusals[name] = refusal
                log.warning("node-reservation: queue %s: %s", name, refusal)
        for lock in self.locks.values():
            log.debug("node-reservation: queue %s holds %s", lock.queue, ", ".join(lock.nodes))

    def _validate(
        self,
        request: QueueRequest,
        queue: QueueInfo,
        total: Resource,
        reserved: Resource,
        cap: Resource,
    ) -> tuple[Target | None, str | None]:
        if request.error is not None:
            return None, request.error
        target = resolve(request, queue, total, len(self._view().nodes))
        amount = target.amount
        if target.count == 0 or amount.is_empty():
            return None, "nothing to reserve: no resource, percentage or guarantee asks for any"
        if over := above(amount, total):
            return None, (
                f"request {describe(amount)} is above the cluster's total {describe(total)} "
                f"({', '.join(over)})"
            )
        capability = capability_of(queue)
        if capability is not None and (over := above(amount, _limited(capability, amount))):
            return None, (
                f"request {describe(amount)} is above the queue's capability "
                f"{describe(capability)} ({', '.join(over)})"
            )
        if over := above(reserved + amount, cap):
            fraction = self.settings.max_reserved_fraction
            return None, (
                f"request {describe(amount)} would take the reserved total above "
                f"maxReservedFraction {fraction:g} of the cluster ({', '.join(over)})"
            )
        return target, None

    def _decide(
        self, queue: QueueInfo, target: Target, held: LockRecord | None, now: float
    ) -> tuple[tuple[str, ...], float, str | None]:
        """The queue's nodes and when they were chosen, or a refusal."""
        cand, dims = self._candidates(queue, target)
        goal = np.array([target.amount[d] / self._total(d) for d in dims])
        row_of = {name: i for i, name in enumerate(cand.names)}
        if held is not None:
            alive = [n for n in held.nodes if n in row_of]
            rows = [row_of[n] for n in alive]
            if len(alive) == len(held.nodes):
                if self._satisfied(cand, goal, target, rows):
                    return held.nodes, held.locked_at, None
                if now - held.locked_at < self.settings.relock_period:
                    return held.nodes, held.locked_at, None
            elif alive:
                repaired = choose(cand, goal, target.count, fixed=rows)
                if repaired is not None:
                    return tuple(cand.names[r] for r in repaired.rows), now, None
        fresh = choose(cand, goal, target.count)
        if fresh is None:
            if target.count is not None:
                return (
                    (),
                    now,
                    (f"{target.count} node(s) requested but only {len(cand.names)} are free"),
                )
            return (), now, f"the free nodes cannot cover the request {describe(target.amount)}"
        return tuple(cand.names[r] for r in fresh.rows), now, None

    @staticmethod
    def _satisfied(cand: Candidates, goal: Any, target: Target, rows: Sequence[int]) -> bool:
        """Do ``rows`` still meet the request, with no node to spare?"""
        if target.count is not None:
            return len(rows) == target.count
        if not covers(cand, goal, rows):
            return False
        return all(not covers(cand, goal, [r for r in rows if r != row]) for row in rows)

    def _view(self) -> SessionView:
        assert self._session is not None, "node-reservation: used before session_open"
        return self._session

    def _total(self, dim: str) -> float:
        return self._view().snapshot.total_allocatable[dim]

    def _candidates(self, queue: QueueInfo, target: Target) -> tuple[Candidates, list[str]]:
        """The schedulable nodes no other queue holds, sorted by name, as fractions of the
        cluster total over the target's dimensions."""
        session = self._view()
        table = session.table
        dims = sorted(target.amount.names())
        table.ensure_dims(dims)
        columns = [table.dim(d) for d in dims]
        totals = np.array([self._total(d) for d in dims])
        rows = [
            table.row(name)
            for name in sorted(session.nodes)
            if name not in self.owner and not table.unschedulable[table.row(name)]
        ]
        index = np.array(rows, dtype=np.int64)
        cols = np.array(columns, dtype=np.int64)
        alloc = table.allocatable[index][:, cols] / totals
        idle = np.clip(table.idle[index][:, cols], 0.0, None) / totals
        used = np.zeros_like(alloc)
        position = {row: i for i, row in enumerate(rows)}
        for job in session.jobs.values():
            if job.queue != queue.name:
                continue
            for task in job.tasks.values():
                if task.status not in ALLOCATED_STATUSES or task.node_name not in session.nodes:
                    continue
                at = position.get(table.row(task.node_name or ""))
                if at is not None:
                    used[at] += np.array([task.resreq[d] for d in dims]) / totals
        names = [table.nodes[r].name for r in rows]
        return Candidates(names, alloc, used, idle, len(table)), dims

    # -- effect -----------------------------------------------------------------------------

    def _queue_of(self, task: TaskInfo) -> str | None:
        job = self._view().jobs.get(task.job)
        return job.queue if job is not None else None

    def _owner_column(self, nodes: NodeTable) -> npt.NDArray[np.object_]:
        """The owning queue of every row ('' for a free node), built once per table epoch."""
        if self._owners is None or self._owners[0] != nodes.epoch:
            column = np.array([self.owner.get(n.name, "") for n in nodes.nodes], dtype=object)
            self._owners = (nodes.epoch, column)
        return self._owners[1]

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult | None:
        # Row-local: the answer reads only the row's owner and the task's queue (the session
        # keeps shapes apart per queue).
        if not self.owner:
            return None
        owners = self._owner_column(nodes)
        if rows is not None:
            owners = owners[rows]
        queue = self._queue_of(task) or ""
        ok = (owners == "") | (owners == queue)
        if ok.all():
            return PredicateResult(ok, "")
        reasons = np.array([RESERVED_FOR.format(o) for o in owners], dtype=object)
        return PredicateResult(ok, reasons)

    @hookimpl
    def reclaimable(
        self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]
    ) -> list[TaskInfo] | None:
        queue = self._queue_of(reclaimer)
        lock = self.locks.get(queue or "")
        if lock is None or lock.policy != GUARANTEED:
            return None
        mine = set(lock.nodes)
        return [c for c in candidates if c.node_name in mine and self._queue_of(c) != lock.queue]

    # -- status -----------------------------------------------------------------------------

    @hookimpl
    def queue_status(self, queue: QueueInfo) -> dict[str, Any]:
        """``reservation`` of a queue that holds a lock or was refused one; nothing else."""
        if queue.name not in self.locks and queue.name not in self.refusals:
            return {}
        return {"reservation": self.statuses()[queue.name]}

    @hookimpl
    def queue_events(self, queue: QueueInfo) -> list[tuple[str, str]]:
        """A ``ReservationRefused`` event for a refusal whose reason is new."""
        refusal = self.new_refusals.get(queue.name)
        return [] if refusal is None else [("ReservationRefused", refusal)]

    def statuses(self) -> dict[str, dict[str, Any] | None]:
        """Queue name -> its ``status.reservation`` now (None: none), for every queue."""
        session = self._view()
        table = session.table
        result: dict[str, dict[str, Any] | None] = dict.fromkeys(session.queues)
        for name, lock in self.locks.items():
            idle = Resource.zero()
            for node in lock.nodes:
                row = table.row(node)
                idle = idle + table.resource(np.clip(table.idle[row], 0.0, None))
            result[name] = {
                "nodes": list(lock.nodes),
                "resource": resource_list(idle),
                "lockedAt": format_time(lock.locked_at),
            }
        for name, reason in self.refusals.items():
            result[name] = {"refused": reason}
        return result


def _limited(capability: Resource, amount: Resource) -> Resource:
    """The capability over ``amount``'s dimensions, unlimited where it says nothing."""
    return Resource(
        {
            name: capability[name] if name in capability.dimensions() else value
            for name, value in amount.items()
        }
    )
