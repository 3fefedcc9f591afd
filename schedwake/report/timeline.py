"""Figures of one trace for its own report (``schedwake analyze --html``).

* :func:`cpu_timeline` -- who runs on each CPU over time, one row per CPU grouped and
  banded by LLC, bars coloured by the task's class, runnable waits as thin bars under
  them, and wake-up migrations as arrows from the wakee's previous CPU to the chosen
  one; over the whole trace or zoomed on a window (a finding's evidence);
* :func:`latency_by_waker` -- wake-to-run latency CDFs, one per waker class;
* :func:`busy_share_bars` -- each CPU's busy share, in LLC order.

Like :mod:`schedwake.report.plots` (whose helpers they share), they are matplotlib
figures built without pyplot.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from ..model.tasks import CLASSES, IDLE, classify
from .plots import (
    WAKER_STYLE,
    ReportFigure,
    cpu_axis,
    cpu_order,
    draw_llc_bands,
    row_of,
    trace_name,
)

__all__ = ["cpu_timeline", "latency_by_waker", "busy_share_bars"]

#: Arrows drawn one by one up to this many wake-up migrations; more are drawn as lines.
MAX_ARROWS = 80


def cpu_timeline(
    trace,
    t0_ns: int | None = None,
    t1_ns: int | None = None,
    title: str | None = None,
    figsize=(11.5, None),
    cpus=None,
) -> Figure:
    """Who runs on each CPU from ``t0_ns`` to ``t1_ns`` (trace timestamps; None: the
    trace's ends). Each run is a bar on its CPU's row coloured by the task's class
    (user task, per-CPU kthread, unbound kworker, other kernel thread); a task waiting
    to run after a wake-up or a preemption is a thin grey bar under the row; each wake-up
    that migrated its task is an arrow from the task's previous CPU to the CPU chosen
    for it. Rows are CPUs grouped by LLC, the LLCs shaded; with ``cpus``, only the LLCs
    that hold them (a finding's CPUs with their LLC neighbours, on a large machine)."""
    ncpus = trace.meta.ncpus
    order = cpu_order(trace.topology, ncpus)
    if cpus:
        want = {int(c) for c in cpus}
        near = {c for g in trace.topology.llc if want & set(g) for c in g} | want
        order = [c for c in order if c in near]
    ypos = {c: i for i, c in enumerate(order)}
    height = figsize[1] or min(2.2 + 0.28 * len(order), 12)
    fig = ReportFigure(figsize=(figsize[0], height), layout="constrained")
    ax = fig.add_subplot()
    ev = trace.model.events
    lo = ev.first_ts if t0_ns is None else int(t0_ns)
    hi = ev.last_ts if t1_ns is None else int(t1_ns)
    hi = max(hi, lo + 1)
    # trace time, as the evidence lines and the interactive timeline give it: a short
    # window in µs from its start, a long one in seconds
    short = hi - lo < 10_000_000
    zero, scale = (lo, 1e3) if short else (0, 1e9)
    draw_llc_bands(ax, trace.topology, ypos)
    occ = trace.occupancy()
    start, end = occ["start_ts"].to_numpy(np.int64), occ["end_ts"].to_numpy(np.int64)
    inside = (end >= lo) & (start <= hi)
    rows = occ[inside]
    s = (np.maximum(start[inside], lo) - zero) / scale
    w = (np.minimum(end[inside], hi) - np.maximum(start[inside], lo)) / scale
    y = row_of(rows["cpu"].to_numpy(), ypos)
    shown = ~np.isnan(y)
    state = rows["state"].astype(str).to_numpy()
    cls = np.asarray(classify(rows["comm"].array, rows["pid"].to_numpy())[0].astype(str))
    for c in CLASSES:
        if c == IDLE:
            continue
        sel = (state == "running") & (cls == c) & shown
        if not sel.any():
            continue
        colour, _, desc = WAKER_STYLE.get(c, ("#000000", "o", c))
        _bars(ax, s[sel], w[sel], y[sel], 0.5, colour, len(order))
        ax.plot([], [], color=colour, lw=6, label=f"{desc}: {int(sel.sum())} runs")
    unknown = (state == "unknown") & shown
    if unknown.any():  # what the trace does not show: neither idle nor a task
        _bars(ax, s[unknown], w[unknown], y[unknown], 0.5, "#e0a526", len(order))
        ax.plot(
            [], [], color="#e0a526", lw=6, label=f"unknown (a switch missing): {int(unknown.sum())}"
        )
    waits = (state == "waiting") & shown
    if waits.any():
        _bars(ax, s[waits], w[waits], y[waits] - 0.33, 0.12, "#9e9e9e", len(order))
        ax.plot([], [], color="#9e9e9e", lw=3, label=f"waiting to run: {int(waits.sum())}")
    moved = _migrations(ax, trace, lo, hi, zero, scale, ypos)
    cpu_axis(ax, order)
    ax.set_xlim((lo - zero) / scale, (hi - zero) / scale)
    ax.set_xlabel(
        f"µs after {lo / 1e9:.6f} s (trace time, as trace-cmd report prints it)"
        if short
        else f"trace time (s), as trace-cmd report prints it (the trace starts at "
        f"{ev.first_ts / 1e9:.6f} s)"
    )
    ax.ticklabel_format(axis="x", useOffset=False)
    ax.set_ylabel("CPU (grouped by LLC)")
    span = (hi - lo) / 1e9
    what = title or f"{trace_name(trace)}: who runs on each CPU"
    ax.set_title(
        f"{what}\n{_span_text(span)} from {lo / 1e9:.6f} s, {moved} wake-up "
        "migration(s) drawn as arrows (previous CPU -> chosen CPU)",
        fontsize=10,
    )
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.12), ncol=3, fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return fig


def _span_text(span_s: float) -> str:
    return f"{span_s * 1e6:.0f} µs" if span_s < 1e-3 else f"{span_s:.3f} s"


def _bars(ax, x, width, y, height, colour, nrows: int) -> None:
    """Bars ``height`` rows thick on one or more of ``nrows`` rows, drawn as thick line
    segments (one collection: cheap for the hundreds of thousands of runs of a whole
    trace)."""
    segs = np.stack(
        [np.column_stack([x, y]), np.column_stack([x + np.maximum(width, 0), y])], axis=1
    )
    # points per row: about 70% of the figure's height holds the rows
    lw = height * 72 * 0.7 * ax.figure.get_figheight() / max(nrows, 1)
    # an (n, 2, 2) array is the sequence of lines LineCollection takes, but its stub
    # wants a typing.Sequence, which ndarray does not declare itself to be
    ax.add_collection(
        LineCollection(segs, colors=colour, linewidths=max(lw, 1.5), capstyle="butt")  # type: ignore[arg-type]
    )
    # an instant run still shows: a tick where the segment has no length
    tiny = width <= 0
    if tiny.any():
        ax.scatter(x[tiny], y[tiny], s=4, marker="|", color=colour)


def _migrations(ax, trace, lo: int, hi: int, zero: int, scale: float, ypos: dict) -> int:
    """Arrows of the wake-ups in [lo, hi] that moved their task; returns how many."""
    wk = trace.wakeups()
    if len(wk) == 0:
        return 0
    ts = wk["ts"].to_numpy(np.int64)
    sel = (ts >= lo) & (ts <= hi) & wk["migrated"].to_numpy(dtype=bool)
    if not sel.any():
        return 0
    t = (ts[sel] - zero) / scale
    y0 = row_of(wk["prev_cpu"].to_numpy()[sel], ypos)
    y1 = row_of(wk["chosen_cpu"].to_numpy()[sel], ypos)
    ok = ~np.isnan(y0) & ~np.isnan(y1)
    t, y0, y1 = t[ok], y0[ok], y1[ok]
    if len(t) <= MAX_ARROWS:
        names = wk["wakee_comm"].astype(str).to_numpy()[sel][ok]
        for k in range(len(t)):
            ax.annotate(
                "",
                xy=(t[k], y1[k]),
                xytext=(t[k], y0[k]),
                arrowprops={"arrowstyle": "->", "color": "#d62728", "lw": 1.1},
            )
            if len(t) <= 12:  # few enough to name the task moved
                ax.text(t[k], (y0[k] + y1[k]) / 2, f" {names[k]}", fontsize=7, color="#d62728")
    else:
        segs = np.stack([np.column_stack([t, y0]), np.column_stack([t, y1])], axis=1)
        # (an (n, 2, 2) array: see _bars)
        ax.add_collection(LineCollection(segs, colors="#d62728", linewidths=0.5, alpha=0.5))  # type: ignore[arg-type]
        ax.scatter(t, y1, s=6, color="#d62728", marker="v")
    ax.plot([], [], color="#d62728", lw=1.1, label=f"wake-up migration: {len(t)}")
    return int(len(t))


def latency_by_waker(trace, figsize=(9, 4.6)) -> Figure:
    """Empirical CDFs of the wake-to-run latency (µs, log x), one per waker class: a
    wake-up by a per-CPU kworker that waits longer than one by a user task points at
    the kworker's CPU."""
    fig = ReportFigure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    wk = trace.wakeups()
    drawn = 0
    if len(wk):
        lat = wk["latency_ns"].to_numpy(np.float64, na_value=np.nan) / 1e3
        cls = wk["waker_class"].astype(str).to_numpy()
        for c in CLASSES:
            x = np.sort(lat[(cls == c) & ~np.isnan(lat) & (lat > 0)])
            if len(x) < 5:
                continue
            colour, _, desc = WAKER_STYLE.get(c, ("#000000", "o", c))
            y = np.arange(1, len(x) + 1) / len(x)
            p50, p99 = np.percentile(x, 50), np.percentile(x, 99)
            ax.step(
                x,
                y,
                where="post",
                color=colour,
                lw=1.5,
                label=f"woken by {desc}: n={len(x)}, p50 {p50:.1f} µs, p99 {p99:.1f} µs",
            )
            drawn += 1
    if drawn:
        ax.set_xscale("log")
        ax.legend(loc="lower right", fontsize=8)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("wake-to-run latency (µs, log scale): sched_waking to switch-in")
    ax.set_ylabel("share of wake-ups with latency ≤ x")
    ax.set_title(
        f"{trace_name(trace)}: wake-to-run latency by waker class"
        + ("" if drawn else " (no class has 5 measured wake-ups)"),
        fontsize=10,
    )
    ax.grid(which="both", alpha=0.3)
    return fig


def busy_share_bars(trace, busy: dict, figsize=(9, 3.8)) -> Figure:
    """Each CPU's busy share (% of the time it runs a task), CPUs in LLC order, LLCs
    shaded; ``busy``: the ``busy_share`` metric (``{"cpu": fraction}``)."""
    fig = ReportFigure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    ncpus = trace.meta.ncpus
    order = [c for c in cpu_order(trace.topology, ncpus) if str(c) in busy]
    # a CPU whose share the trace does not show (None: too much of its time unknown)
    # gets no bar, a "?" where it would stand
    known = [i for i, c in enumerate(order) if busy[str(c)] is not None]
    vals = [100 * float(busy[str(order[i])]) for i in known]
    draw_llc_bands(ax, trace.topology, {c: i for i, c in enumerate(order)}, axis="x")
    ax.bar(known, vals, color="#4c72b0")
    for i, c in enumerate(order):
        if busy[str(c)] is None:
            ax.text(i, 2, "?", ha="center", va="bottom", fontsize=9, color="#555555")
    step = max(1, len(order) // 32)
    ax.set_xticks(range(0, len(order), step), [str(order[i]) for i in range(0, len(order), step)])
    ax.set_ylim(0, 100)
    ax.set_xlabel("CPU (grouped by LLC)")
    ax.set_ylabel("busy (% of the time)")
    mean = f"mean {np.mean(vals):.1f}%" if vals else "no CPU's share is known"
    unknown = len(order) - len(known)
    note = f"; ? = not shown by the trace ({unknown} CPUs)" if unknown else ""
    ax.set_title(f"{trace_name(trace)}: per-CPU busy share ({mean}{note})", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return fig
