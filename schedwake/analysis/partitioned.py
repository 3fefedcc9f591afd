"""The analysis of one trace from its time parts (docs/design-partitioned-analysis.md,
'Metrics and findings'): what each part gives (:func:`part_summary`, run where the
part is, on a Dask worker) and how the client joins the parts' summaries into the
sections of the whole trace's analysis (:class:`Joined`), equal to them.

A part's summary is small: sums per task, CPU and kind, a task's name, counts; never
its events nor its model's rows. Each part counts only the rows it owns
(:func:`schedwake.partition.owned_rows`), so that every row of the whole trace's model
is counted once.

Every section of ``analyze``'s document is joined (:func:`analyze_parts`,
tests/test_partition_analysis.py, tests/test_partition_document.py), and the
per-window metrics ``batch`` stores (:func:`joined_windows`,
tests/test_partition_windows.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import ingest
from ..errors import OptionError
from ..model import caveats, unjudged_pingpong
from ..model.completeness import Told, break_counts
from ..model.events import events_caveats, flags_known
from ..model.task_states import StateSums, focused, joined_names, last_names, summary_of
from ..model.waits import aggregate
from ..partition import in_span, owned_mask, owned_rows
from ..partition.parts import crossing_waits, waits_beyond
from ..summary import completeness_told, meta_summary
from . import bounds_caveats, check_thresholds, document, plain, topology_facts, wait_causes
from .partials import (
    GapPartial,
    MetricPartial,
    NotJoinedError,
    Selection,
    gap_partial,
    interpolated,
    joined_bounds,
    joined_metrics,
    metric_partial,
    quantile_ranks,
)
from .window_partials import WindowPartial, shared_windows, window_latencies, window_partial
from .window_partials import joined as joined_window_metrics

if TYPE_CHECKING:
    from ..detect import Finding
    from ..partition import PartSpec, Plan
    from ..partition.driver import Kept
    from ..topology import Topology
    from ..trace import Trace


@dataclass(frozen=True)
class PartSummary:
    """What one part gives the client (:func:`part_summary`)."""

    #: The part's share of the trace's completeness (of the contradictions and
    #: unknown time it owns).
    told: Told
    #: The ns of the task states it owns, per task, (task, CPU) and CPU.
    states: StateSums
    #: Each task's last name in the part, per source of names.
    names: list[dict[int, str]]
    #: The events it has records of in its span, whether its sched_switch has decoded
    #: prev_state, whether its sched_waking rows there tell their context (None: it has
    #: none), and the ping-pong wake-ups it owns that cannot be judged without it.
    present: frozenset[str]
    prev_state: bool
    flags: bool | None
    unjudged: int


def part_summary(part: Trace, spec: PartSpec) -> PartSummary:
    """The summary of the part ``part`` read from ``spec``
    (:meth:`schedwake.partition.Plan.map`)."""
    model = part.model
    t0, t1 = spec.t0, spec.t1
    owned = owned_rows(model, t0, t1, ("breaks", "timeline", "task_states"))
    breaks, timeline = owned["breaks"], owned["timeline"]
    comp = model.completeness
    unknown = timeline[(timeline["state"] == "unknown").to_numpy()]
    unknown_ns = (unknown["end_ts"] - unknown["start_ts"]).groupby(unknown["cpu"]).sum()
    told = Told(
        counts=break_counts(breaks, comp.first_switch),
        unknown_ns={int(c): int(n) for c, n in unknown_ns.items()},
        first_switch=dict(comp.first_switch),
        t_end=int(comp.t_end),
        complete=len(breaks) == 0 and len(unknown) == 0,
    )
    ev = model.events
    present = {
        name
        for name in part.events
        if part.has_records(name)
        and in_span(part.table(name).column("ts").to_numpy(), t0, t1).any()
    }
    waking = ev.waking
    if waking is not None:
        waking = waking[in_span(waking["ts"].to_numpy(), t0, t1)]
    wakeups = model.wakeups
    owned_wakeups = wakeups[owned_mask(model, t0, t1, "wakeups")]
    return PartSummary(
        told=told,
        states=StateSums.of(focused(model, owned["task_states"])),
        names=last_names(ev, t0, t1),
        present=frozenset(present),
        prev_state=ev.switch is not None and "prev_state_str" in ev.switch.columns,
        flags=flags_known(waking),
        unjudged=int(unjudged_pingpong(owned_wakeups).sum()) if len(owned_wakeups) else 0,
    )


@dataclass(frozen=True)
class Joined:
    """The sections of the whole trace's analysis from its parts' summaries."""

    plan: Plan
    parts: Sequence[PartSummary]

    def told(self) -> Told:
        """The whole trace's completeness, as the reports tell it."""
        return Told.add([p.told for p in self.parts])

    def trace_facts(self) -> dict[str, Any]:
        """The ``trace`` section's facts, completeness and topology
        (:meth:`schedwake.analysis.Analysis.to_dict`, without its waits)."""
        meta = self.plan.meta
        switches = meta.event_counts.get("sched_switch", 0) > 0
        return {
            **meta_summary(meta),
            "completeness": completeness_told(self.told()) if switches else None,
            "topology": topology_facts(self.plan.topology),
        }

    def caveats(self) -> list[str]:
        """The trace's caveats (:attr:`schedwake.Trace.caveats`: the reader's warnings,
        then the model's, :meth:`model_caveats`)."""
        return list(self.plan.meta.warnings) + self.model_caveats()

    def model_caveats(self) -> list[str]:
        """The model's caveats (:attr:`schedwake.model.Model.caveats`; what every
        finding carries)."""
        present = frozenset().union(*(p.present for p in self.parts))
        flags = [p.flags for p in self.parts if p.flags is not None]
        meta = self.plan.meta
        events = events_caveats(
            meta,
            set(present),
            any(p.prev_state for p in self.parts),
            None if not flags else any(flags),
        )
        told = self.told() if "sched_switch" in present else None
        unjudged = sum(p.unjudged for p in self.parts)
        return caveats(events, told, unjudged, None, self.plan.topology)

    def names(self) -> dict[int, str]:
        """Each task's name (:func:`schedwake.model.task_states.comms`)."""
        return joined_names([p.names for p in self.parts])

    def task_states(self) -> dict[str, Any]:
        """The ``task_states`` section (:attr:`schedwake.analysis.Analysis.task_states`)."""
        return summary_of(StateSums.add([p.states for p in self.parts]), self.names())


def joined(plan: Plan) -> Joined:
    """Every part's summary (on the plan's cluster, or here), joined."""
    return Joined(plan, plan.map(part_summary))


# -- the waits explained: the longest and the tail -------------------------------------

#: A frame of waits' order in the whole trace's :func:`.wait_causes.all_waits`: the
#: wake-ups first, by time, then the preempted waits, by start; of equal times, the
#: earlier part's first, then the part's own order.
_ORDER = ("kind_rank", "start", "part", "row")


@dataclass
class PartWaits:
    """A part's waits, kept where it was modelled (:meth:`schedwake.partition.Plan.keep`):
    the client asks it for what it needs (:func:`waits_sections`)."""

    t0: int | None
    t1: int | None
    #: The ns of every wait it owns (:func:`.wait_causes.all_waits`), ascending.
    ns: np.ndarray
    #: Its longest waits (at most the tail's limit), longest first, with their order
    #: (:data:`_ORDER`) and, for those that start in it, their breakdowns.
    longest: pd.DataFrame
    breakdowns: list[dict[str, Any] | None]
    #: Its longest wake-up (0 or 1 row of the wakeups table, with ``key``) and longest
    #: preempted wait (0 or 1 row of the waits table), with their records when they
    #: start in it.
    wakeup: pd.DataFrame
    wakeup_record: dict[str, Any] | None
    preempted: pd.DataFrame
    preempted_record: dict[str, Any] | None


def part_waits(part: Trace, spec: PartSpec) -> PartWaits:
    """The waits the part ``part`` (read from ``spec``) owns: :class:`PartWaits`."""
    owned = owned_rows(part.model, spec.t0, spec.t1, ("wakeups", "waits"))
    w, waits = owned["wakeups"], owned["waits"]
    order = -np.inf if spec.t0 is None else float(spec.t0)
    start = -np.inf if spec.t0 is None else spec.t0
    timed = w[w["latency_ns"].notna().to_numpy()] if len(w) else w
    # (an owned row names its migration by time: ``migrate_ts``)
    wake_end = wait_causes.wake_path_ends(timed, timed["migrate_ts"].to_numpy(np.int64))
    f = wait_causes.waits_frame(timed, wait_causes.preempted_waits(waits), wake_end)
    f = f.assign(
        kind_rank=(f["kind"] != "wake_to_run").to_numpy().astype(np.int64),
        part=order,
        row=np.arange(len(f)),
    )
    longest = wait_causes.longest_first(f).iloc[: wait_causes.TAIL_LIMIT]
    inside = longest["start"].to_numpy() >= start
    explained = wait_causes.explain_rows(part, longest[inside])
    breakdowns: list[dict[str, Any] | None] = [None] * len(longest)
    for i, b in zip(np.flatnonzero(inside), explained):
        breakdowns[int(i)] = b
    at = wait_causes.longest_wakeup(w)
    wakeup = w.iloc[[] if at is None else [at]]
    wakeup = wakeup.assign(key=wait_causes.longest_wakeup_key(wakeup), part=order)
    wakeup_record = None
    if len(wakeup) and int(wakeup["ts"].iloc[0]) >= start:
        wakeup_record = _wakeup_record_of(part, wakeup.iloc[0])
    pre = wait_causes.preempted_waits(waits)
    at = wait_causes.longest_preempted_row(pre)
    preempted = pre.iloc[[] if at is None else [at]].assign(part=order)
    preempted_record = None
    if len(preempted) and int(preempted["start_ts"].iloc[0]) >= start:
        preempted_record = _preempted_record_of(part, preempted.iloc[0])
    return PartWaits(
        spec.t0,
        spec.t1,
        np.sort(f["ns"].to_numpy()),
        longest,
        breakdowns,
        wakeup,
        wakeup_record,
        preempted,
        preempted_record,
    )


def _wakeup_record_of(trace: Trace, r: pd.Series) -> dict[str, Any]:
    """:func:`.wait_causes.wakeup_record` of the wake-up ``r`` (an owned row) in
    ``trace``'s own wakeups table (whose row numbers it names)."""
    w = trace.model.wakeups
    at = np.flatnonzero(
        (w["ts"].to_numpy() == int(r["ts"])) & (w["wakee_pid"].to_numpy() == int(r["wakee_pid"]))
    )
    return wait_causes.wakeup_record(trace, w.iloc[int(at[0])])


def _preempted_record_of(trace: Trace, r: pd.Series) -> dict[str, Any]:
    """:func:`.wait_causes.preempted_record` of the wait ``r`` (an owned row)."""
    return wait_causes.preempted_record(trace, r)


@dataclass(frozen=True)
class _Explain:
    """In a window: the breakdowns of waits (rows of an all_waits frame), the record of
    a wake-up or of a preempted wait (a picklable callable for
    :meth:`schedwake.partition.Plan.map_windows`)."""

    waits: pd.DataFrame | None = None
    wakeup: pd.Series | None = None
    preempted: pd.Series | None = None

    def __call__(self, trace: Trace, spec: PartSpec) -> Any:
        if self.wakeup is not None:
            return _wakeup_record_of(trace, self.wakeup)
        if self.preempted is not None:
            return _preempted_record_of(trace, self.preempted)
        assert self.waits is not None
        return wait_causes.explain_rows(trace, self.waits)


def _ns_top(pw: PartWaits, m: int) -> np.ndarray:
    return pw.ns[max(len(pw.ns) - m, 0) :]


def _count_at_least(pw: PartWaits, threshold: float) -> int:
    return int(len(pw.ns) - np.searchsorted(pw.ns, threshold, side="left"))


def _longest(pw: PartWaits) -> tuple[pd.DataFrame, list[dict[str, Any] | None]]:
    return pw.longest, pw.breakdowns


def _bests(pw: PartWaits) -> tuple:
    return pw.wakeup, pw.wakeup_record, pw.preempted, pw.preempted_record, pw.t1


def quantile_of(kept: Kept[PartWaits], n: int, q: float) -> float:
    """``np.quantile`` (linear) of every part's wait ns at ``q``, exact, from the
    parts' largest values only: the two order statistics it interpolates between are
    among the ``n - k`` largest."""
    virtual, below, above = quantile_ranks(n, q)
    tops = kept.ask(_ns_top, n - below)
    largest = np.sort(np.concatenate(tops))[::-1]  # (the n - below largest, descending)
    a, b = np.int64(largest[n - 1 - below]), np.int64(largest[n - 1 - above])
    return interpolated(a, b, float(virtual - below))


def waits_sections(plan: Plan, kept: Kept[PartWaits]) -> dict[str, Any]:
    """The ``trace`` section's waits (``longest_wake_to_run``, ``longest_preempted_wait``,
    ``tail_waits``: :class:`schedwake.analysis.Analysis`) from the parts' kept waits;
    what a part could not explain (a wait that starts before it) explained in a window
    from its start."""
    bests = kept.ask(_bests)
    return {
        "longest_wake_to_run": _longest_wakeup(plan, bests),
        "longest_preempted_wait": _longest_preempted(plan, bests),
        "tail_waits": _tail(plan, kept),
    }


def _longest_wakeup(plan: Plan, bests: list[tuple]) -> dict[str, Any] | None:
    rows = [(w, rec, t1) for w, rec, _, _, t1 in bests if len(w)]
    if not rows:
        return None
    # the largest key; of equal ones the first (by time, then part)
    frame = pd.concat([w for w, _, _ in rows], ignore_index=True)
    at = int(
        np.lexsort((frame["part"].to_numpy(), frame["ts"].to_numpy(), -frame["key"].to_numpy()))[0]
    )
    w, record, t1 = rows[at]
    if record is not None:
        return record
    r = w.iloc[0]
    return plan.map_windows(_Explain(wakeup=r), [(int(r["ts"]), t1)])[0]


def _longest_preempted(plan: Plan, bests: list[tuple]) -> dict[str, Any] | None:
    rows = [(p, rec, t1) for _, _, p, rec, t1 in bests if len(p)]
    if not rows:
        return None
    frame = pd.concat([p for p, _, _ in rows], ignore_index=True)
    least = frame["min_end_ts"].to_numpy() - frame["start_ts"].to_numpy()
    # the longest proven, then possible; of equal ones the last (by start, then part)
    at = int(
        np.lexsort(
            (
                frame["part"].to_numpy(),
                frame["start_ts"].to_numpy(),
                frame["delay_ns"].to_numpy(),
                least,
            )
        )[-1]
    )
    p, record, t1 = rows[at]
    if record is not None:
        return record
    r = p.iloc[0]
    return plan.map_windows(_Explain(preempted=r), [(int(r["start_ts"]), t1)])[0]


def _tail(
    plan: Plan,
    kept: Kept[PartWaits],
    quantile: float = wait_causes.TAIL_QUANTILE,
    limit: int = wait_causes.TAIL_LIMIT,
) -> dict[str, Any] | None:
    """:func:`.wait_causes.tail_waits` of the whole trace from its parts."""
    counts = kept.ask(len_ns)
    n = sum(counts)
    if n == 0:
        return None
    threshold = quantile_of(kept, n, quantile)
    waits = sum(kept.ask(_count_at_least, threshold))
    found = kept.ask(_longest)
    frames = []
    for i, (f, _) in enumerate(found):
        frames.append(f.assign(at_part=i, at_row=np.arange(len(f))))
    merged = pd.concat(frames, ignore_index=True)
    merged = merged[(merged["ns"].to_numpy() >= threshold)]
    merged = merged.iloc[np.lexsort(tuple(merged[c].to_numpy() for c in reversed(_ORDER)))]
    tail = wait_causes.longest_first(merged).iloc[:limit]
    bs: list[dict[str, Any] | None] = [
        found[int(p)][1][int(r)] for p, r in zip(tail["at_part"], tail["at_row"])
    ]
    missing = [i for i, b in enumerate(bs) if b is None]
    if missing:  # (waits that start before the part that owns them: in a window each)
        specs = plan.specs
        windows = [
            (int(tail["start"].iloc[i]), specs[int(tail["at_part"].iloc[i])].t1) for i in missing
        ]
        jobs = [_Explain(waits=tail.iloc[[i]]) for i in missing]
        for i, window, job in zip(missing, windows, jobs):
            bs[i] = plan.map_windows(job, [window])[0][0]
    explained = [b for b in bs if b is not None]
    return wait_causes.tail_record(
        quantile, threshold, waits, tail["kind"], len(explained), aggregate(explained)
    )


def len_ns(pw: PartWaits) -> int:
    """How many waits a part owns."""
    return len(pw.ns)


# -- one pass: every part's summaries at once -------------------------------------------


@dataclass
class PartAnalysis:
    """Everything a part gives the analysis, from one read and one model of it: its
    summary (:func:`part_summary`), waits (:func:`part_waits`), the detectors' measures
    (:func:`.part_findings.part_findings`) and the metrics' partials
    (:func:`.partials.metric_partial`, :func:`.partials.gap_partial`), kept where the
    part is; and what the other parts need of it: the time of its last event (its
    horizon) and the woken waits it owns that begin before it
    (:func:`schedwake.partition.parts.crossing_waits`)."""

    summary: PartSummary
    waits: PartWaits
    findings: Any
    metrics: MetricPartial
    gap: GapPartial
    last: int
    crossing: pd.DataFrame
    #: Per window length asked for (:attr:`Analyse.windows`): its window partial, and its
    #: owned latencies by window (:func:`.window_partials.window_partial`).
    windows: list[WindowPartial] = dataclasses.field(default_factory=list)
    window_latencies: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = dataclasses.field(
        default_factory=list
    )


@dataclass(frozen=True)
class Analyse:
    """:class:`PartAnalysis` of a part, given the whole trace's pinned tasks (the
    idle-while-runnable gap leaves their waits out: :meth:`schedwake.partition.Plan.pinned`);
    a picklable callable for :meth:`schedwake.partition.Plan.keep`."""

    pinned: np.ndarray
    #: The window lengths (s) whose per-window metrics are asked for (``batch``), and
    #: the whole trace's first and last timestamps the windows are cut from.
    windows: tuple[float, ...] = ()
    span: tuple[int, int] = (0, 0)

    def __call__(self, part: Trace, spec: PartSpec) -> PartAnalysis:
        from ..detect import resolve
        from ..detect.idle_while_runnable import gap_segments
        from .part_findings import part_findings

        t0, t1 = spec.t0, spec.t1
        segs = None
        if self.windows:
            segs, _ = gap_segments(part.model, resolve(part, None), self.pinned)
        out = PartAnalysis(
            part_summary(part, spec),
            part_waits(part, spec),
            part_findings(part, spec),
            metric_partial(part, t0, t1),
            gap_partial(part, t0, t1, self.pinned, segs),
            int(part.meta.last_ts_ns or 0),
            crossing_waits(part.model, t0, t1),
        )
        for w in self.windows:
            assert segs is not None
            wp, lat = window_partial(part, t0, t1, w, *self.span, segs)
            out.windows.append(wp)
            out.window_latencies.append(lat)
        return out


def part_analysis(part: Trace, spec: PartSpec) -> PartAnalysis:
    """:class:`PartAnalysis` of the part ``part`` read from ``spec``, with the pinned tasks
    of the part itself (the whole trace's: :class:`Analyse`)."""
    from ..detect import resolve
    from ..detect.idle_while_runnable import pinned_pids

    pinned = pinned_pids(part.model, int(resolve(part)["iwr_pinned_min_runs"]))
    return Analyse(pinned)(part, spec)


def summary_of_part(pa: PartAnalysis) -> PartSummary:
    return pa.summary


def waits_of_part(pa: PartAnalysis) -> PartWaits:
    return pa.waits


def findings_of_part(pa: PartAnalysis) -> Any:
    return pa.findings


def metrics_of_part(pa: PartAnalysis) -> MetricPartial:
    return pa.metrics.without_values()


def values_of_part(pa: PartAnalysis, name: str, fn: Any, *args: Any) -> Any:
    """``fn`` of the part's sorted values ``name`` (what a :class:`.partials.Selection`
    asks, where the part is)."""
    return fn(getattr(pa.metrics, name), *args)


def kept_selections(kept: Kept[PartAnalysis]) -> dict[str, Selection]:
    """The kept parts' latencies, to select in where they are."""
    return {
        name: Selection(lambda fn, *args, name=name: kept.ask(values_of_part, name, fn, *args))
        for name in ("latency", "latency_min")
    }


def gap_of_part(pa: PartAnalysis) -> GapPartial:
    return pa.gap


def ends_of_part(pa: PartAnalysis) -> tuple[int, pd.DataFrame]:
    return pa.last, pa.crossing


def windows_of_part(pa: PartAnalysis) -> list[WindowPartial]:
    return pa.windows


def latencies_of_part(
    pa: PartAnalysis, i: int, windows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return window_latencies(pa.window_latencies[i], windows)


def joined_windows(
    kept: Kept[PartAnalysis],
    partials: list[MetricPartial],
    windows: Sequence[float],
    thresholds: Mapping[str, float | str] | None,
) -> dict[float, pd.DataFrame]:
    """Per window length, :func:`~.metrics.window_metrics` of the whole trace from the
    kept parts' window partials (:func:`.window_partials.joined`): the latencies of the
    windows that several parts have wake-ups of asked of those parts."""
    if not windows:
        return {}
    per_part = kept.ask(windows_of_part)
    out = {}
    for i, w in enumerate(windows):
        parts = [p[i] for p in per_part]
        shared = shared_windows(parts)
        values = kept.ask(latencies_of_part, i, shared) if len(shared) else []
        win, lo, hi = (
            np.concatenate([v[k] for v in values]) if values else np.zeros(0, np.int64)
            for k in range(3)
        )
        out[w] = joined_window_metrics(
            parts, partials, (win, lo, hi), thresholds, kept_selections(kept)
        )
    return out


def analysed(
    plan: Plan,
    overrides: Mapping[str, float | str] | None = None,
    progress: Any = None,
    windows: Sequence[float] = (),
) -> Kept[PartAnalysis]:
    """Every part's :class:`PartAnalysis`, kept where it was made: each part modelled
    once, given the whole trace's pinned tasks (under the thresholds ``overrides``; with
    the window partials of the window lengths ``windows``);
    then again, given them (:attr:`schedwake.model.whole.WholeFacts.waits_beyond`), each
    part that a woken wait crosses whose run comes after the part's last event (few:
    a wait longer than the part, whose run the part does not read on to)."""
    from ..detect import thresholds

    span = (int(plan.meta.first_ts_ns or 0), int(plan.meta.last_ts_ns or 0))
    job = Analyse(
        plan.pinned(int(thresholds(overrides)["iwr_pinned_min_runs"])), tuple(windows), span
    )
    kept = plan.keep(job, progress)
    ends = kept.ask(ends_of_part)
    beyond = waits_beyond(
        [(s.t0, s.t1) for s in plan.specs], [e[0] for e in ends], [e[1] for e in ends]
    )
    again = {
        i: dataclasses.replace(
            plan.specs[i], facts=dataclasses.replace(plan.specs[i].facts, waits_beyond=b)
        )
        for i, b in enumerate(beyond)
        if b is not None
    }
    return kept.redone(job, again) if again else kept


@dataclass
class PartitionedAnalysis:
    """What :class:`schedwake.analysis.Analysis` gives of a whole trace, joined from its
    time parts (:func:`analyze_parts`): the same sections, equal to them, without the
    trace ever loaded whole. Renders as an Analysis does (:mod:`schedwake.report.analyze`)."""

    #: The trace's facts (:func:`schedwake.summary.summary`) and the topology used.
    facts: dict[str, Any]
    cpu_map: Topology
    findings: list[Finding]
    metrics: dict[str, Any]
    bounds: dict[str, list]
    caveats: list[str]
    task_states: dict[str, Any]
    longest_wake_to_run: dict[str, Any] | None
    longest_preempted_wait: dict[str, Any] | None
    tail_waits: dict[str, Any] | None
    #: Not given from parts (``--pid --waits``): always None.
    task_waits: None = None
    focused: bool = False
    #: Per window length asked for, the whole trace's :func:`~.metrics.window_metrics`.
    window_metrics: dict[float, pd.DataFrame] = dataclasses.field(default_factory=dict)
    #: The thresholds the findings were judged by (the defaults and the overrides).
    thresholds: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def topology(self) -> dict[str, Any]:
        return topology_facts(self.cpu_map)

    def to_dict(self) -> dict[str, Any]:
        """:meth:`schedwake.analysis.Analysis.to_dict`."""
        return plain(document(self))


def analyze_parts(
    plan: Plan,
    thresholds: Mapping[str, float | str] | None = None,
    detectors: Sequence[str] | None = None,
    progress: Any = None,
    windows: Sequence[float] = (),
) -> PartitionedAnalysis:
    """:func:`schedwake.analysis.analyze` of the trace ``plan`` cuts in parts
    (:func:`schedwake.partition.plan`), from the parts: each read and modelled where
    the plan runs them (a Dask cluster, or here), the client joining what they give.
    ``thresholds``: overrides by name, as ``analyze`` takes them; ``detectors``: the
    names to run (None: all); ``progress`` gets the share of the parts done;
    ``windows``: window lengths (s) whose :func:`~.metrics.window_metrics` to give too
    (:attr:`PartitionedAnalysis.window_metrics`).

    Not given from parts (:class:`.partials.NotJoinedError`): the referee (the kernel's
    counters beside the trace), ``--pid``, ``--waits`` and slices, which
    :func:`schedwake.analysis.analyze` gives of a loaded trace."""
    from ..detect import Thresholds
    from ..detect import thresholds as resolved
    from .part_findings import findings as joined_findings

    used = Thresholds(check_thresholds(resolved(thresholds)))
    kept = analysed(plan, thresholds, progress, windows)
    j = Joined(plan, kept.ask(summary_of_part))
    partials = kept.ask(metrics_of_part)
    per_window = joined_windows(kept, partials, windows, thresholds)
    values = kept_selections(kept)
    gaps = kept.ask(gap_of_part)
    metrics = joined_metrics(partials, gaps=gaps, thresholds=thresholds, selections=values)
    bounds = joined_bounds(partials, values)
    found = joined_findings(plan, kept.select(findings_of_part), j.model_caveats(), used, detectors)
    waits = waits_sections(plan, kept.select(waits_of_part))
    kept.release()
    facts = j.trace_facts()
    facts.pop("topology")
    return PartitionedAnalysis(
        facts=facts,
        cpu_map=plan.topology,
        findings=found,
        metrics=metrics,
        bounds=bounds,
        caveats=j.caveats() + bounds_caveats(bounds, metrics),
        task_states=j.task_states(),
        window_metrics=per_window,
        thresholds=used,
        **waits,
    )


def analyze_file(
    path: str | Path,
    parts: int | str,
    options: ingest.ReadOptions | None = None,
    *,
    client: Any = None,
    topology_file: str | Path | None = None,
    llc: Sequence[str] | None = None,
    thresholds: Mapping[str, float | str] | None = None,
    detectors: Sequence[str] | None = None,
    progress: Any = None,
) -> PartitionedAnalysis:
    """:func:`analyze_parts` of the file ``path`` cut into ``parts`` time parts (an int,
    or ``"auto"``: as many as fit the workers' memory, at least one per worker,
    :func:`schedwake.partition.driver.auto_parts`), read with ``options`` (the events,
    reader, ...) on the Dask ``client``'s workers (None: here, one part after the other).
    ``topology_file``, ``llc``: the CPU map (None: the file's own, or inferred).
    ``progress`` gets the share done. Refused (:class:`.partials.NotJoinedError`): a
    trace with the kernel's counters beside it (the referee is not judged from parts)."""
    from ..counters import read_beside
    from ..partition import plan
    from ..partition.driver import auto_parts, workers_memory

    if read_beside(str(path)) is not None:
        raise NotJoinedError(
            "the kernel's counters beside the trace: the referee is not judged from parts "
            "(move them away, or analyse the trace whole)"
        )
    if parts == "auto":
        limit, workers = workers_memory(client)
        parts = auto_parts(path, options, limit, workers)
    elif not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
        raise OptionError("parts", repr(parts), "an int >= 1, or 'auto'")

    def share(lo: float, hi: float) -> Any:
        return None if progress is None else (lambda f: progress(lo + (hi - lo) * f))

    the_plan = plan(
        path,
        parts,
        options,
        topology_file=topology_file,
        llc=llc,
        client=client,
        progress=share(0.0, 0.4),
    )
    out = analyze_parts(the_plan, thresholds, detectors, share(0.4, 0.95))
    if progress is not None:
        progress(1.0)
    return out
