"""What tests and operators see of the server besides the API: the write log and ``/sim/``.

The write log records every mutating API request (POST, PUT, PATCH, DELETE; not the admin
endpoint) with its time, Kubernetes verb, HTTP method, path, query, user agent, response code
and the resource it addressed, in arrival order, including requests that failed or were failed
by fault injection. In-process tests read ``SimServer.writes``; other processes use the admin
endpoint, which also exposes the fault controls of ``SimServer.faults``::

    GET    /sim/faults                 current knobs (and how many errors were injected)
    PUT    /sim/faults                 set knobs: {"latency": 0.05,
                                         "errors": [{"code": 429, "fraction": 0.5,
                                                     "verb": "create", "resource": "pods/binding",
                                                     "count": 10}],
                                         "watchCloseInterval": 5}
    DELETE /sim/faults                 switch every fault off
    POST   /sim/faults/close-watches   end every open watch now
    POST   /sim/faults/compact         forget history (older resourceVersions get 410)
    POST   /sim/faults/restart?downtime=1.5   drop every connection, refuse new ones a while
    GET    /sim/writes                 the write log ({"items": [...]}); ?since=N skips N
    DELETE /sim/writes                 clear the write log
    GET    /sim/state                  resourceVersion and object counts per resource

Admin requests are never delayed, failed or logged by the faults they control.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Protocol

from aiohttp import web

from pumice.sim.errors import ApiError, bad_request, method_not_allowed, no_such_path
from pumice.sim.objects import Obj
from pumice.sim.rest import error_response, json_response, read_json

if TYPE_CHECKING:
    from pumice.sim.faults import Faults
    from pumice.sim.volumes import VolumeControllers


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
        *,
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


class AdminTarget(Protocol):
    """What the admin endpoint reads and works (``SimServer``, which imports this module, so
    this one knows it only by this shape)."""

    faults: Faults
    writes: WriteLog
    volumes: VolumeControllers

    def state(self) -> Obj: ...


async def handle_admin(server: AdminTarget, request: web.BaseRequest) -> web.StreamResponse:
    try:
        return await _route(server, request)
    except ApiError as exc:
        return error_response(exc)


async def _route(server: AdminTarget, request: web.BaseRequest) -> web.StreamResponse:
    path = request.path.rstrip("/")
    method = request.method
    faults = server.faults
    if path == "/sim/faults":
        if method == "GET":
            return json_response(faults.to_json())
        if method in ("PUT", "POST", "PATCH"):
            faults.configure(await read_json(request))
            return json_response(faults.to_json())
        if method == "DELETE":
            faults.clear()
            return json_response(faults.to_json())
        raise method_not_allowed()
    if path.startswith("/sim/faults/") and method != "POST":
        raise method_not_allowed()
    if path == "/sim/faults/close-watches":
        return json_response({"closed": faults.close_watches()})
    if path == "/sim/faults/compact":
        return json_response({"resourceVersion": str(faults.compact())})
    if path == "/sim/faults/restart":
        try:
            downtime = float(request.query.get("downtime", "0"))
        except ValueError:
            raise bad_request("downtime must be a number of seconds") from None
        dropped = await faults.restart(downtime, keep=request.transport)
        resp = json_response({"dropped": dropped})
        resp.force_close()
        return resp
    if path == "/sim/writes":
        if method == "GET":
            since = int(request.query.get("since", "0") or 0)
            items = [w.to_json() for w in list(server.writes)[since:]]
            return json_response({"items": items, "total": len(server.writes)})
        if method == "DELETE":
            server.writes.clear()
            return json_response({"items": [], "total": 0})
        raise method_not_allowed()
    if path == "/sim/volumes":
        if method in ("PUT", "POST", "PATCH"):
            server.volumes.provisioner.configure(await read_json(request))
        elif method != "GET":
            raise method_not_allowed()
        return json_response(server.volumes.provisioner.to_json())
    if path == "/sim/state":
        return json_response(server.state())
    raise no_such_path()
