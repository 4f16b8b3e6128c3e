"""The write log: every mutating API request, for tests to assert on.

Each POST, PUT, PATCH and DELETE that reaches the API (not the ``/sim`` admin endpoint) is
recorded with its time, Kubernetes verb, HTTP method, path, query, user agent, response code
and the resource it addressed, in arrival order, including requests that failed or were
failed by fault injection.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from pumice.sim.objects import Obj

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class WriteRecord:
    time: float
    verb: str
    method: str
    path: str
    query: str
    user_agent: str
    code: int
    resource: str
    """``pods``, ``pods/binding``, ``leases``...: plural with the subresource, if any."""
    namespace: str
    name: str

    def to_json(self) -> Obj:
        return asdict(self)


class WriteLog:
    """A bounded, ordered log of mutating requests."""

    def __init__(self, limit: int = 200_000) -> None:
        self._entries: deque[WriteRecord] = deque(maxlen=limit)

    def record(self, entry: WriteRecord) -> None:
        self._entries.append(entry)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[WriteRecord]:
        return iter(list(self._entries))

    def select(
        self,
        verb: str | None = None,
        resource: str | None = None,
        user_agent: str | None = None,
        code: int | None = None,
    ) -> list[WriteRecord]:
        """Entries matching every given filter (``user_agent`` matches a substring)."""
        return [
            e
            for e in self._entries
            if (verb is None or e.verb == verb)
            and (resource is None or e.resource == resource)
            and (user_agent is None or user_agent in e.user_agent)
            and (code is None or e.code == code)
        ]

    def clear(self) -> None:
        self._entries.clear()
