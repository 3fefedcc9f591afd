"""The mmtests comparison table (schedwake.compare.mmtests): layout, percentages, stars."""

import json

import numpy as np
import pytest

from schedwake.compare.mmtests import (
    CELL_WIDTH,
    MetricSamples,
    compare_samples,
    op_label,
    split_label,
)
from schedwake.report import mmtests_table

ELAPSED_BASE = [540.0] * 7 + [550.0] * 3  # Min 540, Amean 543, Stddev 4.83, Max 550
ELAPSED_NEW = [530.0] * 10

# Header lines derived by hand: first cell = len("BAmean-99") + 1 + len("elapsed") = 17
# blanks, then each label part right-aligned in 12 + 7 + 4 = 23 columns.  The eight rows
# are copied verbatim from lore.kernel.org/r/20220217002227.5739-6-mgorman@techsingularity.net
EXPECTED_ELAPSED = (
    "dbench4 Loadfile Execution Time\n"
    "                              5.17.0-rc0             5.17.0-rc0             5.17.0-rc0\n"
    "                                 vanilla               patch-v1               patch-v2\n"
    "Min       elapsed      540.00 (   0.00%)      530.00 (   1.85%)      530.00 (   1.85%)\n"
    "Amean     elapsed      543.00 (   0.00%)      530.00 *   2.39%*      530.00 *   2.39%*\n"
    "Stddev    elapsed        4.83 (   0.00%)        0.00 ( 100.00%)        0.00 ( 100.00%)\n"
    "CoeffVar  elapsed        0.89 (   0.00%)        0.00 ( 100.00%)        0.00 ( 100.00%)\n"
    "Max       elapsed      550.00 (   0.00%)      530.00 (   3.64%)      530.00 (   3.64%)\n"
    "BAmean-50 elapsed      540.00 (   0.00%)      530.00 (   1.85%)      530.00 (   1.85%)\n"
    "BAmean-95 elapsed      542.22 (   0.00%)      530.00 (   2.25%)      530.00 (   2.25%)\n"
    "BAmean-99 elapsed      542.22 (   0.00%)      530.00 (   2.25%)      530.00 (   2.25%)\n"
    "* significant: two-sided t-test (Welch s.e., df=n1+n2-2), alpha 0.10; "
    "samples: per-trace values, n=10/10/10\n"
)

LABELS3 = ["5.17.0-rc0-vanilla", "5.17.0-rc0-patch-v1", "5.17.0-rc0-patch-v2"]


def _elapsed(rule="ttest"):
    m = MetricSamples("elapsed", "", "lower", [ELAPSED_BASE, ELAPSED_NEW, ELAPSED_NEW])
    return compare_samples("dbench4 Loadfile Execution Time", LABELS3, [m], rule=rule)


def _row(text, stat):
    rows = [ln for ln in text.splitlines() if ln.split()[:1] == [stat]]
    assert rows, (stat, text)
    return rows[0]


def _spread(mean, sd):
    """Three samples with exactly this arithmetic mean and sample stddev."""
    return np.array([mean - sd, mean, mean + sd])


def _with_hmean(target, shape=(0.9, 1.0, 1.1)):
    x = np.array(shape)
    return x * target * np.sum(1 / x) / len(x)


# ---- the whole published block -------------------------------------------------------


def test_elapsed_block_exact():
    assert mmtests_table.text(_elapsed()) == EXPECTED_ELAPSED


def test_elapsed_block_ci95_rule_line_and_same_stars():
    text = mmtests_table.text(_elapsed("ci95"))
    assert text.splitlines()[:-1] == EXPECTED_ELAPSED.splitlines()[:-1]
    assert text.splitlines()[-1] == (
        "* significant: mean +-1.96*sd intervals do not overlap "
        "(mmtests ci95); samples: per-trace values, n=10/10/10"
    )


def test_header_aligns_with_cells():
    lines = mmtests_table.text(_elapsed()).splitlines()
    head1, head2, row = lines[1], lines[2], lines[3]
    lead = len("BAmean-99") + 1 + len("elapsed")
    assert CELL_WIDTH == 23
    assert len(head1) == len(row) == lead + 3 * CELL_WIDTH
    for col in range(3):
        end = lead + (col + 1) * CELL_WIDTH  # one past this side's last character
        assert row[end - 1] == ")"
        assert head1[end - 10 : end] == "5.17.0-rc0"
        assert head2[end - 1] != " "


# ---- published percentages -------------------------------------------------------------


def test_amean_lower_significant_star():
    m = MetricSamples("elapsed", "s", "lower", [_spread(22.63, 0.01), _spread(20.5412, 0.01)])
    text = mmtests_table.text(compare_samples(None, ["base", "new"], [m]))
    row = _row(text, "Amean")
    assert row.endswith("       22.63 (   0.00%)       20.54 *   9.23%*")


def test_amean_lower_not_significant_has_parentheses():
    m = MetricSamples("elapsed", "s", "lower", [_spread(22.63, 4.0), _spread(20.5412, 4.0)])
    c = compare_samples(None, ["base", "new"], [m])
    row = _row(mmtests_table.text(c), "Amean")
    assert row.endswith("       20.54 (   9.23%)")
    assert "*" not in "\n".join(mmtests_table.text(c).splitlines()[:-1])


def test_hmean_higher_uses_pdiff():
    m = MetricSamples("tput", "", "higher", [_with_hmean(321.41), _with_hmean(617.82)])
    row = _row(mmtests_table.text(compare_samples(None, ["a", "b"], [m])), "Hmean")
    assert row.endswith("      321.41 (   0.00%)      617.82 *  92.22%*")


def test_max_higher_is_better_pdiff():
    m = MetricSamples(
        "tput", "", "higher", [[53019.93, 40000.0, 45000.0], [51263.38, 40000.0, 45000.0]]
    )
    row = _row(mmtests_table.text(compare_samples(None, ["a", "b"], [m])), "Max")
    assert row.endswith("    53019.93 (   0.00%)    51263.38 (  -3.31%)")


@pytest.mark.parametrize("direction", ["lower", "higher"])
@pytest.mark.parametrize(
    "base_sd,new_sd,cell",
    [
        (3.54, 2.4026, "        2.40 (  32.13%)"),
        (3471.61, 3713.97, "     3713.97 (  -6.98%)"),
    ],
)
def test_stddev_row_always_pndiff(direction, base_sd, new_sd, cell):
    m = MetricSamples("x", "", direction, [_spread(20000.0, base_sd), _spread(20000.0, new_sd)])
    row = _row(mmtests_table.text(compare_samples(None, ["a", "b"], [m])), "Stddev")
    assert row.endswith(cell)


def test_stddev_to_zero_is_100_percent():
    m = MetricSamples("x", "", "higher", [_spread(500.0, 4.83), [500.0, 500.0, 500.0]])
    row = _row(mmtests_table.text(compare_samples(None, ["a", "b"], [m])), "Stddev")
    assert row.endswith("        4.83 (   0.00%)        0.00 ( 100.00%)")


def test_min_and_best_follow_direction():
    m = MetricSamples(
        "tput", "", "higher", [[100.0, 200.0, 300.0, 400.0], [110.0, 220.0, 330.0, 440.0]]
    )
    c = compare_samples(None, ["a", "b"], [m])
    t = mmtests_table.text(c)
    assert _row(t, "Min").endswith("      110.00 (  10.00%)")  # pdiff
    assert _row(t, "BHmean-50").startswith("BHmean-50 tput")
    rec = {(r["stat"], r["side"]): r for r in c.records()}
    assert rec[("BHmean-50", "b")]["value"] == pytest.approx(2 / (1 / 440 + 1 / 330))
    assert rec[("BHmean-50", "b")]["pct"] == pytest.approx(10.0)


# ---- stars only on the mean row; rule line --------------------------------------------


def test_star_only_on_mean_row():
    m = MetricSamples("lat", "us", "lower", [_spread(100.0, 1.0), _spread(50.0, 0.1)])
    text = mmtests_table.text(compare_samples(None, ["a", "b"], [m]))
    body = text.splitlines()[2:-1]
    starred = [ln for ln in body if "*" in ln]
    assert [ln.split()[0] for ln in starred] == ["Amean"]
    assert _row(text, "Min").endswith("       99.00 (   0.00%)       49.90 (  49.60%)")


def test_ttest_vs_ci95_on_same_samples():
    m = MetricSamples("lat", "", "lower", [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]])
    t = compare_samples(None, ["a", "b"], [m], rule="ttest")
    c = compare_samples(None, ["a", "b"], [m], rule="ci95")
    assert "*" in _row(mmtests_table.text(t), "Amean")
    assert "*" not in _row(mmtests_table.text(c), "Amean")
    strict = compare_samples(None, ["a", "b"], [m], alpha=0.01)
    assert strict.records()[3]["significant"] is False
    assert "alpha 0.01;" in mmtests_table.text(strict).splitlines()[-1]
    assert "alpha 0.001;" in mmtests_table.rule_line_of(
        compare_samples(None, ["a", "b"], [m], alpha=0.001)
    )


def test_hmean_undefined_is_not_testable():
    m = MetricSamples("tput", "", "higher", [[0.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    c = compare_samples(None, ["a", "b"], [m])
    assert _row(mmtests_table.text(c), "Hmean").endswith(
        "        0.00 (   0.00%)        7.92 (   0.00%)"
    )
    assert mmtests_table.rule_line_of(c).endswith("not testable: tput (mean or stddev undefined)")


def test_single_sample_not_testable_and_nan_prints_zero():
    m = MetricSamples("migrations", "/s", "lower", [[10.0], [5.0]])
    text = mmtests_table.text(compare_samples(None, ["a", "b"], [m]))
    assert (
        _row(text, "Stddev")
        == "Stddev    migrations/s        0.00 (   0.00%)        0.00 (   0.00%)"
    )
    assert _row(text, "Amean").endswith("5.00 (  50.00%)")
    assert text.splitlines()[-1].endswith(
        "samples: per-trace values, n=1/1; "
        "not testable: migrations (give >= 2 baseline runs (n=1/1))"
    )


def test_per_window_rule_line_and_mixed_metrics_grouping():
    a = MetricSamples(
        "migrations",
        "/s",
        "lower",
        [_spread(10, 1), _spread(5, 1)],
        window_s=1.0,
        sample_kind="per-window",
    )
    b = MetricSamples(
        "ctxsw",
        "/s",
        "higher",
        [_spread(100, 1), _spread(90, 1)],
        window_s=1.0,
        sample_kind="per-window",
    )
    c = compare_samples(None, ["6.18.0-vanilla", "6.18.0-kworkerstack"], [a, b])
    lines = mmtests_table.text(c).splitlines()
    assert [ln.split()[0] for ln in lines[2:6]] == ["Min", "Min", "Amean", "Hmean"]
    assert lines[2].startswith("Min       migrations/s ")
    assert lines[3].startswith("Min       ctxsw/s      ")
    assert lines[-1].endswith("samples: per-window values, window 1.0 s, n=3/3")
    assert lines[0] == " " * 22 + "%23s%23s" % ("6.18.0", "6.18.0")
    assert lines[1] == " " * 22 + "%23s%23s" % ("vanilla", "kworkerstack")


def test_precision_option_reproduces_hackbench_row():
    # lore 20220124100312.32573-1-mgorman: "Amean     1        0.3360 (   0.00%)      0.3247
    # (   3.37%)" with precision 4; a 3-character op ("128") sets the op column width.
    one = MetricSamples("1", "", "lower", [_spread(0.336, 0.04), _spread(0.974 / 3, 0.04)])
    other = MetricSamples("128", "", "lower", [[1.0, 2.0], [1.0, 2.0]])
    text = mmtests_table.text(
        compare_samples(
            "hackbench-process-pipes",
            ["5.17.0-rc0-vanilla", "5.17.0-rc0-sched-scalewakegran-v5"],
            [one, other],
        ),
        precision=4,
    )
    lines = text.splitlines()
    assert lines[1] == "                          5.17.0-rc0             5.17.0-rc0"
    assert lines[2] == "                             vanilla sched-scalewakegran-v5"
    assert _row(text, "Amean").startswith(
        "Amean     1        0.3360 (   0.00%)      0.3247 (   3.37%)"
    )


# ---- header splitting ------------------------------------------------------------------


@pytest.mark.parametrize(
    "label,parts",
    [
        ("5.17.0-rc0-vanilla", ("5.17.0-rc0", "vanilla")),
        ("5.15.0-rc1-sched-scalewakegran-v2r5", ("5.15.0-rc1", "sched-scalewakegran-v2r5")),
        ("6.18.0-kworkerstack", ("6.18.0", "kworkerstack")),
        ("6.18.0-rc12-foo", ("6.18.0-rc12", "foo")),
        ("6.18.0-rc3", ("6.18.0-rc3", "")),
        ("6.18.0-rcfoo", ("6.18.0", "rcfoo")),
        ("baseline", ("", "baseline")),
    ],
)
def test_split_label(label, parts):
    assert split_label(label) == parts


def test_label_without_dash_in_header():
    m = MetricSamples("x", "", "lower", [[1.0, 2.0], [1.0, 2.0]])
    lines = mmtests_table.text(compare_samples(None, ["before", "after"], [m])).splitlines()
    assert lines[0] == ""
    assert lines[1] == " " * 11 + "%23s%23s" % ("before", "after")


def test_op_label():
    assert op_label("migrations", "/s") == "migrations/s"
    assert op_label("migrations/s", "/s") == "migrations/s"
    assert op_label("migrations_per_s", "/s") == "migrations_per_s"
    assert op_label("wake_to_run_p99_us", "us") == "wake_to_run_p99_us"
    assert op_label("wakeup_migration_share", "%") == "wakeup_migration_share[%]"
    assert op_label("wake-latency-p99", "us") == "wake-latency-p99[us]"
    assert op_label("elapsed", "") == "elapsed"


# ---- structured output and Markdown -----------------------------------------------------


def test_records_json_ready():
    c = _elapsed()
    recs = c.records()
    assert len(recs) == 8 * 3
    json.dumps(recs, allow_nan=False)
    amean = [r for r in recs if r["stat"] == "Amean"]
    assert [r["side"] for r in amean] == LABELS3
    assert amean[0]["baseline"] and amean[0]["significant"] is None and amean[0]["pct"] == 0.0
    assert amean[1]["significant"] is True and amean[1]["testable"] is True
    assert amean[1]["pct"] == pytest.approx(100 - 100 * 530 / 543)
    assert 0 <= amean[1]["detail"] < 1e-6
    assert amean[1]["n"] == 10 and amean[1]["rule"] == "ttest"
    stddev = [r for r in recs if r["stat"] == "Stddev"]
    assert stddev[1]["significant"] is None and stddev[1]["pct"] == 100.0


def test_records_nan_become_none():
    m = MetricSamples("x", "", "lower", [[1.0], [2.0]])
    recs = compare_samples(None, ["a", "b"], [m]).records()
    sd = [r for r in recs if r["stat"] == "Stddev"]
    assert sd[0]["value"] is None and sd[1]["pct"] == 0.0
    mean = [r for r in recs if r["stat"] == "Amean"][1]
    assert mean["testable"] is False and mean["detail"] is None
    json.dumps(recs, allow_nan=False)


def test_markdown():
    md = mmtests_table.markdown(_elapsed()).splitlines()
    assert md[0] == "**dbench4 Loadfile Execution Time**"
    assert md[2] == "| Stat | Metric | " + " | ".join(LABELS3) + " |"
    assert md[3] == "|:---|:---|---:|---:|---:|"
    assert md[5] == (
        "| Amean | elapsed | 543.00 (0.00%) | 530.00 \\*2.39%\\* | 530.00 \\*2.39%\\* |"
    )
    assert md[6] == "| Stddev | elapsed | 4.83 (0.00%) | 0.00 (100.00%) | 0.00 (100.00%) |"
    assert md[-1].startswith("\\* significant: two-sided t-test")


# ---- input validation ------------------------------------------------------------------


def test_input_validation():
    with pytest.raises(ValueError):
        MetricSamples("x", "", "up", [[1.0], [2.0]])
    with pytest.raises(ValueError):
        MetricSamples("x", "", "lower", [[1.0], [2.0]], sample_kind="per-cpu")
    m = MetricSamples("x", "", "lower", [[1.0, 2.0]])
    with pytest.raises(ValueError):
        compare_samples(None, ["a", "b"], [m])
    ok = MetricSamples("x", "", "lower", [[1.0, 2.0], [1.0, 2.0]])
    with pytest.raises(ValueError):
        compare_samples(None, ["a", "b"], [ok], rule="welch")


def test_wide_header_parts_run_together_like_mmtests():
    # lore CAKfTPtD5=VQfSdL6YqdET99XFbPxT359oH0UZ78O=wWn6G8mAg: a 24-character second part
    # is wider than the 23-character cell, so "vanilla" and it run together.
    m = MetricSamples("1", "", "higher", [[1.0, 2.0]] * 3)
    labels = [
        "5.15.0-rc1-vanilla",
        "5.15.0-rc1-sched-scalewakegran-v2r5",
        "5.15.0-rc1-sched-moveforward-v1r1",
    ]
    head2 = mmtests_table.text(compare_samples(None, labels, [m])).splitlines()[1]
    assert head2.endswith(" vanillasched-scalewakegran-v2r5 sched-moveforward-v1r1")


def test_ci95_zero_spread_records_stay_json_safe():
    m = MetricSamples("x", "", "lower", [[5.0, 5.0], [4.0, 4.0]])
    c = compare_samples(None, ["a", "b"], [m], rule="ci95")
    mean = [r for r in c.records() if r["stat"] == "Amean"][1]
    assert mean["significant"] is True and mean["detail"] is None
    assert _row(mmtests_table.text(c), "Amean").endswith("        4.00 *  20.00%*")
    json.dumps(c.records(), allow_nan=False)
