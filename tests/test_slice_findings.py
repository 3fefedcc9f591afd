"""A time slice judges what it shows (``analyze --time``, ``Trace.sliced``): the
detectors' least counts scale to the slice's share of the trace, the user's own
thresholds stay as given, and a slice raises no caveat about events that the whole
trace has but that did not happen inside it.

The window 54.60-54.70 s of the README's dbench trace holds, by ``trace-cmd report -N``,
82 sched_waking and 8 sched_migrate_task events, every one a bound kworker
(``kworker/N:1H``) moving the dbench task it wakes off its CPU; the whole trace has 8
sched_process_fork/sched_wakeup_new events, none in the window.
"""

from __future__ import annotations

import pytest

import schedwake
from schedwake.detect import THRESHOLDS, for_slice, thresholds
from schedwake.detect.llc_roundrobin import task_table

from .conftest import run_cli, sample

TRACE = sample("kstack-6.1/k61-dbench-c2-kstack-off-i1.dat")
T0, T1 = 54_600_000_000, 54_700_000_000


@pytest.fixture(scope="module")
def whole():
    return schedwake.load(TRACE)


def test_a_slice_finds_the_pingpong_it_shows(whole):
    part = whole.sliced(T0, T1)
    share = part.meta.slice.share
    span = whole.meta.last_ts_ns - whole.meta.first_ts_ns
    assert share == pytest.approx((T1 - T0) / span, rel=1e-12)
    a = schedwake.analyze(part)
    assert a.thresholds["pingpong_min_episodes"] == 3  # 20 x 0.41%, to the floor of 3
    assert a.thresholds["pingpong_min_share"] == THRESHOLDS["pingpong_min_share"].default
    (f,) = [x for x in a.findings if x.detector == "kworker_pingpong"]
    assert f.severity == "high"
    assert f.metrics["episodes"] == 8 and f.metrics["wakeups"] == 82
    assert f.metrics["would_stack"] == 8
    assert a.metrics["migrations"] == 8
    # no caveat about fork events the window simply did not have
    assert not any("sched_process_fork" in c for c in a.caveats), a.caveats
    assert any("least counts are scaled to its 0.41%" in c for c in a.caveats), a.caveats
    # the whole trace: thresholds as they are, and no fork caveat either
    assert for_slice(thresholds(), whole) == thresholds()
    assert not any("sched_process_fork" in c for c in whole.caveats)


@pytest.mark.slow
def test_a_threshold_the_user_gives_is_not_scaled(whole):
    part = whole.sliced(T0, T1)
    a = schedwake.analyze(part, thresholds={"pingpong_min_episodes": 20})
    assert a.thresholds["pingpong_min_episodes"] == 20
    assert not [x for x in a.findings if x.detector == "kworker_pingpong"]
    # the same through the CLI
    proc = run_cli(
        "analyze",
        TRACE,
        "--time",
        "54.60,54.70",
        "--threshold",
        "pingpong_min_episodes=20",
        check=True,
    )
    assert "kworker_pingpong" not in proc.stdout.split("-- Metrics")[0]


def test_a_slice_of_a_slice_keeps_the_whole_traces_facts(whole):
    part = whole.sliced(54_000_000_000, 55_000_000_000).sliced(T0, T1)
    assert part.meta.slice.share == pytest.approx(whole.sliced(T0, T1).meta.slice.share, rel=1e-9)
    assert "sched_process_fork" in part.meta.slice.events
    assert not any("sched_process_fork" in c for c in part.caveats)


def test_every_scaled_threshold_has_a_floor_below_its_default():
    scaled = {k: t for k, t in THRESHOLDS.items() if t.slice_floor is not None}
    assert set(scaled) == {
        "pingpong_min_episodes",
        "storm_min_preemptions",
        "iwr_min_seconds",
    }
    for t in scaled.values():
        assert 0 < t.slice_floor < t.default


def test_round_robin_needs_enough_changes_to_matter(whole):
    """0.4 s of the trace: dbench-562 has 76 wake-ups, 27 of them changing CPU inside the
    LLC (36%), between 2 CPUs: a medium finding under the former floor of 20 changes,
    noise under the floor of 50 (which a slice does not scale). The slice still finds
    the kworker ping-pong that moves it."""
    part = whole.sliced(60_000_000_000, 60_400_000_000)
    per, _ = task_table(part.model, thresholds({"roundrobin_min_changes": 20}))
    r = per.set_index("pid").loc[562]
    assert (r["wakeups"], r["changes"], r["cpus_visited"]) == (76, 27, 2)
    assert r["flagged"] and 0.35 <= r["change_share"] < 0.5  # (medium, formerly)
    a = schedwake.analyze(part)
    assert a.thresholds["roundrobin_min_changes"] == 50
    assert [f.detector for f in a.findings] == ["kworker_pingpong"]


def test_a_slices_metrics_count_what_its_detector_judges():
    """A 5-ms slice of a weighted-cgroup storm run (sample_traces/storm/weighted/run8.dat,
    1.000-1.005 s after its first event): cswitch_storm judges it with its least
    preemptions scaled to 10 and finds 77 kworker preemptions; the storm_* metrics count
    the same storm (they were computed with the unscaled 100 and said 0)."""
    t = schedwake.load(sample("storm/weighted/run8.dat"))
    f0 = t.meta.first_ts_ns
    a = schedwake.analyze(t.sliced(f0 + 1_000_000_000, f0 + 1_005_000_000))
    assert a.thresholds["storm_min_preemptions"] == 10
    (f,) = [x for x in a.findings if x.detector == "cswitch_storm"]
    assert f.metrics["kworker_preemptions"] == 77
    assert a.metrics["storm_kworker_preemptions_per_s"] == pytest.approx(
        f.metrics["kworker_preemptions_per_s"], rel=1e-4
    )
    assert a.metrics["storm_preempted_share"] == pytest.approx(
        f.metrics["preempted_share"], abs=1e-4
    )
