"""PodGroup and Queue status in a what-if run: what the daemon writes, fed back to the cache.

In the daemon a session's PodGroup status (``pumice.daemon.outcome``) and the node
reservations go to the API server and come back through the watches into the cache, where the
next session reads them (a PodGroup's phase; a Queue's ``status.reservation``). A what-if run
has no API server: ``write_status`` hands the same objects, updated, to the cache's handlers.
``plugin_figures`` reads the queue shares and reservations a session's plugins contribute to
the Queues' status (``Session.contributions``, as the daemon's status writer does): it never
asks a plugin by name or type.
"""

from __future__ import annotations

from pumice.cache import ClusterCache
from pumice.daemon.outcome import podgroup_status, same_podgroup_status
from pumice.framework.session import Session
from pumice.plain import Obj


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


QueueFigures = tuple[float, dict[str, str]]
"""A queue's ``share`` and ``deserved`` (a resource list), as plugins put them in its status."""


def plugin_figures(
    session: Session,
) -> tuple[dict[str, QueueFigures], dict[str, Obj | None]]:
    """Queue shares and node reservations as the session's plugins contribute them to each
    Queue's status (``proportion``'s ``share``/``deserved``, ``node-reservation``'s
    ``reservation``): the shares of the queues that have them, and every queue's reservation
    (None: none)."""
    fields = session.contributions.queue_fields
    shares: dict[str, QueueFigures] = {}
    for name, status in fields.items():
        if "share" in status:
            shares[name] = (float(status["share"]), dict(status.get("deserved") or {}))
    reservations = {name: fields.get(name, {}).get("reservation") for name in session.queues}
    return shares, reservations
