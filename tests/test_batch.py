"""schedwake batch: many real traces on a real Dask cluster into one Parquet dataset,
and compare/gate judged from that dataset.

The runs with Dask are the real command in a subprocess; the serial runs and the
commands over their dataset run in this process (click's CliRunner). The clusters are real: a
``distributed.LocalCluster`` of two worker processes (``--workers 2``), and a ``dask
scheduler`` with two worker processes (``dask worker --nworkers 2``) started here on
127.0.0.1 on free ports (one of them killed while it analyses a trace). Each result is
checked against a serial run (``--serial``: the same analysis in one process, no Dask;
made once per test run and read by the tests of every worker), and the dataset's
comparisons and verdicts against the same commands over the traces.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schedwake
from schedwake.analysis.metrics import metric_samples
from schedwake.batch import BatchDataset, label_columns
from schedwake.cli import common as cli_common
from schedwake.compare import default_window
from schedwake.model import MODEL_EVENTS
from schedwake.report import compare as compare_report

from .conftest import ROOT, computed_once, run_cli, run_dir

#: batch runs over the sample sets, serially and on Dask clusters: minutes in all
pytestmark = pytest.mark.slow

KSTACK = "sample_traces/kstack-6.1"
LABELS = r"k61-(?:2llc-)?dbench-c(?P<clients>\d+)-kstack-(?P<mode>on|off)(?:-i(?P<iter>\d+))?"
#: Columns that differ between two analyses of the same trace: when and how long.
VOLATILE = ["analysed_at", "seconds"]


def _corrupt(dirpath: Path) -> Path:
    """A real trace cut in the middle of its data: it must be an error row."""
    src = ROOT / KSTACK / "k61-dbench-c2-kstack-on-i1.dat"
    bad = dirpath / "truncated.dat"
    bad.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    return bad


def _inputs(tmp: Path, kstack: str = "*.dat") -> list[str]:
    """The batch's inputs: the kstack-6.1 traces ``kstack`` matches, a small trace of
    another machine, a truncated trace and a pattern that matches nothing."""
    return [f"{KSTACK}/{kstack}", "sample_traces/idle-sleep.dat", str(_corrupt(tmp)), "nope/*.dat"]


def _batch(*args, cwd=ROOT, process: bool = False) -> subprocess.CompletedProcess:
    """``schedwake batch ARGS``: in this process, or with ``process=True`` (where Dask
    clusters start or are reached) as the console script in a subprocess."""
    return run_cli("batch", *args, cwd=cwd, subprocess=process)


def _tables(out: Path) -> dict[str, pd.DataFrame]:
    return {
        "traces": pd.read_parquet(out / "traces.parquet").drop(columns=VOLATILE),
        "findings": pd.read_parquet(out / "findings.parquet"),
        "windows": pd.read_parquet(out / "windows.parquet"),
    }


def assert_same_dataset(a: Path, b: Path, paths: list[str] | None = None) -> None:
    """Equal tables, but for the truncated copy of each run (another temporary
    directory: its row differs by path); with ``paths``, ``a``'s rows of those traces
    only (and ``b`` has no other rows)."""
    ta, tb = _tables(a), _tables(b)
    if paths is not None:
        ta = {name: t[t.path.isin(paths)] for name, t in ta.items()}
    for t in (ta, tb):
        t["traces"] = t["traces"][~t["traces"].path.str.endswith("truncated.dat")]
        for name in t:
            t[name] = t[name].reset_index(drop=True)
    for name in ta:
        pd.testing.assert_frame_equal(ta[name], tb[name], obj=name)


@pytest.fixture(scope="module")
def serial() -> Path:
    """The reference: the inputs analysed in one process, one after the other. Made once
    per test run in the run's directory (:func:`computed_once`) and shared by the tests of
    every xdist worker, which only read it (one that writes works on a copy)."""
    return Path(computed_once("schedwake batch --serial: test_batch inputs", _serial_batch))


def _serial_batch() -> str:
    tmp = Path(tempfile.mkdtemp(prefix="batch-serial-", dir=run_dir()))
    out = tmp / "out"
    proc = _batch("--serial", *_inputs(tmp), "-o", out, "--label-from", LABELS)
    assert proc.returncode == 2, proc.stderr  # the truncated trace and the missing glob
    assert proc.stdout.strip() == f"batch: 9 trace(s) analysed, 2 could not be analysed -> {out}"
    # one line on stderr per trace that could not be analysed, and nothing else
    assert len(proc.stderr.splitlines()) == 2, proc.stderr
    return str(out)


def test_one_row_per_trace_with_its_status(serial):
    t = pd.read_parquet(serial / "traces.parquet")
    assert len(t) == 11 and list(t.columns[:3]) == ["path", "status", "error"]
    ok = t[t.status == "ok"]
    assert sorted(ok.path) == sorted(
        [f"{KSTACK}/{p.name}" for p in (ROOT / KSTACK).glob("*.dat")]
        + ["sample_traces/idle-sleep.dat"]
    )
    assert ok.error.isna().all()
    bad = t[t.status == "error"].set_index("path")
    truncated = next(p for p in bad.index if p.endswith("truncated.dat"))
    assert bad.loc[truncated, "error"].startswith(f"{truncated}: ")
    assert "\n" not in bad.loc[truncated, "error"]
    assert bad.loc["nope/*.dat", "error"] == "nope/*.dat: the pattern matches no file"
    # the labels: named groups of --label-from as columns, integers where all are
    assert list(t.columns[3:6]) == ["clients", "mode", "iter"]
    row = t.set_index("path").loc[f"{KSTACK}/k61-dbench-c2-kstack-off-i2.dat"]
    assert (row.clients, row["mode"], row["iter"]) == (2, "off", 2)
    schema = pq.read_schema(serial / "traces.parquet")
    assert schema.field("clients").type == pa.int64() == schema.field("iter").type


def test_rows_carry_what_analyze_says(serial):
    """Every metric of `schedwake analyze --format json` is a column of the same name and
    value; the facts of the trace and its topology are those analyze reports."""
    path = f"{KSTACK}/k61-2llc-dbench-c2-kstack-off.dat"
    proc = run_cli("analyze", path, "--format", "json", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    row = pd.read_parquet(serial / "traces.parquet").set_index("path").loc[path]
    metrics = dict(doc["metrics"])
    busy = metrics.pop("busy_share")
    for name, value in metrics.items():
        assert (pd.isna(row[name]) and value is None) or row[name] == value, name
    for cpu, value in busy.items():
        assert row[f"busy_share_cpu{cpu}"] == value
    facts = doc["trace"]
    assert row.cpus == facts["cpus"] == 8 and row.kernel == facts["kernel"]
    assert row.events == sum(facts["events"].values())
    assert row.topology_source == facts["topology"]["source"] == "file"
    assert (
        [list(g) for g in row.topology_llc]
        == facts["topology"]["llc"]
        == [[0, 1, 2, 3], [4, 5, 6, 7]]
    )
    assert list(row.caveats) == doc["caveats"]
    assert row.findings == len(doc["findings"]) == 2
    f = pd.read_parquet(serial / "findings.parquet")
    f = f[f.path == path]
    assert list(f.detector) == [x["detector"] for x in doc["findings"]]
    assert [json.loads(m) for m in f.metrics] == [x["metrics"] for x in doc["findings"]]
    assert [list(e) for e in f.evidence] == [x["evidence"] for x in doc["findings"]]
    assert [json.loads(e) for e in f.evidence_events] == [
        x["evidence_events"] for x in doc["findings"]
    ]
    assert all(title for title in f.title)


def test_windows_are_the_comparison_samples(serial):
    """windows.parquet holds, for each trace, metric_samples() at its default window."""
    path = f"{KSTACK}/k61-dbench-c2-kstack-on-i1.dat"
    trace = schedwake.load(ROOT / path, events=list(MODEL_EVENTS))
    window = default_window([trace.duration_ns / 1e9])
    trace.meta = dataclasses.replace(trace.meta, path=path)
    want = metric_samples(trace, window)
    w = pd.read_parquet(serial / "windows.parquet")
    got = w[w.path == path]
    assert set(got.window_s) == {window}
    assert got.value.to_numpy().tobytes() == want.value.to_numpy().tobytes()
    assert list(got.metric) == list(want.metric)


def test_a_local_cluster_gives_the_serial_result(serial, tmp_path):
    """The LocalCluster ``--workers 2`` starts, on three of the traces (two of the 8-CPU
    guest, one of the 2-CPU host) and the two inputs that are errors: the dataset is the
    serial run's rows of them. (The other traces on a cluster: the separate cluster's
    test; every trace is analysed on one of the two clusters.)"""
    out = tmp_path / "out"
    inputs = _inputs(tmp_path, kstack="*-i1.dat")
    proc = _batch(*inputs, "-o", out, "--label-from", LABELS, "--workers", "2", process=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.strip() == f"batch: 3 trace(s) analysed, 2 could not be analysed -> {out}"
    paths = [f"{KSTACK}/k61-dbench-c2-kstack-{m}-i1.dat" for m in ("on", "off")]
    assert_same_dataset(serial, out, paths=[*paths, "sample_traces/idle-sleep.dat", "nope/*.dat"])


def test_traces_in_parts_give_the_serial_result(serial, tmp_path):
    """``--partitions 3`` on the LocalCluster of two workers: every trace that can be cut
    is analysed in three time parts over both workers (the client joining them), and
    the rows, findings and windows are the serial run's (whole traces) of them; the
    truncated trace is still an error row, one line."""
    out = tmp_path / "out"
    inputs = _inputs(tmp_path, kstack="*-on-i2.dat")
    proc = _batch(*inputs, "-o", out, "--label-from", LABELS, "--workers", "2",
                  "--partitions", "3", process=True)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.strip() == f"batch: 2 trace(s) analysed, 2 could not be analysed -> {out}"
    assert len(proc.stderr.splitlines()) == 2 and "truncated.dat" in proc.stderr, proc.stderr
    paths = [f"{KSTACK}/k61-dbench-c2-kstack-on-i2.dat", "sample_traces/idle-sleep.dat"]
    assert_same_dataset(serial, out, paths=[*paths, "nope/*.dat"])


def test_which_traces_are_cut(tmp_path):
    """auto: a trace that needs more than one worker's memory is cut into at least one
    part per worker; a small one, a text trace and a trace with the kernel's counters
    beside it are analysed whole; an int cuts what can be cut."""
    from schedwake.batch.inputs import Options
    from schedwake.batch.run import fits, partitions_of
    from schedwake.partition.driver import PART_MEMORY_SHARE, WORKER_BASE_BYTES

    big = str(ROOT / KSTACK / "k61-dbench-c2-kstack-off-i1.dat")
    opts = Options()
    tiny = int((WORKER_BASE_BYTES + 20_000 * 1400) / PART_MEMORY_SHARE)  # (20 k events a part)
    assert partitions_of(big, opts, "auto", 64 << 30, 2) == 1
    n = partitions_of(big, opts, "auto", tiny, 2)
    assert n > 2
    assert partitions_of(big, opts, "auto", tiny, 4 * n) == 4 * n
    assert partitions_of(big, opts, 3, 64 << 30, 2) == 3
    assert partitions_of(big, opts, 1, tiny, 2) == 1
    assert fits(big, 64 << 30) and not fits(big, tiny)  # (by its size: no look inside)
    assert fits(str(tmp_path / "missing.dat"), tiny)  # (whole: its error row)
    small = str(ROOT / "sample_traces" / "idle-sleep.dat")
    assert partitions_of(small, opts, "auto", tiny, 2) == 1
    text = tmp_path / "report.txt"
    text.write_text("cpus=1\n" + "x" * (1 << 20))
    assert partitions_of(str(text), opts, 3, tiny, 2) == 1
    beside = ROOT / "sample_traces" / "cgroup-weight" / "msg-w1024-r01.dat"
    assert partitions_of(str(beside), opts, 3, tiny, 2) == 1


def test_a_rerun_skips_what_is_done(tmp_path):
    # two small real traces with their topologies (what is analysed again does not
    # depend on a trace's size)
    for src, name in (("nonutf8-comm", "run-on-i1"), ("idle-sleep", "run-off-i1")):
        for ext in (".dat", ".topology.json"):
            shutil.copy(ROOT / "sample_traces" / f"{src}{ext}", tmp_path / f"{name}{ext}")
    out = tmp_path / "out"
    first = _batch("--serial", "*-i1.dat", "-o", out, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = pd.read_parquet(out / "traces.parquet").set_index("path")
    again = _batch("--serial", "*-i1.dat", "-o", out, cwd=tmp_path)
    assert again.stdout.startswith("batch: 0 trace(s) analysed, 2 already done")
    after = pd.read_parquet(out / "traces.parquet").set_index("path")
    assert (after.analysed_at == before.analysed_at).all()
    # a file that changed is analysed again; the other stays
    os.utime(tmp_path / "run-on-i1.dat")
    third = _batch("--serial", "*-i1.dat", "-o", out, cwd=tmp_path)
    assert third.stdout.startswith("batch: 1 trace(s) analysed, 1 already done"), third.stdout
    # other options (a threshold) make other results: everything again
    fourth = _batch(
        "--serial", "*-i1.dat", "-o", out, "--threshold", "pingpong_min_episodes=5", cwd=tmp_path
    )
    assert fourth.stdout.startswith("batch: 2 trace(s) analysed"), fourth.stdout
    assert _batch("--serial", "*.dat", "-o", out, "--force", cwd=tmp_path).stdout.startswith(
        "batch: 2 trace(s) analysed"
    )
    # a trace of another run stays in the dataset
    shutil.copy(ROOT / "sample_traces/idle-sleep.dat", tmp_path / "idle.dat")
    fifth = _batch("--serial", "idle.dat", "-o", out, cwd=tmp_path)
    assert fifth.stdout.startswith("batch: 1 trace(s) analysed"), fifth.stdout
    assert len(pd.read_parquet(out / "traces.parquet")) == 3
    # a dataset of a version with other metric names is refused, not mixed with new rows
    manifest = json.loads((out / "batch.json").read_text())
    (out / "batch.json").write_text(json.dumps({**manifest, "schedwake_version": "0.1.0"}))
    for proc in (
        _batch("--serial", "idle.dat", "-o", out, cwd=tmp_path),
        run_cli("compare", "--from-batch", out, "--side", "a=*on*", "--side", "b=*off*"),
    ):
        assert proc.returncode == 2
        assert "batch dataset of schedwake 0.1.0, whose metric names" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


# -- compare and gate from the dataset ----------------------------------------------------------


#: The CLI's reader, which traces_read_once stands in for.
_CLI_LOAD = cli_common.load


@functools.cache
def _read_once(cwd: str, path: str, events: tuple[str, ...] | None, input_format, reader, kallsyms):
    return _CLI_LOAD(
        path, None if events is None else list(events), input_format, reader, None, kallsyms
    )


@pytest.fixture
def traces_read_once(monkeypatch):
    """compare and gate over the traces (the commands the dataset's answers are checked
    against) read each trace once in this process: the CLI's reader gives the Trace it
    read before for the same file, events, format, reader and working directory, as a
    Python user passes the same Trace objects to compare and gate, which only read them.
    Each trace's model is then built once, not in each of the commands over the same
    traces."""

    def load(path, events=None, input_format=None, reader=None, jobs=None, kallsyms=None):
        if path == "-":  # (standard input: read as it comes)
            return _CLI_LOAD(path, events, input_format, reader, jobs, kallsyms)
        events = None if events is None else tuple(events)
        return _read_once(os.getcwd(), path, events, input_format, reader, kallsyms)

    monkeypatch.setattr(cli_common, "load", load)


def _same_output(args: list[str], serial: Path, rc: int) -> str:
    over_traces = run_cli(*args, cwd=ROOT)
    from_batch = run_cli(args[0], "--from-batch", serial, *args[1:], cwd=ROOT)
    assert over_traces.returncode == rc, over_traces.stderr
    assert from_batch.returncode == rc, from_batch.stderr
    assert from_batch.stdout == over_traces.stdout
    return from_batch.stdout


def test_compare_from_batch_gives_the_same_table(serial, traces_read_once):
    on, off = f"{KSTACK}/*-c2-kstack-on-i*.dat", f"{KSTACK}/*-c2-kstack-off-i*.dat"
    # per-trace samples (three iterations a side), text and JSON
    text = _same_output(["compare", "--side", f"fix={on}", "--side", f"nofix={off}"], serial, 0)
    assert "pingpong_episodes_per_s" in text and "*" in text
    _same_output(
        ["compare", "--side", f"fix={on}", "--side", f"nofix={off}", "--format", "json"], serial, 0
    )
    # per-window samples (one trace a side)
    one = [f"{KSTACK}/k61-dbench-c2-kstack-on-i1.dat", f"{KSTACK}/k61-dbench-c2-kstack-off-i1.dat"]
    text = _same_output(["compare", *one, "--format", "markdown"], serial, 0)
    assert "per-window" in text or "window" in text


def test_html_from_batch_has_tables_findings_and_samples_plots(serial, tmp_path):
    html = tmp_path / "r.html"
    proc = run_cli(
        "compare", "--from-batch", serial, "--side", f"on={KSTACK}/*-c2-kstack-on-i*.dat",
        "--side", f"off={KSTACK}/*-c2-kstack-off-i*.dat", "--html", html, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    page = html.read_text()
    # the findings of the off side, with their evidence; the plot made from samples only
    assert page.count("kworker_pingpong</b>") == 3 and "evidence (trace-cmd report -N" in page
    assert page.count("<figure") == 1 and "Per-CPU busy share" in page


def test_compare_from_batch_where_and_errors(serial, tmp_path, traces_read_once):
    proc = run_cli(
        "compare", "--from-batch", serial, "--where", "mode=off",
        "--side", "a=**/*-i[12].dat", "--side", "b=**/*-i3.dat", cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    want = run_cli(
        "compare", "--side", f"a={KSTACK}/*off-i[12].dat", "--side", f"b={KSTACK}/*off-i3.dat",
        cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout == want.stdout
    # a window the batch did not store, an unknown column, a trace that was an error row
    cases = [
        ([f"{KSTACK}/k61-dbench-c2-kstack-on-i1.dat", "sample_traces/idle-sleep.dat",
          "--samples", "window"], "run schedwake batch with --window 0.2"),
        (["--where", "kernel2=1", "a", "b"], "has no column 'kernel2'"),
        (["**/truncated.dat", f"{KSTACK}/k61-dbench-c2-kstack-on-i1.dat"], "truncated.dat: "),
        (["nothing*", "b"], "matches no trace of the batch"),
        ([str(tmp_path / "x.dat"), "b", "--llc", "0-3"], "--topology/--llc do not apply"),
    ]  # fmt: skip
    for args, message in cases:
        proc = run_cli("compare", "--from-batch", serial, *args, cwd=ROOT)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_gate_from_batch_gives_the_same_verdict(serial, traces_read_once):
    on, off = f"{KSTACK}/*-c2-kstack-on-i*.dat", f"{KSTACK}/*-c2-kstack-off-i*.dat"
    text = _same_output(["gate", "--baseline", on, "--candidate", off], serial, 1)
    assert "FAIL" in text
    _same_output(["gate", "--baseline", off, "--candidate", on], serial, 0)
    # a side naming a trace that could not be analysed: judged as an unreadable trace
    proc = run_cli(
        "gate", "--from-batch", serial, "--baseline", on, "--candidate", "**/truncated.dat",
        cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2 and "truncated.dat" in proc.stdout


def test_the_dataset_api(serial):
    ds = BatchDataset(serial)
    assert len(ds.traces) == 11
    off = ds.where(mode="off")
    assert len(off.traces) == 4 and set(off.findings.detector) >= {"kworker_pingpong"}
    paths = off.expand("**/*-i*.dat")
    assert len(paths) == 3 and all("-off-i" in p for p in paths)
    t = off.load(paths[0])
    assert t.meta.cpus == 8 and t.has_records("sched_waking")
    assert len(off.windows(paths)) > 0
    result = schedwake.compare(
        {"a": [off.load(p) for p in paths[:2]], "b": [t, off.load(paths[2])]}
    )
    assert "pingpong_episodes_per_s" in compare_report.text(result)
    assert label_columns(["a/x-i3.dat", "b"], r"-i(?P<iter>\d+)") == {"iter": [3, None]}


def test_bad_options_are_one_line(tmp_path):
    cases = [
        (["x.dat", "-o", tmp_path / "o", "--label-from", "(a"], "--label-from: not a regular"),
        (["x.dat", "-o", tmp_path / "o", "--label-from", "a"], "no named group"),
        (["x.dat", "-o", tmp_path / "o", "--label-from", "(?P<cpus>.)"], "are columns"),
        (["x.dat", "-o", tmp_path / "o", "--threshold", "nope=1"], "unknown threshold"),
    ]
    for args, message in cases:
        proc = _batch(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    proc = _batch("x.dat", "-o", ROOT / "README.md")  # click's usage error
    assert proc.returncode == 2 and "is a file" in proc.stderr
    proc = run_cli("compare", "--from-batch", tmp_path, "a", "b")
    assert proc.returncode == 2 and "no batch dataset here" in proc.stderr


# -- a cluster of separate processes -----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask(*args, cwd) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("dask")
    return subprocess.Popen(
        [str(exe), *map(str, args)],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``dask scheduler`` and two worker processes on 127.0.0.1 (one ``dask worker
    --nworkers 2``: one process of nannies for both, not a process of its own for each
    nanny), started in a directory of their own (the batch must hand them absolute
    paths), killed at the end (with their process groups: the nannies and what they
    started; nothing of theirs needs a clean exit, which takes a second or two)."""
    from distributed import Client

    cwd = tmp_path_factory.mktemp("cluster")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [_dask("scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard", cwd=cwd)]
    try:
        procs.append(
            _dask(
                "worker",
                address,
                "--nworkers",
                "2",
                "--nthreads",
                "1",
                "--host",
                "127.0.0.1",
                "--no-dashboard",
                "--memory-limit",
                "4GiB",
                cwd=cwd,
            )
        )
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
        for p in procs:
            p.wait(timeout=20)


def test_a_separate_cluster_with_a_worker_killed_mid_trace_gives_the_serial_result(
    serial, cluster, tmp_path
):
    """The inputs that the LocalCluster's test does not analyse (its six traces, and the
    two inputs that are errors) on the cluster of separate processes, one of whose
    workers is killed while it analyses a trace: the batch completes with every trace,
    and its dataset is the serial run's rows of them (one run checks both, on one
    cluster: a second batch would analyse the same traces again)."""
    from distributed import Client

    out = tmp_path / "out"
    inputs = [
        f"{KSTACK}/*-2llc-*.dat",
        f"{KSTACK}/*-i[23].dat",
        str(_corrupt(tmp_path)),
        "nope/*.dat",
    ]
    batch = subprocess.Popen(
        [str(Path(sys.executable).with_name("schedwake")), "batch", *inputs,
         "-o", out, "--label-from", LABELS, "--scheduler", cluster],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    killed = None
    with Client(cluster, timeout="30s") as client:
        deadline = time.monotonic() + 60
        while killed is None and time.monotonic() < deadline and batch.poll() is None:
            busy = [w for w, keys in client.processing().items() if keys]
            if busy:
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                if client.processing().get(busy[0]):  # still analysing a trace
                    os.kill(pid, signal.SIGKILL)
                    killed = pid
            time.sleep(0.01)
    stdout, stderr = batch.communicate(timeout=300)
    assert killed is not None, "no worker was seen analysing a trace"
    assert batch.returncode == 2, stderr  # the truncated trace and the missing glob
    assert stdout.strip() == f"batch: 6 trace(s) analysed, 2 could not be analysed -> {out}"
    # nothing lost: every row is the serial run's (the truncated copy's error names its
    # own directory), the trace of the killed worker too
    mine = [
        f"{KSTACK}/{p.name}"
        for p in (ROOT / KSTACK).glob("*.dat")
        if "-2llc-" in p.name or p.name.endswith(("-i2.dat", "-i3.dat"))
    ]
    assert len(mine) == 6
    assert_same_dataset(serial, out, paths=[*mine, "nope/*.dat"])
    assert _truncated_error(out) == _truncated_error(serial)


def _truncated_error(out: Path) -> str:
    """The error of a dataset's truncated trace, with its path (a run's own) as TRACE."""
    rows = pd.read_parquet(out / "traces.parquet").set_index("path").error
    (path,) = [p for p in rows.index if p.endswith("truncated.dat")]
    return rows[path].replace(path, "TRACE")


def test_an_unreachable_scheduler_is_one_line(tmp_path):
    proc = _batch(
        f"{KSTACK}/*.dat",
        "-o",
        tmp_path / "o",
        "--scheduler",
        f"tcp://127.0.0.1:{_free_port()}",
    )  # (in this process: refused before any Dask client is made)
    assert proc.returncode == 2
    assert "cannot reach the Dask scheduler" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
