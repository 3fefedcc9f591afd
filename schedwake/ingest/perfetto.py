"""Perfetto traces (``.pftrace``, ``.perfetto-trace``, ``.pb``; plain or gzip) into the
canonical tables (docs/perfetto.md).

A Perfetto trace is a sequence of ``TracePacket`` messages (the ``Trace`` proto's
``repeated TracePacket packet = 1``). They are read one at a time, each bounded by
:data:`MAX_PACKET`, and decoded with Perfetto's own protos (the ``perfetto`` package's
``perfetto_trace_pb2``). What is read:

* ftrace event bundles (``ftrace_events``): every event, as the kernel named it, in
  the tables of the other readers: the typed events by their fields
  (``sched_switch``, ``sched_waking``, ``sched_wakeup``, ``workqueue_execute_start``,
  ...), ``GenericFtraceEvent`` by its fields, and the compact encoding of
  ``sched_switch`` and ``sched_waking`` (``CompactSched``) as Perfetto's
  trace_processor reads it: a compact switch's ``prev_*`` are the previous switch's
  ``next_*`` on that CPU (the first compact switch of a CPU has none and is left out,
  as trace_processor leaves it out), a compact waking's waker is the task the CPU's
  switches say is current (a waking before any switch of its CPU is left out); both
  counts are in ``meta.source``;
* interned kernel symbols (``InternedData.kernel_symbols``), which name the workqueue
  functions of ``symbolize_ksyms`` recordings (an address without a symbol is
  ``0x...``, as trace_processor prints it);
* threads' names (``ProcessTree``), the kernel release and the CPUs (``SystemInfo``),
  the ftrace clock of the bundles, and ``lost_events`` (a CPU that lost an unknown
  number of events before a bundle: a lost-events row with count -1).

``common_comm`` is the thread's name (its last ``ProcessTree`` name, else the last name
its switches give); ``common_preempt_count`` is null (Perfetto does not record it), as is
``common_flags`` where the event does not carry it (a compact switch).

Every length is checked before use: a packet longer than :data:`MAX_PACKET` or than
the rest of the file, a packet the protos cannot decode, compact arrays of different
lengths, an intern index outside its table, a CPU at or beyond 65,536, a time beyond
int64: one line naming the file and the packet's offset (a file that ends inside its
last packet loses that packet, with a warning).
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa

from ..errors import TraceError
from ..schema import LOST_EVENTS_SCHEMA, STRING, event_schema, field_name
from .meta import TraceMeta
from .raw import Progress, RawTrace

#: The largest packet read (Perfetto's own packets are at most a few MiB).
MAX_PACKET = 64 << 20
#: CPUs a bundle may name (as the other readers: 1 to 65,536 CPUs).
MAX_CPUS = 65536
_I64_MAX = (1 << 63) - 1
#: TracePacket field numbers a Perfetto trace's first packet has been seen to start
#: with (what :func:`magic` accepts after the first tag).
_FIRST_FIELDS = frozenset(
    {1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 33, 34, 35, 36, 41, 42, 43, 44, 45, 58, 60, 87, 89}
)


#: Fields that ``symbolize_ksyms`` recordings hold as interned kernel symbols, and what
#: trace_processor shows for one the trace does not intern (an address, or the number).
def _address(v: int) -> str:
    return f"{v:#x}"


SYMBOLIZED: dict[tuple[str, str], Callable[[int], str]] = {
    **{
        (e, "function"): _address
        for e in (
            "workqueue_execute_start",
            "workqueue_execute_end",
            "workqueue_activate_work",
            "workqueue_queue_work",
        )
    },
    ("sched_blocked_reason", "caller"): str,
}
#: FtraceEventBundle.ftrace_clock -> the clock's name (0, unset: Perfetto's default).
_CLOCKS = {0: "boot", 1: None, 2: "global", 3: "local", 4: "mono_raw"}
#: BuiltinClock / TracePacket.sequence_flags.
_SEQ_CLEARED = 1


def _text(v) -> str:
    """A string of the file: a proto ``string`` the protobuf library hands back as bytes
    when it is not UTF-8, decoded by the rule of every reader (docs/semantics.md, "Task
    names that are not UTF-8")."""
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _varint(buf: bytes, pos: int) -> tuple[int, int] | None:
    """The varint at ``pos`` of ``buf`` and the position after it; None if cut short
    or longer than 10 bytes."""
    value, shift = 0, 0
    for i in range(pos, min(pos + 10, len(buf))):
        b = buf[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i + 1
        shift += 7
    return None


def magic(head: bytes) -> bool:
    """Whether the first bytes are a Perfetto trace's: the tag of ``packet`` (field 1,
    length-delimited), a length, then the tag of a TracePacket field it starts with."""
    if len(head) < 3 or head[0] != 0x0A:
        return False
    n = _varint(head, 1)
    if n is None or n[0] < 2:
        return False
    tag = _varint(head, n[1])
    if tag is None:
        return False
    field, wire = tag[0] >> 3, tag[0] & 7
    return field in _FIRST_FIELDS and wire in (0, 1, 2, 5)


def _pb():
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise TraceError("perfetto", f"the perfetto package is not installed: {exc}") from None
    return perfetto_trace_pb2


def _open(path: Path) -> tuple[IO[bytes], int]:
    """The file (decompressed as it is read, when gzip), and its size on disk."""
    from ..compressed import compression_of, open_regular

    f = open_regular(path, "Perfetto trace")
    size = os.fstat(f.fileno()).st_size
    kind = compression_of(os.pread(f.fileno(), 8, 0))
    if kind is None:
        return f, size
    if kind != "gzip":
        f.close()
        raise TraceError(path, f"is {kind}-compressed: a Perfetto trace is read plain or gzip")
    return gzip.GzipFile(fileobj=f), size  # type: ignore[return-value]


class _Reader:
    """Packets one at a time, each bounded, with its offset in the (decompressed) file."""

    def __init__(self, path: Path, f: IO[bytes]):
        self.path, self.f = path, f
        self.offset = 0
        self.truncated: str | None = None

    def _read(self, n: int) -> bytes:
        try:
            data = self.f.read(n)
        except (EOFError, OSError, zlib.error) as exc:
            raise TraceError(self.path, f"truncated or corrupt gzip data ({exc})") from None
        if data is None:
            raise TraceError(self.path, "is a stream that would block, not a file: not read")
        return data

    def _varint(self) -> int | None:
        value, shift = 0, 0
        for i in range(10):
            b = self._read(1)
            if not b:
                if i == 0:
                    return None
                self.truncated = f"the file ends inside a packet's header (offset {self.offset})"
                return None
            self.offset += 1
            value |= (b[0] & 0x7F) << shift
            if not b[0] & 0x80:
                return value
            shift += 7
        raise TraceError(self.path, f"offset {self.offset}: a varint longer than 10 bytes")

    def packets(self):
        """(offset, packet bytes) of each ``packet`` field; other fields skipped."""
        while True:
            at = self.offset
            tag = self._varint()
            if tag is None:
                return
            field, wire = tag >> 3, tag & 7
            if wire == 0:
                if self._varint() is None:
                    return
                continue
            if wire in (1, 5):
                n = 8 if wire == 1 else 4
                if len(self._read(n)) < n:
                    self.truncated = f"the file ends inside a field (offset {at})"
                    return
                self.offset += n
                continue
            if wire != 2:
                raise TraceError(
                    self.path, f"offset {at}: not a Perfetto trace (a field of wire type {wire})"
                )
            size = self._varint()
            if size is None:
                return
            n = size
            if n > MAX_PACKET:
                raise TraceError(
                    self.path,
                    f"offset {at}: a packet of {n} bytes (more than {MAX_PACKET >> 20} MiB, "
                    "the most read)",
                )
            data = self._read(n)
            if len(data) < n:
                self.truncated = (
                    f"the file ends inside its last packet (offset {at}, {len(data)} of its "
                    f"{n} bytes): that packet is left out"
                )
                return
            self.offset += n
            if field == 1:
                yield at, data


class _Columns:
    """The rows of one event as columns of Python values (None: absent)."""

    def __init__(self):
        self.n = 0
        self.cols: dict[str, list] = {}
        self._keys: frozenset = frozenset()

    def add(self, values: dict[str, Any]) -> None:
        cols = self.cols
        if self._keys == values.keys():  # (the usual case: the same fields as before)
            for k, v in values.items():
                cols[k].append(v)
            self.n += 1
            return
        self.extend({k: [v] for k, v in values.items()}, 1)
        self._keys = frozenset(values) if frozenset(values) == frozenset(cols) else frozenset()

    def extend(self, columns: dict[str, list], n: int) -> None:
        """``n`` rows given as columns (each of ``n`` values)."""
        for k, vals in columns.items():
            col = self.cols.get(k)
            if col is None:
                col = self.cols[k] = [None] * self.n
            col.extend(vals)
        self.n += n
        for col in self.cols.values():
            if len(col) < self.n:
                col.extend([None] * (self.n - len(col)))
        self._keys = frozenset()


def read(path, events=None, progress: Progress | None = None) -> RawTrace:
    """Read the Perfetto trace at ``path`` (see the module's docstring); ``events``: the
    event names to build tables for (None: all; the others are counted)."""
    p = Path(path)
    pb = _pb()
    from google.protobuf.message import DecodeError

    f, size = _open(p)
    wanted = None if events is None else set(events)
    rows: dict[str, _Columns] = defaultdict(_Columns)
    counts: dict[str, int] = defaultdict(int)
    # the switches and wakings of the compact encoding, as arrays per bundle
    compact_sw: list[tuple[np.ndarray, ...]] = []
    compact_wk: list[tuple[np.ndarray, ...]] = []
    symbols: dict[int, dict[int, str]] = defaultdict(dict)
    thread_names: dict[int, str] = {}
    kernel = None
    num_cpus = 0
    clocks: set[str | None] = set()
    lost_rows: list[tuple[int, int]] = []
    seq_no = 0
    span = [None, None]  # the first and last event time of the file, read or not
    warnings: list[str] = []
    reader = _Reader(p, f)
    with f:
        for at, data in reader.packets():
            try:
                packet = pb.TracePacket.FromString(data)
            except (DecodeError, RuntimeError, ValueError) as exc:
                raise TraceError(p, f"packet at offset {at}: not a TracePacket ({exc})") from None
            seq = packet.trusted_packet_sequence_id
            if packet.sequence_flags & _SEQ_CLEARED or packet.incremental_state_cleared:
                symbols[seq] = {}
            if packet.HasField("interned_data"):
                for k in packet.interned_data.kernel_symbols:
                    symbols[seq][k.iid] = k.str.decode("utf-8", "replace")
            if packet.HasField("system_info"):
                u = packet.system_info.utsname
                if u.release:
                    kernel = _text(u.release)
                num_cpus = max(num_cpus, packet.system_info.num_cpus)
            if packet.HasField("process_tree"):
                for t in packet.process_tree.threads:
                    if t.name:
                        thread_names[t.tid] = _text(t.name)
                for pr in packet.process_tree.processes:
                    if pr.cmdline and pr.pid not in thread_names:
                        thread_names[pr.pid] = _text(pr.cmdline[0]).rsplit("/", 1)[-1][:15]
            if packet.HasField("ftrace_events"):
                b = packet.ftrace_events
                if not b.HasField("cpu"):
                    warnings.append(f"a bundle without its CPU (offset {at}) was left out")
                    continue
                cpu = b.cpu
                if cpu >= MAX_CPUS:
                    raise TraceError(p, f"packet at offset {at}: CPU {cpu} (at most {MAX_CPUS})")
                clocks.add(_CLOCKS.get(b.ftrace_clock))
                seq_no += 1
                first_ts = _bundle(
                    p,
                    at,
                    b,
                    cpu,
                    seq_no,
                    symbols[seq],
                    wanted,
                    rows,
                    counts,
                    compact_sw,
                    compact_wk,
                    span,
                )
                if b.lost_events:
                    lost_rows.append((cpu, first_ts))
            if progress is not None and size:
                progress(min(reader.offset / size, 1.0))
    if reader.truncated:
        warnings.append(reader.truncated)
    tables, facts = _assemble(p, rows, compact_sw, compact_wk, thread_names, kernel, wanted, counts)
    warnings.extend(facts.pop("warnings"))
    first, last = span
    cpus_seen = max(
        (int(pa.compute.max(t.column("cpu")).as_py()) + 1 for t in tables.values() if t.num_rows),
        default=0,
    )
    lost = pa.table(
        {
            "ts": pa.array([t if t is not None else 0 for _, t in lost_rows], pa.int64()),
            "cpu": pa.array([c for c, _ in lost_rows], pa.int32()),
            "count": pa.array([-1] * len(lost_rows), pa.int64()),
        },
        schema=LOST_EVENTS_SCHEMA,
    )
    clock = next(iter(clocks)) if len(clocks) == 1 else None
    meta = TraceMeta(
        path=str(path),
        format="perfetto",
        cpus=max(num_cpus, cpus_seen) or None,
        clock=clock,
        first_ts_ns=first,
        last_ts_ns=last,
        kernel=kernel,
        lost_events={},
        lost_unknown=tuple(sorted({c for c, _ in lost_rows})),
        event_counts=dict(sorted(counts.items())),
        systems={e: _system(e) for e in counts},
        warnings=tuple(warnings),
        source={"timestamps": "ns", "bundles": seq_no, "reader": "schedwake", **facts},
    )
    if not counts:
        raise TraceError(p, "a Perfetto trace without ftrace events: nothing to analyse")
    return RawTrace(tables=tables, meta=meta, lost=lost)


def _system(event: str) -> str | None:
    for prefix, system in (
        ("sched_", "sched"),
        ("workqueue_", "workqueue"),
        ("irq_", "irq"),
        ("softirq_", "irq"),
    ):
        if event.startswith(prefix):
            return system
    return "ftrace" if event == "print" else None


def _bundle(path, at, b, cpu, seq_no, syms, wanted, rows, counts, compact_sw, compact_wk, span):
    """One bundle's events into ``rows`` (full events) and ``compact_*`` (arrays), the
    file's first and last times into ``span``; returns the bundle's first event's time
    (None without events)."""
    first = last = None
    if b.HasField("compact_sched"):
        cs = b.compact_sched
        intern = [_text(v) for v in cs.intern_table]
        m = len(cs.waking_timestamp)
        _same_lengths(path, at, "sched_switch", cs, ("timestamp", "prev_state", "next_pid",
                      "next_prio", "next_comm_index"), "switch_")  # fmt: skip
        _same_lengths(path, at, "sched_waking", cs, ("timestamp", "pid", "target_cpu", "prio",
                      "comm_index"), "waking_")  # fmt: skip
        flags_n = len(cs.waking_common_flags)
        if flags_n not in (0, m):
            raise TraceError(path, f"packet at offset {at}: {flags_n} waking flags for {m} wakings")
        for kind, stamps, index in (
            ("sched_switch", cs.switch_timestamp, cs.switch_next_comm_index),
            ("sched_waking", cs.waking_timestamp, cs.waking_comm_index),
        ):
            if not len(stamps):
                continue
            counts[kind] += len(stamps)
            ts = _delta_times(path, at, stamps)
            idx = np.asarray(index, dtype=np.int64)
            if idx.size and (idx.max() >= len(intern)):
                raise TraceError(
                    path,
                    f"packet at offset {at}: a compact {kind} names string "
                    f"{int(idx.max())} of an intern table of {len(intern)}",
                )
            comm = np.array(intern, dtype=object)[idx] if idx.size else np.zeros(0, object)
            lo, hi = int(ts.min()), int(ts.max())
            first = lo if first is None else min(first, lo)
            last = hi if last is None else max(last, hi)
            cpus = np.full(len(ts), cpu, np.int64)
            seqs = np.full(len(ts), seq_no, np.int64)
            if kind == "sched_switch":
                compact_sw.append(
                    (
                        ts,
                        cpus,
                        seqs,
                        np.asarray(cs.switch_prev_state, np.int64),
                        np.asarray(cs.switch_next_pid, np.int64),
                        np.asarray(cs.switch_next_prio, np.int64),
                        comm,
                    )
                )
            else:
                flags = (
                    np.asarray(cs.waking_common_flags, np.int64)
                    if flags_n
                    else np.full(m, -1, np.int64)
                )
                compact_wk.append(
                    (
                        ts,
                        cpus,
                        seqs,
                        np.asarray(cs.waking_pid, np.int64),
                        np.asarray(cs.waking_target_cpu, np.int64),
                        np.asarray(cs.waking_prio, np.int64),
                        comm,
                        flags,
                    )
                )
    for k, e in enumerate(b.event):
        which = e.WhichOneof("event")
        if which is None:
            continue
        ts = e.timestamp
        if ts > _I64_MAX:
            raise TraceError(path, f"packet at offset {at}: an event at time {ts} (beyond int64)")
        msg = getattr(e, which)
        name = _text(msg.event_name) if which == "generic" else which
        if not name:
            continue
        counts[name] += 1
        first = ts if first is None else min(first, ts)
        last = ts if last is None else max(last, ts)
        # (the switches say who runs: compact wakings need them, wanted or not)
        if wanted is not None and name not in wanted and name != "sched_switch":
            continue
        pid = e.pid if e.HasField("pid") else None
        if which == "sched_switch" and msg.HasField("prev_pid"):
            pid = msg.prev_pid  # (the switch fires in prev's context; trace_processor's too)
        values: dict[str, Any] = {
            "ts": ts,
            "cpu": cpu,
            "common_pid": pid,
            "common_flags": e.common_flags if e.HasField("common_flags") else None,
            "_order": (seq_no, 1, k),
        }
        if which == "generic":
            for fld in msg.field:
                kind = fld.WhichOneof("value")
                if kind is not None and fld.name:
                    values[field_name(_text(fld.name))] = _text(getattr(fld, kind))
        else:
            for fd, v in msg.ListFields():
                if fd.is_repeated or fd.message_type is not None:
                    continue
                if (name, fd.name) in SYMBOLIZED:
                    v = syms.get(v) or SYMBOLIZED[name, fd.name](v)
                elif name == "print" and fd.name == "ip":
                    v = f"{v:#x}"
                elif isinstance(v, bytes):
                    v = v.decode("utf-8", "replace")
                values[field_name(fd.name)] = v
        rows[name].add(values)
    if first is not None:
        span[0] = first if span[0] is None else min(span[0], first)
        span[1] = last if span[1] is None else max(span[1], last)
    return first


def _same_lengths(path, at, kind: str, cs, fields: tuple[str, ...], prefix: str) -> None:
    """A compact encoding's arrays of one event: one entry per event in each."""
    lengths = {len(getattr(cs, prefix + f)) for f in fields}
    if len(lengths) > 1:
        raise TraceError(path, f"packet at offset {at}: compact {kind} arrays of different lengths")


def _delta_times(path, at, stamps) -> np.ndarray:
    """Delta-encoded times (the first absolute) as int64, refused beyond int64."""
    d = np.asarray(stamps, dtype=np.uint64)
    ts = np.cumsum(d, dtype=np.uint64)
    # (a sum that wrapped is smaller than the one before it; one past int64 is too large)
    if (len(ts) > 1 and (ts[1:] < ts[:-1]).any()) or int(ts[-1]) > _I64_MAX:
        raise TraceError(path, f"packet at offset {at}: compact times beyond int64")
    return ts.astype(np.int64)


def _assemble(path, rows, compact_sw, compact_wk, thread_names, kernel, wanted, counts):
    """The tables: compact events merged into the full ones, their inferred fields and
    every event's ``common_comm`` filled, each table in time order."""
    facts: dict[str, Any] = {"warnings": []}
    sw = rows.get("sched_switch")
    # every switch (full and compact) per CPU in time order: the compact ones' prev_*
    full_n = sw.n if sw is not None else 0

    def cat(parts, i, dt):
        return np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, dt)

    c_ts, c_cpu, c_seq = (cat(compact_sw, i, np.int64) for i in range(3))
    c_state, c_next, c_prio = (cat(compact_sw, i, np.int64) for i in range(3, 6))
    c_comm = cat(compact_sw, 6, object)
    scols = sw.cols if sw is not None and full_n else {}
    f_ts = _ints(scols.get("ts"), full_n)
    f_cpu = _ints(scols.get("cpu"), full_n)
    f_seq = np.array([o[0] for o in scols.get("_order", [])], np.int64)
    f_next = _ints(scols.get("next_pid"), full_n)
    f_prio = _ints(scols.get("next_prio"), full_n)
    f_ncomm = np.array(scols.get("next_comm", [None] * full_n), dtype=object)
    n_all = full_n + len(c_ts)
    a_ts = np.concatenate([f_ts, c_ts])
    a_cpu = np.concatenate([f_cpu, c_cpu])
    a_seq = np.concatenate([f_seq, c_seq])
    kind = np.concatenate(
        [np.ones(full_n, np.int64), np.zeros(len(c_ts), np.int64)]
    )  # compact first
    a_next = np.concatenate([f_next, c_next])
    a_prio = np.concatenate([f_prio, c_prio])
    a_ncomm = np.concatenate([f_ncomm, c_comm])
    order = np.lexsort((np.arange(n_all), kind, a_seq, a_ts, a_cpu))
    prev_of = np.full(n_all, -1, np.int64)  # the switch before, on the same CPU
    if n_all > 1:
        same = a_cpu[order[1:]] == a_cpu[order[:-1]]
        prev_of[order[1:][same]] = order[:-1][same]
    out_sw = _Columns()
    if full_n:
        out_sw = sw
    comp = np.arange(full_n, n_all)
    known = prev_of[comp] >= 0
    facts["compact_first_switches_left_out"] = int((~known).sum())
    if len(comp):
        pv = prev_of[comp[known]]
        ci = comp[known] - full_n
        k = len(ci)
        out_sw.extend(
            {
                "ts": c_ts[ci].tolist(),
                "cpu": c_cpu[ci].tolist(),
                "common_pid": a_next[pv].tolist(),
                "common_flags": [None] * k,
                "_order": list(zip(c_seq[ci].tolist(), [0] * k, ci.tolist())),
                "prev_comm": a_ncomm[pv].tolist(),
                "prev_pid": a_next[pv].tolist(),
                "prev_prio": a_prio[pv].tolist(),
                "prev_state": c_state[ci].tolist(),
                "next_comm": c_comm[ci].tolist(),
                "next_pid": c_next[ci].tolist(),
                "next_prio": c_prio[ci].tolist(),
            },
            k,
        )
    if out_sw.n and (wanted is None or "sched_switch" in wanted):
        rows["sched_switch"] = out_sw
    elif "sched_switch" in rows and wanted is not None and "sched_switch" not in wanted:
        del rows["sched_switch"]
    # compact wakings: the waker is the CPU's current task (its last switch at or before)
    w_ts, w_cpu, w_seq = (cat(compact_wk, i, np.int64) for i in range(3))
    w_pid, w_tcpu, w_prio = (cat(compact_wk, i, np.int64) for i in range(3, 6))
    w_comm = cat(compact_wk, 6, object)
    w_flags = cat(compact_wk, 7, np.int64)
    unattributed = 0
    if len(w_ts) and (wanted is None or "sched_waking" in wanted):
        wk = rows["sched_waking"]
        cur = np.full(len(w_ts), -1, np.int64)
        for c in np.unique(w_cpu):
            sel = np.flatnonzero(w_cpu == c)
            on = order[a_cpu[order] == c]
            if len(on):
                at = np.searchsorted(a_ts[on], w_ts[sel], side="right") - 1
                cur[sel] = np.where(at >= 0, on[np.maximum(at, 0)], -1)
        ok = np.flatnonzero(cur >= 0)
        unattributed = len(w_ts) - len(ok)
        k = len(ok)
        wk.extend(
            {
                "ts": w_ts[ok].tolist(),
                "cpu": w_cpu[ok].tolist(),
                "common_pid": a_next[cur[ok]].tolist(),
                "common_flags": [None if f < 0 else f for f in w_flags[ok].tolist()],
                "_order": list(zip(w_seq[ok].tolist(), [0] * k, ok.tolist())),
                "comm": w_comm[ok].tolist(),
                "pid": w_pid[ok].tolist(),
                "prio": w_prio[ok].tolist(),
                "target_cpu": w_tcpu[ok].tolist(),
            },
            k,
        )
    facts["compact_wakings_left_out"] = unattributed
    # names: the ProcessTree's, else the last a switch gives
    names: dict[int, str] = {}
    if "sched_switch" in rows:
        s = rows["sched_switch"]
        for pid, comm in zip(s.cols.get("next_pid", []), s.cols.get("next_comm", [])):
            if pid is not None and comm is not None:
                names[pid] = comm
    names.update(thread_names)
    tables = {}
    for name, r in rows.items():
        if r.n == 0:
            continue
        tables[name] = _table(path, name, r, names, kernel)
    return tables, facts


def _ints(values, n) -> np.ndarray:
    if not n:
        return np.zeros(0, np.int64)
    return np.array([-1 if v is None else v for v in (values or [None] * n)], np.int64)


def _table(path, name: str, r: _Columns, names: dict[int, str], kernel) -> pa.Table:
    """One event's rows as its canonical table, in time order."""
    from . import text

    order_key = r.cols.pop("_order")
    ts = np.asarray(r.cols.pop("ts"), np.int64)
    cpu = np.asarray(r.cols.pop("cpu"), np.int64)
    keys = (
        np.array([o for o in order_key], dtype=np.int64).reshape(-1, 3)
        if order_key
        else np.zeros((0, 3), np.int64)
    )
    order = np.lexsort((keys[:, 2], keys[:, 1], keys[:, 0], cpu, ts))
    pid = r.cols.pop("common_pid")
    flags = r.cols.pop("common_flags")
    bad = next((f for f in flags if f is not None and not 0 <= f <= 0xFF), None)
    if bad is not None:  # (the kernel's flags are one byte; the proto's field is wider)
        raise TraceError(path, f"a {name} event with common_flags {bad} (8 bits at most)")
    take = lambda vals: [vals[i] for i in order]  # noqa: E731
    pid_o = take(pid)
    common = [
        pa.array(ts[order], pa.int64()),
        pa.array(cpu[order], pa.int32()),
        pa.array(pid_o, pa.int32()),
        # (pid 0 is the idle task of every CPU: "<idle>", as trace-cmd names it)
        pa.array(
            [None if p is None else "<idle>" if p == 0 else names.get(p, f"<{p}>") for p in pid_o],
            pa.string(),
        ).dictionary_encode(),
        pa.array(take(flags), pa.uint8()),
        pa.nulls(r.n, pa.uint8()),
    ]
    layout = text.LAYOUTS.get(name)
    types: dict[str, pa.DataType] = {}
    if layout is not None:
        variant = layout["variants"][layout.get("current", 0)]
        types = {field_name(k): v for k, v in variant[1].items()}
    fields, arrays = [], []
    for col, values in r.cols.items():
        vals = take(values)
        typ = types.get(col)
        if typ is None:
            sample = next((v for v in vals if v is not None), None)
            typ = (
                STRING
                if isinstance(sample, str)
                else pa.uint8()
                if isinstance(sample, bool)
                else pa.uint64()
                if isinstance(sample, int) and sample > _I64_MAX
                else pa.int64()
            )
        arr = _array(vals, typ)
        fields.append(pa.field(col, arr.type))
        arrays.append(arr)
        if name == "sched_switch" and col == "prev_state":
            table = text.STATE_NEW if _new_states(kernel) else text.STATE_OLD
            v = np.array([0 if x is None else x for x in vals], np.int64)
            valid = np.array([x is not None for x in vals])
            st = text.state_str_column(v, valid, table)
            fields.append(pa.field("prev_state_str", st.type))
            arrays.append(st)
    schema = event_schema(fields)
    return pa.Table.from_arrays(common + arrays, schema=schema)


def _array(vals: list, typ: pa.DataType) -> pa.Array:
    if pa.types.is_dictionary(typ):
        return pa.array(
            [None if v is None else str(v) for v in vals], pa.string()
        ).dictionary_encode()
    try:
        return pa.array(vals, typ)
    except (pa.ArrowInvalid, OverflowError, TypeError):
        # a value the kernel's type cannot hold (a hostile file): as int64, else text
        try:
            return pa.array(vals, pa.int64())
        except (pa.ArrowInvalid, OverflowError, TypeError):
            return pa.array(
                [None if v is None else str(v) for v in vals], pa.string()
            ).dictionary_encode()


def _new_states(kernel: str | None) -> bool:
    """Whether prev_state has the >= 4.14 bits (TASK_REPORT; a release that does not
    say: yes, today's kernels)."""
    m = re.match(r"(\d+)\.(\d+)", kernel or "")
    return m is None or (int(m[1]), int(m[2])) >= (4, 14)
