"""What the interactive timeline shows at first, apart from the Bokeh document: the
axis's extent, the level of detail and its status line, the fragment's data-timeline
attribute (report/timeline_html.py), fed a hand-made Plan."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedwake.report.timeline_html import (
    BINS,
    Plan,
    TimeBase,
    exact_at_first,
    first_status,
    fragment_meta,
    x_extent,
)

S = 1_000_000_000  # ns a second


def _plan(lo: int, hi: int, detail_span: float, runs: int = 10, exact: int = 10) -> Plan:
    frame = pd.DataFrame({"start": np.arange(runs)})
    return Plan(
        lo=lo, hi=hi, order=[0, 1], runs=frame, exact=frame.head(exact),
        everything=exact == runs, budget=exact, windows=[("f0", "finding 1", lo, lo + S)],
        covered=[(lo, lo + S)], detail_span=detail_span, edges=np.zeros(0),
        per_bin=np.zeros(0), migrations=7, moved=pd.DataFrame(),
    )  # fmt: skip


def test_the_axis_spans_the_trace_with_a_margin():
    pl = _plan(100 * S, 110 * S, 1.0)
    lo, hi, bounds = x_extent(pl, TimeBase(0, 100 * S), None)
    assert (lo, hi) == (100.0, 110.0)
    assert bounds == pytest.approx((99.9, 110.1))  # 1% of 10 s on either side
    # in seconds since the start; a page's shared extent longer than this trace
    lo, hi, bounds = x_extent(pl, TimeBase(100 * S, 100 * S), 20.0)
    assert (lo, hi) == (0.0, 10.0)
    assert bounds == pytest.approx((-0.2, 20.2))
    # a trace of 1 µs: the margin is 1 µs at least
    lo, hi, bounds = x_extent(_plan(0, 1000, 1.0), TimeBase(0, 0), None)
    assert bounds == pytest.approx((-1e-6, 2e-6))


def test_a_short_trace_shows_its_exact_runs_at_first():
    pl = _plan(0, 2 * S, detail_span=2.0)
    assert exact_at_first(pl)
    assert first_status(pl) == (
        "view: the whole trace (2.000 s); <b>exact runs and wake-up migrations</b>"
    )


def test_a_long_trace_is_aggregated_at_first_and_says_how_far_to_zoom():
    pl = _plan(0, 3 * S, detail_span=0.0025)
    assert not exact_at_first(pl)
    bin_ms = 3000 / BINS  # the trace's span over the bins, in ms
    assert first_status(pl) == (
        f"view: the whole trace (3.000 s); <b>aggregated</b> (bins of {bin_ms:.3f} ms, colour: "
        "the task at the bin's middle, opacity: busy share); zoom below 2.500 ms for the "
        "exact runs"
    )


def test_the_fragment_meta_says_what_the_file_holds():
    pl = _plan(5 * S, 9 * S, 1.0, runs=10, exact=4)
    assert fragment_meta(pl, since_start=True) == {
        "runs": 10,
        "exact_runs": 4,
        "migrations": 7,
        "exact_windows": [[5 * S, 6 * S]],
        "ranges": ["f0"],
        "axis": "since_start",
    }
    assert fragment_meta(pl, since_start=False)["axis"] == "trace_time"
