"""Counts per unit of work (schedwake.work, compare/gate --work): where a run's work is
read, and a faster run read per operation instead of per second."""

from __future__ import annotations

import json
import shutil

import pytest

import schedwake
from schedwake.analysis.metrics import catalogue_entry
from schedwake.errors import OptionError, TraceError
from schedwake.gate import parse_rules
from schedwake.work import parse_work, per_op_name, per_s_name, work_of

from .conftest import SAMPLES, run_cli

REFEREE = SAMPLES / "referee"
WEIGHT = SAMPLES / "cgroup-weight"


def test_parse_work():
    assert parse_work(["1000"], ["a", "b"]) == {"a": 1000.0, "b": 1000.0}
    assert parse_work(["bench"], ["a", "b"]) == {"a": "bench", "b": "bench"}
    assert parse_work(["a=10", "b=cpu"], ["a", "b"]) == {"a": 10.0, "b": "cpu"}
    # a number for every run, one side's own
    assert parse_work(["5", "b=7"], ["a", "b"]) == {"a": 5.0, "b": 7.0}
    for bad, why in (
        (["0"], r"a number from 1e-09 to 1e\+18"),
        (["nan"], r"a number from 1e-09 to 1e\+18"),
        (["ops"], "expected a number of units, bench or cpu"),
        (["c=5"], "no side named 'c'"),
        (["a=5"], "no work for side b"),
    ):
        with pytest.raises(OptionError, match=why):
            parse_work(bad, ["a", "b"])


def test_names_and_catalogue():
    assert per_op_name("context_switches_per_s") == "context_switches_per_op"
    assert per_s_name("migrations_per_op") == "migrations_per_s"
    entry = catalogue_entry("wakeup_migrations_per_op")
    assert (entry.unit, entry.direction) == ("/op", "lower")
    with pytest.raises(KeyError, match="unknown metric"):
        catalogue_entry("wake_to_run_p99_per_op")  # not a rate of a count


def test_work_read_beside_real_recordings():
    pipe = work_of(REFEREE / "pipe.dat", "bench")
    assert (pipe.value, pipe.unit) == (10000.0, "pipe operations")
    msg = work_of(REFEREE / "messaging.dat", "bench")  # -g 1 -l 100: 1 x 20 x 20 x 100
    assert (msg.value, msg.unit) == (40000.0, "messages")
    assert work_of(WEIGHT / "msg-w1024-r01.dat", "bench").value == 200000.0  # -l 500
    fio = work_of(REFEREE / "fio-cpu1.dat", "bench")
    assert fio.unit == "IOs" and fio.value == 4000.0
    cpu = work_of(REFEREE / "pipe.dat", "cpu")
    counters = json.loads((REFEREE / "pipe.dat.counters.json").read_text())
    assert cpu.unit == "CPU-s" and cpu.value == counters["command"]["cpu_ns"] / 1e9
    assert work_of(REFEREE / "pipe.dat", 123.0).value == 123.0


def test_dbench_operation_count_and_missing_work(tmp_path):
    trace = tmp_path / "run1.dat"
    trace.write_bytes(b"")
    (tmp_path / "run1.dbench.txt").write_text(
        "\n Operation      Count    AvgLat    MaxLat\n"
        " ----------------------------------------\n"
        " NTCreateX      12000     0.123    12.345\n"
        " Close           8000     0.010     1.000\n"
        " ReadX          30000     0.050     3.100\n\n"
        "Throughput 253.54 MB/sec  2 clients  2 procs  max_latency=10.837 ms\n"
    )
    got = work_of(trace, "bench")
    assert (got.value, got.unit) == (50000.0, "operations")
    bare = tmp_path / "bare.dat"
    bare.write_bytes(b"")
    with pytest.raises(TraceError, match="no count of operations beside the trace"):
        work_of(bare, "bench")
    with pytest.raises(TraceError, match="bare.dat.counters.json.*recorded command's CPU time"):
        work_of(bare, "cpu")


@pytest.mark.slow
def test_a_faster_run_is_worse_per_second_and_better_per_operation():
    """perf bench sched pipe pinned to one CPU: 10,000 operations in 0.10 s instead of
    1.29 s. Per second it switches 5.8x as often (a regression to a per-second rule); per
    operation less than before."""
    proc = run_cli(
        "compare",
        REFEREE / "pipe.dat",
        REFEREE / "pipe-cpu1.dat",
        "--work",
        "bench",
        "--metric",
        "context_switches_per_s",
        "--metric",
        "context_switches_per_op",
        "--format",
        "json",
        check=True,
    )
    doc = json.loads(proc.stdout)
    rows = {
        (r["metric"], r["side"]): r
        for r in doc["rows"]
        if r["stat"] in ("Amean", "Hmean") and r["metric"].startswith("context_switches")
    }
    per_s = [rows[("context_switches_per_s", s)]["value"] for s in ("pipe", "pipe-cpu1")]
    per_op = [rows[("context_switches_per_op", s)]["value"] for s in ("pipe", "pipe-cpu1")]
    assert per_s[1] > 5 * per_s[0]
    assert per_op[1] < per_op[0]
    # the count per operation is the rate times the run's length over its 10,000 operations
    for side, rate, op in zip(("pipe", "pipe-cpu1"), per_s, per_op):
        dur = [t for s in doc["sides"] if s["label"] == side for t in s["traces"]][0]
        assert op == pytest.approx(rate * dur["duration_s"] / 10000, rel=1e-4)
    assert rows[("context_switches_per_op", "pipe-cpu1")]["pct"] > 0  # better
    assert rows[("context_switches_per_s", "pipe-cpu1")]["pct"] < 0  # worse
    assert any("10000 pipe operations" in n for n in doc["notes"])


@pytest.mark.slow
def test_gate_rules_per_operation_need_the_work(tmp_path):
    rules = parse_rules('[rules.context_switches_per_op]\nallowed = "25%"\n')
    base = sorted(WEIGHT.glob("msg-w1024-r0[1-3].dat"))
    cand = sorted(WEIGHT.glob("msg-w1024-r0[4-6].dat"))
    result = schedwake.gate(base, cand, rules)
    assert result.exit_code == 2
    assert "give the runs' work" in result.results[0].message
    judged = schedwake.gate(base, cand, rules, work="bench")
    assert judged.exit_code == 0 and judged.results[0].status == "pass"
    assert judged.results[0].unit == "/op"
    # a run whose work cannot be found: refused, naming it
    lone = tmp_path / "lone.dat"
    shutil.copy(cand[0], lone)
    result = schedwake.gate(base, [lone, cand[1]], rules, work="bench")
    assert result.exit_code == 2 and "lone.dat" in result.problems[0]


@pytest.mark.slow
def test_with_work_the_default_rules_judge_per_operation(tmp_path):
    """The pinned pipe run against two unpinned baseline runs: per second every count
    rule breaks (a faster run does more of everything a second); with --work the
    default rules judge the counts per operation, and the switches per operation fell."""
    runs = []
    for name in ("a", "b"):  # (the one unpinned recording, as two baseline runs)
        (tmp_path / name).mkdir()
        for src in REFEREE.glob("pipe.dat*"):
            shutil.copy(src, tmp_path / name / src.name)
        runs.append(tmp_path / name / "pipe.dat")
    fast = REFEREE / "pipe-cpu1.dat"
    rules = parse_rules(
        '[rules.context_switches_per_s]\nallowed = "25%"\n'
        '[rules.wakeup_migrations_per_s]\nallowed = "25%"\n'
    )
    per_s = schedwake.gate(runs, fast, rules)
    assert {r.rule.metric: r.status for r in per_s.results}["context_switches_per_s"] == "broken"
    from schedwake.gate import per_work_rule

    per_op = schedwake.gate(
        runs, fast, (rules[0], [per_work_rule(r) for r in rules[1]]), work="bench"
    )
    got = {r.rule.metric: r for r in per_op.results}
    assert set(got) == {"context_switches_per_op", "wakeup_migrations_per_op"}
    assert got["context_switches_per_op"].status == "pass"
    assert got["context_switches_per_op"].gain_pct > 40  # 3.70 -> 2.01 switches an operation
    # the defaults with work: their rates of counts become counts per unit of work
    defaults = schedwake.gate(runs, fast, work="bench")
    assert "context_switches_per_op" in {r.rule.metric for r in defaults.results}
    assert defaults.rules_source == "defaults, per unit of work (--work)"
