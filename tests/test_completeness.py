"""What a trace does not show (docs/semantics.md, 'Incomplete traces'): complete traces
say so and keep their numbers; a missing switch makes a stretch unknown, never idle or
waiting; a wait ends where the trace proves the task ran; a waking pairs only with its
own sched_wakeup; a slice never invents what happened outside it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import schedwake
from schedwake.analysis import wait_causes
from schedwake.analysis.metrics import metric_bounds, trace_metrics
from schedwake.model import MODEL_EVENTS

from .conftest import SAMPLES, run_cli, sample, shared_model_trace

#: Recordings of kernels that trace every switch (the 6.1 and 6.12 guests): the
#: completeness model finds nothing to say of them. (The generated traces of
#: synthetic/ switch background tasks in without waking them: not complete.)
COMPLETE = sorted(
    [*SAMPLES.glob("kstack-6.1/*.dat"), *SAMPLES.glob("speed/g61*-smp4-*.dat")]
    + [SAMPLES / "guest8-dbench-xfs-2clients.dat"]
)
#: Recordings of this project's 6.18 VM, whose kernel does not trace CPU 1's idle task.
HOST = ["dbench-xfs-1client.dat", "fio-pinned-weighted.dat", "perf/perf-sched-g.perf.data"]


def _line(task: str, pid: int, cpu: int, t: float, event: str, fields: str) -> str:
    return f"{task:>16}-{pid:<5} [{cpu:03d}] {t:.6f}: {event + ':':<21} {fields}"


def _switch(cpu, t, prev, pname, state, nxt, nname) -> str:
    who = "<idle>" if prev == 0 else pname
    return _line(
        who, prev, cpu, t, "sched_switch",
        f"prev_comm={pname} prev_pid={prev} prev_prio=120 prev_state={state} ==> "
        f"next_comm={nname} next_pid={nxt} next_prio=120",
    )  # fmt: skip


def _wake(cpu, t, event, waker, wpid, comm, pid, target) -> str:
    who = "<idle>" if wpid == 0 else waker
    return _line(
        who, wpid, cpu, t, event, f"comm={comm} pid={pid} prio=120 target_cpu={target:03d}"
    )


def _write(tmp_path, lines: list[str]):
    path = tmp_path / "hand.report.txt"
    path.write_text("cpus=2\n" + "\n".join(lines) + "\n")
    return schedwake.load(path)


@pytest.fixture
def missing_idle_switch(tmp_path):
    """CPU 0: app (pid 100) sleeps at 10.0, is woken in idle at 10.1 and fires its own
    event at 10.3 with no swapper -> app switch between (missing), then sleeps at 10.5;
    CPU 1 runs other (pid 200) throughout, its chain whole."""
    return _write(
        tmp_path,
        [
            _switch(1, 9.9, 0, "swapper/1", "R", 200, "other"),
            _switch(0, 10.0, 100, "app", "S", 0, "swapper/0"),
            _wake(0, 10.1, "sched_waking", "", 0, "app", 100, 0),
            _wake(0, 10.1, "sched_wakeup", "", 0, "app", 100, 0),
            _wake(0, 10.3, "sched_waking", "app", 100, "other", 200, 1),
            _switch(0, 10.5, 100, "app", "S", 0, "swapper/0"),
            _switch(1, 10.6, 200, "other", "S", 0, "swapper/1"),
            _switch(0, 11.0, 0, "swapper/0", "R", 300, "late"),
        ],
    )


def test_a_missing_switch_is_unknown_never_idle(missing_idle_switch):
    t = missing_idle_switch
    comp = t.model.completeness
    assert not comp.complete
    counts = comp.counts
    assert counts.loc[0, "switch_chain"] == 1 and counts.loc[1].sum() == 0
    cpu0 = comp.timeline[(comp.timeline["cpu"] == 0).to_numpy()]
    s = 1_000_000_000
    rows = [
        (str(r.state), r.start_ts, r.end_ts, int(r.pid))
        for r in cpu0.itertuples(index=False)
        if r.start_ts < 11 * s
    ]
    assert rows == [
        ("idle", 10 * s, int(10.1 * s), 0),  # proven idle to the wake-up in idle
        ("unknown", int(10.1 * s), int(10.3 * s), -1),  # the missing switch is in here
        ("running", int(10.3 * s), int(10.5 * s), 100),  # app's own event on
        ("idle", int(10.5 * s), 11 * s, 0),
    ]
    # the occupancy has the same rows; the busy share of CPU 0 is only bounded
    occ = t.occupancy()
    some = (occ["cpu"] == 0).to_numpy() & (occ["end_ts"] > occ["start_ts"]).to_numpy()
    assert set(occ.loc[some, "state"].astype(str)) == {
        "running",
        "idle",
        "unknown",
    }
    bounds = metric_bounds(t)
    lo, hi = bounds["busy_share_cpu0"]
    assert hi - lo == pytest.approx(0.2 / 1.0, rel=1e-6)  # the 0.2 s unknown of 1.0 s
    # app's wake-up: it ran by 10.3 (its own event), at the earliest at 10.1
    w = t.wakeups()
    app = w[(w["wakee_pid"] == 100).to_numpy()].iloc[0]
    assert (int(app["run_ts"]), int(app["run_from_ts"])) == (int(10.3 * s), int(10.1 * s))
    b = wait_causes.parts(wait_causes.explain_wakeup(t, app))
    assert [p["part"] for p in b] == ["unknown"]  # (the wake path is 0: waking = wakeup)
    # no idle time and no waiting in the unknown stretch
    waiting = occ[(occ["state"] == "waiting").to_numpy() & (occ["pid"] == 100).to_numpy()]
    assert (waiting["end_ts"] <= int(10.1 * s)).all()


def test_a_waking_pairs_only_with_its_own_wakeup(tmp_path):
    """A waking whose sched_wakeup the trace lacks is not paired with the sched_wakeup
    of a later wake-up (whose waking is missing) when the wakee ran in between."""
    t = _write(
        tmp_path,
        [
            _switch(0, 1.0, 100, "app", "S", 0, "swapper/0"),
            _switch(1, 1.0, 0, "swapper/1", "R", 200, "other"),
            _wake(1, 2.0, "sched_waking", "other", 200, "app", 100, 0),  # no sched_wakeup
            _switch(0, 2.1, 0, "swapper/0", "R", 100, "app"),
            _switch(0, 2.2, 100, "app", "S", 0, "swapper/0"),
            _wake(0, 3.0, "sched_wakeup", "", 0, "app", 100, 0),  # a later wake-up's
            _switch(0, 3.1, 0, "swapper/0", "R", 100, "app"),
            _switch(1, 3.2, 200, "other", "S", 0, "swapper/1"),
        ],
    )
    w = t.wakeups()
    first = w[(w["ts"] == 2_000_000_000).to_numpy()].iloc[0]
    assert pd.isna(first["wakeup_ts"])  # (not the sched_wakeup at 3.0)
    assert int(first["run_ts"]) == 2_100_000_000 and int(first["latency_ns"]) == 100_000_000


@pytest.mark.parametrize("path", COMPLETE, ids=lambda p: p.name)
def test_complete_traces_report_no_breaks(path):
    t = shared_model_trace(path)
    comp = t.model.completeness
    assert comp.complete, comp.describe()
    assert not metric_bounds(t)
    assert not (t.occupancy()["state"] == "unknown").any()
    assert not any("does not show everything" in c for c in t.caveats)


@pytest.mark.slow
def test_a_complete_trace_keeps_its_numbers():
    """The bundled before/after trace (complete) gives the numbers it gave before the
    completeness model: the README's demo."""
    m = trace_metrics(shared_model_trace(SAMPLES / "kstack-6.1/k61-dbench-c2-kstack-off-i1.dat"))
    assert (m["wakeups"], m["migrations"], m["pingpong_episodes"]) == (22254, 2905, 2562)
    assert m["wake_to_run_p50_us"] == pytest.approx(40.435)
    assert m["wake_to_run_p99_us"] == pytest.approx(7928.8618)
    assert m["context_switches_per_s"] == pytest.approx(1743.093248)
    assert m["busy_share"] == {
        "0": 0.166734, "1": 0.218394, "2": 0.217947, "3": 0.204439,
        "4": 0.230674, "5": 0.130472, "6": 0.216438, "7": 0.133922,
    }  # fmt: skip


@pytest.mark.parametrize("name", HOST)
def test_host_recordings_say_what_they_lack(name):
    t = shared_model_trace(sample(name))
    comp = t.model.completeness
    counts = comp.counts
    # CPU 1 loses its idle -> task switches; CPU 0 almost none
    assert (
        counts.loc[1, "switch_chain"] > 10
        and counts.loc[1, "switch_chain"] > counts.loc[0, "switch_chain"]
    )
    cav = [c for c in t.caveats if "does not show everything" in c]
    assert len(cav) == 1 and "CPU 1:" in cav[0] and "switch-chain breaks" in cav[0]


#: The recordings with the kernel's counters beside them (item 6 of the issue: pipe,
#: messaging, a sleeper, fio, idle, pinned and not, trace.dat and perf.data).
REFEREE = sorted(SAMPLES.glob("referee/*.dat")) + sorted(SAMPLES.glob("referee/*.perf.data"))


@pytest.mark.parametrize(
    "path", [*COMPLETE[:3], *[sample(n) for n in HOST], *REFEREE], ids=lambda p: p.name
)
def test_no_wait_holds_an_event_of_its_own_task(path):
    """A wait to run ends where the trace proves the task ran: no event in the context of
    the waiting task lies inside any wake-to-run wait or any wait of the waits table
    (perf sched latency's), on a complete trace or not."""
    t = shared_model_trace(path)
    own_ts, own_pid = [], []
    for name in t.events:
        tb = t.table(name)
        if tb.num_rows and name != "sched_switch":
            own_ts.append(tb.column("ts").to_numpy())
            own_pid.append(tb.column("common_pid").to_numpy())
    ts, pid = np.concatenate(own_ts), np.concatenate(own_pid)
    order = np.lexsort((ts, pid))
    ts, pid = ts[order], pid[order]

    def inside(p, a, b) -> np.ndarray:
        """Per wait, whether an own event of ``p`` lies strictly between ``a`` and ``b``."""
        key_lo = np.searchsorted(pid, p, "left")
        key_hi = np.searchsorted(pid, p, "right")
        first = np.array(
            [lo + np.searchsorted(ts[lo:hi], x, "right") for lo, hi, x in zip(key_lo, key_hi, a)]
        )
        nxt = np.where(first < key_hi, ts[np.minimum(first, len(ts) - 1)], np.iinfo(np.int64).max)
        return nxt < b

    w = t.wakeups()
    w = w[w["latency_ns"].notna().to_numpy()]
    bad = inside(w["wakee_pid"].to_numpy(), w["ts"].to_numpy(), w["run_ts"].to_numpy(np.int64))
    assert not bad.any(), w[bad].head()
    q = t.model.waits
    bad = inside(q["pid"].to_numpy(), q["start_ts"].to_numpy(), q["end_ts"].to_numpy())
    assert not bad.any(), q[bad].head()


def test_info_says_what_is_missing_per_cpu():
    out = run_cli("info", sample("fio-pinned-weighted.dat"), check=True).stdout
    assert "completeness: INCOMPLETE" in out
    assert "CPU 1: " in out and "switch-chain breaks" in out
    doc = json.loads(
        run_cli("info", sample("fio-pinned-weighted.dat"), "--format", "json", check=True).stdout
    )
    comp = doc["completeness"]
    assert comp["complete"] is False
    assert (
        comp["cpus"]["1"]["switch_chain"]
        == comp["breaks"]["switch_chain"] - comp["cpus"]["0"]["switch_chain"]
    )
    assert 0 < comp["cpus"]["1"]["unknown_share"] < 0.2
    out = run_cli("info", SAMPLES / "kstack-6.1/k61-dbench-c2-kstack-on-i1.dat", check=True).stdout
    assert "completeness: complete" in out


def test_sched_stat_runtime_shows_runs_whose_switch_in_is_missing():
    """The kernel's run-time charges show where a task ran: with them the unknown time of
    a recording (schedwake record --runtime) shrinks, and no run begins before the
    earliest it can have."""
    path = SAMPLES / "referee" / "pipe.dat"
    with_rt = schedwake.load(path, events=list(MODEL_EVENTS))
    without = schedwake.load(path, events=[e for e in MODEL_EVENTS if e != "sched_stat_runtime"])
    u_with = sum(with_rt.model.completeness.unknown_ns().values())
    u_without = sum(without.model.completeness.unknown_ns().values())
    assert u_with < 0.8 * u_without
    runs = with_rt.model.completeness.runs
    assert (runs["earliest_ts"] <= runs["start_ts"]).all()
    assert (runs["start_ts"] <= runs["end_ts"]).all()


@pytest.mark.slow
def test_a_slice_never_invents_what_happened_outside_it():
    """--time 54.0,55.0 --cpu 2-3: dbench (pid 562) is preempted on CPU 2 at 54.630962;
    CPU 5, outside the slice, pulls it at 54.637413 and runs it. Its wait in the slice is
    6.451 ms, cut there, not 50 ms of 'CPU 3 idle' until it came back."""
    path = SAMPLES / "kstack-6.1/k61-dbench-c2-kstack-off-i3.dat"
    t = schedwake.load(path, events=list(MODEL_EVENTS))
    part = t.sliced(54_000_000_000, 55_000_000_000, [2, 3])
    w = part.model.waits
    dbench = w[(w["pid"] == 562).to_numpy() & (w["start_ts"] == 54_630_962_487).to_numpy()]
    (row,) = dbench.itertuples(index=False)
    assert (row.end_ts, row.delay_ns, bool(row.cut), row.cpu) == (
        54_637_413_069,
        6_450_582,
        True,
        2,
    )
    b = wait_causes.parts(wait_causes.explain_wait(part, dbench.iloc[0]))
    assert [(p["part"], p.get("cpu")) for p in b] == [("task", 2)]  # kworker/2:1, no idle
    p = wait_causes.longest_preempted(part)
    assert p["cut"] is True and p["wait_us"] == pytest.approx(6450.582)
    # occupancy: the slice's CPUs only, inside its window; a task's time elsewhere is not
    occ = part.occupancy()
    assert set(occ["cpu"].unique()) <= {2, 3}
    assert occ["start_ts"].min() >= 54_000_000_000 and occ["end_ts"].max() <= 55_000_000_000
    text = run_cli("analyze", path, "--time", "54.0,55.0", "--cpu", "2-3", check=True).stdout
    assert "left the slice from CPU 2 at 54.637413" in " ".join(text.split())
