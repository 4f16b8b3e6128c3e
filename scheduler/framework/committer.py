"""Where a session's committed decisions go, and the one recorder of them.

The daemon's committer hands binds and evictions to its binder and evictor; dry-run logs them.
Everything that needs to know what a session decided records them with ``RecordingCommitter``
— the tests, ``pumice simulate``, ``pumice explain``'s what-if runs, the daemon's flight recorder
(a recorder in front of the daemon's committer: ``inner``) and ``pumice replay`` — so they all
see the same decisions in the same order. A session always gets a committer explicitly
(``Session.open(..., committer=...)``).
"""

from __future__ import annotations

import logging
from typing import NamedTuple, Protocol

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

    def bind_volume(self, *, claim: str, volume: str) -> None:
        """Bind the PersistentVolume ``volume`` to ``claim``: its ``spec.claimRef`` names the
        claim (kube-scheduler's static binding; the PV controller completes it)."""

    def provision_volume(self, *, claim: str, node: str) -> None:
        """Have a volume provisioned for ``claim`` where ``node`` can reach it: the claim's
        ``volume.kubernetes.io/selected-node`` annotation (the provisioner then creates and
        binds the volume)."""


class IgnoredWrites:
    """The pre-bind writer of committers that bind nothing for real."""

    def bind_volume(self, *, claim: str, volume: str) -> None:
        return None

    def provision_volume(self, *, claim: str, node: str) -> None:
        return None


IGNORED_WRITES = IgnoredWrites()


class VolumeWrite(NamedTuple):
    """One volume write a plugin asked for before a bind."""

    claim: str
    """``namespace/name`` of the claim."""
    volume: str | None
    """The PersistentVolume bound to the claim, or None: provision one."""
    node: str
    """Binding: the pod's node; provisioning: the node the volume must be reachable from."""


class _KeptWrites:
    """A pre-bind writer that passes each write on to ``inner`` and then keeps it."""

    def __init__(self, into: list[VolumeWrite], node: str, inner: PreBindWriter) -> None:
        self.into = into
        self.node = node
        self.inner = inner

    def bind_volume(self, *, claim: str, volume: str) -> None:
        self.inner.bind_volume(claim=claim, volume=volume)
        self.into.append(VolumeWrite(claim, volume, self.node))

    def provision_volume(self, *, claim: str, node: str) -> None:
        self.inner.provision_volume(claim=claim, node=node)
        self.into.append(VolumeWrite(claim, None, node))


class Acting(Protocol):
    """What a recorder reads of its session: the action running now."""

    @property
    def action(self) -> str: ...


class Decision(NamedTuple):
    """One committed decision."""

    kind: str
    """``bind``, ``evict`` or ``nominate``."""
    task: TaskInfo
    node: str
    """Bind and nominate: the chosen node; evict: the node the victim ran on."""
    reason: str
    """Evict: why (empty otherwise)."""
    action: str
    """The action that made it ("" when the recorder knows no session)."""


class RecordingCommitter:
    """Keeps every committed decision, in commit order, in ``made``.

    With ``inner``, each decision is first passed on to that committer (the daemon's, behind its
    flight recorder) and kept only once it took it. Each is logged at info unless ``quiet``.
    Set ``session`` after opening the session to note which action made each decision. The
    volume writes plugins ask for before binds (``pre_bind``) are kept, in order, in
    ``volume_writes`` (and passed on to ``inner``'s writer, if it has one).
    """

    def __init__(self, inner: Committer | None = None, *, quiet: bool = False) -> None:
        self.inner = inner
        self.quiet = quiet
        self.session: Acting | None = None
        self.made: list[Decision] = []
        self.volume_writes: list[VolumeWrite] = []

    @property
    def decisions(self) -> list[tuple[str, str, str]]:
        """``(kind, namespace/name, node)`` per decision — for an eviction, its reason instead
        of the node: what the tests and benchmarks compare."""
        return [(d.kind, d.task.key, d.reason if d.kind == "evict" else d.node) for d in self.made]

    def of_kind(self, kind: str) -> list[Decision]:
        return [d for d in self.made if d.kind == kind]

    def pre_bind(self, task: TaskInfo, node: str) -> PreBindWriter:
        opener = getattr(self.inner, "pre_bind", None)
        inner = opener(task, node) if opener is not None else IGNORED_WRITES
        return _KeptWrites(self.volume_writes, node, inner)

    def bind(self, task: TaskInfo, node: str) -> None:
        if self.inner is not None:
            self.inner.bind(task, node)
        self.made.append(Decision("bind", task, node, "", self._action()))
        if not self.quiet:
            log.info("decision: bind %s to %s", task.key, node)

    def evict(self, task: TaskInfo, reason: str) -> None:
        if self.inner is not None:
            self.inner.evict(task, reason)
        self.made.append(Decision("evict", task, task.node_name or "", reason, self._action()))
        if not self.quiet:
            log.info("decision: evict %s (%s)", task.key, reason)

    def nominate(self, task: TaskInfo, node: str) -> None:
        nominate = getattr(self.inner, "nominate", None)
        if nominate is not None:
            nominate(task, node)
        self.made.append(Decision("nominate", task, node, "", self._action()))
        if not self.quiet:
            log.info("decision: nominate %s for %s", task.key, node)

    def _action(self) -> str:
        return self.session.action if self.session is not None else ""
