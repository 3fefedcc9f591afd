"""What a flame graph draws, apart from its SVG: report/flamegraph.py's graph (sides,
widths, colour scale), frame_style and layout, fed hand-made comparisons."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from schedwake.profile.compare import ProfileComparison
from schedwake.report import flamegraph as fg

K = "[kernel.kallsyms]"


def _cmp(stacks: dict[str, list[tuple[tuple, float]]], rows: pd.DataFrame | None = None):
    sides = list(stacks)
    return ProfileComparison(
        sides=sides,
        runs={s: [f"{s}.data"] for s in sides},
        event="cpu-clock",
        rows=pd.DataFrame() if rows is None else rows,
        alpha=0.05,
        min_effect=0.5,
        work=None,
        tested={},
        stacks={
            s: pd.DataFrame({"frames": [f for f, _ in st], "share": [v for _, v in st]})
            for s, st in stacks.items()
        },
    )


def _rows(side: str, funcs: dict[str, tuple[float, bool, float, bool]]) -> pd.DataFrame:
    """One row per function of K: (self change, self significant, children change,
    children significant); q 0.01 where significant, else 0.5."""
    out = []
    for sym, (sc, ss, cc, cs) in funcs.items():
        out.append(
            {"symbol": sym, "dso": K,
             f"self_share:change[{side}]": sc, f"self_share:q[{side}]": 0.01 if ss else 0.5,
             f"self_share:significant[{side}]": ss,
             f"children_share:change[{side}]": cc,
             f"children_share:q[{side}]": 0.01 if cs else 0.5,
             f"children_share:significant[{side}]": cs}
        )  # fmt: skip
    return pd.DataFrame(out)


ROWS = _rows(
    "new",
    {
        "grew_a_lot": (4.0, True, 1.0, True),  # the largest growth: 4 pp
        "grew_some": (0.5, False, 2.0, True),  # its children share grew 2 pp
        "shrank": (-3.0, True, -3.0, False),
        "noise": (5.0, False, 5.0, False),  # large but not significant: never coloured
    },
)
TWO = _cmp({"base": [(((K, "main"),), 1.0)], "new": [(((K, "main"),), 1.0)]}, ROWS)


def test_graph_after_draws_the_new_side_and_scales_by_the_largest_growth():
    g = fg.graph(TWO, None, fg.AFTER, 0.001)
    assert (g.base, g.side, g.shown, g.drawn) == ("base", "new", ["base", "new"], 1)
    assert g.scale == {
        (K, "grew_a_lot"): 4.0,
        (K, "grew_some"): 2.0,
        (K, "shrank"): 0.0,
        (K, "noise"): 0.0,
    }
    assert g.top_change == 4.0
    assert g.title == "new: after, coloured by what grew (vs base)"


def test_graph_before_draws_the_baseline_and_scales_by_the_shrinking():
    g = fg.graph(TWO, "new", fg.BEFORE, 0.001)
    assert (g.shown, g.drawn, g.top_change) == (["base", "new"], 0, 3.0)
    assert g.scale[(K, "shrank")] == 3.0 and g.scale[(K, "grew_a_lot")] == 0.0
    assert g.title == "base: before, coloured by what shrank (vs new)"


def test_a_plain_graph_has_nothing_to_colour():
    g = fg.graph(TWO, "base", None, 0.001)
    assert (g.shown, g.drawn, g.funcs, g.scale, g.title) == (["base"], 0, {}, {}, "base")


@pytest.mark.parametrize(
    "side, direction, min_width, what",
    [
        ("other", fg.AFTER, 0.001, "side"),
        ("new", "sideways", 0.001, "direction"),
        ("new", fg.AFTER, 1.0, "min_width"),
        ("base", fg.AFTER, 0.001, "direction: a differential graph"),
    ],
)
def test_graph_refuses_what_it_cannot_draw(side, direction, min_width, what):
    with pytest.raises(ValueError, match=what):
        fg.graph(TWO, side, direction, min_width)


def test_frame_style_deepens_with_the_change():
    g = fg.graph(TWO, None, fg.AFTER, 0.001)
    cls, fill, info = fg.frame_style((K, "grew_a_lot"), "grew_a_lot", g)
    # the largest change: intensity 1, the deepest red (215 - 195), white labels
    assert (cls, fill) == ("f grew dk", "rgb(255,20,20)")
    assert info.startswith("function: self +4.00 pp (q 0.01) *, children +1.00 pp")
    cls, fill, _ = fg.frame_style((K, "grew_some"), "grew_some", g)
    # half the largest: intensity 0.35 + 0.65 / 2 = 0.675, 215 - 195 * 0.675 = 83.4
    assert (cls, fill) == ("f grew", "rgb(255,83,83)")
    for name in ("noise", "shrank"):  # tested, not grown significantly: beige, its results
        cls, fill, info = fg.frame_style((K, name), name, g)
        assert (cls, fill) == ("f", fg.neutral(name)) and info.startswith("function: self")
    assert fg.frame_style(None, "all", g) == ("f", fg.neutral("all"), "")
    assert fg.frame_style(("lib.so", "untested"), "untested", g)[2] == ""
    g = fg.graph(TWO, None, fg.BEFORE, 0.001)
    assert fg.frame_style((K, "shrank"), "shrank", g)[:2] == ("f shrank dk", "rgb(20,20,255)")


def test_layout_places_children_alphabetically_and_merges_the_narrow_ones():
    main = (K, "main")
    cmp = _cmp(
        {
            "one": [
                (((K, "b"), main), 0.3),
                (((K, "a"), main), 0.6),
                (((K, "c"), main), 0.006),  # c and d: each under 1% of the graph, 1.1% together
                (((K, "d"), main), 0.005),
            ]
        }
    )
    g = fg.graph(cmp, None, None, 0.01)
    total = 0.911
    floor = 0.01 * total
    root = fg.tree([cmp.stacks["one"]], 0, floor)
    frames = fg.layout(root, g, floor - 1e-15, total, floor, "x")
    got = [(f.label, f.depth, round(f.x, 9), round(f.width, 9), f.ident, f.parent) for f in frames]
    assert got == [
        ("all", 0, 0.0, 0.911, "x-0", ""),
        ("main", 1, 0.0, 0.911, "x-1", "x-0"),
        ("[2 narrow]", 2, 0.9, 0.011, "x-n2", "x-1"),  # right of a and b
        ("a", 2, 0.0, 0.6, "x-3", "x-1"),
        ("b", 2, 0.6, 0.3, "x-4", "x-1"),
    ]
    narrow = frames[2]
    assert (narrow.cls, narrow.fill) == ("f narrow", fg.NARROW_FILL)
    assert narrow.tip == "[2 narrow frames] (each below 1% of the graph)  one 1.10%"


def test_layout_leaves_out_narrow_frames_too_thin_together():
    cmp = _cmp({"one": [(((K, "a"),), 0.995), (((K, "c"),), 0.003), (((K, "d"),), 0.002)]})
    g = fg.graph(cmp, None, None, 0.01)
    root = fg.tree([cmp.stacks["one"]], 0, 0.01)
    frames = fg.layout(root, g, 0.01, 1.0, 0.01, "x")
    assert [f.label for f in frames] == ["all", "a"]  # c + d: 0.5% < 1%
    assert math.isclose(frames[1].width, 0.995)
