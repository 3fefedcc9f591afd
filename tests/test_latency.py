"""``schedwake latency`` (schedwake.analysis.latency): the per-task tables of ``perf sched
latency`` and ``perf sched timehist -s``.

A trace fed by hand, event by event, pins both readings with every number derived here
from the events (schedwake's: waits from the waking and after R and R+; perf's: from
sched_wakeup, after plain R, a wait of 0 at a task's first switch-in); real perf.data
recordings pin ``--perf-compat`` line for line against ``perf sched latency``'s own
output, by name and by pid.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from schedwake.analysis import latency as L
from schedwake.errors import OptionError
from schedwake.synth import US, Synth, default_topology

from .conftest import run_cli, sample

PERF_FILES = [
    "perf/perf-sched-g.perf.data",
    "perf/perf-dbench-z.perf.data",
    "perf/perf-threads.perf.data",
]


def _hand_trace():
    """Task A on CPU 0, B beside it, W waking them from CPU 1 (times from ``t``, in us):

    ====  ==========================================================================
    0     A switched in (its first event)
    100   A preempted (R+) by B (B's first event)
    150   B sleeps (S), A in again
    200   A sleeps (S), CPU 0 idle
    250   W switched in on CPU 1 (its first event), runs to 600
    300   W: sched_waking A;  305: sched_wakeup A
    320   A switched in on CPU 0
    390   W: sched_waking B;  392: sched_wakeup B
    400   A preempted (R) by B
    430   B sleeps (S), A in again
    500   A sleeps (S), CPU 0 idle
    600   W sleeps (S)
    ====  ==========================================================================
    """
    s = Synth(default_topology())
    s.settle()
    a, b, w = s.task("a"), s.task("b"), s.task("w")
    t = s.t
    s.switch(t, 0, 0, "R", a)
    s.switch(t + 100 * US, 0, a, "R+", b)
    s.switch(t + 150 * US, 0, b, "S", a)
    s.switch(t + 200 * US, 0, a, "S", 0)
    s.switch(t + 250 * US, 1, 0, "R", w)
    s.waking(t + 300 * US, 1, w, a, 0)
    s.wakeup(t + 305 * US, 1, w, a, 0)
    s.switch(t + 320 * US, 0, 0, "R", a)
    s.waking(t + 390 * US, 1, w, b, 0)
    s.wakeup(t + 392 * US, 1, w, b, 0)
    s.switch(t + 400 * US, 0, a, "R", b)
    s.switch(t + 430 * US, 0, b, "S", a)
    s.switch(t + 500 * US, 0, a, "S", 0)
    s.switch(t + 600 * US, 1, w, "S", 0)
    s.t = t + 700 * US
    return s.build("hand"), (a, b, w, t)


def _row(table, pid):
    rows = table[table["pid"] == pid]
    assert len(rows) == 1, table
    return rows.iloc[0]


def test_schedwake_reading_by_hand():
    trace, (a, b, w, t) = _hand_trace()
    table = L.latency(trace)
    ra = _row(table, a)
    # waits: 100 -> 150 (preempted R+), 300 -> 320 (woken: from the waking), 400 -> 430 (R)
    waits = [50 * US, 20 * US, 30 * US]
    assert ra["waits"] == 3 and ra["total_delay_ns"] == sum(waits)
    assert ra["avg_delay_ns"] == sum(waits) // 3
    assert (ra["max_delay_ns"], ra["max_start_ts"], ra["max_end_ts"]) == (
        50 * US, t + 100 * US, t + 150 * US,
    )  # fmt: skip
    # switch-ins at 0, 150, 320, 430; running 0-100, 150-200, 320-400, 430-500
    assert ra["switches"] == 4
    assert ra["runtime_ns"] == (100 + 50 + 80 + 70) * US
    rb = _row(table, b)  # woken at 390 (waking), in at 400
    assert (rb["waits"], rb["max_delay_ns"], rb["switches"]) == (1, 10 * US, 2)
    rw = _row(table, w)  # never waited: its first switch-in is not a wait
    assert (rw["waits"], rw["avg_delay_ns"], rw["switches"]) == (0, 0, 1)
    assert 0 not in table["pid"].to_list()
    # largest average first (perf's default order)
    assert table["avg_delay_ns"].is_monotonic_decreasing


def test_perf_reading_by_hand():
    """perf <= 6.1: a's R+ is not R (no wait after it); its woken wait runs from the
    sched_wakeup (305), not the waking; its first switch-in is a wait of 0."""
    trace, (a, b, w, t) = _hand_trace()
    table = L.latency(trace, reading="perf", by="pid")
    ra = _row(table, a)
    assert (ra["switches"], ra["total_delay_ns"]) == (3, (0 + 15 + 30) * US)
    assert ra["avg_delay_ns"] == 15 * US
    assert (ra["max_delay_ns"], ra["max_start_ts"], ra["max_end_ts"]) == (
        30 * US, t + 400 * US, t + 430 * US,
    )  # fmt: skip
    assert ra["runtime_ns"] == 0  # no sched_stat_runtime in the trace
    rb = _row(table, b)  # first seen at 100 (0), woken at 392, in at 400 (8)
    assert (rb["switches"], rb["total_delay_ns"], rb["max_delay_ns"]) == (2, 8 * US, 8 * US)
    rw = _row(table, w)  # one wait of 0: perf prints its start and end as 0
    assert (rw["switches"], rw["max_delay_ns"], rw["max_start_ts"], rw["max_end_ts"]) == (
        1, 0, 0, 0,
    )  # fmt: skip
    notes = L.notes(trace, "perf")
    assert any("sched_stat_runtime" in n for n in notes)


def test_by_comm_adds_up_tasks_of_one_name():
    trace, (a, b, w, t) = _hand_trace()
    by_pid = L.latency(trace, by="pid")
    by_comm = L.latency(trace, by="comm")
    assert sorted(by_comm["comm"]) == sorted(by_pid["comm"])  # one task per name here
    both = L.latency(trace, by="pid", comms=["a", "b"])
    assert sorted(both["pid"]) == sorted([a, b])
    assert L.latency(trace, pids=[b])["pid"].to_list() == [b]


def test_timehist_summary_by_hand():
    """a's runs the trace shows whole (switch-in to switch-out, the task's state before
    known): 150-200, 320-400, 430-500 (its first run, from its first event, is not)."""
    trace, (a, b, w, t) = _hand_trace()
    th = L.timehist_summary(trace)
    ra = _row(th, a)
    runs = np.array([50, 80, 70]) * US
    assert ra["sched_in"] == 4
    assert (ra["run_ns"], ra["min_run_ns"], ra["max_run_ns"]) == (runs.sum(), 50 * US, 80 * US)
    assert ra["avg_run_ns"] == round(runs.mean())
    # perf's stddev: the standard error of the mean, in percent of the mean
    rel = 100 * runs.std(ddof=1) / np.sqrt(3) / runs.mean()
    assert ra["stddev_pct"] == pytest.approx(rel, abs=0.006)
    assert ra["migrations"] == 0 and ra["parent_pid"] == -1


def test_sort_keys_are_checked():
    assert L.parse_sort("max, avg") == ("max", "avg")
    with pytest.raises(OptionError, match="--sort"):
        L.parse_sort("max,foo")
    trace, _ = _hand_trace()
    by_max = L.latency(trace, sort="max")
    assert by_max["max_delay_ns"].is_monotonic_decreasing


def _perf_rows(path, by_pid: bool) -> list[str]:
    out = subprocess.run(
        ["perf", "sched", "latency", *(["-p"] if by_pid else []), "-i", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return [line for line in out.splitlines() if re.match(r"^  \S.*\|", line)]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
@pytest.mark.parametrize("by", ["comm", "pid"])
@pytest.mark.parametrize("name", PERF_FILES)
def test_perf_compat_lines_are_perfs(name, by):
    """``--perf-compat`` prints perf sched latency's table: every task line and the
    TOTAL line the same characters, in the same order (perf 6.1 here, the version whose
    reading --perf-compat reproduces)."""
    from .test_waits import _perf_version

    if _perf_version() > (6, 1):  # (a later perf reads sched_waking and R+: not 6.1's reading)
        pytest.skip(f"perf {_perf_version()} is not the perf 6.1 whose reading --perf-compat is")
    path = sample(name)
    perf = _perf_rows(path, by == "pid")
    assert len(perf) > 10
    proc = run_cli("latency", "--perf-compat", "--by", by, path)
    assert proc.returncode == 0, proc.stderr
    ours = [line for line in proc.stdout.splitlines() if re.match(r"^  \S.*\|", line)]
    assert ours == perf


def test_cli_formats(tmp_path):
    path = sample("perf/perf-sched-g.perf.data")
    js = run_cli("latency", path, "--format", "json", "--sort", "max")
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    assert (doc["table"], doc["reading"], doc["by"]) == ("latency", "schedwake", "pid")
    maxes = [r["max_delay_ns"] for r in doc["tasks"]]
    assert maxes == sorted(maxes, reverse=True) and maxes[0] > 0
    assert any("does not show everything" in n for n in doc["notes"])
    top = doc["tasks"][0]
    text = run_cli("latency", path, "--pid", str(top["pid"]))
    lines = [line for line in text.stdout.splitlines() if "|" in line and "max end" in line]
    assert len(lines) == 1 and f":{top['pid']} " in lines[0]
    assert f"max:{top['max_delay_ns'] / 1e6:8.3f} ms" in lines[0]
    rows = list(csv.DictReader(io.StringIO(run_cli("latency", path, "--format", "csv").stdout)))
    assert len(rows) == len(doc["tasks"]) and tuple(rows[0]) == L.COLUMNS
    th = run_cli("latency", path, "--timehist", "--format", "json")
    assert json.loads(th.stdout)["table"] == "timehist"


def test_cli_bad_options_one_line():
    path = sample("perf/perf-sched-g.perf.data")
    for args in (["--sort", "nope"], ["--pid", "x"], ["--comm", ","]):
        proc = run_cli("latency", path, *args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
