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

import math

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


STORM = sample("storm/weighted/run8.dat")


@pytest.fixture(scope="module")
def storm_slice():
    """5 ms of a weighted-cgroup storm run (1.000-1.005 s after its first event), and
    the slice's share of the trace, from the timestamps."""
    t = schedwake.load(STORM)
    f0 = t.meta.first_ts_ns
    part = t.sliced(f0 + 1_000_000_000, f0 + 1_005_000_000)
    return part, 5_000_000 / (t.meta.last_ts_ns - f0)


def _storm_by_hand(trace, least: int) -> tuple[int, int, float]:
    """From the slice's own sched_switch rows, without schedwake's model or detector:
    the kworker preemptions (a kworker switched out ``R+`` for a user task) of the
    (CPU, kworker) units a user task preempts at 75% of their switch-outs or more
    (storm_min_preempted_share), for the (CPU, task) pairs with ``least`` of them or
    more; the switch-outs of those units; and the slice's span (s) between its first
    and last event. (This slice's kworkers run one work function each.)"""
    sw = trace.table("sched_switch").to_pydict()
    rows = list(zip(sw["cpu"], sw["prev_pid"], sw["prev_comm"], sw["prev_state_str"],
                    sw["next_pid"], sw["next_comm"]))  # fmt: skip
    outs: dict[tuple, int] = {}
    pre: dict[tuple, int] = {}
    user = ("kworker/", "ksoftirqd/", "migration/", "rcu", "swapper")
    for cpu, prev, prev_comm, state, nxt, next_comm in rows:
        if prev_comm.startswith("kworker/"):
            outs[(cpu, prev)] = outs.get((cpu, prev), 0) + 1
            if state == "R+" and nxt != 0 and not next_comm.startswith(user):
                pre[(cpu, nxt, prev)] = pre.get((cpu, nxt, prev), 0) + 1
    storm = {k: n for k, n in pre.items() if n >= 0.75 * outs[(k[0], k[2])]}
    per_pair: dict[tuple, int] = {}
    for (cpu, task, _), n in storm.items():
        per_pair[(cpu, task)] = per_pair.get((cpu, task), 0) + n
    kept = {k: n for k, n in storm.items() if per_pair[(k[0], k[1])] >= least}
    ts = [t for name in trace.meta.event_counts if trace.has(name)
          for t in trace.table(name).column("ts").to_pylist()]  # fmt: skip
    n_out = sum(outs[(cpu, kw)] for cpu, _, kw in kept)
    return sum(kept.values()), n_out, (max(ts) - min(ts)) / 1e9


def test_a_slices_metrics_count_what_its_detector_judges(storm_slice):
    """The storm detector judges the 5-ms slice with its least preemptions scaled to the
    slice (100 x 0.21%, to the floor of 10), and the storm_* metrics count with the very
    same thresholds: 77 preemptions of one kworker, 79 switch-outs of it, counted here
    from the slice's switches. (With the unscaled 100 the metrics would say 0.)"""
    part, share = storm_slice
    least = max(math.ceil(100 * share), 10)
    assert least == 10
    a = schedwake.analyze(part)
    assert a.thresholds["storm_min_preemptions"] == least
    n, outs, span_s = _storm_by_hand(part, least)
    assert (n, outs) == (77, 79)
    assert _storm_by_hand(part, 100)[0] == 0
    (f,) = [x for x in a.findings if x.detector == "cswitch_storm"]
    assert f.metrics["kworker_preemptions"] == n
    assert a.metrics["storm_kworker_preemptions_per_s"] == pytest.approx(n / span_s, rel=1e-6)
    assert a.metrics["storm_preempted_share"] == pytest.approx(n / outs, abs=1e-6)


def test_the_thresholds_are_resolved_once_and_handed_down(storm_slice, monkeypatch):
    """analyze resolves the slice's thresholds once (one ``for_slice``) and hands the same
    Thresholds to the detectors and the metrics; each entry point called alone resolves
    them itself, to the same values, and one given resolved thresholds uses them as
    they are (no second scaling)."""
    part, _ = storm_slice
    import schedwake.detect as detect_mod
    from schedwake.analysis.metrics import metric_bounds, trace_metrics

    calls = []
    real = detect_mod.for_slice
    monkeypatch.setattr(detect_mod, "for_slice", lambda *a, **k: calls.append(a) or real(*a, **k))
    a = schedwake.analyze(part)
    assert a.bounds is not None and len(calls) == 1
    assert isinstance(a.thresholds, detect_mod.Thresholds)
    # alone: resolved there, the same values
    assert detect_mod.resolve(part) == a.thresholds
    alone = detect_mod.detect(part)
    assert [f.to_dict() for f in alone] == [f.to_dict() for f in a.findings]
    assert trace_metrics(part) == a.metrics
    assert metric_bounds(part) == a.bounds
    # resolved thresholds are used as given: the unscaled least finds no storm here
    whole = detect_mod.Thresholds(thresholds())
    assert detect_mod.resolve(part, whole) is whole
    assert not [f for f in detect_mod.detect(part, whole) if f.detector == "cswitch_storm"]
    assert trace_metrics(part, whole)["storm_kworker_preemptions_per_s"] == 0
