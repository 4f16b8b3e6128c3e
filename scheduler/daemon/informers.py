"""What the daemon lists and watches: the kinds the cluster serves, one informer per kind the
cache takes, and the wait for their initial lists.

Volcano's PodGroups and Queues, and the storage kinds (claims, volumes, StorageClasses,
CSINodes, CSIDrivers), are read only where the API serves them (discovery): a cluster without
Volcano schedules every pod as a job of its own, one without the storage APIs schedules pods
without their volumes, each said once at start. Nodes are listed first, so pods land on nodes
the cache already knows; the rest start together (the cache copes with any order). No session
runs before every initial list is in the cache.
"""

from __future__ import annotations

import asyncio
import logging

from pumice.cache import ClusterCache, Handler
from pumice.cache.storage import KINDS
from pumice.cache.storage import describe as describe_storage
from pumice.cache.storage import slimmer as storage_slimmer
from pumice.kube import (
    NAMESPACES,
    NODES,
    PODGROUPS,
    PODS,
    PRIORITYCLASSES,
    QUEUES,
    STORAGE_KINDS,
    Informer,
    Kind,
    Kube,
    served,
)

log = logging.getLogger("pumice.daemon")

InformerSpec = tuple[Kind, Handler, str, str | None]
"""(kind, the cache's handler for it, the informer's name, its field selector)."""


async def volcano_served(kube: Kube, default_queue: str) -> bool:
    """Does the API server serve Volcano's PodGroups and Queues? Said once when it does not."""
    volcano = await served(kube, PODGROUPS) and await served(kube, QUEUES)
    if not volcano:
        log.warning(
            "Volcano's PodGroup and Queue resources are not served: every pod is a job of "
            "its own in the queue %r",
            default_queue,
        )
    return volcano


async def storage_served(kube: Kube) -> list[tuple[Kind, str]]:
    """(kind, the cache's store for it) for each storage kind the API server serves."""
    found = [
        (kind, store)
        for kind, store in zip(STORAGE_KINDS, KINDS, strict=True)
        if await served(kube, kind)
    ]
    if not found:
        log.warning(
            "the API server serves no storage APIs (PersistentVolumeClaims, PersistentVolumes, "
            "storage.k8s.io): pods are scheduled without their volumes"
        )
    elif len(found) < len(STORAGE_KINDS):
        missing = [kind.plural for kind in STORAGE_KINDS if kind not in dict(found)]
        log.warning("the API server does not serve %s: not read", ", ".join(missing))
    return found


def informer_specs(
    cache: ClusterCache, scheduler_name: str, storage_kinds: list[tuple[Kind, str]]
) -> list[InformerSpec]:
    """The informers the cache is fed by, nodes first: the pending pods are this scheduler's
    pods without a node that have not finished; the assigned pods every pod with a node,
    finished ones too (a PodGroup counts its completed members, as Volcano's phases do)."""
    ours = f"spec.schedulerName={scheduler_name},spec.nodeName="
    live = "status.phase!=Succeeded,status.phase!=Failed"
    specs: list[InformerSpec] = [
        (NODES, cache.nodes, "nodes", None),
        (PODS, cache.pending_pods, "pending-pods", f"{ours},{live}"),
        (PODS, cache.assigned_pods, "assigned-pods", "spec.nodeName!="),
        (PRIORITYCLASSES, cache.priority_classes, "priorityclasses", None),
        (NAMESPACES, cache.namespaces, "namespaces", None),  # for namespaceSelector
    ]
    if cache.volcano:
        # Queues before PodGroups, PodGroups before pods would be ideal; the cache copes
        # with any order, so they simply start together after the nodes.
        specs.insert(1, (QUEUES, cache.queues, "queues", None))
        specs.insert(2, (PODGROUPS, cache.podgroups_handler, "podgroups", None))
    for kind, store in storage_kinds:
        specs.append((kind, cache.storage.handler(store), kind.plural, None))
    return specs


async def start_informers(
    kube: Kube,
    cache: ClusterCache,
    scheduler_name: str,
    storage_kinds: list[tuple[Kind, str]],
    *,
    into: list[Informer],
    stop: asyncio.Event,
) -> list[asyncio.Task[None]]:
    """Start the informers (each added to ``into`` as it starts, for /readyz) and wait for
    their initial lists, the nodes' first; their tasks. Returns early when ``stop`` is set."""
    specs = informer_specs(cache, scheduler_name, storage_kinds)
    # the storage kinds' informers store them slimmed too: not a second, whole copy of each
    slimmers = {kind.plural: storage_slimmer(store) for kind, store in storage_kinds}
    runners: list[asyncio.Task[None]] = []
    for i, (kind, handler, name, selector) in enumerate(specs):
        informer = Informer(
            kube,
            kind,
            handler,
            name=name,
            field_selector=selector,
            transform=cache.slim_pod if kind is PODS else slimmers.get(name),
        )
        into.append(informer)
        runners.append(asyncio.get_running_loop().create_task(informer.run(), name=name))
        # Nodes first: pods then land on nodes the cache already knows.
        if i == 0 and not await wait_synced([informer], runners, stop):
            return runners
    if not await wait_synced(into, runners, stop):
        return runners
    log.info(
        "cache synced: %d nodes, %d pods, %d podgroups, %d queues",
        len(cache.state.nodes),
        len(cache.pods),
        len(cache.podgroups),
        len(cache.state.queues),
    )
    if cache.storage.served:
        log.info("storage synced: %s", describe_storage(cache.storage))
    return runners


async def wait_synced(
    informers: list[Informer], runners: list[asyncio.Task[None]], stop: asyncio.Event
) -> bool:
    """Wait for every initial list; an informer that dies first is an error, not a hang.
    False when told to stop first (a list refused for good must not make SIGTERM wait)."""
    waits = [asyncio.ensure_future(i.synced.wait()) for i in informers]
    stopping = asyncio.ensure_future(stop.wait())
    try:
        pending = set(waits)
        while pending:
            await asyncio.wait(
                pending | {stopping} | {r for r in runners if not r.done()},
                return_when=asyncio.FIRST_COMPLETED,
            )
            if stopping.done():
                return False
            for runner in runners:
                if runner.done() and not runner.cancelled():
                    error = runner.exception()
                    if error is not None:
                        raise error
            pending = {w for w in waits if not w.done()}
        return True
    finally:
        stopping.cancel()
        for w in waits:
            w.cancel()
