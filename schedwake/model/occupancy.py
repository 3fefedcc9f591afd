"""CPU occupancy: per CPU, who runs when, idle intervals, and who waits runnable.

One row per interval: ``cpu``, ``start_ts``, ``end_ts`` (exclusive), ``pid``, ``comm``,
``state`` and ``reason``:

``running`` / ``idle``
    from ``sched_switch``: from a switch on a CPU to the next switch on that CPU (the
    last one to the end of the trace); ``idle`` when ``next_pid`` is 0. Time before a
    CPU's first switch is unknown and not covered.
``waiting``, reason ``wakeup``
    a woken task queued on its chosen CPU, from its ``sched_wakeup`` (the waking when
    the trace has no ``sched_wakeup``) to its switch-in, or to a later migration of the
    task when one comes first. The wake-up's own migration (set_task_cpu() in
    try_to_wake_up(), which comes before the task is queued and runs: see
    ``wakeups.match_wakeup_migrations``) is not a later one.
``waiting``, reason ``preempted``
    a task switched out while runnable (``prev_state`` ``R`` or ``R+``), on that CPU
    until it is switched in again or migrated.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._util import _sorted, _stable_order, asof_index, take
from .events import Events, i64, ints

STATES = ("running", "idle", "waiting")
REASONS = ("switch", "wakeup", "preempted")


def build(ev: Events, wakeups: pd.DataFrame) -> pd.DataFrame:
    s = ev.switch
    if s is None or len(s) == 0:
        return _frame(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64),
                      np.zeros(0, np.int32), np.zeros(0, np.int8),
                      pd.CategoricalDtype([]), np.zeros(0, np.int8), np.zeros(0, np.int8))
    # Memory: the columns of the table (~28 bytes a row) are allocated first and each
    # part is written into its slice of them; the work arrays of a part come after them
    # and are freed as the part is done (no frames of parts, no concatenation, no
    # filtered copy of the wakeups).
    ts, cpu = i64(s, "ts"), ints(s, "cpu")
    nxt, prv = ints(s, "next_pid"), ints(s, "prev_pid")
    t_end = max(ev.last_ts, int(ts.max()))
    woken = wakeups["run_ts"].notna().to_numpy() if len(wakeups) else np.zeros(0, bool)
    pre = None
    if "prev_state_str" in s.columns:
        st = s["prev_state_str"].array
        runnable = np.array([str(c).startswith("R") for c in st.categories] + [False])
        codes = np.asarray(st.codes)
        pre = runnable[np.where(codes < 0, len(runnable) - 1, codes)] & (prv != 0)
        del st, codes
    # parts: running/idle (one row per switch), woken tasks, preempted tasks
    sizes = [len(ts)] + ([int(woken.sum())] if len(wakeups) else []) + \
        ([int(pre.sum())] if pre is not None else [])
    comms = [s["next_comm"].array[:0]] + ([wakeups["wakee_comm"].array[:0]]
                                          if len(wakeups) else []) + \
        ([s["prev_comm"].array[:0]] if pre is not None else [])
    from pandas.api.types import union_categoricals

    comm_dtype = union_categoricals(comms).dtype  # categories as concatenated parts give
    n = sum(sizes)
    out_cpu = np.empty(n, dtype=np.int32)
    out_start = np.empty(n, dtype=np.int64)
    out_end = np.empty(n, dtype=np.int64)
    out_pid = np.empty(n, dtype=np.int32)
    out_comm = np.empty(n, dtype=_code_dtype(len(comm_dtype.categories)))
    out_state = np.empty(n, dtype=np.int8)
    out_reason = np.empty(n, dtype=np.int8)
    at = [0]

    def put(cpu_, start_, end_, pid_, comm_, state_, reason_):
        a, b = at[0], at[0] + len(start_)
        out_cpu[a:b], out_start[a:b], out_end[a:b], out_pid[a:b] = cpu_, start_, end_, pid_
        out_comm[a:b] = pd.Categorical(comm_, dtype=comm_dtype).codes
        out_state[a:b], out_reason[a:b] = state_, reason_
        at[0] = b

    # running / idle
    order = _stable_order(cpu) if _sorted(ts) else np.lexsort((np.arange(len(ts)), ts, cpu))
    o_cpu, o_ts = cpu[order], ts[order]
    end = np.empty(len(ts), dtype=np.int64)
    end[:-1] = o_ts[1:]
    last = np.ones(len(ts), dtype=bool)
    last[:-1] = o_cpu[1:] != o_cpu[:-1]
    end[last] = t_end
    del last
    o_pid = nxt[order]
    put(o_cpu, o_ts, end, o_pid, s["next_comm"].array.take(order),
        np.where(o_pid == 0, 1, 0).astype(np.int8), 0)
    del order, o_cpu, o_ts, end, o_pid

    ins_ts, ins_pid = ts, nxt
    mts = i64(ev.migrate, "ts") if ev.migrate is not None else np.zeros(0, np.int64)
    mpid = i64(ev.migrate, "pid") if ev.migrate is not None else np.zeros(0, np.int64)
    big = np.iinfo(np.int64).max

    def wait_end(start, pid, moved_after=None):
        ii = asof_index(start, pid, ins_ts, ins_pid, "forward", allow_exact=True)
        e = take(ins_ts, ii, big)
        del ii
        mi = asof_index(start if moved_after is None else moved_after, pid, mts, mpid,
                        "forward", allow_exact=False)
        e = np.minimum(e, take(mts, mi, big))
        return np.where(e == big, t_end, e)

    # woken tasks
    if len(wakeups):
        def wk(name, na=None):
            c = wakeups[name]
            return (c.to_numpy() if na is None else c.to_numpy(dtype=np.int64, na_value=na)
                    )[woken]

        run = wk("run_ts", 0)
        queued = wk("wakeup_ts", big)
        start = np.minimum(np.where(queued == big, wk("ts"), queued), run)
        del queued, run
        wpid = wk("wakee_pid")
        # the wake-up's own migration (before the task is queued and runs: see
        # wakeups.match_wakeup_migrations) moves the wait to the chosen CPU
        own_ts = take(mts, wk("migrate_index"), big)
        wcpu = wk("chosen_cpu")
        moved_after = np.where(own_ts == big, start, np.maximum(start, own_ts))
        del own_ts
        wend = wait_end(start, wpid, moved_after)
        del moved_after
        put(wcpu, start, wend, wpid, wakeups["wakee_comm"].array[woken], 2, 1)
        del wcpu, start, wend, wpid
    # preempted tasks
    if pre is not None:
        pts, ppid = ts[pre], prv[pre]
        put(cpu[pre], pts, wait_end(pts, ppid), ppid, s["prev_comm"].array[pre], 2, 2)
        del pts, ppid
    return _frame(out_cpu, out_start, out_end, out_pid, out_comm, comm_dtype, out_state,
                  out_reason)


def _frame(cpu, start, end, pid, comm_codes, comm_dtype, state, reason) -> pd.DataFrame:
    """The occupancy table: the same columns and types whether empty or not."""
    return pd.DataFrame({
        "cpu": cpu,
        "start_ts": start,
        "end_ts": end,
        "pid": pid,
        "comm": pd.Categorical.from_codes(comm_codes, dtype=comm_dtype),
        "state": pd.Categorical.from_codes(state, categories=list(STATES)),
        "reason": pd.Categorical.from_codes(reason, categories=list(REASONS)),
    }, copy=False)


def _code_dtype(ncategories: int):
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
