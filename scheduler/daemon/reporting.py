"""After each cycle: tell the cluster (or, in dry-run, the log) why pods wait.

For each of our pods left pending with a reason: a ``FailedScheduling`` event and the
``PodScheduled=False`` condition (reason ``Unschedulable``) with the session's
``0/N nodes are available: …`` message. For each bad object (an invalid pod, a pod naming a
missing PodGroup, a PodGroup naming an unknown queue or with unparseable ``minResources``): the
same pair, saying what is wrong, plus a Warning event on an invalid PodGroup. PodGroup and Queue
status when it changed (with the conditions and fields plugins contribute, e.g. a Queue's
``status.reservation``), and the Warning events plugins ask for on a Queue. A message is
written once per pod until it changes, and logged at info (``pending: NS/POD: <why>``) when it
first appears and whenever it changes, never every cycle. In dry-run nothing is written: the
log line is all.
"""

from __future__ import annotations

import logging
from typing import Any

from pumice.cache import ClusterCache, PodState
from pumice.daemon.advice import Advisor
from pumice.daemon.binding import BackgroundWork
from pumice.daemon.outcome import CycleOutcome, same_podgroup_status, same_queue_status

log = logging.getLogger("pumice.daemon")


class Reporter:
    def __init__(
        self,
        cache: ClusterCache,
        work: BackgroundWork | None,
        dry_run: bool,
        advisor: Advisor | None = None,
    ) -> None:
        self.cache = cache
        self.work = work
        self.dry_run = dry_run
        self.advisor = advisor
        """Adds suggestions to PodGroup conditions and starts the next search (outside the
        cycle: ``pumice.daemon.advice``)."""
        self._said: dict[str, str] = {}
        self._podgroup_said: dict[str, str] = {}
        self._podgroups: dict[str, dict[str, Any]] = {}
        """The last cycle's PodGroup statuses (suggestions found later are written on them)."""

    def report(self, outcome: CycleOutcome) -> None:
        if self.advisor is not None:
            self.advisor.decorate(outcome)
            self._podgroups = outcome.podgroups
        self._pending(outcome)
        self.report_problems()
        if not self.dry_run:
            self._statuses(outcome)
        self._forget_gone()
        if self.advisor is not None:
            self.advisor.maybe_start(self.cache, outcome)

    def _tell_pod(self, uid: str, message: str) -> None:
        entry = self.cache.pods.get(uid)
        if entry is None or not entry.ours or self._said.get(uid) == message:
            return
        self._said[uid] = message
        log.info("pending: %s: %s", entry.key, message)
        if self.dry_run or self.work is None:
            return
        writer = self.work.writer
        self.work.write(writer.pod_unschedulable(entry.pod, message))
        self.work.write(writer.pod_event(entry.pod, "FailedScheduling", message, "Warning"))

    def _pending(self, outcome: CycleOutcome) -> None:
        for uid, message in outcome.task_reasons.items():
            entry = self.cache.pods.get(uid)
            if entry is not None and entry.state is PodState.INITIAL:
                self._tell_pod(uid, message)

    def waiting_outside_sessions(self) -> int:
        """Our pods that wait but never reach a session: bad objects and gated pods."""
        return sum(
            1
            for e in self.cache.pods.values()
            if e.ours and e.state in (PodState.BLOCKED, PodState.GATED)
        )

    def report_problems(self) -> None:
        """Bad objects (they never reach a session): each reason once. Suggestions a search
        found after the last cycle (``Advisor.late``)."""
        if self.advisor is not None and not self.dry_run and self.work is not None:
            writer = self.work.writer
            for key, status in self.advisor.late(self._podgroups).items():
                group = self.cache.podgroups.get(key)
                if group is None or same_podgroup_status(group.obj.get("status"), status):
                    continue
                namespace, name = key.split("/", 1)
                self.work.write(writer.podgroup_status(namespace, name, status))
        for entry in self.cache.entries(PodState.BLOCKED):
            self._tell_pod(entry.uid, entry.reason)
        for key, group in self.cache.podgroups.items():
            if group.job is not None or self._podgroup_said.get(key) == group.reason:
                continue
            self._podgroup_said[key] = group.reason
            if self.dry_run or self.work is None:
                log.info("podgroup %s: %s", key, group.reason)
            else:
                writer = self.work.writer
                self.work.write(writer.object_event(group.obj, "Unschedulable", group.reason))

    def _statuses(self, outcome: CycleOutcome) -> None:
        assert self.work is not None
        writer = self.work.writer
        for key, status in outcome.podgroups.items():
            group = self.cache.podgroups.get(key)
            if group is None or same_podgroup_status(group.obj.get("status"), status):
                continue
            namespace, name = key.split("/", 1)
            self.work.write(writer.podgroup_status(namespace, name, status))
        for name, status in outcome.queues.items():
            queue = self.cache.queue_objects.get(name)
            if queue is None or same_queue_status(queue.get("status"), status):
                continue
            self.work.write(writer.queue_status(name, status))
        for name, events in outcome.queue_events.items():
            queue = self.cache.queue_objects.get(name)
            if queue is None:
                continue
            for reason, message in events:
                self.work.write(writer.object_event(queue, reason, message))

    def _forget_gone(self) -> None:
        """Drop what was said about pods that are no longer waiting, so memory stays bounded."""
        if len(self._said) > 2 * max(64, len(self.cache.pods)) or len(self._said) > 4096:
            self._said = {
                uid: msg
                for uid, msg in self._said.items()
                if (e := self.cache.pods.get(uid)) is not None
                and e.state in (PodState.INITIAL, PodState.BLOCKED)
            }
        stale = [k for k in self._podgroup_said if k not in self.cache.podgroups]
        for key in stale:
            del self._podgroup_said[key]
