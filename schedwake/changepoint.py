"""Change points in a series of builds: E-divisive means (Matteson & James 2014), as
Apache Otava (Hunter) uses it, on a 1-D sequence of per-run values grouped by build.

Pure NumPy: it knows nothing of traces. ``detect(builds)`` takes the runs' values of
each build, in build order (``[[1.0, 1.1, 0.9], [1.0, 1.2], ...]``), and returns the
builds where the series shifts (:class:`ChangePoint`: the first build after the shift,
its segment means before and after, the effect and its 95% confidence interval, the p
value of the split's permutation test). docs/series.md says why each default is what
it is and what power and false alarms they give.

The algorithm:

* The divergence of a split of the runs ``x_1..x_N`` at ``tau`` is the energy
  statistic of Matteson & James with exponent 1, ``Q = m n / (m + n) * E`` with
  ``E = 2/(m n) sum|x_i - y_j| - sum|x_i - x_k| / C(m,2) - sum|y_j - y_l| / C(n,2)``
  (``x`` the ``m`` runs before, ``y`` the ``n`` after); the splits considered are the
  build boundaries only, with at least ``min_segment`` builds on each side.
* The best split of a segment is tested by a permutation test: the segment's runs are
  shuffled ``permutations`` times (``numpy.random.default_rng``, seeded by ``seed`` and
  the segment: the same input gives the same answer), and the p value is the share of
  shuffles whose best split (over the same candidate boundaries) diverges as much,
  ``(1 + #{Q* >= Q}) / (permutations + 1)``.
* A significant split (``p <= alpha``) cuts the segment; both halves are searched
  again (recursive bisection) until no split of any segment is significant.

Runs with a value that is not finite are left out (their build keeps its other runs); a
build left with no run has no boundary of its own. Each change point's ``before`` and
``after`` are the means of the runs of the segments it separates (between the
neighbouring change points); ``effect`` is ``after / before - 1`` and its interval a
percentile bootstrap of that ratio (each segment's runs resampled, seeded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ChangePoint",
    "Detection",
    "detect",
    "divergence",
    "DEFAULT_ALPHA",
    "DEFAULT_MIN_SEGMENT",
    "DEFAULT_PERMUTATIONS",
    "BOOTSTRAP",
]

DEFAULT_ALPHA = 0.05
#: Builds on each side of a split: 1, so that the newest build can start a change (what
#: ``gate --series`` judges); docs/series.md gives the false alarms it costs.
DEFAULT_MIN_SEGMENT = 1
#: Shuffles of a permutation test: the smallest p is 1/1000, small enough for the
#: Benjamini-Hochberg step over a few dozen metrics (schedwake.series).
DEFAULT_PERMUTATIONS = 999
#: Resamples of the bootstrap interval of an effect.
BOOTSTRAP = 2000
#: Permuted distance matrices held at once (elements), for the memory.
_CHUNK = 4_000_000


@dataclass(frozen=True)
class ChangePoint:
    """A shift of the series: ``index`` is the first build after it (0-based, in the
    builds given), ``before``/``after`` the means of the runs of the segments on either
    side, ``effect`` ``after / before - 1`` with its 95% bootstrap interval
    ``ci_low``..``ci_high`` (NaN when a segment has a single run or the before mean is
    0), ``p`` the permutation test's p value of the split when it was made, ``q`` the
    divergence (energy statistic) of that split."""

    index: int
    before: float
    after: float
    effect: float
    ci_low: float
    ci_high: float
    p: float
    q: float
    n_before: int
    n_after: int


@dataclass(frozen=True)
class Detection:
    """The change points of one series, in build order, and ``p_first``: the p value of
    the best split of the whole series (1.0 when there is none to test), which a caller
    judging many series at once adjusts for their number (schedwake.series)."""

    change_points: tuple[ChangePoint, ...]
    p_first: float
    runs: int
    builds: int


def _check(alpha: float, min_segment: int, permutations: int) -> None:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must be between 0 and 1, not {alpha!r}")
    if isinstance(min_segment, bool) or not isinstance(min_segment, int) or min_segment < 1:
        raise ValueError(f"min_segment must be a whole number of builds >= 1, not {min_segment!r}")
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        raise ValueError(f"permutations must be a whole number >= 1, not {permutations!r}")


def _q_of_splits(d: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """The divergence Q of each split ``taus`` (run positions) of the distance matrices
    ``d`` (``(..., N, N)``), for all of them at once: ``(..., len(taus))``."""
    n_all = d.shape[-1]
    s = np.zeros(d.shape[:-2] + (n_all + 1, n_all + 1))
    s[..., 1:, 1:] = d.cumsum(-1).cumsum(-2)
    m = taus.astype(np.float64)
    n = n_all - m
    within_x = s[..., taus, taus]  # (every pair twice)
    cross = s[..., taus, n_all] - within_x
    within_y = s[..., n_all, n_all][..., None] - 2 * s[..., taus, n_all] + within_x
    e = (
        2 * cross / (m * n)
        - np.divide(within_x, m * (m - 1), out=np.zeros_like(within_x), where=m > 1)
        - np.divide(within_y, n * (n - 1), out=np.zeros_like(within_y), where=n > 1)
    )
    return m * n / (m + n) * e


def divergence(x: Sequence[float], tau: int) -> float:
    """The energy divergence Q of splitting the runs ``x`` before position ``tau``."""
    v = np.asarray(x, dtype=np.float64)
    if not 0 < tau < len(v):
        raise ValueError(f"tau must split the {len(v)} runs, not {tau!r}")
    d = np.abs(v[:, None] - v[None, :])
    return float(_q_of_splits(d, np.array([tau]))[0])


def _best_split(
    x: np.ndarray, taus: np.ndarray, permutations: int, rng: np.random.Generator
) -> tuple[int, float, float]:
    """(the best split's position in ``taus``, its Q, its permutation p value)."""
    d = np.abs(x[:, None] - x[None, :])
    q = _q_of_splits(d, taus)
    best = int(np.argmax(q))
    q_obs = float(q[best])
    if not q_obs > 0:  # (all runs equal: nothing diverges)
        return best, q_obs, 1.0
    n = len(x)
    perms = rng.permuted(np.tile(np.arange(n), (permutations, 1)), axis=1)
    chunk = max(1, _CHUNK // (n * n))
    exceed = 0
    tol = q_obs * 1e-9
    for i in range(0, permutations, chunk):
        p = perms[i : i + chunk]
        dp = d[p[:, :, None], p[:, None, :]]
        exceed += int((_q_of_splits(dp, taus).max(axis=1) >= q_obs - tol).sum())
    return best, q_obs, (1 + exceed) / (permutations + 1)


def detect(
    builds: Sequence[Sequence[float]],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
) -> Detection:
    """The change points of a series of ``builds`` (each a sequence of its runs' values,
    in build order): E-divisive means, splits at build boundaries only, each at least
    ``min_segment`` builds from the segment's ends, kept when the permutation test's p is
    at most ``alpha``. Deterministic for a given ``seed``."""
    _check(alpha, min_segment, permutations)
    vals: list[np.ndarray] = []
    for b in builds:
        a = np.asarray(b, dtype=np.float64).ravel()
        vals.append(a[np.isfinite(a)])
    kept = [i for i, a in enumerate(vals) if len(a)]  # builds with runs, by given index
    x = np.concatenate([vals[i] for i in kept]) if kept else np.zeros(0)
    # run position where each kept build starts, and one past the end
    starts = np.concatenate([[0], np.cumsum([len(vals[i]) for i in kept])]).astype(int)
    found: list[tuple[int, float, float]] = []  # (kept-build boundary, p, q)
    p_first = 1.0
    todo = [(0, len(kept))]
    first = True
    while todo:
        lo, hi = todo.pop()
        cands = np.arange(lo + min_segment, hi - min_segment + 1)
        if not len(cands):
            continue
        taus = starts[cands] - starts[lo]
        rng = np.random.default_rng([seed, lo, hi])
        best, q, p = _best_split(x[starts[lo] : starts[hi]], taus, permutations, rng)
        if first:
            p_first, first = p, False
        if p <= alpha:
            k = int(cands[best])
            found.append((k, p, q))
            todo += [(lo, k), (k, hi)]
    found.sort()
    cps = []
    bounds = [0] + [k for k, _, _ in found] + [len(kept)]
    for j, (k, p, q) in enumerate(found):
        before = x[starts[bounds[j]] : starts[k]]
        after = x[starts[k] : starts[bounds[j + 2]]]
        rng = np.random.default_rng([seed, k, 1])
        cps.append(_change_point(kept[k], before, after, p, q, rng))
    return Detection(tuple(cps), p_first, int(len(x)), len(kept))


def _change_point(
    index: int, before: np.ndarray, after: np.ndarray, p: float, q: float, rng: np.random.Generator
) -> ChangePoint:
    mb, ma = float(before.mean()), float(after.mean())
    effect = ma / mb - 1 if mb != 0 else math.nan
    lo = hi = math.nan
    if mb != 0 and len(before) > 1 and len(after) > 1:
        bb = rng.choice(before, (BOOTSTRAP, len(before))).mean(axis=1)
        ba = rng.choice(after, (BOOTSTRAP, len(after))).mean(axis=1)
        ok = bb != 0
        ratios = ba[ok] / bb[ok] - 1
        if len(ratios):
            lo, hi = (float(v) for v in np.percentile(ratios, [2.5, 97.5]))
    return ChangePoint(index, mb, ma, effect, lo, hi, p, q, len(before), len(after))
