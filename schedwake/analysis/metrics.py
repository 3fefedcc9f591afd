"""Metrics of a trace (docs/compare.md, 'The metrics'): one record per metric, from which
every value and every table derives.

Each metric is declared once, in :data:`METRICS` (report order): a :class:`Metric` gives
its identifier (one name in analyze's JSON, compare's rows, gate's rules and batch's
columns), display unit, better direction, what it is over a whole trace and over one
window, the events it needs (without them it is unknown, not 0), the detectors that
explain a worse value, and its computation per trace and per window. A :class:`Count`
beside them is a base of the rates and shares (wake-ups, ping-pong episodes) that
``analyze`` shows but ``compare`` does not. Everything else is read off the records:

* :func:`trace_metrics` -- the values over the whole trace (a dict, JSON-ready);
* :func:`window_metrics` -- the same over consecutive windows of ``window_s`` seconds
  (one row per window), the samples the comparison report uses when one trace stands on
  each side;
* :data:`CATALOGUE` (:func:`catalogue` as a table), :data:`NEEDS`, :data:`EXPLAINED_BY`
  -- what ``compare``, ``gate`` and ``batch`` know of each metric;
* :func:`metric_samples` -- a trace's per-trace or per-window values of every catalogue
  metric as a tidy pandas table.

A computation reads :class:`TraceInputs` (per trace) or :class:`WindowInputs` (per
window): the model's tables and the measures that several metrics share (the ping-pong
episodes, the storm's preemptions, the work-conservation gaps), each computed once.
Rates are per second of trace time; a fraction is shown in % (its unit says so); the
per-CPU busy share is one record that expands to ``busy_share_cpuN``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pandas as pd

from ..detect import Thresholds, resolve
from ..detect.cswitch_storm import storm_measure, weighted_preempted_share
from ..detect.idle_while_runnable import measure as _iwr_measure
from ..model import cat_mask, last_rows, pid_cpu_counts
from ..model.lives import Lives
from ..model.masks import episodes_mask, futile_mask, would_stack_mask
from ..model.memo import IwrMeasure, MetricsKey
from ..model.task_states import class_share_windows, focused, names_of
from ..model.task_states import runnable_shares as task_runnable_shares
from ..model.tasks import PERCPU_KTHREAD, name_class

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

    from ..model import Model
    from ..sidetrace import SideTrace
    from ..trace import Trace

#: A measure's type (:meth:`TraceInputs._kept`).
_T = TypeVar("_T")

# -- the record of a metric ----------------------------------------------------------------

#: The events a metric is computed from: every group must have an event with records in
#: the trace; a group lists alternatives.
Needs = tuple[tuple[str, ...], ...]

_WAKE = ("sched_waking", "sched_wakeup")
_SWITCH = ("sched_switch",)
_MIGRATE = ("sched_migrate_task",)


@dataclass(frozen=True)
class CatalogueMetric:
    """What the comparison report says of a metric.

    ``name`` is the metric's one identifier, the same in analyze's JSON, compare's rows,
    gate's rules and batch's columns (``wakeup_migrations_per_s``). ``unit`` is the
    display unit: a value in % is a fraction times :attr:`scale`. ``direction`` says
    which is better ("lower" or "higher"). ``definition`` says what the value is over a
    whole trace, ``window_sample`` what one per-window sample is.
    """

    name: str
    unit: str
    direction: str
    definition: str
    window_sample: str

    @property
    def scale(self) -> float:
        """What a value is multiplied by into the display unit (fractions into %)."""
        return 100.0 if self.unit == "%" else 1.0

    @property
    def key(self) -> str:
        """The key of :func:`trace_metrics` / column of :func:`window_metrics` the metric
        comes from: its name, but ``busy_share`` (a dict by CPU) for the per-CPU busy
        share."""
        return "busy_share" if "{cpu}" in self.name else self.name


@dataclass(frozen=True, kw_only=True)
class Metric(CatalogueMetric):
    """One metric, declared once: what the report says of it (:class:`CatalogueMetric`),
    plus

    ``needs``
        the events it is computed from (:data:`Needs`); without them the metric is
        unknown (None), which the gate refuses to judge (:func:`missing_events`);
    ``explained_by``
        the detectors whose findings explain a worse value: a broken gate rule names the
        candidate's findings of these (their top wakers, work functions, wakees, tasks);
    ``per_trace``
        its value over the whole trace, from :class:`TraceInputs` (None: not measurable);
    ``per_window``
        its value in each window, an array, from :class:`WindowInputs` (a dict of
        columns for the per-CPU family);
    ``missing_without``
        the :class:`Count` whose window value 0 makes the window's sample missing (a
        share of no wake-ups, a percentile of no latencies); ``window_metrics`` holds 0
        there, :func:`metric_samples` NaN.
    """

    needs: Needs
    explained_by: tuple[str, ...]
    per_trace: Callable[[TraceInputs], Any]
    per_window: Callable[[WindowInputs], Any]
    missing_without: str | None = None


@dataclass(frozen=True, kw_only=True)
class Count:
    """A count beside the metrics: the base of a rate or a share, in :func:`trace_metrics`
    (``per_trace``) and/or :func:`window_metrics` (``per_window``) but not compared.
    Unknown (None) without the events of ``needs``, as a metric."""

    name: str
    definition: str
    needs: Needs = ()
    per_trace: Callable[[TraceInputs], Any] | None = None
    per_window: Callable[[WindowInputs], Any] | None = None

    @property
    def key(self) -> str:
        return self.name


# -- the metrics ---------------------------------------------------------------------------
#
# To add a metric: one record below (where it belongs in the report), its row in the table
# of docs/compare.md, and a test of its value on a real trace. In ``per_trace``, ``t`` is
# the trace's TraceInputs; in ``per_window``, ``w`` the windows' WindowInputs.

_PER_S = "count in the window / window length (s)"

#: A share the trace shows only within bounds (docs/semantics.md, 'Incomplete traces') is
#: given, as their midpoint, when they are at most this far apart (so it is off by half
#: that at most), else withheld (None).
SHARE_TOLERANCE = 0.05
#: The same for a latency: bounds at most this share of the upper one apart, or at most
#: LATENCY_FLOOR_US.
LATENCY_TOLERANCE = 0.25
LATENCY_FLOOR_US = 2.0


def within_share(lo: float, hi: float) -> float | None:
    """A share known to lie in [lo, hi]: ``lo`` when they are one, their midpoint when at
    most :data:`SHARE_TOLERANCE` apart, else None (withheld)."""
    if hi <= lo:
        return lo
    return round((lo + hi) / 2, 6) if hi - lo <= SHARE_TOLERANCE else None


def within_latency(lo: float | None, hi: float | None) -> float | None:
    """A latency (us) known to lie in [lo, hi]: ``hi`` when they are one, their midpoint
    when close enough (:data:`LATENCY_TOLERANCE`, :data:`LATENCY_FLOOR_US`), else None."""
    if lo is None or hi is None:
        return None
    if hi <= lo:
        return hi
    return (lo + hi) / 2 if hi - lo <= max(LATENCY_FLOOR_US, LATENCY_TOLERANCE * hi) else None


_MIGRATION_DETECTORS = ("kworker_pingpong", "llc_roundrobin")
_LATENCY_DETECTORS = ("idle_while_runnable", "cswitch_storm")


def _wake_to_run(name: str, pct: int, definition: str, window_sample: str) -> Metric:
    """The record of the wake-to-run latency's ``pct``-th percentile, in microseconds:
    the three percentiles differ only in ``pct`` and their words."""
    return Metric(
        name=name,
        unit="us",
        direction="lower",
        definition=definition,
        window_sample=window_sample,
        needs=(_WAKE, _SWITCH),
        explained_by=_LATENCY_DETECTORS,
        per_trace=lambda t: within_latency(*t.latency_pct_bounds(pct)),
        per_window=lambda w: w.latency[pct / 100],  # (0.5, 0.9, 0.99: the windows' quantiles)
        missing_without="latency_samples",
    )


CROSS_LLC = ["cross_llc", "cross_numa"]
CPUS_VISITED_MIN_RUNS = 10


def _runnable_share(c: str, explained_by: tuple[str, ...]) -> Metric:
    """The runnable share of the tasks of class ``c`` (docs/task-states.md)."""
    return Metric(
        name=f"runnable_share_{c}",
        unit="%",
        direction="lower",
        definition=f"share of the {c} tasks' running + runnable time they spent runnable, "
        "waiting for a CPU after a wake-up or a preemption (docs/task-states.md)",
        window_sample=f"runnable / (running + runnable) time of the {c} tasks inside the "
        "window (missing if they neither ran nor waited)",
        needs=(_SWITCH, _WAKE),
        explained_by=explained_by,
        per_trace=lambda t: t.runnable_shares[c],
        per_window=lambda w: w.runnable_shares[c],
    )


#: Every metric and count, in report order (the order of :func:`trace_metrics`).
_RECORDS: tuple[Metric | Count, ...] = (
    Count(
        name="wakeups",
        definition="wake-ups (the rows of the model's wake-ups)",
        per_trace=lambda t: len(t.wakeups),
        per_window=lambda w: w.wakeups,
    ),
    Count(
        name="migrations",
        definition="sched_migrate_task events",
        needs=(_MIGRATE,),
        per_trace=lambda t: len(t.migrations),
        per_window=lambda w: w.count(w.migration_ts),
    ),
    Metric(
        name="migrations_per_s",
        unit="/s",
        direction="lower",
        definition="sched_migrate_task events per second, every cause",
        window_sample=f"sched_migrate_task {_PER_S}",
        needs=(_MIGRATE,),
        explained_by=_MIGRATION_DETECTORS,
        per_trace=lambda t: t.per_s(len(t.migrations)),
        per_window=lambda w: w.per_s(w.count(w.migration_ts)),
    ),
    Metric(
        name="wakeup_migrations_per_s",
        unit="/s",
        direction="lower",
        definition="migrations done by a wake-up (select_task_rq chose another CPU) per second",
        window_sample=f"wake-up migrations {_PER_S}",
        needs=(_MIGRATE, _WAKE),
        explained_by=_MIGRATION_DETECTORS,
        per_trace=lambda t: t.per_s(int((t.migration_cause == "wakeup").sum())),
        per_window=lambda w: w.per_s(w.count(w.migration_ts, w.migration_cause == "wakeup")),
    ),
    Metric(
        name="load_balance_migrations_per_s",
        unit="/s",
        direction="lower",
        definition="migrations by load balancing (newly idle, periodic, active) per second",
        window_sample=f"load-balance migrations {_PER_S}",
        needs=(_MIGRATE, _WAKE),
        explained_by=("llc_roundrobin",),
        per_trace=lambda t: t.per_s(int((t.migration_cause == "load_balance").sum())),
        per_window=lambda w: w.per_s(w.count(w.migration_ts, w.migration_cause == "load_balance")),
    ),
    Metric(
        name="cross_llc_migrations_per_s",
        unit="/s",
        direction="lower",
        definition="migrations between LLCs or NUMA nodes per second (0 with one LLC)",
        window_sample=f"cross-LLC migrations {_PER_S}",
        needs=(_MIGRATE,),
        explained_by=("llc_roundrobin",),
        per_trace=lambda t: t.per_s(int(t.migration_topology.isin(CROSS_LLC).sum())),
        per_window=lambda w: w.per_s(
            w.count(w.migration_ts, np.isin(w.migration_topology, CROSS_LLC))
        ),
    ),
    Metric(
        name="wakeup_migration_share",
        unit="%",
        direction="lower",
        definition="share of wake-ups whose chosen CPU is not the wakee's previous CPU",
        window_sample="migrated wake-ups / wake-ups in the window (missing if none)",
        needs=(_WAKE,),
        explained_by=_MIGRATION_DETECTORS,
        per_trace=lambda t: float(t.wakeups["migrated"].mean()) if len(t.wakeups) else None,
        per_window=lambda w: share_of(w.count(w.wakeup_ts, w.migrated), w.wakeups),
        missing_without="wakeups",
    ),
    Count(
        name="pingpong_episodes",
        definition="kworker wake-migrate ping-pong episodes",
        needs=(_WAKE, _SWITCH),
        per_trace=lambda t: t.pingpong,
        per_window=lambda w: w.pingpong,
    ),
    Metric(
        name="pingpong_episodes_per_s",
        unit="/s",
        direction="lower",
        definition="kworker wake-migrate ping-pong episodes per second: a per-CPU kthread "
        "on CPU X wakes a task whose previous CPU is X and the task moves away",
        window_sample=f"episodes (by wake-up time) {_PER_S}",
        needs=(_WAKE, _SWITCH),
        explained_by=("kworker_pingpong",),
        per_trace=lambda t: t.per_s(t.pingpong),
        per_window=lambda w: w.per_s(w.pingpong),
    ),
    Count(
        name="pingpong_would_stack",
        definition="ping-pong episodes the stack-on-waker-CPU clause would have kept in place",
        needs=(_WAKE, _SWITCH),
        per_trace=lambda t: t.would_stack,
        per_window=lambda w: w.would_stack,
    ),
    Metric(
        name="pingpong_would_stack_per_s",
        unit="/s",
        direction="lower",
        definition="ping-pong episodes per second that the stack-on-waker-CPU clause of "
        "select_idle_sibling() would have kept on the waker's CPU (nothing else "
        "runnable there): near 0 on a kernel with the clause",
        window_sample=f"would-stack episodes (by wake-up time) {_PER_S}",
        needs=(_WAKE, _SWITCH),
        explained_by=("kworker_pingpong",),
        per_trace=lambda t: t.per_s(t.would_stack),
        per_window=lambda w: w.per_s(w.would_stack),
    ),
    Metric(
        name="pingpong_would_stack_share",
        unit="%",
        direction="lower",
        definition="share of the ping-pong episodes that would have stacked (missing "
        "without episodes)",
        window_sample="would-stack episodes / episodes in the window (missing if none)",
        needs=(_WAKE, _SWITCH),
        explained_by=("kworker_pingpong",),
        per_trace=lambda t: t.would_stack / t.pingpong if t.pingpong else None,
        per_window=lambda w: share_of(w.would_stack, w.pingpong),
        missing_without="pingpong_episodes",
    ),
    Metric(
        name="cpus_visited_per_task",
        unit="CPUs",
        direction="lower",
        definition=f"mean number of distinct CPUs a task ran on (tasks with >= "
        f"{CPUS_VISITED_MIN_RUNS} switch-ins, per-CPU kthreads excluded)",
        window_sample=f"the same over the switch-ins inside the window (0 if no task has "
        f"{CPUS_VISITED_MIN_RUNS} there)",
        needs=(_SWITCH,),
        explained_by=("llc_roundrobin", "kworker_pingpong"),
        per_trace=lambda t: _cpus_visited(t.switch, t.model.events.lives),
        per_window=lambda w: w.cpus_visited,
    ),
    Metric(
        name="context_switches_per_s",
        unit="/s",
        direction="lower",
        definition="context switches per second, all CPUs: the sched_switch events, plus "
        "one for each break of a CPU's switch chain (a switch the trace is missing: at "
        "least one; docs/semantics.md, 'Incomplete traces')",
        window_sample=f"the same {_PER_S}",
        needs=(_SWITCH,),
        explained_by=("cswitch_storm",),
        per_trace=lambda t: t.per_s(0 if t.switch is None else len(t.switch) + t.missing_switches),
        per_window=lambda w: w.per_s(w.count(w.switch_ts) + w.count(w.missing_switch_ts)),
    ),
    Metric(
        name="futile_wakeups_per_s",
        unit="/s",
        direction="lower",
        definition="wake-ups whose wakee preempted a kworker (R+), slept again and gave "
        "the CPU back to that kworker before it ran again, per second",
        window_sample=f"futile wake-ups (by wake-up time) {_PER_S}",
        needs=(_WAKE, _SWITCH),
        explained_by=("cswitch_storm",),
        per_trace=lambda t: t.per_s(int(futile_mask(t.model).sum())),
        per_window=lambda w: w.per_s(w.count(w.wakeup_ts, futile_mask(w.model))),
    ),
    Metric(
        name="storm_kworker_preemptions_per_s",
        unit="/s",
        direction="lower",
        definition="preemptions (R+) per second of storm kworkers by user tasks: the "
        "(kworker, work function) pairs on a CPU that a task preempts at "
        "storm_min_preempted_share of their switch-outs or more, for tasks with "
        "storm_min_preemptions of them (cswitch_storm)",
        window_sample=f"those preemptions {_PER_S}",
        needs=(_SWITCH,),
        explained_by=("cswitch_storm",),
        per_trace=lambda t: t.per_s(int(t.storm["preemption_storm"].sum())),
        per_window=lambda w: w.per_s(
            w.count(w.storm["preemption_ts"], w.storm["preemption_storm"])
        ),
    ),
    Metric(
        name="storm_preempted_share",
        unit="%",
        direction="lower",
        definition="over every (kworker, work function) pair that those user tasks "
        "preempt, the share of its switch-outs that are the preemptions, weighted by its "
        "preemptions (missing without kworker preemptions)",
        window_sample="the same over the preemptions and switch-outs in the window "
        "(missing if none)",
        needs=(_SWITCH,),
        explained_by=("cswitch_storm",),
        per_trace=lambda t: weighted_preempted_share(
            t.storm["preemption_unit"], t.storm["switchout_unit"]
        ),
        per_window=lambda w: _window_preempted_share(w.storm, w.edges),
        missing_without="storm_preemptions",
    ),
    Count(
        name="storm_preemptions",
        definition="kworker preemptions by the user tasks of the storm's measure",
        per_window=lambda w: w.count(w.storm["preemption_ts"]),
    ),
    Count(
        name="latency_samples",
        definition="wake-ups with a measured wake-to-run latency",
        per_window=lambda w: w.latency["samples"],
    ),
    _wake_to_run(
        "wake_to_run_p50_us",
        50,
        definition="median time from sched_waking to the wakee's switch-in",
        window_sample="median over the wake-ups of the window (missing if none)",
    ),
    _wake_to_run(
        "wake_to_run_p90_us",
        90,
        definition="90th percentile of the wake-to-run latency",
        window_sample="90th percentile over the wake-ups of the window (missing if none)",
    ),
    _wake_to_run(
        "wake_to_run_p99_us",
        99,
        definition="99th percentile of the wake-to-run latency",
        window_sample="99th percentile over the wake-ups of the window (missing if none)",
    ),
    Metric(
        name="idle_while_runnable_share",
        unit="%",
        direction="lower",
        definition="share of LLC time during which a CPU of the LLC is idle while a "
        "woken task waits on another CPU of it (work-conservation gap)",
        window_sample="gap time inside the window / (window length x LLCs)",
        needs=(_WAKE, _SWITCH),
        explained_by=("idle_while_runnable",),
        per_trace=lambda t: float(t.iwr["share"]),
        per_window=lambda w: w.idle_while_runnable,
    ),
    _runnable_share("user", _LATENCY_DETECTORS),
    _runnable_share("kworker", ("cswitch_storm", "kworker_pingpong", "idle_while_runnable")),
    _runnable_share("kthread", _LATENCY_DETECTORS),
    Metric(
        name="busy_share_cpu{cpu}",
        unit="%",
        direction="higher",
        definition="share of the time CPU N runs a task (not idle), from its first "
        "sched_switch on; where the trace does not show the CPU (a missing switch, lost "
        "events) the share lies between its bounds: their midpoint when they are at most "
        "SHARE_TOLERANCE apart, else withheld (docs/semantics.md, 'Incomplete traces')",
        window_sample="running time of CPU N inside the window / window length (the same "
        "rule for its bounds)",
        needs=(_SWITCH,),
        explained_by=("idle_while_runnable",),
        per_trace=lambda t: {c: within_share(*b) for c, b in t.busy_bounds.items()},
        per_window=lambda w: w.busy_shares,  # {"busy_share_cpuN": column}
    ),
)
METRICS: dict[str, Metric | Count] = {m.name: m for m in _RECORDS}

# -- what the rest of the package reads, derived from the records --------------------------

#: The metrics ``compare`` and ``gate`` know, in report order (not the counts).
#: ``busy_share_cpu{cpu}`` expands to one row per CPU.
CATALOGUE: dict[str, Metric] = {n: m for n, m in METRICS.items() if isinstance(m, Metric)}

#: The events each catalogue metric is computed from (:attr:`Metric.needs`).
NEEDS: dict[str, Needs] = {n: m.needs for n, m in CATALOGUE.items()}

#: The detectors whose findings explain a worse value of each catalogue metric
#: (:attr:`Metric.explained_by`).
EXPLAINED_BY: dict[str, tuple[str, ...]] = {n: m.explained_by for n, m in CATALOGUE.items()}


def _unmet(trace: SideTrace, needs: Needs) -> list[str]:
    """One text per group of ``needs`` the trace has no records of."""
    return [" or ".join(group) for group in needs if not any(trace.has_records(e) for e in group)]


def trace_metrics(
    trace: Trace,
    thresholds: Mapping[str, float | str] | Thresholds | None = None,
    *,
    only: Collection[str] | None = None,
) -> dict[str, Any]:
    """Every metric and count of the trace (JSON-ready), whether or not a detector fires:
    ``duration_s`` then :data:`METRICS` in order (``busy_share`` a dict by CPU), then the
    benchmark's ``bench_*`` results. A metric the trace cannot give (no wake-ups for a
    latency, events it lacks: :data:`NEEDS`) is None. ``only``: the keys to compute (the
    others are None; :func:`_keys_of`), for a comparison of some metrics.

    ``thresholds``: the thresholds the detectors judged the trace with (a
    :class:`~schedwake.detect.Thresholds`, as :func:`schedwake.analyze` hands them
    down), or overrides resolved here as :func:`schedwake.detect.detect` resolves them
    (:func:`schedwake.detect.resolve`: a ``--time`` slice scales the amounts it adds
    up), so that a metric counts what the detector judges: a storm found in a 5-ms
    slice has its preemptions in ``storm_*``."""
    th = resolve(trace, thresholds)
    memo, key = trace.model.memo.trace_metrics, _memo_key(th)
    done = memo.setdefault(key, {})  # the values computed so far, by key
    t = TraceInputs(trace, th)  # (its measures are computed on first use)
    for m in METRICS.values():
        if m.per_trace is None or m.key in done or (only is not None and m.key not in only):
            continue
        # a metric whose events the trace lacks is unknown (None), not zero
        v = None if _unmet(trace, m.needs) else m.per_trace(t)
        done[m.key] = round(v, 6) if isinstance(v, float) else v
    out: dict[str, Any] = {"duration_s": round(t.dur_s, 6)}
    for m in METRICS.values():
        if m.per_trace is not None:
            wanted = only is None or m.key in only
            out[m.key] = copy.deepcopy(done[m.key]) if wanted else None
    out.update(bench_metrics(trace))
    return out


def metric_bounds(
    trace: Trace, thresholds: Mapping[str, float | str] | Thresholds | None = None
) -> dict[str, list[Any]]:
    """The metrics that the trace shows only within bounds (docs/semantics.md,
    'Incomplete traces'), by name: ``[lo, hi]`` in the metric's own unit before display
    (a fraction for a share; us for a latency; ``hi`` None: no upper bound). Their
    value in :func:`trace_metrics` is the midpoint when the bounds are within the
    tolerance (:data:`SHARE_TOLERANCE`, :data:`LATENCY_TOLERANCE`), else None (withheld).
    Empty for a trace that shows everything these metrics read. ``thresholds``: as
    :func:`trace_metrics` takes them."""
    th = resolve(trace, thresholds)
    memo, key = trace.model.memo.metric_bounds, _memo_key(th)
    if key in memo:
        return copy.deepcopy(memo[key])
    t = TraceInputs(trace, th)
    out: dict[str, list] = {}
    if not _unmet(trace, (_SWITCH,)):
        for c, (lo, hi) in t.busy_bounds.items():
            if hi > lo:
                out[f"busy_share_cpu{c}"] = [lo, hi]
        if t.missing_switches:
            n = 0 if t.switch is None else len(t.switch)
            out["context_switches_per_s"] = [round(t.per_s(n + t.missing_switches), 6), None]
    if not _unmet(trace, (_WAKE, _SWITCH)):
        for name, pct in (("wake_to_run_p50_us", 50), ("wake_to_run_p90_us", 90),
                          ("wake_to_run_p99_us", 99)):  # fmt: skip
            p_lo, p_hi = t.latency_pct_bounds(pct)
            if p_lo is not None and p_hi is not None and p_hi > p_lo:
                out[name] = [round(p_lo, 6), round(p_hi, 6)]
    memo[key] = out
    return copy.deepcopy(out)


def window_metrics(
    trace: Trace,
    window_s: float = 1.0,
    thresholds: Mapping[str, float | str] | Thresholds | None = None,
    *,
    only: Collection[str] | None = None,
) -> pd.DataFrame:
    """The metrics over consecutive windows of ``window_s`` seconds: one row per window
    (``window``, ``start_ns``, ``end_ns`` then the metrics and counts of :data:`METRICS`,
    the busy share as ``busy_share_cpuN``). A last partial window shorter than half a
    window is dropped (:func:`window_edges`). ``only``: the keys to compute (the columns
    of the others are left out; :func:`_keys_of`). ``thresholds``: as
    :func:`trace_metrics` takes them."""
    th = resolve(trace, thresholds)
    memo, key = trace.model.memo, _memo_key(th, float(window_s))
    kept = memo.window_metrics
    w = None
    if kept is None or kept[0] != key:
        w = WindowInputs(trace, window_s, th)
        edges = {"window": np.arange(w.nwin), "start_ns": w.edges[:-1], "end_ns": w.edges[1:]}
        # (only the last window length's columns are kept: many short windows are large,
        # and a trace is judged again at the same length)
        kept = memo.window_metrics = (key, edges, {})
    edges = kept[1]
    done: dict[str, dict] = kept[2]  # each computed metric's columns, by key
    cols: dict[str, Any] = dict(edges)
    for m in METRICS.values():
        if m.per_window is None or (only is not None and m.key not in only):
            continue
        if m.key not in done:
            if w is None:
                w = WindowInputs(trace, window_s, th)
            v = m.per_window(w)
            done[m.key] = v if isinstance(v, dict) else {m.name: v}
        cols.update(done[m.key])
    return pd.DataFrame(cols)


def _memo_key(th: Thresholds, *args: float) -> MetricsKey:
    """The key the metrics of a trace under thresholds ``th`` are kept under in its
    model's memo (:class:`schedwake.model.Memo`: a new model, after another topology or
    ``focus``, starts empty), so that comparing and gating the same loaded traces again
    (a notebook, a script judging them under several rules) measures each once. (The
    benchmark's results are read from the trace each time: they are not the model's.)"""
    return (*args, tuple(sorted(th.items())))


def bench_metrics(trace: Trace) -> dict[str, Any]:
    """The benchmark's results beside the trace as ``bench_*`` metrics, with their unit,
    direction and file under ``bench`` (:func:`schedwake.bench.metric_values`); nothing
    without results (or for a stand-in of a trace without ``bench``)."""
    from ..bench import metric_values

    return metric_values(getattr(trace, "bench", None) or [])


# -- what the computations read -----------------------------------------------------------


class TraceInputs:
    """What the per-trace computations read: the model's tables (those of ``--pid``'s
    tasks where the model is restricted to them) and the shared measures, each computed
    once, on first use."""

    def __init__(self, trace: Trace, th: Thresholds) -> None:
        self.trace = trace
        self.th = th
        self.model: Model = trace.model
        self.dur_s = max(self.model.duration_ns, 1) / 1e9

    def per_s(self, n: int) -> float:
        """A count of the trace as a rate."""
        return n / self.dur_s

    @cached_property
    def wakeups(self) -> pd.DataFrame:
        return self.model.wakeups

    @cached_property
    def migrations(self) -> pd.DataFrame:
        return self.model.migrations

    @cached_property
    def switch(self) -> pd.DataFrame | None:
        """The ``sched_switch`` rows (those to or from the tasks of ``analyze --pid``)."""
        sw = self.model.events.switch
        if self.model.pids is not None and sw is not None and len(sw):
            mine = list(self.model.pids)
            sw = sw[
                np.isin(sw["next_pid"].to_numpy(), mine) | np.isin(sw["prev_pid"].to_numpy(), mine)
            ]
        return sw

    @cached_property
    def migration_cause(self) -> pd.Series:
        mig = self.migrations
        return mig["cause"] if len(mig) else pd.Series([], dtype=str)

    @cached_property
    def migration_topology(self) -> pd.Series:
        mig = self.migrations
        return mig["topology_class"] if len(mig) else pd.Series([], dtype=str)

    @cached_property
    def pingpong(self) -> int:
        """Ping-pong episodes (:func:`~schedwake.model.masks.episodes_mask`)."""
        return int(episodes_mask(self.wakeups).sum())

    @cached_property
    def would_stack(self) -> int:
        """Episodes the stacking clause would have kept in place."""
        return int(would_stack_mask(self.model).sum())

    @cached_property
    def _latencies(self) -> tuple[np.ndarray, np.ndarray]:
        """:func:`latencies` of the wake-ups, read once for both of its arrays."""
        return latencies(self.wakeups)

    @property
    def latency_ns(self) -> np.ndarray:
        """The measured wake-to-run latencies, in row order: to where the trace proves
        the wakee ran (an upper bound where its switch-in is missing)."""
        return self._latencies[1]

    @property
    def latency_min_ns(self) -> np.ndarray:
        """The least each of :attr:`latency_ns` can have been (to the earliest its run can
        have begun): the same where the switch-in is in the trace."""
        return self._latencies[0]

    def latency_pct_bounds(self, pct: float) -> tuple[float | None, float | None]:
        """The ``pct``-th percentile of the wake-to-run latency, us: (of the least
        latencies, of the proven ones); they bound the true percentile."""
        if pct in self._latency_pcts:
            return self._latency_pcts[pct]
        return _pct_us(self.latency_min_ns, pct), _pct_us(self.latency_ns, pct)

    @cached_property
    def _latency_pcts(self) -> dict[float, tuple[float | None, float | None]]:
        """:meth:`latency_pct_bounds` of the percentiles the metrics and their bounds
        ask for (:data:`LATENCY_PCTS`), each array partitioned once for all of them
        (:meth:`_kept`)."""

        def pcts() -> dict[float, tuple[float | None, float | None]]:
            lo, hi = (_pcts_us(v, LATENCY_PCTS) for v in (self.latency_min_ns, self.latency_ns))
            return {p: (lo[i], hi[i]) for i, p in enumerate(LATENCY_PCTS)}

        return self._kept("latency_pcts", pcts)

    def _kept(self, name: str, compute: Callable[[], _T]) -> _T:
        """The measure ``name`` that no threshold changes, computed once per model and
        kept in its memo (``Memo.trace_measures``): :func:`trace_metrics` and
        :func:`metric_bounds` each make a TraceInputs, and read the same ones."""
        kept = self.model.memo.trace_measures
        if name not in kept:
            kept[name] = compute()
        return cast("_T", kept[name])

    @cached_property
    def busy_bounds(self) -> dict[str, tuple[float, float]]:
        """Per CPU (its number as a string), the bounds of its busy share
        (:func:`busy_bounds`; :meth:`_kept`)."""
        return self._kept("busy_bounds", lambda: busy_bounds(self.model))

    @cached_property
    def missing_switches(self) -> int:
        """Switches the trace is missing: one per break of a CPU's switch chain (the
        least there can be)."""
        comp = self.model.completeness
        return int((~comp.switch_chain_ok).sum())

    @cached_property
    def iwr(self) -> IwrMeasure:
        """The idle-while-runnable detector's measure of the trace."""
        return _iwr_measure(self.model, self.th)

    @cached_property
    def storm(self) -> dict:
        """The cswitch-storm detector's preemptions and switch-outs of the trace."""
        return storm_measure(self.model, self.th)

    @cached_property
    def runnable_shares(self) -> dict[str, float | None]:
        """Per task class, its runnable share of the whole trace (docs/task-states.md)."""
        return task_runnable_shares(self.model)


class WindowInputs:
    """What the per-window computations read: the windows (``edges``, ``nwin``,
    ``lens_s``), per-window counts of the model's events, and the shared measures, each
    computed once, on first use."""

    def __init__(self, trace: Trace, window_s: float, th: Thresholds) -> None:
        self.trace = trace
        self.th = th
        self.model: Model = trace.model
        ev = self.model.events
        self.edges: np.ndarray = window_edges(ev.first_ts, ev.last_ts, window_s)
        self.nwin = len(self.edges) - 1
        self.lens_s = np.diff(self.edges) / 1e9

    def count(self, ts: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """How many of the times ``ts`` (those of ``mask``) fall in each window."""
        return window_counts(ts, self.edges, mask)

    def per_s(self, counts: np.ndarray) -> np.ndarray:
        """Counts per window as rates."""
        return counts / self.lens_s

    def _ints(self, table: pd.DataFrame, col: str) -> np.ndarray:
        return table[col].to_numpy(dtype=np.int64) if len(table) else np.zeros(0, np.int64)

    @cached_property
    def wakeup_ts(self) -> np.ndarray:
        return self._ints(self.model.wakeups, "ts")

    @cached_property
    def migration_ts(self) -> np.ndarray:
        return self._ints(self.model.migrations, "ts")

    @cached_property
    def switch_ts(self) -> np.ndarray:
        sw = self.model.events.switch
        return np.zeros(0, np.int64) if sw is None else self._ints(sw, "ts")

    @cached_property
    def missing_switch_ts(self) -> np.ndarray:
        """Where a CPU's switch chain breaks (a switch is missing before then)."""
        comp = self.model.completeness
        return comp.switch_end[~comp.switch_chain_ok]

    @cached_property
    def migration_cause(self) -> np.ndarray:
        mig = self.model.migrations
        return mig["cause"].to_numpy() if len(mig) else np.zeros(0, dtype=object)

    @cached_property
    def migration_topology(self) -> np.ndarray:
        mig = self.model.migrations
        return mig["topology_class"].to_numpy() if len(mig) else np.zeros(0, dtype=object)

    @cached_property
    def migrated(self) -> np.ndarray:
        w = self.model.wakeups
        return w["migrated"].to_numpy() if len(w) else np.zeros(0, dtype=bool)

    @cached_property
    def wakeups(self) -> np.ndarray:
        """Wake-ups per window."""
        return self.count(self.wakeup_ts)

    @cached_property
    def pingpong(self) -> np.ndarray:
        """Ping-pong episodes per window (by wake-up time)."""
        return self.count(self.wakeup_ts, episodes_mask(self.model.wakeups))

    @cached_property
    def would_stack(self) -> np.ndarray:
        return self.count(self.wakeup_ts, would_stack_mask(self.model))

    @cached_property
    def storm(self) -> dict:
        return storm_measure(self.model, self.th)

    @cached_property
    def cpus_visited(self) -> np.ndarray:
        """:func:`_cpus_visited` over each window's switch-ins (0 where no task has
        enough)."""
        sw = self.model.events.switch
        if sw is None or not len(sw):
            return np.zeros(self.nwin)
        win = np.clip(np.searchsorted(self.edges, self.switch_ts, "right") - 1, 0, self.nwin - 1)
        return cpus_visited_per_window(sw, win, self.nwin, self.model.events.lives)

    @cached_property
    def latency(self) -> dict:
        """``samples``: the wake-ups with a measured latency per window; 0.5, 0.9, 0.99:
        those quantiles of the window's latencies in us (0 without samples; NaN where
        the trace shows them only within bounds wider than the tolerance, as
        :func:`within_latency`)."""
        nwin, w = self.nwin, self.model.wakeups
        if not len(w):
            zero = np.zeros(nwin)
            return {"samples": np.zeros(nwin, dtype=np.int64), 0.5: zero, 0.9: zero, 0.99: zero}
        lo_ns, hi_ns = latencies(w)
        ok = w["latency_ns"].notna().to_numpy()
        win = np.clip(np.searchsorted(self.edges, self.wakeup_ts[ok], "right") - 1, 0, nwin - 1)
        out: dict = {"samples": np.bincount(win, minlength=nwin)[:nwin]}
        out.update(latency_columns(latency_quantiles(win, lo_ns, hi_ns, nwin)))
        return out

    @cached_property
    def idle_while_runnable(self) -> np.ndarray:
        """Gap time in each window / (window length x LLCs)."""
        iwr = _iwr_measure(self.model, self.th)
        gap = np.zeros(self.nwin)
        for s, e in iwr["segments"].values():
            o = np.argsort(s)
            cov = covered(s[o], e[o], self.edges)
            gap += np.diff(cov)
        nllc = max(len(iwr["segments"]), 1)
        return gap / (np.diff(self.edges) * nllc)

    @cached_property
    def runnable_shares(self) -> dict[str, np.ndarray]:
        """Per task class, its runnable share in each window (NaN: the class neither ran
        nor waited there)."""
        iv = focused(self.model, self.model.task_states)
        return class_share_windows(iv, names_of(self.model), self.edges)

    @cached_property
    def busy_shares(self) -> dict[str, np.ndarray]:
        """``busy_share_cpuN``: running time of CPU N in each window / window length
        (none without occupancy); where the window holds unknown time of the CPU, the
        midpoint of the bounds when within :data:`SHARE_TOLERANCE`, else NaN."""
        occ = self.model.occupancy
        if not len(occ):
            return {}
        return busy_share_columns(
            cpu_window_times(occ, self.edges), self.model.events.cpus, self.edges
        )


# -- the computations ----------------------------------------------------------------------


def window_counts(ts: np.ndarray, edges: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """How many of the times ``ts`` (those of ``mask``) fall in each window of ``edges``
    (``np.histogram``'s bins: the last one holds a time at its end)."""
    ts = np.asarray(ts, dtype=np.int64)
    if mask is not None:
        ts = ts[np.asarray(mask)]
    if not len(ts):
        return np.zeros(len(edges) - 1, dtype=np.int64)
    return np.histogram(ts, bins=edges)[0]


def cpu_window_times(
    occ: pd.DataFrame, edges: np.ndarray
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per CPU of the occupancy rows ``occ``: its running and its unknown ns in each window
    (the rows of a CPU do not overlap: the time parts of a trace give sums of them)."""
    state, cpu = occ["state"].to_numpy(), occ["cpu"].to_numpy()
    out = {}
    for c in np.unique(cpu).tolist():
        cov = []
        for st in ("running", "unknown"):
            r = occ[(state == st) & (cpu == c)].sort_values("start_ts")
            cov.append(np.diff(covered(r["start_ts"].to_numpy(), r["end_ts"].to_numpy(), edges)))
        out[int(c)] = (cov[0], cov[1])
    return out


def busy_share_columns(
    times: Mapping[int, tuple[np.ndarray, np.ndarray]], cpus: int, edges: np.ndarray
) -> dict[str, np.ndarray]:
    """``busy_share_cpuN`` of each of the ``cpus`` CPUs from its running and unknown ns
    per window (:func:`cpu_window_times`; none: 0): the running share, or where the
    window holds unknown time, the midpoint of the bounds when within
    :data:`SHARE_TOLERANCE`, else NaN."""
    lens = np.diff(edges)
    zero = np.zeros(len(lens), dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    for c in range(cpus):
        running, unknown = times.get(c, (zero, zero))
        lo = running / lens
        hi = (running + unknown) / lens
        out[f"busy_share_cpu{c}"] = np.where(
            hi <= lo, lo, np.where(hi - lo <= SHARE_TOLERANCE, (lo + hi) / 2, np.nan)
        )
    return out


def share_of(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """part / whole per window, 0 where whole is 0."""
    return np.where(whole > 0, part / np.maximum(whole, 1), 0.0)


def _pct_us(lat_ns: np.ndarray, q: float) -> float | None:
    return float(np.percentile(lat_ns, q)) / 1e3 if len(lat_ns) else None


def _pcts_us(lat_ns: np.ndarray, qs: tuple[float, ...]) -> list[float | None]:
    """:func:`_pct_us` of each of ``qs``, from one partition of ``lat_ns``."""
    if not len(lat_ns):
        return [None] * len(qs)
    return [float(v) / 1e3 for v in np.percentile(lat_ns, qs)]


#: The wake-to-run percentiles the trace's metrics give (``wake_to_run_pNN_us``).
LATENCY_PCTS = (50, 90, 99)


def latency_quantiles(
    win: np.ndarray, lo_ns: np.ndarray, hi_ns: np.ndarray, nwin: int
) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """Per window (``win``: each latency's), the 0.5, 0.9 and 0.99 quantiles (us) of the
    least latencies ``lo_ns`` and of the proven ones ``hi_ns``; 0 in a window without
    any. (What a time part gives of the windows only it has wake-ups of.)"""
    quantiles = {}
    for name, v in (("lo", lo_ns), ("hi", hi_ns)):
        lat = pd.DataFrame({"win": win, "lat": np.asarray(v).astype(np.float64)})
        quantiles[name] = lat.groupby("win")["lat"].quantile([0.5, 0.9, 0.99]).unstack()
    out = {}
    for p in (0.5, 0.9, 0.99):
        vals = []
        for name in ("lo", "hi"):
            q = quantiles[name]
            vals.append(
                q[p].reindex(range(nwin)).fillna(0.0).to_numpy() / 1e3 if len(q) else np.zeros(nwin)
            )
        out[p] = (vals[0], vals[1])
    return out


def latency_columns(q: dict[float, tuple[np.ndarray, np.ndarray]]) -> dict[float, np.ndarray]:
    """Each window's latency quantile from :func:`latency_quantiles`' bounds: the proven
    one where they meet, their midpoint where they are within the tolerance, else NaN
    (withheld, as :func:`within_latency`)."""
    out = {}
    for p, (lo, hi) in q.items():
        width_ok = (hi - lo) <= np.maximum(LATENCY_FLOOR_US, LATENCY_TOLERANCE * hi)
        out[p] = np.where(hi <= lo, hi, np.where(width_ok, (lo + hi) / 2, np.nan))
    return out


def covered(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Total length of the (non-overlapping, sorted) intervals before each time t."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    t = np.asarray(t, dtype=np.int64)
    if len(starts) == 0:
        return np.zeros(len(t), dtype=np.int64)
    lens = ends - starts
    cum = np.concatenate([[0], np.cumsum(lens)])
    k = np.searchsorted(starts, t, "right") - 1
    part = np.where(k >= 0, np.clip(t - starts[np.maximum(k, 0)], 0, lens[np.maximum(k, 0)]), 0)
    return cum[np.maximum(k, 0)] * (k >= 0) + part


def switch_in_tasks(switch: pd.DataFrame, lives: Lives) -> np.ndarray:
    """The task of each switch-in: its ``next_pid``, or where a pid names several tasks
    (:mod:`schedwake.model.lives`) a number for each (the idle task is left out by its
    pid, ``next_pid`` 0, not by its number)."""
    next_pid = switch["next_pid"].to_numpy()
    if not lives:
        return next_pid
    key = lives.key(next_pid, switch["ts"].to_numpy())
    return np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _cpus_visited(switch: pd.DataFrame | None, lives: Lives) -> float | None:
    """Mean distinct CPUs per task with enough runs; None when no task qualifies."""
    if switch is None or len(switch) == 0:
        return None
    # NumPy on the two columns (no frames, no strings per event): per task, its runs and
    # distinct CPUs, in task order; its name is the last next_comm it had
    next_pid = switch_in_tasks(switch, lives)
    sel = switch["next_pid"].to_numpy() != 0  # (the idle task: by its pid, not its number)
    pids, size, nunique = pid_cpu_counts(next_pid[sel], switch["cpu"].to_numpy()[sel])
    del sel
    keep = size >= CPUS_VISITED_MIN_RUNS
    if not keep.any():
        return None
    pids, nunique = pids[keep], nunique[keep]
    tasks, last = last_rows(next_pid)
    comm = switch["next_comm"].array
    codes = np.asarray(comm.codes)[last[np.searchsorted(tasks, pids)]]
    g = pd.Series(nunique[~_percpu_names(comm, codes)])
    return float(g.mean()) if len(g) else None


def _percpu_names(comm: pd.Categorical, codes: np.ndarray) -> np.ndarray:
    """Whether the name of each category code ``codes`` of ``comm`` (-1: missing, read
    as ``"nan"``) is a per-CPU kernel thread's: each distinct name classed once."""
    ucodes, inv = np.unique(codes, return_inverse=True)
    cats = comm.categories
    percpu = [
        name_class("nan" if k < 0 else str(cats[k])) == PERCPU_KTHREAD for k in ucodes.tolist()
    ]
    return np.array(percpu, dtype=bool)[inv.reshape(-1)]


def cpus_visited_per_window(
    switch: pd.DataFrame, win: np.ndarray, nwin: int, lives: Lives
) -> np.ndarray:
    """:func:`_cpus_visited` of the switch-ins of each window (``win``: each row's window),
    0 where no task qualifies: the same counts, names and mean, for every window at once
    (one sort of the rows by window, pid and CPU, not one pass over them per window)."""
    next_pid = switch_in_tasks(switch, lives)
    rows = np.flatnonzero(switch["next_pid"].to_numpy() != 0)
    out = np.zeros(nwin, dtype=np.float64)
    if not len(rows):
        return out
    w, pid, cpu = win[rows], next_pid[rows], switch["cpu"].to_numpy()[rows]
    order = np.lexsort((cpu, pid, w))
    w, pid, cpu, rows = w[order], pid[order], cpu[order], rows[order]
    task = np.concatenate([[True], (w[1:] != w[:-1]) | (pid[1:] != pid[:-1])])
    new_cpu = task | np.concatenate([[True], cpu[1:] != cpu[:-1]])
    starts = np.flatnonzero(task)
    size = np.diff(np.append(starts, len(w)))
    nunique = np.add.reduceat(new_cpu, starts, dtype=np.int64)
    # a task's name in a window: the last next_comm it had there
    last = np.maximum.reduceat(rows, starts)
    comm = switch["next_comm"].array
    percpu = _percpu_names(comm, np.asarray(comm.codes)[last])
    keep = (size >= CPUS_VISITED_MIN_RUNS) & ~percpu
    tw = w[starts][keep]
    total = np.bincount(tw, weights=nunique[keep].astype(np.float64), minlength=nwin)
    tasks = np.bincount(tw, minlength=nwin)
    np.divide(total, tasks, out=out, where=tasks > 0)
    return out


def busy_bounds(model: Model) -> dict[str, tuple[float, float]]:
    """Per CPU (its number as a string, in CPU order), the bounds of its busy share from
    its first sched_switch to the end of the trace: (running, running + unknown) time /
    that span (:mod:`schedwake.model.completeness`: running proven, unknown not shown);
    one value twice when the trace shows the whole span."""
    occ = model.occupancy
    if len(occ) == 0:
        return {}
    state = pd.Categorical(occ["state"])  # (by its codes: cat_mask, not isin)
    sel = cat_mask(state, lambda s: s in ("running", "idle", "unknown"))
    n = int(sel.sum())
    first = model.first_switch_ts
    out: dict[str, tuple[float, float]] = {}
    if n == 0:
        return out
    running = cat_mask(state, lambda s: s == "running")
    unknown = cat_mask(state, lambda s: s == "unknown")
    del state
    cpu, start, end = occ["cpu"].to_numpy(), occ["start_ts"].to_numpy(), occ["end_ts"].to_numpy()
    if sel[:n].all():  # the CPUs' rows come first (as the model builds them): views
        cpu, start, end = cpu[:n], start[:n], end[:n]
        running, unknown = running[:n], unknown[:n]
    else:
        cpu, start, end = cpu[sel], start[sel], end[sel]
        running, unknown = running[sel], unknown[sel]
    del sel
    if not (cpu[1:] >= cpu[:-1]).all():  # grouped by CPU (the model's are)
        order = np.argsort(cpu, kind="stable")
        cpu, start, end = cpu[order], start[order], end[order]
        running, unknown = running[order], unknown[order]
        del order
    at = np.flatnonzero(np.concatenate([[True], cpu[1:] != cpu[:-1]])).tolist()
    for a, b in zip(at, at[1:] + [len(cpu)]):  # per CPU, in CPU order
        s0, e = start[a:b], end[a:b]
        d = e - s0
        busy = int(d[running[a:b]].sum())
        unk = int(d[unknown[a:b]].sum())
        span = max(int(e.max()) - first.get(int(cpu[a]), int(s0.min())), 1)
        lo = round(float(busy) / span, 6)
        out[str(int(cpu[a]))] = (lo, round(float(busy + unk) / span, 6) if unk else lo)
    return out


def latencies(w: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The measured wake-to-run latencies of the wakeups table ``w`` (rows with a run),
    ns: (the least each can have been, the proven one)."""
    if not len(w):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # (dropna() would also copy the index)
    lat = w["latency_ns"]
    ok = lat.notna().to_numpy()
    hi = lat.to_numpy(dtype=np.int64, na_value=0)[ok]
    if "run_from_ts" not in w.columns:
        return hi, hi
    lo = (
        w["run_from_ts"].to_numpy(dtype=np.int64, na_value=0)[ok]
        - w["ts"].to_numpy(dtype=np.int64)[ok]
    )
    return np.minimum(np.maximum(lo, 0), hi), hi


def window_edges(first_ts: int, last_ts: int, window_s: float) -> np.ndarray:
    """The edges (ns) of the windows of ``window_s`` seconds that cover first..last: whole
    windows from the first event, plus a last partial one if it is at least half a
    window long (always at least one window)."""
    wns = int(window_s * 1e9)
    if wns <= 0:
        raise ValueError("window_s must be positive")
    last_ts = max(last_ts, first_ts)
    full, rem = divmod(last_ts - first_ts, wns)
    if full == 0:
        return np.array([first_ts, last_ts + 1], dtype=np.int64)
    edges = first_ts + wns * np.arange(full + 1, dtype=np.int64)
    return np.append(edges, last_ts + 1) if rem >= wns / 2 else edges


def _window_preempted_share(storm: dict, edges: np.ndarray) -> np.ndarray:
    """``weighted_preempted_share`` of each window (0 without preemptions there): per
    (window, unit) the preemptions and switch-outs, without a pass per window."""
    nwin = len(edges) - 1
    pwin = np.searchsorted(edges, storm["preemption_ts"], "right") - 1
    owin = np.searchsorted(edges, storm["switchout_ts"], "right") - 1
    if len(pwin) == 0:
        return np.zeros(nwin)
    nunit = int(max(storm["preemption_unit"].max(), storm["switchout_unit"].max())) + 1
    pin, oin = (pwin >= 0) & (pwin < nwin), (owin >= 0) & (owin < nwin)
    pkey = pwin[pin] * nunit + storm["preemption_unit"][pin]
    okey = np.sort(owin[oin] * nunit + storm["switchout_unit"][oin])
    keys, pre = np.unique(pkey, return_counts=True)
    outs = np.searchsorted(okey, keys, "right") - np.searchsorted(okey, keys, "left")
    return weighted_share_windows(keys // nunit, pre, outs, nwin)


def weighted_share_windows(
    win: np.ndarray, pre: np.ndarray, outs: np.ndarray, nwin: int
) -> np.ndarray:
    """Per window, the preempted share of its units weighted by their preemptions: of
    each (window, unit) row (in window then unit order) its preemptions ``pre`` and the
    unit's switch-outs there ``outs``; 0 in a window without preemptions."""
    pre = np.asarray(pre).astype(np.float64)
    num = np.bincount(win, weights=pre**2 / np.maximum(outs, pre), minlength=nwin)
    den = np.bincount(win, weights=pre, minlength=nwin)
    return np.where(den > 0, num / np.maximum(den, 1), 0.0)


# -- the catalogue as a table, the names users write, the samples of a comparison --------


#: Columns of :func:`metric_samples`.
SAMPLE_COLUMNS = (
    "trace",
    "sample_kind",
    "window",
    "start_s",
    "end_s",
    "metric",
    "unit",
    "direction",
    "value",
)


def catalogue(cpus: int | None = None) -> pd.DataFrame:
    """The catalogue as a table: name, unit, direction, definition, window_sample, key.

    With ``cpus``, the per-CPU busy share is expanded into ``busy_share_cpu0`` ...
    ``busy_share_cpu<cpus-1>``; without, it stays one row ``busy_share_cpu{cpu}``."""
    rows = []
    for m in CATALOGUE.values():
        names = [m.name]
        if "{cpu}" in m.name and cpus is not None:
            names = [m.name.format(cpu=c) for c in range(cpus)]
        for n in names:
            rows.append(
                {
                    "name": n,
                    "unit": m.unit,
                    "direction": m.direction,
                    "definition": m.definition,
                    "window_sample": m.window_sample,
                    "key": m.key,
                }
            )
    return pd.DataFrame(
        rows, columns=["name", "unit", "direction", "definition", "window_sample", "key"]
    )


#: Names that compare and gate used before the one vocabulary, and the identifier each is
#: now; a rules file that still says them works, with a note (:func:`canonical_name`).
FORMER_NAMES: dict[str, str] = {
    "migrations/s": "migrations_per_s",
    "wakeup_migrations/s": "wakeup_migrations_per_s",
    "lb_migrations/s": "load_balance_migrations_per_s",
    "cross_llc_migrations/s": "cross_llc_migrations_per_s",
    "pingpong_episodes/s": "pingpong_episodes_per_s",
    "context_switches/s": "context_switches_per_s",
    "futile_wakeups/s": "futile_wakeups_per_s",
    "wake_to_run_p50": "wake_to_run_p50_us",
    "wake_to_run_p90": "wake_to_run_p90_us",
    "wake_to_run_p99": "wake_to_run_p99_us",
    "wake_to_run_p50_ns": "wake_to_run_p50_us",
    "wake_to_run_p90_ns": "wake_to_run_p90_us",
    "wake_to_run_p99_ns": "wake_to_run_p99_us",
}


def canonical_name(name: str) -> str:
    """The identifier of a metric as the user may write it: itself, a former name
    (:data:`FORMER_NAMES`), or the text of a report row (``wakeup_migration_share[%]``).
    Unknown names are returned unchanged (:func:`catalogue_entry` then says why)."""
    name = name.strip()
    if name.endswith("]") and "[" in name:  # a report row label: NAME[unit]
        name = name[: name.index("[")]
    return FORMER_NAMES.get(name, name)


def unknown_metric(name: str) -> str:
    """The one-line complaint about an unknown metric name, with the closest known ones."""
    import difflib

    known = [n for n in CATALOGUE if "{cpu}" not in n] + ["busy_share_cpuN", "bench_NAME"]
    known += per_op_metrics()
    close = difflib.get_close_matches(name, known + list(FORMER_NAMES), n=3, cutoff=0.6)
    # (the families' templates are not names: a CPU's busy share is suggested as CPU 0's)
    close = [FORMER_NAMES.get(c, c).replace("busy_share_cpuN", "busy_share_cpu0") for c in close]
    close = list(dict.fromkeys(close))
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown metric {name!r}{hint} (known: {', '.join(known)})"


#: The family of the benchmark's results (:mod:`schedwake.bench`): any ``bench_NAME``
#: is a metric, whose unit and direction each trace's results give (the sample rows
#: carry them); ``direction`` here only stands for "per result".
BENCH = CatalogueMetric(
    "bench_{name}",
    "",
    "per result",
    "a result of the benchmark that ran while the trace was recorded, from the files "
    "beside the trace (TRACE.bench.json, fio's JSON, dbench's output)",
    "the trace's one value (a benchmark result is per run, never per window)",
)


def bench_samples(
    tm: Mapping[str, Any], path: str, duration_s: float, metrics: Collection[str] | None = None
) -> pd.DataFrame:
    """The per-trace samples of the benchmark results of :func:`trace_metrics` ``tm``
    (one row each, ``sample_kind`` per-trace also beside per-window samples: a
    benchmark result is one value per run), with their own unit and direction."""
    info = tm.get("bench") or {}
    names = [n for n in info if metrics is None or n in metrics]
    v = [np.nan if tm.get(n) is None else float(tm[n]) for n in names]
    return pd.DataFrame(
        {
            "trace": [path] * len(names),
            "sample_kind": ["per-trace"] * len(names),
            "window": np.zeros(len(names), dtype=np.int64),
            "start_s": np.zeros(len(names)),
            "end_s": np.full(len(names), float(duration_s or 0.0)),
            "metric": names,
            "unit": [str(info[n].get("unit", "")) for n in names],
            "direction": [str(info[n]["direction"]) for n in names],
            "value": np.asarray(v, dtype=np.float64),
        },
        columns=list(SAMPLE_COLUMNS),
    )


def _with_bench(samples: pd.DataFrame, bench: pd.DataFrame) -> pd.DataFrame:
    if len(bench) == 0:
        return samples
    if len(samples) == 0:
        return bench.reset_index(drop=True)
    return pd.concat([samples, bench], ignore_index=True)


def checked_names(names: Iterable[str], param: str = "metrics") -> list[str]:
    """``names`` as metric identifiers (:func:`canonical_name`), each once, in order;
    OptionError naming ``param`` for an unknown one (:func:`unknown_metric`)."""
    from ..errors import OptionError

    out = list(dict.fromkeys(canonical_name(m) for m in names))
    for m in out:
        try:
            catalogue_entry(m)
        except KeyError as e:
            raise OptionError(param, None, e.args[0]) from None
    return out


def catalogue_entry(name: str) -> CatalogueMetric:
    """The catalogue entry of a metric identifier (``busy_share_cpu3`` -> the busy share
    entry, ``bench_fio_write_iops`` -> :data:`BENCH`). Raises KeyError (its text:
    :func:`unknown_metric`) for unknown names."""
    if name in CATALOGUE:
        return CATALOGUE[name]
    if name.startswith("bench_") and len(name) > len("bench_"):
        return BENCH
    if name.startswith("busy_share_cpu") and name[len("busy_share_cpu") :].isdigit():
        return CATALOGUE["busy_share_cpu{cpu}"]
    per_op = per_op_entry(name)
    if per_op is not None:
        return per_op
    raise KeyError(unknown_metric(name))


def per_op_entry(name: str) -> CatalogueMetric | None:
    """The entry of a count per unit of work (``context_switches_per_op``: the rate
    ``context_switches_per_s`` times the run's duration over its work, ``--work``;
    :mod:`schedwake.work`), or None when ``name`` is not the per-op form of a rate of
    the catalogue."""
    from ..work import is_per_op, per_s_name

    if not is_per_op(name):
        return None
    base = CATALOGUE.get(per_s_name(name))
    if base is None or base.unit != "/s":
        return None
    return CatalogueMetric(
        name,
        "/op",
        base.direction,
        f"{base.definition}: the count per unit of the run's work (compare/gate --work)",
        "the trace's one value (a run's work is per run, never per window)",
    )


def per_op_metrics() -> list[str]:
    """Every count per unit of work the catalogue has (one per ``/s`` rate)."""
    from ..work import per_op_name

    return [per_op_name(n) for n, m in CATALOGUE.items() if m.unit == "/s"]


def select_names(names: Iterable[str] | None) -> list[str] | None:
    """The metric names asked for, each checked against the catalogue (a KeyError names
    one it does not have); None (every metric) stays None."""
    if names is None:
        return None
    out = []
    for n in names:
        catalogue_entry(n)  # validates
        out.append(n)
    return out


def metric_samples(
    trace: Trace,
    window_s: float | None = None,
    thresholds: Mapping[str, float | str] | None = None,
    metrics: Collection[str] | None = None,
) -> pd.DataFrame:
    """Tidy table of the catalogue metrics of one trace: one row per (sample, metric).

    ``window_s=None``: one *per-trace* sample per metric (the whole-trace value,
    ``window`` 0). Otherwise *per-window* samples over consecutive windows of
    ``window_s`` seconds (:func:`window_metrics`); a window without wake-ups gives a
    missing (NaN) wake-up share and latency. Columns :data:`SAMPLE_COLUMNS`: ``trace``
    (path), ``sample_kind``, ``window``, ``start_s``/``end_s`` (seconds from the first
    event), ``metric`` (catalogue name), ``unit``, ``direction``, ``value`` (in ``unit``).
    ``metrics``: catalogue names to keep (default all).
    """
    path = str(trace.meta.path)
    cpus = trace.meta.ncpus
    keep = select_names(metrics)
    only = _keys_of(keep)  # (what is not kept is not computed)
    if window_s is None:
        return trace_samples(trace_metrics(trace, thresholds, only=only), path, cpus, metrics)
    bench = bench_samples(bench_metrics(trace), path, trace.duration_ns / 1e9, metrics)
    wm = window_metrics(trace, window_s, thresholds, only=only)
    return window_samples(wm, path, cpus, trace.model.events.first_ts, bench, metrics)


def window_samples(
    wm: pd.DataFrame,
    path: str,
    cpus: int,
    first_ts: int,
    bench: pd.DataFrame,
    metrics: Collection[str] | None = None,
) -> pd.DataFrame:
    """The per-window samples (:func:`metric_samples`) of a trace from its
    :func:`window_metrics` ``wm`` (or its time parts' joined), its first timestamp and its
    benchmark's samples ``bench`` (:func:`bench_samples`)."""
    keep = select_names(metrics)
    only = _keys_of(keep)
    first = first_ts
    cols: dict[str, np.ndarray] = {}
    for m in CATALOGUE.values():
        if only is not None and m.key not in only:
            continue
        if m.key == "busy_share":
            for c in range(cpus):
                col = f"busy_share_cpu{c}"
                v = (
                    wm[col].to_numpy(dtype=np.float64)
                    if col in wm.columns
                    else np.full(len(wm), np.nan)
                )
                cols[m.name.format(cpu=c)] = _whole_or_none(v) * m.scale
            continue
        v = wm[m.key].to_numpy(dtype=np.float64) * m.scale
        if m.key in _BOUNDED_WINDOWS:
            v = _whole_or_none(v)
        if m.missing_without is not None:  # (a share of nothing, a percentile of nothing)
            v = np.where(wm[m.missing_without].to_numpy() > 0, v, np.nan)
        cols[m.name] = v
    start = (wm["start_ns"].to_numpy(dtype=np.int64) - first) / 1e9
    end = (wm["end_ns"].to_numpy(dtype=np.int64) - first) / 1e9
    window = wm["window"].to_numpy(dtype=np.int64)
    return _with_bench(_tidy(path, "per-window", window, start, end, cols, keep), bench)


#: The metrics whose window values a trace may give only within bounds wider than the
#: tolerance (NaN there: withheld).
_BOUNDED_WINDOWS = ("wake_to_run_p50_us", "wake_to_run_p90_us", "wake_to_run_p99_us")


def _whole_or_none(v: np.ndarray) -> np.ndarray:
    """A trace's window values of a bounded metric: all of them, or none when some are
    withheld (NaN): the windows a trace shows well are not a fair sample of it (they are
    the ones with fewer missing switches: on this project's VM, the busier ones)."""
    return np.full(len(v), np.nan) if np.isnan(v).any() else v


def _keys_of(keep: list[str] | None) -> set[str] | None:
    """The :func:`trace_metrics` keys / :func:`window_metrics` columns that the catalogue
    metrics ``keep`` are made of: theirs and the counts that make a window's sample
    missing (``missing_without``). None (everything) for None."""
    if keep is None:
        return None
    out: set[str] = set()
    for n in keep:
        m = catalogue_entry(n)
        if isinstance(m, Metric):
            out.add(m.key)
            if m.missing_without is not None:
                out.add(m.missing_without)
    return out


def trace_samples(
    tm: Mapping[str, Any], path: str, cpus: int, metrics: Collection[str] | None = None
) -> pd.DataFrame:
    """The per-trace samples (:func:`metric_samples` with no window) of a trace whose
    :func:`trace_metrics` are ``tm``: how ``batch`` turns a stored row of metrics back
    into the samples of a comparison."""
    keep = select_names(metrics)
    cols: dict[str, np.ndarray] = {}
    for m in CATALOGUE.values():
        if m.key == "busy_share":
            for c in range(cpus):
                v = (tm["busy_share"] or {}).get(str(c))  # (None: withheld or no switch)
                cols[m.name.format(cpu=c)] = np.array([np.nan if v is None else v * m.scale])
        else:
            v = np.nan if tm[m.key] is None else float(tm[m.key])
            cols[m.name] = np.array([v * m.scale])
    one = np.zeros(1, dtype=np.int64)
    tidy = _tidy(path, "per-trace", one, np.zeros(1), np.array([tm["duration_s"]]), cols, keep)
    return _with_bench(tidy, bench_samples(tm, path, tm["duration_s"], keep))


def _tidy(
    path: str,
    kind: str,
    window: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    cols: dict[str, np.ndarray],
    keep: Collection[str] | None,
) -> pd.DataFrame:
    """The long table of :data:`SAMPLE_COLUMNS`: one row per (sample, kept metric),
    metric after metric (built at once: per-metric frames cost more than the metrics)."""
    names = [n for n in cols if keep is None or n in keep]
    if not names:
        return pd.DataFrame({c: [] for c in SAMPLE_COLUMNS})
    n = len(window)
    entries = [catalogue_entry(name) for name in names]
    return pd.DataFrame(
        {
            "trace": [path] * (n * len(names)),
            "sample_kind": [kind] * (n * len(names)),
            "window": np.tile(np.asarray(window, dtype=np.int64), len(names)),
            "start_s": np.tile(np.asarray(start, dtype=np.float64), len(names)),
            "end_s": np.tile(np.asarray(end, dtype=np.float64), len(names)),
            "metric": np.repeat(np.array(names, dtype=object), n).tolist(),
            "unit": np.repeat(np.array([e.unit for e in entries], dtype=object), n).tolist(),
            "direction": np.repeat(
                np.array([e.direction for e in entries], dtype=object), n
            ).tolist(),
            "value": np.concatenate([np.asarray(cols[name], dtype=np.float64) for name in names]),
        }
    )


def missing_events(trace: SideTrace, name: str) -> list[str]:
    """What the trace lacks to measure catalogue metric ``name``: one text per unmet
    group of :data:`NEEDS` (``"sched_waking or sched_wakeup"``); empty when measurable.
    An event counts as present when the trace has records of it: a file cannot tell an
    event that was not enabled from one that never fired (nor one left out by
    ``load(events=...)``)."""
    key = catalogue_entry(name).name
    if key == BENCH.name:  # (a result of the benchmark, not of the trace's events)
        return []
    if key not in NEEDS and per_op_entry(key) is not None:  # what its rate needs
        from ..work import per_s_name

        key = per_s_name(key)
    return _unmet(trace, NEEDS[key])
