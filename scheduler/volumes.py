"""Public API: the vocabulary of volume binding, for plugins that read claims and volumes.

``pumice`` itself is the public API for plugins and actions (docs/plugins.md); this module is
its one public companion, kept apart because its names (``meta``, ``capacity``, ``requested``...)
only make sense next to each other. They read plain-dict PersistentVolumeClaims,
PersistentVolumes, StorageClasses and pods as kube-scheduler's volume plugins do, and
``StorageObjects`` is the session's read-only view of the storage kinds
(``SessionView.storage``). The rules are written out in ``pumice.model.volumes``; the core,
the built-in volume filters and the simulated cluster's volume controllers all read them from
there, so a plugin and the controllers it talks to agree on what a claim says.
"""

from pumice.model.volumes import (
    AVAILABLE,
    BIND_COMPLETED,
    IN_TREE_DISK_SOURCES,
    LOST,
    NO_STORAGE,
    READ_WRITE_ONCE_POD,
    SELECTED_NODE,
    WAIT_FOR_FIRST_CONSUMER,
    ClaimUse,
    StorageObjects,
    access_modes,
    attributes_class,
    can_provision,
    capacity,
    claim_key,
    claim_ref_key,
    claim_uses,
    claims_of,
    class_of,
    fits,
    is_bound,
    is_delay_binding,
    local_volume_nodes,
    meta,
    node_affinity_terms,
    not_owner_message,
    owned_by,
    requested,
    selected_node,
    selector_matches,
    spec_of,
    volume_mode,
)
from pumice.plain import ObjView

__all__ = [
    "AVAILABLE",
    "BIND_COMPLETED",
    "IN_TREE_DISK_SOURCES",
    "LOST",
    "NO_STORAGE",
    "READ_WRITE_ONCE_POD",
    "SELECTED_NODE",
    "WAIT_FOR_FIRST_CONSUMER",
    "ClaimUse",
    "ObjView",
    "StorageObjects",
    "access_modes",
    "attributes_class",
    "can_provision",
    "capacity",
    "claim_key",
    "claim_ref_key",
    "claim_uses",
    "claims_of",
    "class_of",
    "fits",
    "is_bound",
    "is_delay_binding",
    "local_volume_nodes",
    "meta",
    "node_affinity_terms",
    "not_owner_message",
    "owned_by",
    "requested",
    "selected_node",
    "selector_matches",
    "spec_of",
    "volume_mode",
]
