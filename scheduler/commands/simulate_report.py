"""What ``pumice simulate`` found, and how it is shown: JSON for programs, a table for people.

The JSON has exactly these keys (quantities as Kubernetes writes them: ``"4"``, ``"500m"``,
``"8Gi"``)::

    {"placements":    [{"pod", "node", "action", "cycle"[, "scores"]}],
     "evictions":     [{"pod", "node", "action", "cycle", "preemptor"}],
     "unschedulable": [{"pod", "message"}],
     "queues":        {name: {"allocated": {...}, "pending": n, "inqueue": n, "running": n,
                             "completed": n, ...the fields plugins set}},
     "podgroups":     {"ns/name": {"phase": ...}}}

A queue's entry is the status the daemon would write into its Queue (``pumice.daemon.outcome``)
at the end of the last cycle, the fields plugins contribute included: ``deserved`` and
``share`` from ``proportion``, ``reservation`` from ``node-reservation`` (the locked nodes and
what is idle on them, or why the request was refused). Every queue of the session has one, the
implicit default queue too.

``scores`` (with ``--explain``) maps every node where the pod was feasible to each scoring
plugin's contribution (its weight included) and their ``total``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from pumice.model import Resource

BAR_WIDTH = 20
QUEUE_COUNTS = ("pending", "inqueue", "running", "completed")


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
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Queue -> its status after the last cycle (see the module docstring)."""
    podgroups: dict[str, str] = field(default_factory=dict)
    nodes: list[NodeUsage] = field(default_factory=list)
    cycles: int = 0
    contract_errors: list[str] = field(default_factory=list)
    """What plugins answered against the contract (each once); not part of the JSON: a
    report with any is not printed (``pumice simulate`` exits 2 naming them)."""

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
            "queues": {name: dict(sorted(q.items())) for name, q in sorted(self.queues.items())},
            "podgroups": {key: {"phase": phase} for key, phase in sorted(self.podgroups.items())},
        }


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
        rows = [("QUEUE", "ALLOCATED", *(c.upper() for c in QUEUE_COUNTS))]
        for name, q in sorted(report.queues.items()):
            counts = (str(q.get(c, 0)) for c in QUEUE_COUNTS)
            rows.append((name, _inline(q.get("allocated") or {}), *counts))
        out += _columns(rows)
        extra = [
            (name, key, _value(value))
            for name, q in sorted(report.queues.items())
            for key, value in sorted(q.items())
            if key != "allocated" and key not in QUEUE_COUNTS
        ]
        if extra:
            out += ["", "QUEUE STATUS FROM PLUGINS"]
            out += _columns([("QUEUE", "FIELD", "VALUE"), *extra])
    out += ["", "PODGROUPS"]
    if report.podgroups:
        rows = [("PODGROUP", "PHASE"), *sorted(report.podgroups.items())]
        out += _columns(rows)
    return "\n".join(out)


def _inline(listed: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in listed.items()) if listed else "-"


def _value(value: Any) -> str:
    """A status field in one line: ``k=v,…`` for a flat mapping, JSON for anything deeper."""
    if isinstance(value, dict) and all(not isinstance(v, dict | list) for v in value.values()):
        return _inline(value)
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
