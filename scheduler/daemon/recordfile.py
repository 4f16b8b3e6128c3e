"""The file format of the flight recorder: one file per recorded cycle.

::

    PUMICE-RECORDING\\n                     magic: anything else is not a recording
    {"format": 2, "pumice": "0.1.0", "cycle": 42, "base": 41}\\n    one JSON header line
    zlib( pickle( Payload ) )              the payload; zlib's checksum catches damage

A recorded cycle is what one session saw and decided: the snapshot it was opened on, with its
clock (``taken_at``), the config, the seed of its random source (``tieBreak: random``), and
the binds and evictions it committed, in commit order (``CycleRecord``, what replay reads).

A file is **full** (``base`` null) or a **delta** against the file recorded just before it
(``base``: that cycle). A full one holds either the recorder's copy of the daemon's cache as it
was when the cycle's snapshot was taken (``pumice.daemon.journal.Replica``, pickled as the model
objects it holds), that snapshot among them, or — a run's first file — the cache's journal from
its creation, which rebuilds it. A delta holds the cache's journal since its base:
every informer event and every call the daemon made on the cache, up to and including the
cycle's own ``snapshot()`` and its mark. Reading a delta reads its base first (back along the
chain to a full file; a ``Reader`` keeps the last cache it rebuilt, so reading cycles in order
reads each file once) and applies the journal to that cache, through the cache's own handlers:
the snapshot comes out as the daemon's did, and its ``fingerprint`` is checked against the one
the daemon noted. ``encode`` writes a cycle on its own (a full file with only the snapshot, no
cache): a recording made by hand, which no delta can build on.

Pickle ties a recording to the code that wrote it, so a recording made by another pumice version
(or another format) is refused rather than half-read. Errors: ``RecordingError`` (a
``PumiceError`` and ``ValueError``): one line naming the file. Pickle executes code while
loading: replay only recordings you made (see docs/recording.md).
"""

from __future__ import annotations

import copyreg
import io
import json
import pickle
import random
import struct
import types
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice import __version__
from pumice.daemon.journal import JournalError, Replica, Tag, fingerprint
from pumice.framework.arguments import Arguments
from pumice.framework.config import SchedulerConfig
from pumice.model import ClusterSnapshot
from pumice.plain import PumiceError

MAGIC = b"PUMICE-RECORDING\n"
FRAME = struct.Struct("<cI")
"""A frame from the daemon to the recorder's process: its type byte and length (then the data)."""
FORMAT = 2
SUFFIX = ".rec"
PARTIAL = ".partial"
"""A file being written has this appended to its name until it is complete."""
RUN_PREFIX = "run-"
"""Each daemon run records into a directory of its own, ``DIR/run-<UTC time>``."""
LEVEL = 1
"""zlib's fastest level."""

Decision = tuple[str, str, str, str]
"""(kind, pod uid, ``namespace/name``, node) — kind ``bind`` or ``evict`` (node: where the
victim ran)."""


class RecordingError(PumiceError, ValueError):
    """A file that is not a readable recording of this pumice version."""


@dataclass
class CycleRecord:
    cycle: int
    snapshot: ClusterSnapshot
    config: SchedulerConfig
    seed: int
    taken_at: float
    decisions: list[Decision] = field(default_factory=list)
    failed: bool = False
    """The session raised after committing ``decisions`` (its binds went out all the same)."""

    def rng(self) -> random.Random:
        return random.Random(self.seed)


@dataclass
class Payload:
    """What a file holds after its header."""

    meta: dict[str, Any]
    """``cycle``, ``seed``, ``taken_at``, ``fingerprint``, ``decisions``, ``failed``."""
    config: bytes
    """The config the session ran with (``encode_config``)."""
    journal: bytes | None = None
    """A delta: the journal lines since its base; a full file without ``replica``: the journal
    from the cache's creation."""
    replica: Replica | None = None
    """A full file: the cache as of the cycle's snapshot (the snapshot included)."""
    snapshot: ClusterSnapshot | None = None
    """A full file made by ``encode``: the snapshot alone."""


def file_name(cycle: int) -> str:
    return f"cycle-{cycle:09d}{SUFFIX}"


def cycle_of(path: Path) -> int | None:
    """The cycle number in a recording's file name; None for any other file."""
    name = path.name
    if not (name.startswith("cycle-") and name.endswith(SUFFIX)):
        return None
    digits = name[len("cycle-") : -len(SUFFIX)]
    return int(digits) if digits.isdigit() else None


def recordings(directory: Path) -> list[tuple[int, Path]]:
    """The recordings in ``directory`` (not in its runs' directories), oldest cycle first."""
    found = [(cycle_of(p), p) for p in directory.iterdir() if p.is_file()]
    return sorted((c, p) for c, p in found if c is not None)


def runs(directory: Path) -> list[Path]:
    """The run directories in ``directory`` that hold recordings, oldest first."""
    found = [p for p in directory.iterdir() if p.is_dir() and p.name.startswith(RUN_PREFIX)]
    return sorted(p for p in found if recordings(p))


# -- writing -------------------------------------------------------------------------------


def _mapping(data: dict[str, Any]) -> Mapping[str, Any]:
    return types.MappingProxyType(data)


def _arguments(data: dict[str, Any], context: str) -> Arguments:
    return Arguments(data, context=context)


class _Pickler(pickle.Pickler):
    """Read-only mappings (the config's, the storage view's) pickled as what they wrap."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[types.MappingProxyType] = lambda m: (_mapping, (dict(m),))
    dispatch_table[Arguments] = lambda a: (_arguments, (dict(a), a._context))


def _pickled(value: object) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def encode_config(config: SchedulerConfig) -> bytes:
    return _pickled(config)


def encode_payload(payload: Payload, *, cycle: int, base: int | None) -> bytes:
    """The whole file (CPU-bound: the recorder's own process writes them)."""
    header = {"format": FORMAT, "pumice": __version__, "cycle": cycle, "base": base}
    body = zlib.compress(_pickled(payload), LEVEL)
    return MAGIC + json.dumps(header).encode() + b"\n" + body


def encode(record: CycleRecord) -> bytes:
    """A file for ``record`` on its own: its snapshot, config, seed and decisions."""
    meta = {
        "cycle": record.cycle,
        "seed": record.seed,
        "taken_at": record.taken_at,
        "fingerprint": fingerprint(record.snapshot),
        "decisions": [list(d) for d in record.decisions],
        "failed": record.failed,
    }
    payload = Payload(meta, encode_config(record.config), snapshot=record.snapshot)
    return encode_payload(payload, cycle=record.cycle, base=None)


# -- reading -------------------------------------------------------------------------------


def read_header(path: Path, data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and the compressed payload; RecordingError unless made by this version."""
    if not data.startswith(MAGIC):
        if data and MAGIC.startswith(data):
            raise RecordingError(f"{path}: truncated recording (it ends inside its first line)")
        raise RecordingError(f"{path}: not a pumice recording")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise RecordingError(f"{path}: truncated recording (no header)")
    try:
        header = json.loads(data[len(MAGIC) : end])
    except ValueError:
        raise RecordingError(f"{path}: damaged recording (unreadable header)") from None
    if not isinstance(header, dict):
        raise RecordingError(f"{path}: damaged recording (unreadable header)")
    made_by, fmt = header.get("pumice"), header.get("format")
    if made_by != __version__ or fmt != FORMAT:
        raise RecordingError(
            f"{path}: recorded by pumice {made_by} (format {fmt}); this is pumice "
            f"{__version__} (format {FORMAT}): replay it with the version that recorded it"
        )
    if not _whole(header.get("cycle")):
        raise RecordingError(f"{path}: damaged recording (bad cycle {header.get('cycle')!r})")
    return header, data[end + 1 :]


def header_of(path: Path) -> dict[str, Any] | None:
    """A file's header, read from its first lines only; None if it has none readable."""
    try:
        with path.open("rb") as f:
            data = f.read(len(MAGIC) + 512)
        return read_header(path, data)[0]
    except (OSError, RecordingError):
        return None


class Reader:
    """Reads recordings; keeps the cache rebuilt for the last one read, the base of the next
    delta."""

    def __init__(self) -> None:
        self._last: tuple[Path, int, Replica] | None = None
        self._config: tuple[bytes, SchedulerConfig] | None = None

    def read(self, path: Path) -> CycleRecord:
        """One recording (and, for a delta, its bases from the same directory);
        RecordingError (one line naming the file) for anything wrong."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RecordingError(f"{path}: {exc.strerror or exc}") from None
        header, body = read_header(path, data)
        cycle, base_cycle = header["cycle"], header.get("base")
        if base_cycle is not None and not (_whole(base_cycle) and base_cycle < cycle):
            raise RecordingError(f"{path}: damaged recording (bad base {base_cycle!r})")
        try:
            raw = zlib.decompress(body)
        except zlib.error:
            raise RecordingError(f"{path}: truncated or damaged recording") from None
        try:
            payload = pickle.loads(raw)  # our own recordings only (see the docstring)
        except Exception:
            raise RecordingError(f"{path}: damaged recording (unreadable payload)") from None
        if not isinstance(payload, Payload) or payload.meta.get("cycle") != cycle:
            raise RecordingError(f"{path}: damaged recording (not a recorded cycle)")
        if base_cycle is None:
            snapshot = self._full(path, payload)
        else:
            snapshot = self._delta(path, payload, base_cycle)
        meta = payload.meta
        if fingerprint(snapshot) != meta.get("fingerprint"):
            raise RecordingError(
                f"{path}: the recording does not rebuild the snapshot cycle {cycle} was "
                "decided on (the recorder's copy of the cache went out of step)"
            )
        try:
            decisions = [(str(k), str(u), str(p), str(n)) for k, u, p, n in meta["decisions"]]
            return CycleRecord(
                cycle,
                snapshot,
                self._config_of(path, payload.config),
                int(meta["seed"]),
                float(meta["taken_at"]),
                decisions,
                bool(meta.get("failed")),
            )
        except (KeyError, TypeError, ValueError):
            raise RecordingError(f"{path}: damaged recording (bad cycle data)") from None

    def _full(self, path: Path, payload: Payload) -> ClusterSnapshot:
        if payload.journal is not None:  # the journal from the cache's creation
            return self._journaled(path, payload, Replica())
        replica = payload.replica
        if replica is not None and replica.snapshot is not None:
            self._last = (path, payload.meta["cycle"], replica)
            replica.snapshot.taken_at = payload.meta["taken_at"]
            return replica.snapshot
        if payload.snapshot is None:
            raise RecordingError(f"{path}: damaged recording (a full one without a snapshot)")
        self._last = None  # a snapshot on its own: nothing can build on it
        return payload.snapshot

    def _delta(self, path: Path, payload: Payload, base_cycle: int) -> ClusterSnapshot:
        base_path = path.with_name(file_name(base_cycle))
        last = self._last
        if last is None or (last[0].parent, last[1]) != (path.parent, base_cycle):
            if not base_path.exists():
                raise RecordingError(
                    f"{path}: the recording it builds on ({base_path.name}) is missing"
                )
            self.read(base_path)
            last = self._last
            if last is None:
                raise RecordingError(f"{path}: its base ({base_path.name}) holds no cache")
        return self._journaled(path, payload, last[2])

    def _journaled(self, path: Path, payload: Payload, replica: Replica) -> ClusterSnapshot:
        """Apply the file's journal to ``replica``: the snapshot of the file's cycle."""
        self._last = None  # the cache changes from here: it is this file's once it is read
        tag: Tag | None = None
        try:
            for line in (payload.journal or b"").splitlines():
                tag = replica.apply(line) or tag
        except JournalError as exc:
            raise RecordingError(f"{path}: damaged recording ({exc})") from None
        cycle = payload.meta["cycle"]
        if tag is None or tag.cycle != cycle:
            raise RecordingError(f"{path}: damaged recording (the journal ends before its cycle)")
        self._last = (path, cycle, replica)
        return tag.snapshot

    def _config_of(self, path: Path, data: bytes) -> SchedulerConfig:
        if self._config is None or self._config[0] != data:
            try:
                config = pickle.loads(data)
            except Exception:
                raise RecordingError(f"{path}: damaged recording (unreadable config)") from None
            if not isinstance(config, SchedulerConfig):
                raise RecordingError(f"{path}: damaged recording (unreadable config)")
            self._config = (data, config)
        return self._config[1]


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode(path: Path) -> CycleRecord:
    """One recording, read by a fresh ``Reader``."""
    return Reader().read(path)
