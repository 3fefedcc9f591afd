"""Differential flame graphs (schedwake/report/flamegraph.py) and the self-contained HTML
report of a profile comparison (schedwake/report/profile_html.py), on the real
recordings of sample_traces/profiles/ (base, its A/A twin aa, and seccomp: the same
workload behind a seccomp filter, the known cause), then opened in headless Chromium."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedwake.profile import Profile
from schedwake.profile.compare import ProfileComparison, compare_profiles
from schedwake.report import flamegraph, profile_html

from .conftest import sample_profiles
from .test_html_report import ARTIFACTS, PNG, render

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "sample_traces" / "profiles"
WORK = 960_000  # messages per run (record-profiles.sh)
HOSTILE = "<script>alert(1)</script>&\"'"
KERNEL = "[kernel.kallsyms]"
RGB = re.compile(r"rgb\((\d+),(\d+),(\d+)\)")


@pytest.fixture(scope="module")
def sides():
    """The profiles of every run of each side, their kernel frames named by the recording
    kernel's kallsyms (tests/conftest.py, ``sample_profiles``); read only."""
    return sample_profiles()


@pytest.fixture(scope="module")
def cmp3(sides):
    return compare_profiles(sides, work=WORK)


@pytest.fixture(scope="module")
def report(sides, tmp_path_factory):
    """The HTML report of base vs seccomp (what ``schedwake profile --html`` writes)."""
    cmp = compare_profiles({"base": sides["base"], "seccomp": sides["seccomp"]}, work=WORK)
    path = tmp_path_factory.mktemp("prof") / "profile-report.html"
    profile_html.write(cmp, path, top=10)
    return path


def _frames(svg: str) -> dict[str, dict]:
    """The frames of a graph, parsed as XML: id -> class, parent id, x, y, width,
    fill (r, g, b), title."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter("g"):
        rect, title = g.find("rect"), g.find("title")
        assert rect is not None and title is not None
        m = RGB.fullmatch(rect.get("fill", ""))
        assert m, rect.get("fill")
        out[g.get("id")] = {
            "class": set(g.get("class", "").split()),
            "parent": g.get("data-p"),
            "x": float(rect.get("x")),
            "y": float(rect.get("y")),
            "w": float(rect.get("width")),
            "fill": tuple(int(v) for v in m.groups()),
            "title": title.text or "",
        }
    return out


def _neutral(rgb) -> bool:
    r, g, b = rgb
    return min(rgb) >= 190 and max(rgb) - min(rgb) <= 50


@pytest.mark.slow
def test_the_seccomp_path_is_red_after_and_the_a_a_pair_is_not_coloured(cmp3):
    after = _frames(flamegraph.svg(cmp3, "seccomp", flamegraph.AFTER))
    filt = [f for f in after.values() if f["title"].startswith(f"__seccomp_filter ({KERNEL})")]
    assert filt
    for f in filt:
        r, g, b = f["fill"]
        assert "grew" in f["class"] and r == 255 and g == b < 150, f
    # red is only for functions whose share grew significantly; nothing is blue after
    rows = cmp3.rows.set_index(["dso", "symbol"])
    for f in after.values():
        assert "shrank" not in f["class"]
        if "grew" not in f["class"]:
            assert _neutral(f["fill"]), f
    grown = {f["title"].split(" (", 1)[0] for f in after.values() if "grew" in f["class"]}
    assert {"__seccomp_filter", "syscall_trace_enter"} <= grown
    for name in grown:
        row = rows.xs(name, level="symbol").iloc[0]
        assert (
            row["children_share:significant[seccomp]"] and row["children_share:change[seccomp]"] > 0
        ) or (row["self_share:significant[seccomp]"] and row["self_share:change[seccomp]"] > 0)
    # before: the baseline's widths, blue where the share shrank (the write path gave
    # way to the filter), and the filter is not drawn at all (base never ran it)
    before = _frames(flamegraph.svg(cmp3, "seccomp", flamegraph.BEFORE))
    blue = [f for f in before.values() if "shrank" in f["class"]]
    assert blue and all(f["fill"][2] == 255 and f["fill"][0] < 150 for f in blue)
    assert any(f["title"].startswith(f"ksys_write ({KERNEL})") for f in blue)
    assert not any(f["title"].startswith("__seccomp_filter") for f in before.values())
    # the A/A pair: nothing starred, so nothing coloured either way
    for direction in (flamegraph.AFTER, flamegraph.BEFORE):
        aa = _frames(flamegraph.svg(cmp3, "aa", direction))
        assert len(aa) > 50
        assert all(_neutral(f["fill"]) and not f["class"] & {"grew", "shrank"} for f in aa.values())


@pytest.mark.slow
def test_frames_sit_on_their_callers(cmp3):
    for side, direction in (("seccomp", "after"), ("seccomp", "before"), ("base", None)):
        frames = _frames(flamegraph.svg(cmp3, side, direction))
        roots = [f for f in frames.values() if f["parent"] is None]
        assert len(roots) == 1 and roots[0]["title"].startswith("all")
        kids: dict[str, float] = {}
        for f in frames.values():
            if f["parent"] is None:
                continue
            p = frames[f["parent"]]
            assert f["w"] <= p["w"], (f, p)
            assert p["x"] - 0.05 <= f["x"] and f["x"] + f["w"] <= p["x"] + p["w"] + 0.15
            assert f["y"] == p["y"] - flamegraph.FRAME_H  # root at the bottom
            kids[f["parent"]] = kids.get(f["parent"], 0.0) + f["w"]
        for pid, total in kids.items():
            assert total <= frames[pid]["w"] + 0.3


def test_titles_hold_both_sides_shares(cmp3):
    after = _frames(flamegraph.svg(cmp3, "seccomp", flamegraph.AFTER))
    pattern = re.compile(r".+  base \d+\.\d\d%  seccomp \d+\.\d\d%  \([+-]\d+\.\d\d pp\)")
    for f in after.values():
        assert pattern.match(f["title"].split("\n")[0]), f["title"]
    filt = [f["title"] for f in after.values() if f["title"].startswith("__seccomp_filter (")]
    first = filt[0].split("\n")
    assert first[0].startswith(f"__seccomp_filter ({KERNEL})  base 0.00%  seccomp ")
    # the function's own test: its children share grew 11.9 pp, starred
    assert re.search(r"children \+11\.\d\d pp \(q [0-9.e-]+\) \*", filt[0]), filt[0]
    # its frames' paths add up to its children share (it is never its own caller)
    row = cmp3.rows[cmp3.rows.symbol == "__seccomp_filter"].iloc[0]
    got = sum(float(re.search(r"seccomp (\d+\.\d\d)%", t).group(1)) for t in filt)
    assert got == pytest.approx(row["children_share[seccomp]"] * 100, abs=0.02 * len(filt))


def _profile(stacks: dict[tuple, int], path: str) -> Profile:
    """A profile of ``stacks`` ((dso, symbol) frames, own function first -> period)."""
    names: list[tuple[str, str]] = []
    for frames in stacks:
        for f in frames:
            if f not in names:
                names.append(f)
    index = {f: i for i, f in enumerate(names)}
    self_p = np.zeros(len(names))
    child_p = np.zeros(len(names))
    for frames, period in stacks.items():
        self_p[index[frames[0]]] += period
        for f in set(frames):
            child_p[index[f]] += period
    total = sum(stacks.values())
    rows = pd.DataFrame(
        {
            "symbol": [s for _, s in names],
            "dso": [d for d, _ in names],
            "samples": self_p.astype(np.int64),
            "self_share": self_p / total,
            "children_share": child_p / total,
            "self_period": self_p,
            "children_period": child_p,
            "level": ["."] * len(names),
        }
    )
    st = pd.DataFrame(
        {
            "frames": [tuple(index[f] for f in frames) for frames in stacks],
            "period": list(stacks.values()),
            "samples": list(stacks.values()),
        }
    )
    return Profile(
        rows=rows,
        path=path,
        event="cpu-clock",
        samples=total,
        total_period=total,
        callchains=True,
        kernel_symbols="none",
        caveats=[f"odd file: {HOSTILE}"],
        stacks=st,
    )


def test_hostile_names_are_escaped(tmp_path):
    dso = 'lib<&>"x.so'
    main, work, bad = (dso, "main"), (dso, "work"), (dso, HOSTILE)

    def runs(bad_period: int) -> list[Profile]:
        return [
            _profile({(work, main): 600 + 7 * i, (bad, main): bad_period + 5 * i}, f"r{i}<&>")
            for i in range(3)
        ]

    cmp = compare_profiles({"old<&>": runs(100), HOSTILE: runs(400)})
    assert cmp.rows.set_index("symbol").loc[HOSTILE, f"self_share:significant[{HOSTILE}]"]
    html = profile_html.render(cmp)
    assert "<script>alert(1)" not in html and "</script>&" not in html
    assert html.count("<script") == 1  # the page's own
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;" in html
    assert 'lib<&>"x.so' not in html and "lib&lt;&amp;&gt;&quot;x.so" in html
    # the graphs are well-formed XML, the name intact in the frames' titles, red after
    svg = flamegraph.svg(cmp, HOSTILE, flamegraph.AFTER, standalone=True)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    titles = [(g.get("class"), g.findtext(f"{ns}title")) for g in root.iter(f"{ns}g")]
    hit = [c for c, t in titles if t.startswith(f'{HOSTILE} (lib<&>"x.so)  old<&> ')]
    assert hit and all("grew" in c for c in hit)


@pytest.mark.slow
def test_size_is_bounded():
    """100,000 stacks 6 to 40 frames deep over 3,000 functions: the graph keeps at most
    2 * max_frames frames (never one without its caller) and stays small."""
    rng = np.random.default_rng(7)
    names = np.empty(3000, dtype=object)
    names[:] = [("lib.so", f"function_with_a_longish_name_{i}") for i in range(3000)]
    n = 100_000
    # a few roots, then a heavy-tailed choice of callees: a bushy, uneven tree
    table = rng.zipf(1.3, size=(n, 40)) % len(names)
    table[:, 0] = rng.integers(0, 4, n)
    depth = rng.integers(6, 40, n)
    # each stack: its first `depth` frames, own function first (made per depth, at once)
    frames = np.empty(n, dtype=object)
    for d in np.unique(depth):
        rows = np.flatnonzero(depth == d)
        frames[rows] = list(map(tuple, names[table[rows, d - 1 :: -1]].tolist()))
    share = rng.pareto(1.5, n) + 1
    cmp = ProfileComparison(
        sides=["big"],
        runs={"big": ["big.data"]},
        event="cpu-clock",
        rows=pd.DataFrame(),
        alpha=0.05,
        min_effect=0.5,
        work=None,
        tested={},
        stacks={"big": pd.DataFrame({"frames": frames.tolist(), "share": share / share.sum()})},
    )
    default = flamegraph.svg(cmp, direction=None)
    assert 200 < default.count("<g ") <= 2 * flamegraph.MAX_FRAMES and len(default) < 2_000_000
    # no frame is narrower than the minimum width, but the merged ones
    for m in re.finditer(r'<g class="([^"]*)"[^>]*>.*?width="([0-9.]+)"', default):
        if "narrow" not in m.group(1):
            assert float(m.group(2)) >= flamegraph.MIN_WIDTH * (flamegraph.WIDTH - 20) - 0.06
    small = _frames(flamegraph.svg(cmp, direction=None, max_frames=100))
    assert 50 < len(small) <= 2 * 100
    assert all(f["parent"] in small for f in small.values() if f["parent"] is not None)


def test_one_side_is_a_plain_graph(sides, tmp_path):
    one = compare_profiles({"base": sides["base"]})
    html = profile_html.write(one, tmp_path / "one.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 1 and "Callers of the changed" not in html
    assert "grew" not in html.split("<svg", 1)[1] and "shrank" not in html.split("<svg", 1)[1]
    with pytest.raises(ValueError, match="direction"):
        flamegraph.svg(one, direction=flamegraph.AFTER)


def test_the_report_is_self_contained(report):
    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(?:src|href)\s*=\s*['"]?(?!data:|#)[a-z]+:""", html, re.I)
    assert not re.search(r"<link\b|<script[^>]+src=|@import|url\(", html, re.I)
    assert report.stat().st_size < 1_000_000
    assert "<title>schedwake profile: base vs seccomp</title>" in html
    assert "Welch t-test per function" in html and "Caveats" in html
    for title in ("Self share of the samples (%)", "Children period per unit of work"):
        assert f"<h2>{title}</h2>" in html
    # the starred cell of the filter's children share, red
    children = html.split("<h2>Children share of the samples (%)</h2>", 1)[1].split("</table>")[0]
    row = next(r for r in children.split("<tr>") if "<code>__seccomp_filter</code>" in r)
    assert re.search(r"<td class='grew star'[^>]*>11\.\d\d \*\+11\.\d\dpp\*</td>", row), row
    assert "<h2>Callers of the changed functions</h2>" in html
    assert "syscall_trace_enter</code><ul class='callers'>" in html
    assert html.count("<svg") == 2
    assert "seccomp: after, coloured by what grew (vs base)" in html
    assert "base: before, coloured by what shrank (vs seccomp)" in html


@pytest.mark.slow
def test_renders_in_headless_chromium(report, chromium):
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "profile-report.png"
    shot.unlink(missing_ok=True)
    dom, console, outside = chromium.run(render, report.resolve().as_uri(), 1280, 4200, shot)
    attrs = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-rendered="ok"' in attrs, attrs
    assert console == [] and outside == [], (console, outside)
    # the frames' titles are in the DOM, both sides' shares in them
    assert re.search(
        r"<title>__seccomp_filter \(\[kernel\.kallsyms\]\)  base 0\.00%  seccomp \d", dom
    )
    assert dom.count('<g class="f') > 200
    data = shot.read_bytes()
    assert data.startswith(PNG) and len(data) > 20_000
    from PIL import Image

    with Image.open(shot) as im:
        px = np.asarray(im.convert("RGB")).reshape(-1, 3).astype(np.int64)
    assert len(np.unique(px[:, 0] << 16 | px[:, 1] << 8 | px[:, 2])) > 50  # not blank
    red = (px[:, 0] == 255) & (px[:, 1] < 150) & (px[:, 2] < 150)
    blue = (px[:, 2] == 255) & (px[:, 0] < 150) & (px[:, 1] < 150)
    assert red.sum() > 500 and blue.sum() > 500  # both graphs drawn, coloured
