"""``schedwake analyze --time START,END --cpu CPULIST``: the analysis of a slice of a real
trace, its counts checked against ``trace-cmd report`` lines of that slice; the text
report's width and its longest wake-to-run wait."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

import schedwake

from .conftest import ROOT, run_cli, sample

TRACE = sample("kstack-6.1-32cpu/k61-32cpu-dbench-c2-kstack-off-i1.dat")
START, END = 62.9, 70.0
CPUS = set(range(8, 16))
LINE = re.compile(r"^\s*\S.*?-\d+\s+\[(\d{3})\]\s+(\d+)\.(\d{9}): (\w+):")

pytestmark = pytest.mark.skipif(
    shutil.which("trace-cmd") is None, reason="trace-cmd is not installed (scripts/bootstrap.sh)"
)


@pytest.fixture(scope="module")
def report_events():
    """(cpu, ts_ns, event) of every line of ``trace-cmd report -N -t``."""
    out = subprocess.run(
        ["trace-cmd", "report", "-N", "-t", "-i", str(TRACE)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)) * 10**9 + int(m.group(3)), m.group(4)))
    assert len(rows) > 50_000
    return rows


def _analyze(*args):
    proc = run_cli("analyze", TRACE, "--format", "json", *args, check=True)
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_time_and_cpu_slice_counts_equal_trace_cmd_report(report_events):
    doc = _analyze("--time", f"{START},{END}", "--cpu", "8-15")
    lo, hi = round(START * 1e9), round(END * 1e9)
    inside = [(c, t, e) for c, t, e in report_events if lo <= t <= hi and c in CPUS]
    want = {}
    for _, _, e in inside:
        want[e] = want.get(e, 0) + 1
    got = doc["trace"]["events"]  # (the events the model reads)
    assert len(got) >= 6 and got == {e: want[e] for e in got}
    assert doc["metrics"]["migrations"] == want["sched_migrate_task"]
    read = [t for _, t, e in inside if e in got]  # the span of the events read
    span = (max(read) - min(read)) / 1e9
    assert doc["metrics"]["duration_s"] == pytest.approx(span, abs=1e-6)
    # the caveat says the slice itself, not the options that made it (any front-end shows it)
    slice_said = f"analysed only the events from {START:.6f} to {END:.6f} s and on CPUs 8-15"
    assert any(c.startswith(slice_said) for c in doc["caveats"])
    # the machine's topology stays: CPU numbering and LLCs are the trace's
    assert doc["trace"]["topology"]["llc"] == [list(range(i, i + 8)) for i in range(0, 32, 8)]


def test_a_slice_never_invents_a_wait_outside_its_cpus():
    """A wake-up to a CPU outside the slice has no run in it: its wake-to-run is unknown,
    not the time until the wakee next ran on a CPU of the slice."""
    trace = schedwake.load(TRACE)
    part = trace.sliced(cpus=sorted(CPUS))
    w = part.model.wakeups
    measured = w[w["latency_ns"].notna()]
    assert len(measured) > 100
    assert set(measured["chosen_cpu"].astype(int)) <= CPUS
    whole = trace.model.wakeups.set_index("ts")
    # where both measure a wake-up, they agree
    common = measured.set_index("ts")[["latency_ns"]].join(
        whole[["latency_ns"]].rename(columns={"latency_ns": "whole"}), how="inner"
    )
    same = common["latency_ns"] == common["whole"]
    assert same.mean() > 0.99


def test_time_slice_keeps_lost_events_it_cannot_place():
    trace = schedwake.load(sample("lost-events.dat"))
    first = trace.meta.first_ts_ns
    part = trace.sliced(first, first + 200_000_000)
    total = sum(trace.meta.lost_events.values())
    assert total > 0
    kept = sum(part.meta.lost_events.values())
    rows = trace.lost.to_pandas()
    placed_outside = rows[(rows["ts"] > first + 200_000_000) & (rows["count"] > 0)]["count"].sum()
    assert kept >= total - placed_outside


@pytest.mark.parametrize(
    "args, needle",
    [
        (("--time", "70,62"), "START must come before END"),
        (("--time", "abc"), "expected START,END"),
        (("--cpu", "40"), "the trace has CPUs 0-31, not 40"),
        (("--time", "1,2"), "no events from 1.000000 to 2.000000 s"),
    ],
)
def test_bad_filters_are_one_line_exit_2(args, needle):
    proc = run_cli("analyze", TRACE, *args)
    assert proc.returncode == 2
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_text_report_fits_100_columns_and_names_the_longest_wait():
    # the trace named relative to the repository, so that the report's width does not
    # depend on where the clone lives (the `trace:` line carries the path as given)
    out = run_cli("analyze", TRACE.relative_to(ROOT), check=True, cwd=ROOT).stdout
    evidence = re.compile(r"^\s+\S.*-\d+\s+\[\d{3}\]\s+\d+\.\d{6}: ")
    # (a path longer than the width cannot be broken: a line of that one word may be wider)
    wide = [
        ln
        for ln in out.splitlines()
        if len(ln) > 100 and not evidence.match(ln) and len(ln.split()) > 1
    ]
    assert wide == []
    # the longest wait, as the model measures it
    w = schedwake.load(TRACE).model.wakeups
    longest = w.loc[w["latency_ns"].astype("float64").idxmax()]
    assert f"{longest['latency_ns'] / 1e6:.3f} ms, {longest['wakee_comm']}" in out
    assert "max wait:" in out and "busy_share  (share of the time each CPU runs a task)" in out
    assert re.search(r"^    cpu24-31 ", out, re.M)


KSTACK_OFF = sample("kstack-6.1/k61-dbench-c2-kstack-off-i1.dat")
PID_LINE = re.compile(r"^\s*\S.*?-\d+\s+\[\d{3}\]\s+\d+\.\d+: (\w+):\s+(.*)$")


@pytest.mark.slow
def test_pid_focus_counts_equal_trace_cmd_report():
    """--pid: the task's wake-ups, migrations and context switches, counted from
    `trace-cmd report` lines; its ping-pong episodes are those of the whole analysis."""
    pid = 562
    doc = _analyze_file(KSTACK_OFF, "--pid", str(pid))
    out = subprocess.run(
        ["trace-cmd", "report", "-N", "-i", str(KSTACK_OFF)], capture_output=True, text=True
    ).stdout
    waking = migrate = switches = 0
    for line in out.splitlines():
        m = PID_LINE.match(line)
        if not m:
            continue
        event, fields = m.groups()
        if event == "sched_waking" and f" pid={pid} " in f" {fields} ":
            waking += 1
        elif event == "sched_migrate_task" and f" pid={pid} " in f" {fields} ":
            migrate += 1
        elif event == "sched_switch" and (
            f"prev_pid={pid} " in fields or f"next_pid={pid} " in fields
        ):
            switches += 1
    m = doc["metrics"]
    assert m["wakeups"] == waking and m["migrations"] == migrate
    assert round(m["context_switches_per_s"] * m["duration_s"]) == switches
    whole = schedwake.load(KSTACK_OFF).model.wakeups
    from schedwake.model.masks import episodes_mask

    assert m["pingpong_episodes"] == int(episodes_mask(whole[whole["wakee_pid"] == pid]).sum())
    assert {f["detector"] for f in doc["findings"]} == {"kworker_pingpong", "llc_roundrobin"}
    rr = [f for f in doc["findings"] if f["detector"] == "llc_roundrobin"][0]
    assert [t["pid"] for t in rr["top"]] == [pid]
    assert any(
        f"wake-ups, migrations, waits and context switches of pid(s) {pid};" in c
        for c in doc["caveats"]
    )
    bad = run_cli("analyze", KSTACK_OFF, "--pid", "999999")
    assert bad.returncode == 2 and "no task with pid 999999" in bad.stderr


def _analyze_file(path, *args):
    return json.loads(run_cli("analyze", path, "--format", "json", *args, check=True).stdout)
