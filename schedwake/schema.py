"""The canonical event tables: one Arrow table per event name, whatever the source.

Every reader in :mod:`schedwake.ingest` (trace.dat, raw ftrace text, ``trace-cmd
report`` text, ``perf script`` text) returns tables of exactly this shape, so the
model and the detectors never know where a trace came from.

Common columns, first and in this order, in every event table:

``ts`` int64
    Nanoseconds of the trace clock (raw counter values for the ``counter`` and
    ``x86-tsc`` clocks). Text with microsecond timestamps gives multiples of 1000.
``cpu`` int32
    The CPU whose ring buffer recorded the event: the CPU the event fired on.
``common_pid`` int32
    The task that was *current* when the event fired (the waker, for a wake-up).
``common_comm`` dictionary<int32, string>
    That task's name as the source knows it (trace.dat: the saved-cmdlines map,
    i.e. the latest name of the pid; text: the line's prefix). Where an event
    carries the current task's own name (``sched_switch.prev_comm``), that field
    is the truth at that instant.
``common_flags`` uint8, ``common_preempt_count`` uint8
    Latency bits (irqs-off 0x01, need-resched 0x04, hardirq 0x08, softirq 0x10,
    ...) and preempt depth; null where the source does not have them.

Then every field of the event's format, with the kernel's own name, in format order
(a field whose name is a common column's, such as ``workqueue_queue_work.cpu``, the
CPU the work was queued for, is stored as ``field_<name>``: ``field_cpu``):

* integers: the field's own width and signedness (``int`` -> int32 and
  sign-extended, so workqueue ``cpu=-1`` stays -1; ``long`` -> int64; ``u64`` -> uint64);
* ``char[N]`` and ``__data_loc``/``__rel_loc char[]`` strings -> dictionary<int32, string>;
* pointers -> uint64, except function pointers that the print format shows as a
  symbol (``%ps``/``%pS``, e.g. workqueue ``function``), which are resolved through
  the file's kallsyms to the symbol name (dictionary string), as text formats print them;
* other numeric arrays -> list<intN>; anything else -> binary.

Derived columns, added by the readers because the raw value alone misleads:

``sched_switch.prev_state_str`` dictionary<int32, string>
    ``prev_state`` decoded with the event's own print format (``R``, ``R+``, ``S``,
    ``D``, ``I``, ...). ``R+`` means preempted, not asleep.

Besides the tables, a reader returns :data:`LOST_EVENTS_SCHEMA` rows (where and
how many events the ring buffer lost) and its metadata
(:class:`schedwake.ingest.meta.TraceMeta`, whose fields every reader sets are
:data:`META_KEYS`).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

#: Columns every event table starts with, in this order.
COMMON_FIELDS: tuple[pa.Field, ...] = (
    pa.field("ts", pa.int64(), nullable=False),
    pa.field("cpu", pa.int32(), nullable=False),
    pa.field("common_pid", pa.int32()),
    pa.field("common_comm", pa.dictionary(pa.int32(), pa.string())),
    pa.field("common_flags", pa.uint8()),
    pa.field("common_preempt_count", pa.uint8()),
)
COMMON_NAMES: tuple[str, ...] = tuple(f.name for f in COMMON_FIELDS)

#: Arrow type of every string column (comm names, work functions, states).
STRING = pa.dictionary(pa.int32(), pa.string())

#: One row per place where the ring buffer dropped events. ``count`` is -1 when the
#: buffer only said that events were lost, not how many.
LOST_EVENTS_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.int64(), nullable=False),
        pa.field("cpu", pa.int32(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
    ]
)

#: The fields of ``Trace.meta`` (:class:`schedwake.ingest.meta.TraceMeta`) that every reader
#: sets, and the keys of its dict form (``TraceMeta.to_dict``).
META_KEYS = (
    "path",  # the file that was read
    "format",  # "trace.dat", "ftrace-text", "trace-cmd-report", "perf-script"
    "cpus",  # number of CPUs the trace covers
    "clock",  # trace clock ("local", "global", "counter", ...) or None if unknown
    "first_ts_ns",  # first and last event timestamp (the ``ts`` unit)
    "last_ts_ns",
    "kernel",  # kernel release, or None where the file does not say
    "lost_events",  # {cpu: events lost}: at least this many (see lost_unknown)
    "lost_unknown",  # CPUs whose buffer also lost an unknown number of events
    "event_counts",  # {event name: number of events in the file}, read or not
    "systems",  # {event name: subsystem ("sched", "workqueue", ...)}
    "warnings",  # one-line texts of damage the reader skipped and bounded (every
    # report shows them as caveats); [] for a whole, clean file
    "source",  # format-specific facts (trace.dat version, sorted or not, ...);
    # every reader sets source["timestamps"]: "ns", "us" (text printed
    # with microseconds) or "raw" (clock ticks, see RAW_CLOCKS)
)

#: Trace clocks whose timestamps are not nanoseconds (the kernel's trace_clocks table,
#: in_ns = 0): a sequence number, jiffies, TSC cycles. Analysis refuses such traces:
#: every rate and latency would be in ticks, not seconds.
RAW_CLOCKS = frozenset({"counter", "uptime", "x86-tsc"})

#: Bits of ``common_flags`` (kernel/trace/trace.h, TRACE_FLAG_*).
FLAG_IRQS_OFF = 0x01
FLAG_NEED_RESCHED = 0x04
FLAG_HARDIRQ = 0x08
FLAG_SOFTIRQ = 0x10
FLAG_PREEMPT_RESCHED = 0x20
FLAG_NMI = 0x40
FLAG_BH_OFF = 0x80


def field_name(name: str) -> str:
    """The column name of event field ``name`` (``field_cpu`` for a field called ``cpu``)."""
    return f"field_{name}" if name in COMMON_NAMES else name


def event_schema(fields: Iterable[pa.Field]) -> pa.Schema:
    """The schema of an event table: the common columns followed by ``fields``."""
    return pa.schema(list(COMMON_FIELDS) + list(fields))
