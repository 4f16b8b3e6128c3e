"""Where a session's committed decisions go in the daemon.

A session runs in a worker thread and calls its committer synchronously from
``Statement.commit``. ``LoopCommitter`` hands every decision to the event loop
(``call_soon_threadsafe``), where the daemon assumes the pod in the cache at once and binds it
in the background. ``DryRunCommitter`` writes nothing: it logs each decision at info with the
chosen node's per-plugin scores and the runner-up's, as the session recorded them just before
the placement (``pumice.framework.explain``: the figures ``pumice simulate --explain`` shows).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pumice.framework.explain import describe_choice
from pumice.model import TaskInfo

if TYPE_CHECKING:
    from pumice.framework.session import Session

log = logging.getLogger("pumice.daemon")

BindSink = Callable[[str, str, str, str], None]
"""(uid, namespace, name, node)"""
EvictSink = Callable[[str, str, str, str], None]
"""(uid, namespace, name, reason)"""
NominateSink = Callable[[str, str], None]
"""(uid, node)"""


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
        self._loop.call_soon_threadsafe(self._on_bind, task.uid, task.namespace, task.name, node)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.evictions += 1
        self._loop.call_soon_threadsafe(self._on_evict, task.uid, task.namespace, task.name, reason)

    def nominate(self, task: TaskInfo, node: str) -> None:
        self._loop.call_soon_threadsafe(self._on_nominate, task.uid, node)


class DryRunCommitter:
    """Logs every decision with the scores behind it; binds and evicts nothing."""

    def __init__(self) -> None:
        self.session: Session | None = None
        self.binds = 0
        self.evictions = 0

    def attach(self, session: Session) -> None:
        """The session whose placements to explain (set right after it opens): it records each
        plugin's scores of the candidate nodes before every placement from now on."""
        self.session = session
        session.explain = True

    def bind(self, task: TaskInfo, node: str) -> None:
        self.binds += 1
        session = self.session
        scores = session.placement_scores.pop(task.uid, None) if session is not None else None
        why = describe_choice(scores, node)
        log.info("dry-run: bind %s to %s%s", task.key, node, f" ({why})" if why else "")

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.evictions += 1
        log.info("dry-run: evict %s from %s (%s)", task.key, task.node_name, reason)

    def nominate(self, task: TaskInfo, node: str) -> None:
        log.info("dry-run: nominate %s for %s", task.key, node)
