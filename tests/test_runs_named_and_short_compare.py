"""Issue #24, items 3, 6 and 8 on real traces: runs stored as ``runN/trace.dat`` are
named by the end of their path that tells them apart in every report; the gate refuses a
baseline that is its own candidate; a metric that appears from a zero baseline is "new"
in the summaries (mmtests' own figure stays in its table); compare prints the summary and
the significantly changed mean rows by default, the whole table with ``--full``."""

from __future__ import annotations

import json
import os
import re

import pytest

import schedwake
from schedwake.compare.sides import distinct_names
from schedwake.gate import parse_rules
from schedwake.report import compare as compare_report
from schedwake.report import gate as gate_report
from schedwake.report import html

from .conftest import iteration_paths, mmtests_part, run_cli, shared_model_trace

C1, C4 = iteration_paths("c1"), iteration_paths("c4")


#: A trace as compare and gate read a path, loaded once per worker for the tests that
#: only read it (gate's ``loader=``, compare's traces); the CLI tests here read the paths
#: themselves.
shared = shared_model_trace


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """base/run{1,2,3}/trace.dat (the 1-client iterations) and new/run{1,2,3}/trace.dat
    (the 4-client ones), as links to the real traces."""
    root = tmp_path_factory.mktemp("runs")
    for side, paths in (("base", C1), ("new", C4)):
        for i, p in enumerate(paths, 1):
            (root / side / f"run{i}").mkdir(parents=True)
            os.symlink(p, root / side / f"run{i}" / "trace.dat")
    return root


def test_distinct_names_are_the_shortest_telling_ends():
    assert distinct_names(["run1/trace.dat", "run2/trace.dat", "x/other.dat"]) == {
        "run1/trace.dat": "run1/trace.dat",
        "run2/trace.dat": "run2/trace.dat",
        "x/other.dat": "other.dat",
    }
    # one file named two ways is one name; a name the other path ends with entirely
    # stays the whole path
    names = distinct_names(["/a/x/t.dat", "/b/x/t.dat", "c.dat", "./c.dat"])
    assert names == {
        "/a/x/t.dat": "a/x/t.dat",
        "/b/x/t.dat": "b/x/t.dat",
        "c.dat": "c.dat",
        "./c.dat": "c.dat",
    }
    assert distinct_names(["/t/trace.dat", "/t/sub/trace.dat"])["/t/trace.dat"] == "t/trace.dat"
    assert distinct_names(["a.dat"]) == {"a.dat": "a.dat"}


@pytest.fixture(scope="module")
def runs_compared(runs):
    base = sorted(str(p) for p in (runs / "base").glob("run*/trace.dat"))
    new = sorted(str(p) for p in (runs / "new").glob("run*/trace.dat"))
    return schedwake.compare({"1c": [shared(p) for p in base], "4c": [shared(p) for p in new]})


@pytest.fixture(scope="module")
def runs_page(runs_compared):
    """The HTML report of ``runs_compared``, rendered once for the tests that read it (its
    plots are most of its time)."""
    return html.render(runs_compared)


@pytest.mark.slow
def test_compare_html_names_runs_by_their_directories(runs_compared, runs_page):
    page = runs_page
    sides = page.split("<h2>Sides</h2>")[1].split("<h2>")[0]
    findings = page.split("<h2>Findings per side</h2>")[1]
    for side in ("base", "new"):
        for i in (1, 2, 3):
            name = f"{side}/run{i}/trace.dat"
            assert f"<td class='l'>{name}</td>" in sides
            assert f"<b>{name}</b>" in findings
    assert "<td class='l'>trace.dat</td>" not in sides
    # every run of each side has its figures and its timeline, named, a menu a side
    runs = page.split("<h2>Each run:")[1].split("<h2>")[0]
    for k, side in enumerate(("base", "new")):
        label = ("1c", "4c")[k]
        menu = runs.split(f"<select id='side{k}-runs'")[1].split("</select>")[0]
        names = re.findall(r"<option value='(\d)'>([^<]*)</option>", menu)
        assert names == [(str(i - 1), f"{side}/run{i}/trace.dat") for i in (1, 2, 3)]
        for i in (1, 2, 3):
            name = f"{side}/run{i}/trace.dat"
            for what in ("migration matrix", "task CPU over time"):
                assert f"<figcaption>{label}: {what} ({name})</figcaption>" in runs
            assert f"<figcaption>{label}: per-CPU timeline of {name} (interactive)" in runs
            shown = "" if i == 1 else " style='display:none'"
            assert f"<div class='schedwake-run' data-side='{k}' data-run='{i - 1}'{shown}>" in runs
    # their timelines in seconds since each run's start, the page's exact runs shared
    metas = [
        json.loads(m.replace("&quot;", '"')) for m in re.findall(r"data-timeline='([^']*)'", runs)
    ]
    assert len(metas) == 6 and {m["axis"] for m in metas} == {"since_start"}
    assert sum(m["exact_runs"] for m in metas) <= html.PAGE_EXACT
    assert runs.count("time since the trace&#x27;s start (s); hover: the trace time too") == 6
    assert "<figcaption>1c: per-CPU timeline of trace.dat" not in runs
    # the notes too: every caveat names the runs it concerns
    notes = [n for n in compare_report.notes(runs_compared) if "(1c: " in n or "(4c: " in n]
    assert notes and all("run" in n for n in notes)


def test_each_run_figure_names_its_run():
    """The plots of a run say which run they show (not the file name every run shares),
    and a run's task plot follows the first run's task name."""
    from schedwake.report.plots import RunView, like_for_like_traces, run_figures

    traces = [shared(p) for p in C1[:2]]
    plans = like_for_like_traces(traces)
    assert plans[0][0] is not None and plans[1][2] - plans[1][1] == pytest.approx(
        plans[0][2] - plans[0][1]
    )
    view = RunView("1c", "base/run2/trace.dat", traces[1], *plans[1])
    figs = run_figures(view, vmax=500)
    assert "base/run2/trace.dat: " in figs["migration matrix"].axes[0].get_title()
    title = figs["task CPU over time"].axes[0].get_title()
    assert title.startswith("1c, base/run2/trace.dat: CPU of dbench")
    assert figs["task CPU over time"].axes[0].get_xlabel() == "time since the trace's start (s)"


@pytest.mark.slow
def test_a_sides_menu_shows_each_run_and_their_timelines_zoom_together(
    runs_page, chromium, tmp_path
):
    """In headless Chromium: the side's menu shows the run picked (its timeline drawn),
    hides the others; a zoom of one timeline is every run's (the box checked), in
    seconds since each run's start."""
    path = tmp_path / "runs.html"
    path.write_text(runs_page, encoding="utf-8")
    problems, outside, got = chromium.run(_pick_runs, path.resolve().as_uri())
    assert problems == [] and outside == [], (problems, outside)
    assert got["shown"] == [False, False, True] and got["width"] > 1000
    assert got["ranges"] == {n: [0.2, 0.5] for n in got["ranges"]} and len(got["ranges"]) == 6


def _pick_runs(browser, url: str):
    from .conftest import cut_network

    context = browser.new_context(viewport={"width": 1240, "height": 900})
    try:
        page = context.new_page()
        outside = cut_network(page)
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.on(
            "console",
            lambda m: problems.append(m.text) if m.type in ("error", "warning") else None,
        )
        page.goto(url)
        page.wait_for_function("window.Bokeh && Object.keys(Bokeh.index).length >= 6")
        page.select_option("#side1-runs", "2")
        shown = [
            page.locator(f".schedwake-run[data-side='1'][data-run='{j}']").is_visible()
            for j in range(3)
        ]
        plot = page.locator("#timeline1-2 canvas").first
        plot.scroll_into_view_if_needed()
        page.wait_for_function(
            "document.querySelector('#timeline1-2').getBoundingClientRect().width > 1000"
        )
        width = page.evaluate(
            "document.querySelector('#timeline1-2').getBoundingClientRect().width"
        )
        page.evaluate(
            "(() => { for (const d of Bokeh.documents) { const r = d.get_model_by_name("
            "'timeline0-0-x'); if (r) { r.setv({start: 0.2, end: 0.5}); } } })()"
        )
        ranges = page.evaluate(
            """(() => {
              const out = {};
              for (const el of document.querySelectorAll('.schedwake-timeline')) {
                for (const d of Bokeh.documents) {
                  const r = d.get_model_by_name(el.id + '-x');
                  if (r) { out[el.id] = [r.start, r.end]; }
                }
              }
              return out;
            })()"""
        )
    finally:
        context.close()
    return problems, outside, {"shown": shown, "width": width, "ranges": ranges}


@pytest.mark.slow
def test_gate_names_runs_by_their_directories_in_text_and_markdown(runs):
    settings, rules = parse_rules('[rules."migrations_per_s"]\nallowed = "10%"\n')
    result = schedwake.gate(
        str(runs / "base" / "run*" / "trace.dat"),
        str(runs / "new" / "run*" / "trace.dat"),
        (settings, rules),
        loader=shared,
    )
    want = (
        "baseline: base/run1/trace.dat, base/run2/trace.dat, base/run3/trace.dat; "
        "candidate: new/run1/trace.dat, new/run2/trace.dat, new/run3/trace.dat"
    )
    assert gate_report.text(result).splitlines()[1] == want
    assert want in gate_report.markdown(result)


@pytest.mark.slow
def test_gate_refuses_the_same_files_on_both_sides(runs, tmp_path):
    base = str(runs / "base" / "run*" / "trace.dat")
    proc = run_cli("gate", "--baseline", base, "--candidate", base)
    assert proc.returncode == 2, proc.stdout
    assert "the baseline and the candidate are the same 3 trace file(s)" in proc.stderr
    # the same file named another way (relative, through ./) is the same file
    one = runs / "base" / "run1" / "trace.dat"
    result = schedwake.gate([str(one)], [os.path.relpath(one)])
    assert result.exit_code == 2
    assert any("same 1 trace file" in p for p in result.problems), result.problems
    # some shared: judged, with a note saying so
    result = schedwake.gate(
        [str(C1[0]), str(C1[1])],
        [str(C1[1]), str(C1[2])],
        parse_rules('[rules."migrations_per_s"]\nallowed = "50%"\n'),
        loader=shared,
    )
    assert result.exit_code == 0, gate_report.text(result)
    assert any(
        n.startswith("1 trace file(s) are both baseline and candidate (dbench-xfs-1c-i2.dat)")
        for n in gate_report.notes(result)
    )


def test_two_parts_of_one_trace_are_two_traces_to_the_gate():
    """Loaded traces are told apart by themselves, not by the file they came from: the
    two halves of one run are judged (and the same loaded trace on both sides is not)."""
    t = schedwake.load(C1[0], events=["sched_switch", "sched_waking", "sched_migrate_task"])
    mid = (t.meta.first_ts_ns + t.meta.last_ts_ns) // 2
    first, second = t.sliced(None, mid), t.sliced(mid, None)
    # (one run a side: only its windows can be judged, and only when asked for)
    rules = parse_rules(
        '[gate]\nsamples = "per-window"\n[rules."context_switches_per_s"]\nallowed = "50%"\n'
    )
    result = schedwake.gate(first, second, rules)
    assert not [p for p in result.problems if "same" in p], result.problems
    assert result.exit_code == 0, gate_report.text(result)
    assert "the same 1 trace file(s)" in schedwake.gate(first, first, rules).problems[0]


@pytest.mark.slow
def test_a_metric_from_a_zero_baseline_is_new_in_summaries(runs_compared, runs_page):
    """pingpong_would_stack_per_s is 0 in every 1-client run and 0.30/s with 4 clients:
    the summaries say "new", mmtests' table keeps its -99.00% (pndiff of a zero base)."""
    res = runs_compared
    text = compare_report.text(res, full=True)
    line = next(ln for ln in text.splitlines() if ln.startswith("pingpong_would_stack_per_s "))
    assert line.split() == ["pingpong_would_stack_per_s", "0.00", "0.30", "new"]
    row = next(
        ln for ln in text.splitlines() if ln.startswith("Amean     pingpong_would_stack_per_s")
    )
    assert row.endswith("0.00 (   0.00%)        0.30 ( -99.00%)")
    assert "<td>0.30 (new)</td>" in runs_page
    rec = [
        r
        for r in json.loads(compare_report.to_json(res))["rows"]
        if r["metric"] == "pingpong_would_stack_per_s"
        and r["stat"] == "Amean"
        and r["side"] == "4c"
    ]
    assert rec[0]["pct"] == -99.0  # the JSON is mmtests' table


@pytest.mark.slow
def test_gate_says_new_for_a_zero_baseline():
    settings, rules = parse_rules(
        '[rules."pingpong_would_stack_per_s"]\nallowed = "+0.1"\nsignificance = false\n'
    )
    result = schedwake.gate(C1, C4, (settings, rules), loader=shared)
    (r,) = result.results
    assert r.baseline == 0 and r.candidate == pytest.approx(0.297046, abs=1e-6)
    assert r.status == "broken" and "0/s -> 0.297046/s (new, worst allowed -0.1)" in r.message
    table = gate_report.text(result)
    row = next(ln for ln in table.splitlines() if ln.startswith("pingpong_would_stack_per_s"))
    assert " new " in row and "inf" not in row
    assert "| new |" in gate_report.markdown(result)


@pytest.mark.slow
def test_compare_prints_the_changed_mean_rows_by_default_and_everything_with_full():
    args = ["compare", "--side", f"1c={C1[0].parent}/dbench-xfs-1c-i*.dat"]
    args += ["--side", f"4c={C4[0].parent}/dbench-xfs-4c-i*.dat"]
    short = run_cli(*args, check=True).stdout
    full = run_cli(*args, "--full", check=True).stdout
    # the summary is the same; then the mean rows that changed significantly
    assert short.split("\n\n")[0] == full.split("\n\n")[0]
    table = mmtests_part(short).splitlines()
    assert table[0] == (
        "mmtests table: the mean rows of the 11 of 22 metrics that changed significantly; "
        "--full prints the whole table (Min, Stddev, CoeffVar, Max, best means)"
    )
    rows = [ln for ln in table if ln.startswith(("Amean", "Hmean", "Min", "Max", "BAmean"))]
    assert len(rows) == 11 and all("*" in r for r in rows)
    assert (
        "Amean migrations_per_s                   324.97 (   0.00%)      584.31 * -79.81%*" in rows
    )
    # the rows of the whole table (22 metrics x 8 statistics), the same rule line
    full_rows = [ln for ln in mmtests_part(full).splitlines() if ln[:1].isupper()]
    assert sum(ln.startswith("BAmean-95 ") or ln.startswith("BHmean-95 ") for ln in full_rows) == 22
    rule = [ln for ln in short.splitlines() if ln.startswith("* significant")]
    assert rule == [ln for ln in full.splitlines() if ln.startswith("* significant")]
    assert len(short.splitlines()) < len(full.splitlines()) - 100
    md = run_cli(*args, "--format", "markdown", check=True).stdout
    assert md.count("| Amean |") + md.count("| Hmean |") == 11 and "| Min |" not in md


@pytest.mark.slow
def test_compare_says_when_nothing_changed_significantly():
    sides = {"a": [shared(p) for p in C1[:2]], "b": [shared(p) for p in C1[1:]]}
    res = schedwake.compare(sides, metrics=["migrations_per_s"])
    text = compare_report.text(res)
    assert "mmtests table: none of the 1 metrics changed significantly" in text
    assert "Amean" not in text and "* significant:" in text
