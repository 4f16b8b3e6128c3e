"""Informers: list, then watch from the list's resourceVersion, into a store of plain dicts.

One ``Informer`` keeps one kind (with optional field and label selectors) mirrored in
``store`` and tells its handler what changed. The loop, as client-go's reflector runs it:

1. **List** in pages (``limit`` + ``continue``); the list's resourceVersion is where the watch
   starts. The first list delivers every object as ``on_add`` and then sets ``synced``. A
   later list is diffed against the store: new objects are ``on_add``, changed ones
   ``on_update``, and objects the list no longer has were deleted while we were not looking,
   so they are ``on_delete``-d (a name now held by a new uid is a delete and an add).
2. **Watch** from that resourceVersion with ``allowWatchBookmarks``, a server
   ``timeoutSeconds`` and a client read timeout a little longer (a half-dead connection is
   noticed instead of hanging forever). Every event and bookmark advances the
   resourceVersion. A clean end of the stream (the server's timeout) re-watches from there.
3. **Relist** when the server answers 410 Gone (history compacted past our resourceVersion)
   and when a stream is cut or the server cannot be reached: events may have been lost, and
   only a list tells which objects went away. Errors back off exponentially (capped, with
   jitter), and so do a second 410 or an empty watch before the server has sent anything
   since the last failure; the backoff resets when a watch delivers something. Requests are
   paced by the client's QPS bucket, which also honours 429s.
4. **Resync** every ``resync_period``: list again at exactly the store's resourceVersion
   (``resourceVersionMatch=Exact``) and compare. Any difference is drift: a bug, since the
   watch should have told us. It is counted in ``stats.drift``, logged as a warning, and
   repaired by a relist.

Handlers run on the event-loop thread, one change at a time, in resourceVersion order. An
exception in a handler is logged and counted; it never stops the informer.

Memory: the store holds every object, so it drops ``metadata.managedFields`` (as
kube-scheduler's informers do), and an optional ``transform`` may slim objects further
before they are stored and delivered (it must keep ``metadata`` name, namespace, uid and
resourceVersion). A watch's DELETED object is not stored, so it is delivered to ``on_delete``
as the server sent it, untransformed: the handler reads little of it (which object, and how it
ended), and slimming it would cost as much as the ADDED did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pumice.kube.client import Kube
from pumice.kube.ratelimit import Backoff
from pumice.kube.rest import Gone, Kind, KubeError, TooManyRequests, error_for
from pumice.plain import Obj

log = logging.getLogger("pumice.kube.informer")

Key = tuple[str, str]

# The client notices a silent stream this long after the server should have ended it.
READ_TIMEOUT_MARGIN = 30.0
HANDLED_BETWEEN_YIELDS = 1000
"""A list's objects handed to the handler between two turns of the event loop (a lease
renewal, a health probe or another informer's page must not wait for a whole list)."""
PAGE_SIZE = 2000
"""Objects per list page: client-go's 500 makes 300 round trips of 150,000 pods; a page of
2,000 pods is 2 MB, decoded in a few milliseconds, and the requests shrink to a quarter."""


class InformerHandler(Protocol):
    """Receives an informer's changes, on the event-loop thread, in order."""

    def on_add(self, obj: Obj) -> None: ...

    def on_update(self, old: Obj, new: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


@dataclass
class InformerStats:
    relists: int = 0
    """Lists after the first one (410, dropped streams, errors, drift repairs)."""
    watch_restarts: int = 0
    """Watches started after the first one."""
    events: int = 0
    """Watch events applied (bookmarks not counted)."""
    drift: int = 0
    """Objects found different from the server by the periodic resync."""
    errors: int = 0
    """Failed lists and watches (each followed by a backoff)."""
    resyncs: int = 0
    """Drift checks done."""
    resyncs_skipped: int = 0
    """Drift checks impossible: the server no longer had the store's resourceVersion."""
    handler_errors: int = 0


def key_of(obj: Obj) -> Key:
    metadata = obj.get("metadata") or {}
    return (metadata.get("namespace") or "", metadata.get("name") or "")


def _uid(obj: Obj) -> str | None:
    return (obj.get("metadata") or {}).get("uid")


def _rv(obj: Obj) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")


class _Interrupted(Exception):
    """The resync asked for a relist while a watch was running."""


class Informer:
    def __init__(
        self,
        kube: Kube,
        kind: Kind,
        handler: InformerHandler,
        *,
        name: str,
        field_selector: str | None = None,
        label_selector: str | None = None,
        watch_timeout: int = 300,
        resync_period: float = 300.0,
        page_size: int = PAGE_SIZE,
        backoff_initial: float = 0.5,
        backoff_cap: float = 30.0,
        transform: Callable[[Obj], Obj] | None = None,
    ) -> None:
        self.kube = kube
        self.kind = kind
        self.handler = handler
        self.name = name
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.resync_period = resync_period
        self.page_size = page_size
        self.transform = transform
        self.synced = asyncio.Event()
        self.stats = InformerStats()
        self.store: dict[Key, Obj] = {}
        self.resource_version = ""
        self._backoff = Backoff(initial=backoff_initial, cap=backoff_cap)
        self._watch_task: asyncio.Task[None] | None = None
        self._interrupt_requested = False
        self._relist_requested = False
        self._received = 0
        self._watches = 0
        self._lists = 0

    # -- the loop ------------------------------------------------------------------------

    async def run(self) -> None:
        """List, then watch, relisting when needed, until cancelled."""
        resync = None
        if self.resync_period > 0:
            resync = asyncio.create_task(self._resync_loop(), name=f"resync-{self.name}")
        need_list = True
        try:
            while True:
                try:
                    if need_list or self._relist_requested:
                        self._relist_requested = False
                        await self._list_and_diff()
                        need_list = False
                    self._received = 0
                    await self._watch_until_interrupted()
                    if not self._received:
                        # ended at once with nothing to say: do not hammer the server
                        await asyncio.sleep(self._backoff.next())
                except _Interrupted:
                    need_list = True
                except Gone as exc:
                    need_list = True
                    if self._backoff.attempts:
                        # nothing arrived since the last failure: pace the relists
                        delay = self._backoff.next()
                        log.info("%s: %s; relisting in %.1fs", self.name, exc, delay)
                        await asyncio.sleep(delay)
                    else:
                        self._backoff.next()
                        log.info("%s: %s; relisting", self.name, exc)
                except KubeError as exc:
                    self.stats.errors += 1
                    need_list = True
                    delay = self._backoff.next()
                    if isinstance(exc, TooManyRequests) and exc.retry_after:
                        delay = max(delay, min(exc.retry_after, self._backoff.cap))
                    log.warning("%s: %s; relisting in %.1fs", self.name, exc, delay)
                    await asyncio.sleep(delay)
        finally:
            if resync is not None:
                resync.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await resync

    async def _watch_until_interrupted(self) -> None:
        """One watch, in a task the resync can cancel to force a relist."""
        self._interrupt_requested = False
        task = asyncio.create_task(self._watch(), name=f"watch-{self.name}")
        self._watch_task = task
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            ours = current is not None and current.cancelling() > 0
            if task.cancelled() and self._interrupt_requested and not ours:
                raise _Interrupted() from None
            task.cancel()
            raise
        finally:
            self._watch_task = None

    def _interrupt(self) -> None:
        self._relist_requested = True
        if self._watch_task is not None and not self._watch_task.done():
            self._interrupt_requested = True
            self._watch_task.cancel()

    # -- list ----------------------------------------------------------------------------

    def _selectors(self) -> dict[str, object]:
        return {"fieldSelector": self.field_selector, "labelSelector": self.label_selector}

    async def list_objects(
        self, resource_version: str = "", exact: bool = False
    ) -> tuple[list[Obj], str]:
        """Every matching object (all pages) and the list's resourceVersion.

        The next page is asked for as soon as a page's continue token is known, before its
        objects are prepared: the server builds one page while this side digests the last.
        """
        items: list[Obj] = []
        rv = ""
        first: dict[str, object] = {**self._selectors(), "limit": self.page_size}
        if resource_version:
            first["resourceVersion"] = resource_version
            if exact:
                first["resourceVersionMatch"] = "Exact"
        pending = asyncio.ensure_future(self.kube.request("GET", self.kind.path(), query=first))
        try:
            while True:
                page = await pending
                metadata = page.get("metadata") or {}
                rv = str(metadata.get("resourceVersion") or rv)
                token = metadata.get("continue") or ""
                if token:
                    query = {**self._selectors(), "limit": self.page_size, "continue": token}
                    pending = asyncio.ensure_future(
                        self.kube.request("GET", self.kind.path(), query=query)
                    )
                    await asyncio.sleep(0)  # let the request go out before the work below
                kind, api_version = self.kind.kind, self.kind.api_version
                prepare = self._prepare
                for obj in page.get("items") or ():
                    # list items carry no kind/apiVersion; watch events do: make them alike
                    if "kind" not in obj:
                        obj["kind"] = kind
                    if "apiVersion" not in obj:
                        obj["apiVersion"] = api_version
                    items.append(prepare(obj))
                del page
                if not token:
                    return items, rv
        finally:
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, KubeError):
                    await pending
            elif not pending.cancelled():
                pending.exception()  # a next page that failed too adds nothing: seen, dropped

    async def _list_and_diff(self) -> None:
        items, rv = await self.list_objects()
        fresh = {key_of(obj): obj for obj in items}
        old_store = self.store
        self.store = fresh
        self.resource_version = rv
        if self._lists:
            self.stats.relists += 1
        self._lists += 1
        for key, old in old_store.items():
            if key not in fresh:
                self._call(self.handler.on_delete, old)
        for done, (key, obj) in enumerate(list(fresh.items()), 1):
            if not done % HANDLED_BETWEEN_YIELDS:
                await asyncio.sleep(0)  # 150,000 pods take seconds: let the loop breathe
            previous = old_store.get(key)
            if previous is None:
                self._call(self.handler.on_add, obj)
            elif _uid(previous) != _uid(obj):
                self._call(self.handler.on_delete, previous)
                self._call(self.handler.on_add, obj)
            elif _rv(previous) != _rv(obj):
                self._call(self.handler.on_update, previous, obj)
            else:
                # unchanged: keep the object the handler already holds, so the next update's
                # ``old`` is exactly what it was given
                fresh[key] = previous
        if not self.synced.is_set():
            log.info("%s: synced %d objects at resourceVersion %s", self.name, len(fresh), rv)
            self.synced.set()

    # -- watch ---------------------------------------------------------------------------

    async def _watch(self) -> None:
        if self._watches:
            self.stats.watch_restarts += 1
        self._watches += 1
        query = {
            **self._selectors(),
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": self.watch_timeout,
        }
        events = self.kube.stream(
            self.kind.path(), query, read_timeout=self.watch_timeout + READ_TIMEOUT_MARGIN
        )
        async with contextlib.aclosing(events):
            async for event in events:
                self._apply(event)

    def _apply(self, event: Obj) -> None:
        if not self._received:
            self._received = 1
            self._backoff.reset()  # the server is talking again
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = int(obj.get("code") or 500)
            raise error_for(code, "WATCH", self.kind.path(), obj)
        rv = _rv(obj)
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        if kind == "DELETED":
            # nothing stores a deleted object: it is handed over as it came, not transformed
            if self.store.pop(key_of(obj), None) is not None:
                self._call(self.handler.on_delete, obj)
            if rv:
                self.resource_version = rv
            self.stats.events += 1
            return
        obj = self._prepare(obj)
        key = key_of(obj)
        if kind in ("ADDED", "MODIFIED"):
            old = self.store.get(key)
            self.store[key] = obj
            if old is None:
                self._call(self.handler.on_add, obj)
            elif _uid(old) != _uid(obj):
                self._call(self.handler.on_delete, old)
                self._call(self.handler.on_add, obj)
            else:
                self._call(self.handler.on_update, old, obj)
        else:
            log.warning("%s: ignoring watch event of unknown type %r", self.name, kind)
            return
        if rv:
            self.resource_version = rv
        self.stats.events += 1

    def _prepare(self, obj: Obj) -> Obj:
        """What is stored and delivered: without managedFields (nobody here reads them and
        they are often the largest part of an object), then through ``transform``."""
        metadata = obj.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
        return self.transform(obj) if self.transform is not None else obj

    def _call(self, method: Any, *args: Obj) -> None:
        try:
            method(*args)
        except Exception:
            self.stats.handler_errors += 1
            log.exception("%s: handler %s failed", self.name, getattr(method, "__name__", method))

    # -- resync --------------------------------------------------------------------------

    async def _resync_loop(self) -> None:
        await self.synced.wait()
        while True:
            await asyncio.sleep(self.resync_period)
            try:
                await self.check_drift()
            except KubeError as exc:
                log.info("%s: resync list failed: %s", self.name, exc)

    async def check_drift(self) -> int:
        """Compare the store with the server at the store's resourceVersion; relist on drift.

        Returns how many objects differ (0 when the server no longer has that version, as
        then nothing can be compared).
        """
        rv = self.resource_version
        if not rv:
            return 0
        snapshot = {key: (_uid(obj), _rv(obj)) for key, obj in self.store.items()}
        try:
            items, _ = await self.list_objects(rv, exact=True)
        except Gone:
            self.stats.resyncs_skipped += 1
            return 0
        self.stats.resyncs += 1
        server = {key_of(obj): (_uid(obj), _rv(obj)) for obj in items}
        drift = sum(1 for key, ident in server.items() if snapshot.get(key) != ident)
        drift += sum(1 for key in snapshot if key not in server)
        if drift:
            self.stats.drift += drift
            log.warning(
                "%s: %d object(s) differ from the server at resourceVersion %s; relisting",
                self.name,
                drift,
                rv,
            )
            self._interrupt()
        return drift
