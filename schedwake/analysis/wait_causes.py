"""Why a task waited to run: the longest waits of a trace, its tail and every wait of
the ``--pid`` tasks, each broken into named causes that add up
(:func:`schedwake.model.waits.breakdown`; docs/waits.md).

The waits explained are of two kinds:

* a wake-up's wait (``wake_to_run``): from its ``sched_waking`` to the wakee's
  switch-in, or its first proof of running where the switch-in is missing (the
  wakeups table's ``latency_ns``; at least ``run_from_ts - ts``), whose first part is the wake-up's
  own path (``wake_path``: to its ``sched_wakeup``, or to its own migration when the
  trace has no ``sched_wakeup``);
* a preempted task's wait (``preempted``): from its switch-out in state R or R+ to its
  next switch-in (the model's waits table).

``perf sched latency``'s own definitions (a woken wait starts at ``sched_wakeup``) are
the model's waits table (:mod:`schedwake.model.waits`), which these functions also give
per task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..model import waits as _waits
from ..model.events import ints

if TYPE_CHECKING:
    from ..model import Model
    from ..trace import Trace

#: Waits at or above this quantile of all waits make the tail.
TAIL_QUANTILE = 0.99
#: The tail explained is at most this many of the longest waits (a bound on the work).
TAIL_LIMIT = 200


def _ts_s(ns: int) -> float:
    """Seconds with microseconds, cut as perf and trace-cmd print them."""
    return int(ns) // 1000 / 1e6


def parts(b: dict) -> list[dict]:
    """A breakdown's parts as reports give them (microseconds, no nanoseconds)."""
    return [{k: v for k, v in p.items() if k != "ns"} for p in b["parts"]]


def _own_wake_ends(model: Model, w: pd.DataFrame) -> np.ndarray:
    """Per wakeups row: where the wake-up's own path ends (its ``sched_wakeup``, else
    its own migration), or -1 when the trace shows neither."""
    mig = w["migrate_index"].to_numpy(dtype=np.int64, na_value=-1)
    own = np.full(len(w), -1, dtype=np.int64)
    m = model.events.migrate
    if m is not None and len(m):
        mts = m["ts"].to_numpy(dtype=np.int64)
        own = np.where(mig >= 0, mts[np.clip(mig, 0, len(mts) - 1)], -1)
    return wake_path_ends(w, own)


def wake_path_ends(w: pd.DataFrame, migrate_ts: np.ndarray) -> np.ndarray:
    """Per wakeups row: its ``sched_wakeup``, else its own migration's time
    (``migrate_ts``, -1: none), else -1: where the wake-up's own path ends."""
    wake = w["wakeup_ts"].to_numpy(dtype=np.int64, na_value=-1)
    return np.where(wake >= 0, wake, migrate_ts)


def explain_wakeup(trace: Trace, r: pd.Series) -> dict[str, Any]:
    """The breakdown of one row ``r`` of the wakeups table (a wake-to-run wait)."""
    if not pd.isna(r["wakeup_ts"]):
        end = int(r["wakeup_ts"])
    elif not pd.isna(r["migrate_index"]) and int(r["migrate_index"]) >= 0:
        migrate = trace.model.events.migrate
        assert migrate is not None  # (a wake-up's own migration is one of them)
        end = int(migrate["ts"].iloc[int(r["migrate_index"])])
    else:
        end = -1
    return _explain(
        trace,
        int(r["wakee_pid"]),
        int(r["ts"]),
        int(r["run_ts"]),
        int(r["chosen_cpu"]),
        None if end < 0 else int(end),
    )


def explain_wait(trace: Trace, r: pd.Series) -> dict[str, Any]:
    """The breakdown of one row ``r`` of the waits table (woken or preempted)."""
    cpu = int(r["cpu"])
    return _explain(trace, int(r["pid"]), int(r["start_ts"]), int(r["end_ts"]), cpu, None)


def _explain(
    trace: Trace, pid: int, start: int, end: int, cpu: int, wake_end: int | None
) -> dict[str, Any]:
    index = trace.model.cpu_index
    # the waiting task's priority: the one its switch-in gives it
    waiter_prio = index.prio_of(pid, end)
    b = _waits.breakdown(index, trace.topology, pid, start, end, cpu, wake_end, waiter_prio)
    b["start_ts"], b["end_ts"] = int(start), int(end)
    return b


class SwitchOuts:
    """The switch-outs of a trace with callchains, indexed by task once: each query of
    :meth:`last` looks at that task's switches only (a wait explained per task, as
    ``--waits`` explains every wait, no longer scans every switch of the trace)."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.table = None
        if not trace.has_records("sched_switch"):
            return
        table = trace.table("sched_switch")
        if "callchain" not in table.column_names:
            return
        self.table = table
        ts = table.column("ts").to_numpy()
        prev = table.column("prev_pid").to_numpy()
        # by task, then time, then the table's order (the first of equal times wins)
        self.order = np.lexsort((np.arange(len(ts)), ts, prev))
        self.prev = prev[self.order]
        self.ts = ts[self.order]
        self.cpu = table.column("cpu").to_numpy()[self.order]

    def last(
        self, pid: int, lo: int, hi: int, cpu: int | None = None
    ) -> tuple[list[dict], int] | None:
        """``(frames, ts)`` of the last switch-out of ``pid`` in ``(lo, hi]`` (on ``cpu``
        when given): its kernel stack, innermost first, and its time; None without
        callchains or such a switch."""
        if self.table is None:
            return None
        from ..detect.evidence import stack_frames

        a, b = np.searchsorted(self.prev, pid, "left"), np.searchsorted(self.prev, pid, "right")
        ts = self.ts[a:b]
        i = a + np.searchsorted(ts, lo, "right")
        j = a + np.searchsorted(ts, hi, "right")
        hit = np.arange(i, j)
        if cpu is not None:
            hit = hit[self.cpu[hit] == cpu]
        if len(hit) == 0:
            return None
        last_ts = self.ts[hit[-1]]
        first = hit[self.ts[hit] == last_ts][0]  # (the first of equal times, as before)
        row = int(self.order[first])
        table = self.table
        r = {
            "callchain": table.column("callchain")[row].as_py(),
            "callchain_context": table.column("callchain_context")[row].as_py()
            if "callchain_context" in table.column_names
            else None,
        }
        frames = stack_frames(self.trace, r)
        return (frames, int(last_ts)) if frames else None


def blocker_stack(trace: Trace, b: dict[str, Any], outs: SwitchOuts | None = None) -> None:
    """With callchains (``perf sched record -g``): the kernel stack of the task that
    ran longest instead (the largest ``task`` part), at its last switch-out on that CPU
    within the wait, added to that part as ``stack`` (frames, innermost first)."""
    tasks = [p for p in b["parts"] if p["part"] == "task"]
    if not tasks:
        return
    top = max(tasks, key=lambda p: p["ns"])
    found = (outs or SwitchOuts(trace)).last(top["pid"], b["start_ts"], b["end_ts"], top["cpu"])
    if found is not None:
        top["stack"] = [f["symbol"] for f in found[0]]
        top["stack_at"] = _ts_s(found[1])


def wait_record(
    trace: Trace,
    kind: str,
    pid: int,
    comm: str,
    start: int,
    end: int,
    cpu: int,
    b: dict[str, Any],
    waker: str | None = None,
    min_end: int | None = None,
    waker_pid: int | None = None,
) -> dict[str, Any]:
    """One explained wait as reports give it (``wait_min_us``: where the task's switch-in
    is missing, the least it can have waited, to ``min_end``; ``waker`` and
    ``waker_pid``: who woke it, for a wake-to-run wait)."""
    out = {
        "kind": kind,
        "wait_us": round((int(end) - int(start)) / 1e3, 3),
        "pid": int(pid),
        "comm": str(comm),
        "cpu": int(cpu),
        "from": _ts_s(start),
        "to": _ts_s(end),
        "breakdown": parts(b),
        "queued_on": b["cpus"],
        "llc_idle_us": b["llc_idle_us"],
    }
    if waker is not None:
        out["waker"] = str(waker)
    if waker_pid is not None and int(waker_pid) >= 0:
        out["waker_pid"] = int(waker_pid)
    if min_end is not None and int(min_end) < int(end):
        out["wait_min_us"] = round((int(min_end) - int(start)) / 1e3, 3)
    return out


def longest_wakeup(w: pd.DataFrame) -> int | None:
    """The row (position) of the wake-up of ``w`` (rows of the wakeups table) that waited
    longest to run, as ``perf sched latency`` gives its maximum; None without a measured
    latency. Where the wakee's switch-in is missing, its wait lies between ``run_from_ts``
    and ``run_ts``: the longest is the one whose proven wait (the least it can have
    been) is longest, of equal ones the longest possible, of equal ones the first."""
    if len(w) == 0 or not w["latency_ns"].notna().any():
        return None
    return int(np.argmax(longest_wakeup_key(w)))


def longest_wakeup_key(w: pd.DataFrame) -> np.ndarray:
    """The order of :func:`longest_wakeup` as one number a row (-inf: no latency)."""
    lat = w["latency_ns"].to_numpy(dtype=np.float64, na_value=np.nan)
    least = w["run_from_ts"].to_numpy(dtype=np.float64, na_value=np.nan) - w["ts"].to_numpy(
        dtype=np.float64
    )
    # (the proven wait first; of equal ones, the longest possible)
    return np.where(np.isnan(lat), -np.inf, least * 2.0**20 + lat / 2.0**44)


def wakeup_record(trace: Trace, r: pd.Series) -> dict[str, Any]:
    """The wake-up ``r`` (a row of ``trace``'s wakeups table) and its wait explained, as
    ``analyze`` reports the longest (:attr:`schedwake.analysis.Analysis.longest_wake_to_run`)."""
    b = explain_wakeup(trace, r)
    blocker_stack(trace, b)
    out = {
        "latency_us": round(float(r["latency_ns"]) / 1e3, 3),
        "pid": int(r["wakee_pid"]),
        "comm": str(r["wakee_comm"]),
        "cpu": int(r["chosen_cpu"]),
        "waker": str(r["waker_comm"]),
        "waker_pid": int(r["waker_pid"]),
        "woken_at": round(int(r["ts"]) / 1e9, 6),
        "ran_at": round(int(r["run_ts"]) / 1e9, 6),
        "breakdown": parts(b),
        "llc_idle_us": b["llc_idle_us"],
    }
    if int(r["run_from_ts"]) < int(r["run_ts"]):
        out["latency_min_us"] = round((int(r["run_from_ts"]) - int(r["ts"])) / 1e3, 3)
    return out


def preempted_waits(waits: pd.DataFrame) -> pd.DataFrame:
    """The waits of tasks switched out runnable (R/R+), of rows of the waits table."""
    return waits[(waits["kind"] == "preempted").to_numpy()]


def longest_preempted_row(w: pd.DataFrame) -> int | None:
    """The row (position) of :func:`preempted_waits` ``w`` that is the longest proven wait
    (the least each can have been: to the earliest its run can have begun where its
    switch-in is missing), of equal ones the longest possible, of equal ones the last;
    None without any."""
    if len(w) == 0:
        return None
    least = w["min_end_ts"].to_numpy() - w["start_ts"].to_numpy()
    # (the last of the lexsort's order by (least, delay), without the sort)
    top = np.flatnonzero(least == least.max())
    delay = w["delay_ns"].to_numpy()[top]
    return int(top[np.flatnonzero(delay == delay.max())[-1]])


def longest_preempted(trace: Trace) -> dict[str, Any] | None:
    """The longest wait of a task switched out runnable (R/R+), explained; None when
    there is none."""
    w = trace.model.preempted_waits
    at = longest_preempted_row(w)
    return None if at is None else preempted_record(trace, w.iloc[at])


def preempted_record(trace: Trace, r: pd.Series) -> dict[str, Any]:
    """The preempted wait ``r`` (a row of ``trace``'s waits table) explained, as
    ``analyze`` reports the longest."""
    b = explain_wait(trace, r)
    blocker_stack(trace, b)
    rec = wait_record(
        trace,
        "preempted",
        r["pid"],
        r["comm"],
        r["start_ts"],
        r["end_ts"],
        r["cpu"],
        b,
        min_end=int(r["min_end_ts"]),
    )
    rec["from_cpu"] = int(r["from_cpu"])
    if bool(r["cut"]):
        rec["cut"] = True
    return rec


def _names(names: pd.Series) -> np.ndarray:
    """``names.astype(str).to_numpy()`` (str, NaN where missing) of a categorical column
    of strings: each category converted once, not each row (pandas writes other
    categories its own way: 1.0 for 1)."""
    if not isinstance(
        names.dtype, pd.CategoricalDtype
    ) or names.cat.categories.inferred_type not in ("string", "empty"):
        return names.astype(str).to_numpy()
    cats = np.append(np.asarray(names.cat.categories.astype(str), dtype=object), np.nan)
    return cats[np.asarray(names.cat.codes)]  # (code -1, a missing name: the NaN)


def all_waits(trace: Trace) -> pd.DataFrame:
    """Wake-to-run waits (from sched_waking) and preempted waits, one frame:
    ``kind``, ``pid``, ``comm``, ``start``, ``end``, ``ns``, ``cpu`` (a wake-up's chosen
    CPU; the CPU a preempted task ran on again), ``wake_end`` (where a wake-up's own
    path ends, -1: not shown), ``waker`` and ``waker_pid`` (-1 for a preempted wait)."""
    w = trace.model.wakeups
    if len(w):
        w = w[w["latency_ns"].notna().to_numpy()]
    wake_end = _own_wake_ends(trace.model, w) if len(w) else np.zeros(0, np.int64)
    return waits_frame(w, trace.model.preempted_waits, wake_end)


def waits_frame(w: pd.DataFrame, p: pd.DataFrame, wake_end: np.ndarray) -> pd.DataFrame:
    """:func:`all_waits` of rows ``w`` of the wakeups table (with a latency), ``p`` of
    the preempted waits and ``wake_end``, where each wake-up's own path ends."""
    cut = p["cut"].to_numpy()
    woken = pd.DataFrame(
        {
            "kind": "wake_to_run",
            "pid": w["wakee_pid"].to_numpy(np.int64),
            "comm": _names(w["wakee_comm"]),
            "start": w["ts"].to_numpy(np.int64),
            "end": w["run_ts"].to_numpy(dtype=np.int64),
            "min_end": w["run_from_ts"].to_numpy(dtype=np.int64),
            "cpu": w["chosen_cpu"].to_numpy(np.int64),
            "wake_end": wake_end,
            "waker": _names(w["waker_comm"]),
            "waker_pid": w["waker_pid"].to_numpy(np.int64),
            "cut": np.zeros(len(w), dtype=bool),
        }
    )
    preempted = pd.DataFrame(
        {
            "kind": "preempted",
            "pid": p["pid"].to_numpy(np.int64),
            "comm": _names(p["comm"]),
            "start": p["start_ts"].to_numpy(np.int64),
            "end": p["end_ts"].to_numpy(np.int64),
            "min_end": p["min_end_ts"].to_numpy(np.int64),
            "cpu": p["cpu"].to_numpy(np.int64),
            "wake_end": np.full(len(p), -1, dtype=np.int64),
            "waker": None,
            "waker_pid": np.full(len(p), -1, dtype=np.int64),
            "cut": cut,
        }
    )
    frames = [f for f in (woken, preempted) if len(f)]
    if not frames:
        return woken.assign(ns=np.zeros(0, np.int64))
    f = pd.concat(frames, ignore_index=True)
    return f.assign(ns=f["end"].to_numpy() - f["start"].to_numpy())


def _explain_rows(trace: Trace, f: pd.DataFrame, stacks: bool = False) -> list[tuple[dict, dict]]:
    """Each row of an :func:`all_waits` frame explained: (record, breakdown). ``stacks``:
    with callchains, the waiting task's own kernel stack at the switch-out that began
    its wait (``stack``, as ``perf sched timehist -g`` shows it) and the stack of the
    task that ran longest instead (:func:`blocker_stack`)."""
    out = []
    names = (
        "kind", "pid", "comm", "start", "end", "cpu", "wake_end", "waker", "min_end", "cut",
        "waker_pid",
    )  # fmt: skip
    cols = [f[c].tolist() for c in names]
    outs = SwitchOuts(trace) if stacks else None  # (the switches indexed once for all)
    for kind, pid, comm, start, end, cpu, wake_end, waker, min_end, cut, waker_pid in zip(*cols):
        b = _explain(trace, pid, start, end, cpu, None if wake_end < 0 else wake_end)
        if stacks:
            blocker_stack(trace, b, outs)
        rec = wait_record(
            trace, kind, pid, comm, start, end, cpu, b, waker, min_end, waker_pid=waker_pid
        )
        if stacks:
            own_stack(trace, rec, int(pid), int(start), outs)
        if cut:
            rec["cut"] = True
        out.append((rec, b))
    return out


def own_stack(
    trace: Trace, rec: dict[str, Any], pid: int, start: int, outs: SwitchOuts | None = None
) -> None:
    """With callchains: the kernel stack of task ``pid`` at its last switch-out at or
    before ``start`` (where it went to sleep, or was preempted), added to ``rec`` as
    ``stack`` (frames, innermost first) and ``stack_at`` (seconds)."""
    found = (outs or SwitchOuts(trace)).last(pid, np.iinfo(np.int64).min, start)
    if found is not None:
        rec["stack"] = [f["symbol"] for f in found[0]]
        rec["stack_at"] = _ts_s(found[1])


def tail_waits(
    trace: Trace, quantile: float = TAIL_QUANTILE, limit: int = TAIL_LIMIT
) -> dict[str, Any] | None:
    """The waits at or above the ``quantile`` of all waits (wake-to-run and
    preempted), their causes together: ``{"quantile", "threshold_us", "waits",
    "explained", "causes": [{cause, us, share}], "top_tasks": [...]}``; the
    ``limit`` longest are explained. None without waits."""
    w, p = trace.model.wakeups, trace.model.preempted_waits
    timed = _timed(w)
    # the waits' lengths, in all_waits' order; the columns read of the tail's alone
    ns = np.concatenate(
        [
            (w["run_ts"].to_numpy(dtype=np.int64, na_value=0) - ints(w, "ts"))[timed],
            p["end_ts"].to_numpy(np.int64) - p["start_ts"].to_numpy(np.int64),
        ]
    )
    if len(ns) == 0:
        return None
    threshold = float(np.quantile(ns, quantile))
    at = np.flatnonzero(ns >= threshold)
    at = at[np.argsort(-ns[at], kind="stable")][:limit]  # (longest_first)
    woken = at < len(timed)
    f = _wait_columns(trace, w.iloc[timed[at[woken]]], p.iloc[at[~woken] - len(timed)])
    # (the tail longest first again: its wake-ups came first in f, then the rest)
    back = np.empty(len(at), dtype=np.int64)
    back[woken] = np.arange(int(woken.sum()))
    back[~woken] = int(woken.sum()) + np.arange(int((~woken).sum()))
    tail = {k: v[back] for k, v in f.items()}
    causes, explained = _waits.aggregate_parts(trace.model.cpu_index, _tail_parts(trace, tail))
    kinds = pd.Series(np.asarray(_WAIT_KINDS, dtype=object)[tail["kind"]].tolist())
    return tail_record(quantile, threshold, int((ns >= threshold).sum()), kinds, explained, causes)


#: The kinds of :func:`all_waits`' waits, by the codes of :func:`_wait_columns`.
_WAIT_KINDS = ("wake_to_run", "preempted")


def _timed(w: pd.DataFrame) -> np.ndarray:
    """The rows of the wakeups table ``w`` with a latency (:func:`all_waits`' wake-to-run
    waits), as positions."""
    if len(w) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(w["latency_ns"].notna().to_numpy())


def _wait_columns(trace: Trace, w: pd.DataFrame, p: pd.DataFrame) -> dict[str, np.ndarray]:
    """The waits of rows ``w`` of the wakeups table with a latency and ``p`` of the
    preempted waits, in :func:`all_waits`' order, as arrays of its ``pid``, ``start``,
    ``end``, ``cpu`` and ``wake_end`` columns, and ``kind`` as a code into
    :data:`_WAIT_KINDS`: what :func:`tail_waits` reads of its tail, without a frame."""
    wake_end = _own_wake_ends(trace.model, w) if len(w) else np.zeros(0, np.int64)
    parts = {
        "pid": (w["wakee_pid"].to_numpy(np.int64), p["pid"].to_numpy(np.int64)),
        "start": (w["ts"].to_numpy(np.int64), p["start_ts"].to_numpy(np.int64)),
        "end": (w["run_ts"].to_numpy(dtype=np.int64), p["end_ts"].to_numpy(np.int64)),
        "cpu": (w["chosen_cpu"].to_numpy(np.int64), p["cpu"].to_numpy(np.int64)),
        "wake_end": (wake_end, np.full(len(p), -1, dtype=np.int64)),
        "kind": (np.zeros(len(w), dtype=np.intp), np.ones(len(p), dtype=np.intp)),
    }
    return {k: np.concatenate(v) for k, v in parts.items()}


def longest_first(f: pd.DataFrame) -> pd.DataFrame:
    """The waits of an :func:`all_waits` frame, longest first (of equal ones, in the
    frame's order)."""
    return f.iloc[np.argsort(-f["ns"].to_numpy(), kind="stable")]


def _tail_parts(trace: Trace, f: dict[str, np.ndarray]) -> list[tuple[_waits.Parts, int | None]]:
    """The parts of each wait of ``f`` (:func:`_wait_columns`' arrays) as arrays, found
    together (:func:`schedwake.model.waits.parts_many`), with the waiting task's
    priority: what :func:`explain_rows` gives as dicts, for
    :func:`schedwake.model.waits.aggregate_parts`."""
    index = trace.model.cpu_index
    rows = [
        (pid, start, end, cpu, None if wake_end < 0 else wake_end)
        for pid, start, end, cpu, wake_end in zip(
            *(f[c].tolist() for c in ("pid", "start", "end", "cpu", "wake_end"))
        )
    ]
    parts = _waits.parts_many(index, trace.topology, rows)
    return [(p, index.prio_of(r[0], r[2])) for p, r in zip(parts, rows)]


def explain_rows(trace: Trace, f: pd.DataFrame) -> list[dict[str, Any]]:
    """The breakdowns alone of the waits of an :func:`all_waits` frame (``trace`` shows
    them)."""
    return [
        _explain(trace, pid, start, end, cpu, None if wake_end < 0 else wake_end)
        for pid, start, end, cpu, wake_end in zip(
            *(f[c].tolist() for c in ("pid", "start", "end", "cpu", "wake_end"))
        )
    ]


def tail_record(
    quantile: float,
    threshold: float,
    waits: int,
    kinds: pd.Series,
    explained: int,
    causes: dict[str, Any],
) -> dict[str, Any]:
    """:func:`tail_waits`' record: the ``waits`` at or above ``threshold`` (ns), the
    ``kinds`` of the tail (longest first), ``explained`` of them explained, and their
    causes together (:func:`schedwake.model.waits.aggregate`)."""
    return {
        "quantile": quantile,
        "threshold_us": round(threshold / 1e3, 3),
        "waits": waits,
        "explained": explained,
        "kinds": {str(k): int(v) for k, v in kinds.value_counts().items()},
        **causes,
    }


def waits_of_pids(trace: Trace) -> list[dict]:
    """Every wait (wake-to-run and preempted) of the tasks ``trace`` is focused on
    (``--pid``), in time order, each explained."""
    f = all_waits(trace)
    f = f.iloc[np.lexsort((f["pid"].to_numpy(), f["start"].to_numpy()))]
    return [rec for rec, _ in _explain_rows(trace, f, stacks=True)]


def per_task_latency(trace: Trace) -> pd.DataFrame:
    """Per pid, ``perf sched latency -p``'s numbers from the model's waits table:
    ``count``, ``avg_ns``, ``max_ns``, ``max_start_ts``, ``max_end_ts``."""
    return _waits.per_task(trace.model.waits)
