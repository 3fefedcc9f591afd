"""Per-LLC round-robin (docs/detectors.md, 'llc_roundrobin').

A task whose successive wake-ups move it between CPUs of the same LLC. Judged per
task by the share of its wake-ups that change CPU inside an LLC (migration class
``same_core`` or ``same_llc``) and a least number of such changes, never by the number
of distinct CPUs alone (over a long trace a healthy task visits every CPU of its LLC
too), nor by a rate per second (a slower machine makes fewer wake-ups a second, in the
same proportions: docs/detectors.md). Wake-ups by the stopper threads ``migration/N``
(affinity changes) are not counted.

Also measured, to describe the walk: dwell time per CPU (time between changes), the
share of changes that go straight back to the CPU the task came from (A->B->A), and
the pairs the task bounces within, in order (a pair bounces for a while, then the walk
moves on to the next pair).

Per-CPU kthreads are left out (they cannot move); other kernel threads (unbound
kworkers, rcu_preempt, ...) are left out unless ``roundrobin_include_kthreads`` is 1:
the kernel moves them freely by design and the pathology is about workload tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..model.lives import pid_of
from ..model.masks import episodes_mask, stopper_mask
from .base import Finding, FindingMetrics, MetricValue, Shown, Threshold, Thresholds

if TYPE_CHECKING:
    from ..model import Model
    from ..trace import Trace

NAME = "llc_roundrobin"
#: The events it cannot judge without, one of each group (base.Detector.EVENTS).
EVENTS: tuple[tuple[str, ...], ...] = (("sched_waking", "sched_wakeup"),)

THRESHOLDS: tuple[Threshold, ...] = (
    Threshold(
        "roundrobin_min_wakeups",
        50,
        "wake-ups",
        "fewest wake-ups of a task for it to be judged",
    ),
    Threshold(
        "roundrobin_min_change_share",
        0.25,
        "fraction",
        "lowest share of a task's wake-ups that change CPU inside an LLC",
    ),
    Threshold(
        "roundrobin_min_changes",
        50,
        "changes",
        "fewest in-LLC CPU changes at wake-up of a task for a finding (also in a --time "
        "slice: fewer are what a healthy task shows by chance)",
    ),
    Threshold(
        "roundrobin_medium_change_share",
        0.35,
        "fraction",
        "change share from which the finding is medium",
    ),
    Threshold(
        "roundrobin_high_change_share",
        0.5,
        "fraction",
        "change share from which the finding is high",
    ),
    Threshold(
        "roundrobin_include_kthreads",
        0,
        "bool",
        "1 to judge kernel threads (unbound kworkers, rcu, ...) too",
    ),
)

#: How reports show its findings (base.Detector.SHOWN).
SHOWN = Shown(
    key_metrics=("flagged_tasks", "cpu_changes", "cpu_changes_per_s", "judged_tasks"),
    top_weight="cpu_changes",
)

IN_LLC = ("same_core", "same_llc")


def task_table(model: Model, th: Thresholds) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per woken task (wake-ups, in-LLC changes, share, rate, walk figures),
    and the CPU-changing wake-ups themselves."""
    w = model.wakeups
    dur_s = max(model.duration_ns, 1) / 1e9
    if len(w) == 0:
        return (
            pd.DataFrame(
                columns=[
                    "task",
                    "pid",
                    "comm",
                    "wakeups",
                    "changes",
                    "change_share",
                    "changes_per_s",
                    "cpus_visited",
                    "flagged",
                ]
            ),
            pd.DataFrame(columns=["task", "pid", "ts", "prev", "chosen"]),
        )
    # a mask (no copy of the wakeups table); affinity moves by the stoppers left out
    wake = (w["prev_cpu"] >= 0).to_numpy() & ~stopper_mask(w["waker_comm"])
    # a task is a pid's life (:mod:`schedwake.model.lives`): the pid, but for a later task
    # of a pid used again
    task = model.events.key(w["wakee_pid"].to_numpy(), w["ts"].to_numpy())
    g = pd.DataFrame(
        {
            "task": task[wake],
            "pid": w["wakee_pid"].to_numpy()[wake],
            "ts": w["ts"].to_numpy()[wake],
            "prev": w["prev_cpu"].to_numpy()[wake],
            "chosen": w["chosen_cpu"].to_numpy()[wake],
            "change": w["migration_class"].isin(IN_LLC).to_numpy()[wake],
        },
        copy=False,
    )
    del wake
    per = g.groupby("task").agg(
        wakeups=("ts", "size"),
        changes=("change", "sum"),
        first_ts=("ts", "min"),
        last_ts=("ts", "max"),
    )
    # CPUs visited: distinct (task, cpu) pairs of prev and chosen, as one int64 each (a
    # task by its rank when a pid names several: their keys are wider than 32 bits)
    utask, rank = np.unique(g["task"].to_numpy(), return_inverse=True)
    pid64 = rank.reshape(-1).astype(np.int64) << 32

    def pairs_of(cpu: np.ndarray, pid_bits: np.ndarray) -> np.ndarray:
        k = cpu.astype(np.int64)
        k &= 0xFFFFFFFF
        k |= pid_bits
        k.sort()
        return k[np.concatenate([[True], k[1:] != k[:-1]])] if len(k) else k

    pairs = np.union1d(
        pairs_of(g["prev"].to_numpy(), pid64), pairs_of(g["chosen"].to_numpy(), pid64)
    )
    del pid64
    vpid, nvisited = np.unique(pairs >> 32, return_counts=True)
    del pairs
    per["cpus_visited"] = pd.Series(nvisited.astype(np.int64), index=utask[vpid])
    ch = g[g["change"]].sort_values(["task", "ts"], kind="stable")
    # walk: back-to-previous and pair runs
    same_pid = ch["task"].to_numpy()[1:] == ch["task"].to_numpy()[:-1]
    back = np.zeros(len(ch), dtype=bool)
    back[1:] = (
        same_pid
        & (ch["chosen"].to_numpy()[1:] == ch["prev"].to_numpy()[:-1])
        & (ch["prev"].to_numpy()[1:] == ch["chosen"].to_numpy()[:-1])
    )
    lo = np.minimum(ch["prev"].to_numpy(), ch["chosen"].to_numpy())
    hi = np.maximum(ch["prev"].to_numpy(), ch["chosen"].to_numpy())
    new_pair = np.ones(len(ch), dtype=bool)
    new_pair[1:] = ~(same_pid & (lo[1:] == lo[:-1]) & (hi[1:] == hi[:-1]))
    dwell = np.full(len(ch), np.nan)
    dwell[1:] = np.where(same_pid, np.diff(ch["ts"].to_numpy()), np.nan)
    ch = ch.assign(back=back, new_pair=new_pair, dwell=dwell, lo=lo, hi=hi)
    wg = ch.groupby("task").agg(
        back=("back", "sum"), pair_runs=("new_pair", "sum"), dwell_ns=("dwell", "mean")
    )
    per = per.join(wg, how="left").fillna({"back": 0, "pair_runs": 0})
    per["change_share"] = per["changes"] / per["wakeups"]
    per["changes_per_s"] = per["changes"] / dur_s
    per["back_share"] = np.where(
        per["changes"] > 1, per["back"] / np.maximum(per["changes"] - 1, 1), 0.0
    )
    # names and classes (the last name each task had)
    last = pd.DataFrame({"task": task, "comm": w["wakee_comm"].array}, copy=False)
    last = last.drop_duplicates("task", keep="last").set_index("task")
    per["comm"] = last["comm"].astype(str).reindex(per.index)
    per["pid"] = pid_of(per.index.to_numpy())
    from ..model.tasks import PERCPU_KTHREAD, USER, name_class

    kcls = per["comm"].map(lambda c: name_class(str(c)))  # per task, not per event
    excluded = kcls == PERCPU_KTHREAD
    if not th.get("roundrobin_include_kthreads"):
        excluded |= kcls != USER
    per["flagged"] = (
        (~excluded)
        & (per["wakeups"] >= th["roundrobin_min_wakeups"])
        & (per["change_share"] >= th["roundrobin_min_change_share"])
        & (per["changes"] >= max(th["roundrobin_min_changes"], 1))
    )
    return per.reset_index(), ch


def _pair_walk(ch: pd.DataFrame, task: int, limit: int = 8) -> str:
    c = ch[ch["task"] == task]
    runs = c["new_pair"].cumsum()
    r = c.groupby(runs.to_numpy()).agg(lo=("lo", "first"), hi=("hi", "first"), n=("ts", "size"))
    parts = [f"{a}<->{b} x{n}" for a, b, n in r.head(limit).itertuples(index=False)]
    if len(r) > limit:
        parts.append(f"... ({len(r)} pair runs)")
    return ", ".join(parts)


def _pingpong_share(w: pd.DataFrame, ch: pd.DataFrame, tasks: np.ndarray) -> float:
    """The share of the CPU changes of ``tasks`` (rows of ``ch``) that are kworker
    ping-pong episodes (:func:`~schedwake.model.masks.episodes_mask`): near 1 when the
    tour is the ping-pong's, as on a kernel without the stacking clause."""
    mine = ch[np.isin(ch["task"].to_numpy(), tasks)]
    if len(mine) == 0:
        return 0.0
    ep = episodes_mask(w)
    episodes = pd.MultiIndex.from_arrays([w["wakee_pid"].to_numpy()[ep], w["ts"].to_numpy()[ep]])
    changes = pd.MultiIndex.from_arrays([mine["pid"].to_numpy(), mine["ts"].to_numpy()])
    return float(changes.isin(episodes).mean())


def detect(trace: Trace, model: Model, th: Thresholds) -> list[Finding]:
    per, ch = task_table(model, th)
    if len(per) == 0 or not per["flagged"].any():
        return []
    mig = model.migrations
    mig_count = (
        pd.Series(model.events.key(mig["pid"].to_numpy(), mig["ts"].to_numpy())).value_counts()
        if len(mig)
        else pd.Series(dtype=int)
    )
    flagged = per[per["flagged"]].sort_values(["change_share", "changes"], ascending=False)
    top: list[dict[str, MetricValue]] = []
    for r in flagged.head(10).itertuples(index=False):
        top.append(
            {
                "pid": int(r.pid),
                "comm": str(r.comm),
                "wakeups": int(r.wakeups),
                "cpu_changes": int(r.changes),
                "change_share": round(float(r.change_share), 4),
                "changes_per_s": round(float(r.changes_per_s), 2),
                "cpus_visited": int(r.cpus_visited),
                "migrations": int(mig_count.get(r.task, 0)),
                "mean_dwell_ms": None if pd.isna(r.dwell_ns) else round(float(r.dwell_ns) / 1e6, 3),
                "back_to_previous_share": round(float(r.back_share), 4),
                "pair_walk": _pair_walk(ch, int(r.task)),
            }
        )
    worst = flagged.iloc[0]
    share = worst["change_share"]
    sev = (
        "high"
        if share >= th["roundrobin_high_change_share"]
        else "medium"
        if share >= th["roundrobin_medium_change_share"]
        else "low"
    )
    pingpong = _pingpong_share(model.wakeups, ch, flagged["task"].to_numpy())
    metrics: FindingMetrics = {
        "tasks": top,
        "flagged_tasks": int(len(flagged)),
        "cpu_changes": int(flagged["changes"].sum()),
        "cpu_changes_per_s": round(float(flagged["changes_per_s"].sum()), 3),
        "judged_tasks": int((per["wakeups"] >= th["roundrobin_min_wakeups"]).sum()),
        "pingpong_share_of_changes": round(pingpong, 4),
    }
    # evidence: three consecutive changes of the worst task
    c = ch[ch["task"] == worst["task"]]
    mid = c.iloc[len(c) // 2 : len(c) // 2 + 3]
    cpus = sorted(set(mid["prev"].tolist()) | set(mid["chosen"].tolist()))
    title = (
        f"{len(flagged)} task(s) change CPU inside an LLC at a high share of their "
        f"wake-ups; worst {worst['comm']} (pid {int(worst['pid'])}): "
        f"{100 * worst['change_share']:.0f}% of {int(worst['wakeups'])} wake-ups, "
        f"{worst['changes_per_s']:.0f} changes/s over {int(worst['cpus_visited'])} CPUs"
    )
    if pingpong >= 0.5:  # the tour is the ping-pong's doing: say so, and where to look
        title += (
            f"; {100 * pingpong:.0f}% of these changes are kworker ping-pong episodes "
            "(see kworker_pingpong)"
        )
    return [
        Finding(
            NAME,
            sev,
            title,
            metrics,
            top,
            evidence_at={
                "t0": int(mid["ts"].iloc[0]) - 1_000,
                "t1": int(mid["ts"].iloc[-1]) + 20_000,
                "cpus": [int(x) for x in cpus],
                "pids": [int(worst["pid"])],
                "only_pids": True,
            },
        )
    ]
