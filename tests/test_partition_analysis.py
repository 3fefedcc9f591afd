"""The sections of a trace's analysis joined from its time parts' summaries
(schedwake.analysis.partitioned, .part_findings) equal the whole trace's: the trace's
facts with its completeness and topology, the caveats, the task states, the waits
explained and the findings of every detector (cuts inside a storm's cycle and inside
idle-while-runnable gaps too); on real recordings of each kind, at the index's cuts and
at random ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import schedwake
from schedwake import ingest
from schedwake.analysis import topology_facts
from schedwake.analysis.partitioned import joined
from schedwake.model.completeness import Told, break_counts
from schedwake.model.task_states import StateSums, joined_names, last_names
from schedwake.model.task_states import summary as task_state_summary
from schedwake.partition import plan
from schedwake.summary import summary

from .conftest import SAMPLES
from .test_partition_file import TRACES


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize("name", ["kstack-off", "lost-events", "fio-weighted", "perf-lost"])
def test_trace_facts_and_task_states_from_the_parts(name: str) -> None:
    path = TRACES[name]
    whole = schedwake.load(path)
    parts = joined(plan(path, 3))
    assert parts.trace_facts() == {**summary(whole), "topology": topology_facts(whole.topology)}
    assert parts.task_states() == task_state_summary(whole.model)
    assert parts.caveats() == whole.caveats


@pytest.mark.slow  # (a whole real trace, a model per part)
def test_random_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    path = TRACES["guest16"]
    whole = schedwake.load(path)
    first, last = whole.meta.first_ts_ns, whole.meta.last_ts_ns
    assert first is not None and last is not None
    cuts = sorted({int(t) for t in np.random.default_rng(29).integers(first + 1, last, size=4)})
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: cuts)
    parts = joined(plan(path, len(cuts) + 1))
    assert parts.trace_facts()["completeness"] == summary(whole)["completeness"]
    assert parts.task_states() == task_state_summary(whole.model)


def test_names_join_in_time_order() -> None:
    """A task's name is its last one, whichever part gave it; each source of names
    overrides the ones before it, as a walk over the whole trace's rows gives them."""
    trace = schedwake.load(SAMPLES / "lost-events.dat")
    ev = trace.model.events
    walked: dict[int, str] = {}
    for table, pid_col, comm_col in (
        (ev.waking, "pid", "comm"),
        (ev.wakeup, "pid", "comm"),
        (ev.wakeup_new, "pid", "comm"),
        (ev.switch, "next_pid", "next_comm"),
        (ev.switch, "prev_pid", "prev_comm"),
    ):
        if table is None:
            continue
        keys = ev.key(table[pid_col].to_numpy(), table["ts"].to_numpy())
        for key, comm in zip(keys.tolist(), table[comm_col].astype(str).tolist()):
            walked[key] = comm
    first, last = trace.meta.first_ts_ns, trace.meta.last_ts_ns
    assert first is not None and last is not None
    cuts = [None, first + (last - first) // 3, first + 2 * (last - first) // 3, None]
    parts = [last_names(ev, a, b) for a, b in zip(cuts[:-1], cuts[1:])]
    assert joined_names(parts) == walked
    assert joined_names([last_names(ev)]) == walked


def test_state_sums_add_exactly() -> None:
    """Sums of halves of the task-state intervals are the whole's, to the ns."""
    trace = schedwake.load(SAMPLES / "lost-events.dat")
    iv = trace.model.task_states
    half = len(iv) // 2
    added = StateSums.add([StateSums.of(iv.iloc[:half]), StateSums.of(iv.iloc[half:])])
    whole = StateSums.of(iv)
    assert added.per_task.equals(whole.per_task)
    assert added.per_cpu.equals(whole.per_cpu)
    assert added.per_cpu_task is not None and whole.per_cpu_task is not None
    assert added.per_cpu_task.equals(whole.per_cpu_task)


def test_completeness_adds_up() -> None:
    """A trace that lost events: its CPUs' contradictions and unknown time told from
    two halves' rows are the whole's."""
    trace = schedwake.load(SAMPLES / "lost-events.dat")
    comp = trace.model.completeness
    whole = comp.told()
    assert not whole.complete
    b, t = comp.breaks, comp.timeline
    cut = int(np.median(b["ts"].to_numpy()))
    halves = []
    for keep_b, keep_t in (
        (b["ts"] < cut, t["end_ts"] < cut),
        (b["ts"] >= cut, t["end_ts"] >= cut),
    ):
        tl = t[keep_t.to_numpy()]
        u = tl[(tl["state"] == "unknown").to_numpy()]
        ns = (u["end_ts"] - u["start_ts"]).groupby(u["cpu"]).sum()
        halves.append(
            Told(
                break_counts(b[keep_b.to_numpy()], comp.first_switch),
                {int(c): int(n) for c, n in ns.items()},
                dict(comp.first_switch),
                comp.t_end,
                not keep_b.any() and not len(u),
            )
        )
    added = Told.add(halves)
    assert added.counts.equals(whole.counts)
    assert added.unknown_ns == whole.unknown_ns
    assert added.describe() == whole.describe()
    assert added.complete == whole.complete


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize("name", ["lost-events", "fio-weighted", "perf-sched-g", "guest16"])
def test_the_waits_explained_from_the_parts(name: str) -> None:
    """The longest wake-to-run wait, the longest preempted wait and the tail of the
    waits (the 99th percentile found exactly from the parts' largest waits, the longest
    200 explained: by the part that owns each, or in a window from its start when it
    starts before that part) equal the whole trace's; `perf sched record -g` adds the
    kernel stacks of the tasks that ran instead."""
    from schedwake.analysis.partitioned import part_waits, waits_sections

    path = TRACES[name]
    whole = schedwake.analyze(schedwake.load(path))
    the_plan = plan(path, 4)
    got = waits_sections(the_plan, the_plan.keep(part_waits))
    assert got["longest_wake_to_run"] == whole.longest_wake_to_run
    assert got["longest_preempted_wait"] == whole.longest_preempted_wait
    assert got["tail_waits"] == whole.tail_waits


def test_the_quantile_from_the_largest_values() -> None:
    """numpy's linear quantile, found from the parts' largest values only."""
    from schedwake.analysis.partitioned import PartWaits, quantile_of
    from schedwake.partition.driver import Kept

    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 100, 1001):
        values = rng.integers(0, 50, size=n)  # (many equal values)
        cuts = np.sort(rng.integers(0, n + 1, size=3))
        parts = np.split(values, cuts)
        kept = Kept(
            None,
            [PartWaits(None, None, np.sort(p), None, [], None, None, None, None) for p in parts],  # type: ignore[arg-type]
        )
        for q in (0.0, 0.5, 0.9, 0.99, 1.0):
            assert quantile_of(kept, n, q) == float(np.quantile(values, q)), (n, q)


#: Thresholds low enough that the traces of every kind give the findings (the storm's and
#: the gap's too: a storm of a few preemptions, any gap at all).
_LOW = {
    "roundrobin_min_changes": 5,
    "roundrobin_min_wakeups": 10,
    "roundrobin_min_change_share": 0.1,
    "pingpong_min_episodes": 3,
    "pingpong_min_share": 0.0,
    "pingpong_min_eligible_share": 0.0,
    "storm_min_preemptions": 5,
    "storm_min_cpu_share": 0.0,
    "storm_min_preempted_share": 0.3,
    "iwr_min_share": 0.0,
    "iwr_min_seconds": 0.0,
}


def check_findings(
    path: object,
    overrides: dict | None,
    names: list[str],
    parts: list[int],
    shown: set[str] | None = None,
) -> None:
    """The findings ``names`` joined from the parts of ``path`` (into each of ``parts``
    parts, at the index's cuts or those ``ingest.cut_times`` is patched to give) equal
    the whole trace's, every field; ``shown``: the detectors that must give one."""
    from schedwake.analysis.part_findings import findings, part_findings
    from schedwake.detect import detect

    whole = schedwake.load(path)
    expected = [f.to_dict() for f in detect(whole, overrides, detectors=names)]
    assert {f["detector"] for f in expected} >= (shown or {names[0]})
    for n in parts:
        the_plan = plan(path, n)
        caveats = joined(the_plan).model_caveats()
        got = findings(the_plan, the_plan.keep(part_findings), caveats, overrides, names)
        assert [f.to_dict() for f in got] == expected, n


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize(
    ("name", "overrides", "shown"),
    [
        ("kstack-off", None, {"kworker_pingpong", "llc_roundrobin"}),
        ("fio-weighted", None, {"cswitch_storm"}),
        ("lost-events", _LOW, {"kworker_pingpong", "idle_while_runnable"}),
        ("guest16", _LOW, {"kworker_pingpong", "idle_while_runnable"}),
        ("perf-dbench-z", _LOW, {"idle_while_runnable"}),
        ("fio-root", _LOW, {"cswitch_storm", "idle_while_runnable"}),
    ],
)
def test_the_findings_from_the_parts(name: str, overrides: dict | None, shown: set[str]) -> None:
    """Every detector of part_findings.JOINED judged once from the parts' added-up
    measures: the same findings, their metrics, tallies, top groups and tasks (their
    CPU walks joined across the parts), typical episode or cycle, the storm's worst
    pair and kworkers, the gap's segments joined across the cuts, its longest gap's
    two sides, and the evidence lines."""
    from schedwake.analysis.part_findings import JOINED

    path = TRACES.get(name, SAMPLES / "perf" / f"{name}.perf.data")
    if name == "fio-root":
        path = SAMPLES / "fio-pinned-root.dat"
    check_findings(path, overrides, list(JOINED), [2, 5], shown)


@pytest.mark.slow  # (a whole real trace, a model per part)
def test_cuts_inside_a_storm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cuts inside the storm's cycle the finding shows (between the kworker's switch-in
    and its preemption, between that and its return: a part that does not see the CPU's
    next switch leaves the cycle to the next one) and right after other preemptions."""
    from schedwake.detect import cswitch_storm, detect

    path = TRACES["fio-weighted"]
    whole = schedwake.load(path)
    at = detect(whole, detectors=["cswitch_storm"])[0].evidence_at
    assert at is not None
    rows = cswitch_storm.preemption_rows(whole.model)
    cuts = {(at["t0"] + at["focus_ts"]) // 2, (at["focus_ts"] + at["t1"]) // 2 + 1}
    rng = np.random.default_rng(7)
    cuts |= {int(t) + 1 for t in rows["ts"].to_numpy()[rng.integers(0, len(rows), size=3)]}
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: sorted(cuts))
    check_findings(path, None, ["cswitch_storm"], [len(cuts) + 1])


@pytest.mark.slow  # (whole real traces, a model per part)
@pytest.mark.parametrize("name", ["lost-events", "guest16"])
def test_cuts_inside_idle_while_runnable_gaps(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cuts in the middle of the three longest gap segments (a segment a cut splits is
    one again, its length the whole's), and at the longest one's start (its two sides
    read at a cut)."""
    from .test_partition import longest_gaps

    path = TRACES[name]
    gaps = longest_gaps(schedwake.load(path))
    overrides = {"iwr_min_share": 0.0, "iwr_min_seconds": 0.0}
    for cuts in (sorted({(s + e) // 2 for s, e in gaps[-3:]}), [gaps[-1][0]]):
        monkeypatch.setattr(ingest, "cut_times", lambda p, n, c=cuts: c)
        check_findings(path, overrides, ["idle_while_runnable"], [len(cuts) + 1])


@pytest.mark.slow  # (a whole real trace, a model per part)
def test_the_gap_from_parts_shorter_than_its_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts a fifth as long as the 16-CPU guest's three longest gap segments, in their
    middles, analysed as the command does (those parts modelled again, given the waits
    that cross them): the idle-while-runnable finding is the whole trace's."""
    from schedwake.analysis.partitioned import analyze_parts
    from schedwake.detect import detect

    from .test_partition import longest_gaps, short_parts_inside

    path = TRACES["guest16"]
    whole = schedwake.load(path)
    overrides = {"iwr_min_share": 0.0, "iwr_min_seconds": 0.0}
    expected = [f.to_dict() for f in detect(whole, overrides, ["idle_while_runnable"])]
    assert expected
    cuts = short_parts_inside(longest_gaps(whole))
    monkeypatch.setattr(ingest, "cut_times", lambda p, n: cuts)
    got = analyze_parts(plan(path, len(cuts) + 1), overrides, ["idle_while_runnable"])
    assert [f.to_dict() for f in got.findings] == expected


def test_gap_segments_join_across_spans() -> None:
    """Gap segments summed per span and joined where a cut splits one (a segment across
    several spans too) give the whole's sum, count and longest segment (the first of as
    long ones), segments fed by hand."""
    from schedwake.detect.idle_while_runnable import joined_gaps, summarize

    rng = np.random.default_rng(11)
    for _ in range(50):
        segs = {}
        for li in range(2):
            ends = np.unique(rng.integers(0, 1000, size=int(rng.integers(0, 30))))
            starts, stops = ends[:-1], ends[1:]
            keep = rng.random(len(starts)) < 0.6
            segs[li] = (starts[keep].astype(np.int64), stops[keep].astype(np.int64))
        whole = joined_gaps([summarize(segs, None, None)])
        cuts = [None, *sorted({int(c) for c in rng.integers(1, 1000, size=4)}), None]
        spans = [summarize(segs, a, b) for a, b in zip(cuts[:-1], cuts[1:])]
        assert joined_gaps(spans) == whole, cuts


def test_walks_join_across_spans() -> None:
    """A task's CPU walk (back-and-forth, pair runs, dwell) summed per span and joined
    where the spans meet is the walk of all its changes at once (changes fed by hand)."""
    from schedwake.analysis.part_findings import joined_walks, walk_ends
    from schedwake.detect import llc_roundrobin

    rng = np.random.default_rng(5)
    n = 400
    ch = pd.DataFrame(
        {
            "task": rng.integers(1, 5, size=n),
            "ts": np.sort(rng.choice(10**6, size=n, replace=False)),
            "prev": rng.integers(0, 3, size=n),
            "chosen": rng.integers(0, 3, size=n),
            "episode": rng.random(n) < 0.3,
        }
    )
    whole = llc_roundrobin.walk_sums(
        llc_roundrobin.walked(ch.sort_values(["task", "ts"], kind="stable"))
    )
    spans = []
    for a, b in ((0, 90), (90, 91), (91, 250), (250, n)):  # (one span of a single change)
        part = ch.iloc[a:b]
        spans.append(
            walk_ends(llc_roundrobin.walked(part.sort_values(["task", "ts"], kind="stable")))
        )
    joined_ = joined_walks(spans)
    for col in ("back", "pair_runs", "dwell_sum", "dwell_n"):
        np.testing.assert_array_equal(joined_[col].to_numpy(), whole[col].to_numpy(), col)
    assert joined_["episodes"].sum() == ch["episode"].sum()


def test_the_typical_episode_is_the_nearest_the_middle() -> None:
    from schedwake.detect.kworker_pingpong import typical_of

    assert typical_of(np.array([False, False, False])) == 1
    assert typical_of(np.array([True, False, False, False, True])) == 0  # (the earlier)
    assert typical_of(np.array([False, False, False, True])) == 3
    assert typical_of(np.zeros(0, dtype=bool)) == 0
