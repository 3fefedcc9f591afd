"""The HTML report: one self-contained file, opened in a real headless Chromium.

The browser test needs the Debian package ``chromium`` (scripts/bootstrap.sh installs
it) and is skipped, saying so, when it is missing. It checks that the page renders with
no console message, that every image decoded (the page's own script writes
``loaded/total`` into ``<body data-images>`` after ``load``) and keeps a screenshot in
``test-artifacts/``.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, mmtests_part, run_cli, sample

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "test-artifacts"
PNG = b"\x89PNG\r\n\x1a\n"


def without_scripts(html: str) -> str:
    """The page with the bodies of its inline ``<script>`` elements left out."""
    return re.sub(r"(<script\b[^>]*>).*?(</script>)", r"\1\2", html, flags=re.S | re.I)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The HTML report of the fio pair (real traces), written by the CLI."""
    out = tmp_path_factory.mktemp("html") / "compare-report.html"
    proc = run_cli(
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
        "--html",
        out,
        check=True,
    )
    return out, proc.stdout


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
    assert "Findings per side" in html
    for side in ("fio-root", "fio-weighted"):
        assert f"<h3>{side}</h3>" in html
    for name in (
        "Wake-to-run latency CDF",
        "Per-CPU busy share",
        "fio-root: migration matrix",
        "fio-weighted: task CPU over time",
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


def _chromium(args, tmp_path, timeout=180):
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
    ] + args
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


@pytest.mark.slow
@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (Debian package "
    "'chromium', installed by scripts/bootstrap.sh)",
)
def test_renders_in_headless_chromium(report, tmp_path):
    path, _ = report
    url = path.resolve().as_uri()
    dom = _chromium(["--enable-logging=stderr", "--v=0", "--dump-dom", url], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", dom.stdout)
    assert body, dom.stdout[:500]
    attrs = body.group(1)
    assert 'data-rendered="ok"' in attrs, attrs
    loaded = re.search(r'data-images="(\d+)/(\d+)"', attrs)
    assert loaded and loaded.group(1) == loaded.group(2) == "6", attrs
    console = [
        ln
        for ln in dom.stderr.splitlines()
        if (":CONSOLE" in ln or "Uncaught" in ln) and "setting log level to: 'warn'" not in ln
    ]
    assert console == [], console
    # each side's interactive timeline is in the page (tests/test_timeline_html.py
    # drives one in the browser)
    assert dom.stdout.count('class="schedwake-timeline"') == 2
    # a screenshot, kept as a test artifact
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "compare-report.png"
    shot.unlink(missing_ok=True)
    snap = _chromium([f"--screenshot={shot}", "--window-size=1280,2000", url], tmp_path)
    assert snap.returncode == 0, snap.stderr[-2000:]
    data = Path(shot).read_bytes()
    assert data.startswith(PNG) and len(data) > 20_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)
