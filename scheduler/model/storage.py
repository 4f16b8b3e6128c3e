"""The storage objects a session may read: claims, volumes, classes, CSI nodes and drivers.

``StorageObjects`` is what the cache's storage informers hold, as one read-only picture: each
kind a mapping from its key to the object (a plain dict, slimmed by the cache) — claims by
``namespace/name``, the cluster-scoped kinds by name. The mappings are read-only views and the
objects are shared with the cache, which never changes one in place (an update replaces it);
a session must not change them either. ``served`` says whether the cluster serves the storage
APIs at all: without them every mapping is empty and pods' volumes cannot be evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pumice.plain import Obj


def _empty() -> Mapping[str, Obj]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class StorageObjects:
    claims: Mapping[str, Obj] = field(default_factory=_empty)
    """PersistentVolumeClaims by ``namespace/name``."""
    volumes: Mapping[str, Obj] = field(default_factory=_empty)
    """PersistentVolumes by name."""
    classes: Mapping[str, Obj] = field(default_factory=_empty)
    """StorageClasses by name."""
    csinodes: Mapping[str, Obj] = field(default_factory=_empty)
    """CSINodes by name (the node's name)."""
    csidrivers: Mapping[str, Obj] = field(default_factory=_empty)
    """CSIDrivers by name (the driver's name)."""
    served: bool = False
    """Whether the cluster serves the storage APIs (claims and volumes at least)."""

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self.claims.get(f"{namespace}/{name}")


NO_STORAGE = StorageObjects()
"""A cluster without storage APIs (or a snapshot built without them)."""
