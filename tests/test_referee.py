"""The referee (schedwake/referee.py): the referee samples' traces against the kernel's
counters beside them. Where the trace is complete (CPU 0 of most recordings here) the
checks agree; where it is not (CPU 1 loses its switches from idle) they are withheld or
disagree, never a silent wrong figure; per trace, busy CPU-seconds within 0.05 CPUs of
the kernel's count, or withheld."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import schedwake
from schedwake import referee

from .conftest import SAMPLES, run_cli

REFEREE = SAMPLES / "referee"
TRACES = sorted(REFEREE.glob("*.dat")) + sorted(REFEREE.glob("*.perf.data"))
#: CPU 0 records every switch of the stretch in these (tests/test_counters.py shows the
#: kernel's nr_switches; sample_traces/README.md, "referee/", the breaks)
COMPLETE_CPU0 = ["messaging.dat", "pipe-cpu1.dat"]


def has_completeness_api() -> bool:
    from schedwake.model import Model

    return hasattr(Model, "cpu_time")


needs_api = pytest.mark.skipif(
    not has_completeness_api(), reason="the model's completeness API (model.cpu_time)"
)


def chain_cpu_time(trace, t0: int, t1: int) -> pd.DataFrame:
    """A reference of ``model.cpu_time`` for CPUs whose switch chain is whole: busy and
    idle between consecutive switches, unknown before the first, chain breaks counted
    as missing switches (then the busy time here is not to be believed)."""
    sw = trace.table("sched_switch").select(["ts", "cpu", "prev_pid", "next_pid"]).to_pandas()
    rows = {}
    for cpu, s in sw.groupby("cpu"):
        s = s.sort_values("ts", kind="stable")
        ts, pv, nx = s.ts.to_numpy(), s.prev_pid.to_numpy(), s.next_pid.to_numpy()
        edges = np.clip(np.r_[ts, t1], t0, t1)
        d = np.diff(edges)
        busy = int(d[nx != 0].sum())
        idle = int(d[nx == 0].sum())
        first = int(np.clip(ts[0], t0, t1))
        inside = (ts >= t0) & (ts < t1)
        breaks = int((np.r_[False, pv[1:] != nx[:-1]] & inside).sum())
        rows[int(cpu)] = [t1 - t0, busy, idle, first - t0, int(inside.sum()), breaks]
    cols = ["span_ns", "busy_ns", "idle_ns", "unknown_ns", "switches", "missing_switches"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=cols).rename_axis("cpu")


def with_chain_model(path) -> referee.Referee:
    t = schedwake.load(path)
    r = referee.judge(t)
    assert r is not None and r.window is not None, r and r.problem
    w = r.window
    r.__dict__["_cpu_time"] = (chain_cpu_time(t, *w.inner), chain_cpu_time(t, *w.outer))
    return r


def by(checks, what, scope):
    found = [c for c in checks if c.what == what and c.scope == scope]
    assert len(found) == 1, (what, scope, [c.scope for c in checks if c.what == what])
    return found[0]


@pytest.mark.parametrize("name", COMPLETE_CPU0)
def test_a_complete_cpu_agrees_with_the_kernel(name):
    """CPU 0 shows every switch: its busy time (with the woken idle task's time) lies
    within the tolerance of the kernel's, its switch count is the run queue's."""
    r = with_chain_model(REFEREE / name)
    busy = by(r._busy(), "busy", "CPU 0")
    assert busy.verdict == "agree", referee.describe(busy)
    assert busy.kernel_source.startswith("/proc/timer_list")
    assert abs(busy.kernel[0] - busy.trace[0]) <= busy.tolerance
    switches = by(r._switches(), "switches", "CPU 0")
    assert switches.verdict == "agree", referee.describe(switches)
    assert switches.trace[0] == switches.trace[1]  # none missing: an exact count


def test_the_cpu_that_loses_its_switches_is_caught():
    """pipe.dat's CPU 1 records none of its switches from idle: the trace's switches
    there fall short of the run queue's count by thousands, and the breaks of its
    chain say as many are missing (the kernel confirms the least count); taken at face
    value (no bound from the chain breaks), the trace's count disagrees with the
    kernel's."""
    r = with_chain_model(REFEREE / "pipe.dat")
    inner, _ = r._cpu_time
    c = r.counters
    kernel = referee.kernel_switches(c, 1)
    recorded = int(inner.loc[1, "switches"])
    missing = int(inner.loc[1, "missing_switches"])
    assert kernel - recorded > 5000 and abs(kernel - recorded - missing) <= 20
    # the trace's least count (recorded + one per break: "or more") is the kernel's,
    # within the snapshots' switches: one switch is missing per break
    check = by(r._switches(), "switches", "CPU 1")
    assert check.verdict == "agree" and check.trace[1] is None
    naive = referee._check(
        "switches", "CPU 1", "switches", kernel, "", (recorded, recorded), 20, ""
    )
    assert naive.verdict == "disagree"


def test_counters_only_checks_agree_on_every_sample():
    for path in TRACES:
        r = referee.judge(schedwake.load(path, events=["print"]))  # (no model needed)
        assert r is not None and r.window is not None, path
        (check,) = r._ctxt_vs_nr()
        assert check.verdict == "agree", (path.name, referee.describe(check))


def test_perf_stat_window_is_the_marked_stretch():
    r = with_chain_model(REFEREE / "sleeper.dat")
    clocks = [c for c in r._perf_stat() if c.what == "perf_stat_cpu_clock"]
    assert [c.scope for c in clocks] == ["CPU 0", "CPU 1"]
    assert all(c.verdict == "agree" for c in clocks), [referee.describe(c) for c in clocks]


def copy_sample(name: str, to, perf_stat: bool = True):
    """``name`` of the referee samples with its counters as ``to/t.dat``; its counters
    file without the perf stat entry when ``perf_stat`` is False."""
    src = REFEREE / name
    (to / "t.dat").write_bytes(src.read_bytes())
    doc = json.loads(src.with_name(name + ".counters.json").read_text())
    if perf_stat:
        doc["perf_stat"]["file"] = "t.dat.perf-stat.txt"
    else:
        doc["perf_stat"] = None
    (to / "t.dat.counters.json").write_text(json.dumps(doc))
    (to / "t.dat.perf-stat.txt").write_bytes(src.with_name(name + ".perf-stat.txt").read_bytes())
    return to / "t.dat"


def test_a_perf_stat_of_an_unknown_stretch_is_not_compared(tmp_path):
    """A perf stat output beside a trace whose counters file does not say perf stat
    counted its stretch: one 'cannot tell' row saying why, no figures."""
    r = with_chain_model(copy_sample("idle.dat", tmp_path, perf_stat=False))
    (check,) = r._perf_stat()
    assert check.verdict == "cannot tell" and "not known" in check.note
    assert check.kernel is None and check.trace is None


def test_counters_of_another_recording_are_not_compared(tmp_path):
    """A counters file beside a trace that lacks its markers (another recording's):
    its snapshots, placed by the clock, fall outside the trace: no checks, and the
    caveat says why."""
    doc = json.loads((REFEREE / "idle.dat.counters.json").read_text())
    doc["perf_stat"] = None
    (tmp_path / "t.dat").write_bytes((SAMPLES / "idle-sleep.dat").read_bytes())
    (tmp_path / "t.dat.counters.json").write_text(json.dumps(doc))
    t = schedwake.load(tmp_path / "t.dat")
    r = referee.judge(t)
    assert r is not None and r.window is None and r.checks == []
    assert "not within the trace" in r.problem
    assert r.caveats() == [f"kernel counters beside the trace not compared: {r.problem}"]


@needs_api
@pytest.mark.slow
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_busy_cpu_seconds_within_a_twentieth_of_a_cpu_or_withheld(path):
    """Per trace, the busy CPU-seconds of all CPUs: within 0.05 CPUs of the kernel's
    count, or withheld (the trace does not show enough), never a silent disagreement;
    no switch count disagrees; analyze's caveats name every disagreement."""
    t = schedwake.load(path)
    r = referee.judge(t)
    assert r is not None and r.window is not None
    total = by(r.checks, "busy", "all CPUs")
    caveats = [x for x in schedwake.analyze(t).caveats if x.startswith("kernel counters")]
    assert total.verdict in ("agree", "withheld"), referee.describe(total)
    if total.verdict == "agree":
        off = max(total.trace[0] - total.kernel[0], total.kernel[0] - total.trace[1], 0)
        assert off / r.window.span_s <= 0.05, referee.describe(total)
    else:
        assert any("busy of all CPUs: the trace's figure is withheld" in x for x in caveats)
    for c in r.checks:
        if c.what in ("busy", "switches", "ctxt_vs_nr_switches", "perf_stat_context_switches"):
            assert c.verdict != "disagree", referee.describe(c)
    for c in r.checks:  # each disagreement is a caveat naming where, with both figures
        if c.verdict == "disagree" and not c.scope.startswith("pid "):
            assert f"kernel counters disagree: {referee.describe(c)}" in caveats


@needs_api
@pytest.mark.slow
def test_info_prints_the_agreement_table():
    proc = run_cli("info", REFEREE / "messaging.dat")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "kernel counters: messaging.dat.counters.json, messaging.dat.perf-stat.txt" in out
    for row in ("busy", "switches", "ctxt vs nr switches", "fair run time", "command cpu"):
        assert f"\n  {row} " in out, row
    proc = run_cli("info", REFEREE / "messaging.dat", "--format", "json")
    doc = json.loads(proc.stdout)["referee"]
    assert doc["window"]["how"] == "markers" and doc["checks"]
    assert sum(doc["verdicts"].values()) == len(doc["checks"])
