"""Before/after comparison of traces in the mmtests layout (docs/compare.md).

``schedwake.compare(sides)`` loads (or takes) the traces of two or more *sides* -- the
baseline first, each side one trace or several iterations -- measures every metric of the
catalogue (:data:`schedwake.analysis.metrics.CATALOGUE`) and returns a :class:`CompareResult`: the
mmtests comparison (``comparison``), the tidy samples behind it (``samples``) and each
side's findings. It never renders itself: :mod:`schedwake.report.compare` prints it as
text, Markdown or JSON, :mod:`schedwake.report.plots` and :mod:`schedwake.report.html`
draw its plots and its self-contained HTML report.

Samples (what the statistics are computed over; docs/compare.md, "Runs, not windows"):

* ``per-trace`` (the default, ``auto``): one value per trace (run, iteration) --
  mmtests' own way. With >= 2 runs a side the stars are a two-sample test; a side with
  one run is judged against the baseline runs' spread (a prediction interval, never
  against windows of itself); with one baseline run nothing is testable: a run's
  between-run spread is unknown.
* ``per-window`` (only on request): the values over consecutive windows of ``window_s``
  seconds inside each trace. Windows of one run are autocorrelated, so the test is on
  *batch means* (each trace's windows in :func:`batches_of` consecutive groups), and
  the note under the table says what such a star means: "this run differed through
  the run", not "a rerun would differ".

The statistics, percentages and significance rules are those of :mod:`schedwake.compare.stats`
and :mod:`schedwake.compare.mmtests`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from ..errors import OptionError, TraceError
from ..paths import expand as expand_paths
from ..paths import glob_files, glob_regex
from ..sidetrace import SideTrace, is_path, side_items
from . import mmtests
from . import stats as st
from .sides import default_label, distinct_names
from .stats import check_alpha

if TYPE_CHECKING:
    from ..trace import Trace

__all__ = [
    "compare",
    "from_samples",
    "measure",
    "expand_paths",
    "CompareResult",
    "Side",
    "default_window",
    "sample_plan",
    "check_window",
    "glob_files",
    "glob_regex",
    "check_alpha",
    "SIGNIFICANCE",
    "SAMPLE_MODES",
    "SAMPLE_ALIASES",
    "sample_mode",
    "batches_of",
]

SIGNIFICANCE = ("ttest", "ci95", "mannwhitney")
SAMPLE_MODES = ("auto", "per-trace", "per-window")
#: Other names of the sample modes (``--samples window``, ``runs``).
SAMPLE_ALIASES = {"window": "per-window", "windows": "per-window", "runs": "per-trace"}


def sample_mode(samples: str) -> str:
    """``samples`` with its alias resolved (``window`` -> ``per-window``), or OptionError."""
    kind = SAMPLE_ALIASES.get(samples, samples)
    if kind not in SAMPLE_MODES:
        names = ", ".join(SAMPLE_MODES + tuple(SAMPLE_ALIASES))
        raise OptionError("samples", repr(samples), f"must be one of {names}")
    return kind


def batches_of(n_windows: int) -> int:
    """How many batch means the windows of one trace are tested as: about the square
    root of their number (batches of ~sqrt(n) windows: both the batches' count and their
    length grow with the run), at least 2 and at most 30."""
    return int(min(30, max(2, math.isqrt(max(int(n_windows), 0)))))


#: The shortest per-window sample length (below it a window holds no event of its own).
MIN_WINDOW_S = 1e-6
#: The most windows one trace may be cut into: a window's samples take about 6 kB at
#: their peak, so that this many take some 600 MB.
MAX_WINDOWS = 100_000


@dataclass
class Side:
    """One column of the comparison: a label and its traces (iterations).

    A trace is a :class:`schedwake.sidetrace.SideTrace`: a loaded
    :class:`schedwake.Trace`, or an *analysed trace* that carries its samples and
    findings instead of its tables (``schedwake.batch.AnalysedTrace``, a row of a batch
    dataset).
    """

    label: str
    traces: list[SideTrace] = field(default_factory=list)
    #: Paths, also when the side came from samples only (no traces).
    paths: list[str] = field(default_factory=list)

    def __post_init__(self):
        if not self.paths:
            self.paths = [str(t.path) for t in self.traces]

    @property
    def has_tables(self) -> bool:
        """True when the side's traces are loaded with their tables (what the plots of
        one trace need), not only analysed."""
        return bool(self.traces) and all(t.stored is None for t in self.traces)


# -- samples and sides -------------------------------------------------------------------------


def sample_plan(
    samples: str, sides, window_s=None, param: str = "window_s"
) -> tuple[str, float | None]:
    """The sample kind of a comparison of ``sides`` (lists of traces): ``samples``, with
    "auto" resolved (per-trace values: runs, never windows unless asked for, by
    ``samples`` or by giving ``window_s``), and for
    per-window samples the window length (``window_s``, checked by :func:`check_window`
    against the traces and refused naming ``param``, else :func:`default_window`)."""
    kind = sample_mode(samples)
    if kind == "auto":
        # a window length given is a request for windows; else runs, never windows
        kind = "per-trace" if window_s is None else "per-window"
    durations = [t.duration_ns / 1e9 for v in sides for t in v]
    if kind != "per-window":
        if window_s is not None:  # not used, but never silently wrong
            check_window(window_s, durations, param)
        return kind, None
    if window_s is not None:
        return kind, check_window(window_s, durations, param)
    # the default is at least 1 ms: a shorter trace is one window, as it always was
    return kind, check_window(default_window(durations), durations, param, one_window_ok=True)


def check_window(
    window_s, durations_s=(), param: str = "window_s", one_window_ok: bool = False
) -> float:
    """``window_s`` as a float, or OptionError naming ``param`` unless it is a finite
    number of seconds, at least :data:`MIN_WINDOW_S`, that cuts none of the traces
    (``durations_s``, seconds) into more than :data:`MAX_WINDOWS` windows nor is longer
    than the longest of them (one window a trace is not a per-window sample; with
    ``one_window_ok`` it may be, as a batch stores any length asked for)."""
    if isinstance(window_s, bool) or not isinstance(window_s, (int, float)):
        raise OptionError(param, repr(window_s), "must be a number of seconds")
    w = float(window_s)
    longest = max((float(d) for d in durations_s if d and d > 0), default=0.0)
    if not math.isfinite(w) or w <= 0:
        raise OptionError(param, f"{w:g}", "must be a finite number of seconds above 0")
    if w < MIN_WINDOW_S:
        cut = f" (the trace would be cut into {longest / w:.3g} windows)" if longest else ""
        raise OptionError(param, f"{w:g}", f"a window must be at least 1 us{cut}")
    if longest and longest / w > MAX_WINDOWS:
        raise OptionError(
            param,
            f"{w:g}",
            f"cuts a {longest:.3g}-s trace into {longest / w:.3g} windows, more than the "
            f"{MAX_WINDOWS:.0e} a trace may have: give a longer window",
        )
    if longest and w > longest and not one_window_ok:
        raise OptionError(
            param,
            f"{w:g}",
            f"is longer than the longest trace ({longest:.3g} s): each trace would be one window",
        )
    return w


def default_window(durations_s) -> float:
    """The per-window sample length when none is given: a round value (1, 2 or 5 x 10^k
    seconds) giving the shortest trace at least 10 windows, at most 1 s, at least 1 ms."""
    d = [float(x) for x in durations_s if x and x > 0]
    if not d:
        return 1.0
    target = min(d) / 10.0
    if target >= 1.0:
        return 1.0
    exp = math.floor(math.log10(target)) if target > 0 else -3
    best = 10.0**exp
    for m in (2.0, 5.0, 10.0):
        if m * 10.0**exp <= target * (1 + 1e-9):
            best = m * 10.0**exp
    return float(max(round(best, 6), 0.001))


def load_model_trace(path: str, topology_file=None, llc=None, kallsyms=None):
    """A trace read for the model (its events only), with ``--topology``/``--llc`` applied
    when given: how compare and gate read a path (``kallsyms``: as :func:`load`'s)."""
    from ..model import MODEL_EVENTS
    from ..trace import load

    t = load(path, events=list(MODEL_EVENTS), kallsyms=kallsyms)
    if topology_file is not None or llc:
        t.use_topology(topology_file, llc)
    return t


def _normalise(sides, labels, topology_file, llc) -> list[Side]:
    if isinstance(sides, Mapping):
        items = list(sides.items())
    else:
        items = [(None, s) for s in sides]
    out: list[Side] = []
    for i, (label, spec) in enumerate(items):
        traces: list[SideTrace] = []
        for item in side_items(spec):
            if is_path(item):
                traces.extend(
                    load_model_trace(p, topology_file, llc)
                    for p in expand_paths(str(item), "trace")
                )
            else:
                if topology_file is not None or llc:
                    item.use_topology(topology_file, llc)
                traces.append(item)
        if not traces:
            raise TraceError(f"side {label or i + 1}", "has no trace")
        if label is None:
            label = default_label([str(t.path) for t in traces], i)
        out.append(Side(str(label), traces))
    if labels is not None:
        labels = list(labels)
        if len(labels) != len(out):
            raise OptionError("labels", None, f"{len(labels)} label(s) for {len(out)} side(s)")
        for s, lab in zip(out, labels):
            s.label = str(lab)
    if len(out) < 2:
        raise TraceError("compare", f"needs at least two sides (got {len(out)})")
    names = [s.label for s in out]
    if len(set(names)) != len(names):
        raise OptionError("labels", None, f"side labels must differ: {', '.join(names)}")
    return out


# -- the computation ---------------------------------------------------------------------------


def _metric_order(names) -> list[str]:
    """Catalogue order; busy shares by CPU number; unknown names last, as given."""
    from ..analysis.metrics import CATALOGUE

    cat = list(CATALOGUE)
    names = list(dict.fromkeys(names))

    def key(n):
        if n in CATALOGUE:
            return (cat.index(n), 0, "")
        m = re.fullmatch(r"busy_share_cpu(\d+)", n)
        if m:
            return (cat.index("busy_share_cpu{cpu}"), int(m.group(1)), "")
        return (len(cat), names.index(n), n)

    return sorted(names, key=key)


def compare(
    sides,
    labels: Sequence[str] | None = None,
    *,
    window_s: float | None = None,
    samples: str = "auto",
    significance: str = "ttest",
    alpha: float = 0.10,
    title: str | None = None,
    metrics: Sequence[str] | None = None,
    topology_file=None,
    llc=None,
    thresholds: dict | None = None,
    progress: Callable[[float], None] | None = None,
    work=None,
) -> CompareResult:
    """Compare two or more sides in the mmtests layout; the first side is the baseline.

    ``sides``: a sequence (or a ``{label: side}`` mapping) whose items are each a trace
    path, a glob pattern, a :class:`schedwake.Trace`, or a sequence of those (the
    iterations of that side). ``labels`` name the sides (default: the file names; a
    mapping's keys); the table header splits a label at its first ``-``
    (``6.18.0-vanilla``).

    ``samples``: ``"auto"`` or ``"per-trace"`` (one value per trace: runs), or
    ``"per-window"`` (``"window"``: windows of the runs, tested as batch means).
    ``window_s``: the window length of per-window samples (default
    :func:`default_window` of the traces). ``significance``: ``"ttest"`` (two-sided
    t-test of the LKML-era mmtests, Welch s.e., df = n1+n2-2, ``alpha``), ``"ci95"``
    (mmtests since 2024-11: mean +-1.96 sd intervals do not overlap) or
    ``"mannwhitney"`` (rank-sum, for heavy tails); a side with one run is judged against
    the baseline runs' spread, and one baseline run is not testable.
    ``metrics``: catalogue names to compare (default all).
    ``topology_file`` / ``llc``: as ``schedwake analyze --topology/--llc``, for every
    trace. ``thresholds``: detector threshold overrides (futile-run length, ...).
    ``progress``: gets the fraction of the traces measured (model and metrics).
    ``work``: the runs' work (:mod:`schedwake.work`: a number, "bench" or "cpu", or
    ``{side label: spec}``), which adds each count per unit of work
    (``context_switches_per_op``, ...; per trace) to the metrics compared.
    """
    from ..analysis import check_thresholds
    from ..detect import thresholds as _check_thresholds

    if significance not in SIGNIFICANCE:
        raise OptionError(
            "significance", repr(significance), f"must be one of {', '.join(SIGNIFICANCE)}"
        )
    samples = sample_mode(samples)
    alpha = check_alpha(alpha)  # (a window is checked against the traces: sample_plan)
    if metrics is not None:
        from ..analysis.metrics import checked_names

        metrics = checked_names(metrics)
    th = check_thresholds(_check_thresholds(thresholds))
    side_list = _normalise(sides, labels, topology_file, llc)
    kind, win = sample_plan(samples, [s.traces for s in side_list], window_s)
    works = _work_specs(work, [s.label for s in side_list])
    base_metrics, per_op = _split_per_op(metrics, works is not None)
    parts = []
    total = max(sum(len(s.traces) for s in side_list), 1)
    works_found: dict[str, object] = {}
    for s in side_list:
        for it, t in enumerate(s.traces):
            d = measure(t, win, th, base_metrics)
            if per_op:
                assert works is not None
                extra, found = work_samples(t, works[s.label], th, per_op)
                works_found[str(t.path)] = found
                d = pd.concat([d, extra], ignore_index=True) if len(d) else extra
            d.insert(0, "iteration", it)
            d.insert(0, "side", s.label)
            parts.append(d)
            if progress is not None:
                progress(len(parts) / total)
    df = pd.concat(parts, ignore_index=True)
    if metrics is not None:  # (a rate measured only for its count per unit of work)
        df = df[
            df["metric"].astype(str).isin(metrics)
            | df["metric"].astype(str).str.startswith("bench_")
        ]
    result = from_samples(
        df,
        [s.label for s in side_list],
        significance=significance,
        alpha=alpha,
        title=title,
        window_s=win,
        sides=side_list,
        thresholds=th,
    )
    result.work = works_found
    return result


def _work_specs(work, labels: list[str]) -> dict | None:
    """``work`` as ``{side label: spec}`` (None without work)."""
    if work is None:
        return None
    if isinstance(work, Mapping):
        missing = [lab for lab in labels if lab not in work]
        if missing:
            raise OptionError("work", None, f"no work for side {', '.join(missing)}")
        return {lab: work[lab] for lab in labels}
    return {lab: work for lab in labels}


def _split_per_op(metrics, with_work: bool) -> tuple[list[str] | None, list[str]]:
    """(the metrics to measure, the counts per unit of work asked for): every count per
    unit of work when work is given and no metric is named; a named ``*_per_op`` metric
    needs work and its rate measured."""
    from ..analysis.metrics import per_op_metrics
    from ..work import is_per_op, per_s_name

    if metrics is None:
        return None, (per_op_metrics() if with_work else [])
    per_op = [m for m in metrics if is_per_op(m)]
    if per_op and not with_work:
        raise OptionError(
            "metrics",
            ", ".join(per_op),
            "a count per unit of work needs the runs' work: give --work (N, bench or cpu)",
        )
    base = [m for m in metrics if not is_per_op(m)]
    base += [per_s_name(m) for m in per_op if per_s_name(m) not in base]
    return base, per_op


def work_samples(trace: SideTrace, spec, thresholds, per_op: list[str]):
    """The per-trace samples of the counts per unit of work ``per_op`` of one trace, and
    its :class:`schedwake.work.Work` (TraceError naming the trace when its work cannot
    be found): each rate times the trace's duration over the work."""
    from ..analysis.metrics import catalogue_entry
    from ..work import per_op_name, per_s_name, work_of

    done = work_of(trace.path, spec)
    rates = measure(trace, None, thresholds, [per_s_name(m) for m in per_op])
    rates = rates[rates["metric"].isin([per_s_name(m) for m in per_op])].copy()
    span = (rates["end_s"] - rates["start_s"]).to_numpy(dtype=np.float64)
    rates["value"] = rates["value"].to_numpy(dtype=np.float64) * span / done.value
    rates["metric"] = [per_op_name(m) for m in rates["metric"]]
    rates["unit"] = "/op"
    rates["direction"] = [catalogue_entry(m).direction for m in rates["metric"]]
    rates["sample_kind"] = "per-trace"
    return rates.reset_index(drop=True), done


def measure(trace: SideTrace, window_s=None, thresholds=None, metrics=None) -> pd.DataFrame:
    """The samples of one trace of a side (:func:`schedwake.analysis.metrics.metric_samples`):
    measured from a loaded Trace, or read back from an analysed one."""
    from ..analysis.metrics import metric_samples

    stored = trace.stored
    if stored is None:  # (a SideTrace without a stored analysis is a loaded Trace)
        return metric_samples(cast("Trace", trace), window_s, thresholds, metrics)
    return stored.samples(window_s, thresholds, metrics)


def from_samples(
    samples: pd.DataFrame,
    labels: Sequence[str] | None = None,
    *,
    significance: str = "ttest",
    alpha: float = 0.10,
    title: str | None = None,
    window_s: float | None = None,
    sides: list[Side] | None = None,
    thresholds: dict | None = None,
) -> CompareResult:
    """The comparison of a tidy samples table (the ``samples`` of a result, or your own).

    Columns: ``side``, ``metric``, ``value``, and ``direction`` (``lower``/``higher``) for
    metrics outside the catalogue; optional ``unit``, ``sample_kind`` (``per-trace`` by
    default, else ``per-window`` with ``window_s``). ``labels``: side order (default: the
    order of first appearance; the first is the baseline).
    """
    from ..analysis.metrics import catalogue_entry

    if significance not in SIGNIFICANCE:
        raise OptionError(
            "significance", repr(significance), f"must be one of {', '.join(SIGNIFICANCE)}"
        )
    alpha = check_alpha(alpha)
    for col in ("side", "metric", "value"):
        if col not in samples.columns:
            raise OptionError("samples", None, f"the table needs a {col!r} column")
    df = samples.copy()
    if labels is None:
        labels = list(dict.fromkeys(df["side"].astype(str)))
    labels = [str(x) for x in labels]
    if len(labels) < 2:
        raise TraceError("compare", "needs at least two sides")
    # (a benchmark result and a count per unit of work are one value per trace, also
    # beside per-window samples)
    names = df["metric"].astype(str)
    per_run = names.str.startswith("bench_") | names.str.endswith("_per_op")
    kinds = set(df.loc[~per_run, "sample_kind"]) if "sample_kind" in df.columns else {"per-trace"}
    if not kinds and "sample_kind" in df.columns:
        kinds = set(df["sample_kind"])
    if len(kinds) > 1:
        raise OptionError(
            "samples", None, f"the table mixes kinds {sorted(kinds)}: use one kind for every side"
        )
    kind = kinds.pop() if kinds else "per-trace"
    side_col = df["side"].astype(str)
    ms = []
    for name in _metric_order(df["metric"].astype(str)):
        rows = df[df["metric"].astype(str) == name]
        try:
            entry = catalogue_entry(name)
            unit, direction = entry.unit, entry.direction
        except KeyError:
            unit, direction = "", None
        if "unit" in rows.columns and rows["unit"].notna().any():
            unit = str(rows["unit"].dropna().iloc[0])
        if "direction" in rows.columns and rows["direction"].notna().any():
            direction = str(rows["direction"].dropna().iloc[0])
        if direction is None:
            raise OptionError(
                "samples", None, f"metric {name!r} has no direction (not in the catalogue)"
            )
        arrays = [
            rows.loc[side_col[rows.index] == lab, "value"].to_numpy(dtype=np.float64)
            for lab in labels
        ]
        own = kind
        per_run = name.startswith("bench_") or name.endswith("_per_op")
        if per_run and "sample_kind" in rows.columns and len(rows):
            own = str(rows["sample_kind"].iloc[0])
        tested = _batch_means(rows, side_col, labels) if own == "per-window" else None
        ms.append(
            mmtests.MetricSamples(
                name,
                unit,
                cast(st.Direction, direction),
                arrays,
                window_s=window_s if own == "per-window" else None,
                sample_kind=cast(mmtests.SampleKind, own),
                test_samples=tested,
            )
        )
    comp = mmtests.compare_samples(
        title, labels, ms, rule=cast(mmtests.Rule, significance), alpha=alpha
    )
    if sides is None:
        sides = [Side(lab) for lab in labels]
    return CompareResult(
        comparison=comp,
        samples=df,
        sides=sides,
        sample_kind=kind,
        window_s=window_s if kind == "per-window" else None,
        thresholds=thresholds,
    )


def _batch_means(rows: pd.DataFrame, side_col: pd.Series, labels: list[str]) -> list:
    """Per side, the batch means of its per-window samples: each trace's windows in time
    order (``iteration``/``trace``, then ``window``) cut into :func:`batches_of` groups."""
    keys = [c for c in ("iteration", "trace") if c in rows.columns]
    order = [c for c in ("window", "start_s") if c in rows.columns]
    out = []
    for lab in labels:
        mine = rows[side_col[rows.index] == lab]
        if order:
            mine = mine.sort_values(keys + order, kind="mergesort")
        groups = mine.groupby(keys, sort=False)["value"] if keys else [(None, mine["value"])]
        means = [
            st.batch_means(v.to_numpy(dtype=np.float64), batches_of(int(v.notna().sum())))
            for _, v in groups
        ]
        out.append(np.concatenate(means) if means else np.empty(0))
    return out


# -- the result ----------------------------------------------------------------------------------


@dataclass
class CompareResult:
    """A computed comparison: the mmtests table, the samples and the sides' traces."""

    comparison: mmtests.Comparison
    #: Tidy samples: side, iteration, trace, sample_kind, window, start_s, end_s, metric,
    #: unit, direction, value (:func:`schedwake.analysis.metrics.metric_samples` plus the side).
    samples: pd.DataFrame
    sides: list[Side]
    sample_kind: str
    window_s: float | None = None
    thresholds: dict | None = None
    #: Each trace's work (path -> :class:`schedwake.work.Work`) when counts per unit of
    #: work were compared.
    work: dict = field(default_factory=dict)

    # ---- basic facts -------------------------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        return list(self.comparison.labels)

    @property
    def title(self) -> str | None:
        return self.comparison.title

    @property
    def rule(self) -> str:
        return self.comparison.rule

    def trace_names(self) -> dict[str, str]:
        """``{path: name}`` of every trace of every side: the shortest end of its path
        that tells it apart from the others (:func:`distinct_names`), as reports name it."""
        paths = [str(t.path) for s in self.sides for t in s.traces]
        return distinct_names(paths + [p for s in self.sides for p in s.paths])

    def summary(self) -> pd.DataFrame:
        """The mean row of every metric: metric, unit, direction, stat, then per side the
        value, the percentage (positive = better), its 95% interval as gains
        (``gain_ci_low``, ``gain_ci_high``; NaN without one) and the significance
        verdict."""
        rows = []
        for r in self.comparison.rows:
            if not r.is_mean_row:
                continue
            for j, lab in enumerate(self.labels):
                sig = r.sig[j]
                gain = mmtests.gain_interval(r.effect(j), r.metric.direction) if j else None
                rows.append(
                    {
                        "metric": r.metric.name,
                        "unit": r.metric.unit,
                        "direction": r.metric.direction,
                        "stat": r.stat,
                        "side": lab,
                        "value": r.values[j],
                        # (a side without a value has no gain; mmtests' table prints 0)
                        "pct": None
                        if j and (np.isnan(r.values[j]) or np.isnan(r.values[0]))
                        else r.pcts[j],
                        "gain_ci_low": gain[0] if gain else math.nan,
                        "gain_ci_high": gain[1] if gain else math.nan,
                        "significant": None if sig is None else bool(sig.significant),
                        "n": int(st.clean_samples(r.metric.samples[j]).size),
                    }
                )
        return pd.DataFrame(rows)

    # ---- findings ----------------------------------------------------------------------------
    @cached_property
    def _findings(self) -> dict[str, list[tuple[str, list]]]:
        out = {}
        for s in self.sides:
            out[s.label] = [(str(t.path), _trace_findings(t, self.thresholds)) for t in s.traces]
        return out

    def findings(self) -> dict[str, list[tuple[str, list]]]:
        """Each side's findings: ``{label: [(trace path, [Finding, ...]), ...]}``."""
        return self._findings


def _trace_findings(trace: SideTrace, thresholds: dict | None) -> list:
    """The findings of one trace of a side (:func:`schedwake.detect.detect`): detected
    in a loaded Trace, or read back from an analysed one."""
    from ..detect import detect

    stored = trace.stored
    if stored is None:  # (a SideTrace without a stored analysis is a loaded Trace)
        return detect(cast("Trace", trace), thresholds)
    return stored.findings(thresholds)
