"""The file format of the flight recorder: one file per recorded cycle.

::

    PUMICE-RECORDING\\n                     magic: anything else is not a recording
    {"format": 1, "pumice": "0.1.0", "cycle": 42}\\n       one JSON header line
    zlib( pickle( CycleRecord ) )          the payload; zlib's checksum catches damage

A ``CycleRecord`` is what one session saw and decided: the snapshot it was opened on (a clone
taken before any action ran, with its clock ``taken_at``), the config, the seed of its random
source (``tieBreak: random``) and the committed decisions, in commit order. The snapshot and the
config are pickled as the model objects the session read — not rebuilt from manifests — so a
replay is opened on exactly the picture the live session had, row order of the node table
included. Pickle ties a recording to the code that wrote it, so a recording made by another
pumice version (or another format) is refused rather than half-read.

Errors: ``RecordingError`` (a ``PumiceError`` and ``ValueError``): one line naming the file.
Pickle executes code while loading: replay only recordings you made (see the README).
"""

from __future__ import annotations

import copyreg
import io
import json
import pickle
import random
import types
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice import __version__
from pumice.errors import PumiceError
from pumice.framework.arguments import Arguments
from pumice.framework.config import SchedulerConfig
from pumice.model import ClusterSnapshot

MAGIC = b"PUMICE-RECORDING\n"
FORMAT = 1
SUFFIX = ".rec"
LEVEL = 1
"""zlib's fastest level: a snapshot's pickle shrinks about twelvefold at it."""

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

    def rng(self) -> random.Random:
        return random.Random(self.seed)


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
    """The recordings in ``directory``, oldest cycle first."""
    found = [(cycle_of(p), p) for p in directory.iterdir() if p.is_file()]
    return sorted((c, p) for c, p in found if c is not None)


# -- writing ---------------------------------------------------------------------------------


def _mapping(data: dict[str, Any]) -> Mapping[str, Any]:
    return types.MappingProxyType(data)


def _arguments(data: dict[str, Any], context: str) -> Arguments:
    return Arguments(data, context=context)


class _Pickler(pickle.Pickler):
    """The config's read-only mappings pickled as what they wrap."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[types.MappingProxyType] = lambda m: (_mapping, (dict(m),))
    dispatch_table[Arguments] = lambda a: (_arguments, (dict(a), a._context))


def encode(record: CycleRecord) -> bytes:
    """The whole file for ``record`` (CPU-bound: call it off the event loop)."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(record)
    header = {"format": FORMAT, "pumice": __version__, "cycle": record.cycle}
    return MAGIC + json.dumps(header).encode() + b"\n" + zlib.compress(buffer.getvalue(), LEVEL)


# -- reading ---------------------------------------------------------------------------------


def read_header(path: Path, data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and the compressed payload; RecordingError unless made by this version."""
    if not data.startswith(MAGIC):
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
    return header, data[end + 1 :]


def decode(path: Path) -> CycleRecord:
    """Read one recording; RecordingError (one line naming the file) for anything wrong."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"{path}: {exc.strerror or exc}") from None
    header, payload = read_header(path, data)
    try:
        raw = zlib.decompress(payload)
    except zlib.error:
        raise RecordingError(f"{path}: truncated or damaged recording") from None
    try:
        record = pickle.loads(raw)  # our own recordings only (see the docstring)
    except Exception:
        raise RecordingError(f"{path}: damaged recording (unreadable payload)") from None
    if not isinstance(record, CycleRecord) or record.cycle != header.get("cycle"):
        raise RecordingError(f"{path}: damaged recording (not a recorded cycle)")
    return record
