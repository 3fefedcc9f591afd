"""The per-window metrics of a trace from its time parts (schedwake.analysis.window_partials,
what `batch` stores of a trace it partitions): equal to window_metrics of the whole
trace, every column of every window (NaN where the whole has NaN), on real recordings
at the index's cuts and at random cuts (seeded: a failure names its cuts), with window
lengths that put many cuts inside windows; and the pieces fed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import schedwake
from schedwake import ingest
from schedwake.analysis.metrics import window_metrics
from schedwake.analysis.partitioned import analyze_parts
from schedwake.analysis.window_partials import shared_windows, storm_window
from schedwake.model import MODEL_EVENTS
from schedwake.model.task_states import window_class_shares, window_overlaps, window_state_times
from schedwake.partition import plan

from .test_partition_file import TRACES


def assert_same_windows(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(got.columns) == list(expected.columns)
    assert len(got) == len(expected)
    for c in expected.columns:
        a = expected[c].to_numpy(dtype=np.float64)
        b = got[c].to_numpy(dtype=np.float64)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        k = np.flatnonzero(~same)
        assert not len(k), f"{c}: windows {k[:5]}: whole {a[k[:5]]}, parts {b[k[:5]]}"


def joined_windows(path, n: int, windows: list[float]) -> dict[float, pd.DataFrame]:
    the_plan = plan(path, n, ingest.ReadOptions(events=list(MODEL_EVENTS)))
    return analyze_parts(the_plan, windows=windows).window_metrics


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize("name", ["kstack-off", "fio-weighted", "guest16", "perf-sched-g"])
def test_window_metrics_from_the_parts(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = TRACES[name]
    whole = schedwake.load(path, events=list(MODEL_EVENTS))
    dur = whole.duration_ns / 1e9
    windows = [round(dur / 7, 6), round(dur / 400, 6)]  # (a cut inside most short windows)
    expected = {w: window_metrics(whole, w) for w in windows}
    for w, got in joined_windows(path, 3, windows).items():
        assert_same_windows(got, expected[w])
    first, last = int(whole.meta.first_ts_ns or 0), int(whole.meta.last_ts_ns or 0)
    rng = np.random.default_rng(35)
    cuts = sorted({int(t) for t in rng.integers(first + 1, last, size=4)})
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: cuts)
    for w, got in joined_windows(path, len(cuts) + 1, windows).items():
        assert_same_windows(got, expected[w])


@pytest.mark.slow  # (a whole real trace, a model per part)
def test_cuts_inside_storm_windows_and_shared_latencies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The weighted-cgroup recording's kworker preemptions (the storm's units judged over
    the whole trace) with a cut in the middle of three windows that have them; the
    windows whose wake-ups several parts own take their latencies from both."""
    path = TRACES["fio-weighted"]
    whole = schedwake.load(path, events=list(MODEL_EVENTS))
    w = round(whole.duration_ns / 1e9 / 50, 6)
    expected = window_metrics(whole, w)
    busy = expected[expected["storm_preemptions"] > 0]
    assert len(busy) >= 3
    pick = busy.iloc[[0, len(busy) // 2, len(busy) - 1]]
    cuts = sorted(int((s + e) // 2) for s, e in zip(pick["start_ns"], pick["end_ns"]))
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: cuts)
    the_plan = plan(path, len(cuts) + 1, ingest.ReadOptions(events=list(MODEL_EVENTS)))
    got = analyze_parts(the_plan, windows=[w])
    assert_same_windows(got.window_metrics[w], expected)


def test_window_overlaps_are_exact_pieces() -> None:
    edges = np.array([100, 200, 300, 400], dtype=np.int64)
    start = np.array([50, 150, 120, 399, 500, 250], dtype=np.int64)
    end = np.array([120, 160, 380, 450, 600, 250], dtype=np.int64)
    row, win, ns = window_overlaps(start, end, edges)
    pieces = sorted(zip(row.tolist(), win.tolist(), ns.tolist()))
    # (before the first edge and after the last: cut off; an empty interval: none)
    assert pieces == [(0, 0, 20), (1, 0, 10), (2, 0, 80), (2, 1, 100), (2, 2, 80), (3, 2, 1)]


def test_window_state_times_add_up_over_pieces() -> None:
    """A task's running and runnable time per window, given whole or in two halves (as
    two parts give the intervals they own): the same class shares."""
    cat = pd.CategoricalDtype(["running", "preempted", "woken", "sleeping", "blocked", "unknown"])
    iv = pd.DataFrame(
        {
            "task": [7, 7, 7, 9],
            "state": pd.Series(["running", "woken", "running", "preempted"], dtype=cat),
            "start_ts": [0, 40, 70, 10],
            "end_ts": [40, 70, 250, 30],
        }
    )
    edges = np.array([0, 100, 200, 300], dtype=np.int64)
    names = {7: "dbench", 9: "kworker/0:1"}
    whole = window_class_shares(window_state_times(iv, edges), names, 3)
    halves = pd.concat([window_state_times(iv.iloc[:2], edges),
                        window_state_times(iv.iloc[2:], edges)])  # fmt: skip
    pieces = window_class_shares(halves, names, 3)
    for c in whole:
        np.testing.assert_array_equal(whole[c], pieces[c])
    assert whole["user"][0] == pytest.approx(30 / 100)  # (running 0-40 and 70-100, woken 40-70)
    assert whole["user"][1] == 0.0 and np.isnan(whole["user"][2]) is np.False_
    assert whole["kworker"][0] == 1.0 and np.isnan(whole["kworker"][1])


def test_storm_window_keeps_the_last_edge_for_the_counts() -> None:
    """A switch at the last edge counts in the last window (np.histogram's closed last
    bin) but not in its preempted share; after it and before the first edge: none."""
    edges = np.array([10, 20, 30], dtype=np.int64)
    win = storm_window(edges)(np.array([5, 10, 19, 20, 30, 31], dtype=np.int64))
    assert win.tolist() == [-1, 0, 0, 1, 2, -1]


def test_shared_windows_are_those_of_several_parts() -> None:
    class P:
        def __init__(self, n: list[int]) -> None:
            self.counts = {"latency_samples": np.array(n)}

    assert shared_windows([P([1, 0, 2]), P([0, 0, 1]), P([3, 0, 0])]).tolist() == [0, 2]  # type: ignore[list-item]
