"""Which rows of the model's tables are what: the masks (and the few facts behind them)
that more than one reader needs -- the detectors that judge them and the metrics that
count them (docs/architecture.md, 'Metrics').

* :func:`episodes_mask`, :func:`would_stack_mask`: the kworker wake-migrate ping-pong
  episodes among the wake-ups, and those the stack-on-waker-CPU clause would have kept
  in place (``kworker_pingpong``, the ``pingpong_*`` metrics);
* :func:`kworker_preemptions`, :func:`futile_mask`: the kworkers preempted (``R+``) by
  another task and the futile wake-ups among them (``cswitch_storm``, the
  ``futile_wakeups_per_s`` metric);
* :func:`stopper_mask`: the stopper threads (``migration/N``) among wakers
  (``kworker_pingpong``, ``llc_roundrobin``).

They live below the detectors so that a metric does not depend on a detector's module
and one detector does not reach into another's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from . import _passes
from ._util import asof_index, cat_mask, key_ints, member
from .lives import pid_of

if TYPE_CHECKING:
    from . import Model


def episodes_mask(w: pd.DataFrame) -> np.ndarray:
    """Wake-ups that are ping-pong episodes."""
    if len(w) == 0:
        return np.zeros(0, dtype=bool)
    return (
        (w["waker_class"] == "percpu_kthread").to_numpy()
        & (w["waker_context"] == "task").to_numpy()
        & (w["waker_cpu"].to_numpy() == w["prev_cpu"].to_numpy())
        & w["migrated"].to_numpy()
    )


def pingpong_at_episodes(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the episodes of ``model.wakeups`` (memoized: the detector and the metrics
    both need it): their rows, and :func:`runnable_others` on the waker's CPU."""
    if model.memo.pingpong_at_episodes is None:
        w = model.wakeups
        at = np.flatnonzero(episodes_mask(w))
        others, known = runnable_others(
            model, w["waker_cpu"].to_numpy()[at], w["ts"].to_numpy(dtype=np.int64)[at]
        )
        model.memo.pingpong_at_episodes = (at, others, known)
    return model.memo.pingpong_at_episodes


def would_stack_mask(model: Model) -> np.ndarray:
    """The wake-ups of ``model.wakeups`` that are episodes the stacking clause would have
    kept on the waker's CPU: nothing but the waker runnable there at that moment (and
    the CPU's occupancy known)."""
    at, others, known = pingpong_at_episodes(model)
    out = np.zeros(len(model.wakeups), dtype=bool)
    out[at] = known & (others == 0)
    return out


def runnable_others(
    model: Model, cpus: np.ndarray, ts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each (cpu, ts): how many tasks wait runnable on the CPU at that instant
    (the running task, e.g. the waker, is not waiting), and whether the CPU's
    occupancy is known then (after its first sched_switch)."""
    occ = model.occupancy
    cpus, ts = np.asarray(cpus), np.asarray(ts, dtype=np.int64)
    n = np.zeros(len(ts), dtype=np.int64)
    known = np.zeros(len(ts), dtype=bool)
    first = model.first_switch_ts
    # the waits of those CPUs, as arrays (no copy of the occupancy table's rows)
    wsel = (occ["state"] == "waiting").to_numpy() & np.isin(occ["cpu"].to_numpy(), cpus)
    wc = occ["cpu"].to_numpy()[wsel]
    ws, we = occ["start_ts"].to_numpy()[wsel], occ["end_ts"].to_numpy()[wsel]
    del wsel
    for c in np.unique(cpus):
        sel = np.flatnonzero(cpus == c)
        known[sel] = ts[sel] >= first.get(int(c), np.iinfo(np.int64).max)
        on = wc == c
        starts = np.sort(ws[on], kind="stable")  # (runs already in order: merged)
        ends = np.sort(we[on], kind="stable")
        t = ts[sel]
        # intervals with start <= t < end
        n[sel] = np.searchsorted(starts, t, "right") - np.searchsorted(ends, t, "right")
    return n, known


def kworker_mask(cat: pd.Categorical) -> np.ndarray:
    """The rows (of a categorical of task names) that are kworkers."""
    return cat_mask(cat, lambda name: name.startswith("kworker/"))


def switch_kworkers(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Per ``sched_switch`` row, whether its prev and its next task is a kworker
    (memoized, read-only: the storm's steps each read them)."""
    if model.memo.switch_kworkers is None:
        s = model.events.switch
        assert s is not None  # (asked of switches only)
        pk, nk = kworker_mask(s["prev_comm"].array), kworker_mask(s["next_comm"].array)
        pk.setflags(write=False)
        nk.setflags(write=False)
        model.memo.switch_kworkers = (pk, nk)
    return model.memo.switch_kworkers


def kworker_preemptions(model: Model) -> dict[str, np.ndarray]:
    """The kworker preemptions of the trace (memoized): for each switch from a kworker
    (``R+``) to another task on a CPU, the switch row, the CPU, the kworker, the task,
    and whether it was futile (the task's run ended in a sleep and the CPU ran the
    kworker again before the task). The kworker and the task are tasks, not pids: life
    keys (:mod:`.lives`: the pid, but for a later task of a pid used again), so two
    tasks that shared a pid are never one."""
    if model.memo.storm_cycles is not None:
        return model.memo.storm_cycles
    s = model.events.switch
    out: dict[str, np.ndarray] = {"rows": np.zeros(0, dtype=np.int64)}
    if s is None or len(s) == 0 or "prev_state_str" not in s.columns:
        model.memo.storm_cycles = out
        return out
    cpu = s["cpu"].to_numpy().astype(np.int64)
    ts = s["ts"].to_numpy()
    ev = model.events
    prev_pid = ev.key(s["prev_pid"].to_numpy().astype(np.int64), ts)
    next_pid = ev.key(s["next_pid"].to_numpy().astype(np.int64), ts)
    # the switch-outs' states by their categories, each read once (a missing one: "nan")
    states = pd.Categorical(s["prev_state_str"])
    names = [str(c) for c in states.categories] + ["nan"]
    codes = np.asarray(states.codes)
    code_preempted = np.array([n == "R+" for n in names])
    code_runnable = np.array([n.startswith("R") for n in names])
    pk, nk = switch_kworkers(model)
    pre = np.flatnonzero(pk & ~nk & (next_pid != 0))  # (the states read at these only)
    pre = pre[code_preempted[codes[pre]]]  # (a code -1: the last name, "nan")
    # a CPU's switches chain: each switch's prev is the task the one before put on
    # the CPU, so the switch after a preemption is that task's switch-out there (unless
    # lost events broke the chain)
    before, after = _same_cpu_neighbors(cpu, pre)
    seen = after >= 0
    has = seen & (prev_pid[np.maximum(after, 0)] == next_pid[pre])  # (broken chain: no cycle)
    nxt = np.where(has, after, -1)
    slept = has & ~code_runnable[codes[np.maximum(nxt, 0)]]
    # then: the kworker's next switch-in on that CPU, before the task's own, among the
    # switch-ins of the preemptions' kworkers and tasks only (no other can match), by
    # (CPU, the task's rank among those: a life key may not fit in 32 bits). On one
    # CPU the rows are in the CPU's order: they are compared as they are
    kw_back = _switch_ins_after(nxt, cpu, next_pid, pre, prev_pid[pre], True)
    # (the task's switch-out itself may hand the CPU straight back to the kworker)
    task_back = _switch_ins_after(nxt, cpu, next_pid, pre, next_pid[pre], False)
    # (the kworker back first: -1, never back, comes after any row)
    last = np.iinfo(np.int64).max
    futile = slept & (kw_back >= 0) & (kw_back < np.where(task_back >= 0, task_back, last))
    out = {
        "rows": pre,
        "cpu": cpu[pre],
        "kworker": prev_pid[pre],
        "task": next_pid[pre],
        "ts": ts[pre],
        "futile": futile,
        # not settled by the switches the model has: the task slept, and neither the
        # kworker nor the task switched in again on that CPU (a time part of a trace
        # whose events end there: a later part's switch-ins settle it)
        "open": slept & (kw_back < 0) & (task_back < 0),
        # the cycle as evidence: from the kworker's switch-in to its return
        "start_ts": np.where(before >= 0, ts[np.maximum(before, 0)], ts[pre]),
        "back_ts": np.where(kw_back >= 0, ts[np.maximum(kw_back, 0)], ts[pre]),
        # (whether the model shows the kworker's return, and the CPU's next switch: a
        # time part of a trace may end before it)
        "back": kw_back >= 0,
        "next_seen": seen,
    }
    model.memo.storm_cycles = out
    return out


def _same_cpu_neighbors(cpu: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of the switch rows ``rows`` (ascending), the switch before and the one
    after it on its CPU (-1: none), by one compiled walk each way over the CPUs
    (``_passes.key_neighbors``): no order of every switch by CPU."""
    prev, nxt = np.empty(len(rows), np.int64), np.empty(len(rows), np.int64)
    if len(rows):
        lo, hi = int(cpu.min()), int(cpu.max())
        if hi - lo >= 1 << 20:  # (not CPU numbers as we know them: their ranks)
            cpu = np.unique(cpu, return_inverse=True)[1].reshape(-1)
            lo, hi = 0, int(cpu.max())
        _passes.key_neighbors(key_ints(cpu), rows.astype(np.int64), lo, hi - lo + 1, prev, nxt)
    return prev, nxt


def _switch_ins_after(
    at: np.ndarray,
    cpu: np.ndarray,
    next_pid: np.ndarray,
    pre: np.ndarray,
    who: np.ndarray,
    allow_exact: bool,
) -> np.ndarray:
    """For each preemption (switch rows ``pre``), the switch row of the first switch-in
    of the task ``who`` on the preemption's CPU at or after (``allow_exact``; else
    after) the switch row ``at`` of that CPU (-1: from its first), or -1: searched among
    the switch-ins of the tasks of ``who`` alone (one table lookup over the switches,
    then a search over the few, not a key of every switch)."""
    tasks = np.unique(who)
    ins = np.flatnonzero(member(next_pid, tasks))
    key = cpu[ins] * (1 << 32) + np.searchsorted(tasks, next_pid[ins])
    found = asof_index(
        at,
        cpu[pre] * (1 << 32) + np.searchsorted(tasks, who),
        ins,
        key,
        "forward",
        allow_exact,
    )
    return np.where(found >= 0, ins[np.maximum(found, 0)], -1)


def futile_mask(model: Model) -> np.ndarray:
    """Wake-ups (rows of ``model.wakeups``) that were futile: the wakee's run began by
    preempting a kworker and ended in a sleep with the CPU going back to that kworker
    before the wakee ran again."""
    mask = np.zeros(len(model.wakeups), dtype=bool)
    mask[preempting_wakeups(model, "futile")[0]] = True
    return mask


def preempting_wakeups(model: Model, which: str) -> tuple[np.ndarray, np.ndarray]:
    """The wake-ups (rows of ``model.wakeups``) whose run began by one of the kworker
    preemptions ``which`` of :func:`kworker_preemptions` (``"futile"``; ``"open"``:
    those not settled by the model's switches), and the index of that preemption among
    them."""
    w = model.wakeups
    c = kworker_preemptions(model)
    none = np.zeros(0, dtype=np.int64)
    if len(w) == 0 or len(c["rows"]) == 0:
        return none, none
    # a wake-up's run starts at a switch-in of its wakee on its chosen CPU: match the
    # preemptions by (task, ts), the task its life key (:mod:`.lives`); only the
    # wake-ups of their tasks' pids can match (a few of the wake-ups: no column of
    # them all is read but the pids)
    fts, ftask = c["ts"][c[which]], c["task"][c[which]]
    idx = np.flatnonzero(member(w["wakee_pid"].to_numpy(), pid_of(ftask)))
    run = w["run_ts"].array[idx].to_numpy(dtype="float64", na_value=np.nan)
    idx, run = idx[~np.isnan(run)], run[~np.isnan(run)]
    wakee = model.events.key(w["wakee_pid"].to_numpy()[idx], w["ts"].to_numpy()[idx])
    j = asof_index(run.astype(np.int64), wakee, fts, ftask, "backward", True)
    hit = j >= 0
    hit[hit] = fts[j[hit]] == run[hit]
    return idx[hit], j[hit]


def stopper_mask(comm: pd.Series) -> np.ndarray:
    """The wakers that are stopper threads (``migration/N``), per row."""
    cat = comm.astype("category").array
    flags = np.array(
        [str(c).startswith("migration/") and str(c)[10:].isdigit() for c in cat.categories]
        + [False]
    )
    codes = np.asarray(cat.codes)
    return flags[np.where(codes < 0, len(flags) - 1, codes)]
