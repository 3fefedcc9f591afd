"""Per-task time states (``perf sched timehist --state``): when each task was running,
runnable, sleeping or blocked, and on which CPU (docs/task-states.md).

:func:`build` gives one row per interval of one task in one state: ``pid``, ``cpu``,
``start_ts``, ``end_ts`` (exclusive), ``state`` and ``switch_state``. The intervals of a
task tile its *observed time* without gaps or overlaps, so its states add up to it
exactly (in ns). :func:`totals` sums them per task (and per CPU) over the trace or a
slice of it.

States (``state``), from the task's own events in time order:

``running``
    from its switch-in (``sched_switch`` ``next_pid``) to its switch-out.
``preempted``
    runnable: switched out with ``prev_state`` ``R`` or ``R+`` (preempted, or yielded
    while runnable), until it is switched in again. A wake-up of a task in this state
    (``ttwu_runnable``) changes nothing.
``woken_wait``
    runnable: from its first wake-up event (``sched_waking``; ``sched_wakeup`` when the
    trace has no waking; ``sched_wakeup_new`` for a new task) after it went to sleep,
    until its switch-in: the wake-to-run wait. A task woken while going to sleep (its
    waking comes after its switch-in and before its switch-out ``S`` or ``D``: the
    waker waits in try_to_wake_up() for it to leave the CPU) waits from the switch-out.
``sleeping``
    switched out asleep and not woken yet: ``S`` (interruptible), ``I`` (idle kernel
    thread, TASK_IDLE; ``D|N`` on kernels 4.2 to 4.13), ``T``/``t`` (stopped, traced),
    ``P`` (parked) and any other letter of a waiting task.
``blocked``
    switched out in uninterruptible sleep (``D``, ``D|K``, ``D|W``...; not TASK_IDLE):
    iowait and other ``D`` waits, until woken.
``unknown``
    before the task's first event that says its state, from the start of the trace;
    after a switch-out whose state the trace does not give.

A task's observed time runs from the start of the trace to its end; a task born in the
trace starts at its ``sched_wakeup_new`` (its ``sched_process_fork`` when the trace has
no wakeup_new); a task that dies (switched out ``X``, ``Z`` or ``x``) ends there. pid 0
(the idle tasks) is not a task here: its time is the CPUs' idle time.

``cpu``: where the task is: the CPU it runs on, the CPU whose run queue it waits on
(its CPU changes at ``sched_migrate_task`` and at a ``sched_wakeup``'s target_cpu), and
for a sleeping or blocked task the CPU it last ran on (-1: not known yet).

``switch_state``: the ``prev_state`` letters of the switch-out that began the task's
current time off the CPU (a ``woken_wait`` after a ``D`` sleep says ``D``); missing for
``running`` and ``unknown`` rows before any switch-out.

Built by compiled passes over the tasks' events (``_pass_task_states.c``): the events
are rows of one record each, sorted once by (task, time) (a counting sort of each event
table's rows by task, then each task's merged by time, each table being in time order),
then one scan of each task's rows carries its state, CPU and switch-out letters forward
and cuts its intervals, or sums their ns per task, CPU and state as it cuts them
(:func:`build_sums`: what ``analyze`` reads, without the intervals); Python says what
each event means (its state code, priority, CPU), C runs the loops.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any, Protocol, overload

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import _passes, tasks
from ._util import in_span, is_sorted, last_rows, member, stable_order, table_span
from .events import Events, i64, ints
from .lives import SHIFT, dies, pid_of
from .memo import Memo


class TaskStatesOf(Protocol):
    """What :func:`summary` reads of a :class:`schedwake.model.Model` (which imports this
    module): its intervals, its events and the tasks it is about."""

    @property
    def task_states(self) -> pd.DataFrame: ...

    @property
    def task_state_sums(self) -> StateSums: ...

    @property
    def events(self) -> Events: ...

    @property
    def pids(self) -> frozenset[int] | None: ...

    @property
    def memo(self) -> Memo: ...


#: The states of the intervals, in their categorical order.
STATES = ("running", "preempted", "woken_wait", "sleeping", "blocked", "unknown")

#: The columns of :func:`totals` (seconds), in report order.
TOTAL_COLUMNS = (
    "observed_s",
    "running_s",
    "runnable_s",
    "preempted_s",
    "woken_wait_s",
    "sleeping_s",
    "blocked_s",
    "unknown_s",
)

#: Task classes of the summaries and of the metrics ``runnable_share_<class>``.
CLASSES = ("user", "kworker", "kthread")

_RUN, _PRE, _WOKEN, _SLEEP, _BLOCK, _UNK = range(6)
_DEAD = 6  # after its last switch-out: the task's observed time has ended
_WAKE = 7  # a wake-up: runnable if off the CPU asleep, else no change
_KEEP = 8  # a migration: the state goes on, the CPU changes

#: Order of events of one task at one time: a switch-out before a wake-up before a
#: migration before a switch-in (a task switched out and in again at the same time
#: ends running; a wake-up stamped with its sleep's time still wakes it).
_PRIO_START, _PRIO_OUT, _PRIO_WAKE, _PRIO_MIGRATE, _PRIO_IN = range(5)
#: the end of a run whose switch-out is missing: after its last proof, even one that
#: is the run's switch-in at that very time
_PRIO_GONE = 5


def state_code(letters: str) -> int:
    """The state a task is in after a switch-out with ``prev_state`` ``letters`` (as
    trace-cmd and perf print it: ``S``, ``D``, ``R+``, ``D|K``, ``I``...)."""
    s = str(letters).strip()
    if s.startswith("R"):
        return _PRE
    flags = set(s.replace("|", "").replace("+", ""))
    if dies(s):
        return _DEAD
    if "D" in flags and "N" not in flags:  # D|N: TASK_IDLE before 4.14 (now I)
        return _BLOCK
    if flags & set("SDITtPWKN"):
        return _SLEEP
    return _UNK


def sleeps(letters: str) -> bool:
    """Whether a switch-out with ``prev_state`` ``letters`` put the task to sleep (it
    needs a wake-up to run again): sleeping or blocked, not runnable, dead or unknown."""
    return state_code(letters) in (_SLEEP, _BLOCK)


def task_class(comm: str, pid: int | None = None) -> str | None:
    """The class of a task in the summaries and metrics: ``kworker`` (workqueue
    workers, bound or unbound), ``kthread`` (other kernel threads known by name) or
    ``user``; None for the idle task."""
    if pid == 0:
        return None
    cls = tasks.name_class(comm)  # (matched once per name)
    if cls == tasks.IDLE:
        return None
    if comm.startswith("kworker/"):
        return "kworker"
    if cls in (tasks.PERCPU_KTHREAD, tasks.UNBOUND_KWORKER, tasks.KTHREAD):
        return "kthread"
    return "user"


def build(
    ev: Events, runs: pd.DataFrame, unseen_pids: Collection[int] | np.ndarray | None = None
) -> pd.DataFrame:
    """The interval table of every task of ``ev`` (see the module's docstring); ``runs``:
    where the trace proves each task ran (:mod:`.completeness`); ``unseen_pids``: None
    for a complete trace, else the tasks it shows running unseen (completeness
    ``rewoken``), whose waits after a wake-up are unknown, as is a wait after a wake-up
    that no run ends before the trace does."""
    tasks = _scan_input(ev, runs, unseen_pids)
    none = np.zeros(0, np.int64)
    if tasks.rows is None:
        return _frame(none, none, none, none, np.zeros(0, np.int8), none, tasks.letter_cats)
    n = len(tasks.rows)
    # the scan of each task's rows (_pass_task_states.c): a wake-up wakes a task that is
    # off the CPU asleep (or not yet known, or dead: a reused pid); a running or already
    # runnable task stays as it is; a wake-up of a task already woken and not seen
    # running since (it ran unseen and slept again in between: only a task not
    # TASK_RUNNING is woken) makes its state unknown from that earlier wake-up to this
    # one, as between an unseen switch-in's earliest time and its switch-out (the
    # marks); the state, the CPU (``cpu`` >= 0) and the letters of the switch-out that
    # began the time off the CPU carried forward over each task's rows; one interval
    # per change of any of them, to the next change or the task's end; a wait after a
    # wake-up that no run ends before the trace does is not proven on a trace that
    # lacks events (``unseen_pids`` given); dead time and empty intervals dropped
    out = (
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int32),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int8),
        np.empty(n, dtype=np.int32),
        np.empty(n, dtype=np.int32),  # (each task's pid, :func:`.lives.pid_of`)
    )
    k = _passes.task_states_scan(
        tasks.rows.view(np.uint8), tasks.gkey, tasks.gflags, tasks.gend, tasks.unseen_given,
        *out, _PID_MASK,
    )  # fmt: skip
    task, where, start, stop, state, since, pid = (a[:k] for a in out)
    return _frame(task, where, start, stop, state, since, tasks.letter_cats, pid)


def build_sums(
    ev: Events, runs: pd.DataFrame, unseen_pids: Collection[int] | np.ndarray | None = None
) -> StateSums:
    """``StateSums.of(build(ev, runs, unseen_pids))`` without the intervals: the same
    scan of the tasks' rows sums each interval's ns into its task's on its CPU as it cuts
    it (_pass_task_states.c), rather than writing millions of intervals for a frame that
    is summed right after (``analyze`` reads only their sums)."""
    tasks = _scan_input(ev, runs, unseen_pids)
    if tasks.rows is None:
        return StateSums.of_groups(None)
    # (at most a group an interval, an interval a row; a task's groups one a CPU)
    cap = min(len(tasks.rows), len(tasks.gflags) * (tasks.cpu_hi + 2))
    key, cpu = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int32)
    ns = np.empty(cap * len(STATES), dtype=np.int64)
    m = _passes.task_states_sums(
        tasks.rows.view(np.uint8), tasks.gkey, tasks.gflags, tasks.gend, tasks.unseen_given,
        tasks.cpu_hi, key, cpu, ns,
    )  # fmt: skip
    if not m:
        return StateSums.of_groups(None)
    index = pd.MultiIndex.from_arrays([key[:m], cpu[:m]], names=["task", "cpu"])
    sums = ns[: m * len(STATES)].reshape(m, len(STATES))
    return StateSums.of_groups(pd.DataFrame(sums, index=index, columns=list(STATES)))


@dataclass
class _ScanInput:
    """What the scan of the tasks' rows reads (:func:`_scan_input`)."""

    #: the tasks' rows (:data:`_ROW`) in (task, ts, prio) order; None: no task
    rows: np.ndarray | None
    #: per task (in that order), its key, flags (:data:`_G_BORN`...) and where its time
    #: ends
    gkey: np.ndarray
    gflags: np.ndarray
    gend: np.ndarray
    unseen_given: bool
    #: the switch-outs' letters, by their code in the rows
    letter_cats: list[str]
    #: the greatest CPU of the rows (-1: none)
    cpu_hi: int


def _scan_input(
    ev: Events, runs: pd.DataFrame, unseen_pids: Collection[int] | np.ndarray | None
) -> _ScanInput:
    """The rows of every task of ``ev`` in (task, ts, prio) order and what the scan needs
    of each task (:func:`build`'s arguments)."""
    s = ev.switch
    t_end = int(ev.last_ts)
    parts: list[tuple] = []  # (ts, pid, cpu, code, prio, letters code, unknown mark)
    none = np.zeros(0, np.int64)
    letter_cats: list[str] = []
    if s is not None and len(s):
        ts, cpu = i64(s, "ts"), ints(s, "cpu")
        t_end = max(t_end, int(ts.max()))
        prev, nxt = ints(s, "prev_pid"), ints(s, "next_pid")
        if "prev_state_str" in s.columns:
            st = pd.Categorical(s["prev_state_str"])
            letter_cats = [str(c) for c in st.categories]
            by_cat = np.array([state_code(c) for c in letter_cats] + [_UNK], dtype=np.int8)
            lcode = np.asarray(st.codes)
            out_code = by_cat[np.where(lcode < 0, len(letter_cats), lcode)]
        else:
            lcode = np.full(len(ts), -1, dtype=np.int64)
            out_code = np.full(len(ts), _UNK, dtype=np.int8)
        # (the idle task's rows, pid 0, are left out where the rows are sorted)
        parts.append((ts, prev, cpu, out_code, _PRIO_OUT, lcode, 0))
        parts.append((ts, nxt, cpu, _RUN, _PRIO_IN, -1, 0))
    # a task is a pid's life (:mod:`.lives`): from here on ``pid`` is a life key
    born = np.zeros(0, np.int64)
    if ev.wakeup_new is not None and len(ev.wakeup_new):
        f = ev.wakeup_new
        fts = i64(f, "ts")
        pid = ev.key(ints(f, "pid"), fts)
        parts.append((fts, pid, ints(f, "target_cpu"), _WOKEN, _PRIO_WAKE, -1, 0))
        born = pid
    if ev.fork is not None and len(ev.fork):
        f = ev.fork
        fts = i64(f, "ts")
        child = ev.key(ints(f, "child_pid"), fts)
        new = ~member(child, born)  # the wakeup_new, when recorded, is the birth
        parts.append((fts[new], child[new], ints(f, "cpu")[new], _WOKEN, _PRIO_WAKE, -1, 0))
        born = np.concatenate([born, child[new]])
    # a wake-up begins at sched_waking (perf sched timehist does the same), at
    # sched_wakeup when the trace has no waking; sched_wakeup says where it goes
    has_waking = ev.waking is not None and len(ev.waking) > 0
    if has_waking:
        f = ev.waking
        parts.append((i64(f, "ts"), ints(f, "pid"), -1, _WAKE, _PRIO_WAKE, -1, 0))
    if ev.wakeup is not None and len(ev.wakeup):
        f = ev.wakeup
        kind = _KEEP if has_waking else _WAKE
        parts.append((i64(f, "ts"), ints(f, "pid"), ints(f, "target_cpu"), kind, _PRIO_WAKE, -1, 0))
    if ev.migrate is not None and len(ev.migrate):
        f = ev.migrate
        parts.append(
            (i64(f, "ts"), ints(f, "pid"), ints(f, "dest_cpu"), _KEEP, _PRIO_MIGRATE, -1, 0)
        )
    parts = [p for p in parts if len(p[0])]
    if ev.lives:
        parts = [(p[0], ev.key(np.broadcast_to(p[1], (len(p[0]),)), p[0]), *p[2:]) for p in parts]
    # the rows of the tasks (pid 0 in wake or migration events: not a task), in order:
    # by (task, ts, prio), ties in the order of the parts (a stable sort); with room
    # after them for the rows added below, the censored runs' and a start row a task
    # (memory not written to costs nothing); the tasks' slots cover the runs' tasks too
    rkey = ev.run_keys(runs)
    room = 6 * len(runs) + 1
    buf, n, tasks, slots = _task_rows(parts, sum(len(p[0]) for p in parts) + room, also=[rkey])
    censored = _censored_runs(runs, rkey, buf[:n], slots)
    cpu_hi = max([_greatest(p[2]) for p in parts + censored], default=-1)
    if not n and not censored:
        return _ScanInput(None, none, none, none, unseen_pids is not None, letter_cats, cpu_hi)
    extra = list(censored)
    # every task not born in the trace starts, unknown, when the trace does: a pid's
    # first life; a later life whose birth the trace lacks, at its first event (after
    # the death of the one before)
    seen = np.union1d(tasks, _distinct(extra))
    old = seen[~member(seen, born)]
    first = int(ev.first_ts) if ev.first_ts else t_end
    since_ts = np.minimum(ev.lives.start_of(old, first), t_end)
    extra.append((since_ts, old, -1, _UNK, _PRIO_START, -1, 0))
    rows = _merged_into(buf, n, extra, slots)
    del buf
    ts, slot = rows["ts"], rows["key"]
    n = len(ts)
    # the tasks, in order, and what the scan needs of each: whether it was born in the
    # trace (not alive before its first event), is one the trace shows running unseen
    # (none of its waits after a wake-up is known; ``unseen_pids``: life keys), and
    # where its time ends: with the trace, or where the next task of its pid begins
    # (a task whose death the trace lacks, :mod:`.lives`, is unknown from its last
    # event: it ran, unseen, and exited some time before)
    keys = seen.astype(np.int64)  # (the start rows' tasks are of those)
    gflags = np.where(member(keys, born), _G_BORN, 0).astype(np.int8)
    if unseen_pids is not None and len(unseen_pids):
        gflags |= np.where(member(keys, np.asarray(unseen_pids)), _G_UNSEEN, 0).astype(np.int8)
    if ev.lives:
        nxt = ev.lives.end_of(keys)
        gend = np.minimum(t_end, nxt)
        gflags |= np.where(nxt < t_end, _G_GONE, 0).astype(np.int8)
    else:
        gend = np.full(len(keys), t_end, dtype=np.int64)
    # woken while going to sleep: a waking after the task's switch-in and before its
    # switch-out asleep (try_to_wake_up() traced it, then waited for the task to be off
    # its CPU): the task is runnable from the switch-out (the run's start is its first
    # proof when its switch-in is missing: a waking before it may have come before the
    # unseen switch-in, and does not count)
    at, woke = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    m = _passes.task_states_in_flight(rows.view(np.uint8), at, woke)
    if m:
        at, woke = at[:m], woke[:m]
        # not when the task fired an event of its own after that waking: then it ran on
        # after the wake-up (which set it running) and went to sleep again by itself
        # (its events stamped with the switch-out's time came before it: its own context)
        mine = _fired_between(ev, slots.keys(slot[at]), ts[woke], ts[at])
        rows["code"][at[~mine]] = _WOKEN
    del at, woke
    return _ScanInput(rows, keys, gflags, gend, unseen_pids is not None, letter_cats, cpu_hi)


#: A life key's pid bits (:func:`.lives.pid_of`), for the scan to write the pids.
_PID_MASK = (1 << SHIFT) - 1

#: Flags of each task for the scan (_pass_task_states.c).
_G_BORN, _G_UNSEEN, _G_GONE = 1, 2, 4

#: One row of a task's events (_pass_task_states.c's Row): its time, task (its slot,
#: :class:`_Slots`), CPU, the letters code of a switch-out, state code, priority among
#: the task's rows at one time and unknown mark; a record of 24 bytes that moves whole
#: (a row gathered, one memory access, not one a column).
_ROW = np.dtype(
    {
        "names": ["ts", "key", "cpu", "letters", "code", "prio", "mark"],
        "formats": [np.int64, np.int32, np.int32, np.int32, np.int8, np.int8, np.int8],
        "offsets": [0, 8, 12, 16, 20, 21, 22],
        "itemsize": 24,
    },
    align=True,
)


def _task_rows(
    parts: list[tuple],
    room: int = 0,
    slots: _Slots | None = None,
    also: Sequence[np.ndarray] = (),
) -> tuple[np.ndarray, int, np.ndarray, _Slots]:
    """The rows (:data:`_ROW`) of the parts (ts, task, cpu, code, prio, letters code,
    unknown mark; a column may be one value for all), those of pid 0 left out, in
    (task, ts, prio) order, ties in the order of the parts, then of their rows; in an
    array with ``room`` more rows after them; how many; their tasks (keys, ascending);
    and the tasks' slots (``slots``, else those of the parts' tasks and of ``also``'s,
    the keys of rows to come). One pass in C (_pass_task_states.c) writes each row at
    its place: each part's rows placed by a counting sort by task, then each task's
    merged by (ts, prio), each part being in that order already (the event tables are
    in time order; a part that is not is put in order first); the counts say which
    tasks have rows."""
    cols: list[tuple[Any, ...]] = [
        (np.ascontiguousarray(p[0], dtype=np.int64), *map(_column, p[1:])) for p in parts
    ]
    out = np.empty(sum(len(c[0]) for c in cols) + room, dtype=_ROW)
    if slots is None:
        slots, of_parts = _Slots.of([c[1] for c in cols] + list(also))
        of_parts = None if of_parts is None else of_parts[: len(cols)]
    else:
        of_parts = slots.of_parts([c[1] for c in cols])
    counts = np.empty(slots.span, dtype=np.int64)
    while True:
        m = _passes.task_sort_parts(
            cols, of_parts, slots.lo, slots.span, out.view(np.uint8), counts
        )
        if m >= 0:
            return out, m, slots.keys(np.flatnonzero(counts)), slots
        j = -1 - m
        order = _part_order(cols[j])
        cols[j] = tuple(c if np.ndim(c) == 0 else c[order] for c in cols[j])
        if of_parts is not None:
            of_parts[j] = of_parts[j][order]


@dataclass
class _Slots:
    """Where the counting sort of :func:`_task_rows` places the rows of each task, and
    the task a row's slot (32 bits) stands for: its key - ``lo`` when the keys' range is
    not much wider than the rows (pids), else its rank among the keys (life keys,
    :mod:`.lives`: ``levels``, the keys of the ranks)."""

    lo: int
    span: int
    levels: np.ndarray | None = None

    @classmethod
    def of(cls, keys: list[np.ndarray]) -> tuple[_Slots, list[np.ndarray] | None]:
        """The slots of the tasks of ``keys`` (arrays), and each array's slots (None:
        key - lo, found by the pass)."""
        arrays = [np.asarray(k) for k in keys]
        if not sum(len(k) for k in arrays):
            return cls(0, 1), None
        table = table_span(arrays)
        if table is not None and table[1] <= 1 << 31:
            return cls(*table), None
        codes, levels = _dense(np.concatenate(arrays))
        of_arrays = np.split(codes, np.cumsum([len(k) for k in arrays])[:-1])
        return cls(0, max(len(levels), 1), levels), of_arrays

    def of_parts(self, keys: list[np.ndarray]) -> list[np.ndarray] | None:
        """The slots of the rows of parts (their tasks' keys ``keys``, each a task of
        these slots'): None when each is its key - lo."""
        return None if self.levels is None else [self.slots(k) for k in keys]

    def slots(self, key: np.ndarray) -> np.ndarray:
        """The slots of the tasks ``key`` (each one of these slots')."""
        key = np.asarray(key, dtype=np.int64)
        return key - self.lo if self.levels is None else np.searchsorted(self.levels, key)

    def keys(self, slot: np.ndarray) -> np.ndarray:
        """The tasks' keys of ``slot``."""
        slot = np.asarray(slot, dtype=np.int64)
        return slot + self.lo if self.levels is None else self.levels[slot].astype(np.int64)


def _part_order(part: tuple) -> np.ndarray:
    """The stable order of a part's rows by (ts, prio)."""
    ts, prio = part[0], part[4]
    return np.argsort(ts, kind="stable") if np.ndim(prio) == 0 else np.lexsort((prio, ts))


def _greatest(v: Any) -> int:
    """The greatest value of a part's column (one int, or an array; -1: empty)."""
    if np.ndim(v) == 0:
        return int(v)
    return int(np.max(v)) if len(v) else -1


def _column(v: Any) -> np.ndarray | int:
    """A column of a part as :func:`_passes.task_sort_parts` takes it: one int, or an
    array of 1-, 4- or 8-byte integers (the key's of 4 or 8)."""
    if np.ndim(v) == 0:
        return int(v)
    a = np.ascontiguousarray(v)
    if a.dtype.kind != "i" or a.dtype.itemsize not in (1, 4, 8):
        a = a.astype(np.int64)
    return a


def _merged_into(buf: np.ndarray, n: int, parts: list[tuple], slots: _Slots) -> np.ndarray:
    """The rows ``buf[:n]`` (in (task, ts, prio) order, their tasks of ``slots``) and
    those of the ``parts`` (few, after them) in that order: theirs sorted
    (:func:`_task_rows`), merged into the room after them (_pass_task_states.c)."""
    theirs, m, _, _ = _task_rows(parts, slots=slots)
    _passes.merge_rows_into(buf.view(np.uint8), n, theirs[:m].view(np.uint8))
    return buf[: n + m]


def _distinct(parts: list[tuple]) -> np.ndarray:
    """The distinct tasks of the parts (their keys; pid 0 is not a task)."""
    if not parts:
        return np.zeros(0, np.int64)
    keys = np.unique(np.concatenate([np.broadcast_to(p[1], (len(p[0]),)) for p in parts]))
    return keys[keys != 0]


def _fired_between(ev: Events, key: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether task ``key[j]`` (a life key) fired an event the model reads in its context
    (its ``common_pid``; sched_switch aside) at a time in ``(lo[j], hi[j]]``: what it did
    while it ran. The windows are short (a waking to the task's switch-out): each event
    table's rows in them found by binary searches in its time order, then their tasks
    compared, rather than a search among every event of every task."""
    fired = np.zeros(len(key), dtype=bool)
    for f in (ev.waking, ev.wakeup, ev.wakeup_new, ev.migrate, ev.fork, ev.exec_, ev.wq_start,
              ev.wq_end):  # fmt: skip
        if f is None or not len(f) or "common_pid" not in f.columns:
            continue
        ts = ints(f, "ts")
        order = None if is_sorted(ts) else np.argsort(ts, kind="stable")
        by_time = ts if order is None else ts[order]
        first = np.searchsorted(by_time, lo, "right")
        count = np.searchsorted(by_time, hi, "right") - first
        query = np.repeat(np.arange(len(key)), count)
        at = np.arange(len(query)) + np.repeat(first - (np.cumsum(count) - count), count)
        if order is not None:
            at = order[at]
        mine = ev.key(ints(f, "common_pid")[at], ts[at]) == key[query]
        fired[query[mine]] = True
    return fired


def _censored_runs(
    runs: pd.DataFrame, rkey: np.ndarray, rows: np.ndarray, slots: _Slots
) -> list[tuple]:
    """The parts that the runs the trace shows only in part add (:mod:`.completeness`):
    a run whose switch-in is missing is unknown from the earliest it can have begun (not
    before the task's own previous event) to its first proof, and running from there;
    after a run whose switch-out is missing (its last proof, then an unknown stretch)
    the task's state is unknown until its next event says it. ``rkey``: the runs' life
    keys (:mod:`.lives`), as the tasks' of the other parts' rows are; ``rows``: those
    rows (:data:`_ROW`) in (task, ts) order, their tasks of ``slots``."""
    if len(runs) == 0:
        return []
    pid = rkey
    start, cpu = runs["start_ts"].to_numpy(), runs["cpu"].to_numpy()
    c = ~runs["exact_start"].to_numpy()
    out: list[tuple] = []
    if c.any():
        # the task's own last event before the proof (a switch-out, a wake-up, a
        # migration): it was not running unseen before that
        cs, cp = start[c], pid[c]
        at = np.empty(len(cs), dtype=np.int64)
        _passes.keyed_last_below(rows.view(np.uint8), slots.slots(cp), cs.astype(np.int64), at)
        # (the rows' ts gathered by index: ``take`` of the strided field would copy
        # the whole column first)
        before = np.full(len(at), -1, dtype=np.int64)
        found = at >= 0
        before[found] = rows["ts"][at[found]]
        unseen = np.minimum(np.maximum(runs["earliest_ts"].to_numpy()[c], before), cs)
        # a run of no length (its one proof is its switch-out) begins before that
        # switch-out, stamped with the same time; any other after a switch-out there
        zero = (runs["end_ts"].to_numpy()[c] == cs) & (np.asarray(runs["end"].cat.codes)[c] == 0)
        prio = np.where(zero, _PRIO_START, _PRIO_IN).astype(np.int8)
        out.append((unseen, cp, -1, _KEEP, prio, -1, 1))
        out.append((cs, cp, cpu[c], _RUN, prio, -1, -1))
    e = np.asarray(runs["end"].cat.codes) == 1  # ended by its last proof
    if e.any():
        out.append((runs["end_ts"].to_numpy()[e], pid[e], cpu[e], _UNK, _PRIO_GONE, -1, 0))
    return out


def _frame(
    task: npt.ArrayLike,
    cpu: npt.ArrayLike,
    start: npt.ArrayLike,
    end: npt.ArrayLike,
    state: npt.ArrayLike,
    since: npt.ArrayLike,
    letter_cats: Sequence[str],
    pid: np.ndarray | None = None,
) -> pd.DataFrame:
    """The intervals' frame; ``pid``: the tasks' pids when the scan gave them."""
    return pd.DataFrame(
        {
            "pid": pid_of(task) if pid is None else pid,
            # the task: its pid's life (:mod:`.lives`), the pid itself in a first life
            "task": np.asarray(task, dtype=np.int64),
            "cpu": np.asarray(cpu, dtype=np.int32),
            "start_ts": np.asarray(start, dtype=np.int64),
            "end_ts": np.asarray(end, dtype=np.int64),
            "state": pd.Categorical.from_codes(np.asarray(state, np.int8), categories=STATES),
            "switch_state": pd.Categorical.from_codes(
                np.asarray(since, dtype=np.int32), categories=list(dict.fromkeys(letter_cats))
            ),
        },
        copy=False,
    )


def _cut(
    intervals: pd.DataFrame, start_ns: int | None, end_ns: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The intervals' starts and ends moved inside ``start_ns``..``end_ns`` (None: open)."""
    s = intervals["start_ts"].to_numpy()
    e = intervals["end_ts"].to_numpy()
    if start_ns is not None:
        s = np.maximum(s, start_ns)
    if end_ns is not None:
        e = np.minimum(e, end_ns)
    return s, e


def clipped(intervals: pd.DataFrame, start_ns: int | None, end_ns: int | None) -> pd.DataFrame:
    """The intervals cut to ``start_ns``..``end_ns`` (trace timestamps; None: open);
    those outside dropped."""
    s, e = _cut(intervals, start_ns, end_ns)
    keep = e > s
    out = intervals[keep].copy()
    out["start_ts"], out["end_ts"] = s[keep], e[keep]
    return out.reset_index(drop=True)


def totals(
    intervals: pd.DataFrame,
    by: tuple[str, ...] = ("pid",),
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> pd.DataFrame:
    """Time in each state (:data:`TOTAL_COLUMNS`, seconds) per group of ``by``
    (``("pid",)``, ``("pid", "cpu")``, ``("cpu",)``), over the intervals clipped to
    ``start_ns``..``end_ns`` (trace timestamps; None: open). ``observed_s`` is the sum of
    the others but ``runnable_s`` (= ``preempted_s`` + ``woken_wait_s``), exactly: they
    are summed in integer ns and converted once."""
    ns = totals_ns(intervals, by, start_ns, end_ns)
    out = seconds(ns)
    return out[out["observed_s"] > 0] if start_ns is not None or end_ns is not None else out


def totals_ns(
    intervals: pd.DataFrame,
    by: tuple[str, ...] = ("pid",),
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> pd.DataFrame:
    """:func:`totals` in integer ns, a column per state (:data:`STATES`): what adds up
    exactly across the parts of a trace (:mod:`schedwake.partition`)."""
    s, e = _cut(intervals, start_ns, end_ns)
    state = np.asarray(intervals["state"].cat.codes)
    return _group_sums(intervals, list(by), state, s, e)


def seconds(ns: pd.DataFrame) -> pd.DataFrame:
    """The :data:`TOTAL_COLUMNS` (seconds) of the ns per state of :func:`totals_ns`."""
    out = pd.DataFrame(index=ns.index)
    out["observed_s"] = ns.sum(axis=1) / 1e9
    out["running_s"] = ns["running"] / 1e9
    out["runnable_s"] = (ns["preempted"] + ns["woken_wait"]) / 1e9
    out["preempted_s"] = ns["preempted"] / 1e9
    out["woken_wait_s"] = ns["woken_wait"] / 1e9
    out["sleeping_s"] = ns["sleeping"] / 1e9
    out["blocked_s"] = ns["blocked"] / 1e9
    out["unknown_s"] = ns["unknown"] / 1e9
    return out


def _group_sums(
    intervals: pd.DataFrame,
    keys: list[str],
    state: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
) -> pd.DataFrame:
    """Per group of the ``keys`` columns (sorted, as ``groupby(keys, sort=True)``),
    the ns of ``max(end - start, 0)`` in each state (:data:`STATES` columns), summed
    exactly in integers: each key's rank among its distinct values (a table over its
    range, :func:`_dense`), then one pass of sums (_pass_task_states.c), not a sort or a
    frame of a column per state."""
    if (state < 0).any():  # (no state: no time in any)
        sel = state >= 0
        intervals, start, end, state = intervals[sel], start[sel], end[sel], state[sel]
    codes, levels = [], []
    for k in keys:
        c, u = _dense(intervals[k].to_numpy())
        codes.append(c)
        levels.append(u)
    group = codes[0]
    for c, u in zip(codes[1:], levels[1:]):
        group = group * len(u) + c
    n_groups = len(levels[0])
    combo = None
    if len(keys) > 1:
        n_groups = int(np.prod([len(u) for u in levels]))
        # (sums over every combination while they take no more than 6 bytes a row)
        if n_groups > max(len(group) // 8, 1 << 16):
            group, combo = _dense(group)
            n_groups = len(combo)
    sums = np.empty(n_groups * len(STATES), dtype=np.int64)
    _passes.state_sums(
        group,
        np.ascontiguousarray(state, dtype=np.int8),
        np.ascontiguousarray(start, dtype=np.int64),
        np.ascontiguousarray(end, dtype=np.int64),
        sums,
    )
    if len(keys) > 1 and combo is None:
        # summed over every combination of the keys' values: those with rows kept
        combo = np.flatnonzero(np.bincount(group, minlength=n_groups))
        sums = sums.reshape(n_groups, len(STATES))[combo].ravel()
        n_groups = len(combo)
    if len(keys) == 1:
        index = pd.Index(levels[0], name=keys[0])
    else:
        parts = []
        rest = np.asarray(combo, dtype=np.int64)
        for u in reversed(levels[1:]):
            parts.append(rest % len(u))
            rest = rest // len(u)
        parts.append(rest)
        index = pd.MultiIndex.from_arrays(
            [u[c] for u, c in zip(levels, reversed(parts))], names=keys
        )
    return pd.DataFrame(sums.reshape(n_groups, len(STATES)), index=index, columns=list(STATES))


def _level_sums(sums: pd.DataFrame, level: int) -> pd.DataFrame:
    """The ns per state of :func:`_group_sums` by two keys summed per value of one of
    them (``level``), as :func:`_group_sums` by that key alone gives them (the groups
    sorted): the same exact integer sums, over the groups' rows instead of the
    intervals."""
    key = sums.index.get_level_values(level)
    codes, levels = _dense(key.to_numpy())
    out = np.zeros((len(levels), len(STATES)), dtype=np.int64)
    np.add.at(out, codes, sums.to_numpy(dtype=np.int64))
    return pd.DataFrame(out, index=pd.Index(levels, name=key.name), columns=list(STATES))


def _dense(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, sort=True)`` (codes as int64): by a table over the range
    of integer values not much wider than the rows (_pass_task_states.c), else by it."""
    values = np.asarray(values)
    if values.dtype.kind == "i" and values.dtype.itemsize in (4, 8) and len(values):
        lo, hi = int(values.min()), int(values.max())
        span = hi - lo + 1
        if span <= max(2 * len(values), 1 << 16):
            codes = np.empty(len(values), dtype=np.int64)
            levels = np.empty(min(len(values), span), dtype=values.dtype)
            m = _passes.dense_codes(np.ascontiguousarray(values), lo, span, codes, levels)
            return codes, levels[:m]
    c, u = pd.factorize(values, sort=True)
    return c.astype(np.int64), np.asarray(u)


#: Where :func:`comms` finds the tasks' names (event table, pid and name columns): each
#: source in turn overrides the names the ones before it gave.
_NAME_SOURCES = (
    ("waking", "pid", "comm"),
    ("wakeup", "pid", "comm"),
    ("wakeup_new", "pid", "comm"),
    ("switch", "next_pid", "next_comm"),
    ("switch", "prev_pid", "prev_comm"),
)


def comms(ev: Events) -> dict[int, str]:
    """Each task's name: the last one a ``sched_switch`` gave it (as prev or next), else
    the last one a wake-up gave it; by task (its life key, :mod:`.lives`: the pid, but for
    a later task of a pid used again), so that a pid used again keeps each task's own
    name."""
    return joined_names([last_names(ev)])


def last_names(ev: Events, t0: int | None = None, t1: int | None = None) -> list[dict[int, str]]:
    """Per source of names (:data:`_NAME_SOURCES`), each task's last name in the rows
    with ``t0 <= ts < t1`` (None: open); :func:`joined_names` of the time parts of a
    trace, in order, gives the whole trace's :func:`comms`."""
    out: list[dict[int, str]] = []
    for table, pid_col, comm_col in _NAME_SOURCES:
        f = getattr(ev, table)
        if f is None or len(f) == 0 or comm_col not in f.columns:
            out.append({})
            continue
        ts, pid = i64(f, "ts"), ints(f, pid_col)
        if t0 is None and t1 is None:  # (every row: no copy of the columns)
            upid, rows = last_rows(ev.key(pid, ts))
        else:
            at = np.flatnonzero(in_span(ts, t0, t1))
            upid, last = last_rows(ev.key(pid[at], ts[at]))
            rows = at[last]
        # (only the rows kept: a string column's whole conversion costs the most)
        comm = f[comm_col].iloc[rows].to_numpy()
        out.append(dict(zip(upid.tolist(), (str(c) for c in comm))))
    return out


def joined_names(parts: Sequence[list[dict[int, str]]]) -> dict[int, str]:
    """The names of :func:`last_names` of the time parts of a trace (in time order): each
    source in turn, a later part's name of a task over an earlier's."""
    names: dict[int, str] = {}
    for i in range(len(_NAME_SOURCES)):
        for part in parts:
            names.update(part[i])
    return names


def names_of(model: TaskStatesOf) -> dict[int, str]:
    """Each task's name (:func:`comms`), found once per model (its memo): the task
    states' summary and the runnable-share metrics both read them."""
    if model.memo.task_names is None:
        model.memo.task_names = comms(model.events)
    return model.memo.task_names


def totals_shares(t: pd.DataFrame, names: dict[int, str]) -> dict[str, float | None]:
    """Per task class (:data:`CLASSES`): runnable time / (running + runnable time) of
    its tasks, from the :func:`totals` per task ``t`` (seconds; index: the tasks; a
    trace's, or what its time parts give from their summed ns: :func:`seconds` of
    :attr:`StateSums.per_task`); None for a class with no running or runnable time."""
    cls = _class_of(t.index, names)
    out: dict[str, float | None] = {}
    for c in CLASSES:
        sel = t[cls == c]
        busy = float(sel["running_s"].sum() + sel["runnable_s"].sum())
        out[c] = float(sel["runnable_s"].sum()) / busy if busy > 0 else None
    return out


def _task_column(intervals: pd.DataFrame) -> str:
    """The column that tells tasks apart: ``task`` (a pid's life), ``pid`` in a table
    made without it."""
    return "task" if "task" in intervals.columns else "pid"


def _class_of(pids: Iterable[int], names: dict[int, str]) -> np.ndarray:
    """:func:`task_class` of each pid (by its name in ``names``), as an object array (the
    names looked up and classed by ``map``, not a Python step a task)."""
    keys = np.asarray(pids, dtype=np.int64).tolist()
    return np.array(_classes(list(map(names.get, keys, repeat(""))), keys), dtype=object)


def _classes(comms: list[str], pids: list[int]) -> list[str | None]:
    """:func:`task_class` of each (name, pid): once per distinct name (the tasks share
    few), then looked up, rather than a call a task."""
    of_name = {c: task_class(c) for c in set(comms)}
    return [None if p == 0 else of_name[c] for c, p in zip(comms, pids)]


def class_share_windows(
    intervals: pd.DataFrame, names: dict[int, str], edges: np.ndarray
) -> dict[str, np.ndarray]:
    """Per task class, its runnable share (runnable / (running + runnable) time) inside
    each window ``edges[k]``..``edges[k+1]``; NaN where the class neither ran nor waited
    (:func:`window_class_shares` of the intervals' pieces in the windows: sums of
    integer ns, which the time parts of a trace give the same)."""
    edges = np.asarray(edges, dtype=np.int64)
    return window_class_shares(_state_pieces(intervals, edges), names, len(edges) - 1)


def window_state_times(intervals: pd.DataFrame, edges: np.ndarray) -> pd.DataFrame:
    """Per (window, task) with time there: the task's running and runnable (preempted or
    woken) ns inside the window (columns ``win``, ``task``, ``running_ns``,
    ``runnable_ns``; exact: the pieces of the intervals, :func:`window_overlaps`)."""
    pieces = _state_pieces(intervals, np.asarray(edges, dtype=np.int64))
    return pieces.groupby(["win", "task"], as_index=False, sort=True).sum()


def _state_pieces(intervals: pd.DataFrame, edges: np.ndarray) -> pd.DataFrame:
    """Each piece of the running and runnable intervals inside a window: its window, task,
    and its ns as running or as runnable (the other 0)."""
    state = np.asarray(intervals["state"].cat.codes) if len(intervals) else np.zeros(0, np.int8)
    sel = np.flatnonzero((state == _RUN) | (state == _PRE) | (state == _WOKEN))
    task = intervals[_task_column(intervals)].to_numpy().astype(np.int64)[sel]
    row, win, ns = window_overlaps(
        intervals["start_ts"].to_numpy()[sel], intervals["end_ts"].to_numpy()[sel], edges
    )
    running = state[sel][row] == _RUN
    return pd.DataFrame(
        {
            "win": win.astype(np.int64),
            "task": task[row],
            "running_ns": np.where(running, ns, 0),
            "runnable_ns": np.where(running, 0, ns),
        }
    )


def window_class_shares(
    times: pd.DataFrame, names: dict[int, str], nwin: int
) -> dict[str, np.ndarray]:
    """:func:`class_share_windows` of the :func:`window_state_times` ``times`` (the
    rows of a (window, task) may come in pieces, of several time parts: they add up)."""
    if not len(times):
        return {c: np.full(nwin, np.nan) for c in CLASSES}
    tasks, inv = np.unique(times["task"].to_numpy(), return_inverse=True)
    cls = _class_of(tasks, names)[inv.reshape(-1)]
    win = times["win"].to_numpy()
    out: dict[str, np.ndarray] = {}
    for c in CLASSES:
        mine = cls == c
        r, w = (
            np.bincount(win[mine], weights=times[k].to_numpy()[mine], minlength=nwin)
            for k in ("running_ns", "runnable_ns")
        )
        out[c] = window_share(r, w)
    return out


def window_share(running: np.ndarray, waiting: np.ndarray) -> np.ndarray:
    """Per window, waiting / (running + waiting) time (NaN where both are 0)."""
    r, w = running.astype(np.float64), waiting.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r + w > 0, w / (r + w), np.nan)


def window_overlaps(
    start: np.ndarray, end: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each piece of the intervals ``[start, end)`` inside a window ``edges[k]``..
    ``edges[k+1]``: the interval's row, the window, the piece's ns (exact integers: a
    window's time is the sum of its pieces, whatever parts of the trace give them)."""
    edges = np.asarray(edges, dtype=np.int64)
    s = np.clip(np.asarray(start, dtype=np.int64), edges[0], edges[-1])
    e = np.clip(np.asarray(end, dtype=np.int64), edges[0], edges[-1])
    rows = np.flatnonzero(e > s)
    s, e = s[rows], e[rows]
    ks = np.searchsorted(edges, s, "right") - 1  # the window a piece starts in
    ke = np.searchsorted(edges, e, "left") - 1  # the window it ends in
    n = ke - ks + 1
    row = np.repeat(rows, n)
    first = np.repeat(np.cumsum(n) - n, n)
    win = np.repeat(ks, n) + (np.arange(len(row)) - first)
    lo = np.maximum(np.repeat(s, n), edges[win])
    hi = np.minimum(np.repeat(e, n), edges[win + 1])
    return row, win, hi - lo


@dataclass
class StateSums:
    """The ns of the task-state intervals in each state (:func:`totals_ns`) per task
    (its life key), per (task, CPU) and per CPU: what :func:`summary` reports, and what
    the time parts of a trace add up (:meth:`add`)."""

    per_task: pd.DataFrame
    per_cpu_task: pd.DataFrame | None
    per_cpu: pd.DataFrame

    @classmethod
    def of(cls, iv: pd.DataFrame) -> StateSums:
        """The sums of the intervals ``iv`` (a :func:`build` table, or rows of one)."""
        if not len(iv):
            return cls.of_groups(None)
        return cls.of_groups(totals_ns(iv, (_task_column(iv), "cpu")))

    @classmethod
    def of_groups(cls, per_cpu_task: pd.DataFrame | None) -> StateSums:
        """The sums from those per (task, CPU) (:func:`totals_ns`' frame; None: no
        intervals)."""
        if per_cpu_task is None:
            empty = pd.DataFrame(columns=list(STATES), dtype=np.int64)
            return cls(empty, None, empty)
        return cls(_level_sums(per_cpu_task, 0), per_cpu_task, _level_sums(per_cpu_task, 1))

    def of_pids(self, pids: Collection[int] | None) -> StateSums:
        """The sums of the intervals of the tasks of ``pids`` (None: all): what
        ``StateSums.of`` gives of those intervals (:func:`focused`), from the sums per
        (task, CPU) instead."""
        if pids is None or self.per_cpu_task is None:
            return self
        task = self.per_cpu_task.index.get_level_values(0).to_numpy()
        keep = np.isin(pid_of(task), list(pids))
        if not keep.any():
            return StateSums.of_groups(None)
        per_cpu_task = self.per_cpu_task[keep]
        per_cpu_task.index = per_cpu_task.index.remove_unused_levels()
        return StateSums.of_groups(per_cpu_task)

    @classmethod
    def add(cls, parts: Sequence[StateSums]) -> StateSums:
        """The sums of several parts' intervals (each interval in one part): exact,
        integers, in the order the whole table's sums have (groups sorted)."""

        def added(frames: list[pd.DataFrame]) -> pd.DataFrame:
            frames = [f for f in frames if len(f)]
            if not frames:
                return pd.DataFrame(columns=list(STATES), dtype=np.int64)
            whole = pd.concat(frames)
            return whole.groupby(level=list(range(whole.index.nlevels)), sort=True).sum()

        per_cpu_task = [p.per_cpu_task for p in parts if p.per_cpu_task is not None]
        return cls(
            added([p.per_task for p in parts]),
            added(per_cpu_task) if per_cpu_task else None,
            added([p.per_cpu for p in parts]),
        )


def summary(model: TaskStatesOf) -> dict[str, Any]:
    """The task states of ``model`` (a :class:`schedwake.model.Model`) for the reports:
    ``tasks`` (the tasks of ``model.pids``, else every task; most running first), each
    with its seconds in every state (:data:`TOTAL_COLUMNS`, to the ns: they add up to
    ``observed_s``) and the same per CPU; ``classes`` (:data:`CLASSES`: tasks, seconds,
    ``runnable_share``) and ``cpus`` (seconds of the tasks on each CPU)."""
    return summary_of(state_sums(model), names_of(model))


def state_sums(model: TaskStatesOf) -> StateSums:
    """:meth:`StateSums.of` the task states of the tasks ``model`` is focused on
    (:func:`focused`), once per model: the summary and the classes' runnable shares
    (:func:`runnable_shares`) both read them."""
    if model.memo.state_sums is None:
        model.memo.state_sums = model.task_state_sums.of_pids(model.pids)
    sums: StateSums = model.memo.state_sums
    return sums


def runnable_shares(model: TaskStatesOf) -> dict[str, float | None]:
    """:func:`totals_shares` of the task states of the tasks ``model`` is focused on,
    from their sums per task (:func:`state_sums`, summed once with the summary's)."""
    return totals_shares(seconds(state_sums(model).per_task), names_of(model))


def focused(model: TaskStatesOf, iv: pd.DataFrame) -> pd.DataFrame:
    """The intervals of ``iv`` of the tasks ``model`` is focused on (``model.pids``;
    all when None)."""
    if model.pids is not None:
        iv = iv[np.isin(iv["pid"].to_numpy(), list(model.pids))]
    return iv


def summary_of(by_state: StateSums, names: dict[int, str]) -> dict[str, Any]:
    """:func:`summary` from the sums of the intervals and the tasks' names: the tasks'
    rows from NumPy columns (:class:`TaskRows`: made into dicts only when read)."""
    per_task = seconds(by_state.per_task)
    per_cpu = seconds(by_state.per_cpu)

    def secs(row: pd.Series) -> dict[str, float]:
        return {k: round(float(row[k]), 9) for k in TOTAL_COLUMNS}

    keys = per_task.index.to_numpy(dtype=np.int64)
    pids = pid_of(keys).tolist()
    comms = list(map(names.get, keys.tolist(), repeat("", len(keys))))
    classes = _classes(comms, pids)
    order = _most_running_first(per_task["running_s"].to_numpy())
    tasks_out = TaskRows(
        [pids[i] for i in order],
        [comms[i] for i in order],
        [classes[i] for i in order],
        _rounded(per_task.to_numpy()[order]),
        *_cpu_rows(by_state.per_cpu_task, keys[order]),
    )
    classes_out = []
    cls = np.array(classes, dtype=object)
    for c in CLASSES:
        sel = per_task[cls == c] if len(per_task) else per_task
        if len(sel) == 0:
            continue
        sums = sel.sum()
        busy = float(sums["running_s"] + sums["runnable_s"])
        classes_out.append(
            {
                "class": c,
                "tasks": int(len(sel)),
                **secs(sums),
                "runnable_share": round(float(sums["runnable_s"]) / busy, 6) if busy else None,
            }
        )
    cpus_out = [
        {"cpu": None if cpu < 0 else int(cpu), **secs(row)} for cpu, row in per_cpu.iterrows()
    ]
    return {"tasks": tasks_out, "classes": classes_out, "cpus": cpus_out}


def _most_running_first(running: np.ndarray) -> list[int]:
    """The positions of ``running`` from the largest down, ties in their order: what
    ``sort_values(ascending=False, kind="stable")`` gives (its own steps: the values
    reversed, sorted stably, the order reversed back)."""
    back = np.arange(len(running))[::-1]
    return back[np.argsort(running[::-1], kind="stable")][::-1].tolist()


def _rounded(values: np.ndarray) -> np.ndarray:
    """The seconds of every row of ``values`` (:data:`TOTAL_COLUMNS`), each rounded to
    the ns (``round(v, 9)``; one pass, not a row lookup per task)."""
    values = np.array(values, dtype=np.float64)
    # a whole number of ns over 1e9 (below 2**20 s: its ulp is under half a ns) is
    # its own round(v, 9): only the other values go through round()
    exact = (np.rint(values * 1e9) / 1e9 == values) & (np.abs(values) < 2.0**20)
    for r in np.flatnonzero(~exact.all(axis=1)).tolist():
        values[r] = [round(v, 9) for v in values[r].tolist()]
    return values


def _cpu_rows(
    per_cpu_task: pd.DataFrame | None, keys: np.ndarray
) -> tuple[list[int | None], np.ndarray, list[int]]:
    """The per-CPU rows of the tasks ``keys`` (in that order; ns per state, by (task,
    CPU)): each row's CPU (None: not known) and seconds, and each task's number of
    rows; a task's rows in CPU order, as the sums give them."""
    if per_cpu_task is None or not len(per_cpu_task):
        return [], np.zeros((0, len(TOTAL_COLUMNS))), [0] * len(keys)
    index = per_cpu_task.index
    task = index.get_level_values(0).to_numpy(dtype=np.int64)
    cpu = index.get_level_values(1).to_numpy(dtype=np.int64)
    by_task = stable_order(task)  # (the sums' rows are in (task, CPU) order already)
    task = task[by_task]
    lo = np.searchsorted(task, keys, "left")
    counts = np.asarray(np.searchsorted(task, keys, "right") - lo, dtype=np.int64)
    first = np.cumsum(counts) - counts
    rows = by_task[np.repeat(lo - first, counts) + np.arange(int(counts.sum()))]
    cpus: list[int | None] = [None if c < 0 else c for c in cpu[rows].tolist()]
    return cpus, _rounded(seconds(per_cpu_task).to_numpy()[rows]), counts.tolist()


class TaskRows(Sequence[dict[str, Any]]):
    """The tasks of a :func:`summary` (``tasks``), most running first, kept as columns:
    each task's ``pid``, ``comm``, ``class`` and seconds (:data:`TOTAL_COLUMNS`), and
    its rows per CPU (``cpus``: ``cpu`` and seconds), one after another in the tasks'
    order. Read, it is the list of the tasks' dicts (made once, on first use); the JSON
    writer (:mod:`schedwake.jsonout`) writes its text from the columns instead
    (:meth:`__json_indented__`: the same bytes, no dict a task)."""

    def __init__(
        self,
        pids: list[int],
        comms: list[str],
        classes: list[str | None],
        values: np.ndarray,
        cpus: list[int | None],
        cpu_values: np.ndarray,
        counts: list[int],
    ) -> None:
        self.pids, self.comms, self.classes, self.values = pids, comms, classes, values
        self.cpus, self.cpu_values, self.counts = cpus, cpu_values, counts
        self._rows: list[dict[str, Any]] | None = None

    def rows(self) -> list[dict[str, Any]]:
        """The tasks' dicts (as :func:`summary` documents them)."""
        if self._rows is None:
            out, at = [], 0
            cpu_values = self.cpu_values.tolist()
            for pid, comm, cls, vals, k in zip(
                self.pids, self.comms, self.classes, self.values.tolist(), self.counts
            ):
                cpus = [
                    {"cpu": c, **dict(zip(TOTAL_COLUMNS, v))}
                    for c, v in zip(self.cpus[at : at + k], cpu_values[at : at + k])
                ]
                at += k
                out.append(
                    {"pid": pid, "comm": comm, "class": cls, **dict(zip(TOTAL_COLUMNS, vals)),
                     "cpus": cpus}
                )  # fmt: skip
            self._rows = out
        return self._rows

    def __len__(self) -> int:
        return len(self.pids)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        return self.rows()[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TaskRows):
            other = other.rows()
        return isinstance(other, list) and self.rows() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.rows())

    def __json__(self) -> list[dict[str, Any]]:
        """What :func:`schedwake.jsonout.jsonable` makes of it: the list of dicts."""
        return self.rows()

    def __json_indented__(self, indent: str, level: int) -> str:
        """The list of dicts as :func:`schedwake.jsonout.dumps` writes it at ``level``
        (``indent`` a level), written from the columns: each value's text by the
        encoder of its type, the rows' texts joined with their keys in C (``map`` and
        ``str.join``, no Python step a row)."""
        if not self.pids:
            return "[]"
        at = [indent * (level + d) for d in range(5)]
        task_text = _dict_texts(
            at[2],
            at[1],
            [("pid", _ints(self.pids)), ("comm", list(map(_encode_str, self.comms))),
             ("class", list(map(_json_str_or_null, self.classes))),
             (TOTAL_COLUMNS[0], _seconds_texts(self.values, at[2]))],
            last_key="cpus",
        )  # fmt: skip
        cpu_text = _dict_texts(
            at[4], at[3], [("cpu", list(map(_json_int_or_null, self.cpus))),
                           (TOTAL_COLUMNS[0], _seconds_texts(self.cpu_values, at[4]))]
        )  # fmt: skip
        # each task's separator and dict text, then a separator and the text of each of
        # its CPUs' dicts (a list), then its end: one string a piece, joined once
        counts = np.asarray(self.counts, dtype=np.int64)
        n, m = len(counts), len(cpu_text)
        first = np.cumsum(counts) - counts  # each task's first CPU row
        lead_at = 3 * np.arange(n) + 2 * first
        pieces = np.empty(3 * n + 2 * m, dtype=object)
        pieces[lead_at] = ",\n" + at[1]
        pieces[0] = "[\n" + at[1]
        pieces[lead_at + 1] = _objects(task_text)
        cpu_at = np.repeat(lead_at + 2 - 2 * first, counts) + 2 * np.arange(m)
        pieces[cpu_at] = ",\n" + at[3]
        pieces[cpu_at[first[counts > 0]]] = "[\n" + at[3]
        pieces[cpu_at + 1] = _objects(cpu_text)
        close = "\n" + at[1] + "}"
        ends = np.array(["[]" + close, "\n" + at[2] + "]" + close], dtype=object)
        pieces[lead_at + 2 + 2 * counts] = ends[(counts > 0).astype(np.intp)]
        return "".join(pieces.tolist()) + "\n" + at[0] + "]"


def _objects(texts: list[str]) -> np.ndarray:
    """The strings ``texts`` as an object array (the same objects, not copied)."""
    out = np.empty(len(texts), dtype=object)
    out[:] = texts
    return out


def _dict_texts(
    inner: str, outer: str, columns: list[tuple[str, list[str]]], last_key: str | None = None
) -> list[str]:
    """Each row's dict text (JSON, indented: its items at ``inner``, its closing brace
    at ``outer``) of the ``columns`` (key, each row's value text); with ``last_key``, the
    text ends after that key's ``": "`` (its value and the brace come after)."""
    frags = []
    sep = "{\n" + inner
    for key, _ in columns:
        frags.append(sep + _encode_str(key) + ": ")
        sep = ",\n" + inner
    tail = sep + _encode_str(last_key) + ": " if last_key else "\n" + outer + "}"
    parts: list[Iterable[str]] = []
    for frag, (_, texts) in zip(frags, columns):
        parts += [repeat(frag), texts]
    return list(map("".join, zip(*parts, repeat(tail))))


def _seconds_texts(values: np.ndarray, inner: str) -> list[str]:
    """Each row's seconds (:data:`TOTAL_COLUMNS`) as the text of its dict's items from
    the first value on (``v0,\n<inner>"running_s": v1``...), as JSON writes them
    (``repr()``; not finite: null): rows of whole numbers of ns (below 10**15 ns: 15
    digits, which a float keeps) in C from their ns (``_passes.seconds_texts``), any
    other by ``repr()``."""
    v = np.asarray(values, dtype=np.float64).reshape(len(values), len(TOTAL_COLUMNS))
    if not len(v):
        return []
    with np.errstate(invalid="ignore", over="ignore"):
        k = np.rint(v * 1e9)
        whole = ((k >= 0) & (k < 1e15) & (k / 1e9 == v) & ~np.signbit(v)).all(axis=1)
    glue = tuple(",\n" + inner + _encode_str(key) + ": " for key in TOTAL_COLUMNS[1:])
    ns = np.where(whole[:, None], k, 0).astype(np.int64).ravel()
    texts = _passes.seconds_texts(ns, tuple(g.encode() for g in glue)).decode().split("\0")
    for r in np.flatnonzero(~whole).tolist():
        items = [float.__repr__(x) if math.isfinite(x) else "null" for x in v[r].tolist()]
        texts[r] = "".join(chain.from_iterable(zip(("", *glue), items)))
    return texts


def _ints(values: list[int]) -> list[str]:
    return list(map(int.__repr__, values))


def _json_int_or_null(v: int | None) -> str:
    return "null" if v is None else int.__repr__(v)


def _json_str_or_null(v: str | None) -> str:
    return "null" if v is None else _encode_str(v)


_encode_str = json.encoder.encode_basestring_ascii
