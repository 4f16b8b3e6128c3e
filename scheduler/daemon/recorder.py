"""The daemon's flight recorder: what each session saw and decided, in a bounded ring of files.

The daemon's hooks (``pumice.daemon.loop``), in order, for each cycle:

* ``begin`` — on the event loop, before the session: a clone of the session's snapshot (cheap:
  arrays copied, jobs shared copy-on-write, so neither the session nor the cache's watch events
  can change it), the session's clock (``taken_at``) and config, and a fresh seed for the
  session's random source (``tieBreak: random``), which the session then uses.
* ``tee`` — the session's committer is wrapped so that every bind and eviction is noted, in
  commit order, as well as carried out.
* ``finish`` — back on the event loop: a cycle that decided something is handed to one
  background thread, which pickles, compresses and writes it (``pumice.daemon.recordfile``);
  the session never waits for the disk. A cycle that decided nothing is dropped.

The ring keeps at most ``keep_cycles`` files and never more than ``max_bytes`` on disk: before a
file is written, the oldest are deleted until it fits (a single cycle larger than ``max_bytes``
is skipped with a warning). Files are written under a temporary name and renamed, so a reader
never sees half a file. A new recorder clears the recordings a previous run left in its
directory: a ring holds one run. If the writer falls behind by ``BACKLOG`` cycles, further
cycles are dropped (and counted in ``dropped``) rather than held in memory.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from pumice.daemon.recordfile import CycleRecord, encode, file_name, recordings
from pumice.framework.config import RecordSettings, SchedulerConfig
from pumice.model import ClusterSnapshot, TaskInfo

if TYPE_CHECKING:
    from pumice.framework.session import Committer

log = logging.getLogger("pumice.recorder")

BACKLOG = 8
"""Cycles waiting for the writer beyond which further cycles are dropped."""


class TeeCommitter:
    """Notes each decision in the cycle's record, then passes it on to the real committer."""

    def __init__(self, inner: Committer, record: CycleRecord) -> None:
        self.inner = inner
        self.record = record

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
        self._ring: deque[tuple[Path, int]] = deque()
        self.bytes = 0
        """What the ring holds on disk now."""
        self.written = 0
        self.dropped = 0
        self._waiting = 0
        self._lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pumice-recorder")

    def begin(self, snapshot: ClusterSnapshot, cycle: int, config: SchedulerConfig) -> CycleRecord:
        """Keep what the session about to open on ``snapshot`` will see (event loop)."""
        kept = snapshot.clone()
        kept.taken_at = snapshot.taken_at
        seed = random.getrandbits(63)
        return CycleRecord(cycle, kept, config, seed, snapshot.taken_at)

    def finish(self, record: CycleRecord, failed: bool = False) -> None:
        """The session is over: write the cycle in the background if it decided something."""
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
        self._writer.shutdown(wait=True)

    def _write(self, record: CycleRecord) -> None:
        try:
            data = encode(record)
            record.snapshot.dispose()
            self._store(record.cycle, data)
        except Exception:
            log.exception("recorder: cycle %d could not be recorded", record.cycle)
        finally:
            with self._lock:
                self._waiting -= 1

    def _store(self, cycle: int, data: bytes) -> None:
        size = len(data)
        if size > self.settings.max_bytes:
            self.dropped += 1
            log.warning(
                "recorder: cycle %d takes %d bytes, more than maxBytes (%d); not recorded",
                cycle,
                size,
                self.settings.max_bytes,
            )
            return
        while self._ring and (
            len(self._ring) >= self.settings.keep_cycles
            or self.bytes + size > self.settings.max_bytes
        ):
            path, old = self._ring.popleft()
            path.unlink(missing_ok=True)
            self.bytes -= old
        path = self.directory / file_name(cycle)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(data)
        partial.replace(path)
        self._ring.append((path, size))
        self.bytes += size
        self.written += 1


def tee(committer: Committer, record: CycleRecord | None) -> Committer:
    """The committer a session gets: ``committer`` itself, or a tee into ``record``."""
    return committer if record is None else TeeCommitter(committer, record)
