"""Synthetic traces with planted, known pathologies, for tests and demos.

:class:`Synth` writes the canonical event tables (the same Arrow schema as the real
readers) of a made-up machine, scene after scene. Between scenes every CPU is idle, so
the per-CPU switch streams stay consistent. Background scenes (irq wake-ups, user
tasks waking each other, kworkers waking tasks on their own CPU without migrating,
newly-idle load-balance pulls) are healthy by construction; the planted scenes add
exactly known numbers of:

* ``pingpong``: a bound kworker on CPU X wakes a task whose previous CPU is X and the
  task is migrated away (optionally with another task runnable on X: not stackable);
* ``roundrobin``: a user task woken alternately onto CPUs of one LLC (one change per
  wake-up);
* ``storm``: a kworker and a (pinned) task alternating on one CPU, the kworker preempted
  (``R+``) at each wake-up and the task sleeping again after a few microseconds;
* ``idle_gap``: a task woken onto a busy CPU and waiting a known time while another CPU
  of its LLC is idle.

``make_trace(...)`` returns a :class:`schedwake.Trace` plus the planted counts.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa

from .ingest import RawTrace
from .ingest.meta import TraceMeta
from .ingest.text import STATE_NEW, state_str
from .schema import COMMON_NAMES, FLAG_HARDIRQ, FLAG_SOFTIRQ, STRING, event_schema
from .topology import Topology
from .trace import Trace

_I32 = pa.int32()
_FIELDS = {
    "sched_waking": [("comm", STRING), ("pid", _I32), ("prio", _I32), ("target_cpu", _I32)],
    "sched_wakeup": [("comm", STRING), ("pid", _I32), ("prio", _I32), ("target_cpu", _I32)],
    "sched_wakeup_new": [("comm", STRING), ("pid", _I32), ("prio", _I32), ("target_cpu", _I32)],
    "sched_migrate_task": [
        ("comm", STRING),
        ("pid", _I32),
        ("prio", _I32),
        ("orig_cpu", _I32),
        ("dest_cpu", _I32),
    ],
    "sched_switch": [
        ("prev_comm", STRING),
        ("prev_pid", _I32),
        ("prev_prio", _I32),
        ("prev_state", pa.int64()),
        ("prev_state_str", STRING),
        ("next_comm", STRING),
        ("next_pid", _I32),
        ("next_prio", _I32),
    ],
    "workqueue_execute_start": [("work", pa.uint64()), ("function", STRING)],
    "workqueue_execute_end": [("work", pa.uint64()), ("function", STRING)],
    "sched_process_fork": [
        ("parent_comm", STRING),
        ("parent_pid", _I32),
        ("child_comm", STRING),
        ("child_pid", _I32),
    ],
}
# the sched_switch prev_state report bits of kernels >= 4.14 (I = TASK_REPORT_IDLE)
_STATE = {
    "R": 0,
    "R+": STATE_NEW["+"],
    "S": STATE_NEW["S"],
    "D": STATE_NEW["D"],
    "I": STATE_NEW["I"],
    "X": STATE_NEW["X"],
}
US = 1000


class Synth:
    """Builder of one synthetic trace. Times are ns; every scene starts at the cursor."""

    def __init__(self, topology: Topology, seed: int = 1, start_ns: int = 100_000_000_000):
        self.topo = topology
        self.cpus = topology.cpus
        self.rng = np.random.default_rng(seed)
        self.t = start_ns
        self.first = start_ns
        self.rows: dict[str, list[dict]] = defaultdict(list)
        self.names: dict[int, str] = {0: "<idle>"}
        self.planted: defaultdict[str, int] = defaultdict(int)
        self._next_pid = 1000
        self._work = 0xFFFF888100000000
        self.cpu_of: dict[int, int] = {}  # last CPU each task ran on
        # a few fixed tasks
        self.kworker = {c: self.task(f"kworker/{c}:1", pid=100 + c) for c in range(self.cpus)}
        self.ksoftirqd = {c: self.task(f"ksoftirqd/{c}", pid=200 + c) for c in range(self.cpus)}

    # -- primitives ------------------------------------------------------------------------
    def task(self, comm: str, pid: int | None = None, cpu: int | None = None) -> int:
        if pid is None:
            pid = self._next_pid
            self._next_pid += 1
        self.names[pid] = comm
        if cpu is not None:
            self.cpu_of[pid] = cpu
        return pid

    def _emit(self, name, ts, cpu, cur, flags=0, **fields):
        self.rows[name].append(
            dict(
                ts=int(ts),
                cpu=cpu,
                common_pid=cur,
                common_comm=self.names[cur],
                common_flags=flags,
                common_preempt_count=0,
                **fields,
            )
        )

    def switch(self, ts, cpu, prev, state, nxt):
        self._emit(
            "sched_switch",
            ts,
            cpu,
            prev,
            prev_comm=self.names[prev] if prev else f"swapper/{cpu}",
            prev_pid=prev,
            prev_prio=120,
            prev_state=_STATE[state],
            prev_state_str=state,
            next_comm=self.names[nxt] if nxt else f"swapper/{cpu}",
            next_pid=nxt,
            next_prio=120,
        )
        if nxt:
            self.cpu_of[nxt] = cpu

    def waking(self, ts, cpu, waker, pid, prev_cpu, flags=0):
        self._emit(
            "sched_waking",
            ts,
            cpu,
            waker,
            flags,
            comm=self.names[pid],
            pid=pid,
            prio=120,
            target_cpu=prev_cpu,
        )

    def wakeup(self, ts, cpu, cur, pid, chosen, flags=0):
        self._emit(
            "sched_wakeup",
            ts,
            cpu,
            cur,
            flags,
            comm=self.names[pid],
            pid=pid,
            prio=120,
            target_cpu=chosen,
        )

    def fork(self, ts, cpu, parent, child):
        self._emit(
            "sched_process_fork",
            ts,
            cpu,
            parent,
            parent_comm=self.names[parent],
            parent_pid=parent,
            child_comm=self.names[child],
            child_pid=child,
        )

    def wakeup_new(self, ts, cpu, cur, pid, chosen):
        self._emit(
            "sched_wakeup_new",
            ts,
            cpu,
            cur,
            comm=self.names[pid],
            pid=pid,
            prio=120,
            target_cpu=chosen,
        )

    def migrate(self, ts, cpu, cur, pid, orig, dest, flags=0):
        self._emit(
            "sched_migrate_task",
            ts,
            cpu,
            cur,
            flags,
            comm=self.names[pid],
            pid=pid,
            prio=120,
            orig_cpu=orig,
            dest_cpu=dest,
        )

    def work(self, ts_start, ts_end, cpu, kw, fn):
        self._work += 0x40
        self._emit("workqueue_execute_start", ts_start, cpu, kw, work=self._work, function=fn)
        self._emit("workqueue_execute_end", ts_end, cpu, kw, work=self._work, function=fn)

    def settle(self):
        """A first switch on every CPU (ksoftirqd runs briefly), so every CPU's state is
        known from the start."""
        for c in range(self.cpus):
            self.switch(self.t, c, 0, "R", self.ksoftirqd[c])
            self.switch(self.t + 1 * US, c, self.ksoftirqd[c], "S", 0)
        self.t += 10 * US

    def gap(self, ns=None):
        """Idle time between scenes (all CPUs idle)."""
        self.t += int(ns if ns is not None else self.rng.integers(20, 200) * US)

    def other_cpu(self, cpu, same_llc=True) -> int:
        llc = self.topo.llc_of([cpu])[0]
        cands = [
            c
            for c in range(self.cpus)
            if c != cpu and (self.topo.llc_of([c])[0] == llc) == same_llc
        ]
        return int(self.rng.choice(cands))

    # -- healthy background scenes ---------------------------------------------------------
    def bg_irq_wakeup(self, pid, cpu):
        """An interrupt on idle ``cpu`` wakes ``pid`` (last ran there); it runs and sleeps."""
        t = self.t
        self.waking(t, cpu, 0, pid, cpu, flags=FLAG_HARDIRQ)
        self.wakeup(t + 2 * US, cpu, 0, pid, cpu, flags=FLAG_HARDIRQ)
        self.switch(t + 5 * US, cpu, 0, "R", pid)
        self.switch(t + 200 * US, cpu, pid, "S", 0)
        self.t = t + 210 * US

    def bg_softirq_wakeup(self, pid, cpu):
        """ksoftirqd-less softirq wake-up of a kworker on idle ``cpu``."""
        t = self.t
        self.waking(t, cpu, 0, pid, cpu, flags=FLAG_SOFTIRQ)
        self.wakeup(t + 1 * US, cpu, 0, pid, cpu, flags=FLAG_SOFTIRQ)
        self.switch(t + 3 * US, cpu, 0, "R", pid)
        self.switch(t + 150 * US, cpu, pid, "I", 0)
        self.t = t + 160 * US

    def bg_user_pair(self, a, b, cpu_a, cpu_b):
        """User task a (on cpu_a) wakes b (last on cpu_b, idle): b runs there."""
        t = self.t
        self.switch(t, cpu_a, 0, "R", a)
        self.waking(t + 20 * US, cpu_a, a, b, cpu_b)
        self.wakeup(t + 30 * US, cpu_b, 0, b, cpu_b)  # queued remote wake-up on b's CPU
        self.switch(t + 35 * US, cpu_b, 0, "R", b)
        self.switch(t + 60 * US, cpu_a, a, "S", 0)
        self.switch(t + 300 * US, cpu_b, b, "S", 0)
        self.t = t + 310 * US

    def bg_kworker_local(self, pid, cpu, fn="xfs_end_io"):
        """A bound kworker on ``cpu`` wakes ``pid`` (last ran on cpu), finishes, and the
        task runs there: no migration, no preemption."""
        kw = self.kworker[cpu]
        t = self.t
        self.switch(t, cpu, 0, "R", kw)
        self.work(t + 2 * US, t + 30 * US, cpu, kw, fn)
        # woken at the end of the work item: the task is switched in at once
        self.waking(t + 29 * US, cpu, kw, pid, cpu)
        self.wakeup(t + 30 * US, cpu, kw, pid, cpu)
        self.switch(t + 30 * US, cpu, kw, "I", pid)
        self.switch(t + 400 * US, cpu, pid, "S", 0)
        self.t = t + 410 * US

    def bg_load_balance(self, pid, src, dst, hog):
        """``hog`` runs on src; ``pid`` is preempted there; idle ``dst`` pulls it."""
        t = self.t
        self.switch(t, src, 0, "R", pid)
        self.switch(t + 50 * US, src, pid, "R+", hog)
        # newly idle balance on dst: the event fires on dst in the idle task's context
        self.migrate(t + 50 * US, dst, 0, pid, src, dst)
        self.switch(t + 52 * US, dst, 0, "R", pid)
        self.switch(t + 250 * US, dst, pid, "S", 0)
        self.switch(t + 300 * US, src, hog, "S", 0)
        self.planted["load_balance"] += 1
        self.t = t + 310 * US

    # -- planted pathologies ---------------------------------------------------------------
    def pingpong(self, pid, cpu, fn="xlog_ioend_work", busy_with=None):
        """Bound kworker on ``cpu`` wakes ``pid`` (previous CPU ``cpu``) and the task is
        migrated to an idle CPU of the LLC. With ``busy_with``: that task is preempted
        on ``cpu`` by the kworker first, so it is runnable there (not stackable)."""
        kw = self.kworker[cpu]
        dst = self.other_cpu(cpu)
        t = self.t
        if busy_with is not None:
            self.switch(t, cpu, 0, "R", busy_with)
            self.switch(t + 5 * US, cpu, busy_with, "R+", kw)
        else:
            self.switch(t + 5 * US, cpu, 0, "R", kw)
        self.work(t + 6 * US, t + 40 * US, cpu, kw, fn)
        self.waking(t + 10 * US, cpu, kw, pid, cpu)
        self.migrate(t + 11 * US, cpu, kw, pid, cpu, dst)
        self.wakeup(t + 20 * US, dst, 0, pid, dst)
        self.switch(t + 22 * US, dst, 0, "R", pid)
        self.switch(t + 200 * US, dst, pid, "S", 0)
        if busy_with is not None:
            self.switch(t + 42 * US, cpu, kw, "I", busy_with)
            self.switch(t + 100 * US, cpu, busy_with, "S", 0)
            self.planted["pingpong_not_stackable"] += 1
        else:
            self.switch(t + 42 * US, cpu, kw, "I", 0)
            self.planted["pingpong_stackable"] += 1
        self.planted["pingpong"] += 1
        self.t = t + 210 * US

    def roundrobin(self, pid, waker, waker_cpu):
        """User ``waker`` on ``waker_cpu`` wakes ``pid``, which is moved from its last CPU
        to another CPU of the same LLC (an idle one): one in-LLC change."""
        prev = self.cpu_of[pid]
        if waker_cpu == prev:
            waker_cpu = next(c for c in range(self.cpus) if c != prev)
        cands = [
            c
            for c in range(self.cpus)
            if c not in (prev, waker_cpu)
            and self.topo.llc_of([c])[0] == self.topo.llc_of([prev])[0]
        ]
        dst = int(self.rng.choice(cands))
        t = self.t
        self.switch(t, waker_cpu, 0, "R", waker)
        self.waking(t + 10 * US, waker_cpu, waker, pid, prev)
        self.migrate(t + 11 * US, waker_cpu, waker, pid, prev, dst)
        self.wakeup(t + 20 * US, dst, 0, pid, dst)
        self.switch(t + 22 * US, dst, 0, "R", pid)
        self.switch(t + 40 * US, waker_cpu, waker, "S", 0)
        self.switch(t + 300 * US, dst, pid, "S", 0)
        self.planted["roundrobin_changes"] += 1
        self.t = t + 310 * US

    def storm(self, pid, cpu, cycles, fn="iomap_dio_complete_work"):
        """``cycles`` times: the kworker on ``cpu`` wakes ``pid``, is preempted (R+),
        the task runs 8 us and sleeps, the kworker resumes."""
        kw = self.kworker[cpu]
        t = self.t
        self.switch(t, cpu, 0, "R", kw)
        t += 5 * US
        for _ in range(cycles):
            self.work(t, t + 3 * US, cpu, kw, fn)
            self.waking(t + 1 * US, cpu, kw, pid, cpu)
            self.wakeup(t + 2 * US, cpu, kw, pid, cpu)
            self.switch(t + 4 * US, cpu, kw, "R+", pid)
            self.switch(t + 12 * US, cpu, pid, "S", kw)
            t += 20 * US
        self.switch(t, cpu, kw, "I", 0)
        self.planted["storm_preemptions"] += cycles
        self.planted["storm_futile"] += cycles
        self.planted["storm_switches"] += 2 * cycles
        self.t = t + 10 * US

    def idle_gap(self, pid, waker, hog, cpu, wait_ns):
        """``hog`` runs on ``cpu``; ``waker`` (on another CPU) wakes ``pid`` onto ``cpu``
        (its previous CPU) where it waits ``wait_ns`` while the rest of the LLC is idle."""
        wcpu = self.other_cpu(cpu)
        self.cpu_of[pid] = cpu
        t = self.t
        self.switch(t, cpu, 0, "R", hog)
        self.switch(t + 5 * US, wcpu, 0, "R", waker)
        self.waking(t + 10 * US, wcpu, waker, pid, cpu)
        self.wakeup(t + 12 * US, cpu, hog, pid, cpu)  # ttwu on the target CPU (IPI)
        self.switch(t + 14 * US, wcpu, waker, "S", 0)
        t_run = t + 12 * US + wait_ns
        self.switch(t_run, cpu, hog, "R+", pid)
        self.switch(t_run + 50 * US, cpu, pid, "S", hog)
        self.switch(t_run + 60 * US, cpu, hog, "S", 0)
        self.planted["idle_gap_ns"] += int(wait_ns)
        self.planted["idle_gaps"] += 1
        self.t = t_run + 70 * US

    # -- result ------------------------------------------------------------------------------
    def build(self, name="synthetic") -> Trace:
        tables = {}
        for ev, fields in _FIELDS.items():
            rows = sorted(self.rows.get(ev, []), key=lambda r: r["ts"])
            schema = event_schema([pa.field(n, t) for n, t in fields])
            cols = {}
            for f in schema:
                vals = [r.get(f.name) for r in rows]
                if pa.types.is_dictionary(f.type):
                    cols[f.name] = pa.array(vals, pa.string()).dictionary_encode()
                else:
                    cols[f.name] = pa.array(vals, f.type)
            tables[ev] = pa.table(cols, schema=schema)
        all_ts = [r["ts"] for rows in self.rows.values() for r in rows]
        meta = TraceMeta(
            path=f"<{name}>",
            format="synthetic",
            cpus=self.cpus,
            clock="local",
            first_ts_ns=min(all_ts + [self.first]),
            last_ts_ns=max(all_ts + [self.t]),
            kernel=None,
            lost_events={},
            lost_unknown=(),
            event_counts={k: t.num_rows for k, t in tables.items()},
            systems={k: ("workqueue" if k.startswith("workqueue") else "sched") for k in tables},
            warnings=(),
            source={"synthetic": True},
        )
        trace = Trace(RawTrace(tables=tables, meta=meta))
        trace.topology = self.topo
        return trace


def default_topology() -> Topology:
    """8 CPUs in 2 LLCs of 4, SMT pairs, one NUMA node."""
    return Topology(
        cpus=8,
        llc=[[0, 1, 2, 3], [4, 5, 6, 7]],
        smt=[[0, 1], [2, 3], [4, 5], [6, 7]],
        numa=[list(range(8))],
        source="synthetic",
    )


def make_trace(
    pingpong=0,
    pingpong_busy=0,
    roundrobin=0,
    storm=0,
    idle_gaps=0,
    background=400,
    topology: Topology | None = None,
    seed: int = 1,
    duration_s: float | None = None,
):
    """A synthetic trace: ``background`` healthy scenes with the planted scenes mixed in.

    Returns ``(trace, planted)``; ``planted`` holds the exact counts planted.
    ``duration_s`` stretches the idle time between scenes to reach that length.
    """
    topo = topology or default_topology()
    s = Synth(topo, seed=seed)
    rng = s.rng
    n = topo.cpus
    users = [s.task(f"worker{i}", cpu=i % n) for i in range(2 * n)]
    kthreads = [s.task(f"kworker/u{2 * n}:{i}", cpu=i % n) for i in range(3)]
    rr = s.task("rr-client", cpu=0)
    rr_waker = s.task("rr-server", cpu=n - 1)
    st = s.task("fio", cpu=1)
    gap_task = s.task("gapper", cpu=0)
    gap_waker = s.task("gap-waker", cpu=0)
    hog = s.task("hog", cpu=0)
    s.settle()
    scenes = (
        ["bg"] * background
        + ["pp"] * pingpong
        + ["ppb"] * pingpong_busy
        + ["rr"] * roundrobin
        + ["gap"] * idle_gaps
    )
    order = rng.permutation(len(scenes))
    storm_at = int(rng.integers(0, len(scenes) + 1)) if storm else -1
    spacing = None
    if duration_s:
        spacing = max(int(duration_s * 1e9 / max(len(scenes) + 1, 1)) - 400 * US, 20 * US)
    for k, i in enumerate(order):
        if k == storm_at:
            s.storm(st, 1, storm)
            s.gap(spacing)
        kind = scenes[i]
        if kind == "bg":
            r = int(rng.integers(0, 5))
            u = users[int(rng.integers(0, len(users)))]
            cpu = s.cpu_of[u]
            if r == 0:
                s.bg_irq_wakeup(u, cpu)
            elif r == 1:
                kt = kthreads[int(rng.integers(0, len(kthreads)))]
                s.bg_softirq_wakeup(kt, s.cpu_of[kt])
            elif r == 2:
                v = users[int(rng.integers(0, len(users)))]
                if v != u and s.cpu_of[v] != cpu:
                    s.bg_user_pair(u, v, cpu, s.cpu_of[v])
                else:
                    s.bg_irq_wakeup(u, cpu)
            elif r == 3:
                s.bg_kworker_local(u, cpu)
            else:
                v = users[int(rng.integers(0, len(users)))]
                dst = s.other_cpu(cpu)
                if v != u:
                    s.bg_load_balance(u, cpu, dst, v)
                else:
                    s.bg_irq_wakeup(u, cpu)
        elif kind in ("pp", "ppb"):
            u = users[int(rng.integers(0, len(users)))]
            other = users[(users.index(u) + 1) % len(users)]
            s.pingpong(u, s.cpu_of[u], busy_with=other if kind == "ppb" else None)
        elif kind == "rr":
            s.roundrobin(rr, rr_waker, s.cpu_of[rr_waker])
        elif kind == "gap":
            cpu = int(rng.integers(0, n))
            s.idle_gap(gap_task, gap_waker, hog, cpu, int(rng.integers(200, 2000)) * US)
        s.gap(spacing)
    if storm_at == len(scenes):
        s.storm(st, 1, storm)
        s.gap(spacing)
    return s.build(), dict(s.planted)


# -- raw ftrace text ---------------------------------------------------------------------------
#
# The kernel's own ``trace`` file (kernel/trace/trace.c, trace_output.c and the events'
# TP_printk formats, 6.x): written from the canonical tables so that synthetic traces can
# be checked end to end through the text reader, as real raw text would be.

_FTRACE_HEADER = """\
# tracer: nop
#
# entries-in-buffer/entries-written: {entries}/{entries}   #P:{cpus}
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
"""


def _state_text(value, text) -> str:
    """``prev_state`` as sched_switch's TP_printk prints it. The decoded string is the
    truth where there is one (the readers decode it with the event's own format); a
    bare value is decoded with the >= 4.14 table."""
    return text if text is not None else state_str(int(value or 0), STATE_NEW)


def _latency_field(flags, pc) -> str:
    """The five latency characters of trace_print_lat_fmt() (6.x; 6.13+ lazy bits)."""
    f = int(flags or 0)
    pc = int(pc or 0)
    irqs_off, bh_off = f & 0x01, f & 0x80
    c1 = "D" if irqs_off and bh_off else "d" if irqs_off else "b" if bh_off else "."
    c2 = {0x24: "N", 0x04: "n", 0x20: "p", 0x26: "B", 0x22: "L", 0x06: "b", 0x02: "l"}.get(
        f & 0x26, "."
    )
    nmi, hard, soft = f & 0x40, f & 0x08, f & 0x10
    c3 = (
        "Z"
        if nmi and hard
        else "z"
        if nmi
        else "H"
        if hard and soft
        else "h"
        if hard
        else "s"
        if soft
        else "."
    )
    c4 = f"{pc & 0xF:x}" if pc & 0xF else "."
    c5 = f"{pc >> 4:x}" if pc & 0xF0 else "."
    return c1 + c2 + c3 + c4 + c5


def _ptr(v) -> str:
    """A ``%p`` pointer: 16 hex digits (the kernel hashes it unless no_hash_pointers;
    here the stored value is printed, as with no_hash_pointers)."""
    return f"{int(v):016x}" if not isinstance(v, str) else v


def _wake_args(r):
    return f"comm={r['comm']} pid={r['pid']} prio={r['prio']} target_cpu={r['target_cpu']:03d}"


def _exit_args(r):
    s = f"comm={r['comm']} pid={r['pid']} prio={r['prio']}"
    if "group_dead" in r:
        s += " group_dead=" + ("true" if r["group_dead"] else "false")
    return s


def _wq_args(r):
    if "function" not in r:
        return f"work struct {_ptr(r['work'])}"
    return f"work struct {_ptr(r['work'])}: function {r['function']}"


def _activate_args(r):
    if "function" not in r:
        return f"work struct {_ptr(r['work'])}"
    return f"work struct {_ptr(r['work'])} function={r['function']} "  # sic: trailing blank


#: Event name -> TP_printk of its arguments (kernel 6.x), from one row as a dict.
FTRACE_PRINTERS = {
    "sched_waking": _wake_args,
    "sched_wakeup": _wake_args,
    "sched_wakeup_new": _wake_args,
    "sched_migrate_task": lambda r: (
        f"comm={r['comm']} pid={r['pid']} prio={r['prio']} "
        f"orig_cpu={r['orig_cpu']} dest_cpu={r['dest_cpu']}"
    ),
    "sched_switch": lambda r: (
        f"prev_comm={r['prev_comm']} prev_pid={r['prev_pid']} prev_prio={r['prev_prio']} "
        f"prev_state={_state_text(r['prev_state'], r.get('prev_state_str'))} ==> "
        f"next_comm={r['next_comm']} next_pid={r['next_pid']} next_prio={r['next_prio']}"
    ),
    "sched_process_fork": lambda r: (
        f"comm={r['parent_comm']} pid={r['parent_pid']} "
        f"child_comm={r['child_comm']} child_pid={r['child_pid']}"
    ),
    "sched_process_exit": _exit_args,
    "workqueue_queue_work": lambda r: (
        f"work struct={_ptr(r['work'])} function={r['function']} "
        f"workqueue={_ptr(r['workqueue'])} req_cpu={r['req_cpu']} cpu={r['field_cpu']}"
    ),
    "workqueue_activate_work": _activate_args,
    "workqueue_execute_start": _wq_args,
    "workqueue_execute_end": _wq_args,
    # ftrace:print (trace_marker): the kernel prints "<ip symbol>: <buf>" and no event name
    "print": lambda r: f"{r['ip']}: {r['buf'].removesuffix(chr(10))}",
}

# tie-break for events of one CPU with the same timestamp (the ring buffer's order is
# not in the tables): the order in which one wake-up or context switch emits them
_TIE_RANK = {
    name: i
    for i, name in enumerate(
        [
            "print",
            "sched_process_fork",
            "sched_wakeup_new",
            "workqueue_queue_work",
            "workqueue_activate_work",
            "workqueue_execute_start",
            "sched_waking",
            "sched_migrate_task",
            "sched_wakeup",
            "workqueue_execute_end",
            "sched_process_exit",
            "sched_switch",
        ]
    )
}


def format_ftrace_lines(trace: Trace, events=None) -> tuple[list[bytes], int]:
    """The event lines of ``trace`` as the kernel's ``trace`` file prints them, in the
    file's order, plus the number of events among them (the rest are lost-event lines).

    ``events``: the event names to print (default: every table of the trace); an event
    without a printer in :data:`FTRACE_PRINTERS` is a ValueError."""
    names = list(trace.events) if events is None else [e.split(":")[-1] for e in events]
    unknown = [n for n in names if n not in FTRACE_PRINTERS]
    if unknown:
        raise ValueError(
            f"no ftrace print format for {', '.join(unknown)} (printable: "
            f"{', '.join(sorted(FTRACE_PRINTERS))}); pass events=[...]"
        )
    lines: list[bytes] = []
    keys_ts, keys_cpu = [], []
    lat_cache: dict = {}
    # (tables in tie rank order, so a line's index is its tie-break on equal ts and CPU)
    for name in sorted(names, key=_TIE_RANK.__getitem__):
        table = trace.table(name)
        if table.num_rows == 0:
            continue
        printer = FTRACE_PRINTERS[name]
        label = "" if name == "print" else f"{name}: "
        cols = {c: table.column(c).to_pylist() for c in table.schema.names}
        fields = [c for c in table.schema.names if c not in COMMON_NAMES]
        for i in range(table.num_rows):
            pid = cols["common_pid"][i]
            comm = "<idle>" if pid == 0 else (cols["common_comm"][i] or "<...>")
            lat_key = (cols["common_flags"][i], cols["common_preempt_count"][i])
            lat = lat_cache.get(lat_key)
            if lat is None:
                lat = lat_cache[lat_key] = _latency_field(*lat_key)
            us = (cols["ts"][i] + 500) // 1000  # ns2usecs(): rounded
            row = {f: cols[f][i] for f in fields}
            lines.append(
                f"{comm:>16}-{pid:<7d} [{cols['cpu'][i]:03d}] {lat} "
                f"{us // 1_000_000:5d}.{us % 1_000_000:06d}: {label}"
                f"{printer(row)}\n".encode()
            )
        keys_ts.append(np.asarray(cols["ts"], dtype=np.int64))
        keys_cpu.append(np.asarray(cols["cpu"], dtype=np.int64))
    nevents = len(lines)
    if not nevents:
        return [], 0
    ts, cpu = np.concatenate(keys_ts), np.concatenate(keys_cpu)
    # the kernel merges the per-CPU buffers by timestamp, the lowest CPU first on ties
    order = np.lexsort((np.arange(nevents), cpu, ts))
    out = [lines[i] for i in order]
    # lost events: "CPU:N [LOST M EVENTS]" before the next event of that CPU
    lost = trace.lost
    if lost is not None and lost.num_rows:
        sorted_ts, sorted_cpu = ts[order], cpu[order]
        inserts = []
        for lts, lcpu, count in zip(
            lost.column("ts").to_pylist(),
            lost.column("cpu").to_pylist(),
            lost.column("count").to_pylist(),
        ):
            after = np.flatnonzero((sorted_cpu == lcpu) & (sorted_ts >= lts))
            at = int(after[0]) if len(after) else len(out)
            text = (
                f"CPU:{lcpu} [LOST EVENTS]\n"
                if count < 0
                else f"CPU:{lcpu} [LOST {count} EVENTS]\n"
            )
            inserts.append((at, text.encode()))
        for at, line in sorted(inserts, key=lambda x: x[0], reverse=True):
            out.insert(at, line)
    return out, nevents


def write_ftrace_text(trace: Trace, path, events=None) -> int:
    """Write ``trace`` as raw ftrace text, the kernel's tracefs ``trace`` file format
    (``# tracer: nop`` header with the latency-column legend, then one line per event,
    ``comm-pid [cpu] flags secs.usecs: event: args`` with the events' own print
    formats, all CPUs merged in time order); gzip-compressed (reproducibly: no name,
    mtime 0) when ``path`` ends with ``.gz``. Returns the number of events written.

    ``events``: the events to write (default: every table); see :data:`FTRACE_PRINTERS`.

    ``schedwake.load(path)`` reads the file back through the text reader into the same
    tables, except for what raw ftrace text cannot carry:

    * timestamps have microsecond precision (rounded like the kernel's ns2usecs());
    * ``prev_state`` is printed as its letters (``prev_state_str``) and read back as
      the >= 4.14 report bits (``I`` = 0x80, ``R+`` = 0x100), whatever value the
      table held;
    * pointers (``work``) are printed as stored, as with ``no_hash_pointers`` (a real
      kernel prints hashed values);
    * the prefix comm is ``common_comm``, ``<idle>`` for pid 0 (the kernel's
      saved-cmdlines lookup); null latency flags are printed as ``.`` and read back as 0;
    * an event without rows prints nothing, so it has no table when read back;
    * rows of one event with equal timestamps on different CPUs come back in CPU order
      (the kernel's merge order); on one CPU, equal timestamps of different events are
      printed in wake-up/switch order (:data:`_TIE_RANK`), the ring-buffer order being
      unknown to the tables;
    * metadata: the file says the CPU count (``#P:``), not the clock, kernel or
      topology; lost events are written as the kernel's ``CPU:N [LOST M EVENTS]``
      lines before the CPU's next event.
    """
    import contextlib
    import gzip
    from pathlib import Path

    lines, nevents = format_ftrace_lines(trace, events)
    cpus = trace.meta.cpus or 1 + max(
        (
            int(trace.table(n).column("cpu").to_numpy().max())
            for n in trace.events
            if trace.table(n).num_rows
        ),
        default=0,
    )
    header = _FTRACE_HEADER.format(entries=nevents, cpus=cpus).encode()
    path = Path(path)
    with (
        open(path, "wb") as raw,
        (
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9)
            if path.name.endswith(".gz")
            else contextlib.nullcontext(raw)
        ) as f,
    ):
        f.write(header)
        f.writelines(lines)
    return nevents
