"""Plots of the comparison report, as matplotlib :class:`~matplotlib.figure.Figure` objects.

Figures are built without pyplot (no global state, no GUI): they render with the Agg
canvas (``fig.savefig(...)``, :func:`png_bytes`) and display as PNG in a notebook
(:class:`ReportFigure`).
Each has a title, labelled axes with units, and direct labels where a legend would
make the reader hunt.

* :func:`task_cpu` -- one task's CPU over time, LLCs as shaded bands, its wake-ups
  marked by the waker's class (per-CPU kthread, unbound kworker, interrupt, ...);
* :func:`migration_matrix` -- from-CPU x to-CPU migration counts (heatmap);
* :func:`latency_cdf` -- wake-to-run latency CDFs of the sides overlaid (log x);
* :func:`busy_share` -- per-CPU busy share of each side (grouped bars);
* :func:`task_states` -- time of tasks (or task classes) in each state (stacked bars).

``compare_*`` draw these for the sides of a :class:`schedwake.compare.CompareResult`,
and :func:`report_figures` is the set the HTML report shows: :func:`side_figures` (the
runs of each side pooled), then :func:`run_figures` for every run (:func:`run_views`:
each named by the end of its path that tells it apart).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

__all__ = [
    "task_cpu",
    "migration_matrix",
    "latency_cdf",
    "busy_share",
    "task_states",
    "png_bytes",
    "default_task",
    "compare_latency_cdf",
    "compare_busy_share",
    "compare_migration_matrix",
    "compare_task_cpu",
    "report_figures",
    "side_figures",
    "run_figures",
    "run_views",
    "RunView",
    "like_for_like_traces",
    "ReportFigure",
    "WAKER_STYLE",
]

#: Colour and marker per waker class (schedwake.model.tasks.CLASSES).
WAKER_STYLE = {
    "percpu_kthread": ("#d62728", "v", "per-CPU kthread (bound kworker, ksoftirqd...)"),
    "unbound_kworker": ("#ff7f0e", "^", "unbound kworker"),
    "irq": ("#9467bd", "D", "interrupt context (hardirq/softirq)"),
    "idle": ("#7f7f7f", "s", "idle"),
    "kthread": ("#8c564b", "P", "other kernel thread"),
    "user": ("#1f77b4", "o", "user task"),
}
_SIDE_COLOURS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
)


def png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (Agg)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


class ReportFigure(Figure):
    """A matplotlib Figure that also shows itself as a PNG in Jupyter when pyplot (and
    with it the inline backend's display hook) was never imported."""

    def _repr_png_(self):
        return png_bytes(self)


def trace_name(trace) -> str:
    """The trace's file name, without its directories (the plots' titles)."""
    from pathlib import Path

    return Path(str(trace.meta.path)).name


def cpu_order(topo, ncpus: int) -> list[int]:
    """CPUs grouped by LLC (the order of the bands), then any CPU in no LLC."""
    order = [c for g in topo.llc for c in sorted(g) if c < ncpus]
    order += [c for c in range(ncpus) if c not in order]
    return order


def row_of(cpus, ypos: dict) -> np.ndarray:
    """The plot row of each CPU in ``cpus`` (``ypos``: CPU -> row), NaN for a CPU not
    shown: one table lookup for the whole array, not a Python call per event."""
    cpus = np.asarray(cpus, dtype=np.int64)
    size = max(max(ypos, default=-1), int(cpus.max()) if len(cpus) else -1) + 1
    table = np.full(size + 1, np.nan)  # (the last slot: negative CPUs, as unknown)
    table[list(ypos)] = list(ypos.values())
    return table[np.where(cpus >= 0, cpus, size)]


def default_task(trace) -> int | None:
    """The pid a task plot shows by default: the user task woken most often (else any
    task woken most often); None without wake-ups."""
    from ..model.tasks import USER, name_class

    w = trace.wakeups()
    if len(w) == 0:
        return None
    counts = w.groupby("wakee_pid").size().sort_values(ascending=False, kind="stable")
    comm = w.drop_duplicates("wakee_pid", keep="last").set_index("wakee_pid")["wakee_comm"]
    for pid in counts.index:
        if pid != 0 and name_class(str(comm.get(pid, "")), int(pid)) == USER:
            return int(pid)
    return int(counts.index[0])


# -- a task's CPU over time -------------------------------------------------------------------


def _busiest_span(ts: np.ndarray, migrated: np.ndarray, k: int) -> tuple[int, int]:
    """Index range [i, i+k) of ``k`` consecutive wake-ups holding the most migrations."""
    if len(ts) <= k:
        return 0, len(ts)
    c = np.concatenate([[0], np.cumsum(migrated.astype(np.int64))])
    counts = c[k:] - c[:-k]
    i = int(np.argmax(counts))
    return i, i + k


def task_cpu(
    trace,
    pid: int | None = None,
    t0: float | None = None,
    t1: float | None = None,
    label: str | None = None,
    max_wakeups: int | None = 400,
    figsize=(11, 4.8),
    run: str | None = None,
) -> Figure:
    """Where task ``pid`` ran over time: a bar on its CPU for every run joined by a thin
    line (a jump is a CPU change), LLCs as shaded bands, and each wake-up of the task
    as a marker on the CPU chosen for it, coloured and shaped by the waker's class
    (filled when the wake-up migrated the task).

    ``pid`` defaults to :func:`default_task`; ``t0``/``t1`` give the time range
    (seconds from the trace start). Without them, a task with more than
    ``max_wakeups`` wake-ups is shown over the ``max_wakeups`` consecutive wake-ups
    that hold the most migrations (the title says so; ``max_wakeups=None`` shows the
    whole trace). ``label`` names the side in the title, ``run`` the trace.
    """
    fig = ReportFigure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    topo = trace.topology
    order = cpu_order(topo, trace.meta.ncpus)
    ypos = {c: i for i, c in enumerate(order)}
    first = trace.model.events.first_ts
    if pid is None:
        pid = default_task(trace)
    draw_llc_bands(ax, topo, ypos)
    who = ", ".join(x for x in (label, run) if x)
    side = f"{who}: " if who else ""
    if pid is None:
        ax.set_title(f"{side}{run or trace_name(trace)}: no wake-ups to plot")
        ax.set_xlabel("time since the trace's start (s)")
        ax.set_ylabel("CPU")
        return fig
    runs, ws, comm = _task_runs_and_wakeups(trace, pid)
    wt_all = (ws["ts"].to_numpy(dtype=np.int64) - first) / 1e9
    zoom = ""
    if t0 is None and t1 is None and max_wakeups and len(ws) > max_wakeups:
        t0, t1, zoom = _busiest_window(wt_all, ws["migrated"].to_numpy(dtype=bool), max_wakeups)
    lo = -np.inf if t0 is None else t0
    hi = np.inf if t1 is None else t1
    nruns = _draw_runs(ax, runs, first, ypos, lo, hi)
    ax.plot([], [], color="#222222", lw=6, label=f"running ({nruns} runs)")
    in_window = (wt_all >= lo) & (wt_all <= hi)
    ws, wt = ws[in_window], wt_all[in_window]
    _draw_wakeups(ax, ws, wt, ypos)
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.14), ncol=3, fontsize=8, frameon=False)
    cpu_axis(ax, order)
    ax.set_xlabel("time since the trace's start (s)")
    ax.set_ylabel("CPU (grouped by LLC)")
    nw, nmig = len(ws), int(ws["migrated"].sum()) if len(ws) else 0
    ax.set_title(
        f"{side}CPU of {comm} (pid {pid}) over time: {nw} wake-ups, {nmig} "
        f"migrated (filled markers){zoom}",
        fontsize=10,
    )
    if t0 is not None or t1 is not None:
        ax.set_xlim(t0, t1)
    ax.grid(axis="x", alpha=0.3)
    return fig


def _task_runs_and_wakeups(trace, pid: int) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(runs, wake-ups, name) of task ``pid``: its ``running`` rows of the occupancy
    table in time order, its rows (as wakee) of the wakeups table, and its latest name
    (from its runs, else its wake-ups, else ``?``)."""
    occ = trace.occupancy()
    w = trace.wakeups()
    runs = occ[(occ["pid"] == pid) & (occ["state"] == "running")].sort_values("start_ts")
    ws = w[w["wakee_pid"] == pid]
    if len(runs):
        comm = str(runs["comm"].iloc[-1])
    elif len(ws):
        comm = str(ws["wakee_comm"].iloc[-1])
    else:
        comm = "?"
    return runs, ws, comm


def draw_llc_bands(ax, topo, ypos: dict, axis: str = "y") -> None:
    """Each LLC's CPUs (rows ``ypos``: CPU -> position) as a shaded band (alternating
    colours) across the ``axis`` they are placed on; on the y axis named at the right."""
    for i, g in enumerate(topo.llc):
        ys = sorted(ypos[c] for c in g if c in ypos)
        if not ys:
            continue
        span = ax.axhspan if axis == "y" else ax.axvspan
        span(
            min(ys) - 0.5,
            max(ys) + 0.5,
            color="#4c72b0" if i % 2 == 0 else "#55a868",
            alpha=0.10,
            lw=0,
        )
        if axis != "y":
            continue
        ax.text(
            1.005,
            (min(ys) + max(ys)) / 2,
            f"LLC {i}\n{_cpulist(g)}",
            transform=ax.get_yaxis_transform(),
            va="center",
            ha="left",
            fontsize=8,
            color="#333333",
        )


def _busiest_window(wt: np.ndarray, migrated: np.ndarray, n: int) -> tuple[float, float, str]:
    """(t0, t1, title note): the ``n`` consecutive wake-ups (times ``wt``, seconds) that
    hold the most migrations, padded by 2%."""
    i, j = _busiest_span(wt, migrated, n)
    t0, t1 = float(wt[i]), float(wt[j - 1])
    pad = max((t1 - t0) * 0.02, 1e-6)
    t0, t1 = t0 - pad, t1 + pad
    return (
        t0,
        t1,
        (
            f"\nzoomed to {t0:.4f}-{t1:.4f} s: the {n} consecutive wake-ups "
            f"with the most migrations (of {len(wt)})"
        ),
    )


def _draw_runs(ax, runs: pd.DataFrame, first: int, ypos: dict, lo: float, hi: float) -> int:
    """The task's runs in [lo, hi] (seconds) as bars on their CPUs, joined by a thin
    line (a vertical jump is a CPU change); returns how many were drawn."""
    rs = (runs["start_ts"].to_numpy(dtype=np.int64) - first) / 1e9
    re_ = (runs["end_ts"].to_numpy(dtype=np.int64) - first) / 1e9
    ry = row_of(runs["cpu"].to_numpy(), ypos)
    keep = (re_ >= lo) & (rs <= hi)
    rs, re_, ry = rs[keep], re_[keep], ry[keep]
    if len(rs):
        ax.plot(
            np.column_stack([rs, re_]).ravel(), np.repeat(ry, 2), color="#555555", lw=0.6, alpha=0.6
        )
        for c in np.unique(ry[~np.isnan(ry)]):
            sel = ry == c
            ax.broken_barh(
                list(zip(rs[sel], re_[sel] - rs[sel])),
                (c - 0.12, 0.24),
                facecolors="#222222",
                edgecolors="#222222",
                linewidth=0.4,
            )
    return len(rs)


def _draw_wakeups(ax, ws: pd.DataFrame, wt: np.ndarray, ypos: dict) -> None:
    """Each wake-up as a marker on its chosen CPU, at time ``wt``: shape and colour by
    the waker's class (WAKER_STYLE), a row per class just above the CPU's bar, filled
    when the wake-up migrated the task."""
    from ..model.tasks import CLASSES

    wy = row_of(ws["chosen_cpu"].to_numpy(), ypos)
    cls = ws["waker_class"].astype(str).to_numpy()
    mig = ws["migrated"].to_numpy(dtype=bool)
    for k, c in enumerate(CLASSES):
        sel = cls == c
        if not sel.any():
            continue
        colour, marker, desc = WAKER_STYLE.get(c, ("#000000", "o", c))
        off = 0.2 + 0.045 * k
        ax.scatter(
            wt[sel & ~mig],
            wy[sel & ~mig] + off,
            s=16,
            marker=marker,
            facecolors="none",
            edgecolors=colour,
            linewidths=0.7,
        )
        ax.scatter(
            wt[sel & mig],
            wy[sel & mig] + off,
            s=28,
            marker=marker,
            color=colour,
            edgecolors="black",
            linewidths=0.4,
        )
        ax.scatter([], [], marker=marker, color=colour, label=f"woken by {desc}: {int(sel.sum())}")


def cpu_axis(ax, order: list) -> None:
    """CPU rows in LLC order, at most ~32 labelled."""
    ax.set_yticks(range(len(order)))
    step = max(1, len(order) // 32)
    ax.set_yticklabels([str(c) if i % step == 0 else "" for i, c in enumerate(order)])
    ax.set_ylim(-0.6, len(order) - 0.4 + 0.1)


def _cpulist(cpus) -> str:
    from ..topology import format_cpulist

    return "CPUs " + format_cpulist(cpus)


# -- migration matrix ----------------------------------------------------------------------------


def migration_matrix(
    trace,
    label: str | None = None,
    cause: str | None = None,
    figsize=(6.4, 5.6),
    vmax: int | None = None,
    run: str | None = None,
) -> Figure:
    """Heatmap of ``sched_migrate_task`` counts from ``orig_cpu`` (rows) to
    ``dest_cpu`` (columns), CPUs ordered by LLC with the LLC boundaries drawn; counts
    printed in the cells up to 16 CPUs. ``cause`` keeps one cause (``wakeup``,
    ``load_balance``, ``fork_exec``, ``other``). ``vmax``: the top of the colour scale
    (default: this matrix's largest cell; give the largest of several matrices to put
    them on one scale). ``run``: the trace's name in the title (default: its file's)."""
    fig = ReportFigure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    ncpus = trace.meta.ncpus
    order = cpu_order(trace.topology, ncpus)
    m = trace.migrations()
    if cause is not None and len(m):
        m = m[m["cause"].astype(str) == cause]
    n = max(
        ncpus,
        int(m["orig_cpu"].max()) + 1 if len(m) else 0,
        int(m["dest_cpu"].max()) + 1 if len(m) else 0,
    )
    order += [c for c in range(n) if c not in order]
    pos = np.full(n, -1)
    pos[order] = np.arange(len(order))
    mat = np.zeros((len(order), len(order)), dtype=np.int64)
    if len(m):
        o = m["orig_cpu"].to_numpy(dtype=np.int64)
        d = m["dest_cpu"].to_numpy(dtype=np.int64)
        ok = (o >= 0) & (d >= 0)
        np.add.at(mat, (pos[o[ok]], pos[d[ok]]), 1)
    total = int(mat.sum())
    vmax = max(int(mat.max()), int(vmax or 0), 1)
    norm = LogNorm(vmin=1, vmax=vmax) if vmax >= 20 else None
    shown = np.where(mat > 0, mat, np.nan) if norm is not None else mat
    im = ax.imshow(
        shown,
        cmap="viridis",
        norm=norm,
        vmin=None if norm else 0,
        vmax=None if norm else vmax,
        interpolation="nearest",
    )
    cb = fig.colorbar(im, ax=ax, shrink=0.85)
    cb.set_label("migrations" + (" (log scale)" if norm is not None else ""))
    if len(order) <= 16:
        for i in range(len(order)):
            for j in range(len(order)):
                if mat[i, j]:
                    ax.text(
                        j,
                        i,
                        str(mat[i, j]),
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if mat[i, j] < vmax * 0.6 else "black",
                    )
    # LLC boundaries
    k = 0
    for g in trace.topology.llc[:-1]:
        k += len([c for c in g if c < n])
        ax.axhline(k - 0.5, color="white", lw=1.5)
        ax.axvline(k - 0.5, color="white", lw=1.5)
    step = max(1, len(order) // 32)
    ticks = list(range(0, len(order), step))
    ax.set_xticks(ticks, [str(order[i]) for i in ticks])
    ax.set_yticks(ticks, [str(order[i]) for i in ticks])
    ax.set_xlabel("to CPU (dest_cpu)")
    ax.set_ylabel("from CPU (orig_cpu)")
    cross = 0
    if len(m):
        cross = int(m["topology_class"].astype(str).isin(["cross_llc", "cross_numa"]).sum())
    what = f"{cause} migrations" if cause else "migrations"
    side = f"{label}: " if label else ""
    ax.set_title(
        f"{side}{what} from CPU to CPU\n{run or trace_name(trace)}: {total} in "
        f"{trace.model.duration_ns / 1e9:.2f} s, {cross} cross-LLC",
        fontsize=10,
    )
    return fig


# -- latency CDF -----------------------------------------------------------------------------------


def latency_cdf(sides: Mapping, figsize=(9, 5)) -> Figure:
    """Empirical CDFs of the wake-to-run latency (µs, log x) of each side, overlaid.

    ``sides``: ``{label: trace or [traces]}``; a side's wake-ups of all its traces are
    pooled. The legend gives each side's count, median and 99th percentile; dotted
    lines mark the medians."""
    fig = ReportFigure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    lo = np.inf
    for i, (label, traces) in enumerate(sides.items()):
        if not isinstance(traces, (list, tuple)):
            traces = [traces]
        lats = []
        for t in traces:
            w = t.wakeups()
            if len(w):
                lats.append(w["latency_ns"].dropna().to_numpy(dtype=np.float64) / 1e3)
        lat = np.sort(np.concatenate(lats)) if lats else np.zeros(0)
        lat = lat[lat > 0]
        colour = _SIDE_COLOURS[i % len(_SIDE_COLOURS)]
        if len(lat) == 0:
            ax.plot([], [], color=colour, label=f"{label}: no wake-to-run latencies")
            continue
        y = np.arange(1, len(lat) + 1) / len(lat)
        p50, p99 = np.percentile(lat, 50), np.percentile(lat, 99)
        ax.step(
            lat,
            y,
            where="post",
            color=colour,
            lw=1.6,
            label=f"{label}: n={len(lat)}, p50 {p50:.1f} µs, p99 {p99:.1f} µs",
        )
        ax.axvline(p50, color=colour, ls=":", lw=1)
        lo = min(lo, lat[0])
    ax.set_xscale("log")
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("wake-to-run latency (µs, log scale): sched_waking to switch-in")
    ax.set_ylabel("share of wake-ups with latency ≤ x")
    ax.set_title("Wake-to-run latency CDF per side (left and steep is better)")
    ax.grid(which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    return fig


# -- busy share ----------------------------------------------------------------------------------


def busy_share(samples: pd.DataFrame, labels=None, figsize=(9, 4.5)) -> Figure:
    """Grouped bars: per CPU, the mean busy share (%) of each side's samples, with
    +-1 sd error bars. ``samples``: the tidy samples of a comparison
    (:attr:`schedwake.compare.CompareResult.samples`)."""
    fig = ReportFigure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    d = samples[samples["metric"].astype(str).str.fullmatch(r"busy_share_cpu\d+")].copy()
    if labels is None:
        labels = list(dict.fromkeys(samples["side"].astype(str)))
    kind = (
        str(samples["sample_kind"].iloc[0])
        if "sample_kind" in samples.columns and len(samples)
        else "per-trace"
    )
    if len(d) == 0:
        ax.set_title("Per-CPU busy share: no busy-share samples")
        return fig
    d["cpu"] = d["metric"].str.slice(len("busy_share_cpu")).astype(int)
    cpus = sorted(d["cpu"].unique())
    width = 0.8 / max(len(labels), 1)
    x = np.arange(len(cpus))
    for i, lab in enumerate(labels):
        s = d[d["side"].astype(str) == lab].groupby("cpu")["value"]
        mean = s.mean().reindex(cpus).to_numpy()
        sd = s.std().reindex(cpus).fillna(0).to_numpy()
        ax.bar(
            x + (i - (len(labels) - 1) / 2) * width,
            mean,
            width,
            yerr=sd,
            capsize=2,
            color=_SIDE_COLOURS[i % len(_SIDE_COLOURS)],
            label=lab,
            error_kw={"lw": 0.8, "alpha": 0.7},
        )
    ax.set_xticks(
        x,
        [str(c) for c in cpus]
        if len(cpus) <= 64
        else [str(c) if k % 4 == 0 else "" for k, c in enumerate(cpus)],
    )
    ax.set_xlabel("CPU")
    ax.set_ylabel("busy share (% of time running a task)")
    ax.set_ylim(0, 105)
    ax.set_title(f"Per-CPU busy share per side (mean of {kind} samples, bars ±1 sd)")
    ax.legend(fontsize=9, ncol=min(len(labels), 4), loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    return fig


#: The states of :func:`task_states`, in stacking order: key, label, colour.
TASK_STATE_STYLE = (
    ("running_s", "running", "#2ca02c"),
    ("preempted_s", "runnable: preempted (R, R+)", "#d62728"),
    ("woken_wait_s", "runnable: woken, waiting to run", "#ff7f0e"),
    ("blocked_s", "blocked (D)", "#9467bd"),
    ("sleeping_s", "sleeping (S, I...)", "#c7c7c7"),
    ("unknown_s", "unknown", "#f7f7f7"),
)


def task_states(rows: list[dict], title: str, max_rows: int = 30, figsize=(10, None)) -> Figure:
    """Stacked horizontal bars: for each row (a task or a task class of
    :attr:`schedwake.analysis.Analysis.task_states`, with a ``label``), the share of its
    observed time in each state (%), the runnable share of running + runnable written
    beside it. At most ``max_rows`` rows (the first)."""
    rows = rows[:max_rows]
    height = figsize[1] or 1.6 + 0.38 * max(len(rows), 1)
    fig = ReportFigure(figsize=(figsize[0], height), layout="constrained")
    ax = fig.add_subplot()
    if not rows:
        ax.set_title(f"{title}: no task seen")
        return fig
    y = np.arange(len(rows))[::-1]
    left = np.zeros(len(rows))
    for key, label, colour in TASK_STATE_STYLE:
        share = np.array([100 * r[key] / r["observed_s"] if r["observed_s"] else 0 for r in rows])
        ax.barh(y, share, left=left, color=colour, edgecolor="#555555", lw=0.3, label=label)
        left += share
    for yi, r in zip(y, rows):
        busy = r["running_s"] + r["runnable_s"]
        if busy > 0:
            ax.text(101, yi, f"runnable {100 * r['runnable_s'] / busy:.1f}%", va="center",
                    fontsize=8)  # fmt: skip
    ax.set_yticks(y, [str(r["label"]) for r in rows], fontsize=8)
    ax.set_xlim(0, 120)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("share of the observed time (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.02 + 0.4 / height))
    ax.grid(axis="x", alpha=0.3)
    return fig


# -- the set the report shows ----------------------------------------------------------------------


def _side_of(result, side):
    """A side of a comparison by index or label."""
    if isinstance(side, int):
        return result.sides[side]
    for s in result.sides:
        if s.label == side:
            return s
    raise KeyError(f"no side {side!r} (sides: {', '.join(result.labels)})")


def _trace_of(result, side, trace: int = 0):
    """Trace number ``trace`` of a side: plots of one trace need the trace itself."""
    s = _side_of(result, side)
    if not s.has_tables:
        raise ValueError(
            f"side {s.label!r} has no loaded traces (a comparison built from samples or "
            "from a batch dataset): plots of one trace need the trace"
        )
    return s.traces[trace]


def compare_latency_cdf(result, **kw) -> Figure:
    """Wake-to-run latency CDFs of every side of a
    :class:`schedwake.compare.CompareResult`, overlaid (:func:`latency_cdf`)."""
    return latency_cdf({s.label: s.traces for s in result.sides}, **kw)


def compare_busy_share(result, **kw) -> Figure:
    """Per-CPU busy share of every side of a comparison as grouped bars
    (:func:`busy_share`)."""
    return busy_share(result.samples, labels=result.labels, **kw)


def compare_migration_matrix(result, side=0, trace: int = 0, **kw) -> Figure:
    """From-CPU x to-CPU migration counts of one trace of ``side`` (index or label)."""
    label = _side_of(result, side).label
    return migration_matrix(_trace_of(result, side, trace), label=label, **kw)


def compare_task_cpu(result, side=0, trace: int = 0, pid: int | None = None, **kw) -> Figure:
    """A task's CPU over time in one trace of ``side`` (:func:`task_cpu`)."""
    label = _side_of(result, side).label
    return task_cpu(_trace_of(result, side, trace), pid=pid, label=label, **kw)


def largest_cell(trace) -> int:
    """The largest count of one (from CPU, to CPU) pair of the trace's migrations."""
    m = trace.migrations()
    return int(m.groupby(["orig_cpu", "dest_cpu"]).size().max()) if len(m) else 0


@dataclass(frozen=True)
class RunView:
    """One run of a side as the comparison's report shows it: ``name`` is the end of its
    path that tells it apart from the others (as every report names it); ``pid``, ``t0``,
    ``t1``: the task and window of its task plot (:func:`like_for_like_traces`)."""

    side: str
    name: str
    trace: Any
    pid: int | None
    t0: float | None
    t1: float | None


def run_views(result) -> list[RunView]:
    """Every run of every side with loaded traces (not those built from samples or a
    batch dataset), in order, with its name and its task plot's task and window."""
    names = result.trace_names()
    runs = [(s.label, t) for s in result.sides if s.has_tables for t in s.traces]
    plans = like_for_like_traces([t for _, t in runs])
    return [RunView(side, names[str(t.path)], t, *pl) for (side, t), pl in zip(runs, plans)]


def run_figures(view: RunView, vmax: int | None = None) -> dict[str, Figure]:
    """The figures of one run: its migration matrix (``vmax``: the colour scale's top,
    shared by the runs) and its task's CPU over time."""
    return {
        "migration matrix": migration_matrix(view.trace, label=view.side, run=view.name, vmax=vmax),
        "task CPU over time": task_cpu(
            view.trace, pid=view.pid, t0=view.t0, t1=view.t1, label=view.side, run=view.name
        ),
    }


def side_figures(result) -> dict[str, Figure]:
    """The figures of the sides' runs pooled: the latency CDFs (when every side has
    loaded traces) and the per-CPU busy share (when it was measured)."""
    figs: dict[str, Figure] = {}
    if all(s.has_tables for s in result.sides):
        figs["Wake-to-run latency CDF"] = compare_latency_cdf(result)
    if result.samples["metric"].astype(str).str.startswith("busy_share_cpu").any():
        figs["Per-CPU busy share"] = compare_busy_share(result)  # (no empty chart)
    return figs


def report_figures(result) -> dict[str, Figure]:
    """The figures of the HTML report of a :class:`schedwake.compare.CompareResult`:
    :func:`side_figures`, then for every run (:func:`run_views`) its
    :func:`run_figures`, as ``"SIDE: WHAT (RUN)"``, the matrices on one colour scale."""
    figs = side_figures(result)
    views = run_views(result)
    top = max((largest_cell(v.trace) for v in views), default=0)
    for v in views:
        for what, fig in run_figures(v, top).items():
            figs[f"{v.side}: {what} ({v.name})"] = fig
    return figs


def like_for_like(result, sides, max_wakeups: int = 400) -> list[tuple]:
    """(pid, t0, t1) for the first trace of each of ``sides``
    (:func:`like_for_like_traces`)."""
    return like_for_like_traces([s.traces[0] for s in sides], max_wakeups)


def like_for_like_traces(traces, max_wakeups: int = 400) -> list[tuple]:
    """(pid, t0, t1) per trace for the task plots, so that they compare like with like:
    the task of the first trace's default role (:func:`default_task`, by name) in every
    trace, each over a window of the same length, placed where that task's wake-ups
    migrate it most (the first trace's: its ``max_wakeups`` busiest wake-ups)."""
    if not traces:
        return []
    base = traces[0]
    pid = default_task(base)
    if pid is None:
        return [(None, None, None)] * len(traces)
    _, ws, comm = _task_runs_and_wakeups(base, pid)
    first = base.model.events.first_ts
    wt = (ws["ts"].to_numpy(dtype=np.int64) - first) / 1e9
    if len(ws) > max_wakeups:
        t0, t1, _ = _busiest_window(wt, ws["migrated"].to_numpy(dtype=bool), max_wakeups)
    else:
        t0, t1 = (float(wt.min()), float(wt.max())) if len(wt) else (0.0, 0.0)
    length = max(t1 - t0, 1e-3)
    out: list[tuple[int | None, float | None, float | None]] = [(pid, t0, t1)]
    for t in traces[1:]:
        w = t.wakeups()
        mine = w[w["wakee_comm"].astype(str) == comm] if len(w) else w
        if len(mine) == 0:  # no task of that name: the trace's own default task
            out.append((default_task(t), None, None))
            continue
        p = int(mine.groupby("wakee_pid").size().idxmax())
        ws = mine[mine["wakee_pid"] == p]
        st = (ws["ts"].to_numpy(dtype=np.int64) - t.model.events.first_ts) / 1e9
        mig = np.concatenate([[0], np.cumsum(ws["migrated"].to_numpy(dtype=np.int64))])
        ends = np.searchsorted(st, st + length, "right")
        i = int(np.argmax(mig[ends] - mig[np.arange(len(st))]))
        out.append((p, float(st[i]), float(st[i]) + length))
    return out
