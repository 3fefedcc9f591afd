"""The completeness model (schedwake/model/completeness.py) equals the plain event-by-event
reference (tests/reference_impl.py, ``completeness``) exactly, in ns: the per-CPU
timeline (known intervals and their task, unknown ones and why), the runs of every task
(start, exact start, earliest start, end kind), the contradictions and their counts per
CPU and kind. On every sample trace (trace.dat and perf.data, those with lost events
included), on synthetic traces, complete and with planted damage, and on small traces
made by hand with one planted break each, whose timelines are also written out here
(so that the two cannot agree on a wrong answer unseen).

One difference is left out of the comparison: the model keeps the intervals of no
length of a segment between two switches stamped with one time (coarse clocks) in its
timeline when the segment's chain holds, and drops them where it does not; the
reference never has them."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from schedwake.ingest import RawTrace
from schedwake.model.completeness import KINDS, PROOF_EVENTS
from schedwake.schema import LOST_EVENTS_SCHEMA, STRING, event_schema
from schedwake.synth import US, Synth, make_trace
from schedwake.topology import Topology
from schedwake.trace import Trace

from . import reference_impl
from .conftest import SAMPLE_DATS, SAMPLES, shared_model_trace

#: Every sample the model reads: the trace.dat recordings and the perf.data ones (perf
#: sched record with sched_stat_runtime, a profile without sched events, lost events).
SAMPLE_PATHS = (
    SAMPLE_DATS
    + sorted((SAMPLES / "perf").glob("*.perf.data"))
    + [SAMPLES / "perf-lost-events.perf.data"]
)


def _param(path):
    # the reference walks ~1 s per MB of a busy recording
    slow = path.stat().st_size > 1_400_000
    return pytest.param(path, id=path.name, marks=[pytest.mark.slow] if slow else [])


def model_view(trace) -> dict:
    """The model's completeness of ``trace`` in the reference's layout (plain tuples)."""
    c = trace.model.completeness

    def cols(frame, *names):
        return [frame[k].tolist() for k in names]

    def text(v):
        return None if v is None or v != v else str(v)

    timeline = [
        (cpu, a, b, pid, text(comm) if state != "unknown" else None, state, text(why))
        for cpu, a, b, pid, comm, state, why in zip(
            *cols(c.timeline, "cpu", "start_ts", "end_ts", "pid", "comm", "state", "why")
        )
        if b > a  # (see the module's docstring)
    ]
    names = ("pid", "comm", "cpu", "start_ts", "end_ts", "exact_start", "earliest_ts", "end")
    runs = [
        (pid, text(comm), cpu, a, b, exact, early, end)
        for pid, comm, cpu, a, b, exact, early, end in zip(*cols(c.runs, *names))
    ]
    breaks = list(zip(*cols(c.breaks, "cpu", "ts", "kind", "pid", "other_pid", "count")))
    counts = {
        (int(cpu), kind): int(n) for cpu, row in c.counts.iterrows() for kind, n in row.items() if n
    }
    return {
        "timeline": timeline,
        "runs": runs,
        "breaks": breaks,
        "counts": counts,
        "count_cpus": sorted(int(x) for x in c.counts.index),
        "first_switch": {int(k): int(v) for k, v in c.first_switch.items()},
        "t_start": int(c.t_start),
        "t_end": int(c.t_end),
    }


def assert_same(trace, ref=None) -> dict:
    """The model's completeness of ``trace`` equals the reference's (``ref``, else walked
    here); returns the model's view."""
    got = model_view(trace)
    ref = reference_impl.completeness(trace) if ref is None else ref
    for key in ("first_switch", "t_start", "t_end", "counts"):
        assert got[key] == ref[key], key
    assert got["count_cpus"] == sorted(set(ref["first_switch"]) | {b[0] for b in ref["breaks"]})
    for key in ("timeline", "runs", "breaks"):
        mine, theirs = Counter(got[key]), Counter(ref[key])
        if not dict.__eq__(mine, theirs):  # (Counter's own == is slow)
            only_m = sorted((mine - theirs).elements(), key=repr)[:5]
            only_r = sorted((theirs - mine).elements(), key=repr)[:5]
            pytest.fail(f"{key}: the model only {only_m}; the reference only {only_r}")
    return got


def test_the_reference_reads_the_models_proofs():
    assert reference_impl.PROOF_EVENTS == tuple(sorted(set(PROOF_EVENTS) - {"sched_switch"}))
    assert reference_impl.BREAK_KINDS == KINDS


@pytest.mark.parametrize("path", [_param(p) for p in SAMPLE_PATHS])
def test_reference_completeness_on_samples(path):
    # read only: the trace is shared with the worker's other tests of the sample, and the
    # reference's walk of it with the reference checks of test_detect and
    # test_reference_idle
    trace = shared_model_trace(path)
    assert_same(trace, reference_impl.sample_completeness(path))


def test_the_samples_show_every_kind_of_break():
    """What the comparisons above cover: every kind of contradiction on the host
    samples (6.18: CPU 1's idle -> task switches missing), none on the 6.1/6.12 guests."""
    kinds = set()
    for name in ("lost-events.dat", "perf-lost-events.perf.data", "idle-sleep.dat"):
        kinds |= {b[2] for b in reference_impl.sample_completeness(SAMPLES / name)["breaks"]}
    assert kinds >= set(KINDS) - {"context"}
    guest = reference_impl.sample_completeness(SAMPLES / "guest8-dbench-xfs-2clients.dat")
    assert guest["breaks"] == [] and all(r[5] != "unknown" for r in guest["timeline"])


# -- synthetic traces --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def planted():
    trace, _ = make_trace(
        pingpong=60, roundrobin=80, storm=200, idle_gaps=60, background=600, seed=3
    )
    return trace


def without(trace, *names, rows=None) -> Trace:
    """``trace`` without the tables ``names`` (and, per table, without the rows
    ``rows[table]`` says), same meta and topology."""
    tables = {}
    for k, v in trace._tables.items():
        if k in names:
            continue
        if rows and k in rows:
            v = v.filter(pa.array(~rows[k]))
        tables[k] = v
    t = Trace(RawTrace(tables=tables, meta=trace.meta, lost=trace.lost))
    t.topology = trace.topology
    return t


def test_reference_completeness_on_a_complete_synthetic_trace(planted):
    """Every chain holds and every CPU is known from its first switch. (schedwake.synth's
    scenes switch in some tasks that slept without a wake-up of them: those breaks.)"""
    got = assert_same(planted)
    assert {b[2] for b in got["breaks"]} == {"unwoken_switch_in"}
    assert all(r[5] != "unknown" for r in got["timeline"])


@pytest.mark.parametrize("drop", ["sched_wakeup", "sched_waking", "sched_migrate_task"])
def test_reference_completeness_without_an_event(planted, drop):
    assert_same(without(planted, drop))


def test_reference_completeness_without_idle_task_switches(planted):
    """The 6.18 VM's pattern: CPU 1's switches from idle are all missing."""
    s = planted.table("sched_switch")
    gone = (s.column("cpu").to_numpy() == 1) & (s.column("prev_pid").to_numpy() == 0)
    trace = without(planted, rows={"sched_switch": gone})
    got = assert_same(trace)
    assert {b[:1] + b[2:3] for b in got["breaks"]} >= {(1, "switch_chain")}
    assert any(r[0] == 1 and r[5] == "unknown" for r in got["timeline"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reference_completeness_with_events_lost(planted, seed):
    """A few percent of every table's rows gone, a lost-event marker where some went."""
    rng = np.random.default_rng(seed)
    rows, lost = {}, []
    for name, table in planted._tables.items():
        gone = rng.random(table.num_rows) < 0.03
        rows[name] = gone
        at = np.flatnonzero(gone & (rng.random(table.num_rows) < 0.5))
        ts, cpu = table.column("ts").to_numpy(), table.column("cpu").to_numpy()
        lost += [(int(ts[i]), int(cpu[i]), int(rng.integers(-1, 3))) for i in at]
    trace = with_lost(without(planted, rows=rows), lost)
    got = assert_same(trace)
    assert {b[2] for b in got["breaks"]} >= {"switch_chain", "lost_events"}


# -- small traces made by hand, one break each -----------------------------------------------


def two_cpus() -> Topology:
    return Topology(cpus=2, llc=[[0, 1]], smt=[[0], [1]], numa=[[0, 1]], source="synthetic")


def with_lost(trace, lost) -> Trace:
    """``trace`` with lost-event markers ``lost``: (ts, cpu, count)."""
    table = pa.table(
        {k: [x[i] for x in lost] for i, k in enumerate(("ts", "cpu", "count"))},
        schema=LOST_EVENTS_SCHEMA,
    )
    t = Trace(RawTrace(tables=dict(trace._tables), meta=trace.meta, lost=table))
    t.topology = trace.topology
    return t


def with_runtime(trace, rows) -> Trace:
    """``trace`` with ``sched_stat_runtime`` events ``rows``: (ts, cpu, common_pid, pid,
    runtime), as ``perf sched record`` and ``schedwake record --runtime`` record them."""
    schema = event_schema(
        [
            pa.field("comm", STRING),
            pa.field("pid", pa.int32()),
            pa.field("runtime", pa.uint64()),
            pa.field("vruntime", pa.uint64()),
        ]
    )
    cols = {
        "ts": [r[0] for r in rows],
        "cpu": [r[1] for r in rows],
        "common_pid": [r[2] for r in rows],
        "common_comm": pa.array(["task"] * len(rows)).dictionary_encode(),
        "common_flags": [0] * len(rows),
        "common_preempt_count": [0] * len(rows),
        "comm": pa.array(["task"] * len(rows)).dictionary_encode(),
        "pid": [r[3] for r in rows],
        "runtime": [r[4] for r in rows],
        "vruntime": [0] * len(rows),
    }
    tables = dict(trace._tables, sched_stat_runtime=pa.table(cols, schema=schema))
    t = Trace(RawTrace(tables=tables, meta=trace.meta, lost=trace.lost))
    t.topology = trace.topology
    return t


def scene():
    """A 2-CPU machine, both CPUs idle from its start; returns (synth, t0)."""
    s = Synth(two_cpus())
    s.settle()
    return s, s.t


def rows_of(view, cpu, t0):
    """A CPU's timeline from ``t0`` on, times in us from ``t0``: (start, end, what)."""
    return [
        ((a - t0) // US, (b - t0) // US, why if state == "unknown" else pid)
        for c, a, b, pid, _, state, why in sorted(view["timeline"])
        if c == cpu and b > t0
    ]


def kinds(view) -> list:
    return sorted((b[0], b[2]) for b in view["breaks"])


def test_a_missing_switch_from_idle_is_unknown_up_to_the_tasks_first_proof():
    """CPU 1 as the 6.18 VM records it: the task is woken in an interrupt in idle, and
    the idle -> task switch is missing. Idle is proven to the wake-up, the task from
    its first event, between them nothing is known."""
    s, t = scene()
    a, b = s.task("a"), s.task("b")
    s.switch(t, 1, 0, "R", a)
    s.switch(t + 10 * US, 1, a, "S", 0)
    s.waking(t + 20 * US, 1, 0, a, 1)  # in an interrupt in idle
    s.wakeup(t + 21 * US, 1, 0, a, 1)
    s.waking(t + 50 * US, 1, a, b, 1)  # a runs: the switch from idle is missing
    s.switch(t + 60 * US, 1, a, "S", 0)
    s.t = t + 100 * US
    trace = s.build()
    view = assert_same(trace)
    assert rows_of(view, 1, t) == [
        (0, 10, a),
        (10, 21, 0),
        (21, 50, "missing_switch"),
        (50, 60, a),
        (60, 100, 0),
    ]
    run = [r for r in view["runs"] if r[0] == a and r[3] > t][-1]
    assert run[3:] == (t + 50 * US, t + 60 * US, False, t + 21 * US, "switch")
    assert kinds(view) == [(1, "switch_chain")]
    w = trace.wakeups().set_index("ts").loc[t + 20 * US]
    assert (w["run_ts"], w["run_from_ts"]) == (t + 50 * US, t + 21 * US)


def test_a_lost_marker_makes_the_stretch_around_it_unknown():
    s, t = scene()
    a, b, c = s.task("a"), s.task("b"), s.task("c")
    s.switch(t, 0, 0, "R", a)
    s.waking(t + 10 * US, 0, a, b, 0)
    s.waking(t + 30 * US, 0, a, c, 0)
    s.switch(t + 40 * US, 0, a, "S", 0)
    s.t = t + 100 * US
    view = assert_same(with_lost(s.build(), [(t + 20 * US, 0, 5)]))
    assert rows_of(view, 0, t) == [(0, 10, a), (10, 30, "lost_events"), (30, 40, a), (40, 100, 0)]
    mine = [r[3:] for r in view["runs"] if r[0] == a]
    assert mine == [
        (t, t + 10 * US, True, t, "event"),
        (t + 30 * US, t + 40 * US, False, t + 10 * US, "switch"),
    ]
    assert kinds(view) == [(0, "lost_events")] and view["counts"][(0, "lost_events")] == 5


def test_a_lost_marker_after_the_last_proof_leaves_the_end_unknown():
    s, t = scene()
    a, b = s.task("a"), s.task("b")
    s.switch(t, 0, 0, "R", a)
    s.waking(t + 10 * US, 0, a, b, 0)
    s.t = t + 100 * US
    view = assert_same(with_lost(s.build(), [(t + 20 * US, 0, -1)]))  # -1: lost, not how many
    assert rows_of(view, 0, t) == [(0, 10, a), (10, 100, "lost_events")]
    assert [r[7] for r in view["runs"] if r[0] == a] == ["event"]
    assert view["counts"][(0, "lost_events")] == 1


def test_events_stamped_with_the_time_of_switches_go_to_their_own_tasks_segment():
    """A coarse clock: two switches of CPU 0 at one time (a -> b -> idle) and an event of
    each of the three tasks at that time; on CPU 1 an event of the task that the CPU's
    first switch takes off, at its time. Each goes to the segment of its own task: no
    contradiction. An event of a fourth task at that time goes to the last segment."""
    s, t = scene()
    a, b, c, x = s.task("a"), s.task("b"), s.task("c"), s.task("x")
    s.switch(t, 0, 0, "R", a)
    T = t + 50 * US
    s.waking(T, 0, 0, c, 0)  # idle's, after both switches (in the table: first)
    s.waking(T, 0, b, c, 0)  # b's, between them
    s.waking(T, 0, a, c, 0)  # a's, before them
    s.switch(T, 0, a, "R", b)
    s.switch(T, 0, b, "R", 0)
    s.t = t + 100 * US
    trace = s.build()
    view = assert_same(trace)
    assert rows_of(view, 0, t) == [(0, 50, a), (50, 100, 0)]  # (b's interval has no length)
    assert view["breaks"] == []
    other = Synth(two_cpus())
    c, x = other.task("c"), other.task("x")
    first = other.t
    T1 = first + 50 * US
    other.waking(T1, 1, x, c, 1)  # x's, before CPU 1's first switch
    other.switch(T1, 1, x, "S", 0)
    other.waking(T1, 1, c, x, 1)  # c's: no segment at T1 is c's -> the last, idle's
    other.t = T1 + 50 * US
    view = assert_same(other.build())
    assert view["first_switch"] == {1: T1}
    assert view["breaks"] == [(1, T1, "context", 0, c, 1)]
    # before the first switch: x's run, which may have begun with the trace
    assert [r[3:] for r in view["runs"] if r[0] == x] == [(T1, T1, False, first, "switch")]


def test_sched_stat_runtime_moves_a_runs_start_back():
    """a's switch-in is missing (CPU 1, from idle); its first proof is at 100 us, where
    sched_stat_runtime charges it with 60 us of run time: it ran from 40 us. b's (CPU 0)
    too, first proven at 90 us and charged at 100 us from CPU 1 (an enqueue on a remote
    run queue: b's CPU is where it was last put, its sched_wakeup's target_cpu) with
    500 us: it ran from the proof before it on CPU 0 (idle's, at 30 us), not earlier."""
    s, t = scene()
    a, b, w = s.task("a"), s.task("b"), s.task("w")
    s.switch(t, 1, 0, "R", a)
    s.switch(t + 10 * US, 1, a, "S", 0)
    s.waking(t + 20 * US, 1, 0, a, 1)
    s.waking(t + 100 * US, 1, a, w, 1)  # a's first proof
    s.switch(t + 120 * US, 1, a, "S", 0)
    s.switch(t, 0, 0, "R", b)
    s.switch(t + 10 * US, 0, b, "S", 0)
    s.wakeup(t + 30 * US, 0, 0, b, 0)  # in idle on CPU 0: b put there
    s.waking(t + 90 * US, 0, b, w, 0)  # b's first proof: idle -> b is missing
    s.switch(t + 105 * US, 0, b, "S", 0)
    s.t = t + 200 * US
    trace = with_runtime(
        s.build(), [(t + 100 * US, 1, a, a, 60 * US), (t + 100 * US, 1, a, b, 500 * US)]
    )
    view = assert_same(trace)
    assert rows_of(view, 1, t) == [
        (0, 10, a),
        (10, 20, 0),
        (20, 40, "missing_switch"),
        (40, 120, a),
        (120, 200, 0),
    ]
    assert rows_of(view, 0, t) == [(0, 10, b), (10, 30, 0), (30, 105, b), (105, 200, 0)]
    mine = sorted(r[3:7] for r in view["runs"] if r[0] in (a, b) and not r[5])
    assert mine == [
        (t + 30 * US, t + 105 * US, False, t + 30 * US),
        (t + 40 * US, t + 120 * US, False, t + 20 * US),
    ]


def test_a_task_proven_on_two_cpus_at_once():
    s, t = scene()
    a, b, w = s.task("a"), s.task("b"), s.task("w")
    s.switch(t, 0, 0, "R", a)
    s.switch(t, 1, 0, "R", b)
    s.waking(t + 50 * US, 1, a, w, 1)  # a's event on CPU 1, where b runs
    s.switch(t + 100 * US, 0, a, "S", 0)
    s.switch(t + 110 * US, 1, b, "S", 0)
    s.t = t + 200 * US
    view = assert_same(s.build())
    assert view["breaks"] == [
        (1, t + 50 * US, "context", b, a, 1),
        (1, t + 50 * US, "two_cpus", a, a, 1),
    ]
    # b's segment holds a proof of a: nothing in it is known but its ends
    assert rows_of(view, 1, t) == [(0, 110, "missing_switch"), (110, 200, 0)]


def test_wake_ups_without_a_run_between_them():
    s, t = scene()
    a, w = s.task("a"), s.task("w")
    s.switch(t, 0, 0, "R", a)
    s.waking(t + 10 * US, 0, a, w, 0)
    s.waking(t + 30 * US, 0, a, w, 0)  # w did not run since: rewoken
    s.switch(t + 40 * US, 0, a, "S", 0)
    s.t = t + 100 * US
    view = assert_same(s.build())
    assert view["breaks"] == [(0, t + 30 * US, "rewoken", w, w, 1)]


def test_a_switch_in_after_a_sleep_without_a_wake_up():
    s, t = scene()
    a = s.task("a")
    s.switch(t, 0, 0, "R", a)
    s.switch(t + 10 * US, 0, a, "S", 0)
    s.switch(t + 50 * US, 1, 0, "R", a)  # no wake-up of a since it slept
    s.switch(t + 60 * US, 1, a, "S", 0)
    s.t = t + 100 * US
    view = assert_same(s.build())
    assert view["breaks"] == [(1, t + 50 * US, "unwoken_switch_in", a, a, 1)]


def test_a_trace_without_any_proof():
    """No sched events at all (a profile: perf record -e cpu-clock): nothing to prove."""
    s = Synth(two_cpus())
    s.t += 100 * US
    view = assert_same(s.build())
    assert view["timeline"] == view["runs"] == view["breaks"] == []


def test_a_cpus_timeline_begins_at_its_first_switch():
    """CPU 0's first switch puts idle on it, and the next proof is another task's (the
    switch from idle is missing): the stretch between is unknown, in the timeline
    (perf-pipe.perf.data's CPU 1: 379 us the model's timeline left out)."""
    s = Synth(two_cpus())
    a, x = s.task("a"), s.task("x")
    t = s.t
    s.switch(t, 0, x, "S", 0)
    s.waking(t + 20 * US, 0, a, x, 0)  # a runs: idle -> a is missing
    s.switch(t + 50 * US, 0, a, "S", 0)
    s.t = t + 100 * US
    view = assert_same(s.build())
    assert rows_of(view, 0, t) == [(0, 20, "missing_switch"), (20, 50, a), (50, 100, 0)]


def test_a_run_on_another_cpu_that_was_on_at_a_wake_up_counts():
    """w's events prove it on CPU 1 from 0 to 200 us; it is also switched in and out on
    CPU 0 (50 to 60 us: on two CPUs at once, lost_events.dat has such). It is woken at
    100 and 150 us, in interrupts: the run on CPU 1 was on at both (docs/semantics.md: a
    run that was on when the previous wake-up came counts), so neither wake-up is a
    rewoken one and w was running at both."""
    s = Synth(two_cpus())
    w, z = s.task("w"), s.task("z")
    t = s.t
    s.switch(t, 1, 0, "R", w)
    s.waking(t + 10 * US, 1, w, z, 1)
    s.switch(t, 0, 0, "R", z)
    s.switch(t + 40 * US, 0, z, "S", 0)
    s.switch(t + 50 * US, 0, 0, "R", w)
    s.switch(t + 60 * US, 0, w, "R", 0)
    s.waking(t + 100 * US, 0, 0, w, 1)
    s.waking(t + 150 * US, 0, 0, w, 1)
    s.waking(t + 190 * US, 1, w, z, 1)
    s.switch(t + 200 * US, 1, w, "S", 0)
    s.t = t + 300 * US
    trace = s.build()
    view = assert_same(trace)
    assert kinds(view) == [(0, "two_cpus")]
    woken = trace.wakeups()
    assert woken.loc[woken["wakee_pid"] == w, "wakee_was_running"].tolist() == [True, True]
