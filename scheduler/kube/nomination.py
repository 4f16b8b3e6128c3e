"""``status.nominatedNodeName``: where a preemptor waits for the room its victims free.

Written by the daemon (not part of the agreed ``StatusWriter`` surface, hence its own module):
a merge patch of the pod's status subresource, skipped when the pod already says so. The
allocate action reads it back from the pod and places the preemptor there first.
"""

from __future__ import annotations

import logging

from pumice.kube.client import MERGE_PATCH, Kube
from pumice.kube.errors import KubeError, NotFound
from pumice.kube.resources import PODS
from pumice.plain import Obj

log = logging.getLogger("pumice.kube.nomination")


async def nominate(kube: Kube, pod: Obj, node: str) -> bool:
    """Set the pod's ``status.nominatedNodeName`` to ``node``; True when written."""
    meta = pod.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name")
    if not namespace or not name or (pod.get("status") or {}).get("nominatedNodeName") == node:
        return False
    try:
        await kube.request(
            "PATCH",
            PODS.path(str(namespace), str(name), "status"),
            body={"status": {"nominatedNodeName": node}},
            content_type=MERGE_PATCH,
        )
    except NotFound:
        return False
    except KubeError as exc:
        log.info("nominated node of pod %s/%s not written: %s", namespace, name, exc)
        return False
    return True
