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
    task when one comes first.
``waiting``, reason ``preempted``
    a task switched out while runnable (``prev_state`` ``R`` or ``R+``), on that CPU
    until it is switched in again or migrated.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._util import asof_index, take
from .events import Events, i64

STATES = ("running", "idle", "waiting")
REASONS = ("switch", "wakeup", "preempted")


def build(ev: Events, wakeups: pd.DataFrame) -> pd.DataFrame:
    s = ev.switch
    if s is None or len(s) == 0:
        return pd.DataFrame({c: [] for c in ("cpu", "start_ts", "end_ts", "pid", "comm",
                                             "state", "reason")})
    ts, cpu = i64(s, "ts"), i64(s, "cpu")
    nxt, prv = i64(s, "next_pid"), i64(s, "prev_pid")
    order = np.lexsort((np.arange(len(ts)), ts, cpu))
    o_cpu, o_ts = cpu[order], ts[order]
    end = np.empty(len(ts), dtype=np.int64)
    end[:-1] = o_ts[1:]
    last = np.ones(len(ts), dtype=bool)
    last[:-1] = o_cpu[1:] != o_cpu[:-1]
    end[last] = max(ev.last_ts, int(ts.max()))
    run = pd.DataFrame({
        "cpu": o_cpu.astype(np.int32),
        "start_ts": o_ts,
        "end_ts": end,
        "pid": nxt[order].astype(np.int32),
        "comm": s["next_comm"].array.take(order),
        "state": pd.Categorical.from_codes(np.where(nxt[order] == 0, 1, 0).astype(np.int8),
                                           categories=list(STATES)),
        "reason": pd.Categorical.from_codes(np.zeros(len(ts), np.int8), categories=list(REASONS)),
    })

    parts = [run]
    ins_ts, ins_pid = ts, nxt
    mts = i64(ev.migrate, "ts") if ev.migrate is not None else np.zeros(0, np.int64)
    mpid = i64(ev.migrate, "pid") if ev.migrate is not None else np.zeros(0, np.int64)
    big = np.iinfo(np.int64).max

    def wait_end(start, pid):
        ii = asof_index(start, pid, ins_ts, ins_pid, "forward", allow_exact=True)
        e = take(ins_ts, ii, big)
        mi = asof_index(start, pid, mts, mpid, "forward", allow_exact=False)
        e = np.minimum(e, take(mts, mi, big))
        return np.where(e == big, max(ev.last_ts, int(ts.max())), e)

    # woken tasks
    if len(wakeups):
        wk = wakeups[wakeups["run_ts"].notna()]
        start = wk["wakeup_ts"].fillna(wk["ts"]).to_numpy(dtype=np.int64)
        start = np.minimum(start, wk["run_ts"].to_numpy(dtype=np.int64))
        wpid = wk["wakee_pid"].to_numpy(dtype=np.int64)
        parts.append(pd.DataFrame({
            "cpu": wk["chosen_cpu"].to_numpy(dtype=np.int32),
            "start_ts": start,
            "end_ts": wait_end(start, wpid),
            "pid": wpid.astype(np.int32),
            "comm": wk["wakee_comm"].array,
            "state": pd.Categorical.from_codes(np.full(len(wk), 2, np.int8), list(STATES)),
            "reason": pd.Categorical.from_codes(np.full(len(wk), 1, np.int8), list(REASONS)),
        }))
    # preempted tasks
    if "prev_state_str" in s.columns:
        st = s["prev_state_str"].array
        runnable = np.array([str(c).startswith("R") for c in st.categories] + [False])
        codes = np.asarray(st.codes)
        pre = runnable[np.where(codes < 0, len(runnable) - 1, codes)] & (prv != 0)
        pts, ppid = ts[pre], prv[pre]
        parts.append(pd.DataFrame({
            "cpu": cpu[pre].astype(np.int32),
            "start_ts": pts,
            "end_ts": wait_end(pts, ppid),
            "pid": ppid.astype(np.int32),
            "comm": s["prev_comm"].array[pre],
            "state": pd.Categorical.from_codes(np.full(len(pts), 2, np.int8), list(STATES)),
            "reason": pd.Categorical.from_codes(np.full(len(pts), 2, np.int8), list(REASONS)),
        }))
    from pandas.api.types import union_categoricals

    comm = union_categoricals([pd.Categorical(p["comm"]) for p in parts])
    out = pd.concat([p.drop(columns="comm") for p in parts], ignore_index=True)
    out.insert(4, "comm", comm)
    return out


def first_switch_ts(ev: Events) -> dict[int, int]:
    """The first ``sched_switch`` of each CPU: occupancy is unknown before it."""
    s = ev.switch
    if s is None or len(s) == 0:
        return {}
    g = pd.DataFrame({"cpu": i64(s, "cpu"), "ts": i64(s, "ts")}).groupby("cpu")["ts"].min()
    return {int(k): int(v) for k, v in g.items()}
