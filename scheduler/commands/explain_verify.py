"""Verifying a suggestion: one session on a changed copy of the settled snapshot.

The explaining run leaves its ``SimulatedCluster`` *settled*: every other job placed as far as
it goes, statuses written, only what still waits left pending. A change (``explain_changes``)
is made on copies of the objects it touches and delivered to that cache through the informer
handlers — as the watch would deliver the edit — then a snapshot is taken, one session runs
with a recorder as committer, and the change is taken back through the same handlers. A
session never mutates the cache, so the next candidate starts from the same settled state.
The change admits the job when the session binds every one of the target's pending pods.

This costs one session per candidate instead of feeding the whole cluster again, which is
what keeps ``pumice explain`` within seconds on thousands of nodes.
"""

from __future__ import annotations

from typing import Any

from pumice.commands.explain_changes import apply_change
from pumice.commands.explain_core import Target, _key, copy_objects, target_pods
from pumice.commands.simulate import CycleRecorder
from pumice.commands.simulate_cluster import SimulatedCluster
from pumice.framework.action import run_actions
from pumice.framework.config import SchedulerConfig
from pumice.framework.host import PluginHost
from pumice.framework.session import Session

Obj = dict[str, Any]
Edit = tuple[Obj | None, Obj | None]


class Verifier:
    """Runs candidates against the settled cache of the explaining run."""

    def __init__(
        self,
        state: SimulatedCluster,
        nodes: list[Obj],
        target: Target,
        pending: list[str],
        config: SchedulerConfig,
        host: PluginHost,
    ) -> None:
        self.state = state
        self.nodes = nodes
        self.target = target
        self.pending = set(pending)
        self.config = config
        self.host = host
        self.runs = 0

    def _touched(self, change: Obj) -> list[Obj]:
        """The objects ``change`` may edit, as the settled cluster has them."""
        state = self.state
        pods = list(state.pods.values())
        out: list[Obj] = [p for p in target_pods(pods, self.target) if _key(p) in self.pending]
        kind = change["kind"]
        if kind in ("node-label", "add-node"):
            out += self.nodes
        elif kind == "queue-capability":
            out += [q for q in state.queues.values() if q["metadata"]["name"] == change["queue"]]
        elif kind == "evict":
            gone = set(change["pods"])
            out += [p for p in pods if _key(p) in gone]
        return out

    def admits(self, change: Obj) -> bool:
        """Does one session on the settled snapshot, with ``change`` made, place the job?"""
        self.runs += 1
        before = copy_objects(self._touched(change))
        after = apply_change(before, change, self.target)
        edits = _diff(self._touched(change), after)
        self._deliver(edits)
        try:
            recorder = CycleRecorder(0)
            session = Session.open(
                self.state.snapshot(), self.config, self.host, committer=recorder
            )
            recorder.session = session
            try:
                try:
                    run_actions(session)
                finally:
                    session.close()
            finally:
                session.dispose()
        finally:
            self._deliver([(new, old) for old, new in reversed(edits)])
        bound = {task.key for task, _, _ in recorder.binds}
        return self.pending <= bound

    def _deliver(self, edits: list[Edit]) -> None:
        """Each (old, new) as the watch would: ADDED, MODIFIED or DELETED."""
        cache = self.state.cache
        for old, new in edits:
            obj = new if new is not None else old
            assert obj is not None
            kind = obj.get("kind")
            if kind == "Node":
                handler: Any = cache.nodes
            elif kind == "Queue":
                handler = cache.queues
            elif (obj.get("spec") or {}).get("nodeName"):
                handler = cache.assigned_pods
            else:
                handler = cache.pending_pods
            if old is None:
                handler.on_add(new)
            elif new is None:
                handler.on_delete(old)
            else:
                handler.on_update(old, new)


def _diff(before: list[Obj], after: list[Obj]) -> list[Edit]:
    """(old, new) per object that ``after`` adds, removes or changes (by kind and key)."""

    def ident(obj: Obj) -> tuple[str, str]:
        return str(obj.get("kind")), _key(obj)

    old = {ident(o): o for o in before}
    new = {ident(o): o for o in after}
    edits: list[Edit] = []
    for key, obj in old.items():
        if key not in new:
            edits.append((obj, None))
        elif new[key] != obj:
            edits.append((obj, new[key]))
    edits += [(None, obj) for key, obj in new.items() if key not in old]
    return edits
