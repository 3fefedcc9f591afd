"""The metrics of a trace joined from its time parts' partials (schedwake.analysis.partials;
docs/design-partitioned-analysis.md, 'What is built (step 3)') equal the whole trace's
trace_metrics and metric_bounds, metric by metric, on the real traces of
tests/test_partition.py: at random cuts (seeded, so a failure names its cuts) into 2 to 6
parts, and at cuts inside a ping-pong episode (between its waking and its run, and inside
that run) and inside the longest wait. The masks over the wake-ups (ping-pong episodes,
would-stack) are checked part by part: each part's count over the rows it owns is the
whole trace's mask over those rows; futile wake-ups too, but for those a part leaves
open (its kworker's return is past the part's horizon), which the later parts settle.
The percentiles' selection over the parts is checked against np.percentile on random
values.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import schedwake
from schedwake.analysis.metrics import metric_bounds, trace_metrics
from schedwake.analysis.partials import (
    JOINED,
    GapPartial,
    JoinedMetrics,
    MetricPartial,
    NotJoinedError,
    Selection,
    SortedValues,
    gap_partial,
    joined_bounds,
    joined_metrics,
    metric_partial,
    order_statistic,
    percentile,
)
from schedwake.detect import resolve
from schedwake.detect.idle_while_runnable import pinned_pids
from schedwake.model.masks import episodes_mask, futile_mask, would_stack_mask
from schedwake.partition import owned_mask, part_of
from schedwake.partition.parts import crossing_waits, waits_beyond

from .test_partition import TRACES, longest_gaps, short_parts_inside


@pytest.fixture(scope="module", params=sorted(TRACES))
def whole(request: pytest.FixtureRequest) -> schedwake.Trace:
    return schedwake.load(TRACES[request.param])


def partials(
    trace: schedwake.Trace, cuts: list[int]
) -> tuple[list[MetricPartial], list[GapPartial]]:
    """The partials of the parts between ``cuts``, each part's masks over the wake-ups
    checked against the whole trace's over the rows it owns; then their gap partials,
    given the pinned tasks the first partials give (the whole trace's, checked)."""
    whole = trace.model
    masks = {
        "pingpong": episodes_mask(whole.wakeups),
        "would_stack": would_stack_mask(whole),
        "futile": futile_mask(whole),
    }
    bounds: list[int | None] = [None, *sorted(cuts), None]
    out, traces = [], []
    for part, (t0, t1) in zip(parts_of(trace, cuts), zip(bounds[:-1], bounds[1:])):
        traces.append((part, t0, t1))
        p = metric_partial(part, t0, t1)
        mine = owned_mask(whole, t0, t1, "wakeups")
        for name, mask in masks.items():
            expected = int((mask & mine).sum())
            if name == "futile":  # (those it could not settle: settled by later parts)
                assert expected - len(p.futile_open) <= p.counts[name] <= expected
            else:
                assert p.counts[name] == expected, f"{name} of [{t0}, {t1})"
        out.append(p)
    pinned = JoinedMetrics(out).pinned()
    min_runs = int(resolve(trace)["iwr_pinned_min_runs"])
    assert set(pinned_pids(whole, min_runs).tolist()) - {0} == set(pinned.tolist()) - {0}
    return out, [gap_partial(part, t0, t1, pinned) for part, t0, t1 in traces]


def parts_of(trace: schedwake.Trace, cuts: list[int]) -> list[schedwake.Trace]:
    """The parts of ``trace`` between ``cuts``, each given the woken waits that cross it
    and that its events do not show (their runs come after its horizon), from the
    later parts' crossing waits, as the partitioned analysis gives them."""
    facts = trace.model.facts_for_parts()
    bounds: list[int | None] = [None, *sorted(cuts), None]
    spans = list(zip(bounds[:-1], bounds[1:]))
    parts = [part_of(trace, t0, t1, facts) for t0, t1 in spans]
    lasts = [int(p.meta.last_ts_ns or 0) for p in parts]
    crossing = [crossing_waits(p.model, t0, t1) for p, (t0, t1) in zip(parts, spans)]
    beyond = waits_beyond(spans, lasts, crossing)
    return [
        p if b is None else part_of(trace, t0, t1, dataclasses.replace(facts, waits_beyond=b))
        for p, b, (t0, t1) in zip(parts, beyond, spans)
    ]


def assert_same(got: object, expected: object, key: str) -> None:
    """Equal; a float equal to 1e-9 relative (sums that reorder), in dicts too."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and list(got) == list(expected), key
        for k in expected:
            assert_same(got[k], expected[k], f"{key}[{k}]")
    elif isinstance(expected, float) and isinstance(got, float):
        assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12), (key, got, expected)
    else:
        assert got == expected, (key, got, expected)


def check_joined(trace: schedwake.Trace, cuts: list[int]) -> None:
    parts, gaps = partials(trace, cuts)
    expected = trace_metrics(trace)
    got = joined_metrics(parts, gaps=gaps)
    assert list(got) == list(expected)
    for key in expected:
        assert_same(got[key], expected[key], f"{key} at cuts {cuts}")
    assert_same(joined_bounds(parts), metric_bounds(trace), f"bounds at cuts {cuts}")


@pytest.mark.slow  # (a model per part, on whole real traces)
def test_random_cuts_give_the_whole_metrics(whole: schedwake.Trace) -> None:
    first, last = whole.meta.first_ts_ns, whole.meta.last_ts_ns
    assert first is not None and last is not None
    rng = np.random.default_rng(19)
    for n in range(2, 7):
        check_joined(whole, sorted({int(t) for t in rng.integers(first + 1, last, size=n - 1)}))


@pytest.mark.slow  # (a model per part, on whole real traces)
def test_cuts_inside_a_pingpong_episode_and_the_longest_wait(whole: schedwake.Trace) -> None:
    """Cuts between a ping-pong episode's waking and its run, inside that run, and inside
    the longest wait (where the trace has no episode: a wake-up by a per-CPU kthread, or
    any wake-up that ran)."""
    m = whole.model
    wk = m.wakeups
    episodes = wk[episodes_mask(wk) & wk["run_ts"].notna().to_numpy()]
    if not len(episodes):
        episodes = wk[wk["run_ts"].notna() & (wk["waker_class"] == "percpu_kthread")]
    if not len(episodes):  # (a mostly idle machine: no kworker wakes a task)
        episodes = wk[wk["run_ts"].notna()]
    one = episodes.iloc[len(episodes) // 2]
    waits = m.waits
    w = waits.iloc[int(np.argmax(waits["end_ts"].to_numpy() - waits["start_ts"].to_numpy()))]
    cuts = {
        (int(one["ts"]) + int(one["run_ts"])) // 2 + 1,
        (int(w["start_ts"]) + int(w["end_ts"])) // 2,
    }
    if not np.isnan(float(one["run_end_ts"])):
        cuts.add((int(one["run_ts"]) + int(one["run_end_ts"])) // 2 + 1)
    check_joined(whole, sorted(c for c in cuts if c > whole.meta.first_ts_ns))


@pytest.mark.slow  # (a model per part, on a whole real trace)
def test_what_the_partials_cannot_give_is_refused() -> None:
    """The idle-while-runnable share without the gap partials, and a model focused on
    some tasks, are refused (NotJoinedError), never approximated; the other metrics
    are given without the gap partials."""
    trace = schedwake.load(TRACES["idle-sleep"])
    first, last = trace.meta.first_ts_ns, trace.meta.last_ts_ns
    assert first is not None and last is not None
    parts, gaps = partials(trace, [(first + last) // 2])
    with pytest.raises(NotJoinedError, match="idle_while_runnable_share"):
        joined_metrics(parts)
    got = joined_metrics(parts, only=[k for k in JOINED if k != "idle_while_runnable_share"])
    assert got["wakeups"] == len(trace.model.wakeups)
    assert got["idle_while_runnable_share"] is None
    assert joined_metrics(parts, gaps=gaps) == trace_metrics(trace)
    focused = trace.focus([int(trace.model.wakeups["wakee_pid"].iloc[0])])
    with pytest.raises(NotJoinedError, match="--pid"):
        metric_partial(focused, None, None)


def test_the_percentiles_are_numpys() -> None:
    """The order statistics and percentiles over parts equal np.percentile's of all the
    values (the float itself), at every cut of the values into parts, empty parts too."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 400))
        v = rng.integers(0, int(rng.choice([3, 1000, 10**10])), size=n)
        cuts = np.sort(rng.integers(0, n + 1, size=int(rng.integers(0, 6))))
        parts = [SortedValues.of(x) for x in np.split(v, cuts)]
        # (values fetched at once, and after histogram rounds that narrow their range)
        few = Selection.local(parts, fetch_at_most=int(rng.integers(1, 6)))
        for pct in (50, 90, 99, 0, 100, 37.5):
            assert percentile(parts, pct) == float(np.percentile(v, pct)), (n, pct)
            assert percentile(few, pct) == float(np.percentile(v, pct)), (n, pct)
        k = int(rng.integers(0, n))
        assert order_statistic(parts, k) == np.sort(v)[k]
        assert order_statistic(few, k) == np.sort(v)[k]
    assert percentile([SortedValues.of(np.zeros(0))], 50) is None
    with pytest.raises(IndexError):
        order_statistic([SortedValues.of(np.arange(3))], 3)


@pytest.mark.slow  # (a model per part, on a whole real trace)
def test_other_thresholds_are_judged_once_on_the_client() -> None:
    """Thresholds other than the defaults (the storm's, the pinned tasks') give the whole
    trace's metrics under them: the parts' partials do not depend on them."""
    trace = schedwake.load(TRACES["fio-weighted"])
    first, last = trace.meta.first_ts_ns, trace.meta.last_ts_ns
    assert first is not None and last is not None
    facts = trace.model.facts_for_parts()
    cuts = [first + (last - first) * k // 3 for k in (1, 2)]
    spans = list(zip([None, *cuts], [*cuts, None]))
    traces = [(part_of(trace, t0, t1, facts), t0, t1) for t0, t1 in spans]
    parts = [metric_partial(*t) for t in traces]
    seen = []
    for overrides in (
        {"storm_min_preemptions": 5, "storm_min_preempted_share": 0.5, "iwr_pinned_min_runs": 3},
        {"storm_min_preemptions": 100000},
    ):
        pinned = JoinedMetrics(parts, overrides).pinned()
        gaps = [gap_partial(*t, pinned) for t in traces]
        expected = trace_metrics(trace, overrides)
        got = joined_metrics(parts, gaps=gaps, thresholds=overrides)
        for key in expected:
            assert_same(got[key], expected[key], f"{key} under {overrides}")
        seen.append(expected)
    # (they judge: the storm found under the first, none under the second)
    assert seen[0]["storm_kworker_preemptions_per_s"] > 0
    assert seen[1]["storm_kworker_preemptions_per_s"] == 0
    assert seen[0]["idle_while_runnable_share"] != trace_metrics(trace)["idle_while_runnable_share"]


@pytest.mark.slow  # (a model per part, on whole real traces)
def test_cuts_inside_idle_while_runnable_gaps() -> None:
    """Cuts in the middle of the three longest idle-while-runnable gaps of the
    lost-events recording: a woken task's wait that a cut falls in is in the part's
    occupancy only once its run is seen, past the cut (the horizon reaches it); without
    that, the gap and would-stack's runnable tasks counted too few."""

    trace = schedwake.load(TRACES["lost-events"])
    gaps = longest_gaps(trace)
    check_joined(trace, sorted({(s + e) // 2 for s, e in gaps}))


@pytest.mark.slow  # (a model per part, on whole real traces)
@pytest.mark.parametrize("name", ["lost-events", "guest16"])
def test_parts_shorter_than_the_waits_they_fall_in(name: str) -> None:
    """A part a fifth as long as each of the three longest idle-while-runnable gaps, in
    its middle: the woken task waiting there runs later than the part reads on for
    (one more part's length), so its wait is the later part's row; the part is given
    it (``waits_beyond``) and counts the gap and the runnable tasks with it (without it:
    0.006467 instead of 0.006536 on the lost-events recording, 0.002528 instead of
    0.002668 on the 16-CPU guest)."""

    trace = schedwake.load(TRACES[name])
    gaps = longest_gaps(trace)
    cuts = short_parts_inside(gaps)
    facts = trace.model.facts_for_parts()
    bounds: list[int | None] = [None, *cuts, None]
    spans = list(zip(bounds[:-1], bounds[1:]))
    parts = [part_of(trace, t0, t1, facts) for t0, t1 in spans]
    beyond = waits_beyond(
        spans,
        [int(p.meta.last_ts_ns or 0) for p in parts],
        [crossing_waits(p.model, t0, t1) for p, (t0, t1) in zip(parts, spans)],
    )
    assert any(b is not None for b in beyond)  # (the case is there)
    check_joined(trace, cuts)


@pytest.mark.slow  # (41 models of parts of a whole real trace)
def test_cuts_late_in_the_runs_of_many_episodes() -> None:
    """Forty cuts, each just before the end of a ping-pong episode's run: the part that
    owns the episode (it holds the run's end) judges would-stack at the episode's
    waking, well before its start, from its prelude; the same as the whole trace."""
    trace = schedwake.load(TRACES["kstack-off"])
    w = trace.model.wakeups
    ep = w[episodes_mask(w) & w["run_end_ts"].notna().to_numpy()]
    rng = np.random.default_rng(1)
    pick = ep.iloc[np.sort(rng.choice(len(ep), size=40, replace=False))]
    check_joined(trace, sorted({int(t) - 1 for t in pick["run_end_ts"]}))
