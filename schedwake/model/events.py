"""The event frames the model reads, loaded once per trace, and the caveats of
events the trace lacks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import TraceError
from ..ingest.meta import TraceMeta
from ._util import frame
from ._util import i64 as i64  # (the model's modules read their columns through these)
from ._util import ints as ints
from .fields import MODEL_FIELDS, check_formats, columns
from .lives import Lives

if TYPE_CHECKING:
    from .memo import TraceTables

#: Events the model (and ``schedwake analyze``) reads.
MODEL_EVENTS = tuple(MODEL_FIELDS)

_COMMON = ["ts", "cpu", "common_pid", "common_comm", "common_flags"]
_TASK = ["ts", "cpu", "common_pid"]

#: The caveat of a trace without ``common_flags`` (perf script text, trace-cmd report
#: text without latency columns): no waker's context is known.
NO_CONTEXT_CAVEAT = (
    "no interrupt-context flags in the trace (perf script text has none; a perf.data or "
    "trace.dat read by schedwake has them): a waker in interrupt context cannot be told "
    "from the task it interrupted"
)


@dataclass
class Events:
    """The frames (pandas, sorted by ts; None when absent) of one trace."""

    waking: pd.DataFrame | None
    wakeup: pd.DataFrame | None
    wakeup_new: pd.DataFrame | None
    migrate: pd.DataFrame | None
    switch: pd.DataFrame | None
    fork: pd.DataFrame | None
    exec_: pd.DataFrame | None
    wq_start: pd.DataFrame | None
    wq_end: pd.DataFrame | None
    first_ts: int
    last_ts: int
    cpus: int
    caveats: list[str] = field(default_factory=list)
    #: The CPUs whose events the trace holds when it is a slice of a recording
    #: (``Trace.sliced(cpus=...)``); None: every CPU was recorded.
    recorded_cpus: tuple[int, ...] | None = None
    #: The lives of the pids (:mod:`.lives`): found from these events when first read;
    #: a slice of a trace is given the whole trace's
    _lives: Lives | None = None

    @property
    def lives(self) -> Lives:
        """Where a pid passes to a new task (:class:`.lives.Lives`)."""
        if self._lives is None:
            self._lives = Lives.of(self)
        return self._lives

    @lives.setter
    def lives(self, value: Lives) -> None:
        self._lives = value

    def key(self, pid: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """The life keys of (pid, ts) (:meth:`.lives.Lives.key`): the pids themselves
        when no pid of the trace names two tasks."""
        return self.lives.key(pid, ts)

    def run_keys(self, runs: pd.DataFrame) -> np.ndarray:
        """The life key of each run (rows with ``pid`` and ``start_ts``, as
        :mod:`.completeness` proves them): its pid, but in a later life of a pid used
        again."""
        return self.key(runs["pid"].to_numpy(), runs["start_ts"].to_numpy())

    @property
    def duration_ns(self) -> int:
        return max(self.last_ts - self.first_ts, 0)


def timestamp_problem(meta: TraceMeta) -> str | None:
    """Why the timestamps of a trace cannot be analyzed, or None: raw clock ticks
    (schema.RAW_CLOCKS) would make every rate and latency wrong."""
    if meta.timestamps != "raw":
        return None
    clock = meta.clock
    return (
        "timestamps are raw ticks of the "
        + (f"'{clock}' trace clock" if clock else "trace clock")
        + ", not nanoseconds: rates and latencies cannot be computed "
        "(record with the local, global or mono clock)"
    )


def load_events(trace: TraceTables) -> Events:
    if why := timestamp_problem(trace.meta):
        raise TraceError(trace.meta.path, why)
    check_formats(trace)

    def read(event: str, common: list[str] = _TASK) -> pd.DataFrame | None:
        return frame(trace, event, common + columns(event))

    ev = Events(
        waking=read("sched_waking", _COMMON),
        wakeup=read("sched_wakeup", _COMMON),
        wakeup_new=read("sched_wakeup_new", _COMMON),
        migrate=read("sched_migrate_task", _COMMON),
        switch=read("sched_switch"),
        fork=read("sched_process_fork"),
        exec_=read("sched_process_exec"),
        wq_start=read("workqueue_execute_start"),
        wq_end=read("workqueue_execute_end"),
        first_ts=int(trace.meta.first_ts_ns or 0),
        last_ts=int(trace.meta.last_ts_ns or 0),
        cpus=trace.meta.ncpus,
        recorded_cpus=(
            None if trace.meta.recorded_cpus is None else tuple(trace.meta.recorded_cpus)
        ),
    )
    ev.caveats.extend(
        events_caveats(
            trace.meta,
            {name for name, f in _FRAMES.items() if getattr(ev, f) is not None},
            ev.switch is not None and "prev_state_str" in ev.switch.columns,
            flags_known(ev.waking),
        )
    )
    return ev


#: The model's event frames (:class:`Events` fields) by event name.
_FRAMES = {
    "sched_waking": "waking",
    "sched_wakeup": "wakeup",
    "sched_wakeup_new": "wakeup_new",
    "sched_migrate_task": "migrate",
    "sched_switch": "switch",
    "sched_process_fork": "fork",
    "sched_process_exec": "exec_",
    "workqueue_execute_start": "wq_start",
    "workqueue_execute_end": "wq_end",
}


def flags_known(waking: pd.DataFrame | None) -> bool | None:
    """Whether ``sched_waking`` rows tell their context (``common_flags`` with a value);
    None without rows."""
    if waking is None or not len(waking):
        return None
    return "common_flags" in waking.columns and not waking["common_flags"].isna().all()


def events_caveats(
    meta: TraceMeta, present: set[str], prev_state: bool, flags: bool | None
) -> list[str]:
    """What the model cannot tell for the events a trace lacks: ``present``, the events
    it has records of; ``prev_state``: its sched_switch has decoded ``prev_state``;
    ``flags``: its sched_waking rows tell their context (None: it has none)."""
    cav: list[str] = []
    # events the whole trace has but a slice of it lacks did not happen in the slice
    whole = set(() if meta.slice is None else meta.slice.events)
    if "sched_switch" not in present:
        cav.append(
            "no sched_switch events: wake-to-run latency, CPU occupancy, "
            "context switches and idle time are unknown"
        )
    elif not prev_state:
        cav.append(
            "sched_switch has no decoded prev_state: preemptions (R+) cannot be told from sleeps"
        )
    if "sched_waking" not in present:
        if "sched_wakeup" in present:
            cav.append(
                "no sched_waking events: wake-ups are taken from sched_wakeup, whose "
                "context may be the target CPU (queued remote wake-ups; the waker "
                "of a migrating wake-up is taken from its sched_migrate_task), the "
                "previous CPU is the CPU the task last ran on, and latencies start "
                "at sched_wakeup"
            )
        else:
            cav.append("no sched_waking or sched_wakeup events: wake-ups are unknown")
    if "sched_migrate_task" not in present and "sched_migrate_task" not in whole:
        cav.append(
            "no sched_migrate_task events: migration counts are unknown (whether "
            "a wake-up moved the wakee is read from sched_wakeup's target_cpu)"
        )
    wq = {"workqueue_execute_start", "workqueue_execute_end"}
    if not wq <= present and not whole & wq:
        cav.append("no workqueue events: work functions of wakers are unknown")
    births = {"sched_process_fork", "sched_wakeup_new"}
    if not births & present and not whole & births:
        cav.append(
            "no sched_process_fork/sched_wakeup_new events: fork balancing "
            "migrations are counted as other migrations"
        )
    if flags is False:
        cav.append(NO_CONTEXT_CAVEAT)
    lost = meta.lost_events
    unknown = meta.lost_unknown
    if meta.format == "perf-script" and not (lost or unknown):
        cav.append(
            "perf script text lists perf's own lost events only when made with "
            "--show-lost-events; this text has none: if it was made without that "
            "option, losses (if any) are not counted"
        )
    if lost or unknown:
        total = sum(lost.values())
        more = " (and an unknown number more)" if unknown else ""
        cav.append(
            f"the ring buffer lost {total} events{more}: counts are lower bounds "
            "and episodes spanning a gap may be missed or mismatched"
        )
    return cav
