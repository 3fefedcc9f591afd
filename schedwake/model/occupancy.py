"""CPU occupancy: per CPU, who runs when, idle intervals, and who waits runnable.

One row per interval: ``cpu``, ``start_ts``, ``end_ts`` (exclusive), ``pid``, ``comm``,
``state`` and ``reason``:

``running`` / ``idle`` / ``unknown``
    the CPU's timeline as the trace proves it (:mod:`.completeness`): from its first
    ``sched_switch`` to the end of the trace, who ran (``idle``: pid 0) between the
    proofs of each task, and ``unknown`` (pid -1; reason ``missing_switch`` or
    ``lost_events``) where a switch is missing or events were lost. Time before a
    CPU's first switch is unknown and not covered. On a complete trace the running and
    idle rows are the stretches between the CPU's switches.
``waiting``, reason ``wakeup``
    a woken task queued on its chosen CPU, from its ``sched_wakeup`` (the waking when
    the trace has no ``sched_wakeup``) to its switch-in, or to a later migration of the
    task when one comes first. The wake-up's own migration (set_task_cpu() in
    try_to_wake_up(), which comes before the task is queued and runs: see
    ``wakeups.match_wakeup_migrations``) is not a later one. When the switch-in is
    missing, the wait ends where the task can first have run (the start of the
    unknown stretch before its first proof): only the proven wait is a row.
``waiting``, reason ``preempted``
    a task switched out while runnable (``prev_state`` ``R`` or ``R+``), on that CPU
    until it is switched in again or migrated (the same rule for a missing switch-in).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._util import asof_index, cat_mask, object_categories, take
from .completeness import Completeness
from .events import Events, i64, ints

STATES = ("running", "idle", "waiting", "unknown")
REASONS = ("switch", "wakeup", "preempted", "missing_switch", "lost_events")


def build(
    ev: Events,
    wakeups: pd.DataFrame,
    comp: Completeness,
    migrate: pd.DataFrame | None = None,
    window: tuple | None = None,
) -> pd.DataFrame:
    """The occupancy table of ``ev``, its ``wakeups`` table and its completeness model,
    in three parts: who runs on each CPU (:func:`_put_running`: the timeline), woken
    tasks waiting to run (:func:`_put_woken`) and preempted tasks waiting to run again
    (:func:`_put_preempted`). ``migrate``: the migrations that end a wait (a slice
    passes the whole trace's: its task may be moved off by a CPU outside it); ``window``:
    for a slice, its bounds and CPUs (None: all): a wait is cut to them.

    Memory: the columns of the table (~28 bytes a row) are allocated first and each
    part is written into its slice of them; the work arrays of a part live inside its
    step (no frames of parts, no concatenation, no filtered copy of the wakeups).
    """
    s = ev.switch
    if s is None or len(s) == 0:
        return _frame(
            np.zeros(0, np.int32),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int32),
            np.zeros(0, np.int8),
            pd.CategoricalDtype([]),
            np.zeros(0, np.int8),
            np.zeros(0, np.int8),
        )
    ts = i64(s, "ts")
    t_end = max(ev.last_ts, int(ts.max()))
    woken = (
        (wakeups["run_ts"].notna() | wakeups["left_slice"]).to_numpy()
        if len(wakeups)
        else np.zeros(0, bool)
    )
    preempted = _preempted(s)
    tl = comp.timeline
    sizes = (
        [len(tl)]
        + ([int(woken.sum())] if len(wakeups) else [])
        + ([int(preempted.sum())] if preempted is not None else [])
    )
    comms = (
        [tl["comm"].array[:0]]
        + ([wakeups["wakee_comm"].array[:0]] if len(wakeups) else [])
        + ([s["prev_comm"].array[:0]] if preempted is not None else [])
    )
    out = _Columns(sum(sizes), comms)
    _put_running(out, tl)
    if window is not None:
        t_end = comp.t_end
    waits = _WaitEnds(ev, comp.runs, t_end, ev.migrate if migrate is None else migrate)
    if len(wakeups):
        # (a whole trace whose pids each name one task: the wake-ups found each wait's
        # run in these runs, and where it may have begun)
        _put_woken(out, wakeups, woken, waits, window is None and not ev.lives)
    if preempted is not None:
        _put_preempted(out, s, preempted, waits)
    occ = out.frame()
    if window is None:
        return occ
    # a slice: the waits inside its window and on its CPUs (time a task spends queued
    # on another CPU is outside it)
    lo, hi, cpus = window
    st = occ["start_ts"].to_numpy()
    en = occ["end_ts"].to_numpy()
    s0, e0 = np.maximum(st, lo), np.minimum(en, hi)
    keep = e0 > s0
    if cpus is not None:
        keep &= np.isin(occ["cpu"].to_numpy(), list(cpus))
    occ = occ[keep].reset_index(drop=True)
    occ["start_ts"], occ["end_ts"] = s0[keep], e0[keep]
    return occ


def _preempted(s: pd.DataFrame) -> np.ndarray | None:
    """Per ``sched_switch``: the task switched out was still runnable (``prev_state``
    R or R+: preempted, it waits on this CPU). None without the state letters."""
    if "prev_state_str" not in s.columns:
        return None
    runnable = cat_mask(s["prev_state_str"].array, lambda c: c.startswith("R"))
    return runnable & (ints(s, "prev_pid") != 0)


class _Columns:
    """The table's columns, allocated once, filled part after part by :meth:`put`."""

    def __init__(self, n: int, comms: list):
        from pandas.api.types import union_categoricals

        self.comm_dtype = union_categoricals([object_categories(c) for c in comms]).dtype
        self.cpu = np.empty(n, dtype=np.int32)
        self.start = np.empty(n, dtype=np.int64)
        self.end = np.empty(n, dtype=np.int64)
        self.pid = np.empty(n, dtype=np.int32)
        self.comm = np.empty(n, dtype=_code_dtype(len(self.comm_dtype.categories)))
        self.state = np.empty(n, dtype=np.int8)
        self.reason = np.empty(n, dtype=np.int8)
        self.at = 0

    def put(
        self,
        cpu: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        pid: np.ndarray,
        comm: Any,
        state: int | np.ndarray,
        reason: int | np.ndarray,
    ) -> None:
        a, b = self.at, self.at + len(start)
        self.cpu[a:b], self.start[a:b], self.end[a:b], self.pid[a:b] = cpu, start, end, pid
        self.comm[a:b] = pd.Categorical(comm, dtype=self.comm_dtype).codes
        self.state[a:b], self.reason[a:b] = state, reason
        self.at = b

    def frame(self) -> pd.DataFrame:
        return _frame(
            self.cpu,
            self.start,
            self.end,
            self.pid,
            self.comm,
            self.comm_dtype,
            self.state,
            self.reason,
        )


def _put_running(out: _Columns, tl: pd.DataFrame) -> None:
    """The CPUs' timelines (:class:`.completeness.Completeness`): running, idle and
    unknown intervals, by CPU and time."""
    state = np.asarray(tl["state"].cat.codes)  # running, idle, unknown
    why = np.asarray(tl["why"].cat.codes)  # missing_switch, lost_events (unknown rows)
    out.put(
        tl["cpu"].to_numpy(),
        tl["start_ts"].to_numpy(),
        tl["end_ts"].to_numpy(),
        tl["pid"].to_numpy(),
        tl["comm"].array,
        np.where(state == 2, 3, state).astype(np.int8),
        np.where(state == 2, np.where(why == 1, 4, 3), 0).astype(np.int8),
    )


class _WaitEnds:
    """When a runnable task's wait on a CPU ends: at its next run (a switch-in; where
    the switch-in is missing, the earliest the run can have begun: the wait is only
    proven until then), or when it is migrated away (``sched_migrate_task``),
    whichever comes first; the trace's end if neither comes."""

    BIG = np.iinfo(np.int64).max

    def __init__(
        self, ev: Events, runs: pd.DataFrame, t_end: int, migrate: pd.DataFrame | None = None
    ) -> None:
        self.ins_ts, self.ins_pid = runs["start_ts"].to_numpy(), runs["pid"].to_numpy()
        self.ins_from = runs["earliest_ts"].to_numpy()
        none = np.zeros(0, np.int64)
        #: the trace's own migrations (a wake-up's own, by its migrate_index)
        self.own_mts = i64(ev.migrate, "ts") if ev.migrate is not None else none
        #: the migrations that end a wait
        self.mts = i64(migrate, "ts") if migrate is not None else none
        self.mpid = i64(migrate, "pid") if migrate is not None else none
        self.t_end = t_end

    def run_from_of_wakeups(self, run_from: np.ndarray) -> np.ndarray | None:
        """The woken waits' ``run_from_ts`` (of the wake-ups that ran: each their
        run's earliest start, not before the waking nor the sched_wakeup) as the end
        :meth:`__call__` gives a wait before a migration: the later of the run's
        ``earliest_ts`` and the wait's start, when every run's earliest start is at or
        before its start (else None: searched)."""
        ok = bool((self.ins_from <= self.ins_ts).all()) and not (run_from == self.BIG).any()
        return run_from if ok else None

    def __call__(
        self,
        start: np.ndarray,
        pid: np.ndarray,
        moved_after: np.ndarray | None = None,
        run_from: np.ndarray | None = None,
    ) -> np.ndarray:
        """``moved_after``: migrations count from then on (default: ``start``);
        ``run_from``: where each wait's next run may have begun, when known (a fresh
        array: :meth:`run_from_of_wakeups`), else searched."""
        if run_from is None:
            ii = asof_index(start, pid, self.ins_ts, self.ins_pid, "forward", allow_exact=True)
            e = np.maximum(take(self.ins_from, ii, self.BIG), start)
            e[ii < 0] = self.BIG
            del ii
        else:
            e = run_from
        mi = asof_index(
            start if moved_after is None else moved_after,
            pid,
            self.mts,
            self.mpid,
            "forward",
            allow_exact=False,
        )
        e = np.minimum(e, take(self.mts, mi, self.BIG))
        return np.where(e == self.BIG, self.t_end, e)


def _put_woken(
    out: _Columns,
    wakeups: pd.DataFrame,
    woken: np.ndarray,
    waits: _WaitEnds,
    runs_found: bool = False,
) -> None:
    """Woken tasks that later ran wait on their chosen CPU from their ``sched_wakeup``
    (the waking if none came) until :class:`_WaitEnds` says. ``runs_found``: the
    wake-ups' runs are those of ``waits`` and keyed by pid as it keys them (a whole
    trace whose pids each name one task): a wait's next run is its wake-up's run (none
    begins between the waking and that run), and where it may have begun the wake-up's
    ``run_from_ts`` (:meth:`_WaitEnds.run_from_of_wakeups`), not searched again."""
    big = _WaitEnds.BIG

    def wk(name: str, na: int | None = None) -> np.ndarray:
        c = wakeups[name]
        return (c.to_numpy() if na is None else c.to_numpy(dtype=np.int64, na_value=na))[woken]

    run = wk("run_ts", big)  # (none: a wait that leaves a slice)
    queued = wk("wakeup_ts", big)
    start = np.minimum(np.where(queued == big, wk("ts"), queued), run)
    del queued, run
    wpid = wk("wakee_pid")
    # the wake-up's own migration (before the task is queued and runs: see
    # wakeups.match_wakeup_migrations) moves the wait to the chosen CPU
    own_ts = take(waits.own_mts, wk("migrate_index"), big)
    moved_after = np.where(own_ts == big, start, np.maximum(start, own_ts))
    del own_ts
    run_from = waits.run_from_of_wakeups(wk("run_from_ts", big)) if runs_found else None
    wend = waits(start, wpid, moved_after, run_from)
    del moved_after, run_from
    out.put(wk("chosen_cpu"), start, wend, wpid, wakeups["wakee_comm"].array[woken], 2, 1)


def _put_preempted(out: _Columns, s: pd.DataFrame, preempted: np.ndarray, waits: _WaitEnds) -> None:
    """Tasks switched out runnable wait on that CPU from the switch until
    :class:`_WaitEnds` says."""
    rows = np.flatnonzero(preempted)  # (few of the switches: gathered, not masked)
    pts, ppid = i64(s, "ts").take(rows), ints(s, "prev_pid").take(rows)
    out.put(
        ints(s, "cpu").take(rows),
        pts,
        waits(pts, ppid),
        ppid,
        s["prev_comm"].array.take(rows),
        2,
        2,
    )


def with_waits(occ: pd.DataFrame, waits: pd.DataFrame) -> pd.DataFrame:
    """``occ`` and after its rows the woken waits ``waits`` (``waiting``, reason
    ``wakeup``; columns cpu, start_ts, end_ts, pid, comm): the waits of a time part of
    a trace that another part's events show (:class:`.whole.WholeFacts`)."""
    own = occ["comm"].array
    names = pd.Index(waits["comm"].astype(str).to_numpy(), dtype=own.categories.dtype)
    comm = own.add_categories(names.unique().difference(own.categories))
    codes = np.concatenate([np.asarray(comm.codes), comm.categories.get_indexer(names)]).astype(
        np.asarray(comm.codes).dtype
    )
    state = np.concatenate(
        [np.asarray(occ["state"].cat.codes), np.full(len(waits), STATES.index("waiting"))]
    )
    reason = np.concatenate(
        [np.asarray(occ["reason"].cat.codes), np.full(len(waits), REASONS.index("wakeup"))]
    )
    return _frame(
        np.concatenate([occ["cpu"].to_numpy(), waits["cpu"].to_numpy()]).astype(np.int32),
        np.concatenate([occ["start_ts"].to_numpy(), waits["start_ts"].to_numpy()]).astype(np.int64),
        np.concatenate([occ["end_ts"].to_numpy(), waits["end_ts"].to_numpy()]).astype(np.int64),
        np.concatenate([occ["pid"].to_numpy(), waits["pid"].to_numpy()]).astype(np.int32),
        codes,
        pd.CategoricalDtype(comm.categories),
        state.astype(np.int8),
        reason.astype(np.int8),
    )


def _frame(
    cpu: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    pid: np.ndarray,
    comm_codes: np.ndarray,
    comm_dtype: pd.CategoricalDtype,
    state: np.ndarray,
    reason: np.ndarray,
) -> pd.DataFrame:
    """The occupancy table: the same columns and types whether empty or not."""
    return pd.DataFrame(
        {
            "cpu": cpu,
            "start_ts": start,
            "end_ts": end,
            "pid": pid,
            "comm": pd.Categorical.from_codes(comm_codes, dtype=comm_dtype),
            "state": pd.Categorical.from_codes(state, categories=list(STATES)),
            "reason": pd.Categorical.from_codes(reason, categories=list(REASONS)),
        },
        copy=False,
    )


def _code_dtype(ncategories: int) -> type[np.signedinteger[Any]]:
    """The codes type pandas gives a categorical of that many categories."""
    for t in (np.int8, np.int16, np.int32):
        if ncategories < np.iinfo(t).max:
            return t
    return np.int64


def first_switch_ts(ev: Events) -> dict[int, int]:
    """The first ``sched_switch`` of each CPU: occupancy is unknown before it."""
    s = ev.switch
    if s is None or len(s) == 0:
        return {}
    cpu, ts = ints(s, "cpu"), i64(s, "ts")
    lo = int(cpu.min())
    if int(cpu.max()) - lo >= 1 << 16:  # not CPU numbers as we know them
        g = pd.DataFrame({"cpu": cpu, "ts": ts}).groupby("cpu")["ts"].min()
        return {int(k): int(v) for k, v in g.items()}
    at = (cpu - lo).astype(np.intp)  # CPUs are few: one slot each
    first = np.full(int(cpu.max()) - lo + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, at, ts)
    seen = np.bincount(at, minlength=len(first)) > 0
    return {int(c) + lo: int(first[c]) for c in np.flatnonzero(seen)}
