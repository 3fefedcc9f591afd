"""The prelude of a time part: the real events before a cut that rebuild the model's state
there (docs/design-partitioned-analysis.md, 'What crosses a cut').

The model is a function of the events in time order. At a cut ``t0``, the events before
it matter to what comes after only through a small state; rather than summaries of that
state (a second code path the model would have to trust), a part carries the *events*
that rebuild it, and the model runs unchanged on the prelude and the part's own events.
:func:`carried_rows` picks them, each rule for a reason of the model:

* **per CPU, every event from its last ``sched_switch`` on** (every event before the cut
  when the CPU has none): the CPU's timeline at the cut is the task that switch put on
  it, checked against the proofs since (an event fires in the context of the task
  current on its CPU, :mod:`schedwake.model.completeness`);
* **per task, its last switch-out, and its last switch-in and every one since that
  switch-out**: the run it was on, or the time off the CPU it was in, began there (with
  its ``prev_state`` letters: preempted, sleeping, dead), a run that spans the cut
  keeps its recorded start, and a wake-up the run it led to. On a trace that lacks
  switch-outs, a task is switched in more than once after its last one, and the CPU
  switches to another task without switching it out: **the events of each such
  segment** (to its CPU's next switch) are carried too, since its runs end at their
  last proofs. On a trace that lacks switch-ins, a task is switched out more than
  once after its last switch-in: **every switch-out since its last switch-in** is
  carried (a wake-up between two of them found it off the CPU, not running);
* **per task, every wake-up and migration since its last switch-out** (``sched_waking``,
  ``sched_wakeup``, ``sched_wakeup_new``, ``sched_migrate_task``; every one when it
  has none), **and its last of each** whatever came before: a woken task waits from
  its wake-up, a migration moves a waiting task, the wake-up of the run a task is on
  at the cut is that run's, and a wake-up of a task whose previous wake-up no run
  followed shows it ran unseen (``rewoken``);
* **per carried wake-up, the switch before it on its CPU and its waker's last work
  item start and end**: the waker is named as the switch that put it on its CPU named
  it, and the work item it ran (if any) is its context; **and, of a wake-up of a
  running task, the task's switch-in before it and switch-out after it**: the waking
  of a running task waits for its ``sched_wakeup`` until the task's next waking,
  which may be parts later;
* **per worker, its last ``workqueue_execute_start`` and ``_end``**: a wake-up's waker
  runs a work item from its start to its end, which may enclose a cut;
* **every fork and exec before the cut**: a task's birth decides where it may first
  run and whether a migration was fork balancing (few rows: one a task).

The rules are taken "last before the cut", so they compose: the rows carried to a cut
from the rows carried to an earlier cut and the events between them are the rows carried
from the whole trace before it (what lets a partitioned analysis fold its parts' effects
left to right instead of reading the trace twice).

Lost-event rows are not picked here: they are few, and the caller carries them all.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from ..model import asof_index

#: Per task, the events that wake or move it (the task is the ``pid`` column).
TASK_EVENTS = ("sched_waking", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task")
#: The events of a task's birth and new program, every one carried.
BIRTH_EVENTS = ("sched_process_fork", "sched_process_exec")
#: The events that open and close a work item, the last of each per worker.
WORK_EVENTS = ("workqueue_execute_start", "workqueue_execute_end")

_NEVER = np.iinfo(np.int64).min


def last_of_each(keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Of ``rows`` (indices in time order), the last row of each key (``keys`` indexed
    by row), in row order."""
    if not len(rows):
        return rows
    k = keys[rows]
    _, first_from_end = np.unique(k[::-1], return_index=True)
    return np.sort(rows[len(rows) - 1 - first_from_end])


def _column(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy()


def _since(keys: np.ndarray, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per key (sorted unique), the latest ``ts`` of its rows (``keys`` and ``ts`` of the
    same rows)."""
    if not len(keys):
        return keys, ts
    uk, inv = np.unique(keys, return_inverse=True)
    latest = np.full(len(uk), _NEVER, dtype=np.int64)
    np.maximum.at(latest, inv, ts)
    return uk, latest


def _lookup(uk: np.ndarray, values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``values`` of ``keys`` in the sorted unique ``uk`` (:data:`_NEVER` where absent)."""
    if not len(uk):
        return np.full(len(keys), _NEVER, dtype=np.int64)
    at = np.clip(np.searchsorted(uk, keys), 0, len(uk) - 1)
    return np.where(uk[at] == keys, values[at], _NEVER)


def carried_rows(tables: Mapping[str, pa.Table], t0: int) -> dict[str, np.ndarray]:
    """Per event table, the indices (ascending) of its rows before ``t0`` that a part
    starting at ``t0`` carries (the module's rules). The tables are a trace's, each in
    time order (as every reader gives them)."""
    before = {
        name: np.flatnonzero(_column(t, "ts") < t0) if t.num_rows else np.zeros(0, np.intp)
        for name, t in tables.items()
    }
    switch = tables.get("sched_switch")
    if switch is not None and switch.num_rows:
        sw = before["sched_switch"]
        sts = _column(switch, "ts")[sw]
        prev, nxt = _column(switch, "prev_pid"), _column(switch, "next_pid")
        cpu_keys, cpu_since = _since(_column(switch, "cpu")[sw], sts)
        # a task's last switch-out: its wake-ups and migrations from then on
        task_keys, task_since = _since(prev[sw], sts)
        # its switch-ins since then (more than one where the trace lacks switch-outs):
        # the run a wake-up led to
        since_out = sts >= _lookup(task_keys, task_since, nxt[sw])
        # and its switch-outs since its last switch-in (more than one where the trace
        # lacks switch-ins: the time off the CPU a wake-up between them found it in)
        in_keys, in_since = _since(nxt[sw], sts)
        since_in = sts >= _lookup(in_keys, in_since, prev[sw])
        switch_rows = [last_of_each(prev, sw), last_of_each(nxt, sw), sw[since_out], sw[since_in]]
        segments = _segments(_column(switch, "cpu")[sw], sts, since_out)
        dead = _deaths(switch, sw)
    else:
        cpu_keys = task_keys = np.zeros(0, np.int64)
        cpu_since = task_since = np.zeros(0, np.int64)
        switch_rows = []
        segments = None
        dead = None
    out: dict[str, np.ndarray] = {}
    on_cpus: dict[str, np.ndarray] = {}  # (the CPUs' rows: never pruned)
    wakers_at: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # of carried wake-ups
    woken_at: list[tuple[np.ndarray, np.ndarray]] = []  # their tasks and times
    for name, table in tables.items():
        rows = before[name]
        if not len(rows):
            out[name] = rows
            continue
        ts, cpu = _column(table, "ts")[rows], _column(table, "cpu")[rows]
        keep = ts >= _lookup(cpu_keys, cpu_since, cpu)
        if segments is not None:
            keep |= segments.hold(cpu, ts)
        picked = [rows[keep]]
        on_cpus[name] = rows[keep]
        if name == "sched_switch":
            picked += switch_rows
        elif name in TASK_EVENTS:
            pid = _column(table, "pid")
            picked += [rows[ts >= _lookup(task_keys, task_since, pid[rows])]]
            picked.append(last_of_each(pid, rows))
            mine = np.unique(np.concatenate(picked))
            if name != "sched_migrate_task":
                woken_at.append((_column(table, "ts")[mine], pid[mine]))
            wakers_at.append(
                (
                    _column(table, "ts")[mine],
                    _column(table, "cpu")[mine],
                    _column(table, "common_pid")[mine],
                )
            )
        elif name in BIRTH_EVENTS:
            picked = [rows]
        elif name in WORK_EVENTS:
            picked.append(last_of_each(_column(table, "common_pid"), rows))
        out[name] = np.unique(np.concatenate(picked))
    for name, more in _last_runs(tables, before).items():
        out[name] = np.union1d(out[name], more)
    if woken_at and switch is not None and switch.num_rows:
        # of a carried wake-up of a task that was running (switched in, not out since),
        # the run: its switch-in and the switch-out after the wake-up (a wake-up of a
        # running task waits for its sched_wakeup until the task's next wake-up, which
        # may come parts later)
        t_ts, t_pid = (np.concatenate(c) for c in zip(*woken_at))
        sts, sw = _column(switch, "ts"), before["sched_switch"]
        nxt, prev = _column(switch, "next_pid"), _column(switch, "prev_pid")
        last_in = asof_index(t_ts, t_pid, sts[sw], nxt[sw], "backward", allow_exact=True)
        last_out = asof_index(t_ts, t_pid, sts[sw], prev[sw], "backward", allow_exact=True)
        running = (last_in >= 0) & (last_in > last_out)
        if running.any():
            ins = np.unique(sw[last_in[running]])
            outs = last_at_or_before(sts, prev, sw, t_ts[running], t_pid[running], "forward")
            out["sched_switch"] = np.union1d(out["sched_switch"], np.union1d(ins, outs))
    if dead is not None:
        for name, rows in out.items():
            if len(rows):
                gone = _of_the_dead(tables[name], name, rows, dead)
                out[name] = np.union1d(rows[~gone], on_cpus.get(name, rows[:0]))
    if wakers_at:
        # the waker's own state at each carried wake-up: the switch that put it on its
        # CPU, its work item
        w_ts, w_cpu, w_pid = (np.concatenate(c) for c in zip(*wakers_at))
        by = {"sched_switch": ("cpu", w_cpu)}
        by.update({name: ("common_pid", w_pid) for name in WORK_EVENTS})
        for name, (column, at_key) in by.items():
            table = tables.get(name)
            if table is not None and table.num_rows:
                more = last_at_or_before(
                    _column(table, "ts"), _column(table, column), before[name], w_ts, at_key
                )
                out[name] = np.union1d(out[name], more)
    return out


def _last_runs(tables: Mapping[str, pa.Table], before: Mapping[str, np.ndarray]) -> dict:
    """Per task, the proofs of its last run before the cut: its CPU's points (events in
    the context of a task, switches) in time order, cut into runs of one task's
    events; of each task's last run, its first and last points and the points just
    before and after it on its CPU (where it may have begun, what ended it). Per table,
    the row indices."""
    from ..model.completeness import PROOF_EVENTS

    names = [n for n in sorted(tables) if n in PROOF_EVENTS and len(before[n])]
    if not names:
        return {}
    ts, cpu, pid, src, row, is_switch = [], [], [], [], [], []
    for k, name in enumerate(names):
        t, rows = tables[name], before[name]
        if "common_pid" not in t.column_names:
            continue
        ts.append(_column(t, "ts")[rows])
        cpu.append(_column(t, "cpu")[rows])
        pid.append(t.column("common_pid").fill_null(-1).to_numpy()[rows])
        src.append(np.full(len(rows), k))
        row.append(rows)
        is_switch.append(np.full(len(rows), name == "sched_switch"))
    if not ts:
        return {}
    t_, c_, p_ = np.concatenate(ts), np.concatenate(cpu), np.concatenate(pid).astype(np.int64)
    s_, r_, sw_ = np.concatenate(src), np.concatenate(row), np.concatenate(is_switch)
    order = np.lexsort((t_, c_))
    t_, c_, p_, s_, r_, sw_ = (a[order] for a in (t_, c_, p_, s_, r_, sw_))
    new = np.ones(len(t_), dtype=bool)
    new[1:] = (c_[1:] != c_[:-1]) | (p_[1:] != p_[:-1]) | sw_[1:] | sw_[:-1]
    run = np.cumsum(new) - 1
    first_of_run = np.flatnonzero(new)
    tasks = np.flatnonzero(~sw_ & (p_ > 0))
    if not len(tasks):
        return {}
    by_task = tasks[np.lexsort((t_[tasks], p_[tasks]))]
    is_last = np.ones(len(by_task), dtype=bool)
    is_last[:-1] = p_[by_task[1:]] != p_[by_task[:-1]]
    ends = by_task[is_last]  # (each task's latest point)
    starts = first_of_run[run[ends]]
    before_run, after_run = starts - 1, ends + 1
    ok_before = before_run >= 0
    ok_before[ok_before] = c_[before_run[ok_before]] == c_[starts[ok_before]]
    ok_after = after_run < len(t_)
    ok_after[ok_after] = c_[after_run[ok_after]] == c_[ends[ok_after]]
    pick = np.concatenate([starts, ends, before_run[ok_before], after_run[ok_after]])
    out: dict[str, np.ndarray] = {}
    for k, name in enumerate(names):
        out[name] = np.unique(r_[pick[s_[pick] == k]])
    return out


def _deaths(switch: pa.Table, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of the switches ``rows`` (those before the cut, in time order): the pids whose last
    switch-out ended their task's life (``prev_state`` X, Z or x: the task never runs
    again) and its time, pids sorted."""
    from ..model.lives import dies

    if "prev_state_str" not in switch.column_names or not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    prev = _column(switch, "prev_pid")
    last = last_of_each(prev, rows)
    states = switch.column("prev_state_str").take(pa.array(last)).to_pylist()
    died = np.array([s is not None and dies(s) for s in states], dtype=bool)
    pids, at = prev[last][died].astype(np.int64), _column(switch, "ts")[last][died]
    order = np.argsort(pids, kind="stable")
    return pids[order], at[order].astype(np.int64)


#: Per table, the columns naming the task a row is about (a switch: both tasks; any
#: other event: the task whose context it fired in).
_SUBJECTS = {
    "sched_switch": ("prev_pid", "next_pid"),
    **{name: ("pid",) for name in TASK_EVENTS},
    "sched_process_fork": ("child_pid",),
    "sched_process_exec": ("pid",),
}


def _of_the_dead(
    table: pa.Table, name: str, rows: np.ndarray, dead: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Per row: every task it is about had died by the cut, and the row comes before its
    death. A dead task carries only its death (the switch-out that ended it): its rows
    all end by then (its pid's lives are the whole trace's facts, given to the part's
    model). The idle task (pid 0) counts as dead here: each CPU's carries its own."""
    pids, at = dead
    ts = _column(table, "ts")[rows]
    gone = np.ones(len(rows), dtype=bool)
    for column in _SUBJECTS.get(name, ("common_pid",)):
        if column not in table.column_names:
            return np.zeros(len(rows), dtype=bool)
        pid = table.column(column).fill_null(-1).to_numpy()[rows].astype(np.int64)
        died_at = _lookup(pids, at, pid)
        gone &= (pid == 0) | ((died_at != _NEVER) & (ts < died_at))
    return gone


class _Segments:
    """Stretches of CPUs' time, (CPU, start, end) sorted and not overlapping."""

    def __init__(self, cpu: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        order = np.lexsort((start, cpu))
        self.cpu, self.start, self.end = cpu[order], start[order], end[order]

    def hold(self, cpu: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Per (cpu, ts): whether a stretch of that CPU holds it."""
        out = np.zeros(len(ts), dtype=bool)
        for c in np.unique(self.cpu):
            a, b = np.searchsorted(self.cpu, c, "left"), np.searchsorted(self.cpu, c, "right")
            mine = np.flatnonzero(cpu == c)
            i = np.searchsorted(self.start[a:b], ts[mine], side="right") - 1
            ok = i >= 0
            out[mine[ok]] = ts[mine[ok]] < self.end[a:b][i[ok]]
        return out


def _segments(cpu: np.ndarray, ts: np.ndarray, begun: np.ndarray) -> _Segments | None:
    """The segments (from a switch to its CPU's next) that the switches ``begun`` (a
    mask over the switches ``cpu``/``ts``, in time order) begin, but a CPU's last (its
    tail, carried whole), or None when there are none."""
    order = np.lexsort((ts, cpu))
    c, t = cpu[order], ts[order]
    has_next = np.zeros(len(c), dtype=bool)
    has_next[:-1] = c[1:] == c[:-1]
    pick = np.flatnonzero(begun[order] & has_next)
    if not len(pick):
        return None
    return _Segments(c[pick], t[pick], t[pick + 1])


def last_at_or_before(
    ts: np.ndarray,
    key: np.ndarray,
    rows: np.ndarray,
    at_ts: np.ndarray,
    at_key: np.ndarray,
    direction: str = "backward",
) -> np.ndarray:
    """Of ``rows`` (indices into ``ts`` and ``key``, in time order), the last at or before
    each (``at_ts``, ``at_key``) with that key (``direction="forward"``: the first at or
    after it): the unique row indices found, ascending."""
    found = asof_index(at_ts, at_key, ts[rows], key[rows], direction, allow_exact=True)
    return np.unique(rows[found[found >= 0]])
