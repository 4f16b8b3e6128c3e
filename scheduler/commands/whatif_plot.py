"""``pumice simulate --until-done --plot FILE.png|.svg``: a run's timeline as a picture.

One column per configuration (two with ``--compare``, side by side, on the same axes): on top
the utilisation of each resource over time, below each queue's share (proportion's
``allocated / deserved``; 1 is the fair share). Both are step lines: a value holds until the
next sample. matplotlib is the optional extra ``pumice[plot]``; this module is imported only
when a plot is asked for, and draws with the Agg canvas (no display, no pyplot state).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pumice.commands.whatif_report import Timeline

HOUR = 3600.0
MINUTE = 60.0


def plot(timelines: Sequence[Timeline], path: str) -> None:
    """Draw the timelines side by side into ``path`` (its suffix says png or svg)."""
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
