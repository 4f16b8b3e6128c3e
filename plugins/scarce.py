"""Scarce devices (GPUs and the like): the ``sra`` and ``proportional`` plugins, Volcano 1.13's
two companions of resource-strategy-fit.

Both rules are built from the same arguments whether they stand alone (the ``sra`` and
``proportional`` plugins, ``enable`` defaulting to true there) or sit inside
``resource-strategy-fit`` as its ``sra:`` and ``proportional:`` maps, where Volcano
configurations put them (that plugin reads ``Sra`` and ``Proportional`` from here).

**sra** (scarce-resource avoidance), a node score. Arguments: ``resources`` (the scarce
resources, comma-separated), ``weight`` (non-negative integer, default 1; 0 switches it off),
``resourceWeight`` (a map resource -> non-negative integer weight, default 1 each; Volcano
turns a negative one into 1 and, inside resource-strategy-fit, defaults ``weight`` to 0, which
leaves an enabled ``sra`` map without effect)::

    score(T, N) = 0        if N has no allocatable of some resource that T requests
                = (1 - sum(w_r for listed r that N has) / sum(w_r)) * 100 * weight   otherwise

so a task that needs no scarce device prefers nodes without one (a node with every listed device
scores 0, one with none scores ``100 * weight``), while a task that asks for a device scores 0
wherever it could go. No listed resource (or all weights 0): 0 everywhere.

**proportional**, a predicate. Arguments: ``resources`` (comma-separated), and
``resourceProportion``: ``<res>.cpu`` (cores) and ``<res>.memory`` (GB of 10^9 bytes) per idle
device, each default 1 (a negative rate becomes 1, as in Volcano). A task that requests none of
the listed resources passes node N only if, for every listed resource N has::

    idle_cpu(N) - request_cpu >= idle_devices(N) * cpu_rate * 1000        (millicores)
    idle_memory(N) - request_memory >= idle_devices(N) * memory_rate * 1e9  (bytes)

so a CPU job cannot take the cpu and memory that the node's idle GPUs will need. The reason
for a rejected node is ``proportional of resource <res> check failed`` for the first listed
resource that fails. A task that requests any listed resource passes everywhere.

Both are row-local: a node's answer depends on its own row only.

**The plugins.** ``sra`` (hook ``node_score(task, nodes)``): tasks that do not need a scarce
device prefer nodes that have none, so the GPU nodes stay free for the tasks that need them.
``proportional`` (hook ``predicate(task, nodes)``): a task that asks for none of the listed
devices may use a node only if the node keeps, after it, the cpu and memory its idle devices
need (so a CPU job cannot strand a GPU node's GPUs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice import (
    FIT_TOLERANCE,
    Arguments,
    BoolVector,
    FloatVector,
    NodeTable,
    Plugin,
    PredicateResult,
    TaskInfo,
    argument_error,
    check_flag,
    check_known_keys,
    check_mapping,
    check_resource_names,
    check_weight,
    hookimpl,
    is_number,
)

MAX_NODE_SCORE = 100
MILLICORES_PER_CORE = 1000.0
BYTES_PER_GB = 1e9

SRA_KEYS = ("enable", "resources", "weight", "resourceWeight")
PROPORTIONAL_KEYS = ("enable", "resources", "resourceProportion")


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


@dataclass(frozen=True, slots=True)
class Sra:
    """Scarce-resource avoidance: the plugin weight and each scarce resource's weight."""

    weight: int
    resources: tuple[tuple[str, int], ...]

    @classmethod
    def parse(
        cls, plugin: str, arguments: Mapping[str, Any], prefix: str = "", enabled: bool = True
    ) -> Sra | None:
        """From ``arguments`` (the ``sra:`` map when ``prefix`` is ``"sra"``); None when it
        is switched off (``enable: false``, or weight 0). Checked even when switched off."""
        check_known_keys(plugin, prefix, arguments, SRA_KEYS)
        enabled = check_flag(plugin, _join(prefix, "enable"), arguments.get("enable"), enabled)
        names = check_resource_names(plugin, _join(prefix, "resources"), arguments.get("resources"))
        key = _join(prefix, "resourceWeight")
        weights = check_mapping(plugin, key, arguments.get("resourceWeight"))
        resources = tuple(
            (name, check_weight(plugin, f"{key}.{name}", weights.get(name), 1)) for name in names
        )
        total = check_weight(plugin, _join(prefix, "weight"), arguments.get("weight"), 1)
        return cls(total, resources) if enabled and total > 0 else None

    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> FloatVector:
        """The sra score of every node (of ``rows`` only, when given)."""
        n = len(nodes) if rows is None else len(rows)
        lacks = np.zeros(n, dtype=np.bool_)
        for name, amount in task.resreq.items():
            if amount <= 0:
                continue
            cap = nodes.column("allocatable", name)
            if cap is None:
                return np.zeros(n)  # no node has one of the requested resources
            lacks |= (cap if rows is None else cap[rows]) <= 0
        scarce: list[FloatVector] = []
        weights: list[float] = []
        for name, w in self.resources:
            cap = nodes.column("allocatable", name)
            if cap is None:
                cap = np.zeros(len(nodes))
            scarce.append(cap if rows is None else cap[rows])
            weights.append(float(w))
        share = avoidance(lacks, scarce, weights)
        return share * float(MAX_NODE_SCORE * self.weight)

    def score_row(self, task: TaskInfo, nodes: NodeTable, row: int) -> float:
        """``node_score`` of one row in Python floats, bit-for-bit the vector's."""
        for name, amount in task.resreq.items():
            if amount <= 0:
                continue
            cap = nodes.column("allocatable", name)
            if cap is None or not cap[row] > 0:
                return 0.0
        total = sum(float(w) for _, w in self.resources)
        if total <= 0:
            return 0.0
        present = 0.0
        for name, w in self.resources:
            cap = nodes.column("allocatable", name)
            present += (1.0 if cap is not None and cap[row] > 0 else 0.0) * float(w)
        return (1.0 - present / total) * float(MAX_NODE_SCORE * self.weight)


def avoidance(
    lacks_request: BoolVector, scarce: Sequence[FloatVector], weights: Sequence[float]
) -> FloatVector:
    """The sra fraction per node: ``1 - (weight of the scarce resources the node has) /
    (total weight)``, from each scarce resource's allocatable column; 0 where the node lacks
    a requested resource or nothing is weighted."""
    total = sum(weights)
    if total <= 0:
        return np.zeros(len(lacks_request))
    present = np.zeros(len(lacks_request))
    for column, w in zip(scarce, weights, strict=True):
        present += (column > 0) * w
    out: FloatVector = np.where(lacks_request, 0.0, 1.0 - present / total)
    return out


@dataclass(frozen=True, slots=True)
class Proportional:
    """Per scarce resource, the cpu cores and memory GB to keep free for each idle device."""

    rates: tuple[tuple[str, float, float], ...]

    @classmethod
    def parse(
        cls, plugin: str, arguments: Mapping[str, Any], prefix: str = "", enabled: bool = True
    ) -> Proportional | None:
        """From ``arguments`` (the ``proportional:`` map when ``prefix`` is
        ``"proportional"``); None when switched off or no resource is listed."""
        check_known_keys(plugin, prefix, arguments, PROPORTIONAL_KEYS)
        enabled = check_flag(plugin, _join(prefix, "enable"), arguments.get("enable"), enabled)
        names = check_resource_names(plugin, _join(prefix, "resources"), arguments.get("resources"))
        key = _join(prefix, "resourceProportion")
        given: dict[str, float] = {}
        for rate_key, value in check_mapping(
            plugin, key, arguments.get("resourceProportion")
        ).items():
            if not is_number(value):
                raise argument_error(
                    plugin, key=f"{key}.{rate_key}", message=f"must be a number, got {value!r}"
                )
            given[rate_key] = float(value)
        rates = tuple(
            (name, _rate(given.get(f"{name}.cpu")), _rate(given.get(f"{name}.memory")))
            for name in names
        )
        return cls(rates) if enabled and rates else None

    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult | None:
        """Which nodes (of ``rows`` only, when given) keep their idle devices' headroom."""
        if any(task.resreq[name] > 0 for name, _, _ in self.rates):
            return None  # the task wants a scarce device itself
        n = len(nodes) if rows is None else len(rows)

        def column(quantity: str, name: str) -> FloatVector | None:
            values = nodes.column(quantity, name)
            return values if values is None or rows is None else values[rows]

        spare: list[FloatVector] = []
        for name in ("cpu", "memory"):
            idle = column("idle", name)
            spare.append((idle if idle is not None else np.zeros(n)) - task.resreq[name])
        devices: list[FloatVector | None] = []
        for name, _, _ in self.rates:
            cap, idle = column("allocatable", name), column("idle", name)
            if cap is None or idle is None:
                devices.append(None)  # no node has any: nothing to keep
                continue
            devices.append(np.where(cap > 0, np.maximum(idle, 0.0), np.nan))
        failed = headroom_failures(
            spare[0],
            spare[1],
            devices,
            [c * MILLICORES_PER_CORE for _, c, _ in self.rates],
            [m * BYTES_PER_GB for _, _, m in self.rates],
        )
        ok = failed < 0
        if ok.all():
            return PredicateResult(ok, "")
        reasons = np.array([_reason(name) for name, _, _ in self.rates], dtype=object)
        if len(reasons) == 1:
            return PredicateResult(ok, str(reasons[0]))
        return PredicateResult(ok, np.where(ok, "", reasons[np.maximum(failed, 0)]))


def headroom_failures(
    spare_cpu: FloatVector,
    spare_memory: FloatVector,
    devices: Sequence[FloatVector | None],
    cpu_per_device: Sequence[float],
    memory_per_device: Sequence[float],
) -> npt.NDArray[np.intp]:
    """Per node, the index of the first scarce resource whose idle devices would be left
    without their cpu or memory (-1 where none is).

    ``spare_*`` is each node's idle amount minus the task's request; ``devices`` holds each
    resource's idle devices per node, NaN on nodes without the resource (they are not
    checked), or None when no node has it.
    """
    first = np.full(len(spare_cpu), -1, dtype=np.intp)
    for i, idle in enumerate(devices):
        if idle is None:
            continue
        # NaN compares false: a node without the resource is never short of it
        short = (spare_cpu - idle * cpu_per_device[i] < -FIT_TOLERANCE) | (
            spare_memory - idle * memory_per_device[i] < -FIT_TOLERANCE
        )
        first[short & (first < 0)] = i
    return first


def _rate(value: float | None) -> float:
    return 1.0 if value is None or value < 0 else value


def _reason(name: str) -> str:
    return f"proportional of resource {name} check failed"


class SraPlugin(Plugin):
    """Keeps tasks that need no scarce device off the nodes that have one."""

    row_local_reads_queue = False  # its row-local answers read the row and the shape only

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.sra: Sra | None = Sra.parse("sra", arguments)

    @hookimpl
    def node_score(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> npt.NDArray[np.float64] | None:
        # Row-local: a node's score reads only its own allocatable.
        if self.sra is None:
            return None
        if rows is not None and len(rows) == 1:
            return np.array([self.sra.score_row(task, nodes, int(rows[0]))])
        return self.sra.node_score(task, nodes, rows)


class ProportionalPlugin(Plugin):
    """Rejects nodes whose idle scarce devices would be left without cpu or memory."""

    row_local_reads_queue = False  # its row-local answers read the row and the shape only

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.proportional: Proportional | None = Proportional.parse("proportional", arguments)

    @hookimpl
    def predicate(
        self, task: TaskInfo, nodes: NodeTable, rows: npt.NDArray[np.int64] | None = None
    ) -> PredicateResult | None:
        # Row-local: the headroom check reads only the node's own idle columns.
        if self.proportional is None:
            return None
        return self.proportional.predicate(task, nodes, rows)
