"""The shadow's books: what it would have done with each pod, set against what was done.

A shadow run (``pumice run --shadow``) decides beside a live scheduler and writes nothing, so
its decisions never reach its cache: they are held here, per pod uid, as *records*, and each is
resolved once into exactly one outcome, or into none:

``same`` / ``different``
    The shadow chose a node and the live scheduler's bind arrived (through the assigned-pods
    watch): the same node, or another one.
``only_shadow``
    The shadow chose a node in its cycle N and, at the end of its next cycle (N + 1), the pod
    was still pending: the live scheduler had not bound it.
``only_live``
    The shadow's last session left the pod pending and the live scheduler bound it.
nothing
    A pod first seen already bound (the live scheduler was quicker than any shadow session: the
    shadow never decided it) and a pod deleted before either bound it.

A pod that left the pending watch is waited for, however long that takes: it left because it
was bound (then the assigned-pods watch brings its node, and it is ``same`` or ``different``:
the bind happened, in time) or because it was deleted (then it counts nothing, once the cache
lets it go).

The shadow's latest opinion counts: a pod re-decided by a later session (the live scheduler has
not bound it yet) keeps its newest node, and a pod it placed and then left pending (or the
other way round) counts as what it last decided. The deadline counts from the cycle in which the
shadow chose a node for the pod. A pod is resolved once: once it has an outcome, later sessions'
opinions about it are ignored.

Nothing here does I/O or reads the clock: the daemon (``pumice.daemon.shadow``) feeds it
decisions, the binds the watch delivered and its cycle numbers, and asks where the cluster has
a pod.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("pumice.shadow")

OUTCOMES = ("same", "different", "only_shadow", "only_live")


class Live(enum.Enum):
    """Where the cluster (the shadow's cache) has a pod now."""

    PENDING = "pending"
    BOUND = "bound"
    LEFT = "left"
    """Left the pending watch; the bind (or deletion) is not confirmed yet."""
    GONE = "gone"


Where = Callable[[str], tuple[Live, str | None]]
"""uid -> (where the pod is, its node when bound)."""


@dataclass(slots=True)
class Record:
    """The shadow's open opinion of one pod."""

    key: str
    """``namespace/name``."""
    node: str | None
    """The node the shadow would bind it to; None: the shadow leaves it pending."""
    chosen_in: int
    """The shadow's cycle that chose that node (for a pending one: that first saw it)."""


@dataclass
class Tally:
    """Outcomes resolved since the last report line."""

    same: int = 0
    different: list[dict[str, str]] = field(default_factory=list)
    only_shadow: int = 0
    only_live: int = 0

    def __bool__(self) -> bool:
        return bool(self.same or self.different or self.only_shadow or self.only_live)


class ShadowBook:
    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.settled: set[str] = set()
        """Uids already resolved (into an outcome or into nothing): later opinions are ignored."""
        self.totals: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self._tally = Tally()

    # -- what the books say ------------------------------------------------------------------

    @property
    def open(self) -> int:
        """Predictions (a node chosen) still waiting for the live scheduler."""
        return sum(1 for r in self.records.values() if r.node is not None)

    @property
    def unreported(self) -> bool:
        """Outcomes resolved since the last report line."""
        return bool(self._tally)

    def undecided(self, pending: Iterable[str]) -> int:
        """How many of these pending uids no shadow session has decided yet."""
        return sum(1 for uid in pending if uid not in self.records and uid not in self.settled)

    def agreement(self) -> float | None:
        """same / (same + different); None before the first comparison."""
        compared = self.totals["same"] + self.totals["different"]
        return self.totals["same"] / compared if compared else None

    # -- what happened -----------------------------------------------------------------------

    def decide(
        self, *, seen: Mapping[str, str], placed: Mapping[str, str], cycle: int, where: Where
    ) -> int:
        """The session of the shadow's cycle ``cycle`` saw the pending pods ``seen`` (uid ->
        key) and would bind ``placed`` (uid -> node); the others it leaves pending. Pods the live
        scheduler bound while the session ran are resolved at once. Returns how many pods it
        decided for the first time."""
        new = 0
        for uid, key in seen.items():
            if uid in self.settled:
                continue
            node = placed.get(uid)
            record = self.records.get(uid)
            if node is not None and (record is None or record.node != node):
                log.info("shadow: would bind %s to %s", key, node)
            if record is None:
                self.records[uid] = Record(key, node, cycle)
                new += 1
            else:
                if record.node is None and node is not None:
                    record.chosen_in = cycle
                record.node = node
        for uid in seen:
            if uid in self.records:
                state, node = where(uid)
                if state is Live.BOUND and node is not None:
                    self.bound(uid, node=node)
        return new

    def bound(self, uid: str, *, node: str) -> None:
        """The live scheduler's bind of ``uid`` to ``node`` arrived (through the watch)."""
        record = self.records.pop(uid, None)
        if record is None:
            return  # never decided by the shadow (or already resolved): it counts nothing
        self.settled.add(uid)
        if record.node is None:
            self._count("only_live")
            self._tally.only_live += 1
            log.info("shadow: %s bound to %s; the shadow left it pending", record.key, node)
        elif record.node == node:
            self._count("same")
            self._tally.same += 1
            log.debug("shadow: %s bound to %s, as the shadow would", record.key, node)
        else:
            self._count("different")
            self._tally.different.append({"pod": record.key, "shadow": record.node, "live": node})
            log.info("shadow: %s bound to %s; the shadow chose %s", record.key, node, record.node)

    def expire(self, cycle: int, where: Where) -> None:
        """At the end of the shadow's cycle ``cycle``: predictions made in an earlier cycle
        whose pod is still pending are ``only_shadow``; records and settled uids of pods that
        are gone are dropped."""
        for uid, record in list(self.records.items()):
            state, node = where(uid)
            if state is Live.BOUND and node is not None:
                self.bound(uid, node=node)  # a bind whose watch event was not seen on its own
            elif state is Live.GONE:
                del self.records[uid]
            elif state is Live.PENDING and record.node is not None and cycle > record.chosen_in:
                del self.records[uid]
                self.settled.add(uid)
                self._count("only_shadow")
                self._tally.only_shadow += 1
                log.info(
                    "shadow: %s not bound by the end of cycle %d; the shadow chose %s in cycle %d",
                    record.key,
                    cycle,
                    record.node,
                    record.chosen_in,
                )
            # else: pending, not yet due; or left the pending watch (bound or deleted): wait
        self.settled = {uid for uid in self.settled if where(uid)[0] is not Live.GONE}

    def _count(self, outcome: str) -> None:
        self.totals[outcome] += 1

    # -- the report --------------------------------------------------------------------------

    def line(self, cycle: int, *, pods: int) -> dict[str, Any]:
        """The report line of ``cycle`` (whose session decided ``pods`` pending pods for the
        first time): the outcomes resolved since the last line, which it then starts afresh."""
        tally, self._tally = self._tally, Tally()
        return {
            "cycle": cycle,
            "pods": pods,
            "same": tally.same,
            "different": tally.different,
            "only_shadow": tally.only_shadow,
            "only_live": tally.only_live,
        }
