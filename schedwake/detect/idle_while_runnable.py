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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

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
    return np.isin(model.events.key(pid, occ["start_ts"].to_numpy()), pinned)


def gap_segments(
    model: Model, th: Thresholds, pinned: np.ndarray | None = None
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Per LLC (with >= 2 CPUs): arrays (start, end) of the gap segments. ``pinned``:
    the pinned tasks (:func:`pinned_pids`) when judged elsewhere (over a whole trace,
    for a time part of it)."""
    occ = model.occupancy
    topo = model.topology
    if pinned is None:
        pinned = pinned_pids(model, int(th["iwr_pinned_min_runs"]))
    # columns as arrays, filtered by masks: no copies of the occupancy table's rows
    state, ocpu = occ["state"], occ["cpu"].to_numpy()
    ostart, oend = occ["start_ts"].to_numpy(), occ["end_ts"].to_numpy()
    isel = (state == "idle").to_numpy()
    icpu, istart, iend = ocpu[isel], ostart[isel], oend[isel]
    # where the trace does not show a CPU's state (a missing switch, lost events), it is
    # neither idle nor busy: a wait there is no gap (docs/semantics.md)
    usel = (state == "unknown").to_numpy()
    unknown = (ocpu[usel], ostart[usel], oend[usel])
    wsel = np.flatnonzero(((state == "waiting") & (occ["reason"] == "wakeup")).to_numpy())
    del isel, usel, state
    wsel = wsel[~is_pinned(model, occ.iloc[wsel], pinned)]
    # before a CPU's first sched_switch its state is unknown: no wait counts there
    first = model.first_switch_ts
    fs = np.array(
        [first.get(int(c), np.iinfo(np.int64).max) for c in range(topo.cpus)]
        + [np.iinfo(np.int64).max],
        dtype=np.int64,
    )
    wcpu = ocpu[wsel]
    start = np.maximum(
        ostart[wsel], fs[np.where((wcpu >= 0) & (wcpu < topo.cpus), wcpu, topo.cpus)]
    )
    wend = oend[wsel]
    del wsel
    keep = wend > start
    wcpu, start, wend = wcpu[keep], start[keep], wend[keep]
    del keep
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for li, group in enumerate(topo.llc):
        if len(group) < 2:
            continue
        out[li] = llc_gap_segments(group, icpu, istart, iend, wcpu, start, wend, unknown)
    return out, pinned


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


def _side_by_side(
    model: Model, longest: tuple[int, int, int], pinned: np.ndarray
) -> LongestGap | None:
    """The two sides of the longest gap at its start: the LLC's idle CPUs, and each task
    waiting after a wake-up on another CPU of it, with the task running there (what it
    waits behind); None when the occupancy does not show both."""
    li, t, dt = longest
    occ = model.occupancy
    cpus = list(model.topology.llc[li])
    at = (
        (occ["start_ts"].to_numpy() <= t)
        & (occ["end_ts"].to_numpy() > t)
        & np.isin(occ["cpu"].to_numpy(), cpus)
    )
    now = occ[at]
    idle = sorted(int(c) for c in now.loc[now["state"] == "idle", "cpu"])
    running = now[now["state"] == "running"].set_index("cpu")
    waits = now[
        (now["state"] == "waiting") & (now["reason"] == "wakeup") & ~is_pinned(model, now, pinned)
    ]
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


def detect(trace: Trace, model: Model, th: Thresholds) -> list[Finding]:
    m = measure(model, th)
    if not m["segments"]:
        return []
    if not (
        m["share"] >= th["iwr_min_share"] and m["idle_while_runnable_s"] >= th["iwr_min_seconds"]
    ):
        return []
    per_llc: list[dict[str, MetricValue]] = []
    longest: tuple[int, int, int] | None = None
    for li, (s, e) in m["segments"].items():
        dt = e - s
        per_llc.append(
            {
                "llc": li,
                "cpus": model.topology.llc[li],
                "idle_while_runnable_s": round(float(dt.sum()) / 1e9, 6),
                "segments": int(len(dt)),
            }
        )
        if len(dt):
            k = int(np.argmax(dt))
            if longest is None or dt[k] > longest[2]:
                longest = (li, int(s[k]), int(dt[k]))
    wait = model.occupancy
    wait = wait[
        (wait["state"] == "waiting")
        & (wait["reason"] == "wakeup")
        & ~is_pinned(model, wait, m["pinned"])
    ]
    tw = (
        wait.assign(d=wait["end_ts"] - wait["start_ts"], c=wait["comm"].astype(str))
        .groupby("c")["d"]
        .sum()
        .sort_values(ascending=False)
        .head(5)
    )
    top = [{"comm": k, "waited_s": round(float(v) / 1e9, 6)} for k, v in tw.items()]
    metrics: FindingMetrics = {
        "idle_while_runnable_s": round(m["idle_while_runnable_s"], 6),
        "idle_while_runnable_ns": int(m["idle_while_runnable_ns"]),
        "share": round(m["share"], 6),
        "llcs": per_llc,
        "pinned_tasks_excluded": int(len(m["pinned"])),
        "longest_gap_us": round(longest[2] / 1e3, 1) if longest else 0.0,
    }
    side = _side_by_side(model, longest, m["pinned"]) if longest else None
    if side:
        metrics["longest_gap"] = side
    sev = (
        "high"
        if m["share"] >= th["iwr_high_share"]
        else ("medium" if m["share"] >= 2 * th["iwr_min_share"] else "low")
    )
    title = (
        f"a CPU sat idle while a woken task waited on another CPU of its LLC for "
        f"{m['idle_while_runnable_s'] * 1e3:.1f} ms ({100 * m['share']:.1f}% of the time)"
    )
    ev: EvidenceAt | None = None
    if longest:
        li, t, dt = longest
        waiting = side["waiting"] if side else []
        pids = [p for x in waiting for p in (x["pid"], x["behind_pid"]) if p is not None]
        cpus = (side["idle_cpus"] if side else []) + [x["cpu"] for x in waiting]
        ev = {
            "t0": t - 20_000,
            "t1": t + min(dt, 200_000) + 10_000,
            "cpus": sorted(set(cpus)) or list(model.topology.llc[li]),
            "pids": pids,
            "focus_ts": t,
        }
    return [Finding(NAME, sev, title, metrics, top, evidence_at=ev)]
