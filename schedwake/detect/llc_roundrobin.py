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

from ..model import key_groups, last_rows
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


#: The columns of :func:`task_table`'s first frame when nothing was woken.
_PER_COLUMNS = [
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


def task_table(model: Model, th: Thresholds) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per woken task (wake-ups, in-LLC changes, share, rate, walk figures),
    and the CPU-changing wake-ups themselves."""
    w = model.wakeups
    if len(w) == 0:
        return (
            pd.DataFrame(columns=_PER_COLUMNS),
            pd.DataFrame(columns=["task", "pid", "ts", "prev", "chosen"]),
        )
    g = wake_rows(model)
    ch = walked(g[g["change"].to_numpy()].sort_values(["task", "ts"], kind="stable"))
    per = per_task(
        counted(g),
        visited_pairs(g),
        walk_sums(ch),
        last_comms(model),
        model.duration_ns,
        th,
    )
    return per, ch


def wake_rows(model: Model, rows: np.ndarray | None = None) -> pd.DataFrame:
    """The wake-ups it judges (``rows``: of this mask only, a time part's own): their
    task, pid, time, previous and chosen CPUs, and whether they change CPU in an LLC."""
    w = model.wakeups
    wake = judged_mask(w)
    if rows is not None:
        wake &= rows
    # a task is a pid's life (:mod:`schedwake.model.lives`): the pid, but for a later task
    # of a pid used again
    task = model.events.key(w["wakee_pid"].to_numpy()[wake], w["ts"].to_numpy()[wake])
    return pd.DataFrame(
        {
            "task": task,
            "pid": w["wakee_pid"].to_numpy()[wake],
            "ts": w["ts"].to_numpy()[wake],
            "prev": w["prev_cpu"].to_numpy()[wake],
            "chosen": w["chosen_cpu"].to_numpy()[wake],
            "change": w["migration_class"].isin(IN_LLC).to_numpy()[wake],
        },
        copy=False,
    )


def judged_mask(w: pd.DataFrame) -> np.ndarray:
    """The wake-ups (rows of a wakeups table) it judges: a known previous CPU, not an
    affinity move by a stopper thread (a mask: no copy of the table)."""
    return (w["prev_cpu"] >= 0).to_numpy() & ~stopper_mask(w["waker_comm"])


def counted(g: pd.DataFrame) -> pd.DataFrame:
    """Per task of :func:`wake_rows`: its wake-ups and CPU changes (they add up), as a
    group-by gives them (in task order), from one hash pass (:func:`key_groups`)."""
    if len(g) == 0:
        return g.groupby("task").agg(wakeups=("ts", "size"), changes=("change", "sum"))
    (task,), wakeups, changes = key_groups([g["task"].to_numpy()], g["change"].to_numpy())
    return pd.DataFrame({"wakeups": wakeups, "changes": changes}, index=pd.Index(task, name="task"))


def visited_pairs(g: pd.DataFrame) -> pd.DataFrame:
    """The distinct (task, CPU) of the wake-ups' previous and chosen CPUs (a union of
    them is the union's), in (task, CPU) order: marked in a table of every (task, CPU)
    when it is small (no copy of the wake-ups' columns end to end), else grouped."""
    task, prev, chosen = (g[k].to_numpy() for k in ("task", "prev", "chosen"))
    if len(task):
        t0, ntasks = int(task.min()), int(task.max()) - int(task.min()) + 1
        c0 = min(int(prev.min()), int(chosen.min()))
        ncpus = max(int(prev.max()), int(chosen.max())) - c0 + 1
        if ntasks * ncpus <= max(4 * len(task), 1 << 16):
            seen = np.zeros(ntasks * ncpus, dtype=bool)
            row = (task - t0) * ncpus - c0
            seen[row + prev] = True
            seen[row + chosen] = True
            at = np.flatnonzero(seen)
            return pd.DataFrame(
                {
                    "task": (at // ncpus + t0).astype(task.dtype),
                    "cpu": (at % ncpus + c0).astype(prev.dtype),
                }
            )
    both = [np.concatenate([task, task]), np.concatenate([prev, chosen])]
    (task, cpu), _, _ = key_groups(both)
    return pd.DataFrame({"task": task, "cpu": cpu})


def walked(ch: pd.DataFrame) -> pd.DataFrame:
    """The CPU changes ``ch`` (rows of :func:`wake_rows`, by task and time) with their
    walk: ``back`` (straight back to the CPU it came from), ``new_pair`` (a pair of
    CPUs other than the change before), ``dwell`` (ns since the change before), ``lo``
    and ``hi`` (the pair)."""
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
    return ch.assign(back=back, new_pair=new_pair, dwell=dwell, lo=lo, hi=hi)


def walk_sums(ch: pd.DataFrame) -> pd.DataFrame:
    """Per task of :func:`walked` changes: ``back``, ``pair_runs``, and the dwells'
    sum and count (``dwell_sum``, ``dwell_n``)."""
    return ch.groupby("task").agg(
        back=("back", "sum"),
        pair_runs=("new_pair", "sum"),
        dwell_sum=("dwell", "sum"),
        dwell_n=("dwell", "count"),
    )


def last_comms(model: Model, rows: np.ndarray | None = None) -> pd.DataFrame:
    """Each woken task's last name (``comm``, of its last wake-up; ``rows``: of those
    only) and that wake-up's time (``ts``)."""
    w = model.wakeups
    keep = slice(None) if rows is None else rows
    ts = w["ts"].to_numpy()[keep]
    task = model.events.key(w["wakee_pid"].to_numpy()[keep], ts)
    last = np.sort(last_rows(task)[1])  # (each task's last wake-up, in their order)
    comm = w["wakee_comm"].array[keep]
    return pd.DataFrame({"task": task[last], "comm": comm[last], "ts": ts[last]}).set_index("task")


def per_task(
    counts: pd.DataFrame,
    visited: pd.DataFrame,
    walks: pd.DataFrame,
    names: pd.DataFrame,
    duration_ns: int,
    th: Thresholds,
) -> pd.DataFrame:
    """:func:`task_table`'s first frame from its per-task parts (:func:`counted`,
    :func:`visited_pairs`, :func:`walk_sums`, :func:`last_comms`) over ``duration_ns``:
    what a time part of a trace gives of each, added up, gives the whole's."""
    dur_s = max(duration_ns, 1) / 1e9
    per = counts.copy()
    vt, nvisited = np.unique(visited["task"].to_numpy(), return_counts=True)
    per["cpus_visited"] = pd.Series(nvisited.astype(np.int64), index=vt)
    wg = pd.DataFrame(
        {
            "back": walks["back"],
            "pair_runs": walks["pair_runs"],
            "dwell_ns": walks["dwell_sum"].where(walks["dwell_n"] > 0) / walks["dwell_n"],
        }
    )
    per = per.join(wg, how="left").fillna({"back": 0, "pair_runs": 0})
    per["change_share"] = per["changes"] / per["wakeups"]
    per["changes_per_s"] = per["changes"] / dur_s
    per["back_share"] = np.where(
        per["changes"] > 1, per["back"] / np.maximum(per["changes"] - 1, 1), 0.0
    )
    # names and classes (the last name each task had)
    per["comm"] = names["comm"].astype(str).reindex(per.index)
    per["pid"] = pid_of(per.index.to_numpy())
    from ..model.tasks import PERCPU_KTHREAD, USER, name_class

    # (per distinct name, not per task: the names' text, a missing one "nan")
    names_of, which = np.unique(per["comm"].astype(str).to_numpy(), return_inverse=True)
    kcls = pd.Series(
        np.array([name_class(c) for c in names_of], dtype=object)[which.reshape(-1)],
        index=per.index,
    )
    excluded = kcls == PERCPU_KTHREAD
    if not th.get("roundrobin_include_kthreads"):
        excluded |= kcls != USER
    per["flagged"] = (
        (~excluded)
        & (per["wakeups"] >= th["roundrobin_min_wakeups"])
        & (per["change_share"] >= th["roundrobin_min_change_share"])
        & (per["changes"] >= max(th["roundrobin_min_changes"], 1))
    )
    return per.reset_index()


def _pair_walk(ch: pd.DataFrame, task: int, limit: int = 8) -> str:
    """The task's walk as its runs of changes between one pair of CPUs, in time order:
    ``lo<->hi xN``, the first ``limit`` of them."""
    rows = np.flatnonzero(ch["task"].to_numpy() == task)
    # a run starts at a change to another pair (``new_pair``), and at the task's first
    starts = np.flatnonzero(ch["new_pair"].to_numpy()[rows])
    if len(rows) and (len(starts) == 0 or starts[0] != 0):
        starts = np.append(0, starts)
    n = np.diff(np.append(starts, len(rows)))
    first = rows[starts[:limit]]
    lo, hi = ch["lo"].to_numpy()[first].tolist(), ch["hi"].to_numpy()[first].tolist()
    parts = [f"{a}<->{b} x{k}" for a, b, k in zip(lo, hi, n[:limit].tolist())]
    if len(starts) > limit:
        parts.append(f"... ({len(starts)} pair runs)")
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
    flagged = flagged_tasks(per)
    pingpong = _pingpong_share(model.wakeups, ch, flagged["task"].to_numpy())
    return judge(per, ch, mig_count, pingpong, th)


def flagged_tasks(per: pd.DataFrame) -> pd.DataFrame:
    """The flagged tasks of :func:`task_table`'s first frame, worst first."""
    return per[per["flagged"]].sort_values(["change_share", "changes"], ascending=False)


#: How many of the flagged tasks the finding lists.
TOP = 10


def judge(
    per: pd.DataFrame,
    ch: pd.DataFrame,
    mig_count: pd.Series,
    pingpong: float,
    th: Thresholds,
) -> list[Finding]:
    """The finding of a trace's :func:`task_table` (``ch``: the walked changes of at
    least the :data:`TOP` flagged tasks), its migrations per task and the share of the
    flagged tasks' changes that are ping-pong episodes (:func:`_pingpong_share`)."""
    flagged = flagged_tasks(per)
    if not len(flagged):
        return []
    top: list[dict[str, MetricValue]] = []
    for r in flagged.head(TOP).itertuples(index=False):
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
