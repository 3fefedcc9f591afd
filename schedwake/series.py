"""A series of builds: which build changed a metric (docs/series.md).

``schedwake.series.series(builds)`` takes builds in order -- each a directory of one
or more runs (trace files, anything :func:`schedwake.load` reads) or a batch dataset,
named by the directory's name -- measures one value per run and metric (the per-trace
samples of :func:`schedwake.compare.measure`, never windows), and finds each metric's
change points (:mod:`schedwake.changepoint`: E-divisive means, splits at build
boundaries, a permutation test). It returns a :class:`SeriesResult` and never renders
itself (:mod:`schedwake.report.series` does).

Many metrics are tested at once: a metric is called changed only when the p value of
its first (best) split passes the Benjamini-Hochberg step at ``alpha`` over the metrics
that vary at all, so that an unchanged series of a few dozen metrics gives a false alarm
about as often as one metric does (docs/series.md, "Many metrics"); its further splits
are then tested at ``alpha``.

:func:`gate_series` is ``schedwake gate --series``: it fails when the newest build
starts a regression beyond a gate rule's ``allowed`` on a metric the rules name.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import changepoint
from .errors import OptionError, TraceError
from .sidetrace import SideTrace

if TYPE_CHECKING:
    from _typeshed import StrPath

__all__ = [
    "Build",
    "SeriesChangePoint",
    "MetricSeries",
    "SeriesResult",
    "SeriesGateResult",
    "RuleVerdict",
    "series",
    "gate_series",
    "load_builds",
]

DEFAULT_ALPHA = changepoint.DEFAULT_ALPHA
DEFAULT_MIN_SEGMENT = changepoint.DEFAULT_MIN_SEGMENT
DEFAULT_PERMUTATIONS = changepoint.DEFAULT_PERMUTATIONS
#: How the first splits' p of several metrics are adjusted for their number.
ADJUSTMENTS = ("bh", "holm", "none")


@dataclass(frozen=True)
class Build:
    """One build of the series: its name (the directory's), what was given, its runs
    (trace paths, or a batch dataset's stored paths)."""

    name: str
    path: str
    runs: tuple[str, ...]
    #: The batch dataset the runs are read back from (None: trace files).
    dataset: Any = None


@dataclass(frozen=True)
class SeriesChangePoint:
    """Where a metric shifts: ``build`` is the first build after the shift (``index``
    its position), ``before``/``after`` the means of the runs of the segments on either
    side, ``effect`` = after / before - 1 with its 95% bootstrap interval ``ci``, ``p``
    the permutation test's, ``regression``: the shift is for the worse (the metric's
    ``direction``)."""

    metric: str
    unit: str
    direction: str
    build: str
    index: int
    before: float
    after: float
    effect: float
    ci: tuple[float, float]
    p: float
    regression: bool
    n_before: int
    n_after: int


@dataclass
class MetricSeries:
    """One metric over the builds: its runs' values and change points."""

    metric: str
    unit: str
    direction: str
    #: One row per run: build, index (of the build), run (its trace's name), value.
    values: pd.DataFrame
    change_points: list[SeriesChangePoint] = field(default_factory=list)
    #: p of the best split of the whole series, and its Benjamini-Hochberg q over the
    #: metrics tested (None when it varies not at all: nothing to test).
    p_first: float = 1.0
    q_first: float | None = None
    #: The runs without a value (withheld: the trace shows it only within bounds).
    withheld: list[str] = field(default_factory=list)

    def build_means(self) -> list[float]:
        """Each build's mean of its runs' values (NaN for a build without one)."""
        v = self.values.dropna(subset=["value"])
        means = v.groupby("index")["value"].mean()
        n = int(self.values["index"].max()) + 1 if len(self.values) else 0
        return [float(means.get(i, math.nan)) for i in range(n)]


@dataclass
class SeriesResult:
    """The change points of every metric over a series of builds."""

    builds: list[Build]
    metrics: dict[str, MetricSeries]
    alpha: float
    min_segment: int
    permutations: int
    #: Metrics left out and why (withheld in every run, not in the traces), one line each.
    notes: list[str] = field(default_factory=list)

    @property
    def build_names(self) -> list[str]:
        return [b.name for b in self.builds]

    def change_points(self) -> list[SeriesChangePoint]:
        """Every change point, by build, then metric (catalogue order)."""
        order = {m: i for i, m in enumerate(self.metrics)}
        cps = [c for s in self.metrics.values() for c in s.change_points]
        return sorted(cps, key=lambda c: (c.index, order[c.metric]))

    def changed(self) -> list[MetricSeries]:
        """The metrics with a change point, in catalogue order."""
        return [s for s in self.metrics.values() if s.change_points]

    def to_dict(self) -> dict:
        """The JSON document's content (docs/series.md, "JSON")."""
        return {
            "builds": [{"name": b.name, "path": b.path, "runs": list(b.runs)} for b in self.builds],
            "alpha": self.alpha,
            "min_segment": self.min_segment,
            "permutations": self.permutations,
            "change_points": [dataclasses.asdict(c) for c in self.change_points()],
            "metrics": {
                name: {
                    "unit": s.unit,
                    "direction": s.direction,
                    "p_first": s.p_first,
                    "q_first": s.q_first,
                    "withheld": s.withheld,
                    "runs": [
                        {"build": r.build, "run": r.run, "value": r.value}
                        for r in s.values.itertuples()
                    ],
                }
                for name, s in self.metrics.items()
            },
            "notes": self.notes,
        }


# -- the builds --------------------------------------------------------------------------------


def _is_dataset(path: Path) -> bool:
    from .batch.layout import MANIFEST_FILE, TRACES_FILE

    return path.is_dir() and any((path / f).exists() for f in (TRACES_FILE, MANIFEST_FILE))


def load_builds(builds: Sequence) -> list[Build]:
    """The builds of the arguments, in order: a directory (its traces at any depth, or
    the ``ok`` rows of the batch dataset in it) or a trace file (a build of one run).
    TraceError (naming it) for a build without traces, or two builds given twice."""
    from .batch import BatchDataset
    from .compare.sides import distinct_names
    from .paths import expand

    given = [str(b) for b in builds]
    if not given:
        raise TraceError("series", "needs builds: give the build directories in order")
    real = [os.path.realpath(g) for g in given]
    twice = sorted({g for g, r in zip(given, real) if real.count(r) > 1})
    if twice:
        raise TraceError(twice[0], "is given twice: each build once, in order")
    names = distinct_names([g.rstrip("/") or "/" for g in given])
    out = []
    for g in given:
        p = Path(g)
        if not p.exists():
            raise TraceError(g, "no such file or directory")
        name = names[g.rstrip("/") or "/"]
        if p.is_file():
            name = name.removesuffix(".dat")
        if _is_dataset(p):
            ds = BatchDataset(p)
            ok = ds.traces[ds.traces["status"] == "ok"]
            if ok.empty:
                raise TraceError(g, "the batch dataset holds no analysed trace")
            out.append(Build(name, g, tuple(str(x) for x in ok["path"]), ds))
        else:
            out.append(Build(name, g, tuple(expand(g, f"build {name}"))))
    return out


def _runs_of(
    build: Build, topology_file: str | Path | None, llc: Iterable[str] | None
) -> list[Callable[[], SideTrace]]:
    """How to get each run of a build (loaded one at a time: a series of many builds is
    never held in memory at once)."""
    from .compare import load_model_trace

    if build.dataset is not None:
        ds = build.dataset
        if topology_file is not None or llc:
            raise TraceError(
                build.path,
                "is a batch dataset, analysed with its topology: --topology/--llc do not apply",
            )
        return [functools.partial(ds.load, p) for p in build.runs]
    return [functools.partial(load_model_trace, p, topology_file, llc) for p in build.runs]


def _check_metrics(metrics: Iterable[str] | None) -> list[str] | None:
    from .analysis.metrics import checked_names

    return None if metrics is None else checked_names(metrics)


def _check_min_segment(min_segment: object) -> int:
    if isinstance(min_segment, bool) or not isinstance(min_segment, int) or min_segment < 1:
        raise OptionError("min_segment", repr(min_segment), "must be a whole number of builds >= 1")
    return min_segment


def _run_name(build: Build, path: str) -> str:
    """A run's name within its build: its path below the build's directory (the file
    name, mostly), else the path as given (a batch dataset's stored path)."""
    rel = os.path.relpath(path, build.path) if os.path.isdir(build.path) else path
    return path if rel.startswith("..") or build.dataset is not None else rel


def measure_builds(
    builds: list[Build],
    metrics: Collection[str] | None = None,
    *,
    thresholds: Mapping[str, float | str] | None = None,
    topology_file: str | Path | None = None,
    llc: Iterable[str] | None = None,
    progress: Callable[[float], None] | None = None,
    check: Callable[[str, SideTrace], None] | None = None,
) -> pd.DataFrame:
    """The per-run samples of every build: columns build, index, run, trace, metric,
    unit, direction, value (one row per run and metric). ``check(build name, trace)``
    sees each run as it is loaded (``gate --series``: what makes a run unusable)."""
    from .analysis import check_thresholds
    from .compare import measure
    from .detect import thresholds as _check_thresholds

    th = check_thresholds(_check_thresholds(thresholds))
    loaders = [(i, b, get) for i, b in enumerate(builds) for get in _runs_of(b, topology_file, llc)]
    parts = []
    for k, (i, b, get) in enumerate(loaders):
        trace = get()
        if check is not None:
            check(b.name, trace)
        d = measure(trace, None, th, metrics)
        d.insert(0, "run", _run_name(b, str(trace.path)))
        d.insert(0, "index", i)
        d.insert(0, "build", b.name)
        parts.append(d)
        del trace
        if progress is not None:
            progress((k + 1) / len(loaders))
    return pd.concat(parts, ignore_index=True)


def series(
    builds: Sequence,
    metrics: Sequence[str] | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    adjust: str = "bh",
    thresholds: dict | None = None,
    topology_file: str | Path | None = None,
    llc: Iterable[str] | None = None,
    progress: Callable[[float], None] | None = None,
    check: Callable[[str, SideTrace], None] | None = None,
) -> SeriesResult:
    """The change points of each metric over ``builds`` (in order: directories of runs,
    batch datasets, or :class:`Build` s). ``metrics``: catalogue names (default: every
    metric the runs measure; one withheld in every run is left out with a note).
    ``alpha``: the significance of a split (and the false discovery rate over the
    metrics); ``min_segment``: builds on each side of a split; ``permutations``: of each
    permutation test, seeded by ``seed`` (the same input, the same answer); ``adjust``:
    a metric is changed when its first split passes ``alpha`` after the adjustment over
    the metrics: "bh" (Benjamini-Hochberg), "holm" (Holm-Bonferroni, as the gate's rules
    are judged) or "none" (each metric alone). ``check``: as :func:`measure_builds`."""
    from .compare.stats import check_alpha

    alpha = check_alpha(alpha)
    min_segment = _check_min_segment(min_segment)
    metrics = _check_metrics(metrics)
    given = list(builds)
    done = given if all(isinstance(b, Build) for b in given) else load_builds(given)
    samples = measure_builds(
        done,
        metrics,
        thresholds=thresholds,
        topology_file=topology_file,
        llc=llc,
        progress=progress,
        check=check,
    )
    return from_samples(
        samples,
        done,
        metrics=metrics,
        alpha=alpha,
        min_segment=min_segment,
        permutations=permutations,
        seed=seed,
        adjust=adjust,
    )


def from_samples(
    samples: pd.DataFrame,
    builds: list[Build],
    *,
    metrics: Sequence[str] | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    adjust: str = "bh",
) -> SeriesResult:
    """The series of a per-run samples table (:func:`measure_builds`' columns)."""
    from .compare.stats import holm
    from .profile.compare import benjamini_hochberg

    if adjust not in ADJUSTMENTS:
        raise OptionError("adjust", repr(adjust), f"must be one of {', '.join(ADJUSTMENTS)}")

    notes = []
    out: dict[str, MetricSeries] = {}
    present = list(dict.fromkeys(samples["metric"].astype(str)))
    if metrics is not None:
        present = [m for m in present if m in metrics]
    for name in metrics or ():
        if name not in present:
            notes.append(f"{name}: not measured in any run (left out)")
    for name in present:
        rows = samples[samples["metric"].astype(str) == name]
        values = rows[["build", "index", "run", "value"]].reset_index(drop=True)
        bad = values[~np.isfinite(values["value"].to_numpy(dtype=np.float64))]
        if len(bad) == len(values):
            notes.append(f"{name}: withheld in every run (left out)")
            continue
        withheld = [f"{b}/{r}" for b, r in zip(bad["build"], bad["run"])]
        if withheld:
            notes.append(
                f"{name}: withheld in {len(withheld)} of {len(values)} runs (not counted): "
                + ", ".join(withheld)
            )
        out[name] = MetricSeries(
            name,
            str(rows["unit"].iloc[0]),
            str(rows["direction"].iloc[0]),
            values,
            withheld=withheld,
        )
    detections = {}
    for name, s in out.items():
        groups = [
            s.values.loc[s.values["index"] == i, "value"].to_numpy(dtype=np.float64)
            for i in range(len(builds))
        ]
        d = changepoint.detect(
            groups, alpha=alpha, min_segment=min_segment, permutations=permutations, seed=seed
        )
        detections[name] = d
        s.p_first = d.p_first
    # the metrics that vary at all are the family of the adjustment
    family = [n for n in out if len(set(out[n].values["value"].dropna())) > 1]
    p = np.array([out[n].p_first for n in family])
    q = {"bh": benjamini_hochberg, "holm": holm}.get(adjust, np.asarray)(p)
    for n, qv in zip(family, q):
        s = out[n]
        s.q_first = float(qv)
        if qv > alpha * (1 + 1e-9):  # (q is p times a ratio of counts: rounding)
            continue
        s.change_points = [_named(s, builds, c) for c in detections[n].change_points]
    return SeriesResult(list(builds), out, alpha, min_segment, permutations, notes)


def _named(s: MetricSeries, builds: list[Build], c: changepoint.ChangePoint) -> SeriesChangePoint:
    worse = c.after > c.before if s.direction == "lower" else c.after < c.before
    return SeriesChangePoint(
        metric=s.metric,
        unit=s.unit,
        direction=s.direction,
        build=builds[c.index].name,
        index=c.index,
        before=c.before,
        after=c.after,
        effect=c.effect,
        ci=(c.ci_low, c.ci_high),
        p=c.p,
        regression=bool(worse),
        n_before=c.n_before,
        n_after=c.n_after,
    )


# -- the gate ----------------------------------------------------------------------------------


@dataclass
class RuleVerdict:
    """One gate rule judged on the series: ``status`` pass, broken, skipped or error;
    ``change``: the change point the newest build starts on its metric, if any."""

    metric: str
    allowed: str
    status: str
    message: str
    change: SeriesChangePoint | None = None


@dataclass
class SeriesGateResult:
    """``gate --series``: each rule's verdict on the newest build, and the series."""

    verdicts: list[RuleVerdict]
    series: SeriesResult | None
    problems: list[str] = field(default_factory=list)
    rules_source: str = "defaults"

    @property
    def exit_code(self) -> int:
        if self.problems or any(v.status == "error" for v in self.verdicts):
            return 2
        return 1 if any(v.status == "broken" for v in self.verdicts) else 0

    @property
    def verdict(self) -> str:
        return {0: "PASS", 1: "FAIL", 2: "ERROR"}[self.exit_code]


def _least_p(n_all: int, n_new: int) -> float:
    """The smallest p a permutation test can give the newest build's ``n_new`` runs
    among ``n_all``: one arrangement of the runs in C(n_all, n_new) puts them last."""
    return 1.0 / math.comb(n_all, n_new) if 0 < n_new < n_all else 1.0


def gate_series(
    builds: Sequence,
    rules_file: StrPath | None = None,
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    thresholds: dict | None = None,
    topology_file: str | Path | None = None,
    llc: Iterable[str] | None = None,
    progress: Callable[[float], None] | None = None,
) -> SeriesGateResult:
    """Judge the newest of ``builds`` (the last) against the series before it: broken
    (exit 1) when a change point starts at the newest build on a metric a rule names,
    for the worse and by more than the rule's ``allowed``; error (exit 2) when it cannot
    judge: a rules file it cannot read, fewer than two builds, too few runs for any
    split at the newest build to be significant, a rule's metric measured in no run
    (``missing = "skip"`` skips it instead). The rules' ``[gate] alpha`` is the
    significance, adjusted over the rules' metrics as ``[gate] multiplicity`` says
    (Holm by default, as the two-sided gate; "none": each rule at ``alpha``); a split
    needs one build on each side (the newest alone may change)."""
    from .gate import default_rules, input_problems, load_rules

    settings, rules = load_rules(rules_file) if rules_file is not None else default_rules()
    source = str(rules_file) if rules_file is not None else "defaults"
    rules = [r for r in rules if not r.on_profile]
    blist = load_builds(builds)
    if len(blist) < 2:
        return SeriesGateResult(
            [], None, [f"a series needs at least 2 builds (got {len(blist)})"], source
        )
    refused: list[str] = []

    def check(build: str, trace: SideTrace) -> None:
        # the two-sided gate's refusals: lost events, raw timestamps, too few switches
        refused.extend(input_problems(f"build {build}", trace, settings))

    result = series(
        blist,
        [r.metric for r in rules],
        alpha=settings.alpha,
        min_segment=1,
        permutations=permutations,
        adjust="holm" if settings.multiplicity == "holm" else "none",
        thresholds=thresholds,
        topology_file=topology_file,
        llc=llc,
        progress=progress,
        check=check,
    )
    if refused:  # fails closed: a run that cannot be judged is not judged around
        return SeriesGateResult([], result, refused, source)
    last = len(blist) - 1
    verdicts = []
    for r in rules:
        s = result.metrics.get(r.metric)
        allowed = r.allowed_text()
        if s is None:
            status = "skipped" if r.missing == "skip" else "error"
            verdicts.append(RuleVerdict(r.metric, allowed, status, f"{r.metric}: not measured"))
            continue
        vals = s.values.dropna(subset=["value"])
        n_new = int((vals["index"] == last).sum())
        least = _least_p(len(vals), n_new)
        if least > settings.alpha:
            verdicts.append(
                RuleVerdict(
                    r.metric,
                    allowed,
                    "error",
                    f"{r.metric}: {n_new} run(s) of the newest build among {len(vals)} can "
                    f"at best reach p = {least:.3g} > alpha {settings.alpha:g}: record more "
                    "runs or builds",
                )
            )
            continue
        cp = next((c for c in s.change_points if c.index == last), None)
        if cp is None:
            verdicts.append(RuleVerdict(r.metric, allowed, "pass", "no change at the newest build"))
            continue
        worse = abs(cp.after - cp.before) if cp.regression else 0.0
        holm = settings.multiplicity == "holm" and s.q_first is not None
        adjusted = f" (Holm over the rules: {s.q_first:.3g})" if holm else ""
        limit = r.allowed * abs(cp.before) if r.relative else r.allowed
        if cp.regression and worse > limit:
            verdicts.append(
                RuleVerdict(
                    r.metric,
                    allowed,
                    "broken",
                    f"{r.metric}: {cp.before:.4g} -> {cp.after:.4g} ({cp.effect:+.1%}), "
                    f"worse than {allowed} allows, p = {cp.p:.3g}{adjusted}",
                    cp,
                )
            )
        else:
            why = "for the better" if not cp.regression else f"within {allowed}"
            verdicts.append(
                RuleVerdict(r.metric, allowed, "pass", f"a change at the newest build, {why}", cp)
            )
    return SeriesGateResult(verdicts, result, [], source)
