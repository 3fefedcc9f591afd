"""The synthetic sample traces of ``sample_traces/synthetic/`` and the raw ftrace text
writer that makes them (:func:`schedwake.synth.write_ftrace_text`).

* the committed files are exactly what ``scripts/write-synthetic-samples.py`` writes now;
* ``schedwake analyze FILE --format json`` (a real subprocess, through the text reader)
  finds exactly the planted counts of every file, and nothing in the healthy one;
* the tables read back from each file equal the in-memory synthetic tables in every
  column raw ftrace text carries;
* the writer prints what the kernel prints: on the conformance recording, its lines
  for ``conf.dat`` are the kernel's own ``trace`` file line for line (pointers aside,
  which the kernel hashes); latency flags and lost-event lines survive the round trip.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys

import pyarrow as pa
import pytest

import schedwake
from schedwake.ingest import RawTrace
from schedwake.schema import (
    FLAG_BH_OFF,
    FLAG_HARDIRQ,
    FLAG_IRQS_OFF,
    FLAG_NEED_RESCHED,
    FLAG_NMI,
    FLAG_PREEMPT_RESCHED,
    FLAG_SOFTIRQ,
    LOST_EVENTS_SCHEMA,
)
from schedwake.synth import (
    US,
    Synth,
    default_topology,
    format_ftrace_lines,
    make_trace,
    write_ftrace_text,
)
from schedwake.trace import Trace

from .conftest import ROOT, SAMPLES, plain, run_cli

SYNTH_DIR = SAMPLES / "synthetic"
SCRIPT = ROOT / "scripts" / "write-synthetic-samples.py"
PLANTED = json.loads((SYNTH_DIR / "planted.json").read_text())["samples"]
NAMES = sorted(PLANTED)

#: planted count that makes a detector fire -> detector
DETECTOR_OF = {
    "pingpong": "kworker_pingpong",
    "roundrobin_changes": "llc_roundrobin",
    "storm_preemptions": "cswitch_storm",
    "idle_gaps": "idle_while_runnable",
}


# -- (a) the committed files are what the script writes ---------------------------------------


@pytest.mark.slow
def test_committed_files_equal_a_fresh_run(tmp_path):
    subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    fresh = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in SYNTH_DIR.iterdir())
    assert fresh == committed
    assert len(fresh) == 2 * len(NAMES) + 1
    for name in fresh:
        assert (tmp_path / name).read_bytes() == (SYNTH_DIR / name).read_bytes(), (
            f"sample_traces/synthetic/{name} differs from what {SCRIPT.name} writes now"
        )


# -- (b) analyze finds exactly the planted counts ---------------------------------------------


@pytest.fixture(scope="module", params=NAMES)
def analyzed(request):
    s = PLANTED[request.param]
    proc = run_cli(
        "analyze",
        SYNTH_DIR / s["file"],
        "--topology",
        SYNTH_DIR / s["topology"],
        "--format",
        "json",
        check=True,
    )
    return s, json.loads(proc.stdout)


def test_analyze_reads_the_whole_file(analyzed):
    s, d = analyzed
    assert d["trace"]["format"] == "ftrace-text"
    assert d["trace"]["cpus"] == 8
    assert d["trace"]["events"] == s["events"]
    assert d["trace"]["lost_events"] == {} and d["trace"]["lost_unknown"] == []


def test_analyze_finds_exactly_the_planted_counts(analyzed):
    s, d = analyzed
    p = s["planted"]
    f = {x["detector"]: x for x in d["findings"]}
    assert set(f) == {det for key, det in DETECTOR_OF.items() if p.get(key)}
    m = d["metrics"]
    dur = m["duration_s"]
    migrations = p.get("load_balance", 0) + p.get("pingpong", 0) + p.get("roundrobin_changes", 0)
    assert m["migrations"] == migrations == s["events"].get("sched_migrate_task", 0)
    assert round(m["load_balance_migrations_per_s"] * dur) == p.get("load_balance", 0)
    assert m["pingpong_episodes"] == p.get("pingpong", 0)
    assert round(m["futile_wakeups_per_s"] * dur) == p.get("storm_futile", 0)
    assert m["cross_llc_migrations_per_s"] == 0
    if "kworker_pingpong" in f:
        pp = f["kworker_pingpong"]["metrics"]
        assert pp["episodes"] == p["pingpong"]
        assert pp["would_stack"] == p.get("pingpong_stackable", 0)
        assert pp["would_not_stack"]["other_tasks_runnable_on_waker_cpu"] == p.get(
            "pingpong_not_stackable", 0
        )
        # the topology file was used: the moves are classified by the two-LLC map
        assert set(pp["by_migration_class"]) <= {"same_core", "same_llc"}
        assert sum(pp["by_migration_class"].values()) == p["pingpong"]
        assert "no topology" not in " ".join(pp.get("caveats", []))
    if "llc_roundrobin" in f:
        rr = f["llc_roundrobin"]["metrics"]
        assert rr["flagged_tasks"] == 1
        assert rr["tasks"][0]["comm"] == "rr-client"
        assert rr["tasks"][0]["cpu_changes"] == p["roundrobin_changes"]
    if "cswitch_storm" in f:
        st = f["cswitch_storm"]
        assert st["metrics"]["kworker_preemptions"] == p["storm_preemptions"]
        assert st["metrics"]["futile_wakeups"] == p["storm_futile"]
        assert st["top"][0]["switches"] == p["storm_switches"]
        assert st["metrics"]["task"]["comm"] == "fio" and st["metrics"]["cpu"] == 1
    if "idle_while_runnable" in f:
        iwr = f["idle_while_runnable"]["metrics"]
        assert iwr["idle_while_runnable_ns"] == p["idle_gap_ns"]
    else:
        assert m["idle_while_runnable_share"] == 0


# -- (c) round trip: text tables == in-memory tables ------------------------------------------


def _values(col) -> list:
    return plain(col).to_pylist()


#: prev_state as a >= 4.14 kernel records it, by letters (what the text reader gives back)
REPORT_STATE = {"R": 0, "R+": 0x100, "S": 0x01, "D": 0x02, "I": 0x80}


@pytest.mark.parametrize("name", NAMES)
def test_text_tables_equal_the_synthetic_tables(name):
    s = PLANTED[name]
    mem, planted = make_trace(**s["params"])
    assert planted == s["planted"]
    txt = schedwake.load(SYNTH_DIR / s["file"])
    src = txt.meta.source
    assert (txt.meta.format, txt.meta.cpus, src["timestamps"]) == ("ftrace-text", 8, "us")
    assert src["unparsed_lines"] == 0 and src["latency_flags"] and src["sorted"]
    assert src["entries_in_buffer"] == src["event_lines"] == sum(s["events"].values())
    # events without rows print nothing, so they have no table in the text
    assert txt.events == sorted(e for e in mem.events if mem.table(e).num_rows)
    for ev in txt.events:
        a, b = mem.table(ev), txt.table(ev)
        assert b.schema.names == a.schema.names, ev
        # same types (nullability aside: the synthetic ts/cpu are declared not-null like
        # schema.COMMON_FIELDS, while every reader's tables leave them nullable)
        assert [f.type for f in b.schema] == [f.type for f in a.schema], ev
        assert b.num_rows == a.num_rows, ev
        for col in a.schema.names:
            want, got = _values(a.column(col)), _values(b.column(col))
            if col == "ts":
                assert all(t % 1000 == 0 for t in want)  # microseconds: exact in text
            if ev == "sched_switch" and col == "prev_state":
                # printed as letters, read back as the kernel's report bits
                assert want == [REPORT_STATE[x] for x in _values(a.column("prev_state_str"))]
            assert got == want, f"{ev}.{col}"


# -- the writer against the kernel's own output -----------------------------------------------

CONF = SAMPLES / "conformance"


@pytest.mark.skipif(not (CONF / "conf.dat").exists(), reason="no conformance recording")
def test_writer_prints_what_the_kernel_printed(tmp_path):
    """conf.dat and conf.ftrace.txt.gz hold the same ring buffer: the writer's file for
    the trace.dat tables is the kernel's ``trace`` file byte for byte, header and line
    order included, up to the pointers the kernel hashes."""
    t = schedwake.load(CONF / "conf.dat")
    out = tmp_path / "conf.txt.gz"
    assert write_ftrace_text(t, out) == 13545
    with gzip.open(CONF / "conf.ftrace.txt.gz", "rb") as f:
        real = f.read()
    with gzip.open(out, "rb") as f:
        mine = f.read()
    ptr = re.compile(rb"(work struct[= ])[0-9a-f]{16}")
    assert ptr.sub(rb"\1PTR", mine) == ptr.sub(rb"\1PTR", real)
    assert mine != real  # the kernel hashed the pointers; they are all that differs
    assert len(set(re.findall(rb"\d: (\w+):", real))) >= 10  # every event kind


# -- latency flags, lost events, options ------------------------------------------------------

#: every character the kernel prints in the three flag columns, with preempt counts
#: that use both the preempt-depth and the migrate-disable column
FLAG_CASES = [
    (0, 0),
    (FLAG_IRQS_OFF, 2),
    (FLAG_BH_OFF, 1),
    (FLAG_IRQS_OFF | FLAG_BH_OFF, 0x13),
    (FLAG_IRQS_OFF | FLAG_NEED_RESCHED | FLAG_PREEMPT_RESCHED, 5),
    (FLAG_NEED_RESCHED, 0),
    (FLAG_PREEMPT_RESCHED, 0x21),
    (FLAG_IRQS_OFF | FLAG_HARDIRQ, 3),
    (FLAG_IRQS_OFF | FLAG_SOFTIRQ, 4),
    (FLAG_IRQS_OFF | FLAG_HARDIRQ | FLAG_SOFTIRQ, 0xF),
    (FLAG_NMI, 0),
    (FLAG_NMI | FLAG_HARDIRQ | FLAG_IRQS_OFF | FLAG_NEED_RESCHED | FLAG_PREEMPT_RESCHED, 0xFF),
]
FLAG_TEXT = [
    ".....",
    "d..2.",
    "b..1.",
    "D..31",
    "dN.5.",
    ".n...",
    ".p.12",
    "d.h3.",
    "d.s4.",
    "d.Hf.",
    "..z..",
    "dNZff",
]


def _flag_trace(lost_rows=()) -> Trace:
    s = Synth(default_topology(), seed=5)
    pid = s.task("flagged", cpu=2)
    s.settle()
    for i, (flags, _) in enumerate(FLAG_CASES):
        s.waking(s.t + i * US, 2, 0, pid, 2, flags=flags)
    for row, (_, pc) in zip(s.rows["sched_waking"], FLAG_CASES):
        row["common_preempt_count"] = pc
    s.t += len(FLAG_CASES) * US
    s.bg_irq_wakeup(pid, 2)
    tr = s.build()
    if lost_rows:
        lost = pa.table(
            {
                "ts": [r[0] for r in lost_rows],
                "cpu": [r[1] for r in lost_rows],
                "count": [r[2] for r in lost_rows],
            },
            schema=LOST_EVENTS_SCHEMA,
        )
        tr = Trace(RawTrace(tables=dict(tr._tables), meta=tr.meta, lost=lost))
        tr.topology = s.topo
    return tr


def test_latency_flags_print_like_the_kernel_and_read_back(tmp_path):
    tr = _flag_trace()
    path = tmp_path / "flags.txt"
    write_ftrace_text(tr, path, events=["sched_waking"])
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
    assert [ln.split()[2] for ln in lines[: len(FLAG_CASES)]] == FLAG_TEXT
    back = schedwake.load(path).table("sched_waking")
    assert back.column("common_flags").to_pylist()[: len(FLAG_CASES)] == [f for f, _ in FLAG_CASES]
    assert back.column("common_preempt_count").to_pylist()[: len(FLAG_CASES)] == [
        pc for _, pc in FLAG_CASES
    ]


def test_lost_events_lines(tmp_path):
    sw = _flag_trace().table("sched_switch")
    ts, cpu = sw.column("ts").to_numpy(), sw.column("cpu").to_numpy()
    # a loss on CPU 2 just before its last switch, and one on CPU 3 after its last event
    at = int(ts[cpu == 2][-1]) - 500
    tr = _flag_trace([(at, 2, 1234), (int(ts.max()) + 10 * US, 3, 7)])
    path = tmp_path / "lost.txt.gz"
    n = write_ftrace_text(tr, path)
    with gzip.open(path, "rt") as f:
        text = f.read()
    assert f"entries-in-buffer/entries-written: {n}/{n}   #P:8" in text
    body = [ln for ln in text.splitlines() if not ln.startswith("#")]
    i = body.index("CPU:2 [LOST 1234 EVENTS]")
    nxt = next(ln for ln in body[i + 1 :] if "[002]" in ln)
    assert "sched_switch" in nxt and body[-1] == "CPU:3 [LOST 7 EVENTS]"
    back = schedwake.load(path)
    assert back.meta.lost_events == {2: 1234, 3: 7}
    lost = back.lost.to_pylist()
    assert lost[0] == {"ts": (at + 500), "cpu": 2, "count": 1234}


def test_lost_events_of_unknown_count_read_back(tmp_path):
    sw = _flag_trace().table("sched_switch")
    tr = _flag_trace([(int(sw.column("ts").to_numpy()[-1]) - 500, 2, -1)])
    path = tmp_path / "lost.txt"
    write_ftrace_text(tr, path)
    assert "CPU:2 [LOST EVENTS]\n" in path.read_text()
    back = schedwake.load(path)
    assert back.meta.lost_unknown == (2,)


def test_plain_text_unknown_events_and_ns_rounding(tmp_path):
    tr, _ = make_trace(storm=5, background=10, seed=2)
    plain, gz = tmp_path / "t.txt", tmp_path / "t.txt.gz"
    n = write_ftrace_text(tr, plain)
    assert write_ftrace_text(tr, gz) == n
    assert gzip.decompress(gz.read_bytes()) == plain.read_bytes()
    assert plain.read_bytes().startswith(b"# tracer: nop\n#\n# entries-in-buffer")
    assert n == sum(tr.table(e).num_rows for e in tr.events)
    only = tmp_path / "switch.txt"
    assert (
        write_ftrace_text(tr, only, events=["sched:sched_switch"])
        == tr.table("sched_switch").num_rows
    )
    assert schedwake.load(only).events == ["sched_switch"]
    extra = dict(tr._tables, sched_stat_runtime=tr.table("sched_switch").slice(0, 0))
    odd = Trace(RawTrace(tables=extra, meta=tr.meta))
    with pytest.raises(ValueError, match="sched_stat_runtime"):
        write_ftrace_text(odd, tmp_path / "x.txt")
    # nanoseconds round to the nearest microsecond, like the kernel's ns2usecs()
    sw = tr.table("sched_switch").slice(0, 2)
    ts = sw.column("ts").to_numpy().copy()
    assert (ts % 1000 == 0).all() and list(sw.column("cpu").to_pylist()) == [0, 1]
    shifted = sw.set_column(0, "ts", pa.array(ts + [499, 500], pa.int64()))
    lines, _ = format_ftrace_lines(Trace(RawTrace(tables={"sched_switch": shifted}, meta=tr.meta)))
    stamps = [int(ln.split(b": ")[0].split()[-1].replace(b".", b"")) for ln in lines]
    assert stamps == [ts[0] // 1000, ts[1] // 1000 + 1]
