"""Read trace *text* into the canonical tables: raw ftrace text, ``trace-cmd report``
text and ``perf script`` text (and ``perf.data`` through ``perf script``), plain or
compressed with gzip, xz, zstd or bzip2.

Text has no format files, so this module keeps the field layouts of the sched and
workqueue events of several kernel generations (:data:`LAYOUTS`). Each layout has
one or more *variants*: the argument text the kernel (``key=value``), ``trace-cmd
report -R`` (raw numbers) or the libtraceevent sched plugins (``comm:pid [prio]``)
print. The compiled scanner :mod:`schedwake.ingest._textscan` tokenizes the text in
bulk, chunk by chunk, and matches every line against those variants; this module
turns the column buffers into Arrow tables typed exactly like the trace.dat reader's
(``schema.py``). Events outside :data:`LAYOUTS` keep their raw argument string in an
``args`` column plus one string column per ``key=value`` pair.

Known losses of the text formats, by construction:

* timestamps are only as precise as the text (microseconds unless ``-t``/``--ns``);
* ``trace-cmd report -l`` cuts the prefix comm to 8 characters;
* the sched_switch plugin of libtraceevent 1.7 prints ``R+`` as ``R`` (the preempted
  bit is lost) and uses an old letter table (``W`` for ``I``), decoded back here;
* ``common_flags``/``common_preempt_count`` exist only where the line has the
  latency column (raw ftrace text, ``trace-cmd report`` from 3.2 on or ``-l``);
* text is bytes (a task name is whatever ``prctl(PR_SET_NAME)`` was given): bytes
  that are not UTF-8 become U+FFFD, one per maximal invalid subpart, the rule of
  Python's ``bytes.decode("utf-8", "replace")`` and of the trace.dat readers, so two
  names that differ only in such bytes read the same.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import IO, NamedTuple, Protocol, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..compressed import PROGRAMS, compression, no_zstd
from ..errors import TraceError
from ..schema import COMMON_NAMES, LOST_EVENTS_SCHEMA, STRING, event_schema, field_name
from ..symbols.kernel import read_kallsyms, running_kernel_ignored
from .meta import TraceMeta
from .raw import Progress, RawTrace
from .text_damage import MAX_CPUS, MAX_LINE_BYTES, Assessment, assess

_textscan: ModuleType | None  # None: the package was not built
try:
    from . import _textscan
except ImportError as exc:  # pragma: no cover - only when the package was not built
    _textscan = None
    _IMPORT_ERROR = exc

#: Bytes handed to the scanner at a time; memory use is bounded by this, not the file.
CHUNK_BYTES = 8 << 20

_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, which some editors write
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CR_TO_LF = bytes.maketrans(b"\r", b"\n")

MODES = {"ftrace-text": 0, "trace-cmd-report": 1, "perf-script": 2, "perf.data": 2}
#: latency-flag character tables: 0 = kernel printer, 1 = libtraceevent
FLAG_TABLES = {"ftrace-text": 0, "trace-cmd-report": 1, "perf-script": 1, "perf.data": 1}

I8, I32, I64, U8, U32, U64 = pa.int8(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()

# ----------------------------------------------------------------- field layouts
#
# A variant is (pattern, {field: Arrow type}). Pattern placeholders are
# {field:kind}: d integer, x hex pointer, s string, f %ps symbol (" [module]" is
# dropped), b "true"/"false", S prev_state letters as the kernel prints them,
# P prev_state letters as the libtraceevent sched_switch plugin prints them.
# Variants are tried in order; a line that matches none is counted as unparsed.

_COMM_PID_PRIO = {"comm": STRING, "pid": I32, "prio": I32}
_WAKEUP = {
    "variants": [
        (
            "comm={comm:s} pid={pid:d} prio={prio:d} target_cpu={target_cpu:d}",
            {**_COMM_PID_PRIO, "target_cpu": I32},
        ),
        (
            "comm={comm:s} pid={pid:d} prio={prio:d} success={success:d} target_cpu={target_cpu:d}",
            {**_COMM_PID_PRIO, "success": I32, "target_cpu": I32},
        ),
        (
            "comm={comm:s} pid={pid:d} prio={prio:d} success={success:d}",
            {**_COMM_PID_PRIO, "success": I32},
        ),
        # libtraceevent sched_wakeup plugin
        ("{comm:s}:{pid:d} [{prio:d}] CPU:{target_cpu:d}", {**_COMM_PID_PRIO, "target_cpu": I32}),
        (
            "{comm:s}:{pid:d} [{prio:d}] success={success:d} CPU:{target_cpu:d}",
            {**_COMM_PID_PRIO, "success": I32, "target_cpu": I32},
        ),
        ("{comm:s}:{pid:d} [{prio:d}] success={success:d}", {**_COMM_PID_PRIO, "success": I32}),
    ],
}
_SWITCH_TYPES = {
    "prev_comm": STRING,
    "prev_pid": I32,
    "prev_prio": I32,
    "prev_state": I64,
    "next_comm": STRING,
    "next_pid": I32,
    "next_prio": I32,
}
_WQ_WORK = {"work": U64, "function": STRING}

LAYOUTS: dict[str, dict] = {
    "sched_switch": {
        "variants": [
            (
                "prev_comm={prev_comm:s} prev_pid={prev_pid:d} prev_prio={prev_prio:d} "
                "prev_state={prev_state:S} ==> next_comm={next_comm:s} next_pid={next_pid:d} "
                "next_prio={next_prio:d}",
                _SWITCH_TYPES,
            ),
            # trace-cmd report -R: raw numbers, no "==>"
            (
                "prev_comm={prev_comm:s} prev_pid={prev_pid:d} prev_prio={prev_prio:d} "
                "prev_state={prev_state:d} next_comm={next_comm:s} next_pid={next_pid:d} "
                "next_prio={next_prio:d}",
                _SWITCH_TYPES,
            ),
            # libtraceevent sched_switch plugin (optionally followed by "Latency: ...")
            (
                "{prev_comm:s}:{prev_pid:d} [{prev_prio:d}] {prev_state:P} ==> "
                "{next_comm:s}:{next_pid:d} [{next_prio:d}]",
                _SWITCH_TYPES,
                "trailing",
            ),
        ],
    },
    "sched_waking": _WAKEUP,
    "sched_wakeup": _WAKEUP,
    "sched_wakeup_new": _WAKEUP,
    "sched_migrate_task": {
        "variants": [
            (
                "comm={comm:s} pid={pid:d} prio={prio:d} "
                "orig_cpu={orig_cpu:d} dest_cpu={dest_cpu:d}",
                {**_COMM_PID_PRIO, "orig_cpu": I32, "dest_cpu": I32},
            )
        ]
    },
    "sched_process_fork": {
        "variants": [
            (
                "comm={parent_comm:s} pid={parent_pid:d} "
                "child_comm={child_comm:s} child_pid={child_pid:d}",
                {"parent_comm": STRING, "parent_pid": I32, "child_comm": STRING, "child_pid": I32},
            )
        ]
    },
    "sched_process_exit": {
        "variants": [
            (
                "comm={comm:s} pid={pid:d} prio={prio:d} group_dead={group_dead:b}",
                {**_COMM_PID_PRIO, "group_dead": U8},
            ),
            ("comm={comm:s} pid={pid:d} prio={prio:d}", _COMM_PID_PRIO),
        ]
    },
    "sched_process_free": {
        "variants": [("comm={comm:s} pid={pid:d} prio={prio:d}", _COMM_PID_PRIO)]
    },
    "sched_process_wait": {
        "variants": [("comm={comm:s} pid={pid:d} prio={prio:d}", _COMM_PID_PRIO)]
    },
    "sched_wait_task": {"variants": [("comm={comm:s} pid={pid:d} prio={prio:d}", _COMM_PID_PRIO)]},
    "sched_process_exec": {
        "variants": [
            (
                "filename={filename:s} pid={pid:d} old_pid={old_pid:d}",
                {"filename": STRING, "pid": I32, "old_pid": I32},
            )
        ]
    },
    "sched_process_hang": {
        "variants": [("comm={comm:s} pid={pid:d}", {"comm": STRING, "pid": I32})]
    },
    "sched_kthread_stop": {
        "variants": [("comm={comm:s} pid={pid:d}", {"comm": STRING, "pid": I32})]
    },
    "sched_kthread_stop_ret": {"variants": [("ret={ret:d}", {"ret": I32})]},
    "sched_prepare_exec": {
        "variants": [
            (
                "interp={interp:s} filename={filename:s} pid={pid:d} comm={comm:s}",
                {"interp": STRING, "filename": STRING, "pid": I32, "comm": STRING},
            )
        ]
    },
    "sched_wake_idle_without_ipi": {"variants": [("cpu={cpu:d}", {"cpu": I32})]},
    # ftrace:print (trace_marker, trace_printk); raw ftrace text prints no event name for
    # it ("tracing_mark_write: lab: start"), see _ftrace_print_table()
    "print": {
        "variants": [
            ("ip={ip:f} buf={buf:s}", {"ip": STRING, "buf": STRING}),  # -R
            ("{ip:f}: {buf:s}", {"ip": STRING, "buf": STRING}),
        ]
    },
    "sched_stat_runtime": {
        "variants": [
            (
                "comm={comm:s} pid={pid:d} runtime={runtime:d} [ns]",
                {"comm": STRING, "pid": I32, "runtime": U64},
            ),
            (
                "comm={comm:s} pid={pid:d} runtime={runtime:d} [ns] vruntime={vruntime:d} [ns]",
                {"comm": STRING, "pid": I32, "runtime": U64, "vruntime": U64},
            ),
        ]
    },
    **{
        f"sched_stat_{k}": {
            "variants": [
                (
                    "comm={comm:s} pid={pid:d} delay={delay:d} [ns]",
                    {"comm": STRING, "pid": I32, "delay": U64},
                )
            ]
        }
        for k in ("wait", "sleep", "iowait", "blocked")
    },
    "sched_pi_setprio": {
        "variants": [
            (
                "comm={comm:s} pid={pid:d} oldprio={oldprio:d} newprio={newprio:d}",
                {"comm": STRING, "pid": I32, "oldprio": I32, "newprio": I32},
            )
        ]
    },
    "sched_move_numa": {
        "variants": [
            (
                "pid={pid:d} tgid={tgid:d} ngid={ngid:d} src_cpu={src_cpu:d} src_nid={src_nid:d} "
                "dst_cpu={dst_cpu:d} dst_nid={dst_nid:d}",
                {
                    k: I32
                    for k in ("pid", "tgid", "ngid", "src_cpu", "src_nid", "dst_cpu", "dst_nid")
                },
            )
        ]
    },
    **{
        name: {"variants": [(" ".join(f"{k}={{{k}:d}}" for k in _NUMA2), {k: I32 for k in _NUMA2})]}
        for name in ("sched_stick_numa", "sched_swap_numa")
        for _NUMA2 in [
            (
                "src_pid",
                "src_tgid",
                "src_ngid",
                "src_cpu",
                "src_nid",
                "dst_pid",
                "dst_tgid",
                "dst_ngid",
                "dst_cpu",
                "dst_nid",
            )
        ]
    },
    "sched_kthread_work_execute_start": {
        "variants": [("work struct {work:x}: function {function:f}", _WQ_WORK)]
    },
    "sched_kthread_work_execute_end": {
        "variants": [("work struct {work:x}: function {function:f}", _WQ_WORK)]
    },
    "sched_kthread_work_queue_work": {
        "variants": [
            (
                "work struct={work:x} function={function:f} worker={worker:x}",
                {**_WQ_WORK, "worker": U64},
            )
        ]
    },
    "workqueue_queue_work": {
        "variants": [
            # <= ~5.x: workqueue printed as a pointer, req_cpu/cpu unsigned (%u): an
            # unbound pool prints cpu=4294967295, kept as uint32 like the format says.
            (
                "work struct={work:x} function={function:f} workqueue={workqueue:x} "
                "req_cpu={req_cpu:d} cpu={cpu:d}",
                {**_WQ_WORK, "workqueue": U64, "req_cpu": U32, "cpu": U32},
            ),
            # later: workqueue name string; 6.x: int req_cpu/cpu (%d, cpu=-1). A
            # 4294967295 from the in-between kernels (%u) wraps to int32 -1.
            (
                "work struct={work:x} function={function:f} workqueue={workqueue:s} "
                "req_cpu={req_cpu:d} cpu={cpu:d}",
                {**_WQ_WORK, "workqueue": STRING, "req_cpu": I32, "cpu": I32},
            ),
        ],
        "current": 1,
    },  # the layout of today's kernels (for tables of absent events)
    "workqueue_activate_work": {
        "variants": [
            ("work struct {work:x} function={function:f}", _WQ_WORK),
            ("work struct {work:x}", {"work": U64}),
        ]
    },
    "workqueue_execute_start": {
        "variants": [("work struct {work:x}: function {function:f}", _WQ_WORK)]
    },
    "workqueue_execute_end": {
        "variants": [
            ("work struct {work:x}: function {function:f}", _WQ_WORK),
            ("work struct {work:x}", {"work": U64}),
        ]
    },
}

#: subsystem of the events in LAYOUTS (raw ftrace and report text do not print it)
KNOWN_SYSTEMS = {name: name.split("_")[0] for name in LAYOUTS}
KNOWN_SYSTEMS["print"] = "ftrace"

# prev_state bit tables. Kernel >= 4.14 (TASK_REPORT): S D T t X Z P I, "+" = 0x100.
STATE_NEW = {
    "S": 0x01,
    "D": 0x02,
    "T": 0x04,
    "t": 0x08,
    "X": 0x10,
    "Z": 0x20,
    "P": 0x40,
    "I": 0x80,
    "+": 0x100,
}
# Kernel <= 4.13: S D T t Z X x K W P N, "+" = TASK_STATE_MAX (2048 on 4.2-4.13).
STATE_OLD = {
    "S": 1,
    "D": 2,
    "T": 4,
    "t": 8,
    "Z": 16,
    "X": 32,
    "x": 64,
    "K": 128,
    "W": 256,
    "P": 512,
    "N": 1024,
    "+": 2048,
}
# libtraceevent 1.7 sched_switch plugin ("SDTtZXxW", no "+").
STATE_PLUGIN = {"S": 1, "D": 2, "T": 4, "t": 8, "Z": 16, "X": 32, "x": 64, "W": 128}

_K = {"d": 1, "x": 2, "s": 3, "f": 4, "b": 3, "S": 5, "P": 5}
_PLACEHOLDER = re.compile(r"\{(\w+):(\w)\}")


_RAW_KIND = {"S": "d", "P": "d", "b": "d"}


def _with_raw_variants(variants):
    """``trace-cmd report -R`` prints every field as ``name=value`` in format order,
    numbers raw: add that variant for every field set."""
    out = list(variants)
    seen = {v[0] for v in variants}
    for v in variants:
        fields = _PLACEHOLDER.findall(v[0])
        pattern = " ".join(f"{n}={{{n}:{_RAW_KIND.get(k, k)}}}" for n, k in fields)
        if pattern not in seen:
            seen.add(pattern)
            out.append((pattern, v[1]))
    return out


def _compile_layouts():
    """(C specs, Python descriptions) of LAYOUTS.

    A slot is one (field, kind) pair of an event; variants of one event that print a
    field the same way share its slot."""
    cspecs, described = {}, {}
    for event, lay in LAYOUTS.items():
        slots: list[tuple[str, str]] = []
        variants = []
        cvariants = []
        for v in _with_raw_variants(lay["variants"]):
            pattern, types = v[0], v[1]
            trailing = len(v) > 2 and v[2] == "trailing"
            items, fields = [], []
            pos = 0
            for m in _PLACEHOLDER.finditer(pattern):
                if m.start() > pos:
                    items.append((0, pattern[pos : m.start()].encode(), 0))
                name, kind = m.group(1), m.group(2)
                key = (name, kind)
                if key not in slots:
                    slots.append(key)
                items.append((_K[kind], b"", slots.index(key)))
                fields.append((name, kind, slots.index(key)))
                pos = m.end()
            if pos < len(pattern):
                items.append((0, pattern[pos:].encode(), 0))
            cvariants.append((trailing, tuple(items)))
            variants.append({"fields": fields, "types": types})
        widths = []
        for name, kind in slots:
            if kind in ("s", "f", "b"):
                widths.append(4)  # string ids
            elif kind in ("S", "P"):
                widths.append(8)  # letter masks
            else:
                types = [
                    v["types"][name]
                    for v in variants
                    if any(f == name and k == kind for f, k, _ in v["fields"])
                ]
                widths.append(8 if any(t.bit_width > 32 for t in types) else 4)
        cspecs[event.encode()] = (
            tuple(_K[k] | (w << 8) for (_, k), w in zip(slots, widths)),
            cvariants,
        )
        described[event] = {"slots": slots, "variants": variants, "widths": widths}
    return cspecs, described


_CSPECS, _DESCRIBED = _compile_layouts()

# ------------------------------------------------------------------- input files


class _Stream(Protocol):
    """What _Source reads the decompressed bytes from: a file, a decompressing file
    object, or a pipe from a program."""

    def readinto(self, buffer: memoryview, /) -> int | None: ...

    def close(self) -> None: ...


class _Decompressor(Protocol):
    def decompress(self, data: bytes, max_length: int, /) -> bytes: ...


class _Source:
    """The decompressed bytes of a trace file, read in chunks.

    gzip goes through Python's zlib (faster than the gzip program, and it releases the
    GIL, so the reader thread inflates while the scanner scans). xz, zstd and bzip2 are
    piped through the system's program when it exists (another process, another core),
    else Python's own module (``zstandard`` for zstd, if installed). ``perf.data`` is
    piped through ``perf script --ns``, given ``kallsyms`` (a file, plain or compressed:
    a private plain copy of it) with ``--kallsyms``; without one, while
    :func:`running_kernel_ignored`, an empty kallsyms (perf then names no kernel
    address from this machine's, as schedwake's own reader does not)."""

    def __init__(self, path: Path, perf: bool = False, kallsyms=None):
        self.path = path
        self.kallsyms_copy: str | None = None
        # (a perf record --threads directory: progress is that of its header file)
        first = path / "data" if perf and path.is_dir() else path
        self.size = max(first.stat().st_size, 1)
        self.proc: subprocess.Popen[bytes] | None = None
        self.raw = open(first, "rb")
        self.stderr: IO[bytes] | None = None
        self.kind = "perf.data" if perf else compression(path)
        self.stream: _Stream | None = None
        if perf:
            exe = shutil.which("perf")
            if exe is None:
                self.close(check=False)
                raise TraceError(
                    path,
                    "is a perf.data file, and reading it needs `perf script`, "
                    "but perf is not installed (install linux-perf, or "
                    "convert it with `perf script` elsewhere)",
                )
            try:
                kallsyms_arg = self._kallsyms_file(kallsyms)
            except TraceError:
                self.close(check=False)
                raise
            symbols = [] if kallsyms_arg is None else ["--kallsyms", kallsyms_arg]
            self._spawn(
                [exe, "script", "--header", "--ns", "--show-lost-events", *symbols]
                + ["-i", str(path)],
                stdin=subprocess.DEVNULL,
            )
        elif self.kind is None:
            self.stream = self.raw
        elif self.kind == "gzip":
            # zlib inflates about twice as fast as the gzip program here, and it releases
            # the GIL, so the reader thread decompresses while the scanner scans
            self.stream = gzip.GzipFile(fileobj=self.raw)
        else:
            exe = shutil.which(PROGRAMS[self.kind][0])
            if exe is not None:
                self._spawn([exe] + PROGRAMS[self.kind][1:], stdin=self.raw)
            elif self.kind == "xz":
                self.stream = lzma.LZMAFile(self.raw)
            elif self.kind == "bzip2":
                self.stream = bz2.BZ2File(self.raw)
            else:
                try:
                    import zstandard
                except ImportError:
                    self.raw.close()
                    raise no_zstd(path) from None
                self.stream = zstandard.ZstdDecompressor().stream_reader(self.raw)

    def _kallsyms_file(self, kallsyms) -> str | None:
        """What perf script gets as ``--kallsyms`` (None: nothing)."""
        if kallsyms is None:
            return os.devnull if running_kernel_ignored() else None
        text = read_kallsyms(kallsyms)  # checked: a bad file is named in one line
        fd, self.kallsyms_copy = tempfile.mkstemp(prefix="schedwake-kallsyms-")
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        return self.kallsyms_copy

    def _spawn(self, argv, stdin):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            argv, stdin=stdin, stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0
        )
        self.stream = cast(_Stream, self.proc.stdout)  # bufsize=0: a raw FileIO

    def readinto(self, mv: memoryview) -> int:
        """Fill ``mv`` as far as the data goes; 0 only at the end."""
        total = 0
        assert self.stream is not None  # set by __init__ for every kind
        try:
            while total < len(mv):
                n = self.stream.readinto(mv[total:])
                if not n:
                    break
                total += n
        except (EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
            raise TraceError(self.path, f"truncated or corrupt {self.kind} data ({exc})") from None
        except Exception as exc:  # zstandard.ZstdError and friends
            if self.kind in ("zstd", "gzip", "xz", "bzip2"):
                raise TraceError(
                    self.path, f"truncated or corrupt {self.kind} data ({exc})"
                ) from None
            raise
        return total

    def fraction(self) -> float:
        """Share of the input file consumed so far."""
        try:
            return min(os.lseek(self.raw.fileno(), 0, os.SEEK_CUR) / self.size, 1.0)
        except OSError:
            return 0.0

    def close(self, check: bool = True):
        """Close everything; with ``check``, a decompressor failure is a TraceError."""
        err = None
        if self.proc is not None:
            if not check and self.proc.poll() is None:
                self.proc.kill()
            assert self.proc.stdout is not None and self.stderr is not None  # see _spawn
            self.proc.stdout.close()
            rc = self.proc.wait()
            if check and rc != 0:
                self.stderr.seek(0)
                lines = self.stderr.read().decode(errors="replace").strip().splitlines()
                msg = lines[-1] if lines else f"exit code {rc}"
                if self.kind == "perf.data":
                    err = f"`perf script` failed: {msg}"
                else:
                    err = f"truncated or corrupt {self.kind} data ({msg})"
            self.stderr.close()
        elif self.stream is not None and self.stream is not self.raw:
            self.stream.close()
        self.raw.close()
        if self.kallsyms_copy is not None:
            os.unlink(self.kallsyms_copy)
            self.kallsyms_copy = None
        if err:
            raise TraceError(self.path, err)


def _head(path: Path, nbytes: int = 65536) -> bytes:
    """The first ``nbytes`` of the decompressed text (without spawning perf)."""
    kind = compression(path)
    decompressors: dict[str, Callable[[], _Decompressor]] = {
        "gzip": lambda: zlib.decompressobj(wbits=31),
        "xz": lzma.LZMADecompressor,
        "bzip2": bz2.BZ2Decompressor,
    }
    with open(path, "rb") as raw:
        if kind is None:
            return raw.read(nbytes)
        if kind in decompressors:
            # what the first MiB gives, also when the file is cut short (the reader
            # then says that it is): a truncated trace is not "not a trace"
            try:
                return decompressors[kind]().decompress(raw.read(1 << 20), nbytes)
            except (EOFError, OSError, lzma.LZMAError, zlib.error):
                return b""
    # zstd
    exe = shutil.which("zstd")
    if exe:
        with open(path, "rb") as raw:
            p = subprocess.Popen(
                [exe, "-dcq"], stdin=raw, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
            out = p.stdout
            assert out is not None  # stdout=PIPE
            data = out.read(nbytes)
            p.kill()
            out.close()
            p.wait()
        return data
    try:
        import zstandard
    except ImportError:
        return b""
    with open(path, "rb") as raw:
        try:
            return zstandard.ZstdDecompressor().stream_reader(raw).read(nbytes)
        except Exception:
            return b""


# ------------------------------------------------------------------------- sniff

# (the comm ends on a non-blank: `\S.*?\s+` would retry every blank of a long run of them
# as the comm's end, quadratic in the line's length: 11 s for one 16 KB line of blanks)
_RE_PERF = re.compile(
    rb"^\s*\S(?:.*?\S)?\s+-?\d+(?:/-?\d+)?\s+\[\d+\]\s+\d+\.\d+:\s+(?:\d+\s+)?"
    rb"[\w.-]+:[\w.-]+:(?:\s|$)"
)
_RE_BRACKET = re.compile(
    rb"^\s*(?:\S+:\s+)?\S.*-\d+\s+(?:\(\s*[\d-]+\)\s+)?\[\d+\]\s+"
    rb"(?:\(\s*[\d-]+\)\s+)?(?:([.a-zA-Z0-9]{4,6})\s+)?\d+(?:\.\d+)?:"
    rb"(\s+\(\+?\d*\))?\s+([\w:.-]+):( +)"
)
_RE_LAT = re.compile(rb"^\s*\S.*-\d+\s+\d+[.a-zA-Z][.a-zA-Z0-9]{3,5}\s+\d+(?:\.\d+)?:\s+[\w.-]+:")


def _text_head(path: Path, head: bytes) -> bytes:
    """The first bytes as the reader sees them: without a UTF-8 byte order mark, CR-only
    line ends made LF (:class:`_Chunks`); UTF-16 text is refused with its name."""
    if head.startswith(_UTF16_BOMS):
        raise TraceError(path, "is UTF-16 text; convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)")
    head = head.removeprefix(_BOM)
    return head.translate(_CR_TO_LF) if _cr_only(head) else head


def _cr_only(head: bytes) -> bool:
    """Whether text uses CR alone as its line end (classic Mac OS, some converters)."""
    return b"\r" in head and b"\n" not in head


def sniff(path) -> str | None:
    """ "ftrace-text", "trace-cmd-report", "perf-script" or None, from the first KB."""
    head = _text_head(Path(path), _head(Path(path)))
    if not head or b"\x00" in head[:8192]:
        return None
    lines = head.split(b"\n")
    if len(lines) > 1:
        lines = lines[:-1]  # maybe cut
    first = next((ln for ln in lines if ln.strip()), b"")
    if first.startswith(b"cpus="):
        return "trace-cmd-report"
    if any(ln.startswith(b"# tracer:") for ln in lines[:5]):
        return "ftrace-text"
    votes: Counter = Counter()
    for ln in lines[:400]:
        if not ln.strip() or ln.startswith(b"#"):
            continue
        if _RE_PERF.match(ln):
            votes["perf-script"] += 1
            continue
        m = _RE_BRACKET.match(ln)
        if m:
            event, pad = m.group(3), m.group(4)
            if m.group(2) or len(pad) > 1:
                votes["trace-cmd-report"] += 1  # padded event name / --ts-diff
            elif len(event) < 19:
                votes["ftrace-text"] += 1
            else:
                votes["either"] += 1
            continue
        if _RE_LAT.match(ln):
            votes["trace-cmd-report"] += 1
    if not votes:
        return None
    best = max(("perf-script", "trace-cmd-report", "ftrace-text"), key=lambda k: votes[k])
    if votes[best] == 0:
        return "ftrace-text"  # only long event names: ftrace and report look alike
    return best


# ----------------------------------------------------------------------- reading


def _header_int(path: Path, m: re.Match, group: int, lo: int, hi: int) -> int:
    """A number of the header, or a TraceError quoting it when it is outside [lo, hi]."""
    digits = m.group(group)
    if len(digits) > len(str(hi)) or not lo <= int(digits) <= hi:
        shown = m.group(0).decode(errors="replace").strip()
        raise TraceError(path, f"the header's {shown!r:.60} is out of range ({lo} to {hi:,})")
    return int(digits)


def _header_facts(path: Path, head: bytes) -> dict:
    facts: dict[str, int | str] = {}
    m = re.search(rb"#P:(\d+)", head[:4096])
    if m:
        facts["cpus"] = _header_int(path, m, 1, 1, MAX_CPUS)
    m = re.match(rb"\s*cpus=(\d+)", head)
    if m:
        facts["cpus"] = _header_int(path, m, 1, 1, MAX_CPUS)
    m = re.search(rb"entries-in-buffer/entries-written:\s*(\d+)/(\d+)", head[:4096])
    if m:
        facts["entries_in_buffer"] = _header_int(path, m, 1, 0, 2**63 - 1)
        facts["entries_written"] = _header_int(path, m, 2, 0, 2**63 - 1)
    m = re.search(rb"^# tracer: (\S+)", head[:4096], re.M)
    if m:
        facts["tracer"] = m.group(1).decode(errors="replace")
    # perf script --header: the recording machine's facts
    m = re.search(rb"^# nrcpus avail : (\d+)", head[:16384], re.M)
    if m:
        facts["cpus"] = _header_int(path, m, 1, 1, MAX_CPUS)
    m = re.search(rb"^# os release : (\S+)", head[:16384], re.M)
    if m:
        facts["kernel"] = m.group(1).decode(errors="replace")
    return facts


class _Skipped(NamedTuple):
    """A line the chunks do not hand over: longer than a chunk (its bytes were read
    and dropped, never held whole), or the last line of the file, cut off without a
    line end (which may parse into a wrong value: ``next_pid=34`` of ``next_pid=345``)."""

    head: bytes  # the line's first bytes, for the message
    overlong: bool


class _Chunks:
    """Whole-line chunks of a source, read (and decompressed) by a background thread
    while the scanner works on the previous chunk (it releases the GIL). A chunk's
    buffer is written again only after the consumer has asked for the next-but-one
    chunk, i.e. after it is done with it. A plain file of one chunk or less is read
    in the caller's thread: a thread's start and hand-overs cost milliseconds (the
    interpreter's switch interval), more than such a file takes to scan.

    Yields ``(buffer, end)`` chunks and :class:`_Skipped` lines, in file order. Text
    with CR-only line ends (no LF in its first 64 KiB) has them made LF as it is read.
    Memory is bounded by the chunk size and :data:`MAX_LINE_BYTES`, whatever the lines."""

    _END = object()

    def __init__(self, src: _Source, chunk_bytes: int, depth: int = 1, sep: bytes = b"\n"):
        self.src = src
        self.chunk = chunk_bytes
        self.sep = sep  # perf: cut after the blank line that ends a sample
        self.cr_only: bool | None = None  # decided by the first bytes read
        self.q: queue.Queue = queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        self.thread = None
        if src.kind is None and src.proc is None and src.size <= chunk_bytes:
            return
        self.thread = threading.Thread(target=self._run, name="schedwake-text-reader", daemon=True)
        self.thread.start()

    def _read(self, buf: bytearray, start: int, stop: int) -> int:
        """Fill buf[start:stop] from the source (CR line ends made LF); the bytes read."""
        with memoryview(buf) as mv:
            n = self.src.readinto(mv[start:stop])
        if self.cr_only is None and n:
            self.cr_only = _cr_only(bytes(buf[start : start + min(n, 65536)]))
        if self.cr_only and n:
            buf[start : start + n] = buf[start : start + n].translate(_CR_TO_LF)
        return n

    def _whole(self):
        """The small plain file as one chunk (all of it: it may have grown since)."""
        buf = bytearray(self.src.size + 1)
        end = 0
        while True:
            end += self._read(buf, end, len(buf))
            if end < len(buf):
                break
            buf.extend(bytes(len(buf)))
        yield from self._tail(buf, end)

    def _tail(self, buf: bytearray, end: int):
        """The last bytes of the file: the lines, then a last line without a line end."""
        cut = buf.rfind(b"\n", 0, end) + 1
        if cut:
            yield buf, cut
        if cut < end:
            yield _Skipped(bytes(buf[cut : min(end, cut + 300)]), overlong=False)

    def _skip_line(self, buf: bytearray, end: int) -> tuple[_Skipped, bytes]:
        """Read on past the end of a line too long for trace text, which fills
        buf[:end] without a line end: the line as skipped, and the bytes after it."""
        skipped = _Skipped(bytes(buf[:300]), overlong=True)
        while not self.stop.is_set():
            n = self._read(buf, 0, self.chunk)
            if n == 0:
                return skipped, b""
            nl = buf.find(b"\n", 0, n)
            if nl >= 0:
                return skipped, bytes(buf[nl + 1 : n])
        return skipped, b""

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self):
        try:
            # depth + 2 buffers in turn: one in the queue, one being scanned, one being
            # filled. Reusing them spares zeroing fresh memory for every chunk.
            ring = [bytearray() for _ in range(self.q.maxsize + 2)]
            k = 0
            rem = b""
            size = self.chunk
            while not self.stop.is_set():
                buf = ring[k]
                k = (k + 1) % len(ring)
                need = len(rem) + size
                if len(buf) < need:
                    buf.extend(bytes(need - len(buf)))
                buf[: len(rem)] = rem
                n = self._read(buf, len(rem), need)
                end = len(rem) + n
                if n == 0:
                    for item in self._tail(buf, end) if rem else ():
                        if not self._put(item):
                            return
                    break
                cut = buf.rfind(self.sep, 0, end)
                if cut >= 0:
                    cut += len(self.sep) - 1
                else:  # no blank line (perf without -g)
                    cut = buf.rfind(b"\n", 0, end)
                if cut < 0 and end <= MAX_LINE_BYTES:  # a line longer than a (small) chunk:
                    rem = bytes(buf[:end])  # read on into the same (unshared) buffer
                    size *= 2
                    k = (k - 1) % len(ring)
                    continue
                size = self.chunk
                if cut < 0:  # no line end in a whole chunk: not trace text
                    skipped, rem = self._skip_line(buf, end)
                    k = (k - 1) % len(ring)  # (that buffer was never handed over)
                    if not self._put(skipped):
                        return
                    continue
                rem = bytes(buf[cut + 1 : end])
                if not self._put((buf, cut + 1)):
                    return
            self._put(self._END)
        except BaseException as exc:  # handed to the consumer, raised there
            self._put(exc)

    def __iter__(self):
        if self.thread is None:
            yield from self._whole()
            return
        while True:
            item = self.q.get()
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self):
        self.stop.set()
        if self.thread is None:
            return
        while self.thread.is_alive():
            try:
                self.q.get(timeout=0.05)
            except queue.Empty:
                pass
        self.thread.join()


def _scan(
    path: Path, fmt: str, events, progress, flush_bytes: int | None, kallsyms=None
) -> Iterator[tuple[dict, dict, dict, Assessment]]:
    """Feed the file to a scanner chunk by chunk; yield (raw, stats, header facts,
    assessment) after every ``flush_bytes`` of text (None: once, at the end);
    ``kallsyms``: a perf.data's (:class:`_Source`)."""
    if _textscan is None:
        raise TraceError(path, f"the text reader is not built ({_IMPORT_ERROR})")
    if fmt not in MODES:
        raise TraceError(path, f"not a text format: {fmt!r}")
    wanted = None if events is None else {e.split(":")[-1].encode() for e in events}
    scanner = _textscan.Scanner(MODES[fmt], FLAG_TABLES[fmt], _CSPECS, wanted)
    src = _Source(path, perf=(fmt == "perf.data"), kallsyms=kallsyms)
    facts: dict = {}
    ok = False
    since_flush = 0
    chunks = _Chunks(src, CHUNK_BYTES, sep=b"\n\n" if MODES[fmt] == 2 else b"\n")
    try:
        first = True
        for item in chunks:
            if isinstance(item, _Skipped):
                scanner.skip_line(item.head, item.overlong)
                first = False
                continue
            buf, end = item
            start = 0
            if first:
                start = len(_BOM) if buf.startswith(_BOM) else 0
                head = _text_head(path, bytes(buf[start : min(end, 65536)]))
                if b"\x00" in head[:8192]:
                    raise TraceError(path, "binary data, not trace text")
                facts = _header_facts(path, head)
                first = False
            with memoryview(buf) as mv:
                scanner.feed(mv[start:end])
            since_flush += end
            st = scanner.stats()
            if st["unparsed"] > 20000 and st["unparsed"] > 4 * st["events"]:
                assess(path, fmt, st, facts, final=True)  # hopeless: refused without reading on
            if progress is not None:
                progress(src.fraction())
            if flush_bytes is not None and since_flush >= flush_bytes:
                since_flush = 0
                yield scanner.finish(), st, facts, assess(path, fmt, st, facts, final=False)
        ok = True
    finally:
        chunks.close()
        src.close(check=ok)  # (a decompressor or perf that failed says why first)
    if first:
        raise TraceError(path, "empty file")
    st = scanner.stats()
    if st["events"] == 0:
        if st["unparsed"]:
            assess(path, fmt, st, facts, final=True)
            raise TraceError(path, "no trace events in the file, only lines that are not events")
        raise TraceError(path, "no trace events in the file")
    yield scanner.finish(), st, facts, assess(path, fmt, st, facts, final=True)


def read(path, fmt: str, events=None, progress: Progress | None = None, kallsyms=None) -> RawTrace:
    """Read a text trace (or perf.data) of format ``fmt`` into canonical tables.

    ``events``: names of the events to build tables for (None: all); counts in
    ``meta.event_counts`` cover every event either way. ``kallsyms``: for a perf.data,
    the recorded kernel's kallsyms file, which ``perf script`` names kernel addresses
    with (``--kallsyms``)."""
    path = Path(path)
    batch = None
    for batch in _scan(path, fmt, events, progress, None, kallsyms):  # noqa: B007 (the last)
        pass
    assert batch is not None  # _scan yields at least once, or raises
    raw, st, facts, damage = batch
    trace = _build(path, fmt, raw, st, facts, damage, events, raw["strings"])
    if progress is not None:
        progress(1.0)
    return trace


def iter_batches(
    path, fmt: str, events=None, progress: Progress | None = None, batch_bytes: int = 256 << 20
):
    """Read a text trace as a sequence of :class:`RawTrace` batches, each covering about
    ``batch_bytes`` of text, so a file larger than memory converts with bounded memory
    (``schedwake convert``). Tables are sorted within a batch only; ``meta`` counts are
    cumulative, and the last batch's ``meta`` describes the whole file. Lost-event rows
    come with the batch in which they appear; events the damage checks leave out are
    left out of the batch being built (those known as such by then)."""
    path = Path(path)
    strings: list[str] = []
    for raw, st, facts, damage in _scan(path, fmt, events, progress, batch_bytes):
        strings.extend(raw["strings"])
        yield _build(path, fmt, raw, st, facts, damage, events, strings)


# ------------------------------------------------------------- building tables


def _np(buf, dtype) -> np.ndarray:
    return np.frombuffer(buf, dtype=dtype)


def _dict_column(ids: np.ndarray, valid: np.ndarray | None, pool: pa.Array) -> pa.Array:
    """Dictionary array of the pool strings ``ids``, with only the used values."""
    if len(ids) == 0:
        return pa.array([], type=STRING)
    if valid is not None and valid.all():
        valid = None
    # (bincount and take: about twice as fast as a scatter and a gather by indexing)
    used = np.bincount(ids if valid is None else ids[valid], minlength=len(pool)).astype(bool)
    remap = np.cumsum(used, dtype=np.int32) - np.int32(1)
    idx = remap.take(ids)
    if valid is not None:
        idx = np.where(valid, idx, 0).astype(np.int32)
    dictionary = pool.filter(pa.array(used))
    indices = pa.array(idx, type=pa.int32(), mask=None if valid is None else ~valid)
    # (every index is in range by construction: no pass over them to check it)
    return pa.DictionaryArray.from_arrays(indices, dictionary, safe=False)


def _int_column(vals: np.ndarray, valid: np.ndarray | None, typ: pa.DataType) -> pa.Array:
    """``vals`` (int32 or int64 as parsed) as ``typ``: narrower types keep the low bits,
    so an unsigned 4294967295 becomes int32 -1 and a signed -1 uint32 4294967295."""
    np_type = np.dtype(typ.to_pandas_dtype())
    if vals.dtype.itemsize == np_type.itemsize:
        out = vals.view(np_type)  # same width: no copy
    else:
        out = vals.astype(np_type)  # C cast: wraps modulo 2**bits
    if valid is None or valid.all():
        return pa.array(out, type=typ)
    return pa.array(out, type=typ, mask=~valid)


_LETTERS = _textscan.STATE_LETTERS if _textscan is not None else "SDTtXZPIKWxNL"
_OLD_ONLY = {"K", "W", "x", "N", "L"}


def _letters_of(mask: int) -> list[str]:
    out = [ch for i, ch in enumerate(_LETTERS) if mask >> i & 1]
    if mask >> 15 & 1:
        out.append("+")
    return out


def _unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True), in O(n) for small non-negative values."""
    if len(values) and values.min() >= 0 and values.max() < (1 << 16):
        present = np.bincount(values.astype(np.intp)) > 0
        uniq = np.nonzero(present)[0]
        lut = np.zeros(len(present), dtype=np.int32)
        lut[uniq] = np.arange(len(uniq), dtype=np.int32)
        return uniq.astype(values.dtype), lut[values]
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, inv.astype(np.int32)


def _state_values(masks: np.ndarray, table: dict, unique=None) -> np.ndarray:
    """prev_state values of universal letter masks (see _textscan.STATE_LETTERS);
    ``unique``: _unique_inverse(masks) when known already."""
    uniq, inv = _unique_inverse(masks) if unique is None else unique
    vals = np.array(
        [sum(table.get(ch, 0) for ch in _letters_of(int(u))) for u in uniq], dtype=np.int64
    )
    return vals[inv]


def state_str(value: int, table: dict) -> str:
    """A ``prev_state`` value as its letters (``S``, ``D|I``, ``R+``) by ``table``
    (letter -> bit; ``+``: the preempted bit): ``R`` when no bit is set."""
    plus = table.get("+", 0)
    bits = [ch for ch, b in table.items() if ch != "+" and value & b]
    s = "|".join(bits) if bits else "R"
    if plus and value & plus:
        s += "+"
    return s


def state_str_column(values: np.ndarray, valid: np.ndarray | None, table: dict) -> pa.Array:
    uniq, inv = _unique_inverse(values)
    dictionary = pa.array([state_str(int(u), table) for u in uniq], type=pa.string())
    d = pa.DictionaryArray.from_arrays(pa.array(inv.astype(np.int32)), dictionary)
    if valid is not None and not valid.all():
        d = pa.DictionaryArray.from_arrays(pa.array(inv.astype(np.int32), mask=~valid), dictionary)
    return d


def _build(path, fmt, raw, st, facts, damage: Assessment, events, strings) -> RawTrace:
    pool = pa.array(strings, type=pa.string())
    tables: dict[str, pa.Table] = {}
    counts: dict[str, int] = {}
    systems: dict[str, str | None] = {}  # None: an event of no known system
    any_chain = st["any_frames"]
    joined: set[str] = set()  # tables of two events' rows, one after the other
    for i, ev in enumerate(raw["events"]):
        name, count = ev["name"], ev["count"]
        outliers = [o for o in damage.outliers if o.event == i]
        left_out = len(outliers)
        systems[name] = ev["system"] or KNOWN_SYSTEMS.get(name)
        if ev["wanted"] and "ts" in ev:
            table = _event_table(name, ev, pool, any_chain)
            ev.clear()  # the scanner's buffers: what the table still needs stays alive
            kept = _without_damage(table, damage.stray_cpus, outliers)
            left_out = max(left_out, table.num_rows - kept.num_rows)
            table = kept
        else:
            table = None
        if count - left_out > 0:
            counts[name] = counts.get(name, 0) + count - left_out
        if table is None:
            continue
        if name in tables:  # same name printed with and without system
            table = pa.concat_tables([tables[name], table], promote_options="permissive")
            joined.add(name)
        tables[name] = table
    _print_events(tables, counts, systems)
    if events is not None:  # asked-for events that never occur: empty tables
        for e in events:
            e = e.split(":")[-1]
            if e not in tables and e in _DESCRIBED:
                v = _DESCRIBED[e]["variants"][LAYOUTS[e].get("current", 0)]
                fields = [pa.field(field_name(n), v["types"][n]) for n, _, _ in v["fields"]]
                if e == "sched_switch":
                    fields.insert(4, pa.field("prev_state_str", STRING))
                tables[e] = event_schema(fields).empty_table()
    sorted_in_file = bool(st["sorted"])
    for name, t in tables.items():
        if sorted_in_file and name not in joined:
            continue  # rows in file order, of a file in time order
        ts = t.column("ts").to_numpy()
        if len(ts) > 1 and (np.diff(ts) < 0).any():
            tables[name] = t.take(pa.array(np.argsort(ts, kind="stable")))
    lost_cpu, lost_count, lost_ts = (
        np.frombuffer(raw["lost"][0], np.int32),
        np.frombuffer(raw["lost"][1], np.int64),
        np.frombuffer(raw["lost"][2], np.int64).copy(),
    )
    lost_ts[lost_ts < 0] = damage.last_ts or 0
    lost = pa.table(
        [
            pa.array(lost_ts, pa.int64()),
            pa.array(lost_cpu, pa.int32()),
            pa.array(lost_count, pa.int64()),
        ],
        schema=LOST_EVENTS_SCHEMA,
    )
    lost = _without_damage(lost, damage.stray_cpus, [])
    if damage.lost_cpu_limit is not None:
        lost = lost.filter(pc.less(lost.column("cpu"), damage.lost_cpu_limit))
    lost_cpu, lost_count = lost.column("cpu").to_numpy(), lost.column("count").to_numpy()
    lost_ts = lost.column("ts").to_numpy()
    if len(lost) > 1:
        lost = lost.take(pa.array(np.argsort(lost_ts, kind="stable")))
    # like the trace.dat reader: at least this many per CPU (an unknown number counts
    # as one), and the CPUs that lost an unknown number listed apart
    lost_per_cpu: dict[int, int] = {}
    for c, n in zip(lost_cpu.tolist(), lost_count.tolist()):
        lost_per_cpu[c] = lost_per_cpu.get(c, 0) + (n if n > 0 else 1)
    lost_unknown = sorted({c for c, n in zip(lost_cpu.tolist(), lost_count.tolist()) if n < 0})
    # a header's count (#P:, perf's nrcpus) covers idle CPUs; the events are the floor
    cpus = max(damage.cpus or 0, int(lost_cpu.max()) + 1 if len(lost_cpu) else 0) or None
    source = {
        "sorted": sorted_in_file,
        "unparsed_lines": st["unparsed"],
        "first_unparsed": [(int(n), t) for n, t in st["first_unparsed"]],
        "lines": st["lines"],
        "event_lines": st["events"],
        "compression": compression(path) if fmt != "perf.data" else None,
        "latency_flags": bool(st["any_lat"]),
        # "us"/"ns": seconds with 6/9 decimals; "raw": counter values (counter, x86-tsc clocks)
        "timestamps": {0: "raw", 6: "us", 9: "ns"}.get(
            st["ts_decimals"], f"{st['ts_decimals']} decimals"
        ),
        "callchains": bool(any_chain),
    }
    for k in ("tracer", "entries_in_buffer", "entries_written"):
        if k in facts:
            source[k] = facts[k]
    meta = TraceMeta(
        path=str(path),
        format=fmt,
        cpus=cpus,
        clock=None,
        first_ts_ns=damage.first_ts,
        last_ts_ns=damage.last_ts,
        kernel=facts.get("kernel"),
        lost_events=dict(sorted(lost_per_cpu.items())),
        lost_unknown=tuple(lost_unknown),
        event_counts=dict(sorted(counts.items())),
        systems=systems,
        warnings=tuple(damage.warnings),
        source=source,
    )
    return RawTrace(tables=tables, meta=meta, lost=lost)


def _without_damage(table: pa.Table, stray_cpus, outliers) -> pa.Table:
    """``table`` without the rows on ``stray_cpus`` and the ``outliers`` (timestamps
    far outside the rest, on their CPU)."""
    if not table.num_rows or not (stray_cpus or outliers):
        return table
    cpu = table.column("cpu").to_numpy()
    drop = np.isin(cpu, np.fromiter(stray_cpus, np.int64, len(stray_cpus)))
    if outliers:
        ts = table.column("ts").to_numpy()
        for o in outliers:
            drop |= (ts == o.ts) & (cpu == o.cpu)
    return table.filter(pa.array(~drop)) if drop.any() else table


def _print_events(tables, counts, systems):
    """trace_marker writes: ftrace:print with ``ip`` and ``buf`` like trace.dat.

    Raw ftrace text prints them as ``tracing_mark_write: <text>`` (no event name);
    the kernel stores the text with a trailing newline, which every text format drops
    and which is put back here."""
    t = tables.pop("tracing_mark_write", None)
    n = counts.pop("tracing_mark_write", None)
    systems.pop("tracing_mark_write", None)
    if n is not None:
        counts["print"] = counts.get("print", 0) + n
        systems["print"] = "ftrace"
    if t is not None:
        buf = t.column("args")
        t = t.select(list(COMMON_NAMES))
        t = t.append_column("ip", pa.array(["tracing_mark_write"] * t.num_rows).dictionary_encode())
        t = t.append_column("buf", pc.binary_join_element_wise(buf, "\n", "").dictionary_encode())
        tables["print"] = _concat_like(tables["print"], t) if "print" in tables else t
    if "print" in tables and tables["print"].num_rows and "buf" in tables["print"].schema.names:
        p = tables["print"]
        buf = p.column("buf").cast(pa.string())
        if t is None:
            buf = pc.binary_join_element_wise(buf, "\n", "")
            i = p.schema.get_field_index("buf")
            tables["print"] = p.set_column(i, "buf", buf.dictionary_encode())


def _concat_like(old: pa.Table, new: pa.Table) -> pa.Table:
    """``old``'s rows then ``new``'s, in ``new``'s columns and types: a column ``old``
    holds only nulls of (a ``print`` whose every ``ip`` was damaged is a dictionary of
    nulls) is cast, one it lacks is null (a fuzzed file mixed the two print layouts)."""
    cols = []
    for f in new.schema:
        if f.name in old.schema.names:
            c = old.column(f.name)
            if c.type != f.type:
                try:
                    c = c.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    c = pa.chunked_array([pa.nulls(old.num_rows, f.type)])
        else:
            c = pa.chunked_array([pa.nulls(old.num_rows, f.type)])
        cols.append(c)
    return pa.concat_tables([pa.Table.from_arrays(cols, schema=new.schema), new])


def _safe_name(name: str, taken) -> str:
    """The column name of an event field: :func:`schema.field_name` (``field_cpu`` for
    workqueue_queue_work's ``cpu``), kept distinct from the columns already there."""
    name = field_name(name)
    while name in taken:
        name = "field_" + name
    return name


def _event_table(name: str, ev: dict, pool: pa.Array, any_chain: bool) -> pa.Table:
    n = len(ev["ts"]) // 8
    latv = _np(ev["latv"], np.uint8).astype(bool)
    lat_mask = None if latv.all() else ~latv
    cols = {
        "ts": pa.array(_np(ev["ts"], np.int64), pa.int64()),
        "cpu": pa.array(_np(ev["cpu"], np.int32), pa.int32()),
        "common_pid": pa.array(_np(ev["pid"], np.int32), pa.int32()),
        "common_comm": _dict_column(_np(ev["comm"], np.int32), None, pool),
        "common_flags": pa.array(_np(ev["flags"], np.uint8), pa.uint8(), mask=lat_mask),
        "common_preempt_count": pa.array(_np(ev["pc"], np.uint8), pa.uint8(), mask=lat_mask),
    }
    desc = _DESCRIBED.get(name)
    if desc is not None:
        _layout_columns(name, ev, desc, pool, cols, n)
    else:
        _generic_columns(ev, cols, n)
    _period_column(ev, cols, n)
    if any_chain:
        offs = np.empty(n + 1, dtype=np.int64)
        offs[:n] = _np(ev["chain_off"], np.int64)
        offs[n] = ev["nframes"]
        frames = _np(ev["frames"], np.int32)
        values = (
            pool.take(pa.array(frames, pa.int32())) if len(frames) else pa.array([], pa.string())
        )
        cols["callchain"] = pa.ListArray.from_arrays(pa.array(offs.astype(np.int32)), values)
    return pa.table(cols)


def _period_column(ev: dict, cols: dict, n: int) -> None:
    """perf script's sample period (``-F ...,period``, printed by default for a
    profile's samples), as the perf.data reader's ``period`` column."""
    printed = _np(ev["periodv"], np.uint8).astype(bool)
    if len(printed) != n or not printed.any():
        return
    period = _np(ev["period"], np.int64).view(np.uint64)
    mask = None if printed.all() else ~printed
    cols[_safe_name("period", cols)] = pa.array(period, pa.uint64(), mask=mask)


def _slot_values(slot, n, width: int) -> np.ndarray:
    """The values of a scanner slot (int32 or int64 as stored), full length (zeros
    before its first row)."""
    dtype = np.int32 if width == 4 else np.int64
    buf, start = slot
    if start < 0:
        return np.zeros(n, dtype=dtype)
    v = _np(buf, dtype)
    if start:
        v = np.concatenate([np.zeros(start, dtype=dtype), v])
    return v


def _layout_columns(name, ev, desc, pool, cols, n):
    variant = _np(ev["variant"], np.int8)
    slots = ev["slots"]
    nvar = len(desc["variants"])
    counts = np.bincount(variant.astype(np.intp), minlength=nvar) if n else np.zeros(nvar, np.intp)
    used = [int(i) for i in np.argsort(-counts, kind="stable") if counts[i] > 0] or [0]
    # output fields: those of the most used variant first, then the others'
    order: list[str] = []
    ftype: dict[str, pa.DataType] = {}
    for vi in used:
        v = desc["variants"][vi]
        for fname, _, _ in v["fields"]:
            if fname not in ftype:
                order.append(fname)
                ftype[fname] = v["types"][fname]
    state_table = STATE_NEW
    for fname in order:
        typ = ftype[fname]
        parts = []  # (rows mask or None for all rows, kind, slot)
        for vi in used:
            v = desc["variants"][vi]
            hit = [(k, s) for f, k, s in v["fields"] if f == fname]
            if hit and v["types"][fname] == typ:
                parts.append((None if len(used) == 1 else variant == vi, hit[0][0], hit[0][1]))
        if len(parts) == 1 and parts[0][0] is None and parts[0][1] not in ("S", "P", "b"):
            sl = parts[0][2]
            vals, valid = _slot_values(slots[sl], n, desc["widths"][sl]), None  # usual case
        else:
            vals = np.zeros(n, dtype=np.int64)
            valid = np.zeros(n, dtype=bool)
            for rows, kind, slot in parts:
                # every row (one variant): a slice, without a mask to build and apply
                sel = slice(None) if rows is None else rows
                sv = _slot_values(slots[slot], n, desc["widths"][slot])
                if kind in ("S", "P") and (n > 0 if rows is None else rows.any()):
                    masks = sv[sel]
                    unique = _unique_inverse(masks)
                    letters = set().union(*(_letters_of(int(m)) for m in unique[0]))
                    if kind == "P":
                        table = STATE_NEW if letters & {"I", "P"} else STATE_PLUGIN
                    else:
                        table = STATE_OLD if letters & _OLD_ONLY else STATE_NEW
                        state_table = table
                    vals[sel] = _state_values(masks, table, unique)
                elif kind == "b":
                    ids = [
                        i for i in (_pool_id(pool, "true"), _pool_id(pool, "1")) if i is not None
                    ]
                    vals[sel] = np.isin(sv[sel], ids)
                else:
                    vals[sel] = sv[sel]
                if rows is None:
                    valid[:] = True
                else:
                    valid |= rows
            if valid.all():
                valid = None
        out_name = _safe_name(fname, cols)
        if pa.types.is_dictionary(typ):
            cols[out_name] = (
                _dict_column(vals.astype(np.int32, copy=False), valid, pool)
                if n
                else pa.array([], type=STRING)
            )
        else:
            cols[out_name] = _int_column(vals, valid, typ)
        if name == "sched_switch" and fname == "prev_state":
            cols["prev_state_str"] = state_str_column(vals, valid, state_table)


def _pool_id(pool: pa.Array, s: str):
    idx = pc.index(pool, s).as_py()
    return None if idx < 0 else idx


_KEY_RE = re.compile(r"(?:^|\s)([A-Za-z_]\w*)=")


def _generic_columns(ev, cols, n):
    """Events without a layout: ``args`` plus one string column per key=value."""
    offs = np.empty(n + 1, dtype=np.int64)
    offs[:n] = _np(ev["args_off"], np.int64)
    offs[n] = len(ev["args"])
    # (the scanner wrote the argument text as UTF-8, invalid bytes replaced)
    args = pa.Array.from_buffers(
        pa.large_string(), n, [None, pa.py_buffer(offs), pa.py_buffer(ev["args"])]
    )
    if offs[n] < 2**31:
        args = args.cast(pa.string())
    keys: list[str] = []
    sample = args.slice(0, 2000).to_pylist() + args.slice(max(n - 200, 0)).to_pylist()
    for s in sample:
        for k in _KEY_RE.findall(s or ""):
            if k not in keys:
                keys.append(k)
    for k in keys[:64]:
        pat = r"(?:^|\s)" + re.escape(k) + r"=(?P<v>.*?)(?:\s+[A-Za-z_]\w*=|\s*$)"
        vals = pc.struct_field(pc.extract_regex(args, pat), [0])
        cols[_safe_name(k, list(cols) + ["args"])] = vals.dictionary_encode()
    cols["args"] = args
