"""Which storage kinds the cluster serves, and the one log line when it serves none.

Volume decisions read claims, volumes, StorageClasses, CSINodes and CSIDrivers; the daemon
informs the cache of each kind the API serves (discovery, as for Volcano's CRDs). A cluster
without the storage APIs is scheduled as before, without volumes: said once, at start.
"""

from __future__ import annotations

import logging

from pumice.cache.storage import KINDS
from pumice.kube import STORAGE_KINDS, Kind, Kube, served

log = logging.getLogger("pumice.daemon")


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
