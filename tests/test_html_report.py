"""The HTML report: one self-contained file, opened in a real headless Chromium.

The browser test needs the Debian package ``chromium`` (scripts/bootstrap.sh installs
it) and the Python package ``playwright`` (the test extra; it drives /usr/bin/chromium,
it downloads no browser), and is skipped, saying so, without them. It checks that the
page renders with no console message and fetches nothing, that every image decoded (the
page's own script writes ``loaded/total`` into ``<body data-images>`` after ``load``) and
keeps a screenshot in ``test-artifacts/``.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from .conftest import ROOT, computed_once, cut_network, mmtests_part, run_cli, run_dir, sample

ARTIFACTS = ROOT / "test-artifacts"
PNG = b"\x89PNG\r\n\x1a\n"


def without_scripts(html: str) -> str:
    """The page with the bodies of its inline ``<script>`` elements left out."""
    return re.sub(r"(<script\b[^>]*>).*?(</script>)", r"\1\2", html, flags=re.S | re.I)


_COMPARE = (
    "compare",
    sample("fio-pinned-root.dat"),
    sample("fio-pinned-weighted.dat"),
    "--label",
    "fio-root",
    "--label",
    "fio-weighted",
    "--title",
    "fio pinned: root vs weighted cgroup",
    "--full",  # the whole mmtests table, as the HTML has it
    "--samples",  # (one run a side: its windows, as batch means, asked for)
    "window",
    "--html",
)


def compare_html():
    """The HTML report of the fio pair (real traces), written by the CLI in this process
    (the file and the run): once per test run, for the tests of this file and
    tests/test_progress.py, on either worker."""

    def run():
        out = run_dir() / "html-report" / "compare-report.html"
        out.parent.mkdir()
        return out, run_cli(*_COMPARE, out, check=True)

    return computed_once("schedwake " + " ".join(map(str, _COMPARE)), run)


@pytest.fixture(scope="module")
def report():
    """(the report's path, what the CLI printed on stdout)"""
    path, proc = compare_html()
    return path, proc.stdout


@pytest.mark.slow
def test_html_is_self_contained(report):
    path, _ = report
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    # nothing fetched from anywhere outside the inline scripts (BokehJS's own strings
    # name URLs it never loads here: the browser test runs the page with the network cut)
    page = without_scripts(html)
    assert not re.search(r"""(?:src|href)\s*=\s*['"]?(?!data:|#)[a-z]+:""", page, re.I)
    assert not re.search(r"<link\b|<script[^>]+src=|@import|url\(", page, re.I)
    imgs = re.findall(r"<img [^>]*src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    assert len(imgs) == page.count("<img ") == 6
    for data in imgs:
        assert base64.b64decode(data).startswith(PNG)


@pytest.mark.slow
def test_html_has_tables_findings_and_plots(report):
    path, text = report
    html = path.read_text(encoding="utf-8")
    assert "<title>fio pinned: root vs weighted cgroup</title>" in html
    # the mmtests table exactly as printed on stdout (HTML-escaped in a <pre>)
    import html as h

    assert h.escape(mmtests_part(text).split("\n* significant")[0]) in html
    assert "* significant: two-sided t-test" in html
    assert "Mean rows at a glance" in html and "class='better'" in html
    assert "[95% CI " in html  # each change with its interval
    assert "Findings per side" in html
    for side in ("fio-root", "fio-weighted"):
        assert f"<h3>{side}</h3>" in html
    for name in (
        "Wake-to-run latency CDF",
        "Per-CPU busy share",
        "fio-root: migration matrix (fio-pinned-root.dat)",
        "fio-weighted: task CPU over time (fio-pinned-weighted.dat)",
    ):
        assert f"<figcaption>{name}</figcaption>" in html


def test_api_html_from_samples_only(tmp_path):
    import pandas as pd

    from schedwake.compare import from_samples
    from schedwake.report import html as html_report

    rows = [
        {"side": s, "metric": "context_switches_per_s", "value": v}
        for s, vals in (("a", (1.0, 2.0, 3.0)), ("b", (2.0, 3.0, 4.0)))
        for v in vals
    ]
    res = from_samples(pd.DataFrame(rows))
    html = html_report.render(res)
    assert "(samples only)" in html and html.count("<img ") == 0  # no empty busy chart
    busy = [{**r, "metric": "busy_share_cpu0"} for r in rows]
    html = html_report.render(from_samples(pd.DataFrame(rows + busy)))
    assert html.count("<img ") == 1  # the busy share plot only: no traces to draw


def render(browser, url: str, width: int, height: int, shot: Path) -> tuple[str, list, list]:
    """``url`` opened in a fresh context of ``browser`` (the ``chromium`` fixture's) with
    the network cut, every request but the file's own refused: the DOM once loaded (the
    page's script runs on ``load``, which ``goto`` waits for), the console messages and
    uncaught errors it gave, the requests it tried
    outside its file, and a screenshot of a ``width`` x ``height`` window into ``shot``."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        console: list[str] = []
        outside = cut_network(page)
        page.on("console", lambda m: console.append(f"CONSOLE {m.type}: {m.text}"))
        page.on("pageerror", lambda e: console.append(f"Uncaught {e}"))

        page.goto(url)
        dom = page.content()
        page.screenshot(path=str(shot))
    finally:
        context.close()
    return dom, console, outside


def noise_left(console: list[str]) -> list[str]:
    """The console messages but BokehJS's note of its log level."""
    return [c for c in console if "setting log level to: 'warn'" not in c]


@pytest.mark.slow
def test_renders_in_headless_chromium(report, chromium):
    path, _ = report
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "compare-report.png"  # a screenshot, kept as a test artifact
    shot.unlink(missing_ok=True)
    dom, console, outside = chromium.run(render, path.resolve().as_uri(), 1280, 2000, shot)
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:500]
    attrs = body.group(1)
    assert 'data-rendered="ok"' in attrs, attrs
    loaded = re.search(r'data-images="(\d+)/(\d+)"', attrs)
    assert loaded and loaded.group(1) == loaded.group(2) == "6", attrs
    assert noise_left(console) == [] and outside == [], (console, outside)
    # each side's interactive timeline is in the page (tests/test_timeline_html.py
    # drives one in the browser)
    assert dom.count('class="schedwake-timeline"') == 2
    data = Path(shot).read_bytes()
    assert data.startswith(PNG) and len(data) > 20_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)
