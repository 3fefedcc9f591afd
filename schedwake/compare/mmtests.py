"""A before/after comparison of metric samples in the mmtests ``compare`` layout.

This module's one job: take per-side sample arrays for each metric (supplied by the caller,
e.g. the metrics module) and compute the mmtests comparison (:class:`Comparison`): its
rows of statistics, percentages and significance, in mmtests' order, the rule line under
them and flat records for JSON. The statistics themselves live in
:mod:`schedwake.compare.stats`; :mod:`schedwake.report.mmtests_table` renders a comparison as
fixed-width text exactly in ``compare-mmtests.pl``'s layout and as a Markdown pipe table.

The percentages: positive = better, ``pndiff`` for lower-is-better metrics and for every
Stddev/CoeffVar row, ``pdiff`` for higher-is-better ones; undefined values (NaN, e.g. the
Stddev of a single sample) are 0 as in mmtests. The table's layout is described where
it is written, in :mod:`schedwake.report.mmtests_table`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from . import stats as st

__all__ = [
    "MetricSamples",
    "Comparison",
    "StatRow",
    "compare_samples",
    "gain_interval",
    "split_label",
    "op_label",
    "FIELD_LENGTH",
    "COMPARE_LENGTH",
    "CELL_WIDTH",
]

FIELD_LENGTH = 12
COMPARE_LENGTH = 7
#: Width of one side's cell: value (12) + " (" + "%7.2f" + "%)".
CELL_WIDTH = FIELD_LENGTH + COMPARE_LENGTH + 4

Rule = Literal["ttest", "ci95", "mannwhitney"]
SampleKind = Literal["per-trace", "per-window"]

_BEST_PCTS = (50, 95, 99)


@dataclass(frozen=True)
class MetricSamples:
    """One metric's samples on every side (``samples[0]`` is the baseline).

    ``sample_kind`` says what one sample is: one value per trace (iteration) or one value
    per time window inside a trace (``window_s`` seconds); it is printed in the rule line.
    """

    name: str
    unit: str
    direction: st.Direction
    samples: Sequence[Any]
    window_s: float | None = None
    sample_kind: SampleKind = "per-trace"
    #: What the significance test and the effect's interval use instead of ``samples``,
    #: per side: the batch means of per-window samples (windows of one run are
    #: autocorrelated; :func:`schedwake.compare.stats.batch_means`). None: ``samples`` themselves.
    test_samples: Sequence[Any] | None = None

    def __post_init__(self) -> None:
        if self.direction not in ("lower", "higher"):
            raise ValueError(
                f"{self.name}: direction must be 'lower' or 'higher', not {self.direction!r}"
            )
        if self.sample_kind not in ("per-trace", "per-window"):
            raise ValueError(f"{self.name}: sample_kind must be 'per-trace' or 'per-window'")


@dataclass(frozen=True)
class StatRow:
    """One rendered row: a statistic of one metric on every side."""

    stat: str  # "Min", "Amean", "BHmean-95", ...
    metric: MetricSamples
    values: list[float]  # per side, NaN if undefined
    pcts: list[float]  # per side, baseline 0.0
    is_mean_row: bool
    sig: list[st.SigResult | None]  # per side; None for the baseline and non-mean rows
    #: per side on the mean row: the side's mean over the baseline's with its 95%
    #: interval (:func:`schedwake.compare.stats.mean_ratio_ci`); None elsewhere
    effects: list[st.Effect | None] = field(default_factory=list)

    def effect(self, j: int) -> st.Effect | None:
        return self.effects[j] if j < len(self.effects) else None

    @property
    def op(self) -> str:
        return op_label(self.metric.name, self.metric.unit)


#: The one sign convention of every percentage compare and gate print, in one sentence.
SIGN_CONVENTION = (
    "% = gain over the baseline as in mmtests: + is better, - is worse, "
    "whichever way the metric points"
)


#: How a summary prints the change of a metric whose baseline is zero: no percentage of
#: zero means anything (mmtests' own table prints its -99% / +100% convention).
NEW_TEXT = "new"


def is_new(baseline: float | None, value: float | None) -> bool:
    """True when a metric appears from a zero baseline (``0 -> 115.97``)."""
    if baseline is None or value is None or math.isnan(baseline) or math.isnan(value):
        return False
    return baseline == 0 and value != 0


def gain_pct_text(pct: float | None, baseline: float | None = None) -> str:
    """A gate rule's gain as its reports print it: ``-12.3%``, ``-inf%``; ``new`` when
    ``baseline`` is given and zero and the gain is not."""
    if pct is None:
        return "-"
    if baseline == 0 and pct != 0:
        return NEW_TEXT
    return f"{'+' if pct > 0 else '-'}inf%" if math.isinf(pct) else f"{pct:+.1f}%"


def op_label(name: str, unit: str) -> str:
    """The operation-column text of a metric: its identifier, followed by ``[unit]`` when
    the name does not say the unit already (``wakeup_migration_share[%]``; not
    ``migrations_per_s`` or ``wake_to_run_p99_us``). No spaces, so whitespace-splitting
    mmtests parsers keep working."""
    said = {"/s": "_per_s", "/op": "_per_op", "us": "_us", "ns": "_ns"}.get(unit, unit)
    if not unit or name.endswith(said) or name.endswith(unit):
        return name
    if unit.startswith("/"):  # a name of your own: ``ctxsw/s``
        return name + unit
    return f"{name}[{unit}]"


def split_label(label: str) -> tuple[str, str]:
    """Split a side label into the two header lines, as mmtests ``_generateHeaderTable``.

    At the first ``-``; if what follows it is ``-rcN`` the split moves past it, so
    ``5.17.0-rc0-vanilla`` -> (``5.17.0-rc0``, ``vanilla``).  (mmtests skips exactly four
    characters; here all digits of ``rcNN`` are kept.)  A label with no ``-`` -> (``""``,
    label) so the name sits right above its numbers (mmtests' own result is mangled).
    """
    idx = label.find("-")
    if idx < 0:
        return "", label
    m = re.match(r"-rc\d+", label[idx:])
    if m:
        idx += m.end()
        rest = label[idx:]
        return label[:idx], rest[1:] if rest.startswith("-") else rest
    return label[:idx], label[idx + 1 :]


def _stat_names(direction: st.Direction) -> list[str]:
    mean = "Amean" if direction == "lower" else "Hmean"
    best = "BAmean" if direction == "lower" else "BHmean"
    return ["Min", mean, "Stddev", "CoeffVar", "Max"] + [f"{best}-{p}" for p in _BEST_PCTS]


def _stat_values(x: np.ndarray, direction: st.Direction) -> list[float]:
    kind: st.MeanKind = "amean" if direction == "lower" else "hmean"
    return [st.smin(x), st.mean_of(x, kind), st.stddev(x), st.coeffvar(x), st.smax(x)] + [
        st.best_mean(x, p, direction, kind) for p in _BEST_PCTS
    ]


_STAT_KEYS = ["min", "mean", "stddev", "coeffvar", "max", "best", "best", "best"]


def _none_if_nan(v: float) -> float | None:
    return None if v is None or math.isnan(v) else float(v)


@dataclass
class Comparison:
    """The computed comparison: its rows, the rule line under them and :meth:`records`
    for JSON; :mod:`schedwake.report.mmtests_table` renders it as text or Markdown."""

    title: str | None
    labels: list[str]
    rule: Rule
    alpha: float
    rows: list[StatRow] = field(default_factory=list)
    metrics: list[MetricSamples] = field(default_factory=list)

    # ---- shared pieces ------------------------------------------------------------------
    def one_run_side(self) -> bool:
        """True when a side of one run is judged against >= 2 baseline runs (by the
        prediction tests) for some metric."""
        for m in self.metrics:
            arrays = m.test_samples if m.test_samples is not None else m.samples
            sizes = [st.clean_samples(x).size for x in arrays]
            if sizes and sizes[0] >= 2 and any(n == 1 for n in sizes[1:]):
                return True
        return False

    def records(self) -> list[dict[str, Any]]:
        """Flat, JSON-ready records: one per (metric, statistic, side).

        Keys: metric, unit, direction, stat, side, baseline, value, pct, significant,
        detail, testable, rule, n, sample_kind, window_s, and on the mean row's
        non-baseline sides ratio, ratio_ci (the side's mean over the baseline's and its 95%
        interval, ``[low, high]``) and gain_ci (the interval as a gain in %, + better,
        ordered low to high).  NaN becomes ``None``;
        ``significant``/``detail``/``testable`` are ``None`` except on non-baseline sides of
        the mean row (``detail`` = p-value for ttest, cidiff ratio for ci95; ``None`` when
        not finite, i.e. ci95 with zero spread on both sides).
        """
        recs = []
        for r in self.rows:
            m = r.metric
            for j, label in enumerate(self.labels):
                sig = r.sig[j]
                detail = None
                if sig is not None and math.isfinite(sig.detail):
                    detail = float(sig.detail)
                recs.append(
                    {
                        "metric": m.name,
                        "unit": m.unit,
                        "direction": m.direction,
                        "stat": r.stat,
                        "side": label,
                        "baseline": j == 0,
                        "value": _none_if_nan(r.values[j]),
                        "pct": _none_if_nan(r.pcts[j]),
                        "significant": None if sig is None else bool(sig.significant),
                        "detail": detail,
                        "testable": None if sig is None else bool(sig.testable),
                        "rule": self.rule,
                        "n": int(st.clean_samples(m.samples[j]).size),
                        "sample_kind": m.sample_kind,
                        "window_s": m.window_s,
                        **_effect_fields(r, j),
                    }
                )
        return recs


def gain_interval(effect: st.Effect | None, direction: str) -> tuple[float, float] | None:
    """An effect's interval as gains in % (mmtests' sign: + better), low to high: for a
    lower-is-better metric a ratio r is a gain of ``100 - 100 r``; None without one."""
    if effect is None or not effect.has_interval:
        return None
    lo, hi = (effect.low - 1) * 100.0, (effect.high - 1) * 100.0
    return (-hi, -lo) if direction == "lower" else (lo, hi)


def _effect_fields(r: StatRow, j: int) -> dict[str, Any]:
    e = r.effect(j) if r.is_mean_row and j else None
    if e is None:
        return {"ratio": None, "ratio_ci": None, "gain_ci": None}
    gain = gain_interval(e, r.metric.direction)
    return {
        "ratio": _none_if_nan(e.ratio),
        "ratio_ci": [e.low, e.high] if e.has_interval else None,
        "gain_ci": list(gain) if gain else None,
    }


def compare_samples(
    title: str | None,
    labels: Sequence[str],
    metrics: Sequence[MetricSamples],
    rule: Rule = "ttest",
    alpha: float = 0.10,
) -> Comparison:
    """Compute the mmtests comparison of ``metrics`` across the sides ``labels``.

    ``labels[0]`` is the baseline; every metric must have one sample array per label.
    ``rule`` picks the ``*`` test on the mean row: ``"ttest"`` (mmtests 2018-2024, the LKML
    tables: two-sided t-test, Welch s.e., df=n1+n2-2, ``alpha``), ``"ci95"`` (mmtests
    since 2024-11: non-overlapping mean +-1.96*sd intervals; ``alpha`` unused) or
    ``"mannwhitney"`` (rank-sum). A side with one run is judged against the baseline
    runs' spread (:func:`schedwake.compare.stats.significance`); one baseline run is not
    testable. A metric's ``test_samples`` (batch means), when given, are what is tested.
    """
    labels = list(labels)
    if not labels:
        raise ValueError("need at least one side label")
    if rule not in st.TESTS:
        raise ValueError(f"rule must be one of {', '.join(st.TESTS)}, not {rule!r}")
    alpha = st.check_alpha(alpha)
    metrics = list(metrics)
    for m in metrics:
        if len(m.samples) != len(labels):
            raise ValueError(f"{m.name}: {len(m.samples)} sample arrays for {len(labels)} sides")

    per_metric: list[list[StatRow]] = []
    for m in metrics:
        kind: st.MeanKind = "amean" if m.direction == "lower" else "hmean"
        arrays = [st.clean_samples(s) for s in m.samples]
        tested = arrays if m.test_samples is None else [st.clean_samples(s) for s in m.test_samples]
        vals = [_stat_values(a, m.direction) for a in arrays]  # [side][stat]
        names = _stat_names(m.direction)
        rows = []
        for k, name in enumerate(names):
            func = st.pct_func_name(_STAT_KEYS[k], m.direction)
            base = vals[0][k]
            values = [vals[j][k] for j in range(len(labels))]
            pcts = [0.0] + [
                st.compare_pct(values[j], base, func, sentinel=None) for j in range(1, len(labels))
            ]
            is_mean = k == 1
            sig: list[st.SigResult | None] = [None] * len(labels)
            effects: list[st.Effect | None] = [None] * len(labels)
            if is_mean:
                for j in range(1, len(labels)):
                    sig[j] = st.significance(tested[0], tested[j], rule, alpha, kind)
                    # (with the t-test's own degrees of freedom: the interval and the
                    # star agree)
                    df_rule = "lkml" if rule == "ttest" else "welch"
                    effects[j] = st.mean_ratio_ci(tested[0], tested[j], mean=kind, df_rule=df_rule)
            rows.append(StatRow(name, m, values, pcts, is_mean, sig, effects))
        per_metric.append(rows)

    # group by statistic position, then by metric (mmtests _generateTitleTable order)
    ordered = [per_metric[i][k] for k in range(len(_STAT_KEYS)) for i in range(len(metrics))]
    return Comparison(
        title=title, labels=labels, rule=rule, alpha=alpha, rows=ordered, metrics=metrics
    )
