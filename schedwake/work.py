"""The work a run did, so that its counts are read per unit of work, not per second.

A faster run switches more often per second: ``perf bench sched pipe`` pinned to one CPU
did 134,402 operations a second against 18,832 unpinned, and its context switches per
second rose with it, while per operation they fell. ``schedwake compare --work`` and
``schedwake gate --work`` turn every rate of a count (``context_switches_per_s``, the
migration and ping-pong rates) into the same count per unit of work
(``context_switches_per_op``), whose rules then judge what a run cost, not how fast it
went (docs/compare.md, "Per unit of work").

Where the work comes from (:func:`work_of`), per run:

* a number: ``--work 100000`` (every run), ``--work NAME=100000`` (the runs of side NAME);
* ``bench``: the benchmark's own count of operations beside the trace, read from the
  files :mod:`schedwake.bench` reads: fio's JSON (``total_ios`` of every job and
  direction), dbench's output (the sum of its ``Operation Count`` table),
  ``perf bench sched pipe`` (``Executed N pipe operations``) and ``perf bench sched
  messaging`` (groups x senders x receivers x loops, from its output and the command
  line ``schedwake record`` kept in ``TRACE.counters.json``);
* ``cpu``: the CPU time of the recorded command and its children (``TRACE.counters.json``
  of ``schedwake record``: getrusage), in seconds: counts per CPU-second of the workload.

A run without the work asked for is refused with the file and the reason (TraceError),
never given a guessed denominator.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import sidevalues
from .bench import candidates, read_side_file
from .errors import OptionError, TraceError

if TYPE_CHECKING:
    from _typeshed import StrPath

__all__ = [
    "Work",
    "WorkSpec",
    "PER_OP_SUFFIX",
    "parse_work",
    "work_of",
    "per_op_name",
    "per_s_name",
    "is_per_op",
]

#: How a per-work metric's name ends (``context_switches_per_op``).
PER_OP_SUFFIX = "_per_op"
#: What a run's work is: a number of units, or where to find it ("bench", "cpu").
WorkSpec = float | str
SOURCES = ("bench", "cpu")
#: The range of a run's work (given or found): a count per unit of work divides by it,
#: so 5e-324 would make every rate infinite, and 1e300 every rate 0.
MIN_WORK = 1e-9
MAX_WORK = 1e18


@dataclass(frozen=True)
class Work:
    """A run's work: ``value`` units of ``unit`` (``operations``, ``IOs``, ``messages``,
    ``CPU-s``), and where it was found."""

    value: float
    unit: str
    source: str


def per_op_name(per_s: str) -> str:
    """``context_switches_per_s`` -> ``context_switches_per_op``."""
    return per_s[: -len("_per_s")] + PER_OP_SUFFIX


def per_s_name(per_op: str) -> str:
    """``context_switches_per_op`` -> ``context_switches_per_s``."""
    return per_op[: -len(PER_OP_SUFFIX)] + "_per_s"


def is_per_op(name: str) -> bool:
    return name.endswith(PER_OP_SUFFIX) and len(name) > len(PER_OP_SUFFIX)


def parse_work(
    specs: Sequence[str],
    sides: list[str],
    param: str = "--work",
    sources: tuple[str, ...] = SOURCES,
) -> dict[str, WorkSpec]:
    """``--work`` values as ``{side label: spec}``: ``N`` (or one of ``sources``:
    ``bench``, ``cpu``) for every side, ``NAME=N`` for one side; every side must end
    with one. OptionError for a bad value, an unknown side or a side left without work.
    ``sources=()``: numbers only (profile's ``--work``)."""
    every: WorkSpec | None = None
    per_side: dict[str, WorkSpec] = {}
    for spec in specs:
        name, sep, value = str(spec).rpartition("=")
        got = _one(value.strip(), str(spec), param, sources)
        if not sep:
            every = got
        elif name not in sides:
            raise OptionError(param, spec, f"no side named {name!r} ({', '.join(sides)})")
        else:
            per_side[name] = got
    out = {s: per_side.get(s, every) for s in sides}
    left = [s for s, w in out.items() if w is None]
    if left:
        raise OptionError(
            param,
            " ".join(map(str, specs)),
            f"no work for side {', '.join(left)}: give "
            + ("N, " + " or ".join(sources) if sources else "N")
            + " for every run, or NAME=... for each side",
        )
    return {s: w for s, w in out.items() if w is not None}


def _one(value: str, spec: str, param: str, sources: tuple[str, ...]) -> WorkSpec:
    if value in sources:
        return value
    try:
        number = float(value)
    except ValueError:
        why = (
            f"expected a number of units, {' or '.join(sources)} (or NAME=...)"
            if sources
            else "expected N or NAME=N (a number)"
        )
        raise OptionError(param, spec, why) from None
    if not (math.isfinite(number) and MIN_WORK <= number <= MAX_WORK):
        raise OptionError(
            param, spec, f"units of work must be a number from {MIN_WORK:g} to {MAX_WORK:g}"
        )
    return number


def work_of(trace_path: StrPath, spec: WorkSpec) -> Work:
    """The work of the run recorded in ``trace_path`` under ``spec`` (a number, "bench"
    or "cpu"); TraceError naming the file when it cannot be found."""
    if not isinstance(spec, str):
        return Work(float(spec), "units", "given")
    if spec == "cpu":
        return _cpu_time(trace_path)
    if spec == "bench":
        return _bench_ops(trace_path)
    raise OptionError("--work", spec, "expected a number of units, bench or cpu")


def _counters(trace_path: StrPath) -> tuple[dict | None, Path]:
    path = Path(str(trace_path) + ".counters.json")
    if not path.exists():  # (a device or FIFO there is refused when read, not passed over)
        return None, path
    text = read_side_file(path, what="a counters file")
    doc = sidevalues.load_json(text, path, "JSON (a schedwake record counters file)")
    return (doc if isinstance(doc, dict) else None), path


def _cpu_time(trace_path: StrPath) -> Work:
    doc, path = _counters(trace_path)
    cmd = None if doc is None else doc.get("command")
    cpu_ns = cmd.get("cpu_ns") if isinstance(cmd, dict) else None
    if isinstance(cpu_ns, bool) or not isinstance(cpu_ns, (int, float)) or cpu_ns <= 0:
        raise TraceError(
            path,
            "--work cpu needs the recorded command's CPU time (TRACE.counters.json of "
            "schedwake record -- COMMAND); give the work as a number instead",
        )
    return _work(path, float(cpu_ns) / 1e9, "CPU-s", f"{path.name}: command.cpu_ns")


def _work(path: StrPath, value: float, unit: str, source: str) -> Work:
    """A run's work found in a file, in the range a given number must be in
    (:data:`MIN_WORK` to :data:`MAX_WORK`), else a TraceError naming the file."""
    if not (math.isfinite(value) and MIN_WORK <= value <= MAX_WORK):
        raise TraceError(
            path,
            f"--work: {source} gives {sidevalues.shown(f'{value:g}')} {unit}: out of range "
            f"({MIN_WORK:g} to {MAX_WORK:g})",
        )
    return Work(value, unit, source)


_PIPE = re.compile(r"^#?\s*Executed\s+(\d+)\s+pipe operations", re.MULTILINE)
_MSG_GROUPS = re.compile(r"^#\s*(\d+)\s+groups?\s*==\s*(\d+)\s+processes run", re.MULTILINE)
_MSG_FDS = re.compile(r"^#\s*(\d+)\s+sender and receiver processes per group", re.MULTILINE)
_DBENCH_OP = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s+(\d+)\s+[0-9.]+\s+[0-9.]+\s*$")


def _bench_ops(trace_path: StrPath) -> Work:
    """The benchmark's count of operations in the files beside the trace (the first file
    that gives one, in :func:`schedwake.bench.candidates` order)."""
    looked = []
    for kind, path in candidates(trace_path):
        if not path.exists():
            continue
        looked.append(path.name)
        text = read_side_file(path)
        found = None
        if kind in ("fio", "cmd"):
            found = _fio_ios(text, path)
        if found is None and kind in ("dbench", "cmd"):
            found = _dbench_ops(text, path)
        if found is None and kind == "cmd":
            found = _perf_bench_ops(text, path, trace_path)
        if found is not None:
            return found
    where = f" (read: {', '.join(looked)})" if looked else " (no results file beside it)"
    raise TraceError(
        trace_path,
        "--work bench: no count of operations beside the trace" + where + "; fio JSON, "
        "dbench output and perf bench sched pipe/messaging output give one, or give the "
        "work as a number",
    )


def _fio_ios(text: str, path: Path) -> Work | None:
    start = re.search(r"^\{", text, re.MULTILINE)
    if start is None or '"jobs"' not in text:
        return None
    try:
        doc = sidevalues.load_json(text[start.start() :], path)
    except sidevalues.SideValueError:
        return None
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list):
        return None
    total = 0.0
    for job in jobs:
        for d in ("read", "write", "trim"):
            part = job.get(d) if isinstance(job, dict) else None
            ios = part.get("total_ios") if isinstance(part, dict) else None
            if ios is not None:
                total += sidevalues.number(path, f"{d}.total_ios", ios)
    return _work(path, total, "IOs", f"{path.name}: fio total_ios") if total > 0 else None


def _dbench_ops(text: str, path: Path) -> Work | None:
    lines = text.splitlines()
    head = [i for i, ln in enumerate(lines) if re.match(r"^\s*Operation\s+Count\b", ln)]
    if not head:
        return None
    total = 0.0
    for ln in lines[head[-1] + 1 :]:
        m = _DBENCH_OP.match(ln)
        if m:
            total += sidevalues.parsed_number(path, f"dbench {m.group(1)} count", m.group(2))
        elif ln.strip() and not set(ln.strip()) <= {"-"}:
            break
    if not total:
        return None
    return _work(path, total, "operations", f"{path.name}: dbench Operation Count")


def _perf_bench_ops(text: str, path: Path, trace_path: StrPath) -> Work | None:
    m = _PIPE.search(text)
    if m:
        ops = sidevalues.parsed_number(path, "pipe operations", m.group(1))
        return _work(path, ops, "pipe operations", f"{path.name}: perf bench sched pipe")
    groups, fds = _MSG_GROUPS.search(text), _MSG_FDS.search(text)
    if groups is None or fds is None:
        return None
    # messaging: each of a group's senders writes `loops` messages to each receiver
    loops = _messaging_loops(trace_path)
    if loops is None:
        return None
    n_groups = sidevalues.parsed_number(path, "groups", groups.group(1))
    n_fds = sidevalues.parsed_number(path, "sender and receiver processes", fds.group(1))
    return _work(
        path,
        n_groups * n_fds * n_fds * loops,
        "messages",
        f"{path.name} and the command line: perf bench sched messaging "
        f"{n_groups:g} groups x {n_fds:g} x {n_fds:g} x {loops} loops",
    )


def _messaging_loops(trace_path: StrPath) -> int | None:
    """``-l``/``--nr_loops`` of the perf bench sched messaging command line that
    ``schedwake record`` kept (default 100), None when the command line is unknown."""
    doc, _ = _counters(trace_path)
    cmd = None if doc is None else doc.get("command")
    argv = cmd.get("argv") if isinstance(cmd, dict) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return None
    words = " ".join(argv).split()
    if "messaging" not in words:
        return None
    after = words[words.index("messaging") + 1 :]
    for i, w in enumerate(after):
        if w in ("-l", "--nr_loops") and i + 1 < len(after) and _count(after[i + 1]):
            return int(after[i + 1])
        if w.startswith("--nr_loops=") and _count(w.split("=", 1)[1]):
            return int(w.split("=", 1)[1])
        if w.startswith("-l") and _count(w[2:]):
            return int(w[2:])
    return 100


def _count(word: str) -> bool:
    """Whether ``word`` is a count of at most 18 digits (a longer one is no count)."""
    return word.isascii() and word.isdigit() and len(word) <= 18
