"""The flight recorder's own process: it writes the daemon's journal and recorded cycles into a
bounded ring of files.

The daemon (``pumice.daemon.recorder``) starts it as ``python -m pumice.daemon.recordwriter DIR
KEEP_CYCLES MAX_BYTES`` and sends it frames on its stdin (one type byte, a 4-byte length, the
bytes): ``J`` journal lines (``pumice.daemon.journal``), ``C`` the config in force (pickled),
``D`` a cycle's decisions (``{"cycle", "decisions", "failed"}``) and ``S`` a request to answer
once everything before it is on disk. It answers on its stdout with JSON lines: ``{"ack": N,
"written", "dropped", "bytes", "run"}`` and ``{"log": LEVEL, "message": …}``, which the daemon
logs as its own. End of input ends it, after the last file; it ignores SIGINT and SIGTERM, so
that the daemon's shutdown (a terminal's Ctrl-C, systemd's stop) never cuts a recording short.
It reads its input as soon as it comes (``Inbox``), so the daemon never waits on it and what the
daemon sent is here even if the daemon exits first; it runs at a lower CPU priority than the
daemon (``NICE``): when the cores are busy, sessions come first and the recorder catches up
later, with up to ``BACKLOG_BYTES`` waiting.

Everything costly happens here, on another core, never in the daemon: compressing and writing
the journal, and keeping a copy of the cache (``Replica``) fed with it — lazily: the copy is
brought up to date only when a full file needs it (or when much journal waits), and then checks
each snapshot it takes against the fingerprint the daemon noted. A run's first file needs no copy
at all: it is the journal from the cache's creation, which replay rebuilds the cache from. A
cycle that decided nothing writes no file; its journal goes into the next file that is written.

**The ring** (``Ring``) spans every run in ``DIR``: this run's directory ``DIR/run-<UTC time>``
and the runs before it (a restart keeps the recording of what happened before it), all counted
against ``keepCycles`` and ``maxBytes``; what a crash left half-written (``*.partial``) is
deleted at start. A full file and the deltas after it form a group; before a file is written the
oldest groups are deleted until it fits (a delta is of no use without its chain). A group is
closed — the next file is full — once it holds an eighth of ``maxBytes`` or of ``keepCycles``, or
when a delta would be no smaller than its full file: deleting the oldest group then never takes
more than about an eighth of the history. A cycle that alone exceeds ``maxBytes`` is skipped
with a warning.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from pumice.daemon.journal import JournalError, Replica, fingerprint
from pumice.daemon.recordfile import (
    FRAME,
    PARTIAL,
    RUN_PREFIX,
    SUFFIX,
    Payload,
    encode_payload,
    file_name,
    header_of,
    recordings,
    runs,
)

NICE = 10
"""How much lower than the daemon's this process's CPU priority is."""
APPLY_AT = 256 << 20
"""Journal bytes waiting to be applied to the copy of the cache that make it catch up."""
BACKLOG_BYTES = 512 << 20
"""Frames waiting in this process beyond which the journal is given up."""
GROUP_SHARE = 8
"""A group holds at most 1/GROUP_SHARE of ``maxBytes`` and of ``keepCycles``."""


@dataclass(frozen=True)
class Kept:
    path: Path
    size: int
    group: int
    """A number shared by a full file and the deltas built on it."""


class Ring:
    """The recordings of every run in a directory, oldest first, within the two bounds."""

    def __init__(self, directory: Path, *, keep_cycles: int, max_bytes: int) -> None:
        self.directory = directory
        self.keep_cycles = keep_cycles
        self.max_bytes = max_bytes
        self.files: deque[Kept] = deque()
        self.bytes = 0
        self._groups = 0
        directory.mkdir(parents=True, exist_ok=True)
        left = f"cycle-*{SUFFIX}{PARTIAL}"  # what a crash left half-written
        for partial in [*directory.glob(left), *directory.glob(f"{RUN_PREFIX}*/{left}")]:
            partial.unlink(missing_ok=True)
        for run in [directory, *runs(directory)]:  # files directly in DIR: the oldest "run"
            for _, path in recordings(run):
                header = header_of(path)
                if header is None or header.get("base") is None:
                    self._groups += 1
                self._add(path, path.stat().st_size)
        self.run = self._new_run()

    def _new_run(self) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        run = self.directory / f"{RUN_PREFIX}{stamp}"
        n = 1
        while run.exists():
            n += 1
            run = self.directory / f"{RUN_PREFIX}{stamp}-{n}"
        run.mkdir()
        return run

    def _add(self, path: Path, size: int) -> None:
        self.files.append(Kept(path, size, self._groups))
        self.bytes += size

    def current_group(self) -> tuple[int, int]:
        """Files and bytes in the group the next delta would join."""
        files = [k for k in self.files if k.group == self._groups]
        return len(files), sum(k.size for k in files)

    def make_room(self, size: int) -> bool:
        """Delete the oldest groups until ``size`` more bytes and one more file fit; False if
        the group of this run's last file had to go (the next file must be full)."""
        chain_kept = True
        while self.files and (
            len(self.files) >= self.keep_cycles or self.bytes + size > self.max_bytes
        ):
            group = self.files[0].group
            while self.files and self.files[0].group == group:  # its deltas go with it
                gone = self.files.popleft()
                gone.path.unlink(missing_ok=True)
                self.bytes -= gone.size
                if gone.path.parent != self.run:
                    with contextlib.suppress(OSError):
                        gone.path.parent.rmdir()  # a run whose last recording went
            if group == self._groups:
                chain_kept = False
        return chain_kept

    def write(self, cycle: int, data: bytes, *, full: bool) -> None:
        path = self.run / file_name(cycle)
        partial = path.with_name(path.name + PARTIAL)
        partial.write_bytes(data)
        partial.replace(path)
        if full:
            self._groups += 1
        self._add(path, len(data))


@dataclass(frozen=True)
class Mark:
    """A cycle's mark, as read from the journal (``["cycle", …]``)."""

    cycle: int
    seed: int
    taken_at: float
    fingerprint: int
    line: bytes


class Writer:
    """Follows the journal and writes each cycle that decided something (see the docstring).

    The copy of the cache (``replica``) is brought up to date only when it is needed — for a
    full file, or when ``APPLY_AT`` bytes of journal wait — so a short run, or the first group
    of a long one, costs little more than compressing the journal: its first file is the
    journal from the cache's creation (``genesis``), which replay rebuilds the cache from.
    """

    def __init__(self, ring: Ring, out: IO[bytes]) -> None:
        self.ring = ring
        self.out = out
        self.replica = Replica()
        self.unapplied: deque[bytes] = deque()
        """Journal lines the replica has not applied yet, in order."""
        self.unapplied_bytes = 0
        self.config = b""
        self.pending: list[bytes] = []
        """Journal lines since the last file written, up to the open cycle's mark: a delta."""
        self.genesis = True
        """``pending`` starts with the cache's creation (no file has been written yet)."""
        self.open: Mark | None = None
        """The cycle whose mark was read and whose decisions were not yet."""
        self.open_applied = False
        """Has the replica applied the open cycle's mark (and must stop there)?"""
        self.waiting: list[bytes] = []
        """Lines read after the open cycle's mark (the next file's)."""
        self.chained = False
        """May the next file be a delta (its base is the last file written, still kept)?"""
        self.full_size = 0
        self.base = 0
        """The cycle of the last file written."""
        self.written = 0
        self.dropped = 0
        self.broken: str | None = None
        self.warned_divergence = False

    def say(self, message: dict[str, Any]) -> None:
        self.out.write(orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE))
        self.out.flush()

    def log(self, level: str, message: str) -> None:
        self.say({"log": level, "message": message})

    def journal(self, data: bytes) -> None:
        for line in data.splitlines(keepends=True):
            if self.broken is not None:
                return
            is_mark = line.startswith(b'["cycle",')
            if self.open is not None:
                if not is_mark:
                    self.waiting.append(line)
                    self._unapplied(line)
                    continue
                self._close_open()  # its decisions never came: it decided nothing
            self.pending.append(line)
            self._unapplied(line)
            if is_mark:
                _, cycle, seed, taken_at, mark = orjson.loads(line)
                self.open, self.open_applied = Mark(cycle, seed, taken_at, mark, line), False
        if self.unapplied_bytes > APPLY_AT:
            self._catch_up()

    def _unapplied(self, line: bytes) -> None:
        self.unapplied.append(line)
        self.unapplied_bytes += len(line)

    def _catch_up(self) -> None:
        """Apply the journal to the replica: up to the open cycle's mark (a full file of that
        cycle holds the cache as its session saw it), or all of it when no cycle is open."""
        stop = self.open.line if self.open is not None else None
        if stop is not None and self.open_applied:
            return
        while self.unapplied and self.broken is None:
            line = self.unapplied.popleft()
            self.unapplied_bytes -= len(line)
            try:
                tag = self.replica.apply(line)
            except JournalError as exc:
                self.broken = str(exc)
                self.log("error", f"recorder: the journal cannot be followed ({exc}); stopping")
                return
            if tag is not None and fingerprint(tag.snapshot) != tag.fingerprint:
                self._diverged(tag.cycle)
            if line is stop:
                self.open_applied = True
                return

    def _diverged(self, cycle: int) -> None:
        if not self.warned_divergence:
            self.warned_divergence = True
            self.log(
                "error",
                f"recorder: its copy of the cache differs from the daemon's at cycle {cycle}; "
                "the recordings from there on will not replay",
            )

    def decided(self, cycle: int, decisions: list[list[str]], failed: bool) -> None:
        mark = self.open
        if mark is None or mark.cycle != cycle or self.broken is not None:
            return
        if decisions:
            meta = {
                "cycle": cycle,
                "seed": mark.seed,
                "taken_at": mark.taken_at,
                "fingerprint": mark.fingerprint,
                "decisions": decisions,
                "failed": failed,
            }
            self._store(meta)
        self._close_open()

    def _close_open(self) -> None:
        self.open = None
        self.pending.extend(self.waiting)
        self.waiting = []

    def _store(self, meta: dict[str, Any]) -> None:
        cycle = meta["cycle"]
        files, group_bytes = self.ring.current_group()
        ring = self.ring
        delta: bytes | None = None
        if (
            self.chained
            and files < max(1, ring.keep_cycles // GROUP_SHARE)
            and group_bytes < ring.max_bytes // GROUP_SHARE
        ):
            journal = b"".join(self.pending)
            delta = encode_payload(Payload(meta, self.config, journal), cycle=cycle, base=self.base)
            if len(delta) >= self.full_size:
                delta = None  # so much changed that a fresh full file pays
        if delta is not None and len(delta) <= ring.max_bytes and ring.make_room(len(delta)):
            self._written(cycle, delta, full=False)
            return
        full: bytes | None = None
        if self.genesis:  # the journal from the cache's creation: nothing to pickle
            journal = b"".join(self.pending)
            full = encode_payload(Payload(meta, self.config, journal), cycle=cycle, base=None)
            if len(full) > ring.max_bytes:
                full = None
        if full is None:
            self._catch_up()
            full = encode_payload(
                Payload(meta, self.config, replica=self.replica), cycle=cycle, base=None
            )
        if len(full) > ring.max_bytes:
            self.dropped += 1
            self.chained = self.genesis = False
            self.pending = []
            self.log(
                "warning",
                f"recorder: cycle {cycle} takes {len(full)} bytes, more than maxBytes "
                f"({ring.max_bytes}); not recorded",
            )
            return
        ring.make_room(len(full))
        self.full_size = len(full)
        self._written(cycle, full, full=True)

    def _written(self, cycle: int, data: bytes, full: bool) -> None:
        self.ring.write(cycle, data, full=full)
        self.written += 1
        self.chained = True
        self.genesis = False
        self.base = cycle
        self.pending = []

    def ack(self, token: int) -> None:
        self.say(
            {
                "ack": token,
                "written": self.written,
                "dropped": self.dropped,
                "bytes": self.ring.bytes,
                "run": str(self.ring.run),
            }
        )


def frames(source: IO[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """(type, bytes) per frame, until the end of input."""
    while True:
        head = source.read(FRAME.size)
        if len(head) < FRAME.size:
            return
        kind, size = FRAME.unpack(head)
        data = source.read(size)
        if len(data) < size:
            return
        yield kind, data


class Inbox:
    """Frames read from the daemon as soon as they come (a thread of their own), so that the
    daemon never waits on this process and what it sent is here even if it exits first; past
    ``BACKLOG_BYTES`` waiting, the journal is given up (one hole spoils every later cycle)."""

    def __init__(self, source: IO[bytes]) -> None:
        self._frames: queue.SimpleQueue[tuple[bytes, bytes] | None] = queue.SimpleQueue()
        self._waiting = 0
        self._lock = threading.Lock()
        self.overflowed = False
        threading.Thread(target=self._read, args=(source,), daemon=True).start()

    def _read(self, source: IO[bytes]) -> None:
        for kind, data in frames(source):
            with self._lock:
                if self._waiting > BACKLOG_BYTES and kind == b"J":
                    self.overflowed = True
                    continue
                self._waiting += len(data)
            self._frames.put((kind, data))
        self._frames.put(None)

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        while (frame := self._frames.get()) is not None:
            with self._lock:
                self._waiting -= len(frame[1])
            yield frame


def main(argv: list[str]) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError):  # not where setpriority is forbidden (systemd's filter)
        os.nice(NICE)  # on a busy machine the daemon's sessions come first; this catches up
    logging.getLogger("pumice.cache").disabled = True  # the daemon has said it already
    out = sys.stdout.buffer
    directory, keep, max_bytes = Path(argv[0]), int(argv[1]), int(argv[2])
    try:
        ring = Ring(directory, keep_cycles=keep, max_bytes=max_bytes)
    except OSError as exc:
        out.write(orjson.dumps({"log": "error", "message": f"recorder: {directory}: {exc}"}))
        out.write(b"\n")
        return 1
    writer = Writer(ring, out)
    inbox = Inbox(sys.stdin.buffer)
    for kind, data in inbox:
        if inbox.overflowed and writer.broken is None:
            writer.broken = "fell behind"
            writer.log("error", "recorder: it fell behind the daemon's journal; recording stops")
        try:
            if kind == b"J":
                writer.journal(data)
            elif kind == b"C":
                writer.config = data
            elif kind == b"D":
                message = orjson.loads(data)
                writer.decided(message["cycle"], message["decisions"], message["failed"])
            elif kind == b"S":
                writer.ack(int(data))
        except OSError as exc:  # a full disk, say: this cycle is lost, the next may fit
            writer.dropped += 1
            writer.chained = False
            writer.log("error", f"recorder: {exc}")
    writer.ack(-1)
    with contextlib.suppress(OSError):
        ring.run.rmdir()  # only if this run recorded nothing
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
