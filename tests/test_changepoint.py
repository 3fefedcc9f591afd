"""schedwake.changepoint on sequences fed by hand: where a step is, that none is found
where there is none, and the rules (minimum segment, NaN runs, one-run builds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedwake.changepoint import detect, divergence

# three runs a build, a little noise, fixed
NOISE = [-0.1, 0.05, 0.1, 0.0, -0.05, 0.08, -0.02, 0.03, -0.08, 0.06, 0.01, -0.04]


def series(levels, runs=3):
    """Builds at ``levels``, each ``runs`` runs of the level plus fixed noise."""
    out, k = [], 0
    for level in levels:
        out.append([level + NOISE[(k + j) % len(NOISE)] for j in range(runs)])
        k += runs
    return out


def indexes(d):
    return [c.index for c in d.change_points]


def test_clean_step_is_found_at_its_build():
    d = detect(series([10] * 5 + [12] * 4))
    assert indexes(d) == [5]
    (c,) = d.change_points
    assert c.before == pytest.approx(10, abs=0.05) and c.after == pytest.approx(12, abs=0.05)
    assert c.effect == pytest.approx(0.2, abs=0.01)
    assert c.ci_low <= c.effect <= c.ci_high and c.ci_low > 0.15
    assert c.p <= 0.01 and d.p_first == c.p
    assert (c.n_before, c.n_after) == (15, 12)


def test_constant_series_has_none():
    d = detect([[5.0, 5.0]] * 8)
    assert indexes(d) == [] and d.p_first == 1.0


def test_noisy_unchanged_series_has_none():
    rng = np.random.default_rng(7)
    d = detect(list(rng.normal(100, 10, (10, 3))))
    assert indexes(d) == [] and d.p_first > 0.05


def test_two_steps_are_found():
    assert indexes(detect(series([1] * 4 + [3] * 4 + [1.5] * 4))) == [4, 8]


def test_min_segment_is_respected():
    s = series([1] * 6 + [5])  # the newest build alone differs
    assert indexes(detect(s)) == [6]
    assert indexes(detect(s, min_segment=2)) != [6]
    d = detect(series([1] * 2 + [5] * 6), min_segment=3)
    assert all(c.index >= 3 for c in d.change_points)


def test_nan_runs_are_dropped():
    s = series([10] * 4 + [12] * 4)
    s[1][0] = math.nan
    s[6][2] = math.inf
    d = detect(s)
    assert indexes(d) == [4] and d.runs == 22
    # a build left without runs has no boundary; the others keep their indexes
    s[4] = [math.nan] * 3
    assert indexes(detect(s)) == [5]


def test_builds_of_one_run():
    d = detect([[1.0], [1.1], [0.9], [1.0], [3.0], [3.1], [2.9], [3.0]])
    assert indexes(d) == [4]
    (c,) = d.change_points
    assert c.ci_low <= c.effect <= c.ci_high


def test_one_run_segment_has_no_interval():
    # (a lone run is significant only among enough runs: its p is at least 1/runs)
    assert indexes(detect([[1.0, 1.1], [0.9, 1.0], [1.05, 0.95], [1.0, 1.02], [9.0]])) == []
    d = detect(series([1] * 8) + [[9.0]])
    assert indexes(d) == [8]
    (c,) = d.change_points
    assert c.effect == pytest.approx(9.0 / c.before - 1) and math.isnan(c.ci_low)


def test_deterministic_for_a_seed():
    rng = np.random.default_rng(3)
    s = list(rng.normal(0, 1, (8, 3)) + np.repeat([0, 0, 0, 0, 1, 1, 1, 1], 3).reshape(8, 3))
    a, b = detect(s, seed=4), detect(s, seed=4)
    assert a == b


def test_too_short_a_series_tests_nothing():
    assert detect([[1.0, 2.0]]).change_points == ()
    assert detect([]).change_points == ()
    assert detect([[1.0], [9.0]], min_segment=1).p_first == 1.0  # (two runs: p is 1/1)


def test_divergence_is_the_energy_statistic():
    x = np.array([0.3, -1.2, 0.8, 2.0, 1.1, 0.4, -0.5])
    tau = 3
    a, b = x[:tau], x[tau:]
    m, n = len(a), len(b)
    e = (
        2 * np.abs(a[:, None] - b[None]).mean()
        - np.abs(a[:, None] - a[None]).sum() / (m * (m - 1))
        - np.abs(b[:, None] - b[None]).sum() / (n * (n - 1))
    )
    assert divergence(x, tau) == pytest.approx(m * n / (m + n) * e)


@pytest.mark.parametrize(
    "kw", [{"alpha": 0}, {"alpha": 1.5}, {"min_segment": 0}, {"permutations": 0}]
)
def test_bad_parameters(kw):
    with pytest.raises(ValueError):
        detect([[1.0]] * 4, **kw)
