"""Idle while runnable: the work-conservation gap (docs/detectors.md,
'idle_while_runnable').

Time during which a CPU of an LLC is idle while a woken task waits runnable on another,
busy CPU of the same LLC. From the occupancy table: idle intervals, and the waits of
woken tasks from ``sched_wakeup`` to their switch-in (a task waiting on a CPU that is
itself still idle is only waiting for that CPU to leave idle: not a gap). Where a CPU's
state is unknown (before its first ``sched_switch``; a missing switch or lost events:
docs/semantics.md, 'Incomplete traces') it is neither idle nor busy, and nothing is
counted there.

Affinity is not in the trace, so tasks that cannot move are left out: per-CPU kthreads
(by name), and tasks seen running on one CPU only over at least
``iwr_pinned_min_runs`` runs (treated as pinned, e.g. ``taskset``).

``share`` = gap time / (trace duration x number of LLCs with two or more CPUs).

In stages, which a whole trace and its time parts both run through
(:mod:`schedwake.analysis.part_findings`): given the pinned tasks (:func:`pinned_pids`;
of a trace's parts, :func:`schedwake.model.visits.pinned_of`), the :class:`GapInputs` of a
model (a part's: its intervals that reach its span, the waits it owns) give the gap
segments (:func:`segments_of`), summed per LLC inside a span (:func:`summarize`, which
keeps the segments the span's ends cut) and joined over the spans (:func:`joined_gaps`:
the gap, its segments and the longest); :func:`judge` judges once, with the ns waited
per task name (:func:`top_waits`, they add up) and the two sides of the longest gap
(:func:`side_by_side`: the waits at its start, :func:`waits_at`, the CPUs idle and
running there, :func:`cpus_at`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..model import cat_mask, key_groups, member
from ..model.memo import IwrMeasure
from ..model.tasks import kthread_cpu
from ._iwr import llc_gap_segments, single_cpu_pids
from .base import (
    EvidenceAt,
    Finding,
    FindingMetrics,
    LongestGap,
    MetricValue,
    Shown,
    Threshold,
    Thresholds,
    WaitingTask,
)

if TYPE_CHECKING:
    from ..model import Model
    from ..trace import Trace

NAME = "idle_while_runnable"
#: The events it cannot judge without, one of each group (base.Detector.EVENTS).
EVENTS: tuple[tuple[str, ...], ...] = (("sched_waking", "sched_wakeup"), ("sched_switch",))

THRESHOLDS: tuple[Threshold, ...] = (
    Threshold(
        "iwr_min_share",
        0.05,
        "fraction",
        "lowest share of the trace's LLC time with the gap, for a finding",
    ),
    Threshold("iwr_min_seconds", 0.01, "s", "least gap time for a finding", slice_floor=0.001),
    Threshold("iwr_high_share", 0.25, "fraction", "share from which the finding is high"),
    Threshold(
        "iwr_pinned_min_runs",
        20,
        "runs",
        "a task seen on one CPU only over at least this many runs counts as pinned",
    ),
)

#: How reports show its findings (base.Detector.SHOWN): the longest gap in a sentence.
SHOWN = Shown(
    key_metrics=("idle_while_runnable_s", "share", "longest_gap_us", "pinned_tasks_excluded"),
    top_weight="waited_s",
    gap="longest_gap",
)


def pinned_pids(model: Model, min_runs: int) -> np.ndarray:
    """The tasks (life keys: :mod:`schedwake.model.lives`, the pids but for a later task
    of a pid used again) pinned to a CPU: seen on one only over ``min_runs`` runs, or
    named as a per-CPU kthread."""
    s = model.events.switch
    if s is None or len(s) == 0:
        return np.zeros(0, dtype=np.int64)
    task = model.events.key(s["next_pid"].to_numpy(), s["ts"].to_numpy())
    pinned = single_cpu_pids(task, s["cpu"].to_numpy(), min_runs)
    names = pd.DataFrame({"pid": task, "comm": s["next_comm"].array})
    cats = names["comm"].cat.categories
    kcat = np.array([kthread_cpu(str(c)) >= 0 for c in cats] + [False])
    codes = names["comm"].cat.codes.to_numpy()
    kpids = np.unique(names["pid"].to_numpy()[kcat[np.where(codes < 0, len(kcat) - 1, codes)]])
    return np.union1d(pinned, kpids).astype(np.int64)


def is_pinned(model: Model, occ: pd.DataFrame, pinned: np.ndarray) -> np.ndarray:
    """Per occupancy row, whether its task is one of ``pinned`` (:func:`pinned_pids`)."""
    pid = occ["pid"].to_numpy()
    return member(model.events.key(pid, occ["start_ts"].to_numpy()), pinned)


@dataclass
class GapInputs:
    """What the gap is counted from: a model's idle and unknown intervals and its woken
    tasks' waits (of a time part's model, those that reach its span ``[t0, t1)``, ends
    included, and the waits it owns), its CPUs' first switches and its LLCs."""

    t0: int | None
    t1: int | None
    llc: list[list[int]]
    #: Per CPU its first ``sched_switch`` (and one more: none), before which no wait
    #: counts.
    first: np.ndarray
    #: (cpu, start, end) of the idle and the unknown intervals.
    idle: tuple[np.ndarray, np.ndarray, np.ndarray]
    unknown: tuple[np.ndarray, np.ndarray, np.ndarray]
    #: The waits after a wake-up: cpu, start_ts, end_ts, pid, task (its life key),
    #: comm, ``owned`` (the model's own rows: a part's), ``order`` (their wake-ups'
    #: order: the waking's time).
    waits: pd.DataFrame


def gap_inputs(
    model: Model, t0: int | None = None, t1: int | None = None, owned: np.ndarray | None = None
) -> GapInputs:
    """The :class:`GapInputs` of ``model`` (of the span ``[t0, t1)``, None: open;
    ``owned``: a mask of the occupancy rows the model owns, None: all)."""
    occ = model.occupancy
    topo = model.topology
    # columns as arrays, filtered by masks: no copies of the occupancy table's rows
    ocpu = occ["cpu"].to_numpy()
    ostart, oend = occ["start_ts"].to_numpy(), occ["end_ts"].to_numpy()
    span: np.ndarray | None = None  # (None: every row)
    if t0 is not None:
        span = oend >= t0
    if t1 is not None:
        span = ostart <= t1 if span is None else span & (ostart <= t1)
    isel = _is(occ["state"], "idle", span)
    # where the trace does not show a CPU's state (a missing switch, lost events), it is
    # neither idle nor busy: a wait there is no gap (docs/semantics.md)
    usel = _is(occ["state"], "unknown", span)
    woken = _is(occ["state"], "waiting") & _is(occ["reason"], "wakeup")
    order = _wait_order(model, woken, ostart)
    wsel = np.flatnonzero(woken)
    if span is not None and owned is not None:  # (a part's: in its span, or its own)
        kept = (span | owned)[wsel]
        wsel, order = wsel[kept], order[kept]
    owns = np.ones(len(wsel), dtype=bool) if owned is None else owned[wsel]
    pid = occ["pid"].to_numpy()[wsel]
    waits = pd.DataFrame(
        {
            "cpu": ocpu[wsel],
            "start_ts": ostart[wsel],
            "end_ts": oend[wsel],
            "pid": pid,
            "task": model.events.key(pid, ostart[wsel]),
            "comm": occ["comm"].array[wsel],
            "owned": owns,
            "order": order,  # (each wait's rank among the woken)
        },
        copy=False,  # (fresh arrays: not copied into 2-D blocks)
    )
    # before a CPU's first sched_switch its state is unknown: no wait counts there
    first = model.first_switch_ts
    fs = np.array(
        [first.get(int(c), np.iinfo(np.int64).max) for c in range(topo.cpus)]
        + [np.iinfo(np.int64).max],
        dtype=np.int64,
    )
    return GapInputs(
        t0,
        t1,
        [list(g) for g in topo.llc],
        fs,
        (ocpu[isel], ostart[isel], oend[isel]),
        (ocpu[usel], ostart[usel], oend[usel]),
        waits,
    )


def _is(column: pd.Series, value: str, rows: np.ndarray | None = None) -> np.ndarray:
    """Per row of a categorical ``column``, whether it is ``value`` (and a row of
    ``rows``, a mask; None: all): its code compared, not its name (:func:`cat_mask`)."""
    out = cat_mask(column.array, lambda c: c == value)
    return out if rows is None else out & rows


def _wait_order(model: Model, woken: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per wait after a wake-up (in the occupancy's order), its wake-up's time (the
    occupancy holds them in the wake-ups' order; the waits another part gives a time
    part's model, after them, never its own: their start); their row numbers (as an
    order of one model's rows only) where the table is focused on some tasks."""
    w = model.wakeups
    n = int(woken.sum())
    ran = (w["run_ts"].notna() | w["left_slice"]).to_numpy() if len(w) else np.zeros(0, bool)
    own = int(ran.sum())
    if model.pids is not None or own > n:  # (--pid: the waits of the tasks only)
        return np.flatnonzero(woken).astype(np.int64)
    return np.concatenate(
        [w["ts"].to_numpy(dtype=np.int64)[ran], start[woken][own:].astype(np.int64)]
    )


def segments_of(inputs: GapInputs, pinned: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per LLC (with >= 2 CPUs): arrays (start, end) of the gap segments of ``inputs``,
    the waits of the ``pinned`` tasks left out."""
    w = inputs.waits
    # the three columns the sweep needs, filtered once (not the frame's eight)
    keep = ~member(w["task"].to_numpy(), pinned)
    cpus = len(inputs.first) - 1
    wcpu = w["cpu"].to_numpy()
    start = np.maximum(
        w["start_ts"].to_numpy(),
        inputs.first[np.where((wcpu >= 0) & (wcpu < cpus), wcpu, cpus)],
    )
    wend = w["end_ts"].to_numpy()
    keep &= wend > start
    wcpu, start, wend = wcpu[keep], start[keep], wend[keep]
    icpu, istart, iend = inputs.idle
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for li, group in enumerate(inputs.llc):
        if len(group) < 2:
            continue
        out[li] = llc_gap_segments(group, icpu, istart, iend, wcpu, start, wend, inputs.unknown)
    return out


def gap_segments(
    model: Model, th: Thresholds, pinned: np.ndarray | None = None
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Per LLC (with >= 2 CPUs): arrays (start, end) of the gap segments. ``pinned``:
    the pinned tasks (:func:`pinned_pids`) when judged elsewhere (over a whole trace,
    for a time part of it)."""
    if pinned is None:
        pinned = pinned_pids(model, int(th["iwr_pinned_min_runs"]))
    return segments_of(gap_inputs(model), pinned), pinned


@dataclass(frozen=True)
class LlcGap:
    """The gap segments of one LLC inside a span ``[t0, t1)`` (each cut to it): their
    ns and count; the first when the span's start cuts it (``head``: start, end), the
    last when the span's end does (``tail``; ``through``: the one segment, cut at both
    ends), and the longest of the others (``best``: start, ns; of as long, the first)."""

    ns: int
    n: int
    head: tuple[int, int] | None
    tail: tuple[int, int] | None
    through: bool
    best: tuple[int, int] | None


def summarize(
    segments: dict[int, tuple[np.ndarray, np.ndarray]], t0: int | None, t1: int | None
) -> dict[int, LlcGap]:
    """The :class:`LlcGap` of each LLC's ``segments`` (of :func:`segments_of`) inside
    ``[t0, t1)`` (None: open): what :func:`joined_gaps` joins over the spans."""
    lo = np.iinfo(np.int64).min if t0 is None else t0
    hi = np.iinfo(np.int64).max if t1 is None else t1
    out = {}
    for li, (s, e) in segments.items():
        cs, ce = np.maximum(s, lo), np.minimum(e, hi)
        keep = ce > cs
        s, e, cs, ce = s[keep], e[keep], cs[keep], ce[keep]
        n = len(s)
        head = (int(cs[0]), int(ce[0])) if n and s[0] < lo else None
        tail = (int(cs[-1]), int(ce[-1])) if n and e[-1] > hi else None
        inner = np.ones(n, dtype=bool)
        if head is not None:
            inner[0] = False
        if tail is not None:
            inner[-1] = False
        dt = (ce - cs)[inner]
        k = int(np.argmax(dt)) if len(dt) else -1
        out[li] = LlcGap(
            int((ce - cs).sum()),
            n,
            head,
            tail,
            n == 1 and head is not None and tail is not None,
            (int(cs[inner][k]), int(dt[k])) if k >= 0 else None,
        )
    return out


def joined_gaps(
    spans: Sequence[dict[int, LlcGap]],
) -> tuple[dict[int, tuple[int, int]], tuple[int, int, int] | None]:
    """Of :func:`summarize` of consecutive spans (in time order; of the whole trace,
    one): per LLC its gap ns and segments, a segment a span boundary cuts joined
    again; and the longest segment (LLC, start, ns; of as long, the first LLC's, in it
    the first)."""
    per: dict[int, tuple[int, int]] = {}
    longest: tuple[int, int, int] | None = None
    for li in spans[0]:
        ns = n = 0
        cands: list[tuple[int, int]] = []
        carried: tuple[int, int] | None = None  # (start, ns so far) of a cut segment
        for span in spans:
            g = span[li]
            ns, n = ns + g.ns, n + g.n
            if g.head is not None:
                piece = g.head[1] - g.head[0]
                if carried is not None:
                    n -= 1
                    carried = (carried[0], carried[1] + piece)
                else:
                    carried = (g.head[0], piece)
                if g.through:
                    continue
                cands.append(carried)
                carried = None
            elif carried is not None:
                cands.append(carried)
                carried = None
            if g.best is not None:
                cands.append(g.best)
            if g.tail is not None:
                carried = (g.tail[0], g.tail[1] - g.tail[0])
        if carried is not None:
            cands.append(carried)
        per[li] = (ns, n)
        if cands:
            start, dt = min(cands, key=lambda c: (-c[1], c[0]))
            if longest is None or dt > longest[2]:
                longest = (li, start, dt)
    return per, longest


def top_waits(inputs: GapInputs, pinned: np.ndarray) -> pd.Series:
    """Per task name, the ns its owned waits after a wake-up (of the tasks not
    ``pinned``) last (they add up: :func:`judge` ranks them)."""
    w = inputs.waits
    keep = w["owned"].to_numpy() & ~member(w["task"].to_numpy(), pinned)
    d = w["end_ts"].to_numpy(dtype=np.int64)[keep] - w["start_ts"].to_numpy(dtype=np.int64)[keep]
    comm = w["comm"].array
    if not isinstance(comm, pd.Categorical):
        return pd.Series(d).groupby(w["comm"].astype(str).to_numpy()[keep]).sum()
    # summed by the names' codes (exact int64 sums, no string a wait), then by name: a
    # missing name is "nan", as its text
    names = np.array([*map(str, comm.categories), "nan"], dtype=object)
    codes = np.asarray(comm.codes)[keep].astype(np.int64)
    codes[codes < 0] = len(names) - 1
    (used,), _, ns = key_groups([codes], d)
    return pd.Series(ns, index=names[used], dtype=np.int64).groupby(level=0).sum()


def waits_at(inputs: GapInputs, pinned: np.ndarray, t: int, cpus: list[int]) -> pd.DataFrame:
    """The owned waits after a wake-up at the time ``t`` on ``cpus`` (of the tasks not
    ``pinned``)."""
    w = inputs.waits
    at = (
        w["owned"].to_numpy()
        & (w["start_ts"].to_numpy() <= t)
        & (w["end_ts"].to_numpy() > t)
        & np.isin(w["cpu"].to_numpy(), cpus)
    )
    at &= ~member(w["task"].to_numpy(), pinned)
    return w[at]


def cpus_at(occ: pd.DataFrame, t: int, cpus: list[int]) -> tuple[list[int], pd.DataFrame]:
    """Of the occupancy ``occ`` at the time ``t``, on ``cpus``: the idle CPUs, and the
    rows running (index cpu)."""
    at = (
        (occ["start_ts"].to_numpy() <= t)
        & (occ["end_ts"].to_numpy() > t)
        & np.isin(occ["cpu"].to_numpy(), cpus)
    )
    now = occ[at]
    idle = sorted(int(c) for c in now.loc[now["state"] == "idle", "cpu"])
    return idle, now[now["state"] == "running"].set_index("cpu")[["pid", "comm"]]


def measure(model: Model, th: Thresholds) -> IwrMeasure:
    # once per model and pinned-task threshold: the detector and the metrics both ask
    memo = model.memo.idle_while_runnable
    key = int(th["iwr_pinned_min_runs"])
    if key in memo:
        return memo[key].copy()
    segs, pinned = gap_segments(model, th)
    total = int(sum(int((e - s).sum()) for s, e in segs.values()))
    n_llc = max(len(segs), 1)
    dur = max(model.duration_ns, 1)
    out: IwrMeasure = {
        "idle_while_runnable_ns": total,
        "idle_while_runnable_s": total / 1e9,
        "share": total / (dur * n_llc) if segs else 0.0,
        "segments": segs,
        "pinned": pinned,
    }
    memo[key] = out
    return out.copy()


def side_by_side(
    t: int, dt: int, idle: list[int], running: pd.DataFrame, waits: pd.DataFrame
) -> LongestGap | None:
    """The two sides of the longest gap (``dt`` ns) at its start ``t``: the LLC's
    ``idle`` CPUs, and each task waiting after a wake-up on another CPU of it
    (``waits``, in their wake-ups' order), with the task ``running`` there (what it
    waits behind); None when the occupancy does not show both."""
    waiting: list[WaitingTask] = []
    for r in waits.itertuples(index=False):  # a handful of rows: the tasks waiting at t
        behind = running.loc[r.cpu] if r.cpu in running.index else None
        waiting.append(
            {
                "pid": int(r.pid),
                "comm": str(r.comm),
                "cpu": int(r.cpu),
                "waited_us": round((int(r.end_ts) - int(r.start_ts)) / 1e3, 1),
                "behind_pid": None if behind is None else int(behind["pid"]),
                "behind_comm": None if behind is None else str(behind["comm"]),
            }
        )
    if not idle or not waiting:
        return None
    return {
        "at": round(t / 1e9, 6),
        "us": round(dt / 1e3, 1),
        "idle_cpus": idle,
        "waiting": waiting,
    }


def ordered(waits: pd.DataFrame) -> pd.DataFrame:
    """Waits (of :func:`waits_at`, of one model or several parts' in time order) in
    their wake-ups' order."""
    return waits.iloc[np.argsort(waits["order"].to_numpy(), kind="stable")]


def detect(trace: Trace, model: Model, th: Thresholds) -> list[Finding]:
    m = measure(model, th)
    if not m["segments"]:
        return []
    pinned = m["pinned"]
    per, longest = joined_gaps([summarize(m["segments"], None, None)])
    inputs: list[GapInputs] = []

    def _inputs() -> GapInputs:
        if not inputs:
            inputs.append(gap_inputs(model))
        return inputs[0]

    def side(li: int, t: int, dt: int) -> LongestGap | None:
        cpus = list(model.topology.llc[li])
        idle, running = cpus_at(model.occupancy, t, cpus)
        return side_by_side(t, dt, idle, running, ordered(waits_at(_inputs(), pinned, t, cpus)))

    return judge(
        per,
        longest,
        model.topology.llc,
        model.duration_ns,
        len(pinned),
        th,
        lambda: top_waits(_inputs(), pinned),
        side,
    )


def judge(
    per: dict[int, tuple[int, int]],
    longest: tuple[int, int, int] | None,
    llc: Sequence[Sequence[int]],
    duration_ns: int,
    pinned: int,
    th: Thresholds,
    top_waits: Callable[[], pd.Series],
    side: Callable[[int, int, int], LongestGap | None],
) -> list[Finding]:
    """The finding of the gap :func:`joined_gaps` gives (``per``: ns and segments per
    LLC of two CPUs or more, and the longest segment), judged once; ``pinned`` tasks
    were left out; ``top_waits()`` gives the ns waited per task name
    (:func:`top_waits`, of the whole trace or its parts added up) and ``side(llc, t,
    ns)`` the two sides of the longest gap (:func:`side_by_side`), found where the
    trace is."""
    if not per:
        return []
    total = sum(ns for ns, _ in per.values())
    share = total / (max(duration_ns, 1) * len(per))
    if not (share >= th["iwr_min_share"] and total / 1e9 >= th["iwr_min_seconds"]):
        return []
    per_llc: list[dict[str, MetricValue]] = [
        {
            "llc": li,
            "cpus": llc[li],
            "idle_while_runnable_s": round(float(ns) / 1e9, 6),
            "segments": int(n),
        }
        for li, (ns, n) in per.items()
    ]
    tw = top_waits().sort_values(ascending=False).head(5)
    top = [{"comm": k, "waited_s": round(float(v) / 1e9, 6)} for k, v in tw.items()]
    metrics: FindingMetrics = {
        "idle_while_runnable_s": round(total / 1e9, 6),
        "idle_while_runnable_ns": int(total),
        "share": round(share, 6),
        "llcs": per_llc,
        "pinned_tasks_excluded": int(pinned),
        "longest_gap_us": round(longest[2] / 1e3, 1) if longest else 0.0,
    }
    gap = side(*longest) if longest else None
    if gap:
        metrics["longest_gap"] = gap
    sev = (
        "high"
        if share >= th["iwr_high_share"]
        else ("medium" if share >= 2 * th["iwr_min_share"] else "low")
    )
    title = (
        f"a CPU sat idle while a woken task waited on another CPU of its LLC for "
        f"{total / 1e9 * 1e3:.1f} ms ({100 * share:.1f}% of the time)"
    )
    ev: EvidenceAt | None = None
    if longest:
        li, t, dt = longest
        waiting = gap["waiting"] if gap else []
        pids = [p for x in waiting for p in (x["pid"], x["behind_pid"]) if p is not None]
        cpus = (gap["idle_cpus"] if gap else []) + [x["cpu"] for x in waiting]
        ev = {
            "t0": t - 20_000,
            "t1": t + min(dt, 200_000) + 10_000,
            "cpus": sorted(set(cpus)) or list(llc[li]),
            "pids": pids,
            "focus_ts": t,
        }
    return [Finding(NAME, sev, title, metrics, top, evidence_at=ev)]
