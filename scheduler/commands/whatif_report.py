"""What a virtual-time run (``pumice simulate --until-done``) reports, as a table or JSON.

``Timeline`` is the figures of one run under one configuration:

* ``makespan_seconds``: from t = 0 to the last completion (0 when nothing completed);
* ``queues``: per queue of the jobs the run scheduled, ``jobs`` (how many arrived),
  ``jobs_done`` (every pod completed) and ``wait_seconds`` — ``p50``, ``p90``, ``p99`` of the
  jobs' waits, a wait being the time from the job's arrival to the bind of its last pod, over
  the jobs whose pods were all bound; nearest-rank percentiles (the smallest wait with at least
  p % of the waits at or below it), null when no job of the queue got all its pods bound;
* ``utilisation``: ``{t, <resource>: fraction…}`` whenever the fractions changed — what the
  pods on the nodes request over what the nodes can give, summed over all nodes;
* ``shares``: ``{t, queue, share, deserved}`` whenever a queue's share or deserved changed, as
  the ``proportion`` plugin left them at the end of a session (none without that plugin).

``plot`` draws the timelines as a picture (``--plot FILE.png|.svg``): one column per
configuration (two with ``--compare``, side by side, on the same axes), on top the utilisation
of each resource over time, below each queue's share (proportion's ``allocated / deserved``; 1
is the fair share). Both are step lines: a value holds until the next sample. matplotlib is the
optional extra ``pumice[plot]``; ``plot`` imports it only when a plot is asked for, and draws
with the Agg canvas (no display, no pyplot state).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PERCENTILES = (50, 90, 99)


@dataclass(slots=True)
class JobRecord:
    """One job the run scheduled: when it arrived, when each pod was bound and finished."""

    key: str
    queue: str
    arrival: float
    pods: int
    bound: dict[str, float] = field(default_factory=dict)
    """Pod key -> when it was (last) bound."""
    done: set[str] = field(default_factory=set)
    """Pods that completed."""
    finished: float | None = None
    """When its last pod completed."""

    def wait(self) -> float | None:
        """Arrival to the bind of the last pod; None until every pod is bound."""
        if len(self.bound) < self.pods:
            return None
        return max(self.bound.values()) - self.arrival


def nearest_rank(ordered: Sequence[float], percent: float) -> float | None:
    """The nearest-rank percentile of sorted values: the value at rank ⌈p/100 · n⌉."""
    if not ordered:
        return None
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Timeline:
    """The figures of one run (see the module docstring)."""

    config: str
    makespan: float = 0.0
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    utilisation: list[dict[str, float]] = field(default_factory=list)
    shares: list[dict[str, Any]] = field(default_factory=list)
    cycles: int = 0
    """Cycles the run went through (a session ran in those where pods waited)."""
    sessions: int = 0
    evictions: int = 0
    """Pods evicted (each restarts its whole job)."""
    pending: int = 0
    """Our pods still waiting for a node when the run ended."""

    def queues(self) -> dict[str, dict[str, Any]]:
        by_queue: dict[str, list[JobRecord]] = {}
        for job in self.jobs.values():
            by_queue.setdefault(job.queue, []).append(job)
        out: dict[str, dict[str, Any]] = {}
        for name in sorted(by_queue):
            jobs = by_queue[name]
            waits = sorted(w for w in (j.wait() for j in jobs) if w is not None)
            out[name] = {
                "jobs": len(jobs),
                "jobs_done": sum(1 for j in jobs if j.finished is not None),
                "wait_seconds": {f"p{p}": nearest_rank(waits, p) for p in PERCENTILES},
            }
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "makespan_seconds": self.makespan,
            "queues": self.queues(),
            "utilisation": self.utilisation,
            "shares": self.shares,
            "cycles": self.cycles,
            "sessions": self.sessions,
            "evictions": self.evictions,
            "pending_pods": self.pending,
        }

    # -- samples ----------------------------------------------------------------------------

    def sample_use(self, t: float, fractions: dict[str, float]) -> None:
        """Record utilisation at ``t`` if it changed (a later sample at the same ``t`` wins)."""
        row = {"t": t, **fractions}
        if self.utilisation:
            last = self.utilisation[-1]
            if last["t"] == t:
                self.utilisation[-1] = row
                if len(self.utilisation) > 1 and _same(self.utilisation[-2], row):
                    self.utilisation.pop()
                return
            if _same(last, row):
                return
        self.utilisation.append(row)


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    return all(a.get(k) == v for k, v in b.items() if k != "t")


# -- the table ----------------------------------------------------------------------------------


def render_table(timelines: Sequence[Timeline]) -> str:
    """Each run's makespan, per-queue jobs and waits, and its mean and peak utilisation."""
    blocks = [_block(t) for t in timelines]
    return "\n\n".join(blocks)


def _block(timeline: Timeline) -> str:
    lines = [
        f"CONFIG {timeline.config}",
        f"makespan: {format_seconds(timeline.makespan)} ({timeline.makespan:g} s); "
        f"cycles: {timeline.cycles}; evictions: {timeline.evictions}; "
        f"pods still pending: {timeline.pending}",
        "",
    ]
    rows = [["QUEUE", "JOBS", "DONE", "WAIT P50", "P90", "P99"]]
    for name, figures in timeline.queues().items():
        waits = figures["wait_seconds"]
        rows.append(
            [
                name,
                str(figures["jobs"]),
                str(figures["jobs_done"]),
                *(format_seconds(waits[f"p{p}"]) for p in PERCENTILES),
            ]
        )
    lines.extend(_columns(rows))
    use = utilisation_summary(timeline)
    if use:
        lines.append("")
        lines.extend(_columns([["RESOURCE", "MEAN", "PEAK"], *use]))
    return "\n".join(lines)


def utilisation_summary(timeline: Timeline) -> list[list[str]]:
    """Per resource: the time-weighted mean over [0, makespan] and the peak."""
    samples = timeline.utilisation
    if not samples:
        return []
    end = max(timeline.makespan, samples[-1]["t"])
    names = [k for k in samples[0] if k != "t"]
    out = []
    for name in names:
        peak = max(s.get(name, 0.0) for s in samples)
        if end <= 0:
            mean = samples[-1].get(name, 0.0)
        else:
            area = 0.0
            for here, after in zip(samples, [*samples[1:], None], strict=True):
                until = after["t"] if after is not None else end
                area += here.get(name, 0.0) * max(until - here["t"], 0.0)
            mean = area / end
        out.append([name, f"{mean:.0%}", f"{peak:.0%}"])
    return out


def format_seconds(value: float | None) -> str:
    """``1h2m3s``-style, as Go prints durations (``0s``; ``-`` for None)."""
    if value is None:
        return "-"
    if value == 0:
        return "0s"
    total = round(value, 3)
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    text = ""
    if hours:
        text += f"{int(hours)}h"
    if hours or minutes:
        text += f"{int(minutes)}m"
    return text + f"{seconds:g}s"


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


HOUR = 3600.0
MINUTE = 60.0


def plot(timelines: Sequence[Timeline], path: str) -> None:
    """Draw the timelines side by side into ``path`` (its suffix says png or svg)."""
    # matplotlib is optional (pumice[plot]) and slow to import: only here, when asked for.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    end = max([_end(t) for t in timelines] + [1.0])
    unit, unit_name = (HOUR, "hours") if end > 2 * HOUR else (MINUTE, "minutes")
    columns = len(timelines)
    figure = Figure(figsize=(6.4 * columns, 6.4), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(2, columns, squeeze=False, sharex=True, sharey="row")
    top_share = max([1.2] + [float(s["share"]) * 1.05 for t in timelines for s in t.shares])
    for column, timeline in enumerate(timelines):
        use, shares = axes[0][column], axes[1][column]
        _utilisation(use, timeline, end, unit)
        _shares(shares, timeline, end, unit)
        use.set_title(f"{timeline.config} — makespan {timeline.makespan / unit:.3g} {unit_name}")
        use.set_ylim(0, 1.05)
        shares.set_ylim(0, top_share)
        shares.set_xlabel(f"time ({unit_name})")
        shares.set_xlim(0, end / unit)
    axes[0][0].set_ylabel("utilisation")
    axes[1][0].set_ylabel("queue share (1 = deserved)")
    figure.savefig(path)


def _end(timeline: Timeline) -> float:
    last = [timeline.makespan]
    if timeline.utilisation:
        last.append(float(timeline.utilisation[-1]["t"]))
    if timeline.shares:
        last.append(float(timeline.shares[-1]["t"]))
    return max(last)


def _utilisation(ax: Any, timeline: Timeline, end: float, unit: float) -> None:
    samples = timeline.utilisation
    if not samples:
        return
    names = [k for k in samples[0] if k != "t"]
    times = [s["t"] / unit for s in samples] + [end / unit]
    for name in names:
        values = [s.get(name, 0.0) for s in samples]
        ax.step(times, [*values, values[-1]], where="post", label=name)
    ax.legend(loc="upper right", fontsize="small")
    ax.grid(alpha=0.3)


def _shares(ax: Any, timeline: Timeline, end: float, unit: float) -> None:
    by_queue: dict[str, tuple[list[float], list[float]]] = {}
    for sample in timeline.shares:
        times, values = by_queue.setdefault(str(sample["queue"]), ([], []))
        times.append(float(sample["t"]) / unit)
        values.append(float(sample["share"]))
    for name in sorted(by_queue):
        times, values = by_queue[name]
        ax.step([*times, end / unit], [*values, values[-1]], where="post", label=name)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    if by_queue:
        ax.legend(loc="upper right", fontsize="small")
    ax.grid(alpha=0.3)
