"""The wakeups table: one row per ``sched_waking`` (DESIGN section 4).

Semantics (DESIGN section 3):

* ``sched_waking`` fires in the waker's context on the waker's CPU before the CPU is
  chosen; its ``target_cpu`` is the wakee's previous CPU (``prev_cpu``).
* A ``sched_migrate_task`` belongs to that wake-up when it is the next of our events on
  the same CPU, for the same pid, in the same current task (select_task_rq and
  set_task_cpu run with the wakee's pi_lock held and interrupts off: nothing else
  fires on that CPU in between). Its ``dest_cpu`` is the chosen CPU.
* ``sched_wakeup`` may fire later on the chosen CPU (queued remote wake-up);
  ``wakeup_ts`` is the first ``sched_wakeup`` of the pid at or after the waking and
  before its next waking.
* ``run_ts`` is the first switch-in of the wakee (``sched_switch.next_pid``) at or after
  the waking and before its next waking, unless the wakee was still running when it
  was woken (then there was no wait: ``run_ts``/``latency_ns`` are missing).
* the waker's name is the one the last ``sched_switch`` on that CPU gave it
  (``next_comm``) when that switch put the waker on the CPU, else ``common_comm``;
  the waker's class is ``irq`` in hardirq/softirq/NMI context, ``idle`` for pid 0.
* ``work_function``: the function of the waker pid's last ``workqueue_execute_start``
  whose ``workqueue_execute_end`` has not come yet. Keyed by pid, not by CPU: an
  unbound worker can move between CPUs in the middle of a work item.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import tasks
from ._util import asof_index, pick_cat, take, take_cat
from .events import Events, i64

WAKEUP_COLUMNS = (
    "ts", "waker_pid", "waker_comm", "waker_cpu", "waker_class", "waker_context",
    "waker_kthread_cpu", "work_function", "wakee_pid", "wakee_comm", "prev_cpu",
    "chosen_cpu", "migrated", "migration_class", "wakeup_ts", "run_ts", "latency_ns",
    "run_end_ts", "slept_after", "wakee_was_running", "migrate_index",
)


def _barriers(ev: Events):
    """(ts, cpu) of the events that end a wake-up's critical section on a CPU."""
    parts = [f for f in (ev.switch, ev.wakeup, ev.wakeup_new, ev.wq_start, ev.wq_end)
             if f is not None and len(f)]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ts = np.concatenate([i64(f, "ts") for f in parts])
    cpu = np.concatenate([i64(f, "cpu") for f in parts])
    order = np.argsort(ts, kind="stable")
    return ts[order], cpu[order]


def match_wakeup_migrations(ev: Events) -> np.ndarray:
    """For each ``sched_migrate_task`` row, the ``sched_waking`` row it belongs to, or -1."""
    m, w = ev.migrate, ev.waking
    if m is None or len(m) == 0:
        return np.zeros(0 if m is None else len(m), dtype=np.int64)
    if w is None or len(w) == 0:
        return np.full(len(m), -1, dtype=np.int64)
    mts, mcpu = i64(m, "ts"), i64(m, "cpu")
    wts, wcpu = i64(w, "ts"), i64(w, "cpu")
    wi = asof_index(mts, mcpu, wts, wcpu, "backward", allow_exact=True)
    bts, bcpu = _barriers(ev)
    bi = asof_index(mts, mcpu, bts, bcpu, "backward", allow_exact=False)
    b_ts = take(bts, bi, np.iinfo(np.int64).min)
    ok = wi >= 0
    ok &= take(i64(w, "pid"), wi, -2) == i64(m, "pid")
    ok &= take(i64(w, "common_pid"), wi, -2) == i64(m, "common_pid")
    ok &= b_ts <= take(wts, wi, np.iinfo(np.int64).max)
    res = np.where(ok, wi, -1)
    # one waking owns at most one migration: keep the first
    idx = np.flatnonzero(res >= 0)
    _, first = np.unique(res[idx], return_index=True)
    keep = np.zeros(len(res), dtype=bool)
    keep[idx[first]] = True
    return np.where(keep, res, -1)


def _switch_streams(ev: Events):
    """Switch-ins and switch-outs of tasks (pid 0 excluded), sorted by ts."""
    s = ev.switch
    ts, cpu = i64(s, "ts"), i64(s, "cpu")
    nxt, prv = i64(s, "next_pid"), i64(s, "prev_pid")
    return ts, cpu, nxt, prv


def build(ev: Events, topo, mig_w: np.ndarray) -> pd.DataFrame:
    fallback = ev.waking is None
    w = ev.wakeup if fallback else ev.waking
    if w is None:
        return empty()
    n = len(w)
    ts = i64(w, "ts")
    cpu = i64(w, "cpu")
    pid = i64(w, "pid")
    cpid = i64(w, "common_pid")
    target = i64(w, "target_cpu")
    ctx = tasks.context_codes(w["common_flags"]) if "common_flags" in w.columns \
        else np.full(n, 4, dtype=np.int8)

    have_switch = ev.switch is not None and len(ev.switch) > 0
    sts, scpu, snext, sprev = _switch_streams(ev) if have_switch else (np.zeros(0, np.int64),) * 4

    # previous CPU and chosen CPU
    if not fallback:
        prev_cpu = target.copy()
        chosen = target.copy()
        migrate_index = np.full(n, -1, dtype=np.int64)
        if ev.migrate is not None and len(mig_w):
            mi = np.flatnonzero(mig_w >= 0)
            migrate_index[mig_w[mi]] = mi
            chosen[mig_w[mi]] = i64(ev.migrate, "dest_cpu")[mi]
            # orig_cpu of the migration is the previous CPU too (they agree by design)
    else:
        chosen = target.copy()
        migrate_index = np.full(n, -1, dtype=np.int64)
        if have_switch:
            # the CPU the task last ran on: its last switch-out before the wake-up
            oi = asof_index(ts, pid, sts, sprev, "backward", allow_exact=True)
            prev_cpu = take(scpu, oi, -1)
        else:
            prev_cpu = np.full(n, -1, dtype=np.int64)
        if ev.migrate is not None and len(ev.migrate):
            # the migration of the wake-up is the last one of the pid before the wakeup
            mts = i64(ev.migrate, "ts")
            mpid = i64(ev.migrate, "pid")
            mi = asof_index(ts, pid, mts, mpid, "backward", allow_exact=True)
            prior = take(mts, mi, np.iinfo(np.int64).min)
            last_out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64) if not have_switch \
                else take(sts, asof_index(ts, pid, sts, sprev, "backward", True),
                          np.iinfo(np.int64).min)
            own = (mi >= 0) & (prior >= last_out) & \
                (take(i64(ev.migrate, "dest_cpu"), mi, -1) == target)
            migrate_index = np.where(own, mi, -1)
            prev_cpu = np.where(own, take(i64(ev.migrate, "orig_cpu"), mi, -1), prev_cpu)
    migrated = (prev_cpu >= 0) & (chosen != prev_cpu)

    # next waking of the same pid bounds the matches of this one
    order = np.lexsort((np.arange(n), ts, pid))
    nxt_same = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    same = pid[order][1:] == pid[order][:-1]
    nxt_same[order[:-1][same]] = ts[order][1:][same]

    # sched_wakeup of this wake-up
    NA = np.int64(0)
    if fallback:
        wakeup_ts, wakeup_ok = ts.copy(), np.ones(n, dtype=bool)
    elif ev.wakeup is not None and len(ev.wakeup):
        uts = i64(ev.wakeup, "ts")
        ui = asof_index(ts, pid, uts, i64(ev.wakeup, "pid"), "forward", allow_exact=True)
        wakeup_ts = take(uts, ui, NA)
        wakeup_ok = (ui >= 0) & (wakeup_ts < nxt_same)
    else:
        wakeup_ts, wakeup_ok = np.zeros(n, np.int64), np.zeros(n, dtype=bool)

    # wake-to-run
    run_ts, run_ok = np.zeros(n, np.int64), np.zeros(n, dtype=bool)
    run_end, end_ok = np.zeros(n, np.int64), np.zeros(n, dtype=bool)
    slept_after = np.zeros(n, dtype=bool)
    was_running = np.zeros(n, dtype=bool)
    waker_comm = w["common_comm"].array
    if have_switch:
        sw = ev.switch
        ii = asof_index(ts, pid, sts, snext, "forward", allow_exact=True)
        run_ts = take(sts, ii, NA)
        # was the wakee on a CPU when woken? its last switch event before the waking
        lin = asof_index(ts, pid, sts, snext, "backward", allow_exact=False)
        lout = asof_index(ts, pid, sts, sprev, "backward", allow_exact=False)
        was_running = (lin >= 0) & (take(sts, lin, -1) > take(sts, lout, -1))
        run_ok = (ii >= 0) & (run_ts < nxt_same) & ~was_running
        # end of that run: the next switch-out of the wakee at or after run_ts
        oi = asof_index(np.where(run_ok, run_ts, ts), pid, sts, sprev, "forward",
                        allow_exact=True)
        run_end = take(sts, oi, NA)
        end_ok = run_ok & (oi >= 0)
        if "prev_state_str" in sw.columns:
            st = take_cat(sw["prev_state_str"].array, oi)
            st_codes = np.asarray(st.codes)
            cats = np.array([not str(c).startswith("R") for c in st.categories] + [False])
            slept_after = end_ok & cats[np.where(st_codes < 0, len(cats) - 1, st_codes)]
        # the waker's own name at that instant: next_comm of the switch that put it on
        si = asof_index(ts, cpu, sts, scpu, "backward", allow_exact=True)
        same_task = take(snext, si, -3) == cpid
        waker_comm = pick_cat(same_task, take_cat(sw["next_comm"].array, si),
                              w["common_comm"].array)
    latency = run_ts - ts

    wclass, kcpu = tasks.classify(waker_comm, cpid, ctx)

    # work function of the waker (task context only)
    work_fn = pd.Categorical.from_codes(np.full(n, -1, dtype=np.int32), categories=[])
    if ev.wq_start is not None and ev.wq_end is not None and len(ev.wq_start):
        st_ts = i64(ev.wq_start, "ts")
        si = asof_index(ts, cpid, st_ts, i64(ev.wq_start, "common_pid"), "backward", True)
        ei = asof_index(ts, cpid, i64(ev.wq_end, "ts"), i64(ev.wq_end, "common_pid"),
                        "backward", True)
        start_t = take(st_ts, si, -1)
        end_t = take(i64(ev.wq_end, "ts"), ei, -1)
        inside = (si >= 0) & (start_t > end_t) & (ctx == 0) & (cpid != 0)
        work_fn = take_cat(ev.wq_start["function"].array, np.where(inside, si, -1))

    ctx_cat = pd.Categorical.from_codes(ctx, categories=list(tasks.CONTEXTS))
    df = pd.DataFrame({
        "ts": ts,
        "waker_pid": cpid.astype(np.int32),
        "waker_comm": waker_comm,
        "waker_cpu": cpu.astype(np.int32),
        "waker_class": wclass,
        "waker_context": ctx_cat,
        "waker_kthread_cpu": kcpu,
        "work_function": work_fn,
        "wakee_pid": pid.astype(np.int32),
        "wakee_comm": w["comm"].array,
        "prev_cpu": prev_cpu.astype(np.int32),
        "chosen_cpu": chosen.astype(np.int32),
        "migrated": migrated,
        "migration_class": topo.classify(prev_cpu, chosen),
        "wakeup_ts": _nullable(wakeup_ts, wakeup_ok),
        "run_ts": _nullable(run_ts, run_ok),
        "latency_ns": _nullable(latency, run_ok),
        "run_end_ts": _nullable(run_end, end_ok),
        "slept_after": slept_after,
        "wakee_was_running": was_running,
        "migrate_index": migrate_index,
    })
    return df


def _nullable(values, ok) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(np.asarray(values, dtype=np.int64), ~np.asarray(ok, bool))


def empty() -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in WAKEUP_COLUMNS})
