"""A pod's volumes, bound before the pod: the daemon's side of the plugins' ``pre_bind``.

For each committed pod whose plugins asked for volume writes (``expect``, from the
committer, before the pod's bind is handed over):

1. the writes are assumed in the cache's storage stores at once (the next session sees the
   volume taken and the claim's node chosen) and made in the background: a volume's
   ``claimRef`` for a claim matched to it, the claim's ``volume.kubernetes.io/selected-node``
   for one to be provisioned (``pumice.kube.binder``); what is already so is not written
   again (a restarted daemon asks again for what its predecessor wrote, and nothing is
   provisioned twice);
2. the pod waits, following every claim and volume change the informers deliver, until each
   of its claims is bound (volume name and ``pv.kubernetes.io/bind-completed``); the pod's
   bind is then handed to the binder;
3. every wait is looked at again each second (as kube-scheduler's PreBind polls): one whose
   pod was deleted meanwhile ends there (the pod is forgotten, its gang's held pods bound);
4. it fails at once when what was written is undone — a claim's selected node removed (the
   provisioner gave up: ``provisioning failed for PVC "NAME"``), a volume's claimRef reset
   (``ClaimRef got reset for pv "PV"``) — when a write is refused, or after ``timeout``
   seconds (``context deadline exceeded``). The pod is then forgotten and offered again after
   a backoff, with a ``FailedScheduling`` event ``running PreBind plugin "VolumeBinding":
   binding volumes: …``; the assumed writes are forgotten, what was written stays (a
   provisioner may be working on it), as kube-scheduler leaves it.

A gang binds only once every pod of it that was placed has its volumes bound: while one of a
job's pods waits for its volumes, the job's other pods (with volumes or not) are held, and
bound together when the last wait ends; one failure gives every held pod of the job up, and
every pod of the job whose bind is handed over later in the same cycle too (a session's commits
reach the loop one by one, and a write can fail between two of them); ``new_cycle`` forgets
the failed jobs before the next session.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Protocol

from pumice.cache import ClusterCache, PodState
from pumice.kube import Kube, KubeError
from pumice.kube.binder import claim_reference, claim_volume, select_node
from pumice.model.volumes import (
    BOUND_BY_CONTROLLER,
    SELECTED_NODE,
    annotations_of,
    claim_ref_key,
    is_bound,
    meta,
    refers_to,
    selected_node,
)
from pumice.plain import Obj

log = logging.getLogger("pumice.daemon")


DEFAULT_TIMEOUT = 600.0
"""Seconds a pod waits for its volumes (kube-scheduler's ``bindTimeoutSeconds``)."""
TIMED_OUT = "context deadline exceeded"
POLL = 1.0
"""Seconds between two looks at every wait (kube-scheduler's PreBind polls every second)."""
PREBIND = 'running PreBind plugin "VolumeBinding": '

PodRef = tuple[str, str, str]
"""(namespace, name, node)"""


class BindCall(Protocol):
    """Bind the pod now (keywords only, as ``pumice.daemon.committers``'s sinks)."""

    def __call__(self, *, uid: str, namespace: str, name: str, node: str) -> None: ...


class GiveUp(Protocol):
    """Forget the pod, back off, say why."""

    def __call__(self, *, uid: str, namespace: str, name: str, node: str, message: str) -> None: ...


@dataclass(slots=True)
class AwaitedWrite:
    """One write a plugin asked for: ``volume`` pre-bound to ``claim``, or (None) the claim
    to be provisioned on ``node``; ``seen``: the informers have shown it in place."""

    claim: str
    volume: str | None
    node: str
    seen: bool = False


@dataclass(slots=True)
class _Wait:
    uid: str
    job: str
    pod: PodRef
    writes: list[AwaitedWrite]
    task: asyncio.Task[None] | None = None
    timer: asyncio.TimerHandle | None = None
    written: bool = False


@dataclass(slots=True)
class _Gang:
    waiting: set[str] = field(default_factory=set)
    """Pods of the job whose volumes are being bound."""
    held: dict[str, PodRef] = field(default_factory=dict)
    """Pods of the job ready to bind, held until nobody of the job waits."""


def _provisioned_settled(claim: Obj) -> bool:
    """The informer's claim shows a selected node (ours, or one that replaced it)."""
    return bool(selected_node(claim)) or is_bound(claim)


def _claimed_settled(volume: Obj) -> bool:
    """The informer's volume names a claim (ours, or another that won it)."""
    return claim_ref_key(volume) is not None


class VolumeBinder:
    """The waits of pods for their volumes, and the gang barrier (see the module docstring)."""

    def __init__(
        self,
        cache: ClusterCache,
        kube: Kube,
        bind: BindCall,
        give_up: GiveUp,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.cache = cache
        self.kube = kube
        self._bind = bind
        self._give_up = give_up
        self.timeout = timeout
        self._expected: dict[str, tuple[str, list[AwaitedWrite]]] = {}
        """Pod uid -> (job, writes) asked before its bind arrives."""
        self._waits: dict[str, _Wait] = {}
        self._gangs: dict[str, _Gang] = {}
        self._watching: dict[tuple[str, str], set[str]] = {}
        """(store, key) -> uids of the waits that follow that claim or volume."""
        self._poller: asyncio.TimerHandle | None = None
        self._failed: dict[str, str] = {}
        """Job -> why, for the jobs whose volumes failed in this cycle: their pods handed over
        afterwards are given up, never bound without the rest of their gang."""
        self.outcomes: dict[str, int] = {}
        cache.storage.on_change = self._changed

    @property
    def waiting(self) -> int:
        """Pods waiting for their volumes, or held for their gang's."""
        return len(self._waits) + sum(len(g.held) for g in self._gangs.values())

    def _count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    # -- from the committer -----------------------------------------------------------------

    def expect(self, *, uid: str, job: str, claim: str, volume: str | None, node: str) -> None:
        """A write asked for the pod ``uid`` of ``job``, before its bind is handed over."""
        entry = self._expected.setdefault(uid, (job, []))
        entry[1].append(AwaitedWrite(claim, volume, node))
        if job not in self._failed:
            self._gangs.setdefault(job, _Gang()).waiting.add(uid)

    def new_cycle(self) -> None:
        """A session is about to start: every bind of the last one has been handed over."""
        self._failed.clear()

    def holds(self, *, uid: str, namespace: str, name: str, node: str) -> bool:
        """The pod (assumed on ``node``) is bound later: when its volumes are (it had writes)
        or its gang's are. False: bind it now."""
        expected = self._expected.pop(uid, None)
        task = self.cache.state.task(uid)
        job = expected[0] if expected is not None else (task.job if task is not None else "")
        failed = self._failed.get(job)
        if failed is not None:  # its gang failed while its bind was on the way
            log.warning("%s/%s: %s", namespace, name, failed)
            self._give_up(uid=uid, namespace=namespace, name=name, node=node, message=failed)
            return True
        gang = self._gangs.get(job)
        if expected is not None:
            wait = _Wait(uid, job, (namespace, name, node), expected[1])
            self._start(wait)
            return True
        if gang is not None and gang.waiting:
            gang.held[uid] = (namespace, name, node)
            log.info("%s/%s waits for the volumes of its gang", namespace, name)
            return True
        return False

    def dropped(self, uid: str) -> None:
        """The pod's bind was not handed over after all (it stopped waiting for a node)."""
        expected = self._expected.pop(uid, None)
        if expected is not None:
            self._ended(expected[0], uid)

    # -- one pod's wait ---------------------------------------------------------------------

    def _start(self, wait: _Wait) -> None:
        storage = self.cache.storage
        for write in wait.writes:
            claim = storage.current("claims", write.claim)
            if claim is None:
                continue
            if write.volume is None:
                notes = {**annotations_of(claim), SELECTED_NODE: write.node}
                assumed = {**claim, "metadata": {**meta(claim), "annotations": notes}}
                storage.assume("claims", write.claim, assumed, _provisioned_settled)
            else:
                volume = storage.current("volumes", write.volume)
                if volume is not None:
                    notes = {**annotations_of(volume), BOUND_BY_CONTROLLER: "yes"}
                    spec = {**(volume.get("spec") or {}), "claimRef": claim_reference(claim)}
                    assumed = {**volume, "metadata": {**meta(volume), "annotations": notes}}
                    assumed["spec"] = spec
                    storage.assume("volumes", write.volume, assumed, _claimed_settled)
                self._watch("volumes", write.volume, wait.uid)
            self._watch("claims", write.claim, wait.uid)
        self._waits[wait.uid] = wait
        loop = asyncio.get_running_loop()
        wait.timer = loop.call_later(self.timeout, self._fail, wait.uid, TIMED_OUT)
        wait.task = loop.create_task(self._write(wait))
        self._arm()
        namespace, name, node = wait.pod
        claims = ", ".join(w.claim for w in wait.writes)
        log.info("%s/%s waits on %s for its volumes to be bound: %s", namespace, name, node, claims)

    def _arm(self) -> None:
        """Look at every wait again in ``POLL`` seconds (as kube-scheduler's PreBind polls):
        a wait whose pod was deleted meanwhile ends there, not at its timeout."""
        if self._poller is None and self._waits:
            self._poller = asyncio.get_running_loop().call_later(POLL, self._poll)

    def _poll(self) -> None:
        self._poller = None
        for uid in list(self._waits):
            wait = self._waits.get(uid)
            if wait is not None:
                self._check(wait)
        self._arm()

    def _watch(self, store: str, key: str, uid: str) -> None:
        self._watching.setdefault((store, key), set()).add(uid)

    async def _write(self, wait: _Wait) -> None:
        """Make the writes that are not already in place, then check the wait."""
        stores = self.cache.storage.stores
        try:
            for write in wait.writes:
                claim = stores["claims"].get(write.claim)
                if claim is None:
                    raise _Failed(
                        f'persistentvolumeclaim "{write.claim.split("/", 1)[1]}" not found'
                    )
                if write.volume is None:
                    if selected_node(claim) != write.node and not is_bound(claim):
                        await select_node(self.kube, claim, write.node)
                    continue
                volume = stores["volumes"].get(write.volume)
                if volume is None:
                    raise _Failed(f'persistentvolume "{write.volume}" not found')
                if not refers_to(volume, claim) and not is_bound(claim):
                    await claim_volume(self.kube, volume=volume, claim=claim)
        except _Failed as exc:
            self._fail(wait.uid, str(exc))
            return
        except KubeError as exc:
            self._fail(wait.uid, str(exc), prefix=False)
            return
        wait.written = True
        self._check(wait)

    def _changed(self, store: str, key: str, obj: Obj | None) -> None:
        """An informer delivered a claim or volume: check the waits that follow it."""
        uids = self._watching.get((store, key))
        if not uids:
            return
        for uid in list(uids):
            wait = self._waits.get(uid)
            if wait is not None:
                self._check(wait)

    def _check(self, wait: _Wait) -> None:
        stores = self.cache.storage.stores
        entry = self.cache.pods.get(wait.uid)
        if entry is None or entry.state is not PodState.ASSUMED or not entry.on_pending_watch:
            # the pod was deleted, or bound by someone else: nothing to bind. Left the pending
            # watch while assumed (we did not bind it), it is forgotten in the cache, or it
            # would stay counted on its node; the watch shows it again if it was bound.
            self._end(wait)
            self._forget(wait)
            if entry is not None and entry.state is PodState.ASSUMED:
                self.cache.forget(wait.uid)
            namespace, name, _ = wait.pod
            log.info("%s/%s no longer waits for its volumes: it is gone or bound", namespace, name)
            self._ended(wait.job, wait.uid)
            return
        done = True
        for write in wait.writes:
            claim = stores["claims"].get(write.claim)
            name = write.claim.split("/", 1)[1]
            if claim is None:
                self._fail(wait.uid, f'persistentvolumeclaim "{name}" not found')
                return
            if write.volume is None:
                if selected_node(claim) == write.node:
                    write.seen = True
                elif write.seen and not is_bound(claim):
                    self._fail(wait.uid, f'provisioning failed for PVC "{name}"')
                    return
            else:
                volume = stores["volumes"].get(write.volume)
                if volume is not None and refers_to(volume, claim):
                    write.seen = True
                elif write.seen:
                    self._fail(wait.uid, f'ClaimRef got reset for pv "{write.volume}"')
                    return
            done = done and is_bound(claim)
        if done and wait.written:
            self._succeed(wait)

    # -- endings ----------------------------------------------------------------------------

    def _end(self, wait: _Wait) -> None:
        self._waits.pop(wait.uid, None)
        if wait.timer is not None:
            wait.timer.cancel()
        if wait.task is not None and not wait.task.done():
            wait.task.cancel()
        for write in wait.writes:
            for store, key in (("claims", write.claim), ("volumes", write.volume or "")):
                uids = self._watching.get((store, key))
                if uids is not None:
                    uids.discard(wait.uid)
                    if not uids:
                        del self._watching[(store, key)]

    def _succeed(self, wait: _Wait) -> None:
        self._end(wait)
        self._count("bound")
        namespace, name, node = wait.pod
        log.info("the volumes of %s/%s are bound", namespace, name)
        gang = self._gangs.get(wait.job)
        if gang is None:
            self._bind(uid=wait.uid, namespace=namespace, name=name, node=node)
            return
        gang.waiting.discard(wait.uid)
        gang.held[wait.uid] = wait.pod
        self._release(wait.job)

    def _ended(self, job: str, uid: str) -> None:
        gang = self._gangs.get(job)
        if gang is not None:
            gang.waiting.discard(uid)
            gang.held.pop(uid, None)
            self._release(job)

    def _release(self, job: str) -> None:
        gang = self._gangs.get(job)
        if gang is None or gang.waiting:
            return
        del self._gangs[job]
        for uid, (namespace, name, node) in gang.held.items():
            self._bind(uid=uid, namespace=namespace, name=name, node=node)

    def _fail(self, uid: str, why: str, *, prefix: bool = True) -> None:
        """The pod's volumes cannot be bound: give up the pod and every held pod of its gang."""
        wait = self._waits.get(uid)
        if wait is None:
            return
        self._end(wait)
        self._count("failed")
        self._forget(wait)
        message = PREBIND + (f"binding volumes: {why}" if prefix else why)
        namespace, name, node = wait.pod
        log.warning("%s/%s: %s", namespace, name, message)
        self._give_up(uid=uid, namespace=namespace, name=name, node=node, message=message)
        others = f"not bound: the volumes of {namespace}/{name}, of the same gang, failed: {why}"
        self._failed[wait.job] = others
        gang = self._gangs.pop(wait.job, None)
        if gang is None:
            return
        for other, (o_ns, o_name, o_node) in gang.held.items():
            self._give_up(uid=other, namespace=o_ns, name=o_name, node=o_node, message=others)
        for other in gang.waiting - {uid}:
            waiting = self._waits.get(other)
            if waiting is not None:
                self._end(waiting)
                self._forget(waiting)  # its writes may never have been made
                w_ns, w_name, w_node = waiting.pod
                self._give_up(uid=other, namespace=w_ns, name=w_name, node=w_node, message=others)

    def _forget(self, wait: _Wait) -> None:
        """Drop the wait's assumed writes (what was written stays, as the informers show)."""
        for write in wait.writes:
            self.cache.storage.forget("claims", write.claim)
            if write.volume is not None:
                self.cache.storage.forget("volumes", write.volume)

    def cancel(self) -> None:
        """Stop every wait (the daemon is ending); what was written stays."""
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None
        for wait in list(self._waits.values()):
            self._end(wait)


class _Failed(Exception):
    """A write cannot be made; the message says why."""
