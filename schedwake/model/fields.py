"""What the model reads of each event: one declaration (event -> field -> kind and
size), from which :mod:`.events` takes its columns and :func:`check_formats` checks a
trace whose tables come from the kernel's own event formats (trace.dat, perf.data).

A format the reader accepts may still be one the model cannot use: a pid of 3 bytes,
an array where a scalar belongs, a missing ``target_cpu`` (whose absence would
silently change every wake-up's previous CPU). Such a file is not corrupt (``info``
and ``convert`` read it), but analysing it would be a guess, so the model refuses it
with one line naming the event and the field. Damage the decoder can tell (two fields
with one name, a field outside its record) is refused by the decoder itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from ..errors import TraceError
from ..schema import field_name

if TYPE_CHECKING:
    from .memo import TraceTables


@dataclass(frozen=True)
class Need:
    """What the model needs of one field."""

    kind: str  # "int" or "str"
    what: str  # what the value is, for messages
    sizes: tuple[int, ...] = ()  # "int": the byte sizes it may have
    signed: bool | None = True  # "int": its signedness (None: either)
    required: bool = True  # False: read when there, its absence is a caveat
    column: str | None = None  # the column the model reads, when not the field itself

    def describe(self) -> str:
        if self.kind == "str":
            return f"a string ({self.what})"
        size = " or ".join(str(s) for s in self.sizes)
        sign = {True: "signed ", False: "unsigned ", None: ""}[self.signed]
        return f"{_article(self.sizes[0])} {size}-byte {sign}integer ({self.what})"


_PID = Need("int", "a pid", (4,))
_CPU = Need("int", "a CPU number", (4,))
_PRIO = Need("int", "a priority", (4,), required=False)
_COMM = Need("str", "a task name")
_WAKE = {"comm": _COMM, "pid": _PID, "prio": _PRIO, "target_cpu": _CPU}
_WORK = Need("int", "a work item's address", (4, 8), None, required=False)

#: The events the model reads, their system, and the fields it reads of each.
MODEL_FIELDS: dict[str, tuple[str, dict[str, Need]]] = {
    "sched_waking": ("sched", _WAKE),
    "sched_wakeup": ("sched", _WAKE),
    "sched_wakeup_new": ("sched", _WAKE),
    "sched_migrate_task": (
        "sched",
        {
            "comm": _COMM,
            "pid": _PID,
            "prio": Need("int", "a priority", (4,)),
            "orig_cpu": _CPU,
            "dest_cpu": _CPU,
        },
    ),
    "sched_switch": (
        "sched",
        {
            "prev_comm": _COMM,
            "prev_pid": _PID,
            "prev_prio": _PRIO,
            # read as the text its print format gives (R, R+, S, ...): the kernel's long
            "prev_state": Need(
                "int", "the task state", (4, 8), required=False, column="prev_state_str"
            ),
            "next_comm": _COMM,
            "next_pid": _PID,
            "next_prio": _PRIO,
        },
    ),
    "sched_process_fork": ("sched", {"child_pid": _PID}),
    # not a frame of the model: a proof of the task running, for the completeness model
    # (read when recorded: `schedwake record --runtime`, `perf sched record`)
    "sched_stat_runtime": (
        "sched",
        {
            "pid": _PID,
            "runtime": Need("int", "a run time in ns", (8,), signed=None, required=False),
        },
    ),
    "sched_process_exec": ("sched", {"pid": _PID}),
    "workqueue_execute_start": (
        "workqueue",
        {
            "work": _WORK,
            "function": Need("str", "a kernel function: a pointer the print format shows as %ps"),
        },
    ),
    "workqueue_execute_end": (
        "workqueue",
        {
            "work": _WORK,
            "function": Need(
                "str", "a kernel function: a pointer the print format shows as %ps", required=False
            ),
        },
    ),
}

#: The readers whose tables are the kernel's event formats (text readers have none).
FORMAT_READERS = ("trace.dat", "perf.data")


def columns(event: str) -> list[str]:
    """The columns of ``event``'s table the model reads, in declaration order."""
    return [need.column or name for name, need in MODEL_FIELDS[event][1].items()]


def check_formats(trace: TraceTables) -> None:
    """Raise :class:`TraceError` naming the trace, the event and the field when an
    event the model reads (and the trace has records of) lacks a field it needs or has
    it in a shape it cannot use. Traces read from text are not checked (their readers
    make the columns, no format does)."""
    if trace.meta.format not in FORMAT_READERS:
        return
    systems = trace.meta.systems
    for event, (system, fields) in MODEL_FIELDS.items():
        # before the records: another system's event of this name, even without
        # records, would hide the kernel's (tables are named by event)
        if systems.get(event, system) != system:
            raise TraceError(
                trace.meta.path,
                f"event {event} is from system {systems[event]}, not {system}: schedwake "
                f"reads {system}:{event}",
            )
        if not trace.has_records(event):
            continue
        table = trace.table(event)
        for name, need in fields.items():
            problem = _problem(table, field_name(name), need)
            if problem:
                raise TraceError(
                    trace.meta.path,
                    f"event format {event}: field {name} {problem}; schedwake needs "
                    f"{need.describe()}",
                )


def _problem(table: pa.Table, column: str, need: Need) -> str | None:
    """What is wrong with ``column`` for ``need`` ("is missing", "is a string", ...),
    or None."""
    if column not in table.column_names:
        return "is missing" if need.required else None
    t = table.schema.field(column).type
    if need.kind == "str":
        value = t.value_type if pa.types.is_dictionary(t) else t
        usable = pa.types.is_string(value) or pa.types.is_large_string(value)
    else:
        usable = (
            pa.types.is_integer(t)
            and t.bit_width // 8 in need.sizes
            and need.signed in (None, pa.types.is_signed_integer(t))
        )
    return None if usable else "is " + _shape(table.column(column), t)


def _shape(col: pa.ChunkedArray, t: pa.DataType) -> str:
    """What the reader made of a field, in the format's terms."""
    first = col[0].as_py() if len(col) else None
    if pa.types.is_integer(t):
        sign = "signed" if pa.types.is_signed_integer(t) else "unsigned"
        size = t.bit_width // 8
        return f"{_article(size)} {size}-byte {sign} integer"
    if pa.types.is_dictionary(t) or pa.types.is_string(t):
        return "a string"
    if pa.types.is_list(t):
        n = "" if first is None else f" of {len(first)}"
        return f"an array{n} ({t.value_type.bit_width // 8}-byte values)"
    if pa.types.is_binary(t):
        n = "" if first is None else f" ({len(first)} per record)"
        return f"raw bytes{n}: the format gives it no integer size (1, 2, 4 or 8 bytes)"
    return f"of Arrow type {t}"


def _article(n: int) -> str:
    """The article of "<n>-byte": "an 8-byte", "a 4-byte"."""
    return "an" if n == 8 else "a"


__all__ = ["MODEL_FIELDS", "Need", "check_formats", "columns"]
