"""The kernel's counters beside a trace (schedwake/counters.py): the referee samples'
counters files and perf stat outputs read back and checked against each other, the
markers in the traces, the clock relation that places a perf.data's snapshots, and
hostile input (every bad file one line naming it, never a traceback; fuzzed a little)."""

from __future__ import annotations

import copy
import dataclasses
import json
import random

import numpy as np
import pytest

import schedwake
from schedwake import counters, referee
from schedwake.errors import TraceError

from .conftest import SAMPLES, run_cli, shared_trace

REFEREE = SAMPLES / "referee"
DATS = sorted(REFEREE.glob("*.dat"))
PERF = sorted(REFEREE.glob("*.perf.data"))
TRACES = DATS + PERF
PERF_STAT = sorted(REFEREE.glob("*.perf-stat.txt"))


def counters_of(path) -> counters.Counters:
    beside = counters.read_beside(path)
    assert beside is not None and beside.counters is not None, path
    return beside.counters


def test_the_samples_are_there_and_small():
    names = {p.name for p in TRACES}
    assert len(DATS) >= 7 and len(PERF) >= 2, names
    assert {"pipe.dat", "pipe-cpu1.dat", "messaging.dat", "sleeper.dat", "idle.dat"} <= names
    total = sum(p.stat().st_size for p in REFEREE.iterdir())
    assert total < 4 << 20, f"sample_traces/referee holds {total} bytes (keep it a few MB)"
    readme = (SAMPLES / "README.md").read_text()
    for p in TRACES:
        assert f"referee/{p.name}" in readme, f"{p.name}: say in sample_traces/README.md what it is"


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_counters_files_parse(path):
    c = counters_of(path)
    assert c.version == counters.VERSION and c.kernel and c.kernel.startswith("6.18")
    assert c.user_hz == 100 and c.cpus == [0, 1] and c.runtime_events
    assert "schedstat" in c.unavailable  # this kernel has no CONFIG_SCHEDSTATS: said, not 0
    for snap in (c.start, c.stop):
        assert snap.clocks is not None and snap.ctxt is not None
        for cpu in c.cpus:
            x = snap.cpus[cpu]
            assert x.pinned and x.nr_switches is not None and x.idle_sleeptime_ns is not None
            assert snap.begin_monotonic_ns <= x.monotonic_ns <= snap.end_monotonic_ns
        # a snapshot is a few milliseconds: the bracket of its counters in the trace
        assert snap.end_monotonic_ns - snap.begin_monotonic_ns < 50_000_000
    assert c.command is not None or path.name.startswith("idle")
    if path.suffix == ".dat":
        assert c.markers is not None and c.perf_stat == {
            "file": f"{path.name}.perf-stat.txt",
            "window": "counters",
        }
    else:
        assert c.markers is None and c.perf_stat is None
        assert c.recorded_by.startswith("scripts/record-samples/perf-counters.py")


@pytest.mark.parametrize("path", DATS, ids=lambda p: p.name)
def test_markers_bracket_the_snapshots_in_the_trace(path):
    """Each of the four markers once, in order, inside the recording's start/stop."""
    t = shared_trace(path, events=("print",))
    text = [s.strip() for s in t.df("print")["buf"].astype(str)]
    c = counters_of(path)
    assert c.markers is not None
    want = [*c.markers["start"], *c.markers["stop"]]
    assert [m for m in text if m.startswith("schedwake: counters")] == want
    assert text[0] == "schedwake: start" and text[-1].startswith("schedwake: stop")
    w, why = referee.find_window(t, c)
    assert w is not None and w.how == "markers", why
    assert w.outer[0] <= w.inner[0] < w.inner[1] <= w.outer[1]


@pytest.mark.parametrize("path", DATS, ids=lambda p: p.name)
def test_the_clock_relation_places_the_snapshots_where_the_markers_are(path):
    """What a perf.data relies on (it has no markers): each snapshot's CLOCK_MONOTONIC
    readings, moved onto the trace's clock by the sched debug file's clocks read in
    the same snapshot, fall between that snapshot's markers."""
    t = shared_trace(path, events=("print",))
    c = counters_of(path)
    marked, _ = referee.find_window(t, c)
    unmarked = dataclasses.replace(c, markers=None)
    clocked, why = referee.find_window(t, unmarked)
    assert marked is not None and clocked is not None and clocked.how == "clock local", why
    # each begin marker is written before its snapshot's first reading, each end marker
    # after its last: the clock's places lie within the markers', a few us from them
    m, k = marked, clocked
    assert m.outer[0] <= k.outer[0] and k.inner[0] <= m.inner[0], (m, k)
    assert m.inner[1] <= k.inner[1] and k.outer[1] <= m.outer[1], (m, k)
    for a, b in zip(m.outer + m.inner, k.outer + k.inner, strict=True):
        assert abs(a - b) < 500_000, (a, b)


@pytest.mark.parametrize("path", PERF, ids=lambda p: p.name)
def test_a_perf_data_is_placed_by_its_clock(path):
    t = shared_trace(path, events=("sched_switch",))
    assert t.meta.clock == "perf"
    w, why = referee.find_window(t, counters_of(path))
    assert w is not None and w.how == "clock perf", why
    first, last = t.meta.first_ts_ns, t.meta.last_ts_ns
    assert first < w.outer[0] < w.inner[1] < last  # perf recorded around the snapshots


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_ctxt_is_the_sum_of_the_run_queues_switches(path):
    """The counters alone: /proc/stat's ctxt, read before and after the sched debug
    file, brackets the sum of its nr_switches, at both snapshots and between them."""
    c = counters_of(path)
    for snap in (c.start, c.stop):
        total = sum(snap.cpus[cpu].nr_switches for cpu in c.cpus)
        assert snap.ctxt[0] <= total <= snap.ctxt[1], (snap.label, snap.ctxt, total)
    lo, hi = referee.kernel_ctxt(c)
    grown = sum(referee.kernel_switches(c, cpu) for cpu in c.cpus)
    assert lo <= grown <= hi


def without_timer_list(c: counters.Counters) -> counters.Counters:
    """``c`` as if /proc/timer_list had not been read."""

    def snap(s: counters.Snapshot) -> counters.Snapshot:
        cpus = {k: dataclasses.replace(v, timer_now_ns=None) for k, v in s.cpus.items()}
        return dataclasses.replace(s, cpus=cpus)

    return dataclasses.replace(c, start=snap(c.start), stop=snap(c.stop))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_kernels_two_idle_clocks_agree(path):
    """Busy time from /proc/timer_list (ns) and from /proc/stat (1/USER_HZ) agree
    within /proc/stat's resolution (two ticks) and the time between the two reads."""
    c = counters_of(path)
    coarse_c = without_timer_list(c)
    for cpu in c.cpus:
        exact, coarse = referee.kernel_busy(c, cpu), referee.kernel_busy(coarse_c, cpu)
        assert exact is not None and coarse is not None
        assert exact[2].startswith("/proc/timer_list") and coarse[2].startswith("/proc/stat")
        a, b = c.start.cpus[cpu], c.stop.cpus[cpu]
        slack = abs((b.timer_now_ns - a.timer_now_ns) - (b.monotonic_ns - a.monotonic_ns))
        assert abs(exact[0] - coarse[0]) <= coarse[3] + slack + 1_000_000, (cpu, exact, coarse)


@pytest.mark.parametrize("path", DATS, ids=lambda p: p.name)
def test_perf_stat_counted_the_marked_stretch(path):
    """record --perf-stat's perf stat -a -A was enabled and disabled inside the
    snapshots: its context switches per CPU are the run queues' nr_switches (give or
    take the switches during the snapshots) and its cpu-clock the stretch's length."""
    beside = counters.read_beside(path)
    ps, c = beside.perf_stat, beside.counters
    assert ps is not None and ps.layout == "csv" and ps.target is None
    assert set(ps.events()) == {"context-switches", "cpu-migrations", "cpu-clock", "task-clock"}
    span = (c.stop.begin_monotonic_ns - c.start.end_monotonic_ns) / 1e9
    outer = (c.stop.end_monotonic_ns - c.start.begin_monotonic_ns) / 1e9
    for cpu in c.cpus:
        k = referee.kernel_switches(c, cpu)
        assert abs(ps.value("context-switches", cpu) - k) <= 30, (cpu, k)
        clock = ps.value("cpu-clock", cpu) / 1e9
        assert span - 1e-4 <= clock <= outer + 1e-4, (cpu, span, clock, outer)


@pytest.mark.parametrize("path", DATS, ids=lambda p: p.name)
def test_sched_stat_runtime_is_in_the_traces(path):
    t = schedwake.load(path, events=[])
    assert t.meta.event_counts.get("sched_stat_runtime", 0) > 0


# -- the verdicts ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kernel, trace, tol, want",
    [
        ((1.0, 1.0), (0.99, 1.0), 0.02, "agree"),
        ((1.0, 1.0), (0.90, 0.95), 0.02, "disagree"),
        ((0.5, 0.5), (0.60, 0.70), 0.02, "disagree"),
        ((1.0, 1.0), (0.50, 1.2), 0.02, "withheld"),
        ((1.0, 1.0), (0.50, None), 0.02, "withheld"),
        ((0.1, 0.1), (0.50, None), 0.02, "disagree"),
        (None, (0.5, 0.5), 0.02, "cannot tell"),
        ((1.0, 1.0), None, 0.02, "cannot tell"),
        ((10.0, 12.0), (12.5, 12.5), 1.0, "agree"),  # a kernel range (ctxt read twice)
    ],
)
def test_verdict(kernel, trace, tol, want):
    assert referee.verdict(kernel, trace, tol) == want


def test_a_check_says_both_figures_and_the_tolerance():
    ch = referee._check("busy", "CPU 1", "s", 0.8, "/proc/timer_list", (0.4, 0.41), 0.02, "why", "")
    assert ch.verdict == "disagree"
    line = referee.describe(ch)
    assert "CPU 1" in line and "0.800000 s" in line and "0.400000 s to 0.410000 s" in line
    assert "tolerance 0.020000 s" in line


# -- perf stat output --------------------------------------------------------------------
HUMAN_A = """
 Performance counter stats for 'system wide':

CPU0                     1051      context-switches                 #    5.059 K/sec
CPU1                       54      context-switches                 #  266.774 /sec
CPU0                        6      cpu-migrations                   #   28.881 /sec
CPU1                        6      cpu-migrations                   #   29.642 /sec
CPU0                   207.75 msec cpu-clock                        #    1.027 CPUs utilized
CPU1                   202.42 msec cpu-clock                        #    1.000 CPUs utilized

       0.202383496 seconds time elapsed

"""
HUMAN = """
 Performance counter stats for 'sleep 0.2':

             1,234      context-switches                 #  793.412 /sec
                 0      cpu-migrations                   #    0.000 /sec
              1.26 msec task-clock                       #    0.006 CPUs utilized
     <not counted> msec cpu-clock

       0.202256374 seconds time elapsed

       0.000000000 seconds user
       0.002156000 seconds sys
"""
CSV = """# started on Sat Nov 28 04:34:19 2026

1,,context-switches,1206373,100.00,831.257,/sec
0,,migrations,1206373,100.00,0.000,/sec
1.20,msec,cpu-clock,1206373,100.00,0.006,CPUs utilized
"""


def test_perf_stat_layouts(tmp_path):
    a = counters.parse_perf_stat(HUMAN_A, "a.txt")
    assert a.layout == "human" and a.target == "system wide" and a.elapsed_s == 0.202383496
    assert a.per_cpu("context-switches") == {0: 1051.0, 1: 54.0}
    assert a.value("cpu-clock", 0) == pytest.approx(207.75e6)
    h = counters.parse_perf_stat(HUMAN, "h.txt")
    assert h.value("context-switches") == 1234.0 and h.target == "sleep 0.2"
    assert h.value("task-clock") == pytest.approx(1.26e6)
    assert ("cpu-clock", None) in h.values and h.value("cpu-clock") is None  # not counted
    c = counters.parse_perf_stat(CSV, "c.txt")
    assert c.layout == "csv" and c.value("context-switches") == 1.0
    assert c.value("cpu-migrations") == 0.0  # perf's short name, read as the event
    assert c.value("cpu-clock") == pytest.approx(1.2e6)


@pytest.mark.parametrize(
    "text, why",
    [
        ("", "no counts"),
        ("hello world\n", "not a perf stat line"),
        ("CPU0,x,,context-switches,1,100.00,,\n", "is not a number"),
        ("1,,context-switches,1,100,,\n1,,context-switches,1,100,,\n", "given twice"),
        ("1.5,,context-switches,1,100,,\n", "not a whole count"),
        ("-1,,cpu-migrations,1,100,,\n", "out of range"),
        ("1e300,,cpu-migrations,1,100,,\n", "out of range"),
        ("nan,,cpu-migrations,1,100,,\n", "out of range"),
        ("     1.000 CPU0 5 context-switches\n", "interval output"),
        ("S0-D0-C0,1,3,,context-switches,1,100,,\n", "per-socket"),
        ("1,furlongs,cpu-clock,1,100,,\n", "unknown unit"),
    ],
)
def test_bad_perf_stat_output_is_one_line(tmp_path, text, why):
    with pytest.raises(TraceError) as e:
        counters.parse_perf_stat(text, tmp_path / "x.perf-stat.txt")
    assert why in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith(str(tmp_path / "x.perf-stat.txt"))


# -- hostile counters files --------------------------------------------------------------
def sample_doc() -> dict:
    return json.loads((REFEREE / "pipe.dat.counters.json").read_text())


def _set(doc, path, value):
    d = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


@pytest.mark.parametrize(
    "path, value, why",
    [
        (("format",), "other", "not a counters file"),
        (("version",), 2, "version 2"),
        (("user_hz",), 0, "user_hz must be above 0"),
        (("snapshots", "start", "cpus", "0", "sched_debug", "nr_switches"), -1, "integer"),
        (("snapshots", "start", "cpus", "0", "sched_debug", "nr_switches"), 1.5, "integer"),
        (("snapshots", "start", "cpus", "0", "sched_debug", "nr_switches"), True, "integer"),
        (("snapshots", "start", "cpus", "0", "sched_debug", "nr_switches"), 2**64, "integer"),
        (("snapshots", "stop", "cpus", "1", "sched_debug", "nr_switches"), 0, "went down"),
        (("snapshots", "stop", "ctxt"), [1, 0], "below the first"),
        (("snapshots", "start", "end_monotonic_ns"), 0, "ends before it begins"),
        (("snapshots", "start", "cpus", "0", "monotonic_ns"), 1, "outside its snapshot"),
        (("snapshots", "start", "cpus", "x"), {}, "not a CPU number"),
        (("snapshots", "start", "cpus", "0", "extra"), 1, "unknown key"),
        (("markers", "start"), ["a", "a"], "four different texts"),
        (("perf_stat", "file"), "../x", "a file name beside the trace"),
        (("perf_stat", "window"), "whole trace", "window"),
        (("command", "argv"), "perf", "list of texts"),
        (("unavailable",), [], "object of texts"),
    ],
)
def test_bad_counters_files_are_one_line(tmp_path, path, value, why):
    doc = sample_doc()
    _set(doc, path, value)
    f = tmp_path / "t.dat.counters.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(TraceError) as e:
        counters.parse(f.read_text(), f)
    assert why in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert str(e.value).startswith(str(f))


def test_a_missing_counter_is_none_not_zero(tmp_path):
    doc = sample_doc()
    for snap in doc["snapshots"].values():
        for cpu in snap["cpus"].values():
            cpu["sched_debug"] = None
            cpu["timer_list"] = None
        snap["clocks"] = None
    doc["unavailable"]["sched_debug"] = "debugfs is not mounted"
    c = counters.parse(json.dumps(doc), tmp_path / "t.dat.counters.json")
    assert referee.kernel_switches(c, 0) is None
    assert referee.steal_ns(c) is None
    busy = referee.kernel_busy(c, 0)
    assert busy is not None and busy[2] == "/proc/stat idle + iowait" and busy[3] == 20_000_000


def test_info_refuses_a_broken_counters_file_in_one_line(tmp_path):
    trace = tmp_path / "t.dat"
    trace.write_bytes((SAMPLES / "idle-sleep.dat").read_bytes())
    side = tmp_path / "t.dat.counters.json"
    side.write_text('{"format": "schedwake-counters", "version": 1')
    for cmd in ("info", "analyze"):
        proc = run_cli(cmd, trace)
        assert proc.returncode == 2, proc.stdout
        assert (
            proc.stderr.count("\n") == 1 and str(side) in proc.stderr and "not JSON" in proc.stderr
        )


def test_a_named_perf_stat_file_must_be_there(tmp_path):
    doc = sample_doc()
    (tmp_path / "t.dat.counters.json").write_text(json.dumps(doc))
    with pytest.raises(TraceError, match="pipe.dat.perf-stat.txt: not there"):
        counters.read_beside(tmp_path / "t.dat")


# -- fuzzed a little ---------------------------------------------------------------------
HOSTILE = [None, True, -1, 0, 2**63, 2**70, 1.5, float("1e308"), "", "x" * 5000, [], {}, [1, 2]]


def _leaves(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _leaves(v, path + (i,))
    yield path


def test_fuzzed_counters_files_parse_or_fail_in_one_line(tmp_path):
    """Structure-aware mutations of a real counters file (a value replaced by a hostile
    one, a key dropped or added, a list cut) and byte mutations of its text: each
    parses, or raises a one-line TraceError naming the file."""
    base = sample_doc()
    leaves = [p for p in _leaves(base) if p]
    text = json.dumps(base)
    f = tmp_path / "f.dat.counters.json"
    rnd = random.Random(13)
    outcomes = {"ok": 0, "refused": 0}
    for i in range(1500):
        if i % 3:
            doc = copy.deepcopy(base)
            for _ in range(rnd.randint(1, 3)):
                path = rnd.choice(leaves)
                try:
                    parent = doc
                    for k in path[:-1]:
                        parent = parent[k]
                    op = rnd.random()
                    if op < 0.6:
                        parent[path[-1]] = rnd.choice(HOSTILE)
                    elif op < 0.8 and isinstance(parent, dict):
                        parent.pop(path[-1], None)
                    elif isinstance(parent, dict):
                        parent[f"k{rnd.randint(0, 9)}"] = 1
                    else:
                        del parent[path[-1] :]
                except (KeyError, IndexError, TypeError):
                    pass
            data = json.dumps(doc)
        else:
            b = bytearray(text.encode())
            for _ in range(rnd.randint(1, 6)):
                j = rnd.randrange(len(b))
                b[j : j + rnd.randint(0, 3)] = bytes(
                    rnd.choice(b'0123456789{}[]",:-.e ') for _ in range(rnd.randint(0, 3))
                )
            data = b.decode("utf-8", "replace")
        try:
            counters.parse(data, f)
            outcomes["ok"] += 1
        except TraceError as e:
            assert str(e).startswith(str(f)) and "\n" not in str(e), str(e)
            outcomes["refused"] += 1
    assert outcomes["refused"] > 500 and outcomes["ok"] > 10, outcomes


def test_fuzzed_perf_stat_output_parses_or_fails_in_one_line(tmp_path):
    sources = [p.read_text() for p in PERF_STAT[:3]] + [HUMAN, HUMAN_A, CSV]
    f = tmp_path / "f.perf-stat.txt"
    rnd = random.Random(7)
    alphabet = "0123456789.,<> #:CPU-msecotunx\n\t'"
    refused = 0
    for _ in range(1500):
        s = list(rnd.choice(sources))
        for _ in range(rnd.randint(1, 5)):
            j = rnd.randrange(len(s))
            op = rnd.random()
            if op < 0.4:
                s[j] = rnd.choice(alphabet)
            elif op < 0.7:
                del s[j : j + rnd.randint(1, 12)]
            else:
                s[j:j] = [rnd.choice(alphabet) for _ in range(rnd.randint(1, 6))]
        try:
            ps = counters.parse_perf_stat("".join(s), f)
            assert all(v is None or (np.isfinite(v) and v >= 0) for v in ps.values.values())
        except TraceError as e:
            assert str(e).startswith(str(f)) and "\n" not in str(e), str(e)
            refused += 1
    assert refused > 100


# -- the parsers of the kernel's files ---------------------------------------------------
def test_sched_debug_and_timer_list_parsers():
    debug = (
        "Sched Debug Version: v0.11, 6.18.44-fc-v657 #1\n"
        "ktime                                   : 994063.730179\n"
        "sched_clk                               : 994095.071959\n"
        "cpu_clk                                 : 994059.050000\n"
        "\ncpu#0, 2445.424 MHz\n"
        "  .nr_running                    : 1\n"
        "  .nr_switches                   : 750106\n"
        "  .clock                         : 994059.367984\n"
        "  .clock_task                    : 981073.599973\n"
        "\ncfs_rq[0]:/autogroup-32\n"
        "  .nr_switches                   : 5\n"
        "  .clock                         : 1.000000\n"
    )
    clocks, cpus = counters.parse_sched_debug(debug)
    assert clocks == {
        "monotonic_ns": 994063730179,
        "sched_clock_ns": 994095071959,
        "local_clock_ns": 994059050000,
    }
    assert cpus == {
        0: {"nr_switches": 750106, "clock_ns": 994059367984, "clock_task_ns": 981073599973}
    }
    timer = (
        "Timer List Version: v0.10\nnow at 1273165510128 nsecs\n\ncpu: 0\n clock 0:\n"
        "  .idle_calls     : 184712\n  .idle_sleeptime : 792798581283 nsecs\n"
        "  .iowait_sleeptime: 3377197874 nsecs\njiffies: 4295210508\n\ncpu: 1\n"
        "  .idle_sleeptime : 5 nsecs\n\nTick Device: mode:     1\nPer CPU device: 0\n"
        "  .idle_sleeptime : 7 nsecs\n"
    )
    now, idle = counters.parse_timer_list(timer)
    assert now == 1273165510128
    assert idle == {
        0: {
            "idle_calls": 184712,
            "idle_sleeptime_ns": 792798581283,
            "iowait_sleeptime_ns": 3377197874,
        },
        1: {"idle_sleeptime_ns": 5},
    }
    stat = "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\ncpu1 1 x\nctxt 42\n"
    cpus_ns, ctxt = counters.parse_proc_stat(stat, 100)
    assert ctxt == 42 and list(cpus_ns) == [0] and cpus_ns[0]["idle"] == 40_000_000
