"""Counterfactual suggestions: the smallest change of each kind that would admit the job.

For each kind, in the report's order (request, toleration, node-label, queue-capability,
evict, add-node), a greedy search over the last session's figures (``FailedTask``: the first
failed task's request, the nodes that pass its predicates, their future idle resources, the
victims the session's ``preemptable`` hooks allow) proposes a few candidates, smallest first;
each is then *verified* by running the whole simulation again on a copy of the objects with
the change made (``explain_changes.apply_change``). The first candidate whose run admits the
whole job is the suggestion of its kind and resource; the others are dropped. At most
``MAX_SUGGESTIONS`` are kept, and no more than ``MAX_RUNS`` verifying runs are made.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from pumice.commands.explain_changes import describe_change, job_pods, sharing_pods
from pumice.commands.explain_core import FailedTask, RunResult
from pumice.commands.explain_target import Target, _key, job_target, target_pods
from pumice.model import canonical_amount
from pumice.model.resource import format_amount
from pumice.plain import Obj

MAX_SUGGESTIONS = 5
MAX_RUNS = 12
TOLERANCE = 1e-6
MI = 1024 * 1024
SELECTOR_REASON = "node(s) didn't match Pod's node affinity/selector"
TAINT_PREFIX = "node(s) had untolerated taint {"

Verify = Callable[[Obj], bool]
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def suggest(
    objects: list[Obj], target: Target, base: RunResult, verify: Verify, scheduler: str
) -> list[Obj]:
    """The verified suggestions for a pending job (empty when none was found)."""
    failed = base.failed
    if failed is None or not base.pending:
        return []
    # the room a change must make: the whole job's pending pods (a pod's gang included)
    pending = max(len(base.job_pending), 1)
    kinds: list[Callable[[], Iterator[tuple[Obj, int]]]] = [
        lambda: _requests(objects, target, base, failed),
        lambda: _tolerations(objects, target, base),
        lambda: _labels(objects, target, failed, pending),
        lambda: _capabilities(objects, base),
        lambda: _evictions(objects, failed, pending, scheduler),
        lambda: _more_nodes(objects, failed, pending),
    ]
    out: list[Obj] = []
    runs = 0
    for kind in kinds:
        done: set[tuple[str, str]] = set()
        for change, sharing in kind():
            slot = (change["kind"], str(change.get("resource", "")))
            if slot in done or len(out) >= MAX_SUGGESTIONS or runs >= MAX_RUNS:
                continue
            runs += 1
            if verify(change):
                done.add(slot)
                out.append(
                    {"change": change, "text": describe_change(change, sharing), "verified": True}
                )
    return out


def _fits(idle: Floats, room: Ints, request: Floats) -> Ints:
    """How many pods of ``request`` each row's ``idle`` (rows x dims) holds, at most ``room``."""
    wanted = request > 0
    slots: Ints = np.maximum(room, 0).astype(np.int64)
    if not wanted.any():
        return slots
    counts = np.floor((idle[:, wanted] + TOLERANCE) / request[wanted]).min(axis=1)
    fitting: Ints = np.minimum(np.maximum(counts, 0), slots).astype(np.int64)
    return fitting


# -- request ---------------------------------------------------------------------------------


def _requests(
    objects: list[Obj], target: Target, base: RunResult, failed: FailedTask
) -> Iterator[tuple[Obj, int]]:
    """Per short resource: the largest request the feasible nodes hold for every pod."""
    short = [
        r.removeprefix("Insufficient ") for r in base.node_reasons if r.startswith("Insufficient ")
    ]
    idle = failed.future_idle[failed.feasible]
    room = failed.pod_room[failed.feasible]
    for resource in sorted(short):
        if resource not in failed.dims:
            continue
        pods = sharing_pods(objects, target, failed.key, resource)
        if not pods:
            continue
        dim = failed.dims.index(resource)
        current = int(failed.request[dim])
        low, high = 0, current - 1  # the largest v in [1, current) that fits every pod
        while low < high:
            mid = (low + high + 1) // 2
            request = failed.request.copy()
            request[dim] = mid
            if int(_fits(idle, room, request).sum()) >= len(pods):
                low = mid
            else:
                high = mid - 1
        if low <= 0:
            continue
        for value in (low, int(low * 0.9)):
            if resource == "memory" and value >= MI:  # whole Mi, as people write memory
                value = value // MI * MI
            if value <= 0:
                continue
            change = {
                "kind": "request",
                "pod": _key(pods[0]),  # the first of the job's pods it is meant for
                "resource": resource,
                "to": format_amount(resource, float(value)),
            }
            yield change, len(pods)


# -- toleration and node-label -----------------------------------------------------------------


def _tolerations(objects: list[Obj], target: Target, base: RunResult) -> Iterator[tuple[Obj, int]]:
    """The taints the node reasons name, most common first (for every pending pod of the
    job)."""
    sharing = max(len(job_pods(objects, target)), 1)
    counted: list[tuple[int, str, str]] = []
    for reason, count in base.node_reasons.items():
        if reason.startswith(TAINT_PREFIX):
            key, _, value = reason[len(TAINT_PREFIX) : -1].partition(": ")
            counted.append((-count, key, value))
    for _, key, value in sorted(counted)[:2]:
        effect = "NoSchedule"
        for node in objects:
            if node.get("kind") != "Node":
                continue
            for taint in (node.get("spec") or {}).get("taints") or ():
                if taint.get("key") == key and str(taint.get("value") or "") == value:
                    effect = str(taint.get("effect") or effect)
        yield {"kind": "toleration", "key": key, "value": value, "effect": effect}, sharing


def _untolerable(node: Obj) -> bool:
    spec = node.get("spec") or {}
    taints = spec.get("taints") or ()
    return bool(spec.get("unschedulable")) or any(
        t.get("effect") in ("NoSchedule", "NoExecute") for t in taints
    )


def _labels(
    objects: list[Obj], target: Target, failed: FailedTask, pending: int
) -> Iterator[tuple[Obj, int]]:
    """For a nodeSelector pair, the fewest nodes (roomiest first) that, labelled, hold the job."""
    job = job_target(objects, target)
    pod = next((p for p in target_pods(objects, job) if _key(p) == failed.key), None)
    selector = ((pod or {}).get("spec") or {}).get("nodeSelector") or {}
    rows = {name: i for i, name in enumerate(failed.node_names)}
    fits = _fits(failed.future_idle, failed.pod_room, failed.request)
    nodes = [o for o in objects if o.get("kind") == "Node"]
    for key, value in sorted(selector.items()):
        others = {k: v for k, v in selector.items() if k != key}
        ranked: list[tuple[int, str]] = []
        for node in nodes:
            labels = (node.get("metadata") or {}).get("labels") or {}
            name = node["metadata"]["name"]
            if labels.get(key) == value or _untolerable(node) or name not in rows:
                continue
            if any(labels.get(k) != v for k, v in others.items()):
                continue
            if fits[rows[name]] > 0:
                ranked.append((-int(fits[rows[name]]), name))
        ranked.sort()
        chosen, held = [], 0
        for count, name in ranked:
            chosen.append(name)
            held -= count
            if held >= pending:
                break
        if held < pending:
            continue
        for extra in range(2):
            names = chosen + [n for _, n in ranked[len(chosen) : len(chosen) + extra]]
            yield {"kind": "node-label", "nodes": sorted(names), "label": f"{key}={value}"}, 1


# -- queue capability ----------------------------------------------------------------------------


def _capabilities(objects: list[Obj], base: RunResult) -> Iterator[tuple[Obj, int]]:
    """Per resource the capability falls short of: allocated + the whole job's pending
    request (a pod's gang included: the gang is admitted as one)."""
    queue = base.queue
    name = queue.get("name")
    if not any(o.get("kind") == "Queue" and o["metadata"]["name"] == name for o in objects):
        return
    capability = queue.get("capability") or {}
    allocated = queue.get("allocated") or {}
    request = base.job_request or queue.get("request") or {}
    for resource in sorted(request):
        if resource not in capability:
            continue
        need = canonical_amount(resource, allocated.get(resource, "0"))
        need += canonical_amount(resource, request[resource])
        if need > canonical_amount(resource, capability[resource]):
            to = format_amount(resource, float(math.ceil(need)))
            yield {"kind": "queue-capability", "queue": name, "resource": resource, "to": to}, 1


# -- evict ---------------------------------------------------------------------------------------


def _evictions(
    objects: list[Obj], failed: FailedTask, pending: int, scheduler: str
) -> Iterator[tuple[Obj, int]]:
    """The fewest victims (lowest priority first) that make room for every pending pod."""
    ours = {
        _key(p)
        for p in objects
        if p.get("kind") == "Pod"
        and (p.get("spec") or {}).get("schedulerName") == scheduler
        and (p.get("spec") or {}).get("nodeName")
    }
    rows = {name: i for i, name in enumerate(failed.node_names)}
    width = len(failed.dims)
    on_node: dict[int, list[tuple[int, float, str, np.ndarray]]] = {}
    for key, node, priority, vector in failed.victims:
        row = rows.get(node)
        if key not in ours or row is None or not failed.feasible[row] or len(vector) > width:
            continue
        vector = np.pad(vector, (0, width - len(vector)))
        on_node.setdefault(row, []).append((priority, -float(vector.sum()), key, vector))
    for victims in on_node.values():
        victims.sort(key=lambda v: (v[0], v[1], v[2]))
    idle = failed.future_idle.copy()
    room = failed.pod_room.copy()
    request = failed.request
    free = int(_fits(idle[failed.feasible], room[failed.feasible], request).sum())
    left = pending - free
    chosen: list[str] = []
    while left > 0:
        best: tuple[int, int, int] | None = None
        for row, victims in on_node.items():
            have, slots = idle[row].copy(), int(room[row])
            for used in range(len(victims) + 1):
                if used:
                    have += victims[used - 1][3]
                    slots += 1
                if slots > 0 and bool(np.all(have + TOLERANCE >= request)):
                    rank = (used, victims[used - 1][0] if used else 0, row)
                    if best is None or rank < best:
                        best = rank
                    break
        if best is None:
            return
        used, _, row = best
        taken = on_node[row][:used]
        on_node[row] = on_node[row][used:]
        for _, _, key, vector in taken:
            idle[row] += vector
            room[row] += 1
            chosen.append(key)
        idle[row] -= request
        room[row] -= 1
        left -= 1
    if chosen:
        yield {"kind": "evict", "pods": sorted(chosen)}, 1


# -- add-node ------------------------------------------------------------------------------------


def _more_nodes(objects: list[Obj], failed: FailedTask, pending: int) -> Iterator[tuple[Obj, int]]:
    """The fewest more nodes like the roomiest node that passes the job's predicates."""
    best: tuple[int, str] | None = None
    rows = {name: i for i, name in enumerate(failed.node_names)}  # not list.index: n² on 5,000
    holds: dict[tuple[tuple[str, str], ...], int] = {}
    """Allocatable -> pods of the request a node of it holds empty."""
    for node in objects:
        if node.get("kind") != "Node":
            continue
        name = node["metadata"]["name"]
        row = rows.get(name, -1)
        if row < 0 or not failed.feasible[row] or (node.get("spec") or {}).get("unschedulable"):
            continue
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        shape = tuple(sorted((str(k), str(v)) for k, v in allocatable.items()))
        per = holds.get(shape)
        if per is None:  # once per node shape: a big cluster has few
            vector = np.array(
                [canonical_amount(d, allocatable.get(d, "0")) for d in failed.dims],
                dtype=np.float64,
            )
            pods = int(canonical_amount("pods", allocatable.get("pods", "110")))
            per = holds[shape] = int(_fits(vector[None, :], np.array([pods]), failed.request)[0])
        if per > 0 and (best is None or (-per, name) < (-best[0], best[1])):
            best = (per, name)
    if best is None:
        return
    free = int(
        _fits(
            failed.future_idle[failed.feasible], failed.pod_room[failed.feasible], failed.request
        ).sum()
    )
    count = max(1, math.ceil((pending - free) / best[0]))
    for extra in range(2):
        yield {"kind": "add-node", "like": best[1], "count": count + extra}, 1
