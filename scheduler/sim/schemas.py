"""The shape of each kind we serve, as far as field validation needs it.

A schema is a small tree: a ``dict`` lists an object's known fields (anything else is an
*unknown field*, refused or dropped by ``fieldValidation``); ``ListOf``/``MapOf`` describe
lists and maps; leaves name a type. ``ANY`` marks a subtree we do not describe (accepted as
is), which keeps the tables short: they go as deep as the fields pumice reads and the places
where a typo would silently change scheduling (container resources, node capacity, PodGroup
and Queue specs). Built-in kinds use Go-decoding semantics (a bad quantity or a wrong type is a
400 at decoding); the Volcano kinds use the CRD's OpenAPI rules (422 naming the field) with
bounds and enums as Volcano's CRDs declare them.
"""

from __future__ import annotations

from dataclasses import dataclass

ANY = "any"
STRING = "string"
INTEGER = "integer"
BOOLEAN = "boolean"
QUANTITY = "quantity"
"""A ``resource.Quantity`` of a built-in kind: decoded, refused with 400, canonicalized."""
OTHER_FIELDS = "*"
"""A key of a ``dict`` schema: the schema of every field it does not name (kept, not refused
or dropped, as under ``x-kubernetes-preserve-unknown-fields``)."""
CRD_QUANTITY = "crd-quantity"
"""An int-or-string matching the quantity pattern of a CRD: 422 when it does not match."""


@dataclass(frozen=True)
class ListOf:
    item: Schema


@dataclass(frozen=True)
class MapOf:
    value: Schema


@dataclass(frozen=True)
class Bounded:
    """A CRD integer with ``minimum``/``maximum``."""

    minimum: int | None = None
    maximum: int | None = None


@dataclass(frozen=True)
class OneOf:
    """A CRD string enum."""

    values: tuple[str, ...]


Schema = str | dict[str, "Schema"] | ListOf | MapOf | Bounded | OneOf

OBJECT_META: dict[str, Schema] = {
    "name": STRING,
    "generateName": STRING,
    "namespace": STRING,
    "selfLink": STRING,
    "uid": STRING,
    "resourceVersion": STRING,
    "generation": INTEGER,
    "creationTimestamp": ANY,
    "deletionTimestamp": ANY,
    "deletionGracePeriodSeconds": INTEGER,
    "labels": MapOf(STRING),
    "annotations": MapOf(STRING),
    "ownerReferences": ANY,
    "finalizers": ListOf(STRING),
    "managedFields": ANY,
}


def _open(*names: str) -> dict[str, Schema]:
    """Known fields whose content we do not describe."""
    return dict.fromkeys(names, ANY)


def _top(**fields: Schema) -> dict[str, Schema]:
    return {"apiVersion": STRING, "kind": STRING, "metadata": OBJECT_META, **fields}


_RESOURCES: dict[str, Schema] = {
    "limits": MapOf(QUANTITY),
    "requests": MapOf(QUANTITY),
    "claims": ANY,
}

_CONTAINER: dict[str, Schema] = _open(
    "args",
    "command",
    "env",
    "envFrom",
    "image",
    "imagePullPolicy",
    "lifecycle",
    "livenessProbe",
    "name",
    "ports",
    "readinessProbe",
    "resizePolicy",
    "restartPolicy",
    "securityContext",
    "startupProbe",
    "stdin",
    "stdinOnce",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "tty",
    "volumeDevices",
    "volumeMounts",
    "workingDir",
)
_CONTAINER["resources"] = _RESOURCES
_CONTAINER["name"] = STRING
_CONTAINER["image"] = STRING

_POD_SPEC: dict[str, Schema] = _open(
    "activeDeadlineSeconds",
    "affinity",
    "automountServiceAccountToken",
    "dnsConfig",
    "dnsPolicy",
    "enableServiceLinks",
    "hostAliases",
    "hostIPC",
    "hostNetwork",
    "hostPID",
    "hostUsers",
    "hostname",
    "imagePullSecrets",
    "nodeSelector",
    "os",
    "preemptionPolicy",
    "readinessGates",
    "resourceClaims",
    "restartPolicy",
    "runtimeClassName",
    "securityContext",
    "serviceAccount",
    "setHostnameAsFQDN",
    "shareProcessNamespace",
    "subdomain",
    "topologySpreadConstraints",
    "volumes",
)
_POD_SPEC.update(
    {
        "containers": ListOf(_CONTAINER),
        "initContainers": ListOf(_CONTAINER),
        "ephemeralContainers": ListOf({**_CONTAINER, "targetContainerName": STRING}),
        "overhead": MapOf(QUANTITY),
        "resources": _RESOURCES,
        "nodeName": STRING,
        "schedulerName": STRING,
        "priority": INTEGER,
        "priorityClassName": STRING,
        "serviceAccountName": STRING,
        "terminationGracePeriodSeconds": INTEGER,
        "nodeSelector": MapOf(STRING),
        "tolerations": ANY,
        "schedulingGates": ListOf({"name": STRING}),
    }
)

_POD_STATUS: dict[str, Schema] = _open(
    "conditions",
    "containerStatuses",
    "ephemeralContainerStatuses",
    "hostIP",
    "hostIPs",
    "initContainerStatuses",
    "message",
    "nominatedNodeName",
    "phase",
    "podIP",
    "podIPs",
    "qosClass",
    "reason",
    "resize",
    "resourceClaimStatuses",
    "startTime",
)

POD = _top(spec=_POD_SPEC, status=_POD_STATUS)

NODE = _top(
    spec={
        "podCIDR": STRING,
        "podCIDRs": ListOf(STRING),
        "providerID": STRING,
        "unschedulable": BOOLEAN,
        "taints": ANY,
        "configSource": ANY,
        "externalID": STRING,
    },
    status={
        "capacity": MapOf(QUANTITY),
        "allocatable": MapOf(QUANTITY),
        **_open(
            "phase",
            "conditions",
            "addresses",
            "daemonEndpoints",
            "nodeInfo",
            "images",
            "volumesInUse",
            "volumesAttached",
            "config",
            "runtimeHandlers",
            "features",
        ),
    },
)

NAMESPACE = _top(spec={"finalizers": ListOf(STRING)}, status={"phase": STRING, "conditions": ANY})

PRIORITY_CLASS = _top(
    value=INTEGER, globalDefault=BOOLEAN, description=STRING, preemptionPolicy=STRING
)

LEASE = _top(
    spec={
        "holderIdentity": STRING,
        "leaseDurationSeconds": INTEGER,
        "acquireTime": ANY,
        "renewTime": ANY,
        "leaseTransitions": INTEGER,
        "strategy": STRING,
        "preferredHolder": STRING,
    }
)

EVENT = _top(
    **_open(
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "series",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    )
)

EVENT_V1 = _top(
    **_open(
        "eventTime",
        "series",
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
        "regarding",
        "related",
        "note",
        "type",
        "deprecatedSource",
        "deprecatedFirstTimestamp",
        "deprecatedLastTimestamp",
        "deprecatedCount",
    )
)

BINDING = _top(target=ANY)

_CONDITIONS = ANY

PODGROUP = _top(
    spec={
        "minMember": Bounded(minimum=0, maximum=2**31 - 1),
        "minResources": MapOf(CRD_QUANTITY),
        "minTaskMember": MapOf(Bounded(minimum=-(2**31), maximum=2**31 - 1)),
        "queue": STRING,
        "priorityClassName": STRING,
        "networkTopology": ANY,
        "subGroupPolicy": ANY,
    },
    status={
        "phase": STRING,
        "conditions": _CONDITIONS,
        "running": INTEGER,
        "succeeded": INTEGER,
        "failed": INTEGER,
    },
)

QUEUE = _top(
    spec={
        "weight": Bounded(minimum=1, maximum=65535),
        "capability": MapOf(CRD_QUANTITY),
        "deserved": MapOf(CRD_QUANTITY),
        "guarantee": {"resource": MapOf(CRD_QUANTITY)},
        "reclaimable": BOOLEAN,
        "priority": Bounded(minimum=0),
        "parent": STRING,
        "type": STRING,
        "affinity": ANY,
        "extendClusters": ANY,
        "dequeueStrategy": OneOf(("fifo", "traverse")),
    },
    status={
        "state": OneOf(("Open", "Closed", "Closing", "Unknown")),
        "allocated": MapOf(CRD_QUANTITY),
        "reservation": ANY,
        **{
            name: Bounded(minimum=0)
            for name in ("pending", "running", "inqueue", "completed", "unknown")
        },
        # what scheduler plugins add (their queue_status hook): kept, as pumice's shipped
        # CRDs (conf/deploy/crds.yaml) keep them; Volcano's own Queue CRD would prune them
        OTHER_FIELDS: ANY,
    },
)

# -- volumes ------------------------------------------------------------------------------

_CLAIM_REF: dict[str, Schema] = _open(
    "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"
)

PERSISTENT_VOLUME_CLAIM = _top(
    spec={
        "accessModes": ListOf(STRING),
        "selector": ANY,
        "resources": {"limits": MapOf(QUANTITY), "requests": MapOf(QUANTITY)},
        "volumeName": STRING,
        "storageClassName": STRING,
        "volumeMode": STRING,
        "dataSource": ANY,
        "dataSourceRef": ANY,
        "volumeAttributesClassName": STRING,
    },
    status={
        "phase": STRING,
        "accessModes": ListOf(STRING),
        "capacity": MapOf(QUANTITY),
        "allocatedResources": MapOf(QUANTITY),
        **_open(
            "conditions",
            "allocatedResourceStatuses",
            "currentVolumeAttributesClassName",
            "modifyVolumeStatus",
        ),
    },
)

VOLUME_SOURCES = (
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
)
"""The volume types a PersistentVolume may name (exactly one)."""

PERSISTENT_VOLUME = _top(
    spec={
        "capacity": MapOf(QUANTITY),
        "accessModes": ListOf(STRING),
        "claimRef": _CLAIM_REF,
        "persistentVolumeReclaimPolicy": STRING,
        "storageClassName": STRING,
        "mountOptions": ListOf(STRING),
        "volumeMode": STRING,
        "nodeAffinity": ANY,
        "volumeAttributesClassName": STRING,
        **_open(*VOLUME_SOURCES),
    },
    status={"phase": STRING, "message": STRING, "reason": STRING, "lastPhaseTransitionTime": ANY},
)

STORAGE_CLASS = _top(
    provisioner=STRING,
    parameters=MapOf(STRING),
    reclaimPolicy=STRING,
    mountOptions=ListOf(STRING),
    allowVolumeExpansion=BOOLEAN,
    volumeBindingMode=STRING,
    allowedTopologies=ANY,
)

CSI_NODE = _top(
    spec={
        "drivers": ListOf(
            {
                "name": STRING,
                "nodeID": STRING,
                "topologyKeys": ListOf(STRING),
                "allocatable": {"count": INTEGER},
            }
        )
    }
)

CSI_DRIVER = _top(
    spec={
        "attachRequired": BOOLEAN,
        "podInfoOnMount": BOOLEAN,
        "storageCapacity": BOOLEAN,
        "requiresRepublish": BOOLEAN,
        "seLinuxMount": BOOLEAN,
        "fsGroupPolicy": STRING,
        "volumeLifecycleModes": ListOf(STRING),
        "tokenRequests": ANY,
        "nodeAllocatableUpdatePeriodSeconds": INTEGER,
    }
)

BY_KIND: dict[tuple[str, str], Schema] = {
    ("v1", "Pod"): POD,
    ("v1", "Node"): NODE,
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "Event"): EVENT,
    ("v1", "Binding"): BINDING,
    ("events.k8s.io/v1", "Event"): EVENT_V1,
    ("coordination.k8s.io/v1", "Lease"): LEASE,
    ("scheduling.k8s.io/v1", "PriorityClass"): PRIORITY_CLASS,
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): PODGROUP,
    ("scheduling.volcano.sh/v1beta1", "Queue"): QUEUE,
    ("v1", "PersistentVolumeClaim"): PERSISTENT_VOLUME_CLAIM,
    ("v1", "PersistentVolume"): PERSISTENT_VOLUME,
    ("storage.k8s.io/v1", "StorageClass"): STORAGE_CLASS,
    ("storage.k8s.io/v1", "CSINode"): CSI_NODE,
    ("storage.k8s.io/v1", "CSIDriver"): CSI_DRIVER,
}
