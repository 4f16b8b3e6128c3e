"""Where a session's committed decisions go.

The daemon's committer hands binds and evictions to its binder and evictor; ``pumice
simulate`` and the tests record them; dry-run logs them. A session always gets one
explicitly (``Session.open(..., committer=...)``).
"""

from __future__ import annotations

import logging
from typing import Protocol

from pumice.model.objects import TaskInfo

log = logging.getLogger("pumice.session")


class Committer(Protocol):
    """Where committed decisions go: the binder and evictor of the daemon, or a recorder.

    A committer may also have ``nominate(task, node)``: a committed statement that evicted
    tasks calls it for every task it pipelined (a preemptor waiting for the room its victims
    free), so the daemon can write the pod's ``status.nominatedNodeName``. It is optional:
    the session calls it only on committers that have it.
    """

    def bind(self, task: TaskInfo, node: str) -> None: ...

    def evict(self, task: TaskInfo, reason: str) -> None: ...


class RecordingCommitter:
    """Keeps every committed decision in ``decisions`` and logs it; writes nothing."""

    def __init__(self) -> None:
        self.decisions: list[tuple[str, str, str]] = []

    def bind(self, task: TaskInfo, node: str) -> None:
        self.decisions.append(("bind", task.key, node))
        log.info("decision: bind %s to %s", task.key, node)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.decisions.append(("evict", task.key, reason))
        log.info("decision: evict %s (%s)", task.key, reason)

    def nominate(self, task: TaskInfo, node: str) -> None:
        self.decisions.append(("nominate", task.key, node))
        log.info("decision: nominate %s for %s", task.key, node)
