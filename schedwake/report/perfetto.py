"""``schedwake convert TRACE --to perfetto``: a trace, and what schedwake found in it, as a
Perfetto trace (docs/perfetto.md), written with Perfetto's own protos (the ``perfetto``
package's ``perfetto_trace_pb2``) packet by packet.

What is written:

* the events as Perfetto's ftrace event bundles, per CPU and in time order, as
  Perfetto's own recorder writes them: ``sched_switch`` and ``sched_waking`` in the
  compact encoding (``FtraceEventBundle.CompactSched``) wherever it says everything
  the event says. The compact encoding has no ``prev_*`` fields (a reader takes them
  from the CPU's previous switch) and no waker (the task current on the CPU), so a
  switch that breaks its CPU's chain (``prev_pid`` is not the previous ``next_pid``: a
  trace that lost a switch), the first of each CPU, one at the same time as another,
  and a waking whose waker is not the CPU's current task are written as full events;
  ``sched_wakeup``/``_new``, ``sched_migrate_task``, ``sched_process_*``, the
  workqueue events and ``print`` as their typed events, with ``common_flags``; any
  other event as a ``GenericFtraceEvent`` with its integer and string fields.
  Workqueue functions, which schedwake's tables hold by name, are interned kernel
  symbols (``InternedData.kernel_symbols``), as Perfetto's ``symbolize_ksyms`` writes
  them; the ring buffer's losses set the bundle's ``lost_events``.
* the threads' names (``ProcessTree``) and the kernel release (``SystemInfo``).
* schedwake's results on their own tracks (``TrackEvent``, the boot clock the
  ftrace timestamps are read in): each finding as a slice over its evidence window on
  a track of its detector, named ``<detector>: <title>`` with the finding's numbers as
  its arguments; each wake-up of a kworker ping-pong episode as a flow from the
  waking on the waker's CPU to the wakee's run on the CPU it was moved to; the metrics
  per window as counter tracks ``schedwake <metric>``.

Not carried (Perfetto's format has no place for them): ``common_preempt_count``, the
``common_flags`` of a compact switch, the per-event ``common_comm`` (a thread has one
name per ``ProcessTree``), the clock's name (the timestamps are written as they are).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import TraceError

#: Events written as typed FtraceEvent fields: event -> (FtraceEvent field, its fields).
TYPED = {
    "sched_switch": (
        "sched_switch",
        ("prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"),
    ),
    "sched_waking": ("sched_waking", ("comm", "pid", "prio", "success", "target_cpu")),
    "sched_wakeup": ("sched_wakeup", ("comm", "pid", "prio", "success", "target_cpu")),
    "sched_wakeup_new": ("sched_wakeup_new", ("comm", "pid", "prio", "success", "target_cpu")),
    "sched_migrate_task": (
        "sched_migrate_task",
        ("comm", "pid", "prio", "orig_cpu", "dest_cpu", "running"),
    ),
    "sched_process_fork": (
        "sched_process_fork",
        ("parent_comm", "parent_pid", "child_comm", "child_pid"),
    ),
    "sched_process_exec": ("sched_process_exec", ("filename", "pid", "old_pid")),
    "sched_process_exit": ("sched_process_exit", ("comm", "pid", "tgid", "prio")),
    "sched_process_free": ("sched_process_free", ("comm", "pid", "prio")),
    "sched_process_wait": ("sched_process_wait", ("comm", "pid", "prio")),
    "workqueue_execute_start": ("workqueue_execute_start", ("work", "function")),
    "workqueue_execute_end": ("workqueue_execute_end", ("work", "function")),
    "workqueue_activate_work": ("workqueue_activate_work", ("work", "function")),
    "workqueue_queue_work": (
        "workqueue_queue_work",
        ("work", "function", "req_cpu", "cpu", "workqueue"),
    ),
    "print": ("print", ("ip", "buf")),
}
#: The compact encoding's arrays of each event: (prefix, [(our column, its array)]).
COMPACT = {
    "sched_switch": ("switch_", [("prev_state", "prev_state"), ("next_pid", "next_pid"),
                                 ("next_prio", "next_prio"), ("next_comm", "next_comm_index")]),
    "sched_waking": ("waking_", [("pid", "pid"), ("target_cpu", "target_cpu"), ("prio", "prio"),
                                 ("comm", "comm_index"), ("common_flags", "common_flags")]),
}  # fmt: skip
#: Fields of the typed events whose proto name is another column of ours.
COLUMN_OF = {("workqueue_queue_work", "cpu"): "field_cpu"}
#: Fields written as interned kernel symbols (our column holds the name).
SYMBOL_FIELDS = {
    ("workqueue_execute_start", "function"),
    ("workqueue_execute_end", "function"),
    ("workqueue_activate_work", "function"),
    ("workqueue_queue_work", "function"),
}


def carried(name: str) -> set[str]:
    """The columns of event ``name`` that its typed Perfetto event holds (the others,
    such as ``sched_process_exit.group_dead``, have no field there)."""
    if name not in TYPED:
        return set()
    return {COLUMN_OF.get((name, f), f) for f in TYPED[name][1]}


#: Events a bundle holds at most (Perfetto's recorder writes one bundle per ring-buffer
#: page or few; a reader holds one bundle at a time).
BUNDLE_EVENTS = 4096
#: The sequences of the packets: ftrace bundles (with the interned kernel symbols), and
#: schedwake's own tracks.
FTRACE_SEQ, TRACKS_SEQ = 1, 2
#: TracePacket.sequence_flags.
SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE = 1, 2
#: Perfetto's boot clock (BuiltinClock.BUILTIN_CLOCK_BOOTTIME), the ftrace default.
BOOTTIME = 6


def _pb():
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise TraceError(
            "perfetto", f"the perfetto package (its protos) is not installed: {exc}"
        ) from None
    return perfetto_trace_pb2


def _py(col) -> list:
    """A column as Python values (dictionary strings decoded)."""
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.to_pylist()


#: The common columns, which the event's own fields follow.
_COMMON = ("ts", "cpu", "common_pid", "common_comm", "common_flags", "common_preempt_count")


class _Events:
    """One event table: its times and CPUs as arrays, its rows as Python values only a
    bundle's rows at a time (:meth:`rows`), so memory follows a bundle, not the trace."""

    def __init__(self, name: str, table: pa.Table):
        self.name = name
        self.table = table
        self.n = table.num_rows
        self.ts = table.column("ts").to_numpy().astype(np.int64)
        self.cpu = table.column("cpu").to_numpy().astype(np.int64)
        self.fields = [c for c in table.column_names if c not in _COMMON]
        #: the typed event's fields that the table has, with their columns
        self.typed = [
            (f, COLUMN_OF.get((name, f), f))
            for f in (TYPED[name][1] if name in TYPED else ())
            if COLUMN_OF.get((name, f), f) in self.fields
        ]

    def rows(self, idx: np.ndarray) -> dict[str, list]:
        """Rows ``idx``: column -> Python values (``common_pid``, ``common_flags`` and the
        event's own fields)."""
        sub = self.table.take(pa.array(idx, pa.int64()))
        cols = ["common_pid", "common_flags", *self.fields]
        return {c: _py(sub.column(c)) for c in cols}


def _equal(a, b) -> np.ndarray:
    """Element-wise equality of two Arrow arrays (strings decoded), null as unequal."""
    if pa.types.is_dictionary(a.type):
        a = a.cast(a.type.value_type)
    if pa.types.is_dictionary(b.type):
        b = b.cast(b.type.value_type)
    return pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)


def _valid(col) -> np.ndarray:
    return pc.is_valid(col).to_numpy(zero_copy_only=False)


def _compact_switches(s: _Events) -> np.ndarray:
    """Which switches the compact encoding says in full: the previous switch on its CPU
    (strictly earlier) switched in its prev task with that name and priority, and the
    switch fired in that task's context."""
    n = s.n
    ok = np.zeros(n, dtype=bool)
    need = ("prev_pid", "next_pid", "prev_comm", "next_comm", "prev_prio", "next_prio",
            "prev_state")  # fmt: skip
    if n < 2 or any(c not in s.fields for c in need):
        return ok
    t = s.table
    order = np.lexsort((np.arange(n), s.ts, s.cpu))
    a, b = order[1:], order[:-1]  # a switch, and the one before it in its CPU's order
    ta, tb = pa.array(a, pa.int64()), pa.array(b, pa.int64())

    def col(name, rows):
        return t.column(name).take(rows)

    chain = (
        (s.cpu[a] == s.cpu[b])
        & (s.ts[a] > s.ts[b])
        & _equal(col("prev_pid", ta), col("next_pid", tb))
        & _equal(col("prev_comm", ta), col("next_comm", tb))
        & _equal(col("prev_prio", ta), col("next_prio", tb))
        & _equal(col("common_pid", ta), col("prev_pid", ta))
    )
    ok[a] = chain
    for c in ("prev_state", "next_comm", "next_pid", "next_prio"):
        ok &= _valid(t.column(c))
    return ok


def _compact_wakings(w: _Events, s: _Events | None) -> np.ndarray:
    """Which wakings the compact encoding says in full: the waker is the task the CPU's
    switches say is current (the ``next_pid`` of its last switch at or before the
    waking), no switch of that CPU has the waking's time, and the flags are known."""
    ok = np.zeros(w.n, dtype=bool)
    need = ("comm", "pid", "prio", "target_cpu")
    if w.n == 0 or s is None or s.n == 0 or "success" in w.fields or "next_pid" not in s.fields:
        return ok
    if any(c not in w.fields for c in need):
        return ok
    nxt = pc.fill_null(s.table.column("next_pid"), -1).to_numpy().astype(np.int64)
    pid = pc.fill_null(w.table.column("common_pid"), -3).to_numpy().astype(np.int64)
    for cpu in np.unique(w.cpu):
        rows = np.flatnonzero(w.cpu == cpu)
        sw = np.flatnonzero(s.cpu == cpu)
        if len(sw) == 0:
            continue
        sw = sw[np.argsort(s.ts[sw], kind="stable")]
        sts = s.ts[sw]
        at = np.searchsorted(sts, w.ts[rows], side="right") - 1
        tie = np.searchsorted(sts, w.ts[rows], side="left") != (at + 1)
        cur = np.where(at >= 0, nxt[sw[np.maximum(at, 0)]], -2)
        ok[rows] = (at >= 0) & ~tie & (cur == pid[rows])
    for c in (*need, "common_flags"):
        ok &= _valid(w.table.column(c))
    return ok


def write(
    trace,
    path,
    analysis=None,
    window_s: float | None = 1.0,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Write ``trace`` (a :class:`schedwake.Trace`) as a Perfetto trace at ``path``, with
    ``analysis`` (a :class:`schedwake.Analysis` of it; None: only the events) on tracks
    of its own, and the metrics over windows of ``window_s`` seconds as counters (None:
    none). Written to a temporary file beside ``path`` and moved into place whole.
    Returns what was written: ``{"packets", "events", "compact_switches",
    "compact_wakings", "findings", "flows", "counters"}``."""
    pb = _pb()
    from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder

    out = Path(path)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    stats = {
        "packets": 0,
        "events": 0,
        "compact_switches": 0,
        "compact_wakings": 0,
        "findings": 0,
        "flows": 0,
        "counters": 0,
    }
    try:
        with open(tmp, "wb") as f:
            builder = StreamingTraceProtoBuilder(f)

            def emit(packet) -> None:
                builder.write_packet(packet)
                stats["packets"] += 1

            _header_packets(pb, trace, emit)
            _ftrace_packets(pb, trace, emit, stats, progress)
            if analysis is not None or window_s is not None:
                _track_packets(pb, trace, analysis, window_s, emit, stats)
        os.replace(tmp, out)
    except OSError as exc:
        raise TraceError(out, f"cannot write the Perfetto trace: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return stats


def _header_packets(pb, trace, emit) -> None:
    """SystemInfo (the kernel release, the CPUs) and the threads' names."""
    p = pb.TracePacket()
    p.trusted_packet_sequence_id = TRACKS_SEQ
    p.timestamp = int(trace.meta.first_ts_ns or 0)
    u = p.system_info.utsname
    u.sysname = "Linux"
    if trace.meta.kernel:
        u.release = str(trace.meta.kernel)
    p.system_info.num_cpus = int(trace.meta.ncpus)
    emit(p)
    names = _thread_names(trace)
    if names:
        p = pb.TracePacket()
        p.trusted_packet_sequence_id = TRACKS_SEQ
        p.timestamp = int(trace.meta.first_ts_ns or 0)
        tgids = _tgids(trace)
        for pid, name in sorted(names.items()):
            t = p.process_tree.threads.add()
            t.tid = pid
            t.name = name
            if pid in tgids:
                t.tgid = tgids[pid]
        emit(p)


def _thread_names(trace) -> dict[int, str]:
    """pid -> the last name the trace gives it (pid 0, the idle tasks, has none)."""
    from ..analysis.latency import last_names

    names = last_names(trace)
    return {int(p): str(n) for p, n in names.items() if int(p) > 0 and str(n)}


def _tgids(trace) -> dict[int, int]:
    """tid -> its process, where the trace says (a perf.data's COMM records)."""
    comms = (getattr(trace, "sideband", None) or {}).get("comms")
    if comms is None or comms.num_rows == 0:
        return {}
    tid = comms.column("tid").to_numpy()
    pid = comms.column("pid").to_numpy()
    return {int(t): int(p) for t, p in zip(tid, pid) if t > 0 and p > 0}


def _ftrace_packets(pb, trace, emit, stats: dict, progress) -> None:
    """The events, one bundle of at most BUNDLE_EVENTS events per CPU at a time."""
    tables = {n: _Events(n, trace.table(n)) for n in trace.events if trace.has_records(n)}
    sw = tables.get("sched_switch")
    compact = {
        "sched_switch": _compact_switches(sw) if sw is not None else None,
        "sched_waking": _compact_wakings(tables["sched_waking"], sw)
        if "sched_waking" in tables
        else None,
    }
    symbols: dict[str, int] = {}
    for name, ev in tables.items():
        for field in ev.fields:
            if (name, field) in SYMBOL_FIELDS:
                for v in _py(pc.unique(ev.table.column(field).combine_chunks())):
                    if v is not None and v not in symbols:
                        symbols[v] = len(symbols) + 1
    # every event: its table, row, CPU and time, in each CPU's time order (a table's own
    # order among equal times)
    names = list(tables)
    parts = [(i, tables[n]) for i, n in enumerate(names) if tables[n].n]
    if not parts:
        return
    tid = np.concatenate([np.full(e.n, i, np.int64) for i, e in parts])
    row = np.concatenate([np.arange(e.n) for _, e in parts])
    cpu = np.concatenate([e.cpu for _, e in parts])
    ts = np.concatenate([e.ts for _, e in parts])
    order = np.lexsort((row, tid, ts, cpu))
    lost = trace.lost
    lost_at = {
        int(c): np.sort(lost.column("ts").to_numpy()[lost.column("cpu").to_numpy() == c])
        for c in np.unique(lost.column("cpu").to_numpy())
    }
    first = True
    total = len(order)
    done = 0
    for c in np.unique(cpu):
        idx = order[cpu[order] == c]
        losses = lost_at.get(int(c), np.zeros(0, np.int64))
        for start in range(0, len(idx), BUNDLE_EVENTS):
            chunk = idx[start : start + BUNDLE_EVENTS]
            p = pb.TracePacket()
            p.trusted_packet_sequence_id = FTRACE_SEQ
            if first:
                p.sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED
                for name, iid in symbols.items():
                    k = p.interned_data.kernel_symbols.add()
                    k.iid = iid
                    k.str = name.encode()
                first = False
            else:
                p.sequence_flags = SEQ_NEEDS_INCREMENTAL_STATE
            bundle = p.ftrace_events
            bundle.cpu = int(c)
            lo = int(ts[chunk[0]])
            before = np.searchsorted(losses, lo, side="right")
            if start == 0:
                bundle.lost_events = bool(before)
            else:
                prev_hi = int(ts[idx[start - 1]])
                bundle.lost_events = bool(before - np.searchsorted(losses, prev_hi, "right"))
            _fill_bundle(pb, bundle, chunk, tid, row, names, tables, compact, symbols, stats)
            emit(p)
            done += len(chunk)
            stats["events"] += len(chunk)
            if progress is not None:
                progress(done, total)


def _fill_bundle(pb, bundle, chunk, tid, row, names, tables, compact, symbols, stats) -> None:
    cs = bundle.compact_sched
    intern: dict[str, int] = {}

    def comm_index(v) -> int:
        if v not in intern:
            intern[v] = len(intern)
            cs.intern_table.append(v)
        return intern[v]

    # the chunk's rows of each table as Python values, and where each event's row is
    values: dict[int, dict[str, list]] = {}
    at = np.empty(len(chunk), np.int64)
    for t in np.unique(tid[chunk]):
        mine = np.flatnonzero(tid[chunk] == t)
        values[int(t)] = tables[names[t]].rows(row[chunk[mine]])
        at[mine] = np.arange(len(mine))
    last_switch = last_waking = None
    for k, i in enumerate(chunk):
        t = int(tid[i])
        name = names[t]
        r = int(row[i])
        ev = tables[name]
        c = values[t]
        j = int(at[k])
        ts = int(ev.ts[r])
        kind = compact.get(name)
        if kind is not None and kind[r]:
            prefix, fields = COMPACT[name]
            if name == "sched_switch":
                cs.switch_timestamp.append(ts if last_switch is None else ts - last_switch)
                last_switch = ts
            else:
                cs.waking_timestamp.append(ts if last_waking is None else ts - last_waking)
                last_waking = ts
            for column, field in fields:
                v = c[column][j]
                getattr(cs, prefix + field).append(
                    comm_index(v) if field.endswith("comm_index") else int(v)
                )
            stats["compact_switches" if name == "sched_switch" else "compact_wakings"] += 1
            continue
        e = bundle.event.add()
        e.timestamp = ts
        if c["common_pid"][j] is not None:
            e.pid = int(c["common_pid"][j])
        if c["common_flags"][j] is not None:
            e.common_flags = int(c["common_flags"][j])
        if name in TYPED:
            msg = getattr(e, TYPED[name][0])
            msg.SetInParent()
            for f, column in ev.typed:
                v = c[column][j]
                if v is None:
                    continue
                if (name, f) in SYMBOL_FIELDS:
                    v = symbols[v]
                elif name == "print" and f == "ip" and isinstance(v, str):
                    continue  # (an address resolved to a name: the name is not an ip)
                setattr(msg, f, v)
        else:
            g = e.generic
            g.event_name = name
            for col in ev.fields:
                v = c[col][j]
                if v is None or isinstance(v, (list, bytes, dict)):
                    continue
                fld = g.field.add()
                fld.name = col[6:] if col.startswith("field_") else col
                if isinstance(v, str):
                    fld.str_value = v
                elif isinstance(v, bool) or isinstance(v, int) and v >= 0 and v >> 63:
                    fld.uint_value = int(v)
                elif isinstance(v, int):
                    fld.int_value = v
                elif isinstance(v, float) and math.isfinite(v):
                    fld.int_value = int(v)
    if not cs.ListFields():
        bundle.ClearField("compact_sched")


# ---- schedwake's own tracks ---------------------------------------------------------


class _Tracks:
    """TrackDescriptors by name, each written once before its first event."""

    def __init__(self, pb, emit):
        self.pb, self.emit = pb, emit
        self.uuids: dict[str, int] = {}
        self.first = True

    def packet(self, ts: int):
        p = self.pb.TracePacket()
        p.trusted_packet_sequence_id = TRACKS_SEQ
        p.timestamp = int(ts)
        p.timestamp_clock_id = BOOTTIME
        if self.first:
            p.sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED
            self.first = False
        return p

    def uuid(self, name: str, counter: bool = False, unit: str | None = None) -> int:
        if name not in self.uuids:
            uuid = 0x5C4ED000000 + len(self.uuids) + 1
            self.uuids[name] = uuid
            p = self.pb.TracePacket()
            p.trusted_packet_sequence_id = TRACKS_SEQ
            d = p.track_descriptor
            d.uuid = uuid
            d.name = name
            if counter:
                d.counter.SetInParent()
                if unit:
                    d.counter.unit_name = unit
            self.emit(p)
        return self.uuids[name]


def _annotate(msg, name: str, value: Any) -> None:
    """A finding's number (or nested numbers) as debug annotations of ``msg``."""
    if isinstance(value, dict):
        for k, v in value.items():
            _annotate(msg, f"{name}.{k}" if name else str(k), v)
        return
    if value is None or isinstance(value, (list, tuple)):
        return
    a = msg.debug_annotations.add()
    a.name = name
    if isinstance(value, bool):
        a.bool_value = value
    elif isinstance(value, (int, np.integer)):
        a.int_value = int(value)
    elif isinstance(value, (float, np.floating)):
        a.double_value = float(value)
    else:
        a.string_value = str(value)


def _track_packets(pb, trace, analysis, window_s, emit, stats: dict) -> None:
    tracks = _Tracks(pb, emit)
    first, last = int(trace.meta.first_ts_ns or 0), int(trace.meta.last_ts_ns or 0)
    TE = pb.TrackEvent
    if analysis is not None:
        for f in analysis.findings:
            at = f.evidence_at or {}
            t0, t1 = int(at.get("t0", first)), int(at.get("t1", last))
            uuid = tracks.uuid(f"schedwake: {f.detector}")
            p = tracks.packet(t0)
            e = p.track_event
            e.type = TE.TYPE_SLICE_BEGIN
            e.track_uuid = uuid
            e.name = f"{f.detector}: {f.title}"
            _annotate(e, "", {"severity": f.severity, **f.metrics})
            emit(p)
            p = tracks.packet(max(t1, t0))
            p.track_event.type = TE.TYPE_SLICE_END
            p.track_event.track_uuid = uuid
            emit(p)
            stats["findings"] += 1
        _flows(trace, tracks, TE, emit, stats)
    if window_s is not None and last > first:
        _counters(trace, analysis, window_s, tracks, TE, emit, stats)


def _flows(trace, tracks: _Tracks, TE, emit, stats: dict) -> None:
    """The wake-ups each detector draws as flows (its ``SHOWN.flows``, e.g. every
    wake-up of a kworker ping-pong episode): an instant at its waking on the waker's
    CPU and one at the wakee's run on the CPU it ran on, one flow between."""
    from ..detect import DETECTORS

    k = 0
    for d in DETECTORS.values():
        flows = d.SHOWN.flows
        if flows is None or len(trace.model.wakeups) == 0:
            continue
        for r in flows.rows(trace.model).itertuples(index=False):
            k += 1
            flow = 0x5C4ED00000000000 + k
            waker, wakee = str(r.waker_comm), str(r.wakee_comm)
            p = tracks.packet(int(r.ts))
            e = p.track_event
            e.type = TE.TYPE_INSTANT
            e.track_uuid = tracks.uuid(f"schedwake: CPU {int(r.waker_cpu)} {flows.track}")
            e.name = f"{d.NAME}: {waker} ({int(r.waker_pid)}) wakes {wakee} ({int(r.wakee_pid)})"
            _annotate(
                e,
                "",
                {
                    "prev_cpu": int(r.prev_cpu),
                    "chosen_cpu": int(r.chosen_cpu),
                    "work_function": None if r.work_function is None else str(r.work_function),
                },
            )
            e.flow_ids.append(flow)
            emit(p)
            p = tracks.packet(int(r.run_ts))
            e = p.track_event
            e.type = TE.TYPE_INSTANT
            e.track_uuid = tracks.uuid(f"schedwake: CPU {int(r.chosen_cpu)} {flows.track}")
            e.name = f"{d.NAME}: {wakee} ({int(r.wakee_pid)}) runs"
            e.terminating_flow_ids.append(flow)
            emit(p)
            stats["flows"] += 1


def _counters(trace, analysis, window_s: float, tracks: _Tracks, TE, emit, stats: dict) -> None:
    """The metrics per window: one counter track each, a value at each window's start
    (and the last value again at the last window's end)."""
    from ..analysis import metrics

    th = analysis.thresholds if analysis is not None else None
    w = metrics.window_metrics(trace, window_s, th)
    if len(w) == 0:
        return
    skip = {"window", "start_ns", "end_ns"}
    for col in w.columns:
        if col in skip:
            continue
        values = w[col].to_numpy()
        if values.dtype.kind not in "iuf":
            continue
        unit = getattr(metrics.METRICS.get(col), "unit", None)
        uuid = tracks.uuid(f"schedwake {col}", counter=True, unit=unit)
        starts = w["start_ns"].to_numpy()
        for t, v in zip(starts, values):
            if not np.isfinite(v):
                continue
            p = tracks.packet(int(t))
            p.track_event.type = TE.TYPE_COUNTER
            p.track_event.track_uuid = uuid
            p.track_event.double_counter_value = float(v)
            emit(p)
        stats["counters"] += 1
