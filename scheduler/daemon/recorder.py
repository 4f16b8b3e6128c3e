"""The daemon's flight recorder: what each session saw and decided, kept for ``pumice replay``.

The daemon records its cache's inputs, not its snapshots: the cache is made by ``Recorder.cache``,
which journals every informer event and every call the daemon makes on it
(``pumice.daemon.journal``) — one ``orjson.dumps`` of an object the informer already holds per
change, so the cost grows with what changes, not with the size of the cluster. The daemon's
hooks, for each cycle (``pumice.daemon.loop``):

* ``begin`` — on the event loop, right after ``cache.snapshot()``: a fresh seed for the
  session's random source (``tieBreak: random``), which the session then uses, and the cycle's
  mark in the journal (its number, the seed, the snapshot's clock ``taken_at`` and its
  ``fingerprint``); the config, when it is not the one sent last;
* ``tee`` — the session's committer is wrapped in the one decision recorder
  (``pumice.framework.committer.RecordingCommitter``), which notes every bind and eviction, in
  commit order, as the daemon's committer carries it out;
* ``finish`` — back on the event loop: the decisions (also of a session that raised after it
  committed some: its binds went out).

All of it goes, in order, to the recorder's own process (``pumice.daemon.recordwriter``), through
a pipe that a thread of ours feeds: that process writes the cycles that decided something into
the ring (the journal, compressed, and now and then its own copy of the cache, rebuilt from the
journal through the same handlers). The daemon never
pickles, compresses or writes a recording itself. If that process falls too far behind or ends,
recording stops with an error in the log; scheduling goes on.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import orjson

from pumice.cache import ClusterCache
from pumice.daemon.journal import Journal, fingerprint
from pumice.daemon.recordfile import FRAME, encode_config
from pumice.framework.committer import RecordingCommitter
from pumice.framework.config import RecordSettings, SchedulerConfig
from pumice.model import ClusterSnapshot

if TYPE_CHECKING:
    from pumice.framework.committer import Committer

log = logging.getLogger("pumice.recorder")

BACKLOG_BYTES = 256 << 20
"""Bytes waiting to go into the pipe beyond which recording stops (the recorder's process reads
as they come: only a process that hangs leaves them waiting)."""
BATCH_BYTES = 256 << 10
"""Journal bytes gathered before they are handed to the feeding thread (and at every cycle)."""
ANSWER_TIMEOUT = 600.0
"""Seconds ``flush`` and ``close`` wait for the recorder's process, by default."""
STOP_WAIT = 20.0
"""Seconds the daemon, stopping, waits for the recorder's process to write what it was sent;
then it leaves the process to finish on its own (it ends at the end of its input)."""


@dataclass
class LiveCycle:
    """One cycle being recorded: its number, its session's seed and decision recorder."""

    cycle: int
    seed: int
    committer: RecordingCommitter | None = None

    def rng(self) -> random.Random:
        return random.Random(self.seed)


class Recorder:
    def __init__(self, settings: RecordSettings) -> None:
        self.settings = settings
        self.written = 0
        self.dropped = 0
        self.bytes = 0
        """What the ring holds on disk (as of the last answer from the recorder's process)."""
        self.run = ""
        """This run's directory (as of the last answer)."""
        self.stopped: str | None = None
        """Why recording stopped, if it did."""
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pumice.daemon.recordwriter",
                settings.dir,
                str(settings.keep_cycles),
                str(settings.max_bytes),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self.journal = Journal(self._gather)
        self._batch = bytearray()
        """Journal lines not yet handed to the feeding thread (one buffer, not a list of
        lines: a line kept on its own costs several times what it costs to encode)."""
        self._config: SchedulerConfig | None = None
        self._open: LiveCycle | None = None
        self._closed = False
        self._frames: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._backlog = 0
        self._lock = threading.Lock()
        self._tokens = 0
        self._answers: dict[int, threading.Event] = {}
        self._feeder = threading.Thread(
            target=self._feed, args=(self._process.stdin,), name="pumice-recorder", daemon=True
        )
        self._listener = threading.Thread(
            target=self._listen, args=(self._process.stdout,), name="pumice-recorder-answers"
        )
        self._listener.daemon = True
        self._feeder.start()
        self._listener.start()

    # -- the daemon's hooks (event-loop thread) ------------------------------------------------

    def cache(self, scheduler_name: str, *, volcano: bool, default_queue: str) -> ClusterCache:
        """The daemon's cache, every input of it journaled."""
        return self.journal.cache(scheduler_name, volcano=volcano, default_queue=default_queue)

    def begin(self, snapshot: ClusterSnapshot, cycle: int, config: SchedulerConfig) -> LiveCycle:
        """The session about to open on ``snapshot`` (the last ``cache.snapshot()``)."""
        if self._open is not None:  # never finished (its session was cancelled)
            self.finish(self._open)
        if config is not self._config:
            self._config = config
            self._send(b"C", encode_config(config))
        record = LiveCycle(cycle, random.getrandbits(63))
        mark = fingerprint(snapshot)
        self.journal.write(["cycle", cycle, record.seed, snapshot.taken_at, mark])
        self._open = record
        return record

    def finish(self, record: LiveCycle, *, failed: bool = False) -> None:
        """The session is over (``failed``: it raised): its decisions, if any."""
        if record is self._open:
            self._open = None
        made = record.committer.made if record.committer is not None else []
        decisions = [
            [d.kind, d.task.uid, d.task.key, d.node] for d in made if d.kind in ("bind", "evict")
        ]
        message = {"cycle": record.cycle, "decisions": decisions, "failed": failed}
        self._send(b"D", orjson.dumps(message))

    # -- waiting for the recorder's process (any thread but the event loop's) --------------------

    def flush(self) -> None:
        """Wait until everything sent so far is on disk."""
        self._ask()

    def close(self, wait: float = ANSWER_TIMEOUT) -> bool:
        """Send what is left and end the recorder's input (once the cache no longer changes);
        wait up to ``wait`` seconds for it to write everything. False if it is still writing:
        it finishes on its own (calling ``close`` again waits again)."""
        if not self._closed:
            self._closed = True
            self._send_batch()
            self._frames.put(None)
        self._feeder.join(wait)
        try:
            self._process.wait(wait)
        except subprocess.TimeoutExpired:
            log.warning(
                "recorder: its process is still writing after %gs; it finishes on its own", wait
            )
            return False
        self._listener.join(wait)
        return True

    # -- plumbing ------------------------------------------------------------------------------

    def _gather(self, line: bytes) -> None:
        self._batch += line
        if len(self._batch) >= BATCH_BYTES:
            self._send_batch()

    def _send_batch(self) -> None:
        if self._batch:
            data = bytes(self._batch)
            self._batch.clear()
            self._put(b"J", data)

    def _send(self, kind: bytes, data: bytes) -> None:
        self._send_batch()  # the journal up to now goes first
        self._put(kind, data)

    def _put(self, kind: bytes, data: bytes) -> None:
        if self.stopped is not None:
            return
        if self.journal.broken is not None:
            self._stop(self.journal.broken)
            return
        with self._lock:
            if self._backlog > BACKLOG_BYTES:
                self._stop("its process fell behind")
                return
            self._backlog += len(data) + FRAME.size
        self._frames.put(FRAME.pack(kind, len(data)) + data)

    def _stop(self, why: str) -> None:
        self.stopped = why
        self.journal.broken = why
        log.error("recorder: %s; recording stops (scheduling goes on)", why)

    def _feed(self, pipe: IO[bytes]) -> None:
        while (frame := self._frames.get()) is not None:
            try:
                pipe.write(frame)
                pipe.flush()
            except (BrokenPipeError, OSError, ValueError):
                if self.stopped is None:
                    self.stopped = "its process ended"
                    log.error("recorder: its process ended; recording stops")
            with self._lock:
                self._backlog -= len(frame)
        with contextlib.suppress(OSError):
            pipe.close()

    def _ask(self) -> None:
        with self._lock:
            self._tokens += 1
            token = self._tokens
            answered = self._answers[token] = threading.Event()
        self._send(b"S", str(token).encode())
        if self.stopped is None and not answered.wait(ANSWER_TIMEOUT):
            log.error("recorder: no answer from its process")

    def _listen(self, pipe: IO[bytes]) -> None:
        for line in pipe:
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if "log" in message:
                level = logging.ERROR if message["log"] == "error" else logging.WARNING
                log.log(level, "%s", message.get("message"))
                continue
            self.written = message.get("written", self.written)
            self.dropped = message.get("dropped", self.dropped)
            self.bytes = message.get("bytes", self.bytes)
            self.run = message.get("run", self.run)
            with self._lock:
                answered = self._answers.pop(message.get("ack"), None)
            if answered is not None:
                answered.set()
        with self._lock:  # the process is gone: nobody waits for it any longer
            for answered in self._answers.values():
                answered.set()
            self._answers.clear()


def tee(committer: Committer, record: LiveCycle | None) -> Committer:
    """The committer a session gets: ``committer`` itself, or the decision recorder in front
    of it."""
    if record is None:
        return committer
    record.committer = RecordingCommitter(committer, quiet=True)
    return record.committer
