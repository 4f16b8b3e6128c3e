"""The file format of the flight recorder: one file per recorded cycle.

::

    PUMICE-RECORDING\\n                     magic: anything else is not a recording
    {"format": 1, "pumice": "0.1.0", "cycle": 42, "base": 41}\\n    one JSON header line
    zlib( pickle( CycleRecord ) )          the payload; zlib's checksum catches damage

A ``CycleRecord`` is what one session saw and decided: the snapshot it was opened on (a clone
taken before any action ran, with its clock ``taken_at``), the config, the seed of its random
source (``tieBreak: random``) and the committed decisions, in commit order. The snapshot and the
config are pickled as the model objects the session read — not rebuilt from manifests — so a
replay is opened on exactly the picture the live session had, row order of the node table
included.

Most of a snapshot is its jobs and their tasks, and most of them are the very objects an earlier
snapshot had: jobs are shared copy-on-write between the cache and its snapshots, so a job that
changed is a new object. A recording is therefore either **full** (``base`` null) or a **delta**
against the cycle recorded just before it (``base``: that cycle), in which a job or task that is
the same object as in the base (``Base``) is pickled as a reference to it, and so are the parts
of a node its clones share (its Node object, labels, taints, allocatable), and everything else
in full. Reading a delta reads its base first (back along the chain to a full recording; a
``Reader`` keeps the last one read, so reading cycles in order reads each file once) and puts
the base's objects in place, so the snapshot read back shares its objects as the live one did.

Pickle ties a recording to the code that wrote it, so a recording made by another pumice version
(or another format) is refused rather than half-read. Errors: ``RecordingError`` (a
``PumiceError`` and ``ValueError``): one line naming the file. Pickle executes code while
loading: replay only recordings you made (see the README).
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
from pumice.model import ClusterSnapshot, JobInfo, NodeInfo, TaskInfo

MAGIC = b"PUMICE-RECORDING\n"
FORMAT = 1
SUFFIX = ".rec"
LEVEL = 1
"""zlib's fastest level: a snapshot's pickle shrinks about tenfold at it."""

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


def _base_job(uid: str) -> JobInfo:
    """A job of the base (only ever resolved by ``_Unpickler.find_class``)."""
    raise RecordingError("a delta read without its base")


def _base_task(job: str, uid: str) -> TaskInfo:
    """A task of a job of the base (only ever resolved by ``_Unpickler.find_class``)."""
    raise RecordingError("a delta read without its base")


def _new_node() -> NodeInfo:
    return NodeInfo.__new__(NodeInfo)


def _base_node_state(node: NodeInfo, state: tuple[dict[str, Any], str]) -> None:
    """Fill a node in from the base (only ever resolved by ``_Unpickler.find_class``)."""
    raise RecordingError("a delta read without its base")


NODE_SHARED = ("allocatable", "capacity", "labels", "node", "taints")
"""What a node's clones share (``NodeInfo._copy_into``): a delta refers to the base's."""
NODE_OWN = ("_accounted", "_row", "_table", "name", "tasks")


def shared_parts(nodes: Mapping[str, NodeInfo]) -> dict[str, tuple[Any, ...]]:
    """Node name -> the parts its clones share (a base for deltas)."""
    return {name: tuple(getattr(node, a) for a in NODE_SHARED) for name, node in nodes.items()}


def _fill_node(node: NodeInfo, state: dict[str, Any], shared: tuple[Any, ...]) -> None:
    for attr, value in (*state.items(), *zip(NODE_SHARED, shared, strict=True)):
        setattr(node, attr, value)


class Base:
    """The jobs and tasks of a full recording, by identity: what a delta refers to."""

    def __init__(
        self, cycle: int, jobs: Mapping[str, JobInfo], nodes: Mapping[str, NodeInfo]
    ) -> None:
        self.cycle = cycle
        self.nodes = shared_parts(nodes)
        self.jobs = dict(jobs)
        """Kept alive here, so that the ids below stay theirs."""
        self.job_ids = {id(job): uid for uid, job in self.jobs.items()}
        self.task_ids = {
            id(task): (uid, task.uid)
            for uid, job in self.jobs.items()
            for task in job.tasks.values()
        }


class _Pickler(pickle.Pickler):
    """The config's read-only mappings pickled as what they wrap; when writing a delta, the
    base's jobs and tasks as references to them."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[types.MappingProxyType] = lambda m: (_mapping, (dict(m),))
    dispatch_table[Arguments] = lambda a: (_arguments, (dict(a), a._context))

    def __init__(self, file: io.BytesIO, base: Base | None) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.base = base

    def reducer_override(self, obj: Any) -> Any:
        base, kind = self.base, type(obj)
        if base is None:
            return NotImplemented
        if kind is JobInfo:
            uid = base.job_ids.get(id(obj))
            if uid is not None and base.jobs[uid] is obj:
                return _base_job, (uid,)
        elif kind is TaskInfo:
            key = base.task_ids.get(id(obj))
            if key is not None and base.jobs[key[0]].tasks.get(key[1]) is obj:
                return _base_task, key
        elif kind is NodeInfo:
            shared = base.nodes.get(obj.name)
            if shared is not None and all(
                getattr(obj, a) is b for a, b in zip(NODE_SHARED, shared, strict=True)
            ):
                state = {a: getattr(obj, a) for a in NODE_OWN}
                return _new_node, (), (state, obj.name), None, None, _base_node_state
        return NotImplemented


def encode(record: CycleRecord, base: Base | None = None) -> bytes:
    """The whole file for ``record``: full, or a delta against ``base`` (CPU-bound: call it
    off the event loop)."""
    buffer = io.BytesIO()
    _Pickler(buffer, base).dump(record)
    header = {
        "format": FORMAT,
        "pumice": __version__,
        "cycle": record.cycle,
        "base": None if base is None else base.cycle,
    }
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


class _Unpickler(pickle.Unpickler):
    """Resolves a delta's references to its base's jobs and tasks."""

    def __init__(self, raw: bytes, base: _Parts | None) -> None:
        super().__init__(io.BytesIO(raw))
        self.base = base

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name in ("_base_job", "_base_task", "_base_node_state"):
            if self.base is None:
                raise RecordingError("a full recording refers to a base")
            jobs, nodes = self.base

            def task(job: str, uid: str) -> TaskInfo:
                return jobs[job].tasks[uid]

            def node(obj: NodeInfo, state: tuple[dict[str, Any], str]) -> None:
                _fill_node(obj, state[0], nodes[state[1]])

            return {"_base_job": jobs.__getitem__, "_base_task": task}.get(name, node)
        return super().find_class(module, name)


_Parts = tuple[dict[str, JobInfo], dict[str, tuple[Any, ...]]]
"""What a delta may refer to of its base: its jobs, and its nodes' shared parts."""


def _parts(snapshot: ClusterSnapshot) -> _Parts:
    return dict(snapshot.jobs), shared_parts(snapshot.nodes)


class Reader:
    """Reads recordings; keeps the jobs of the last one read, the base of the next delta."""

    def __init__(self) -> None:
        self._last: tuple[Path, int, _Parts] | None = None

    def read(self, path: Path) -> CycleRecord:
        """One recording (and, for a delta, its bases from the same directory);
        RecordingError (one line naming the file) for anything wrong."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RecordingError(f"{path}: {exc.strerror or exc}") from None
        header, payload = read_header(path, data)
        cycle, base_cycle = header.get("cycle"), header.get("base")
        base: _Parts | None = None
        if base_cycle is not None:
            if not (_whole(base_cycle) and _whole(cycle) and base_cycle < cycle):
                raise RecordingError(f"{path}: damaged recording (bad base {base_cycle!r})")
            base_path = path.with_name(file_name(base_cycle))
            last = self._last
            if last is not None and (last[0].parent, last[1]) == (path.parent, base_cycle):
                base = last[2]
            elif not base_path.exists():
                raise RecordingError(
                    f"{path}: the recording it builds on ({base_path.name}) is missing"
                )
            else:
                base = _parts(self.read(base_path).snapshot)
        try:
            raw = zlib.decompress(payload)
        except zlib.error:
            raise RecordingError(f"{path}: truncated or damaged recording") from None
        try:
            record = _Unpickler(raw, base).load()  # our own recordings only (see the docstring)
        except Exception:
            raise RecordingError(f"{path}: damaged recording (unreadable payload)") from None
        if not isinstance(record, CycleRecord) or record.cycle != cycle:
            raise RecordingError(f"{path}: damaged recording (not a recorded cycle)")
        self._last = (path, record.cycle, _parts(record.snapshot))
        return record


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode(path: Path) -> CycleRecord:
    """One recording, read by a fresh ``Reader``."""
    return Reader().read(path)
