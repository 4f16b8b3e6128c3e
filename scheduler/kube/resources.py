"""The API resources pumice reads and writes, and where each lives in the URL space.

``Kind.path(namespace, name, subresource)`` builds the REST path the way the API server's
request-info parser reads it back: ``/api/v1/namespaces/ns/pods/name/binding`` for the core
group, ``/apis/group/version/...`` for the others. ``served`` asks discovery whether a kind is
served at all, so the daemon can skip Volcano's CRDs on a cluster that has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pumice.kube.errors import NotFound

if TYPE_CHECKING:
    from pumice.kube.client import Kube


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The collection path (``name`` None) or an object's path, optionally a subresource.

        A namespaced kind without a namespace addresses the collection across all namespaces.
        """
        parts = [self.group_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


NODES = Kind("", "v1", "nodes", False, "Node")
PODS = Kind("", "v1", "pods", True, "Pod")
PODGROUPS = Kind("scheduling.volcano.sh", "v1beta1", "podgroups", True, "PodGroup")
QUEUES = Kind("scheduling.volcano.sh", "v1beta1", "queues", False, "Queue")
NAMESPACES = Kind("", "v1", "namespaces", False, "Namespace")
PRIORITYCLASSES = Kind("scheduling.k8s.io", "v1", "priorityclasses", False, "PriorityClass")
PERSISTENTVOLUMECLAIMS = Kind("", "v1", "persistentvolumeclaims", True, "PersistentVolumeClaim")
PERSISTENTVOLUMES = Kind("", "v1", "persistentvolumes", False, "PersistentVolume")
STORAGECLASSES = Kind("storage.k8s.io", "v1", "storageclasses", False, "StorageClass")
CSINODES = Kind("storage.k8s.io", "v1", "csinodes", False, "CSINode")
CSIDRIVERS = Kind("storage.k8s.io", "v1", "csidrivers", False, "CSIDriver")
STORAGE_KINDS = (PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, STORAGECLASSES, CSINODES, CSIDRIVERS)
"""What volume decisions read, each informed only where the cluster serves it."""
LEASES = Kind("coordination.k8s.io", "v1", "leases", True, "Lease")
EVENTS = Kind("events.k8s.io", "v1", "events", True, "Event")
CORE_EVENTS = Kind("", "v1", "events", True, "Event")


async def served(kube: Kube, kind: Kind) -> bool:
    """Whether the API server serves ``kind`` (discovery of its group version)."""
    try:
        doc = await kube.request("GET", kind.group_path)
    except NotFound:
        return False
    resources = doc.get("resources") or []
    return any(isinstance(r, dict) and r.get("name") == kind.plural for r in resources)
