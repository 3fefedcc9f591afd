"""Per-task time states (schedwake.model.task_states, docs/task-states.md) on real
traces: the states tile each task's observed time exactly, the running time agrees with
the switch-in/switch-out intervals of ``trace-cmd report`` text, and the run, sleep,
iowait, preempt and delay times agree with ``perf sched timehist --state -s`` wherever
the definitions match."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import schedwake
from schedwake.model import task_states as T

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"
PERF_SCHED = SAMPLES / "perf" / "perf-sched-g.perf.data"
PERF_DBENCH = SAMPLES / "perf" / "perf-dbench-z.perf.data"
DAT = SAMPLES / "dbench-xfs-1client.dat"


@pytest.fixture(scope="module")
def dat():
    # read only (a slice is a new trace): shared with the worker's other readers of it
    from .conftest import shared_trace

    return shared_trace(DAT)


@pytest.fixture(scope="module")
def perf_sched():
    return schedwake.load(PERF_SCHED)


def test_states_tile_each_task_exactly(dat):
    ev = dat.model.events
    iv = dat.model.task_states
    assert len(iv) > 100_000
    dur = iv["end_ts"].to_numpy() - iv["start_ts"].to_numpy()
    assert (dur > 0).all()
    # per task, the intervals follow each other without gap or overlap
    same = iv["pid"].to_numpy()[1:] == iv["pid"].to_numpy()[:-1]
    gaps = iv["start_ts"].to_numpy()[1:][same] - iv["end_ts"].to_numpy()[:-1][same]
    dead = np.isin(iv["pid"].to_numpy()[1:][same], _dying_pids(ev.switch))
    assert (gaps[~dead] == 0).all()  # (a task that died and was born again: a gap)
    tot = T.totals(iv)
    parts = ["running_s", "preempted_s", "woken_wait_s", "sleeping_s", "blocked_s", "unknown_s"]
    ns = iv.groupby("pid")[["start_ts", "end_ts"]].agg({"start_ts": "min", "end_ts": "max"})
    observed = (ns["end_ts"] - ns["start_ts"]) / 1e9
    alive = ~tot.index.isin(_dying_pids(ev.switch))
    # tasks that never die are observed from the trace's start to its end, exactly
    np.testing.assert_allclose(tot["observed_s"][alive], observed[alive], rtol=0, atol=1e-12)
    assert (ns["end_ts"][alive] == max(ev.last_ts, int(ev.switch["ts"].max()))).all()
    np.testing.assert_allclose(tot[parts].sum(axis=1), tot["observed_s"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        tot["runnable_s"], tot["preempted_s"] + tot["woken_wait_s"], rtol=0, atol=1e-12
    )
    # the dbench client: mostly running, blocked in D (iowait) for 0.85 s of 3.0 s (until
    # each wake-up, also where the switch-in that followed is missing: docs/semantics.md)
    client = tot.loc[5646]
    assert client["running_s"] == pytest.approx(1.980332, abs=1e-6)
    assert client["blocked_s"] == pytest.approx(0.848479, abs=1e-6)
    assert client["preempted_s"] == pytest.approx(0.095729, abs=1e-6)


def _dying_pids(switch):
    st = switch["prev_state_str"].astype(str)
    return np.unique(switch["prev_pid"].to_numpy()[st.str.contains("X|Z").to_numpy()])


def _report_switches(path: Path) -> pd.DataFrame:
    """(cpu, ts, prev_pid, next_pid) of every sched_switch line of
    ``trace-cmd report -N -t`` (nanosecond timestamps), in the text's order."""
    from .conftest import trace_cmd_report

    text = trace_cmd_report(path, "-N", "-t")
    # one search of the whole text, not one per line: ".*" stays in its line (as "\s+"
    # does between a line's fields), and a line holds at most one match (its greedy ".*"
    # runs to the line's last next_pid); the test counts the rows against the trace's
    rx = re.compile(
        r"\[(\d+)\]\s+(\d+)\.(\d{9}): sched_switch:.* prev_pid=(\d+) .* next_pid=(\d+) "
    )
    rows = [
        (int(cpu), int(sec) * 10**9 + int(ns), int(prev), int(nxt))
        for cpu, sec, ns, prev, nxt in rx.findall(text)
    ]
    return pd.DataFrame(rows, columns=["cpu", "ts", "prev_pid", "next_pid"])


@pytest.mark.slow
def test_running_is_switch_in_to_switch_out_in_report_text(dat):
    """Per task, the running time ended by a switch-out is the sum of its intervals from
    a switch-in to the switch-out that follows it on that CPU in ``trace-cmd report``
    text; a switch-out whose switch-in the text lacks (trace-cmd filters out its own
    threads' events, so the switch that put a task on the CPU after trace-cmd ran is
    missing) is not running time but unknown."""
    sw = _report_switches(DAT)
    assert len(sw) == len(dat.model.events.switch)
    sw = sw.sort_values(["cpu", "ts"], kind="stable")
    pred_next = sw.groupby("cpu")["next_pid"].shift()
    pred_ts = sw.groupby("cpu")["ts"].shift()
    pair = (pred_next == sw["prev_pid"]) & (sw["prev_pid"] != 0)
    expect = ((sw["ts"] - pred_ts)[pair]).groupby(sw["prev_pid"][pair]).sum()
    unseen = ~pair & (sw["prev_pid"] != 0)
    assert unseen.sum() > 1000  # (the trace-cmd gaps: the test covers them)
    iv = dat.model.task_states
    last_out = sw.groupby("prev_pid")["ts"].max()
    running = iv[(iv["state"] == "running").to_numpy()]
    switched_in = pd.MultiIndex.from_arrays(
        [running["pid"].to_numpy(), running["start_ts"].to_numpy()]
    ).isin(pd.MultiIndex.from_arrays([sw["next_pid"].to_numpy(), sw["ts"].to_numpy()]))
    closed = running[
        switched_in & (running["start_ts"].to_numpy() < running["pid"].map(last_out).to_numpy())
    ]
    got = (closed["end_ts"] - closed["start_ts"]).groupby(closed["pid"]).sum()
    # the rest: from the first event a task fired as the current task after a switch-in
    # the text lacks, each ended by a switch-out whose CPU's previous switch was another's
    inferred = running[~switched_in]
    # (but tasks the text never shows switched out: a migration splits their runs)
    inferred = inferred[inferred["pid"].isin(last_out.index).to_numpy()]
    ends = pd.MultiIndex.from_arrays([inferred["pid"].to_numpy(), inferred["end_ts"].to_numpy()])
    unseen_outs = pd.MultiIndex.from_arrays(
        [sw["prev_pid"][unseen].to_numpy(), sw["ts"][unseen].to_numpy()]
    )
    assert ends.isin(unseen_outs).all()
    assert len(inferred) == 17661
    both = pd.concat([expect.rename("report"), got.rename("ours")], axis=1).fillna(0)
    assert len(both) == 41
    assert (both["report"] == both["ours"]).all(), both[both["report"] != both["ours"]]
    assert both["report"].sum() > 2.4e9  # ns: 2.45 s of running compared


_PERF_ROW = re.compile(
    r"^\s*(.*)\[(-?\d+)(?:/(-?\d+))?\]\s+(-?\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)"
    r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$"
)
_PERF_COLS = ["run", "sleep", "iowait", "preempt", "delay"]


def _perf_summary(path: Path) -> pd.DataFrame:
    """The per-task rows of ``perf sched timehist --state -s``: ms by tid."""
    exe = shutil.which("perf")
    if exe is None:
        pytest.skip("perf not installed")
    text = subprocess.run(
        [exe, "sched", "timehist", "--state", "-s", "-i", str(path)],
        capture_output=True,
        text=True,
    ).stdout
    rows = {
        int(m[2]): [float(m[k]) for k in range(6, 11)]
        for m in map(_PERF_ROW.match, text.splitlines())
        if m
    }
    if not rows:
        pytest.skip("perf sched timehist printed no summary")
    return pd.DataFrame.from_dict(rows, orient="index", columns=_PERF_COLS)


def _as_perf(trace) -> pd.DataFrame:
    """Our intervals summed (ns) as perf sched timehist sums them (docs/task-states.md): perf
    accounts a task's run and the time off the CPU before it at its switch-out, so only
    time before the task's last switch-out counts; the off-CPU time is sleep, iowait or
    preempt by the state of the switch-out that began it (perf 6.1 compares the kernel's
    number with TASK_RUNNING: R+ -- TASK_REPORT_MAX since 4.14 -- is sleep, only R is
    preempt; only D exactly is iowait), the wake-to-run wait included; delay is the wait
    from the waking to the switch-in."""
    sw = trace.model.events.switch
    iv = trace.model.task_states
    last_out = pd.Series(sw["ts"].to_numpy()).groupby(sw["prev_pid"].to_numpy()).max()
    iv = iv[iv["start_ts"].to_numpy() < iv["pid"].map(last_out).fillna(-1).to_numpy()]
    ns = (iv["end_ts"] - iv["start_ts"]).to_numpy()
    state = iv["state"].astype(str).to_numpy()
    letters = iv["switch_state"].astype(str).to_numpy()
    off = iv["switch_state"].notna().to_numpy() & np.isin(
        state, ["preempted", "woken_wait", "sleeping", "blocked"]
    )
    # a task woken while going to sleep waits from its switch-out; perf counts no delay
    # (it forgets the waking at the switch-out)
    outs = pd.MultiIndex.from_arrays([sw["prev_pid"].to_numpy(), sw["ts"].to_numpy()])
    at_out = pd.MultiIndex.from_arrays([iv["pid"].to_numpy(), iv["start_ts"].to_numpy()]).isin(outs)
    cols = {
        "run": np.where(state == "running", ns, 0),
        "sleep": np.where(off & (letters != "R") & (letters != "D"), ns, 0),
        "iowait": np.where(off & (letters == "D"), ns, 0),
        "preempt": np.where(off & (letters == "R"), ns, 0),
        "delay": np.where((state == "woken_wait") & ~at_out, ns, 0),
    }
    return pd.DataFrame(cols).groupby(iv["pid"].to_numpy()).sum()


def _perf_comparable(trace) -> np.ndarray:
    """The tasks whose every switch is one perf and schedwake account alike: not a
    switch-out whose switch-in the trace lacks (perf charges it the time since the CPU's
    previous switch as run time; schedwake: unknown), nor one that is its CPU's first
    switch (perf accounts nothing there), nor the exit of a thread (X/Z: perf 6.1 gives
    that last run to a thread it calls -1)."""
    sw = trace.model.events.switch.sort_values(["cpu", "ts"], kind="stable")
    pred_next = sw.groupby("cpu")["next_pid"].shift()
    odd = (pred_next != sw["prev_pid"]).to_numpy().copy()
    odd |= (sw["prev_state_str"].astype(str) == "X").to_numpy()
    bad = np.unique(sw["prev_pid"].to_numpy()[odd])
    pids = np.unique(np.concatenate([sw["prev_pid"].to_numpy(), sw["next_pid"].to_numpy()]))
    return pids[~np.isin(pids, bad) & (pids != 0)]


@pytest.mark.parametrize(
    "path, compared",
    [(PERF_SCHED, 91), (PERF_DBENCH, 8)],
    ids=["perf-sched-g", "perf-dbench-z"],
)
def test_agrees_with_perf_sched_timehist(path, compared):
    perf = _perf_summary(path)
    trace = schedwake.load(path)
    ours = _as_perf(trace)
    pids = np.intersect1d(_perf_comparable(trace), perf.index)
    assert len(pids) == compared
    # perf prints ms with 3 decimals, cut (not rounded) to the us: the same us, every
    # task, every column
    us = ours.reindex(pids).fillna(0).astype(np.int64) // 1000
    theirs = (perf.loc[pids] * 1000).round().astype(np.int64)
    assert (us == theirs).all().all(), (us - theirs)[(us != theirs).any(axis=1)]
    assert perf.loc[pids, "run"].sum() > 10  # ms compared


@pytest.mark.slow
def test_runnable_share_is_a_metric_compare_and_gate_see():
    """More dbench clients on the same CPUs: the user tasks' runnable share grows from
    8.8% to 45.4%; compare shows the row, worse, and a gate rule on it breaks. (Of the
    threads of pid 1, which this VM's kernel never shows switched out, no running time
    is counted: docs/semantics.md, 'Incomplete traces'.)"""
    from schedwake.analysis.metrics import trace_metrics
    from schedwake.gate import parse_rules

    from .conftest import run_cli, shared_model_trace

    one, four = DAT, SAMPLES / "dbench-xfs-4clients.dat"
    # the traces as gate reads them (the model's events), read once for the metrics and
    # the gate, and shared with the other tests of the worker that read them
    base = trace_metrics(shared_model_trace(one))
    cand = trace_metrics(shared_model_trace(four))
    assert base["runnable_share_user"] == pytest.approx(0.087891, abs=1e-6)
    assert cand["runnable_share_user"] == pytest.approx(0.453486, abs=1e-6)
    proc = run_cli("compare", one, four, "--metric", "runnable_share_user", check=True)
    row = next(x for x in proc.stdout.splitlines() if x.startswith("runnable_share_user[%]"))
    assert row.split()[1:4] and float(row.split()[1]) < float(row.split()[2])
    assert "-" in row.split()[3]  # (a negative gain: worse)
    result = schedwake.gate(
        [one],
        [four],
        # (one run a side: only windows can be judged, when asked for)
        rules=parse_rules(
            '[gate]\nsamples = "per-window"\n[rules.runnable_share_user]\nallowed = "10%"\n'
        ),
        loader=shared_model_trace,
    )
    (verdict,) = [r for r in result.results if r.rule.metric == "runnable_share_user"]
    assert verdict.status == "broken" and verdict.gain_pct < -100
    assert result.exit_code == 1


def test_analyze_pid_json_and_text():
    """``analyze --pid``: JSON ``task_states`` of that task, its states adding up to its
    observed time (to the ns) on the whole and per CPU; the text has its row."""
    import json

    from .conftest import run_cli

    proc = run_cli("analyze", PERF_SCHED, "--pid", "23815", "--format", "json", check=True)
    ts = json.loads(proc.stdout)["task_states"]
    (task,) = ts["tasks"]
    assert (task["pid"], task["comm"], task["class"]) == (23815, "sched-messaging", "user")
    parts = ["running_s", "preempted_s", "woken_wait_s", "sleeping_s", "blocked_s", "unknown_s"]
    assert sum(task[k] for k in parts) == pytest.approx(task["observed_s"], abs=2e-9)
    assert task["runnable_s"] == pytest.approx(task["preempted_s"] + task["woken_wait_s"], abs=2e-9)
    for k in parts + ["observed_s"]:
        assert sum(c[k] for c in task["cpus"]) == pytest.approx(task[k], abs=1e-8), k
    # sched-messaging's parent: 58.5 ms running (6.4 ms of it shown by sched_stat_runtime
    # where its switch-in is missing), 99.1 ms preempted (80 tasks, 2 CPUs)
    assert task["running_s"] == pytest.approx(0.058491, abs=1e-6)
    assert task["preempted_s"] == pytest.approx(0.099141, abs=1e-6)
    text = run_cli("analyze", PERF_SCHED, "--pid", "23815", check=True).stdout
    block = text[text.index("-- Task states") : text.index("-- Metrics")]
    assert "sched-messaging (23815)" in block


def test_time_slice_keeps_the_states_the_events_before_it_gave(dat):
    """``analyze --time``: the task states of a slice are the whole trace's cut to it
    (a task asleep since before the slice is sleeping, not unknown, from its start)."""
    lo, hi = 220_500_000_000, 221_500_000_000
    part = dat.sliced(lo, hi)
    got = T.totals(part.model.task_states)
    want = T.totals(dat.model.task_states, start_ns=lo, end_ns=hi)
    pd.testing.assert_frame_equal(got, want)
    alive = got.index.isin(_dying_pids(dat.model.events.switch)) == False  # noqa: E712
    assert (got["observed_s"][alive] == 1.0).all()
    # the slice's own events only (built as the model builds a whole trace's)
    from schedwake.model import completeness

    comp = completeness.build(part, part.model.events)
    rewoken = comp.breaks.loc[(comp.breaks["kind"] == "rewoken").to_numpy(), "pid"].unique()
    own = T.totals(T.build(part.model.events, comp.runs, None if comp.complete else rewoken))
    # what the slice lacks: of the tasks whose state at its start the events before it
    # give, none is known better from the slice alone, and 1 s of theirs is known only so
    cut = part.model.task_states
    first = cut.groupby("pid")["state"].first().astype(str)
    known = first.index[(first != "unknown").to_numpy()]
    diff = own["unknown_s"].reindex(known, fill_value=0) - got["unknown_s"].reindex(known)
    assert (diff >= -1e-9).all(), diff[diff < -1e-9]
    assert diff.sum() > 1.0
    assert got.loc[5646, "blocked_s"] == pytest.approx(0.290, abs=1e-3)


def test_state_letters():
    """How each prev_state a kernel prints is classed (docs/task-states.md)."""
    names = {T._PRE: "preempted", T._SLEEP: "sleeping", T._BLOCK: "blocked"}
    names.update({T._DEAD: "dead", T._UNK: "unknown"})
    letters = ["R", "R+", "S", "I", "T", "t", "P", "D|N", "D", "D|K", "D|W", "X", "Z", "x", "", "?"]
    got = {x: names[T.state_code(x)] for x in letters}
    assert got == {
        "R": "preempted", "R+": "preempted", "S": "sleeping", "I": "sleeping",
        "T": "sleeping", "t": "sleeping", "P": "sleeping", "D|N": "sleeping",
        "D": "blocked", "D|K": "blocked", "D|W": "blocked", "X": "dead", "Z": "dead",
        "x": "dead", "": "unknown", "?": "unknown",
    }  # fmt: skip
    assert [T.task_class(c) for c in ("dbench", "kworker/1:1H", "kworker/u8:2", "ksoftirqd/0")] == [
        "user", "kworker", "kworker", "kthread"
    ]  # fmt: skip


def _sums_by_hand() -> T.StateSums:
    """State sums (ns) of four tasks by hand: one on CPU -1 (not known) and 2, one with
    no per-CPU rows, one whose seconds are not whole ns in binary (round() needed),
    ties in running time."""
    cols = list(T.STATES)
    idx = pd.MultiIndex.from_arrays(
        [np.array([3, 3, 7, 12], np.int64), np.array([-1, 2, 0, 1], np.int32)],
        names=["task", "cpu"],
    )
    per_cpu_task = pd.DataFrame(
        [[5, 0, 1, 0, 0, 2], [1_000_000_001, 3, 0, 7, 0, 0], [6, 0, 0, 0, 9, 0],
         [123_456_789_123, 1, 1, 1, 1, 1]],
        index=idx, columns=cols,
    )  # fmt: skip
    per_task = T._level_sums(per_cpu_task, 0)
    extra = pd.DataFrame([[6, 1, 1, 0, 0, 0]], index=pd.Index([9], name="task"), columns=cols)
    per_task = pd.concat([per_task, extra]).sort_index()
    return T.StateSums(per_task, per_cpu_task, T._level_sums(per_cpu_task, 1))


def test_task_rows_are_the_summary_as_dicts_and_its_json_the_same_bytes():
    """The summary's tasks (:class:`T.TaskRows`) read as the dicts they stand for, in
    order (most running first, ties in task order), each with its CPUs' rows; and the
    indented JSON written from their columns is the bytes of the dicts' JSON, at any
    level, with names that need escapes, a class or a CPU that is null."""
    import json

    from schedwake.jsonout import dumps, jsonable

    names = {3: 'a "quoted"\nname', 7: "kworker/0:1", 9: "caf\u00e9", 12: "swapper/1"}
    s = T.summary_of(_sums_by_hand(), names)
    rows = list(s["tasks"])
    assert [r["pid"] for r in rows] == [12, 3, 7, 9]  # (7 and 9: 6 ns each, in task order)
    assert rows[1]["cpus"][0]["cpu"] is None and rows[1]["cpus"][1]["cpu"] == 2
    assert rows[3]["cpus"] == [] and rows[2]["class"] == "kworker" and rows[0]["class"] is None
    assert rows[1]["running_s"] == 1.000000006 and rows[0]["running_s"] == 123.456789123
    assert s["tasks"] == rows and len(s["tasks"]) == 4 and s["tasks"][1] == rows[1]
    plain = dict(s, tasks=rows)
    for doc in ({"task_states": s}, s, {"a": [{"b": s}]}):
        want = json.dumps(jsonable(doc if doc is not s else plain), indent=2, allow_nan=False)
        assert dumps(doc) == want
        assert dumps(doc, indent=3) == json.dumps(jsonable(doc), indent=3)
    assert dumps(T.summary_of(T.StateSums(*([pd.DataFrame(columns=list(T.STATES),
                                                           dtype=np.int64)] * 3)), {})) == (
        json.dumps({"tasks": [], "classes": [], "cpus": []}, indent=2))  # fmt: skip


def test_state_sums_per_task_and_per_cpu_are_those_of_the_intervals(dat):
    """:class:`T.StateSums` sums the (task, CPU) groups once and the tasks' and CPUs'
    sums from them: the same frames as the intervals' sums by each key."""
    iv = dat.model.task_states
    sums = T.StateSums.of(iv)
    pd.testing.assert_frame_equal(sums.per_task, T.totals_ns(iv, ("task",)), check_exact=True)
    pd.testing.assert_frame_equal(sums.per_cpu, T.totals_ns(iv, ("cpu",)), check_exact=True)


def test_state_sums_without_the_intervals_are_those_of_the_intervals(dat):
    """``Model.task_state_sums`` (the scan's own sums, no intervals made) and its
    :meth:`T.StateSums.of_pids`: the frames ``StateSums.of`` gives of the intervals, of
    every task and of some of them; on a fresh model of the trace, and on one whose
    intervals are made already (then summed from them)."""
    fresh = schedwake.load(DAT).model
    got = fresh.task_state_sums
    assert "task_states" not in fresh.__dict__  # (not made)
    iv = dat.model.task_states
    pids = sorted(set(iv["pid"].tolist()))
    for sums in (got, dat.model.task_state_sums):
        for some in (None, pids[::3], [pids[0]], [-5]):
            want = T.StateSums.of(iv if some is None else iv[iv["pid"].isin(some)])
            have = sums.of_pids(some)
            for a, b in ((have.per_task, want.per_task), (have.per_cpu, want.per_cpu),
                         (have.per_cpu_task, want.per_cpu_task)):  # fmt: skip
                if b is None:
                    assert a is None
                else:
                    pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_fired_between_is_the_last_own_event_after_the_window_start(dat):
    """:func:`T._fired_between` (each event table's rows in the windows by binary
    search): whether the task's last event of its own at or before the window's end (an
    as-of search among every event of every task) comes after the window's start."""
    from schedwake.model._util import asof_index, i64

    ev = dat.model.events
    tables = [f for f in (ev.waking, ev.wakeup, ev.wakeup_new, ev.migrate, ev.fork, ev.exec_,
                          ev.wq_start, ev.wq_end) if f is not None and len(f)]  # fmt: skip
    own_ts = np.concatenate([i64(f, "ts") for f in tables])
    own_key = ev.key(np.concatenate([i64(f, "common_pid") for f in tables]), own_ts)
    rng = np.random.default_rng(3)
    pick = rng.integers(0, len(own_ts), 4000)
    key = np.concatenate([own_key[pick], rng.choice(own_key, 1000)])
    hi = np.concatenate([own_ts[pick] + rng.integers(-1, 2, 4000), rng.choice(own_ts, 1000)])
    lo = hi - rng.integers(0, 200_000, len(hi))
    last = asof_index(hi, key, own_ts, own_key, "backward", True)
    want = np.where(last >= 0, own_ts[last], -1) > lo
    got = T._fired_between(ev, key, lo, hi)
    assert 0 < want.sum() < len(want)
    assert got.tolist() == want.tolist()


def test_classes_are_task_class_of_each_task():
    """:func:`T._classes` (a class per distinct name, then looked up): what
    :func:`T.task_class` gives each (name, pid), the idle task's pid 0 included."""
    comms = ["kworker/0:1", "bash", "swapper/0", "kworker/u8:2", "bash", "ksoftirqd/1", ""]
    pids = [5, 6, 0, 7, 0, 9, 3]
    assert T._classes(comms, pids) == list(map(T.task_class, comms, pids))
    assert T._classes(comms, pids)[:3] == ["kworker", "user", None]


def test_most_running_first_is_the_stable_descending_sort():
    rng = np.random.default_rng(4)
    for n in (0, 1, 7, 300):
        v = rng.integers(0, 5, n) / 4
        want = pd.Series(v).sort_values(ascending=False, kind="stable").index.tolist()
        assert T._most_running_first(v) == want


def test_last_rows_is_the_last_row_of_each_key():
    """:func:`T.last_rows` against ``np.unique`` of the keys read backwards: by its
    table over a narrow range of keys, and by its sort over a wide one."""
    rng = np.random.default_rng(2)
    for n, hi in ((0, 1), (1, 5), (100, 7), (1000, 10**9), (50000, 30000)):
        k = rng.integers(-3, hi, n).astype(np.int32 if hi < 10**6 else np.int64)
        u, last = T.last_rows(k)
        ru, rl = np.unique(k[::-1], return_index=True)
        assert u.tolist() == ru.tolist() and u.dtype == k.dtype
        assert last.tolist() == (len(k) - 1 - rl).tolist()
