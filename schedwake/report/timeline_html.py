"""The interactive per-CPU timeline of a trace, as an HTML fragment with inline Bokeh.

:func:`timeline_fragment` returns a ``<div>`` and its ``<script>`` (Bokeh's document as
JSON, no network at view time) that the reports of ``analyze --html`` and ``compare
--html`` put in their page, after :func:`bokeh_resources` (BokehJS itself, inline, once a
page). What it shows:

* one row per CPU, grouped and banded by LLC; each run a bar coloured by the task's
  class, a task waiting to run (after a wake-up or a preemption) a thin grey bar under
  the row; hover on a run: task, pid, CPU, start, duration and the state the task left
  the CPU in (``prev_state`` of the switch that ended the run);
* each wake-up that moved its task as an arrow from the task's previous CPU to the one
  chosen for it; hover: waker, wakee, previous and chosen CPU, wake-to-run latency;
* each finding's evidence window as a shaded, named range that the "jump to" menu (and
  the report's links, through :data:`JUMP_SCRIPT`) zooms on;
* zoom and pan on time only (mouse wheel, drag, box zoom), and under the rows the wake-up
  migrations per time bin, the overview that finds the busy episodes.

Level of detail: the whole trace is drawn from per-bin aggregates made here (``BINS``
bins over the trace, about one a pixel: per CPU and bin the busy share, the tasks
waiting, the runs begun, the task running at the bin's middle), so a 5 M-event trace
opens in seconds. Zoomed in below a span that holds a few tens of thousands of runs, a callback in
the page swaps in the exact runs and arrows. The file holds every exact run when the
trace has at most ``EXACT_BUDGET`` of them; a larger one holds the exact runs of the
findings' evidence windows and of the span where the wake-up migrations are densest
(a named range too) only, and the view says so when it is zoomed elsewhere: the HTML of
a 5.5 M-event trace is 2 MB.
"""

from __future__ import annotations

import html as _html
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..jsonout import dumps
from ..model.tasks import CLASSES, IDLE, classify
from .plots import WAKER_STYLE, cpu_order, row_of, trace_name

__all__ = ["bokeh_resources", "timeline_fragment", "JUMP_SCRIPT", "BINS", "EXACT_BUDGET"]

#: Time bins of the aggregated whole-trace view (about one a pixel of the plot).
BINS = 1500
#: At most this many exact runs (running and waiting intervals) go into one file.
EXACT_BUDGET = 120_000
#: Exact runs are drawn when the view holds about this many runs or fewer.
DETAIL_RUNS = 25_000
#: Plot width in pixels (the report pages are 1200 px wide).
WIDTH = 1150
#: Evidence windows shorter than this (ns) are widened around their middle.
MIN_WINDOW_NS = 200_000

_WAIT_COLOUR = "#9e9e9e"
#: What the trace does not show (a switch missing, events lost): neither a task nor idle.
_UNKNOWN_COLOUR = "#e0a526"
_UNKNOWN_TASK = "(unknown: not in the trace)"
_ARROW_COLOUR = "#111111"

#: The page function the reports' links call: ``schedwakeJump(timeline, key)`` sets the
#: named timeline's "jump to" menu to ``key`` (``all`` or ``f<i>``: finding i) and
#: scrolls the timeline into view.
JUMP_SCRIPT = """
function schedwakeJump(timeline, key) {
  if (!window.Bokeh) { return false; }
  for (const doc of Bokeh.documents) {
    const sel = doc.get_model_by_name(timeline + '-jump');
    if (sel) {
      sel.value = key;
      const el = document.getElementById(timeline);
      if (el) { el.scrollIntoView(); }
      return false;
    }
  }
  return false;
}
// With the page's box #schedwake-link checked, a timeline's zoom and pan are every
// timeline's (the comparison's runs, all in seconds since their start).
function schedwakeLink(from, xr) {
  const box = document.getElementById('schedwake-link');
  if (!box || !box.checked || schedwakeLink.busy || !window.Bokeh) { return; }
  schedwakeLink.busy = true;
  try {
    for (const el of document.querySelectorAll('.schedwake-timeline')) {
      if (el.id === from) { continue; }
      for (const doc of Bokeh.documents) {
        const r = doc.get_model_by_name(el.id + '-x');
        if (r && (r.start !== xr.start || r.end !== xr.end)) {
          r.setv({start: xr.start, end: xr.end});
        }
      }
    }
  } finally {
    schedwakeLink.busy = false;
  }
}
"""


def bokeh_resources() -> str:
    """BokehJS (core and widgets, 1.6 MB) as inline ``<script>`` elements, with
    :data:`JUMP_SCRIPT`: once a page, before its first timeline."""
    from bokeh.resources import Resources

    return Resources(
        mode="inline", components=["bokeh", "bokeh-widgets"], log_level="warn"
    ).render_js() + (f"<script>{JUMP_SCRIPT}</script>")


# -- the data -------------------------------------------------------------------------------
def _runs(trace) -> pd.DataFrame:
    """The occupancy's running and waiting intervals (``comm`` categorical), with each
    run's ``state_out``: the ``prev_state`` of the switch that ended it, found per CPU
    by its time and pid ("" for a run still on at the trace's end, and for waits)."""
    occ = trace.occupancy()
    occ = occ[(occ["state"] != "idle").to_numpy()]
    waiting = (occ["state"] == "waiting").to_numpy()
    unknown = (occ["state"] == "unknown").to_numpy()
    comm = occ["comm"].array
    if unknown.any():  # (a name for the stretches the trace does not show)
        comm = pd.Categorical(comm).add_categories([_UNKNOWN_TASK])
        comm[unknown] = _UNKNOWN_TASK
    out = pd.DataFrame(
        {
            "cpu": occ["cpu"].to_numpy(np.int32),
            "start": occ["start_ts"].to_numpy(np.int64),
            "end": occ["end_ts"].to_numpy(np.int64),
            "pid": occ["pid"].to_numpy(np.int32),
            "comm": comm,
            "waiting": waiting,
            # (a wait that began at a wake-up, not at a preemption)
            "woken": waiting & (occ["reason"] == "wakeup").to_numpy(),
            "unknown": unknown,
        }
    )
    codes = np.full(len(out), -1, np.int32)
    names: list[str] = []
    sw = trace.model.events.switch
    if sw is not None and len(sw) and "prev_state_str" in sw.columns and len(out):
        states = pd.Categorical(sw["prev_state_str"])
        names = [str(x) for x in states.categories]
        scode = np.asarray(states.codes, np.int32)
        scpu, sts = sw["cpu"].to_numpy(np.int32), sw["ts"].to_numpy(np.int64)
        spid = sw["prev_pid"].to_numpy(np.int32)
        cpu, end, pid = out["cpu"].to_numpy(), out["end"].to_numpy(), out["pid"].to_numpy()
        for c in np.unique(cpu[~waiting]):
            mine = np.flatnonzero(scpu == c)
            mine = mine[np.argsort(sts[mine], kind="stable")]
            runs = np.flatnonzero((cpu == c) & ~waiting)
            k = np.searchsorted(sts[mine], end[runs], side="left")
            # (switches at one timestamp: the one whose prev_pid is the run's task)
            for step in range(4):
                at = mine[np.minimum(k + step, len(mine) - 1)]
                hit = (codes[runs] < 0) & (sts[at] == end[runs]) & (spid[at] == pid[runs])
                codes[runs[hit]] = scode[at[hit]]
    out["state_out"] = pd.Categorical.from_codes(
        np.where(codes < 0, len(names), codes), categories=names + [""]
    )
    return out


def _time_in_bins(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin of ``edges``, the summed time (ns) that the intervals [start, end) spend in
    it (intervals may overlap): the integral of the count of open intervals, from
    sum over starts before t of (t - start) minus the same over ends."""

    def upto(points: np.ndarray) -> np.ndarray:
        p = np.sort(points).astype(np.float64)
        csum = np.concatenate([[0.0], np.cumsum(p)])
        k = np.searchsorted(p, edges, side="left")
        return k * edges.astype(np.float64) - csum[k]

    total = upto(start) - upto(end)
    return np.diff(total)


def _aggregate(runs: pd.DataFrame, order: list[int], lo: int, hi: int, bins: int) -> dict:
    """Per CPU and time bin: busy share, mean number of tasks waiting to run, runs begun,
    the task running at the bin's middle (its class colours the cell); empty cells left
    out."""
    edges = np.linspace(lo, hi, bins + 1).round().astype(np.int64)
    width = np.diff(edges).astype(np.float64)
    mids = (edges[:-1] + edges[1:]) // 2
    cols: dict[str, list] = {
        k: [] for k in ("left", "right", "row", "cpu", "busy", "wait", "n", "pid", "task", "cls")
    }
    cpu = runs["cpu"].to_numpy()
    waiting = runs["waiting"].to_numpy()
    comm = pd.Categorical(runs["comm"])
    comm_code, comm_names = (
        np.asarray(comm.codes),
        np.array([str(x) for x in comm.categories] + ["(none)"]),
    )
    unknown = runs["unknown"].to_numpy()
    for row, c in enumerate(order):
        on = (cpu == c) & ~waiting & ~unknown  # (unknown is not busy)
        wt = (cpu == c) & waiting
        s, e = runs["start"].to_numpy()[on], runs["end"].to_numpy()[on]
        busy = _time_in_bins(s, e, edges) / width
        wait = (
            _time_in_bins(runs["start"].to_numpy()[wt], runs["end"].to_numpy()[wt], edges) / width
        )
        begun = np.bincount(
            np.clip(np.searchsorted(edges, s, side="right") - 1, 0, bins - 1), minlength=bins
        )[:bins]
        # the run holding each bin's middle (runs on a CPU do not overlap: sorted by start)
        idx = np.full(len(mids), -1)  # (a CPU with no run the trace shows: none)
        if len(s):
            srt = np.argsort(s, kind="stable")
            k = np.searchsorted(s[srt], mids, side="right") - 1
            held = (k >= 0) & (e[srt][np.maximum(k, 0)] > mids)
            idx = np.where(held, srt[np.maximum(k, 0)], -1)
        keep = (busy > 0) | (wait > 0) | (begun > 0)
        if not keep.any():
            continue
        sel = np.flatnonzero(on)
        run_at = np.where(idx >= 0, sel[np.maximum(idx, 0)], -1)[keep]
        cols["left"].append(edges[:-1][keep])
        cols["right"].append(edges[1:][keep])
        cols["row"].append(np.full(int(keep.sum()), row))
        cols["cpu"].append(np.full(int(keep.sum()), c))
        cols["busy"].append(busy[keep])
        cols["wait"].append(wait[keep])
        cols["n"].append(begun[keep])
        cols["pid"].append(np.where(run_at >= 0, runs["pid"].to_numpy()[np.maximum(run_at, 0)], -1))
        cols["task"].append(comm_names[np.where(run_at >= 0, comm_code[np.maximum(run_at, 0)], -1)])
    out = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items() if k != "cls"}
    return out


def _colour_of(comm, pid: np.ndarray) -> np.ndarray:
    """The colour of each task's class (names and pids: one lookup, no loop per run)."""
    cls = classify(pd.Categorical(comm), np.asarray(pid))[0]  # (categories: CLASSES)
    palette = np.array([WAKER_STYLE.get(c, ("#000000",))[0] for c in CLASSES])
    palette[CLASSES.index(IDLE)] = "#cccccc"
    return palette[np.asarray(cls.codes)]


def _windows(findings: Sequence, lo: int, hi: int) -> list[tuple[str, str, int, int]]:
    """(key, label, t0, t1) of each finding with an evidence window, widened to at least
    ``MIN_WINDOW_NS`` and clipped to the trace."""
    out = []
    for i, f in enumerate(findings or ()):
        ea = getattr(f, "evidence_at", None)
        if not ea:
            continue
        t0, t1 = int(ea["t0"]), int(ea["t1"])
        if t1 - t0 < MIN_WINDOW_NS:
            mid = (t0 + t1) // 2
            t0, t1 = mid - MIN_WINDOW_NS // 2, mid + MIN_WINDOW_NS // 2
        t0, t1 = max(t0, lo), min(t1, hi)
        if t1 <= t0:
            continue
        label = f"finding {i + 1}: {f.detector} ({f.severity.upper()})"
        out.append((f"f{i}", label, t0, t1))
    return out


def _span_text(s: float) -> str:
    """A span in seconds as the page's status line writes it."""
    return f"{s:.3f} s" if s >= 1 else f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


# -- what to show ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TimeBase:
    """The time the x axis shows: trace time (``origin_ns`` 0: the timestamps as
    ``trace-cmd report`` prints them) or the time since the trace's start (``origin_ns``
    its first timestamp); the hover shows the other one as well."""

    origin_ns: int
    first_ns: int

    @property
    def since_start(self) -> bool:
        return self.origin_ns != 0

    def x(self, ns) -> np.ndarray:
        """Timestamps (ns) as the axis's seconds."""
        return (np.asarray(ns, np.int64) - self.origin_ns) / 1e9

    @property
    def axis_label(self) -> str:
        if self.since_start:
            return "time since the trace's start (s); hover: the trace time too"
        return "trace time (s), as trace-cmd report prints it; hover: the time since its start too"

    @property
    def other(self) -> tuple[float, str]:
        """(seconds to add to an axis value for the other base, that base's name)."""
        if self.since_start:
            return self.first_ns / 1e9, "trace time"
        return -self.first_ns / 1e9, "since the trace's start"


def time_base(trace, since_start: bool = False) -> TimeBase:
    """The trace's :class:`TimeBase`: trace time, or the time since its start."""
    first = int(trace.model.events.first_ts)
    return TimeBase(first if since_start else 0, first)


@dataclass
class Plan:
    """What one timeline shows (:func:`plan`): timestamps in ns."""

    lo: int
    hi: int
    order: list[int]  # CPUs, top row first
    runs: pd.DataFrame  # every running / waiting / unknown interval (_runs)
    exact: pd.DataFrame  # those the file holds exactly
    everything: bool  # every run is exact
    budget: int  # the most exact runs the file could hold
    windows: list[tuple[str, str, int, int]]  # the named ranges: key, label, t0, t1
    covered: list[tuple[int, int]]  # the spans whose runs are all exact
    detail_span: float  # s: a view this short or shorter draws the exact runs
    edges: np.ndarray  # the overview's bins
    per_bin: np.ndarray  # wake-up migrations per bin
    migrations: int  # wake-up migrations in the whole trace
    moved: pd.DataFrame  # the wake-ups that moved their task, in the exact spans

    @property
    def span_s(self) -> float:
        return (self.hi - self.lo) / 1e9

    @property
    def ypos(self) -> dict[int, int]:
        return {c: i for i, c in enumerate(self.order)}


def plan(trace, findings: Sequence = (), budget: int | None = None) -> Plan:
    """Which runs and wake-up migrations a timeline of ``trace`` holds exactly: all of
    them up to ``budget`` runs (default :data:`EXACT_BUDGET`), else those of the
    findings' evidence windows and of the span where the wake-up migrations are densest
    (one more named range)."""
    budget = EXACT_BUDGET if budget is None else budget
    ev = trace.model.events
    lo, hi = int(ev.first_ts), max(int(ev.last_ts), int(ev.first_ts) + 1)
    order = cpu_order(trace.topology, trace.meta.ncpus)
    runs = _runs(trace)
    wk = trace.wakeups()
    windows = _windows(findings, lo, hi)
    n_runs = len(runs)
    everything = n_runs <= budget
    span_s = (hi - lo) / 1e9
    density = max(n_runs, 1) / span_s  # runs a second, over the trace
    detail_span = min(span_s, DETAIL_RUNS / density)
    moved = wk[wk["migrated"].to_numpy(dtype=bool)] if len(wk) else wk
    mts = moved["ts"].to_numpy(np.int64) if len(moved) else np.zeros(0, np.int64)
    edges = np.linspace(lo, hi, BINS + 1)
    per_bin = np.histogram(mts, bins=edges)[0]
    rs, re_ = runs["start"].to_numpy(), runs["end"].to_numpy()
    left = budget - sum(int(((re_ >= t0) & (rs <= t1)).sum()) for _, _, t0, t1 in windows)
    if not everything and per_bin.any() and left > 0:
        # one more named range with exact runs: where the wake-up migrations are densest,
        # as wide as the budget left holds at the trace's mean density
        mid = int((edges[int(per_bin.argmax())] + edges[int(per_bin.argmax()) + 1]) / 2)
        half = int(min(detail_span, 0.8 * left / density) * 1e9 / 2)
        label = f"densest wake-up migrations ({int(per_bin.max())} in one bin)"
        windows.append(("busy", label, max(lo, mid - half), min(hi, mid + half)))
    covered = [(lo, hi)] if everything else [(t0, t1) for _, _, t0, t1 in windows]
    inside = np.zeros(n_runs, bool)
    in_exact = np.zeros(len(mts), bool)
    for t0, t1 in covered:
        inside |= (re_ >= t0) & (rs <= t1)
        in_exact |= (mts >= t0) & (mts <= t1)
    if inside.sum() > budget:  # (windows that hold more than the budget: the first)
        inside &= np.cumsum(inside) <= budget
    return Plan(
        lo, hi, order, runs, runs[inside], everything, budget, windows, covered,
        detail_span, edges, per_bin, len(mts), moved[in_exact] if len(moved) else moved,
    )  # fmt: skip


def _sources(pl: Plan, base: TimeBase) -> tuple[dict, list[str], list[str]]:
    """The plot's data (times in the axis's seconds; task names and switch-out states
    through lookup tables, to keep the file small): the exact runs and waits, the
    aggregated bins, the wake-up migrations' arrows and the overview's counts; with the
    tables of task names and of states."""
    from bokeh.models import ColumnDataSource

    ypos = pl.ypos
    exact = pl.exact
    y = row_of(exact["cpu"].to_numpy(), ypos)
    wait = exact["waiting"].to_numpy()
    height = np.where(wait, 0.12, 0.6)
    centre = np.where(wait, y + 0.36, y)
    cat = pd.Categorical(exact["comm"]).remove_unused_categories()
    states = pd.Categorical(exact["state_out"]).remove_unused_categories()
    # a run: its switch-out state's code; a wait: -1 after a wake-up, -2 after a preemption
    state = np.where(wait, np.where(exact["woken"].to_numpy(), -1, -2), states.codes)
    start, end = exact["start"].to_numpy(), exact["end"].to_numpy()
    src = {
        "runs": ColumnDataSource(
            {
                "left": base.x(start),
                "right": base.x(np.maximum(end, start + 1)),
                "top": centre - height / 2,
                "bottom": centre + height / 2,
                "cpu": exact["cpu"].to_numpy(),
                "pid": exact["pid"].to_numpy(),
                "task": np.asarray(cat.codes, np.int32),
                "dur": (end - start) / 1e3,
                "state": state.astype(np.int32),
                "colour": np.where(
                    wait,
                    _WAIT_COLOUR,
                    np.where(
                        exact["unknown"].to_numpy(),
                        _UNKNOWN_COLOUR,
                        _colour_of(cat, exact["pid"].to_numpy()),
                    ),
                ),
            }
        )
    }
    agg = _aggregate(pl.runs, pl.order, pl.lo, pl.hi, BINS)
    agg_colour = (
        _colour_of(agg["task"].astype(str), agg["pid"].astype(np.int64))
        if len(agg["left"])
        else np.zeros(0, str)
    )
    src["aggregate"] = ColumnDataSource(
        {
            "left": base.x(agg["left"]),
            "right": base.x(agg["right"]),
            "top": agg["row"] - 0.3,
            "bottom": agg["row"] + 0.3,
            "cpu": agg["cpu"],
            "busy": 100 * agg["busy"],
            "wait": agg["wait"],  # (tasks waiting, on average: more than one at times)
            "n": agg["n"],
            "task": agg["task"].astype(str),
            "pid": agg["pid"],
            "alpha": 0.15 + 0.85 * np.clip(agg["busy"], 0, 1),
            "colour": agg_colour,
        }
    )
    src["arrows"] = ColumnDataSource(_arrows(pl.moved, ypos, base))
    src["counts"] = ColumnDataSource(
        {"left": base.x(pl.edges[:-1]), "right": base.x(pl.edges[1:]), "n": pl.per_bin}
    )
    names = [str(x) or "running at the trace's end" for x in states.categories]
    return src, [str(x) for x in cat.categories], names


def _arrows(mv: pd.DataFrame, ypos: dict, base: TimeBase) -> dict[str, np.ndarray]:
    """The columns of the wake-up migrations' arrows: from the previous CPU's row
    (``y0``) to the chosen one's (``y1``), with what their hover says, and the middle and
    length of each (its hover area)."""
    if not len(mv):
        mv = pd.DataFrame(
            {k: np.zeros(0, np.int64) for k in ("ts", "prev_cpu", "chosen_cpu", "waker_cpu")}
            | {k: np.zeros(0, np.int64) for k in ("waker_pid", "wakee_pid")}
            | {k: np.zeros(0, str) for k in ("waker_comm", "wakee_comm")}
            | {"latency_ns": np.zeros(0)}
        )
    y0 = row_of(mv["prev_cpu"].to_numpy(), ypos)
    y1 = row_of(mv["chosen_cpu"].to_numpy(), ypos)
    ok = ~np.isnan(y0) & ~np.isnan(y1)
    mv, y0, y1 = mv[ok], y0[ok], y1[ok]
    lat = mv["latency_ns"].to_numpy(np.float64, na_value=np.nan) / 1e3

    def who(role: str) -> np.ndarray:
        return (mv[f"{role}_comm"].astype(str) + ":" + mv[f"{role}_pid"].astype(str)).to_numpy()

    return {
        "x": base.x(mv["ts"].to_numpy(np.int64)),
        "y0": y0,
        "y1": y1,
        "mid": (y0 + y1) / 2,
        "len": np.abs(y1 - y0),
        "angle": np.where(y1 > y0, np.pi, 0.0),
        "waker": who("waker"),
        "wakee": who("wakee"),
        "wakee_pid": mv["wakee_pid"].to_numpy(np.int64),
        "prev": mv["prev_cpu"].to_numpy(),
        "chosen": mv["chosen_cpu"].to_numpy(),
        "waker_cpu": mv["waker_cpu"].to_numpy(),
        "lat": np.nan_to_num(lat, nan=-1.0),  # (-1: never seen running: the hover says so)
    }


# -- what the hover says --------------------------------------------------------------------
#: The hover's time: the axis's base, then the other one.
_WHEN_JS = "return value.toFixed(6) + ' s (' + (value + off).toFixed(6) + ' s ' + other + ')'"
#: The wake-to-run latency of an arrow, in words.
_LATENCY_JS = """
if (value < 0) { return 'unknown: the trace does not show the wakee running after it'; }
return value.toLocaleString('en-US', {minimumFractionDigits: 1, maximumFractionDigits: 1})
       + ' µs from the wake-up to its switch-in';
"""
#: What an interval of the exact runs is.
_WHAT_JS = """
if (value === -1) { return 'waiting to run after its wake-up'; }
if (value === -2) { return 'waiting to run after a preemption'; }
const s = names[value];
return s === undefined ? String(value) : s.startsWith('running') ? s
       : 'ran, switched out in state ' + s;
"""


def _hover_tools(base: TimeBase, tasks: list[str], states: list[str], runs, arrows, agg) -> list:
    """The hover tools: of the exact runs and waits, of the arrows (their hover areas)
    and of the aggregated bins."""
    from bokeh.models import CustomJSHover, HoverTool

    off, other = base.other
    when = CustomJSHover(args={"off": off, "other": other}, code=_WHEN_JS)
    task_of = CustomJSHover(args={"names": tasks}, code="return names[value] ?? String(value)")
    what = CustomJSHover(args={"names": states}, code=_WHAT_JS)
    latency = CustomJSHover(code=_LATENCY_JS)
    return [
        HoverTool(
            renderers=runs,
            tooltips=[
                ("task", "@task{custom} (pid @pid)"),
                ("CPU", "@cpu"),
                ("start", "@left{custom}"),
                ("duration", "@dur{0,0.0} µs"),
                ("what", "@state{custom}"),
            ],
            formatters={"@task": task_of, "@state": what, "@left": when},
            description="runs",
        ),
        HoverTool(
            renderers=arrows,
            tooltips=[
                ("wake-up at", "@x{custom}"),
                ("waker", "@waker on CPU @waker_cpu"),
                ("wakee", "@wakee"),
                ("CPU", "previous @prev -> chosen @chosen"),
                ("wake-to-run", "@lat{custom}"),
            ],
            formatters={"@x": when, "@lat": latency},
            description="wake-ups",
        ),
        HoverTool(
            renderers=agg,
            tooltips=[
                ("CPU", "@cpu"),
                ("bin", "@left{0.000000} to @right{0.000000} s"),
                ("busy", "@busy{0.0}%"),
                ("waiting to run", "@wait{0.00} tasks on average"),
                ("runs begun", "@n"),
                ("running at its middle", "@task (pid @pid)"),
            ],
            description="aggregated bins",
        ),
    ]


# -- the figure -----------------------------------------------------------------------------
def _decorate(p, trace, pl: Plan, base: TimeBase, name: str) -> None:
    """The LLCs' bands (every other one shaded, each named) and the named ranges (the
    findings' evidence windows), shaded and labelled."""
    from bokeh.models import FixedTicker
    from bokeh.models.annotations import BoxAnnotation, Label

    ypos = pl.ypos
    p.toolbar.logo = None
    p.yaxis.ticker = FixedTicker(ticks=list(range(len(pl.order))))
    p.yaxis.major_label_overrides = {i: str(c) for i, c in enumerate(pl.order)}
    p.ygrid.grid_line_color = None
    for k, g in enumerate(trace.topology.llc):
        rows_g = sorted(ypos[c] for c in g if c in ypos)
        if not rows_g:
            continue
        p.add_layout(
            BoxAnnotation(
                bottom=rows_g[0] - 0.5,
                top=rows_g[-1] + 0.5,
                fill_color="#4c72b0" if k % 2 else "#dd8452",
                fill_alpha=0.06,
                line_alpha=0,
            )
        )
        if len(trace.topology.llc) > 1:
            p.add_layout(
                Label(
                    x=5,
                    y=rows_g[0] - 0.45,
                    x_units="screen",
                    text=f"LLC {k}",
                    text_font_size="9px",
                    text_color="#555555",
                )
            )
    for k, (key, label, t0, t1) in enumerate(pl.windows):
        p.add_layout(
            BoxAnnotation(
                left=float(base.x(t0)),
                right=float(base.x(t1)),
                fill_color="#ffd54f",
                fill_alpha=0.12,
                line_color="#b38f00",
                line_alpha=0.6,
                name=f"{name}-{key}",
            )
        )
        p.add_layout(
            Label(
                x=float(base.x(t0)),
                y=-0.5,
                text=label,
                text_font_size="9px",
                text_color="#7a6200",
                text_baseline="top",
                x_offset=2,
                y_offset=-11 * (k % 3),  # (neighbouring windows' names one under another)
            )
        )


def arrow_renderers(p, src, view, name: str, colour: str = _ARROW_COLOUR, **kw) -> list:
    """A wake-up migration's arrow: its shaft (``name``), its head and its hover area,
    a box 12 px wide around the shaft (the shaft's own hit test reaches 2 px only); the
    hover area shows when hovered. ``kw``: what the three share (``visible``, ``level``)."""
    seg = p.segment(
        source=src, view=view, x0="x", y0="y0", x1="x", y1="y1", line_color=colour,
        line_width=2, muted_alpha=0.15, name=name, **kw,
    )  # fmt: skip
    head = p.scatter(
        source=src, view=view, x="x", y="y1", marker="triangle", angle="angle", size=8,
        color=colour, muted_alpha=0.15, **kw,
    )  # fmt: skip
    hit = p.rect(
        source=src, view=view, x="x", y="mid", width=12, width_units="screen", height="len",
        fill_alpha=0, line_alpha=0, hover_fill_color=colour, hover_fill_alpha=0.12,
        hover_line_alpha=0, **kw,
    )  # fmt: skip
    return [seg, head, hit]


def _perfetto_hint(trace, pl: Plan) -> str:
    """What to do when the file cannot hold every run: the Perfetto export (every run,
    at any zoom) or a report of a span (HTML)."""
    path = str(trace.meta.path)
    out = f"{Path(path).stem or 'trace'}.pftrace"
    cmd = f"schedwake convert {shlex.quote(path)} --to perfetto -o {shlex.quote(out)}"
    return (
        f"<p class='meta'>This trace has {len(pl.runs):,} runs, more than the "
        f"{pl.budget:,} this page holds exactly: outside the named ranges the timeline is "
        "aggregated at every zoom. To see every run, open the trace in the Perfetto UI "
        f"(ui.perfetto.dev): <code>{_html.escape(cmd)}</code> (docs/perfetto.md: the "
        "findings, wake-ups and flows come along), or write the report of a span: "
        f"<code>schedwake analyze {_html.escape(shlex.quote(path))} --time START,END "
        "--html FILE</code>.</p>"
    )


def _legend() -> str:
    legend = " ".join(
        f"<span style='color:{WAKER_STYLE[c][0]}'>&#9632;</span> {_html.escape(WAKER_STYLE[c][2])}"
        for c in CLASSES
        if c != IDLE
    )
    return legend + (
        f" <span style='color:{_WAIT_COLOUR}'>&#9644;</span> waiting to run"
        f" <span style='color:{_ARROW_COLOUR}'>&#8595;</span> wake-up migration"
        " <span style='color:#b38f00'>&#9633;</span> a finding's evidence window"
    )


#: The level-of-detail switch, run on every change of the x range: exact runs in a span
#: short enough whose runs the file holds, else the aggregate; the status line says which.
_SWITCH_JS = """
const span = xr.end - xr.start;
const inside = covered.some(w => xr.start >= w[0] - 1e-9 && xr.end <= w[1] + 1e-9);
const show = span <= detail && inside;
for (const r of exact) { r.visible = show; }
for (const r of agg) { r.visible = !show; }
const fmt = (s) => s >= 1 ? s.toFixed(3) + ' s' : s >= 1e-3 ? (s * 1e3).toFixed(3) + ' ms'
                                                   : (s * 1e6).toFixed(1) + ' µs';
let text = 'view: ' + fmt(span) + ' from ' + xr.start.toFixed(6) + ' s (' + unit + '); ';
if (show) {
  text += '<b>exact runs and wake-up migrations</b>';
} else if (span <= detail) {
  text += '<b>aggregated</b> (bins of ' + fmt(bin) + '): this file holds ' + held
        + '; zoom into one, or see the note under the plot for every run';
} else {
  text += '<b>aggregated</b> (bins of ' + fmt(bin) + ', colour: the task at the bin\\'s middle, '
        + 'opacity: busy share); zoom below ' + fmt(detail) + ' for the exact runs';
}
status.text = text;
const id = status.name.replace(/-level$/, '');
document.getElementById(id)?.setAttribute('data-level', show ? 'exact' : 'aggregate');
window.schedwakeLink?.(id, xr);
"""


def _controls(pl: Plan, base: TimeBase, x_range, exact: list, agg: list, name: str):
    """The "jump to" menu (the named ranges) and the status line with the level-of-detail
    switch behind it."""
    from bokeh.models import CustomJS
    from bokeh.models.widgets import Div, Select

    options: list[str | tuple[str, str]] = [("all", "whole trace")]
    options += [(k, lab) for k, lab, _, _ in pl.windows]
    select = Select(title="jump to", value="all", options=options, name=f"{name}-jump")
    ranges = {"all": [float(base.x(pl.lo)), float(base.x(pl.hi))]} | {
        k: [float(base.x(t0)), float(base.x(t1))] for k, _, t0, t1 in pl.windows
    }
    select.js_on_change(
        "value",
        CustomJS(
            args={"xr": x_range, "ranges": ranges},
            code="const r = ranges[this.value]; if (r) { xr.setv({start: r[0], end: r[1]}); }",
        ),
    )
    held = (
        "every run of the trace"
        if pl.everything
        else "the exact runs of the findings' evidence windows and of the densest wake-up "
        f"migrations only ({len(pl.runs)} runs in all, more than the {pl.budget} one file holds)"
    )
    status = Div(text="", name=f"{name}-level", width=WIDTH)
    switch = CustomJS(
        args={
            "xr": x_range,
            "exact": exact,
            "agg": agg,
            "status": status,
            "detail": pl.detail_span,
            "covered": [[float(base.x(t0)), float(base.x(t1))] for t0, t1 in pl.covered],
            "bin": pl.span_s / BINS,
            "held": held,
            "unit": "since the trace's start" if base.since_start else "trace time",
        },
        code=_SWITCH_JS,
    )
    x_range.js_on_change("start", switch)
    x_range.js_on_change("end", switch)
    status.text = first_status(pl)
    exact_now = exact_at_first(pl)
    for r in exact:
        r.visible = exact_now
    for r in agg:
        r.visible = not exact_now
    return select, status


def x_extent(pl: Plan, base: TimeBase, extent_s: float | None) -> tuple[float, float, tuple]:
    """The x axis at first (the trace's start and end, in the axis's seconds) and the
    bounds it may pan within: the trace, or ``extent_s`` seconds from its start when
    longer, with a margin of 1% (1 µs at least) on either side."""
    lo, hi = float(base.x(pl.lo)), float(base.x(pl.hi))
    top = max(hi, lo + (extent_s or 0.0))
    pad = max((top - lo) * 0.01, 1e-6)
    return lo, hi, (lo - pad, top + pad)


def exact_at_first(pl: Plan) -> bool:
    """Whether the whole trace is shown with its exact runs at first (a trace short
    enough), rather than aggregated."""
    return pl.detail_span >= pl.span_s


def first_status(pl: Plan) -> str:
    """The status line's first text: as the level-of-detail callback would write it at
    the whole trace."""
    if exact_at_first(pl):
        return (
            f"view: the whole trace ({pl.span_s:.3f} s); <b>exact runs and wake-up migrations</b>"
        )
    return (
        f"view: the whole trace ({pl.span_s:.3f} s); <b>aggregated</b> (bins of "
        f"{_span_text(pl.span_s / BINS)}, colour: the task at the bin's middle, opacity: busy "
        f"share); zoom below {_span_text(pl.detail_span)} for the exact runs"
    )


def fragment_meta(pl: Plan, since_start: bool) -> dict:
    """What the fragment's ``data-timeline`` attribute says of it (for tests and tools
    reading the page): the runs, those held exactly, the wake-up migrations, the spans
    held exactly (ns), the named ranges' keys and the axis's time base."""
    return {
        "runs": len(pl.runs),
        "exact_runs": int(len(pl.exact)),
        "migrations": pl.migrations,
        "exact_windows": [[int(t0), int(t1)] for t0, t1 in pl.covered],
        "ranges": [k for k, _, _, _ in pl.windows],
        "axis": "since_start" if since_start else "trace_time",
    }


def timeline_fragment(
    trace,
    findings: Sequence = (),
    name: str = "timeline",
    since_start: bool = False,
    run: str | None = None,
    budget: int | None = None,
    extent_s: float | None = None,
) -> str:
    """The interactive per-CPU timeline of ``trace`` as an HTML fragment (a ``<div
    id=name>`` and its script; BokehJS comes from :func:`bokeh_resources`, once a page).
    ``findings``: their evidence windows become the named ranges of the "jump to" menu
    (key ``f<i>`` for ``findings[i]``); ``name``: a page-unique id; ``since_start``: the
    axis in seconds since the trace's start (else trace time; the hover gives both);
    ``run``: the trace's name in the title (default: its file's); ``budget``: the most
    exact runs it holds (default :data:`EXACT_BUDGET`); ``extent_s``: the seconds the axis
    may pan over at least (the timelines of a page zoomed together share one extent)."""
    from bokeh.embed import components
    from bokeh.layouts import column, row
    from bokeh.models import CDSView, IndexFilter, Range1d
    from bokeh.models.widgets import Div
    from bokeh.plotting import figure

    from .timeline_task import task_picker

    pl = plan(trace, findings, budget)
    base = time_base(trace, since_start)
    src, tasks, states = _sources(pl, base)
    nrows = len(pl.order)
    lo, hi, bounds = x_extent(pl, base, extent_s)
    # start and end by keyword: bokeh's stub does not declare the positional form
    x_range = Range1d(start=lo, end=hi, bounds=bounds, min_interval=2e-6, name=f"{name}-x")
    p = figure(
        name=f"{name}-plot",
        width=WIDTH,
        height=int(min(110 + 26 * nrows, 900)),
        x_range=x_range,
        y_range=Range1d(start=nrows - 0.5, end=-0.5),
        tools="xpan,xwheel_zoom,xbox_zoom,reset,save",
        active_scroll="xwheel_zoom",
        active_drag="xpan",
        x_axis_label=base.axis_label,
        y_axis_label="CPU (grouped by LLC)",
        output_backend="canvas",
        title=f"{run or trace_name(trace)}: who runs on each CPU "
        "(hover a run or an arrow; wheel: zoom)",
    )
    _decorate(p, trace, pl, base, name)
    # the aggregate, and under it a faint copy that stays (without hover) while a task is
    # picked: the picker filters the aggregate itself out then
    agg_faint = p.quad(
        source=src["aggregate"], left="left", right="right", top="top", bottom="bottom",
        fill_color="colour", fill_alpha=0.08, line_alpha=0,
    )  # fmt: skip
    agg_r = p.quad(
        source=src["aggregate"], view=CDSView(filter=IndexFilter(indices=None)), left="left",
        right="right", top="top", bottom="bottom", fill_color="colour", fill_alpha="alpha",
        line_alpha=0, name=f"{name}-aggregate",
    )  # fmt: skip
    # the runs and arrows of every task but the one picked (all of them: none picked)
    others = CDSView(filter=IndexFilter(indices=None))
    exact_r = p.quad(
        source=src["runs"], view=others, left="left", right="right", top="top",
        bottom="bottom", fill_color="colour", line_color="colour", line_width=0.5,
        muted_alpha=0.15, name=f"{name}-runs",
    )  # fmt: skip
    arrows_others = CDSView(filter=IndexFilter(indices=None))
    arrows = arrow_renderers(p, src["arrows"], arrows_others, f"{name}-arrows")
    hovers = _hover_tools(base, tasks, states, [exact_r], [arrows[2]], [agg_r])
    picker, picked = task_picker(
        p, src, pl, name, [exact_r, *arrows[:2]], arrow_renderers, WIDTH, [agg_r.view.filter]
    )
    hovers[0].renderers = [exact_r, picked["runs"]]
    hovers[1].renderers = [arrows[2], picked["hit"]]
    p.add_tools(*hovers)
    q = _overview(src["counts"], x_range, pl.migrations)
    select, status = _controls(pl, base, x_range, [exact_r, *arrows], [agg_faint, agg_r], name)
    parts = [
        row(select, picker["widgets"], Div(text=f"<p class='meta'>{_legend()}</p>", width=500)),
        status,
        picker["status"],
        p,
        q,
    ]
    if not pl.everything:
        parts.append(Div(text=_perfetto_hint(trace, pl), width=WIDTH, name=f"{name}-more"))
    script, div = components(column(*parts))
    level = "exact" if exact_at_first(pl) else "aggregate"
    meta = dumps(fragment_meta(pl, since_start), indent=None)
    return (
        f"<div id='{_html.escape(name)}' class='schedwake-timeline' data-level='{level}' "
        f"data-timeline='{_html.escape(meta)}'>{div}</div>\n{script}"
    )


def _overview(counts, x_range, migrations: int):
    """Under the rows: the wake-up migrations per time bin, the overview that finds the
    busy episodes (its x range the timeline's)."""
    from bokeh.models import HoverTool
    from bokeh.plotting import figure

    q = figure(
        width=WIDTH,
        height=120,
        x_range=x_range,
        tools="xpan,xwheel_zoom,reset",
        active_scroll="xwheel_zoom",
        y_axis_label="migrations",
        output_backend="canvas",
    )
    q.toolbar.logo = None
    q.quad(
        source=counts, left="left", right="right", top="n", bottom=0,
        fill_color=_ARROW_COLOUR, line_alpha=0,
    )  # fmt: skip
    q.add_tools(HoverTool(tooltips=[("from", "@left{0.000000} s"), ("wake-up migrations", "@n")]))
    q.xaxis.axis_label = f"wake-up migrations per bin ({migrations} in all)"
    return q
