"""The wakeups table: one row per wake-up, i.e. ``sched_waking`` (docs/architecture.md,
'The model's tables').

Semantics (docs/semantics.md; docs/detectors.md, 'Semantics the detectors rely on'):

* ``sched_waking`` fires in the waker's context on the waker's CPU before the CPU is
  chosen; its ``target_cpu`` is the wakee's previous CPU (``prev_cpu``).
* A ``sched_migrate_task`` belongs to that wake-up when it is the next of our events on
  the same CPU, for the same pid, in the same current task (select_task_rq and
  set_task_cpu run with the wakee's pi_lock held and interrupts off: nothing else
  fires on that CPU in between). Its ``dest_cpu`` is the chosen CPU.
* Without ``sched_waking`` (kernels before 4.3, recordings of sched_wakeup alone) a row
  is a ``sched_wakeup`` (:func:`_match_without_waking`); without ``sched_migrate_task``
  the chosen CPU is sched_wakeup's ``target_cpu`` (docs/semantics.md).
* ``sched_wakeup`` may fire later on the chosen CPU (queued remote wake-up);
  ``wakeup_ts`` is the first ``sched_wakeup`` of the pid at or after the waking, before
  its next waking and not after the wakee's next proof of running: a sched_wakeup after
  the wakee ran belongs to a later wake-up (whose waking the trace lacks).
* ``run_ts`` is where the trace first proves the wakee running at or after the waking
  and before its next waking (:mod:`.completeness`, its ``runs``): its switch-in
  (``sched_switch.next_pid``), or, when that switch-in is missing, its first event in
  its own context or its switch-out. ``run_from_ts`` is the earliest the run can have
  begun: ``run_ts`` when the switch-in is in the trace, else the start of the unknown
  stretch before the proof (not before the waking or the sched_wakeup). So the wait
  lies between ``run_from_ts - ts`` and ``latency_ns`` = ``run_ts - ts``. None of it
  when the wakee was still running when it was woken (no wait).
* the waker's name is the one the last ``sched_switch`` on that CPU gave it
  (``next_comm``) when that switch put the waker on the CPU, else ``common_comm``;
  the waker's class is ``irq`` in hardirq/softirq/NMI context, ``idle`` for pid 0.
* ``work_function``: the function of the waker pid's last ``workqueue_execute_start``
  whose ``workqueue_execute_end`` has not come yet. Keyed by pid, not by CPU: an
  unbound worker can move between CPUs in the middle of a work item.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import _passes, completeness, tasks
from ._util import (
    asof_index,
    cat_mask,
    in_key_time_order,
    is_sorted,
    key_ints,
    lex_order,
    pick_cat,
    small_keys,
    take,
    take_cat,
)
from .events import Events, i64, ints

if TYPE_CHECKING:
    from ..topology import Topology

WAKEUP_COLUMNS = (
    "ts",
    "waker_pid",
    "waker_comm",
    "waker_cpu",
    "waker_class",
    "waker_context",
    "waker_kthread_cpu",
    "work_function",
    "wakee_pid",
    "wakee_comm",
    "prev_cpu",
    "chosen_cpu",
    "migrated",
    "migration_class",
    "wakeup_ts",
    "run_ts",
    "run_from_ts",
    "latency_ns",
    "run_end_ts",
    "slept_after",
    "wakee_was_running",
    "left_slice",
    "migrate_index",
)


#: The events that end a wake-up's critical section on a CPU (:func:`barrier_ts`), and
#: their frames in :class:`.events.Events`.
BARRIER_EVENTS = {
    "sched_switch": "switch",
    "sched_wakeup": "wakeup",
    "sched_wakeup_new": "wakeup_new",
    "workqueue_execute_start": "wq_start",
    "workqueue_execute_end": "wq_end",
}


def barrier_ts(
    ev: Events, ts: np.ndarray, cpu: np.ndarray, direction: str, allow_exact: bool
) -> np.ndarray:
    """For each (ts, cpu), the time of the nearest event (as :func:`asof_index` finds it)
    that ends a wake-up's critical section on that CPU: int64 min (backward) or max
    (forward) when there is none. Searched event by event: no merged copy of them."""
    backward = direction == "backward"
    fill = np.iinfo(np.int64).min if backward else np.iinfo(np.int64).max
    out = np.full(len(ts), fill, dtype=np.int64)
    for f in (getattr(ev, frame) for frame in BARRIER_EVENTS.values()):
        if f is None or len(f) == 0:
            continue
        fts = i64(f, "ts")
        near = take(fts, asof_index(ts, cpu, fts, ints(f, "cpu"), direction, allow_exact), fill)
        out = np.maximum(out, near) if backward else np.minimum(out, near)
    return out


def match_wakeup_migrations(ev: Events) -> np.ndarray:
    """For each ``sched_migrate_task`` row, the row of the wakeups table it belongs to
    (a ``sched_waking`` row; a ``sched_wakeup`` row when the trace has no sched_waking),
    or -1."""
    m, w = ev.migrate, ev.waking
    if m is None or len(m) == 0:
        return np.zeros(0 if m is None else len(m), dtype=np.int64)
    if w is None or len(w) == 0:
        return _match_without_waking(ev, m)
    mts, mcpu = i64(m, "ts"), i64(m, "cpu")
    wts, wcpu = i64(w, "ts"), ints(w, "cpu")
    wi = asof_index(mts, mcpu, wts, wcpu, "backward", allow_exact=True)
    b_ts = barrier_ts(ev, mts, mcpu, "backward", allow_exact=False)
    ok = wi >= 0
    ok &= take(ints(w, "pid"), wi, -2) == i64(m, "pid")
    ok &= take(ints(w, "common_pid"), wi, -2) == i64(m, "common_pid")
    ok &= b_ts <= take(wts, wi, np.iinfo(np.int64).max)
    # A wake-up's own migration comes before the wakee is woken up (sched_wakeup) and
    # before it runs. Without this, a waker that runs on with no other event on its CPU
    # and later pulls the same task (newly-idle balance) would be taken for the
    # wake-up's migration, however old the waking: the pull is set_task_cpu() in
    # load balancing, after the wake-up completed elsewhere (its sched_wakeup, the
    # wakee's switch-in on another CPU), so it is no part of try_to_wake_up().
    cand = np.flatnonzero(ok)
    if len(cand):
        c_ts, c_pid = take(wts, wi[cand], 0), i64(m, "pid")[cand]
        c_cpu, c_dest = mcpu[cand], i64(m, "dest_cpu")[cand]
        never = np.iinfo(np.int64).max
        limit = np.full(len(cand), never, dtype=np.int64)
        if ev.wakeup is not None and len(ev.wakeup):
            f = ev.wakeup
            at = _settling_ts(c_ts, c_pid, c_cpu, c_dest, i64(f, "ts"), ints(f, "pid"),
                              ints(f, "cpu"), ints(f, "target_cpu"))  # fmt: skip
            limit = np.minimum(limit, at)
        if ev.switch is not None and len(ev.switch):
            f = ev.switch
            at = _settling_ts(c_ts, c_pid, c_cpu, c_dest, i64(f, "ts"), ints(f, "next_pid"),
                              ints(f, "cpu"), ints(f, "cpu"))  # fmt: skip
            limit = np.minimum(limit, at)
        ok[cand] = mts[cand] <= limit
    res = np.where(ok, wi, -1)
    # one waking owns at most one migration: keep the first
    return np.where(_first_claims(res), res, -1)


def _settling_ts(
    c_ts: np.ndarray,
    c_pid: np.ndarray,
    c_cpu: np.ndarray,
    c_dest: np.ndarray,
    ts: np.ndarray,
    pid: np.ndarray,
    cpu: np.ndarray,
    placed: np.ndarray,
) -> np.ndarray:
    """For each candidate (a waking at ``c_ts`` of ``c_pid`` and a migration on ``c_cpu``
    to ``c_dest``), the time of the first event (``ts``, ``pid``, ``cpu``: a sched_wakeup
    or a switch-in) at or after the waking that says the wake-up was settled without
    that migration; int64 max if none.

    The wake-up's own sched_wakeup (queued remote wake-up) or the wakee's switch-in
    happen on the chosen CPU (``placed`` is where the event puts the task: sched_wakeup's
    target_cpu, the switch's CPU). On another CPU they are stamped by another CPU's
    clock, which the per-CPU ``local`` trace clock lets run a little behind: such an
    event may carry an earlier time than the migration that chose the CPU. An event on
    another CPU that puts the task where the candidate migration takes it is therefore
    not taken as settling it; the pid's next one is.

    One backward walk over the events in compiled code (``_passes.settling_walk``)
    when the pids' range suits its table; else two as-of searches."""
    never = np.iinfo(np.int64).max
    small = small_keys(c_pid, pid) if len(c_ts) and len(ts) else None
    if small is not None:
        ck, k, lo, span = small
        out = np.empty(len(c_ts), dtype=np.int64)
        by_time = None if is_sorted(c_ts) else np.argsort(c_ts, kind="stable")
        if _passes.settling_walk(
            np.ascontiguousarray(c_ts, dtype=np.int64), ck, key_ints(c_cpu), key_ints(c_dest),
            by_time, np.ascontiguousarray(ts, dtype=np.int64), k, key_ints(cpu),
            key_ints(placed), lo, span, out,
        ):  # fmt: skip
            return out
    j = asof_index(c_ts, c_pid, ts, pid, "forward", True)
    own = (j >= 0) & (take(placed, j, -1) == c_dest) & (take(cpu, j, -1) != c_cpu)
    if own.any():
        j[own] = asof_index(take(ts, j[own], 0), c_pid[own], ts, pid, "forward", False)
    return take(ts, j, never)


def _first_claims(owner: np.ndarray) -> np.ndarray:
    """Mask of the entries that are the first to name their ``owner`` (-1: none)."""
    idx = np.flatnonzero(owner >= 0)
    _, first = np.unique(owner[idx], return_index=True)
    keep = np.zeros(len(owner), dtype=bool)
    keep[idx[first]] = True
    return keep


def _match_without_waking(ev: Events, m: pd.DataFrame) -> np.ndarray:
    """Kernels before 4.3 (or recordings of sched_wakeup alone): sched_wakeup may fire on
    the chosen CPU, after the wake-up's migration, so the migration of a wake-up is the
    pid's last one at or before its sched_wakeup, after it last left a CPU, to the CPU
    it is woken on (sched_wakeup's target_cpu). ``m``: ``ev.migrate``, not empty."""
    w = ev.wakeup
    res = np.full(len(m), -1, dtype=np.int64)
    if w is None or len(w) == 0:
        return res
    ts, pid = i64(w, "ts"), ints(w, "pid")
    mts = i64(m, "ts")
    mi = asof_index(ts, pid, mts, i64(m, "pid"), "backward", allow_exact=True)
    never = np.iinfo(np.int64).min
    last_out = np.full(len(w), never, dtype=np.int64)
    if ev.switch is not None:
        sts = i64(ev.switch, "ts")
        last_out = take(
            sts, asof_index(ts, pid, sts, ints(ev.switch, "prev_pid"), "backward", True), never
        )
    own = (
        (mi >= 0)
        & (take(mts, mi, never) >= last_out)
        & (take(i64(m, "dest_cpu"), mi, -1) == i64(w, "target_cpu"))
    )
    claim = np.where(own, mi, -1)
    # a migration belongs to one wake-up: the first that claims it
    keep = _first_claims(claim)
    res[claim[keep]] = np.flatnonzero(keep)
    return res


def build(
    ev: Events,
    topo: Topology,
    mig_w: np.ndarray,
    runs: pd.DataFrame,
    window: tuple[int, Collection[int] | None] | None = None,
) -> pd.DataFrame:
    """The wakeups table of ``ev`` (``mig_w``: :func:`match_wakeup_migrations`;
    ``runs``: where the trace proves each task ran, :mod:`.completeness`; ``window``:
    for a slice of a trace, its end and CPUs (None: all), and ``runs`` the whole
    trace's: a wake-up whose run is after the end or on a CPU outside the slice has
    no run here, its wait ``left_slice``).

    Steps, each a function below: who woke (:class:`_Wakers`), the previous and
    chosen CPUs (:func:`_cpus`), the matching ``sched_wakeup`` (:func:`_wakeup_ts`),
    when the wakee ran and what it did then (:func:`_wake_to_run`), the waker's work
    item (:func:`_work_function`). Memory: the table has ~90 bytes a row; every
    intermediate of that length lives only inside its step, and the columns are not
    copied again.
    """
    fallback = ev.waking is None
    w = ev.wakeup if fallback else ev.waking
    if w is None:
        return empty()
    ts = i64(w, "ts")
    pid = ints(w, "pid")
    # the wakee's life key (:mod:`.lives`): a pid used again is another task, whose
    # wake-ups, sched_wakeup, runs and switch-outs are none of this one's
    key = ev.key(pid, ts)
    wakers = _Wakers.of(w, ts)
    prev_cpu, chosen, migrate_index = _cpus(ev, w, fallback, mig_w, key, wakers)
    next_waking = _next_waking_of_same_pid(ts, key)
    proof = _Runs(runs, ts, key, ev.run_keys(runs))
    wakeup_ts, chosen = _wakeup_ts(ev, fallback, ts, key, next_waking, chosen, proof)
    migrated = (prev_cpu >= 0) & (chosen != prev_cpu)
    run = _wake_to_run(ev, ts, key, next_waking, wakers, proof, wakeup_ts)
    del next_waking, key
    left = np.zeros(len(ts), dtype=bool)
    if window is not None:
        # a slice: a wait whose run is after its end or on a CPU outside it (the whole
        # trace's runs tell) leaves the slice; its end is not the slice's
        hi, cpus = window
        ran = ~np.asarray(run["run_ts"].isna())
        at = run["run_ts"].to_numpy(np.int64, na_value=0)
        out = at > hi if hi is not None else np.zeros(len(ts), bool)
        if cpus is not None:
            out |= ~np.isin(proof.cpu, list(cpus))
        left = ran & out
        for col in ("run_ts", "run_from_ts", "latency_ns", "run_end_ts"):
            run[col] = _nullable(run[col].to_numpy(np.int64, na_value=0), ~run[col].isna() & ~left)
        run["slept_after"] = run["slept_after"] & ~left
    elif ev.recorded_cpus is not None:
        # a recording of some CPUs only: a run on a CPU outside them is not in the trace,
        # so a later one on a recorded CPU would pass for it. Only a run on the CPU the
        # wake-up chose is taken as the run; other runs are unknown.
        unseen = proof.cpu != chosen
        for col in ("run_ts", "run_from_ts", "latency_ns", "run_end_ts"):
            run[col] = _nullable(
                run[col].to_numpy(np.int64, na_value=0), ~run[col].isna() & ~unseen
            )
        run["slept_after"] = run["slept_after"] & ~unseen
    wclass, kcpu = tasks.classify(wakers.comm, wakers.pid, wakers.ctx)
    cols = {
        "ts": ts,
        "waker_pid": wakers.pid.astype(np.int32, copy=False),
        "waker_comm": wakers.comm,
        "waker_cpu": wakers.cpu.astype(np.int32, copy=False),
        "waker_class": wclass,
        "waker_context": pd.Categorical.from_codes(wakers.ctx, categories=list(tasks.CONTEXTS)),
        "waker_kthread_cpu": kcpu,
        "work_function": _work_function(ev, ts, wakers),
        "wakee_pid": pid.astype(np.int32, copy=False),
        "wakee_comm": w["comm"].array,
        "prev_cpu": prev_cpu,
        "chosen_cpu": chosen,
        "migrated": migrated,
        "migration_class": topo.classify(prev_cpu, chosen),
        "wakeup_ts": wakeup_ts,
        **run,
        "left_slice": left,
        "migrate_index": migrate_index,
    }
    del ts, pid, wakers, prev_cpu, chosen, migrated, wakeup_ts, run, migrate_index
    # the columns as they are: one block each, no consolidating copy
    return pd.DataFrame({c: cols[c] for c in WAKEUP_COLUMNS}, copy=False)


class _Wakers:
    """Per wake-up: the waker's CPU, pid, context code (tasks.CONTEXTS), the time and
    name it had when it woke. From the wake-up event's own common fields; the steps
    below correct them where a better event says more."""

    __slots__ = ("cpu", "pid", "ctx", "ts", "comm")
    cpu: np.ndarray
    pid: np.ndarray
    ctx: np.ndarray
    ts: np.ndarray
    comm: pd.Categorical

    @classmethod
    def of(cls, w: pd.DataFrame, ts: np.ndarray) -> _Wakers:
        self = cls()
        self.cpu = ints(w, "cpu")
        self.pid = ints(w, "common_pid")
        self.ctx = (
            tasks.context_codes(w["common_flags"])
            if "common_flags" in w.columns
            else np.full(len(w), 4, dtype=np.int8)
        )
        self.ts = ts
        self.comm = w["common_comm"].array
        return self


def _cpus(
    ev: Events, w: pd.DataFrame, fallback: bool, mig_w: np.ndarray, pid: np.ndarray, wakers: _Wakers
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(prev_cpu, chosen_cpu, migrate_index) per wake-up.

    Reads the wake-up's ``target_cpu`` (sched_waking: the previous CPU; sched_wakeup:
    the chosen one), the wake-up's own ``sched_migrate_task`` (``mig_w``: its
    ``orig_cpu``/``dest_cpu``) and, without sched_waking, the wakee's last
    ``sched_switch`` out. Without sched_waking a migrated wake-up's waker is the
    context of its sched_migrate_task (sched_wakeup then fired in the IPI on the
    chosen CPU): ``wakers`` is corrected so. prev_cpu is -1 where nothing says it.
    """
    target = ints(w, "target_cpu")
    n = len(target)
    chosen = target.astype(np.int32)
    if not fallback:
        prev_cpu = target.astype(np.int32)
    elif ev.switch is not None and len(ev.switch):
        # sched_wakeup's target_cpu is already the chosen CPU; the previous one is where
        # the task last ran: its last switch-out before the wake-up
        sts = i64(ev.switch, "ts")
        oi = asof_index(
            wakers.ts, pid, sts, ev.key(ints(ev.switch, "prev_pid"), sts), "backward", True
        )
        prev_cpu = take(ints(ev.switch, "cpu"), oi, -1).astype(np.int32)
    else:
        prev_cpu = np.full(n, -1, dtype=np.int32)
    migrate_index = np.full(n, -1, dtype=np.int64)
    if ev.migrate is None or not len(mig_w):
        return prev_cpu, chosen, migrate_index
    mi = np.flatnonzero(mig_w >= 0)
    migrate_index[mig_w[mi]] = mi
    chosen[mig_w[mi]] = i64(ev.migrate, "dest_cpu")[mi]
    if fallback:
        # the migration's orig_cpu is the previous CPU (sched_waking's target_cpu,
        # when there is one, is that CPU by design). sched_wakeup of a queued
        # wake-up fires on the chosen CPU, in the IPI; the wake-up's migration fired
        # in the waker's context on the waker's CPU
        rows = mig_w[mi]
        prev_cpu[rows] = i64(ev.migrate, "orig_cpu")[mi]
        wakers.cpu, wakers.pid = wakers.cpu.copy(), wakers.pid.copy()
        wakers.ctx, wakers.ts = wakers.ctx.copy(), wakers.ts.copy()
        wakers.cpu[rows] = i64(ev.migrate, "cpu")[mi]
        wakers.pid[rows] = i64(ev.migrate, "common_pid")[mi]
        wakers.ts[rows] = i64(ev.migrate, "ts")[mi]
        if "common_flags" in ev.migrate.columns:
            wakers.ctx[rows] = tasks.context_codes(ev.migrate["common_flags"])[mi]
        wakers.comm = pick_cat(
            migrate_index >= 0,
            take_cat(ev.migrate["common_comm"].array, migrate_index),
            wakers.comm,
        )
    return prev_cpu, chosen, migrate_index


def _next_waking_of_same_pid(ts: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """Per wake-up, the time of the next wake-up of the same wakee (int64 max if none):
    it bounds what may match this one (its sched_wakeup, its switch-in). One backward
    walk in compiled code (``_passes.next_of_key``) over wake-ups in time order whose
    keys suit its table; else the (pid, ts) order's neighbors."""
    n = len(ts)
    small = small_keys(pid, pid[:1]) if n else None
    if small is not None:
        nxt = np.empty(n, dtype=np.int64)
        key, _, lo, span = small
        if _passes.next_of_key(np.ascontiguousarray(ts, dtype=np.int64), key, lo, span, nxt):
            return nxt
    order = lex_order(ts, pid)
    same = pid[order[1:]] == pid[order[:-1]]
    nxt = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    nxt[order[:-1][same]] = ts[order[1:][same]]
    return nxt


def _wakeup_ts(
    ev: Events,
    fallback: bool,
    ts: np.ndarray,
    pid: np.ndarray,
    next_waking: np.ndarray,
    chosen: np.ndarray,
    proof: _Runs,
) -> tuple[pd.arrays.IntegerArray, np.ndarray]:
    """(wakeup_ts, chosen_cpu): the first ``sched_wakeup`` of the wakee at or after the
    waking, before its next one and, unless the wakee was running, not after the next
    proof that it ran (missing if none: a sched_wakeup after the wakee ran is another
    wake-up's). Without sched_migrate_task in the trace, that sched_wakeup's
    ``target_cpu`` is the chosen CPU. A trace without sched_waking is its own
    sched_wakeup."""
    n = len(ts)
    if fallback:
        return _nullable(ts.copy(), np.ones(n, dtype=bool)), chosen
    if ev.wakeup is None or not len(ev.wakeup):
        return _nullable(np.zeros(n, np.int64), np.zeros(n, dtype=bool)), chosen
    uts = i64(ev.wakeup, "ts")
    ui = asof_index(ts, pid, uts, ev.key(ints(ev.wakeup, "pid"), uts), "forward", True)
    u = take(uts, ui, np.int64(0))
    matched = (ui >= 0) & (u < next_waking) & ((u <= proof.next_ts) | proof.was_running)
    if ev.migrate is None:
        # no sched_migrate_task recorded: sched_wakeup's target_cpu is the CPU
        # select_task_rq() chose (sched_waking's is still the previous CPU)
        woken_on = take(ints(ev.wakeup, "target_cpu"), ui, -1)
        chosen = np.where(matched & (woken_on >= 0), woken_on, chosen).astype(np.int32)
    return _nullable(u, matched), chosen


class _Runs:
    """Per wake-up, the wakee's runs around it (:mod:`.completeness`): whether it was
    running when woken (a run of it began before the waking and is proven to last
    until it), and its next run at or after the waking: ``next_ts`` (its first proof;
    int64 max if none), ``next_from`` (the earliest it can have begun), ``cpu``,
    ``end_ts`` and whether a recorded switch-out ended it (``ended``)."""

    def __init__(self, runs: pd.DataFrame, ts: np.ndarray, pid: np.ndarray, rpid: np.ndarray):
        # (``pid``, ``rpid``: the life keys of the wake-ups and the runs)
        if not self._walked(runs, ts, pid, rpid):
            self._searched(runs, ts, pid, rpid)

    def _walked(
        self, runs: pd.DataFrame, ts: np.ndarray, pid: np.ndarray, rpid: np.ndarray
    ) -> bool:
        """The runs around each wake-up in one compiled walk (:func:`next_runs`). False
        (nothing set) when it cannot answer."""
        found = next_runs(runs, ts, pid, rpid)
        if found is None:
            return False
        self.index, self.was_running, self.next_ts, self.next_from = found[:4]
        self.cpu, self.end_ts, self.ended = found[4:]
        return True

    def _searched(
        self, runs: pd.DataFrame, ts: np.ndarray, pid: np.ndarray, rpid: np.ndarray
    ) -> None:
        """The runs around each wake-up by as-of searches and gathers."""
        never = np.iinfo(np.int64).max
        rstart = runs["start_ts"].to_numpy()
        rend = runs["end_ts"].to_numpy()
        # a run proven to last until the waking (its end at or after it: an end that is
        # the last proof before an unknown stretch proves nothing after it), of those
        # begun before it (runs on two CPUs at once may overlap)
        ni = asof_index(ts, pid, rstart, rpid, "forward", allow_exact=True)
        li = _run_before(ni, ts, pid, rstart, rpid)
        self.was_running = (li >= 0) & (take(completeness.reach(runs), li, -1) >= ts)
        del li
        self.index = ni
        self.next_ts = take(rstart, ni, never)
        self.next_from = take(runs["earliest_ts"].to_numpy(), ni, never)
        self.cpu = take(runs["cpu"].to_numpy(), ni, -1)
        self.end_ts = take(rend, ni, never)
        self.ended = take(np.asarray(runs["end"].cat.codes) == 0, ni, False)


def next_runs(
    runs: pd.DataFrame, ts: np.ndarray, key: np.ndarray, rkey: np.ndarray
) -> tuple[np.ndarray, ...] | None:
    """Per row (``ts``, ``key``: in time order), its key's next run (``runs``, keyed by
    ``rkey``) begun at or after it: (index, was_running, next_ts, next_from, cpu,
    end_ts, ended) as :class:`_Runs` names them (none: -1, int64 max, -1, False).
    One compiled walk over the rows, a pointer per key into its runs that only moves
    on (``_passes.wake_runs``): no search, no gathers. None when the keys' range does
    not suit its table or the rows are not in the orders it reads (in time order; each
    key's runs together, in time order)."""
    small = small_keys(key, rkey) if len(ts) and len(rkey) else None
    if small is None:
        return None
    k, rk, lo, span = small
    n = len(ts)
    outs = tuple(np.empty(n, t) for t in (np.int64, bool, np.int64, np.int64, np.int32,
                                          np.int64, bool))  # fmt: skip
    col = {c: np.ascontiguousarray(runs[c].to_numpy(), dtype=np.int64)
           for c in ("start_ts", "earliest_ts", "end_ts")}  # fmt: skip
    if not _passes.wake_runs(
        np.ascontiguousarray(ts, dtype=np.int64), k, rk, col["start_ts"],
        completeness.reach(runs), col["earliest_ts"],
        np.ascontiguousarray(runs["cpu"].to_numpy(), dtype=np.int32), col["end_ts"],
        np.ascontiguousarray(runs["end"].cat.codes, dtype=np.int8), lo, span, outs,
    ):  # fmt: skip
        return None
    return outs


def _run_before(
    ni: np.ndarray, ts: np.ndarray, pid: np.ndarray, rstart: np.ndarray, rpid: np.ndarray
) -> np.ndarray:
    """Per wake-up, the last run of its wakee begun before the waking (the strict
    backward as-of search), from ``ni``, its first run begun at or after it (the
    forward one): with the runs in (key, start) order, the row before that one when it
    is the wakee's, else none; only the wake-ups with no run after them are searched."""
    if not in_key_time_order(rstart, rpid):
        return asof_index(ts, pid, rstart, rpid, "backward", allow_exact=False)
    prev = ni - 1
    li = np.where(take(rpid, prev, -1) == pid, prev, -1)  # (prev -1: -1 either way)
    last = np.flatnonzero(ni < 0)  # (their last run, if any: a search of the few)
    li[last] = asof_index(ts[last], pid[last], rstart, rpid, "backward", allow_exact=False)
    return li


def _wake_to_run(
    ev: Events,
    ts: np.ndarray,
    pid: np.ndarray,
    next_waking: np.ndarray,
    wakers: _Wakers,
    proof: _Runs,
    wakeup_ts: pd.arrays.IntegerArray,
) -> dict[str, Any]:
    """The columns run_ts, run_from_ts, latency_ns, run_end_ts, slept_after,
    wakee_was_running.

    Reads the wakee's runs (``proof``): whether it was running when woken, its next
    run at or after the waking and before its next waking (none if it was running:
    there was no wait), where that run may have begun (not before the waking, nor
    before its sched_wakeup), its end (a recorded switch-out) and whether it then
    slept (prev_state not R). Also names the waker as the switch that put it on its
    CPU did (``next_comm``): ``wakers.comm`` is corrected so.
    """
    n = len(ts)
    sw = ev.switch
    never = np.iinfo(np.int64).max
    run = proof.next_ts
    run_ok = (run != never) & (run < next_waking) & ~proof.was_running
    queued = wakeup_ts.to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).min)
    run_from = np.minimum(np.maximum(np.maximum(proof.next_from, ts), queued), run)
    latency = _nullable(run - ts, run_ok)
    end_ok = run_ok & proof.ended
    run_end_ts = _nullable(proof.end_ts, end_ok)
    slept_after = np.zeros(n, dtype=bool)
    if sw is not None and len(sw) and "prev_state_str" in sw.columns and end_ok.any():
        # the switch-out that ended the run: the wakee's first at or after its start
        sts = i64(sw, "ts")
        sprev = ev.key(ints(sw, "prev_pid"), sts)
        oi = asof_index(np.where(run_ok, run, ts), pid, sts, sprev, "forward", allow_exact=True)
        # (asleep per switch, by its state letters' category: no gather of the codes)
        asleep = cat_mask(sw["prev_state_str"].array, lambda c: not c.startswith("R"))
        slept_after = take(asleep, np.where(end_ok, oi, -1), False)
        del asleep, oi
    out = {
        "run_ts": _nullable(run, run_ok),
        "run_from_ts": _nullable(run_from, run_ok),
        "latency_ns": latency,
        "run_end_ts": run_end_ts,
        "slept_after": slept_after,
        "wakee_was_running": proof.was_running.copy(),
    }
    if sw is not None and len(sw):
        # the waker's own name at that instant: next_comm of the switch that put it on
        sts, scpu, snext = i64(sw, "ts"), ints(sw, "cpu"), ints(sw, "next_pid")
        si = asof_index(wakers.ts, wakers.cpu, sts, scpu, "backward", allow_exact=True)
        same_task = take(snext, si, -3) == wakers.pid
        wakers.comm = pick_cat(same_task, take_cat(sw["next_comm"].array, si), wakers.comm)
    return out


def _work_function(ev: Events, ts: np.ndarray, wakers: _Wakers) -> pd.Categorical:
    """The work item the waker was running (task context only): the function of the
    waker pid's last ``workqueue_execute_start`` whose ``workqueue_execute_end`` has
    not come yet; missing otherwise. Keyed by pid, not CPU: an unbound worker can move
    between CPUs in the middle of a work item."""
    n = len(ts)
    if ev.wq_start is None or ev.wq_end is None or not len(ev.wq_start):
        return pd.Categorical.from_codes(np.full(n, -1, dtype=np.int32), categories=[])
    st_ts, end_ts = i64(ev.wq_start, "ts"), i64(ev.wq_end, "ts")
    waker = ev.key(wakers.pid, ts)  # (a work item of the waker's pid's earlier task is not its)
    si = asof_index(ts, waker, st_ts, ev.key(i64(ev.wq_start, "common_pid"), st_ts), "backward",
                    True)  # fmt: skip
    ei = asof_index(ts, waker, end_ts, ev.key(i64(ev.wq_end, "common_pid"), end_ts), "backward",
                    True)  # fmt: skip
    inside = (
        (si >= 0)
        & (take(st_ts, si, -1) > take(end_ts, ei, -1))
        & (wakers.ctx == 0)
        & (wakers.pid != 0)
    )
    return take_cat(ev.wq_start["function"].array, np.where(inside, si, -1))


def _nullable(values: npt.ArrayLike, ok: npt.ArrayLike) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(np.asarray(values, dtype=np.int64), ~np.asarray(ok, bool))


def empty() -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in WAKEUP_COLUMNS})
