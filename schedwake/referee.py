"""The kernel's own counters as referee: what the trace says against what the kernel
counted over the same stretch (docs/counters.md).

``schedwake record`` saves the counters at the start and the stop of a recording beside
the trace (:mod:`schedwake.counters`) and marks both snapshots in the trace. :func:`judge`
finds that stretch in the trace and makes one :class:`Check` per comparison:

``busy``
    per CPU (and all CPUs together): the seconds a task ran. The kernel: the time
    between its two readings less the idle and iowait time it measured
    (``/proc/timer_list``, to the ns, else ``/proc/stat``, to 1/USER_HZ). The trace:
    :meth:`schedwake.model.Model.cpu_time`, proven busy time up to proven busy plus
    what the trace does not show.
``switches``
    per CPU: the run queue's ``nr_switches`` (sched debug file) against the
    ``sched_switch`` events; all CPUs: ``/proc/stat``'s ``ctxt``. Every context switch
    increments ``nr_switches`` and fires ``sched_switch`` in the same place of
    ``__schedule()``: the counts are of one thing.
``ctxt_vs_nr_switches``
    the counters alone: ``ctxt`` against the sum of the CPUs' ``nr_switches``.
``fair_run_time``
    per task with ``sched_stat_runtime`` events (``record --runtime``): the run time
    the kernel accounted to it (``update_curr()``) against the time the trace shows it
    running, and the sum over those tasks.
``command_cpu``, ``command_switches``
    the recorded command and its descendants (getrusage of the recorder) against their
    running time and switch-outs in the trace.
``perf_stat_*``
    a ``perf stat`` output beside the trace, when it counted over the marked stretch
    (``record --perf-stat``): context switches per CPU and in all, migrations, the
    stretch's length (``cpu-clock``).

Each check gives both figures, a tolerance and its reason, and a verdict
(:data:`VERDICTS`): ``agree`` when the kernel's figure lies within the trace's bounds
widened by the tolerance, ``disagree`` when it lies outside them, ``withheld`` when it
lies within them but the bounds are wider than the tolerance (the trace does not show
enough to give the figure); for a count the trace gives only as a least (``N or
more``: the recorded switches and one per chain break), ``agree`` when the kernel's is
within the tolerance of it, ``withheld`` above; ``cannot tell`` when a figure is
missing (a counter the kernel did not give, a marker not in the trace).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np

from .counters import Counters, PerfStat
from .errors import TraceError
from .model.lives import pid_of

VERDICTS = ("agree", "disagree", "withheld", "cannot tell")

#: The kernel's idle time (``/proc/timer_list``, ``/proc/stat``) ends when the interrupt
#: that wakes a CPU arrives; the trace shows the idle task until its switch-out. The
#: stretch from a wake-up in the idle task's context to that switch-out is in the trace
#: (added to its busy time, see :meth:`Switches.woken_idle_ns`); the rest of the way out of
#: idle (the interrupt before that wake-up, the tick restarted: timer writes, which a
#: virtual machine traps) is allowed for per idle entry: measured on the project's 2-CPU
#: VM, 5.8 us an idle entry (docs/counters.md).
IDLE_EXIT_NS = 10_000
#: ... and per idle entry whose wake-up the trace does not show (no wake-up in the idle
#: task's context before its switch-out: a trace without ``sched_wakeup``, such as
#: ``perf sched record``'s, or a CPU that records no event of its idle task), the whole way
#: out of idle may be busy time the trace does not show: this much widens the trace's
#: figure (20 us an idle entry on one of the VM's CPUs, 15.5 us on another).
IDLE_WAKE_NS = 25_000

#: A task's run time as the kernel accounts it (``sum_exec_runtime``, ``sched_stat_runtime``)
#: runs from one update of its run queue's clock to another, the trace's from switch to
#: switch: a task switched out to an idle CPU is still the trace's while the kernel
#: balances load before the switch (newidle balancing), after the clock's last update;
#: a run may start at a clock update a remote wake-up made before the switch. This much
#: per switch-in is allowed for: on the project's 2-CPU VM a task that went idle at each
#: switch-out ran 13 us (mean; 44 us at most) longer a run in the trace than in its
#: sched_stat_runtime (docs/counters.md).
SWITCH_IN_NS = 20_000

#: The trace clocks whose value the counters file gives at each snapshot, by the name a
#: trace gives its clock: ftrace's ``local`` is sched_clock(), perf's own clock (and
#: ftrace's ``perf``) local_clock(), ``mono`` CLOCK_MONOTONIC.
CLOCKS = {
    "local": "sched_clock_ns",
    "perf": "local_clock_ns",
    "mono": "monotonic_ns",
}


@dataclass(frozen=True)
class Check:
    """One comparison of the trace with the kernel's counters."""

    what: str  #: busy, switches, ctxt_vs_nr_switches, fair_run_time, perf_stat_..., command_...
    scope: str  #: "CPU 0", "all CPUs", "pid 123 (comm)", "command"
    unit: str  #: "s" or a count's noun ("switches")
    kernel: tuple[float, float] | None  #: the kernel's figure: a value, or a range
    kernel_source: str
    trace: tuple[float, float | None] | None  #: the trace's bounds (None high: unbounded)
    tolerance: float
    tolerance_why: str
    verdict: str
    note: str = ""

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kernel"] = None if self.kernel is None else list(self.kernel)
        d["trace"] = None if self.trace is None else list(self.trace)
        return d


def verdict(kernel, trace, tolerance: float) -> str:
    """The verdict of a check (see the module's docstring)."""
    if kernel is None or trace is None:
        return "cannot tell"
    lo, hi = trace
    k_lo, k_hi = kernel
    if k_hi < lo - tolerance or (hi is not None and k_lo > hi + tolerance):
        return "disagree"
    if hi is None:
        # a count the trace gives as its least (one missing switch per chain break): the
        # kernel's within the tolerance of it confirms it; above it, more are missing
        return "agree" if k_hi <= lo + tolerance else "withheld"
    if hi - lo > tolerance:
        return "withheld"
    return "agree"


def sum_bounds(bounds) -> tuple[float, float | None] | None:
    """The sum of several bounds (None if one is unknown; an unbounded high stays so)."""
    if not bounds or any(b is None for b in bounds):
        return None
    lo = float(sum(b[0] for b in bounds))
    his = [b[1] for b in bounds]
    return lo, None if any(h is None for h in his) else float(sum(his))


def _check(what, scope, unit, kernel, source, trace, tol, why, note="") -> Check:
    if kernel is not None and not isinstance(kernel, tuple):
        kernel = (float(kernel), float(kernel))
    return Check(
        what, scope, unit, kernel, source, trace, tol, why, verdict(kernel, trace, tol), note
    )


@dataclass(frozen=True)
class Window:
    """The marked stretch in the trace's clock: ``outer`` from the start snapshot's
    beginning to the stop snapshot's end, ``inner`` from the start snapshot's end to the
    stop snapshot's beginning (every counter was read between outer and inner)."""

    outer: tuple[int, int]
    inner: tuple[int, int]
    how: str  #: "markers" or "clock <name>"

    @property
    def span_s(self) -> float:
        return (self.inner[1] - self.inner[0]) / 1e9

    @property
    def slack_ns(self) -> int:
        """How long the two snapshots took: the counters' reading instants lie there."""
        return (self.inner[0] - self.outer[0]) + (self.outer[1] - self.inner[1])


def find_window(trace, c: Counters) -> tuple[Window | None, str]:
    """The stretch the counters cover: the markers' times, else the snapshots' clock
    readings on the trace's clock; (None, why) when neither is there."""
    if c.markers is not None and trace.has("print"):
        p = trace.df("print")
        text = p["buf"].astype(str).str.strip()
        ts = p["ts"].to_numpy(dtype=np.int64)
        found: dict[str, list[int]] = {}
        for label, pair in c.markers.items():
            for mark in pair:
                hit = ts[(text == mark).to_numpy()]
                found.setdefault(label, []).append(int(hit[0]) if len(hit) == 1 else -len(hit))
        bad = [
            f"{'no' if v == 0 else -v} marker {c.markers[lb][i]!r}"
            for lb, vs in found.items()
            for i, v in enumerate(vs)
            if v <= 0
        ]
        if not bad:
            s, e = found["start"], found["stop"]
            if not s[0] <= s[1] <= e[0] <= e[1]:
                return None, "the counters' markers are out of order in the trace"
            return Window((s[0], e[1]), (s[1], e[0]), "markers"), ""
        if c.start.clocks is None:
            return None, "the trace has " + ", ".join(bad)
    key = CLOCKS.get(str(trace.meta.clock))
    if key is None:
        return (
            None,
            f"no markers in the trace and its clock ({trace.meta.clock}) is not one the "
            "counters relate",
        )
    if c.start.clocks is None or c.stop.clocks is None:
        return (
            None,
            "no markers in the trace and no clock readings in the counters (no sched debug file)",
        )

    def on_trace(snap, mono: int) -> int:
        assert snap.clocks is not None
        return mono + snap.clocks[key] - snap.clocks["monotonic_ns"]

    a, b = c.start, c.stop
    outer = (on_trace(a, a.begin_monotonic_ns), on_trace(b, b.end_monotonic_ns))
    inner = (on_trace(a, a.end_monotonic_ns), on_trace(b, b.begin_monotonic_ns))
    first, last = trace.meta.first_ts_ns, trace.meta.last_ts_ns
    if first is None or last is None or outer[0] < first or outer[1] > last:
        return None, (
            "the counters' snapshots, placed on the trace's clock, are not within the "
            "trace (the counters of another recording?)"
        )
    return Window(outer, inner, f"clock {trace.meta.clock}"), ""


def _ints(trace, event: str, column: str) -> np.ndarray:
    """A column of an event table as int64 (nulls: -1)."""
    import pyarrow as pa

    col = trace.table(event).column(column).cast(pa.int64())
    return col.fill_null(-1).to_numpy().astype(np.int64, copy=False)


class Switches:
    """A trace's sched_switch events per CPU in time order (``ts``, ``prev_pid``,
    ``next_pid``), and its wake-ups in the idle task's context per CPU: read once."""

    def __init__(self, trace):
        self.by_cpu: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.woke: dict[int, np.ndarray] = {}
        if trace.has("sched_switch"):
            ts = _ints(trace, "sched_switch", "ts")
            cpu = _ints(trace, "sched_switch", "cpu")
            prev = _ints(trace, "sched_switch", "prev_pid")
            nxt = _ints(trace, "sched_switch", "next_pid")
            order = np.lexsort((ts, cpu))
            ts, cpu, prev, nxt = ts[order], cpu[order], prev[order], nxt[order]
            cuts = np.flatnonzero(np.diff(cpu)) + 1
            for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(cpu)], strict=True):
                if hi > lo:
                    self.by_cpu[int(cpu[lo])] = (ts[lo:hi], prev[lo:hi], nxt[lo:hi])
        woke_ts, woke_cpu = [], []
        for name in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
            if trace.has(name) and trace.table(name).num_rows:
                m = _ints(trace, name, "common_pid") == 0
                woke_ts.append(_ints(trace, name, "ts")[m])
                woke_cpu.append(_ints(trace, name, "cpu")[m])
        if woke_ts:
            ts, cpu = np.concatenate(woke_ts), np.concatenate(woke_cpu)
            for c in np.unique(cpu):
                self.woke[int(c)] = np.sort(ts[cpu == c])

    def woken_idle_ns(self, cpu: int, t0: int, t1: int) -> tuple[int, int]:
        """On ``cpu`` within [t0, t1): the time its idle task ran after a wake-up in its
        own context (an interrupt that woke a task: ``sched_waking``/``sched_wakeup``
        with ``common_pid`` 0), to its switch-out; only in idle stretches the switches
        prove (the idle task switched in, and switched out by the next switch). The
        kernel counts this time as busy, the trace as idle. Returns (that time, the idle
        stretches ending in [t0, t1) that had such a wake-up)."""
        if cpu not in self.by_cpu or cpu not in self.woke:
            return 0, 0
        ts, prev, nxt = self.by_cpu[cpu]
        idle = (nxt[:-1] == 0) & (prev[1:] == 0)
        start, end = ts[:-1][idle], ts[1:][idle]
        ev = self.woke[cpu]
        if not len(start) or not len(ev):
            return 0, 0
        j = np.searchsorted(ev, end, side="right") - 1
        e = ev[np.maximum(j, 0)]
        ok = (j >= 0) & (e > start)
        a = np.clip(e[ok], t0, t1)
        b = np.clip(end[ok], t0, t1)
        seen = int(((end[ok] >= t0) & (end[ok] < t1)).sum())
        return int(np.maximum(b - a, 0).sum()), seen

    def idle_entries(self, cpu: int, t0: int, t1: int) -> int:
        """Switches to the idle task on ``cpu`` within [t0, t1) that the trace shows."""
        if cpu not in self.by_cpu:
            return 0
        ts, _, nxt = self.by_cpu[cpu]
        return int(((nxt == 0) & (ts >= t0) & (ts < t1)).sum())


def _tasks(trace, event: str, column: str) -> np.ndarray:
    """A pid column of an event table as tasks: life keys (:mod:`.model.lives`, the pid
    but for a later task of a pid used again), so two tasks that shared a pid are two."""
    return trace.model.events.key(_ints(trace, event, column), _ints(trace, event, "ts"))


def switch_ins(trace, t0: int, t1: int) -> dict[int, int]:
    """Per task (life key, :mod:`.model.lives`), its switch-ins within [t0, t1) that the
    trace shows."""
    if not trace.has("sched_switch"):
        return {}
    ts = _ints(trace, "sched_switch", "ts")
    nxt = _tasks(trace, "sched_switch", "next_pid")
    m = (ts >= t0) & (ts < t1) & (nxt > 0)
    pids, n = np.unique(nxt[m], return_counts=True)
    return dict(zip(pids.tolist(), n.tolist(), strict=True))


# -- the kernel's side ------------------------------------------------------------------
def kernel_busy(c: Counters, cpu: int) -> tuple[int, int, str, int, int | None] | None:
    """The kernel's busy ns on ``cpu`` between its two readings: (busy, elapsed, source,
    resolution ns, idle entries or None); None when the counters lack it."""
    a, b = c.start.cpus.get(cpu), c.stop.cpus.get(cpu)
    if a is None or b is None:
        return None
    if (
        a.pinned
        and b.pinned
        and a.timer_now_ns is not None
        and b.timer_now_ns is not None
        and a.idle_sleeptime_ns is not None
        and b.idle_sleeptime_ns is not None
        and a.iowait_sleeptime_ns is not None
        and b.iowait_sleeptime_ns is not None
    ):
        elapsed = b.timer_now_ns - a.timer_now_ns
        idle = (b.idle_sleeptime_ns - a.idle_sleeptime_ns) + (
            b.iowait_sleeptime_ns - a.iowait_sleeptime_ns
        )
        calls = (
            None if a.idle_calls is None or b.idle_calls is None else b.idle_calls - a.idle_calls
        )
        return (
            elapsed - idle,
            elapsed,
            "/proc/timer_list idle_sleeptime + iowait_sleeptime",
            0,
            calls,
        )
    if a.stat_ns and b.stat_ns and c.user_hz:
        idle = 0
        for f in ("idle", "iowait"):
            x, y = a.stat_ns.get(f), b.stat_ns.get(f)
            if x is None or y is None:
                return None
            idle += y - x
        elapsed = b.monotonic_ns - a.monotonic_ns
        tick = 1_000_000_000 // c.user_hz
        return elapsed - idle, elapsed, "/proc/stat idle + iowait", 2 * tick, None
    return None


def kernel_switches(c: Counters, cpu: int) -> int | None:
    a, b = c.start.cpus.get(cpu), c.stop.cpus.get(cpu)
    if a is None or b is None or a.nr_switches is None or b.nr_switches is None:
        return None
    return b.nr_switches - a.nr_switches


def kernel_ctxt(c: Counters) -> tuple[int, int] | None:
    """``ctxt``'s growth between the snapshots as a range: it was read twice in each."""
    if c.start.ctxt is None or c.stop.ctxt is None:
        return None
    return c.stop.ctxt[0] - c.start.ctxt[1], c.stop.ctxt[1] - c.start.ctxt[0]


def steal_ns(c: Counters) -> int | None:
    """The time the CPUs' run-queue clocks advanced and their task clocks did not (steal
    time; irq time too with IRQ_TIME_ACCOUNTING), summed over the CPUs, between the
    snapshots: the most a task's run time can fall short of the time the trace shows it
    running. None without the sched debug clocks."""
    total = 0
    for cpu in c.cpus:
        a, b = c.start.cpus[cpu], c.stop.cpus[cpu]
        if a.clock_ns is None or b.clock_ns is None:
            return None
        if a.clock_task_ns is None or b.clock_task_ns is None:
            return None
        total += max((b.clock_ns - a.clock_ns) - (b.clock_task_ns - a.clock_task_ns), 0)
    return total


# -- the referee ------------------------------------------------------------------------
class Referee:
    """The checks of one trace against the counters beside it (see the module)."""

    def __init__(self, trace, counters: Counters | None, perf_stat: PerfStat | None):
        self.trace = trace
        self.counters = counters
        self.perf_stat = perf_stat
        self.window: Window | None = None
        self.problem = ""
        if counters is not None:
            self.window, self.problem = find_window(trace, counters)
        elif perf_stat is not None:
            self.problem = (
                "no counters file beside the trace: the stretch perf stat counted is not known"
            )

    # the trace's figures, from the model's completeness API
    @cached_property
    def _cpu_time(self):
        w = self.window
        assert w is not None
        m = self.trace.model
        return m.cpu_time(*w.inner), m.cpu_time(*w.outer)

    @cached_property
    def _sw(self) -> Switches:
        return Switches(self.trace)

    def _lost(self, cpu: int) -> bool:
        lost = self.trace.meta.lost_events
        return bool(lost.get(cpu) or lost.get(str(cpu)) or cpu in self.trace.meta.lost_unknown)

    def _cpus(self) -> list[int]:
        c = self.counters
        assert c is not None
        return c.cpus

    @cached_property
    def checks(self) -> list[Check]:
        if self.counters is None or self.window is None:
            return []
        out: list[Check] = []
        out += self._busy()
        out += self._switches()
        out += self._ctxt_vs_nr()
        out += self._fair_run_time()
        out += self._command()
        out += self._perf_stat()
        return out

    def _busy(self) -> list[Check]:
        c, w = self.counters, self.window
        assert c is not None and w is not None
        inner, _ = self._cpu_time
        out = []
        for cpu in self._cpus():
            k = kernel_busy(c, cpu)
            if k is None:
                trace = None
                if cpu in inner.index:
                    lo = int(inner.loc[cpu, "busy_ns"])
                    trace = (lo / 1e9, (lo + int(inner.loc[cpu, "unknown_ns"])) / 1e9)
                out.append(
                    _check(
                        "busy", f"CPU {cpu}", "s", None, "", trace, 0.0, "",
                        "the counters lack this CPU's idle time",
                    )
                )  # fmt: skip
                continue
            busy, elapsed, source, res, calls = k
            entries = calls if calls is not None else self._sw.idle_entries(cpu, *w.inner)
            trace, seen, note = self._busy_bounds(cpu, entries)
            slack = w.slack_ns
            tol = (res + slack + seen * IDLE_EXIT_NS) / 1e9
            why = (
                (f"{res / 1e6:g} ms counter resolution + " if res else "")
                + f"{slack / 1e6:.3f} ms the snapshots took + {seen} idle entries whose "
                f"wake-up the trace shows x {IDLE_EXIT_NS / 1e3:g} us (the way out of idle)"
            )
            note = f"the kernel's stretch {elapsed / 1e9:.6f} s; {note}"
            out.append(_check("busy", f"CPU {cpu}", "s", busy / 1e9, source, trace, tol, why, note))
        if len(out) > 1:
            span = w.span_s
            known = [ch.kernel[0] for ch in out if ch.kernel is not None]
            total = sum(known) if len(known) == len(out) else None
            out.append(
                _check(
                    "busy",
                    "all CPUs",
                    "s",
                    total,
                    "the sum of the CPUs'",
                    sum_bounds([ch.trace for ch in out]),
                    sum(ch.tolerance for ch in out),
                    "the sum of the CPUs' tolerances",
                    ""
                    if total is None
                    else f"{total / span:.3f} CPUs busy by the kernel's count over {span:.6f} s",
                )
            )
        return out

    def _busy_bounds(self, cpu: int, entries: int) -> tuple[tuple[float, float] | None, int, str]:
        """The trace's busy seconds of ``cpu`` over the inner stretch as the kernel counts
        them: its proven busy time and the idle task's time after the wake-ups it shows in
        its own context, up to that plus the time it does not show and, for each of the
        ``entries`` idle entries whose wake-up it does not show, the whole way out of idle
        (:data:`IDLE_WAKE_NS`); (bounds, idle entries whose wake-up it shows, a note)."""
        inner, _ = self._cpu_time
        if cpu not in inner.index:
            return None, 0, "the trace has no switch of this CPU"
        w = self.window
        assert w is not None
        woken, seen = self._sw.woken_idle_ns(cpu, *w.inner)
        seen = min(seen, entries)
        unseen = entries - seen
        lo = int(inner.loc[cpu, "busy_ns"]) + woken
        hi = lo + int(inner.loc[cpu, "unknown_ns"]) + unseen * IDLE_WAKE_NS
        note = (
            f"the trace's busy time includes {woken / 1e9:.6f} s of the idle task woken up; "
            f"{unseen} idle entries without their wake-up in the trace x "
            f"{IDLE_WAKE_NS / 1e3:g} us (the way out of idle) widen its figure"
        )
        return (lo / 1e9, hi / 1e9), seen, note

    def _switch_bounds(self, cpu: int) -> tuple[tuple[float, float | None] | None, int]:
        inner, outer = self._cpu_time
        if cpu not in inner.index:
            return None, 0
        r, o = inner.loc[cpu], outer.loc[cpu]
        lo = int(r["switches"]) + int(r["missing_switches"])
        hi = None if int(r["missing_switches"]) or self._lost(cpu) else float(lo)
        return (float(lo), hi), int(o["switches"]) - int(r["switches"])

    def _switches(self) -> list[Check]:
        c = self.counters
        assert c is not None
        out = []
        why = "the switches the trace shows while the snapshots were taken"
        bounds, tot_tol = [], 0
        for cpu in self._cpus():
            trace, slack = self._switch_bounds(cpu)
            k = kernel_switches(c, cpu)
            if k is None:
                note = c.unavailable.get("sched_debug", "the counters lack this CPU's nr_switches")
            else:
                note = ""
            out.append(
                _check(
                    "switches",
                    f"CPU {cpu}",
                    "switches",
                    k,
                    "sched debug nr_switches",
                    trace,
                    slack,
                    why,
                    note,
                )
            )
            bounds.append(trace)
            tot_tol += slack
        ctxt = kernel_ctxt(c)
        out.append(
            _check(
                "switches",
                "all CPUs",
                "switches",
                None if ctxt is None else (float(ctxt[0]), float(ctxt[1])),
                "/proc/stat ctxt",
                sum_bounds(bounds),
                tot_tol,
                why,
                "" if ctxt is not None else "the counters lack /proc/stat's ctxt",
            )
        )
        return out

    def _ctxt_vs_nr(self) -> list[Check]:
        c = self.counters
        assert c is not None
        ctxt = kernel_ctxt(c)
        nr = [kernel_switches(c, cpu) for cpu in self._cpus()]
        if ctxt is None or None in nr:
            return []
        total = float(sum(n for n in nr if n is not None))
        return [
            _check(
                "ctxt_vs_nr_switches",
                "all CPUs",
                "switches",
                (float(ctxt[0]), float(ctxt[1])),
                "/proc/stat ctxt (read before and after the sched debug file)",
                (total, total),
                0.0,
                "none: ctxt is the sum of the run queues' nr_switches",
                "the counters alone: the sum of the CPUs' nr_switches as the trace's figure",
            )
        ]

    @cached_property
    def _running(self):
        """Per task (life key, :mod:`.model.lives`) over the inner stretch: (running ns,
        unknown ns) from the task states."""
        from .model.task_states import totals

        w = self.window
        assert w is not None
        t = totals(self.trace.model.task_states, ("task",), *w.inner)
        return t

    def _fair_run_time(self) -> list[Check]:
        c, w = self.counters, self.window
        assert c is not None and w is not None
        if not self.trace.has("sched_stat_runtime"):
            if not c.runtime_events:
                return []
            in_file = self.trace.meta.event_counts.get("sched_stat_runtime", 0)
            why = (
                "the trace was read without its sched_stat_runtime events"
                if in_file
                else "the counters say the trace has sched_stat_runtime events; it has none"
            )
            return [
                _check(
                    "fair_run_time",
                    "all tasks",
                    "s",
                    None,
                    "sched_stat_runtime",
                    None,
                    0.0,
                    "",
                    why,
                )
            ]
        ts = _ints(self.trace, "sched_stat_runtime", "ts")
        run = _ints(self.trace, "sched_stat_runtime", "runtime")
        pid = _tasks(self.trace, "sched_stat_runtime", "pid")  # (by task: life keys)
        t0, t1 = w.inner
        # each event closes a piece of run time [ts - runtime, ts]: the part in the stretch
        part = np.clip(np.minimum(ts, t1) - np.maximum(ts - run, t0), 0, None)
        keep = (part > 0) & (pid > 0)
        import pandas as pd

        kernel = pd.Series(part[keep]).groupby(pid[keep]).sum()
        steal = steal_ns(c)
        ins = switch_ins(self.trace, *w.inner)
        comms = self._comms()
        checks = []
        tot_k = tot_lo = 0.0
        tot_hi: float | None = 0.0
        tot_ins = 0
        for p, k in kernel.items():
            p = int(p)
            trace = self._task_bounds([p])
            n = ins.get(p, 0)
            checks.append(
                _check(
                    "fair_run_time",
                    f"pid {int(pid_of(p))} ({comms.get(p, '?')})",
                    "s",
                    k / 1e9,
                    "sched_stat_runtime",
                    trace,
                    self._run_tolerance(steal, n),
                    self._run_why(steal, n),
                )
            )
            tot_k += k / 1e9
            tot_lo += trace[0]
            tot_hi = None if tot_hi is None or trace[1] is None else tot_hi + trace[1]
            tot_ins += n
        if checks:
            checks.insert(
                0,
                _check(
                    "fair_run_time",
                    f"all {len(checks)} tasks",
                    "s",
                    tot_k,
                    "sched_stat_runtime",
                    (tot_lo, tot_hi),
                    self._run_tolerance(steal, tot_ins),
                    self._run_why(steal, tot_ins),
                ),
            )
        return checks

    def _task_bounds(self, pids) -> tuple[float, float]:
        """The running time of the tasks ``pids`` (life keys) over the inner stretch:
        (proven, proven + unknown)."""
        running = self._running
        here = running.index.intersection(sorted(pids))
        if not len(here):
            return 0.0, 0.0
        lo = float(running.loc[here, "running_s"].sum())
        return lo, lo + float(running.loc[here, "unknown_s"].sum())

    @staticmethod
    def _run_tolerance(steal: int | None, switch_ins: int) -> float:
        return ((steal or 0) + switch_ins * SWITCH_IN_NS) / 1e9

    @staticmethod
    def _run_why(steal: int | None, switch_ins: int) -> str:
        s = (
            "steal time unknown (no sched debug clocks): not allowed for"
            if steal is None
            else f"{steal / 1e6:.3f} ms steal (the run queues' clock - clock_task, all CPUs)"
        )
        return f"{s} + {switch_ins} switch-ins x {SWITCH_IN_NS / 1e3:g} us"

    def _comms(self) -> dict[int, str]:
        from .model.task_states import comms

        try:
            return comms(self.trace.model.events)
        except (AttributeError, KeyError, TraceError):
            return {}

    def _command(self) -> list[Check]:
        c = self.counters
        assert c is not None
        cmd = c.command
        if cmd is None or cmd.pid is None:
            return []
        pids = self._tree(self._command_task(cmd.pid))
        steal = steal_ns(c)
        ins = switch_ins(self.trace, *self.window.inner) if self.window else {}
        n = sum(ins.get(p, 0) for p in pids)
        name = "command"
        who = f"pid {cmd.pid} and the {len(pids) - 1} tasks it forked (the trace's forks)"
        out = [
            _check(
                "command_cpu",
                name,
                "s",
                None if cmd.cpu_ns is None else cmd.cpu_ns / 1e9,
                "getrusage: utime + stime (sum_exec_runtime)",
                self._task_bounds(pids),
                self._run_tolerance(steal, n) + 1e-6 * len(pids),
                self._run_why(steal, n) + " + 1 us a task (getrusage's us)",
                who,
            )
        ]
        if cmd.voluntary_switches is not None and cmd.involuntary_switches is not None:
            n = 0
            unbounded = False
            if self.trace.has("sched_switch"):
                prev = _tasks(self.trace, "sched_switch", "prev_pid")
                n = int(np.isin(prev, list(pids)).sum())
            inner, _ = self._cpu_time
            if int(inner["missing_switches"].sum()) or any(self._lost(cpu) for cpu in self._cpus()):
                unbounded = True
            exits = 0
            if self.trace.has("sched_process_exit"):
                exits = int(
                    np.isin(_tasks(self.trace, "sched_process_exit", "pid"), list(pids)).sum()
                )
            out.append(
                _check(
                    "command_switches",
                    name,
                    "switches",
                    float(cmd.voluntary_switches + cmd.involuntary_switches),
                    "getrusage: nvcsw + nivcsw",
                    (float(n), None if unbounded else float(n)),
                    float(exits),
                    f"{exits} tasks exited: a thread's last switch-out comes after its "
                    "counts were added to its process's",
                    who,
                )
            )
        return out

    def _command_task(self, pid: int) -> int:
        """The recorded command's task (life key, :mod:`.model.lives`): the task of
        ``pid`` that a fork in the counted stretch starts (the recorder starts the
        command after its start snapshot), else the task of ``pid`` at the stretch's
        start; never an earlier or a later task of a pid used again."""
        at = self.window.inner[0] if self.window is not None else self.trace.meta.first_ts_ns
        at = int(at or 0)
        if self.trace.has("sched_process_fork"):
            ts = _ints(self.trace, "sched_process_fork", "ts")
            mine = ts[(_ints(self.trace, "sched_process_fork", "child_pid") == pid) & (ts >= at)]
            at = int(mine.min()) if len(mine) else at
        return int(self.trace.model.events.key(np.array([pid]), np.array([at]))[0])

    def _tree(self, root: int) -> set[int]:
        """The task ``root`` and its descendants by the trace's fork events, as tasks
        (life keys, :mod:`.model.lives`): a fork starts the child's task, which is no
        earlier task of its pid."""
        pids = {root}
        if not self.trace.has("sched_process_fork"):
            return pids
        parent = _tasks(self.trace, "sched_process_fork", "parent_pid")
        child = _tasks(self.trace, "sched_process_fork", "child_pid")
        while True:
            more = set(child[np.isin(parent, list(pids))].tolist()) - pids
            if not more:
                return pids
            pids |= more

    def _perf_stat(self) -> list[Check]:
        ps, c, w = self.perf_stat, self.counters, self.window
        if ps is None:
            return []
        assert c is not None and w is not None
        if c.perf_stat is None:
            return [
                _check(
                    "perf_stat",
                    "-",
                    "",
                    None,
                    "perf stat",
                    None,
                    0.0,
                    "",
                    "the counters file does not say perf stat counted over its stretch "
                    "(record --perf-stat does): what perf stat counted is not known",
                )
            ]
        out = []
        why = "the switches the trace shows while the snapshots were taken"
        per = ps.per_cpu("context-switches")
        for cpu in sorted(per):
            trace, slack = self._switch_bounds(cpu)
            out.append(
                _check(
                    "perf_stat_context_switches",
                    f"CPU {cpu}",
                    "switches",
                    per[cpu],
                    "perf stat",
                    trace,
                    slack,
                    why,
                )
            )
        total = ps.value("context-switches")
        if total is None and per and None not in per.values():
            total = sum(v for v in per.values() if v is not None)
        if total is not None or per:
            both = [self._switch_bounds(cpu) for cpu in self._cpus()]
            tol = sum(slack for _, slack in both)
            out.append(
                _check(
                    "perf_stat_context_switches",
                    "all CPUs",
                    "switches",
                    total,
                    "perf stat",
                    sum_bounds([b for b, _ in both]),
                    tol,
                    why,
                )
            )
        mig = ps.value("cpu-migrations")
        per_mig = ps.per_cpu("cpu-migrations")
        if mig is None and per_mig and None not in per_mig.values():
            mig = sum(v for v in per_mig.values() if v is not None)
        if mig is not None and self.trace.has("sched_migrate_task"):
            ts = _ints(self.trace, "sched_migrate_task", "ts")
            moved = _ints(self.trace, "sched_migrate_task", "orig_cpu") != _ints(
                self.trace, "sched_migrate_task", "dest_cpu"
            )
            n = int((moved & (ts >= w.inner[0]) & (ts < w.inner[1])).sum())
            edge = self._runnable_at(w.inner[0]) + self._runnable_at(w.inner[1])
            slack = int((moved & (ts >= w.outer[0]) & (ts < w.outer[1])).sum()) - n
            out.append(
                _check(
                    "perf_stat_cpu_migrations",
                    "all CPUs",
                    "migrations",
                    mig,
                    "perf stat",
                    (float(n), float(n)),
                    float(edge + slack),
                    "perf counts a migration when the task next runs: the tasks waiting to run at "
                    "the stretch's two ends, + the migrations while the snapshots were taken",
                    "perf counts a task moved twice before it runs once",
                )
            )
        for cpu, v in sorted(ps.per_cpu("cpu-clock").items()):
            out.append(
                _check(
                    "perf_stat_cpu_clock",
                    f"CPU {cpu}",
                    "s",
                    None if v is None else v / 1e9,
                    "perf stat cpu-clock: the time it counted",
                    ((w.inner[1] - w.inner[0]) / 1e9, (w.outer[1] - w.outer[0]) / 1e9),
                    (w.outer[1] - w.outer[0] - (w.inner[1] - w.inner[0])) / 1e9 + 1e-5,
                    "the time the snapshots took (perf was enabled and disabled within them) "
                    "+ 10 us (perf prints 0.01 ms)",
                    "the trace's figure: the marked stretch, from the start snapshot's end to "
                    "the stop snapshot's beginning, up to its beginning to its end",
                )
            )
        return out

    def _runnable_at(self, t: int) -> int:
        ts = self.trace.model.task_states
        s = ts["start_ts"].to_numpy(dtype=np.int64)
        e = ts["end_ts"].to_numpy(dtype=np.int64)
        st = ts["state"].astype(str).to_numpy()
        return int((((st == "preempted") | (st == "woken_wait")) & (s <= t) & (e > t)).sum())

    # -- what reports show ---------------------------------------------------------------
    def caveats(self) -> list[str]:
        """One line per disagreement beyond the tolerance (naming the CPU or task and
        both figures), one per busy time the trace's figure is withheld of (with the
        kernel's figure), and one when the counters' stretch is not in the trace."""
        out = []
        if self.counters is not None and self.window is None:
            out.append(f"kernel counters beside the trace not compared: {self.problem}")
        for ch in self.checks:
            if ch.what == "busy" and ch.verdict == "withheld":
                out.append(
                    f"kernel counters: busy of {ch.scope}: the trace's figure is withheld (it "
                    f"shows {figure(ch.trace, ch.unit)}); the kernel counted "
                    f"{figure(ch.kernel, ch.unit)} ({ch.kernel_source})"
                )
        bad = [ch for ch in self.checks if ch.verdict == "disagree"]
        tasks = [ch for ch in bad if ch.what == "fair_run_time" and not ch.scope.startswith("all ")]
        for ch in bad:
            if ch in tasks[5:]:
                continue
            out.append("kernel counters disagree: " + describe(ch))
        if len(tasks) > 5:
            out.append(f"kernel counters disagree: and {len(tasks) - 5} more tasks' fair run time")
        return out

    def to_dict(self) -> dict:
        c = self.counters
        return {
            "counters": None if c is None else c.path,
            "perf_stat": None if self.perf_stat is None else self.perf_stat.path,
            "window": None
            if self.window is None
            else {
                "how": self.window.how,
                "outer_ns": list(self.window.outer),
                "inner_ns": list(self.window.inner),
                "span_s": self.window.span_s,
            },
            "problem": self.problem or None,
            "unavailable": {} if c is None else dict(c.unavailable),
            "checks": [ch.to_dict() for ch in self.checks],
            "verdicts": {v: sum(ch.verdict == v for ch in self.checks) for v in VERDICTS},
        }


def _fmt(v: float, unit: str) -> str:
    if unit == "s":
        return f"{v:.6f} s"
    return f"{v:.0f} {unit}"


def figure(bounds, unit: str) -> str:
    """A figure or a range as text (``None`` high: ``or more``)."""
    if bounds is None:
        return "unknown"
    lo, hi = bounds
    if hi is None:
        return f"{_fmt(lo, unit)} or more"
    if math.isclose(lo, hi, rel_tol=0, abs_tol=5e-7 if unit == "s" else 0.5):
        return _fmt(lo, unit)
    return f"{_fmt(lo, unit)} to {_fmt(hi, unit)}"


def describe(ch: Check) -> str:
    """One line: what, where, both figures, the tolerance."""
    tol = _fmt(ch.tolerance, ch.unit)
    return (
        f"{ch.what.replace('_', ' ')} of {ch.scope}: the kernel {figure(ch.kernel, ch.unit)} "
        f"({ch.kernel_source}), the trace {figure(ch.trace, ch.unit)} (tolerance {tol})"
    )


def judge(trace) -> Referee | None:
    """The referee of ``trace`` against the files beside it
    (:func:`schedwake.counters.read_beside`), or None without any, and for a slice of a
    trace (``--time``, ``--cpu``: the counters are the whole recording's). Raises
    TraceError naming a side file that is unusable."""
    if trace.meta.slice is not None:  # (a time or CPU slice: the counters are the whole's)
        return None
    beside = trace.counters
    if beside is None:
        return None
    return Referee(trace, beside.counters, beside.perf_stat)


__all__ = [
    "Check",
    "Referee",
    "Window",
    "judge",
    "find_window",
    "verdict",
    "describe",
    "figure",
    "VERDICTS",
]
