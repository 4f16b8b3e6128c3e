"""What ``pumice simulate`` found, and how it is shown: JSON for programs, a table for people.

The JSON has exactly these keys (quantities as Kubernetes writes them: ``"4"``, ``"500m"``,
``"8Gi"``)::

    {"placements":    [{"pod", "node", "action", "cycle"[, "scores"]}],
     "evictions":     [{"pod", "node", "action", "cycle", "preemptor"}],
     "unschedulable": [{"pod", "message"}],
     "queues":        {name: {"deserved": {...}, "allocated": {...}, "share": float
                             [, "reservation": {"nodes": [...], "resource": {...}}
                                             | {"refused": "why"}]}},
     "podgroups":     {"ns/name": {"phase": ...}}}

``reservation`` appears for the queues the node-reservation plugin locks nodes for (the nodes
and what is idle on them) or refuses (the reason).

``scores`` (with ``--explain``) maps every node where the pod was feasible to each scoring
plugin's contribution (its weight included) and their ``total``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pumice.model import Resource
from pumice.model.quantity import is_byte_resource
from pumice.model.resource import format_amount

BAR_WIDTH = 20


def quantity(name: str, value: float) -> str:
    """A canonical amount as a canonical Kubernetes quantity (whole millicores and bytes)."""
    if name == "cpu" or is_byte_resource(name):
        return format_amount(name, float(round(value)))
    return format_amount(name, round(value, 3))


def resource_list(resource: Resource) -> dict[str, str]:
    """A Resource as a Kubernetes resource list, names sorted, zero amounts left out."""
    return {name: quantity(name, value) for name, value in sorted(resource.items()) if value}


@dataclass(frozen=True, slots=True)
class Placement:
    pod: str
    node: str
    action: str
    cycle: int
    scores: dict[str, dict[str, float]] | None = None


@dataclass(slots=True)
class Eviction:
    pod: str
    node: str
    action: str
    cycle: int
    preemptor: str | None = None


@dataclass(frozen=True, slots=True)
class QueueFigures:
    deserved: Resource
    allocated: Resource
    share: float


@dataclass(frozen=True, slots=True)
class NodeUsage:
    name: str
    allocatable: Resource
    used: Resource
    pods: int
    max_pods: int


@dataclass
class Report:
    """Everything a simulation decided, in the order it decided it."""

    placements: list[Placement] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)
    queues: dict[str, QueueFigures] = field(default_factory=dict)
    podgroups: dict[str, str] = field(default_factory=dict)
    nodes: list[NodeUsage] = field(default_factory=list)
    cycles: int = 0
    reservations: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Queue -> its ``status.reservation`` after the last cycle (node-reservation)."""

    def to_json(self) -> dict[str, Any]:
        placements = []
        for p in self.placements:
            entry: dict[str, Any] = {
                "pod": p.pod,
                "node": p.node,
                "action": p.action,
                "cycle": p.cycle,
            }
            if p.scores is not None:
                entry["scores"] = {
                    node: {k: round(v, 6) for k, v in parts.items()}
                    for node, parts in sorted(p.scores.items())
                }
            placements.append(entry)
        return {
            "placements": placements,
            "evictions": [
                {
                    "pod": e.pod,
                    "node": e.node,
                    "action": e.action,
                    "cycle": e.cycle,
                    "preemptor": e.preemptor,
                }
                for e in self.evictions
            ],
            "unschedulable": [
                {"pod": pod, "message": message}
                for pod, message in sorted(self.unschedulable.items())
            ],
            "queues": {
                name: {
                    "deserved": resource_list(q.deserved),
                    "allocated": resource_list(q.allocated),
                    "share": round(q.share, 6),
                    **self._reservation(name),
                }
                for name, q in sorted(self.queues.items())
            },
            "podgroups": {key: {"phase": phase} for key, phase in sorted(self.podgroups.items())},
        }

    def _reservation(self, queue: str) -> dict[str, Any]:
        status = self.reservations.get(queue)
        if status is None:
            return {}
        if "refused" in status:
            return {"reservation": {"refused": status["refused"]}}
        return {"reservation": {"nodes": status["nodes"], "resource": status["resource"]}}


# -- the table ----------------------------------------------------------------------------------


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def bar(used: float, total: float) -> str:
    """``[#########-----------]  45%`` (``[overcommitted] …`` past 100%)."""
    if total <= 0:
        return "[" + " " * BAR_WIDTH + "]    -"
    fraction = used / total
    filled = min(BAR_WIDTH, round(fraction * BAR_WIDTH))
    return f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {round(fraction * 100):3d}%"


def render_table(report: Report, explain: bool = False) -> str:
    """The report for people: placements, evictions, pending pods, nodes and queues."""
    out: list[str] = [f"cycles run: {report.cycles}", ""]
    out.append(f"PLACEMENTS ({len(report.placements)})")
    if report.placements:
        rows: list[tuple[str, ...]] = [("CYCLE", "ACTION", "POD", "NODE")]
        rows += [(str(p.cycle), p.action, p.pod, p.node) for p in report.placements]
        out += _columns(rows)
    if explain:
        for p in report.placements:
            if not p.scores:
                continue
            out += ["", f"scores of {p.pod} (placed on {p.node}):"]
            plugins = sorted({k for parts in p.scores.values() for k in parts} - {"total"})
            rows = [("NODE", *(name.upper() for name in plugins), "TOTAL")]
            ordered = sorted(p.scores.items(), key=lambda kv: (-kv[1]["total"], kv[0]))
            for node, parts in ordered:
                cells = [f"{parts.get(name, 0.0):.2f}" for name in plugins]
                rows.append((node, *cells, f"{parts['total']:.2f}"))
            out += ["  " + line for line in _columns(rows)]
    out += ["", f"EVICTIONS ({len(report.evictions)})"]
    if report.evictions:
        rows = [("CYCLE", "ACTION", "POD", "NODE", "FOR")]
        rows += [
            (str(e.cycle), e.action, e.pod, e.node, e.preemptor or "-") for e in report.evictions
        ]
        out += _columns(rows)
    out += ["", f"UNSCHEDULABLE ({len(report.unschedulable)})"]
    if report.unschedulable:
        rows = [("POD", "REASON"), *sorted(report.unschedulable.items())]
        out += _columns(rows)
    out += ["", "NODES"]
    if report.nodes:
        rows = [("NODE", "CPU", "MEMORY", "PODS")]
        for n in report.nodes:
            rows.append(
                (
                    n.name,
                    bar(n.used["cpu"], n.allocatable["cpu"]),
                    bar(n.used["memory"], n.allocatable["memory"]),
                    f"{n.pods}/{n.max_pods}",
                )
            )
        out += _columns(rows)
    out += ["", "QUEUES"]
    if report.queues:
        rows = [("QUEUE", "DESERVED", "ALLOCATED", "SHARE")]
        for name, q in sorted(report.queues.items()):
            rows.append((name, _inline(q.deserved), _inline(q.allocated), f"{q.share:.2f}"))
        out += _columns(rows)
    if report.reservations:
        out += ["", "RESERVATIONS"]
        rows = [("QUEUE", "NODES", "IDLE ON THEM")]
        for name, status in sorted(report.reservations.items()):
            if "refused" in status:
                rows.append((name, "refused", status["refused"]))
            else:
                idle = ",".join(f"{k}={v}" for k, v in status["resource"].items()) or "-"
                rows.append((name, ",".join(status["nodes"]), idle))
        out += _columns(rows)
    out += ["", "PODGROUPS"]
    if report.podgroups:
        rows = [("PODGROUP", "PHASE"), *sorted(report.podgroups.items())]
        out += _columns(rows)
    return "\n".join(out)


def _inline(resource: Resource) -> str:
    listed = resource_list(resource)
    return ",".join(f"{k}={v}" for k, v in listed.items()) if listed else "-"
