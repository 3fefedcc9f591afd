"""Detectors: exact recovery of planted episodes in synthetic traces, no findings on
healthy traces, agreement with the slow reference implementation on every real
sample, and evidence lines identical to `trace-cmd report -N`."""

from __future__ import annotations

import pytest

import schedwake
from schedwake import TraceError
from schedwake.detect import THRESHOLDS, detect, thresholds
from schedwake.detect.cswitch_storm import pair_table
from schedwake.detect.evidence import event_lines
from schedwake.detect.llc_roundrobin import task_table
from schedwake.model.masks import episodes_mask
from schedwake.synth import make_trace
from schedwake.topology import Topology

from . import reference_impl
from .conftest import SAMPLE_DATS, sample, shared_model_trace, shared_trace, trace_cmd_report

PLANTED = dict(
    pingpong=200, pingpong_busy=25, roundrobin=80, storm=600, idle_gaps=120, background=600
)


@pytest.fixture(scope="module")
def planted():
    return make_trace(**PLANTED, seed=3)


def by_name(findings):
    return {f.detector: f for f in findings}


def test_planted_counts_recovered_exactly(planted):
    trace, p = planted
    f = by_name(detect(trace))
    assert set(f) == {"kworker_pingpong", "llc_roundrobin", "cswitch_storm", "idle_while_runnable"}
    pp = f["kworker_pingpong"].metrics
    assert pp["episodes"] == p["pingpong"] == 225
    assert pp["would_stack"] == p["pingpong_stackable"] == 200
    assert pp["would_not_stack"]["other_tasks_runnable_on_waker_cpu"] == 25
    assert pp["share_of_wakeups"] == pytest.approx(225 / len(trace.wakeups()), abs=1e-6)
    rr = f["llc_roundrobin"].metrics
    assert rr["flagged_tasks"] == 1 and rr["tasks"][0]["comm"] == "rr-client"
    assert rr["tasks"][0]["cpu_changes"] == p["roundrobin_changes"] == 80
    assert {"pid", "comm", "cpus_visited", "migrations"} <= set(rr["tasks"][0])
    st = f["cswitch_storm"].metrics
    assert (st["kworker_preemptions"], st["futile_wakeups"]) == (600, 600)
    assert f["cswitch_storm"].top[0]["switches"] == p["storm_switches"]
    assert st["task"]["comm"] == "fio" and st["cpu"] == 1
    iwr = f["idle_while_runnable"].metrics
    assert iwr["idle_while_runnable_ns"] == p["idle_gap_ns"]
    for x in f.values():
        assert x.evidence and x.severity in ("high", "medium", "low")


@pytest.mark.parametrize("seed", [1, 2])
def test_healthy_busy_synthetic_has_no_findings(seed):
    trace, p = make_trace(background=2500, seed=seed)
    assert p.get("load_balance", 0) > 100  # busy, with migrations
    assert len(trace.wakeups()) > 1000
    assert detect(trace) == []


def test_two_llc_topology_classes(planted):
    trace, _ = planted
    w = trace.wakeups()
    ep = w[episodes_mask(w)]
    assert set(ep["migration_class"].astype(str)) <= {"same_core", "same_llc"}
    # the same trace under one assumed LLC still finds the same episodes
    trace.topology = Topology.single_llc(8)
    assert int(episodes_mask(trace.wakeups()).sum()) == 225
    assert any("assumed" in c for c in trace.caveats)
    trace.topology = Topology(
        cpus=8,
        llc=[[0, 1, 2, 3], [4, 5, 6, 7]],
        smt=[[0, 1], [2, 3], [4, 5], [6, 7]],
        source="synthetic",
    )


def test_threshold_overrides(planted):
    trace, _ = planted
    assert "kworker_pingpong" not in by_name(detect(trace, pingpong_min_episodes=1000))
    assert "kworker_pingpong" not in by_name(detect(trace, {"pingpong_min_eligible_share": 0.99}))
    with pytest.raises(TraceError, match="unknown threshold"):
        thresholds({"nope": 1})
    with pytest.raises(TraceError, match="did you mean pingpong_min_episodes"):
        thresholds({"pingpong_min_episode": 1})
    with pytest.raises(TraceError, match="not a number"):
        thresholds({"pingpong_min_episodes": "many"})
    for t in THRESHOLDS.values():
        assert t.doc and t.unit


# -- real samples -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded():
    return shared_model_trace


@pytest.mark.parametrize("path", SAMPLE_DATS, ids=lambda p: p.name)
@pytest.mark.slow
def test_reference_implementation_agrees(path, loaded):
    trace = loaded(path)
    # (the walk is made once per run, with test_reference_idle's walk of the sample)
    ref = reference_impl.sample_results(path, int(thresholds()["iwr_pinned_min_runs"]))["walk"]
    w = trace.wakeups()
    assert len(w) == ref["wakeups"]
    assert int(w["migrated"].sum()) == ref["wakeup_migrations"]
    assert int(episodes_mask(w).sum()) == ref["pingpong"]
    per, _ = task_table(trace.model, thresholds())
    got = {int(p): int(c) for p, c in zip(per["pid"], per["changes"]) if c}
    assert got == ref["changes"]
    assert storm_counts(trace) == ref["storm"]


def storm_counts(trace) -> dict:
    """Per (cpu, task pid) of the storm's pair table: switches, all kworker preemptions,
    storm kworker preemptions, futile wake-ups (the reference walk's layout)."""
    pt = pair_table(trace.model, thresholds())
    return {
        (int(r.cpu), int(r.pid)): [
            int(r.switches),
            int(r.all_kworker_preemptions),
            int(r.kworker_preemptions),
            int(r.futile_wakeups),
        ]
        for r in pt.itertuples()
    }


def test_idle_sleep_has_no_findings(loaded):
    assert detect(loaded(sample("idle-sleep.dat"))) == []


def test_dbench_has_kworker_wakeups_and_migrations(loaded):
    t = loaded(sample("dbench-xfs-2clients.dat"))
    w = t.wakeups()
    assert (
        int(((w["waker_class"] == "percpu_kthread") & (w["waker_context"] == "task")).sum()) > 1000
    )
    assert int(w["migrated"].sum()) > 0
    assert (t.migrations()["cause"] == "wakeup").sum() > 0


def test_fio_pinned_context_switch_storm(loaded):
    """The weighted cgroup's storm on the 2-CPU host (6.18): fio preempts its dio
    kworkers at 95% of their switch-outs, 10% of CPU 1's switches."""
    f = by_name(detect(loaded(sample("fio-pinned-weighted.dat"))))
    st = f["cswitch_storm"]
    assert st.severity == "high"
    assert st.metrics["task"]["comm"] == "fio" and st.metrics["cpu"] == 1
    assert st.metrics["kworker_preemptions"] > 1000 and st.metrics["futile_wakeups"] > 1000
    assert st.metrics["preempted_share"] > 0.9 and st.metrics["cpu_share"] > 0.1
    assert any("prev_state=R+ ==> next_comm=fio" in line for line in st.evidence)
    assert "kworker_pingpong" not in f and "llc_roundrobin" not in f


def test_root_cgroup_fio_is_no_storm_but_the_same_kind_of_preemption(loaded):
    """In the root cgroup fio preempts its kworkers too, some at 75% of their
    switch-outs, but those preemptions are 2% of the CPU's switches (a storm's are 10%
    and more, storm_min_cpu_share 5%): no storm."""
    root = loaded(sample("fio-pinned-root.dat"))
    assert "cswitch_storm" not in by_name(detect(root))
    w = root.wakeups()
    pid = int(w.loc[w["wakee_comm"].astype(str) == "fio", "wakee_pid"].mode()[0])
    fio = pair_table(root.model, thresholds()).set_index(["cpu", "pid"]).loc[(1, pid)]
    assert fio["all_kworker_preemptions"] > 3000
    assert 0.01 < fio["kworker_preemptions"] / fio["cpu_switches"] < 0.03


@pytest.mark.slow
def test_evidence_lines_equal_trace_cmd_report(loaded):
    path = sample("dbench-xfs-1client.dat")
    # (the report made once per run: test_model counts wake-ups in the same text)
    out = trace_cmd_report(path, "-N").splitlines()
    want = [line.rstrip() for line in out if " 219.9657" in line and ": print:" not in line]
    t = shared_trace(path)  # every event, as the report (read only)
    got = event_lines(t, 219_965_700_000 - 500, 219_965_799_999 + 500, limit=10_000)
    got = [line.rstrip() for line in got if " 219.9657" in line]
    assert len(want) > 10
    assert sorted(got) == sorted(want)


def test_every_threshold_is_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs/detectors.md").read_text()
    for name in THRESHOLDS:
        assert f"`{name}`" in doc


def test_window_metrics(planted):
    from schedwake.analysis.metrics import METRICS, trace_metrics, window_metrics

    trace, _ = planted
    df = window_metrics(trace, 0.1)
    assert len(df) >= 4 and {n.format(cpu=0) for n in METRICS} <= set(df.columns)
    assert "busy_share_cpu0" in df.columns
    assert int(df["pingpong_episodes"].sum()) == trace_metrics(trace)["pingpong_episodes"] == 225
    assert (df["end_ns"].to_numpy()[:-1] == df["start_ns"].to_numpy()[1:]).all()


@pytest.mark.parametrize("i", [1, 2, 3])
def test_pingpong_evidence_proves_the_wakee_could_have_stayed(i):
    """On 6.1 without the stacking clause the excerpt holds the proof, in order: the
    kworker starts its work item, wakes the task, the task is migrated away, and the
    kworker leaves its CPU right after; and the round-robin tour says it is the ping-pong's."""
    trace = schedwake.load(sample(f"kstack-6.1/k61-dbench-c2-kstack-off-i{i}.dat"))
    found = by_name(detect(trace))
    pp = found["kworker_pingpong"]
    evs = pp.evidence_events
    waker = pp.evidence_at["pids"][0]
    steps = [
        ("workqueue_execute_start", lambda e: e["pid"] == waker),
        ("sched_waking", lambda e: e["pid"] == waker),
        ("sched_migrate_task", lambda e: e["pid"] == waker),
        ("sched_switch", lambda e: e["fields"]["prev_pid"] == waker),
    ]
    at = 0
    for name, ok in steps:
        at = next(k for k in range(at, len(evs)) if evs[k]["event"] == name and ok(evs[k])) + 1
    switch_out = evs[at - 1]
    assert switch_out["fields"]["next_pid"] == 0  # to idle: the wakee could have stayed
    assert len(pp.evidence) == len(evs)

    rr = found["llc_roundrobin"]
    share = rr.metrics["pingpong_share_of_changes"]
    assert share > 0.9 and "kworker ping-pong episodes (see kworker_pingpong)" in rr.title
    # recounted from the wake-ups: the flagged tasks' in-LLC CPU changes that are episodes
    w = trace.model.wakeups
    pids = [t["pid"] for t in rr.top]
    mine = w[w["wakee_pid"].isin(pids) & w["migration_class"].isin(["same_llc", "same_core"])]
    mine = mine[~mine["waker_comm"].astype(str).str.match(r"migration/\d+$")]
    assert share == pytest.approx(episodes_mask(mine).mean(), abs=1e-4)


@pytest.mark.slow
def test_idle_while_runnable_names_both_sides_of_its_longest_gap():
    """The longest gap's two sides, checked on the raw events: the idle CPU's last
    switch before it went to idle, the waiting task's wake-up targeted the other CPU,
    whose running task is the one it waited behind, and it ran there later."""
    trace = schedwake.load(sample("dbench-xfs-4clients.dat"))
    iwr = by_name(detect(trace))["idle_while_runnable"]
    gap = iwr.metrics["longest_gap"]
    at = round(gap["at"] * 1e9)
    sw = trace.df("sched_switch")
    wk = trace.df("sched_wakeup")

    def last_switch(cpu):
        rows = sw[(sw["cpu"] == cpu) & (sw["ts"] <= at)]
        return rows.iloc[-1]

    for cpu in gap["idle_cpus"]:
        assert last_switch(cpu)["next_pid"] == 0
    for w in gap["waiting"]:
        assert last_switch(w["cpu"])["next_pid"] == w["behind_pid"] != w["pid"]
        woke = wk[(wk["pid"] == w["pid"]) & (wk["ts"] <= at)].iloc[-1]
        assert woke["target_cpu"] == w["cpu"]
        ran = sw[(sw["next_pid"] == w["pid"]) & (sw["ts"] > at)].iloc[0]
        assert ran["ts"] - at < w["waited_us"] * 1e3
    assert {w["pid"] for w in gap["waiting"]} <= set(iwr.evidence_at["pids"])
