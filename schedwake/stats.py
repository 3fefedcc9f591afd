"""Summary statistics, percentage changes and significance tests of the mmtests compare report.

This module's one job: turn two (or more) plain arrays of samples into the numbers that
mmtests' ``compare-mmtests.pl`` prints -- Min, Max, Amean, Hmean, Stddev, CoeffVar, the
best-N means, the ``pdiff``/``pndiff`` percentages and the ``*`` significance verdict --
with the exact rules of ``gormanm/mmtests`` (``bin/lib/MMTests/Stat.pm``, ``Compare.pm``;
docs/compare.md, "How to read the table").  It knows nothing about traces or
rendering.  numpy only; the Student t distribution is computed here from a regularized
incomplete beta function (no scipy).

Conventions
-----------
* A *sample array* is anything ``np.asarray`` turns into floats.  NaN entries are treated as
  missing and dropped (mmtests skips undefined values); an empty array gives NaN statistics.
* ``direction`` is ``"lower"`` (lower is better: times, latencies, migration rates) or
  ``"higher"`` (higher is better: throughput).
* A positive percentage always means *better* (mmtests' convention).

Decisions where mmtests is silent or odd (documented so the report can state them)
------------------------------------------------------------------------------------
* Best-N mean with ``int(n*N/100) == 0`` (e.g. BAmean-50 of one sample): mmtests takes
  ``@data[0..-1]``, an empty list, and prints garbage.  Here at least one sample is used,
  so the best-N mean of a tiny sample is the single best value.
* ``hmean`` of data containing a value ``<= 0`` is NaN (mmtests returns -1 or NaN depending
  on the era; the -1 sentinel is understood by :func:`compare_pct`).
* Significance needs at least two samples per side; otherwise the result says "not
  testable" (``SigResult.testable is False``) and is never significant.
* The t-test and the ci95 rule act on the statistic of the comparison row: arithmetic mean
  with the sample stddev for Amean rows, harmonic mean with :func:`hstddev` for Hmean rows
  (``mean="hmean"``).
* ci95 with zero spread on both sides: mmtests' ``cidiff`` returns the raw difference and
  stars it only if it exceeds 1 (in the metric's units).  Here zero-width intervals are
  compared as intervals: significant iff the means differ (ratio reported as +-inf).
  :func:`cidiff` itself keeps the mmtests arithmetic.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Literal, NamedTuple

import numpy as np

from .errors import OptionError

__all__ = [
    "Direction",
    "MeanKind",
    "SigResult",
    "STAT_PCT_FUNC",
    "amean",
    "best_mean",
    "betainc",
    "ci95_test",
    "cidiff",
    "clean_samples",
    "coeffvar",
    "compare_pct",
    "hmean",
    "hstddev",
    "mean_of",
    "pdiff",
    "pndiff",
    "pct_func_name",
    "smax",
    "smin",
    "stddev",
    "t_sf",
    "t_two_sided_p",
    "ttest_lkml",
    "ttest_from_summary",
    "Z_975",
]

Direction = Literal["lower", "higher"]
#: the mean mmtests takes of a metric: arithmetic (lower is better), harmonic (higher)
MeanKind = Literal["amean", "hmean"]

#: qnorm(0.975): the mmtests CI half-width multiplier (printed as 1.96).
Z_975 = 1.959963984540054

#: Percentage function per statistic that overrides the metric direction
#: (Stat.pm ``stat_compare``): spread is better when smaller, whatever the metric.
STAT_PCT_FUNC = {
    "stddev": "pndiff",
    "hstddev": "pndiff",
    "coeffvar": "pndiff",
    "hcoeffvar": "pndiff",
}


# --------------------------------------------------------------------------------------
# summary statistics (Stat.pm)
# --------------------------------------------------------------------------------------


def clean_samples(x) -> np.ndarray:
    """``x`` as a flat float64 array with NaN (missing) entries dropped."""
    a = np.asarray(x, dtype=np.float64).ravel()
    return a[~np.isnan(a)]


_clean = clean_samples


def smin(x) -> float:
    """Smallest sample (NaN if empty)."""
    a = _clean(x)
    return float(a.min()) if a.size else math.nan


def smax(x) -> float:
    """Largest sample (NaN if empty)."""
    a = _clean(x)
    return float(a.max()) if a.size else math.nan


def amean(x) -> float:
    """Arithmetic mean (NaN if empty)."""
    a = _clean(x)
    return float(a.mean()) if a.size else math.nan


def hmean(x) -> float:
    """Harmonic mean ``n / sum(1/x)``; NaN if empty or if any sample is ``<= 0``."""
    a = _clean(x)
    if a.size == 0 or np.any(a <= 0):
        return math.nan
    return float(a.size / np.sum(1.0 / a))


def stddev(x) -> float:
    """Sample standard deviation ``sqrt(sum((x-mean)^2)/(n-1))``; NaN if ``n <= 1``."""
    a = _clean(x)
    if a.size <= 1:
        return math.nan
    return float(np.std(a, ddof=1))


def hstddev(x) -> float:
    """mmtests' spread for the harmonic mean: ``sqrt(sum((1/x - 1/H)^2) * H^4 / n)``.

    NaN when the harmonic mean is NaN (empty data or a value ``<= 0``).
    """
    a = _clean(x)
    h = hmean(a)
    if math.isnan(h):
        return math.nan
    return float(math.sqrt(np.sum((1.0 / a - 1.0 / h) ** 2) * h**4 / a.size))


def coeffvar(x) -> float:
    """``stddev * 100 / amean``; a NaN stddev counts as 0, and a zero (or NaN) mean gives 0."""
    s = stddev(x)
    m = amean(x)
    s = 0.0 if math.isnan(s) else s
    if math.isnan(m) or m == 0:
        return 0.0
    return s * 100.0 / m


def mean_of(x, kind: MeanKind = "amean") -> float:
    """``amean(x)`` or ``hmean(x)`` by name."""
    if kind == "amean":
        return amean(x)
    if kind == "hmean":
        return hmean(x)
    raise ValueError(f"unknown mean kind {kind!r}")


def _spread_of(x, kind: MeanKind) -> float:
    return stddev(x) if kind == "amean" else hstddev(x)


def best_mean(x, percent: float, direction: Direction, kind: MeanKind = "amean") -> float:
    """The BAmean-N / BHmean-N statistic: mean of the best ``percent``% of the samples.

    Samples are sorted best-first (ascending for ``"lower"``, descending for ``"higher"``)
    and the first ``int(n*percent/100)`` are averaged (arithmetic or harmonic by ``kind``).
    When that count is 0 (few samples), the single best sample is used -- mmtests would
    average an empty slice.
    """
    a = _clean(x)
    if a.size == 0:
        return math.nan
    a = np.sort(a)
    if direction == "higher":
        a = a[::-1]
    elif direction != "lower":
        raise ValueError(f"direction must be 'lower' or 'higher', not {direction!r}")
    k = max(1, int(a.size * percent / 100))
    return mean_of(a[:k], kind)


# --------------------------------------------------------------------------------------
# percentages (Stat.pm pdiff / pndiff, Compare.pm missing-value rule)
# --------------------------------------------------------------------------------------


def pdiff(new, base):
    """Higher-is-better percentage ``100*new/base - 100`` with mmtests' zero rules.

    ``new == base`` or ``new == 0`` -> 0; ``base == 0`` or ``base`` NaN -> 100.  A NaN
    ``new`` (with a usable base) gives NaN.  Works on scalars and arrays (broadcasting).
    """
    n = np.asarray(new, dtype=np.float64)
    b = np.asarray(base, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = n * 100.0 / b - 100.0
    out = np.select([(n == b) | (n == 0), (b == 0) | np.isnan(b)], [0.0, 100.0], raw)
    return float(out) if out.ndim == 0 else out


def pndiff(new, base):
    """Lower-is-better percentage ``100 - 100*new/base`` with mmtests' zero rules.

    ``new == base`` -> 0; ``new == 0`` -> 100; ``base == 0`` (new != 0) -> -99.  NaN on
    either side (and no earlier rule) gives NaN.  Works on scalars and arrays.
    """
    n = np.asarray(new, dtype=np.float64)
    b = np.asarray(base, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = 100.0 - n * 100.0 / b
    out = np.select([n == b, n == 0, b == 0], [0.0, 100.0, -99.0], raw)
    return float(out) if out.ndim == 0 else out


_PCT = {"pdiff": pdiff, "pndiff": pndiff}


def pct_func_name(stat: str, direction: Direction) -> str:
    """``"pdiff"`` or ``"pndiff"`` for a statistic (lower-case key such as ``"stddev"``,
    ``"min"``, ``"amean"``) of a metric with ``direction`` (Summarise.pm
    ``getStatCompareFunc``): Stddev/CoeffVar always pndiff, otherwise by direction."""
    if stat.lower() in STAT_PCT_FUNC:
        return STAT_PCT_FUNC[stat.lower()]
    if direction == "higher":
        return "pdiff"
    if direction == "lower":
        return "pndiff"
    raise ValueError(f"direction must be 'lower' or 'higher', not {direction!r}")


def compare_pct(new: float, base: float, func: str, *, sentinel: float | None = -1.0) -> float:
    """The percentage cell of a compare table (Compare.pm ``_generateComparisonTable``).

    If either value is NaN or equals ``sentinel`` (mmtests' "no value" -1; pass ``None`` to
    disable) the cell is 0.0, otherwise ``pdiff``/``pndiff`` by ``func``.
    """
    for v in (new, base):
        if v is None or math.isnan(v) or (sentinel is not None and v == sentinel):
            return 0.0
    return float(_PCT[func](new, base))


# --------------------------------------------------------------------------------------
# Student t distribution via the regularized incomplete beta function
# --------------------------------------------------------------------------------------

_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _betacf(
    a: np.ndarray, b: np.ndarray, x: np.ndarray, *, max_iter: int = 300, eps: float = 3e-16
) -> np.ndarray:
    """Continued fraction for the incomplete beta (modified Lentz, Numerical Recipes
    ``betacf``), evaluated element-wise on arrays; iterates until every element converged."""
    fpmin = 1e-300
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < fpmin, fpmin, d)
    d = 1.0 / d
    h = d.copy()
    active = np.ones(x.shape, dtype=bool)
    for m in range(1, max_iter + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < fpmin, fpmin, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < fpmin, fpmin, c)
        d = 1.0 / d
        h = np.where(active, h * d * c, h)
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < fpmin, fpmin, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < fpmin, fpmin, c)
        d = 1.0 / d
        delta = d * c
        h = np.where(active, h * delta, h)
        active &= np.abs(delta - 1.0) >= eps
        if not active.any():
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta ``I_x(a, b)`` for ``a, b > 0`` and ``0 <= x <= 1``
    (element-wise, broadcasting; returns a float for scalar input)."""
    a, b, x = np.broadcast_arrays(
        np.asarray(a, dtype=np.float64),
        np.asarray(b, dtype=np.float64),
        np.asarray(x, dtype=np.float64),
    )
    if np.any(a <= 0) or np.any(b <= 0):
        raise ValueError("betainc needs a > 0 and b > 0")
    if np.any((x < 0) | (x > 1)):
        raise ValueError("betainc needs 0 <= x <= 1")
    out = np.empty(x.shape, dtype=np.float64)
    inner = (x > 0) & (x < 1)
    out[x <= 0] = 0.0
    out[x >= 1] = 1.0
    if inner.any():
        ai, bi, xi = a[inner], b[inner], x[inner]
        lnbt = _lgamma(ai + bi) - _lgamma(ai) - _lgamma(bi) + ai * np.log(xi) + bi * np.log1p(-xi)
        bt = np.exp(lnbt)
        direct = xi < (ai + 1.0) / (ai + bi + 2.0)
        res = np.empty_like(xi)
        if direct.any():
            res[direct] = bt[direct] * _betacf(ai[direct], bi[direct], xi[direct]) / ai[direct]
        flip = ~direct
        if flip.any():
            res[flip] = 1.0 - bt[flip] * _betacf(bi[flip], ai[flip], 1.0 - xi[flip]) / bi[flip]
        out[inner] = res
    return float(out) if out.ndim == 0 else out


def t_two_sided_p(t, df):
    """Two-sided p-value ``P(|T| >= |t|)`` of Student's t with ``df > 0`` degrees of
    freedom: ``I_{df/(df+t^2)}(df/2, 1/2)``.  Array-friendly."""
    t = np.abs(np.asarray(t, dtype=np.float64))
    df = np.asarray(df, dtype=np.float64)
    if np.any(df <= 0):
        raise ValueError("df must be > 0")
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.where(np.isinf(t), 0.0, df / (df + t * t))
    return betainc(df / 2.0, 0.5, x)


def t_sf(t, df):
    """Survival function ``P(T > t)`` of Student's t (R's ``pt(t, df, lower.tail=FALSE)``)."""
    t_arr = np.asarray(t, dtype=np.float64)
    half = 0.5 * np.asarray(t_two_sided_p(t_arr, df), dtype=np.float64)
    out = np.where(t_arr >= 0, half, 1.0 - half)
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------
# significance
# --------------------------------------------------------------------------------------


class SigResult(NamedTuple):
    """Verdict of a significance rule.

    ``significant``: draw the ``*``.  ``detail``: the p-value (t-test) or the cidiff ratio
    (ci95); NaN when not testable.  ``testable``: False when a side has fewer than two
    samples (or the mean is undefined); ``reason`` then says why.
    """

    significant: bool
    detail: float
    testable: bool = True
    reason: str = ""


def _not_testable(reason: str) -> SigResult:
    return SigResult(False, math.nan, False, reason)


def check_alpha(alpha, param: str = "alpha") -> float:
    """The significance level ``alpha`` as a float, or OptionError naming ``param``
    unless it is a number strictly between 0 and 1 (NaN is not)."""
    if isinstance(alpha, bool) or not isinstance(alpha, Real):
        raise OptionError(param, repr(alpha), "must be a number between 0 and 1")
    if not 0 < float(alpha) < 1:  # False for NaN
        raise OptionError(param, f"{alpha:g}", "must be a number between 0 and 1 (exclusive)")
    return float(alpha)


def ttest_from_summary(
    mean_base: float,
    sd_base: float,
    n_base: int,
    mean_new: float,
    sd_new: float,
    n_new: int,
    alpha: float = 0.10,
) -> SigResult:
    """mmtests' 2018-2024 ``Compare::_significanceTest`` (the rule behind the LKML tables).

    Two-sided t-test with the unpooled (Welch) standard error
    ``sqrt(sd_base^2/n_base + sd_new^2/n_new)`` but Student ``df = n_base + n_new - 2``;
    significant when ``p < alpha``.  A zero standard error is significant iff the means
    differ (p reported as 0.0 or 1.0).  Needs ``n >= 2`` on both sides.
    """
    check_alpha(alpha)  # a NaN alpha would make nothing significant, silently
    if n_base < 2 or n_new < 2:
        return _not_testable(f"needs >=2 samples per side (n={n_base}/{n_new})")
    if any(math.isnan(v) for v in (mean_base, mean_new, sd_base, sd_new)):
        return _not_testable("mean or stddev undefined")
    se = math.sqrt(sd_base**2 / n_base + sd_new**2 / n_new)
    if se == 0:
        differ = mean_base != mean_new
        return SigResult(differ, 0.0 if differ else 1.0)
    t_stat = abs(mean_base - mean_new) / se
    p = float(t_two_sided_p(t_stat, n_base + n_new - 2))
    return SigResult(p < alpha, p)


def ttest_lkml(base, new, alpha: float = 0.10, mean: MeanKind = "amean") -> SigResult:
    """:func:`ttest_from_summary` on two sample arrays.  ``mean="hmean"`` tests harmonic
    means with :func:`hstddev` as the spread (for Hmean rows)."""
    b, n = _clean(base), _clean(new)
    if b.size < 2 or n.size < 2:
        return _not_testable(f"needs >=2 samples per side (n={b.size}/{n.size})")
    return ttest_from_summary(
        mean_of(b, mean),
        _spread_of(b, mean),
        b.size,
        mean_of(n, mean),
        _spread_of(n, mean),
        n.size,
        alpha,
    )


def cidiff(
    new: float, new_ci: tuple[float, float], base: float, base_ci: tuple[float, float]
) -> float:
    """mmtests' ``cidiff``: the mean difference over the sum of the two facing CI half-widths
    (``|ratio| > 1`` means the intervals do not overlap).  ``*_ci`` are ``(low, high)``.
    If the facing half-widths sum to 0 the raw difference is returned (mmtests)."""
    diff = new - base
    if new < base:
        cisum = (new_ci[1] - new) + (base - base_ci[0])
    else:
        cisum = (new - new_ci[0]) + (base_ci[1] - base)
    return diff if cisum == 0 else diff / cisum


def ci95_test(base, new, mean: MeanKind = "amean") -> SigResult:
    """Current mmtests rule (since 2024-11): significant iff the intervals
    ``mean +- 1.96*sd`` (sd of the samples, not of the mean) of the two sides do not
    overlap, i.e. ``|cidiff| > 1``.  ``detail`` is the cidiff ratio.  Both spreads zero:
    significant iff the means differ (ratio +-inf) -- see the module notes."""
    b, n = _clean(base), _clean(new)
    if b.size < 2 or n.size < 2:
        return _not_testable(f"needs >=2 samples per side (n={b.size}/{n.size})")
    mb, mn = mean_of(b, mean), mean_of(n, mean)
    sb, sn = _spread_of(b, mean), _spread_of(n, mean)
    if any(math.isnan(v) for v in (mb, mn, sb, sn)):
        return _not_testable("mean or stddev undefined")
    hb, hn = Z_975 * sb, Z_975 * sn
    if hb + hn == 0:
        if mn == mb:
            return SigResult(False, 0.0)
        return SigResult(True, math.copysign(math.inf, mn - mb))
    ratio = cidiff(mn, (mn - hn, mn + hn), mb, (mb - hb, mb + hb))
    return SigResult(abs(ratio) > 1, float(ratio))
