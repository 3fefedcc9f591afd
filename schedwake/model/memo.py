"""What the model keeps for its readers (:class:`Memo`) and what it reads of a trace
(:class:`TraceTables`).

:attr:`schedwake.model.Model.memo` holds small results derived from the model's tables
that more than one reader needs (the detectors and the metrics), each in a field of its
own, computed on first use; a new model (another topology, ``focus``) starts empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from ..ingest.meta import TraceMeta
    from ..symbols.kernel import KernelSymbols

__all__ = ["Memo", "IwrMeasure", "TraceTables"]


class TraceTables(Protocol):
    """What the model reads of a loaded trace (:class:`schedwake.Trace`, which names
    the model): its metadata, event tables and lost-event rows."""

    @property
    def meta(self) -> TraceMeta: ...

    @property
    def lost(self) -> pa.Table: ...

    @property
    def events(self) -> list[str]: ...

    def table(self, name: str) -> pa.Table: ...

    def has_records(self, name: str) -> bool: ...


class IwrMeasure(TypedDict):
    """The idle-while-runnable gap of a model (``detect.idle_while_runnable.measure``)."""

    idle_while_runnable_ns: int
    idle_while_runnable_s: float
    #: Gap time over (duration x LLCs with two or more CPUs).
    share: float
    #: Per LLC index: the gap segments' (start, end) arrays.
    segments: dict[int, tuple[np.ndarray, np.ndarray]]
    #: The tasks left out as pinned (per-CPU kthreads, one CPU over many runs).
    pinned: np.ndarray


#: The key a metric computation is kept under: what it is, its arguments and the
#: thresholds (sorted items).
MetricsKey = tuple[Any, ...]


@dataclass
class Memo:
    """The results kept per model (:attr:`schedwake.model.Model.memo`)."""

    #: ``masks.pingpong_at_episodes``: the episodes' rows, runnable others, known.
    pingpong_at_episodes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: ``masks.kworker_preemptions``: the kworker preemptions' columns.
    storm_cycles: dict[str, np.ndarray] | None = None
    #: ``masks.switch_kworkers``: per sched_switch row, whether its prev and its next
    #: task is a kworker (read-only).
    switch_kworkers: tuple[np.ndarray, np.ndarray] | None = None
    #: ``detect.cswitch_storm.unit_counts`` of every switch, for the kworkers they
    #: preempt only (the detector's measure and its unit table both read them).
    storm_unit_counts: tuple[Any, Any] | None = None
    #: ``detect.cswitch_storm``: per sched_switch row, the prev task's work function code.
    storm_switch_work: np.ndarray | None = None
    #: ``detect.evidence.kernel_symbols``, once looked up (a tuple: None is an answer).
    kernel_symbols: tuple[KernelSymbols | None] | None = None
    #: ``metrics``: each task's name (``task_states.comms``).
    task_names: dict[int, str] | None = None
    #: ``task_states.state_sums``: the ns in each state of the tasks' intervals (a
    #: ``task_states.StateSums``: that module imports this one).
    state_sums: Any = None
    #: ``detect.idle_while_runnable.measure`` by ``iwr_pinned_min_runs``.
    idle_while_runnable: dict[int, IwrMeasure] = field(default_factory=dict)
    #: ``metrics.trace_metrics``: the values computed so far, by key.
    trace_metrics: dict[MetricsKey, dict[str, Any]] = field(default_factory=dict)
    #: ``metrics.TraceInputs``' measures that no threshold changes (the wake-to-run
    #: percentiles' bounds, the CPUs' busy bounds), by name: ``trace_metrics`` and
    #: ``metric_bounds`` both read them.
    trace_measures: dict[str, Any] = field(default_factory=dict)
    #: ``metrics.metric_bounds`` by key.
    metric_bounds: dict[MetricsKey, dict[str, list[Any]]] = field(default_factory=dict)
    #: ``metrics.window_metrics`` of the last window length: its key, the window
    #: columns, each computed metric's columns by metric key.
    window_metrics: tuple[MetricsKey, dict[str, np.ndarray], dict[str, dict[str, Any]]] | None = (
        None
    )
