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

import functools
import math
from numbers import Real
from typing import Literal, NamedTuple

import numpy as np

from ..errors import OptionError

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
    "TESTS",
    "Effect",
    "batch_means",
    "ci95_prediction",
    "holm",
    "lag1_autocorrelation",
    "mannwhitney_p",
    "mannwhitney_test",
    "mean_ratio_ci",
    "prediction_test",
    "rank_prediction_test",
    "significance",
    "t_quantile",
    "welch_df",
    "can_log",
    "log_ratio_ci",
    "geometric_mean",
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


# --------------------------------------------------------------------------------------
# replicates, not windows: the tests a verdict on runs uses (docs/gate.md, "Statistics")
# --------------------------------------------------------------------------------------


def welch_df(sd_base: float, n_base: int, sd_new: float, n_new: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of two means (NaN when
    both spreads are zero)."""
    vb, vn = sd_base**2 / n_base, sd_new**2 / n_new
    den = (vb**2 / (n_base - 1) if n_base > 1 else 0.0) + (
        vn**2 / (n_new - 1) if n_new > 1 else 0.0
    )
    return math.nan if den == 0 else (vb + vn) ** 2 / den


def _rank_sum_counts(scores: np.ndarray, k: int) -> np.ndarray:
    """``counts[s]``: how many of the subsets of size ``k`` of ``scores`` (non-negative
    integers) sum to ``s`` -- the exact permutation distribution of a rank sum, ties
    included (a dynamic programme over items, ``O(N * k * sum)``)."""
    total = int(scores.sum())
    table = np.zeros((k + 1, total + 1), dtype=np.float64)
    table[0, 0] = 1.0
    for item in scores.astype(np.int64):
        # subsets of size j+1 that take this item, from those of size j that do not
        table[1:, item:] += table[:-1, : total + 1 - item].copy()
    return table[k]


#: Above this many runs in all, the rank-sum test uses the normal approximation (with the
#: tie correction); below it the exact permutation distribution.
MANNWHITNEY_EXACT_MAX = 60


def mannwhitney_p(base, new) -> float:
    """Two-sided p of the Wilcoxon-Mann-Whitney rank-sum test of ``new`` against ``base``:
    exact (every split of the pooled runs equally likely, ties as mid-ranks) up to
    :data:`MANNWHITNEY_EXACT_MAX` runs, else the normal approximation with the tie
    correction. NaN with fewer than one run a side."""
    b, n = _clean(base), _clean(new)
    if b.size == 0 or n.size == 0:
        return math.nan
    pooled = np.concatenate([b, n])
    order = pooled.argsort(kind="mergesort")
    ranks = np.empty(pooled.size)
    ranks[order] = np.arange(1, pooled.size + 1, dtype=np.float64)
    # mid-ranks for ties
    vals, inverse, counts = np.unique(pooled, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    ranks = (sums / counts)[inverse]
    w = float(ranks[b.size :].sum())
    big_n = pooled.size
    expect = n.size * (big_n + 1) / 2.0
    if big_n <= MANNWHITNEY_EXACT_MAX:
        doubled = np.rint(ranks * 2).astype(np.int64)  # mid-ranks are halves
        dist = _rank_sum_counts(doubled, n.size)
        dist = dist / dist.sum()
        sums2 = np.arange(dist.size, dtype=np.float64)
        far = np.abs(sums2 - 2 * expect) >= abs(2 * w - 2 * expect) - 1e-9
        return float(min(1.0, dist[far].sum()))
    tie = float(np.sum(counts**3 - counts)) / (big_n * (big_n - 1))
    var = b.size * n.size / 12.0 * ((big_n + 1) - tie)
    if var <= 0:
        return 1.0
    z = max(abs(w - expect) - 0.5, 0.0) / math.sqrt(var)
    return float(math.erfc(z / math.sqrt(2.0)))


def mannwhitney_min_p(n_base: int, n_new: int) -> float:
    """The smallest two-sided p the exact rank-sum test can give with these many runs
    (all of one side above all of the other): ``2 / C(n_base + n_new, n_new)``."""
    return min(1.0, 2.0 / math.comb(n_base + n_new, n_new))


def mannwhitney_test(base, new, alpha: float = 0.05) -> SigResult:
    """:func:`mannwhitney_p` as a verdict. Not testable with fewer than two runs a side,
    or when even the most extreme split of the runs could not reach ``alpha`` (3 runs a
    side: p >= 0.1), rather than a test that can never say significant."""
    check_alpha(alpha)
    b, n = _clean(base), _clean(new)
    if b.size < 2 or n.size < 2:
        return _not_testable(f"needs >=2 samples per side (n={b.size}/{n.size})")
    floor = mannwhitney_min_p(b.size, n.size)
    if floor >= alpha:
        return _not_testable(
            f"with n={b.size}/{n.size} the rank test's smallest p is {floor:.3g} >= alpha "
            f"{alpha:g}: give more runs"
        )
    p = mannwhitney_p(b, n)
    return SigResult(p < alpha, p)


def _as_mean_kind(a: np.ndarray, mean: MeanKind) -> np.ndarray:
    """The values whose arithmetic mean the ``mean`` of ``a`` is built from: ``a`` itself
    for amean, its reciprocals for hmean (the harmonic mean is 1 / mean(1/x)); NaN for
    an hmean of a value <= 0."""
    if mean == "amean":
        return a
    if a.size and np.any(a <= 0):
        return np.full(a.shape, math.nan)
    return 1.0 / a


def prediction_test(
    base, new_value: float, alpha: float = 0.05, mean: MeanKind = "amean"
) -> SigResult:
    """Is one new run outside the baseline runs' spread? The t prediction interval of a
    new observation: ``t = (x - mean) / (sd * sqrt(1 + 1/n))`` with ``n - 1`` degrees of
    freedom (two-sided p). For ``mean="hmean"`` the test is on reciprocals, as the
    harmonic mean is. Not testable with fewer than two baseline runs: one run has no
    between-run spread to judge a candidate against."""
    check_alpha(alpha)
    b = _clean(base)
    if b.size < 2:
        return _not_testable(f"give >= 2 baseline runs (n={b.size}/1)")
    x = float(new_value)
    y = _as_mean_kind(b, mean)
    xv = _as_mean_kind(np.array([x]), mean)[0]
    if math.isnan(xv) or np.isnan(y).any():
        return _not_testable("mean or stddev undefined")
    m, s = float(y.mean()), float(y.std(ddof=1))
    if s == 0:
        differ = xv != m
        return SigResult(differ, 0.0 if differ else 1.0)
    t_stat = abs(xv - m) / (s * math.sqrt(1.0 + 1.0 / y.size))
    p = float(t_two_sided_p(t_stat, y.size - 1))
    return SigResult(p < alpha, p)


def rank_prediction_test(base, new_value: float, alpha: float = 0.05) -> SigResult:
    """The rank version of :func:`prediction_test`: if the new run were one more run of
    the baseline, each of the ``n + 1`` ranks would be equally likely; two-sided
    ``p = min(1, 2 * (1 + #runs on the far side) / (n + 1))``. Not testable when even
    the most extreme rank cannot reach ``alpha`` (``2 / (n + 1) >= alpha``: 39 baseline
    runs for 0.05)."""
    check_alpha(alpha)
    b = _clean(base)
    if b.size < 2:
        return _not_testable(f"give >= 2 baseline runs (n={b.size}/1)")
    floor = 2.0 / (b.size + 1)
    if floor >= alpha:
        need = math.floor(2.0 / alpha)
        return _not_testable(
            f"one candidate run ranked among {b.size} baseline runs: the smallest p is "
            f"{floor:.3g} >= alpha {alpha:g} (needs >= {need} baseline runs)"
        )
    x = float(new_value)
    above, below = int(np.sum(b >= x)), int(np.sum(b <= x))
    p = min(1.0, 2.0 * (1 + min(above, below)) / (b.size + 1))
    return SigResult(p < alpha, p)


def ci95_prediction(base, new_value: float, mean: MeanKind = "amean") -> SigResult:
    """mmtests' ci95 rule for one new run: its (zero-width) interval does not overlap
    the baseline's ``mean +- 1.96*sd``; ``detail`` is the cidiff ratio."""
    b = _clean(base)
    if b.size < 2:
        return _not_testable(f"give >= 2 baseline runs (n={b.size}/1)")
    mb, sb = mean_of(b, mean), _spread_of(b, mean)
    x = float(new_value)
    if any(math.isnan(v) for v in (mb, sb, x)):
        return _not_testable("mean or stddev undefined")
    hb = Z_975 * sb
    if hb == 0:
        return SigResult(x != mb, 0.0 if x == mb else math.copysign(math.inf, x - mb))
    ratio = cidiff(x, (x, x), mb, (mb - hb, mb + hb))
    return SigResult(abs(ratio) > 1, float(ratio))


#: The significance rules a comparison can use on the mean row.
TESTS = ("ttest", "ci95", "mannwhitney")


def significance(
    base, new, rule: str = "ttest", alpha: float = 0.10, mean: MeanKind = "amean"
) -> SigResult:
    """The verdict of ``rule`` on two sides' per-run samples: a two-sample test when
    both sides have >= 2 runs (``ttest``: :func:`ttest_lkml`; ``ci95``: :func:`ci95_test`;
    ``mannwhitney``: :func:`mannwhitney_test`), a prediction test when the new side has
    one run (:func:`prediction_test`, :func:`ci95_prediction`,
    :func:`rank_prediction_test`); not testable with one baseline run."""
    b, n = _clean(base), _clean(new)
    if b.size < 2:
        return _not_testable(f"give >= 2 baseline runs (n={b.size}/{n.size})")
    if n.size == 1:
        if rule == "ci95":
            return ci95_prediction(b, float(n[0]), mean)
        if rule == "mannwhitney":
            return rank_prediction_test(b, float(n[0]), alpha)
        return prediction_test(b, float(n[0]), alpha, mean)
    if rule == "ci95":
        return ci95_test(b, n, mean)
    if rule == "mannwhitney":
        return mannwhitney_test(b, n, alpha)
    return ttest_lkml(b, n, alpha, mean)


class Effect(NamedTuple):
    """The new side's mean over the baseline's (``ratio``) with its confidence interval
    (``low``, ``high``; NaN when it cannot be given: a zero or undefined baseline mean,
    fewer than two baseline runs)."""

    ratio: float
    low: float
    high: float
    level: float = 0.95

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile (``0.5 < p < 1``) of Student's t with ``df`` degrees of freedom:
    Newton's method on :func:`t_sf` from the Cornish-Fisher start (a few steps to
    1e-12), falling back to bisection if a step leaves the bracket."""
    if not 0.5 < p < 1 or not df > 0:
        raise ValueError("t_quantile needs 0.5 < p < 1 and df > 0")
    from statistics import NormalDist

    z = NormalDist().inv_cdf(p)
    # Cornish-Fisher expansion of the t quantile in 1/df (Abramowitz & Stegun 26.7.5)
    x = (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    lo, hi = 0.0, max(2.0 * x, 1.0)
    while float(t_sf(hi, df)) > 1 - p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(60):
        err = (1 - float(t_sf(x, df))) - p  # cdf(x) - p
        if abs(err) < 1e-13:
            break
        if err > 0:
            hi = min(hi, x)
        else:
            lo = max(lo, x)
        pdf = math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))
        step = x - err / pdf if pdf > 0 else math.nan
        x = step if lo < step < hi else (lo + hi) / 2.0
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return x


def _difference_interval(
    yb: np.ndarray, yn: np.ndarray, level: float, df_rule: str = "welch"
) -> tuple[float, float]:
    """``(mean(yn) - mean(yb), half-width)`` of the ``level`` interval of the difference:
    with >= 2 values a side the Welch standard error with the Welch-Satterthwaite degrees
    of freedom (``df_rule="welch"``) or mmtests' ``n1 + n2 - 2`` (``"lkml"``, the df of
    :func:`ttest_lkml`, so that the interval and that test agree); the t prediction
    interval of one new value (``sd * sqrt(1 + 1/n)``, ``n - 1`` df) with one. The
    half-width is NaN with one baseline value or no degrees of freedom, 0 with no
    spread."""
    diff = float(yn.mean() - yb.mean())
    if yb.size < 2:
        return diff, math.nan
    sb = float(yb.std(ddof=1))
    if yn.size == 1:
        se, df = sb * math.sqrt(1.0 + 1.0 / yb.size), float(yb.size - 1)
    else:
        sn = float(yn.std(ddof=1))
        se = math.sqrt(sb**2 / yb.size + sn**2 / yn.size)
        if df_rule == "lkml":
            df = float(yb.size + yn.size - 2)
        else:
            df = welch_df(sb, yb.size, sn, yn.size)
    if se == 0:
        return diff, 0.0
    if not math.isfinite(df) or df <= 0:
        return diff, math.nan
    return diff, t_quantile(0.5 + level / 2.0, df) * se


def mean_ratio_ci(
    base, new, level: float = 0.95, mean: MeanKind = "amean", df_rule: str = "welch"
) -> Effect:
    """``mean(new) / mean(base)`` with a ``level`` confidence interval: the interval of
    the difference of the means (:func:`_difference_interval`: Welch's with >= 2 runs a
    side, the prediction interval of one new run) in units of the baseline mean, so
    that it excludes 1 where the matching test is significant at ``1 - level``
    (``df_rule="lkml"`` for :func:`ttest_lkml`'s degrees of freedom).
    ``mean="hmean"`` gives the ratio of harmonic means (the interval is taken on the
    reciprocals, whose mean the harmonic mean inverts; an end that crosses zero there is
    infinite). The interval is NaN with fewer than two baseline runs or a baseline mean
    of zero."""
    b, n = _clean(base), _clean(new)
    nan = Effect(math.nan, math.nan, math.nan, level)
    if b.size == 0 or n.size == 0:
        return nan
    yb, yn = _as_mean_kind(b, mean), _as_mean_kind(n, mean)
    if np.isnan(yb).any() or np.isnan(yn).any():
        return nan
    mb, mn = float(yb.mean()), float(yn.mean())
    if mb == 0 or (mean == "hmean" and mn == 0):
        return nan

    def ratio_of(d: float) -> float:
        if mean == "amean":
            return 1.0 + d / mb
        inner = 1.0 + d / mb  # mean(1/new) / mean(1/base): the ratio's reciprocal
        return math.inf if inner <= 0 else 1.0 / inner

    diff, half = _difference_interval(yb, yn, level, df_rule)
    ratio = ratio_of(diff)
    if math.isnan(half):
        return Effect(ratio, math.nan, math.nan, level)
    ends = sorted((ratio_of(diff - half), ratio_of(diff + half)))
    return Effect(ratio, ends[0], ends[1], level)


def can_log(*arrays) -> bool:
    """True when every value of ``arrays`` (NaN dropped) is above zero: a log scale
    exists for them."""
    return all(bool(np.all(_clean(a) > 0)) for a in arrays)


def log_ratio_ci(base, new, level: float = 0.95, df_rule: str = "welch") -> Effect:
    """The ratio of the geometric means, ``exp(mean(log new) - mean(log base))``, with
    the ``level`` interval of the log difference (:func:`_difference_interval`)
    exponentiated; NaN unless every value is above zero."""
    b, n = _clean(base), _clean(new)
    if b.size == 0 or n.size == 0 or not can_log(b, n):
        return Effect(math.nan, math.nan, math.nan, level)
    diff, half = _difference_interval(np.log(b), np.log(n), level, df_rule)
    if math.isnan(half):
        return Effect(math.exp(diff), math.nan, math.nan, level)
    return Effect(math.exp(diff), math.exp(diff - half), math.exp(diff + half), level)


def geometric_mean(x) -> float:
    """``exp(mean(log x))``; NaN if empty or any value is <= 0."""
    a = _clean(x)
    if a.size == 0 or np.any(a <= 0):
        return math.nan
    return float(np.exp(np.log(a).mean()))


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN): rejecting where the adjusted p
    is below alpha keeps the chance of any false rejection among the family at most
    alpha, whatever the tests' dependence."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, math.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok], kind="mergesort")]
    m = order.size
    running = 0.0
    for i, idx in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[idx]))
        out[idx] = running
    return out


def batch_means(values, batches: int) -> np.ndarray:
    """Means of ``batches`` consecutive, (nearly) equal groups of ``values`` in time
    order (NaN values dropped within a group; a group of only NaN gives NaN): the batch
    means method for autocorrelated windows of one run, whose groups are far less
    correlated than the windows themselves."""
    a = np.asarray(values, dtype=np.float64).ravel()
    k = max(1, min(int(batches), a.size))
    if a.size == 0:
        return np.empty(0)
    out = []
    for part in np.array_split(a, k):
        good = part[~np.isnan(part)]
        out.append(float(good.mean()) if good.size else math.nan)
    return np.array(out)


def lag1_autocorrelation(values) -> float:
    """The lag-1 autocorrelation of a sequence (NaN when it has fewer than 3 values or
    no spread)."""
    a = _clean(values)
    if a.size < 3:
        return math.nan
    d = a - a.mean()
    den = float(np.dot(d, d))
    return math.nan if den == 0 else float(np.dot(d[:-1], d[1:]) / den)
