"""Record a scheduler trace the way schedwake needs it (``schedwake record``).

What it does, in order (every step that changes tracing state is undone in a
``finally``, also on Ctrl-C, SIGTERM and errors):

1. checks root and tracefs (mounts tracefs at ``/sys/kernel/tracing`` when no tracefs is
   mounted, and unmounts it at the end only in that case);
2. picks a method: ``trace-cmd record`` when a quick probe says it can work on this
   kernel (it needs to write ``/proc/sys/kernel/ftrace_enabled``), otherwise it drives
   tracefs directly (the method that works on the project's machines);
3. tracefs method: creates a private instance ``instances/schedwake-record-PID`` (its own
   ring buffer, event switches and ``tracing_on``, so other tracing users cannot disturb
   it), sizes its ring buffer, raises ``saved_cmdlines_size`` (so every pid keeps its
   comm), enables the events, writes ``schedwake: start`` into its ``trace_marker``,
   switches tracing on, runs the command (or waits ``duration`` seconds, or until
   Ctrl-C), switches tracing off, checks the events were still enabled, reads the ring
   buffer statistics (``overrun`` + ``dropped events`` = lost events), reads each CPU's
   ``per_cpu/cpuN/trace_pipe_raw`` and builds a top-level trace.dat with
   ``trace-cmd restore -c`` + ``trace-cmd restore -i head.dat`` + ``trace-cmd convert
   --compression zstd``;
4. writes the machine's topology as ``<output>.topology.json`` beside the trace (picked up
   by ``schedwake analyze``), and the command's output (stdout and stderr, also shown as
   it runs) as ``<output>.cmd.txt``, where :mod:`schedwake.bench` finds the
   benchmark's results (dbench's ``Throughput`` line, fio's JSON);
5. tracefs method: snapshots the kernel's own counters (:mod:`schedwake.counters`) just
   after tracing is switched on and just before it is switched off, each between two
   ``trace_marker`` lines (``schedwake: counters start begin`` ... ``end``), and writes
   them as ``<output>.counters.json`` (mounting debugfs for the sched debug file when it
   is not mounted, and unmounting it again); with ``perf_stat``, a ``perf stat -a -A``
   enabled and disabled inside those snapshots writes ``<output>.perf-stat.txt``.

SIGINT, SIGTERM and SIGHUP received while the command runs are forwarded to it (a second
one kills it); the trace is still written. Problems that stop a recording raise
:class:`RecordError` (a :class:`~schedwake.TraceError`: one line, exit code 2 in the CLI).
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from .errors import TraceError

#: The events the model and detectors use: (system, event, required).
#: ``event`` ``*`` means every event of the system.
DEFAULT_EVENTS: tuple[tuple[str, str, bool], ...] = (
    ("sched", "sched_waking", True),
    ("sched", "sched_wakeup", True),
    ("sched", "sched_wakeup_new", True),
    ("sched", "sched_migrate_task", True),
    ("sched", "sched_switch", True),
    ("sched", "sched_process_fork", True),
    ("sched", "sched_process_exit", True),
    ("sched", "sched_process_exec", False),
    ("workqueue", "*", False),
)
#: ``--runtime``: each fair task's run time, as ``update_curr()`` accounts it.
RUNTIME_EVENT = ("sched", "sched_stat_runtime", True)

#: Ring buffer per CPU when ``buffer_kb`` is not given: this, or less on a machine with
#: little free memory (at most an eighth of MemAvailable over all CPUs, at least 4 MB).
DEFAULT_BUFFER_KB = 131072
#: ``saved_cmdlines_size`` while recording (the kernel's maximum, PID_MAX_DEFAULT).
CMDLINES = 32768
TRACEFS_DIRS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
INSTANCE_PREFIX = "schedwake-record-"
METHODS = ("auto", "trace-cmd", "tracefs")


class RecordError(TraceError):
    """A recording cannot be made (no root, no tracefs, unknown event, tool failed)."""

    def __init__(self, problem: str, path="record"):
        super().__init__(path, problem)


@dataclass
class RecordResult:
    """What a recording produced and what happened on the way."""

    output: str
    topology: str | None
    method: str
    events: list[str]
    command: list[str] | None
    exit_code: int | None = None  # of the command; None without one
    exit_signal: int | None = None  # the command died of this signal
    interrupted: bool = False  # stopped early by SIGINT/SIGTERM/SIGHUP
    wall_s: float = 0.0
    cpus: int = 0
    buffer_kb: int = 0
    entries: int | None = None  # events left in the ring buffers
    overrun: int | None = None  # overwritten (lost) events, all CPUs
    dropped: int | None = None  # events the kernel could not store
    lost_by_cpu: dict[int, int] = field(default_factory=dict)
    events_intact: bool | None = None  # events still enabled and tracing on at stop
    intact_problem: str = ""
    bytes: int = 0
    clock: str = ""
    missing_optional: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Wall-clock seconds of each phase (set-up, recording, reading the buffers, ...),
    #: in order: where a recording's time goes beyond the recording itself.
    phases: dict[str, float] = field(default_factory=dict)
    kernel: str = ""  # the release stored in the file (its UNAME option)
    counters: str | None = None  # the counters file written beside the trace
    command_pid: int | None = None  # the command's pid
    kallsyms: bool = True  # the kernel's symbol table stored in the file
    perf_stat: str | None = None  # perf stat's output written beside the trace

    @property
    def lost(self) -> int | None:
        if self.overrun is None and self.dropped is None:
            return None
        return (self.overrun or 0) + (self.dropped or 0)


# -- events ----------------------------------------------------------------------------
def parse_events(text: str | None) -> list[tuple[str, str, bool]]:
    """``--events``: comma-separated ``system:event``, ``system:*``, ``system`` or a bare
    ``sched_*``/``workqueue_*`` name. None gives :data:`DEFAULT_EVENTS`."""
    if text is None:
        return list(DEFAULT_EVENTS)
    out: list[tuple[str, str, bool]] = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        if ":" in item:
            system, _, event = item.partition(":")
            event = event or "*"
        elif item.startswith("sched_"):
            system, event = "sched", item
        elif item.startswith("workqueue_"):
            system, event = "workqueue", item
        elif "/" in item:
            system, _, event = item.partition("/")
        else:
            system, event = item, "*"
        if not system or any(c in system + event for c in " /.") or ".." in item:
            raise RecordError(
                f"bad event {item!r} (expected system:event, e.g. sched:sched_switch, or system:*)",
                "--events",
            )
        out.append((system, event, True))
    if not out:
        raise RecordError("no events given", "--events")
    return out


def event_name(system: str, event: str) -> str:
    return f"{system}:{event}"


# -- tracefs ---------------------------------------------------------------------------
def find_tracefs() -> str | None:
    """The mount point of tracefs, or None when it is not mounted."""
    try:
        with open("/proc/mounts") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    points = [m[1] for m in mounts if len(m) > 2 and m[2] == "tracefs"]
    for d in TRACEFS_DIRS:  # the usual places first
        if d in points:
            return d
    return points[0] if points else None


def kernel_has_tracefs() -> bool:
    try:
        with open("/proc/filesystems") as f:
            return any(line.split()[-1:] == ["tracefs"] for line in f)
    except OSError:
        return False


def _read(path) -> str:
    with open(path) as f:
        return f.read()


def _write(path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def parse_stats(text: str) -> dict[str, float]:
    """``per_cpu/cpuN/stats`` -> {"entries": .., "overrun": .., "dropped events": ..}."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        try:
            out[key.strip()] = float(value.split()[0])
        except (ValueError, IndexError):
            pass
    return out


def trace_cmd_record_usable() -> tuple[bool, str]:
    """Can ``trace-cmd record`` work here? Quick and harmless: it writes
    ``/proc/sys/kernel/ftrace_enabled`` (we write back its own value) and uses
    ``set_ftrace_pid``; kernels that refuse either make it fail."""
    if shutil.which("trace-cmd") is None:
        return False, "trace-cmd is not installed"
    p = "/proc/sys/kernel/ftrace_enabled"
    if os.path.exists(p):
        try:
            _write(p, _read(p).strip() + "\n")
        except OSError as exc:
            return False, f"{p}: {exc.strerror}"
    tfs = find_tracefs()
    if tfs and os.path.exists(f"{tfs}/set_ftrace_pid"):
        try:
            _read(f"{tfs}/set_ftrace_pid")
        except OSError as exc:
            return False, f"{tfs}/set_ftrace_pid: {exc.strerror}"
    return True, "probe passed"


def default_buffer_kb(ncpus: int) -> int:
    """:data:`DEFAULT_BUFFER_KB`, or less when memory is short."""
    try:
        for line in _read("/proc/meminfo").splitlines():
            if line.startswith("MemAvailable:"):
                avail_kb = int(line.split()[1])
                return max(4096, min(DEFAULT_BUFFER_KB, avail_kb // 8 // max(ncpus, 1)))
    except (OSError, ValueError, IndexError):
        pass
    return DEFAULT_BUFFER_KB


# -- signals ---------------------------------------------------------------------------
class _Signals:
    """SIGINT/SIGTERM/SIGHUP while recording: forwarded to the command (a second one
    kills it), or stop the wait when there is no command. Outside the recording window
    they raise KeyboardInterrupt so the ``finally`` cleans up."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.child: subprocess.Popen | None = None
        self.recording = False
        self.received: list[int] = []
        self._old: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}

    def __enter__(self):
        for s in self.SIGNALS:
            try:
                self._old[s] = signal.signal(s, self._handle)
            except (ValueError, OSError):  # not the main thread: leave them alone
                pass
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        return False

    def _handle(self, signum, frame):
        self.received.append(signum)
        if not self.recording:
            raise KeyboardInterrupt
        child = self.child
        if child is not None and child.poll() is None:
            try:
                child.send_signal(signum if len(self.received) == 1 else signal.SIGKILL)
            except ProcessLookupError:
                pass

    @property
    def stopped(self) -> bool:
        return bool(self.received)


# -- the recorder ----------------------------------------------------------------------
class _State:
    """What the recording changed, so that ``restore()`` can undo exactly that."""

    def __init__(self, log):
        self.log = log
        self.tracefs: str | None = None
        self.mounted = False
        self.instance: str | None = None
        self.cmdlines_old: int | None = None
        self.cmdlines_set: int | None = None
        self.debugfs: str | None = None  # mounted by us, unmounted at the end
        self.perf: subprocess.Popen | None = None  # record --perf-stat's perf stat

    def restore(self) -> list[str]:
        """Undo everything; returns problems (each also logged), never raises."""
        problems = []
        if self.perf is not None and self.perf.poll() is None:
            self.perf.kill()
            self.perf.wait()
        if self.instance and os.path.isdir(self.instance):
            for name, value in (("tracing_on", "0"), ("set_event", ""), ("trace", "")):
                try:
                    _write(f"{self.instance}/{name}", value)
                except OSError:
                    pass
            for _ in range(50):  # rmdir can be EBUSY for a moment after a reader closed
                try:
                    os.rmdir(self.instance)
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        problems.append(f"cannot remove {self.instance}: {exc.strerror}")
                        break
                    time.sleep(0.1)
            else:
                problems.append(f"cannot remove {self.instance}: busy")
        if self.cmdlines_old is not None and self.tracefs:
            p = f"{self.tracefs}/saved_cmdlines_size"
            try:
                now = int(_read(p).split()[0])
                if now == self.cmdlines_set:  # nobody else changed it meanwhile
                    _write(p, f"{self.cmdlines_old}\n")
            except (OSError, ValueError, IndexError) as exc:
                problems.append(f"cannot restore {p}: {exc}")
        for mounted in (self.debugfs, self.tracefs if self.mounted else None):
            if mounted:
                r = subprocess.run(["umount", mounted], capture_output=True, text=True)
                if r.returncode != 0:
                    problems.append(f"cannot unmount {mounted}: {r.stderr.strip()}")
        for p in problems:
            self.log(f"warning: {p}")
        return problems


def _check_environment(method: str):
    if os.geteuid() != 0:
        raise RecordError(
            "needs root: kernel tracing (tracefs) is root-only; run it as root or with sudo"
        )
    if find_tracefs() is None and not kernel_has_tracefs():
        raise RecordError("this kernel has no tracefs (CONFIG_TRACING off?); cannot record")
    if method != "trace-cmd" and shutil.which("trace-cmd") is None:
        raise RecordError(
            "trace-cmd is not installed (it builds the trace.dat file: apt-get install trace-cmd)"
        )


def record(
    output,
    command=None,
    *,
    events: str | list | None = None,
    buffer_kb: int | None = None,
    duration: float | None = None,
    method: str = "auto",
    log: Callable[[str], None] | None = None,
    cmdlines: int = CMDLINES,
    runtime: bool = False,
    perf_stat: bool = False,
    kallsyms: bool = True,
) -> RecordResult:
    """Record a trace into ``output`` (trace.dat) while ``command`` (a list of argv
    strings) runs, or for ``duration`` seconds, or until SIGINT when neither is given.

    ``events``: ``--events`` text or a list of (system, event, required) tuples
    (default :data:`DEFAULT_EVENTS`); ``buffer_kb``: ring buffer per CPU;
    ``method``: ``auto`` (trace-cmd record if its probe passes, else tracefs),
    ``trace-cmd`` or ``tracefs``. ``log`` gets progress and warning lines.
    ``runtime``: add :data:`RUNTIME_EVENT` (each fair task's run time as the kernel
    accounts it; docs/cli.md, "record", gives its cost); ``perf_stat``: count context
    switches, migrations and CPU clocks with ``perf stat -a -A`` over the counters'
    stretch (tracefs method) into ``<output>.perf-stat.txt``; ``kallsyms``: False leaves
    the kernel's symbol table out of the file (tracefs method: some 1 MB less; workqueue
    work functions are then addresses).
    Raises :class:`RecordError` when no recording can be made.
    """
    log = log or (lambda msg: None)
    if method not in METHODS:
        raise RecordError(f"unknown method {method!r} (one of {', '.join(METHODS)})", "--method")
    if duration is not None and not (math.isfinite(duration) and duration > 0):
        raise RecordError(
            f"duration must be a finite number of seconds > 0, not {duration}", "--duration"
        )
    if buffer_kb is not None and buffer_kb < 1:
        raise RecordError(f"buffer size must be >= 1 KB, not {buffer_kb}", "--buffer-kb")
    evlist = parse_events(events) if events is None or isinstance(events, str) else list(events)
    if runtime and not any(e[:2] in (RUNTIME_EVENT[:2], ("sched", "*")) for e in evlist):
        evlist.append(RUNTIME_EVENT)
    if perf_stat and shutil.which("perf") is None:
        raise RecordError("perf is not installed (apt-get install linux-perf)", "--perf-stat")
    command = list(command) if command else None
    out = Path(output)
    if out.is_dir():
        raise RecordError("is a directory; give a file name such as trace.dat", out)
    if not out.parent.is_dir():
        raise RecordError("its directory does not exist", out)
    _check_environment(method)
    if method == "auto":
        ok, why = trace_cmd_record_usable()
        method = "trace-cmd" if ok else "tracefs"
        log(
            f"trace-cmd record {'can' if ok else 'cannot'} be used here ({why}); "
            f"recording with {'trace-cmd record' if ok else 'a private tracefs instance'}"
        )

    state = _State(log)
    with _Signals() as sig:
        try:
            result = _record(
                out,
                command,
                evlist,
                buffer_kb,
                duration,
                method,
                state,
                sig,
                log,
                cmdlines,
                perf_stat,
                kallsyms,
            )
        finally:
            t = time.monotonic()
            state.restore()
            restored = time.monotonic() - t
    result.phases["restoring the tracing state"] = restored
    log("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in result.phases.items()))
    return result


def _setup_tracefs(state: _State, log) -> str:
    tfs = find_tracefs()
    if tfs is None:
        tfs = TRACEFS_DIRS[0]
        r = subprocess.run(["mount", "-t", "tracefs", "nodev", tfs], capture_output=True, text=True)
        if r.returncode != 0:
            raise RecordError(
                f"tracefs is not mounted and mounting it at {tfs} failed: "
                f"{r.stderr.strip() or r.returncode}"
            )
        state.mounted = True
        log(f"mounted tracefs at {tfs} (unmounted again at the end)")
    state.tracefs = tfs
    return tfs


def _raise_cmdlines(state: _State, tfs: str, want: int, log) -> None:
    p = f"{tfs}/saved_cmdlines_size"
    try:
        old = int(_read(p).split()[0])
    except (OSError, ValueError, IndexError):
        log(f"warning: cannot read {p}; comms of some pids may be missing")
        return
    if old >= want:
        return
    try:
        _write(p, f"{want}\n")
    except OSError as exc:
        log(
            f"warning: cannot raise {p} to {want} ({exc.strerror}); "
            "comms of some pids may be missing"
        )
        return
    state.cmdlines_old, state.cmdlines_set = old, int(_read(p).split()[0])


def _enable_events(inst: str, evlist, log) -> tuple[list[str], list[str]]:
    enabled, missing = [], []
    for system, event, required in evlist:
        path = f"{inst}/events/{system}" + ("" if event == "*" else f"/{event}")
        name = event_name(system, event)
        if not os.path.exists(f"{path}/enable"):
            if required:
                raise RecordError(
                    f"event {name} does not exist in this kernel (no {path})", "--events"
                )
            missing.append(name)
            continue
        try:
            _write(f"{path}/enable", "1\n")
        except OSError as exc:
            raise RecordError(f"cannot enable {name}: {exc.strerror}") from None
        enabled.append(name)
    if missing:
        log(f"not in this kernel, skipped: {', '.join(missing)}")
    return enabled, missing


def _cpu_dirs(inst: str) -> list[tuple[int, str]]:
    base = Path(inst) / "per_cpu"
    cpus = [(int(p.name[3:]), str(p)) for p in base.glob("cpu[0-9]*") if p.name[3:].isdigit()]
    return sorted(cpus)


def command_output(out: Path) -> Path:
    """Where the recorded command's output is kept: ``<output>.cmd.txt``."""
    return out.with_name(out.name + ".cmd.txt")


def _tee(source, keep: Path) -> threading.Thread:
    """Copy what the command writes to ``source`` (a pipe) to our stdout as it comes and
    into ``keep``; returns the copying thread (ends at the command's end of output)."""

    def copy() -> None:
        with open(keep, "wb") as f:
            for chunk in iter(lambda: source.read1(65536), b""):
                f.write(chunk)
                try:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.buffer.flush()
                except (OSError, ValueError, AttributeError):
                    pass  # (no terminal to show it on: it is still kept)

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


def _run_workload(
    command, duration, sig: _Signals, result: RecordResult, log, keep: Path | None = None
) -> None:
    """Run the command (or wait) while tracing is on; fills exit_code/interrupted.
    ``keep``: the file that keeps the command's output (:func:`command_output`)."""
    deadline = None if duration is None else time.monotonic() + duration
    if command is None:
        if deadline is None:
            log("recording; press Ctrl-C to stop")
        while not sig.stopped and (deadline is None or time.monotonic() < deadline):
            time.sleep(
                0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic()))
            )
        result.interrupted = sig.stopped and deadline is not None
        return
    pipe = {} if keep is None else {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
    try:
        proc = subprocess.Popen(command, **pipe)  # type: ignore[call-overload]
    except OSError as exc:
        raise RecordError(f"cannot run {command[0]!r}: {exc.strerror}") from None
    result.command_pid = proc.pid
    copier = None if keep is None else _tee(proc.stdout, keep)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _Signals.SIGNALS)
    try:
        sig.child = proc
        if sig.received:  # came while tracing was on but before the command ran: its too
            proc.send_signal(sig.received[0] if len(sig.received) == 1 else signal.SIGKILL)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    try:
        try:
            proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log(f"duration {duration} s reached; stopping the command (SIGTERM)")
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        if proc.poll() is None:  # an exception on the way: do not leave it behind
            proc.kill()
            proc.wait()
        sig.child = None
        if copier is not None:
            copier.join(5)  # (a child the command left behind may hold the pipe open)
    rc = proc.returncode
    if rc < 0:
        result.exit_signal = -rc
    else:
        result.exit_code = rc
    result.interrupted = sig.stopped


def _record(
    out: Path,
    command,
    evlist,
    buffer_kb,
    duration,
    method,
    state: _State,
    sig: _Signals,
    log,
    cmdlines,
    perf_stat: bool = False,
    kallsyms: bool = True,
) -> RecordResult:
    tfs = _setup_tracefs(state, log)
    ncpus = len([d for d in Path(tfs, "per_cpu").glob("cpu[0-9]*")]) or os.cpu_count() or 1
    kb = buffer_kb or default_buffer_kb(ncpus)
    result = RecordResult(
        output=str(out),
        topology=None,
        method=method,
        events=[],
        command=command,
        buffer_kb=kb,
        cpus=ncpus,
        kallsyms=kallsyms,
    )
    for system, event, required in evlist:  # refuse unknown events before changing anything
        path = Path(tfs, "events", system, "" if event == "*" else event, "enable")
        if required and not path.exists():
            raise RecordError(
                f"event {event_name(system, event)} does not exist in this "
                f"kernel (no {path.parent})",
                "--events",
            )
    _raise_cmdlines(state, tfs, cmdlines, log)
    if method == "trace-cmd":
        _record_trace_cmd(out, command, evlist, kb, duration, state, sig, result, log)
        result.notes.append("no counters file: trace-cmd record marks no stretch for them")
    else:
        kernel = _KernelCounters(out, state, log, perf_stat, result)
        _record_tracefs(out, command, evlist, kb, duration, tfs, state, sig, result, log, kernel)
    _write_topology(out, result, log)
    result.bytes = out.stat().st_size
    if result.lost:
        log(
            f"WARNING: the ring buffer lost {result.lost} events (overrun "
            f"{result.overrun or 0}, dropped {result.dropped or 0}; by CPU: "
            + ", ".join(f"cpu{c} {n}" for c, n in sorted(result.lost_by_cpu.items()) if n)
            + f"); counts from this trace are lower bounds: record a shorter run or "
            f"raise --buffer-kb (now {kb} KB per CPU)"
        )
    if result.events_intact is False:
        log(
            f"WARNING: {result.intact_problem}: another tracing user changed the "
            "recording instance; the trace may miss events"
        )
    return result


def _write_topology(out: Path, result: RecordResult, log) -> None:
    from .topology import Topology

    topo_path = out.with_name(out.name + ".topology.json")
    try:
        topo_path.write_text(Topology.capture().to_json() + "\n")
        result.topology = str(topo_path)
    except (OSError, TraceError) as exc:
        log(f"warning: cannot capture the topology ({exc}); pass --llc to analyze")


def _record_tracefs(
    out: Path,
    command,
    evlist,
    kb,
    duration,
    tfs,
    state: _State,
    sig: _Signals,
    result: RecordResult,
    log,
    kernel: _KernelCounters,
) -> None:
    inst = f"{tfs}/instances/{INSTANCE_PREFIX}{os.getpid()}"
    t_setup = time.monotonic()
    # a signal arriving while the kernel makes the instance (the directory is there
    # before mkdir returns) is held until the state knows it, so that it is removed
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _Signals.SIGNALS)
    try:
        os.mkdir(inst)
        state.instance = inst
    except FileExistsError:
        raise RecordError(
            f"{inst} exists already (another schedwake record of this pid?); remove it with rmdir"
        ) from None
    except OSError as exc:
        raise RecordError(f"cannot create tracefs instance {inst}: {exc.strerror}") from None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    _write(f"{inst}/tracing_on", "0\n")
    try:  # the file's clock must be the clock of the data: use the top level's
        clock = _read(f"{tfs}/trace_clock").split("[")[1].split("]")[0]
        _write(f"{inst}/trace_clock", clock + "\n")
        result.clock = clock
    except (OSError, IndexError):
        pass
    try:
        _write(f"{inst}/buffer_size_kb", f"{kb}\n")
    except OSError as exc:
        raise RecordError(
            f"cannot size the ring buffer to {kb} KB per CPU "
            f"({exc.strerror}); try a smaller --buffer-kb"
        ) from None
    _write(f"{inst}/trace", "")
    result.events, result.missing_optional = _enable_events(inst, evlist, log)
    events_before = sorted(_read(f"{inst}/set_event").split())
    cpus = _cpu_dirs(inst)
    result.cpus = len(cpus)

    log(f"events: {' '.join(result.events)}")
    log(f"recording into {inst} ({kb} KB ring buffer per CPU, {len(cpus)} CPUs)")
    t0 = time.monotonic()
    result.phases["set-up (instance, ring buffer, events)"] = t0 - t_setup
    sig.recording = True
    _write(f"{inst}/tracing_on", "1\n")
    _marker(inst, "schedwake: start")
    kernel.take("start", lambda text: _marker(inst, text))
    try:
        _run_workload(command, duration, sig, result, log, command_output(out))
    finally:
        kernel.take("stop", lambda text: _marker(inst, text))
        _marker(
            inst,
            "schedwake: stop"
            if result.exit_code is None
            else f"schedwake: stop rc={result.exit_code}",
        )
        still_on = _read(f"{inst}/tracing_on").strip() == "1"
        _write(f"{inst}/tracing_on", "0\n")
        sig.recording = False
    result.wall_s = time.monotonic() - t0
    result.phases["recording"] = result.wall_s

    events_after = sorted(_read(f"{inst}/set_event").split())
    problems = []
    if not still_on:
        problems.append("tracing was switched off during the recording")
    gone = sorted(set(events_before) - set(events_after))
    if gone:
        problems.append(f"events disabled during the recording: {', '.join(gone)}")
    result.events_intact = not problems
    result.intact_problem = "; ".join(problems)

    overrun = dropped = entries = 0
    for cpu, d in cpus:
        st = parse_stats(_read(f"{d}/stats"))
        o, dr = int(st.get("overrun", 0)), int(st.get("dropped events", 0))
        overrun, dropped, entries = overrun + o, dropped + dr, entries + int(st.get("entries", 0))
        result.lost_by_cpu[cpu] = o + dr
    result.overrun, result.dropped, result.entries = overrun, dropped, entries

    _extract(inst, cpus, out, result, log)
    kernel.write(result)


class _KernelCounters:
    """The kernel's counters around the recording (:mod:`schedwake.counters`): debugfs
    mounted for the sched debug file when it is not (unmounted by ``_State.restore``),
    ``perf stat`` started disabled for ``--perf-stat`` (enabled and disabled inside the
    snapshots through its control pipe), the command's resource usage, the file."""

    PERF_EVENTS = "context-switches,cpu-migrations,cpu-clock,task-clock"

    def __init__(self, out: Path, state: _State, log, perf_stat: bool, result: RecordResult):
        from . import counters

        self.c = counters
        self.out, self.state, self.log, self.result = out, state, log, result
        self.unavailable = counters.static_unavailable()
        self.snaps: dict[str, dict] = {}
        self.usage: list[dict] = []
        self.perf_fds: tuple[int, int] | None = None
        self._mount_debugfs()
        if perf_stat:
            self._start_perf()

    def _mount_debugfs(self) -> None:
        if os.path.exists(self.c.SCHED_DEBUG):
            return
        d = "/sys/kernel/debug"
        with open("/proc/mounts") as f:
            if any(line.split()[2:3] == ["debugfs"] for line in f):
                return  # mounted, but this kernel has no sched debug file
        r = subprocess.run(["mount", "-t", "debugfs", "none", d], capture_output=True, text=True)
        if r.returncode == 0:
            self.state.debugfs = d
            self.log(f"mounted debugfs at {d} for {self.c.SCHED_DEBUG} (unmounted at the end)")
        else:
            self.unavailable["sched_debug"] = (
                f"debugfs is not mounted and mounting it failed: {r.stderr.strip()[:100]}"
            )

    def _start_perf(self) -> None:
        path = self.c.perf_stat_path(self.out)
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        args = ["perf", "stat", "-a", "-A", "-x,", "-e", self.PERF_EVENTS, "-D", "-1"]
        args += ["--control", f"fd:{ctl_r},{ack_w}", "-o", str(path)]
        try:
            self.state.perf = subprocess.Popen(
                args,
                pass_fds=(ctl_r, ack_w),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C of the recording is not its
            )
        except OSError as exc:
            raise RecordError(f"cannot run perf stat: {exc.strerror}", "--perf-stat") from None
        finally:
            os.close(ctl_r)
            os.close(ack_w)
        self.perf_fds = (ctl_w, ack_r)
        self.perf_args = args

    def _perf(self, command: str) -> bool:
        """``enable``/``disable`` perf stat's counters; True once perf acknowledged."""
        if self.perf_fds is None or self.state.perf is None:
            return False
        ctl, ack = self.perf_fds
        try:
            os.write(ctl, command.encode() + b"\n")
            import select

            if select.select([ack], [], [], 10)[0] and os.read(ack, 64).startswith(b"ack"):
                return True
        except OSError:
            pass
        self.log(f"warning: perf stat did not acknowledge {command!r}; no perf stat output")
        self._stop_perf(keep=False)
        return False

    def _stop_perf(self, keep: bool) -> None:
        proc = self.state.perf
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # it writes its counts and ends
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.perf_fds:
            for fd in self.perf_fds:
                os.close(fd)
            self.perf_fds = None
        self.state.perf = None
        path = self.c.perf_stat_path(self.out)
        if keep and path.is_file() and path.stat().st_size:
            self.result.perf_stat = str(path)
        else:
            self.result.perf_stat = None
            path.unlink(missing_ok=True)

    def take(self, label: str, mark: Callable[[str], None]) -> None:
        """Snapshot ``label`` (``start``/``stop``) with its markers; never raises (a
        failed snapshot only means no counters file)."""
        if label == "start":
            self.usage.append(self.c.rusage_children())
        try:
            inside = None
            if self.perf_fds is not None:
                inside = lambda: self._perf("enable" if label == "start" else "disable")  # noqa: E731
            self.snaps[label] = self.c.snapshot(label, mark, self.unavailable, inside=inside)
        except Exception as exc:  # (an unexpected kernel file layout: no counters)
            self.log(f"warning: cannot take the kernel's counters ({exc}); no counters file")
        if label == "stop":
            self.usage.append(self.c.rusage_children())

    def write(self, result: RecordResult) -> None:
        self._stop_perf(keep=len(self.snaps) == 2)
        if len(self.snaps) != 2:
            return
        command = None
        if result.command and result.command_pid is not None and len(self.usage) == 2:
            a, b = self.usage
            command = {
                "pid": result.command_pid,
                "argv": list(result.command),
                **{k: b[k] - a[k] for k in a},
                "source": "getrusage(RUSAGE_CHILDREN) of the recorder, before and after",
            }
        perf = None
        if result.perf_stat:
            perf = {
                "file": Path(result.perf_stat).name,
                "window": "counters",
                "command": " ".join(self.perf_args[:-2] + ["-o", Path(result.perf_stat).name]),
            }
        doc = self.c.document(
            self.snaps["start"],
            self.snaps["stop"],
            markers=True,
            runtime_events="sched:sched_stat_runtime" in result.events,
            unavailable=self.unavailable,
            command=command,
            perf_stat=perf,
        )
        path = self.c.counters_path(self.out)
        try:
            self.c.write(path, doc)
            result.counters = str(path)
        except OSError as exc:
            self.log(f"warning: cannot write {path}: {exc.strerror}")


def _marker(inst: str, text: str) -> None:
    try:
        _write(f"{inst}/trace_marker", text + "\n")
    except OSError:
        pass


def _subbuf_size(inst: str) -> int:
    try:
        return max(4096, int(_read(f"{inst}/buffer_subbuf_size_kb").split()[0]) * 1024)
    except (OSError, ValueError, IndexError):
        return 4096


def _run(args, what: str, cwd=None) -> subprocess.CompletedProcess:
    r = subprocess.run(args, capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()
        raise RecordError(
            f"{what} failed (exit {r.returncode}): {tail[-1].strip() if tail else 'no message'}"
        )
    return r


def _extract(inst: str, cpus, out: Path, result: RecordResult, log) -> None:
    """Each CPU's trace_pipe_raw -> cpuN.raw -> trace-cmd restore/convert -> out."""
    page = _subbuf_size(inst)
    tmp = Path(tempfile.mkdtemp(prefix=".schedwake-record-", dir=out.parent))
    clock = time.monotonic()

    def phase(name: str) -> None:
        nonlocal clock
        now = time.monotonic()
        result.phases[name] = now - clock
        clock = now

    try:
        files = []
        for cpu, d in cpus:
            f = tmp / f"cpu{cpu}.raw"
            fd = os.open(f"{d}/trace_pipe_raw", os.O_RDONLY | os.O_NONBLOCK)
            try:
                with open(f, "wb") as w:
                    while True:
                        try:
                            b = os.read(fd, page)
                        except BlockingIOError:
                            break
                        if not b:
                            break
                        w.write(b)
            finally:
                os.close(fd)
            files.append(str(f))
        phase("reading the ring buffers")
        head, raw = tmp / "head.dat", tmp / "raw.dat"
        header = ["trace-cmd", "restore", "-c", "-o", str(head)]
        if not result.kallsyms:  # an empty symbol table
            (tmp / "kallsyms").write_text("")
            header[3:3] = ["-k", str(tmp / "kallsyms")]
        _run(header, "trace-cmd restore -c")
        _run(["trace-cmd", "restore", "-i", str(head), "-o", str(raw)] + files, "trace-cmd restore")
        phase("trace-cmd restore")
        final = tmp / "trace.dat"
        r = subprocess.run(
            ["trace-cmd", "convert", "-i", str(raw), "-o", str(final), "--compression", "zstd"],
            capture_output=True,
            text=True,
        )
        phase("trace-cmd convert")
        if r.returncode == 0 and final.exists():
            result.kernel = add_uname(final)
        if r.returncode != 0 or not final.exists():
            result.notes.append("trace-cmd convert failed; the trace.dat is uncompressed")
            log(
                "warning: trace-cmd convert --compression zstd failed; "
                "writing the uncompressed trace.dat"
            )
            final = raw
        os.replace(final, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def add_uname(path: Path) -> str:
    """Store this machine's ``uname`` in the trace.dat v7 ``path`` as trace-cmd record
    does (UNAME "sysname nodename release machine" and VERSION options), in an options
    section appended at the end and linked from the last one (found by
    :func:`schedwake.ingest.tracedat_layout.check`); returns the release ("" when the
    file already names its kernel or its options chain ends compressed: left as it is).
    ``trace-cmd restore`` writes no UNAME, and without one the analysis says "kernel
    unknown"."""
    import struct

    from .ingest import tracedat_layout as layout

    found = layout.check(path)
    if found["version"] != 7 or layout.OPT_UNAME in found["options"] or not found["last_done"]:
        return ""
    done_at, desc = found["last_done"]
    e = found["endian"]
    u = os.uname()
    text = f"{u.sysname} {u.nodename} {u.release} {u.machine}".encode() + b"\0"
    version = u.version.encode() + b"\0"  # "#1 SMP PREEMPT_DYNAMIC ...", as trace-cmd
    body = struct.pack(e + "HI", layout.OPT_UNAME, len(text)) + text
    body += struct.pack(e + "HI", layout.OPT_VERSION, len(version)) + version
    body += struct.pack(e + "HIQ", layout.OPT_DONE, 8, 0)
    with open(path, "r+b") as f:
        at = f.seek(0, 2)
        f.write(struct.pack(e + "HHIQ", 0, 0, desc, len(body)) + body)
        f.seek(done_at)
        f.write(struct.pack(e + "Q", at))
    return u.release


def _record_trace_cmd(
    out: Path,
    command,
    evlist,
    kb,
    duration,
    state: _State,
    sig: _Signals,
    result: RecordResult,
    log,
) -> None:
    """``trace-cmd record -B INSTANCE`` (only where its probe passed). The command runs
    under a shell wrapper that stores its exit code, since trace-cmd returns its own."""
    name = f"{INSTANCE_PREFIX}{os.getpid()}"
    state.instance = f"{state.tracefs}/instances/{name}"  # removed if trace-cmd leaves it
    tmp = Path(tempfile.mkdtemp(prefix=".schedwake-record-", dir=out.parent))
    try:
        args = ["trace-cmd", "record", "-b", str(kb), "-B", name]
        for system, event, required in evlist:
            path = f"{state.tracefs}/events/{system}" + ("" if event == "*" else f"/{event}")
            if not os.path.exists(path):
                if required:
                    raise RecordError(
                        f"event {event_name(system, event)} does not exist in this kernel",
                        "--events",
                    )
                result.missing_optional.append(event_name(system, event))
                continue
            args += ["-e", event_name(system, event)]
            result.events.append(event_name(system, event))
        rcfile = tmp / "rc"
        args += ["-o", str(tmp / "trace.dat")]
        if command:  # (its output goes to a file: trace-cmd's own output is not shown)
            args += ["--", "sh", "-c", '"$@" > "$0.out" 2>&1; echo $? > "$0"', str(rcfile)]
            args += command
        t0 = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sig.recording, sig.child = True, proc
        deadline = None if duration is None else t0 + duration
        try:
            while proc.poll() is None:
                if deadline is not None and time.monotonic() >= deadline:
                    proc.send_signal(signal.SIGINT)  # trace-cmd stops and writes the file
                    deadline = None
                if not command and duration is None and sig.stopped:
                    break
                time.sleep(0.05)
            output = proc.communicate()[0]
        finally:
            sig.recording, sig.child = False, None
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        result.wall_s = time.monotonic() - t0
        result.interrupted = sig.stopped and (bool(command) or duration is not None)
        result.phases["recording (trace-cmd record)"] = result.wall_s
        if not (tmp / "trace.dat").exists():
            tail = output.strip().splitlines()
            raise RecordError(
                f"trace-cmd record failed (exit {proc.returncode}): "
                f"{tail[-1].strip() if tail else 'no message'}"
            )
        if command:
            try:
                rc = int(_read(rcfile).split()[0])
                if rc > 128:
                    result.exit_signal = rc - 128
                else:
                    result.exit_code = rc
            except (OSError, ValueError, IndexError):
                pass
            kept = Path(str(rcfile) + ".out")
            if kept.is_file():
                os.replace(kept, command_output(out))
                try:  # (trace-cmd held it while the command ran: shown now)
                    sys.stdout.buffer.write(command_output(out).read_bytes())
                    sys.stdout.buffer.flush()
                except (OSError, ValueError, AttributeError):
                    pass
        os.replace(tmp / "trace.dat", out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    from .trace import load

    try:  # trace-cmd stores the ring-buffer statistics in the file
        meta = load(out, events=[]).meta
        lost = meta.lost_events
        result.lost_by_cpu = {int(c): int(n) for c, n in lost.items()}
        result.overrun, result.dropped = sum(result.lost_by_cpu.values()), 0
        result.entries = sum(meta.event_counts.values())
        result.clock = meta.clock or ""
    except TraceError as exc:
        result.notes.append(f"cannot read back the trace: {exc}")


__all__ = [
    "record",
    "RecordResult",
    "RecordError",
    "DEFAULT_EVENTS",
    "parse_events",
    "trace_cmd_record_usable",
    "find_tracefs",
]
