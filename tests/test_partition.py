"""A trace cut in time parts: each part's model (its events, the prelude of real events
before it, the whole trace's facts) gives exactly the rows of the whole trace's model
tables it owns (schedwake.partition; docs/design-partitioned-analysis.md).

The prelude (the state at a part's start) is checked on real traces of every kind: clean
8-CPU dbench (the kworker ping-pong), lost events, a mostly idle machine, a weighted
cgroup's fio ping-pong (this VM's kind of trace, which lacks switches: unseen runs) and a
16-CPU guest: the part from a cut to the trace's end gives every row the whole trace
ends at or after the cut. Parts with an end too are checked on the traces that show
every switch: on a trace that lacks events, a row may end at a task's last proof, which
only a later loss or a missing switch makes the last (not yet handled: the design's
'What is left'). Cuts at random times (seeded, so a failure names its cut), and cuts
placed inside a wait, a run and a ping-pong's wake-up.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import schedwake
from schedwake.partition import OWNED_BY, carried_rows, model_tables, owned_rows, part_of
from schedwake.partition.prelude import last_of_each

from .conftest import SAMPLES

TRACES = {
    "kstack-off": SAMPLES / "kstack-6.1" / "k61-dbench-c2-kstack-off-i1.dat",
    "lost-events": SAMPLES / "lost-events.dat",
    "idle-sleep": SAMPLES / "idle-sleep.dat",
    "fio-weighted": SAMPLES / "fio-pinned-weighted.dat",
    "guest16": SAMPLES / "guest16-2llc-tcrecord-dbench.dat",
}
#: The traces that show every switch (no contradiction): parts with an end as well.
COMPLETE = tuple(TRACES)


@pytest.fixture(scope="module", params=sorted(TRACES))
def any_trace(request: pytest.FixtureRequest) -> schedwake.Trace:
    return schedwake.load(TRACES[request.param])


@pytest.fixture(scope="module", params=COMPLETE)
def whole(request: pytest.FixtureRequest) -> schedwake.Trace:
    trace = schedwake.load(TRACES[request.param])
    return trace


def assert_rows_equal(
    mine: dict[str, pd.DataFrame], theirs: dict[str, pd.DataFrame], where: str
) -> None:
    """Each of the model's tables of ``mine`` equals that of ``theirs``."""
    for name in OWNED_BY:
        pd.testing.assert_frame_equal(
            mine[name],
            theirs[name],
            check_dtype=False,
            check_categorical=False,
            obj=f"{name} of {where}",
        )


def check_parts(trace: schedwake.Trace, cuts: list[int], to_the_end: bool = False) -> None:
    """The parts between ``cuts`` own every row of the whole model's tables once, equal;
    ``to_the_end``: the parts from each cut to the trace's end instead."""
    facts = trace.model.facts_for_parts()
    expected = model_tables(trace.model)
    bounds: list[int | None] = [None, *sorted(cuts), None]
    got: dict[str, list[pd.DataFrame]] = {name: [] for name in OWNED_BY}
    spans = [(t0, None) for t0 in bounds[1:-1]] if to_the_end else zip(bounds[:-1], bounds[1:])
    for t0, t1 in spans:
        part = part_of(trace, t0, t1, facts)
        mine = owned_rows(part.model, t0, t1)
        assert_rows_equal(mine, owned_rows(trace.model, t0, t1), f"the part [{t0}, {t1})")
        for name in OWNED_BY:
            got[name].append(mine[name])
    if to_the_end:
        return
    for name in OWNED_BY:  # (every row once: the parts' rows are the whole table)
        assert sum(len(f) for f in got[name]) == len(expected[name]), name


@pytest.mark.slow  # (a model per part, on whole real traces)
def test_the_prelude_rebuilds_the_state_at_a_cut(any_trace: schedwake.Trace) -> None:
    first, last = any_trace.meta.first_ts_ns, any_trace.meta.last_ts_ns
    assert first is not None and last is not None
    rng = np.random.default_rng(18)
    check_parts(any_trace, sorted({int(t) for t in rng.integers(first + 1, last, size=3)}), True)


@pytest.mark.slow  # (a model per part, on whole real traces)
def test_random_cuts_give_the_whole_model(whole: schedwake.Trace) -> None:
    first, last = whole.meta.first_ts_ns, whole.meta.last_ts_ns
    assert first is not None and last is not None
    rng = np.random.default_rng(35)
    cuts = sorted({int(t) for t in rng.integers(first + 1, last, size=4)})
    check_parts(whole, cuts)


@pytest.mark.slow  # (a model per part, on whole real traces)
def test_cuts_inside_waits_runs_and_wakeups(whole: schedwake.Trace) -> None:
    """A cut inside the longest wait, inside a long run, and between a wake-up of a
    kworker's ping-pong and the run it led to."""
    m = whole.model
    waits = m.waits
    w = waits.iloc[int(np.argmax(waits["end_ts"].to_numpy() - waits["start_ts"].to_numpy()))]
    runs = m.completeness.runs
    long = runs.iloc[int(np.argmax(runs["end_ts"].to_numpy() - runs["start_ts"].to_numpy()))]
    wk = m.wakeups
    led = wk[wk["run_ts"].notna() & (wk["waker_class"] == "percpu_kthread")]
    if not len(led):
        led = wk[wk["run_ts"].notna()]
    one = led.iloc[len(led) // 2]
    cuts = {
        (int(w["start_ts"]) + int(w["end_ts"])) // 2,
        (int(long["start_ts"]) + int(long["end_ts"])) // 2,
        (int(one["ts"]) + int(one["run_ts"])) // 2 + 1,
    }
    check_parts(whole, sorted(c for c in cuts if c > whole.meta.first_ts_ns))


@pytest.mark.slow  # (a model per part, on whole real traces)
def test_the_prelude_is_small_and_composes() -> None:
    """The rows carried to a cut are a few per task and CPU, not the events before it;
    carried to a later cut from (carried rows + the events between), they are the rows
    carried from the whole trace before it (what lets parts fold their effects)."""
    trace = schedwake.load(TRACES["kstack-off"])
    tables = {name: trace.table(name) for name in trace.events}
    first, last = trace.meta.first_ts_ns, trace.meta.last_ts_ns
    assert first is not None and last is not None
    a, b = first + (last - first) // 3, first + 2 * (last - first) // 3
    direct = carried_rows(tables, b)
    before_b = sum(int((t.column("ts").to_numpy() < b).sum()) for t in tables.values())
    assert 0 < sum(len(r) for r in direct.values()) < before_b // 100
    # fold: what reaches a from the start, then the events of [a, b)
    at_a = carried_rows(tables, a)
    folded_tables = {}
    index_of = {}
    for name, t in tables.items():
        ts = t.column("ts").to_numpy()
        rows = np.union1d(at_a[name], np.flatnonzero((ts >= a) & (ts < b)))
        folded_tables[name] = t.take(pa.array(rows))
        index_of[name] = rows
    folded = carried_rows(folded_tables, b)
    for name in tables:
        np.testing.assert_array_equal(index_of[name][folded[name]], direct[name], err_msg=name)


def test_last_of_each() -> None:
    keys = np.array([5, 7, 5, 9, 7, 5])
    assert last_of_each(keys, np.arange(6)).tolist() == [3, 4, 5]
    assert last_of_each(keys, np.array([0, 1, 3])).tolist() == [0, 1, 3]
    assert last_of_each(keys, np.zeros(0, np.intp)).tolist() == []


def test_a_pid_used_again_at_every_cut() -> None:
    """A pid's two lives (tests/test_trackers_by_hand.py, reused_clean: a kworker exits,
    a fork gives its pid to a new task), cut between every two of its events: each
    part's rows equal the whole's; and the boundary between the lives is found by the
    part that holds it from its own events and prelude (what lets the parts' first pass
    give the lives, instead of the whole trace)."""
    from schedwake.model.lives import Lives

    from .test_trackers_by_hand import reused_clean

    trace, _, _ = reused_clean()
    whole = trace.model.events.lives
    assert len(whole.pid) == 1
    stamps = np.unique(
        np.concatenate([trace.table(n).column("ts").to_numpy() for n in trace.events])
    )
    facts = trace.model.facts_for_parts()
    for cut in stamps[1:]:
        check_parts(trace, [int(cut)])
        found = []
        for t0, t1 in ((None, int(cut)), (int(cut), None)):
            own = Lives.of(part_of(trace, t0, t1, facts).model.events)
            inside = np.ones(len(own.ts), dtype=bool)
            if t0 is not None:
                inside &= own.ts >= t0
            if t1 is not None:
                inside &= own.ts < t1
            found += list(zip(own.pid[inside].tolist(), own.ts[inside].tolist()))
        assert found == list(zip(whole.pid.tolist(), whole.ts.tolist())), cut


@pytest.mark.slow  # (a model per part, on a whole real trace)
def test_a_queued_wakeup_past_the_horizon() -> None:
    """A waking of a task that was running (no run bounds its sched_wakeup), whose
    sched_wakeup comes 7 ms later, after the cut and past the part's horizon (found by
    tests/test_partition_metrics.py's random cuts): the part left of the cut did own it,
    without its wakeup_ts, and the part right of it too; it belongs to the part that
    holds the task's next waking (or its sched_wakeup)."""
    trace = schedwake.load(TRACES["kstack-off"])
    w = trace.model.wakeups
    one = w[(w["ts"] == 52516527338) & (w["wakee_pid"] == 562)]
    assert len(one) == 1 and int(one["wakeup_ts"].iloc[0]) == 52523774628
    assert bool(one["wakee_was_running"].iloc[0])
    check_parts(trace, [52521342004])


def longest_gaps(trace: schedwake.Trace, k: int = 3) -> list[tuple[int, int]]:
    """The ``k`` longest idle-while-runnable gap segments of ``trace`` (start, end),
    shortest first."""
    from schedwake.detect import resolve
    from schedwake.detect.idle_while_runnable import gap_segments

    segs, _ = gap_segments(trace.model, resolve(trace))
    gaps = sorted(
        ((int(s), int(e)) for ss, ee in segs.values() for s, e in zip(ss, ee)),
        key=lambda g: g[1] - g[0],
    )
    return gaps[-k:]


def short_parts_inside(gaps: list[tuple[int, int]]) -> list[int]:
    """Cuts that make a part a fifth as long as each gap, in its middle."""
    return sorted({c for s, e in gaps for c in ((s + e) // 2 - (e - s) // 10,
                                                (s + e) // 2 + (e - s) // 10)})  # fmt: skip
