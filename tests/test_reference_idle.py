"""Idle while runnable: the vectorized detector's total equals the plain event-by-event
reference (tests/reference_impl.py) exactly, in ns, on every real sample and on the
synthetic traces, also with events left out (no sched_wakeup: waits start at the
waking; no sched_waking: sched_wakeup is the wake-up; no sched_migrate_task)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import schedwake
from schedwake.detect import thresholds
from schedwake.detect.idle_while_runnable import measure
from schedwake.ingest import RawTrace
from schedwake.model import MODEL_EVENTS
from schedwake.schema import LOST_EVENTS_SCHEMA
from schedwake.synth import US, Synth, make_trace
from schedwake.topology import Topology
from schedwake.trace import Trace

from . import reference_impl
from .conftest import SAMPLE_DATS, sample, shared_model_trace

PLANTED = dict(
    pingpong=60, pingpong_busy=25, roundrobin=80, storm=600, idle_gaps=120, background=600
)


def vectorized_ns(trace) -> int:
    return int(measure(trace.model, thresholds())["idle_while_runnable_ns"])


def reference_ns(trace) -> int:
    return reference_impl.idle_while_runnable_ns(
        trace, pinned_min_runs=int(thresholds()["iwr_pinned_min_runs"])
    )


def without(trace, *names) -> Trace:
    """The same trace with the tables of events ``names`` left out."""
    t = Trace(
        RawTrace(tables={k: v for k, v in trace._tables.items() if k not in names}, meta=trace.meta)
    )
    t.topology = trace.topology
    return t


@pytest.mark.parametrize("path", SAMPLE_DATS, ids=lambda p: p.name)
@pytest.mark.slow
def test_reference_idle_while_runnable_on_samples(path):
    # read only: the trace and its model are shared with the other tests of the worker
    # that load the sample with the model's events (test_detect's reference check)
    trace = shared_model_trace(path)
    # the reference's walk of the sample, made once per run with test_detect's walk of it
    ref = reference_impl.sample_results(path, int(thresholds()["iwr_pinned_min_runs"]))
    measured = measure(trace.model, thresholds())
    assert int(measured["idle_while_runnable_ns"]) == ref["idle_while_runnable_ns"]
    # and the gap's segments, each the longest stretch (what its longest gap and its
    # count of segments are made of), LLC by LLC
    got = {li: list(zip(s.tolist(), e.tolist())) for li, (s, e) in measured["segments"].items()}
    assert got == ref["idle_while_runnable_segments"]


@pytest.mark.parametrize("name", ["lost-events.dat", "idle-sleep.dat"])
def test_reference_idle_while_runnable_on_samples_without_sched_wakeup(name):
    trace = without(schedwake.load(sample(name), events=list(MODEL_EVENTS)), "sched_wakeup")
    assert vectorized_ns(trace) == reference_ns(trace)


@pytest.fixture(scope="module")
def synthetic():
    return {
        "planted": make_trace(**PLANTED, seed=3),
        "healthy1": make_trace(background=2500, seed=1),
        "healthy2": make_trace(background=2500, seed=2),
    }


@pytest.mark.parametrize(
    "drop",
    [(), ("sched_wakeup",), ("sched_waking",), ("sched_migrate_task",)],
    ids=lambda d: "-".join(d) or "all",
)
@pytest.mark.parametrize("name", ["planted", "healthy1", "healthy2"])
def test_reference_idle_while_runnable_on_synthetic(synthetic, name, drop):
    trace, planted = synthetic[name]
    trace = without(trace, *drop) if drop else trace
    got = vectorized_ns(trace)
    assert got == reference_ns(trace)
    if not drop:
        assert got == planted.get("idle_gap_ns", 0)


# -- the two cases the reference found ----------------------------------------------------


def two_llcs() -> Topology:
    return Topology(
        cpus=4,
        llc=[[0, 1], [2, 3]],
        smt=[[0], [1], [2], [3]],
        numa=[[0, 1, 2, 3]],
        source="synthetic",
    )


def test_wait_without_sched_wakeup_is_not_ended_by_the_wakeups_own_migration():
    """No sched_wakeup: the wait starts at the waking; the wake-up's own migration
    (0 -> 1, onto busy CPU 1) must not end it."""
    s = Synth(two_llcs())
    pid, waker, hog = s.task("task", cpu=0), s.task("waker"), s.task("hog")
    s.settle()
    t = s.t
    s.switch(t, 0, 0, "R", waker)
    s.switch(t, 1, 0, "R", hog)
    s.waking(t + 10 * US, 0, waker, pid, 0)
    s.migrate(t + 11 * US, 0, waker, pid, 0, 1)
    s.switch(t + 20 * US, 0, waker, "S", 0)  # CPU 0 idle from here
    s.switch(t + 500 * US, 1, hog, "R+", pid)  # the task ran only now
    s.switch(t + 600 * US, 1, pid, "S", hog)
    s.switch(t + 700 * US, 1, hog, "S", 0)
    s.t = t + 800 * US
    trace = s.build()
    assert vectorized_ns(trace) == reference_ns(trace) == 480 * US


def test_a_later_migration_matched_to_a_wakeup_does_not_move_its_wait():
    """The waker on CPU 2 wakes the task onto CPU 0 (queued there, busy, CPU 1 idle); the
    task runs, is preempted, and only later the waker (newly-idle balance, no event on
    CPU 2 in between) pulls it to CPU 2. The wake-up model matches that migration to the
    waking; the wait must stay on CPU 0 (LLC 0: 288 us of gap), not go to CPU 2 (LLC 1,
    with no idle CPU)."""
    s = Synth(two_llcs())
    pid, waker = s.task("task", cpu=0), s.task("waker")
    hog, hog2 = s.task("hog"), s.task("hog2")
    s.settle()
    t = s.t
    s.switch(t, 0, 0, "R", hog)
    s.switch(t, 2, 0, "R", waker)
    s.switch(t, 3, 0, "R", hog2)
    s.waking(t + 10 * US, 2, waker, pid, 0)
    s.wakeup(t + 12 * US, 0, hog, pid, 0)
    s.switch(t + 300 * US, 0, hog, "R+", pid)
    s.switch(t + 320 * US, 0, pid, "R+", hog)
    s.migrate(t + 400 * US, 2, waker, pid, 0, 2)
    s.switch(t + 402 * US, 2, waker, "D", pid)
    s.switch(t + 450 * US, 2, pid, "S", 0)
    s.switch(t + 500 * US, 0, hog, "S", 0)
    s.switch(t + 500 * US, 3, hog2, "S", 0)
    s.t = t + 600 * US
    trace = s.build()
    assert vectorized_ns(trace) == reference_ns(trace) == 288 * US


# -- incomplete traces: only what is proven counts ------------------------------------------


def test_a_wait_on_a_cpu_whose_state_is_unknown_is_no_gap():
    """CPU 0 is idle throughout. On CPU 1 the hog runs, the task is woken onto CPU 1 at
    10 us and waits until it is switched in at 500 us; but CPU 1 lost events at 150 us:
    from the hog's last proof (100 us) to 500 us its state is unknown, perhaps idle (then
    the task only waited for it to leave idle: no gap). Only 11 to 100 us is proven."""
    s = Synth(Topology(cpus=2, llc=[[0, 1]], smt=[[0], [1]], numa=[[0, 1]], source="synthetic"))
    pid, hog, other = s.task("task"), s.task("hog"), s.task("other")
    s.settle()
    t = s.t
    s.switch(t, 1, 0, "R", hog)
    s.waking(t + 10 * US, 1, hog, pid, 1)
    s.wakeup(t + 11 * US, 1, hog, pid, 1)
    s.waking(t + 100 * US, 1, hog, other, 1)
    s.switch(t + 500 * US, 1, hog, "R+", pid)
    s.switch(t + 600 * US, 1, pid, "S", 0)
    s.t = t + 700 * US
    built = s.build()
    lost = pa.table({"ts": [t + 150 * US], "cpu": [1], "count": [3]}, schema=LOST_EVENTS_SCHEMA)
    trace = Trace(RawTrace(tables=dict(built._tables), meta=built.meta, lost=lost))
    trace.topology = built.topology
    assert vectorized_ns(trace) == reference_ns(trace) == 89 * US
