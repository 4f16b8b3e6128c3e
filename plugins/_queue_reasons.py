"""What ``proportion`` tells a user whose job its queue holds back: which queue, which limit,
and the figures, in the API server's canonical quantities (``2``, ``500m``, ``4Gi``).

* a task that ``allocatable`` refuses: ``queue research: cpu allocated 14 + request 2 exceeds
  deserved 15`` — one part per dimension over the limit, joined with ``; ``. The limit is called
  ``capability`` where the queue's capability sets that dimension and equals its deserved (the
  cap is what binds), otherwise ``deserved`` (the fair share). A queue that is not Open:
  ``queue research is not open (state Closed)``;
* a queue that ``overused`` reports: ``queue research: cpu allocated 15 has reached deserved
  15`` for every dimension of its deserved share (``queue research: deserved nothing`` when that
  share is empty);
* a job that ``job_enqueueable`` turns down: ``queue research: cpu minResources 4 + allocated
  14 + inqueue 2 exceeds capability 15`` (``- elastic E`` when the queue's jobs hold something
  beyond their minimum), the limit being the queue's real capability, called ``capability``
  where it is the queue's own.

The figures are proportion's ``QueueAttributes``, kept here so that proportion imports its
reasons and nothing imports proportion back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pumice import QueueInfo, Resource, format_amount, sum_within

_SLACK = 1e-6
"""Relative tolerance when comparing a limit with the capability, and a sum with a limit."""


@dataclass(slots=True, eq=False)
class QueueAttributes:
    """Proportion's numbers for one queue in one session (see the module docstring)."""

    queue: QueueInfo
    weight: int
    capability: Resource | None
    guarantee: Resource
    real_capability: Resource = field(default_factory=Resource.zero)
    held: dict[str, float] = field(default_factory=dict)
    """``allocated`` as a plain dict that each allocation adds to in place: the same
    additions in the same order as ``Resource.__add__`` makes (so the same floats), without
    a new ``Resource`` per placement; ``allocated`` is made from it when asked."""
    _allocated: Resource | None = None
    request: Resource = field(default_factory=Resource.zero)
    inqueue: Resource = field(default_factory=Resource.zero)
    elastic: Resource = field(default_factory=Resource.zero)
    deserved: Resource = field(default_factory=Resource.zero)
    share: float = 0.0
    _deserved_of: tuple[Resource, dict[str, float]] | None = None
    """``deserved`` and its dimensions above zero with their amounts (``add_allocated``)."""

    @property
    def allocated(self) -> Resource:
        """The requests of the queue's allocated tasks (an immutable value: a copy of
        ``held`` as it is now)."""
        known = self._allocated
        if known is None:
            known = self._allocated = Resource(self.held)
        return known

    @allocated.setter
    def allocated(self, value: Resource) -> None:
        self._allocated = value
        self.held = value.to_dict()

    def update_share(self) -> None:
        share = 0.0
        for name in self.deserved.names():
            deserved = self.deserved[name]
            share = max(share, self.held.get(name, 0.0) / deserved)
        self.share = share

    def add_allocated(self, added: Resource) -> None:
        """``allocated += added`` and the share updated: only the fractions of the dimensions
        ``added`` has can have grown, and the maximum of the others is the old share, so this
        equals ``update_share`` without going over every deserved dimension."""
        known = self._deserved_of
        if known is None or known[0] is not self.deserved:
            deserved = self.deserved
            known = self._deserved_of = (deserved, {n: deserved[n] for n in deserved.names()})
        positive = known[1]
        held, share = self.held, self.share
        for name, amount in added.items():
            value = held[name] = held.get(name, 0.0) + amount
            limit = positive.get(name)
            if limit is not None:  # above zero, as ``deserved.names()`` lists them
                fraction = value / limit
                if fraction > share:
                    share = fraction
        self.share = share
        self._allocated = None

    def room_for(self, request: Resource) -> bool:
        """``allocated + request <= deserved`` on the request's dimensions (``sum_within``)."""
        return sum_within(self.held, request, self.deserved)


def amount(name: str, value: float) -> str:
    """A canonical quantity: whole millicores and bytes, other counts to a thousandth."""
    if name == "cpu" or name == "memory" or name.endswith("storage"):
        return format_amount(name, float(round(value)))
    return format_amount(name, round(value, 3))


def _over(total: float, limit: float) -> bool:
    return total - limit > 1e-9 + _SLACK * abs(total)


def _limit_name(attr: QueueAttributes, name: str, limit: float) -> str:
    """``capability`` where the queue's own capability sets ``name`` at ``limit``."""
    capability = attr.capability
    if capability is not None and name in capability.dimensions():
        cap = capability[name]
        if abs(cap - limit) <= 1e-9 + _SLACK * abs(cap):
            return "capability"
    return "deserved"


def not_open(queue: QueueInfo) -> str:
    return f"queue {queue.name} is not open (state {queue.state})"


def allocatable_refusal(attr: QueueAttributes, request: Resource) -> str | None:
    """Why ``request`` may not be added to the queue's allocation, or None if it may."""
    if not attr.queue.is_open():
        return not_open(attr.queue)
    parts = []
    for name in sorted(request.names()):
        allocated, asked, deserved = attr.allocated[name], request[name], attr.deserved[name]
        if _over(allocated + asked, deserved):
            parts.append(
                f"{name} allocated {amount(name, allocated)} + request {amount(name, asked)} "
                f"exceeds {_limit_name(attr, name, deserved)} {amount(name, deserved)}"
            )
    if not parts:
        return None
    return f"queue {attr.queue.name}: " + "; ".join(parts)


def overused(attr: QueueAttributes) -> str:
    """Why the queue takes nothing more this session: its deserved share is reached."""
    names = sorted(attr.deserved.names())
    if not names:
        return f"queue {attr.queue.name}: deserved nothing (weight {attr.weight})"
    parts = [
        f"{name} allocated {amount(name, attr.allocated[name])} has reached "
        f"{_limit_name(attr, name, attr.deserved[name])} {amount(name, attr.deserved[name])}"
        for name in names
    ]
    return f"queue {attr.queue.name}: " + "; ".join(parts)


def enqueue_refusal(attr: QueueAttributes, minimum: Resource) -> str:
    """Why a job's ``minResources`` does not fit what its queue may still reserve."""
    parts = []
    limit_of = attr.real_capability
    for name in sorted(minimum.names()):
        wanted = minimum[name] + attr.allocated[name] + attr.inqueue[name]
        elastic = attr.elastic[name]
        limit = limit_of[name]
        if not _over(max(wanted - elastic, 0.0), limit):
            continue
        text = (
            f"{name} minResources {amount(name, minimum[name])} + allocated "
            f"{amount(name, attr.allocated[name])} + inqueue {amount(name, attr.inqueue[name])}"
        )
        if elastic > 0:
            text += f" - elastic {amount(name, elastic)}"
        limit_name = _limit_name(attr, name, limit).replace("deserved", "real capability")
        parts.append(f"{text} exceeds {limit_name} {amount(name, limit)}")
    if not parts:  # pragma: no cover - called only when the reservation does not fit
        return f"queue {attr.queue.name}: its minResources do not fit"
    return f"queue {attr.queue.name}: " + "; ".join(parts)
