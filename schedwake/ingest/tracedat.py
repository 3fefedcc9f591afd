"""Read trace-cmd ``trace.dat`` files (v6 and v7) into canonical tables.

Two compiled readers decode a file into the same *raw dict*:

* :mod:`schedwake.ingest._tdread`, schedwake's own bounds-checked decoder: the
  default, run in this process;
* :mod:`schedwake.ingest._libtracecmd`, the binding of libtracecmd/libtraceevent: the
  conformance oracle and an opt-in reader, only ever run in a child process
  (:mod:`schedwake.ingest.libtracecmd`), because the library can crash or spin on
  damaged input.

:func:`assemble` turns a raw dict into a :class:`RawTrace` for both, so they differ
only in the decoding. The raw dict::

    {"meta": {"cpus", "clock", "uname", "trace_cmd_version", "cpustats",
              "file_version", "records", "first_ts", "last_ts",
              "lost_per_cpu": {cpu: n}, "unknown_events", "big_endian",
              "buffer" ("" or None: the top buffer), "instances": [name, ...],
              optional "compression" (None or a name), "options" (option ids),
              optional "warnings": [one-line text of bounded damage, ...]},
     "events": {name: {"system", "count",
                       "columns": None (not read) or [column spec, ...]}},
     "lost": (ts int64 buffer, cpu int32 buffer, count int64 buffer)}

A column spec is ``("int", name, bits, signed, values)``, ``("str", name,
(indices, dictionary offsets, dictionary chars))``, ``("list", name, bits, signed,
offsets, values)`` or ``("bin", name, offsets, bytes)``; every buffer exports the
buffer protocol and becomes an Arrow buffer without a copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import TraceError
from ..schema import COMMON_NAMES, LOST_EVENTS_SCHEMA, RAW_CLOCKS, field_name
from . import _tdread, tracedat_layout
from .meta import TraceMeta
from .raw import Progress, RawTrace

if TYPE_CHECKING:
    from typing_extensions import Buffer

#: One column as the reader gives it: ("int", name, bits, signed, values), ("str", name,
#: (indices, dictionary offsets, dictionary chars)), ("list", name, bits, signed, offsets,
#: values) or ("bin", name, offsets, bytes); the values are buffers (_tdread.c)
ColumnSpec = tuple[Any, ...]

_INT_TYPES = {
    (8, 1): pa.int8(),
    (16, 1): pa.int16(),
    (32, 1): pa.int32(),
    (64, 1): pa.int64(),
    (8, 0): pa.uint8(),
    (16, 0): pa.uint16(),
    (32, 0): pa.uint32(),
    (64, 0): pa.uint64(),
}


def read(
    path: Path,
    events: list[str] | None = None,
    progress: Progress | None = None,
    jobs: int | None = None,
    time_range: TimeRange | None = None,
) -> RawTrace:
    """Read ``path`` with schedwake's own reader; ``events`` limits which tables are
    built (counts cover all); ``jobs`` is its number of decoding threads (None: as
    many as the CPUs this process may use). The reader checks the file's layout
    itself, every offset and length before use.

    ``time_range`` ``(t0, t1)`` (``t1`` None: to the end) reads only the records with
    ``t0 <= ts < t1``, decoding only the blocks (pages, compressed chunks) of each CPU
    that can hold them, found by a binary search over the blocks' first times (those of
    :func:`block_index`, read only where the search probes): its tables, lost-event rows, counts
    and per-CPU losses are those of the range, so the parts of a trace cut at any
    times concatenate to the whole read (the ring buffer's CPUSTAT counts, which are
    the whole recording's, are left out of a part's losses)."""
    try:
        raw = _tdread.read(
            str(path),
            None if events is None else frozenset(events),
            progress,
            jobs,
            time_range=time_range,
        )
    except _tdread.TraceDatError as exc:
        raise TraceError(path, str(exc)) from None
    except MemoryError:
        raise TraceError(path, "out of memory while reading the trace") from None
    return assemble(path, raw, None, events, reader="schedwake")


#: A time range of a read: ``(t0, t1)`` in the trace's nanoseconds, ``t1`` None for the end.
TimeRange = tuple[int, int | None]


def block_index(path: Path) -> dict[int, list[int]]:
    """Per CPU, the first time of each block of ``path``'s data (v6 and uncompressed
    v7: ring-buffer pages; compressed v7: chunks), without decoding the records: the
    boundaries a time-range read decodes by. Block ``i`` holds records in
    ``[first[i], first[i + 1]]``; a block that holds nothing has the next one's time
    (the last: 2**63 - 1). It costs a page header per page, and per chunk its header
    and the decompression of its first non-empty page."""
    try:
        index = _tdread.index(str(path))
    except _tdread.TraceDatError as exc:
        raise TraceError(path, str(exc)) from None
    except MemoryError:
        raise TraceError(path, "out of memory while indexing the trace") from None
    return {cpu: memoryview(buf).cast("q").tolist() for cpu, buf in index["blocks"].items()}


def iter_batches(
    path: Path,
    events: list[str] | None = None,
    progress: Progress | None = None,
    batch_rows: int = 1 << 20,
) -> Iterator[RawTrace]:
    """Read ``path`` as :class:`RawTrace` batches of about ``batch_rows`` rows, in time
    order across batches and in memory that does not grow with the file (``schedwake
    convert``). ``meta`` counts are cumulative: the last batch's describe the file.
    ``progress`` is called with the fraction of the data decoded after each batch."""
    try:
        stream = _tdread.stream(
            str(path), None if events is None else frozenset(events), batch_rows
        )
        for raw in stream:
            if progress is not None:
                progress(raw["done"])
            yield assemble(path, raw, None, events, reader="schedwake")
    except _tdread.TraceDatError as exc:
        raise TraceError(path, str(exc)) from None
    except MemoryError:
        raise TraceError(path, "out of memory while reading the trace") from None


def assemble(
    path: Path,
    raw: dict,
    layout: dict | None = None,
    events: list[str] | None = None,
    reader: str = "schedwake",
) -> RawTrace:
    """The :class:`RawTrace` of a raw dict (see the module docstring) of ``path``.

    ``layout`` is what :func:`tracedat_layout.check` returned; the raw dict's own
    ``file_version``/``compression``/``options``, when the reader gives them, take
    precedence (a reader sees options inside compressed sections, the check does not).
    ``events`` is what was asked for: with None, events that never fired get no table.
    ``reader`` names the decoder that made ``raw`` (``meta.source["reader"]``).
    """
    m = raw["meta"]
    source = _source_facts(m, layout)
    tables, counts, systems = event_tables(raw["events"], events is not None)
    lost = lost_table(raw["lost"])
    # as Python ints, not NumPy: pyarrow's to_numpy() imports pandas (~1 s), which the
    # libtracecmd reader's child process (a reader only) never needs otherwise
    lost_cpus, lost_counts = lost.column("cpu").to_pylist(), lost.column("count").to_pylist()
    lost_unknown = sorted({cpu for cpu, n in zip(lost_cpus, lost_counts, strict=True) if n < 0})
    meta = TraceMeta(
        path=str(path),
        format="trace.dat",
        cpus=m["cpus"],
        clock=m["clock"],
        first_ts_ns=m["first_ts"] if m["records"] else None,
        last_ts_ns=m["last_ts"] if m["records"] else None,
        kernel=_kernel_release(m["uname"]),
        lost_events=_lost_per_cpu(m),
        lost_unknown=tuple(lost_unknown),
        event_counts=dict(sorted(counts.items())),
        systems=systems,
        warnings=tuple(str(w) for w in m.get("warnings") or []),
        source={
            "file_version": source["version"],
            "timestamps": _timestamp_unit(m["clock"], source["options"]),
            "compression": source["compression"],
            "trace_cmd_version": m["trace_cmd_version"],
            "uname": m["uname"],
            "records": m["records"],
            "unknown_records": m["unknown_events"],
            "buffer": m["buffer"] or "",  # "" = the top-level buffer, else the instance read
            "instances": list(m["instances"]),  # instance buffers in the file
            "sorted": True,
            "reader": reader,  # which decoder made the tables
            **_range_facts(m),
        },
    )
    return RawTrace(tables=tables, meta=meta, lost=lost)


def _range_facts(m: dict) -> dict:
    """A time-range read's range and the blocks it decoded, for ``meta.source``."""
    if m.get("time_range") is None:
        return {}
    t0, t1 = m["time_range"]
    return {
        "time_range": [t0, t1],
        "blocks_decoded": m["blocks_decoded"],
        "blocks_total": m["blocks_total"],
    }


def _source_facts(m: dict, layout: dict | None) -> dict:
    """File version, compression and option ids: from the reader when it says, else
    from the layout check."""
    facts = dict(layout or {})
    if "file_version" in m:
        facts["version"] = int(m["file_version"])
    if "compression" in m:
        facts["compression"] = m["compression"] or None
    if "options" in m:
        facts["options"] = set(m["options"])
    missing = {"version", "compression", "options"} - set(facts)
    if missing:
        raise ValueError(
            f"trace.dat facts missing from both the reader and the layout: "
            f"{', '.join(sorted(missing))}"
        )
    return facts


def event_tables(
    raw_events: dict, selected: bool
) -> tuple[dict[str, pa.Table], dict[str, int], dict[str, str]]:
    """(tables, counts, systems) of the raw events; ``selected``: events were asked for
    by name, so a wanted event that never fired still gets its (empty) table."""
    tables: dict[str, pa.Table] = {}
    counts: dict[str, int] = {}
    systems: dict[str, str] = {}
    for name, ev in raw_events.items():
        systems[name] = ev["system"]
        if ev["count"]:
            counts[name] = ev["count"]
        rows = ev.get("rows", ev["count"])  # a streamed batch holds some of the count
        if ev["columns"] is not None and (rows or selected):
            cols = [arrow_column(spec, rows) for spec in ev["columns"]]
            ncommon = len(COMMON_NAMES)
            names = [n if i < ncommon else field_name(n) for i, (n, _) in enumerate(cols)]
            tables[name] = pa.table([a for _, a in cols], names=names)
    return tables, counts, systems


def arrow_column(spec: ColumnSpec, length: int) -> tuple[str, pa.Array]:
    """(name, Arrow array) of one column spec, wrapping the reader's buffers."""
    kind, name = spec[0], spec[1]
    if kind == "int":
        _, _, bits, signed, data = spec
        return name, pa.Array.from_buffers(
            _INT_TYPES[bits, signed], length, [None, pa.py_buffer(data)]
        )
    if kind == "str":
        indices, offsets, chars = spec[2]
        ndict = len(memoryview(offsets)) // 4 - 1
        dictionary = pa.Array.from_buffers(
            pa.string(), ndict, [None, pa.py_buffer(offsets), pa.py_buffer(chars)]
        )
        idx = pa.Array.from_buffers(pa.int32(), length, [None, pa.py_buffer(indices)])
        return name, pa.DictionaryArray.from_arrays(idx, dictionary)
    if kind == "list":
        _, _, bits, signed, offsets, values = spec
        vtype = _INT_TYPES[bits, signed]
        nvalues = len(memoryview(values)) * 8 // bits
        flat = pa.Array.from_buffers(vtype, nvalues, [None, pa.py_buffer(values)])
        return name, pa.ListArray.from_arrays(
            pa.Array.from_buffers(pa.int32(), length + 1, [None, pa.py_buffer(offsets)]), flat
        )
    _, _, offsets, data = spec
    return name, pa.Array.from_buffers(
        pa.binary(), length, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def lost_table(buffers: tuple[Buffer, Buffer, Buffer]) -> pa.Table:
    """The lost-event rows (``schema.LOST_EVENTS_SCHEMA``) of the raw (ts, cpu, count)."""
    lost_ts, lost_cpu, lost_count = buffers
    n = len(memoryview(lost_ts)) // 8
    return pa.table(
        [
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(lost_ts)]),
            pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(lost_cpu)]),
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(lost_count)]),
        ],
        schema=LOST_EVENTS_SCHEMA,
    )


def _lost_per_cpu(m: dict) -> dict[int, int]:
    """Events lost per CPU: the pages' own flags, or the ring buffer's statistics at
    extract time where they say more (they count overwritten events that the pages
    themselves may not flag). A time-range read has the pages' flags of its range
    only: the statistics are the whole recording's, with no time to cut them by."""
    lost = {int(c): int(n) for c, n in m["lost_per_cpu"].items()}
    if m.get("time_range") is not None:
        return dict(sorted(lost.items()))
    for cpu, n in _cpustat_lost(m["cpustats"]).items():
        lost[cpu] = max(lost.get(cpu, 0), n)
    return dict(sorted(lost.items()))


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


def _timestamp_unit(clock: str | None, options: set[int]) -> str:
    """ "ns", or "raw" for the clocks that do not count nanoseconds (the readers turn
    x86-tsc cycles into nanoseconds themselves when the file has a TSC2NSEC option)."""
    if clock in RAW_CLOCKS and not (clock == "x86-tsc" and tracedat_layout.OPT_TSC2NSEC in options):
        return "raw"
    return "ns"


__all__ = ["read", "assemble", "block_index", "TimeRange"]
