"""The inputs of ``pumice simulate --until-done``: the cluster files, a trace of jobs, and the
status each cycle feeds back to the cache for the next.

**Cluster files** (``Cluster.load``): the kinds a run uses (nodes, PriorityClasses, Queues,
PodGroups, pods), in file order, with a note for every other kind skipped (as ``pumice
simulate`` says it); a pod's runtime (``pumice.sim/complete-after``) must be a duration, else
the files are refused with one line naming the file, the pod and the annotation. t = 0 of the
virtual clock is a fixed instant, or the newest creation time among the files' pods and
PodGroups if later, so every object of the files was created by t = 0.

**Traces** (``--trace FILE``, ``load_trace``): jobs that arrive over time.

A trace is JSON lines (one object per line; blank lines are skipped) or CSV (a header, then one
row per job), chosen by the file's first non-blank character (``{`` means JSON lines)::

    {"arrival": "5m", "namespace": "team", "job": "train", "pods": 4,
     "requests": {"cpu": "1", "memory": "2Gi"}, "runtime": "10m", "queue": "research",
     "priority": "high"}

    arrival,namespace,job,pods,requests.cpu,requests.memory,runtime,queue,priority
    5m,team,train,4,1,2Gi,10m,research,high

* ``arrival``: a Go duration (or a number of seconds) from the start of the run; required;
* ``job``: the PodGroup's name, unique per namespace; required. ``namespace`` defaults to
  ``default``;
* ``pods``: how many pods, each requesting ``requests`` (a resource list: quantities as
  strings or numbers); the PodGroup's ``minMember`` is ``pods`` (the whole job is one gang)
  and its ``minResources`` their sum, as Volcano's job controller writes it;
* ``runtime``: how long each pod runs once bound (``pumice.sim/complete-after``); absent or
  empty, the pods run forever;
* ``queue``: absent or empty, the configuration's default queue;
* ``priority``: an integer, or the name of a PriorityClass in the cluster files.

A line that cannot be used is a ``TraceError``: one line, ``FILE:LINE: what is wrong``.
Checking names against the cluster (queues, PriorityClasses) is the caller's part
(``TraceJob.line`` says where to point).

**PodGroup and Queue status**: what the daemon writes, fed back to the cache. In the daemon a
session's PodGroup status (``pumice.daemon.outcome``) and the node reservations go to the API
server and come back through the watches into the cache, where the next session reads them (a
PodGroup's phase; a Queue's ``status.reservation``). A what-if run has no API server:
``write_status`` hands the same objects, updated, to the cache's handlers. ``plugin_figures``
reads the queue shares and reservations a session's plugins contribute to the Queues' status
(``Session.contributions``, as the daemon's status writer does): it never asks a plugin by name
or type.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from pumice.cache import ClusterCache
from pumice.daemon.outcome import podgroup_status, same_podgroup_status
from pumice.framework.session import Session
from pumice.manifests import ManifestError, load_manifests
from pumice.model import QuantityError, Resource, parse_quantity
from pumice.model.quantity import DurationError, parse_duration
from pumice.model.tasks import GROUP_NAME_ANNOTATION, parse_timestamp
from pumice.plain import Obj, PumiceError

COMPLETE_AFTER = "pumice.sim/complete-after"
"""A pod's runtime once bound: the annotation ``pumice.sim.lifecycle`` reads (the same string;
not imported from there, which would load the simulated API server with it)."""

FIELDS = ("arrival", "namespace", "job", "pods", "requests", "runtime", "queue", "priority")
REQUEST_PREFIX = "requests."


class TraceError(PumiceError, ValueError):
    """A trace that cannot be read: ``FILE:LINE: what``."""

    def __init__(self, source: str, line: int, message: str) -> None:
        self.source = source
        self.line = line
        self.message = message
        super().__init__(f"{source}:{line}: {message}")


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace, checked and with its durations in seconds."""

    arrival: float
    namespace: str
    name: str
    pods: int
    requests: dict[str, str]
    runtime: float | None
    runtime_text: str | None
    queue: str | None
    priority: int | str | None
    source: str = ""
    line: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def load_trace(path: str) -> list[TraceJob]:
    """Every job of the trace at ``path``, in file order; raises ``TraceError``."""
    source = str(Path(path))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(source, 0, f"cannot read the trace: {exc}") from None
    rows = _json_rows(source, text) if text.lstrip()[:1] == "{" else _csv_rows(source, text)
    jobs: list[TraceJob] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        job = _job(source, line, row)
        if job.key in seen:
            raise TraceError(source, line, f"job {job.key} is already on line {seen[job.key]}")
        seen[job.key] = line
        jobs.append(job)
    return jobs


def _json_rows(source: str, text: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise TraceError(source, number, f"not a JSON object: {exc}") from None
        if not isinstance(row, dict):
            raise TraceError(source, number, "not a JSON object")
        yield number, row


def _csv_rows(source: str, text: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            bad = [h for h in header if h not in FIELDS and not h.startswith(REQUEST_PREFIX)]
            if bad:
                raise TraceError(source, line, f"unknown column {bad[0]!r}")
            if "requests" in header:
                raise TraceError(
                    source, line, "column 'requests': give one requests.<resource> column each"
                )
            continue
        if len(row) != len(header):
            raise TraceError(source, line, f"{len(row)} cells, the header has {len(header)}")
        out: dict[str, Any] = {}
        requests: dict[str, str] = {}
        for name, cell in zip(header, row, strict=True):
            value = cell.strip()
            if not value:
                continue
            if name.startswith(REQUEST_PREFIX):
                requests[name[len(REQUEST_PREFIX) :]] = value
            else:
                out[name] = value
        out["requests"] = requests
        yield line, out


def _job(source: str, line: int, row: Mapping[str, Any]) -> TraceJob:
    def fail(message: str) -> TraceError:
        return TraceError(source, line, message)

    unknown = sorted(set(row) - set(FIELDS))
    if unknown:
        raise fail(f"unknown field {unknown[0]!r}")
    for required in ("arrival", "job", "pods"):
        if row.get(required) in (None, ""):
            raise fail(f"{required}: missing")
    arrival = _seconds(row["arrival"], "arrival", fail)
    if arrival < 0:
        raise fail(f"arrival: must not be negative, got {row['arrival']!r}")
    runtime_raw = row.get("runtime")
    runtime: float | None = None
    runtime_text: str | None = None
    if runtime_raw not in (None, ""):
        runtime = _seconds(runtime_raw, "runtime", fail)
        if runtime < 0:
            raise fail(f"runtime: must not be negative, got {runtime_raw!r}")
        runtime_text = str(runtime_raw) if isinstance(runtime_raw, str) else f"{runtime}s"
    pods = _integer(row["pods"], "pods", fail)
    if pods < 1:
        raise fail(f"pods: must be at least 1, got {pods}")
    requests = _requests(row.get("requests"), fail)
    name = _name(row["job"], "job", fail)
    namespace = _name(row.get("namespace") or "default", "namespace", fail)
    queue = row.get("queue")
    priority: int | str | None = None
    raw_priority = row.get("priority")
    if raw_priority not in (None, ""):
        priority = _priority(raw_priority, fail)
    return TraceJob(
        arrival=arrival,
        namespace=namespace,
        name=name,
        pods=pods,
        requests=requests,
        runtime=runtime,
        runtime_text=runtime_text,
        queue=_name(queue, "queue", fail) if queue not in (None, "") else None,
        priority=priority,
        source=source,
        line=line,
    )


def _seconds(value: Any, name: str, fail: Any) -> float:
    if isinstance(value, bool):
        raise fail(f"{name}: not a duration: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise fail(f"{name}: not a duration: {value!r}")
    try:
        return parse_duration(value)
    except DurationError as exc:
        raise fail(f"{name}: {exc}") from None


def _integer(value: Any, name: str, fail: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise fail(f"{name}: not an integer: {value!r}")


def _priority(value: Any, fail: Any) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return _name(value, "priority", fail)
    raise fail(f"priority: neither an integer nor a PriorityClass name: {value!r}")


def _name(value: Any, field_name: str, fail: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise fail(f"{field_name}: not a name: {value!r}")
    return value.strip()


def _requests(value: Any, fail: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail("requests: must be a mapping of resource to quantity")
    out: dict[str, str] = {}
    for resource, quantity in value.items():
        text = quantity if isinstance(quantity, str) else str(quantity)
        if isinstance(quantity, bool) or not isinstance(quantity, str | int | float):
            raise fail(f"requests.{resource}: not a quantity: {quantity!r}")
        try:
            amount = parse_quantity(text)
        except QuantityError as exc:
            raise fail(f"requests.{resource}: {exc}") from None
        if amount < 0:
            raise fail(f"requests.{resource}: negative quantity {text!r}")
        out[str(resource)] = text
    return out


def rfc3339(seconds: float) -> str:
    """A Kubernetes timestamp (whole seconds, UTC) for seconds since the epoch."""
    return datetime.fromtimestamp(int(seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_objects(
    job: TraceJob, *, scheduler_name: str, priority_class: str | None, created: float
) -> tuple[Obj, list[Obj]]:
    """The PodGroup and the pods of a trace job, as its controller would create them at
    ``created`` (seconds since the epoch): ``minMember`` = pods, ``minResources`` their sum,
    pods named ``<job>-<i>`` with the runtime as ``pumice.sim/complete-after``."""
    stamp = rfc3339(created)
    each = Resource.from_k8s(job.requests)
    spec: Obj = {"minMember": job.pods, "minResources": (each * job.pods).to_k8s()}
    if job.queue is not None:
        spec["queue"] = job.queue
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    podgroup: Obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "uid": f"whatif-pg-{job.namespace}-{job.name}",
            "creationTimestamp": stamp,
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }
    annotations = {GROUP_NAME_ANNOTATION: job.name}
    if job.runtime_text is not None:
        annotations[COMPLETE_AFTER] = job.runtime_text
    pods = []
    for i in range(job.pods):
        pod_spec: Obj = {
            "schedulerName": scheduler_name,
            "containers": [{"name": "main", "resources": {"requests": dict(job.requests)}}],
        }
        if priority_class is not None:
            pod_spec["priorityClassName"] = priority_class
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{job.name}-{i}",
                    "namespace": job.namespace,
                    "uid": f"whatif-{job.namespace}-{job.name}-{i}",
                    "creationTimestamp": stamp,
                    "annotations": dict(annotations),
                },
                "spec": pod_spec,
                "status": {"phase": "Pending"},
            }
        )
    return podgroup, pods


# -- the cluster files ------------------------------------------------------------------------

USED_KINDS = ("Node", "PriorityClass", "Queue", "PodGroup", "Pod")
"""The kinds a run uses, in the order they are handed to the cache."""
EPOCH = parse_timestamp("2026-01-01T00:00:00Z")
"""t = 0 on the wall clock, unless an object of the cluster files was created later."""


@dataclass
class Cluster:
    """The objects of the cluster files (by kind, in file order) and the notes on skipped ones."""

    objects: dict[str, list[Obj]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, paths: Iterable[str]) -> Cluster:
        """Read every file; a pod's ``pumice.sim/complete-after`` must be a duration
        (``ManifestError``: ``FILE: Pod ns/name: metadata.annotations[…]: bad duration …``)."""
        cluster = cls({kind: [] for kind in USED_KINDS})
        for path in paths:
            skipped: dict[str, int] = {}
            for obj in load_manifests(path).objects:
                kind = str(obj["kind"])
                if kind not in cluster.objects:
                    skipped[kind] = skipped.get(kind, 0) + 1
                    continue
                if kind == "Pod":
                    _check_runtime(path, obj)
                cluster.objects[kind].append(obj)
            for kind, count in sorted(skipped.items()):
                cluster.notes.append(f"{path}: skipped {count} {kind} object(s): not simulated")
        return cluster

    def start(self) -> float:
        """Seconds since the epoch at t = 0."""
        stamps = [
            parse_timestamp((o.get("metadata") or {}).get("creationTimestamp"))
            for kind in ("Pod", "PodGroup")
            for o in self.objects.get(kind, ())
        ]
        return max([EPOCH, *stamps])


def runtime_of(pod: Obj) -> float | None:
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETE_AFTER)
    return None if text is None else max(parse_duration(str(text)), 0.0)


def _check_runtime(source: str, pod: Obj) -> None:
    try:
        runtime_of(pod)
    except DurationError as exc:
        meta = pod.get("metadata") or {}
        where = f"Pod {meta.get('namespace') or 'default'}/{meta.get('name')}"
        message = f"{where}: metadata.annotations[{COMPLETE_AFTER}]: {exc}"
        raise ManifestError(source, message) from None


def key_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def podgroup_statuses(cache: ClusterCache, session: Session, touched: set[str]) -> dict[str, Obj]:
    """The PodGroup status the daemon would write (``outcome.podgroup_status``), for the
    jobs whose status can have changed: those with decisions this session, and those
    whose phase the session changed (enqueue). Going over every job with the daemon's
    ``collect`` would cost as much as the session itself."""
    out: dict[str, Obj] = {}
    for uid, job in session.jobs.items():
        if job.podgroup is None:
            continue
        entry = cache.podgroups.get(uid)
        if entry is None:
            continue
        if uid not in touched and job.phase == (entry.obj.get("status") or {}).get("phase"):
            continue
        desired = podgroup_status(job, session.job_reasons.get(uid))
        if not same_podgroup_status(entry.obj.get("status"), desired):
            out[uid] = desired
    return out


def write_status(
    cache: ClusterCache, statuses: dict[str, Obj], reservations: dict[str, Obj | None]
) -> None:
    """What the daemon's status writer would write and its watches bring back: PodGroup
    status, and the node reservations of Queues (their other status fields are read by
    no session)."""
    for key, desired in statuses.items():
        entry = cache.podgroups.get(key)
        if entry is not None:
            updated = {**entry.obj, "status": {**(entry.obj.get("status") or {}), **desired}}
            cache.podgroups_handler.on_update(entry.obj, updated)
    for name, reservation in reservations.items():
        current = cache.queue_objects.get(name)
        if current is None:
            continue
        status = dict(current.get("status") or {})
        if status.get("reservation") == reservation:
            continue
        if reservation is None:
            status.pop("reservation", None)
        else:
            status["reservation"] = reservation
        cache.queues.on_update(current, {**current, "status": status})


QueueFigures = tuple[float, dict[str, str]]
"""A queue's ``share`` and ``deserved`` (a resource list), as plugins put them in its status."""


def plugin_figures(
    session: Session,
) -> tuple[dict[str, QueueFigures], dict[str, Obj | None]]:
    """Queue shares and node reservations as the session's plugins contribute them to each
    Queue's status (``proportion``'s ``share``/``deserved``, ``node-reservation``'s
    ``reservation``): the shares of the queues that have them, and every queue's reservation
    (None: none)."""
    fields = session.contributions.queue_fields
    shares: dict[str, QueueFigures] = {}
    for name, status in fields.items():
        if "share" in status:
            shares[name] = (float(status["share"]), dict(status.get("deserved") or {}))
    reservations = {name: fields.get(name, {}).get("reservation") for name in session.queues}
    return shares, reservations
