"""Where a session's committed decisions go in the daemon.

A session runs in a worker thread and calls its committer synchronously from
``Statement.commit``. ``LoopCommitter`` hands every decision to the event loop
(``call_soon_threadsafe``), where the daemon assumes the pod in the cache at once and binds it
in the background; the volume writes the plugins ask for before a bind (``pre_bind``) are
handed over first, in order, so the loop knows them before the bind arrives.
``DryRunCommitter`` writes nothing: it logs each decision at info with the chosen node's
per-plugin scores and the runner-up's, as the session recorded them just before the placement
(``pumice.framework.placement``: the figures ``pumice simulate --explain`` shows), and each volume
write it would make.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING, Protocol

from pumice.framework.committer import PreBindWriter
from pumice.framework.placement import describe_choice
from pumice.framework.statement import StatementError
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


class VolumeSink(Protocol):
    """A volume write for the pod ``uid`` of ``job``: ``volume`` bound to ``claim``, or (None)
    one provisioned for it where ``node`` reaches it."""

    def __call__(
        self, *, uid: str, job: str, claim: str, volume: str | None, node: str
    ) -> None: ...


class _LoopWrites:
    """A pod's pre-bind writer: each write goes to the loop as it is asked."""

    def __init__(self, committer: LoopCommitter, task: TaskInfo) -> None:
        self._committer = committer
        self._task = task

    def bind_volume(self, *, claim: str, volume: str) -> None:
        self._committer.send_write(
            self._task, claim=claim, volume=volume, node=self._task.node_name or ""
        )

    def provision_volume(self, *, claim: str, node: str) -> None:
        self._committer.send_write(self._task, claim=claim, volume=None, node=node)


class _LoggedWrites:
    """A pod's pre-bind writer in dry-run: logs what would be written."""

    def __init__(self, task: TaskInfo, node: str) -> None:
        self._task = task
        self._node = node

    def bind_volume(self, *, claim: str, volume: str) -> None:
        log.info("dry-run: bind volume %s to claim %s (for %s)", volume, claim, self._task.key)

    def provision_volume(self, *, claim: str, node: str) -> None:
        log.info("dry-run: select node %s for claim %s (for %s)", node, claim, self._task.key)


class LoopCommitter:
    """Forwards binds, evictions and nominations to callbacks on the event loop's thread."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_bind: BindSink,
        on_evict: EvictSink,
        on_nominate: NominateSink,
        on_volume: VolumeSink | None = None,
    ) -> None:
        self._loop = loop
        self._on_bind = on_bind
        self._on_evict = on_evict
        self._on_nominate = on_nominate
        self._on_volume = on_volume
        self.binds = 0
        self.evictions = 0

    def pre_bind(self, task: TaskInfo, node: str) -> PreBindWriter:
        return _LoopWrites(self, task)

    def send_write(self, task: TaskInfo, *, claim: str, volume: str | None, node: str) -> None:
        if self._on_volume is None:
            raise StatementError("this committer binds no volumes")
        write = partial(
            self._on_volume, uid=task.uid, job=task.job, claim=claim, volume=volume, node=node
        )
        self._loop.call_soon_threadsafe(write)

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
        """The session whose placements to explain (set right after it opens): it records each
        plugin's scores of the candidate nodes before every placement from now on."""
        self.session = session
        session.explain = True

    def pre_bind(self, task: TaskInfo, node: str) -> PreBindWriter:
        return _LoggedWrites(task, node)

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
