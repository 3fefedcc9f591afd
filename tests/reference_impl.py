"""Plain, slow, event-by-event reference implementations of the detectors' core counts.

Written independently of schedwake.model / schedwake.detect: the events of a trace are
merged into one list in time order and walked once with simple per-CPU and per-task
state. Only the loaded tables and the topology are shared with the library.

Order of events with equal timestamps: sched_waking, then sched_migrate_task, then the
rest (try_to_wake_up emits them in that order).

The rows are read column by column into plain Python lists (:func:`columns`), put in
time order by one stable NumPy sort of their timestamps, and walked as plain tuples
unpacked into local names (:func:`merged`): ``Table.to_pylist()`` makes a dict per row
through Arrow scalars, and even a named tuple per row took most of a test's time on a
whole sample.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import re
from itertools import repeat
from operator import itemgetter

import numpy as np
import pyarrow as pa

EVENTS = (
    "sched_waking",
    "sched_migrate_task",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_switch",
    "workqueue_execute_start",
    "workqueue_execute_end",
)
_RANK = {"sched_waking": 0, "sched_migrate_task": 1}

PERCPU = re.compile(
    r"^(kworker/\d+:\d+H?([-+].*)?|kworker/\d+:|"
    r"(ksoftirqd|migration|cpuhp|rcuc|idle_inject|watchdog|rcuop|"
    r"posixcputmr|irq_work|ktimers)/\d+)$"
)
IRQ_FLAGS = 0x08 | 0x10 | 0x40
STOPPER = re.compile(r"migration/\d+")


def column(col) -> list:
    """One Arrow column as a list of Python values (dictionaries decoded, nulls None)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_dictionary(col.type) and col.indices.null_count == 0:
        values = np.array(col.dictionary.to_pylist() + [None], dtype=object)
        return values[col.indices.to_numpy(zero_copy_only=False)].tolist()
    if col.null_count == 0 and pa.types.is_integer(col.type):
        return col.to_numpy().tolist()
    return col.to_pylist()


def columns(table, *names) -> list[list]:
    """The columns ``names`` of ``table``, each as a list of Python values."""
    return [column(table.column(n)) for n in names]


#: The fields of an event that the walks read, in the order :func:`merged` gives them.
FIELDS = (
    "ts",
    "cpu",
    "common_pid",
    "common_comm",
    "common_flags",
    "pid",
    "target_cpu",
    "orig_cpu",
    "dest_cpu",
    "prev_pid",
    "prev_comm",
    "prev_state_str",
    "next_pid",
    "next_comm",
)


class Merged:
    """Events in time order, kept as columns (the event's name, then :data:`FIELDS`);
    iterating gives each event as a plain tuple ``(name, *FIELDS)``, made as it is read
    (zip reuses a tuple the loop has let go of: no million tuples held at once)."""

    def __init__(self, columns):
        self.columns = columns

    def __iter__(self):
        return zip(*self.columns)


def merged(trace) -> Merged:
    """All events in time order (ties: sched_waking, then sched_migrate_task, then the
    rest; then the order of :data:`EVENTS`, then the table's), each as a plain tuple
    ``(name, *FIELDS)``; a field the event's table lacks is None."""
    names: list = []
    ranks, stamps = [], []
    cols: list[list] = [[] for _ in FIELDS]
    for name in EVENTS:
        if not trace.has(name):
            continue
        table = trace.table(name)
        n = table.num_rows
        names.extend(repeat(name, n))
        ranks.append(np.full(n, _RANK.get(name, 2), dtype=np.int8))
        stamps.append(np.asarray(table.column("ts").to_numpy(), dtype=np.int64))
        for f, col in zip(FIELDS, cols):
            col.extend(column(table.column(f)) if f in table.column_names else repeat(None, n))
    if not names:
        return Merged([()] * (1 + len(FIELDS)))
    # lexsort is stable: equal (ts, rank) keep the order of the concatenation above
    order = np.lexsort((np.concatenate(ranks), np.concatenate(stamps))).tolist()
    take = itemgetter(*order) if len(order) > 1 else (lambda seq: (seq[order[0]],))
    return Merged([take(names), *map(take, cols)])


@contextlib.contextmanager
def no_cyclic_gc():
    """The cyclic garbage collector held off: the walks make a million small tuples,
    lists and dicts (none in a cycle, freed by their reference counts), and the collector
    would otherwise scan them, and everything else the test process holds, over and over
    (a fifth of a walk's time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def is_user(comm: str) -> bool:
    from schedwake.model.tasks import USER, name_class  # the class table is shared data

    return name_class(comm) == USER


# -- completeness: what the trace proves of who ran on each CPU --------------------------------
#
# docs/semantics.md, "Incomplete traces", and the docstring of schedwake/model/completeness.py:
# per CPU, in time order, the points of proof (each sched_switch: its prev_pid up to it,
# its next_pid from it; each other event of PROOF_EVENTS: its common_pid at its time) and
# the lost-event markers; between two points of one task that task ran (idle for pid 0),
# between points of two tasks that no recorded switch joins a switch is missing
# (unknown), a lost marker makes the stretch around it unknown; the timeline from each
# CPU's first switch to the end of the trace, the runs of every task, the contradictions.

#: The events besides sched_switch that prove the task current on their CPU (their
#: ``common_pid``): the model's (schedwake.model.completeness.PROOF_EVENTS, which
#: tests/test_reference_completeness.py compares with this list). Sorted: events of one
#: CPU stamped with one time are taken in this order (then as in their table), the
#: lost-event markers of that time after them.
PROOF_EVENTS = (
    "sched_migrate_task",
    "sched_process_exec",
    "sched_process_fork",
    "sched_stat_runtime",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_waking",
    "workqueue_execute_end",
    "workqueue_execute_start",
)
#: Two proofs of one task on two CPUs closer than this are one moment (the ``local``
#: clock's spread between CPUs).
TWO_CPUS_TOLERANCE_NS = 20_000
#: The kinds of contradictions.
BREAK_KINDS = ("switch_chain", "context", "two_cpus", "unwoken_switch_in", "rewoken", "lost_events")
#: The pid of a lost-event marker among a segment's points.
LOST = -2
#: A segment's points at one time: its switch-in, then the events, then its switch-out.
_IN, _EV, _OUT = 0, 1, 2


def sleeps(state) -> bool:
    """Whether a switch-out in ``prev_state`` (``S``, ``D``, ``R+``, ``D|K``, ``I``, ...)
    put the task to sleep: it needs a wake-up to run again. Not runnable (``R...``), not
    dead (``X``, ``Z``, ``x``), a state letter of a sleep (``S D I T t P W K N``)."""
    if state is None:
        return False
    s = str(state).strip()
    letters = set(s.replace("|", "").replace("+", ""))
    return not s.startswith("R") and not letters & set("XZx") and bool(letters & set("SDITtPWKN"))


class _Switch:
    """One sched_switch of a CPU."""

    __slots__ = ("ts", "prev", "next", "prev_comm", "next_comm", "state", "row")

    def __init__(self, ts, prev, nxt, prev_comm, next_comm, state, row):
        self.ts, self.prev, self.next = ts, prev, nxt
        self.prev_comm, self.next_comm, self.state, self.row = prev_comm, next_comm, state, row


def _switches_by_cpu(trace) -> dict:
    """Per CPU, its switches in time order (one time: as in the table)."""
    out: dict = {}
    if not (trace.has("sched_switch") and trace.table("sched_switch").num_rows):
        return out
    table = trace.table("sched_switch")
    names = ["ts", "cpu", "prev_pid", "next_pid", "prev_comm", "next_comm"]
    cols = columns(table, *names)
    states = (
        column(table.column("prev_state_str"))
        if "prev_state_str" in table.column_names
        else [None] * table.num_rows
    )
    ts, cpu, prev, nxt, prev_comm, next_comm = cols
    for i in np.argsort(np.asarray(ts, dtype=np.int64), kind="stable").tolist():
        out.setdefault(cpu[i], []).append(
            _Switch(ts[i], prev[i], nxt[i], prev_comm[i], next_comm[i], states[i], i)
        )
    return out


def _proofs_by_cpu(trace) -> dict:
    """Per CPU, the proofs that are not switches, in time order: ``(ts, pid, comm)``; a
    lost-event marker is ``(ts, LOST, count)``."""
    keys: list = []  # per table: (cpu, ts, after events, table rank, row, pid) arrays
    what: list = []  # the comms (the counts of lost markers), in the same order
    for rank, name in enumerate(PROOF_EVENTS):
        if not trace.has(name):
            continue
        table = trace.table(name)
        if table.num_rows == 0 or "common_pid" not in table.column_names:
            continue
        known = ~np.asarray(table.column("common_pid").is_null())
        rows = np.flatnonzero(known)
        cpu, ts, pid = (
            np.asarray(table.column(c).to_numpy(zero_copy_only=False))[known]
            for c in ("cpu", "ts", "common_pid")
        )
        n = len(rows)
        keys.append((cpu, ts, np.zeros(n), np.full(n, rank), rows, pid))
        if "common_comm" in table.column_names:
            comms = column(table.column("common_comm"))
            what.extend(comms[i] for i in rows.tolist())
        else:
            what.extend([None] * n)
    lost = getattr(trace, "lost", None)
    if lost is not None and lost.num_rows:
        cpu, ts, count = (np.asarray(c) for c in columns(lost, "cpu", "ts", "count"))
        n = len(ts)
        keys.append((cpu, ts, np.ones(n), np.zeros(n), np.arange(n), np.full(n, LOST)))
        what.extend(count.tolist())
    out: dict = {}
    if not keys:
        return out
    cpu, ts, after, rank, row, pid = (np.concatenate(k).astype(np.int64) for k in zip(*keys))
    order = np.lexsort((row, rank, after, ts, cpu))  # by CPU, time, events first, table, row
    rows_in_order = zip(cpu[order].tolist(), ts[order].tolist(), pid[order].tolist(), order)
    for c, t, p, i in rows_in_order:
        out.setdefault(c, []).append((t, p, what[i]))
    return out


def _placements(trace, switches) -> dict:
    """Per pid, where the task was put and when, sorted: ``(ts, -kind, order, cpu)``.
    Kinds: a switch-out (0) and a switch-in (1) on the switch's CPU, a sched_wakeup (2)
    or sched_wakeup_new (3) on its ``target_cpu``, a migration (4) to its ``dest_cpu``.
    At one time the first kind wins, and the last of one kind (switches by CPU)."""
    out: dict = {}
    for cpu, sws in switches.items():
        for s in sws:
            out.setdefault(s.prev, []).append((s.ts, 0, (cpu, s.row), cpu))
            out.setdefault(s.next, []).append((s.ts, -1, (cpu, s.row), cpu))
    for kind, name, field in (
        (2, "sched_wakeup", "target_cpu"),
        (3, "sched_wakeup_new", "target_cpu"),
        (4, "sched_migrate_task", "dest_cpu"),
    ):
        if not (trace.has(name) and trace.table(name).num_rows):
            continue
        table = trace.table(name)
        if not {"pid", field} <= set(table.column_names):
            continue
        if table.column("pid").null_count or table.column(field).null_count:
            continue
        for i, (ts, pid, cpu) in enumerate(zip(*columns(table, "ts", "pid", field))):
            out.setdefault(pid, []).append((ts, -kind, (0, i), cpu))
    for v in out.values():
        v.sort()
    return out


def placed_cpu(placements, pid, ts) -> int:
    """The CPU task ``pid`` was last put on at or before ``ts`` (-1: none)."""
    v = placements.get(pid)
    if not v:
        return -1
    k = bisect.bisect_right(v, (ts, 1)) - 1
    return v[k][3] if k >= 0 else -1


def _runtime_windows(trace, switches) -> dict:
    """``sched_stat_runtime``: per (pid, cpu), the stretches ``[ts - runtime, ts]`` the
    task was proven current there, as ``(end, start, row)`` sorted. update_curr() charges the
    current task with the run time of its task clock since its last charge, and charges
    it when it leaves the CPU; an event that charges another task than the one it fired
    in (an enqueue on a remote run queue) is about the CPU the task was last put on."""
    out: dict = {}
    name = "sched_stat_runtime"
    if not (trace.has(name) and trace.table(name).num_rows):
        return out
    table = trace.table(name)
    need = ("ts", "cpu", "common_pid", "pid", "runtime")
    if not set(need) <= set(table.column_names):
        return out
    if not all(pa.types.is_integer(table.column(c).type) for c in need):
        return out  # (text read as text)
    placements = None
    for i, (ts, cpu, cur, pid, rt) in enumerate(zip(*columns(table, *need))):
        if None in (ts, cpu, cur, pid, rt) or pid <= 0 or rt < 0:
            continue
        if cur != pid:
            if placements is None:
                placements = _placements(trace, switches)
            cpu = placed_cpu(placements, pid, ts)
        if 0 <= cpu < 1 << 20:
            out.setdefault((pid, cpu), []).append((ts, ts - min(rt, ts), i))
    for v in out.values():
        v.sort()
    return out


def _tie_segment(sws, k, ts, pid) -> int:
    """The segment of an event of ``pid`` stamped ``ts``, the time of switch ``k`` (and
    maybe of switches before it): it may have fired before, between or after them. The
    first of those segments, latest first, whose task is ``pid``: the one its switch put
    on, or the one the switch that ends it takes off (an event of it fired before that
    switch; before the CPU's first switch, segment -1); else ``k``'s."""
    i = k
    while True:
        if sws[i].prev == pid:
            return i - 1 if i > 0 else -1
        if i == 0:
            return k
        i -= 1
        if sws[i].next == pid:
            return i
        if sws[i].ts != ts:
            return k


def _cpu_walk(cpu, sws, proofs, first_ts, t_end, windows, res) -> None:
    """One CPU: its proofs into the segments between its switches (segment -1: before
    its first switch), each segment's points into runs, the runs into the timeline."""
    n = len(sws)
    points: list[list] = [[] for _ in range(n + 1)]  # per segment k at k + 1
    ctx: list = [None] * n  # per segment: its first event of another task
    sts, snext = [s.ts for s in sws], [s.next for s in sws]
    j = 0
    for ts, pid, what in proofs:
        while j < n and sts[j] <= ts:
            j += 1
        k = j - 1
        if k >= 0 and pid != snext[k] and pid != LOST:
            if sts[k] == ts:
                k = _tie_segment(sws, k, ts, pid)
            if k >= 0 and pid != snext[k] and ctx[k] is None:
                ctx[k] = (ts, pid)
        points[k + 1].append((ts, _EV, pid, what))
    # the contradictions of the switches themselves: a chain break, or (where the chain
    # holds) an event of another task in the segment
    for k in range(n):
        if k + 1 < n and sws[k + 1].prev != sws[k].next:
            res["breaks"].append(
                (cpu, sws[k + 1].ts, "switch_chain", sws[k].next, sws[k + 1].prev, 1)
            )
        elif ctx[k] is not None:
            res["breaks"].append((cpu, ctx[k][0], "context", sws[k].next, ctx[k][1], 1))
    known = []  # (start, end, pid, comm) of the timeline, in order
    for k in range(-1, n):
        pts = points[k + 1]
        if k >= 0:
            pts.insert(0, (sws[k].ts, _IN, sws[k].next, sws[k].next_comm))
        if k + 1 < n:
            pts.append((sws[k + 1].ts, _OUT, sws[k + 1].prev, sws[k + 1].prev_comm))
        # the runs: points of one task in a row (lost markers in a row: one of their own)
        group: list[list] = []  # [pid, start, end, first kind, last kind, first, last name]
        for ts, kind, pid, name in pts:
            if group and group[-1][0] == pid:
                g = group[-1]
                g[2], g[4], g[6] = ts, kind, name
            else:
                group.append([pid, ts, ts, kind, kind, name, name])
        prev_end = None  # the end of the segment's previous run (not a lost marker)
        last_segment = k == n - 1 and k >= 0
        for i, (pid, start, end, first_kind, last_kind, first_name, last_name) in enumerate(group):
            if pid == LOST:
                continue
            end_kind = "switch" if last_kind == _OUT else "event"
            if last_segment and i == len(group) - 1:
                end, end_kind = t_end, "trace"  # it still ran when the trace ended
            exact = first_kind == _IN
            # where it may have begun: the end of the previous proof of the segment (the
            # stretch between is unknown); for the first, the trace's first event
            earliest = start if exact else min(start, first_ts if prev_end is None else prev_end)
            prev_end = end
            if not exact and pid > 0:
                start = _runtime_start(windows.get((pid, cpu)), earliest, start, end)
            # its name: its switch-in's, else its switch-out's, else its first proof's
            comm = last_name if last_kind == _OUT and not exact else first_name
            if pid > 0:
                res["runs"].append((pid, comm, cpu, start, end, exact, earliest, end_kind))
                if last_kind == _OUT:  # the run this switch-out ended
                    res["out_run"][sws[k + 1].row] = earliest
            if k >= 0 and end > start:
                known.append((start, end, pid, comm))
    if n:
        _fill_timeline(cpu, sws[0].ts, t_end, known, proofs, res["timeline"])


def _runtime_start(windows, earliest, start, end) -> int:
    """A run whose switch-in is missing, first proven at ``start``, that may have begun
    at ``earliest``: sched_stat_runtime may prove it began earlier. The earliest start
    (not before ``earliest``) of the task's windows on that CPU that end in
    ``[earliest, end]``."""
    if not windows:
        return start
    k = bisect.bisect_left(windows, (earliest,))
    best = start
    while k < len(windows) and windows[k][0] <= end:
        best = min(best, max(windows[k][1], earliest))
        k += 1
    return best


def _fill_timeline(cpu, first, t_end, known, proofs, out) -> None:
    """The CPU's timeline from its first switch to the end of the trace: the known
    intervals, unknown between them (``lost_events`` when a lost marker of the CPU lies
    in the stretch, its ends included; else ``missing_switch``)."""
    lost = [ts for ts, pid, _ in proofs if pid == LOST]

    def unknown(a, b):
        k = bisect.bisect_left(lost, a)
        why = "lost_events" if k < len(lost) and lost[k] <= b else "missing_switch"
        out.append((cpu, a, b, -1, None, "unknown", why))

    at = first
    for start, end, pid, comm in known:
        if start > at:
            unknown(at, start)
        out.append((cpu, start, end, pid, comm, "idle" if pid == 0 else "running", None))
        at = end
    if at < t_end:
        unknown(at, t_end)


@no_cyclic_gc()
def completeness(trace) -> dict:
    """The completeness model of ``trace``, walked CPU by CPU (see above). A dict of plain
    values (it pickles):

    timeline     [(cpu, start, end, pid, comm, state, why)]: per CPU from its first
                 switch to the end of the trace; state running, idle or unknown (pid
                 -1, why missing_switch or lost_events; None for the others)
    runs         [(pid, comm, cpu, start, end, exact, earliest, end)] of every task (not
                 pid 0): start at the switch-in (exact) or the first proof (moved back by
                 sched_stat_runtime), earliest the end of the previous proof on that CPU
                 (the trace's first event for the first), end a switch-out (switch), the
                 last proof (event) or the trace's end (trace)
    breaks       [(cpu, ts, kind, pid, other_pid, count)]
    counts       {(cpu, kind): contradictions (events lost for lost_events)}
    first_switch {cpu: ts of its first switch}
    t_start, t_end
    """
    switches = _switches_by_cpu(trace)
    proofs = _proofs_by_cpu(trace)
    meta = trace.meta
    t_end = max([meta.last_ts_ns or 0] + [s[-1].ts for s in switches.values()])
    first_ts = min(
        [meta.first_ts_ns or t_end]
        + [ts for ps in proofs.values() for ts, pid, _ in ps if pid != LOST]
        + [s[0].ts for s in switches.values()]
    )
    windows = _runtime_windows(trace, switches)
    res: dict = {"timeline": [], "runs": [], "breaks": [], "out_run": {}}
    for cpu in sorted(set(switches) | set(proofs)):
        _cpu_walk(cpu, switches.get(cpu, []), proofs.get(cpu, []), first_ts, t_end, windows, res)
    for cpu, ps in proofs.items():
        for ts, pid, count in ps:
            if pid == LOST:
                res["breaks"].append((cpu, ts, "lost_events", -1, -1, max(count, 1)))
    runs = RunIndex(res["runs"])
    res["breaks"] += _two_cpus(runs)
    res["breaks"] += _unwoken_switch_ins(trace, switches, res["out_run"])
    res["breaks"] += _rewoken(trace, runs)
    counts: dict = {}
    for cpu, _, kind, _, _, count in res["breaks"]:
        counts[(cpu, kind)] = counts.get((cpu, kind), 0) + count
    del res["out_run"]
    res.update(
        counts=counts,
        first_switch={cpu: s[0].ts for cpu, s in switches.items()},
        t_start=first_ts,
        t_end=t_end,
    )
    return res


class RunIndex:
    """The runs of each task by start: who was running when, and what ran next."""

    def __init__(self, runs):
        by: dict = {}
        for r in runs:
            by.setdefault(r[0], []).append(r)
        self.runs: dict = {}
        for pid, rs in by.items():
            rs.sort(key=lambda r: (r[3], r[2], r[4]))  # start, CPU, end
            reach, m = [], None
            for r in rs:
                m = r[4] if m is None else max(m, r[4])
                reach.append(m)
            self.runs[pid] = ([r[3] for r in rs], rs, reach)

    def of(self, pid) -> list:
        return self.runs.get(pid, ((), [], ()))[1]

    def was_running(self, pid, ts, began_at=False) -> bool:
        """A run of the task began before ``ts`` (or at it: ``began_at``) and is proven on
        until ``ts`` at least."""
        v = self.runs.get(pid)
        if v is None:
            return False
        k = (bisect.bisect_right if began_at else bisect.bisect_left)(v[0], ts) - 1
        return k >= 0 and v[2][k] >= ts

    def next_run(self, pid, ts):
        """The task's first run that begins at or after ``ts`` (None: none)."""
        v = self.runs.get(pid)
        if v is None:
            return None
        k = bisect.bisect_left(v[0], ts)
        return v[1][k] if k < len(v[1]) else None


def _two_cpus(runs: RunIndex) -> list:
    """Runs of a task that begin more than the tolerance before an earlier-begun run of
    it ends: on two CPUs at once."""
    out = []
    for pid, (_, rs, reach) in runs.runs.items():
        for k in range(1, len(rs)):
            if rs[k][3] < reach[k - 1] - TWO_CPUS_TOLERANCE_NS:
                out.append((rs[k][2], rs[k][3], "two_cpus", pid, pid, 1))
    return out


def _wake_times(trace, names) -> dict:
    """Per pid, the times of its wake-up events (tables ``names``), sorted."""
    out: dict = {}
    for name in names:
        if trace.has(name) and trace.table(name).num_rows:
            for ts, pid in zip(*columns(trace.table(name), "ts", "pid")):
                out.setdefault(pid, []).append(ts)
    for v in out.values():
        v.sort()
    return out


def _unwoken_switch_ins(trace, switches, out_run) -> list:
    """Switch-ins of a task whose last switch-out before them (at an earlier time) put
    it to sleep, with no wake-up (waking, wakeup or wakeup_new) of it at or after the
    earliest the run that switch-out ended can have begun, by the switch-in."""
    if not switches or "prev_state_str" not in trace.table("sched_switch").column_names:
        return []
    every = sorted(
        ((s.ts, s.row, cpu, s) for cpu, sws in switches.items() for s in sws),
        key=lambda x: (x[0], x[1]),
    )
    wakes = _wake_times(trace, ("sched_waking", "sched_wakeup", "sched_wakeup_new"))
    outs: dict = {}  # pid -> (ts, asleep, earliest of the run it ended) of its last
    asleep: dict = {}  # prev_state -> sleeps(prev_state)
    out = []
    pending: list = []  # the switch-outs of one time: known after it
    at = None
    for ts, _, cpu, s in every:
        if ts != at:
            for p, item in pending:
                outs[p] = item
            pending, at = [], ts
        if s.next > 0:
            last = outs.get(s.next)
            if last is not None and last[1]:
                w = wakes.get(s.next, [])
                k = bisect.bisect_right(w, ts) - 1
                if k < 0 or w[k] < last[2]:
                    out.append((cpu, ts, "unwoken_switch_in", s.next, s.next, 1))
        if s.prev != 0:
            if s.state not in asleep:
                asleep[s.state] = sleeps(s.state)
            pending.append((s.prev, (ts, asleep[s.state], out_run.get(s.row))))
    return out


def _rewoken(trace, runs: RunIndex) -> list:
    """Wake-ups (sched_waking; sched_wakeup without it) of a task with a wake-up of it
    at an earlier time and no run of it since that one: beginning by this wake-up, or on
    when that one came."""
    name = (
        "sched_waking"
        if trace.has("sched_waking") and trace.table("sched_waking").num_rows
        else "sched_wakeup"
    )
    if not trace.has(name) or trace.table(name).num_rows < 2:
        return []
    ts_, pid_, cpu_ = columns(trace.table(name), "ts", "pid", "cpu")
    by: dict = {}
    for ts, pid, cpu in zip(ts_, pid_, cpu_):
        by.setdefault(pid, []).append((ts, cpu))
    out = []
    for pid, ws in by.items():
        ws.sort(key=lambda x: x[0])
        earlier = None  # the last wake-up time before the current one
        for k, (ts, cpu) in enumerate(ws):
            if k and ws[k - 1][0] < ts:
                earlier = ws[k - 1][0]
            if earlier is None:
                continue
            nxt = runs.next_run(pid, earlier)
            if not (nxt is not None and nxt[3] <= ts or runs.was_running(pid, earlier, True)):
                out.append((cpu, ts, "rewoken", pid, pid, 1))
    return out


@no_cyclic_gc()
def walk(trace, storm_share=0.75, events=None, comp=None):
    """One pass over ``events`` (``merged(trace)`` when None), with the runs of the tasks
    of ``comp`` (:func:`completeness` of the trace when None); returns a dict of the
    core counts:

    pingpong        number of kworker ping-pong episodes
    wakeups         number of sched_waking events
    wakeup_migrations
    changes         {pid: wake-ups that changed CPU inside one LLC}
    storm           {(cpu, pid): [switches, all kworker preemptions, preemptions of
                    the (kworker, work function) pairs preempted at storm_share of
                    their switch-outs or more, futile wake-ups]} for every task that
                    preempted a kworker; a switch-out belongs to the function of the
                    kworker's last workqueue_execute_start at or before it

    A wake-up's run is the wakee's first run at or after its waking, when it begins
    before the wakee's next waking and the wakee was not running when woken
    (:class:`RunIndex`): a futile wake-up is one whose run begins at the preemption of a
    kworker (its switch-in there).
    """
    runs = RunIndex((comp if comp is not None else completeness(trace))["runs"])
    topo = trace.topology
    llc_of = {c: i for i, g in enumerate(topo.llc) for c in g}
    last_on_cpu = {}  # cpu -> (name, pid, common_pid) of the last event there
    current = {}  # cpu -> (pid, comm) from the last sched_switch
    pending = {}  # pid -> [chosen cpu, start of its run or None] of a wake-up not yet run
    res = {"pingpong": 0, "wakeups": 0, "wakeup_migrations": 0, "changes": {}, "storm": {}}
    switches = {}  # (cpu, pid) -> task <-> kworker switches
    preempt = {}  # (cpu, task, kworker, function) -> kworker preemptions (R+) by the task
    outs = {}  # (cpu, kworker, function) -> the kworker's switch-outs
    starts: dict = {}  # pid -> ([ts], [function]) of its workqueue_execute_start
    if trace.has("workqueue_execute_start"):
        table = trace.table("workqueue_execute_start")
        for pid, ts, fn in zip(*columns(table, "common_pid", "ts", "function")):
            st = starts.setdefault(pid, ([], []))
            st[0].append(ts)
            st[1].append(fn)
        for pid, (tss, fns) in starts.items():  # (in time order, ties as in the table)
            order = sorted(range(len(tss)), key=tss.__getitem__)
            starts[pid] = ([tss[k] for k in order], [fns[k] for k in order])

    def function_of(pid, ts):
        st = starts.get(pid)
        k = bisect.bisect_right(st[0], ts) - 1 if st else -1
        return st[1][k] if k >= 0 else None

    cycles = {}  # cpu -> open preemptions: [kworker, task, chosen or None, phase, slept]
    futile = {}  # (chosen cpu, pid) -> futile wake-ups
    waking_info = {}  # (cpu) -> info of the last waking on that cpu
    # pid -> [(cpu, cpu the task is put on)] of its sched_wakeup and switch-in events
    # since its last waking: a wake-up settled before the migration cannot own it
    settled: dict = {}
    # whether a task name is a per-CPU kthread's, a stopper thread's (few distinct names)
    percpu_name: dict = {}
    stopper_name: dict = {}
    for (
        name,
        ts,
        cpu,
        common_pid,
        common_comm,
        common_flags,
        pid,
        target_cpu,
        orig_cpu,
        dest_cpu,
        prev,
        prev_comm,
        prev_state_str,
        nxt,
        next_comm,
    ) in merged(trace) if events is None else events:
        if name == "sched_waking":
            res["wakeups"] += 1
            cur_pid, cur_comm = current.get(cpu, (None, None))
            comm = (cur_comm if cur_pid == common_pid else common_comm) or ""
            flags = common_flags or 0
            if comm not in percpu_name:
                percpu_name[comm] = bool(PERCPU.match(comm))
                stopper_name[comm] = bool(STOPPER.fullmatch(comm))
            info = {
                "pid": pid,
                "waker": common_pid,
                "prev": target_cpu,
                "percpu_task": percpu_name[comm] and not (flags & IRQ_FLAGS) and common_pid != 0,
                "cpu": cpu,
                # the stopper threads move tasks for affinity changes, not to place them
                "stopper": stopper_name[comm],
            }
            waking_info[cpu] = info
            settled[pid] = []
            if runs.was_running(pid, ts):
                pending.pop(pid, None)
            else:
                run = runs.next_run(pid, ts)
                pending[pid] = [target_cpu, None if run is None else run[3]]
        elif name == "sched_migrate_task":
            last = last_on_cpu.get(cpu)
            # a wake-up's own migration: right after its waking on that CPU, by the same
            # task, and before the wakee was woken up (sched_wakeup) or ran; but the first
            # such event on another CPU that puts the task on the migration's destination
            # may be the wake-up's own, stamped early by that CPU's clock
            after = settled.get(pid, [])
            if after and after[0][0] != cpu and after[0][1] == dest_cpu:
                after = after[1:]
            if (
                last is not None
                and last[0] == "sched_waking"
                and last[1] == pid
                and last[2] == common_pid
                and not after
            ):
                res["wakeup_migrations"] += 1
                info = waking_info[cpu]
                if info["percpu_task"] and info["prev"] == cpu:
                    res["pingpong"] += 1
                src, dst = orig_cpu, dest_cpu
                same_llc = llc_of.get(src, -1 - src) == llc_of.get(dst, -1 - dst)
                if src != dst and same_llc and not info["stopper"]:
                    res["changes"][pid] = res["changes"].get(pid, 0) + 1
                if pid in pending:
                    pending[pid][0] = dst
        elif name == "sched_switch":
            settled.setdefault(nxt, []).append((cpu, cpu))
            pk = prev_comm.startswith("kworker/")
            nk = next_comm.startswith("kworker/")
            fn = function_of(prev, ts) if pk else None
            if pk:
                outs[(cpu, prev, fn)] = outs.get((cpu, prev, fn), 0) + 1
            if pk and not nk and nxt != 0:
                switches[(cpu, nxt)] = switches.get((cpu, nxt), 0) + 1
            elif nk and not pk and prev != 0:
                switches[(cpu, prev)] = switches.get((cpu, prev), 0) + 1
            # open preemptions of this CPU: the task leaves (asleep or not), then the
            # kworker comes back first (futile) or the task does
            still = []
            for c in cycles.get(cpu, []):
                if c[3] == "running":
                    if prev != c[1]:  # not the task's switch-out: events were lost
                        continue
                    c[3], c[4] = "out", not prev_state_str.startswith("R")
                if c[3] == "out" and nxt == c[0]:
                    if c[4] and c[2] is not None:
                        futile[(c[2], c[1])] = futile.get((c[2], c[1]), 0) + 1
                    continue
                if c[3] == "out" and nxt == c[1]:
                    continue
                still.append(c)
            cycles[cpu] = still
            # a pending wake-up of the task whose run starts here (else it began before)
            woken = pending.pop(nxt, None) if nxt != 0 else None
            if pk and not nk and nxt != 0 and prev_state_str == "R+":
                key = (cpu, nxt, prev, fn)
                preempt[key] = preempt.get(key, 0) + 1
                chosen = woken[0] if woken is not None and woken[1] == ts else None
                cycles[cpu].append([prev, nxt, chosen, "running", None])
            current[cpu] = (nxt, next_comm)
        elif name == "sched_wakeup":
            settled.setdefault(pid, []).append((cpu, target_cpu))
        last_on_cpu[cpu] = (name, pid, common_pid)
    for (cpu, task, kw, fn), n in preempt.items():
        row = res["storm"].setdefault((cpu, task), [switches.get((cpu, task), 0), 0, 0, 0])
        row[1] += n
        if n >= storm_share * outs[(cpu, kw, fn)]:
            row[2] += n
    for key, row in res["storm"].items():
        row[3] = futile.get(key, 0)
    return res


# -- idle while runnable ----------------------------------------------------------------------


def _pinned(trace, min_runs):
    """Pids treated as unable to move: per-CPU kthreads (by the names their switch-ins
    give them) and tasks switched in on one CPU only, at least ``min_runs`` times."""
    runs, cpus, kthreads = {}, {}, set()
    if trace.has("sched_switch"):
        table = trace.table("sched_switch")
        percpu: dict = {}  # task name -> a per-CPU kthread's? (few distinct names)
        for pid, cpu, comm in zip(*columns(table, "next_pid", "cpu", "next_comm")):
            runs[pid] = runs.get(pid, 0) + 1
            cpus.setdefault(pid, set()).add(cpu)
            if comm not in percpu:
                percpu[comm] = bool(PERCPU.match(comm or ""))
            if percpu[comm]:
                kthreads.add(pid)
    return {p for p in runs if len(cpus[p]) == 1 and runs[p] >= min_runs} | kthreads


def wakeup_waits(trace, events=None, comp=None):
    """Walk the events once (``events``, ``merged(trace)`` when None), with the runs of
    the tasks (``comp``, :func:`completeness` of the trace when None); the waits of woken
    tasks as (pid, cpu, start, end).

    A wake-up is a ``sched_waking`` (each ``sched_wakeup`` without ``sched_waking`` in the
    trace). It has a wait when the wakee was not running when woken (no run of it began
    before the waking and is proven on until it) and its next run (the first that begins
    at or after the waking) begins before the wakee's next wake-up. Its CPU is the
    ``target_cpu`` unless the wake-up migrates the task (the migration is the next event
    on the waker's CPU, same pid, same current task, before the wake-up settled: a
    ``sched_wakeup`` or switch-in of the task, but for the first on another CPU that puts
    it where the migration takes it, which may be the wake-up's own stamped early by that
    CPU's clock), then the ``dest_cpu``. The wait starts at the wake-up's ``sched_wakeup``:
    the task's first after the waking, when it comes by the start of the run (a later one
    is a later wake-up's, whose waking the trace lacks); else at the waking (not after
    the run's start). It ends where the run can first have begun (its switch-in; else the
    end of the previous proof on that CPU, not before the wait began), or at a later
    migration of the task when one comes first. Without ``sched_waking`` in the trace,
    each ``sched_wakeup`` is the wake-up, its ``target_cpu`` the CPU, its time the
    start. Without ``sched_migrate_task``, the ``target_cpu`` of the wake-up's
    ``sched_wakeup`` is its CPU (sched_waking's is the previous one).
    """

    def absent(name):
        return not trace.has(name) or trace.table(name).num_rows == 0

    runs = RunIndex((comp if comp is not None else completeness(trace))["runs"])
    fallback = absent("sched_waking")  # then sched_wakeup is the wake-up
    no_migrate = absent("sched_migrate_task")
    last_on_cpu = {}  # cpu -> (name, pid, common_pid, ts) of the last event there
    pending = {}  # pid -> its last wake-up, while the task was not running when woken
    out = []

    def close(pid, w, next_waking):
        run = w["run"]
        if run is None or run[3] >= next_waking:
            return  # it did not run before its next wake-up: no wait
        start = min(w["waking"] if w["queued"] is None else w["queued"], run[3])
        end = max(run[6], start)  # where the run can first have begun
        moved = start if w["own"] is None else max(start, w["own"])
        out.append((pid, w["cpu"], start, min([end] + [m for m in w["moves"] if m > moved])))

    if events is None:
        events = merged(trace)
    for name, ts, cpu, common_pid, _, _, pid, target_cpu, _, dest_cpu, _, _, _, nxt, _ in events:
        if name == "sched_waking" or (fallback and name == "sched_wakeup"):
            w = pending.pop(pid, None)
            if w is not None:
                close(pid, w, ts)
            if not runs.was_running(pid, ts):
                pending[pid] = {
                    "cpu": target_cpu,
                    "waking": ts,
                    "run": runs.next_run(pid, ts),
                    "queued": ts if fallback else None,
                    "woken_up": fallback,  # its sched_wakeup came (paired or not)
                    "settled": [],  # (cpu, cpu it puts the task on) of its settling events
                    "own": None,  # the time of its own migration
                    "moves": [],  # the times of the task's other migrations
                }
        elif name == "sched_migrate_task":
            w = pending.get(pid)
            if w is not None:
                last = last_on_cpu.get(cpu)
                after = w["settled"]
                if after and after[0][0] != cpu and after[0][1] == dest_cpu:
                    after = after[1:]
                if (
                    not fallback
                    and w["own"] is None
                    and not after
                    and last is not None
                    and last[0] == "sched_waking"
                    and last[1] == pid
                    and last[2] == common_pid
                    and last[3] == w["waking"]
                ):
                    # the wake-up's own choice of CPU: set_task_cpu() in try_to_wake_up()
                    w["cpu"], w["own"] = dest_cpu, ts
                else:
                    w["moves"].append(ts)  # moved away (ends the wait if it began)
        elif name == "sched_wakeup":
            w = pending.get(pid)
            if w is not None:
                w["settled"].append((cpu, target_cpu))
                if not w["woken_up"]:
                    w["woken_up"] = True
                    if w["run"] is None or ts <= w["run"][3]:
                        w["queued"] = ts
                        if no_migrate:
                            w["cpu"] = target_cpu
        elif name == "sched_switch":
            if nxt in pending:
                pending[nxt]["settled"].append((cpu, cpu))
        last_on_cpu[cpu] = (name, pid, common_pid, ts)
    for pid, w in pending.items():
        close(pid, w, float("inf"))
    return out


@no_cyclic_gc()
def idle_while_runnable_ns(trace, pinned_min_runs=20, detail=False, events=None, comp=None):
    """Nanoseconds during which, in an LLC of two or more CPUs, one CPU is idle while a
    woken task (not pinned) waits on another CPU of that LLC that runs a task. A CPU's
    state is its timeline (``comp``, :func:`completeness` of the trace when None):
    proven idle, proven running a task, or unknown (before its first ``sched_switch``, a
    missing switch, lost events): an unknown CPU is neither idle nor a CPU with waiting
    tasks. Sum over the LLCs. ``detail``: also (a dict) per LLC its gap's segments,
    each the longest stretch of the gap, the waits and the pinned tasks.

    Second walk, in time order, over the CPU state changes (the start of each interval
    of a CPU's timeline) and the starts and ends of the waits (:func:`wakeup_waits`),
    with per-CPU state: idle, running or unknown, number of waiting tasks.
    """
    comp = completeness(trace) if comp is None else comp
    topo = trace.topology
    pinned = _pinned(trace, pinned_min_runs)
    llc_of = {}
    for i, g in enumerate(topo.llc):
        if len(g) >= 2:
            for c in g:
                llc_of[c] = i
    changes = []  # (ts, order, seq, cpu, what, value)
    for seq, (cpu, start, _, _, _, state, _) in enumerate(comp["timeline"]):
        changes.append((start, 1, seq, cpu, "state", state))
    waits = [w for w in wakeup_waits(trace, events, comp) if w[0] not in pinned and w[3] > w[2]]
    for k, (_pid, cpu, start, end) in enumerate(waits):
        changes.append((start, 0, k, cpu, "wait", +1))
        changes.append((end, 0, k, cpu, "wait", -1))
    # in (ts, order, seq) order: no two changes tie on all three (a wait's start and end
    # share its seq, but its end is later), so the tuples sort on those alone
    changes.sort()
    state, nwait = {}, {}  # cpu -> "idle", "running" or "unknown"; waiting tasks
    total = {i: 0 for i in set(llc_of.values())}
    # per LLC, how many of its CPUs are idle, and how many run a task with a task
    # waiting: one CPU changes at a time, so its part in these two counts is taken out
    # before the change and put back after it
    n_idle = {i: 0 for i in total}
    n_wait = {i: 0 for i in total}

    def tally(cpu, sign):
        li = llc_of[cpu]
        st = state.get(cpu, "unknown")
        if st == "idle":
            n_idle[li] += sign
        elif st == "running" and nwait.get(cpu, 0) > 0:
            n_wait[li] += sign

    # per LLC, its gap's segments: each the longest stretch in the gap (one that goes on
    # through another change of the LLC extends the one before)
    segments: dict[int, list[list[int]]] = {li: [] for li in total}
    last = None
    for ts, _, _, cpu, what, value in changes:
        if last is not None and ts > last:
            for li in total:
                if n_idle[li] > 0 and n_wait[li] > 0:
                    total[li] += ts - last
                    if detail and segments[li] and segments[li][-1][1] == last:
                        segments[li][-1][1] = ts
                    elif detail:
                        segments[li].append([last, ts])
        last = ts
        in_llc = cpu in llc_of  # a CPU alone in its LLC is in no LLC's counts
        if in_llc:
            tally(cpu, -1)
        if what == "state":
            state[cpu] = value
        else:
            nwait[cpu] = nwait.get(cpu, 0) + value
        if in_llc:
            tally(cpu, +1)
    if detail:
        return sum(total.values()), {
            "per_llc": total,
            "segments": {li: [tuple(x) for x in segs] for li, segs in segments.items()},
            "waits": waits,
            "pinned": pinned,
        }
    return sum(total.values())


def sample_completeness(path) -> dict:
    """:func:`completeness` of the sample ``path`` read with the model's events, computed
    once per test run and shared by the tests of every xdist worker (tests/conftest.py,
    ``computed_once``). Read it, never change it."""
    from .conftest import computed_once, shared_model_trace

    return computed_once(
        f"tests/reference_impl.py completeness of {path}",
        lambda: completeness(shared_model_trace(path)),
    )


def sample_results(path, pinned_min_runs: int) -> dict:
    """``walk``, ``idle_while_runnable_ns`` and its gap segments per LLC
    (``idle_while_runnable_segments``) of the sample ``path`` read with the model's
    events, from one merged list of its events; computed once per test run and shared
    by the tests of every xdist worker (tests/conftest.py, ``computed_once``): the
    reference check of the detectors (test_detect) and the one of idle while runnable
    (test_reference_idle) walk the same samples. Read it, never change it."""
    from .conftest import computed_once, shared_model_trace

    def compute():
        trace = shared_model_trace(path)
        comp = sample_completeness(path)
        with no_cyclic_gc():
            events = merged(trace)
            ns, detail = idle_while_runnable_ns(
                trace, pinned_min_runs, detail=True, events=events, comp=comp
            )
            return {
                "walk": walk(trace, events=events, comp=comp),
                "idle_while_runnable_ns": ns,
                "idle_while_runnable_segments": detail["segments"],
            }

    key = f"tests/reference_impl.py walk, idle_while_runnable_ns({pinned_min_runs}) of {path}"
    return computed_once(key, compute)
