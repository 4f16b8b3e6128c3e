"""PodGroup and Queue status in a what-if run: what the daemon writes, fed back to the cache.

In the daemon a session's PodGroup status (``pumice.daemon.outcome``) and the node
reservations go to the API server and come back through the watches into the cache, where the
next session reads them (a PodGroup's phase; a Queue's ``status.reservation``). A what-if run
has no API server: ``write_status`` hands the same objects, updated, to the cache's handlers.
``plugin_figures`` reads the queue shares and reservations a session's plugins leave.
"""

from __future__ import annotations

from typing import Any

from pumice.cache import ClusterCache
from pumice.daemon.outcome import podgroup_status, same_podgroup_status
from pumice.framework.session import Session
from pumice.plugins.node_reservation import NodeReservationPlugin
from pumice.plugins.proportion import ProportionPlugin, QueueShare

Obj = dict[str, Any]


def podgroup_statuses(cache: ClusterCache, session: Session, touched: set[str]) -> dict[str, Obj]:
    """The PodGroup status the daemon would write (``outcome.podgroup_status``), for the
    jobs whose status can have changed: those with decisions this session, and those
    whose phase the session changed (enqueue). Going over every job with the daemon's
    ``collect`` would cost as much as the session itself."""
    out: dict[str, Obj] = {}
    for uid, job in session.jobs.items():
        if job.podgroup is None:
            continue
        entry = cache.podgroups.get(uid)
        if entry is None:
            continue
        if uid not in touched and job.phase == (entry.obj.get("status") or {}).get("phase"):
            continue
        desired = podgroup_status(job, session.job_reasons.get(uid))
        if not same_podgroup_status(entry.obj.get("status"), desired):
            out[uid] = desired
    return out


def write_status(
    cache: ClusterCache, statuses: dict[str, Obj], reservations: dict[str, Obj | None]
) -> None:
    """What the daemon's status writer would write and its watches bring back: PodGroup
    status, and the node reservations of Queues (their other status fields are read by
    no session)."""
    for key, desired in statuses.items():
        entry = cache.podgroups.get(key)
        if entry is not None:
            updated = {**entry.obj, "status": {**(entry.obj.get("status") or {}), **desired}}
            cache.podgroups_handler.on_update(entry.obj, updated)
    for name, reservation in reservations.items():
        current = cache.queue_objects.get(name)
        if current is None:
            continue
        status = dict(current.get("status") or {})
        if status.get("reservation") == reservation:
            continue
        if reservation is None:
            status.pop("reservation", None)
        else:
            status["reservation"] = reservation
        cache.queues.on_update(current, {**current, "status": status})


def plugin_figures(
    session: Session,
) -> tuple[dict[str, QueueShare], dict[str, Obj | None]]:
    """Queue shares (``proportion``) and node reservations (``node-reservation``) as the
    session leaves them. The one place this module asks plugins by type, as
    ``pumice.daemon.outcome.collect`` does today; it becomes the plugins' status hook (issue
    17) when that lands."""
    shares: dict[str, QueueShare] = {}
    reservations: dict[str, Obj | None] = {}
    for _, _, plugin in session.plugins:
        if isinstance(plugin, ProportionPlugin):
            shares.update(plugin.shares())
        elif isinstance(plugin, NodeReservationPlugin):
            reservations.update(plugin.statuses())
    return shares, reservations
