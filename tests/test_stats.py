"""mmtests summary statistics, percentages and significance rules (schedwake.compare.stats)."""

import math

import numpy as np
import pytest

from schedwake.compare import stats as st

# The published "elapsed" block (lore 20220217002227.5739-6-mgorman): 10 runs whose
# Min/Amean/Stddev/Max/BAmean-50/95 are 540.00/543.00/4.83/550.00/540.00/542.22.
ELAPSED = np.array([540.0] * 7 + [550.0] * 3)


# ---- summary statistics ---------------------------------------------------------------


def test_elapsed_block_statistics():
    assert st.smin(ELAPSED) == 540.0
    assert st.smax(ELAPSED) == 550.0
    assert st.amean(ELAPSED) == pytest.approx(543.0)
    assert f"{st.stddev(ELAPSED):.2f}" == "4.83"
    assert f"{st.coeffvar(ELAPSED):.2f}" == "0.89"
    assert st.best_mean(ELAPSED, 50, "lower") == 540.0  # best 5
    assert f"{st.best_mean(ELAPSED, 95, 'lower'):.2f}" == "542.22"  # best int(9.5)=9
    assert f"{st.best_mean(ELAPSED, 99, 'lower'):.2f}" == "542.22"


def test_hmean_and_nan_rules():
    assert st.hmean([1.0, 2.0, 4.0]) == pytest.approx(3 / (1 + 0.5 + 0.25))
    assert math.isnan(st.hmean([1.0, 0.0, 2.0]))
    assert math.isnan(st.hmean([1.0, -3.0]))
    assert math.isnan(st.hmean([]))
    assert math.isnan(st.amean([]))
    assert math.isnan(st.smin([]))
    # NaN entries are missing values, not poison
    assert st.amean([1.0, np.nan, 3.0]) == 2.0


def test_stddev_is_sample_stddev_and_nan_below_two():
    assert st.stddev([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) == pytest.approx(math.sqrt(32 / 7))
    assert math.isnan(st.stddev([5.0]))
    assert math.isnan(st.stddev([]))


def test_hstddev_formula():
    x = np.array([1.0, 2.0, 4.0])
    h = st.hmean(x)
    expected = math.sqrt(sum((1 / v - 1 / h) ** 2 for v in x) * h**4 / 3)
    assert st.hstddev(x) == pytest.approx(expected)
    assert st.hstddev([3.0, 3.0, 3.0]) == 0.0
    assert math.isnan(st.hstddev([1.0, 0.0]))


def test_coeffvar_zero_rules():
    assert st.coeffvar([-1.0, 1.0]) == 0.0  # mean 0 -> 0
    assert st.coeffvar([7.0]) == 0.0  # stddev NaN counts as 0
    assert st.coeffvar([]) == 0.0
    assert st.coeffvar([9.0, 11.0]) == pytest.approx(math.sqrt(2) * 100 / 10)


def test_best_mean_direction_and_tiny_samples():
    x = [10.0, 20.0, 30.0, 40.0]
    assert st.best_mean(x, 50, "lower") == 15.0  # two smallest
    assert st.best_mean(x, 50, "higher") == 35.0  # two largest
    assert st.best_mean(x, 50, "higher", "hmean") == pytest.approx(2 / (1 / 40 + 1 / 30))
    # int(n*N/100) == 0: the single best sample (mmtests would average an empty slice)
    assert st.best_mean([5.0], 50, "lower") == 5.0
    assert st.best_mean([3.0, 9.0], 25, "higher") == 9.0
    assert st.best_mean([3.0, 9.0], 25, "lower") == 3.0
    assert math.isnan(st.best_mean([], 95, "lower"))
    with pytest.raises(ValueError):
        st.best_mean(x, 50, "sideways")


# ---- percentages ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "new,base,func,text",
    [
        (20.5412, 22.63, "pndiff", "9.23"),  # Amean 22.63 -> 20.54
        (617.82, 321.41, "pdiff", "92.22"),  # Hmean 321.41 -> 617.82
        (51263.38, 53019.93, "pdiff", "-3.31"),  # Max of a higher-is-better metric
        (3713.97, 3471.61, "pndiff", "-6.98"),  # Stddev 3471.61 -> 3713.97
        (2.4026, 3.54, "pndiff", "32.13"),  # Stddev 3.54 -> 2.40
        (0.0, 4.83, "pndiff", "100.00"),  # Stddev 4.83 -> 0.00
        (530.0, 543.0, "pndiff", "2.39"),
    ],
)
def test_published_percentages(new, base, func, text):
    assert f"{st.compare_pct(new, base, func):.2f}" == text


def test_pdiff_zero_rules():
    assert st.pdiff(5.0, 5.0) == 0.0
    assert st.pdiff(0.0, 5.0) == 0.0  # new == 0 -> 0 (before base == 0)
    assert st.pdiff(0.0, 0.0) == 0.0
    assert st.pdiff(3.0, 0.0) == 100.0
    assert st.pdiff(3.0, math.nan) == 100.0  # perl: $_[1] eq "NaN"
    assert st.pdiff(150.0, 100.0) == pytest.approx(50.0)
    assert math.isnan(st.pdiff(math.nan, 2.0))


def test_pndiff_zero_rules():
    assert st.pndiff(5.0, 5.0) == 0.0
    assert st.pndiff(0.0, 5.0) == 100.0
    assert st.pndiff(0.0, 0.0) == 0.0  # equal wins over new == 0
    assert st.pndiff(3.0, 0.0) == -99.0
    assert st.pndiff(50.0, 100.0) == pytest.approx(50.0)
    assert st.pndiff(150.0, 100.0) == pytest.approx(-50.0)


def test_pdiff_pndiff_vectorized():
    new = np.array([5.0, 0.0, 3.0, 150.0])
    base = np.array([5.0, 5.0, 0.0, 100.0])
    np.testing.assert_allclose(st.pdiff(new, base), [0.0, 0.0, 100.0, 50.0])
    np.testing.assert_allclose(st.pndiff(new, base), [0.0, 100.0, -99.0, -50.0])


def test_compare_pct_missing_values():
    assert st.compare_pct(math.nan, 5.0, "pdiff") == 0.0
    assert st.compare_pct(5.0, math.nan, "pndiff") == 0.0
    assert st.compare_pct(-1.0, 5.0, "pdiff") == 0.0  # mmtests "no value" sentinel
    assert st.compare_pct(5.0, -1.0, "pndiff") == 0.0
    assert st.compare_pct(-1.0, -2.0, "pndiff", sentinel=None) == pytest.approx(50.0)


def test_pct_func_name():
    assert st.pct_func_name("stddev", "higher") == "pndiff"
    assert st.pct_func_name("coeffvar", "higher") == "pndiff"
    assert st.pct_func_name("min", "higher") == "pdiff"
    assert st.pct_func_name("max", "lower") == "pndiff"
    with pytest.raises(ValueError):
        st.pct_func_name("min", "up")


# ---- incomplete beta / Student t --------------------------------------------------------


def test_betainc_closed_forms():
    x = np.linspace(0, 1, 41)
    np.testing.assert_allclose(st.betainc(1.0, 1.0, x), x, atol=1e-14)
    np.testing.assert_allclose(st.betainc(3.0, 1.0, x), x**3, atol=1e-13)
    np.testing.assert_allclose(st.betainc(1.0, 2.5, x), 1 - (1 - x) ** 2.5, atol=1e-13)
    # symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
    assert st.betainc(2.3, 4.1, 0.37) == pytest.approx(1 - st.betainc(4.1, 2.3, 0.63), abs=1e-14)
    with pytest.raises(ValueError):
        st.betainc(0.0, 1.0, 0.5)
    with pytest.raises(ValueError):
        st.betainc(1.0, 1.0, 1.5)


@pytest.mark.parametrize(
    "t,df,p",
    [
        (2.0, 10, 0.07338803477074),  # R: 2*pt(2, 10, lower.tail=FALSE)
        (1.0, 1, 0.5),
        (3.0, 5, 0.03009924789746),
        (0.0, 7, 1.0),
    ],
)
def test_t_two_sided_known_values(t, df, p):
    assert st.t_two_sided_p(t, df) == pytest.approx(p, abs=1e-10)


def test_t_distribution_closed_forms_and_limits():
    t = np.linspace(0, 60, 601)
    # df=1 is Cauchy, df=2 has a closed form
    np.testing.assert_allclose(st.t_two_sided_p(t, 1), 1 - 2 / np.pi * np.arctan(t), atol=1e-12)
    np.testing.assert_allclose(st.t_two_sided_p(t, 2), 1 - t / np.sqrt(2 + t**2), atol=1e-12)
    # large df -> normal: P(|Z| > 1.959964) = 0.05
    assert st.t_two_sided_p(st.Z_975, 1e7) == pytest.approx(0.05, abs=1e-6)
    assert st.t_two_sided_p(math.inf, 3) == 0.0
    assert st.t_sf(2.0, 10) == pytest.approx(0.07338803477074 / 2, abs=1e-10)
    assert st.t_sf(-2.0, 10) == pytest.approx(1 - 0.07338803477074 / 2, abs=1e-10)
    assert st.t_sf(0.0, 4) == pytest.approx(0.5)


# ---- significance ----------------------------------------------------------------------


def test_ttest_summary_p_and_alpha():
    # n=6/6, sd 1/1: se = sqrt(1/3); diff = 2*se gives t=2 with df=10 -> p=0.0734
    se = math.sqrt(1 / 6 + 1 / 6)
    r = st.ttest_from_summary(10.0, 1.0, 6, 10.0 + 2 * se, 1.0, 6)
    assert r.testable and r.significant
    assert r.detail == pytest.approx(0.07338803477074, abs=1e-9)
    assert not st.ttest_from_summary(10.0, 1.0, 6, 10.0 + 2 * se, 1.0, 6, alpha=0.05).significant


def test_ttest_uses_welch_se_with_student_df():
    # unequal n and sd: t = |d| / sqrt(s1^2/n1 + s2^2/n2), df = n1+n2-2 (not Welch df)
    r = st.ttest_from_summary(5.0, 2.0, 4, 7.0, 0.5, 9)
    t = 2.0 / math.sqrt(4 / 4 + 0.25 / 9)
    assert r.detail == pytest.approx(float(st.t_two_sided_p(t, 11)), abs=1e-12)


def test_ttest_zero_stderr_rule_and_not_testable():
    assert st.ttest_from_summary(5.0, 0.0, 3, 6.0, 0.0, 3) == (True, 0.0, True, "")
    assert st.ttest_from_summary(5.0, 0.0, 3, 5.0, 0.0, 3).significant is False
    r = st.ttest_lkml([1.0], [2.0, 3.0])
    assert not r.significant and not r.testable and math.isnan(r.detail)
    assert "2 samples" in r.reason


def test_ttest_lkml_from_arrays():
    a = np.array([22.62, 22.63, 22.64])
    b = np.array([20.53, 20.54, 20.55])
    r = st.ttest_lkml(a, b)
    assert r.significant and r.detail < 1e-6
    noisy = st.ttest_lkml(a + [-5, 0, 5], b + [5, 0, -5])
    assert not noisy.significant and noisy.detail > 0.10
    # hmean variant uses the harmonic mean and hstddev
    h = st.ttest_lkml([100.0, 101.0, 99.0], [200.0, 201.0, 199.0], mean="hmean")
    assert h.significant


def test_ci95_overlap_and_non_overlap():
    base = [10.0, 11.0, 12.0]  # mean 11, sd 1 -> [9.04, 12.96]
    close = [13.0, 14.0, 15.0]  # mean 14, sd 1 -> [12.04, 15.96]: overlaps
    far = [15.0, 16.0, 17.0]  # mean 16: [14.04, 17.96]: disjoint
    r_close = st.ci95_test(base, close)
    assert not r_close.significant
    assert r_close.detail == pytest.approx(3.0 / (2 * st.Z_975))
    r_far = st.ci95_test(base, far)
    assert r_far.significant
    assert r_far.detail == pytest.approx(5.0 / (2 * st.Z_975))
    assert st.ci95_test(far, base).detail == pytest.approx(-5.0 / (2 * st.Z_975))
    # the t-test is far less strict: the overlapping case is significant at alpha 0.10
    assert st.ttest_lkml(base, close).significant


def test_ci95_zero_spread_and_not_testable():
    assert st.ci95_test([5.0, 5.0], [5.5, 5.5]).significant  # differ, zero width
    assert st.ci95_test([5.0, 5.0], [5.5, 5.5]).detail == math.inf
    assert not st.ci95_test([5.0, 5.0], [5.0, 5.0]).significant
    assert not st.ci95_test([5.0], [6.0, 7.0]).testable
    # cidiff keeps the mmtests arithmetic: zero CI sum -> raw difference
    assert st.cidiff(5.5, (5.5, 5.5), 5.0, (5.0, 5.0)) == 0.5
    assert st.cidiff(12.0, (10.0, 14.0), 5.0, (4.0, 6.0)) == pytest.approx(7.0 / 3.0)


# -- replicates, not windows: rank test, prediction, effects, Holm, batch means ------------------
# (the expected values are scipy's 1.x: mannwhitneyu, t.ppf and t.sf, computed outside
# this project, which has no scipy)


def test_mannwhitney_exact_and_with_ties_and_normal():
    base = [12.1, 13.4, 11.8, 12.9, 14.2]
    new = [15.3, 14.8, 16.1, 13.9]
    assert st.mannwhitney_p(base, new) == pytest.approx(0.031746031746031744, rel=1e-12)
    # ties: the exact permutation distribution of the mid-rank sum (50 of 462 splits)
    assert st.mannwhitney_p([1, 2, 2, 3, 3, 3], [2, 3, 4, 4, 5]) == pytest.approx(50 / 462)
    # above MANNWHITNEY_EXACT_MAX runs: the normal approximation with continuity
    big = st.mannwhitney_p(np.arange(70.0), np.arange(35.0) + 20)
    assert big == pytest.approx(0.5542232679963891, rel=1e-9)


def test_mannwhitney_says_when_it_cannot_reach_alpha():
    # 3 runs a side: the most extreme split has p = 2/20 = 0.1
    assert st.mannwhitney_min_p(3, 3) == pytest.approx(0.1)
    r = st.mannwhitney_test([1, 2, 3], [4, 5, 6], alpha=0.05)
    assert not r.testable and "smallest p is 0.1" in r.reason
    r = st.mannwhitney_test([1, 2, 3, 4], [5, 6, 7, 8], alpha=0.05)
    assert r.testable and r.significant and r.detail == pytest.approx(2 / 70)


def test_prediction_of_one_run_against_the_baseline_runs():
    # t = 30 / (1 * sqrt(1 + 1/3)), 2 degrees of freedom
    r = st.prediction_test([100, 101, 99], 130, alpha=0.05)
    assert r.significant and r.detail == pytest.approx(0.001478197408234942, rel=1e-9)
    assert not st.prediction_test([100, 140, 60], 130, alpha=0.05).significant
    one = st.prediction_test([100], 130, alpha=0.05)
    assert not one.testable and "give >= 2 baseline runs" in one.reason
    # the dispatcher: two samples, one new run, one baseline run
    assert st.significance([1, 2, 3], [7], "ttest", 0.05) == st.prediction_test([1, 2, 3], 7, 0.05)
    assert not st.significance([1], [7, 8], "ttest", 0.05).testable
    rank = st.rank_prediction_test(list(range(10)), 100, alpha=0.05)
    assert not rank.testable and "needs >= 40 baseline runs" in rank.reason
    rank = st.rank_prediction_test(list(range(45)), 100, alpha=0.05)
    assert rank.significant and rank.detail == pytest.approx(2 / 46)


def test_t_quantile_matches_scipy():
    assert st.t_quantile(0.975, 2.5) == pytest.approx(3.5746548420036817, rel=1e-9)
    assert st.t_quantile(0.995, 7) == pytest.approx(3.4994832973504924, rel=1e-9)


def test_effect_interval_agrees_with_its_test():
    """The ratio's interval excludes 1 exactly where the matching test (Welch's interval,
    the prediction interval) rejects at 5%."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        base = rng.normal(10, 1, 5)
        x = float(rng.normal(11, 1))
        e = st.mean_ratio_ci(base, [x])
        assert (not e.low <= 1 <= e.high) == st.prediction_test(base, x, 0.05).significant
    e = st.mean_ratio_ci([10, 10.5, 9.5], [13, 13.5, 12.5])
    assert e.ratio == pytest.approx(1.3) and e.low < 1.3 < e.high and e.low > 1
    assert math.isnan(st.mean_ratio_ci([10], [13, 14]).low)
    # the geometric means' ratio
    g = st.log_ratio_ci([1, 2, 4], [2, 4, 8])
    assert g.ratio == pytest.approx(2.0) and g.low < 2 < g.high
    assert math.isnan(st.log_ratio_ci([0, 1, 2], [1, 2, 3]).ratio)


def test_holm_and_batch_means():
    assert st.holm([0.01, 0.04, 0.03, math.nan]).tolist()[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert math.isnan(st.holm([0.01, math.nan])[1])
    assert st.batch_means(np.arange(10.0), 3).tolist() == pytest.approx([1.5, 5.0, 8.0])
    assert st.lag1_autocorrelation(np.arange(10.0)) > 0.5
