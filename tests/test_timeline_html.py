"""The interactive per-CPU timeline (``schedwake.report.timeline_html``): its data, its
level of detail, and the page driven in the system's headless Chromium (playwright,
the network cut): zoom on the ping-pong episode of the README's dbench trace, hover an
arrow and a run, read the tooltips against ``trace-cmd report -N``.

The browser test needs the Debian package ``chromium`` and the Python package
``playwright`` (the test extra; it drives /usr/bin/chromium, it downloads no browser)
and is skipped, saying so, without them. It keeps its screenshots in ``test-artifacts/``
(the ones in docs/images/ were taken by it).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from schedwake.report import timeline_html
from schedwake.report.timeline_html import (
    _aggregate,
    _runs,
    _time_in_bins,
    plan,
    timeline_fragment,
)
from schedwake.report.timeline_task import task_choices

from .conftest import cut_network
from .test_analysis_html import analysed, analyze_html
from .test_html_report import ARTIFACTS, PNG


@pytest.fixture(scope="module")
def loaded():
    return analysed()


def test_the_bins_hold_every_nanosecond_of_the_runs(loaded):
    """Per CPU, the aggregated bins' busy time adds up to the CPU's running time, and a
    bin's time is what the runs spend inside it (against a plain overlap per bin)."""
    trace, _ = loaded
    runs = _runs(trace)
    ev = trace.model.events
    lo, hi = int(ev.first_ts), int(ev.last_ts)
    order = list(range(8))
    agg = _aggregate(runs, order, lo, hi, 300)
    width = agg["right"] - agg["left"]
    for c in order:
        mine = runs[(runs["cpu"] == c) & ~runs["waiting"]]
        total = int((mine["end"] - mine["start"]).sum())
        got = float((agg["busy"] * width)[agg["cpu"] == c].sum())
        assert total > 0 and got == pytest.approx(total, rel=1e-9)
    edges = np.linspace(lo, hi, 41).round().astype(np.int64)
    waits = runs[runs["waiting"] & (runs["cpu"] == 4)]
    s, e = waits["start"].to_numpy(), waits["end"].to_numpy()
    plain = [
        np.clip(np.minimum(e, b) - np.maximum(s, a), 0, None).sum()
        for a, b in zip(edges[:-1], edges[1:])
    ]
    assert np.allclose(_time_in_bins(s, e, edges), plain, rtol=0, atol=1e-3)
    assert sum(plain) > 0  # (waits overlap: more than one task waits at times)


def test_runs_carry_the_state_of_their_switch_out(loaded):
    """trace-cmd report -N: kworker/2:1H-160 runs on CPU 2 from 52.679708229 (switched in
    after swapper/2) to 52.679918158, switched out with prev_state=I."""
    trace, _ = loaded
    runs = _runs(trace)
    r = runs[(runs["pid"] == 160) & (runs["start"] == 52_679_708_229)]
    assert len(r) == 1
    assert (int(r["cpu"].iloc[0]), int(r["end"].iloc[0])) == (2, 52_679_918_158)
    assert r["state_out"].iloc[0] == "I" and not r["waiting"].iloc[0]
    # dbench-563 waits on CPU 4 from its sched_wakeup (52.679821667) to its switch-in
    w = runs[(runs["pid"] == 563) & runs["waiting"] & (runs["end"] == 52_679_853_538)]
    assert list(w["start"]) == [52_679_821_667] and list(w["cpu"]) == [4]
    # every run that ended in a switch has its state (only each CPU's last one has none)
    on = runs[~runs["waiting"]]
    assert (on["state_out"] == "").sum() <= 8


def _meta(fragment: str) -> dict:
    got = re.search(r"data-timeline='([^']*)'", fragment)
    assert got
    return json.loads(got.group(1).replace("&quot;", '"'))


def test_a_trace_over_the_budget_keeps_the_exact_runs_of_its_findings_only(loaded, monkeypatch):
    """Above EXACT_BUDGET runs the file holds the runs that touch an evidence window, and
    its size drops with them; the aggregated view keeps the whole trace."""
    trace, analysis = loaded
    full = timeline_fragment(trace, analysis.findings)
    meta = _meta(full)
    assert meta["exact_runs"] == meta["runs"] > 30_000
    monkeypatch.setattr(timeline_html, "EXACT_BUDGET", 5_000)
    small = timeline_fragment(trace, analysis.findings)
    runs = _runs(trace)
    got = _meta(small)
    assert got["ranges"] == ["f0", "f1", "busy"]  # the findings, the densest migrations
    near = np.zeros(len(runs), bool)
    for t0, t1 in got["exact_windows"]:
        near |= (runs["end"].to_numpy() >= t0) & (runs["start"].to_numpy() <= t1)
    # the findings' windows, widened to MIN_WINDOW_NS, are among them
    for f, (t0, t1) in zip(analysis.findings, got["exact_windows"]):
        mid = (f.evidence_at["t0"] + f.evidence_at["t1"]) // 2
        assert t0 <= min(f.evidence_at["t0"], mid - timeline_html.MIN_WINDOW_NS // 2)
        assert t1 >= max(f.evidence_at["t1"], mid + timeline_html.MIN_WINDOW_NS // 2) - 1
    assert got["exact_runs"] == int(near.sum()) < 5_000
    assert len(small) < len(full) / 3
    assert "densest wake-up migrations only" in small
    # how to see every run: the Perfetto export of this very trace (and a span's report)
    path = str(trace.meta.path)
    cmd = f"schedwake convert {path} --to perfetto -o k61-dbench-c2-kstack-off-i1.pftrace"
    for text in (cmd, "docs/perfetto.md", f"schedwake analyze {path} --time START,END"):
        assert text in small and text not in full, text


def test_one_time_base_with_the_other_on_hover_and_the_latency_in_words(loaded):
    """The analyze page's timeline is in trace time (its axis says so), its hover gives
    the time since the start too; the compare page's runs are in seconds since their
    start; an arrow's latency is said in words, -1 never shown."""
    trace, analysis = loaded
    full = timeline_fragment(trace, analysis.findings)
    assert "trace time (s), as trace-cmd report prints it; hover: the time since" in full
    assert _meta(full)["axis"] == "trace_time"
    for text in ("from the wake-up to its switch-in", "the trace does not show the wakee running"):
        assert text in full
    assert "-1: not seen running" not in full
    rel = timeline_fragment(trace, analysis.findings, since_start=True, run="off/i1")
    assert _meta(rel)["axis"] == "since_start" and "off/i1: who runs on each CPU" in rel
    # the same runs, one base minus the other
    pl = plan(trace, analysis.findings)
    first = trace.model.events.first_ts
    assert pl.lo == first and len(pl.exact) == len(pl.runs)


def test_the_picker_lists_every_task_most_runs_first(loaded):
    trace, _ = loaded
    runs = _runs(trace)
    labels, totals = task_choices(runs)
    on = runs[~runs["waiting"] & ~runs["unknown"] & (runs["pid"] > 0)]
    assert len(labels) == on["pid"].nunique() and "dbench (563)" in labels
    assert totals[563] == int((on["pid"] == 563).sum()) > 1000
    assert list(totals.values()) == sorted(totals.values(), reverse=True)
    assert labels[0].endswith(f"({next(iter(totals))})")
    assert task_choices(runs, limit=3)[0] == labels[:3]


@pytest.fixture(scope="module")
def report():
    return analyze_html()[0]  # the report of TRACE, made once for both files


_FIND = """
window._view = function (name) {
  function walk(v) {
    if (v.model && v.model.name === name) { return v; }
    for (const c of (v.child_views ?? [])) { const r = walk(c); if (r) { return r; } }
    return null;
  }
  for (const k in Bokeh.index) { const r = walk(Bokeh.index[k]); if (r) { return r; } }
  return null;
};
window._tips = function () {
  // the text of the tooltips shown (each in its own shadow root)
  const out = [];
  (function walk(root) {
    for (const el of root.querySelectorAll('*')) {
      if (el.classList.contains('bk-Tooltip') && el.shadowRoot && el.checkVisibility()) {
        out.push(el.shadowRoot.textContent);
      }
      if (el.shadowRoot) { walk(el.shadowRoot); }
    }
  })(document);
  return out.join(' | ');
};
window._px = function (x, y) {
  const pv = _view('timeline-plot'), r = pv.el.getBoundingClientRect();
  return [r.left + pv.frame.x_scale.compute(x), r.top + pv.frame.y_scale.compute(y)];
};
"""


@pytest.mark.slow
def test_zoom_and_hover_in_headless_chromium(report, chromium):
    """Offline (every request but the file's own refused), no console error; the whole
    trace opens aggregated; the kworker_pingpong finding's range zooms on the episode
    and swaps in the exact runs; hovering the arrow and the kworker's run shows what
    trace-cmd prints for them."""
    ARTIFACTS.mkdir(exist_ok=True)
    trace, _ = analysed()
    since = f"{(52_679_760_349 - trace.model.events.first_ts) / 1e9:.6f}"
    runs = _runs(trace)
    mine = runs[(runs["pid"] == 563) & ~runs["waiting"]]
    longest = mine.loc[(mine["end"] - mine["start"]).idxmax()]
    at = ((int(longest["start"]) + int(longest["end"])) / 2e9, int(longest["cpu"]))
    problems, outside = chromium.run(
        _zoom_and_hover, report.resolve().as_uri(), since, len(mine), at
    )
    assert problems == [] and outside == [], (problems, outside)


def _tips_once_they_show(page, text: str) -> str:
    """The tooltips' text once it holds ``text`` (the hover is handled asynchronously:
    waited for, not a fixed delay), or whatever they show after 10 s, for the message."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("t => _tips().includes(t)", arg=text, timeout=10_000)
    except PlaywrightTimeout:
        pass
    return page.evaluate("_tips()")


def _zoom_and_hover(browser, url: str, since: str, runs: int, at) -> tuple[list[str], list[str]]:
    """The test above, in the browser's thread: its page's problems and the requests it
    tried outside its file. ``since``: the arrow's time since the trace's start as the
    hover gives it; ``runs``: dbench-563's runs; ``at``: (time, CPU) of its longest."""
    context = browser.new_context(viewport={"width": 1240, "height": 900})
    try:
        page = context.new_page()
        problems: list[str] = []
        outside = cut_network(page)
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.on(
            "console",
            lambda m: (
                problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None
            ),
        )

        page.goto(url)
        page.wait_for_function("window.Bokeh && Object.keys(Bokeh.index).length > 0")
        page.evaluate(_FIND)
        page.wait_for_function("_view('timeline-plot') !== null")
        box = page.locator("#timeline")
        assert box.get_attribute("data-level") == "aggregate"  # 24 s: too many runs
        box.screenshot(path=str(ARTIFACTS / "timeline-whole.png"))
        # the finding's named range, as the report's link does it
        page.locator("a[onclick*=\"'f0'\"]").first.click()
        page.wait_for_function("document.getElementById('timeline').dataset.level === 'exact'")
        xr = page.evaluate(
            "(() => { const r = _view('timeline-plot').model.x_range; return [r.start, r.end]; })()"
        )
        assert xr == pytest.approx([52.679713329, 52.679919158], abs=1e-9)
        # a little wider: the whole episode, kworker run included
        page.evaluate(
            "_view('timeline-plot').model.x_range.setv({start: 52.679690, end: 52.679935})"
        )
        page.wait_for_timeout(300)
        assert page.get_by_text("exact runs and wake-up migrations").count() == 1
        # the arrow: between CPU 3's row and CPU 4's (no run there)
        x, y = page.evaluate("_px(52.679760349, 3.55)")
        page.mouse.move(x, y)
        tips = _tips_once_they_show(page, "previous 2 -> chosen 4")
        for text in (
            f"52.679760 s ({since} s since the trace's start)",  # (the other base)
            "kworker/2:1H:160 on CPU 2",
            "dbench:563",
            "previous 2 -> chosen 4",
            # sched_waking 52.679760349 to switch-in 52.679853538, in words
            "93.2 µs from the wake-up to its switch-in",
        ):
            assert text in tips, tips
        shot = ARTIFACTS / "timeline-pingpong-arrow.png"
        box.screenshot(path=str(shot))
        assert shot.read_bytes().startswith(PNG)
        # the arrow's hover reaches 5 px beside its 2 px shaft (away first: no tooltip)
        page.mouse.move(x, y + 400)
        page.wait_for_function("!_tips().includes('previous 2 -> chosen 4')")
        page.mouse.move(x + 5, y)
        assert "previous 2 -> chosen 4" in _tips_once_they_show(page, "previous 2 -> chosen 4")
        # the kworker's run on CPU 2
        x, y = page.evaluate("_px(52.679880, 2.0)")
        page.mouse.move(x, y)
        tips = _tips_once_they_show(page, "kworker/2:1H (pid 160)")
        for text in ("kworker/2:1H (pid 160)", "52.679708 s", "209.9 µs", "I"):
            assert text in tips, tips
        shot = ARTIFACTS / "timeline-pingpong-run.png"
        box.screenshot(path=str(shot))
        # back to the whole trace: aggregated again
        page.evaluate("schedwakeJump('timeline', 'all')")
        page.wait_for_function("document.getElementById('timeline').dataset.level === 'aggregate'")
        # the task picker: a pid typed finds its task; its runs on every CPU, at this zoom
        picker = page.get_by_placeholder("type a name or a pid")
        picker.click()
        picker.type("563")
        page.get_by_text("dbench (563)", exact=True).click()
        page.wait_for_function("document.getElementById('timeline').dataset.task === '563'")
        assert int(box.get_attribute("data-task-runs")) == runs
        line = page.get_by_text(re.compile(r"^dbench \(563\): \d+ runs on CPU"))
        assert line.inner_text().startswith(f"dbench (563): {runs} runs on CPU 0, 1, 2, 3")
        x, y = page.evaluate(f"_px({at[0]}, {at[1]})")
        page.mouse.move(x, y)
        tips = _tips_once_they_show(page, "dbench (pid 563)")
        assert "dbench (pid 563)" in tips and "ran, switched out in state" in tips, tips
        box.screenshot(path=str(ARTIFACTS / "timeline-task.png"))
        page.get_by_role("button", name="every task").click()
        page.wait_for_function("document.getElementById('timeline').dataset.task === ''")
    finally:
        context.close()
    return problems, outside
