"""The daemon's flight recorder: what each session saw and decided, in a bounded ring of files.

The daemon's hooks (``pumice.daemon.loop``), in order, for each cycle:

* ``begin`` — on the event loop, before the session: a clone of the session's snapshot (cheap:
  arrays copied, jobs shared copy-on-write, so neither the session nor the cache's watch events
  can change it), the session's clock (``taken_at``) and config, and a fresh seed for the
  session's random source (``tieBreak: random``), which the session then uses.
* ``tee`` — the session's committer is wrapped so that every bind and eviction is noted, in
  commit order, as well as carried out.
* ``finish`` — back on the event loop: a cycle that decided something is handed to one
  background thread, which pickles, compresses and writes it (``pumice.daemon.recordfile``)
  once no session runs (between ``finish`` and the next ``begin``: pickling holds the GIL, so it
  would slow a session down); the session never waits for the disk. A cycle that decided
  nothing is dropped.

Every ``FULL_EVERY`` recorded cycles (and whenever a delta is no smaller than the last full one)
the snapshot is written whole; each cycle between is a delta against the one recorded before it.
A full recording and the deltas that follow it form a group, and the ring deletes whole groups,
oldest first (a delta is of no use without the chain before it).

The ring keeps at most ``keep_cycles`` files and never more than ``max_bytes`` on disk: before a
file is written, the oldest groups are deleted until it fits (a single cycle larger than
``max_bytes`` is skipped with a warning; a delta whose base had to go is written whole). Files
are written under a temporary name and renamed, so a reader never sees half a file. A new
recorder clears the recordings a previous run left in its directory: a ring holds one run. If
the writer falls behind by ``BACKLOG`` cycles, further cycles are dropped (and counted in
``dropped``) rather than held in memory.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pumice.daemon.recordfile import Base, CycleRecord, encode, file_name, recordings
from pumice.framework.committer import IGNORED_WRITES, PreBindWriter
from pumice.framework.config import RecordSettings, SchedulerConfig
from pumice.model import ClusterSnapshot, TaskInfo

if TYPE_CHECKING:
    from pumice.framework.session import Committer

log = logging.getLogger("pumice.recorder")

BACKLOG = 8
"""Cycles waiting for the writer beyond which further cycles are dropped."""
FULL_EVERY = 50
"""Recorded cycles from one full snapshot to the next (the others are deltas)."""


@dataclass(frozen=True)
class _Kept:
    path: Path
    size: int
    cycle: int
    group: int
    """The cycle of the full recording this one builds on (its own, if full)."""


class TeeCommitter:
    """Notes each decision in the cycle's record, then passes it on to the real committer."""

    def __init__(self, inner: Committer, record: CycleRecord) -> None:
        self.inner = inner
        self.record = record

    def pre_bind(self, task: TaskInfo, node: str) -> PreBindWriter:
        """The real committer's writer: the volume writes must reach it (or be ignored with
        it, when it binds nothing)."""
        opener = getattr(self.inner, "pre_bind", None)
        return opener(task, node) if opener is not None else IGNORED_WRITES

    def bind(self, task: TaskInfo, node: str) -> None:
        self.record.decisions.append(("bind", task.uid, task.key, node))
        self.inner.bind(task, node)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.record.decisions.append(("evict", task.uid, task.key, task.node_name or ""))
        self.inner.evict(task, reason)

    def nominate(self, task: TaskInfo, node: str) -> None:
        nominate = getattr(self.inner, "nominate", None)
        if nominate is not None:
            nominate(task, node)


class Recorder:
    def __init__(self, settings: RecordSettings) -> None:
        self.settings = settings
        self.directory = Path(settings.dir)
        self.directory.mkdir(parents=True, exist_ok=True)
        for _, old in recordings(self.directory):
            old.unlink()
        self._ring: deque[_Kept] = deque()
        self._base: Base | None = None
        """The last cycle written, for the next delta; None: the next is written whole."""
        self._group = 0
        self._full_size = 0
        self._since_full = 0
        self.bytes = 0
        """What the ring holds on disk now."""
        self.written = 0
        self.dropped = 0
        self._waiting = 0
        self._lock = threading.Lock()
        self._idle = threading.Event()
        """Set while no session runs (between ``finish`` and the next ``begin``)."""
        self._idle.set()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pumice-recorder")

    def begin(self, snapshot: ClusterSnapshot, cycle: int, config: SchedulerConfig) -> CycleRecord:
        """Keep what the session about to open on ``snapshot`` will see (event loop)."""
        kept = snapshot.clone()
        kept.taken_at = snapshot.taken_at
        seed = random.getrandbits(63)
        self._idle.clear()
        return CycleRecord(cycle, kept, config, seed, snapshot.taken_at)

    def finish(self, record: CycleRecord, failed: bool = False) -> None:
        """The session is over: write the cycle in the background if it decided something."""
        self._idle.set()
        if failed or not record.decisions:
            return
        with self._lock:
            if self._waiting >= BACKLOG:
                self.dropped += 1
                log.warning("recorder: the writer is behind; cycle %d not recorded", record.cycle)
                return
            self._waiting += 1
        self._writer.submit(self._write, record)

    def flush(self) -> None:
        """Wait until every cycle handed over so far is on disk (or given up)."""
        self._writer.submit(lambda: None).result()

    def close(self) -> None:
        """Write what is queued, then stop the writer."""
        self._idle.set()
        self._writer.shutdown(wait=True)

    def _write(self, record: CycleRecord) -> None:
        # Pickling holds the GIL: it waits while a session runs, rather than slow it down.
        self._idle.wait()
        try:
            self._store(record)
            record.snapshot.dispose()
        except Exception:
            log.exception("recorder: cycle %d could not be recorded", record.cycle)
        finally:
            with self._lock:
                self._waiting -= 1

    def _store(self, record: CycleRecord) -> None:
        base = self._base
        if base is not None and self._since_full >= FULL_EVERY:
            base = None
        data = encode(record, base)
        if base is not None and len(data) >= self._full_size:
            base = None  # so much changed that a fresh base pays
            data = encode(record)
        if len(data) > self.settings.max_bytes:
            self._skip(record.cycle, len(data))
            return
        self._make_room(len(data))
        if base is not None and self._base is None:  # its base had to go: write it whole
            base, data = None, encode(record)
            if len(data) > self.settings.max_bytes:
                self._skip(record.cycle, len(data))
                return
            self._make_room(len(data))
        path = self.directory / file_name(record.cycle)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(data)
        partial.replace(path)
        if base is None:
            self._group, self._full_size, self._since_full = record.cycle, len(data), 0
        else:
            self._since_full += 1
        self._ring.append(_Kept(path, len(data), record.cycle, self._group))
        self.bytes += len(data)
        self.written += 1
        self._base = Base(record.cycle, record.snapshot.jobs, record.snapshot.nodes)

    def _skip(self, cycle: int, size: int) -> None:
        self.dropped += 1
        log.warning(
            "recorder: cycle %d takes %d bytes, more than maxBytes (%d); not recorded",
            cycle,
            size,
            self.settings.max_bytes,
        )

    def _make_room(self, size: int) -> None:
        """Delete the oldest groups until ``size`` more bytes and one more file fit."""
        while self._ring and (
            len(self._ring) >= self.settings.keep_cycles
            or self.bytes + size > self.settings.max_bytes
        ):
            group = self._drop_oldest().group
            while self._ring and self._ring[0].group == group:  # its deltas go with it
                self._drop_oldest()
            if group == self._group:
                self._base = None

    def _drop_oldest(self) -> _Kept:
        gone = self._ring.popleft()
        gone.path.unlink(missing_ok=True)
        self.bytes -= gone.size
        return gone


def tee(committer: Committer, record: CycleRecord | None) -> Committer:
    """The committer a session gets: ``committer`` itself, or a tee into ``record``."""
    return committer if record is None else TeeCommitter(committer, record)
