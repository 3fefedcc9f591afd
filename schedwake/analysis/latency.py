"""Per-task scheduling latency: the tables of ``perf sched latency`` and ``perf sched
timehist -s``, from any trace schedwake reads (docs/latency.md).

:func:`latency` gives one row per task (or per name, ``by="comm"``): its runtime, its
switch-ins, its waits to run and their average and maximum, with when the longest
began and ended. Two readings of the same events:

``"schedwake"`` (the default)
    a wait begins when the task is woken (its ``sched_waking``; ``sched_wakeup`` when
    the trace has no waking) or when it is switched out runnable (``prev_state`` ``R``
    or ``R+``: preempted), and ends at its switch-in; waits whose end the trace does not
    show are not counted. Runtime is the time the task is seen running (switch-in to
    switch-out). ``switches`` counts its switch-ins, ``waits`` the waits measured.
``"perf"`` (``--perf-compat``)
    what perf up to 6.1 counts (tools/perf/builtin-sched.c): a wait from
    ``sched_wakeup``/``sched_wakeup_new`` only (perf has no handler for
    ``sched_waking``: in a trace without ``sched_wakeup`` every woken wait is
    missed), a preempted wait only after a plain ``R`` (perf reads ``R+`` as another
    letter), a wait of 0 at a task's first switch-in, and runtime summed from
    ``sched_stat_runtime`` (0 without it). ``switches`` is perf's column (the waits it
    counted), so the numbers can be checked line by line against perf's.

:func:`timehist_summary` gives ``perf sched timehist -s``'s per-task summary: switch-ins,
run time and the runs' minimum, average, maximum and relative standard error, and
migrations, from the task states (only runs the trace shows from switch-in to
switch-out).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import OptionError
from ..model import cat_mask
from ..model import waits as _waits
from ..model.lives import SHIFT, dies, pid_of
from . import wait_causes

if TYPE_CHECKING:
    from ..trace import Trace

#: The readings of :func:`latency`.
READINGS = ("schedwake", "perf")
#: What :func:`latency` can sort by (largest first; ``pid`` smallest first).
SORT_KEYS = ("avg", "max", "switches", "waits", "runtime", "pid")
#: perf sched latency's default order.
DEFAULT_SORT = ("avg", "max", "switches", "runtime")

#: The columns of :func:`latency`, in order.
COLUMNS = (
    "comm",
    "pid",
    "tasks",
    "runtime_ns",
    "switches",
    "waits",
    "total_delay_ns",
    "avg_delay_ns",
    "max_delay_ns",
    "max_start_ts",
    "max_end_ts",
)
#: The columns of :func:`timehist_summary`, in order.
TIMEHIST_COLUMNS = (
    "comm",
    "pid",
    "parent_pid",
    "sched_in",
    "run_ns",
    "min_run_ns",
    "avg_run_ns",
    "max_run_ns",
    "stddev_pct",
    "migrations",
)

_SORT_COLUMN = {
    "avg": "avg_delay_ns",
    "max": "max_delay_ns",
    "switches": "switches",
    "waits": "waits",
    "runtime": "runtime_ns",
    "pid": "pid",
}


def parse_sort(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"max,avg"`` (or a sequence) -> the sort keys, checked."""
    keys = [k.strip() for k in (text.split(",") if isinstance(text, str) else text)]
    keys = [k for k in keys if k]
    bad = [k for k in keys if k not in SORT_KEYS]
    if bad or not keys:
        raise OptionError(
            "--sort", ",".join(keys), f"sort by one or more of {', '.join(SORT_KEYS)}"
        )
    return tuple(keys)


def _task(trace: Trace, pid: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """The task of each (pid, ts): its life key (:mod:`schedwake.model.lives`), the pid
    but for a later task of a pid used again."""
    return trace.model.events.key(np.asarray(pid, np.int64), np.asarray(ts, np.int64))


def last_names(trace: Trace) -> pd.Series:
    """task -> the last name the trace gives the task (its switches, then its wake-ups);
    perf names a thread by its latest comm too. A task is a life key
    (:mod:`schedwake.model.lives`): the pid, but for a later task of a pid used again,
    which keeps its own name."""
    frames = []
    ev = trace.model.events
    if ev.switch is not None and len(ev.switch):
        s = ev.switch
        for pid, comm in (("prev_pid", "prev_comm"), ("next_pid", "next_comm")):
            if pid in s.columns and comm in s.columns:
                frames.append(
                    pd.DataFrame(
                        {
                            "ts": s["ts"].to_numpy(np.int64),
                            "pid": s[pid].to_numpy(np.int64),
                            "comm": s[comm].astype(str).to_numpy(),
                        }
                    )
                )
    for f in (ev.waking, ev.wakeup, ev.wakeup_new):
        if f is not None and len(f) and "comm" in f.columns:
            frames.append(
                pd.DataFrame(
                    {
                        "ts": f["ts"].to_numpy(np.int64),
                        "pid": f["pid"].to_numpy(np.int64),
                        "comm": f["comm"].astype(str).to_numpy(),
                    }
                )
            )
    if not frames:
        return pd.Series(dtype=object)
    f = pd.concat(frames, ignore_index=True)
    f = f.iloc[np.argsort(f["ts"].to_numpy(), kind="stable")]
    f["pid"] = _task(trace, f["pid"].to_numpy(), f["ts"].to_numpy())
    return f.groupby("pid", sort=True)["comm"].last()


def perf_names(trace: Trace) -> pd.Series:
    """task -> the name perf gives the thread in a perf.data: its last COMM record (perf
    names threads by them, e.g. ``kworker/0:0-events`` where the tracepoints say
    ``kworker/0:0``); a thread a FORK record made and no COMM renamed, its parent's name
    at the fork; any other ``:<tid>``, as perf prints a thread it has no name for. A
    task is a life key (:mod:`schedwake.model.lives`): a COMM or FORK record names the
    task its tid is at the record's time, never an earlier or later task of a pid used
    again (perf makes a new thread at a FORK of a tid it knows); a later task that no
    record names keeps the name the trace gives it. A trace without these records
    (trace.dat, text): :func:`last_names`."""
    names = last_names(trace)
    side = getattr(trace, "sideband", None) or {}
    comms = side.get("comms")
    if comms is None or "comm" not in comms.column_names:
        return names
    f = pd.DataFrame(
        {
            "ts": comms.column("ts").to_numpy().astype(np.int64),
            "tid": comms.column("tid").to_numpy().astype(np.int64),
            "comm": comms.column("comm").to_pandas().astype(str).to_numpy(),
        }
    )
    f = f.iloc[np.argsort(f["ts"].to_numpy(), kind="stable")]
    f["tid"] = _task(trace, f["tid"].to_numpy(), f["ts"].to_numpy())
    out = f.groupby("tid", sort=True)["comm"].last()
    forks = side.get("forks")
    if forks is not None and forks.num_rows:
        fts = forks.column("ts").to_numpy().astype(np.int64)
        k = pd.DataFrame(
            {
                "ts": fts,
                "tid": _task(trace, forks.column("tid").to_numpy(), fts),
                "ptid": _task(trace, forks.column("ptid").to_numpy(), fts),
            }
        )
        k = k[~np.isin(k["tid"].to_numpy(), out.index.to_numpy())]
        k = k.drop_duplicates("tid", keep="last").sort_values("ts", kind="stable")
        # the parent's name when it forked: its last COMM at or before the fork
        named = pd.merge_asof(
            k,
            f.rename(columns={"tid": "ptid"}),
            on="ts",
            by="ptid",
            direction="backward",
        ).dropna(subset=["comm"])
        out = pd.concat([out, pd.Series(named["comm"].to_numpy(), index=named["tid"])])
    # a later task of a pid used again that no record names: the name the trace gives it
    later = names[names.index.to_numpy() >= 1 << SHIFT]
    out = pd.concat([out, later[~later.index.isin(out.index)]])
    rest = names.index.difference(out.index)
    return pd.concat([out, pd.Series([f":{p}" for p in rest], index=rest, dtype=object)])


def _perf_waits(trace: Trace) -> pd.DataFrame:
    """perf sched latency's waits (perf <= 6.1): task, delay_ns, start_ts, end_ts."""
    w = _waits.build(trace.model.events, None, runnable_states=("R",), rewoken_unseen=False)
    return pd.DataFrame(
        {
            "pid": _task(trace, w["pid"].to_numpy(), w["end_ts"].to_numpy()),
            "delay_ns": w["delay_ns"].to_numpy(np.int64),
            "start_ts": w["start_ts"].to_numpy(np.int64),
            "end_ts": w["end_ts"].to_numpy(np.int64),
        }
    )


def _schedwake_waits(trace: Trace) -> pd.DataFrame:
    """Wake-to-run (from the waking) and preempted (R, R+) waits that end at a switch-in
    the trace shows: pid, delay_ns, start_ts, end_ts."""
    f = wait_causes.all_waits(trace)
    # a wait whose switch-in is missing has no known end: not a number to average
    exact = f["min_end"].to_numpy() == f["end"].to_numpy()
    f = f[exact & ~f["cut"].to_numpy(dtype=bool)]
    return pd.DataFrame(
        {
            "pid": _task(trace, f["pid"].to_numpy(), f["end"].to_numpy()),
            "delay_ns": f["ns"].to_numpy(np.int64),
            "start_ts": f["start"].to_numpy(np.int64),
            "end_ts": f["end"].to_numpy(np.int64),
        }
    )


def _perf_threads(trace: Trace, runtime: pd.Series) -> pd.Index:
    """The threads perf sched latency keeps a record for: those of every sched_switch,
    sched_wakeup, sched_wakeup_new and sched_stat_runtime event."""
    ev = trace.model.events
    parts = [runtime.index.to_numpy(np.int64)]
    if ev.switch is not None:
        sts = ev.switch["ts"].to_numpy(np.int64)
        parts += [
            _task(trace, ev.switch["prev_pid"].to_numpy(), sts),
            _task(trace, ev.switch["next_pid"].to_numpy(), sts),
        ]
    for f in (ev.wakeup, ev.wakeup_new):
        if f is not None:
            parts.append(_task(trace, f["pid"].to_numpy(), f["ts"].to_numpy()))
    return pd.Index(np.unique(np.concatenate(parts)))


def _runtime_perf(trace: Trace) -> pd.Series:
    """pid -> the sum of its ``sched_stat_runtime`` runtimes (perf's Runtime)."""
    if not trace.has_records("sched_stat_runtime"):
        return pd.Series(dtype=np.int64)
    t = trace.table("sched_stat_runtime")
    f = pd.DataFrame(
        {
            "pid": _task(trace, t.column("pid").to_numpy(), t.column("ts").to_numpy()),
            "runtime": t.column("runtime").to_numpy().astype(np.int64),
        }
    )
    return f.groupby("pid", sort=True)["runtime"].sum()


def _runs(trace: Trace) -> pd.DataFrame:
    """The task's runs the trace shows whole (a ``running`` interval that a switch-in
    begins and a switch-out ends, the task's last switch-out, ``X``/``Z``/``x``, too: perf
    sched timehist counts every run from a switch-in to a switch-out): pid (the task,
    a life key), cpu, start_ts, end_ts."""
    st = trace.task_states()
    st = st.iloc[np.lexsort((st["start_ts"].to_numpy(), st["task"].to_numpy()))]
    state = st["state"].astype(str).to_numpy()
    pid = st["task"].to_numpy(np.int64)
    running = state == "running"
    # a run begins with a switch-in only when the interval before it (same task) says
    # where the task was: not unknown, and not the first of the task
    prev_known = np.zeros(len(st), dtype=bool)
    if len(st) > 1:
        prev_known[1:] = (pid[1:] == pid[:-1]) & (state[:-1] != "unknown")
    next_known = np.zeros(len(st), dtype=bool)
    if len(st) > 1:
        next_known[:-1] = (pid[:-1] == pid[1:]) & (state[1:] != "unknown")
    # a run that ends in the task's death has no interval after it: its switch-out ends it
    next_known |= running & _ends_in_death(trace, pid, st["end_ts"].to_numpy(np.int64))
    whole = running & prev_known & next_known
    return pd.DataFrame(
        {
            "pid": pid[whole],
            "cpu": st["cpu"].to_numpy(np.int64)[whole],
            "start_ts": st["start_ts"].to_numpy(np.int64)[whole],
            "end_ts": st["end_ts"].to_numpy(np.int64)[whole],
        }
    )


def _ends_in_death(trace: Trace, task: np.ndarray, end_ts: np.ndarray) -> np.ndarray:
    """Per (task, end_ts): whether the task's switch-out at ``end_ts`` is its death
    (``prev_state`` ``X``, ``Z`` or ``x``: :func:`schedwake.model.lives.dies`)."""
    s = trace.model.events.switch
    if s is None or len(s) == 0 or "prev_state_str" not in s.columns or len(task) == 0:
        return np.zeros(len(task), dtype=bool)
    dead = cat_mask(s["prev_state_str"].array, dies)
    if not dead.any():
        return np.zeros(len(task), dtype=bool)
    dts = s["ts"].to_numpy(np.int64)[dead]
    deaths = pd.MultiIndex.from_arrays([_task(trace, s["prev_pid"].to_numpy()[dead], dts), dts])
    return np.asarray(pd.MultiIndex.from_arrays([task, end_ts]).isin(deaths))


def _switch_ins(trace: Trace) -> pd.Series:
    """task -> its switch-ins in the trace (``sched_switch`` next_pid)."""
    ev = trace.model.events
    if ev.switch is None or len(ev.switch) == 0:
        return pd.Series(dtype=np.int64)
    nxt = _task(trace, ev.switch["next_pid"].to_numpy(), ev.switch["ts"].to_numpy())
    pids, counts = np.unique(nxt[nxt != 0], return_counts=True)
    return pd.Series(counts, index=pids)


def _running_ns(trace: Trace) -> pd.Series:
    """task -> the time it is seen running (its ``running`` task-state intervals)."""
    st = trace.task_states()
    run = st[(st["state"] == "running").to_numpy()]
    d = run["end_ts"].to_numpy(np.int64) - run["start_ts"].to_numpy(np.int64)
    return pd.Series(d, index=run["task"].to_numpy(np.int64)).groupby(level=0).sum()


def _per_key(w: pd.DataFrame, key: str) -> pd.DataFrame:
    """Waits per ``key``: waits, total, max and the first longest wait's start and end
    (perf: the first wait longer than every one before it)."""
    cols = ["waits", "total_delay_ns", "max_delay_ns", "max_start_ts", "max_end_ts"]
    if len(w) == 0:
        return pd.DataFrame(columns=cols)
    w = w.iloc[np.lexsort((w["end_ts"].to_numpy(), w[key].to_numpy()))]
    g = w.groupby(key, sort=True)
    at = w.loc[g["delay_ns"].idxmax()].set_index(key)
    return pd.DataFrame(
        {
            "waits": g["delay_ns"].size(),
            "total_delay_ns": g["delay_ns"].sum(),
            "max_delay_ns": g["delay_ns"].max(),
            "max_start_ts": at["start_ts"],
            "max_end_ts": at["end_ts"],
        }
    )


def latency(
    trace: Trace,
    reading: str = "schedwake",
    by: str = "pid",
    sort: str | Sequence[str] = DEFAULT_SORT,
    pids: Iterable[int] | None = None,
    comms: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The per-task latency table of ``trace`` (see the module's docstring), columns
    :data:`COLUMNS`: ``comm``, ``pid`` (-1 for a row of several tasks), ``tasks`` (how
    many tasks a row adds up), ``runtime_ns``, ``switches``, ``waits``,
    ``total_delay_ns``, ``avg_delay_ns`` (total // waits, as perf truncates),
    ``max_delay_ns``, ``max_start_ts``/``max_end_ts`` (0 when the longest is 0, as perf
    prints it). ``by="comm"`` adds up the tasks of one name (perf sched latency's
    default; ``perf sched latency -p`` is ``by="pid"``). ``pids``/``comms`` keep the
    tasks of those pids or names. pid 0 (the idle tasks) is never a row."""
    if reading not in READINGS:
        raise OptionError("--reading", reading, f"one of {', '.join(READINGS)}")
    if by not in ("pid", "comm"):
        raise OptionError("--by", by, "pid or comm")
    keys = parse_sort(sort)
    names = perf_names(trace) if reading == "perf" else last_names(trace)
    if reading == "perf":
        w = _perf_waits(trace)
        runtime = _runtime_perf(trace)
        switches = None
    else:
        w = _schedwake_waits(trace)
        runtime = _running_ns(trace)
        switches = _switch_ins(trace)
    per_pid = _per_key(w, "pid")
    pid_index = per_pid.index
    if switches is not None:
        pid_index = pid_index.union(switches.index)
    else:  # perf: every thread it made a record for, counted in a name's (N)
        pid_index = pid_index.union(_perf_threads(trace, runtime))
    pid_index = pid_index[pid_index != 0]
    # perf leaves out threads named swapper (the idle tasks, and nothing else is)
    comm = names.reindex(pid_index).fillna("").astype(str).to_numpy()
    # (``pid_index``: the tasks, life keys: a pid used again gives a row per task)
    t = pd.DataFrame(
        {
            "comm": comm,
            "pid": pid_of(pid_index.to_numpy(np.int64)).astype(np.int64),
            "tasks": np.ones(len(pid_index), np.int64),
            "runtime_ns": runtime.reindex(pid_index).fillna(0).to_numpy(np.int64),
            "waits": per_pid["waits"].reindex(pid_index).fillna(0).to_numpy(np.int64),
            "total_delay_ns": per_pid["total_delay_ns"]
            .reindex(pid_index)
            .fillna(0)
            .to_numpy(np.int64),
            "max_delay_ns": per_pid["max_delay_ns"].reindex(pid_index).fillna(0).to_numpy(np.int64),
            "max_start_ts": per_pid["max_start_ts"].reindex(pid_index).fillna(0).to_numpy(np.int64),
            "max_end_ts": per_pid["max_end_ts"].reindex(pid_index).fillna(0).to_numpy(np.int64),
        }
    )
    t["switches"] = (
        t["waits"].to_numpy()
        if switches is None
        else switches.reindex(pid_index).fillna(0).to_numpy(np.int64)
    )
    t = t[t["comm"].to_numpy() != "swapper"]
    if pids is not None:
        t = t[np.isin(t["pid"].to_numpy(), np.fromiter(pids, np.int64))]
    if comms is not None:
        t = t[np.isin(t["comm"].to_numpy(), np.array(list(comms), dtype=object))]
    if by == "comm":
        t = _merge_by_comm(t, perf=reading == "perf")
    if reading == "perf":  # perf prints no row without a counted wait
        t = t[t["waits"].to_numpy() > 0]
    waits = t["waits"].to_numpy()
    t = t.assign(avg_delay_ns=np.where(waits > 0, t["total_delay_ns"] // np.maximum(waits, 1), 0))
    # perf keeps the start and end of a longest wait of 0 at 0 (it never beats 0)
    zero = t["max_delay_ns"].to_numpy() == 0
    t.loc[zero, ["max_start_ts", "max_end_ts"]] = 0
    # rows equal in every key: perf prints them in the order of the tree it keeps them
    # in, by name from the last in byte order, or by pid from the largest
    if reading == "perf":
        ties = ("comm", False) if by == "comm" else ("pid", False)
    else:
        ties = ("comm", True) if by == "comm" else ("pid", True)
    return _sorted(t, keys, ties)[list(COLUMNS)].reset_index(drop=True)


def _merge_by_comm(t: pd.DataFrame, perf: bool) -> pd.DataFrame:
    """Rows of one name added up; ``pid`` -1 where several tasks are added. Of equal
    longest waits the row keeps the earliest (``perf``: the largest pid's, as perf
    merges its threads from the largest pid down and keeps the first longest)."""
    if len(t) == 0:
        return t
    if perf:
        t = t.sort_values("pid", ascending=False, kind="stable")
    else:
        t = t.sort_values(["max_start_ts", "pid"], kind="stable")
    g = t.groupby("comm", sort=True)
    at = t.loc[g["max_delay_ns"].idxmax()].set_index("comm")
    m = pd.DataFrame(
        {
            "tasks": g["tasks"].sum(),
            "pid": g["pid"].first(),
            "runtime_ns": g["runtime_ns"].sum(),
            "switches": g["switches"].sum(),
            "waits": g["waits"].sum(),
            "total_delay_ns": g["total_delay_ns"].sum(),
            "max_delay_ns": g["max_delay_ns"].max(),
            "max_start_ts": at["max_start_ts"],
            "max_end_ts": at["max_end_ts"],
        }
    )
    m.loc[m["tasks"] > 1, "pid"] = -1
    return m.reset_index()


def _sorted(t: pd.DataFrame, keys: Sequence[str], ties: tuple[str, bool]) -> pd.DataFrame:
    """Largest first by each key in turn (pid: smallest first); rows equal in every key
    by ``ties`` (column, ascending)."""
    cols = [_SORT_COLUMN[k] for k in keys]
    asc = [k == "pid" for k in keys]
    if ties[0] not in cols:
        cols.append(ties[0])
        asc.append(ties[1])
    return t.sort_values(cols, ascending=asc, kind="stable")


def timehist_summary(
    trace: Trace, pids: Iterable[int] | None = None, comms: Iterable[str] | None = None
) -> pd.DataFrame:
    """``perf sched timehist -s``: per task (columns :data:`TIMEHIST_COLUMNS`), its
    switch-ins (``sched_in``), the time of its runs the trace shows whole (``run_ns``)
    and their minimum, average and maximum, ``stddev_pct`` (the standard error of the
    average run in percent of it, perf's ``stddev`` column), and its migrations
    (``sched_migrate_task``); ``parent_pid`` from ``sched_process_fork`` (-1 unknown).
    Sorted by pid."""
    runs = _runs(trace)
    d = runs["end_ts"].to_numpy() - runs["start_ts"].to_numpy()
    f = pd.DataFrame({"pid": runs["pid"].to_numpy(), "d": d.astype(np.float64)})
    g = f.groupby("pid", sort=True)["d"]
    switches = _switch_ins(trace)
    index = switches.index.union(g.size().index)
    index = index[index != 0]
    n = g.size().reindex(index).fillna(0).to_numpy(np.int64)
    mean = g.mean().reindex(index).fillna(0).to_numpy()
    # perf: the standard deviation of the mean (sd / sqrt(n), n - 1 in the variance),
    # relative to the mean, in percent; 0 below two runs
    sd = g.std(ddof=1).reindex(index).fillna(0).to_numpy()
    sem = np.where(n >= 2, sd / np.sqrt(np.maximum(n, 1)), 0.0)
    rel = np.where(mean > 0, 100.0 * sem / np.where(mean > 0, mean, 1.0), 0.0)
    migrations = pd.Series(dtype=np.int64)
    if trace.has_records("sched_migrate_task"):
        mt = trace.table("sched_migrate_task")
        mig = _task(trace, mt.column("pid").to_numpy(), mt.column("ts").to_numpy())
        p, c = np.unique(mig, return_counts=True)
        migrations = pd.Series(c, index=p)
    parents = pd.Series(dtype=np.int64)
    if trace.has_records("sched_process_fork"):
        fk = trace.table("sched_process_fork")
        parents = pd.Series(
            fk.column("parent_pid").to_numpy().astype(np.int64),
            index=_task(trace, fk.column("child_pid").to_numpy(), fk.column("ts").to_numpy()),
        )
        parents = parents[~parents.index.duplicated(keep="last")]
    names = last_names(trace)
    t = pd.DataFrame(
        {
            "comm": names.reindex(index).fillna("").astype(str).to_numpy(),
            "pid": pid_of(index.to_numpy(np.int64)).astype(np.int64),
            "parent_pid": parents.reindex(index).fillna(-1).to_numpy(np.int64),
            "sched_in": switches.reindex(index).fillna(0).to_numpy(np.int64),
            "run_ns": g.sum().reindex(index).fillna(0).to_numpy(np.int64),
            "min_run_ns": g.min().reindex(index).fillna(0).to_numpy(np.int64),
            "avg_run_ns": np.round(mean).astype(np.int64),
            "max_run_ns": g.max().reindex(index).fillna(0).to_numpy(np.int64),
            "stddev_pct": np.round(rel, 2),
            "migrations": migrations.reindex(index).fillna(0).to_numpy(np.int64),
        }
    )
    t = t[t["comm"].to_numpy() != "swapper"]
    if pids is not None:
        t = t[np.isin(t["pid"].to_numpy(), np.fromiter(pids, np.int64))]
    if comms is not None:
        t = t[np.isin(t["comm"].to_numpy(), np.array(list(comms), dtype=object))]
    return t[list(TIMEHIST_COLUMNS)].reset_index(drop=True)


def notes(trace: Trace, reading: str = "schedwake") -> list[str]:
    """What a reader of the latency table (``reading``; ``"timehist"``: of the
    :func:`timehist_summary`) must know about ``trace``: the events a reading lacks, the
    runs left out, and the trace's caveats (what it does not show)."""
    out = []
    if reading == "perf":
        if not trace.has_records("sched_wakeup") and trace.has_records("sched_waking"):
            out.append(
                "the trace has sched_waking and no sched_wakeup: perf's reading counts no "
                "woken wait (perf sched latency up to 6.1 has no handler for sched_waking); "
                "the default reading measures them from the waking"
            )
        if not trace.has_records("sched_stat_runtime"):
            out.append(
                "no sched_stat_runtime events: perf's Runtime is 0 (the default reading "
                "takes it from the switches)"
            )
    elif reading == "timehist":
        st = trace.task_states()
        running = int((st["state"] == "running").sum())
        whole = len(_runs(trace))
        if whole < running:
            out.append(
                f"{running - whole} of {running} runs are left out of the run times: the "
                "trace does not show where they began or ended (a task's first or last run, "
                "a stretch the trace does not show)"
            )
    elif not trace.has_records("sched_waking") and not trace.has_records("sched_wakeup"):
        out.append("no sched_waking or sched_wakeup events: only preempted waits are measured")
    out.extend(trace.caveats)
    return out
