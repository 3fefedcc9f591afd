"""Read trace-cmd ``trace.dat`` files (v6 and v7) through the compiled binding.

The C extension :mod:`schedwake.ingest._tracedat` does the per-event work in one
pass and hands back column buffers; this module only wraps them as Arrow arrays
(no copies) and turns the file's metadata into the keys of ``schema.META_KEYS``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from ..errors import TraceError
from ..schema import COMMON_NAMES, LOST_EVENTS_SCHEMA, RAW_CLOCKS, field_name
from . import Progress, RawTrace, tracedat_layout

try:
    from . import _tracedat
except ImportError as exc:  # pragma: no cover - only when the package was not built
    _tracedat = None
    _IMPORT_ERROR = exc

_INT_TYPES = {(8, 1): pa.int8(), (16, 1): pa.int16(), (32, 1): pa.int32(), (64, 1): pa.int64(),
              (8, 0): pa.uint8(), (16, 0): pa.uint16(), (32, 0): pa.uint32(),
              (64, 0): pa.uint64()}


def _column(spec, length: int) -> tuple[str, pa.Array]:
    kind, name = spec[0], spec[1]
    if kind == "int":
        _, _, bits, signed, data = spec
        return name, pa.Array.from_buffers(_INT_TYPES[bits, signed], length,
                                           [None, pa.py_buffer(data)])
    if kind == "str":
        indices, offsets, chars = spec[2]
        ndict = len(memoryview(offsets)) // 4 - 1
        dictionary = pa.Array.from_buffers(pa.string(), ndict,
                                           [None, pa.py_buffer(offsets), pa.py_buffer(chars)])
        idx = pa.Array.from_buffers(pa.int32(), length, [None, pa.py_buffer(indices)])
        return name, pa.DictionaryArray.from_arrays(idx, dictionary)
    if kind == "list":
        _, _, bits, signed, offsets, values = spec
        vtype = _INT_TYPES[bits, signed]
        nvalues = len(memoryview(values)) * 8 // bits
        flat = pa.Array.from_buffers(vtype, nvalues, [None, pa.py_buffer(values)])
        return name, pa.ListArray.from_arrays(
            pa.Array.from_buffers(pa.int32(), length + 1, [None, pa.py_buffer(offsets)]), flat)
    _, _, offsets, data = spec
    return name, pa.Array.from_buffers(pa.binary(), length,
                                       [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _kernel_release(uname: str | None) -> str | None:
    # The UNAME option holds `uname -a`-like text: "Linux host 6.18.44-... #1 SMP ... x86_64"
    if not uname:
        return None
    parts = uname.split()
    return parts[2] if len(parts) > 2 and parts[0] == "Linux" else uname.strip() or None


def _cpustat_lost(cpustats: str | None) -> dict[int, int]:
    """Overrun + dropped events per CPU from the CPUSTAT text of the file."""
    lost: dict[int, int] = {}
    if not cpustats:
        return lost
    for block in re.split(r"(?m)^CPU:\s*", cpustats)[1:]:
        m = re.match(r"(\d+)", block)
        if not m:
            continue
        n = sum(int(v) for v in re.findall(r"(?m)^(?:overrun|dropped events):\s*(\d+)", block))
        if n:
            lost[int(m.group(1))] = n
    return lost


#: Compressed files above this size are decompressed first (see _readable_copy).
DECOMPRESS_ABOVE_BYTES = 8 << 20


@contextmanager
def _readable_copy(path: Path, compression: str | None):
    """The file to hand to libtracecmd: ``path``, or an uncompressed copy of it.

    libtracecmd 1.3 reads compressed (v7) data through a cache of decompressed
    chunks that it never trims (free_zpage's range test cannot match), so reading
    a big compressed file takes time quadratic in its size and keeps all of its
    decompressed data in memory. ``trace-cmd convert --compression none`` writes
    an uncompressed copy in a fraction of one read, after which reading is linear.
    Small files, or no trace-cmd on PATH, or no room in TMPDIR: read as is.
    """
    tmpdir = tempfile.gettempdir()
    size = path.stat().st_size
    if (not compression or size < DECOMPRESS_ABOVE_BYTES or not shutil.which("trace-cmd")
            or shutil.disk_usage(tmpdir).free < 16 * size):
        yield path
        return
    fd, tmp = tempfile.mkstemp(prefix="schedwake-", suffix=".dat", dir=tmpdir)
    os.close(fd)
    try:
        proc = subprocess.run(["trace-cmd", "convert", "-i", str(path), "-o", tmp,
                               "--compression", "none"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        yield Path(tmp) if proc.returncode == 0 and os.path.getsize(tmp) > 0 else path
    finally:
        os.unlink(tmp)


def read(path: Path, events: list[str] | None = None,
         progress: Progress | None = None) -> RawTrace:
    """Read ``path``; ``events`` limits which tables are built (counts cover all)."""
    if _tracedat is None:
        raise TraceError(path, f"the trace.dat reader is not built ({_IMPORT_ERROR})")
    layout = tracedat_layout.check(path)
    try:
        with _readable_copy(path, layout["compression"]) as readable:
            raw = _tracedat.read(str(readable), None if events is None else frozenset(events),
                                 progress)
    except _tracedat.TraceDatError as exc:
        raise TraceError(path, str(exc)) from None
    except MemoryError:
        raise TraceError(path, "out of memory while reading the trace") from None
    m = raw["meta"]
    tables: dict[str, pa.Table] = {}
    counts: dict[str, int] = {}
    systems: dict[str, str] = {}
    for name, ev in raw["events"].items():
        systems[name] = ev["system"]
        if ev["count"]:
            counts[name] = ev["count"]
        if ev["columns"] is not None and (ev["count"] or events is not None):
            specs = ev["columns"]
            ncommon = len(COMMON_NAMES)
            cols = [_column(spec, ev["count"]) for spec in specs]
            names = [n if i < ncommon else field_name(n) for i, (n, _) in enumerate(cols)]
            tables[name] = pa.table([a for _, a in cols], names=names)
    lost_ts, lost_cpu, lost_count = raw["lost"]
    nlost = len(memoryview(lost_ts)) // 8
    lost = pa.table([pa.Array.from_buffers(pa.int64(), nlost, [None, pa.py_buffer(lost_ts)]),
                     pa.Array.from_buffers(pa.int32(), nlost, [None, pa.py_buffer(lost_cpu)]),
                     pa.Array.from_buffers(pa.int64(), nlost, [None, pa.py_buffer(lost_count)])],
                    schema=LOST_EVENTS_SCHEMA)
    lost_per_cpu = dict(m["lost_per_cpu"])
    # The ring buffer's own statistics at extract time count overwritten events that
    # the pages themselves may not flag; report the larger of the two.
    for cpu, n in _cpustat_lost(m["cpustats"]).items():
        lost_per_cpu[cpu] = max(lost_per_cpu.get(cpu, 0), n)
    lost_counts = lost.column("count").to_numpy()
    lost_unknown = sorted(set(lost.column("cpu").to_numpy()[lost_counts < 0].tolist()))
    meta = {
        "path": str(path),
        "format": "trace.dat",
        "cpus": m["cpus"],
        "clock": m["clock"],
        "first_ts_ns": m["first_ts"] if m["records"] else None,
        "last_ts_ns": m["last_ts"] if m["records"] else None,
        "kernel": _kernel_release(m["uname"]),
        "lost_events": {int(c): int(n) for c, n in sorted(lost_per_cpu.items())},
        "lost_unknown": lost_unknown,
        "event_counts": dict(sorted(counts.items())),
        "systems": systems,
        "source": {
            "file_version": layout["version"],
            "timestamps": _timestamp_unit(m["clock"], layout["options"]),
            "compression": layout["compression"],
            "trace_cmd_version": m["trace_cmd_version"],
            "uname": m["uname"],
            "records": m["records"],
            "unknown_records": m["unknown_events"],
            "buffer": m["buffer"],          # "" = the top-level buffer, else the instance read
            "instances": m["instances"],    # instance buffers in the file
            "sorted": True,
        },
    }
    return RawTrace(tables=tables, meta=meta, lost=lost)


def _timestamp_unit(clock: str | None, options: set[int]) -> str:
    """"ns", or "raw" for the clocks that do not count nanoseconds (libtracecmd turns
    x86-tsc cycles into nanoseconds itself when the file has a TSC2NSEC option)."""
    if clock in RAW_CLOCKS and not (clock == "x86-tsc"
                                    and tracedat_layout.OPT_TSC2NSEC in options):
        return "raw"
    return "ns"


__all__ = ["read"]
