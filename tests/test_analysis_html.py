"""``schedwake analyze TRACE --html FILE``: the report of one trace, self-contained,
with a per-CPU timeline of each finding's evidence, opened in headless Chromium."""

from __future__ import annotations

import base64
import functools
import re
from pathlib import Path

import pytest

import schedwake
from schedwake.report.timeline import cpu_timeline

from .conftest import computed_once, run_cli, run_dir, sample, shared_trace
from .test_html_report import ARTIFACTS, PNG, noise_left, render, without_scripts

TRACE = sample("kstack-6.1/k61-dbench-c2-kstack-off-i1.dat")


def analyze_html():
    """``schedwake analyze TRACE --html`` (the file and the run), run once per test run:
    the page is read by the tests here and by tests/test_timeline_html.py, on either
    worker."""

    def run():
        out = run_dir() / "analyze-html" / "reports" / "analyze.html"  # parents made
        return out, run_cli("analyze", TRACE, "--html", out, check=True)

    return computed_once(f"schedwake analyze {TRACE} --html", run)


@functools.cache
def analysed():
    """TRACE (shared_trace) and its analysis, made once per process for the tests here
    and in tests/test_timeline_html.py that only read them."""
    trace = shared_trace(TRACE)
    return trace, schedwake.analyze(trace)


@pytest.fixture(scope="module")
def report():
    return analyze_html()


@pytest.mark.slow
def test_the_report_is_self_contained_with_a_timeline_per_finding(report):
    path, proc = report
    assert f"wrote {path}" in proc.stderr
    assert proc.stdout.startswith("== schedwake analyze: ")  # the text report still prints
    html = path.read_text(encoding="utf-8")
    # nothing fetched from anywhere outside the inline scripts (BokehJS's own strings
    # name URLs it never loads here: the browser test runs the page with the network cut)
    page = without_scripts(html)
    assert not re.search(r"""(?:src|href)\s*=\s*['"]?(?!data:|#)[a-z]+:""", page, re.I)
    assert not re.search(r"<link\b|<script[^>]+src=|@import|url\(", page, re.I)
    imgs = re.findall(r"<img [^>]*src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    for data in imgs:
        assert base64.b64decode(data).startswith(PNG)
    # ping-pong and round-robin fire: a timeline each, then the whole-trace figures
    for cap in (
        "kworker_pingpong: per-CPU timeline",
        "llc_roundrobin: per-CPU timeline",
        "migration matrix",
        "wake-to-run latency by waker class",
        "per-CPU busy share",
        "waits broken into causes",
        "time in each state",
    ):
        assert f"<figcaption>{cap}</figcaption>" in html
    # + the task states' bars, the waits' bars and the windows of the longest wake-to-run
    # and preempted waits
    assert len(imgs) == 9
    # the whole trace: the interactive timeline (tests/test_timeline_html.py drives it)
    assert "<figcaption>per-CPU timeline (interactive:" in html
    assert html.count("schedwakeJump('timeline', 'f") == 2
    # evidence lines wrap at the box's edge rather than being clipped
    assert "details pre { white-space: pre-wrap; overflow-wrap: anywhere; }" in html
    assert "xlog_ioend_work" in html and "longest wait" in html
    assert "kworker ping-pong episodes (see kworker_pingpong)" in html


def test_timeline_draws_the_evidence_it_zooms_on():
    """The zoomed timeline shows the episode's migration as an arrow from the kworker's
    CPU to the chosen one, and the runs of the window's CPUs."""
    trace, analysis = analysed()
    f = [x for x in analysis.findings if x.detector == "kworker_pingpong"][0]
    t0, t1 = f.evidence_at["t0"], f.evidence_at["t1"]
    fig = cpu_timeline(trace, t0, t1)
    ax = fig.axes[0]
    w = trace.wakeups()
    moved = w[(w["ts"] >= t0) & (w["ts"] <= t1) & w["migrated"]]
    arrows = [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    assert len(arrows) == len(moved) > 0
    assert f"{len(moved)} wake-up migration(s)" in ax.get_title()
    order = [int(t.get_text()) for t in ax.get_yticklabels() if t.get_text()]
    first = moved.iloc[0]
    a = arrows[0]
    assert (
        order[int(a.xyann[1])] == first["prev_cpu"] and order[int(a.xy[1])] == first["chosen_cpu"]
    )


@pytest.mark.slow
def test_renders_in_headless_chromium(report, chromium):
    path, _ = report
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "analyze-report.png"
    shot.unlink(missing_ok=True)
    dom, console, outside = chromium.run(render, Path(path).resolve().as_uri(), 1280, 2600, shot)
    attrs = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-rendered="ok"' in attrs and 'data-images="9/9"' in attrs, attrs
    assert noise_left(console) == [] and outside == [], (console, outside)
    assert shot.read_bytes().startswith(PNG)


def test_static_timelines_are_in_trace_time_as_the_interactive_one():
    """One time base on the analyze page: a long window's axis is trace time (seconds as
    trace-cmd report prints them, not since the start), a short one's µs after a trace
    time; the label says which."""
    trace, _ = analysed()
    first = trace.model.events.first_ts
    ax = cpu_timeline(trace, first + 1_000_000_000, first + 2_000_000_000).axes[0]
    assert ax.get_xlabel().startswith("trace time (s), as trace-cmd report prints it")
    assert ax.get_xlim() == pytest.approx(((first + 1e9) / 1e9, (first + 2e9) / 1e9))
    ax = cpu_timeline(trace, 52_679_713_329, 52_679_919_158).axes[0]
    assert ax.get_xlabel() == "µs after 52.679713 s (trace time, as trace-cmd report prints it)"


def test_a_zoom_on_a_large_machine_shows_the_llcs_of_the_evidence():
    trace = shared_trace(sample("kstack-6.1-32cpu/k61-32cpu-dbench-c2-kstack-off-i1.dat"))
    f = [x for x in schedwake.analyze(trace).findings if x.detector == "kworker_pingpong"][0]
    ea = f.evidence_at
    ax = cpu_timeline(trace, ea["t0"], ea["t1"], cpus=ea["cpus"]).axes[0]
    rows = {int(t.get_text()) for t in ax.get_yticklabels() if t.get_text()}
    llcs = [set(g) for g in trace.topology.llc if set(g) & set(ea["cpus"])]
    assert rows == set().union(*llcs) and len(rows) < 32
