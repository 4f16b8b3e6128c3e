"""Objects every simulated cluster starts with, and generated nodes for scale runs.

A fresh cluster has what a real one (with Volcano installed) has before anyone deploys
anything: the ``default``, ``kube-system``, ``kube-public`` and ``kube-node-lease``
namespaces, the two ``system-`` PriorityClasses, and Volcano's ``default`` Queue (unless the
cluster has no Volcano).

``generate_nodes`` stamps out N nodes from a template: a Node manifest whose name (or
``generateName``) is the prefix, or a compact spec such as ``cpu=32,memory=256Gi,pods=110``.
"""

from __future__ import annotations

import copy
from typing import Any

from pumice.plain import PumiceError
from pumice.sim.objects import Obj, meta

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def default_objects(volcano: bool = True) -> list[Obj]:
    objects: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in DEFAULT_NAMESPACES
    ]
    objects += [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "system-cluster-critical"},
            "value": 2000000000,
            "description": "Used for system critical pods that must run in the cluster, but "
            "can be moved to another node if necessary.",
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "system-node-critical"},
            "value": 2000001000,
            "description": "Used for system critical pods that must not be moved from their "
            "current node.",
        },
    ]
    if volcano:
        objects.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "default"},
                "spec": {"weight": 1, "reclaimable": True},
            }
        )
    return objects


DEFAULT_TEMPLATE = "cpu=32,memory=256Gi,pods=110"


class TemplateError(PumiceError, ValueError):
    """A node template that is neither a Node manifest nor a ``name=amount,...`` spec."""


def parse_inline_template(text: str) -> Obj:
    """A Node manifest from ``cpu=32,memory=256Gi,pods=110[,nvidia.com/gpu=8]``."""
    capacity: dict[str, str] = {}
    for part in text.split(","):
        name, sep, amount = part.partition("=")
        name, amount = name.strip(), amount.strip()
        if not sep or not name or not amount:
            raise TemplateError(f"expected name=amount, got {part.strip()!r}")
        capacity[name] = amount
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "sim-node", "labels": {"type": "kwok"}},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def generate_nodes(count: int, template: Obj, start: int = 0) -> list[Obj]:
    """``count`` copies of ``template`` named ``<prefix>-<index>`` (zero-padded)."""
    if template.get("kind") != "Node":
        raise TemplateError(f"a node template must be a Node, not {template.get('kind')!r}")
    m = meta(template)
    prefix = str(m.get("generateName") or m.get("name") or "sim-node").rstrip("-")
    width = len(str(max(start + count - 1, 0)))
    out: list[Obj] = []
    for i in range(start, start + count):
        node: Any = copy.deepcopy(template)
        name = f"{prefix}-{i:0{width}d}"
        node_meta = dict(node.get("metadata") or {})
        node_meta.pop("generateName", None)
        node_meta.pop("uid", None)
        node_meta.pop("resourceVersion", None)
        node_meta["name"] = name
        labels = dict(node_meta.get("labels") or {})
        labels["kubernetes.io/hostname"] = name
        node_meta["labels"] = labels
        node["metadata"] = node_meta
        out.append(node)
    return out
