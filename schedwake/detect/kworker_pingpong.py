"""kworker wake-migrate ping-pong (docs/detectors.md, 'kworker_pingpong').

An *episode* is a wake-up where

* the waker is a per-CPU kthread (bound ``kworker/N:M``, ``ksoftirqd/N``, ...) in task
  context (not hardirq/softirq: then the interrupt is the waker, not the kthread),
* running on CPU X, and the wakee's previous CPU is X,
* and the wakee is migrated away from X during that wake-up (a ``sched_migrate_task``
  of the wake-up).

``would_stack``: episodes that the "stack on the waker's CPU" clause of
select_idle_sibling() (per-CPU kthread waker, prev == this CPU, nr_running <= 1) would
have kept on X: nothing but the waker was runnable on X at that moment (no task
waiting on X in the occupancy table). The others are broken down by reason.

The verdict is judged by shares, which do not depend on how fast the machine runs
(docs/detectors.md): the share of all wake-ups that are episodes, and the *eligible
share*, the share of the per-CPU kthreads' wake-ups of a task whose previous CPU is the
kthread's own that moved the task away (near 1 on a kernel without the stacking clause,
a few % with it; a fifth or more is judged). Wake-ups by the stopper threads
``migration/N`` count as episodes but are not judged: they move a task because its
affinity changed, not to place a wake-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..model.masks import episodes_mask, pingpong_at_episodes, stopper_mask
from .base import Finding, FindingMetrics, Flows, Shown, Threshold, Thresholds, counts

if TYPE_CHECKING:
    from ..model import Model
    from ..model.events import Events
    from ..trace import Trace

NAME = "kworker_pingpong"
#: The events it cannot judge without, one of each group (base.Detector.EVENTS).
EVENTS: tuple[tuple[str, ...], ...] = (("sched_waking", "sched_wakeup"),)

THRESHOLDS: tuple[Threshold, ...] = (
    Threshold(
        "pingpong_min_episodes",
        20,
        "episodes",
        "fewest episodes in the trace for a finding",
        slice_floor=3,
    ),
    Threshold(
        "pingpong_min_share",
        0.005,
        "fraction",
        "lowest share of all wake-ups that are episodes, for a finding",
    ),
    Threshold(
        "pingpong_min_eligible_share",
        0.2,
        "fraction",
        "lowest share of the per-CPU kthreads' wake-ups of a task on its own previous CPU "
        "that moved the task away, for a finding",
    ),
    Threshold(
        "pingpong_medium_share",
        0.01,
        "fraction",
        "share of all wake-ups from which the finding is medium",
    ),
    Threshold(
        "pingpong_high_share",
        0.10,
        "fraction",
        "share of all wake-ups from which the finding is high",
    ),
    Threshold(
        "pingpong_high_eligible_share",
        0.9,
        "fraction",
        "eligible share from which the finding is high",
    ),
)


def _episode_wakeups(model: Model) -> pd.DataFrame:
    """The wake-ups of the ping-pong episodes that ran (the flows of a trace export)."""
    w = model.wakeups
    ep = w[episodes_mask(w)] if len(w) else w
    return ep[ep["run_ts"].notna().to_numpy()]


#: How reports show its findings (base.Detector.SHOWN); the export draws each wake-up
#: of an episode as a flow.
SHOWN = Shown(
    key_metrics=(
        "episodes",
        "episodes_per_s",
        "share_of_wakeups",
        "would_stack",
        "would_not_stack",
        "migrated_share_of_those",
    ),
    top_weight="episodes",
    flows=Flows(rows=_episode_wakeups, track="ping-pong wake-ups"),
)


def detect(trace: Trace, model: Model, th: Thresholds) -> list[Finding]:
    w = model.wakeups
    dur_s = max(model.duration_ns, 1) / 1e9
    mask = episodes_mask(w)
    ep = w[mask]
    n = int(mask.sum())
    total = len(w)
    share = n / total if total else 0.0
    rate = n / dur_s
    # would-stack judgement
    _, others, known = pingpong_at_episodes(model)
    stack = known & (others == 0)
    reasons = {
        "other_tasks_runnable_on_waker_cpu": int((known & (others > 0)).sum()),
        "occupancy_unknown_before_first_switch": int((~known).sum()),
    }
    eligible = (
        (w["waker_class"] == "percpu_kthread")
        & (w["waker_context"] == "task")
        & (w["waker_cpu"] == w["prev_cpu"])
    ).to_numpy()
    # judged without the stopper threads' affinity moves
    stopper = stopper_mask(w["waker_comm"]) if len(w) else np.zeros(0, dtype=bool)
    judged = int((mask & ~stopper).sum())
    judged_eligible = int((eligible & ~stopper).sum())
    eligible_share = judged / judged_eligible if judged_eligible else 0.0
    metrics: FindingMetrics = {
        "episodes": n,
        "episodes_per_s": round(rate, 3),
        "share_of_wakeups": round(share, 6),
        "wakeups": total,
        "percpu_kthread_wakeups_prev_here": int(eligible.sum()),
        "migrated_share_of_those": round(n / eligible.sum(), 6) if eligible.sum() else 0.0,
        "eligible_share": round(eligible_share, 6),
        "by_stopper_threads": n - judged,
        "would_stack": int(stack.sum()),
        "would_not_stack": reasons,
        "other_runnable_when_not_stacked": _hist(others[known & (others > 0)]),
        "by_migration_class": {
            str(k): int(v) for k, v in ep["migration_class"].value_counts().items() if v
        },
    }
    judged_share = judged / total if total else 0.0
    if not (
        judged > 0  # (a minimum of 0 episodes is a minimum of 1: nothing to show otherwise)
        and judged >= th["pingpong_min_episodes"]
        and judged_share >= th["pingpong_min_share"]
        and eligible_share >= th["pingpong_min_eligible_share"]
    ):
        return []
    if (
        judged_share >= th["pingpong_high_share"]
        or eligible_share >= th["pingpong_high_eligible_share"]
    ):
        sev = "high"
    elif judged_share >= th["pingpong_medium_share"]:
        sev = "medium"
    else:
        sev = "low"
    top = []
    grp = (
        ep.assign(
            wf=ep["work_function"].astype("string").fillna("(unknown)"),
            wk=ep["waker_comm"].astype(str),
            wc=ep["wakee_comm"].astype(str),
            st=stack,
        )
        .groupby(["wk", "wf", "wc"], observed=True)
        .agg(episodes=("ts", "size"), would_stack=("st", "sum"))
        .sort_values("episodes", ascending=False)
        .head(8)
    )
    for (wk, wf, wc), row in grp.iterrows():
        top.append(
            {
                "waker": wk,
                "work_function": wf,
                "wakee": wc,
                "episodes": int(row["episodes"]),
                "would_stack": int(row["would_stack"]),
            }
        )
    metrics["top_tasks"] = counts(ep["wakee_comm"], key="comm")
    metrics["top_wakers"] = counts(ep["waker_comm"], key="comm")
    metrics["top_work_functions"] = counts(ep["work_function"], key="function")
    # typical episode: the middle one of the largest group
    g0 = grp.index[0]
    sel = ep[
        (ep["waker_comm"].astype(str) == g0[0])
        & (ep["work_function"].astype("string").fillna("(unknown)") == g0[1])
        & (ep["wakee_comm"].astype(str) == g0[2])
    ]
    e = sel.iloc[_typical(model.events, sel)]
    t0, t1 = _episode_window(model.events, e)
    whose = "all" if model.pids is None else "the given tasks'"  # (analyze --pid)
    title = (
        f"{n} wake-ups ({rate:.1f}/s, {100 * share:.2f}% of {whose} wake-ups) by per-CPU "
        f"kthreads moved the wakee off the waker's CPU; {int(stack.sum())} of them "
        f"would have stayed with a stack-on-waker-CPU rule"
    )
    return [
        Finding(
            NAME,
            sev,
            title,
            metrics,
            top,
            evidence_at={
                "t0": t0,
                "t1": t1,
                "cpus": sorted({int(e["waker_cpu"]), int(e["chosen_cpu"])}),
                "pids": [int(e["waker_pid"]), int(e["wakee_pid"])],
                "focus_ts": int(e["ts"]),
            },
        )
    ]


def _typical(ev: Events, sel: pd.DataFrame) -> int:
    """The row of ``sel`` (episodes of one waker, work function and wakee) to show: the
    one nearest the middle whose kworker leaves its CPU for idle within 200 us of the
    wake-up (the excerpt then shows that the wakee could have stayed); the middle one
    if none does."""
    mid = len(sel) // 2
    sw = ev.switch
    if sw is None or not len(sw):
        return mid
    prev, sts, nxt = sw["prev_pid"].to_numpy(), sw["ts"].to_numpy(), sw["next_pid"].to_numpy()
    wakers, ts = sel["waker_pid"].to_numpy(), sel["ts"].to_numpy()
    ok = np.zeros(len(sel), dtype=bool)
    for pid in np.unique(wakers):  # one pass per waker (a handful), not per episode
        out = np.flatnonzero(prev == pid)
        rows = np.flatnonzero(wakers == pid)
        k = np.searchsorted(sts[out], ts[rows], "left")
        has = k < len(out)
        nk = out[np.minimum(k, len(out) - 1)] if len(out) else np.zeros(len(rows), dtype=int)
        ok[rows] = has & (sts[nk] - ts[rows] <= 200_000) & (nxt[nk] == 0) if len(out) else False
    good = np.flatnonzero(ok)
    return int(good[np.argmin(np.abs(good - mid))]) if len(good) else mid


def _episode_window(ev: Events, e: pd.Series) -> tuple[int, int]:
    """The evidence window of episode ``e`` (a wakeups row): from the start of the
    kworker's work item (its last ``workqueue_execute_start``, if within 1 ms) to the
    later of the wakee's switch-in and the kworker's next switch-out (within 1 ms): the
    work, the wake-up, the migration, and the waker leaving its CPU, idle or not, which
    is what says whether the wakee could have stayed."""
    ts, waker = int(e["ts"]), int(e["waker_pid"])
    t0, t1 = ts - 30_000, ts + 50_000
    wq = ev.wq_start
    if wq is not None and len(wq):
        mine = wq["ts"].to_numpy()[(wq["common_pid"].to_numpy() == waker)]
        before = mine[mine <= ts]
        if len(before) and ts - int(before.max()) <= 1_000_000:
            t0 = int(before.max()) - 1_000
    sw = ev.switch
    if sw is not None and len(sw):
        out = sw["ts"].to_numpy()[(sw["prev_pid"].to_numpy() == waker)]
        after = out[out >= ts]
        if len(after) and int(after.min()) - ts <= 1_000_000:
            t1 = max(t1, int(after.min()) + 1_000)
    if pd.notna(e["run_ts"]) and int(e["run_ts"]) - ts <= 1_000_000:
        t1 = max(t1, int(e["run_ts"]) + 1_000)
    return t0, t1


def _hist(a: np.ndarray) -> dict[str, int]:
    vals, cnt = np.unique(np.asarray(a), return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(vals, cnt)}
