"""Watch streams: newline-delimited JSON events, bookmarks, timeouts and 410 Gone.

A ``Watcher`` is registered with the store as a sink for one table. The store offers it every
change synchronously; the watcher decides which event (if any) its client sees, following
the real server's rules for selectors: an object that starts matching arrives as ADDED, one
that stops matching arrives as DELETED (carrying its previous state), a change that neither
matched before nor matches now is not sent. The encoded line is cached on the change, so an
event is serialized once per event type and view however many watchers receive it.

``serve_watch`` streams one watch: synthetic ADDED events for the current state when the
client asked for no resourceVersion (or "0", or ``sendInitialEvents``), otherwise the
retained history after the requested version, or an ERROR event with a 410 Status when
that version is older than the history; then live events, BOOKMARKs every
``bookmark_interval`` when ``allowWatchBookmarks`` is set, and a clean end at
``timeoutSeconds``. ``WatchHub`` knows every open watch so faults can end them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import orjson
from aiohttp import web

from pumice.sim.errors import ApiError
from pumice.sim.faults import RESPONSE_HEADERS
from pumice.sim.objects import Obj, meta
from pumice.sim.resources import ResourceType
from pumice.sim.selectors import Selector
from pumice.sim.store import ADDED, DELETED, MODIFIED, Change, Store
from pumice.sim.tables import to_table

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
MAX_PENDING = 200_000


class Watcher:
    """One client's watch on one table."""

    def __init__(self, rtype: ResourceType, selector: Selector, table: bool = False) -> None:
        self.rtype = rtype
        self.selector = selector
        self.pending: list[bytes] = []
        self.wakeup = asyncio.Event()
        self.closed = False
        self.aborted = False
        self._view = rtype.api_version
        self._convert: Callable[[Obj], Obj] | None = rtype.to_view
        if table:
            # kubectl get -w: every event object is a one-row Table
            self._view = "Table"
            self._convert = partial(_one_row_table, rtype)

    def classify(self, change: Change) -> str | None:
        sel = self.selector
        if sel.trivial:
            return change.type
        now = sel.matches(change.obj)
        if change.type != MODIFIED:
            return change.type if now else None
        before = change.prev is not None and sel.matches(change.prev)
        if now:
            return MODIFIED if before else ADDED
        return DELETED if before else None

    def offer(self, change: Change) -> None:
        if self.closed:
            return
        event_type = self.classify(change)
        if event_type is None:
            return
        self.pending.append(change.line(event_type, self._view, self._convert))
        if len(self.pending) > MAX_PENDING:
            self.close(abort=True)
        self.wakeup.set()

    def initial(self, obj: Obj) -> None:
        out = self._convert(obj) if self._convert is not None else obj
        self.pending.append(orjson.dumps({"type": ADDED, "object": out}) + b"\n")

    def bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        metadata: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self.rtype.kind, "apiVersion": self.rtype.api_version, "metadata": metadata}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    def close(self, abort: bool = False) -> None:
        """End the stream: cleanly, or by dropping the connection (``abort``)."""
        self.closed = True
        self.aborted = self.aborted or abort
        self.wakeup.set()


def _one_row_table(rtype: ResourceType, obj: Obj) -> Obj:
    return to_table(rtype, [obj], {"resourceVersion": meta(obj).get("resourceVersion", "")}, "")


class WatchHub:
    """Every open watch, so faults can end them all."""

    def __init__(self) -> None:
        self.watchers: set[Watcher] = set()

    def close_all(self, abort: bool = False) -> int:
        count = len(self.watchers)
        for watcher in list(self.watchers):
            watcher.close(abort)
        return count


@dataclass(frozen=True)
class WatchRequest:
    rtype: ResourceType
    selector: Selector
    resource_version: str
    timeout: float
    bookmarks: bool
    send_initial_events: bool
    table: bool = False


async def serve_watch(
    request: web.BaseRequest,
    store: Store,
    hub: WatchHub,
    wreq: WatchRequest,
    bookmark_interval: float,
) -> web.StreamResponse:
    rtype = wreq.rtype
    watcher = Watcher(rtype, wreq.selector, wreq.table)
    table = rtype.table
    rv_text = wreq.resource_version
    error: ApiError | None = None
    initial_end = False
    if rv_text in ("", "0") or wreq.send_initial_events:
        for key in sorted(store.table(table)):
            obj = store.table(table)[key]
            if wreq.selector.trivial or wreq.selector.matches(obj):
                watcher.initial(obj)
        initial_end = wreq.send_initial_events and wreq.bookmarks
    else:
        try:
            start = int(rv_text)
        except ValueError:
            start = -1
        try:
            if start < 0:
                raise ApiError(400, "BadRequest", f"invalid resource version: {rv_text!r}")
            for change in store.changes_since(table, start):
                watcher.offer(change)
        except ApiError as exc:
            error = exc
    if error is None:
        if initial_end:
            watcher.pending.append(watcher.bookmark(store.rv, initial_end=True))
        store.add_sink(table, watcher)
        hub.watchers.add(watcher)
    headers = {"Content-Type": "application/json", **request.get(RESPONSE_HEADERS, {})}
    resp = web.StreamResponse(status=200, headers=headers)
    resp.enable_chunked_encoding()
    try:
        await resp.prepare(request)
        if error is not None:
            line = orjson.dumps({"type": "ERROR", "object": error.status()}) + b"\n"
            await resp.write(line)
            await resp.write_eof()
            return resp
        await _pump(request, resp, store, watcher, wreq, bookmark_interval)
    except ConnectionError:
        # the client went away (or a fault dropped it): nothing left to tell it
        watcher.close(abort=True)
    except asyncio.CancelledError:
        watcher.close(abort=True)
        raise
    finally:
        store.remove_sink(table, watcher)
        hub.watchers.discard(watcher)
    return resp


async def _pump(
    request: web.BaseRequest,
    resp: web.StreamResponse,
    store: Store,
    watcher: Watcher,
    wreq: WatchRequest,
    bookmark_interval: float,
) -> None:
    loop_time = time.monotonic
    deadline = loop_time() + wreq.timeout
    next_bookmark = loop_time() + bookmark_interval if wreq.bookmarks else float("inf")
    while True:
        if watcher.pending:
            batch, watcher.pending = watcher.pending, []
            await resp.write(b"".join(batch))
        if watcher.closed:
            break
        now = loop_time()
        if now >= deadline:
            if wreq.bookmarks:
                await resp.write(watcher.bookmark(store.rv))
            break
        if now >= next_bookmark:
            await resp.write(watcher.bookmark(store.rv))
            next_bookmark = now + bookmark_interval
            continue
        watcher.wakeup.clear()
        if watcher.pending or watcher.closed:
            continue
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for may swallow a cancel that
        # arrives as the wait completes (the Lease loop hung on it), and this loop goes on
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(deadline, next_bookmark) - now):
                await watcher.wakeup.wait()
    if watcher.aborted:
        transport = request.transport
        if transport is not None:
            transport.abort()
        return
    await resp.write_eof()
