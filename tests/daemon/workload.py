"""Manifests for the daemon's end-to-end tests: nodes, gangs (PodGroup + pods), loose pods."""

from __future__ import annotations

from typing import Any

from sim.simkit import node as node  # the sim tests' Node, re-exported for the daemon tests

Obj = dict[str, Any]


def pod(
    name: str,
    *,
    namespace: str = "batch",
    cpu: str = "250m",
    memory: str = "256Mi",
    group: str | None = None,
    scheduler: str = "pumice",
    node_name: str | None = None,
) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if group is not None:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: Obj = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def podgroup(
    name: str, members: int, *, namespace: str = "batch", queue: str = "default", **spec: Any
) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": members, "queue": queue, **spec},
    }


def gang(name: str, members: int, **pod_args: Any) -> list[Obj]:
    """A PodGroup of ``members`` and its pods (``<name>-0`` …)."""
    return [podgroup(name, members)] + [
        pod(f"{name}-{i}", group=name, **pod_args) for i in range(members)
    ]


def seed(sim: Any, objects: list[Obj]) -> None:
    for obj in objects:
        sim.create(obj)


def events_about(sim: Any, name: str, namespace: str = "batch") -> list[tuple[str, str]]:
    """(reason, message) of every stored event regarding the object ``namespace/name``."""
    out = []
    for event in sim.store.table("/events").values():
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if involved.get("name") == name and involved.get("namespace", namespace) == namespace:
            out.append((str(event.get("reason")), str(event.get("message") or event.get("note"))))
    return out


def condition(sim: Any, name: str, namespace: str = "batch") -> Obj | None:
    """The pod's PodScheduled condition, if any."""
    p = sim.store.table("/pods").get((namespace, name))
    for c in ((p or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return dict(c)
    return None
