"""The resource types the simulated API server serves, and what each one supports.

A ``ResourceType`` says where a resource lives in the URL space (group, version, plural), its
kind, whether it is namespaced, which subresources it has, which field selectors it accepts,
how strategic merge patch merges its lists, and in which table of the store it is kept.
Two endpoints can share one table: core ``v1`` events and ``events.k8s.io/v1`` events are the
same objects seen through a conversion, exactly as in the real server.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pumice.sim.objects import Obj, core_to_events_v1, events_v1_to_core, get_path

FieldGetter = Callable[[Obj], str]
Converter = Callable[[Obj], Obj]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def _path(*steps: str) -> FieldGetter:
    if len(steps) == 2:
        # every field selector a list filters pods on: two steps, read without a loop (a
        # list of 150,000 pods evaluates it 150,000 times)
        outer, inner = steps

        def get_two(obj: Obj) -> str:
            part = obj.get(outer)
            value = part.get(inner) if isinstance(part, dict) else None
            return "" if value is None else str(value)

        return get_two

    def get(obj: Obj) -> str:
        value = get_path(obj, *steps)
        return "" if value is None else str(value)

    return get


def _flag(*steps: str) -> FieldGetter:
    def get(obj: Obj) -> str:
        return "true" if get_path(obj, *steps) is True else "false"

    return get


_META: dict[str, FieldGetter] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

_POD_FIELDS: dict[str, FieldGetter] = {
    **_META,
    "spec.nodeName": _path("spec", "nodeName"),
    "spec.schedulerName": _path("spec", "schedulerName"),
    "spec.restartPolicy": _path("spec", "restartPolicy"),
    "spec.serviceAccountName": _path("spec", "serviceAccountName"),
    "spec.hostNetwork": _flag("spec", "hostNetwork"),
    "status.phase": _path("status", "phase"),
    "status.podIP": _path("status", "podIP"),
    "status.nominatedNodeName": _path("status", "nominatedNodeName"),
}

_EVENT_FIELDS: dict[str, FieldGetter] = {
    **_META,
    "involvedObject.kind": _path("involvedObject", "kind"),
    "involvedObject.namespace": _path("involvedObject", "namespace"),
    "involvedObject.name": _path("involvedObject", "name"),
    "involvedObject.uid": _path("involvedObject", "uid"),
    "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
    "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
    "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _path("source", "component"),
    "type": _path("type"),
}

# events.k8s.io/v1 names the same fields differently; the selector is evaluated on the
# stored (core) form.
_EVENTS_V1_FIELDS: dict[str, FieldGetter] = {
    **_EVENT_FIELDS,
    **{
        "regarding." + sub: _EVENT_FIELDS["involvedObject." + sub]
        for sub in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        )
    },
    "reportingController": _EVENT_FIELDS["reportingComponent"],
    "deprecatedSource": _EVENT_FIELDS["source"],
}

MergeKeys = Mapping[tuple[str, ...], str]
"""Strategic-merge-patch list merge keys by path; ``*`` steps into every list item.
The key ``""`` marks a list of primitives merged as a set (like ``finalizers``)."""

_META_KEYS: dict[tuple[str, ...], str] = {
    ("metadata", "finalizers"): "",
    ("metadata", "ownerReferences"): "uid",
}

_CONTAINER_KEYS = {"": "name", "ports": "containerPort", "env": "name", "volumeMounts": "mountPath"}


def _containers(*base: str) -> dict[tuple[str, ...], str]:
    out: dict[tuple[str, ...], str] = {}
    for sub, key in _CONTAINER_KEYS.items():
        out[(*base, "*", sub) if sub else base] = key
    return out


_POD_KEYS: dict[tuple[str, ...], str] = {
    **_META_KEYS,
    **_containers("spec", "containers"),
    **_containers("spec", "initContainers"),
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("status", "conditions"): "type",
    ("status", "containerStatuses"): "name",
    ("status", "initContainerStatuses"): "name",
    ("status", "podIPs"): "ip",
    ("status", "hostIPs"): "ip",
}

_NODE_KEYS: dict[tuple[str, ...], str] = {
    **_META_KEYS,
    ("spec", "taints"): "key",
    ("spec", "podCIDRs"): "",
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
}


@dataclass(frozen=True)
class ResourceType:
    """One REST resource (``pods``, ``leases.coordination.k8s.io``, ...)."""

    plural: str
    kind: str
    group: str
    version: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()
    fields: Mapping[str, FieldGetter] = field(default_factory=lambda: dict(_META))
    merge_keys: MergeKeys | None = None
    """None: strategic merge patch is not supported (custom resources)."""
    storage: str = ""
    """The store table; empty means ``group/plural``."""
    to_view: Converter | None = None
    from_view: Converter | None = None
    generation: bool = True
    """Whether ``metadata.generation`` counts spec changes."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def table(self) -> str:
        return self.storage or f"{self.group}/{self.plural}"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def field_getter(self, name: str) -> FieldGetter | None:
        return self.fields.get(name)


NAMESPACES = ResourceType(
    "namespaces",
    "Namespace",
    "",
    "v1",
    False,
    "namespace",
    ("ns",),
    ("status", "finalize"),
    ("create", "delete", "get", "list", "patch", "update", "watch"),
    fields={**_META, "status.phase": _path("status", "phase")},
    merge_keys=_META_KEYS,
    generation=False,
)
NODES = ResourceType(
    "nodes",
    "Node",
    "",
    "v1",
    False,
    "node",
    ("no",),
    ("status",),
    fields={**_META, "spec.unschedulable": _flag("spec", "unschedulable")},
    merge_keys=_NODE_KEYS,
    generation=False,
)
PODS = ResourceType(
    "pods",
    "Pod",
    "",
    "v1",
    True,
    "pod",
    ("po",),
    ("status", "binding", "eviction"),
    categories=("all",),
    fields=_POD_FIELDS,
    merge_keys=_POD_KEYS,
)
BINDINGS = ResourceType(
    "bindings", "Binding", "", "v1", True, "binding", verbs=("create",), generation=False
)
EVENTS = ResourceType(
    "events",
    "Event",
    "",
    "v1",
    True,
    "event",
    ("ev",),
    fields=_EVENT_FIELDS,
    merge_keys=_META_KEYS,
    generation=False,
)
EVENTS_V1 = ResourceType(
    "events",
    "Event",
    "events.k8s.io",
    "v1",
    True,
    "event",
    ("ev",),
    fields=_EVENTS_V1_FIELDS,
    merge_keys=_META_KEYS,
    storage=EVENTS.table,
    to_view=core_to_events_v1,
    from_view=events_v1_to_core,
    generation=False,
)
LEASES = ResourceType(
    "leases",
    "Lease",
    "coordination.k8s.io",
    "v1",
    True,
    "lease",
    merge_keys=_META_KEYS,
    generation=False,
)
PRIORITY_CLASSES = ResourceType(
    "priorityclasses",
    "PriorityClass",
    "scheduling.k8s.io",
    "v1",
    False,
    "priorityclass",
    ("pc",),
    merge_keys=_META_KEYS,
    generation=False,
)
PODGROUPS = ResourceType(
    "podgroups",
    "PodGroup",
    "scheduling.volcano.sh",
    "v1beta1",
    True,
    "podgroup",
    ("pg", "podgroup-v1beta1"),
    ("status",),
)
QUEUES = ResourceType(
    "queues",
    "Queue",
    "scheduling.volcano.sh",
    "v1beta1",
    False,
    "queue",
    ("q", "queue-v1beta1"),
    ("status",),
)

# -- volumes: claims, volumes and the storage.k8s.io kinds (see pumice.sim.volumes) ----------
STORAGE_GROUP = "storage.k8s.io"


def _storage(
    plural: str, kind: str, group: str, namespaced: bool, short: tuple[str, ...] = ()
) -> ResourceType:
    """A storage kind: strategic merge patch on metadata (and status conditions), no
    ``metadata.generation``; claims and volumes have a status subresource."""
    sub = ("status",) if not group else ()
    keys = {**_META_KEYS, ("status", "conditions"): "type"}
    made = ResourceType(plural, kind, group, "v1", namespaced, kind.lower(), short, sub)
    return dataclasses.replace(made, merge_keys=keys, generation=False)


PERSISTENT_VOLUME_CLAIMS = _storage(
    "persistentvolumeclaims", "PersistentVolumeClaim", "", True, ("pvc",)
)
PERSISTENT_VOLUMES = _storage("persistentvolumes", "PersistentVolume", "", False, ("pv",))
STORAGE_CLASSES = _storage("storageclasses", "StorageClass", STORAGE_GROUP, False, ("sc",))
CSI_NODES = _storage("csinodes", "CSINode", STORAGE_GROUP, False)
CSI_DRIVERS = _storage("csidrivers", "CSIDriver", STORAGE_GROUP, False)
STORAGE_TYPES: tuple[ResourceType, ...] = (PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES)
STORAGE_TYPES += (STORAGE_CLASSES, CSI_NODES, CSI_DRIVERS)

# -- identities and RBAC (see pumice.sim.rbac and pumice.sim.access) ------------------------
RBAC_GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNTS = ResourceType(
    "serviceaccounts",
    "ServiceAccount",
    "",
    "v1",
    True,
    "serviceaccount",
    ("sa",),
    ("token",),
    merge_keys={**_META_KEYS, ("secrets",): "name"},
    generation=False,
)
ROLES = ResourceType(
    "roles", "Role", RBAC_GROUP, "v1", True, "role", merge_keys=_META_KEYS, generation=False
)
CLUSTER_ROLES = ResourceType(
    "clusterroles",
    "ClusterRole",
    RBAC_GROUP,
    "v1",
    False,
    "clusterrole",
    merge_keys=_META_KEYS,
    generation=False,
)
ROLE_BINDINGS = ResourceType(
    "rolebindings",
    "RoleBinding",
    RBAC_GROUP,
    "v1",
    True,
    "rolebinding",
    merge_keys=_META_KEYS,
    generation=False,
)
CLUSTER_ROLE_BINDINGS = ResourceType(
    "clusterrolebindings",
    "ClusterRoleBinding",
    RBAC_GROUP,
    "v1",
    False,
    "clusterrolebinding",
    merge_keys=_META_KEYS,
    generation=False,
)
SELF_SUBJECT_ACCESS_REVIEWS = ResourceType(
    "selfsubjectaccessreviews",
    "SelfSubjectAccessReview",
    "authorization.k8s.io",
    "v1",
    False,
    "selfsubjectaccessreview",
    verbs=("create",),
    generation=False,
)
SELF_SUBJECT_REVIEWS = ResourceType(
    "selfsubjectreviews",
    "SelfSubjectReview",
    "authentication.k8s.io",
    "v1",
    False,
    "selfsubjectreview",
    verbs=("create",),
    generation=False,
)
SELF_SUBJECT_RULES_REVIEWS = ResourceType(
    "selfsubjectrulesreviews",
    "SelfSubjectRulesReview",
    "authorization.k8s.io",
    "v1",
    False,
    "selfsubjectrulesreview",
    verbs=("create",),
    generation=False,
)
REVIEWS = (SELF_SUBJECT_ACCESS_REVIEWS, SELF_SUBJECT_RULES_REVIEWS, SELF_SUBJECT_REVIEWS)
"""Answered, never stored (``pumice.sim.access``)."""
RBAC_TYPES = (
    SERVICE_ACCOUNTS,
    ROLES,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    CLUSTER_ROLE_BINDINGS,
    *REVIEWS,
)

ALL_TYPES: tuple[ResourceType, ...] = (
    NAMESPACES,
    NODES,
    PODS,
    BINDINGS,
    EVENTS,
    EVENTS_V1,
    LEASES,
    PRIORITY_CLASSES,
    PODGROUPS,
    QUEUES,
    *STORAGE_TYPES,
    *RBAC_TYPES,
)

VOLCANO_GROUP = "scheduling.volcano.sh"
"""Volcano's CRDs (PodGroups, Queues): a cluster without them serves no such group."""


class ResourceSet:
    """The resource types one server serves, indexed by URL path and by kind.

    Each ``SimServer`` holds its own (``served_types``), so two servers in one process may
    serve different groups; each set is built once and never changes.
    """

    def __init__(self, types: tuple[ResourceType, ...]) -> None:
        self.types = types
        self._by_path = {(t.group, t.version, t.plural): t for t in types}
        # (apiVersion, kind) -> the type that stores objects of that kind
        self._by_kind = {
            (t.api_version, t.kind): t for t in types if t is not BINDINGS and t not in REVIEWS
        }
        self.groups = frozenset(t.group for t in types)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def for_object(self, api_version: str, kind: str) -> ResourceType | None:
        """The resource type that stores objects of ``apiVersion``/``kind``."""
        return self._by_kind.get((api_version, kind))

    def group_versions(self) -> dict[str, list[str]]:
        """Served groups and their versions, in discovery order (core group is "")."""
        out: dict[str, list[str]] = {}
        for t in self.types:
            versions = out.setdefault(t.group, [])
            if t.version not in versions:
                versions.append(t.version)
        return out

    def types_in(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self.types if t.group == group and t.version == version]


EVERY_TYPE = ResourceSet(ALL_TYPES)


@functools.cache
def served_types(volcano: bool = True, storage: bool = True) -> ResourceSet:
    """What a server serves: everything, or everything but Volcano's group and/or the storage
    kinds (claims, volumes and ``storage.k8s.io``); each set is built once."""
    if volcano and storage:
        return EVERY_TYPE
    return ResourceSet(
        tuple(
            t
            for t in ALL_TYPES
            if (volcano or t.group != VOLCANO_GROUP) and (storage or t not in STORAGE_TYPES)
        )
    )


def for_object(api_version: str, kind: str) -> ResourceType | None:
    """The resource type that stores objects of ``apiVersion``/``kind`` on a server that
    serves every group (a given server's own set may lack it: ``ResourceSet.for_object``)."""
    return EVERY_TYPE.for_object(api_version, kind)
