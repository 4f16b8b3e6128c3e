"""Pods as the cache keeps them: only what scheduling reads, with equal parts shared.

The informers store every pod they list, and the cache's tasks point at the same dicts, so a
pod's size is paid once per pod for as long as it exists: at 150,000 pods, every kilobyte is
150 MB. A pod as the API server sends it is mostly what no decision reads (environment,
commands, probes, volume mounts, container statuses, kubectl's last-applied copy, service
account and DNS settings); ``PodSlimmer`` drops that, and makes the parts that are the same in
many pods (a container, the default tolerations, a status of ``Running``, a ReplicaSet's
labels) one shared object: pods of one template then differ only in name, uid, version and
node. Everything a predicate, a score, a plugin or a status write may read stays (see
``KEPT_CONTAINER_FIELDS`` and ``DROPPED_SPEC_FIELDS``); of ``spec.volumes`` only the volumes
that constrain placement stay (claims, ephemeral volumes, in-tree disks:
``pumice.model.volumes``).

Shared parts are never changed in place: the cache and the informers treat every object they
hold as read-only (an update arrives as a new object).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import orjson

from pumice.model.volumes import constraining_volumes
from pumice.plain import Obj

KEPT_CONTAINER_FIELDS = ("name", "image", "resources", "ports", "restartPolicy")
"""What a container keeps: its requests, host ports and whether it is a sidecar (an init
container with ``restartPolicy: Always``); the name and image to say which it is."""

DROPPED_SPEC_FIELDS = frozenset(
    {
        "volumes",  # but for claims and disks: see ``constraining_volumes``
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "dnsPolicy",
        "dnsConfig",
        "enableServiceLinks",
        "securityContext",
        "hostname",
        "subdomain",
        "setHostnameAsFQDN",
        "hostAliases",
        "imagePullSecrets",
        "readinessGates",
        "restartPolicy",
        "shareProcessNamespace",
    }
)
"""Pod spec fields no scheduling decision reads (the kubelet's business)."""

DROPPED_STATUS_FIELDS = frozenset(
    {
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
        "podIP",
        "podIPs",
        "hostIP",
        "hostIPs",
        "startTime",
        "qosClass",
        "resize",
    }
)
DROPPED_METADATA_FIELDS = frozenset(
    {"managedFields", "ownerReferences", "generation", "selfLink", "generateName"}
)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_INTERNED_SPEC_FIELDS = ("nodeName", "schedulerName", "priorityClassName", "preemptionPolicy")
_DROP, _VOLUMES, _CONTAINERS, _INTERN = "drop", "volumes", "containers", "intern"
_SPEC_ACTIONS = {
    **dict.fromkeys(DROPPED_SPEC_FIELDS, _DROP),
    "volumes": _VOLUMES,
    **dict.fromkeys(_CONTAINER_LISTS, _CONTAINERS),
    **dict.fromkeys(_INTERNED_SPEC_FIELDS, _INTERN),
}
"""What becomes of each spec field (others: kept, dicts and lists shared)."""
SLIMMED_LIMIT = 1 << 10
"""Container lists remembered as they came (each with its env, commands, probes...)."""
SHARED_LIMIT = 1 << 15
"""Distinct shared parts remembered; past this the memory starts over (a changing cluster
must not grow it forever; parts already shared stay shared)."""


class PodSlimmer:
    """Makes pods small (see the module docstring); one per cache, used for every pod."""

    def __init__(self, limit: int = SHARED_LIMIT) -> None:
        self.limit = limit
        self._shared: dict[int, Any] = {}
        self._slimmed: dict[int, tuple[Any, Any]] = {}
        """Hash of a container list as it came -> (that list, its slimmed and shared form):
        the pods of one template bring equal lists, slimmed once."""

    def __len__(self) -> int:
        """How many shared parts are remembered."""
        return len(self._shared)

    def share(self, value: Any) -> Any:
        """The one object equal to ``value`` (as JSON: ``1``, ``1.0`` and ``true`` differ)
        this slimmer has handed out. Remembered by the hash of its JSON text, so a large
        annotation costs a number here, not a second copy; a value found is also compared."""
        if not value:
            return value
        try:
            key = hash(orjson.dumps(value))
        except TypeError:
            return value  # not JSON (built in code, not read from the API server)
        found = self._shared.get(key)
        if found is not None and found == value:
            return found
        if len(self._shared) >= self.limit:
            self._shared.clear()
        self._shared[key] = value
        return value

    def __call__(self, pod: Obj) -> Obj:
        """The pod slimmed; the original is left alone."""
        out = dict(pod)
        meta = pod.get("metadata")
        if isinstance(meta, dict):
            out["metadata"] = self._metadata(meta)
        spec = pod.get("spec")
        if isinstance(spec, dict):
            out["spec"] = self._spec(spec)
        status = pod.get("status")
        if isinstance(status, dict):
            # (filtered first: a running pod's status is its own, IPs and start times)
            out["status"] = self.share(
                {k: v for k, v in status.items() if k not in DROPPED_STATUS_FIELDS}
            )
        return out

    def _once(self, raw: Any, slim: Callable[[Any], Any]) -> Any:
        """``slim(raw)``, or what it gave for an equal part before (compared, not trusted to
        the hash alone)."""
        try:
            key = hash(orjson.dumps(raw))
        except TypeError:
            return slim(raw)  # not JSON (built in code, not read from the API server)
        known = self._slimmed.get(key)
        if known is not None and known[0] == raw:
            return known[1]
        if len(self._slimmed) >= SLIMMED_LIMIT:
            self._slimmed.clear()  # parts as they came are large: few are remembered
        slimmed = slim(raw)
        self._slimmed[key] = (raw, slimmed)
        return slimmed

    def _containers(self, containers: list[Any]) -> Any:
        return self.share([self._container(c) for c in containers])

    def _metadata(self, meta: Obj) -> Obj:
        out = {k: v for k, v in meta.items() if k not in DROPPED_METADATA_FIELDS}
        for key in ("namespace", "creationTimestamp"):
            value = out.get(key)
            if type(value) is str:
                out[key] = sys.intern(value)
        labels = out.get("labels")
        if isinstance(labels, dict):
            out["labels"] = self.share(labels)
        annotations = out.get("annotations")
        if isinstance(annotations, dict):
            if LAST_APPLIED in annotations:
                annotations = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
            out["annotations"] = self.share(annotations)
        return out

    def _spec(self, spec: Obj) -> Obj:
        out: Obj = {}
        for key, value in spec.items():
            action = _SPEC_ACTIONS.get(key)
            if action is _DROP:
                continue
            if action is _VOLUMES:
                # only the volumes that constrain scheduling (claims, disks): a pod naming one
                # must stay visible as such, or it would be placed as if it named none
                value = constraining_volumes(value)
                if value is not None:
                    out[key] = self.share(value)
                continue
            if action is _CONTAINERS and isinstance(value, list):
                value = self._once(value, self._containers)
            elif action is _INTERN and type(value) is str:
                value = sys.intern(value)
            elif isinstance(value, (dict, list)):
                value = self.share(value)  # tolerations, affinity, nodeSelector, overhead...
            out[key] = value
        return out

    def _container(self, container: Any) -> Any:
        if not isinstance(container, dict):
            return container
        return self.share({k: container[k] for k in KEPT_CONTAINER_FIELDS if k in container})


def slim_pod(pod: Obj) -> Obj:
    """``pod`` slimmed by a slimmer of its own (nothing shared with other pods)."""
    return PodSlimmer()(pod)
