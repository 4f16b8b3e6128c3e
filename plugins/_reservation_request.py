"""What the node-reservation plugin is asked for, and what it remembers between sessions.

``ReservationArguments`` reads the plugin's arguments: one key per queue name (a DNS label)
holding ``{policy, resource, percentage}``, plus the plugin's own camelCase keys
``relockPeriod`` and ``maxReservedFraction``. A bad queue entry is not dropped silently: it
becomes a refusal with the reason, so the queue's status says why it has no lock.

``Target`` is one queue's request resolved against the cluster: an amount over the requested
dimensions, and for a percentage the number of nodes to lock.

``LockRecord`` is a lock as it is kept between sessions, in the Queue's ``status.reservation``
(``nodes``, ``resource``, ``lockedAt``; or ``refused`` with the reason). Plugins are built afresh
every session, so the session's owner carries these records from cycle to cycle: the daemon
writes them to the Queue, ``pumice simulate`` into its Queue dicts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pumice import DurationError, QueueInfo, Resource, format_amount, is_number, parse_duration

BEST_EFFORT = "Best-Effort"
GUARANTEED = "Guaranteed"
POLICIES = (BEST_EFFORT, GUARANTEED)
RELOCK_PERIOD = "relockPeriod"
MAX_RESERVED_FRACTION = "maxReservedFraction"
DEFAULT_RELOCK_PERIOD = 10.0
DEFAULT_MAX_RESERVED_FRACTION = 0.5
DEFAULT_DIMENSIONS = ("cpu", "memory")
TOLERANCE = 1e-9
"""Relative slack when comparing a request with a total, a capability or the cap."""


@dataclass(frozen=True, slots=True)
class QueueRequest:
    """One queue's entry of the arguments; ``error`` says why it cannot be used."""

    queue: str
    policy: str = BEST_EFFORT
    resource: Resource | None = None
    dimensions: tuple[str, ...] = DEFAULT_DIMENSIONS
    percentage: float | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """A request resolved against the cluster: ``amount`` over the requested dimensions, and
    ``count`` nodes for a percentage (None for a resource request)."""

    amount: Resource
    count: int | None = None


class ReservationArguments:
    """The plugin's arguments, read once per session (see the module docstring)."""

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.problems: list[tuple[str, str]] = []
        """(key, what is wrong) for each bad value of the plugin's own keys: config warnings
        (the plugin gives them to ``config_warning``); the defaults are used."""
        self.relock_period = DEFAULT_RELOCK_PERIOD
        self.max_reserved_fraction = DEFAULT_MAX_RESERVED_FRACTION
        self.requests: dict[str, QueueRequest] = {}
        for key, value in arguments.items():
            if key == RELOCK_PERIOD:
                self._read_relock(value)
            elif key == MAX_RESERVED_FRACTION:
                self._read_fraction(value)
            else:
                self.requests[key] = read_request(key, value)

    def _read_relock(self, value: Any) -> None:
        try:
            seconds = _seconds(value)
        except DurationError as exc:
            self.problems.append((RELOCK_PERIOD, f"{exc}; using {DEFAULT_RELOCK_PERIOD:g}s"))
            return
        if seconds < 0:
            self.problems.append(
                (
                    RELOCK_PERIOD,
                    f"must not be negative, got {value!r}; using {DEFAULT_RELOCK_PERIOD:g}s",
                )
            )
            return
        self.relock_period = seconds

    def _read_fraction(self, value: Any) -> None:
        if not _is_number(value) or not 0.0 <= float(value) <= 1.0:
            self.problems.append(
                (
                    MAX_RESERVED_FRACTION,
                    f"must be a number in [0, 1], got {value!r}; "
                    f"using {DEFAULT_MAX_RESERVED_FRACTION}",
                )
            )
            return
        self.max_reserved_fraction = float(value)


def _is_number(value: Any) -> bool:
    return is_number(value) and math.isfinite(value)


def _seconds(value: Any) -> float:
    if _is_number(value):
        return float(value)
    if isinstance(value, str):
        return parse_duration(value)
    raise DurationError(f"bad duration {value!r}")


def read_request(queue: str, value: Any) -> QueueRequest:
    """One queue's entry; a malformed one comes back with ``error`` set."""
    if not isinstance(value, Mapping):
        return QueueRequest(queue, error="bad arguments: expected {policy, resource, percentage}")
    unknown = sorted(set(value) - {"policy", "resource", "percentage"})
    if unknown:
        return QueueRequest(queue, error=f"bad arguments: unknown key(s) {', '.join(unknown)}")
    policy = value.get("policy", BEST_EFFORT)
    if policy not in POLICIES:
        return QueueRequest(
            queue, error=f"bad arguments: policy must be Best-Effort or Guaranteed, not {policy!r}"
        )
    resource: Resource | None = None
    if value.get("resource") is not None:
        raw = value["resource"]
        if not isinstance(raw, Mapping):
            return QueueRequest(
                queue, policy, error="bad arguments: resource: expected a resource list"
            )
        try:
            resource = Resource.from_k8s(dict(raw))
        except ValueError as exc:
            return QueueRequest(queue, policy, error=f"bad arguments: resource: {exc}")
    dimensions = DEFAULT_DIMENSIONS
    percentage: float | None = None
    if value.get("percentage") is not None:
        raw = value["percentage"]
        if not isinstance(raw, Mapping) or not _is_number(raw.get("value")):
            return QueueRequest(
                queue, policy, error="bad arguments: percentage needs {dimensions, value}"
            )
        percentage = float(raw["value"])
        if not 0.0 <= percentage <= 1.0:
            return QueueRequest(
                queue, policy, error=f"bad arguments: percentage value {percentage} not in [0, 1]"
            )
        dims = raw.get("dimensions")
        if dims is not None:
            if isinstance(dims, str) or not all(isinstance(d, str) and d for d in dims):
                return QueueRequest(
                    queue, policy, error="bad arguments: percentage dimensions: a list of names"
                )
            dimensions = tuple(dims)
    return QueueRequest(queue, policy, resource, dimensions, percentage)


def describe(resource: Resource) -> str:
    """``cpu=8,memory=16Gi``."""
    listed = resource_list(resource)
    return ",".join(f"{k}={v}" for k, v in listed.items()) or "nothing"


def resource_list(resource: Resource) -> dict[str, str]:
    """A Kubernetes resource list (names sorted, zeros left out): ``{"cpu": "8"}``."""
    return {
        name: format_amount(name, float(round(value)) if name == "cpu" else value)
        for name, value in sorted(resource.items())
        if value > 0
    }


def resolve(request: QueueRequest, queue: QueueInfo, total: Resource, nodes: int) -> Target:
    """The request against the cluster: a resource amount (the queue's guarantee by default)
    or a node count; with both, the one that is the larger fraction of the cluster total."""
    from_resource: Target | None = None
    resource = request.resource
    if resource is None and request.percentage is None:
        resource = queue.guarantee
    if resource is not None and not resource.is_empty():
        from_resource = Target(Resource({k: v for k, v in resource.items() if v > 0}))
    from_percentage: Target | None = None
    if request.percentage is not None:
        value = request.percentage
        amount = {d: total[d] * value for d in request.dimensions if total[d] > 0}
        from_percentage = Target(Resource(amount), math.floor(nodes * value + TOLERANCE))
    if from_resource is None or from_percentage is None:
        return from_resource or from_percentage or Target(Resource.zero())
    if fraction(from_resource.amount, total) >= (request.percentage or 0.0):
        return from_resource
    return from_percentage


def fraction(amount: Resource, total: Resource) -> float:
    """The largest fraction of the cluster total over ``amount``'s dimensions."""
    largest = 0.0
    for name, value in amount.items():
        largest = max(largest, value / total[name] if total[name] > 0 else math.inf)
    return largest


def above(amount: Resource, limit: Resource) -> list[str]:
    """The dimensions where ``amount`` exceeds ``limit`` (a missing one counts as 0)."""
    return [
        name
        for name, value in sorted(amount.items())
        if value > limit[name] * (1 + TOLERANCE) + TOLERANCE
    ]


def capability_of(queue: QueueInfo) -> Resource | None:
    """The queue's capability; cpu or memory of 0 and missing dimensions mean unlimited."""
    if queue.capability is None:
        return None
    return Resource(
        {
            name: value
            for name, value in queue.capability.items()
            if not (name in ("cpu", "memory") and value <= 0)
        }
    )


# -- between sessions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LockRecord:
    """A lock carried between sessions: its nodes and when they were chosen."""

    nodes: tuple[str, ...]
    locked_at: float


def read_record(queue: QueueInfo) -> LockRecord | None:
    """The lock kept in the Queue's ``status.reservation``, or None."""
    status = (queue.queue or {}).get("status") or {}
    reservation = status.get("reservation") or {}
    nodes = reservation.get("nodes") or ()
    if not nodes or not all(isinstance(n, str) for n in nodes):
        return None
    try:
        locked_at = parse_time(reservation.get("lockedAt"))
    except ValueError:
        locked_at = 0.0
    return LockRecord(tuple(sorted(nodes)), locked_at)


def previous_refusal(queue: QueueInfo) -> str | None:
    status = (queue.queue or {}).get("status") or {}
    refused = (status.get("reservation") or {}).get("refused")
    return refused if isinstance(refused, str) else None


def format_time(seconds: float) -> str:
    """RFC 3339 in UTC, with microseconds only when there are some."""
    moment = datetime.fromtimestamp(seconds, UTC)
    text = moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def parse_time(value: Any) -> float:
    if not isinstance(value, str) or not value:
        return 0.0
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
