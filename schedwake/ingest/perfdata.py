"""Read ``perf.data`` files with schedwake's own decoder (:mod:`schedwake.ingest._tdread`).

Whatever perf recorded: ``perf sched record``, ``perf record -e sched:...``, a profile
(``perf record -g``), in a file or a pipe (``-o -``), compressed or not (``-z``).

* Tracepoint samples become the canonical tables a trace.dat gives (the same format
  parser and column builders decode their raw payloads), ``common_flags`` included, so
  the waker's context is known as in ftrace recordings; with ``-g`` they also get
  ``callchain``.
* Other samples (``cpu-clock``, ``cycles``, ...) become a table named as perf names the
  event, without its modifiers: ``ts``, ``cpu``, ``common_pid`` (the thread),
  ``common_comm``, null ``common_flags``/``common_preempt_count``, then ``pid`` (the
  process), ``ip``, ``period``, ``cpumode`` (1 kernel, 2 user, ...), ``callchain``
  (list of addresses, perf's context markers taken out) and ``callchain_context`` (the
  cpumode of each address).
* ``common_comm`` is the thread's name at the sample's time, from the file's COMM/FORK
  history, as ``perf script`` prints it (``:TID`` for a thread perf never named).
* ``meta.topology``: the LLCs (the highest cache level's shared CPU lists), SMT
  siblings and NUMA nodes the file's header records, used ahead of inference.
* :attr:`RawTrace.sideband`: tables of the COMM, FORK, EXIT and MMAP records (names,
  task lifetimes, memory maps for user-space symbols).

A directory written by ``perf record --threads`` (a header file ``data``, one ``data.N``
of records per thread) is read as one file: its parts joined in a private temporary
file (:func:`joined`), the samples of the threads put in time order by the decoder as
any others.

``reader="perf-script"`` reads through ``perf script`` text instead
(:mod:`schedwake.ingest.text`): the reference this reader is tested against.
"""

from __future__ import annotations

import os
import re
import struct
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

import pyarrow as pa

from ..compressed import open_regular, read_bounded
from ..errors import TraceError
from ..schema import COMMON_NAMES, field_name
from ..symbols.kernel import KallsymsChoice, choose_kallsyms
from . import _tdread
from .meta import TraceMeta
from .raw import Progress, RawTrace
from .tracedat import arrow_column, event_tables, lost_table

#: Events a perf.data records that are not samples of interest (perf's helper event).
_HELPER_EVENTS = frozenset({"dummy"})


def has_callchains(tables: dict[str, pa.Table]) -> bool:
    """Whether an event table of ``tables`` (perf's helper events aside) has call
    chains: ``meta.source["callchains"]``."""
    return any("callchain" in t.column_names for n, t in tables.items() if n not in _HELPER_EVENTS)


def read(
    path: Path,
    events: list[str] | None = None,
    progress: Progress | None = None,
    jobs: int | None = None,
    kallsyms=None,
    time_range: tuple[int, int | None] | None = None,
) -> RawTrace:
    """Read the perf.data at ``path``; ``events`` limits the tables built (counts cover
    all), ``jobs`` is the number of decoding threads (None: one per CPU), ``kallsyms``
    a kallsyms file for the recorded kernel (None: this machine's when it runs that
    kernel), used for fields that name kernel functions (workqueue ``function``).

    ``time_range`` ``(t0, t1)`` (``t1`` None: to the end): only the samples with
    ``t0 <= ts < t1``, decoding only the FINISHED_ROUND rounds whose samples' span meets
    it (a compressed file, one zstd stream, is decoded whole and filtered); the
    side-band tables (names, forks, exits, maps) and the samples' task names are the
    whole file's, as a whole read has them; lost rows and per-CPU losses are the
    range's LOST records (LOST_SAMPLES counters have no time: a part leaves them out)."""
    chooser = _KallsymsChooser(kallsyms)
    with joined(path) as one:
        try:
            raw = _tdread.read(
                str(one),
                None if events is None else frozenset(events),
                progress,
                jobs,
                chooser,
                time_range=time_range,
            )
        except _tdread.TraceDatError as exc:
            raise TraceError(path, str(exc)) from None
        except MemoryError:
            raise TraceError(path, "out of memory while reading the trace") from None
    return assemble(path, raw, events, chooser.choice)


def iter_batches(
    path: Path,
    events: list[str] | None = None,
    progress: Progress | None = None,
    batch_rows: int = 1 << 20,
    kallsyms=None,
):
    """The perf.data at ``path`` as :class:`RawTrace` batches of about ``batch_rows``
    rows, in time order across batches (unless perf's own rounds are out of order,
    which the meta's warnings say) and in memory that does not grow with the file."""
    chooser = _KallsymsChooser(kallsyms)
    with joined(path) as one:
        yield from _batches(path, one, events, progress, batch_rows, chooser)


def _batches(path, one, events, progress, batch_rows, chooser):
    sideband = None
    try:
        stream = _tdread.stream(
            str(one), None if events is None else frozenset(events), batch_rows, chooser
        )
        for raw in stream:
            if progress is not None:
                progress(raw["done"])
            batch = assemble(path, raw, events, chooser.choice)
            if sideband is None:  # side-band rows come with the first batch
                sideband = batch.sideband
            batch.sideband = sideband
            yield batch
    except _tdread.TraceDatError as exc:
        raise TraceError(path, str(exc)) from None
    except MemoryError:
        raise TraceError(path, "out of memory while reading the trace") from None


#: The feature bit of a ``perf record --threads`` header (HEADER_DIR_FORMAT).
_DIR_FORMAT = 24


@contextmanager
def joined(path: Path):
    """``path``, or for a ``perf record --threads`` directory one perf.data made of its
    parts (in a private temporary directory, removed afterwards): the header file's
    own records, then every ``data.N`` (records of one thread's buffers, with no
    rounds between them: the decoder orders them by time), then its feature sections,
    their offsets moved and the directory feature dropped."""
    if not path.is_dir():
        yield path
        return
    # every file of the directory opened as a regular file only, and read no further than
    # the size it had when opened: a data.N that is /dev/zero, a FIFO or /proc/kmsg
    # neither fills the temporary directory nor hangs (docs/reliability.md)
    with ExitStack() as files:
        head = _whole(files, path / "data")
        parts = [
            (_opened(files, p), p)
            for p in sorted(
                (p for p in path.iterdir() if re.fullmatch(r"data\.\d+", p.name)),
                key=lambda p: int(p.name.split(".")[1]),
            )
        ]
        yield from _joined(path, head, parts)


def _opened(files: ExitStack, part: Path) -> tuple[IO[bytes], int]:
    """``part`` opened as a regular file (kept open by ``files``), and its size then."""
    f = files.enter_context(open_regular(part, "perf.data part"))
    return f, os.fstat(f.fileno()).st_size


def _whole(files: ExitStack, part: Path) -> bytes:
    f, size = _opened(files, part)
    return read_bounded(f, size, part)


def _joined(path: Path, head: bytes, parts: list):
    """:func:`joined` of the opened header file's bytes and parts."""
    try:
        magic, hsize, _, _, _, d_off, d_size = struct.unpack_from("<8sQQQQQQ", head)
        bits = list(struct.unpack_from("<4Q", head, 72))
    except struct.error:
        raise TraceError(path, "truncated perf.data: its header file 'data' is cut short") from None
    if magic != b"PERFILE2" or hsize != 104 or d_off + d_size > len(head):
        raise TraceError(path, "corrupt perf.data: its header file 'data' has no valid header")
    extra = sum(size for (_, size), _ in parts)
    table = d_off + d_size
    nfeat = sum(bin(b).count("1") for b in bits)
    entries = []
    for i in range(nfeat):
        try:
            entries.append(list(struct.unpack_from("<2Q", head, table + 16 * i)))
        except struct.error:
            raise TraceError(path, "truncated perf.data: its feature table is cut short") from None
    features = [f for f in range(1, 256) if bits[f // 64] >> (f % 64) & 1]
    if _DIR_FORMAT in features:  # the joined file is no directory
        del entries[features.index(_DIR_FORMAT)]
        bits[_DIR_FORMAT // 64] &= ~(1 << (_DIR_FORMAT % 64))
    shift = extra - 16 * (nfeat - len(entries))
    sweep_stale_dirs()
    with tempfile.TemporaryDirectory(prefix=f"{_SPOOL_PREFIX}{os.getpid()}-") as tmp:
        out = Path(tmp) / "perf.data"
        with open(out, "wb") as f:
            hdr = bytearray(head[:d_off])
            struct.pack_into("<Q", hdr, 48, d_size + extra)
            struct.pack_into("<4Q", hdr, 72, *bits)
            f.write(hdr)
            f.write(head[d_off:table])
            for (src, size), part in parts:
                left = size  # (what it held when opened: a growing file is not followed)
                while left > 0:
                    chunk = src.read(min(left, 1 << 20))
                    if not chunk:
                        raise TraceError(part, "shrank while it was read: not read")
                    f.write(chunk)
                    left -= len(chunk)
            for off, size in entries:
                f.write(struct.pack("<2Q", off + shift if off >= table else off, size))
            f.write(head[table + 16 * nfeat :])
        yield out


#: The joined file's directory: ``schedwake-perfdir-<pid>-<random>`` in the temporary
#: directory, the pid the owner's, so that one left behind by a process killed
#: (SIGTERM, SIGKILL: no ``finally`` runs) is found and removed by the next one.
_SPOOL_PREFIX = "schedwake-perfdir-"


def sweep_stale_dirs(tmpdir: str | None = None) -> list[Path]:
    """Remove the ``schedwake-perfdir-<pid>-*`` directories of this user whose process is
    gone (killed while it read a ``perf record --threads`` directory): no signal handler
    is needed for what a killed process leaves, the next run takes it away. Returns
    what was removed. A directory of a live process (or of a pid reused since) stays."""
    import shutil

    base = Path(tmpdir or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(base.glob(f"{_SPOOL_PREFIX}*-*"))
    except OSError:
        return removed
    for d in entries:
        m = re.fullmatch(re.escape(_SPOOL_PREFIX) + r"(\d+)-\w+", d.name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            st = d.lstat()
            if st.st_uid != os.getuid() or not d.is_dir() or d.is_symlink():
                continue
            os.kill(int(m.group(1)), 0)  # (signal 0: is the process there?)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
        except (OSError, OverflowError):  # another user's process: alive
            continue
    return removed


class _KallsymsChooser:
    """Called by the decoder with the recorded kernel's release and build id, only when
    the wanted events have fields that name kernel functions."""

    def __init__(self, given):
        self.given = given
        self.choice: KallsymsChoice | None = None

    def __call__(self, release, build_id):
        self.choice = choose_kallsyms(release, build_id, self.given)
        return self.choice.text


def round_starts(path: Path) -> list[int]:
    """The earliest sample time of each FINISHED_ROUND round of the perf.data at
    ``path`` (a file or a ``perf record --threads`` directory) that has samples: what
    :func:`schedwake.ingest.cut_times` cuts it by. perf's rounds overlap in time a little,
    so the list is not quite sorted; a time-range read takes every round that meets it.
    It costs the reader's first pass over the records (every record's header, the
    side-band's fields and the samples' times), not the decoding of the samples."""
    with joined(path) as one:
        try:
            index = _tdread.index(str(one))
        except _tdread.TraceDatError as exc:
            raise TraceError(path, str(exc)) from None
    return [t for buf in index["blocks"].values() for t in memoryview(buf).cast("q").tolist()]


def assemble(
    path: Path, raw: dict, events: list[str] | None, kallsyms: KallsymsChoice | None = None
) -> RawTrace:
    """The :class:`RawTrace` of a raw dict of the decoder for a perf.data file."""
    m = raw["meta"]
    perf = m["perf"]
    tables, counts, systems = event_tables(raw["events"], events is not None)
    for name in list(tables):
        tables[name] = _with_common_columns(tables[name])
    if events is None:  # perf's helper event has no samples worth a table
        for name in _HELPER_EVENTS & set(tables):
            if not tables[name].num_rows:
                del tables[name]
    lost = lost_table(raw["lost"])
    lost_per_cpu = {int(c): int(n) for c, n in sorted(m["lost_per_cpu"].items())}
    span = m.get("time_range")
    if span is not None:  # the LOST records of the range (the decoder has the file's)
        lost, lost_per_cpu = _lost_in(lost, span)
    warnings = [str(w) for w in m.get("warnings") or []]
    first_ts, last_ts = (m["first_ts"], m["last_ts"]) if m["records"] else (None, None)
    ends = perf["time_ends"]
    apart = _time_outliers(ends)  # (by the whole file's ends, in a part too)
    if apart is not None:  # a few samples far outside all the others: damage, left out
        left = _outlier_events(ends, apart, perf["attrs"], span)
        tables, counts, first_ts, last_ts, said = _without_outliers(
            tables, counts, apart, first_ts, last_ts, left
        )
        if left:
            warnings.append(said)
    if perf["lost_samples"]:
        warnings.append(
            f"the kernel dropped {perf['lost_samples']} samples (LOST_SAMPLES records): "
            "counts are low"
        )
    if kallsyms is not None and kallsyms.text is None:
        warnings.append(f"kernel function names unknown ({kallsyms.reason})")
    callchains = has_callchains(tables)
    meta = TraceMeta(
        path=str(path),
        format="perf.data",
        cpus=m["cpus"],
        clock=m["clock"],
        first_ts_ns=first_ts,
        last_ts_ns=last_ts,
        kernel=perf["osrelease"],
        lost_events=lost_per_cpu,
        lost_unknown=(),
        event_counts=dict(sorted(counts.items())),
        systems=systems,
        warnings=tuple(warnings),
        source={
            "reader": "schedwake",
            "timestamps": "ns",
            "sorted": True,
            "compression": m["compression"],
            "pipe": bool(perf["pipe"]),
            "perf_version": perf["perf_version"],
            "hostname": perf["hostname"],
            "arch": perf["arch"],
            "cpudesc": perf["cpudesc"],
            "cmdline": perf["cmdline"],
            "nr_cpus_online": perf["nr_cpus_online"],
            "records": m["records"],
            "unknown_records": m["unknown_events"],
            "rounds": perf["rounds"],
            "out_of_order": perf["out_of_order"],
            "throttles": perf["throttles"],
            "lost_samples": perf["lost_samples"],
            # the header's SAMPLE_TIME feature (perf.data's recorded span: the times of
            # its first and last sample, ns), None where the file has none
            "sample_time": (
                None if perf.get("sample_time") is None else [int(x) for x in perf["sample_time"]]
            ),
            "callchains": callchains,
            "events": [_attr_facts(a) for a in perf["attrs"]],
            "build_ids": perf["build_ids"],
            "kallsyms": None if kallsyms is None else kallsyms.source or None,
            **(
                {}
                if span is None
                else {
                    "time_range": list(span),
                    "blocks_decoded": m["blocks_decoded"],
                    "blocks_total": m["blocks_total"],
                }
            ),
        },
        topology=_checked_topology(path, header_topology(perf, m["cpus"])),
    )
    return RawTrace(tables=tables, meta=meta, lost=lost, sideband=sideband_tables(perf))


#: How many of the earliest and of the latest samples are looked at for outliers.
_OUTLIER_ENDS = 16


def _time_outliers(ends: dict) -> tuple[int | None, int | None] | None:
    """``(low, high)``: the bounds of the samples' times without a few far outside all
    the others (None on a side without such; None when there are none), by the text
    reader's rule (:func:`schedwake.ingest.text_damage._outliers`: a gap among the
    outermost samples longer than the span of the rest and than 1 s). One sample at
    time 0, an hour ahead or at 2^63 - 1 ns otherwise stretches the trace's duration and
    divides every rate by it. ``ends`` is the decoder's ``time_ends``: the earliest and
    latest times of every sample that counts, of the events loaded or not (a sample of
    an event not loaded stretches the duration as much)."""
    from .text_damage import count_outliers

    k = min(_OUTLIER_ENDS, int(ends["samples"]) // 2)
    if k < 2:
        return None
    lowest = [int(t) for t, _ in ends["low"][:k]]
    highest = [int(t) for t, _ in ends["high"][:k]]
    span = highest[-1] - lowest[-1]  # of all but the ends' few
    low = count_outliers(lowest, span)
    high = count_outliers([-v for v in highest], span)
    if not low and not high:
        return None
    return (lowest[low] if low else None, highest[high] if high else None)


def _lost_in(lost: pa.Table, span) -> tuple[pa.Table, dict[int, int]]:
    """The lost rows with ``t0 <= ts < t1`` (``span``) and their sums per CPU."""
    import pyarrow.compute as pc

    t0, t1 = span
    keep = pc.greater_equal(lost.column("ts"), t0)
    if t1 is not None:
        keep = pc.and_(keep, pc.less(lost.column("ts"), t1))
    lost = lost.filter(keep)
    per_cpu: dict[int, int] = {}
    for cpu, n in zip(lost.column("cpu").to_pylist(), lost.column("count").to_pylist()):
        per_cpu[cpu] = per_cpu.get(cpu, 0) + n
    return lost, dict(sorted(per_cpu.items()))


def _outlier_events(ends: dict, apart, attrs: list, span=None) -> dict[str, int]:
    """How many samples of each event (table) lie outside ``apart``'s bounds: all of
    them are among the decoder's earliest and latest (the rule looks at no others);
    ``span``: of those only the ones of a time-range read's ``(t0, t1)``."""
    lo, hi = apart
    out: dict[str, int] = {}
    t0, t1 = span if span is not None else (None, None)

    def inside(t: int) -> bool:
        return (t0 is None or t >= t0) and (t1 is None or t < t1)

    outside = [a for t, a in ends["low"] if lo is not None and t < lo and inside(t)]
    outside += [a for t, a in ends["high"] if hi is not None and t > hi and inside(t)]
    for a in outside:
        name = attrs[a]["table"] or attrs[a]["name"] or "?"
        out[name] = out.get(name, 0) + 1
    return out


def _without_outliers(tables, counts, apart, first_ts, last_ts, left: dict[str, int]):
    """``tables`` without the samples outside ``apart``'s bounds, the counts without
    ``left`` (the samples outside, per event: loaded or not), the trace's first and last
    times within them, and the warning that says so."""
    import numpy as np
    import pyarrow.compute as pc

    lo, hi = apart
    out, kept_counts = {}, dict(counts)
    for name, t in tables.items():
        ts = t.column("ts")
        keep = pc.and_(
            pc.greater_equal(ts, lo if lo is not None else np.iinfo(np.int64).min),
            pc.less_equal(ts, hi if hi is not None else np.iinfo(np.int64).max),
        )
        out[name] = t.filter(keep)
    for name, c in left.items():
        if name in kept_counts:
            kept_counts[name] -= c
            if kept_counts[name] <= 0:
                del kept_counts[name]
    if lo is not None and (first_ts is None or first_ts < lo):
        first_ts = lo
    if hi is not None and (last_ts is None or last_ts > hi):
        last_ts = hi
    n = sum(left.values())
    which = ", ".join(f"{c} {name}" for name, c in left.items())
    sides = " and ".join(side for side, b in (("before", lo), ("after", hi)) if b is not None)
    said = (
        f"{n} sample{'s' * (n != 1)} ({which}) far {sides} all the others (their times "
        "damaged): left out of the tables and the duration"
    )
    return out, kept_counts, first_ts, last_ts, said


def _attr_facts(a: dict) -> dict:
    """One recorded event as the metadata lists it."""
    name = a["name"] or ""
    table = a["table"]
    return {
        "name": name,
        "table": table,
        "modifiers": name[len(table) + 1 :] if table and name.startswith(table + ":") else "",
        "type": a["type"],
        "config": a["config"],
        "sample_period": None if a["freq"] else a["sample_period"],
        "sample_freq": a["sample_period"] if a["freq"] else None,
        "sample_type": a["sample_type"],
        "samples": a["samples"],
    }


def _with_common_columns(t: pa.Table) -> pa.Table:
    """A sample table (no tracepoint) gets the common columns it lacks, as nulls."""
    names = t.column_names
    if "common_flags" in names:
        return t
    n = t.num_rows
    cols = [t.column(c) for c in names[:4]]
    cols += [pa.nulls(n, pa.uint8()), pa.nulls(n, pa.uint8())]
    cols += [t.column(c) for c in names[4:]]
    rest = [field_name(c) for c in names[4:]]
    return pa.table(cols, names=list(COMMON_NAMES) + rest)


def _checked_topology(path: Path, topo: dict | None) -> dict | None:
    """The header's topology, refused naming the file when it is no CPU map (a CPU
    999999999 in a cache's CPU list): the file's damage, said when it is read, not
    when a model is made of it (nor passed over by ``info``)."""
    if topo is not None:
        from ..topology import topology_of_header

        try:
            topology_of_header(topo)
        except TraceError as exc:
            raise TraceError(path, f"the CPU topology in its header: {exc.problem}") from None
    return topo


def header_topology(perf: dict, cpus: int) -> dict | None:
    """``{"cpus", "llc", "smt", "numa"}`` (cpulists) from the file's CACHE, CPU_TOPOLOGY
    and NUMA_TOPOLOGY sections: the LLCs are the shared CPU lists of the highest cache
    level (instruction caches aside). None when the file has no CACHE section."""
    caches = [c for c in perf["cache"] if c["type"] != "Instruction" and c["cpus"]]
    if not caches:
        return None
    top = max(c["level"] for c in caches)
    llc = list(dict.fromkeys(c["cpus"] for c in caches if c["level"] == top))
    topo = {"cpus": cpus, "llc": llc, "level": top}
    smt = perf["cpu_topology"]["threads"]
    if smt:
        topo["smt"] = list(dict.fromkeys(smt))
    numa = [n["cpus"] for n in perf["numa"] if n["cpus"]]
    if numa:
        topo["numa"] = numa
    return topo


_SIDEBAND_TYPES = {
    "comms": {"ts": pa.int64(), "pid": pa.int32(), "tid": pa.int32(), "exec": pa.uint8()},
    "forks": {
        "ts": pa.int64(),
        "pid": pa.int32(),
        "ppid": pa.int32(),
        "tid": pa.int32(),
        "ptid": pa.int32(),
    },
    "mmaps": {
        "ts": pa.int64(),
        "pid": pa.int32(),
        "tid": pa.int32(),
        "start": pa.uint64(),
        "len": pa.uint64(),
        "pgoff": pa.uint64(),
        "prot": pa.uint32(),
        "flags": pa.uint32(),
        "cpumode": pa.uint8(),
    },
}
_SIDEBAND_TYPES["exits"] = _SIDEBAND_TYPES["forks"]


def sideband_tables(perf: dict) -> dict[str, pa.Table]:
    """Arrow tables of the COMM, FORK, EXIT and MMAP records (``ts`` is INT64_MIN for a
    record without a time: one perf wrote for the threads and maps that existed when it
    started, in a file recorded without sample ids)."""
    out = {}
    for name, cols in perf["sideband"].items():
        types = _SIDEBAND_TYPES[name]
        n = len(memoryview(cols["ts"])) // 8
        arrays, names = [], []
        for col, value in cols.items():
            names.append(col)
            if col in ("comm", "filename"):  # dictionary strings, as the event columns
                arrays.append(arrow_column(("str", col, value), n)[1])
            elif col == "build_id":
                offsets, data = value
                if not len(memoryview(offsets)):
                    arrays.append(pa.nulls(n, pa.binary()))
                else:
                    arrays.append(
                        pa.Array.from_buffers(
                            pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
                        )
                    )
            else:
                arrays.append(pa.Array.from_buffers(types[col], n, [None, pa.py_buffer(value)]))
        out[name] = pa.table(arrays, names=names)
    return out


__all__ = [
    "read",
    "iter_batches",
    "assemble",
    "header_topology",
    "sideband_tables",
    "has_callchains",
]
