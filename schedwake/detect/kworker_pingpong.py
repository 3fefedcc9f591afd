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

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..model.masks import episodes_mask, pingpong_at_episodes, stopper_mask
from .base import (
    EvidenceAt,
    Finding,
    FindingMetrics,
    Flows,
    Shown,
    Threshold,
    Thresholds,
    counts,
)

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


#: The columns of the episodes whose values the finding tallies (``top_tasks``,
#: ``top_wakers``, ``top_work_functions``, ``by_migration_class``).
TALLIED = ("wakee_comm", "waker_comm", "work_function", "migration_class")
#: The columns of a group of episodes (waker, work function, wakee) in ``top``.
GROUP = ("wk", "wf", "wc")


@dataclass
class Measure:
    """What the detector counts of a trace's wake-ups: of the whole trace
    (:func:`measure`), or added up from its time parts' owned wake-ups (:meth:`add`;
    :mod:`schedwake.analysis.partitioned`). Values are tallied with the position of
    their first episode (``first``: any order key of the episodes, in their order), so
    that the ties of a tally rank as the whole trace's do (first seen first)."""

    wakeups: int
    episodes: int
    #: Per-CPU kthreads' wake-ups of a task whose previous CPU is their own.
    eligible: int
    #: Of the episodes and of those, the ones not by the stopper threads.
    judged: int
    judged_eligible: int
    would_stack: int
    #: Episodes not stacked: another task runnable there, the occupancy not known.
    others_runnable: int
    unknown_occupancy: int
    #: How many other tasks were runnable, over the episodes with some: count.
    others: dict[int, int]
    #: Per column of :data:`TALLIED`: ``value``, ``count``, ``first``.
    tallies: dict[str, pd.DataFrame]
    #: Per (waker, work function, wakee) (:data:`GROUP`): ``episodes``, ``would_stack``.
    groups: pd.DataFrame

    @classmethod
    def add(cls, parts: list[Measure]) -> Measure:
        """The measure of the episodes of all ``parts`` (each episode in one part)."""
        others: dict[int, int] = {}
        for p in parts:
            for k, v in p.others.items():
                others[k] = others.get(k, 0) + v
        tallies = {}
        for c in TALLIED:
            f = pd.concat([p.tallies[c] for p in parts], ignore_index=True)
            f = f.groupby("value", sort=False, dropna=False).agg(
                count=("count", "sum"), first=("first", "min")
            )
            tallies[c] = f.reset_index()
        groups = pd.concat([p.groups for p in parts])
        groups = groups.groupby(level=list(range(groups.index.nlevels)), sort=True).sum()
        return cls(
            **{f: sum(getattr(p, f) for p in parts) for f in _SUMMED},
            others=dict(sorted(others.items())),
            tallies=tallies,
            groups=groups,
        )

    def tallied(self, column: str, like: pd.Series) -> pd.Series:
        """The tallied values of ``column`` as a series of the dtype of ``like`` (the
        column): each value as often as counted, in the order first seen, so that what
        is computed of it (``value_counts``) is what the episodes' column gives."""
        t = self.tallies[column].sort_values("first", kind="stable")
        values = np.repeat(t["value"].to_numpy(dtype=object), t["count"].to_numpy())
        if isinstance(like.dtype, pd.CategoricalDtype):
            cats = like.dtype.categories
            if pd.Index(values).dropna().isin(cats).all():
                return pd.Series(pd.Categorical(values, categories=cats))
            return pd.Series(values, dtype=object)  # (another part's names: as strings)
        return pd.Series(values, dtype=like.dtype)


_SUMMED = (
    "wakeups",
    "episodes",
    "eligible",
    "judged",
    "judged_eligible",
    "would_stack",
    "others_runnable",
    "unknown_occupancy",
)


def measure(
    model: Model, rows: np.ndarray | None = None, first: np.ndarray | None = None
) -> Measure:
    """The :class:`Measure` of ``model``'s wake-ups (``rows``: a mask of those to count,
    a time part's own; ``first``: their order keys (int64, in the rows' order: a part's
    are their times), default their row numbers)."""
    w = model.wakeups
    mine = np.ones(len(w), dtype=bool) if rows is None else rows
    order = np.arange(len(w), dtype=np.int64) if first is None else first
    mask = episodes_mask(w) & mine if len(w) else np.zeros(0, dtype=bool)
    at, others, known = pingpong_at_episodes(model)
    counted = mine[at]
    at, others, known = at[counted], others[counted], known[counted]
    eligible = (
        (w["waker_class"] == "percpu_kthread")
        & (w["waker_context"] == "task")
        & (w["waker_cpu"] == w["prev_cpu"])
    ).to_numpy() & mine
    # judged without the stopper threads' affinity moves
    stopper = stopper_mask(w["waker_comm"]) if len(w) else np.zeros(0, dtype=bool)
    stack = np.zeros(len(w), dtype=bool)
    stack[at] = known & (others == 0)
    ep = w[mask]
    hist = _hist(others[known & (others > 0)])
    tallies = {}
    for c in TALLIED:
        col = ep[c]
        codes, uniques = pd.factorize(col, use_na_sentinel=False)
        n = np.bincount(codes, minlength=len(uniques)) if len(codes) else np.zeros(0, np.int64)
        firsts = np.full(len(uniques), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(firsts, codes, order[mask])
        tallies[c] = pd.DataFrame(
            {"value": np.asarray(uniques, dtype=object), "count": n, "first": firsts}
        )
    groups = (
        ep.assign(
            wf=ep["work_function"].astype("string").fillna("(unknown)"),
            wk=ep["waker_comm"].astype(str),
            wc=ep["wakee_comm"].astype(str),
            st=stack[mask],
        )
        .groupby(list(GROUP), observed=True)
        .agg(episodes=("ts", "size"), would_stack=("st", "sum"))
    )
    return Measure(
        wakeups=int(mine.sum()),
        episodes=int(mask.sum()),
        eligible=int(eligible.sum()),
        judged=int((mask & ~stopper).sum()),
        judged_eligible=int((eligible & ~stopper).sum()),
        would_stack=int(stack.sum()),
        others_runnable=int((known & (others > 0)).sum()),
        unknown_occupancy=int((~known).sum()),
        others={int(k): v for k, v in hist.items()},
        tallies=tallies,
        groups=groups,
    )


def detect(trace: Trace, model: Model, th: Thresholds) -> list[Finding]:
    m = measure(model)

    def evidence(group: tuple[str, str, str]) -> tuple[EvidenceAt, int]:
        w = model.wakeups
        ep = w[episodes_mask(w)] if len(w) else w
        sel = ep[
            (ep["waker_comm"].astype(str) == group[0])
            & (ep["work_function"].astype("string").fillna("(unknown)") == group[1])
            & (ep["wakee_comm"].astype(str) == group[2])
        ]
        return evidence_of_episode(model.events, sel.iloc[_typical(model.events, sel)])

    return judge(m, model.duration_ns, th, model.wakeups, model.pids is not None, evidence)


def evidence_of_episode(ev: Events, e: pd.Series) -> tuple[EvidenceAt, int]:
    """Where the finding's evidence is taken from, for the episode ``e`` (a wakeups
    row), and that episode's time."""
    t0, t1 = _episode_window(ev, e)
    at: EvidenceAt = {
        "t0": t0,
        "t1": t1,
        "cpus": sorted({int(e["waker_cpu"]), int(e["chosen_cpu"])}),
        "pids": [int(e["waker_pid"]), int(e["wakee_pid"])],
        "focus_ts": int(e["ts"]),
    }
    return at, int(e["ts"])


def judge(
    m: Measure,
    duration_ns: int,
    th: Thresholds,
    like: pd.DataFrame,
    focused: bool,
    evidence: Callable[[tuple[str, str, str]], tuple[EvidenceAt, int]],
) -> list[Finding]:
    """The finding (if any) of a trace's :class:`Measure` over ``duration_ns``:
    ``like``, a wakeups table (its columns' dtypes); ``focused``: the analysis is of
    some tasks only (``--pid``); ``evidence``: where the evidence of the largest group
    (waker, work function, wakee) is taken from (its typical episode's)."""
    dur_s = max(duration_ns, 1) / 1e9
    n, total = m.episodes, m.wakeups
    share = n / total if total else 0.0
    rate = n / dur_s
    judged = m.judged
    eligible_share = judged / m.judged_eligible if m.judged_eligible else 0.0
    eligible = m.eligible
    by_class = m.tallied("migration_class", like["migration_class"]).value_counts()
    metrics: FindingMetrics = {
        "episodes": n,
        "episodes_per_s": round(rate, 3),
        "share_of_wakeups": round(share, 6),
        "wakeups": total,
        "percpu_kthread_wakeups_prev_here": eligible,
        "migrated_share_of_those": round(n / eligible, 6) if eligible else 0.0,
        "eligible_share": round(eligible_share, 6),
        "by_stopper_threads": n - judged,
        "would_stack": m.would_stack,
        "would_not_stack": {
            "other_tasks_runnable_on_waker_cpu": m.others_runnable,
            "occupancy_unknown_before_first_switch": m.unknown_occupancy,
        },
        "other_runnable_when_not_stacked": {str(k): v for k, v in m.others.items()},
        "by_migration_class": {str(k): int(v) for k, v in by_class.items() if v},
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
    grp = m.groups.sort_values("episodes", ascending=False).head(8)
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
    metrics["top_tasks"] = counts(m.tallied("wakee_comm", like["wakee_comm"]), key="comm")
    metrics["top_wakers"] = counts(m.tallied("waker_comm", like["waker_comm"]), key="comm")
    metrics["top_work_functions"] = counts(
        m.tallied("work_function", like["work_function"]), key="function"
    )
    # typical episode: the middle one of the largest group
    evidence_at, _ = evidence(grp.index[0])
    whose = "the given tasks'" if focused else "all"  # (analyze --pid)
    title = (
        f"{n} wake-ups ({rate:.1f}/s, {100 * share:.2f}% of {whose} wake-ups) by per-CPU "
        f"kthreads moved the wakee off the waker's CPU; {m.would_stack} of them "
        f"would have stayed with a stack-on-waker-CPU rule"
    )
    return [Finding(NAME, sev, title, metrics, top, evidence_at=evidence_at)]


#: How soon after an episode its kworker must leave its CPU for idle to make it the
#: one shown (the excerpt then shows that the wakee could have stayed).
IDLE_SOON_NS = 200_000


def _typical(ev: Events, sel: pd.DataFrame) -> int:
    """The row of ``sel`` (episodes of one waker, work function and wakee) to show
    (:func:`typical_of`)."""
    return typical_of(idle_soon(ev, sel))


def typical_of(ok: np.ndarray) -> int:
    """Of episodes in order, whose kworker leaves its CPU for idle soon (``ok``, per
    episode): the one nearest the middle that does (of two as near, the earlier); the
    middle one if none does."""
    mid = len(ok) // 2
    good = np.flatnonzero(ok)
    return int(good[np.argmin(np.abs(good - mid))]) if len(good) else mid


def idle_soon(ev: Events, sel: pd.DataFrame) -> np.ndarray:
    """Per episode of ``sel`` (wakeups rows): its kworker's next switch-out, within
    :data:`IDLE_SOON_NS` of the wake-up, leaves the CPU idle."""
    sw = ev.switch
    ok = np.zeros(len(sel), dtype=bool)
    if sw is None or not len(sw):
        return ok
    prev, sts, nxt = sw["prev_pid"].to_numpy(), sw["ts"].to_numpy(), sw["next_pid"].to_numpy()
    wakers, ts = sel["waker_pid"].to_numpy(), sel["ts"].to_numpy()
    for pid in np.unique(wakers):  # one pass per waker (a handful), not per episode
        out = np.flatnonzero(prev == pid)
        rows = np.flatnonzero(wakers == pid)
        k = np.searchsorted(sts[out], ts[rows], "left")
        has = k < len(out)
        nk = out[np.minimum(k, len(out) - 1)] if len(out) else np.zeros(len(rows), dtype=int)
        ok[rows] = (
            has & (sts[nk] - ts[rows] <= IDLE_SOON_NS) & (nxt[nk] == 0) if len(out) else False
        )
    return ok


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
