"""Datasets that fail closed (issue #23, item 6).

A batch dataset is checked when it is opened (its four files there and readable, the
columns its rows need in their types, a version this one reads): damage is exit code 2
and one line naming the file, in ``compare --from-batch`` and ``gate --from-batch``
(never the gate's exit 1, a verdict), and in ``batch`` run again into it. ``convert``
and ``batch`` write all or nothing: damage found mid-stream leaves no complete-looking
Parquet files behind.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import schedwake
from schedwake.cli import cli
from schedwake.paths import glob_files

from .conftest import ROOT, computed_once, run_cli, run_dir, sample

#: Linux 6.1 with and without the kworker-stacking fix: the gate's verdict is FAIL (exit
#: 1), so that a damaged dataset must turn a verdict into exit 2.
A = "kstack-6.1/k61-dbench-c2-kstack-on-i1.dat"
B = "kstack-6.1/k61-dbench-c2-kstack-off-i1.dat"
#: A trace.dat whose CPU 0 has a zeroed page among good ones (tests/data/hostile).
ZEROED_PAGE = ROOT / "tests" / "data" / "hostile" / "v6-cpu0-page-zeroed.dat"


@pytest.fixture(scope="module")
def dataset() -> Path:
    """A real dataset of two small sample traces, written by ``schedwake batch`` once per
    test run in the run's directory (:func:`computed_once`) and shared by the tests of
    every xdist worker: each damages a copy of it."""
    return Path(computed_once(f"schedwake batch --serial {A} {B}", _batch_of_a_and_b))


def _batch_of_a_and_b() -> str:
    out = Path(tempfile.mkdtemp(prefix="damage-", dir=run_dir())) / "out"
    run_cli("batch", "--serial", A, B, "-o", out, cwd=sample("."), check=True)
    assert {p.name for p in out.iterdir()} == {
        "traces.parquet",
        "findings.parquet",
        "windows.parquet",
        "batch.json",
    }
    return str(out)


def _rewrite(path: Path, edit) -> None:
    pq.write_table(edit(pq.read_table(path)), path)


def _set_column(name: str, array):
    def edit(t: pa.Table) -> pa.Table:
        return t.set_column(t.schema.get_field_index(name), name, array(t))

    return edit


def _random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(4096))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _manifest(edit):
    def damage(out: Path) -> None:
        m = json.loads((out / "batch.json").read_text())
        (out / "batch.json").write_text(json.dumps(edit(m)))

    return damage


#: damage -> (what it does to a copy of the dataset, words of the one stderr line)
DAMAGE = {
    "findings.parquet of random bytes": (
        lambda d: _random_bytes(d / "findings.parquet"),
        ["findings.parquet", "not a readable Parquet file"],
    ),
    "traces.parquet of random bytes": (
        lambda d: _random_bytes(d / "traces.parquet"),
        ["traces.parquet", "not a readable Parquet file"],
    ),
    "windows.parquet truncated": (
        lambda d: _truncate(d / "windows.parquet"),
        ["windows.parquet", "not a readable Parquet file"],
    ),
    "traces.parquet truncated": (
        lambda d: _truncate(d / "traces.parquet"),
        ["traces.parquet", "not a readable Parquet file"],
    ),
    "findings.parquet empty": (
        lambda d: (d / "findings.parquet").write_bytes(b""),
        ["findings.parquet", "0 bytes"],
    ),
    "traces.parquet without path": (
        lambda d: _rewrite(d / "traces.parquet", lambda t: t.drop_columns(["path"])),
        ["traces.parquet", "has no 'path' column"],
    ),
    "traces.parquet without status": (
        lambda d: _rewrite(d / "traces.parquet", lambda t: t.drop_columns(["status"])),
        ["traces.parquet", "has no 'status' column"],
    ),
    "traces.parquet without topology_json": (
        lambda d: _rewrite(d / "traces.parquet", lambda t: t.drop_columns(["topology_json"])),
        ["traces.parquet", "has no 'topology_json' column"],
    ),
    "traces.parquet cpus as text": (
        lambda d: _rewrite(
            d / "traces.parquet",
            _set_column("cpus", lambda t: pa.array(map(str, t.column("cpus").to_pylist()))),
        ),
        ["traces.parquet", "column 'cpus' is string, not int32"],
    ),
    "traces.parquet unknown status": (
        lambda d: _rewrite(
            d / "traces.parquet", _set_column("status", lambda t: pa.array(["maybe"] * len(t)))
        ),
        ["traces.parquet", "'maybe' is neither ok nor error"],
    ),
    "traces.parquet text column that is no label": (
        lambda d: _rewrite(
            d / "traces.parquet", lambda t: t.append_column("junk", pa.array(["x"] * len(t)))
        ),
        ["traces.parquet", "'junk'", "neither a label nor a metric"],
    ),
    "windows.parquet value as text": (
        lambda d: _rewrite(
            d / "windows.parquet",
            _set_column("value", lambda t: pa.array(map(str, t.column("value").to_pylist()))),
        ),
        ["windows.parquet", "column 'value' is string, not double"],
    ),
    "findings.parquet extra column": (
        lambda d: _rewrite(
            d / "findings.parquet",
            lambda t: t.append_column("extra", pa.array([0] * len(t), pa.int64())),
        ),
        ["findings.parquet", "column(s) a batch dataset has not: extra"],
    ),
    "windows.parquet missing": (
        lambda d: (d / "windows.parquet").unlink(),
        ["windows.parquet", "is missing"],
    ),
    "findings.parquet missing": (
        lambda d: (d / "findings.parquet").unlink(),
        ["findings.parquet", "is missing"],
    ),
    "batch.json missing": (lambda d: (d / "batch.json").unlink(), ["batch.json", "is missing"]),
    "batch.json not JSON": (
        lambda d: (d / "batch.json").write_text("{"),
        ["batch.json", "not the JSON manifest"],
    ),
    "batch.json of a newer schedwake": (
        _manifest(lambda m: {**m, "schedwake_version": "99.0.0"}),
        ["schedwake 99.0.0, newer than this one"],
    ),
    "a row's topology not JSON": (
        lambda d: _rewrite(
            d / "traces.parquet",
            _set_column("topology_json", lambda t: pa.array(["{"] * len(t))),
        ),
        ["traces.parquet", "is damaged"],
    ),
}


def _damaged(dataset: Path, tmp_path: Path, name: str) -> Path:
    out = tmp_path / "damaged"
    shutil.copytree(dataset, out)
    DAMAGE[name][0](out)
    return out


def _invoke(args) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], prog_name="schedwake")
    return result.exit_code, result.stdout, result.stderr


def _check(code: int, stdout: str, stderr: str, words) -> None:
    assert code == 2, (code, stdout[-800:], stderr)
    assert "Traceback" not in stdout + stderr and "internal error" not in stdout + stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("name", sorted(DAMAGE))
@pytest.mark.slow
def test_compare_and_gate_refuse_a_damaged_dataset(dataset, tmp_path, name, monkeypatch):
    out = _damaged(dataset, tmp_path, name)
    words = DAMAGE[name][1]
    monkeypatch.chdir(sample("."))
    _check(*_invoke(["compare", "--from-batch", out, A, B]), words)
    _check(*_invoke(["gate", "--from-batch", out, "--baseline", A, "--candidate", B]), words)


@pytest.mark.parametrize(
    "name", ["findings.parquet of random bytes", "traces.parquet without path"]
)
def test_the_issues_reproducers_through_the_console_script(dataset, tmp_path, name):
    """Before: gate exit 1 (a verdict) with a traceback; compare and gate tracebacks."""
    out = _damaged(dataset, tmp_path, name)
    for args in (
        ["gate", "--from-batch", out, "--baseline", A, "--candidate", B],
        ["compare", "--from-batch", out, A, B],
    ):
        proc = run_cli(*args, cwd=sample("."))
        _check(proc.returncode, proc.stdout, proc.stderr, DAMAGE[name][1])


def test_batch_run_again_into_a_damaged_dataset_refuses_it(dataset, tmp_path):
    out = _damaged(dataset, tmp_path, "traces.parquet without status")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    proc = run_cli("batch", "--serial", A, "-o", out, cwd=sample("."))
    _check(proc.returncode, proc.stdout, proc.stderr, ["has no 'status' column"])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_an_intact_dataset_still_judges(dataset, monkeypatch):
    monkeypatch.chdir(sample("."))
    args = ["compare", "--from-batch", dataset, A, B, "--format", "json", "--samples", "window"]
    code, out, err = _invoke(args)
    assert code == 0, err
    assert json.loads(out)["samples"]["kind"] == "per-window"
    # (one run a side: its windows, asked for)
    args = ["gate", "--from-batch", dataset, "--baseline", A, "--candidate", B, "--samples"]
    code, out, err = _invoke(args + ["window"])
    assert code == 1 and "FAIL" in out and "why: kworker_pingpong" in out, (out, err)


def test_a_damaged_finding_is_exit_2_not_a_verdict(dataset, tmp_path, monkeypatch):
    """A finding whose JSON is not what batch wrote: the gate reads the findings to
    explain a broken rule, and must not give its FAIL (exit 1) from half a dataset."""
    out = tmp_path / "damaged"
    shutil.copytree(dataset, out)
    _rewrite(out / "findings.parquet", _set_column("top", lambda t: pa.array(["[{"] * len(t))))
    monkeypatch.chdir(sample("."))
    code, stdout, stderr = _invoke(
        ["gate", "--from-batch", out, "--baseline", A, "--candidate", B, "--samples", "window"]
    )
    _check(code, stdout, stderr, ["findings.parquet", "a finding of", "is damaged"])


def test_a_failed_batch_write_leaves_the_earlier_dataset(dataset, tmp_path, monkeypatch):
    """The dataset's files are all written beside before any replaces its old one: a
    write that fails half-way (disk full) leaves the earlier dataset whole."""
    writer = importlib.import_module("schedwake.batch.writer")  # (schedwake.batch is the function)
    out = tmp_path / "out"
    shutil.copytree(dataset, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = writer.pq.write_table

    def fail_on_findings(table, where, **kw):
        if "findings" in str(where):
            raise OSError(28, "No space left on device")
        return real(table, where, **kw)

    monkeypatch.setattr(writer.pq, "write_table", fail_on_findings)
    with pytest.raises(OSError):  # (a small trace: what it is does not matter here)
        schedwake.batch([str(sample("idle-sleep.dat"))], out, scheduler="serial", force=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


# -- convert: nothing half-written looks like a result ------------------------------------------


@pytest.fixture
def small_batches(monkeypatch):
    """trace.dat read in batches of 100 records, so that the damage of a small file is
    found after some tables were written (a real file finds it after a million)."""
    from schedwake.ingest import tracedat

    monkeypatch.setattr(
        tracedat, "iter_batches", functools.partial(tracedat.iter_batches, batch_rows=100)
    )


def test_convert_interrupted_by_damage_leaves_no_tables(tmp_path, small_batches):
    out = tmp_path / "tables"
    code, stdout, stderr = _invoke(["convert", ZEROED_PAGE, "-o", out])
    _check(code, stdout, stderr, ["v6-cpu0-page-zeroed.dat", "zeros"])
    assert not out.exists()  # made by convert, removed with what it wrote
    # into a directory that was there: it keeps what it had, and nothing more
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, stdout, stderr = _invoke(["convert", ZEROED_PAGE, "-o", out])
    assert code == 2 and [p.name for p in out.iterdir()] == ["notes.txt"]


@pytest.mark.slow
def test_convert_of_a_whole_trace_in_batches(tmp_path, small_batches):
    out = tmp_path / "tables"
    code, stdout, stderr = _invoke(["convert", sample("idle-sleep.dat"), "-o", out])
    assert code == 0, stderr
    names = sorted(p.name for p in out.iterdir())
    assert "metadata.json" in names and "sched_switch.parquet" in names
    assert not [n for n in names if n.startswith(".")]  # no staging directory left
    meta = json.loads((out / "metadata.json").read_text())
    assert pq.read_table(out / "sched_switch.parquet").num_rows == meta["tables"]["sched_switch"]


def test_convert_of_a_damaged_trace_by_the_console_script(tmp_path):
    out = tmp_path / "tables"
    proc = run_cli("convert", ZEROED_PAGE, "-o", out)
    _check(proc.returncode, proc.stdout, proc.stderr, ["v6-cpu0-page-zeroed.dat"])
    assert not out.exists()


def test_batch_over_symlink_loops(tmp_path):
    """A directory with symbolic links in a loop (a link to itself, two links to each
    other, a link to its own parent directory): the trace in it is analysed once, and a
    loop named as a trace is an error row; nothing hangs."""
    root = tmp_path / "runs"
    (root / "sub").mkdir(parents=True)
    shutil.copy(sample("idle-sleep.dat"), root / "sub" / "idle.dat")
    (root / "sub" / "up").symlink_to("..")
    (root / "self.dat").symlink_to("self.dat")
    (root / "a.dat").symlink_to("b.dat")
    (root / "b.dat").symlink_to("a.dat")
    # compare's and gate's --side/--baseline globs too
    assert glob_files(f"{root}/**/*.dat") == [str(root / "sub" / "idle.dat")]
    out = tmp_path / "out"
    proc = run_cli("batch", "--serial", root, f"{root}/**/*.dat", "-o", out)
    assert proc.returncode == 0, proc.stderr
    # (glob's ** followed sub/up back into runs/: 41 names of the one trace, analysed 41 times)
    assert proc.stdout.startswith("batch: 1 trace(s) analysed"), proc.stdout
    proc = run_cli("batch", "--serial", root / "self.dat", "-o", out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "self.dat" in proc.stderr
