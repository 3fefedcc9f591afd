"""The kernel's own counters, saved beside a trace: taken, written and read back.

A trace says what the scheduler did as far as its events show it; the kernel also counts
for itself (each CPU's idle time, each run queue's context switches, each task's run
time). ``schedwake record`` snapshots these counters right after tracing is switched on
and right before it is switched off (:func:`snapshot`), brackets each snapshot with two
``trace_marker`` lines (``schedwake: counters start begin`` ... ``end``, the same for
``stop``) so that an analysis knows which stretch of the trace they cover, and writes
them beside the trace as ``TRACE.counters.json`` (:func:`write`). :mod:`schedwake.referee`
compares the trace with them.

Read beside a trace ``DIR/run.dat`` (:func:`read_beside`):

1. ``run.dat.counters.json`` (else ``run.counters.json``): this module's format
   (:data:`FORMAT`, version :data:`VERSION`; docs/cli.md, "record", lists its fields);
2. ``run.dat.perf-stat.txt`` (else ``run.perf-stat.txt``): the output of ``perf stat``
   (its human layout or ``-x,`` CSV; aggregated or ``-A`` per CPU), parsed by
   :func:`parse_perf_stat`.

Every value is checked; a file that is there but unusable raises a one-line
:class:`~schedwake.errors.TraceError` naming it. A counter the kernel did not give (no
debugfs, no ``/proc/timer_list``) is ``null`` in the file, its reason in
``unavailable``, and None here: never 0.

Where the figures come from (Linux; docs/counters.md):

``/proc/stat``
    per CPU: user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice in
    USER_HZ ticks (stored in ns); ``ctxt``, the context switches of all CPUs. With
    NO_HZ the idle and iowait times are measured at every idle entry and exit (then
    printed in ticks: 1/USER_HZ s resolution), the other fields are sampled by the tick.
``/proc/timer_list``
    per CPU: ``idle_sleeptime`` and ``iowait_sleeptime`` in ns and ``idle_calls``. They
    leave out an idle period still under way, so they are read by a thread pinned to that
    CPU (which is then running, not idle): exact to the ns.
``/sys/kernel/debug/sched/debug``
    per CPU: ``nr_switches`` (the run queue's context switches: every ``sched_switch``),
    the run queue's ``clock`` and ``clock_task`` (``clock`` minus the time the kernel
    does not give tasks: steal time, and irq time with IRQ_TIME_ACCOUNTING); in its
    header ``ktime``, ``sched_clk`` and ``cpu_clk`` read together: CLOCK_MONOTONIC,
    ``sched_clock()`` (the ``local`` trace clock) and ``local_clock()`` (perf's clock)
    at one instant, which places the snapshot's CLOCK_MONOTONIC times on the trace's
    clock when a trace has no markers (perf.data).
``getrusage(RUSAGE_CHILDREN)``
    of the recorder, around the command: the CPU time (``sum_exec_runtime``) and the
    voluntary and involuntary context switches of the command and every descendant it
    waited for.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import sidevalues
from .errors import TraceError

#: The format's name and version (``"format"``, ``"version"`` of the JSON object).
FORMAT = "schedwake-counters"
VERSION = 1
#: The two snapshots, in order.
LABELS = ("start", "stop")
#: The marker lines ``record`` writes into the trace around each snapshot.
MARKER = "schedwake: counters {label} {edge}"
#: /proc/stat's per-CPU fields, in their order.
STAT_FIELDS = (
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",
    "guest",
    "guest_nice",
)
#: /proc/timer_list is read once per CPU (pinned there) only up to this many CPUs: it
#: lists every CPU's timers, so reading it on each CPU grows with the square of them.
TIMER_LIST_MAX_CPUS = 64
#: The largest side file read.
MAX_BYTES = 16 << 20
#: A count or a time in ns: a non-negative integer below 2**63.
_MAX_INT = (1 << 63) - 1

PROC_STAT = "/proc/stat"
TIMER_LIST = "/proc/timer_list"
SCHED_DEBUG = "/sys/kernel/debug/sched/debug"
SCHEDSTAT = "/proc/schedstat"


#: Where each part of a snapshot comes from (the ``sources`` of the file).
SOURCES = {
    "ctxt": "/proc/stat ctxt, read before and after the sched debug file",
    "clocks": "the sched debug file's header: ktime, sched_clk, cpu_clk",
    "stat_ns": "/proc/stat, the CPU's line, read on that CPU (ticks of 1/user_hz, in ns)",
    "timer_list": "/proc/timer_list, the CPU's tick_sched, read on that CPU",
    "sched_debug": "/sys/kernel/debug/sched/debug: the CPU's run queue",
    "command": "getrusage(RUSAGE_CHILDREN) of the recorder, before and after the command",
}


def marker(label: str, edge: str) -> str:
    """The ``trace_marker`` text at ``edge`` (``begin``/``end``) of snapshot ``label``."""
    return MARKER.format(label=label, edge=edge)


# -- taking a snapshot ----------------------------------------------------------------
def _mono() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def user_hz() -> int:
    return int(os.sysconf("SC_CLK_TCK"))


def parse_proc_stat(text: str, hz: int) -> tuple[dict[int, dict[str, int]], int | None]:
    """``/proc/stat`` -> ({cpu: {field: ns}}, ctxt). Fields a kernel does not print are
    left out; a line that is not numbers is skipped."""
    cpus: dict[int, dict[str, int]] = {}
    ctxt = None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0].startswith("cpu") and parts[0][3:].isdigit():
            try:
                ticks = [int(v) for v in parts[1 : 1 + len(STAT_FIELDS)]]
            except ValueError:
                continue
            cpus[int(parts[0][3:])] = {
                k: v * 1_000_000_000 // hz for k, v in zip(STAT_FIELDS, ticks, strict=False)
            }
        elif parts[0] == "ctxt" and len(parts) > 1 and parts[1].isdigit():
            ctxt = int(parts[1])
    return cpus, ctxt


_NSECS = re.compile(r"^\s*\.?(\w+)\s*:\s*(\d+)(?:\s*nsecs)?\s*$")


def parse_timer_list(text: str) -> tuple[int | None, dict[int, dict[str, int]]]:
    """``/proc/timer_list`` -> (``now at`` in ns, {cpu: {idle_sleeptime_ns,
    iowait_sleeptime_ns, idle_calls}})."""
    now = None
    out: dict[int, dict[str, int]] = {}
    cpu = None
    names = {
        "idle_sleeptime": "idle_sleeptime_ns",
        "iowait_sleeptime": "iowait_sleeptime_ns",
        "idle_calls": "idle_calls",
    }
    for line in text.splitlines():
        if line.startswith("now at "):
            m = re.match(r"now at (\d+) nsecs", line)
            now = int(m.group(1)) if m else None
        elif line.startswith("cpu: "):
            rest = line[5:].strip()
            cpu = int(rest) if rest.isdigit() else None
        elif line.startswith("Tick Device"):
            cpu = None
        elif cpu is not None:
            m = _NSECS.match(line)
            if m and m.group(1) in names:
                out.setdefault(cpu, {})[names[m.group(1)]] = int(m.group(2))
    return now, out


_MS = re.compile(r"^\s*\.?([\w>-]+)\s*:\s*(-?\d+)\.(\d{6})\s*$")
_INT = re.compile(r"^\s*\.?([\w>-]+)\s*:\s*(-?\d+)\s*$")


def _ms_ns(m: re.Match) -> int:
    whole, frac = int(m.group(2)), int(m.group(3))
    return whole * 1_000_000 + (frac if whole >= 0 else -frac)


def parse_sched_debug(text: str) -> tuple[dict[str, int], dict[int, dict[str, int]]]:
    """``/sys/kernel/debug/sched/debug`` -> (header clocks {monotonic_ns,
    sched_clock_ns, local_clock_ns}, {cpu: {nr_switches, clock_ns, clock_task_ns}}).
    Times are printed in ms with six decimals (ns)."""
    clocks: dict[str, int] = {}
    cpus: dict[int, dict[str, int]] = {}
    head = {"ktime": "monotonic_ns", "sched_clk": "sched_clock_ns", "cpu_clk": "local_clock_ns"}
    per = {"clock": "clock_ns", "clock_task": "clock_task_ns"}
    cpu = None
    for line in text.splitlines():
        m = re.match(r"^cpu#(\d+)\b", line)
        if m:
            cpu = int(m.group(1))
            cpus[cpu] = {}
            continue
        if line and not line[0].isspace():  # cfs_rq[0]:/, rt_rq, runnable tasks, ...
            if cpu is not None or not line.startswith(("ktime", "sched_clk", "cpu_clk")):
                cpu = None
        ms = _MS.match(line)
        if cpu is None:
            if ms and ms.group(1) in head:
                clocks[head[ms.group(1)]] = _ms_ns(ms)
            continue
        if ms and ms.group(1) in per:
            cpus[cpu][per[ms.group(1)]] = _ms_ns(ms)
            continue
        mi = _INT.match(line)
        if mi and mi.group(1) == "nr_switches":
            cpus[cpu]["nr_switches"] = int(mi.group(2))
    return clocks, cpus


class _Pin:
    """The calling thread pinned to one CPU after another, its affinity put back at the
    end. ``on(cpu)`` says whether it runs there now. While pinned it runs as a real-time
    task (SCHED_FIFO 1, where allowed): on a busy CPU it does not wait its turn behind
    the workload, so that a snapshot takes a millisecond or two, not tens."""

    def __init__(self):
        try:
            self.old: set[int] | None = os.sched_getaffinity(0)
        except OSError:
            self.old = None
        self.policy: tuple[int, int] | None = None
        try:
            policy = os.sched_getscheduler(0)
            prio = os.sched_getparam(0).sched_priority
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            self.policy = (policy, prio)
        except (OSError, AttributeError):
            pass

    def on(self, cpu: int) -> bool:
        if self.old is None:
            return False
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:
            return False
        return True

    def unpin(self) -> None:
        if self.old is not None:
            try:
                os.sched_setaffinity(0, self.old)
            except OSError:
                pass

    def restore(self) -> None:
        self.unpin()
        if self.policy is not None:
            try:
                os.sched_setscheduler(0, self.policy[0], os.sched_param(self.policy[1]))
            except OSError:
                pass


def snapshot(
    label: str,
    mark: Callable[[str], None] | None = None,
    unavailable: dict[str, str] | None = None,
    inside: Callable[[], object] | None = None,
) -> dict:
    """The kernel's counters now, as one snapshot of the file (``label``: ``start`` or
    ``stop``). ``mark(text)`` is called with the begin and end markers (it writes them
    into the trace). The reads, in order: ``/proc/stat`` (``ctxt`` before), the
    sched debug file, ``/proc/stat`` again (``ctxt`` after: the debug file's
    ``nr_switches`` were read between the two), then on each CPU in turn, pinned there,
    ``/proc/stat`` and ``/proc/timer_list``. What cannot be read is None, its reason put
    into ``unavailable`` (a dict, source -> reason). ``inside()`` is called right after
    the begin marker (``record --perf-stat`` enables or disables perf stat there)."""
    unavailable = {} if unavailable is None else unavailable
    pin = _Pin()
    try:
        return _snapshot_now(label, mark, unavailable, inside, pin)
    finally:
        pin.restore()


def _snapshot_now(label, mark, unavailable: dict[str, str], inside, pin: _Pin) -> dict:
    """Between the markers only reads (the texts are parsed after the end marker, so
    that the bracket stays narrow)."""
    hz = user_hz()

    def read(path: str, source: str) -> str | None:
        try:
            return _read(path)
        except OSError as exc:
            unavailable.setdefault(source, f"{path}: {_why(exc)}")
            return None

    if mark:
        mark(marker(label, "begin"))
    begin = _mono()
    if inside is not None:
        inside()
    first_at = _mono()
    stat0 = read(PROC_STAT, "proc_stat")
    debug_text = read(SCHED_DEBUG, "sched_debug")
    stat1 = read(PROC_STAT, "proc_stat")
    first, ctxt0 = parse_proc_stat(stat0 or "", hz)  # (cheap: the CPUs to visit)
    timer_ok = len(first) <= TIMER_LIST_MAX_CPUS
    raw: dict[int, tuple[bool, int, str | None, str | None]] = {}
    for cpu in sorted(first):
        pinned = pin.on(cpu)
        at = _mono()
        stat_text = read(PROC_STAT, "proc_stat") if pinned else None
        timer_text = read(TIMER_LIST, "timer_list") if pinned and timer_ok else None
        raw[cpu] = (pinned, at, stat_text, timer_text)
    pin.unpin()
    end = _mono()
    if mark:
        mark(marker(label, "end"))
    # -- parsed after the end marker
    if not timer_ok:
        unavailable.setdefault(
            "timer_list", f"not read on more than {TIMER_LIST_MAX_CPUS} CPUs (too long to read)"
        )
    ctxt1 = parse_proc_stat(stat1 or "", hz)[1]
    clocks: dict[str, int] | None = None
    debug: dict[int, dict[str, int]] = {}
    if debug_text is not None:
        clocks, debug = parse_sched_debug(debug_text)
        if set(clocks) != {"monotonic_ns", "sched_clock_ns", "local_clock_ns"}:
            clocks = None
    cpus = {}
    for cpu, (pinned, at, text, ttext) in raw.items():
        if not pinned:
            unavailable.setdefault(
                "pinning", "could not pin the reader to each CPU: idle times from /proc/stat"
            )
        stat = first.get(cpu)
        if text is not None:
            stat = parse_proc_stat(text, hz)[0].get(cpu)
        else:
            at = first_at
        timer: dict[str, int | None] | None = None
        if ttext is not None:
            now, idle = parse_timer_list(ttext)
            got = idle.get(cpu, {})
            if now is not None and "idle_sleeptime_ns" in got:
                timer = {
                    "now_ns": now,
                    "idle_sleeptime_ns": got["idle_sleeptime_ns"],
                    "iowait_sleeptime_ns": got.get("iowait_sleeptime_ns"),
                    "idle_calls": got.get("idle_calls"),
                }
        d = debug.get(cpu, {})
        cpus[str(cpu)] = {
            "monotonic_ns": at,
            "pinned": pinned,
            "stat_ns": None if stat is None else {k: stat.get(k) for k in STAT_FIELDS},
            "timer_list": timer,
            "sched_debug": {
                "nr_switches": d.get("nr_switches"),
                "clock_ns": d.get("clock_ns"),
                "clock_task_ns": d.get("clock_task_ns"),
            }
            if d
            else None,
        }
    return {
        "begin_monotonic_ns": begin,
        "end_monotonic_ns": end,
        "clocks": clocks,
        "ctxt": None if ctxt0 is None or ctxt1 is None else [ctxt0, ctxt1],
        "cpus": cpus,
    }


def static_unavailable() -> dict[str, str]:
    """The sources this kernel lacks for good (before any snapshot)."""
    out = {}
    if not os.path.exists(SCHEDSTAT):
        out["schedstat"] = f"{SCHEDSTAT}: no such file (a kernel without CONFIG_SCHEDSTATS)"
    return out


def rusage_children() -> dict[str, int]:
    """The recorder's reaped children so far: CPU time (ns, utime + stime = their
    ``sum_exec_runtime``, to the us) and context switches."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "cpu_ns": round((r.ru_utime + r.ru_stime) * 1e6) * 1000,
        "voluntary_switches": int(r.ru_nvcsw),
        "involuntary_switches": int(r.ru_nivcsw),
    }


def document(
    start: dict,
    stop: dict,
    *,
    markers: bool,
    runtime_events: bool,
    unavailable: dict[str, str],
    command: dict | None = None,
    perf_stat: dict | None = None,
    recorded_by: str = "schedwake record",
) -> dict:
    """The JSON object of a counters file from two snapshots."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "recorded_by": recorded_by,
        "kernel": os.uname().release,
        "user_hz": user_hz(),
        "markers": {lb: [marker(lb, "begin"), marker(lb, "end")] for lb in LABELS}
        if markers
        else None,
        "runtime_events": runtime_events,
        "snapshots": {"start": start, "stop": stop},
        "command": command,
        "perf_stat": perf_stat,
        "sources": SOURCES,
        "unavailable": dict(sorted(unavailable.items())),
    }


def counters_path(trace_path) -> Path:
    """Where ``record`` writes the counters of ``trace_path``: ``TRACE.counters.json``."""
    p = Path(str(trace_path))
    return p.with_name(p.name + ".counters.json")


def perf_stat_path(trace_path) -> Path:
    """Where ``record --perf-stat`` writes perf stat's output: ``TRACE.perf-stat.txt``."""
    p = Path(str(trace_path))
    return p.with_name(p.name + ".perf-stat.txt")


def write(path, doc: dict) -> None:
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


# -- reading it back --------------------------------------------------------------------
@dataclass(frozen=True)
class CpuCounters:
    """One CPU in one snapshot. None: not available."""

    monotonic_ns: int
    pinned: bool
    stat_ns: dict[str, int | None] | None
    timer_now_ns: int | None = None
    idle_sleeptime_ns: int | None = None
    iowait_sleeptime_ns: int | None = None
    idle_calls: int | None = None
    nr_switches: int | None = None
    clock_ns: int | None = None
    clock_task_ns: int | None = None


@dataclass(frozen=True)
class Snapshot:
    label: str
    begin_monotonic_ns: int
    end_monotonic_ns: int
    #: CLOCK_MONOTONIC, sched_clock() and local_clock() at one instant, or None
    clocks: dict[str, int] | None
    #: /proc/stat's ctxt read before and after the sched debug file, or None
    ctxt: tuple[int, int] | None
    cpus: dict[int, CpuCounters]


@dataclass(frozen=True)
class CommandUsage:
    """The recorded command and its waited-for descendants (getrusage)."""

    pid: int | None
    argv: tuple[str, ...]
    cpu_ns: int | None
    voluntary_switches: int | None
    involuntary_switches: int | None


@dataclass(frozen=True)
class Counters:
    """A ``TRACE.counters.json`` read back and checked."""

    path: str
    version: int
    recorded_by: str
    kernel: str | None
    user_hz: int | None
    #: label -> (begin, end) marker texts in the trace's print events; None: no markers
    markers: dict[str, tuple[str, str]] | None
    runtime_events: bool
    start: Snapshot
    stop: Snapshot
    command: CommandUsage | None
    perf_stat: dict | None
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def cpus(self) -> list[int]:
        return sorted(set(self.start.cpus) & set(self.stop.cpus))


class _Doc:
    """Checks of one JSON document, each failure one TraceError naming the file."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, what: str):
        raise TraceError(self.path, f"counters file: {what}")

    def obj(self, v, where: str, keys: set[str], required: set[str] | None = None) -> dict:
        if not isinstance(v, dict):
            self.fail(f"{where} must be an object")
        bad = set(v) - keys
        if bad:
            self.fail(f"{where}: unknown key(s) {', '.join(sorted(map(str, bad)))[:80]}")
        missing = (keys if required is None else required) - set(v)
        if missing:
            self.fail(f"{where}: missing {', '.join(sorted(missing))}")
        return v

    def int(self, v, where: str, none: bool = True) -> int | None:
        if v is None and none:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _MAX_INT:
            self.fail(f"{where} must be an integer from 0 to 2**63-1{' or null' if none else ''}")
        return v

    def string(self, v, where: str, none: bool = True) -> str | None:
        if v is None and none:
            return None
        if not isinstance(v, str) or len(v) > 4096:
            self.fail(f"{where} must be text")
        if sidevalues.has_bad_chars(v):
            self.fail(f"{where} holds a control character or a lone surrogate")
        return v

    def bool(self, v, where: str) -> bool:
        if not isinstance(v, bool):
            self.fail(f"{where} must be true or false")
        return v


def _cpu_key(d: _Doc, k, where: str) -> int:
    if not isinstance(k, str) or not k.isdigit() or len(k) > 6:
        d.fail(f"{where}: CPU {k!r} is not a CPU number")
    return int(k)


def _snapshot(d: _Doc, v, label: str) -> Snapshot:
    w = f"snapshots.{label}"
    o = d.obj(v, w, {"begin_monotonic_ns", "end_monotonic_ns", "clocks", "ctxt", "cpus"})
    begin = d.int(o["begin_monotonic_ns"], f"{w}.begin_monotonic_ns", none=False)
    end = d.int(o["end_monotonic_ns"], f"{w}.end_monotonic_ns", none=False)
    assert begin is not None and end is not None
    if end < begin:
        d.fail(f"{w}: ends before it begins")
    clocks: dict[str, int] | None = None
    if o["clocks"] is not None:
        c = d.obj(o["clocks"], f"{w}.clocks", {"monotonic_ns", "sched_clock_ns", "local_clock_ns"})
        clocks = {k: d.int(c[k], f"{w}.clocks.{k}", none=False) or 0 for k in sorted(c)}
    ctxt = None
    if o["ctxt"] is not None:
        if not isinstance(o["ctxt"], list) or len(o["ctxt"]) != 2:
            d.fail(f"{w}.ctxt must be [before, after] or null")
        a = d.int(o["ctxt"][0], f"{w}.ctxt", none=False)
        b = d.int(o["ctxt"][1], f"{w}.ctxt", none=False)
        assert a is not None and b is not None
        if b < a:
            d.fail(f"{w}.ctxt: the second reading is below the first")
        ctxt = (a, b)
    if not isinstance(o["cpus"], dict) or not o["cpus"]:
        d.fail(f"{w}.cpus must be an object of CPUs")
    cpus = {}
    for k, cv in o["cpus"].items():
        cpu = _cpu_key(d, k, f"{w}.cpus")
        cw = f"{w}.cpus.{k}"
        c = d.obj(cv, cw, {"monotonic_ns", "pinned", "stat_ns", "timer_list", "sched_debug"})
        at = d.int(c["monotonic_ns"], f"{cw}.monotonic_ns", none=False)
        assert at is not None
        if not begin <= at <= end:
            d.fail(f"{cw}.monotonic_ns is outside its snapshot")
        stat = None
        if c["stat_ns"] is not None:
            s = d.obj(c["stat_ns"], f"{cw}.stat_ns", set(STAT_FIELDS), set())
            stat = {f: d.int(s.get(f), f"{cw}.stat_ns.{f}") for f in STAT_FIELDS}
        timer: dict = {}
        if c["timer_list"] is not None:
            t = d.obj(
                c["timer_list"],
                f"{cw}.timer_list",
                {"now_ns", "idle_sleeptime_ns", "iowait_sleeptime_ns", "idle_calls"},
                {"now_ns", "idle_sleeptime_ns"},
            )
            timer = {
                "timer_now_ns": d.int(t["now_ns"], f"{cw}.timer_list.now_ns", none=False),
                "idle_sleeptime_ns": d.int(
                    t["idle_sleeptime_ns"], f"{cw}.timer_list.idle_sleeptime_ns", none=False
                ),
                "iowait_sleeptime_ns": d.int(
                    t.get("iowait_sleeptime_ns"), f"{cw}.timer_list.iowait_sleeptime_ns"
                ),
                "idle_calls": d.int(t.get("idle_calls"), f"{cw}.timer_list.idle_calls"),
            }
        sd: dict = {}
        if c["sched_debug"] is not None:
            s = d.obj(
                c["sched_debug"], f"{cw}.sched_debug", {"nr_switches", "clock_ns", "clock_task_ns"}
            )
            sd = {k: d.int(s[k], f"{cw}.sched_debug.{k}") for k in sorted(s)}
            if (
                sd["clock_ns"] is not None
                and sd["clock_task_ns"] is not None
                and sd["clock_task_ns"] > sd["clock_ns"]
            ):
                d.fail(f"{cw}.sched_debug: clock_task_ns above clock_ns")
        cpus[cpu] = CpuCounters(
            monotonic_ns=at,
            pinned=d.bool(c["pinned"], f"{cw}.pinned"),
            stat_ns=stat,
            **timer,
            **sd,
        )
    return Snapshot(label, begin, end, clocks, ctxt, cpus)


#: Counters that only grow: a stop value below its start value is a broken file.
_GROWING = (
    "idle_sleeptime_ns",
    "iowait_sleeptime_ns",
    "idle_calls",
    "nr_switches",
    "clock_ns",
    "timer_now_ns",
)


def _check_order(d: _Doc, a: Snapshot, b: Snapshot) -> None:
    if b.begin_monotonic_ns < a.end_monotonic_ns:
        d.fail("snapshots.stop begins before snapshots.start ends")
    if a.ctxt and b.ctxt and b.ctxt[0] < a.ctxt[1]:
        d.fail("ctxt went down from the start snapshot to the stop snapshot")
    for cpu in set(a.cpus) & set(b.cpus):
        x, y = a.cpus[cpu], b.cpus[cpu]
        for name in _GROWING:
            u, v = getattr(x, name), getattr(y, name)
            if u is not None and v is not None and v < u:
                d.fail(f"cpu {cpu}: {name} went down from start to stop ({u} -> {v})")
        if x.stat_ns and y.stat_ns:
            for f in STAT_FIELDS:
                u, v = x.stat_ns[f], y.stat_ns[f]
                if u is not None and v is not None and v < u:
                    d.fail(f"cpu {cpu}: /proc/stat {f} went down from start to stop")


def parse(text: str, path) -> Counters:
    """A ``TRACE.counters.json`` -> :class:`Counters`, every value checked (one-line
    TraceError naming ``path`` otherwise)."""
    path = Path(str(path))
    d = _Doc(path)
    doc = sidevalues.load_json(text, path)  # (a key twice, a 4,000-digit integer, NaN)
    keys = {
        "format",
        "version",
        "recorded_by",
        "kernel",
        "user_hz",
        "markers",
        "runtime_events",
        "snapshots",
        "command",
        "perf_stat",
        "sources",
        "unavailable",
    }
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        d.fail(f'not a counters file (no "format": "{FORMAT}")')
    if doc.get("version") != VERSION:
        got = str(doc.get("version"))[:20]
        d.fail(f"version {got} is not {VERSION}, the one this schedwake reads")
    d.obj(doc, "the document", keys, keys - {"sources"})
    hz = d.int(doc["user_hz"], "user_hz")
    if hz == 0:
        d.fail("user_hz must be above 0")
    markers = None
    if doc["markers"] is not None:
        m = d.obj(doc["markers"], "markers", set(LABELS))
        markers = {}
        for lb in LABELS:
            pair = m[lb]
            if not isinstance(pair, list) or len(pair) != 2:
                d.fail(f"markers.{lb} must be [begin, end]")
            b = d.string(pair[0], f"markers.{lb}", none=False)
            e = d.string(pair[1], f"markers.{lb}", none=False)
            assert b is not None and e is not None
            markers[lb] = (b, e)
        texts = [t for pair in markers.values() for t in pair]
        if len(set(texts)) != len(texts) or not all(t.strip() for t in texts):
            d.fail("markers must be four different texts")
    snaps = d.obj(doc["snapshots"], "snapshots", set(LABELS))
    start = _snapshot(d, snaps["start"], "start")
    stop = _snapshot(d, snaps["stop"], "stop")
    _check_order(d, start, stop)
    command = None
    if doc["command"] is not None:
        c = d.obj(
            doc["command"],
            "command",
            {"pid", "argv", "cpu_ns", "voluntary_switches", "involuntary_switches", "source"},
            {"pid", "argv", "cpu_ns", "voluntary_switches", "involuntary_switches"},
        )
        argv = c["argv"]
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            d.fail("command.argv must be a list of texts")
        for a in argv:
            d.string(a, "command.argv")
        d.string(c.get("source"), "command.source")
        command = CommandUsage(
            pid=d.int(c["pid"], "command.pid"),
            argv=tuple(argv),
            cpu_ns=d.int(c["cpu_ns"], "command.cpu_ns"),
            voluntary_switches=d.int(c["voluntary_switches"], "command.voluntary_switches"),
            involuntary_switches=d.int(c["involuntary_switches"], "command.involuntary_switches"),
        )
    perf_stat = None
    if doc["perf_stat"] is not None:
        p = d.obj(doc["perf_stat"], "perf_stat", {"file", "window", "command"}, {"file", "window"})
        name = d.string(p["file"], "perf_stat.file", none=False)
        assert name is not None
        if "/" in name or name in ("", ".", ".."):
            d.fail("perf_stat.file must be a file name beside the trace")
        if p["window"] != "counters":
            d.fail('perf_stat.window must be "counters" (enabled and disabled at the snapshots)')
        perf_stat = {"file": name, "window": "counters"}
    for key in ("unavailable", "sources"):
        texts = doc.get(key, {})
        if not isinstance(texts, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in texts.items()
        ):
            d.fail(f"{key} must be an object of texts")
        for k, v in texts.items():
            d.string(k, f"{key} key")
            d.string(v, f"{key}.{sidevalues.shown(k)}")
    unavailable = doc["unavailable"]
    runtime = d.bool(doc["runtime_events"], "runtime_events")
    return Counters(
        path=str(path),
        version=VERSION,
        recorded_by=d.string(doc["recorded_by"], "recorded_by") or "",
        kernel=d.string(doc["kernel"], "kernel"),
        user_hz=hz,
        markers=markers,
        runtime_events=runtime,
        start=start,
        stop=stop,
        command=command,
        perf_stat=perf_stat,
        unavailable=dict(unavailable),
    )


# -- perf stat -------------------------------------------------------------------------
@dataclass(frozen=True)
class PerfStat:
    """A ``perf stat`` output: ``values[(event, cpu)]`` (cpu None: all CPUs together;
    value None: ``<not counted>``/``<not supported>``), in the event's unit: a count,
    or ns for the ``msec`` clocks (``cpu-clock``, ``task-clock``)."""

    path: str
    layout: str  # "human" or "csv"
    #: what perf stat counted ("system wide", "CPU(s) 1", a command); None: not said
    target: str | None
    elapsed_s: float | None
    values: dict[tuple[str, int | None], float | None]

    def value(self, event: str, cpu: int | None = None) -> float | None:
        return self.values.get((event, cpu))

    def events(self) -> list[str]:
        return sorted({e for e, _ in self.values})

    def per_cpu(self, event: str) -> dict[int, float | None]:
        return {c: v for (e, c), v in self.values.items() if e == event and c is not None}


#: perf's short names of the events the referee reads.
PERF_ALIASES = {"cs": "context-switches", "migrations": "cpu-migrations"}
_NOT = ("<not counted>", "<not supported>")
_HUMAN = re.compile(
    r"^\s*(?:(?P<cpu>CPU\d+)\s+)?(?P<value><not counted>|<not supported>|[0-9][0-9,.' ]*)"
    r"\s+(?:(?P<unit>msec|usec|nsec|sec|ns)\s+)?(?P<event>[A-Za-z][\w:./=,-]*?)"
    r"(?:\s+#.*|\s+\(.*\))?\s*$"
)


def _perf_bad(path: Path, line: int, what: str) -> TraceError:
    return TraceError(path, f"perf stat output: line {line}: {what}")


def _perf_number(text: str, path: Path, line: int, human: bool) -> float | None:
    t = text.strip()
    if t in _NOT:
        return None
    if human:
        t = t.replace(" ", "").replace("'", "")
        if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", t):
            t = t.replace(",", "")
    try:
        v = float(t)
    except ValueError:
        raise _perf_bad(path, line, f"{text.strip()[:40]!r} is not a number") from None
    if not math.isfinite(v) or v < 0 or v > 1e18:
        raise _perf_bad(path, line, f"{text.strip()[:40]!r} is out of range")
    return v


def _perf_cpu(digits: str, path: Path, line: int) -> int:
    """A ``CPU<N>`` prefix's number, below the CPUs a topology may have."""
    from .topology import MAX_CPUS  # (here: see _text)

    if not digits.isascii() or len(digits) > 6 or int(digits) >= MAX_CPUS:
        raise _perf_bad(path, line, f"CPU{sidevalues.shown(digits, 12)} is not a CPU")
    return int(digits)


_UNIT_NS = {"msec": 1e6, "usec": 1e3, "nsec": 1.0, "ns": 1.0, "sec": 1e9, "": 1.0}


def parse_perf_stat(text: str, path) -> PerfStat:
    """``perf stat`` output (its human layout, or ``-x,`` CSV; aggregated or ``-A`` per
    CPU) -> :class:`PerfStat`. Refused in one line: interval output (``-I``), per-socket
    or per-core aggregation, an event given twice, a value that is not a number."""
    path = Path(str(path))
    lines = text.splitlines()
    body = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip() and not ln.startswith("#")]
    csv = bool(body) and all(
        "," in ln and not ln.lstrip().startswith("Performance counter stats") for _, ln in body
    )
    values: dict[tuple[str, int | None], float | None] = {}
    target = None
    elapsed = None

    def put(event: str, cpu: int | None, v: float | None, unit: str, i: int) -> None:
        event = PERF_ALIASES.get(event, event)
        if sidevalues.has_bad_chars(event) or len(event) > 256:
            raise _perf_bad(path, i, f"event name {sidevalues.shown(event)!r} is not a name")
        if unit not in _UNIT_NS:
            raise _perf_bad(path, i, f"unknown unit {unit[:20]!r}")
        if (event, cpu) in values:
            raise _perf_bad(path, i, f"{event[:40]} given twice")
        values[(event, cpu)] = None if v is None else v * _UNIT_NS[unit]

    if csv:
        for i, ln in body:
            parts = ln.split(",")
            cpu = None
            if parts[0].startswith("CPU") and parts[0][3:].isdigit():
                cpu = _perf_cpu(parts[0][3:], path, i)
                parts = parts[1:]
            elif re.match(r"^\s*\d+\.\d+$", parts[0]) and len(parts) > 3 and not parts[2]:
                raise _perf_bad(path, i, "interval output (-I) is not read")
            elif parts[0][:1] in ("S", "N") and re.match(r"^[SN]\d", parts[0]):
                raise _perf_bad(path, i, "per-socket/core/node output is not read")
            if len(parts) < 3 or not parts[2].strip():
                raise _perf_bad(path, i, "not a perf stat -x, line")
            v = _perf_number(parts[0], path, i, human=False)
            put(parts[2].strip(), cpu, v, parts[1].strip(), i)
    else:
        for i, ln in body:
            s = ln.strip()
            m = re.match(r"^Performance counter stats for (.*?):?$", s)
            if m:
                target = m.group(1).strip().strip("'")[:200]
                if sidevalues.has_bad_chars(target):
                    raise _perf_bad(path, i, "the target holds a control character")
                continue
            m = re.match(r"^([0-9.]+) (?:\+- .*)?seconds time elapsed", s)
            if m:
                elapsed = _perf_number(m.group(1), path, i, human=True)
                continue
            if re.match(r"^[0-9.]+ seconds (user|sys)$", s):
                continue
            if re.match(r"^\s*\d+\.\d+\s+(CPU\d+\s+)?[0-9<]", ln) and "time" not in s:
                raise _perf_bad(path, i, "interval output (-I) is not read")
            m = _HUMAN.match(ln)
            if not m:
                raise _perf_bad(path, i, f"not a perf stat line: {s[:40]!r}")
            cpu = _perf_cpu(m.group("cpu")[3:], path, i) if m.group("cpu") else None
            v = _perf_number(m.group("value"), path, i, human=True)
            put(m.group("event"), cpu, v, m.group("unit") or "", i)
    if not values:
        raise TraceError(path, "perf stat output: no counts in it")
    for (event, _cpu), v in values.items():
        if v is not None and event in ("context-switches", "cpu-migrations") and v != int(v):
            raise TraceError(path, f"perf stat output: {event} {v} is not a whole count")
    return PerfStat(str(path), "csv" if csv else "human", target, elapsed, values)


# -- beside a trace ---------------------------------------------------------------------
@dataclass(frozen=True)
class Beside:
    """The kernel's figures found beside a trace."""

    counters: Counters | None
    perf_stat: PerfStat | None


def _text(path: Path, what: str) -> str:
    # bench is imported here, not at the top: record takes its snapshots with this
    # module, and bench's topology imports numpy, whose BLAS threads would take the
    # signals that record blocks in its own thread while it creates its tracefs instance
    from .bench import read_side_file

    return read_side_file(path, MAX_BYTES, what)


def read_beside(trace_path) -> Beside | None:
    """The counters file and the perf stat output beside ``trace_path`` (see the
    module's docstring), or None when neither is there (or no path: stdin). Raises
    TraceError naming a file that is there but unusable."""
    if not trace_path or str(trace_path) == "-":
        return None
    from .bench import own  # (here, not at the top: see _text)

    counters = None
    for p in own(trace_path, ".counters.json"):
        if p.exists():  # (a device or FIFO there is refused, not passed over)
            counters = parse(_text(p, "a counters file"), p)
            break
    perf = None
    names = own(trace_path, ".perf-stat.txt")
    if counters is not None and counters.perf_stat is not None:
        named = Path(str(trace_path)).with_name(counters.perf_stat["file"])
        if not named.is_file():
            raise TraceError(counters.path, f"names perf stat output {named.name}: not there")
        names = [named]
    for p in names:
        if p.exists():
            perf = parse_perf_stat(_text(p, "perf stat output"), p)
            break
    if counters is None and perf is None:
        return None
    return Beside(counters, perf)


__all__ = [
    "FORMAT",
    "VERSION",
    "Counters",
    "Snapshot",
    "CpuCounters",
    "CommandUsage",
    "PerfStat",
    "Beside",
    "snapshot",
    "document",
    "write",
    "parse",
    "parse_perf_stat",
    "read_beside",
    "counters_path",
    "perf_stat_path",
    "marker",
]
