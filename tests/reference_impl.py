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


@no_cyclic_gc()
def walk(trace, storm_share=0.75, events=None):
    """One pass over ``events`` (``merged(trace)`` when None); returns a dict of the core
    counts:

    pingpong        number of kworker ping-pong episodes
    wakeups         number of sched_waking events
    wakeup_migrations
    changes         {pid: wake-ups that changed CPU inside one LLC}
    storm           {(cpu, pid): [switches, all kworker preemptions, preemptions of
                    the (kworker, work function) pairs preempted at storm_share of
                    their switch-outs or more, futile wake-ups]} for every task that
                    preempted a kworker; a switch-out belongs to the function of the
                    kworker's last workqueue_execute_start at or before it
    """
    topo = trace.topology
    llc_of = {c: i for i, g in enumerate(topo.llc) for c in g}
    last_on_cpu = {}  # cpu -> (name, pid, common_pid) of the last event there
    current = {}  # cpu -> (pid, comm) from the last sched_switch
    running = {}  # pid -> True while switched in
    pending = {}  # pid -> chosen cpu of a wake-up not yet run
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
            if running.get(pid):
                pending.pop(pid, None)
            else:
                pending[pid] = target_cpu
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
                    pending[pid] = dst
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
            woken = nxt in pending
            if pk and not nk and nxt != 0 and prev_state_str == "R+":
                key = (cpu, nxt, prev, fn)
                preempt[key] = preempt.get(key, 0) + 1
                chosen = pending[nxt] if woken else None  # the wake-up's run starts here
                cycles[cpu].append([prev, nxt, chosen, "running", None])
            if prev != 0:
                running[prev] = False
            if nxt != 0:
                running[nxt] = True
                pending.pop(nxt, None)
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


def wakeup_waits(trace, events=None):
    """Walk the events once (``events``, ``merged(trace)`` when None); the waits of woken
    tasks as (pid, cpu, start, end).

    A wake-up is a ``sched_waking`` of a task that is not on a CPU at that moment; its
    CPU is the ``target_cpu`` unless the wake-up migrates the task (the migration is the
    next event on the waker's CPU, same pid, same current task), then the ``dest_cpu``.
    The wake-up's own migration comes before the task is queued: a migration after the
    ``sched_wakeup`` is not the wake-up's. The wait starts at the first ``sched_wakeup``
    of the task after the waking (at the waking when none came before the task ran) and
    ends at the task's switch-in, or at a later migration of the task when one comes
    first. A wake-up counts only once the task is switched in before its next waking (a
    wake-up that never runs has no wait). Without ``sched_waking`` in the trace, each
    ``sched_wakeup`` is the wake-up, its ``target_cpu`` the CPU, its time the start.
    Without ``sched_migrate_task``, the ``target_cpu`` of the wake-up's ``sched_wakeup``
    is its CPU (sched_waking's is the previous one).
    """

    def absent(name):
        return not trace.has(name) or trace.table(name).num_rows == 0

    fallback = absent("sched_waking")  # then sched_wakeup is the wake-up
    no_migrate = absent("sched_migrate_task")
    last_on_cpu = {}  # cpu -> (name, pid, common_pid, ts) of the last event there
    on_cpu = {}  # pid -> True while switched in
    pending = {}  # pid -> {"cpu", "waking", "start", "moves"}: a wake-up not yet run
    out = []
    if events is None:
        events = merged(trace)
    for name, ts, cpu, common_pid, _, _, pid, target_cpu, _, dest_cpu, prev, _, _, nxt, _ in events:
        if name == "sched_waking" or (fallback and name == "sched_wakeup"):
            pending.pop(pid, None)  # a wake-up that never ran: no wait
            if not on_cpu.get(pid):
                pending[pid] = {
                    "cpu": target_cpu,
                    "waking": ts,
                    "moves": [],
                    "start": ts if fallback else None,
                }
        elif name == "sched_migrate_task":
            w = pending.get(pid)
            last = last_on_cpu.get(cpu)
            own = (
                not fallback
                and last is not None
                and last[0] == "sched_waking"
                and last[1] == pid
                and last[2] == common_pid
            )
            if w is not None:
                if own and w["waking"] == last[3] and w["start"] is None:
                    # the wake-up's own choice of CPU: set_task_cpu() in try_to_wake_up()
                    # comes before the task is queued (sched_wakeup)
                    w["cpu"] = dest_cpu
                else:
                    w["moves"].append(ts)  # moved away (ends the wait if it began)
        elif name == "sched_wakeup":
            w = pending.get(pid)
            if w is not None and w["start"] is None:
                w["start"] = ts
                if no_migrate:
                    w["cpu"] = target_cpu
        elif name == "sched_switch":
            if prev != 0:
                on_cpu[prev] = False
            if nxt != 0:
                on_cpu[nxt] = True
                w = pending.pop(nxt, None)
                if w is not None:
                    start = w["start"] if w["start"] is not None else w["waking"]
                    end = min([m for m in w["moves"] if m > start] + [ts])
                    out.append((nxt, w["cpu"], start, end))
        last_on_cpu[cpu] = (name, pid, common_pid, ts)
    return out


@no_cyclic_gc()
def idle_while_runnable_ns(trace, pinned_min_runs=20, detail=False, events=None):
    """Nanoseconds during which, in an LLC of two or more CPUs, one CPU is idle while a
    woken task (not pinned) waits on another CPU of that LLC that is not idle. A CPU's
    state is known only from its first ``sched_switch``: before it, it is neither idle
    nor a CPU with waiting tasks. Sum over the LLCs.

    Second walk, in time order, over the CPU state changes (every ``sched_switch``: idle
    when ``next_pid`` is 0) and the starts and ends of the waits, with per-CPU state:
    known or not, idle or not, number of waiting tasks.
    """
    topo = trace.topology
    pinned = _pinned(trace, pinned_min_runs)
    llc_of = {}
    for i, g in enumerate(topo.llc):
        if len(g) >= 2:
            for c in g:
                llc_of[c] = i
    changes = []  # (ts, order, cpu, what, value)
    if trace.has("sched_switch"):
        table = trace.table("sched_switch")
        for seq, (ts, cpu, nxt) in enumerate(zip(*columns(table, "ts", "cpu", "next_pid"))):
            changes.append((ts, 1, seq, cpu, "idle", nxt == 0))
    waits = [w for w in wakeup_waits(trace, events) if w[0] not in pinned and w[3] > w[2]]
    for k, (_pid, cpu, start, end) in enumerate(waits):
        changes.append((start, 0, k, cpu, "wait", +1))
        changes.append((end, 0, k, cpu, "wait", -1))
    # in (ts, order, seq) order: no two changes tie on all three (a wait's start and end
    # share its seq, but its end is later), so the tuples sort on those alone
    changes.sort()
    known, idle, nwait = set(), {}, {}
    total = {i: 0 for i in set(llc_of.values())}
    # per LLC, how many of its known CPUs are idle, and how many are busy with a task
    # waiting: one CPU changes at a time, so its part in these two counts is taken out
    # before the change and put back after it
    n_idle = {i: 0 for i in total}
    n_wait = {i: 0 for i in total}

    def tally(cpu, sign):
        li = llc_of[cpu]
        if cpu not in known:
            return
        if idle[cpu]:
            n_idle[li] += sign
        elif nwait.get(cpu, 0) > 0:
            n_wait[li] += sign

    segments = []
    last = None
    for ts, _, _, cpu, what, value in changes:
        if last is not None and ts > last:
            for li in total:
                if n_idle[li] > 0 and n_wait[li] > 0:
                    total[li] += ts - last
                    if detail:
                        segments.append((li, last, ts))
        last = ts
        in_llc = cpu in llc_of  # a CPU alone in its LLC is in no LLC's counts
        if in_llc:
            tally(cpu, -1)
        if what == "idle":
            known.add(cpu)
            idle[cpu] = value
        else:
            nwait[cpu] = nwait.get(cpu, 0) + value
        if in_llc:
            tally(cpu, +1)
    if detail:
        return sum(total.values()), {
            "per_llc": total,
            "segments": segments,
            "waits": waits,
            "pinned": pinned,
        }
    return sum(total.values())


def sample_results(path, pinned_min_runs: int) -> dict:
    """``walk`` and ``idle_while_runnable_ns`` of the sample ``path`` read with the model's
    events, from one merged list of its events; computed once per test run and shared
    by the tests of every xdist worker (tests/conftest.py, ``computed_once``): the
    reference check of the detectors (test_detect) and the one of idle while runnable
    (test_reference_idle) walk the same samples. Read it, never change it."""
    from .conftest import computed_once, shared_model_trace

    def compute():
        trace = shared_model_trace(path)
        with no_cyclic_gc():
            events = merged(trace)
            return {
                "walk": walk(trace, events=events),
                "idle_while_runnable_ns": idle_while_runnable_ns(
                    trace, pinned_min_runs, events=events
                ),
            }

    key = f"tests/reference_impl.py walk, idle_while_runnable_ns({pinned_min_runs}) of {path}"
    return computed_once(key, compute)
