"""Waits to run, as ``perf sched latency`` counts them, and each wait broken into causes.

:func:`build` makes the waits table: one row per wait that ended in a switch-in, with
the two kinds ``perf sched latency`` adds up (tools/perf/builtin-sched.c,
``latency_switch_event`` / ``latency_wakeup_event`` / ``add_sched_in_event``), found
by the same per-task state machine, vectorized:

``woken``
    the task slept (switched out in a state other than R), was woken (its first
    ``sched_wakeup`` or ``sched_wakeup_new`` after the switch-out), and waited from
    that wake-up to its next switch-in. A second wake-up before that switch-in says
    the task ran unseen in between (a sleeping task only is woken): that wait is left
    out (its end is not in the trace). ``sched_waking`` is not a wake-up here:
    perf sched latency has no handler for it (docs/waits.md).
``preempted``
    the task was switched out runnable (``prev_state`` R or R+) and waited from that
    switch-out to its next switch-in.
``first_seen``
    the task's first event in the trace is its switch-in: perf sched latency counts
    a wait of 0 (it makes a runnable atom at that switch-in). Kept so that the counts
    and averages per task agree with perf's; no report calls it a wait.

A wait ends where the trace proves the task ran (:mod:`.completeness`, its ``runs``): at
its switch-in, or, when that switch-in is missing from the trace, at its first event in
its own context (or its switch-out); ``min_end_ts`` is the earliest it can have ended
(the switch-in time when recorded, else the start of the unknown stretch before the
proof, not before the wait began), so the wait lasted between ``min_end_ts - start_ts``
and ``delay_ns``; ``exact`` says the two are one.

Columns: ``pid``, ``comm`` (the name the run's switch-in or proof gives), ``kind``,
``start_ts``, ``end_ts`` (the switch-in, or the proof), ``delay_ns``, ``cpu`` (the CPU
it ran on), ``from_cpu`` (the CPU of the switch-out of a preempted wait, else -1),
``min_end_ts``, ``exact``, ``cut`` (a wait of a slice of a trace that leaves the slice:
:func:`cut_to_slice`), ``task`` (the waiting task: its life key, :mod:`.lives`, the pid
but for a later task of a pid used again).

:func:`breakdown` splits one wait, from ``start_ts`` to ``end_ts``, into named parts
that add up to it to the nanosecond (docs/waits.md):

* ``wake_path``: from ``sched_waking`` to ``sched_wakeup`` (the wake-up's own path,
  its migration if any), for a wait that starts at the waking;
* then, on the CPU the task was queued on (a new CPU after each
  ``sched_migrate_task`` of the task during the wait), one part per task that ran
  there instead (``task``: pid, comm, class), ``idle`` for the time that CPU was idle
  while the task was queued (a missed wake-up), and ``unknown`` where the trace
  cannot tell (before the CPU's first ``sched_switch``, or a stretch in which the
  ring buffer lost events on that CPU).

Beside the parts, ``llc_idle_us`` is how long at least one *other* CPU of the queued
CPU's LLC was idle during the queued time (idle-while-runnable). It overlaps the
parts, so it is not one of them.

The class of a task that ran instead is read from what the trace shows:
``stopper`` (migration/N), ``ksoftirqd`` (ksoftirqd/N), ``rt_dl`` (a priority
below 100 in its ``sched_switch``), ``percpu_kthread`` (a name bound to one CPU,
e.g. kworker/N:M), and for fair tasks the priority compared with the waiting
task's: ``fair_same_nice``, ``fair_heavier`` (a lower nice: a larger weight),
``fair_lighter``. Cgroup weights are not in a trace: two tasks of the same nice in
cgroups of different weight both show as ``fair_same_nice``. ``fair`` when the
priorities are not in the trace.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from . import _passes, tasks
from ._util import (
    asof_index,
    cat_mask,
    in_key_time_order,
    lex_order,
    pick_cat,
    stable_order,
    take,
    take_cat,
)
from .events import Events, i64, ints
from .lives import pid_of

if TYPE_CHECKING:
    from ..topology import Topology

#: A CPU's intervals overlapping a stretch (:meth:`CpuIndex.intervals`): start, end, pid,
#: comm, prio, known, lost.
_Intervals = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]

#: Kinds of the waits table.
KINDS = ("woken", "preempted", "first_seen")

_OUT_R, _OUT_S, _WAKE, _IN = 0, 1, 2, 3

#: Why a part of a wait is ``unknown``.
UNKNOWN_LOST = "the ring buffer lost events on that CPU in this stretch"
UNKNOWN_UNCOVERED = "before that CPU's first sched_switch"
UNKNOWN_MISSING = "a sched_switch of that CPU is missing from the trace"
UNKNOWN_RAN = "the task itself ran meanwhile: its switch-in is missing from the trace"
UNKNOWN_OUTSIDE = "on a CPU outside the slice (--cpu)"
_BIG = np.iinfo(np.int64).max


def _runnable(s: pd.DataFrame, states: Collection[str] = ("R", "R+")) -> np.ndarray:
    """Per ``sched_switch``: switched out runnable (``prev_state`` in ``states``)."""
    if "prev_state_str" not in s.columns:
        return np.zeros(len(s), dtype=bool)
    return cat_mask(s["prev_state_str"].array, lambda state: state in states)


def build(
    ev: Events,
    runs: pd.DataFrame | None,
    runnable_states: Collection[str] = ("R", "R+"),
    rewoken_unseen: bool = True,
) -> pd.DataFrame:
    """The waits table of ``ev`` (see the module's docstring): a wait ends at a switch-in,
    or at the first proof of a run of the task whose switch-in is missing (``runs``:
    :mod:`.completeness`'s; None: at switch-ins only). ``rewoken_unseen``: a woken wait
    that a second wake-up follows before any run is left out (the task ran unseen).
    ``build(ev, None, rewoken_unseen=False)`` counts exactly what ``perf sched
    latency`` counts, on any trace."""
    s = ev.switch
    if s is None or len(s) == 0:
        return _empty()
    sts = ints(s, "ts")
    prev, nxt = ints(s, "prev_pid"), ints(s, "next_pid")
    ns = len(s)
    runs, censored, ctie = _censored(runs, ns)
    cts = runs["start_ts"].to_numpy()[censored]
    parts_ts = [sts, sts, cts]
    parts_pid = [prev, nxt, runs["pid"].to_numpy()[censored] if len(censored) else censored]
    parts_kind = [
        np.where(_runnable(s, runnable_states), _OUT_R, _OUT_S).astype(np.int8),
        np.full(ns, _IN, np.int8),
        np.full(len(censored), _IN, np.int8),
    ]
    # rows: a switch-out's switch row; a switch-in's, plus ns; a run whose switch-in is
    # missing, its row in ``runs`` plus 2 ns
    parts_row = [np.arange(ns), ns + np.arange(ns), 2 * ns + censored]
    # at one time, events in the switches' order, a switch's switch-out before its
    # switch-in (perf: sched_out, then sched_in); the runs as :func:`_censored` says
    parts_tie = [np.arange(ns) * 2, np.arange(ns) * 2 + 1, ctie]
    for f in (ev.wakeup, ev.wakeup_new):
        if f is not None and len(f):
            parts_ts.append(ints(f, "ts"))
            parts_pid.append(ints(f, "pid"))
            parts_kind.append(np.full(len(f), _WAKE, np.int8))
            parts_row.append(np.full(len(f), -1))
            parts_tie.append(np.full(len(f), -1))
    ts = np.concatenate(parts_ts)
    pid = np.concatenate(parts_pid).astype(np.int64)
    kind = np.concatenate(parts_kind)
    row = np.concatenate(parts_row)
    tie = np.concatenate(parts_tie)
    del parts_ts, parts_pid, parts_kind, parts_row, parts_tie
    # each task by its life (:mod:`.lives`): a wait never runs from one task of a pid
    # used again to the next (perf makes a new thread at the fork, and its own atoms)
    task = np.ascontiguousarray(ev.key(pid, ts), dtype=np.int64)
    # the rows in (task, time) order, but the idle task's (it never waits: perf leaves out
    # "swapper")
    src = _task_time_order(task, ts, tie, pid)
    del pid, tie
    n = len(src)
    if n == 0:
        return _empty()
    # the per-task state machine, one pass in C (_pass_waits.c) over the rows in that
    # order: an epoch runs from a switch-out (a new perf "atom") or a task's first event
    # to the next; its wait starts at a preempting switch-out, the first wake-up after a
    # sleeping one, or a first switch-in of a task first seen there (first seen by its
    # own events: no wait counted), and ends at the first switch-in at or after that. A
    # second wake-up strictly before that run (at one time, the order of a wake-up among
    # the switches is not known) says the task ran unseen and slept again in between (a
    # wake-up needs a task that is not TASK_RUNNING: completeness 'rewoken'), so the
    # wait's end is not in the trace: it is left out when ``rewoken_unseen``. Each wait
    # as rows: a (where it starts), e (where it ends), head (its epoch's first)
    a, e, head = (np.empty(n, dtype=np.int64) for _ in range(3))
    wkind = np.empty(n, dtype=np.int8)
    m = _passes.wait_epochs(
        src,
        task,
        kind,
        np.ascontiguousarray(row, dtype=np.int64),
        ts,
        ns,
        rewoken_unseen,
        a,
        e,
        head,
        wkind,
    )
    del src
    # the waits by (start, pid), stably: in epoch order within one
    wpid = pid_of(task[e[:m]])
    o = lex_order(wpid, ts[a[:m]])
    a, e, head, wkind, wpid = a[o], e[o], head[o], wkind[o], wpid[o]
    del o
    hk = kind[head]
    out_row = np.where(hk == _OUT_R, row[head], -1)
    return _frame(s, runs, wpid, wkind, ts[a], ts[e], row[e], out_row, task[e])


def _frame(
    s: pd.DataFrame,
    runs: pd.DataFrame,
    wpid: np.ndarray,
    wkind: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    erow: np.ndarray,
    out_row: np.ndarray,
    task: np.ndarray,
) -> pd.DataFrame:
    """The waits table of waits found (:func:`build`, :func:`preempted`), one element
    a wait: its pid, kind code, start and end, ``erow`` (what ended it: a switch-in's
    switch row plus ns, a run's row in ``runs`` plus 2 ns), ``out_row`` (the switch
    row of a preempted wait's switch-out, else -1) and task."""
    ns = len(s)
    scpu = ints(s, "cpu")
    by_run = erow >= 2 * ns  # (ended by a run shown by its events, not a switch-in)
    srow = np.where(by_run, 0, erow - ns)
    rrow = np.where(by_run, erow - 2 * ns, 0)
    if by_run.any():
        earliest = np.where(by_run, runs["earliest_ts"].to_numpy()[rrow], end)
        run_cpu = runs["cpu"].to_numpy()[rrow]
        comm = pick_cat(
            by_run, take_cat(runs["comm"].array, rrow), take_cat(s["next_comm"].array, srow)
        )
    else:
        earliest, run_cpu = end, scpu[srow]
        comm = s["next_comm"].array.take(srow)
    min_end = np.minimum(np.maximum(earliest, start), end)
    return pd.DataFrame(
        {
            "pid": wpid,
            "comm": comm,
            "kind": pd.Categorical.from_codes(wkind, categories=list(KINDS)),
            "start_ts": start,
            "end_ts": end,
            "delay_ns": end - start,
            "cpu": np.where(by_run, run_cpu, scpu[srow]).astype(np.int32),
            "from_cpu": np.where(out_row >= 0, scpu[np.maximum(out_row, 0)], -1).astype(np.int32),
            "min_end_ts": min_end,
            "exact": min_end == end,
            "cut": np.zeros(len(end), dtype=bool),
            "task": task,
        },
        copy=False,  # (fresh arrays: kept as they are, not copied into 2-D blocks)
    )


def _censored(runs: pd.DataFrame | None, ns: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The runs (None: none) and those of them whose switch-in is missing (their rows),
    with each one's tie among the events of its time: a run shown by its events comes
    after the switches, but for a run of no length that its switch-out ends (before
    that switch-out)."""
    if runs is None:
        runs = pd.DataFrame({"start_ts": np.zeros(0, np.int64)})
        return runs, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    censored = np.flatnonzero(~runs["exact_start"].to_numpy())
    zero = np.zeros(len(censored), dtype=bool)
    if len(censored):
        zero = (runs["start_ts"].to_numpy()[censored] == runs["end_ts"].to_numpy()[censored]) & (
            np.asarray(runs["end"].cat.codes)[censored] == 0
        )
    return runs, censored, np.where(zero, -2, 2 * ns + 2).astype(np.int64)


def preempted(
    ev: Events, runs: pd.DataFrame | None, runnable_states: Collection[str] = ("R", "R+")
) -> pd.DataFrame:
    """The preempted waits of :func:`build` (its rows of kind ``preempted``, in its
    order; ``analyze`` reads no other wait), from the switches and the runs whose
    switch-in is missing alone: no wake-up ends or arms a preempted wait, so one pass in
    C over those events in time order (``_passes.preempted_ends``) finds each wait's end,
    with no sort of every event by task. :func:`build`'s where that pass cannot answer
    (events out of time order, pids far apart)."""
    s = ev.switch
    if s is None or len(s) == 0:
        return _empty()
    sts = np.ascontiguousarray(ints(s, "ts"), dtype=np.int64)
    ns = len(s)
    given = runs
    runs, censored, ctie = _censored(runs, ns)
    cts = runs["start_ts"].to_numpy()[censored].astype(np.int64)
    # the runs in (ts, tie) order, stably (they are few)
    co = np.lexsort((ctie, cts))
    censored, cts, ctie = censored[co], cts[co], ctie[co]
    cpid = runs["pid"].to_numpy()[censored] if len(censored) else censored

    def key(pid: np.ndarray, ts: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(ev.key(pid, ts), dtype=np.int64)

    # the life key of each switch-out, switch-in and run (a wait is one task's)
    prev_key, next_key, run_key = (
        key(ints(s, "prev_pid"), sts),
        key(ints(s, "next_pid"), sts),
        key(cpid, cts),
    )
    ends = np.empty(ns, dtype=np.int64)  # (2 ns + c: the c-th of the runs as sorted)
    runnable = _runnable(s, runnable_states).view(np.uint8)
    if not _passes.preempted_ends(
        sts, prev_key, next_key, runnable, cts, run_key, ctie, np.arange(len(cts)), ends
    ):
        w = build(ev, given, runnable_states)
        return w[(w["kind"] == "preempted").to_numpy()].reset_index(drop=True)
    head = np.flatnonzero(ends >= 0)  # (the switch-outs that arm one, in time order)
    erow = ends[head]
    del ends
    by_run = erow >= 2 * ns
    at = np.where(by_run, 0, erow - ns)  # (the switch-in)
    end, task = sts[at], next_key[at]
    if by_run.any():
        c = erow[by_run] - 2 * ns
        end[by_run], task[by_run] = cts[c], run_key[c]
        erow[by_run] = 2 * ns + censored[c]  # (:func:`_frame`'s: the run's row)
    wpid = pid_of(task)
    # the waits by (start, pid), stably: of one pid and start, in time order (one
    # task's: a pid's lives do not share a time)
    o = lex_order(wpid, sts[head])
    head, erow, end, task, wpid = head[o], erow[o], end[o], task[o], wpid[o]
    kind = np.ones(len(head), dtype=np.int8)  # (KINDS' preempted)
    return _frame(s, runs, wpid, kind, sts[head], end, erow, head, task)


def _task_time_order(
    task: np.ndarray, ts: np.ndarray, tie: np.ndarray, pid: np.ndarray
) -> np.ndarray:
    """The rows but those of pid 0 in the stable ``np.lexsort((tie, ts, task))`` order:
    one stable sort of (ts, tie) packed into an int64 (runs already in time order: a
    merge), then a stable order by task that leaves out pid 0 (one counting sort in C,
    ``_passes.task_order``, for pids)."""
    if len(ts) == 0:
        return np.zeros(0, dtype=np.int64)
    t0, b0 = int(ts.min()), int(tie.min())
    tbits = (int(ts.max()) - t0).bit_length()
    bbits = (int(tie.max()) - b0).bit_length()
    if tbits + bbits > 62:
        keep = np.flatnonzero(pid != 0)
        return keep[np.lexsort((tie[keep], ts[keep], task[keep]))]
    packed = ts - t0
    packed <<= bbits
    packed += tie
    packed -= b0
    by_time = np.argsort(packed, kind="stable").astype(np.int64, copy=False)
    del packed
    lo, hi = int(task.min()), int(task.max())
    if hi - lo < max(2 * len(task), 1 << 16):
        out = np.empty(len(by_time), dtype=np.int64)
        m = _passes.task_order(task, by_time, np.ascontiguousarray(pid, dtype=np.int64), lo,
                               hi - lo + 1, out)  # fmt: skip
        return out[:m]
    keep = by_time[pid[by_time] != 0]
    return keep[stable_order(task[keep])]


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pid": np.zeros(0, np.int32),
            "comm": pd.Categorical([]),
            "kind": pd.Categorical([], categories=list(KINDS)),
            "start_ts": np.zeros(0, np.int64),
            "end_ts": np.zeros(0, np.int64),
            "delay_ns": np.zeros(0, np.int64),
            "cpu": np.zeros(0, np.int32),
            "from_cpu": np.zeros(0, np.int32),
            "min_end_ts": np.zeros(0, np.int64),
            "exact": np.zeros(0, bool),
            "cut": np.zeros(0, bool),
            "task": np.zeros(0, np.int64),
        }
    )


def cut_to_slice(
    w: pd.DataFrame, migrate: pd.DataFrame | None, hi: int | None, cpus: Iterable[int] | None
) -> pd.DataFrame:
    """The waits of a slice of a trace (``w``, built from its events and the whole
    trace's runs) cut where each leaves the slice: a move off its CPUs (the whole trace's
    ``migrate``: orig_cpu in ``cpus``, dest_cpu not), a run on a CPU outside them, the
    window's end ``hi``. A cut wait (``cut``) ends there; it is not exact (its length
    in the slice is all the slice shows), and its ``cpu`` is the one it left from."""
    w = w.copy()
    if len(w) == 0:
        return w
    start, end = w["start_ts"].to_numpy(), w["end_ts"].to_numpy()
    pid = w["pid"].to_numpy().astype(np.int64)
    cpu = w["cpu"].to_numpy().astype(np.int64)
    leave = np.full(len(w), _BIG, dtype=np.int64)
    left_from = np.full(len(w), -1, dtype=np.int64)
    if cpus is not None:
        keep = np.asarray(sorted(cpus), dtype=np.int64)
        if migrate is not None and len(migrate):
            orig, dest = i64(migrate, "orig_cpu"), i64(migrate, "dest_cpu")
            away = np.isin(orig, keep) & ~np.isin(dest, keep)
            mts, mpid = i64(migrate, "ts")[away], i64(migrate, "pid")[away]
            mi = asof_index(start, pid, mts, mpid, "forward", allow_exact=False)
            leave = take(mts, mi, _BIG)
            left_from = take(orig[away], mi, -1)
        elsewhere = ~np.isin(cpu, keep)
        at = np.maximum(w["min_end_ts"].to_numpy(), start)
        leave = np.where(elsewhere & (at < leave), at, leave)
    if hi is not None:
        leave = np.minimum(leave, int(hi))
    cut = leave < end
    if cut.any():
        from_cpu = w["from_cpu"].to_numpy()
        new_cpu = np.where(left_from >= 0, left_from, np.where(from_cpu >= 0, from_cpu, cpu))
        w.loc[cut, "end_ts"] = leave[cut]
        w.loc[cut, "delay_ns"] = leave[cut] - start[cut]
        w.loc[cut, "min_end_ts"] = np.minimum(w["min_end_ts"].to_numpy()[cut], leave[cut])
        w.loc[cut, "exact"] = False
        w.loc[cut, "cpu"] = new_cpu[cut].astype(np.int32)
        w.loc[cut, "cut"] = True
    return w


def per_task(waits: pd.DataFrame) -> pd.DataFrame:
    """Per task, as ``perf sched latency -p`` prints it (a row per thread, and perf
    makes a new thread at a fork of a tid it knows): ``count`` (its Switches column),
    ``avg_ns`` (total / count, truncated as perf does), ``max_ns``,
    ``max_start_ts``/``max_end_ts`` (the first wait of the maximum) and ``pid``. Indexed
    by task: the ``task`` column's life key (:mod:`.lives`: the pid, but for a later
    task of a pid used again), so two tasks that shared a pid are two rows; a table
    without it, by pid."""
    cols = ["count", "avg_ns", "max_ns", "max_start_ts", "max_end_ts", "pid"]
    if len(waits) == 0:
        return pd.DataFrame(columns=cols)
    key = "task" if "task" in waits.columns else "pid"
    g = waits.groupby(key, sort=True)
    total = g["delay_ns"].sum()
    count = g["delay_ns"].size()
    at = waits.loc[g["delay_ns"].idxmax()].set_index(key)
    return pd.DataFrame(
        {
            "count": count,
            "avg_ns": total // count,
            "max_ns": g["delay_ns"].max(),
            "max_start_ts": at["start_ts"],
            "max_end_ts": at["end_ts"],
            "pid": pid_of(count.index.to_numpy()).astype(np.int64),
        }
    )


# ---- the breakdown of one wait ------------------------------------------------------


class CpuIndex:
    """Per CPU, its timeline in time order (:mod:`.completeness`: who runs from each
    interval's start on, with the priority its switch-in gave it; the unknown
    intervals) and where the ring buffer lost events: the intervals the breakdown
    clips, found by binary search."""

    def __init__(
        self,
        ev: Events,
        timeline: pd.DataFrame,
        lost: pa.Table | None = None,
        migrate: pd.DataFrame | None = None,
        cpus: Iterable[int] | None = None,
    ) -> None:
        s = ev.switch
        #: for a slice of some CPUs: them (a stretch on another CPU is outside it)
        self.cpus: frozenset[int] | None = None if cpus is None else frozenset(cpus)
        if migrate is None:
            migrate = ev.migrate
        self.by_cpu: dict[int, tuple] = {}
        self.first_row: dict[int, int] = {}
        self.rows: tuple[np.ndarray, ...] = ()
        self.comm_names = np.zeros(0, dtype=object)
        self._peers: dict[int, list[int]] = {}
        self.prio_known = s is not None and "next_prio" in s.columns
        tl = timeline
        if len(tl):
            ts, cpu, pid = tl["start_ts"].to_numpy(), tl["cpu"].to_numpy(), tl["pid"].to_numpy()
            # (the model's timeline is in (cpu, ts) order already: checked, not sorted)
            order = None if in_key_time_order(ts, cpu) else lex_order(ts, cpu)

            def rows(a: np.ndarray) -> np.ndarray:
                return a if order is None else a[order]

            c = rows(cpu)
            cuts = np.flatnonzero(c[1:] != c[:-1]) + 1
            bounds = np.concatenate([[0], cuts, [len(c)]])
            o_ts, o_pid = rows(ts), rows(pid).astype(np.int64)
            if self.prio_known:
                # the priority of the task's switch-in at or before the interval began,
                # searched with the intervals in time order (one walk over them and
                # the switches, not a search per CPU's run of them)
                by_time = np.argsort(o_ts, kind="stable")
                sts, snext = i64(s, "ts"), ints(s, "next_pid")
                si = np.empty(len(o_ts), dtype=np.int64)
                si[by_time] = asof_index(
                    o_ts[by_time], o_pid[by_time], sts, snext, "backward", allow_exact=True
                )
                del by_time
                o_prio = take(ints(s, "next_prio"), si, -1).astype(np.int64)
            else:
                o_prio = np.full(len(ts), -1, dtype=np.int64)
            # names as codes into self.comm_names: no pandas indexing per wait
            comm, names = pd.factorize(rows(tl["comm"].array))
            comm = comm.astype(np.int64, copy=False)
            self.comm_names = np.asarray(names, dtype=object)
            # (by category: no string per interval)
            known = ~rows(cat_mask(pd.Categorical(tl["state"]), lambda s: s == "unknown"))
            lost_row = rows(cat_mask(pd.Categorical(tl["why"]), lambda w: w == "lost_events"))
            #: the columns of every CPU's intervals, one CPU after another (by_cpu's
            #: are slices of them), and where each CPU's begin
            self.rows = (o_ts, o_pid, comm, o_prio, known, lost_row)
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                self.first_row[int(c[lo])] = int(lo)
                self.by_cpu[int(c[lo])] = (
                    o_ts[lo:hi], o_pid[lo:hi], comm[lo:hi], o_prio[lo:hi], known[lo:hi],
                    lost_row[lo:hi],
                )  # fmt: skip
        #: per CPU, where the ring buffer lost events (the losses a file places in time)
        self.lost: dict[int, np.ndarray] = {}
        if lost is not None and lost.num_rows:
            lts = lost.column("ts").to_numpy()
            lcpu = lost.column("cpu").to_numpy()
            for c in np.unique(lcpu):
                self.lost[int(c)] = np.sort(lts[lcpu == c])
        mts = i64(migrate, "ts") if migrate is not None and len(migrate) else None
        #: the migrations by (pid, ts): pid, ts, orig_cpu, dest_cpu arrays; None: none
        self.mig: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None
        if mts is not None:
            mpid = ints(migrate, "pid")
            order = lex_order(mts, mpid)
            self.mig = (
                mpid[order],
                mts[order],
                ints(migrate, "orig_cpu")[order],
                ints(migrate, "dest_cpu")[order],
            )
        else:
            self.mig = None

    def span(self, cpu: int, a: int, b: int) -> tuple[int, int, int]:
        """The intervals of ``cpu`` overlapping ``[a, b)``: their rows ``[i0, i1)`` in
        ``by_cpu[cpu]`` (none: i1 <= i0), and the stretch at the start the trace does not
        cover (all of it when none overlap)."""
        got = self.by_cpu.get(cpu)
        if got is None:
            return 0, 0, b - a
        ts = got[0]
        i0 = int(np.searchsorted(ts, a, "right")) - 1
        i1 = int(np.searchsorted(ts, b, "left"))
        uncovered = 0
        if i0 < 0:
            uncovered = int(min(ts[0], b) - a) if len(ts) else b - a
            i0 = 0
        if i1 <= i0:
            return i0, i1, b - a if uncovered == 0 and i1 == 0 else uncovered
        return i0, i1, uncovered

    def intervals(self, cpu: int, a: int, b: int) -> tuple[_Intervals | None, int]:
        """The intervals of ``cpu`` overlapping ``[a, b)``, clipped: (start, end, pid,
        comm, prio, known, lost) arrays, plus the stretch at the start the trace does not
        cover."""
        i0, i1, uncovered = self.span(cpu, a, b)
        if i1 <= i0:
            return None, uncovered
        ts, pid, comm, prio, known, lost = self.by_cpu[cpu]
        # (clipped to [a, b): the last ends at b, the next's start being at or after it)
        start = ts[i0:i1].copy()
        end = np.empty(i1 - i0, dtype=np.int64)
        end[:-1] = ts[i0 + 1 : i1]
        end[-1] = b
        np.maximum(start, a, out=start)
        np.minimum(end, b, out=end)
        return (
            (start, end, pid[i0:i1], comm[i0:i1], prio[i0:i1], known[i0:i1], lost[i0:i1]),
            uncovered,
        )

    def segments(self, pid: int, cpu_at_end: int, a: int, b: int) -> list[tuple[int, int, int]]:
        """``[a, b)`` cut at each ``sched_migrate_task`` of ``pid`` inside it: (cpu,
        start, end) per stretch, the CPU the task was queued on in it."""
        if self.mig is None:
            return [(cpu_at_end, a, b)]
        mpid, mts, morig, mdest = self.mig
        lo = int(np.searchsorted(mpid, pid, "left"))
        hi = int(np.searchsorted(mpid, pid, "right"))
        t = mts[lo:hi]
        i0 = lo + int(np.searchsorted(t, a, "right"))
        i1 = lo + int(np.searchsorted(t, b, "left"))
        if i1 <= i0:
            return [(cpu_at_end, a, b)]
        out = []
        at = a
        for i in range(i0, i1):
            out.append((int(morig[i]), at, int(mts[i])))
            at = int(mts[i])
        out.append((int(mdest[i1 - 1]), at, b))
        return [x for x in out if x[2] > x[1]] or [(cpu_at_end, a, b)]

    def llc_peers(self, topology: Topology, cpu: int) -> list[int]:
        """The other CPUs of ``cpu``'s LLC that the trace has switches of."""
        if cpu not in self._peers:
            cpus = sorted(self.by_cpu)
            known = [c for c in cpus if c < topology.cpus]
            if cpu >= topology.cpus or not known:  # a CPU the topology does not know
                self._peers[cpu] = []
            else:
                llc = topology.llc_of(np.array(known + [cpu]))
                self._peers[cpu] = [
                    c for c, l_ in zip(known, llc[:-1]) if c != cpu and l_ == llc[-1]
                ]
        return self._peers[cpu]

    def prio_of(self, pid: int, ts: int) -> int | None:
        """The priority ``pid`` is switched in with at ``ts`` (on any CPU), or None."""
        if not self.prio_known:
            return None
        for ts_c, pid_c, _, prio_c, _, _ in self.by_cpu.values():  # (an interval's start)
            i = int(np.searchsorted(ts_c, ts, "left"))
            while i < len(ts_c) and ts_c[i] == ts:
                if pid_c[i] == pid:
                    return int(prio_c[i])
                i += 1
        return None

    def lost_between(self, cpu: int, a: int, b: int) -> bool:
        lts = self.lost.get(cpu)
        if lts is None:
            return False
        return int(np.searchsorted(lts, b, "right")) > int(np.searchsorted(lts, a, "left"))


@functools.lru_cache(maxsize=1 << 14)
def task_class(comm: str, prio: int | None, waiter_prio: int | None) -> str:
    """The class of a task that ran while another waited (see the module docstring);
    remembered (a wait breaks into hundreds of tasks, most named again and again)."""
    if comm.startswith("migration/"):
        return "stopper"
    if comm.startswith("ksoftirqd/"):
        return "ksoftirqd"
    if prio is not None and prio < 100:  # RT 0-99; deadline tasks show -1
        return "rt_dl"
    if tasks.kthread_cpu(comm) >= 0:
        return "percpu_kthread"
    if prio is None or prio < 100 or waiter_prio is None or waiter_prio < 100:
        return "fair"
    if prio == waiter_prio:
        return "fair_same_nice"
    return "fair_heavier" if prio < waiter_prio else "fair_lighter"


#: The kinds of a wait's parts (:class:`Parts`' ``part``), by code.
PART_NAMES = ("wake_path", "unknown", "idle", "task")
_WAKE_PATH, _UNKNOWN, _IDLE, _TASK = range(4)
#: Why a part is ``unknown``, by code (:class:`Parts`' ``why``).
WHYS = (UNKNOWN_OUTSIDE, UNKNOWN_LOST, UNKNOWN_UNCOVERED, UNKNOWN_RAN, UNKNOWN_MISSING)
_W_OUTSIDE, _W_LOST, _W_UNCOVERED, _W_RAN, _W_MISSING = range(5)


class Parts(NamedTuple):
    """The parts of one wait (:func:`parts_of`) as arrays, one element a part, in the
    order of :func:`breakdown`'s ``parts`` (``wake_path`` first, then the largest
    first; of equal ones the first found), parts of no time left out."""

    part: np.ndarray  #: code into PART_NAMES
    why: np.ndarray  #: an unknown part's code into WHYS, else -1
    cpu: np.ndarray  #: an idle or task part's CPU, else -1
    pid: np.ndarray  #: a task part's pid, else -1
    comm: np.ndarray  #: a task part's name: code into the CpuIndex's comm_names, else -1
    prio: np.ndarray  #: a task part's priority (-1: none), else -1
    ns: np.ndarray  #: the part's time
    total_ns: int  #: end - start: the parts' ns add up to it
    cpus: list[int]  #: the CPUs the task was queued on, in turn
    llc_idle_ns: int  #: at least one other CPU of the queued CPU's LLC idle this long
    llc_idle_cpus: list[int]  #: those CPUs


def parts_of(
    index: CpuIndex,
    topology: Topology,
    pid: int,
    start_ts: int,
    end_ts: int,
    cpu_at_end: int,
    wakeup_ts: int | None = None,
) -> Parts:
    """The parts of one wait of ``pid`` from ``start_ts`` to ``end_ts`` (its switch-in
    on ``cpu_at_end``) as arrays: what :func:`breakdown` gives as dicts."""
    return parts_many(index, topology, [(pid, start_ts, end_ts, cpu_at_end, wakeup_ts)])[0]


#: A part's place among those found (:func:`parts_many`): its stretch's, then this.
_AT_WAKE, _AT_UNCOVERED, _AT_RAN, _AT_LOST, _AT_MISSING, _AT_IDLE, _AT_TASK = range(-1, 6)


def parts_many(
    index: CpuIndex, topology: Topology, waits: Iterable[tuple[int, int, int, int, int | None]]
) -> list[Parts]:
    """The parts of each of ``waits`` ((pid, start_ts, end_ts, cpu_at_end, wakeup_ts)
    each, as :func:`parts_of` takes them), found together (a tail explains hundreds of
    waits): the intervals of every stretch of every wait summed in one compiled pass
    (:func:`_stretch_sums`), the parts ordered and merged in whole-array steps, not in
    steps per wait and stretch."""
    # per stretch (a CPU the task was queued on, in turn): its wait, CPU, [a, b), and
    # its rows [r0, r1) of index.rows; the parts found of whole stretches and wake paths
    waits = list(waits)
    seg_wait: list[int] = []
    seg_cpu: list[int] = []
    seg_a: list[int] = []
    seg_b: list[int] = []
    seg_r0: list[int] = []
    seg_r1: list[int] = []
    found: list[tuple[int, int, int, int, int, int]] = []  # (stretch, at, part, why, cpu, ns)
    cpus: list[list[int]] = []
    llc: list[tuple[int, set[int]]] = []
    for w, (pid, start_ts, end_ts, cpu_at_end, wakeup_ts) in enumerate(waits):
        queued_from = start_ts
        g0 = len(seg_wait)
        if wakeup_ts is not None and start_ts < wakeup_ts <= end_ts:
            found.append((g0, _AT_WAKE, _WAKE_PATH, -1, -1, wakeup_ts - start_ts))
            queued_from = wakeup_ts
        segs = index.segments(pid, cpu_at_end, queued_from, end_ts)
        cpus.append([c for c, _, _ in segs])
        llc_idle, llc_cpus = 0, set()
        for cpu, a, b in segs:
            g = len(seg_wait)
            seg_wait.append(w)
            seg_cpu.append(cpu)
            seg_a.append(a)
            seg_b.append(b)
            r0 = r1 = 0
            if index.cpus is not None and cpu not in index.cpus:
                found.append((g, _AT_UNCOVERED, _UNKNOWN, _W_OUTSIDE, -1, b - a))
            elif index.lost_between(cpu, a, b):
                found.append((g, _AT_UNCOVERED, _UNKNOWN, _W_LOST, -1, b - a))
            else:
                i0, i1, uncovered = index.span(cpu, a, b)
                found.append((g, _AT_UNCOVERED, _UNKNOWN, _W_UNCOVERED, -1, uncovered))
                if i1 > i0:
                    r0, r1 = index.first_row[cpu] + i0, index.first_row[cpu] + i1
                    d, c = _llc_idle(index, topology, cpu, a, b)
                    llc_idle += d
                    llc_cpus |= c
            seg_r0.append(r0)
            seg_r1.append(r1)
        llc.append((llc_idle, llc_cpus))
    seg = _stretch_sums(index, seg_wait, seg_a, seg_b, seg_r0, seg_r1, waits)
    # the found parts as columns: whole stretches' and wake paths', then the intervals'
    f = np.array(found, dtype=np.int64).reshape(-1, 6)
    none = np.full(len(f), -1, dtype=np.int64)
    stretch = np.concatenate([f[:, 0], seg["g"]])
    cols = {
        "at": np.concatenate([f[:, 1], seg["at"]]),
        "part": np.concatenate([f[:, 2], seg["part"]]),
        "why": np.concatenate([f[:, 3], seg["why"]]),
        "cpu": np.concatenate(
            [f[:, 4], np.where(seg["part"] != _UNKNOWN, np.asarray(seg_cpu)[seg["g"]], -1)]
        ),
        "pid": np.concatenate([none, seg["pid"]]),
        "comm": np.concatenate([none, seg["comm"]]),
        "prio": np.concatenate([none, seg["prio"]]),
        "ns": np.concatenate([f[:, 5], seg["ns"]]),
    }
    # unknown parts of no time are not found (an idle part of no time is, and goes)
    keep = (cols["part"] != _UNKNOWN) | (cols["ns"] > 0)
    stretch = stretch[keep]
    cols = {k: v[keep] for k, v in cols.items()}
    wait = np.asarray(seg_wait, dtype=np.int64)[stretch] if len(stretch) else stretch
    # the order found: by wait, stretch, place, then a task's (pid, comm, prio) (as
    # _stretch_sums gives a stretch's tasks: a stable sort by stretch and place keeps it)
    found_at = np.lexsort((cols["at"], stretch))
    cols = {k: v[found_at] for k, v in cols.items()}
    wait = wait[found_at]
    stretches = np.bincount(np.asarray(seg_wait, dtype=np.int64), minlength=len(waits))
    first, ns = _first_places(wait, cols, stretches)
    # parts of no time left out; per wait: wake_path first, then the largest first
    keep = ns > 0
    first, ns = first[keep], ns[keep]
    order = np.lexsort((first, -ns, cols["part"][first] != _WAKE_PATH, wait[first]))
    first, ns = first[order], ns[order]
    bounds = np.searchsorted(wait[first], np.arange(len(waits) + 1))
    out = []
    for w, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        at = first[lo:hi]
        out.append(
            Parts(
                cols["part"][at],
                cols["why"][at],
                cols["cpu"][at],
                cols["pid"][at],
                cols["comm"][at],
                cols["prio"][at],
                ns[lo:hi],
                total_ns=int(waits[w][2] - waits[w][1]),
                cpus=cpus[w],
                llc_idle_ns=int(llc[w][0]),
                llc_idle_cpus=sorted(llc[w][1]),
            )
        )
    return out


def _first_places(
    wait: np.ndarray, cols: dict[str, np.ndarray], stretches: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The parts found (``cols``, of waits ``wait``, in the order found) each once: a
    part found again, in a later stretch of its wait, adds to its first place. Each
    part's first place and its time; only the waits of more than one stretch
    (``stretches``: per wait) can find one twice."""
    many = np.flatnonzero(stretches[wait] > 1) if len(wait) else wait
    if len(many) == 0:
        return np.arange(len(wait)), cols["ns"]
    ident = [wait[many]] + [cols[k][many] for k in ("part", "why", "cpu", "pid", "comm", "prio")]
    by_ident = many[np.lexsort([many] + ident[::-1])]
    new = np.zeros(len(by_ident), dtype=bool)
    new[:1] = True
    for k in [wait] + [cols[k] for k in ("part", "why", "cpu", "pid", "comm", "prio")]:
        ks = k[by_ident]
        new[1:] |= ks[1:] != ks[:-1]
    starts = np.flatnonzero(new)
    one = np.ones(len(wait), dtype=bool)
    one[many] = False
    first = np.concatenate([np.flatnonzero(one), by_ident[starts]])
    ns = np.concatenate([cols["ns"][one], np.add.reduceat(cols["ns"][by_ident], starts)])
    return first, ns


def _stretch_sums(
    index: CpuIndex,
    seg_wait: list[int],
    seg_a: list[int],
    seg_b: list[int],
    seg_r0: list[int],
    seg_r1: list[int],
    waits: list[tuple[int, int, int, int, int | None]],
) -> dict[str, np.ndarray]:
    """The parts the intervals of the stretches show (rows [r0, r1) of ``index.rows``
    each, clipped to the stretch's [a, b)), summed per stretch and part in one pass in C
    (``_passes.stretch_parts``): ``g`` (the stretch), ``at`` (its place among the
    stretch's parts), ``part``, ``why``, ``pid``, ``comm``, ``prio`` and ``ns``. An
    unknown part may be of no time; an idle part is there when idle rows are."""
    r0, r1 = np.asarray(seg_r0, dtype=np.int64), np.asarray(seg_r1, dtype=np.int64)
    n = len(r0)
    total = int((r1 - r0).sum())
    if total == 0:
        z = np.zeros(0, dtype=np.int64)
        return {k: z for k in ("g", "at", "part", "why", "pid", "comm", "prio", "ns")}
    waiter = np.array([w[0] for w in waits], dtype=np.int64)[np.asarray(seg_wait)]
    sums = np.empty(n * 5, dtype=np.int64)
    task = [np.empty(total, dtype=np.int64) for _ in range(5)]  # g, pid, comm, prio, ns
    ts, pid, comm, prio, known, lost = index.rows
    m = _passes.stretch_parts(
        ts, pid, comm, prio, known.view(np.uint8), lost.view(np.uint8), r0, r1,
        np.asarray(seg_a, dtype=np.int64), np.asarray(seg_b, dtype=np.int64), waiter, sums,
        *task,
    )  # fmt: skip
    per = sums.reshape(n, 5)
    # the unknown parts (the waiter's run, lost, missing), the idle ones with rows
    g = np.arange(n, dtype=np.int64)
    idle = np.flatnonzero(per[:, 4] > 0)
    none = np.full(3 * n + len(idle), -1, dtype=np.int64)
    return {
        "g": np.concatenate([g, g, g, idle, task[0][:m]]),
        "at": np.repeat(
            [_AT_RAN, _AT_LOST, _AT_MISSING, _AT_IDLE, _AT_TASK], [n, n, n, len(idle), m]
        ),
        "part": np.repeat([_UNKNOWN, _IDLE, _TASK], [3 * n, len(idle), m]),
        "why": np.repeat([_W_RAN, _W_LOST, _W_MISSING, -1], [n, n, n, len(idle) + m]),
        "pid": np.concatenate([none, task[1][:m]]),
        "comm": np.concatenate([none, task[2][:m]]),
        "prio": np.concatenate([none, task[3][:m]]),
        "ns": np.concatenate([per[:, 0], per[:, 1], per[:, 2], per[idle, 3], task[4][:m]]),
    }


def breakdown(
    index: CpuIndex,
    topology: Topology,
    pid: int,
    start_ts: int,
    end_ts: int,
    cpu_at_end: int,
    wakeup_ts: int | None = None,
    waiter_prio: int | None = None,
) -> dict:
    """The parts of one wait of ``pid`` from ``start_ts`` to ``end_ts`` (its switch-in
    on ``cpu_at_end``): ``wake_path`` up to ``wakeup_ts`` when the wait starts at a
    waking, then per CPU stretch the tasks that ran, ``idle`` and ``unknown``.

    Returns ``{"parts": [{"part", "us", "ns", "cpu"?, "pid"?, "comm"?, "class"?, "why"?}...]
    (largest first, wake_path first), "total_ns", "cpus": [...], "llc_idle_us",
    "llc_idle_cpus"}``; the parts' ``ns`` add up to ``total_ns`` = end - start."""
    p = parts_of(index, topology, pid, start_ts, end_ts, cpu_at_end, wakeup_ts)
    out = []
    rows = zip(*(a.tolist() for a in (p.part, p.why, p.cpu, p.pid, p.comm, p.prio, p.ns)))
    for kind, why, cpu, tid, code, prio, ns in rows:
        part: dict = {"part": PART_NAMES[kind], "us": round(ns / 1e3, 3), "ns": ns}
        if kind == _UNKNOWN:
            part["why"] = WHYS[why]
        elif kind != _WAKE_PATH:
            part["cpu"] = cpu
        if kind == _TASK:
            c = str(index.comm_names[code])
            part.update(
                pid=tid,
                comm=c,
                **{"class": task_class(c, prio if index.prio_known else None, waiter_prio)},
            )
        out.append(part)
    return {
        "parts": out,
        "total_ns": p.total_ns,
        "cpus": p.cpus,
        "llc_idle_us": round(p.llc_idle_ns / 1e3, 3),
        "llc_idle_cpus": p.llc_idle_cpus,
    }


def aggregate_parts(index: CpuIndex, waits: Iterable[tuple[Parts, int | None]]) -> tuple[dict, int]:
    """:func:`aggregate` of the breakdowns of ``waits`` (each its :class:`Parts` and the
    waiting task's priority), found from the arrays at once; and how many waits."""
    causes: dict[str, int] = {name: i for i, name in enumerate(PART_NAMES[:3])}
    cause, tid, comm, ns = [], [], [], []
    count = total = 0
    for p, waiter_prio in waits:
        count += 1
        total += p.total_ns
        c = p.part.copy()
        task = np.flatnonzero(p.part == _TASK)
        if len(task):
            # the class of each (name, priority) of the tasks that ran instead, once
            first, inverse = _group_rows([p.comm[task], p.prio[task]])
            codes = [
                causes.setdefault(
                    task_class(
                        str(index.comm_names[code]), pr if index.prio_known else None, waiter_prio
                    ),
                    len(causes),
                )
                for code, pr in zip(p.comm[task[first]].tolist(), p.prio[task[first]].tolist())
            ]
            c[task] = np.asarray(codes, dtype=np.int64)[inverse]
        cause.append(c)
        tid.append(np.where(p.part == _TASK, p.pid, -1))
        comm.append(p.comm)
        ns.append(p.ns)
    names = list(causes)
    if not cause:
        return {"causes": [], "top_tasks": []}, 0
    cause_a, tid_a, comm_a, ns_a = (np.concatenate(x) for x in (cause, tid, comm, ns))
    # each cause, each task: its time, in the order of the largest first, of equal ones
    # the first found (as the sums of a dict sorted stably would give)
    by_cause = _first_found_sums([cause_a], ns_a)
    task = np.flatnonzero(tid_a >= 0)
    by_task = _first_found_sums([tid_a[task], comm_a[task], cause_a[task]], ns_a[task])
    out = [
        {
            "cause": names[k[0]],
            "us": round(v / 1e3, 3),
            "share": round(v / total, 4) if total else 0.0,
        }
        for k, v in by_cause
    ]
    top = [
        {"pid": k[0], "comm": str(index.comm_names[k[1]]), "class": names[k[2]],
         "us": round(v / 1e3, 3)}
        for k, v in by_task[:5]
    ]  # fmt: skip
    return {"causes": out, "top_tasks": top}, count


def _first_found_sums(keys: list[np.ndarray], ns: np.ndarray) -> list[tuple[list[int], int]]:
    """The sums of ``ns`` by the rows of the columns ``keys``: (key, sum) the largest
    first, of equal sums the key found first."""
    if len(ns) == 0:
        return []
    first, inverse = _group_rows(keys)
    sums = np.zeros(len(first), dtype=np.int64)
    np.add.at(sums, inverse, ns)
    order = np.lexsort((first, -sums))
    rows = np.stack([k[first[order]] for k in keys], axis=1)
    return list(zip(rows.tolist(), sums[order].tolist()))


def _group_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of the equal-length columns ``cols`` (integers): per group, the
    position of its first row, and per row its group; groups in the rows' order."""
    n = len(cols[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.lexsort(cols[::-1])  # (stable: a group's first row is its first position)
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for c in cols:
        cs = c[order]
        new[1:] |= cs[1:] != cs[:-1]
    gid = np.cumsum(new) - 1
    first = order[new]
    # groups renumbered in the order their first rows come
    rank = np.empty(len(first), dtype=np.int64)
    by_first = np.argsort(first, kind="stable")
    rank[by_first] = np.arange(len(first))
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = rank[gid]
    return first[by_first], inverse


def _llc_idle(
    index: CpuIndex, topology: Topology, cpu: int, a: int, b: int
) -> tuple[int, set[int]]:
    """How long at least one other CPU of ``cpu``'s LLC was idle within ``[a, b)``, and
    those CPUs."""
    others = index.llc_peers(topology, cpu)
    spans = []
    who = set()
    for c in others:
        got, _ = index.intervals(c, a, b)
        if got is None:
            continue
        st, en, ppid, known = got[0], got[1], got[2], got[5]
        idle = (ppid == 0) & (en > st) & known
        if idle.any():
            who.add(int(c))
            spans.append(np.stack([st[idle], en[idle]], axis=1))
    if not spans:
        return 0, who
    iv = np.concatenate(spans)
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    reach = np.maximum.accumulate(iv[:, 1])
    # union length: each interval adds what lies beyond the reach of those before it
    prev_reach = np.concatenate([[iv[0, 0]], reach[:-1]])
    gained = np.maximum(iv[:, 1] - np.maximum(iv[:, 0], prev_reach), 0)
    return int(gained.sum()), who


def aggregate(breakdowns: list[dict]) -> dict:
    """The causes of several waits together: per cause (``wake_path``, ``idle``,
    ``unknown`` and the class of each task that ran instead) its share of their
    summed time, plus the tasks that ran instead for the longest time."""
    total = sum(b["total_ns"] for b in breakdowns)
    by_cause: dict[str, int] = {}
    by_task: dict[tuple, int] = {}
    for b in breakdowns:
        for p in b["parts"]:
            cause = p["class"] if p["part"] == "task" else p["part"]
            by_cause[cause] = by_cause.get(cause, 0) + p["ns"]
            if p["part"] == "task":
                k = (p["pid"], p["comm"], p["class"])
                by_task[k] = by_task.get(k, 0) + p["ns"]
    causes = [
        {"cause": k, "us": round(v / 1e3, 3), "share": round(v / total, 4) if total else 0.0}
        for k, v in sorted(by_cause.items(), key=lambda kv: -kv[1])
    ]
    top = [
        {"pid": k[0], "comm": k[1], "class": k[2], "us": round(v / 1e3, 3)}
        for k, v in sorted(by_task.items(), key=lambda kv: -kv[1])[:5]
    ]
    return {"causes": causes, "top_tasks": top}
