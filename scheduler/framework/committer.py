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

    It may also have ``pre_bind(task, node) -> PreBindWriter``: the writer the plugins'
    ``pre_bind`` hook is given for a task about to be bound (the session asks for it only when
    a plugin implements the hook). A committer that binds pods for real must have it, and must
    bind each pod only once its writes took effect; one without it gives plugins a writer
    that ignores what they ask (``IGNORED_WRITES``).
    """

    def bind(self, task: TaskInfo, node: str) -> None: ...

    def evict(self, task: TaskInfo, reason: str) -> None: ...


class PreBindWriter(Protocol):
    """What a ``pre_bind`` hookimpl may ask for, before its task's pod is bound.

    Each call says "make this so, then wait for the claim to be bound before binding the
    pod"; what is already so is not written again (a restarted scheduler asks again for what
    its predecessor wrote). Claims are named ``namespace/name``.
    """

    def bind_volume(self, claim: str, volume: str) -> None:
        """Bind the PersistentVolume ``volume`` to ``claim``: its ``spec.claimRef`` names the
        claim (kube-scheduler's static binding; the PV controller completes it)."""

    def provision_volume(self, claim: str, node: str) -> None:
        """Have a volume provisioned for ``claim`` where ``node`` can reach it: the claim's
        ``volume.kubernetes.io/selected-node`` annotation (the provisioner then creates and
        binds the volume)."""


class IgnoredWrites:
    """The pre-bind writer of committers that bind nothing for real."""

    def bind_volume(self, claim: str, volume: str) -> None:
        return None

    def provision_volume(self, claim: str, node: str) -> None:
        return None


IGNORED_WRITES = IgnoredWrites()


class RecordedWrites:
    """A pre-bind writer that keeps what it is asked, in order, as ``(kind, claim, target)``:
    ``("bind-volume", "ns/claim", volume)`` or ``("provision-volume", "ns/claim", node)``."""

    def __init__(self, into: list[tuple[str, str, str]] | None = None) -> None:
        self.writes: list[tuple[str, str, str]] = [] if into is None else into

    def bind_volume(self, claim: str, volume: str) -> None:
        self.writes.append(("bind-volume", claim, volume))

    def provision_volume(self, claim: str, node: str) -> None:
        self.writes.append(("provision-volume", claim, node))


class RecordingCommitter:
    """Keeps every committed decision in ``decisions`` and logs it; writes nothing."""

    def __init__(self) -> None:
        self.decisions: list[tuple[str, str, str]] = []

    def pre_bind(self, task: TaskInfo, node: str) -> PreBindWriter:
        """What the plugins write before ``task`` is bound: recorded among the decisions,
        before the bind, as ``(kind, claim, volume or node)``."""
        return RecordedWrites(self.decisions)

    def bind(self, task: TaskInfo, node: str) -> None:
        self.decisions.append(("bind", task.key, node))
        log.info("decision: bind %s to %s", task.key, node)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.decisions.append(("evict", task.key, reason))
        log.info("decision: evict %s (%s)", task.key, reason)

    def nominate(self, task: TaskInfo, node: str) -> None:
        self.decisions.append(("nominate", task.key, node))
        log.info("decision: nominate %s for %s", task.key, node)
