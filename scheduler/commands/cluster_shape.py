"""The shape of the objects a command reads from files: the fields the scheduler reads, each
of the type the API server would insist on.

Objects listed from an API server always have this shape (its schema saw to it); a manifest
written by hand need not — ``tolerations: 5``, ``containers: {a: 1}``, ``annotations: [x]`` —
and the cache and the model, written for the API server's objects, would fail on it deep
inside a run. ``shape_error`` finds the first field of a known kind whose value has the wrong
type and says where (``spec.tolerations[0]: expected a mapping, got int``), so that
``cluster_input.check_object`` refuses the object with one line naming the file and object.

A shape is a mapping of field → shape (unknown fields are not checked, as the scheduler does
not read them), a one-item list (a list of that shape), ``MAP_OF_SCALARS`` (labels,
selectors: text → text), or a type: ``str`` (any scalar: YAML reads ``zone: 1`` as a number,
which the cache takes as text), ``int`` or ``bool``. ``None`` is always allowed: it is how
YAML says a field is absent. Quantities are checked by ``check_object`` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Shape = Any
MAP_OF_SCALARS = "map"
ANY_MAPPING: dict[str, Shape] = {}
"""A mapping whose fields are not checked (a resource list: quantities are checked apart)."""

LABEL_SELECTOR: Shape = {
    "matchLabels": MAP_OF_SCALARS,
    "matchExpressions": [{"key": str, "operator": str, "values": [str]}],
}
NODE_SELECTOR_TERM: Shape = {
    "matchExpressions": [{"key": str, "operator": str, "values": [str]}],
    "matchFields": [{"key": str, "operator": str, "values": [str]}],
}
POD_AFFINITY_TERM: Shape = {
    "labelSelector": LABEL_SELECTOR,
    "namespaceSelector": LABEL_SELECTOR,
    "namespaces": [str],
    "topologyKey": str,
    "matchLabelKeys": [str],
    "mismatchLabelKeys": [str],
}
POD_AFFINITY: Shape = {
    "requiredDuringSchedulingIgnoredDuringExecution": [POD_AFFINITY_TERM],
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": int, "podAffinityTerm": POD_AFFINITY_TERM}
    ],
}
CONTAINER: Shape = {
    "name": str,
    "restartPolicy": str,
    "ports": [{"containerPort": int, "hostPort": int, "protocol": str, "hostIP": str}],
    "resources": {"requests": ANY_MAPPING, "limits": ANY_MAPPING, "claims": [ANY_MAPPING]},
}
METADATA: Shape = {
    "name": str,
    "namespace": str,
    "uid": str,
    "labels": MAP_OF_SCALARS,
    "annotations": MAP_OF_SCALARS,
    "creationTimestamp": str,
    "deletionTimestamp": str,
}
POD: Shape = {
    "metadata": METADATA,
    "spec": {
        "schedulerName": str,
        "nodeName": str,
        "priorityClassName": str,
        "priority": int,
        "nodeSelector": MAP_OF_SCALARS,
        "tolerations": [
            {"key": str, "operator": str, "value": str, "effect": str, "tolerationSeconds": int}
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [NODE_SELECTOR_TERM]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": int, "preference": NODE_SELECTOR_TERM}
                ],
            },
            "podAffinity": POD_AFFINITY,
            "podAntiAffinity": POD_AFFINITY,
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": int,
                "minDomains": int,
                "topologyKey": str,
                "whenUnsatisfiable": str,
                "labelSelector": LABEL_SELECTOR,
                "matchLabelKeys": [str],
                "nodeAffinityPolicy": str,
                "nodeTaintsPolicy": str,
            }
        ],
        "containers": [CONTAINER],
        "initContainers": [CONTAINER],
        "overhead": ANY_MAPPING,
        "schedulingGates": [{"name": str}],
        "volumes": [
            {
                "name": str,
                "persistentVolumeClaim": {"claimName": str},
                "ephemeral": ANY_MAPPING,
            }
        ],
        "resourceClaims": [ANY_MAPPING],
    },
    "status": {"phase": str, "nominatedNodeName": str},
}
NODE: Shape = {
    "metadata": METADATA,
    "spec": {"unschedulable": bool, "taints": [{"key": str, "value": str, "effect": str}]},
    "status": {"allocatable": ANY_MAPPING, "capacity": ANY_MAPPING},
}
PODGROUP: Shape = {
    "metadata": METADATA,
    "spec": {
        "minMember": int,
        "minTaskMember": MAP_OF_SCALARS,
        "minResources": ANY_MAPPING,
        "queue": str,
        "priorityClassName": str,
    },
    "status": {"phase": str},
}
QUEUE: Shape = {
    "metadata": METADATA,
    "spec": {
        "weight": int,
        "reclaimable": bool,
        "parent": str,
        "capability": ANY_MAPPING,
        "deserved": ANY_MAPPING,
        "guarantee": {"resource": ANY_MAPPING},
    },
    "status": {"state": str},
}
SHAPES: dict[str, Shape] = {
    "Pod": POD,
    "Node": NODE,
    "PodGroup": PODGROUP,
    "Queue": QUEUE,
    "PriorityClass": {"metadata": METADATA, "globalDefault": bool},
    "Namespace": {"metadata": METADATA},
}


def shape_error(obj: dict[str, Any]) -> tuple[str, str] | None:
    """(field path, what is wrong) for the first field of the wrong type, else None."""
    check = _CHECKS.get(str(obj.get("kind")))
    if check is None:
        return None
    if not isinstance(obj.get("metadata"), dict):
        return "metadata", f"expected a mapping, got {_type(obj.get('metadata'))}"
    if not isinstance(obj["metadata"].get("name"), str) or not obj["metadata"]["name"]:
        return "metadata.name", "expected a name"
    found = check(obj)
    if found is None:
        return None
    parts, message = found
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in reversed(parts))
    return path.lstrip("."), message


Found = tuple[list[str | int], str]
"""The path to the wrong field, innermost first (built only when there is one), and what is
wrong."""
Check = Callable[[Any], Found | None]


def compile_shape(shape: Shape) -> Check:
    """The check of one shape as a function, made once: what kind of shape each field has is
    decided here, not again for every field of every object (a dump of 10,000 pods has
    200,000 fields to look at)."""
    if isinstance(shape, dict):
        if not shape:
            return _mapping
        fields = {name: compile_shape(inner) for name, inner in shape.items()}

        def check_mapping(value: Any) -> Found | None:
            if not isinstance(value, dict):
                return [], f"expected a mapping, got {_type(value)}"
            for name, item in value.items():  # the fields set, mostly few of those known
                inner = fields.get(name)
                if inner is not None and item is not None:
                    found = inner(item)
                    if found:
                        found[0].append(str(name))
                        return found
            return None

        return check_mapping
    if isinstance(shape, list):
        each = compile_shape(shape[0])

        def check_list(value: Any) -> Found | None:
            if not isinstance(value, list):
                return [], f"expected a list, got {_type(value)}"
            for i, item in enumerate(value):
                found = each(item) if item is not None else ([], "expected a value, got null")
                if found:
                    found[0].append(i)
                    return found
            return None

        return check_list
    if shape == MAP_OF_SCALARS:
        return _map_of_scalars
    if shape is int:
        return _integer
    if shape is bool:
        return _boolean
    if shape is str:
        return _text
    raise AssertionError(f"not a shape: {shape!r}")  # a bug in the shape tables above


def _mapping(value: Any) -> Found | None:
    if not isinstance(value, dict):
        return [], f"expected a mapping, got {_type(value)}"
    return None


def _map_of_scalars(value: Any) -> Found | None:
    if not isinstance(value, dict):
        return [], f"expected a mapping, got {_type(value)}"
    for key, item in value.items():
        if isinstance(item, (dict, list)):
            return [str(key)], f"expected text, got {_type(item)}"
    return None


def _integer(value: Any) -> Found | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return [], f"expected an integer, got {_type(value)}"
    return None


def _boolean(value: Any) -> Found | None:
    if not isinstance(value, bool):
        return [], f"expected true or false, got {_type(value)}"
    return None


def _text(value: Any) -> Found | None:
    if isinstance(value, (dict, list)):
        return [], f"expected text, got {_type(value)}"
    return None


_CHECKS: dict[str, Check] = {kind: compile_shape(shape) for kind, shape in SHAPES.items()}


def _type(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"
