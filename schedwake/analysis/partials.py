"""The metrics of one trace from its time parts (docs/design-partitioned-analysis.md,
'What is built (step 3)'): what each part gives (:func:`metric_partial`, run where the
part is) and how the client joins the parts' partials into :func:`trace_metrics
<schedwake.analysis.metrics.trace_metrics>` and :func:`metric_bounds
<schedwake.analysis.metrics.metric_bounds>` of the whole trace, equal to them.

A partial is small: counts, sums per CPU and per task, and the part's wake-to-run
latencies sorted (:class:`SortedValues`), which stay where the part is: the client
finds the percentiles' order statistics by a selection over the parts
(:func:`order_statistic`: counts of the values at most a candidate, a few rounds), not
by merging them. Each part counts only the rows it owns
(:func:`schedwake.partition.owned_masks`), so that every row of the whole trace's
model is counted once; the masks over the wake-ups (ping-pong episodes, would-stack,
futile) are read of the owned rows (tests/test_partition_metrics.py checks them
against the whole trace's).

Thresholds that judge counts over the whole trace are judged once, on the client: the
storm's (each (CPU, task, kworker, work function)'s preemptions against its (CPU,
kworker, work function)'s switch-outs, then the (CPU, task) pairs' preemptions: the
parts give those counts, :meth:`JoinedMetrics.storm`); futile wake-ups whose kworker
returns past a part's horizon are settled by the later parts' first switch-ins
(:meth:`JoinedMetrics.futile`). The idle-while-runnable share takes a second round: the
client judges the pinned tasks over the whole trace from the first partials
(:meth:`JoinedMetrics.pinned`: per task its switch-ins per CPU), and each part gives its
gap time inside its span with them (:func:`gap_partial`).

The partials assume a model of every task (not ``--pid``'s: :class:`NotJoinedError`)
and a whole trace, not a ``--time`` slice (whose thresholds are scaled to it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..model.masks import (
    episodes_mask,
    futile_mask,
    kworker_preemptions,
    preempting_wakeups,
    would_stack_mask,
)
from ..model.task_states import (
    CLASSES,
    StateSums,
    focused,
    joined_names,
    last_names,
    seconds,
    totals_shares,
)
from ..model.tasks import PERCPU_KTHREAD, name_class
from ..model.visits import SwitchIns, pinned_of, switch_ins, task_visits
from ..partition import in_span, model_table, owned_masks
from .metrics import (
    CPUS_VISITED_MIN_RUNS,
    CROSS_LLC,
    METRICS,
    latencies,
    within_latency,
    within_share,
)

if TYPE_CHECKING:
    from ..model import Model
    from ..trace import Trace

#: Every key of :func:`trace_metrics` (but ``duration_s`` and the benchmark's), which the
#: parts' partials give.
JOINED = tuple(m.key for m in METRICS.values() if m.per_trace is not None)

_WAKE = ("sched_waking", "sched_wakeup")


class NotJoinedError(NotImplementedError):
    """What the parts' partials cannot give: a model focused on some tasks (``--pid``),
    the idle-while-runnable share without the parts' gap partials."""


@dataclass(frozen=True)
class SortedValues:
    """One part's values, sorted: what the selection of an order statistic asks of a
    part (each a binary search or an index, cheap where the part is)."""

    values: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> SortedValues:
        return cls(np.sort(np.asarray(values, dtype=np.int64)))

    def __len__(self) -> int:
        return len(self.values)

    def count_le(self, x: int) -> int:
        """How many values are at most ``x``."""
        return int(np.searchsorted(self.values, x, "right"))

    def count_lt(self, x: int) -> int:
        """How many values are less than ``x``."""
        return int(np.searchsorted(self.values, x, "left"))

    def kth(self, k: int) -> int:
        """The ``k``-th smallest value (from 0)."""
        return int(self.values[k])

    def first_above(self, x: int) -> int | None:
        """The least value greater than ``x`` (None: none)."""
        at = self.count_le(x)
        return int(self.values[at]) if at < len(self.values) else None


# -- what a selection asks of a part's sorted values (run where the values are) ---------


def extent_of(v: SortedValues) -> tuple[int, int, int]:
    """How many values, the least and the greatest (0, 0 without values)."""
    if not len(v):
        return 0, 0, 0
    return len(v), int(v.values[0]), int(v.values[-1])


def histogram_of(v: SortedValues, lo: int, hi: int, bins: int) -> tuple[int, np.ndarray]:
    """The values below ``lo``, and per bin of ``bins`` about equal integer bins that
    cover ``lo..hi`` (:func:`bin_edges`), its values."""
    at = np.searchsorted(v.values, bin_edges(lo, hi, bins), "left")
    return int(at[0]), np.diff(at)


def values_within(v: SortedValues, lo: int, hi: int) -> np.ndarray:
    """The values from ``lo`` to ``hi`` (both included), sorted."""
    return v.values[v.count_lt(lo) : v.count_le(hi)]


def count_at_most(v: SortedValues, x: int) -> int:
    return v.count_le(x)


def first_value_above(v: SortedValues, x: int) -> int | None:
    return v.first_above(x)


def bin_edges(lo: int, hi: int, bins: int) -> np.ndarray:
    """``bins + 1`` integer edges from ``lo`` to ``hi + 1``, bin ``i`` holding the values
    ``edges[i] <= x < edges[i + 1]`` (in Python integers: no overflow)."""
    width = hi - lo + 1
    return np.array([lo + width * i // bins for i in range(bins + 1)], dtype=np.int64)


class Selection:
    """The parts' sorted values, asked for what a selection needs (:func:`order_statistic`,
    :func:`percentile`) and never gathered: ``ask(fn, *args)`` gives ``fn(values, *args)``
    of every part's :class:`SortedValues`, where they are (:meth:`local` here; the
    analysis of a trace file asks its kept parts on their workers)."""

    #: The bins of a histogram round; a range of values is fetched once it holds at most
    #: ``fetch_at_most`` of them.
    BINS = 4096

    def __init__(self, ask: Any, fetch_at_most: int = 1 << 16) -> None:
        self.ask = ask
        self.fetch_at_most = fetch_at_most
        self._extents: list[tuple[int, int, int]] | None = None
        self._all: SortedValues | None = None  # (every value, when they are few)
        self._found: dict[int, int] = {}  # (the order statistics found, by rank)

    @classmethod
    def local(cls, parts: Sequence[SortedValues], fetch_at_most: int = 1 << 16) -> Selection:
        return cls(lambda fn, *args: [fn(p, *args) for p in parts], fetch_at_most)

    @property
    def extents(self) -> list[tuple[int, int, int]]:
        if self._extents is None:
            self._extents = list(self.ask(extent_of))
        return self._extents

    def __len__(self) -> int:
        return sum(e[0] for e in self.extents)

    def order_statistic(self, k: int) -> int:
        """The ``k``-th smallest (from 0) of all the parts' values: histogram rounds over
        the range that holds it (each narrows it to one bin) until it holds few enough
        values to fetch, then those values (a handful of rounds, never all values)."""
        n = len(self)
        if not 0 <= k < n:
            raise IndexError(f"rank {k} of {n} values")
        if k in self._found:
            return self._found[k]
        few = self.few()
        if few is not None:
            return few.kth(k)
        held = [e for e in self.extents if e[0]]
        lo, hi = min(e[1] for e in held), max(e[2] for e in held)
        below, inside = 0, n  # (values less than lo; values from lo to hi)
        while inside > self.fetch_at_most and hi > lo:
            bins = min(self.BINS, hi - lo + 1)
            edges = bin_edges(lo, hi, bins)
            counts = sum(c for _, c in self.ask(histogram_of, lo, hi, bins))
            cum = below + np.cumsum(counts)
            b = int(np.searchsorted(cum, k, "right"))
            below = below if b == 0 else int(cum[b - 1])
            lo, hi, inside = int(edges[b]), int(edges[b + 1]) - 1, int(counts[b])
        values = np.sort(np.concatenate(self.ask(values_within, lo, hi)))
        self._found[k] = int(values[k - below])
        return self._found[k]

    def few(self) -> SortedValues | None:
        """Every value, sorted, when there are at most ``fetch_at_most`` (fetched once:
        the selections of a small trace are then answered here); else None."""
        n = len(self)
        if n > self.fetch_at_most or n == 0:
            return None
        if self._all is None:
            held = [e for e in self.extents if e[0]]
            lo, hi = min(e[1] for e in held), max(e[2] for e in held)
            self._all = SortedValues.of(np.concatenate(self.ask(values_within, lo, hi)))
        return self._all

    def count_le(self, x: int) -> int:
        few = self.few()
        return few.count_le(x) if few is not None else sum(self.ask(count_at_most, x))

    def first_above(self, x: int) -> int | None:
        few = self.few()
        if few is not None:
            return few.first_above(x)
        found = [v for v in self.ask(first_value_above, x) if v is not None]
        return min(found) if found else None


def order_statistic(parts: Sequence[SortedValues] | Selection, k: int) -> int:
    """The ``k``-th smallest (from 0) of all the parts' values, without gathering them
    (:meth:`Selection.order_statistic`)."""
    sel = parts if isinstance(parts, Selection) else Selection.local(parts)
    return sel.order_statistic(k)


def percentile(parts: Sequence[SortedValues] | Selection, pct: float) -> float | None:
    """``np.percentile`` of all the parts' values (its default, linear interpolation,
    done as NumPy does it, so the float is the same), from the two order statistics it
    interpolates (:func:`order_statistic`); None without values."""
    sel = parts if isinstance(parts, Selection) else Selection.local(parts)
    n = len(sel)
    if n == 0:
        return None
    virtual, below, above = quantile_ranks(n, np.true_divide(pct, 100))
    a = np.int64(sel.order_statistic(below))
    b = a
    if above != below and sel.count_le(int(a)) <= above:
        # (the next rank: the least value above ``a``, one round)
        nxt = sel.first_above(int(a))
        assert nxt is not None
        b = np.int64(nxt)
    return interpolated(a, b, float(virtual - below))


def quantile_ranks(n: int, q: float) -> tuple[float, int, int]:
    """NumPy's linear quantile ``q`` of ``n`` values: its virtual index (from 0) and
    the ranks of the two order statistics it interpolates between."""
    virtual = (n - 1) * q
    if virtual >= n - 1:
        return virtual, n - 1, n - 1
    below = int(np.floor(virtual))
    return virtual, below, below + 1


def interpolated(a: np.int64, b: np.int64, gamma: float) -> float:
    """NumPy's linear interpolation from ``a`` to ``b`` at ``gamma`` (its own float
    operations, so the value is the same to the last bit)."""
    diff = b - a
    out = np.subtract(b, diff * (1 - gamma)) if gamma >= 0.5 else np.add(a, diff * gamma)
    return float(out)


@dataclass(frozen=True)
class MetricPartial:
    """What one part gives the client for the metrics (:func:`metric_partial`)."""

    t0: int | None
    t1: int | None
    #: The trace's first timestamp (every part's), its last (the last part's only).
    first_ts: int
    last_ts: int | None
    #: The events the part has records of in [t0, t1).
    has: frozenset[str]
    #: Counts of the rows it owns.
    counts: dict[str, int]
    #: Its switches in [t0, t1): per (task, CPU) the task's switch-ins there, each
    #: task's last name, the per-CPU kthreads', each CPU's first.
    switch_ins: SwitchIns
    #: The owned wake-ups whose futility later parts settle (:func:`metric_partial`):
    #: the CPU, the kworker their run preempted and their task (columns cpu, kworker,
    #: task).
    futile_open: pd.DataFrame
    #: The storm's counts: the kworker preemptions in [t0, t1) per (cpu, task, kw, fn)
    #: (the work function's name, "" without one): n and the first one's time; every
    #: switch-out in [t0, t1) per (cpu, kw, fn) (kw: the task switched out): n.
    preemptions: pd.DataFrame
    switchouts: pd.DataFrame
    #: The owned wake-ups' latencies (ns): proven (upper) and least (lower), sorted.
    latency: SortedValues
    latency_min: SortedValues
    #: Per CPU, of the owned occupancy rows (running, idle, unknown): running ns,
    #: unknown ns, the latest end, the earliest start.
    busy: pd.DataFrame
    #: The ns of the owned task states per task, and the tasks' last names.
    states: pd.DataFrame
    names: list[dict[int, str]]
    bench: dict[str, Any]
    #: The latencies stayed where the part is (:attr:`latency` and :attr:`latency_min`
    #: are empty here): the client asks them through :class:`Selection`\ s.
    values_kept: bool = False

    def without_values(self) -> MetricPartial:
        """This partial for the client: its latencies left where the part is."""
        empty = SortedValues(np.zeros(0, dtype=np.int64))
        return dataclasses.replace(self, latency=empty, latency_min=empty, values_kept=True)


def metric_partial(part: Trace, t0: int | None, t1: int | None) -> MetricPartial:
    """The metrics' partial of the part ``[t0, t1)`` (a trace from
    :func:`schedwake.partition.part_of`, or read from the file), from its events in
    ``[t0, t1)`` and the model rows it owns."""
    from .metrics import bench_metrics

    model = part.model
    if model.pids is not None:
        raise NotJoinedError("the metrics of a model focused on some tasks (--pid)")
    ev = model.events
    has = frozenset(
        name
        for name in part.events
        if part.has_records(name)
        and in_span(part.table(name).column("ts").to_numpy(), t0, t1).any()
    )
    counts: dict[str, int] = {}
    # wake-ups: the owned rows, and the masks over them
    owned = owned_masks(model, t0, t1, ("wakeups", "migrations", "occupancy", "task_states"))
    w = model_table(model, "wakeups")
    mine = owned["wakeups"]
    counts["wakeups"] = int(mine.sum())
    counts["migrated"] = int(w["migrated"].to_numpy()[mine].sum()) if len(w) else 0
    counts["pingpong"] = int((episodes_mask(w) & mine).sum())
    counts["would_stack"] = int((would_stack_mask(model) & mine).sum())
    counts["futile"] = int((futile_mask(model) & mine).sum()) if ev.switch is not None else 0
    # a futile wake-up the part cannot settle: its run preempted a kworker and slept, and
    # neither switched in on that CPU again by the part's horizon (the later parts'
    # first switch-ins settle it: JoinedMetrics.futile)
    rows, j = preempting_wakeups(model, "open")
    own = mine[rows]
    kp = kworker_preemptions(model)
    at_open = np.flatnonzero(kp["open"])[j[own]] if len(rows) else np.zeros(0, np.int64)
    futile_open = pd.DataFrame(
        {k: np.asarray(kp[k])[at_open].astype(np.int64) for k in ("cpu", "kworker", "task")}
        if len(at_open)
        else {k: np.zeros(0, np.int64) for k in ("cpu", "kworker", "task")}
    )
    lo, hi = latencies(w[mine]) if len(w) else (np.zeros(0, np.int64),) * 2
    # migrations
    mig = model_table(model, "migrations")
    mm = owned["migrations"]
    counts["migrations"] = int(mm.sum())
    if len(mig):
        cause, topo = mig["cause"].to_numpy()[mm], mig["topology_class"].to_numpy()[mm]
    else:
        cause = topo = np.zeros(0, dtype=object)
    counts["wakeup_migrations"] = int((cause == "wakeup").sum())
    counts["load_balance_migrations"] = int((cause == "load_balance").sum())
    counts["cross_llc_migrations"] = int(np.isin(topo, CROSS_LLC).sum())
    # switches: the part's own, and the breaks of its CPUs' chains it holds
    comp = model.completeness
    broken = comp.switch_end[~comp.switch_chain_ok]
    counts["missing_switches"] = int(in_span(np.asarray(broken, np.int64), t0, t1).sum())
    ins = switch_ins(model, t0, t1)
    counts["switches"] = ins.count
    preemptions, switchouts = _storm_counts(model, t0, t1)
    occ = model_table(model, "occupancy")
    busy = _busy_sums(occ[owned["occupancy"]]) if len(occ) else _busy_sums(occ)
    iv = model_table(model, "task_states")
    states = StateSums.of(focused(model, iv[owned["task_states"]]))
    return MetricPartial(
        t0=t0,
        t1=t1,
        first_ts=int(ev.first_ts),
        last_ts=int(ev.last_ts) if t1 is None else None,
        has=has,
        counts=counts,
        switch_ins=ins,
        futile_open=futile_open,
        preemptions=preemptions,
        switchouts=switchouts,
        latency=SortedValues.of(hi),
        latency_min=SortedValues.of(lo),
        busy=busy,
        states=states.per_task,
        names=last_names(ev, t0, t1),
        bench=bench_metrics(part),
    )


@dataclass(frozen=True)
class GapPartial:
    """What one part gives for the idle-while-runnable share, once the client has judged
    the pinned tasks over the whole trace (:meth:`JoinedMetrics.pinned`)."""

    #: The gap time in [t0, t1), ns, and the LLCs of two CPUs or more.
    gap_ns: int
    llcs: int


def gap_partial(
    part: Trace,
    t0: int | None,
    t1: int | None,
    pinned: np.ndarray,
    segments: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
) -> GapPartial:
    """The part's :class:`GapPartial`: the gap segments of its model
    (:func:`schedwake.detect.idle_while_runnable.gap_segments`, its waits of the
    ``pinned`` tasks left out; ``segments`` when found already) inside ``[t0, t1)``."""
    from ..detect import resolve
    from ..detect.idle_while_runnable import gap_segments, summarize

    segs = segments
    if segs is None:
        segs, _ = gap_segments(part.model, resolve(part, None), pinned)
    gap = sum(g.ns for g in summarize(segs, t0, t1).values())
    return GapPartial(gap, len(segs))


def _storm_counts(
    model: Model, t0: int | None, t1: int | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:attr:`MetricPartial.preemptions` and :attr:`MetricPartial.switchouts`."""
    from ..detect.cswitch_storm import unit_counts

    s = model.events.switch
    if s is None:
        return unit_counts(model)
    return unit_counts(model, in_span(s["ts"].to_numpy(dtype=np.int64), t0, t1))


def _pairs_with(pair: pd.MultiIndex, n: np.ndarray, least: float) -> np.ndarray:
    """Per row, whether its pair's counts ``n`` add up to ``least`` or more."""
    total = pd.Series(n, index=pair).groupby(level=[0, 1]).sum()
    return total.reindex(pair).to_numpy() >= least


def _busy_sums(occ: pd.DataFrame) -> pd.DataFrame:
    """Per CPU, of the occupancy rows running, idle or unknown: running and unknown ns,
    the latest end and the earliest start (index cpu)."""
    cols = ["running_ns", "unknown_ns", "end_max", "start_min"]
    if not len(occ):
        return pd.DataFrame({c: [] for c in cols}, dtype=np.int64)
    running = (occ["state"] == "running").to_numpy()  # (categorical: compared by code)
    unknown = (occ["state"] == "unknown").to_numpy()
    sel = running | unknown | (occ["state"] == "idle").to_numpy()
    cpu = occ["cpu"].to_numpy().astype(np.int64)[sel]
    start = occ["start_ts"].to_numpy(dtype=np.int64)[sel]
    end = occ["end_ts"].to_numpy(dtype=np.int64)[sel]
    d = end - start
    f = pd.DataFrame(
        {
            "cpu": cpu,
            "running_ns": np.where(running[sel], d, 0),
            "unknown_ns": np.where(unknown[sel], d, 0),
            "end_max": end,
            "start_min": start,
        }
    )
    g = f.groupby("cpu")
    return pd.DataFrame(
        {
            "running_ns": g["running_ns"].sum(),
            "unknown_ns": g["unknown_ns"].sum(),
            "end_max": g["end_max"].max(),
            "start_min": g["start_min"].min(),
        }
    )


@dataclass(frozen=True)
class JoinedMetrics:
    """The whole trace's measures from its parts' partials (in time order), under the
    thresholds ``overrides`` (:func:`schedwake.detect.thresholds`; None: the defaults)."""

    parts: Sequence[MetricPartial]
    overrides: Mapping[str, float | str] | None = None
    #: The parts' latencies (``latency``, ``latency_min``) where they are, when the
    #: partials came without them (:meth:`MetricPartial.without_values`).
    selections: Mapping[str, Selection] | None = None

    @property
    def th(self) -> dict[str, float]:
        from ..detect import thresholds

        return thresholds(self.overrides)

    def __post_init__(self) -> None:
        last = [p for p in self.parts if p.t1 is None]
        if len(last) != 1 or self.parts[-1].t1 is not None:
            raise ValueError("the partials of every part, in time order (the last to the end)")
        if self.selections is None and any(p.values_kept for p in self.parts):
            raise ValueError("partials without their latencies need the selections of them")

    def values(self, name: str) -> Selection:
        """The parts' sorted values ``name`` (``latency``, ``latency_min``) to select in."""
        if self.selections is not None:
            return self.selections[name]
        return Selection.local([getattr(p, name) for p in self.parts])

    def count(self, name: str) -> int:
        return sum(p.counts[name] for p in self.parts)

    @property
    def duration_ns(self) -> int:
        """The whole trace's (:attr:`schedwake.model.Model.duration_ns`): from its first
        timestamp (every part's) to its last (the last part's)."""
        last = self.parts[-1].last_ts
        assert last is not None
        return max(last - self.parts[0].first_ts, 0)

    @property
    def dur_s(self) -> float:
        return max(self.duration_ns, 1) / 1e9

    def per_s(self, n: int) -> float:
        return n / self.dur_s

    def has_records(self, name: str) -> bool:
        return any(name in p.has for p in self.parts)

    def unmet(self, needs: tuple[tuple[str, ...], ...]) -> bool:
        return any(not any(self.has_records(e) for e in group) for group in needs)

    def task_visits(self) -> tuple[pd.Series, pd.Series] | None:
        """Per task (index: its life key, sorted), its switch-ins and the CPUs it was
        switched in on; None without switch-ins."""
        return task_visits([p.switch_ins.visits for p in self.parts])

    def pinned(self, min_runs: int | None = None) -> np.ndarray:
        """:func:`schedwake.detect.idle_while_runnable.pinned_pids` of the whole trace
        (but the idle task): the tasks seen on one CPU only over ``min_runs`` switch-ins
        or more (None: ``iwr_pinned_min_runs``), and those named as a
        per-CPU kthread; what :func:`gap_partial` is given."""
        if min_runs is None:
            min_runs = int(self.th["iwr_pinned_min_runs"])
        return pinned_of([p.switch_ins for p in self.parts], min_runs)

    def storm_units(self) -> pd.DataFrame | None:
        """The storm's units of the whole trace judged (:func:`schedwake.detect.
        cswitch_storm.storm_measure`), its thresholds judged once here: per (cpu, task,
        kw, fn) its preemptions ``pre``, the first one's time ``first``, whether they are
        counted (``mine``: a user task's, of a (CPU, task) pair with enough) and whether
        the unit is a storm unit of the task (``storm``: each (CPU, task, kworker, work
        function)'s preemptions against its (CPU, kworker, work function)'s switch-outs,
        then the (CPU, task) pairs' counts); None without kworker preemptions."""
        from ..detect import Thresholds
        from ..detect.cswitch_storm import units
        from ..model.lives import pid_of
        from ..model.tasks import USER

        th = self.th
        frames = [p.preemptions for p in self.parts if len(p.preemptions)]
        if not frames:
            return None
        pre = pd.concat(frames).groupby(["cpu", "task", "kw", "fn"])
        summed = pd.DataFrame({"n": pre["n"].sum(), "first": pre["first"].min()}).reset_index()
        tri = units(summed, self.switchouts().reset_index(), Thresholds(th))
        tri = tri.assign(first=summed["first"].to_numpy())
        storm = tri["storm"].to_numpy().copy()
        names: dict[int, str] = {}
        for p in self.parts:
            names.update(p.switch_ins.names)
        task = tri["task"].to_numpy()
        tasks = np.unique(task)
        user = tasks[
            [name_class(names.get(int(t), "?"), int(pid_of(int(t)))) == USER for t in tasks]
        ]
        least = max(th["storm_min_preemptions"], 1)
        pair = pd.MultiIndex.from_arrays([tri["cpu"].to_numpy(), task])
        n = tri["pre"].to_numpy()
        mine = np.isin(task, user)
        mine &= _pairs_with(pair, n * mine, least)
        storm &= mine
        storm &= _pairs_with(pair, n * storm, least)
        return tri.assign(mine=mine, storm=storm)

    def switchouts(self) -> pd.Series:
        """Every switch-out of the whole trace per (cpu, kw, fn): n."""
        outs = pd.concat([p.switchouts for p in self.parts if len(p.switchouts)])
        return outs.groupby(["cpu", "kw", "fn"])["n"].sum()

    def storm(self) -> tuple[int, float | None]:
        """The storm's preemptions and preempted share of the whole trace
        (:func:`schedwake.detect.cswitch_storm.storm_measure`), of its units judged
        (:meth:`storm_units`)."""
        tri = self.storm_units()
        if tri is None or not tri["mine"].any():
            return 0, None
        n = tri["pre"].to_numpy()
        # the units in the order of their first preemption (the whole trace's ids)
        t = tri[tri["mine"].to_numpy()]
        first = t.groupby(["cpu", "kw", "fn"])["first"].min().sort_values(kind="stable")
        upre = t.groupby(["cpu", "kw", "fn"])["pre"].sum().reindex(first.index)
        uouts = self.switchouts().reindex(first.index).fillna(0).to_numpy().astype(np.float64)
        p = upre.to_numpy().astype(np.float64)
        share = float((p**2 / np.maximum(uouts, p)).sum() / p.sum())
        return int(n[tri["storm"].to_numpy()].sum()), share

    def futile_settled(self) -> list[np.ndarray]:
        """Per part, of the wake-ups it left open (:attr:`MetricPartial.futile_open`),
        those that were futile: whose kworker switches in again on the CPU before their
        task does, in the first later part where either does."""
        from ..detect.cswitch_storm import settle

        out = []
        for i, p in enumerate(self.parts):
            cand = p.futile_open
            if not len(cand):
                out.append(np.zeros(0, dtype=bool))
                continue
            later = [
                q.switch_ins.visits.set_index(["task", "cpu"])["first"] for q in self.parts[i + 1 :]
            ]
            futile, _ = settle(cand.assign(run_cpu=cand["cpu"]), "kworker", "task", later)
            out.append(np.asarray(futile, dtype=bool))
        return out

    def futile(self) -> int:
        """The futile wake-ups of the whole trace: each part's, and those it left open
        that later parts settled (:meth:`futile_settled`)."""
        return self.count("futile") + sum(int(f.sum()) for f in self.futile_settled())

    def cpus_visited(self) -> float | None:
        """:func:`schedwake.analysis.metrics._cpus_visited` of the whole trace."""
        visited = self.task_visits()
        if visited is None:
            return None
        size, nunique = visited
        names: dict[int, str] = {}
        for p in self.parts:
            names.update(p.switch_ins.names)
        keep = size.index[(size >= CPUS_VISITED_MIN_RUNS).to_numpy()]
        if not len(keep):
            return None
        cls = np.array([name_class(names[int(t)]) for t in keep], dtype=object)
        sel = pd.Series(nunique.loc[keep].to_numpy()[cls != PERCPU_KTHREAD])
        return float(sel.mean()) if len(sel) else None

    def latency_pct_bounds(self, pct: float) -> tuple[float | None, float | None]:
        """:meth:`schedwake.analysis.metrics.TraceInputs.latency_pct_bounds`."""
        lo = percentile(self.values("latency_min"), pct)
        hi = percentile(self.values("latency"), pct)
        return (None if lo is None else lo / 1e3), (None if hi is None else hi / 1e3)

    def busy_bounds(self) -> dict[str, tuple[float, float]]:
        """:func:`schedwake.analysis.metrics.busy_bounds` of the whole trace."""
        frames = [p.busy for p in self.parts if len(p.busy)]
        if not frames:
            return {}
        b = pd.concat(frames).groupby(level=0)
        running, unknown = b["running_ns"].sum(), b["unknown_ns"].sum()
        end, start = b["end_max"].max(), b["start_min"].min()
        first: dict[int, int] = {}
        for p in self.parts:
            for c, t in p.switch_ins.first_switch.items():
                first[c] = min(first.get(c, t), t)
        out: dict[str, tuple[float, float]] = {}
        for c in sorted(int(c) for c in running.index):
            busy, unk = int(running[c]), int(unknown[c])
            span = max(int(end[c]) - first.get(c, int(start[c])), 1)
            lo = round(float(busy) / span, 6)
            out[str(c)] = (lo, round(float(busy + unk) / span, 6) if unk else lo)
        return out

    def runnable_shares(self) -> dict[str, float | None]:
        """:func:`schedwake.model.task_states.runnable_shares` of the whole trace."""
        per_task = StateSums.add(
            [StateSums(p.states, None, p.states.iloc[:0]) for p in self.parts]
        ).per_task
        if not len(per_task):
            return {c: None for c in CLASSES}
        return totals_shares(seconds(per_task), joined_names([p.names for p in self.parts]))


def _per_trace(j: JoinedMetrics) -> dict[str, Any]:
    """Each joined key's value, as :data:`schedwake.analysis.metrics.METRICS`'
    ``per_trace`` computes it of the whole trace."""
    wakeups, pingpong, would_stack = j.count("wakeups"), j.count("pingpong"), j.count("would_stack")
    switches = j.count("switches") if j.has_records("sched_switch") else 0
    return {
        "wakeups": wakeups,
        "migrations": j.count("migrations"),
        "migrations_per_s": lambda: j.per_s(j.count("migrations")),
        "wakeup_migrations_per_s": lambda: j.per_s(j.count("wakeup_migrations")),
        "load_balance_migrations_per_s": lambda: j.per_s(j.count("load_balance_migrations")),
        "cross_llc_migrations_per_s": lambda: j.per_s(j.count("cross_llc_migrations")),
        "wakeup_migration_share": lambda: j.count("migrated") / wakeups if wakeups else None,
        "pingpong_episodes": pingpong,
        "pingpong_episodes_per_s": lambda: j.per_s(pingpong),
        "pingpong_would_stack": would_stack,
        "pingpong_would_stack_per_s": lambda: j.per_s(would_stack),
        "pingpong_would_stack_share": lambda: would_stack / pingpong if pingpong else None,
        "cpus_visited_per_task": j.cpus_visited,
        "context_switches_per_s": lambda: j.per_s(switches + j.count("missing_switches")),
        "futile_wakeups_per_s": lambda: j.per_s(j.futile()),
        "storm_kworker_preemptions_per_s": lambda: j.per_s(j.storm()[0]),
        "storm_preempted_share": lambda: j.storm()[1],
        "wake_to_run_p50_us": lambda: within_latency(*j.latency_pct_bounds(50)),
        "wake_to_run_p90_us": lambda: within_latency(*j.latency_pct_bounds(90)),
        "wake_to_run_p99_us": lambda: within_latency(*j.latency_pct_bounds(99)),
        "runnable_share_user": lambda: j.runnable_shares()["user"],
        "runnable_share_kworker": lambda: j.runnable_shares()["kworker"],
        "runnable_share_kthread": lambda: j.runnable_shares()["kthread"],
        "busy_share": lambda: {c: within_share(*b) for c, b in j.busy_bounds().items()},
    }


def joined_metrics(
    parts: Sequence[MetricPartial],
    *,
    only: Collection[str] | None = None,
    gaps: Sequence[GapPartial] | None = None,
    thresholds: Mapping[str, float | str] | None = None,
    selections: Mapping[str, Selection] | None = None,
) -> dict[str, Any]:
    """:func:`~schedwake.analysis.metrics.trace_metrics` of the whole trace (under the
    threshold overrides ``thresholds``, as it takes them; the pinned tasks the gap
    partials were given must be :meth:`JoinedMetrics.pinned` under the same) from its
    parts' partials, in time order: the same keys in the same order, the same values.
    ``only``: the keys to compute (the others None), as ``trace_metrics`` takes them;
    None is every key. ``gaps``: the parts' :func:`gap_partial` (a second round, given
    :meth:`JoinedMetrics.pinned`), which the idle-while-runnable share needs (without:
    :class:`NotJoinedError`). ``selections``: the latencies where the parts are, when
    the partials came without them (:attr:`JoinedMetrics.selections`)."""
    wanted = set(JOINED) if only is None else set(only)
    if "idle_while_runnable_share" in wanted and gaps is None:
        raise NotJoinedError(
            "idle_while_runnable_share needs the parts' gap partials (gap_partial, given "
            "JoinedMetrics.pinned of the first partials)"
        )
    j = JoinedMetrics(parts, thresholds, selections)
    compute = _per_trace(j)
    if gaps is not None:
        llcs = max(g.llcs for g in gaps)
        gap = sum(g.gap_ns for g in gaps)
        compute["idle_while_runnable_share"] = gap / (max(j.duration_ns, 1) * llcs) if llcs else 0.0
    out: dict[str, Any] = {"duration_s": round(j.dur_s, 6)}
    for m in METRICS.values():
        if m.per_trace is None:
            continue
        if m.key not in wanted or j.unmet(m.needs):
            out[m.key] = None
            continue
        v = compute[m.key]
        v = v() if callable(v) else v
        out[m.key] = round(v, 6) if isinstance(v, float) else v
    out.update(parts[0].bench)
    return out


def joined_bounds(
    parts: Sequence[MetricPartial], selections: Mapping[str, Selection] | None = None
) -> dict[str, list[Any]]:
    """:func:`~schedwake.analysis.metrics.metric_bounds` of the whole trace from its
    parts' partials (``selections``: as :func:`joined_metrics` takes them)."""
    j = JoinedMetrics(parts, None, selections)
    out: dict[str, list] = {}
    if not j.unmet((("sched_switch",),)):
        for c, (lo, hi) in j.busy_bounds().items():
            if hi > lo:
                out[f"busy_share_cpu{c}"] = [lo, hi]
        missing = j.count("missing_switches")
        if missing:
            out["context_switches_per_s"] = [round(j.per_s(j.count("switches") + missing), 6), None]
    if not j.unmet((_WAKE, ("sched_switch",))):
        for name, pct in (("wake_to_run_p50_us", 50), ("wake_to_run_p90_us", 90),
                          ("wake_to_run_p99_us", 99)):  # fmt: skip
            p_lo, p_hi = j.latency_pct_bounds(pct)
            if p_lo is not None and p_hi is not None and p_hi > p_lo:
                out[name] = [round(p_lo, 6), round(p_hi, 6)]
    return out
