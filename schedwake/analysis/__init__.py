"""The analysis of one trace: findings, metrics, caveats and the topology they were
judged on, as one :class:`Analysis` object.

This is the layer between the detectors/metrics below and every renderer above:
``schedwake analyze`` (text, Markdown, JSON: :mod:`schedwake.report.analyze`), notebooks
and ``batch`` all call :func:`analyze`, then render or store what it returns::

    trace = schedwake.load("trace.dat")
    result = schedwake.analyze(trace, thresholds={"pingpong_min_episodes": 50})
    result.findings[0].title, result.metrics["migrations_per_s"], result.to_dict()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..detect import THRESHOLDS, Finding, Thresholds, detect, resolve
from ..errors import OptionError
from ..model import shared_orders
from ..summary import summary
from ..topology import FILE_HEADER, Topology
from ..trace import Trace
from . import wait_causes
from .metrics import metric_bounds, trace_metrics

if TYPE_CHECKING:
    from ..referee import Referee

#: Threshold values by name: resolved (a Thresholds) or not (a dict).
_Values = TypeVar("_Values", bound=Mapping[str, float])


@dataclass
class Analysis:
    """What ``schedwake analyze`` reports about one trace."""

    trace: Trace  #: the trace analysed
    findings: list[Finding]  #: most severe first, each with its evidence lines
    metrics: dict  #: name -> value, docs/compare.md, 'The metrics'
    #: The thresholds the detectors judged with and the metrics counted with (defaults +
    #: overrides, a ``--time`` slice's amounts scaled), resolved once by :func:`analyze`.
    thresholds: Thresholds
    waits: bool = False  #: explain every wait of the ``--pid`` tasks (``task_waits``)

    @property
    def caveats(self) -> list[str]:
        """What the trace could not tell (lost events, missing events, an assumed
        topology, the reader's warnings, what it does not show and the metrics it gives
        only within bounds), one plain-English line each; then where the trace disagrees
        with the kernel's own counters beside it beyond their tolerance
        (:mod:`schedwake.referee`)."""
        ref = self.referee
        return (
            self.trace.caveats
            + bounds_caveats(self.bounds, self.metrics)
            + ([] if ref is None else ref.caveats())
        )

    @cached_property
    def referee(self) -> Referee | None:
        """The trace against the kernel's counters beside it
        (:class:`schedwake.referee.Referee`), or None without them."""
        from ..referee import judge

        return judge(self.trace)

    @cached_property
    def bounds(self) -> dict[str, list]:
        """The metrics the trace shows only within bounds, by name: ``[lo, hi]``
        (:func:`schedwake.analysis.metrics.metric_bounds`); their value is the midpoint when the
        bounds are close enough, else None (withheld)."""
        return metric_bounds(self.trace, self.thresholds)

    @property
    def topology(self) -> dict:
        """The CPU map the findings were judged on and where it came from."""
        return topology_facts(self.trace.topology)

    @property
    def cpu_map(self) -> Topology:
        """The CPU map the findings were judged on."""
        return self.trace.topology

    @cached_property
    def facts(self) -> dict:
        """The trace's facts (:func:`schedwake.summary.summary`)."""
        return summary(self.trace)

    @property
    def focused(self) -> bool:
        """Whether the analysis is of some tasks only (``--pid``)."""
        return self.trace.model.pids is not None

    @cached_property
    def longest_wake_to_run(self) -> dict | None:
        """The wake-up that waited longest to run, as ``perf sched latency`` gives its
        maximum: ``latency_us``, the wakee (``pid``, ``comm``), the CPU it was woken to,
        its waker, and the time it was woken and ran (``woken_at``/``ran_at``, seconds
        as trace-cmd prints them); None without a measured latency. Where the wakee's
        switch-in is missing, its wait lies between ``latency_min_us`` and
        ``latency_us`` (ended by its first proof of running): the longest is the one
        whose proven wait (the least it can have been) is longest."""
        w = self.trace.model.wakeups
        at = wait_causes.longest_wakeup(w)
        return None if at is None else wait_causes.wakeup_record(self.trace, w.iloc[at])

    @cached_property
    def longest_preempted_wait(self) -> dict | None:
        """The longest wait of a task switched out runnable (R/R+) until it ran again,
        broken into causes (docs/waits.md); None when no task was preempted."""
        return wait_causes.longest_preempted(self.trace)

    @cached_property
    def tail_waits(self) -> dict | None:
        """The waits at or above the 99th percentile (wake-to-run and preempted):
        the share of each cause in their time (docs/waits.md)."""
        return wait_causes.tail_waits(self.trace)

    @cached_property
    def task_waits(self) -> list[dict] | None:
        """Every wait of the ``--pid`` tasks, each broken into causes, when asked for
        (``analyze(..., waits=True)``); else None."""
        if not self.waits:
            return None
        return wait_causes.waits_of_pids(self.trace)

    @cached_property
    def task_states(self) -> dict:
        """Time of the tasks in each state, as ``perf sched timehist --state`` gives it
        (docs/task-states.md): ``tasks`` (those of ``--pid``, else every task) with
        ``running_s``, ``runnable_s`` (= ``preempted_s`` + ``woken_wait_s``),
        ``sleeping_s``, ``blocked_s`` and ``unknown_s`` adding up to ``observed_s``, the
        same per CPU; ``classes`` (user, kworker, kthread) and ``cpus``."""
        from ..model.task_states import summary as task_state_summary

        return task_state_summary(self.trace.model)

    def to_dict(self) -> dict:
        """The JSON document of ``schedwake analyze --format json``: the trace's facts
        with the topology used and the longest wake-to-run wait, the caveats, the
        findings, the metrics and the task states (:func:`document`), as plain lists and
        dicts (``json.dumps`` takes it)."""
        return plain(document(self))


def plain(doc: dict) -> dict:
    """A :func:`document` with its tasks' rows as the list of their dicts: the document
    keeps them as columns (:class:`~..model.task_states.TaskRows`), which
    :func:`schedwake.jsonout.dumps` writes without a dict a task."""
    from ..model.task_states import TaskRows

    states = doc.get("task_states")
    if isinstance(states, dict) and isinstance(states.get("tasks"), TaskRows):
        doc["task_states"] = {**states, "tasks": states["tasks"].rows()}
    return doc


def document(a: Any) -> dict:
    """The JSON document of an analysis (:meth:`Analysis.to_dict`), of a whole trace or
    joined from its time parts (:class:`.partitioned.PartitionedAnalysis`); the tasks'
    rows of its task states are columns (:func:`plain` makes them a list)."""
    return {
        "trace": {
            **a.facts,
            "topology": a.topology,
            "longest_wake_to_run": a.longest_wake_to_run,
            "longest_preempted_wait": a.longest_preempted_wait,
            "tail_waits": a.tail_waits,
            **({"waits": a.task_waits} if a.task_waits is not None else {}),
        },
        "caveats": a.caveats,
        "findings": [f.to_dict() for f in a.findings],
        "metrics": a.metrics,
        "metric_bounds": a.bounds,
        "task_states": a.task_states,
    }


def analyze(
    trace: Trace,
    thresholds: Mapping[str, float | str] | None = None,
    detectors: Iterable[str] | None = None,
    progress: Callable[[float], object] | None = None,
    waits: bool = False,
) -> Analysis:
    """Run the detectors and compute the metrics of ``trace`` (a :class:`schedwake.Trace`).

    ``thresholds``: overrides of the detector thresholds by name (docs/detectors.md;
    an unknown name, a value that is not a number or out of its unit's range raises
    OptionError naming ``thresholds``: see :func:`check_thresholds`);
    ``detectors``: the detector names to run (None: all); ``progress``: a callable that
    gets the fraction done after each phase (model tables, detectors, metrics);
    ``waits``: explain every wait of the tasks the trace is focused on (``--pid
    --waits``: :attr:`Analysis.task_waits`); OptionError naming ``waits`` when the trace
    is focused on none (:meth:`schedwake.Trace.focus`).
    """

    def done(fraction: float) -> None:
        if progress is not None:
            progress(fraction)

    # once, for the detectors and the metrics alike (a --time slice scales the amounts)
    used = check_thresholds(resolve(trace, thresholds))
    model = trace.model
    if waits and model.pids is None:  # every wait of every task: not what was meant
        raise OptionError("waits", True, "needs a trace focused on tasks: trace.focus(pids)")
    with shared_orders():  # (the model's components sort the same events once)
        for fraction, table in ((0.25, "wakeups"), (0.35, "migrations"), (0.55, "occupancy")):
            getattr(model, table)  # built once, here, so that the phases can be reported
            done(fraction)
        findings = detect(trace, used, detectors)
        done(0.85)
        metrics = trace_metrics(trace, used)
    done(1.0)
    return Analysis(trace, findings, metrics, used, waits)


def bounds_caveats(bounds: dict[str, list], metrics: dict) -> list[str]:
    """One line per metric the trace gives only within bounds: withheld (its value None)
    or the midpoint of bounds within the tolerance."""
    from .metrics import catalogue_entry

    out = []
    for name, (lo, hi) in bounds.items():
        entry = catalogue_entry(name)
        scale, unit = entry.scale, entry.unit
        if name.startswith("busy_share_cpu"):
            value = (metrics.get("busy_share") or {}).get(name[len("busy_share_cpu") :])
        else:
            value = metrics.get(name)

        def show(v: float, scale: float = scale, unit: str = unit) -> str:
            return f"{v * scale:.4g}{unit if unit == '%' else ' ' + unit}"

        if hi is None:
            out.append(
                f"{name} counts at least one switch per break of a switch chain: at least "
                f"{show(lo)}, maybe more"
            )
        elif value is None:
            out.append(
                f"{name} withheld: the trace shows only that it lies between {show(lo)} "
                f"and {show(hi)} (wider than the tolerance, docs/semantics.md)"
            )
        else:
            out.append(
                f"{name} is the midpoint of {show(lo)} and {show(hi)}: the trace does not "
                "show the rest"
            )
    return out


def check_thresholds(values: _Values) -> _Values:
    """``values`` (threshold name -> number), each refused with an
    :class:`~schedwake.errors.OptionError` naming ``thresholds`` unless it fits its
    unit (docs/detectors.md): a share (``fraction``) from 0 to 1, seconds a finite
    number >= 0, a flag (``bool``) 0 or 1, and a count (episodes, wake-ups, runs, ...)
    a whole number >= 0. NaN fits none: a NaN threshold would silently flag nothing
    (or everything). Returns ``values``."""
    for name, value in values.items():
        threshold = THRESHOLDS.get(name)
        if threshold is not None:
            if why := _out_of_range(float(value), threshold.unit):
                raise OptionError("thresholds", f"{name}={value:g}", f"{name} {why}")
    return values


def _out_of_range(value: float, unit: str) -> str | None:
    """Why ``value`` does not fit a threshold of ``unit``, or None."""
    if not np.isfinite(value) or value < 0:
        return f"must be a finite number >= 0 (its unit: {unit})"
    if unit == "fraction" and value > 1:
        return "is a share: from 0 to 1"
    if unit == "bool" and value not in (0, 1):
        return "is a flag: 0 or 1"
    if unit not in ("fraction", "s", "bool") and not value.is_integer():
        return f"is a count of {unit}: a whole number"
    return None


def topology_facts(topo: Topology) -> dict:
    """``{"source": "file" | "option" | "header" | "inferred" | "assumed", "from": ..., "llc":
    [[cpus]...], "smt": ..., "numa": ..., "note": ...}``: a topology as reports state it
    (``note``: the evidence of an inferred map, or why an assumed one was not inferred)."""
    if topo.assumed:
        kind = "assumed"
    elif topo.inferred:
        kind = "inferred"
    elif topo.source == "--llc":
        kind = "option"
    elif topo.source == FILE_HEADER:
        kind = "header"
    else:
        kind = "file"
    return {
        "source": kind,
        "from": topo.source,
        "llc": topo.llc,
        "smt": topo.smt,
        "numa": topo.numa,
        "note": topo.note,
        "description": topo.describe(),
    }


__all__ = ["Analysis", "analyze", "check_thresholds", "topology_facts"]
