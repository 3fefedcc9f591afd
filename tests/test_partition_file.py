"""A trace file read in time parts, never whole (schedwake.partition.passes and .driver):
the fold's preludes, the lives, the unseen tasks, the metadata and the topology found
from the parts are the whole trace's, and each part's model owns exactly the whole
model's rows; in this process and on a real Dask LocalCluster.

Real recordings of every kind the range readers read: trace.dat (a clean 8-CPU dbench,
lost events, this VM's kind that lacks switches, a 16-CPU guest with two LLCs) and
perf.data (`perf sched record -g`, a pipe file, lost events), cut at the index's cuts
(equal event counts) and at random times.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import schedwake
from schedwake import ingest
from schedwake.partition import OWNED_BY, model_tables, owned_rows, plan
from schedwake.partition.passes import fold_step

from .conftest import SAMPLES
from .test_partition import assert_rows_equal, first_event_cuts, longest_gaps

TRACES = {
    "kstack-off": SAMPLES / "kstack-6.1" / "k61-dbench-c2-kstack-off-i1.dat",
    "lost-events": SAMPLES / "lost-events.dat",
    "fio-weighted": SAMPLES / "fio-pinned-weighted.dat",
    "guest16": SAMPLES / "guest16-2llc-tcrecord-dbench.dat",
    "perf-sched-g": SAMPLES / "perf" / "perf-sched-g.perf.data",
    "perf-pipe": SAMPLES / "perf" / "perf-pipe.perf.data",
    "perf-lost": SAMPLES / "perf-lost-events.perf.data",
}


def check_plan(the_plan: schedwake.partition.Plan, whole: schedwake.Trace) -> None:
    """The plan's facts are the whole trace's, and its parts own every row of the whole
    model once, equal."""
    wm, pm = whole.meta, the_plan.meta
    for name in ("first_ts_ns", "last_ts_ns", "lost_unknown", "warnings", "cpus", "clock"):
        assert getattr(pm, name) == getattr(wm, name), name
    assert dict(pm.event_counts) == dict(wm.event_counts)
    assert dict(pm.lost_events) == dict(wm.lost_events)
    lives, facts = whole.model.events.lives, whole.model.facts_for_parts()
    assert the_plan.facts.lives.pid.tolist() == lives.pid.tolist()
    assert the_plan.facts.lives.ts.tolist() == lives.ts.tolist()
    if facts.unseen_tasks is None:
        assert the_plan.facts.unseen_tasks is None
    else:
        assert the_plan.facts.unseen_tasks is not None
        assert the_plan.facts.unseen_tasks.tolist() == facts.unseen_tasks.tolist()
    assert the_plan.topology.llc == whole.topology.llc
    assert the_plan.topology.source == whole.topology.source
    rows = the_plan.map(lambda part, spec: owned_rows(part.model, spec.t0, spec.t1))
    expected = model_tables(whole.model)
    for spec, mine in zip(the_plan.specs, rows):
        theirs = owned_rows(whole.model, spec.t0, spec.t1)
        assert_rows_equal(mine, theirs, f"the part [{spec.t0}, {spec.t1})")
    for name in OWNED_BY:
        assert sum(len(r[name]) for r in rows) == len(expected[name]), name


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize("name", sorted(TRACES))
def test_parts_read_from_the_file_give_the_whole_model(name: str) -> None:
    path = TRACES[name]
    whole = schedwake.load(path)
    check_plan(plan(path, 4), whole)


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize("name", ["kstack-off", "fio-weighted", "perf-lost", "perf-sched-g"])
def test_random_cuts_read_from_the_file(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cuts at random times instead of the index's (cut_times chooses them). (On the
    perf.data recording they found the waking of a running task that dies before any
    sched_wakeup: owned by no part until it was placed at the death.)"""
    path = TRACES[name]
    whole = schedwake.load(path)
    first, last = whole.meta.first_ts_ns, whole.meta.last_ts_ns
    assert first is not None and last is not None
    rng = np.random.default_rng(19)
    cuts = sorted({int(t) for t in rng.integers(first + 1, last, size=5)})
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: cuts)
    check_plan(plan(path, len(cuts) + 1), whole)


@pytest.mark.slow  # (a whole real trace)
def test_the_topology_is_inferred_from_all_parts(tmp_path: Path) -> None:
    """A 16-CPU guest of two LLCs, copied without the topology file beside it: the LLCs
    its wake-up migrations show, found from the parts' moves, are those the whole trace
    infers."""
    path = tmp_path / "guest16.dat"
    shutil.copy(TRACES["guest16"], path)
    whole = schedwake.load(path)
    assert whole.topology.source == "inferred" and whole.topology.llc is not None
    assert len(whole.topology.llc) == 2
    the_plan = plan(path, 3)
    assert the_plan.topology.llc == whole.topology.llc
    assert the_plan.topology.note == whole.topology.note


def test_the_fold_carries_few_rows() -> None:
    """What crosses a cut is a few rows a task and CPU, not the events before it."""
    path = TRACES["kstack-off"]
    cuts = ingest.cut_times(path, 2)
    carry = fold_step(path, ingest.ReadOptions(), None, cuts[0])
    carried = sum(t.num_rows for t in carry.prelude.values())
    events = sum(carry.event_counts.values())
    assert 0 < carried < events // 50
    assert carry.first_ts is not None and carry.last_ts is not None
    assert carry.first_ts <= carry.last_ts < cuts[0]


def test_text_is_not_read_in_parts(tmp_path: Path) -> None:
    """A text trace has no boundary to cut at: one line, before anything is read."""
    src = SAMPLES / "nonutf8-comm.report.txt.gz"
    with pytest.raises(schedwake.errors.OptionError, match="time range"):
        plan(src, 2)


@pytest.mark.slow  # (a real Dask LocalCluster of 2 worker processes)
def test_the_passes_on_a_local_cluster() -> None:
    """The same passes as Dask tasks on worker processes: the fold's carries move from
    worker to worker, and the answer is the same."""
    from schedwake.batch.run import local_cluster

    distributed = pytest.importorskip("distributed")
    path = TRACES["lost-events"]
    whole = schedwake.load(path)
    seen: list[float] = []
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        the_plan = plan(path, 3, client=client, progress=seen.append)
        check_plan(the_plan, whole)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)


@pytest.mark.slow  # (whole real traces, a model per window)
@pytest.mark.parametrize("name", ["lost-events", "fio-weighted"])
def test_windows_across_the_cuts(name: str) -> None:
    """A window around something a part owns (a wait to explain, an episode's events)
    may start before the part and end after it: its model owns the whole model's rows
    in it, and its events are the whole trace's there (the evidence lines)."""
    from schedwake.detect.evidence import evidence_of, evidence_rows

    path = TRACES[name]
    whole = schedwake.load(path)
    the_plan = plan(path, 4)
    first, last = whole.meta.first_ts_ns, whole.meta.last_ts_ns
    assert first is not None and last is not None
    rng = np.random.default_rng(41)
    windows = []
    for _ in range(3):
        a, b = sorted(int(t) for t in rng.integers(first + 1, last, size=2))
        windows.append((a, b))
    windows.append((None, int(rng.integers(first + 1, last))))
    cuts = [s.t0 for s in the_plan.specs[1:]]
    assert cuts[0] is not None and cuts[1] is not None
    windows.append((cuts[0] - 1_000_000, cuts[1] + 1_000_000))  # (across a whole part)

    def rows_and_lines(part: schedwake.Trace, spec: schedwake.partition.PartSpec) -> tuple:
        a = spec.t0 if spec.t0 is not None else first
        b = spec.t1 if spec.t1 is not None else last
        lines, _ = evidence_of(part, evidence_rows(part, a, b, limit=40))
        return owned_rows(part.model, spec.t0, spec.t1), lines

    for (t0, t1), (mine, lines) in zip(windows, the_plan.map_windows(rows_and_lines, windows)):
        assert_rows_equal(mine, owned_rows(whole.model, t0, t1), f"the window [{t0}, {t1})")
        a = t0 if t0 is not None else first
        b = t1 if t1 is not None else last
        assert lines == evidence_of(whole, evidence_rows(whole, a, b, limit=40))[0]


@pytest.mark.slow  # (a whole real trace, a model per part)
def test_cuts_inside_waits_read_from_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cuts in the middle of the 16-CPU guest's longest idle-while-runnable gaps: each
    part read from the file reads on until the tasks waiting at its end have run."""

    path = TRACES["guest16"]
    whole = schedwake.load(path)
    gaps = longest_gaps(whole)
    cuts = sorted({(s + e) // 2 for s, e in gaps})
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: cuts)
    check_plan(plan(path, len(cuts) + 1), whole)


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize("name", ["guest16", "perf-sched-g"])
def test_cuts_where_each_event_first_appears_read_from_the_file(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part read from the file reads on until its migrations' causes are settled
    (the exec or switch-out of the task, the next event on the CPU)."""
    whole = schedwake.load(TRACES[name])
    cuts = first_event_cuts(whole)
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: cuts)
    check_plan(plan(TRACES[name], len(cuts) + 1), whole)
