"""schedwake compare: sides, samples, the mmtests layout end to end, formats and errors.

The published mmtests numbers (those tests/test_mmtests_table.py pins) are reproduced through
the compare path: trace files whose context-switch rates are exactly the published means
go through the real CLI, and a tidy samples table through ``from_samples``.
"""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest

import schedwake
from schedwake import TraceError
from schedwake.analysis.metrics import SAMPLE_COLUMNS, catalogue, metric_samples, window_metrics
from schedwake.compare import CompareResult, default_window, from_samples
from schedwake.compare.mmtests import SIGN_CONVENTION
from schedwake.compare.sides import parse_sides
from schedwake.report import compare as compare_report
from schedwake.report.compare import notes as compare_notes
from schedwake.report.compare import rule_line_of
from schedwake.synth import make_trace

from .conftest import mmtests_part, run_cli, sample

# mmtests' percentage cell: a regex kernel readers' scripts use (D.4)
CELL = re.compile(r"\s[(*]\s*-?\d+\.\d\d%[)*]")


def write_switch_trace(path, n_switches: int, span_s: float = 100.0):
    """A trace-cmd report text with ``n_switches`` sched_switch events spread over exactly
    ``span_s`` seconds (and one wake-up): its context-switch rate is n_switches / span_s."""
    lines = ["cpus=2"]
    for i in range(n_switches):
        t = 1000.0 + span_s * i / (n_switches - 1)
        # two tasks take turns: each switch puts on the task the next one switches out
        pid, other = 1000 + (i % 2), 1000 + ((i + 1) % 2)
        if i == 1:
            for ev in ("sched_waking", "sched_wakeup"):
                lines.append(
                    f"            task-{pid}  [000]  {t - 1e-6:.6f}: {ev + ':':<21} "
                    f"comm=task pid={other} prio=120 target_cpu=000"
                )
        lines.append(
            f"            task-{pid}  [000]  {t:.6f}: sched_switch:         "
            f"prev_comm=task prev_pid={pid} prev_prio=120 prev_state=S ==> "
            f"next_comm=task next_pid={other} next_prio=120"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """Three iterations a side whose context switches/s are 21.50, 22.63, 23.76
    (Amean 22.63) and 2000, 2054, 2108 switches in 99.994 s (Amean 20.5412, printed
    20.54; the published 9.23% comes from the unrounded means, as in test_stats)."""
    d = tmp_path_factory.mktemp("published")
    for side, counts, span in (
        ("base", (2150, 2263, 2376), 100.0),
        ("patched", (2000, 2054, 2108), 100.0 * 20.54 / 20.5412),
    ):
        for i, n in enumerate(counts):
            write_switch_trace(d / f"{side}-{i}.txt", n, span)
    return d


# -- the catalogue and the tidy samples ------------------------------------------------------


def test_catalogue_has_every_metric_with_unit_direction_and_window_definition():
    cat = catalogue(cpus=4)
    assert list(cat.columns) == ["name", "unit", "direction", "definition", "window_sample", "key"]
    for name in (
        "migrations_per_s",
        "wakeup_migrations_per_s",
        "load_balance_migrations_per_s",
        "cross_llc_migrations_per_s",
        "wakeup_migration_share",
        "pingpong_episodes_per_s",
        "pingpong_would_stack_per_s",
        "pingpong_would_stack_share",
        "cpus_visited_per_task",
        "context_switches_per_s",
        "futile_wakeups_per_s",
        "wake_to_run_p50_us",
        "wake_to_run_p90_us",
        "wake_to_run_p99_us",
        "idle_while_runnable_share",
        "busy_share_cpu0",
        "busy_share_cpu3",
    ):
        row = cat[cat["name"] == name]
        assert len(row) == 1, name
        r = row.iloc[0]
        assert r["unit"] and r["definition"] and r["window_sample"], name
        assert r["direction"] in ("lower", "higher")
    assert set(cat[cat["name"].str.startswith("busy_share")]["direction"]) == {"higher"}
    assert (cat[~cat["name"].str.startswith("busy_share")]["direction"] == "lower").all()
    assert "busy_share_cpu{cpu}" in set(catalogue()["name"])


@pytest.fixture(scope="module")
def synth():
    trace, planted = make_trace(
        pingpong=40, roundrobin=30, storm=200, idle_gaps=40, background=300, seed=5, duration_s=2.0
    )
    return trace, planted


def test_metric_samples_tidy_per_trace_and_per_window(synth):
    trace, _ = synth
    pt = metric_samples(trace)
    assert tuple(pt.columns) == SAMPLE_COLUMNS
    assert (pt["sample_kind"] == "per-trace").all() and len(pt) == len(catalogue(cpus=8))
    pw = metric_samples(trace, 0.25)
    assert (pw["sample_kind"] == "per-window").all()
    wm = window_metrics(trace, 0.25)
    assert pw["window"].nunique() == len(wm)
    # values are window_metrics in display units
    got = pw[pw["metric"] == "context_switches_per_s"]["value"].to_numpy()
    assert np.allclose(got, wm["context_switches_per_s"].to_numpy())
    got = pw[pw["metric"] == "wake_to_run_p99_us"]["value"].to_numpy()
    lat = np.where(wm["latency_samples"] > 0, wm["wake_to_run_p99_us"], np.nan)
    assert np.allclose(got, lat, equal_nan=True)
    share = pw[pw["metric"] == "busy_share_cpu2"]["value"].to_numpy()
    assert np.allclose(share, 100 * wm["busy_share_cpu2"].to_numpy())
    # per-window migrations add up to the whole trace's
    mig = pw[pw["metric"] == "migrations_per_s"]
    total = (mig["value"] * (mig["end_s"] - mig["start_s"])).sum()
    assert round(total) == len(trace.migrations())
    only = metric_samples(trace, 0.25, metrics=["migrations_per_s", "busy_share_cpu1"])
    assert set(only["metric"]) == {"migrations_per_s", "busy_share_cpu1"}


def test_default_window():
    assert default_window([2.33, 3.1]) == 0.2
    assert default_window([60.0]) == 1.0
    assert default_window([0.5]) == 0.05
    assert default_window([0.003]) == 0.001
    assert default_window([]) == 1.0


# -- sides ---------------------------------------------------------------------------------


def test_parse_sides(published):
    sides = parse_sides([], [f"base={published}/base-*.txt", f"new={published}/patched-*.txt"])
    assert [s[0] for s in sides] == ["base", "new"]
    assert [len(s[1]) for s in sides] == [3, 3] and sides[0][1] == sorted(sides[0][1])
    sides = parse_sides([str(published / "base-0.txt"), str(published / "patched-0.txt")])
    assert [s[0] for s in sides] == ["base-0", "patched-0"]
    sides = parse_sides(
        [str(published / "base-0.txt")],
        [f"x={published}/patched-*.txt"],
        labels=["6.18.0-vanilla", "6.18.0-patched"],
    )
    assert [s[0] for s in sides] == ["6.18.0-vanilla", "6.18.0-patched"]
    # a name repeated adds to the side
    sides = parse_sides(
        [],
        [f"a={published}/base-0.txt", f"a={published}/base-1.txt", f"b={published}/patched-0.txt"],
    )
    assert len(sides) == 2 and len(sides[0][1]) == 2
    with pytest.raises(TraceError, match="matches no file"):
        parse_sides([], [f"a={published}/nothing-*.dat", f"b={published}/base-*.txt"])
    with pytest.raises(TraceError, match="NAME=GLOB"):
        parse_sides([], ["nonsense", f"b={published}/base-*.txt"])
    with pytest.raises(TraceError, match="at least two sides"):
        parse_sides([str(published / "base-0.txt")])
    with pytest.raises(TraceError, match="label"):
        parse_sides([str(published / "base-0.txt"), str(published / "base-1.txt")], labels=["one"])
    with pytest.raises(TraceError, match="twice"):
        parse_sides(
            [str(published / "base-0.txt"), str(published / "base-1.txt")], labels=["same", "same"]
        )


# -- published mmtests numbers through the compare path ---------------------------------------


@pytest.mark.slow
def test_published_amean_through_cli_text_and_json(published):
    args = [
        "compare",
        "--side",
        f"6.18.0-vanilla={published}/base-*.txt",
        "--side",
        f"6.18.0-patched={published}/patched-*.txt",
        "--metric",
        "context_switches_per_s",
        "--title",
        "schedwake: published numbers",
        "--full",
    ]
    text = run_cli(*args, check=True).stdout
    # the summary first: the mean on each side and the gain, starred
    assert text.startswith("summary: the mean of each metric on each side")
    # ... with the gain's 95% interval (Welch's, in % of the baseline mean)
    assert text.splitlines()[2].split() == [
        "context_switches_per_s",
        "22.63",
        "20.54",
        "+9.23%",
        "[+0.4..+18%]",  # (95%, with the t-test's own degrees of freedom)
        "*",
    ]
    text = mmtests_part(text)
    lines = text.splitlines()
    assert lines[0] == "schedwake: published numbers"
    # two-line header split at the first '-', right-aligned to 23-character cells
    op_w = len("context_switches_per_s")
    lead = " " * (len("BAmean-50") + 1 + op_w)
    assert lines[1] == lead + "%23s%23s" % ("6.18.0", "6.18.0")
    assert lines[2] == lead + "%23s%23s" % ("vanilla", "patched")
    amean = [ln for ln in lines if ln.startswith("Amean ")]
    assert amean == [
        "Amean     context_switches_per_s       22.63 (   0.00%)       20.54 *   9.23%*"
    ]
    assert "20.54 *   9.23%*" in text
    # the star is on the mean row only; Stddev 1.13 -> 0.54 uses 100 - 100*new/base
    assert sum("*" in ln for ln in lines[3:] if not ln.startswith("* ")) == 1
    stddev = [ln for ln in lines if ln.startswith("Stddev ")][0]
    assert stddev.endswith("        0.54 (  52.21%)")
    rule = [i for i, ln in enumerate(lines) if ln.startswith("* significant:")]
    assert rule == [11]
    assert [ln.split()[0] for ln in lines[3:11]] == [
        "Min",
        "Amean",
        "Stddev",
        "CoeffVar",
        "Max",
        "BAmean-50",
        "BAmean-95",
        "BAmean-99",
    ]
    assert all(CELL.search(ln) for ln in lines[3:11])
    # the rule line under the table says which test and which samples
    assert lines[11].startswith("* significant: two-sided t-test")
    assert "per-trace values, n=3/3" in lines[11]
    # then how to read the percentages, and the traces' caveats, once each
    assert lines[12].startswith(SIGN_CONVENTION) and "alpha 0.1: mmtests' own" in lines[12]
    assert lines[13:] and all(ln.startswith("note: ") for ln in lines[13:])
    assert "no topology given" in text and text.count("no topology given") == 1
    assert "(every trace)" in text

    doc = json.loads(run_cli(*args, "--format", "json", check=True).stdout)
    assert doc["samples"] == {"kind": "per-trace", "window_s": None}
    assert doc["significance"]["rule"] == "ttest" and doc["significance"]["alpha"] == 0.10
    rows = {(r["stat"], r["side"]): r for r in doc["rows"]}
    base, new = rows[("Amean", "6.18.0-vanilla")], rows[("Amean", "6.18.0-patched")]
    assert base["value"] == pytest.approx(22.63) and base["pct"] == 0.0
    assert new["value"] == pytest.approx(20.5412) and round(new["pct"], 2) == 9.23
    assert new["significant"] is True and new["detail"] < 0.10 and new["n"] == 3
    assert round(rows[("Stddev", "6.18.0-patched")]["pct"], 2) == 52.21
    assert rows[("Stddev", "6.18.0-patched")]["significant"] is None
    assert "20.54 *   9.23%*" in doc["table"]
    assert [s["label"] for s in doc["sides"]] == ["6.18.0-vanilla", "6.18.0-patched"]
    assert [len(s["traces"]) for s in doc["sides"]] == [3, 3]

    md = run_cli(*args, "--format", "markdown", check=True).stdout
    assert "| Amean | context_switches_per_s | 22.63 (0.00%) | 20.54 \\*9.23%\\* |" in md


def test_published_hmean_and_stddev_of_a_higher_is_better_metric():
    """Hmean 321.41 -> 617.82 prints 92.22%; a Stddev row uses the lower-is-better
    formula although the metric is higher-is-better (3471.61 -> 3713.97: -6.98%)."""
    rows = []
    for side, vals in (("5.15.0-vanilla", [321.41] * 4), ("5.15.0-patched", [617.82] * 4)):
        rows += [
            {
                "side": side,
                "metric": "throughput",
                "unit": "MB/s",
                "direction": "higher",
                "value": v,
            }
            for v in vals
        ]
    d = 3471.61 / np.sqrt(2)
    e = 3713.97 / np.sqrt(2)
    for side, (m, dv) in (("5.15.0-vanilla", (39112.22, d)), ("5.15.0-patched", (39364.10, e))):
        rows += [
            {"side": side, "metric": "tcp-rr", "unit": "trans/s", "direction": "higher", "value": v}
            for v in (m - dv, m + dv)
        ]
    res = from_samples(pd.DataFrame(rows), title="netperf")
    text = compare_report.text(res, full=True)
    hm = [ln for ln in text.splitlines() if ln.startswith("Hmean") and "throughput" in ln][0]
    assert hm.endswith("      617.82 *  92.22%*")
    sd = [ln for ln in text.splitlines() if ln.startswith("Stddev") and "tcp-rr" in ln][0]
    assert sd.endswith("     3713.97 (  -6.98%)")
    rec = {
        (r["metric"], r["stat"], r["side"]): r
        for r in json.loads(compare_report.to_json(res))["rows"]
    }
    assert round(rec[("throughput", "Hmean", "5.15.0-patched")]["pct"], 2) == 92.22
    assert round(rec[("tcp-rr", "Stddev", "5.15.0-patched")]["pct"], 2) == -6.98
    assert "BHmean-95" in text and "BAmean" not in text


def test_ci95_rule_is_printed(published):
    res = schedwake.compare(
        {
            "base": sorted(published.glob("base-*.txt")),
            "new": sorted(published.glob("patched-*.txt")),
        },
        significance="ci95",
        metrics=["context_switches_per_s"],
    )
    assert "do not overlap" in rule_line_of(res)
    # 22.63 +- 1.96*1.13 and 20.54 +- 1.96*0.54 overlap: no star under ci95
    assert "20.54 (   9.23%)" in compare_report.text(res, full=True)


# -- the API ----------------------------------------------------------------------------------


def test_samples_are_runs_and_windows_only_on_request(published):
    """One baseline run: per-trace samples still (never windows taken for replicates),
    and no star: nothing is testable. Windows when asked for, tested as batch means."""
    sides = [published / "base-0.txt", sorted(published.glob("patched-*"))]
    res = schedwake.compare(sides, metrics=["context_switches_per_s"])
    assert res.sample_kind == "per-trace" and res.window_s is None
    assert "n=1/3; not testable: context_switches_per_s (give >= 2 baseline runs" in (
        rule_line_of(res)
    )
    assert any(n.startswith("one baseline run: no significance") for n in compare_notes(res))
    res = schedwake.compare(
        sides, metrics=["context_switches_per_s"], samples="window", window_s=10
    )
    assert res.sample_kind == "per-window" and res.window_s == 10
    # 10 windows a trace: 3 batch means of 3-4 windows each
    assert "per-window values, window 10.0 s, n=10/30, tested on batch means n=3/9" in (
        rule_line_of(res)
    )
    # three runs against one: a prediction interval of the three
    res = schedwake.compare(sides[::-1], metrics=["context_switches_per_s"])
    assert "one run: t prediction interval of the baseline runs" in rule_line_of(res)
    res = schedwake.compare(
        [sorted(published.glob("base-*")), sorted(published.glob("patched-*"))],
        metrics=["context_switches_per_s"],
        samples="per-window",
        window_s=25,
    )
    assert "n=12/12" in rule_line_of(res)


def test_api_with_trace_objects_summary_and_plots(synth):
    a, _ = synth
    b, _ = make_trace(
        pingpong=0, roundrobin=0, storm=0, idle_gaps=0, background=300, seed=6, duration_s=2.0
    )
    res = schedwake.compare({"synth-sick": a, "synth-healthy": b}, window_s=0.25)
    assert isinstance(res, CompareResult) and res.labels == ["synth-sick", "synth-healthy"]
    s = res.summary()
    pp = s[(s["metric"] == "pingpong_episodes_per_s") & (s["side"] == "synth-healthy")].iloc[0]
    assert pp["stat"] == "Amean" and pp["value"] == 0 and pp["pct"] == 100.0
    busy = s[s["metric"] == "busy_share_cpu0"]
    assert set(busy["stat"]) == {"Hmean"}
    assert {"side", "iteration", "metric", "value"} <= set(res.samples.columns)
    text = mmtests_part(compare_report.text(res, full=True))
    assert text.splitlines()[0].split() == ["synth", "synth"]
    assert text.splitlines()[1].split() == ["sick", "healthy"]
    f = res.findings()
    assert {d.detector for _, fs in f["synth-sick"] for d in fs} >= {"cswitch_storm"}
    assert all(not fs for _, fs in f["synth-healthy"])


def test_errors_are_one_line_exit_2(tmp_path, published):
    p = run_cli("compare", published / "base-0.txt")
    assert p.returncode == 2 and "at least two sides" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = run_cli("compare", "--side", f"a={tmp_path}/none-*.dat", published / "base-0.txt")
    assert p.returncode == 2 and "matches no file" in p.stderr
    p = run_cli(
        "compare", published / "base-0.txt", published / "base-1.txt", "--metric", "nonsense"
    )
    assert p.returncode == 2 and "unknown metric" in p.stderr
    bad = tmp_path / "bad.dat"
    bad.write_bytes(b"\x00garbage" * 10)
    p = run_cli("compare", published / "base-0.txt", bad)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    with pytest.raises(TraceError):
        schedwake.compare([published / "base-0.txt"])
    with pytest.raises(TraceError, match="significance"):
        schedwake.compare(
            [published / "base-0.txt", published / "base-1.txt"], significance="bogus"
        )


@pytest.mark.slow
def test_cli_real_traces_text_layout_and_html(tmp_path):
    out = tmp_path / "r.html"
    p = run_cli(
        "compare",
        sample("dbench-xfs-1client.dat"),
        sample("dbench-xfs-2clients.dat"),
        "--label",
        "6.18.44-1client",
        "--label",
        "6.18.44-2clients",
        "--window",
        "0.5",
        "--samples",
        "window",
        "--metric",
        "migrations_per_s",
        "--metric",
        "wake_to_run_p99_us",
        "--html",
        out,
        "--full",
        check=True,
    )
    lines = mmtests_part(p.stdout).splitlines()
    assert lines[0].split() == ["6.18.44", "6.18.44"]
    assert lines[1].split() == ["1client", "2clients"]
    k = next(i for i, ln in enumerate(lines) if ln.startswith(SIGN_CONVENTION))
    # (one 0.5-s window of 1client shows its p99 only within bounds wider than the
    # tolerance: withheld, and so that trace gives no window sample of it, the windows it
    # shows well not being a fair sample: docs/compare.md)
    assert lines[k - 1].endswith(
        "per-window values, window 0.5 s, n=6/6, tested on batch means n=2/2 "
        "(wake_to_run_p99_us: per-window values, window 0.5 s, n=0/6, tested on batch means "
        "n=0/2); not testable: wake_to_run_p99_us (give >= 2 baseline runs (n=0/2))"
    )
    # the per-window caution, among the notes (after those of what each trace lacks)
    assert any(ln.startswith("note: per-window samples (asked for)") for ln in lines[k + 1 :])
    assert any(ln.startswith("Amean     wake_to_run_p99_us") for ln in lines)  # (--full)
    assert out.exists() and "wrote" in p.stderr
    from .test_html_report import without_scripts

    html = without_scripts(out.read_text())  # (BokehJS, inline, names <img> too)
    # busy share was filtered out by --metric: no empty chart for it
    assert html.count("<img ") == 5 and "Per-CPU busy share" not in html
    assert html.count("class='schedwake-timeline'") == 2  # each side's, interactive


def test_sides_with_the_same_file_name_are_named_by_their_directories(tmp_path):
    """`compare a/trace.dat b/trace.dat` needs no --label: the directory that tells the
    paths apart names each side."""
    for d, i in (("6.1", 1), ("6.12", 2)):
        (tmp_path / "runs" / d / "x").mkdir(parents=True)
        shutil.copy(
            sample(f"iterations/dbench-xfs-1c-i{i}.dat"), tmp_path / "runs" / d / "x" / "trace.dat"
        )
    p = run_cli(
        "compare", "runs/6.1/x/trace.dat", "runs/6.12/x/trace.dat", "--metric", "migrations_per_s",
        "--full", cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert mmtests_part(p.stdout).splitlines()[1].split() == ["6.1", "6.12"]


@pytest.mark.slow
def test_sides_from_different_machines_are_said_to_differ():
    p = run_cli(
        "compare", sample("dbench-xfs-1client.dat"),
        sample("kstack-6.1/k61-dbench-c2-kstack-on-i1.dat"), "--metric", "migrations_per_s",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    notes = [ln for ln in p.stdout.splitlines() if ln.startswith("note: the traces differ")]
    assert [n.split(" (")[0] for n in notes] == [
        "note: the traces differ in CPUs",
        "note: the traces differ in kernel",
        "note: the traces differ in trace clock",
        "note: the traces differ in LLCs",
    ]
    assert "dbench-xfs-1client: 2; k61-dbench-c2-kstack-on-i1: 8" in notes[0]
    # iterations of one machine: no such note
    same = run_cli(
        "compare", "--side", f"a={sample('iterations')}/dbench-xfs-1c-i*.dat",
        "--side", f"b={sample('iterations')}/dbench-xfs-4c-i*.dat", "--metric", "migrations_per_s",
    )  # fmt: skip
    assert "the traces differ" not in same.stdout


@pytest.mark.slow
def test_one_trace_a_side_carries_the_one_run_caution_and_one_colour_scale():
    """compare says what gate says about windows of one run, and the report's migration
    matrices of the sides share one colour scale."""
    from schedwake.report.plots import report_figures

    result = schedwake.compare(
        {"root": [sample("fio-pinned-root.dat")], "weighted": [sample("fio-pinned-weighted.dat")]}
    )
    assert result.sample_kind == "per-trace"
    assert any(n.startswith("one baseline run: no significance") for n in compare_notes(result))
    assert "note: one baseline run" in compare_report.text(result)
    figs = report_figures(result)
    clims = [
        figs[f"{s}: migration matrix (fio-pinned-{s}.dat)"].axes[0].images[0].get_clim()
        for s in ("root", "weighted")
    ]
    assert clims[0] == clims[1]


@pytest.mark.slow
def test_per_cpu_rows_are_summarised_beyond_four_cpus_unless_asked():
    a = sample("kstack-6.1-32cpu/k61-32cpu-dbench-c2-kstack-on-i1.dat")
    b = sample("kstack-6.1-32cpu/k61-32cpu-dbench-c2-kstack-off-i1.dat")
    short = run_cli("compare", a, b, "--full", check=True).stdout
    assert "busy_share_cpu31" not in short
    hidden = [ln for ln in short.splitlines() if ln.startswith("busy_share_cpuN: 32 CPUs' rows")]
    assert len(hidden) == 1 and "--per-cpu shows them" in hidden[0]
    full = run_cli("compare", a, b, "--per-cpu", "--full", check=True).stdout
    assert "Hmean     busy_share_cpu31[%]" in full and "busy_share_cpuN:" not in full

    # the other rows are the same (the rule line names the per-CPU rows' samples too)
    def rows(text):
        return [ln for ln in text.splitlines() if "busy_share_cpu" not in ln and ln[:1] != "*"]

    assert rows(full) == rows(short)


@pytest.mark.slow
def test_task_plots_compare_like_with_like():
    """The report's task plots show the same role (task name) on both sides, over windows
    of the same length."""
    from schedwake.report.plots import _task_runs_and_wakeups, like_for_like

    result = schedwake.compare(
        {
            "on": [sample("kstack-6.1/k61-dbench-c2-kstack-on-i1.dat")],
            "off": [sample("kstack-6.1/k61-dbench-c2-kstack-off-i1.dat")],
        }
    )
    (p0, a0, b0), (p1, a1, b1) = like_for_like(result, result.sides)
    names = [_task_runs_and_wakeups(s.traces[0], p)[2] for s, p in zip(result.sides, (p0, p1))]
    assert names == ["dbench", "dbench"]
    assert b1 - a1 == pytest.approx(b0 - a0) and b0 > a0
