"""A time part of a trace as a trace of its own, and the model rows it owns
(docs/design-partitioned-analysis.md, 'Who owns a row').

:func:`part_of` makes the part ``[t0, t1)`` of a loaded trace: its events, the prelude
that rebuilds the state at ``t0`` (:mod:`.prelude`), the events up to the horizon of
``t1`` that settle what ended before it (:func:`horizon`) and the whole trace's facts
(:mod:`schedwake.model.whole`), under the whole trace's topology. Its model is the
unchanged model, run on fewer events.

:func:`owned_rows` gives, of each model table, the rows the part is the one to give:

* a row with an end (a run, a timeline interval, a task state, a wait, an occupancy
  interval) belongs to the part that holds its end: it is built from events up to its
  end (and the horizon's, which settle it), and the prelude gives it its true start
  when it began before the part. A row still open where the part's trace ends is a
  later part's; so is a run that ran on to the trace's end (the last part's). A run
  that ended at its last proof (the CPU shows nothing more of it), and its task's
  running state, belong to the part that holds what the CPU shows next: only that
  makes the proof the last (:func:`_place_runs`);
* a point (a contradiction, a migration) to the part that holds its time;
* a wake-up to the part that holds the latest of its times (the waking, the wakeup,
  the run it led to and that run's end), where it is settled: one that led to no run
  at its task's next wake-up, one whose run has no recorded end at that run's end
  (:func:`_place_wakeups`).

Every row of the whole trace's tables belongs to exactly one part, and is equal there
(tests/test_partition.py checks it on real traces at random cuts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa

from .. import ingest
from ..model import asof_index
from ..model.wakeups import BARRIER_EVENTS
from ..trace import Trace
from .prelude import carried_rows

if TYPE_CHECKING:
    from ..model import Model
    from ..model.whole import WholeFacts

#: Per model table: the column that places a row in a part (its end, or its time); runs,
#: task states, waits, occupancy and wake-ups have later placements where a row is
#: settled after it (:func:`owned_rows`).
OWNED_BY = {
    "runs": "end_ts",
    "timeline": "end_ts",
    "breaks": "ts",
    "task_states": "end_ts",
    "waits": "end_ts",
    "occupancy": "end_ts",
    "migrations": "ts",
    "wakeups": "run_end_ts",  # (and its other times: _place_wakeups)
}


#: Columns that are row numbers in another table of the same model, and that table:
#: numbers no other model shares, so :func:`owned_rows` gives the time of the row they
#: name instead (``waking_index`` -> ``waking_ts``; -1 stays -1).
ROW_REFERENCES = {
    "migrations": ("waking_index", "wakeups", "waking_ts"),
    "wakeups": ("migrate_index", "migrations", "migrate_ts"),
}

#: Where a row with no end is placed: after every cut.
_OPEN = np.iinfo(np.int64).max


def part_of(trace: Trace, t0: int | None, t1: int | None, facts: WholeFacts) -> Trace:
    """The part ``[t0, t1)`` of ``trace`` (None: its start, its end) as a trace: the
    events in it, the prelude of ``t0`` (:func:`.prelude.carried_rows`), the events
    of every CPU from ``t1`` to its horizon (:func:`horizon`) and the lost-event rows up
    to it; its first timestamp is the whole trace's, its last the horizon (the whole
    trace's last for the last part); its model uses ``facts`` and the whole trace's
    topology."""
    tables: dict[str, pa.Table] = {}
    whole_tables = {name: trace.table(name) for name in trace.events}
    carried = {} if t0 is None else carried_rows(whole_tables, t0)
    last = trace.meta.last_ts_ns
    if t1 is not None:
        limit = wait_limit(t0, t1, trace.meta.first_ts_ns)
        last = horizon(whole_tables, trace.lost, t1, limit)
    for name, table in whole_tables.items():
        ts = table.column("ts").to_numpy()
        inside = np.ones(len(ts), dtype=bool)
        if t0 is not None:
            inside &= ts >= t0
            inside[carried[name]] = True
        if t1 is not None:
            inside &= ts <= last
        tables[name] = table if inside.all() else table.filter(pa.array(inside))
    lost = trace.lost
    if t1 is not None:
        lost = lost.filter(pa.array(lost.column("ts").to_numpy() <= last))
    meta = dataclasses.replace(trace.meta, last_ts_ns=last)
    part = Trace(ingest.RawTrace(tables, meta, lost, trace.sideband))
    part.topology = trace.topology
    part.whole_facts = facts
    return part


def horizon(
    tables: Mapping[str, pa.Table], lost: pa.Table, t1: int, wait_limit: int | None = None
) -> int:
    """How far a part ending at the cut ``t1`` reads (every CPU, so that the part is the
    trace as it was up to then): to the latest close of the CPUs' irregular segments.

    A row the whole trace ends before the cut may be settled only by what comes after
    it, in the segment (the stretch between two switches of a CPU) the cut falls in: a
    run or a known interval ends at its task's last proof only when its CPU next shows
    another task or a loss; a loss makes its whole segment unknown, back to the switch
    that began it, and the tasks that could have run there unknown from then; a
    contradiction in a segment is a ``context`` one only if the switch closing it
    continues the chain; a wait ends where its task can first have run, or earlier at
    a wake-up or a migration on another CPU. A segment is *regular* when nothing of
    that happens in it: every event in it is in the context of the task it began with,
    no loss falls in it and the switch closing it switches that task out. A regular
    segment settles nothing before the cut (an idle CPU that sleeps for seconds is
    one), so only the irregular ones are read to their close (a CPU whose irregular
    segment never closes: to the trace's end). A CPU with no switch before the cut has
    no timeline yet, and the runs its events prove are placed where it next shows
    something (:func:`_place_runs`): only a loss in its segment makes it wait. The
    rows that end after the cut are a later part's, which the part does not give. And
    a task woken before the cut and not yet run has its wait (the CPU's occupancy, the
    idle-while-runnable gaps) only once its run is seen: the horizon reaches its first
    proof of running (:func:`waiting_at`, :func:`first_proofs`), no further than
    ``wait_limit`` (:func:`wait_limit`: a wait longer than that, across the cut, is not
    yet given to the part, docs/design-partitioned-analysis.md)."""
    from ..model.completeness import PROOF_EVENTS

    switch = tables.get("sched_switch")
    if switch is None or not switch.num_rows:
        return t1
    ts, cpu = switch.column("ts").to_numpy(), switch.column("cpu").to_numpy()
    prev, nxt = switch.column("prev_pid").to_numpy(), switch.column("next_pid").to_numpy()
    last_ts = max(int(t.column("ts").to_numpy().max()) for t in tables.values() if t.num_rows)
    cpus = np.unique(cpu)
    never, open_ = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    seg_from = np.full(len(cpus), never, dtype=np.int64)
    seg_to = np.full(len(cpus), open_, dtype=np.int64)
    task = np.full(len(cpus), -1, dtype=np.int64)  # (the segment's task; -1: not known)
    closing_prev = np.full(len(cpus), -2, dtype=np.int64)
    opening_prev = np.full(len(cpus), -2, dtype=np.int64)
    left, right = np.flatnonzero(ts < t1), np.flatnonzero(ts >= t1)
    at = np.searchsorted(cpus, cpu)
    for rows, pick in ((left, -1), (right, 0)):  # (the last switch before, first after)
        if not len(rows):
            continue
        order = rows[np.lexsort((ts[rows], cpu[rows]))]
        edge = np.ones(len(order), dtype=bool)
        if pick == -1:
            edge[:-1] = cpu[order[1:]] != cpu[order[:-1]]
        else:
            edge[1:] = cpu[order[1:]] != cpu[order[:-1]]
        one = order[edge]
        if pick == -1:
            seg_from[at[one]], task[at[one]] = ts[one], nxt[one]
            opening_prev[at[one]] = prev[one]
        else:
            seg_to[at[one]], closing_prev[at[one]] = ts[one], prev[one]
    # (a CPU with no switch before the cut: its segment's task is the one switched out)
    task = np.where(task < 0, closing_prev, task)
    irregular = (closing_prev != -2) & (closing_prev != task)
    for name in sorted(set(tables) & set(PROOF_EVENTS) - {"sched_switch"}):
        t = tables[name]
        if not t.num_rows or "common_pid" not in t.column_names:
            continue
        e_at = np.searchsorted(cpus, t.column("cpu").to_numpy())
        e_at = np.clip(e_at, 0, len(cpus) - 1)
        e_ts = t.column("ts").to_numpy()
        e_pid = t.column("common_pid").fill_null(-1).to_numpy()
        # (an event stamped with the opening switch's very time in the context of the
        # task it switches out fired before it: the model puts it in the segment before)
        inside = (e_ts > seg_from[e_at]) | (
            (e_ts == seg_from[e_at]) & (e_pid != opening_prev[e_at])
        )
        inside &= e_ts < seg_to[e_at]
        other = inside & (e_pid != task[e_at])
        irregular[np.unique(e_at[other])] = True
    lost_in = np.zeros(len(cpus), dtype=bool)
    if lost.num_rows:
        l_at = np.clip(np.searchsorted(cpus, lost.column("cpu").to_numpy()), 0, len(cpus) - 1)
        l_ts = lost.column("ts").to_numpy()
        lost_in[np.unique(l_at[(l_ts >= seg_from[l_at]) & (l_ts <= seg_to[l_at])])] = True
    irregular |= lost_in
    # (a CPU with no switch before the cut has no timeline yet: its runs ended at their
    # last proofs are placed where the CPU next shows something, :func:`_place_runs`;
    # only a loss there reaches back)
    irregular &= (seg_from != never) | lost_in
    settled = t1
    if irregular.any():
        settled = max(t1, int(np.minimum(seg_to[irregular], last_ts).max()))
    # a woken task's wait (occupancy, idle-while-runnable) exists once its run is seen
    # (up to ``wait_limit``: a task woken and run only much later, or never, would
    # make the part read on to the end of the trace)
    waiting = waiting_at(tables, t1)
    limit = last_ts if wait_limit is None else min(last_ts, wait_limit)
    if len(waiting):
        proofs = first_proofs(tables, waiting, t1)
        settled = max(settled, int(np.minimum(np.where(proofs < 0, limit, proofs), limit).max()))
    # a migration's cause is settled by what comes after it (fork and exec balancing:
    # :mod:`schedwake.model.migrations`), up to the same bound
    mig_cpus, mig_pids = unsettled_migrations(tables, t1)
    if len(mig_cpus) or len(mig_pids):
        at = np.concatenate(first_settles(tables, mig_cpus, mig_pids, t1))
        settled = max(settled, int(np.minimum(np.where(at < 0, limit, at), limit).max()))
    return settled


#: The events that end a wake-up's critical section on a CPU: fork balancing looks for
#: the next (:func:`schedwake.model.wakeups.barrier_ts`).
_BARRIERS = tuple(BARRIER_EVENTS)


def _last_before(tables: Mapping[str, pa.Table], names: tuple[str, ...], key: str, t1: int
                 ) -> pd.Series:  # fmt: skip
    """Per value of the column ``key`` of the tables ``names``, its last time before ``t1``."""
    ts, keys = [], []
    for name in names:
        t = tables.get(name)
        if t is None or not t.num_rows or key not in t.column_names:
            continue
        tts = t.column("ts").to_numpy().astype(np.int64)
        before = tts < t1
        ts.append(tts[before])
        keys.append(t.column(key).fill_null(-1).to_numpy().astype(np.int64)[before])
    if not ts:
        return pd.Series(dtype=np.int64)
    return pd.Series(np.concatenate(ts)).groupby(np.concatenate(keys)).max()


def unsettled_migrations(tables: Mapping[str, pa.Table], t1: int) -> tuple[np.ndarray, np.ndarray]:
    """The CPUs (sorted) and the tasks (pids, sorted) of the ``sched_migrate_task`` rows
    before ``t1`` whose cause (:mod:`schedwake.model.migrations`) only what comes after
    ``t1`` settles: fork balancing reads the next event on the migration's CPU that ends
    a critical section (:data:`_BARRIERS`), exec balancing whether the task's next
    ``sched_process_exec`` comes before its next switch-out."""
    m = tables.get("sched_migrate_task")
    empty = np.zeros(0, np.int64)
    if m is None or not m.num_rows:
        return empty, empty
    by_cpu = _last_before(tables, ("sched_migrate_task",), "cpu", t1)
    by_pid = _last_before(tables, ("sched_migrate_task",), "pid", t1)
    barrier = _last_before(tables, _BARRIERS, "cpu", t1).reindex(by_cpu.index)
    # (a barrier at the migration's very time counts: asof_index allow_exact)
    cpus = by_cpu.index.to_numpy()[~(barrier.to_numpy() >= by_cpu.to_numpy())]
    out = _last_before(tables, ("sched_switch",), "prev_pid", t1).reindex(by_pid.index)
    ex = _last_before(tables, ("sched_process_exec",), "pid", t1).reindex(by_pid.index)
    settled = (out.to_numpy() > by_pid.to_numpy()) | (ex.to_numpy() >= by_pid.to_numpy())
    return np.sort(cpus).astype(np.int64), np.sort(by_pid.index.to_numpy()[~settled]).astype(
        np.int64
    )


def first_settles(
    tables: Mapping[str, pa.Table], cpus: np.ndarray, pids: np.ndarray, t1: int
) -> tuple[np.ndarray, np.ndarray]:
    """For :func:`unsettled_migrations`' CPUs, the first time at or after ``t1`` of an
    event of :data:`_BARRIERS` on each; for its tasks, of each one's switch-out or
    ``sched_process_exec``; -1 where the tables show none."""
    settles = {"sched_switch": ("prev_pid",), "sched_process_exec": ("pid",)}
    return (
        first_after(tables, {name: ("cpu",) for name in _BARRIERS}, cpus, t1),
        first_after(tables, settles, pids, t1),
    )


def wait_limit(t0: int | None, t1: int, first_ts: int | None) -> int:
    """How far past its end ``t1`` a part ``[t0, t1)`` reads for the runs of the tasks
    waiting at its end: one more part's length (memory stays bounded by two parts)."""
    start = t0 if t0 is not None else (first_ts if first_ts is not None else t1)
    return t1 + max(t1 - start, 1)


#: The events that wake a task (its ``pid`` column).
_WAKING = ("sched_waking", "sched_wakeup", "sched_wakeup_new")


def waiting_at(tables: Mapping[str, pa.Table], t1: int) -> np.ndarray:
    """The tasks (pids, sorted) woken before ``t1`` and neither switched in nor out since
    their last wake-up before it: the model gives such a task's wait on its CPU only
    once its run is seen, which may be after ``t1``."""
    woken_p, woken_t = [], []
    for name in _WAKING:
        t = tables.get(name)
        if t is None or not t.num_rows:
            continue
        ts = t.column("ts").to_numpy()
        before = ts < t1
        woken_p.append(t.column("pid").to_numpy()[before].astype(np.int64))
        woken_t.append(ts[before].astype(np.int64))
    if not woken_p:
        return np.zeros(0, np.int64)
    pid, ts = np.concatenate(woken_p), np.concatenate(woken_t)
    last_woken = pd.Series(ts).groupby(pid).max()
    switch = tables.get("sched_switch")
    woken = last_woken.index.to_numpy(dtype=np.int64)
    waiting = woken != 0
    if switch is not None and switch.num_rows:
        sts = switch.column("ts").to_numpy()
        before = sts < t1
        # (after its last switch-in and its last switch-out: a trace that lacks
        # switch-ins shows a task's run by a later switch-out, a death by its last)
        for column in ("next_pid", "prev_pid"):
            who = switch.column(column).to_numpy()[before].astype(np.int64)
            last = pd.Series(sts[before].astype(np.int64)).groupby(who).max()
            since = last.reindex(last_woken.index).fillna(np.iinfo(np.int64).min).to_numpy()
            waiting &= last_woken.to_numpy() > since
    return np.sort(woken[waiting])


def first_after(
    tables: Mapping[str, pa.Table],
    columns: Mapping[str, tuple[str, ...]],
    want: np.ndarray,
    t1: int,
) -> np.ndarray:
    """Per value of ``want`` (sorted), the first time at or after ``t1`` it is in one of
    the ``columns`` of a table (``columns``: table name -> its columns searched); -1
    where the tables show none."""
    never = np.iinfo(np.int64).max
    first = np.full(len(want), never, dtype=np.int64)
    if not len(want):
        return first
    for name, cols in columns.items():
        t = tables.get(name)
        if t is None or not t.num_rows:
            continue
        ts = t.column("ts").to_numpy().astype(np.int64)
        after = ts >= t1
        for c in cols:
            if c not in t.column_names:
                continue
            who = t.column(c).fill_null(-1).to_numpy().astype(np.int64)[after]
            at = np.clip(np.searchsorted(want, who), 0, len(want) - 1)
            hit = want[at] == who
            np.minimum.at(first, at[hit], ts[after][hit])
    return np.where(first == never, -1, first)


def first_proofs(tables: Mapping[str, pa.Table], pids: np.ndarray, t1: int) -> np.ndarray:
    """Per pid of ``pids`` (sorted), the first time at or after ``t1`` the tables show it
    running (switched in or out, or an event in its context); -1 where they do not."""
    from ..model.completeness import PROOF_EVENTS

    columns = {
        name: ("common_pid", "next_pid", "prev_pid") if name == "sched_switch" else ("common_pid",)
        for name in sorted(set(tables) & set(PROOF_EVENTS))
    }
    return first_after(tables, columns, pids, t1)


def _place(table: pd.DataFrame, by: str | tuple[str, ...]) -> np.ndarray:
    """The time that places each row of ``table`` in a part: column ``by``, or the
    latest of the columns ``by`` that have a value."""
    if isinstance(by, str):
        return np.array(table[by].to_numpy(dtype=np.int64, na_value=_OPEN))  # (a copy)
    never = np.iinfo(np.int64).min
    latest = np.max([table[c].to_numpy(dtype=np.int64, na_value=never) for c in by], axis=0)
    return latest


def _place_wakeups(table: pd.DataFrame, model: Model, points: dict[int, np.ndarray]) -> np.ndarray:
    """A wake-up at the latest of its times; but one that led to no run though its task
    was not running at its task's next wake-up (the run it would have led to is the
    task's next before that), one of a running task without its ``sched_wakeup`` there
    too (:mod:`schedwake.model.wakeups` takes the task's first ``sched_wakeup`` before
    its next waking), and one whose run has no recorded end at that run's end
    (:mod:`schedwake.model.completeness`'s run: its last proof) once the CPU shows
    something after it (:func:`_place_runs`); the last part's when neither comes."""
    place = _place(table, ("ts", "wakeup_ts", "run_ts", "run_end_ts"))
    ran, ended = table["run_ts"].notna().to_numpy(), table["run_end_ts"].notna().to_numpy()
    pid = table["wakee_pid"].to_numpy().astype(np.int64)
    running = table["wakee_was_running"].to_numpy(dtype=bool)
    # (the sched_wakeup of a wake-up of a running task may come any time before its
    # next wake-up: only that settles that it has none)
    no_wakeup = running & table["wakeup_ts"].isna().to_numpy()
    no_run = np.flatnonzero((~ran & ~running) | no_wakeup)
    if len(no_run):  # (the task's next row of this table: its next wake-up)
        ts = table["ts"].to_numpy().astype(np.int64)
        after = asof_index(ts[no_run], pid[no_run], ts, pid, "forward", allow_exact=False)
        place[no_run] = np.where(after >= 0, ts[after], _OPEN)
        # or its death, if that comes first: nothing of the task comes after it (the
        # parts after it do not carry the task: the preludes leave the dead out)
        place[no_run] = np.minimum(place[no_run], _death_after(model, ts[no_run], pid[no_run]))
    open_run = np.flatnonzero(ran & ~ended)
    if len(open_run):
        runs = model.completeness.runs
        # at the run's end, once something after it settles it there (a part whose
        # events stop before that may end the run at an earlier proof: not yet settled)
        settled = _place_runs(runs, points) != _OPEN
        end = np.where(settled, runs["end_ts"].to_numpy(dtype=np.int64, na_value=_OPEN), _OPEN)
        run_ts = table["run_ts"].to_numpy(dtype=np.int64, na_value=0)[open_run]
        # the run the wake-up led to: the task's last run begun by the run's time
        led_to = asof_index(
            run_ts,
            pid[open_run],
            runs["start_ts"].to_numpy(),
            runs["pid"].to_numpy().astype(np.int64),
            "backward",
            allow_exact=True,
        )
        place[open_run] = np.where(led_to >= 0, end[led_to], _OPEN)
    return place


def _death_after(model: Model, ts: np.ndarray, pid: np.ndarray) -> np.ndarray:
    """Per (time, pid): the time of the switch-out after it that ends the task's life
    (``prev_state`` X, Z or x: :func:`schedwake.model.lives.dies`); ``_OPEN`` without."""
    from ..model.lives import dies

    sw = model.events.switch
    out = np.full(len(ts), _OPEN, dtype=np.int64)
    if sw is None or not len(sw) or "prev_state_str" not in sw.columns or not len(ts):
        return out
    state = sw["prev_state_str"].astype("category").array
    died = np.array([dies(str(c)) for c in state.categories], dtype=bool)
    codes = np.asarray(state.codes)
    rows = np.flatnonzero((codes >= 0) & died[np.maximum(codes, 0)])
    if not len(rows):
        return out
    dts = sw["ts"].to_numpy().astype(np.int64)[rows]
    dpid = sw["prev_pid"].to_numpy().astype(np.int64)[rows]
    at = asof_index(ts, pid, dts, dpid, "forward", allow_exact=False)
    return np.where(at >= 0, dts[np.maximum(at, 0)], _OPEN)


def _before_last_switch_out(wakeups: pd.DataFrame, model: Model, t0: int) -> np.ndarray:
    """Per wake-up: it came before its task's last switch-out before ``t0``. A part
    starting at ``t0`` may hold such a wake-up in its prelude (a CPU's events since its
    last switch are carried) without the run it led to, which ended by that switch-out,
    and take a later run for it: a row that ran is then an earlier part's."""
    sw = model.events.switch
    if sw is None or not len(sw):
        return np.zeros(len(wakeups), dtype=bool)
    sts = sw["ts"].to_numpy()
    left = np.flatnonzero(sts < t0)
    prev = sw["prev_pid"].to_numpy()[left]
    outs, from_end = np.unique(prev[::-1], return_index=True)
    out_ts = sts[left][len(left) - 1 - from_end]
    pid = wakeups["wakee_pid"].to_numpy()
    at = np.clip(np.searchsorted(outs, pid), 0, max(len(outs) - 1, 0))
    if not len(outs):
        return np.zeros(len(wakeups), dtype=bool)
    return (outs[at] == pid) & (wakeups["ts"].to_numpy() < out_ts[at])


def _defer_to_unseen_starts(place: np.ndarray, table: pd.DataFrame, runs: pd.DataFrame) -> None:
    """Place at the run's first proof the rows that end where a run of their task that
    the trace does not show begin may have begun (its ``earliest_ts``: the CPU's
    previous proof): a wait, a state before it. That run may come long after the row's
    end (a task woken and queued, then first shown running after a stretch its CPU
    does not show), and only it ends the row there."""
    unseen = np.flatnonzero(
        ~runs["exact_start"].to_numpy()
        & (runs["start_ts"].to_numpy() > runs["earliest_ts"].to_numpy())
    )
    if not len(unseen) or not len(table):
        return
    by = pd.DataFrame(
        {
            "pid": runs["pid"].to_numpy()[unseen].astype(np.int64),
            "end_ts": runs["earliest_ts"].to_numpy()[unseen].astype(np.int64),
            "first_proof": runs["start_ts"].to_numpy()[unseen].astype(np.int64),
        }
    ).drop_duplicates(["pid", "end_ts"], keep="last")
    rows = pd.DataFrame(
        {
            "pid": table["pid"].to_numpy().astype(np.int64),
            "end_ts": table["end_ts"].to_numpy(dtype=np.int64, na_value=_OPEN),
        }
    )
    found = rows.merge(by, how="left", on=["pid", "end_ts"])["first_proof"].to_numpy()
    at = np.flatnonzero(~np.isnan(found))
    place[at] = np.maximum(place[at], found[at].astype(np.int64))


def _defer_to_runs(place: np.ndarray, occupancy: pd.DataFrame, wakeups: pd.DataFrame) -> None:
    """Place a woken task's wait on its CPU (``waiting``, reason ``wakeup``) no earlier
    than the run its wake-up led to: the model gives such a wait only for a wake-up
    that ran, however early a migration ended it."""
    woken = np.flatnonzero(
        ((occupancy["state"] == "waiting") & (occupancy["reason"] == "wakeup")).to_numpy()
    )
    ran = wakeups["run_ts"].notna().to_numpy()
    if not len(woken) or not ran.any():
        return
    queued = wakeups["wakeup_ts"].to_numpy(dtype=np.int64, na_value=_OPEN)
    start = np.where(queued == _OPEN, wakeups["ts"].to_numpy(), queued)[ran]
    run = wakeups["run_ts"].to_numpy(dtype=np.int64, na_value=0)[ran]
    by = pd.DataFrame(
        {
            "pid": wakeups["wakee_pid"].to_numpy()[ran].astype(np.int64),
            "start_ts": np.minimum(start, run),
            "run": run,
        }
    ).drop_duplicates(["pid", "start_ts"], keep="last")
    rows = pd.DataFrame(
        {
            "pid": occupancy["pid"].to_numpy()[woken].astype(np.int64),
            "start_ts": occupancy["start_ts"].to_numpy()[woken].astype(np.int64),
        }
    )
    found = rows.merge(by, how="left", on=["pid", "start_ts"])["run"].to_numpy()
    hit = ~np.isnan(found)
    place[woken[hit]] = np.maximum(place[woken[hit]], found[hit].astype(np.int64))


def _cpu_points(model: Model) -> dict[int, np.ndarray]:
    """Per CPU, the sorted times of everything the trace shows on it: the events the
    model reads as proofs (switches included) and the lost-event markers."""
    from ..model.completeness import PROOF_EVENTS

    trace = model.trace
    ts, cpu = [], []
    for name in sorted(set(trace.events) & set(PROOF_EVENTS)):
        t = trace.table(name)
        ts.append(t.column("ts").to_numpy())
        cpu.append(t.column("cpu").to_numpy())
    ts.append(trace.lost.column("ts").to_numpy())
    cpu.append(trace.lost.column("cpu").to_numpy())
    all_ts, all_cpu = np.concatenate(ts).astype(np.int64), np.concatenate(cpu).astype(np.int64)
    return {int(c): np.sort(all_ts[all_cpu == c]) for c in np.unique(all_cpu)}


def _next_point(points: dict[int, np.ndarray], cpu: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per (cpu, time): the first point of that CPU strictly after the time (open: none)."""
    out = np.full(len(after), _OPEN, dtype=np.int64)
    for c in np.unique(cpu):
        mine = np.flatnonzero(cpu == c)
        on = points.get(int(c), np.zeros(0, np.int64))
        i = np.searchsorted(on, after[mine], side="right")
        out[mine] = np.where(i < len(on), on[np.minimum(i, len(on) - 1)], _OPEN)
    return out


def _place_runs(runs: pd.DataFrame, points: dict[int, np.ndarray]) -> np.ndarray:
    """A run that ended at a switch-out at its end; one that ended at its last proof
    (``end`` ``event``) where the CPU next shows something (that is what ends it: a
    proof of another task, a loss); one that ran to the trace's end is open."""
    place = _place(runs, "end_ts")
    end = runs["end"].to_numpy()
    last_proof = np.flatnonzero(end == "event")
    place[last_proof] = _next_point(points, runs["cpu"].to_numpy()[last_proof], place[last_proof])
    place[end == "trace"] = _OPEN
    return place


def _place_task_states(
    states: pd.DataFrame, runs: pd.DataFrame, points: dict[int, np.ndarray]
) -> np.ndarray:
    """A task's interval at its end, but a running one that ended where a run of its
    CPU ended at its last proof where the CPU next shows something, as
    :func:`_place_runs` places that run."""
    place = _place(states, "end_ts")
    cpu = states["cpu"].to_numpy().astype(np.int64)
    running = np.flatnonzero((states["state"] == "running").to_numpy())
    by_proof = (runs["end"] == "event").to_numpy()
    ended = pd.DataFrame(
        {
            "cpu": runs["cpu"].to_numpy()[by_proof].astype(np.int64),
            "end": runs["end_ts"].to_numpy()[by_proof].astype(np.int64),
        }
    ).drop_duplicates()
    rows = pd.DataFrame({"cpu": cpu[running], "end": place[running]})
    hit = rows.merge(ended, how="left", on=["cpu", "end"], indicator=True)["_merge"] == "both"
    at = running[hit.to_numpy()]
    place[at] = _next_point(points, cpu[at], place[at])
    return place


def model_tables(model: Model) -> dict[str, pd.DataFrame]:
    """The model's tables by the names of :data:`OWNED_BY`."""
    return {name: model_table(model, name) for name in OWNED_BY}


def model_table(model: Model, name: str) -> pd.DataFrame:
    """The model's table ``name`` (a name of :data:`OWNED_BY`), built if not yet."""
    if name in ("runs", "timeline", "breaks"):
        return getattr(model.completeness, name)
    table: pd.DataFrame = getattr(model, name)
    return table


def owned_rows(
    model: Model, t0: int | None, t1: int | None, names: tuple[str, ...] = tuple(OWNED_BY)
) -> dict[str, pd.DataFrame]:
    """Of each of ``model``'s tables (``names``: those only, and only they are built),
    the rows that belong to the part ``[t0, t1)`` (None: open), in the table's order; a
    column of :data:`ROW_REFERENCES` gives the time of the row it named."""
    out = {}
    points = _cpu_points(model)
    for name in names:
        table = model_table(model, name)
        rows = table[owned_mask(model, t0, t1, name, points)].reset_index(drop=True)
        if name in ROW_REFERENCES:
            column, other, renamed = ROW_REFERENCES[name]
            at = rows[column].to_numpy().astype(np.int64)
            ts = model_table(model, other)["ts"].to_numpy()
            named = np.where(
                at >= 0, ts[np.clip(at, 0, max(len(ts) - 1, 0))] if len(ts) else -1, -1
            )
            rows = rows.drop(columns=[column]).assign(**{renamed: named})
        out[name] = rows
    return out


def owned_masks(
    model: Model, t0: int | None, t1: int | None, names: tuple[str, ...]
) -> dict[str, np.ndarray]:
    """:func:`owned_mask` of each of the tables ``names``, the CPUs' points found once."""
    points = _cpu_points(model)
    return {name: owned_mask(model, t0, t1, name, points) for name in names}


def placements(model: Model, name: str, points: dict[int, np.ndarray]) -> np.ndarray:
    """Per row of ``model``'s table ``name`` (:data:`OWNED_BY`), the time that places it
    in a part (:func:`owned_mask`); ``points``: :func:`_cpu_points` of the model."""
    table = model_table(model, name)
    if name == "wakeups":
        place = _place_wakeups(table, model, points)
    elif name == "runs":
        place = _place_runs(table, points)
    elif name == "task_states":
        place = _place_task_states(table, model_table(model, "runs"), points)
    else:
        place = _place(table, OWNED_BY[name])
    if name in ("task_states", "waits", "occupancy"):
        _defer_to_unseen_starts(place, table, model_table(model, "runs"))
    if name == "occupancy":
        _defer_to_runs(place, table, model_table(model, "wakeups"))
    return place


def crossing_waits(model: Model, t0: int | None, t1: int | None) -> pd.DataFrame:
    """The woken waits (occupancy rows ``waiting``, reason ``wakeup``) the part
    ``[t0, t1)`` owns that begin before it (columns cpu, start_ts, end_ts, pid, comm), and
    the time that placed each in it (``placed``: its run's, :func:`placements`): an
    earlier part whose events end before that time has no row of the wait
    (:func:`waits_beyond`)."""
    occ = model_table(model, "occupancy")
    if t0 is None:  # (the first part: nothing begins before it)
        occ = occ.iloc[:0]
    place = (
        placements(model, "occupancy", _cpu_points(model)) if len(occ) else np.zeros(0, np.int64)
    )
    mine = _kept(model, t0, t1, "occupancy", place)
    mine &= (occ["state"] == "waiting").to_numpy() & (occ["reason"] == "wakeup").to_numpy()
    mine &= occ["start_ts"].to_numpy() < (t0 or 0)
    rows = occ[mine]
    return pd.DataFrame(
        {
            "cpu": rows["cpu"].to_numpy().astype(np.int64),
            "start_ts": rows["start_ts"].to_numpy().astype(np.int64),
            "end_ts": rows["end_ts"].to_numpy().astype(np.int64),
            "pid": rows["pid"].to_numpy().astype(np.int64),
            "comm": rows["comm"].astype(str).to_numpy(),
            "placed": place[mine],
        }
    )


def waits_beyond(
    spans: list[tuple[int | None, int | None]], lasts: list[int], crossing: list[pd.DataFrame]
) -> list[pd.DataFrame | None]:
    """Per part (``spans`` in time order, each part's last event time ``lasts``: its
    horizon), the woken waits it has no row of that cross it
    (:attr:`schedwake.model.whole.WholeFacts.waits_beyond`): of every later part's
    :func:`crossing_waits`, those that overlap the part and were placed after its
    last event (their runs come after it); None for a part with none."""
    out: list[pd.DataFrame | None] = []
    for j, ((t0, t1), last) in enumerate(zip(spans, lasts)):
        later = [c for c in crossing[j + 1 :] if len(c)]
        if t1 is None or not later:
            out.append(None)
            continue
        c = pd.concat(later, ignore_index=True)
        hit = (c["start_ts"].to_numpy() < t1) & (c["placed"].to_numpy() > last)
        if t0 is not None:
            hit &= c["end_ts"].to_numpy() > t0
        out.append(c[hit].drop(columns="placed").reset_index(drop=True) if hit.any() else None)
    return out


def owned_mask(
    model: Model,
    t0: int | None,
    t1: int | None,
    name: str,
    points: dict[int, np.ndarray] | None = None,
) -> np.ndarray:
    """Which rows of ``model``'s table ``name`` (:data:`OWNED_BY`) the part ``[t0, t1)``
    owns (:func:`owned_rows` gives them): a mask over the table, so that what the
    model computes per row (a metric's mask over the wake-ups) can be read of the owned
    rows. ``points``: :func:`_cpu_points` of the model, when already found."""
    if points is None:
        points = _cpu_points(model)
    return _kept(model, t0, t1, name, placements(model, name, points))


def _kept(model: Model, t0: int | None, t1: int | None, name: str, place: np.ndarray) -> np.ndarray:
    """:func:`owned_mask` from the rows' placements (:func:`placements`)."""
    table = model_table(model, name)
    keep = np.ones(len(place), dtype=bool)
    if t0 is not None:
        keep &= place >= t0
    if t1 is not None:
        keep &= place < t1
    beyond = None if model.whole_facts is None else model.whole_facts.waits_beyond
    if name == "occupancy" and beyond is not None and len(beyond):
        keep[len(table) - len(beyond) :] = False  # (another part's rows, after its own)
    if name == "wakeups" and t0 is not None:  # (a prelude's wake-up without its run)
        ran = table["run_ts"].notna().to_numpy()
        keep &= ~(ran & _before_last_switch_out(table, model, t0))
    return keep
