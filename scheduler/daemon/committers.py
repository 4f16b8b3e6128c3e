"""Where a session's committed decisions go in the daemon.

A session runs in a worker thread and calls its committer synchronously from
``Statement.commit``. ``LoopCommitter`` hands every decision to the event loop
(``call_soon_threadsafe``), where the daemon assumes the pod in the cache at once and binds it
in the background. ``DryRunCommitter`` writes nothing: it logs each decision at info with the
chosen node's per-plugin scores and the runner-up's.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING, Protocol

from pumice.daemon.explain import explain_choice
from pumice.model import TaskInfo

if TYPE_CHECKING:
    from pumice.framework.session import Session

log = logging.getLogger("pumice.daemon")

# Keywords only: four strings in a row were once passed in two different orders.


class BindSink(Protocol):
    def __call__(self, *, uid: str, namespace: str, name: str, node: str) -> None: ...


class EvictSink(Protocol):
    def __call__(self, *, uid: str, namespace: str, name: str, reason: str) -> None: ...


class NominateSink(Protocol):
    def __call__(self, uid: str, *, node: str) -> None: ...


class LoopCommitter:
    """Forwards binds, evictions and nominations to callbacks on the event loop's thread."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_bind: BindSink,
        on_evict: EvictSink,
        on_nominate: NominateSink,
    ) -> None:
        self._loop = loop
        self._on_bind = on_bind
        self._on_evict = on_evict
        self._on_nominate = on_nominate
        self.binds = 0
        self.evictions = 0

    def bind(self, task: TaskInfo, node: str) -> None:
        self.binds += 1
        self._loop.call_soon_threadsafe(
            partial(
                self._on_bind, uid=task.uid, namespace=task.namespace, name=task.name, node=node
            )
        )

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.evictions += 1
        self._loop.call_soon_threadsafe(
            partial(
                self._on_evict,
                uid=task.uid,
                namespace=task.namespace,
                name=task.name,
                reason=reason,
            )
        )

    def nominate(self, task: TaskInfo, node: str) -> None:
        self._loop.call_soon_threadsafe(partial(self._on_nominate, task.uid, node=node))


class DryRunCommitter:
    """Logs every decision with the scores behind it; binds and evicts nothing."""

    def __init__(self) -> None:
        self.session: Session | None = None
        self.binds = 0
        self.evictions = 0

    def attach(self, session: Session) -> None:
        """The session whose plugins explain the decisions (set right after it opens)."""
        self.session = session

    def bind(self, task: TaskInfo, node: str) -> None:
        self.binds += 1
        why = explain_choice(self.session, task, node) if self.session is not None else ""
        log.info("dry-run: bind %s to %s%s", task.key, node, f" ({why})" if why else "")

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.evictions += 1
        log.info("dry-run: evict %s from %s (%s)", task.key, task.node_name, reason)

    def nominate(self, task: TaskInfo, node: str) -> None:
        log.info("dry-run: nominate %s for %s", task.key, node)
