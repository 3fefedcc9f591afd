"""Side-file values (#37): every value a benchmark's results, the kernel's counters, a
perf stat output or a topology brings in passes :mod:`schedwake.sidevalues`, and a bad
one refuses the file in one line naming it and the key (exit 2), never a traceback
(a 4,000-digit integer, a lone surrogate), a silently null result (1e400, a sum beyond
a float) or a printed impossible value (a negative throughput or percentile).

The regression inputs are in tests/data/side_values/: each file's name ends in the
suffix it takes beside a trace (``.bench.json``, ``.fio.json``, ``.dbench.txt``,
``.counters.json``, ``.perf-stat.txt``, ``.topology.json``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from schedwake import sidevalues
from schedwake.bench import parse_dbench, parse_fio, parse_output, parse_sidecar
from schedwake.errors import TraceError

from .conftest import SAMPLES, run_cli

DATA = Path(__file__).parent / "data" / "side_values"

#: file -> what its one line says (besides the file's name)
EXPECTED = {
    "bench-int-4000-digits.bench.json": "an integer of 4000 digits",
    "bench-int-5000-digits.bench.json": "an integer of 5000 digits",
    "bench-key-twice.bench.json": "key 'tput' is given twice",
    "bench-unit-newline.bench.json": "tput.unit 'MB/s\\nPASS",
    "bench-unit-surrogate.bench.json": "tput.unit '\\ud800' holds the character U+D800",
    "bench-value-1e400.bench.json": "the number 1e400 is beyond a float",
    "counters-int-5000-digits.counters.json": "an integer of 5000 digits",
    "counters-key-twice.counters.json": "key 'format' is given twice",
    "dbench-latency-negative.dbench.txt": "dbench max_latency -10.837 is negative",
    "dbench-throughput-1e400.dbench.txt": "dbench Throughput 1e400 is out of range",
    "dbench-throughput-negative.dbench.txt": "dbench Throughput -253.54 is negative",
    "fio-bw-sum-beyond-range.fio.json": "the jobs' write bw 1.8e+18 is out of range",
    "fio-bw-sum-inf.fio.json": "jobs[0].write.bw 1.7e+308 is out of range",
    "fio-clat-p99-negative.fio.json": "jobs[0].write.clat_ns.percentile.99.000000 -5 is negative",
    "fio-client-stats-not-a-list.fio.json": "client_stats must be a list of jobs",
    "fio-client-stats-not-jobs.fio.json": "client_stats[0] is not a job",
    "fio-iops-4000-digits.fio.json": "an integer of 4000 digits",
    "fio-iops-negative.fio.json": "jobs[0].write.iops -100.0 is negative",
    "fio-key-twice.fio.json": "key 'iops' is given twice",
    "perf-stat-cpu-5000-digits.perf-stat.txt": "line 1: CPU999999999... is not a CPU",
    "perf-stat-event-escape.perf-stat.txt": "event name 'context-switches\\x1b[2J' is not a name",
    "topology-cpulist-5000-digits.topology.json": "bad cpulist '0-9999",
    "topology-int-5000-digits.topology.json": "an integer of 5000 digits",
    "topology-key-twice.topology.json": "key 'llc' is given twice",
}


def test_every_regression_input_is_listed():
    assert sorted(p.name for p in DATA.iterdir()) == sorted(EXPECTED)


def _beside(tmp_path: Path, name: str) -> Path:
    """A trace ``run.dat`` with the regression input ``name`` beside it."""
    trace = tmp_path / "run.dat"
    trace.symlink_to(SAMPLES / "idle-sleep.dat")
    suffix = name.split(".", 1)[1]
    shutil.copyfile(DATA / name, tmp_path / f"run.{suffix}")
    return tmp_path / f"run.{suffix}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_bad_side_value_is_one_line_naming_the_file_and_key(tmp_path, name):
    side = _beside(tmp_path, name)
    proc = run_cli("analyze", tmp_path / "run.dat", subprocess=True)
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    assert proc.stderr == f"schedwake: {side}: " + proc.stderr.split(": ", 2)[2]
    assert proc.stderr.count("\n") == 1 and len(proc.stderr) < 400, proc.stderr
    assert EXPECTED[name] in proc.stderr and "Traceback" not in proc.stderr


def test_the_recorded_command_output_refuses_an_impossible_value(tmp_path):
    # recognised dbench output in TRACE.cmd.txt: a negative throughput is refused too
    text = (DATA / "dbench-throughput-negative.dbench.txt").read_text()
    with pytest.raises(sidevalues.SideValueError, match="is negative"):
        parse_output(text, tmp_path / "run.dat.cmd.txt")
    # output that is neither fio's nor dbench's is still passed over
    assert parse_output("hello\n", tmp_path / "run.dat.cmd.txt") == []


def test_the_checks_keep_real_values():
    got = parse_sidecar('{"t": {"value": -3.5, "direction": "lower", "unit": "°C"}}', "x")
    assert got[0].value == -3.5 and got[0].unit == "°C"  # a result's sign is the file's
    (r,) = [
        r
        for r in parse_dbench("Throughput 0 MB/sec  2 clients  2 procs\n", "d")
        if "throughput" in r.name
    ]
    assert r.value == 0.0
    doc = '{"jobs": [{"write": {"io_bytes": 1, "iops": 0, "bw": 1e18}}]}'
    assert parse_fio(doc, "f")[1].value == pytest.approx(1e18 / 1024)


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: sidevalues.number("f", "k", float("nan")), "k nan is out of range"),
        (lambda: sidevalues.number("f", "k", 10**30), "is out of range"),
        (lambda: sidevalues.number("f", "k", -1), "k -1 is negative"),
        (lambda: sidevalues.total("f", "sum", [9e17, 9e17]), "sum 1.8e+18 is out of range"),
        (lambda: sidevalues.text("f", "k", "a\u2028b"), "U+2028"),
        (lambda: sidevalues.text("f", "k", "x" * 5000), "longer than 4096"),
        (lambda: sidevalues.load_json("[Infinity]", "f"), "Infinity is not a finite number"),
        (lambda: sidevalues.load_json("[" * 100000, "f"), "not JSON"),
    ],
)
def test_the_value_layer(call, says):
    with pytest.raises(TraceError, match=None) as err:
        call()
    assert says in str(err.value) and str(err.value).startswith("f: ")
