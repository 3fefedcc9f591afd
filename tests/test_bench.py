"""The benchmark's results beside the trace (#24 item 2): fio's JSON and dbench's output
parsed from real runs, sidecars refused when malformed, and the ``bench_*`` metrics in
analyze, compare (stars), gate rules and batch columns.

The real results: fio's JSON files recorded with sample_traces/storm/ (``runN.fio.json``
beside ``runN.dat``), the dbench output kept in perf-dbench-z.perf.data.meta.txt, and
the dbench throughput of the kstack-6.1 runs in sample_traces/dbench-throughput.csv
(written beside symlinked traces as ``TRACE.bench.json`` in a temporary directory).
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil

import pandas as pd
import pytest

import schedwake
from schedwake.analysis.metrics import catalogue_entry, metric_samples
from schedwake.bench import parse_dbench, parse_fio, parse_output, read_beside
from schedwake.errors import TraceError
from schedwake.report import compare as compare_report
from schedwake.report.compare import rule_line_of

from .conftest import SAMPLES, run_cli, shared_model_trace

STORM = SAMPLES / "storm"
KSTACK = SAMPLES / "kstack-6.1"
PERF_META = SAMPLES / "perf" / "perf-dbench-z.perf.data.meta.txt"


def _fio_job_write(path) -> dict:
    """The write part of the (one) job of a real fio JSON file, read independently."""
    doc = json.loads(path.read_text())
    assert len(doc["jobs"]) == 1
    return doc["jobs"][0]["write"]


# -- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("run", ["root/run8", "root/run10", "weighted/run3"])
def test_fio_json_of_the_storm_runs(run):
    path = STORM / f"{run}.fio.json"
    w = _fio_job_write(path)
    got = {r.name: r for r in parse_fio(path.read_text(), path)}
    # only the direction that moved data (randwrite): no read or trim metrics
    assert sorted(got) == [
        "bench_fio_write_bw_mib_s",
        "bench_fio_write_clat_p99_us",
        "bench_fio_write_iops",
    ]
    assert got["bench_fio_write_iops"].value == pytest.approx(w["iops"])
    assert got["bench_fio_write_bw_mib_s"].value == pytest.approx(w["bw"] / 1024)
    p99 = w["clat_ns"]["percentile"]["99.000000"] / 1e3
    assert got["bench_fio_write_clat_p99_us"].value == pytest.approx(p99)
    assert got["bench_fio_write_iops"].direction == "higher"
    assert got["bench_fio_write_clat_p99_us"].direction == "lower"


def test_fio_numbers_pinned_on_run8():
    got = {r.name: r.value for r in read_beside(STORM / "root" / "run8.dat")}
    assert got == pytest.approx(
        {
            "bench_fio_write_iops": 19563.936064,
            "bench_fio_write_bw_mib_s": 78255 / 1024,
            "bench_fio_write_clat_p99_us": 13041.664,
        }
    )


def test_fio_jobs_are_summed_and_the_worst_p99_taken(tmp_path):
    """Two jobs (the same real job twice, the second one slower): IOPS and bandwidth add
    up, the clat p99 is the worse job's; text before the JSON (fio's notes) is skipped."""
    doc = json.loads((STORM / "root" / "run8.fio.json").read_text())
    slow = json.loads(json.dumps(doc["jobs"][0]))
    slow["write"]["clat_ns"]["percentile"]["99.000000"] *= 3
    doc["jobs"].append(slow)
    text = "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + json.dumps(doc)
    got = {r.name: r.value for r in parse_fio(text, tmp_path / "fio.json")}
    w = doc["jobs"][0]["write"]
    assert got["bench_fio_write_iops"] == pytest.approx(2 * w["iops"])
    assert got["bench_fio_write_clat_p99_us"] == pytest.approx(
        3 * w["clat_ns"]["percentile"]["99.000000"] / 1e3
    )


def _dbench_output() -> str:
    """dbench's real output (its last lines) kept with the perf.data sample."""
    text = PERF_META.read_text()
    part = text.split("workload output (last lines):", 1)[1].split("\nsamples:", 1)[0]
    assert "Throughput" in part
    return part


def test_dbench_output_of_a_real_run():
    got = {r.name: r for r in parse_dbench(_dbench_output(), "dbench.txt")}
    assert got["bench_dbench_throughput_mb_s"].value == 253.54
    assert got["bench_dbench_throughput_mb_s"].unit == "MB/s"
    assert got["bench_dbench_throughput_mb_s"].direction == "higher"
    assert got["bench_dbench_max_latency_ms"].value == 10.837
    assert got["bench_dbench_max_latency_ms"].direction == "lower"


@pytest.mark.parametrize(
    ("line", "want"),
    [
        # dbench 4 with -s/-S (its format: "Throughput %g MB/sec%s%s  %d clients ...")
        ("Throughput 253.54 MB/sec (sync open)  2 clients  2 procs  max_latency=10.837 ms",
         [253.54, 10.837]),
        ("Throughput 99.5 MB/sec 4 procs", [99.5]),  # dbench 3: no clients, no latency
    ],
)  # fmt: skip
def test_dbench_line_variants(line, want):
    assert [r.value for r in parse_dbench(f"{line}\n", "dbench.txt")] == want


def test_fio_client_server_output_and_fio2_clat(tmp_path):
    """fio --client: client_stats holds each server's job and their sum ("All clients",
    left out); fio 2 gives the clat percentiles in us under ``clat``."""
    job = json.loads((STORM / "root" / "run8.fio.json").read_text())["jobs"][0]
    total = json.loads(json.dumps(job)) | {"jobname": "All clients"}
    got = {
        r.name: r.value
        for r in parse_fio(json.dumps({"client_stats": [job, total]}), tmp_path / "f.json")
    }
    assert got["bench_fio_write_iops"] == pytest.approx(job["write"]["iops"])
    fio2 = json.loads(json.dumps(job))
    clat = fio2["write"].pop("clat_ns")
    fio2["write"]["clat"] = {"percentile": {"99.000000": clat["percentile"]["99.000000"] / 1e3}}
    got = {r.name: r.value for r in parse_fio(json.dumps({"jobs": [fio2]}), tmp_path / "f.json")}
    assert got["bench_fio_write_clat_p99_us"] == pytest.approx(13041.664)


def test_command_output_is_used_only_when_recognised(tmp_path):
    assert parse_output("total 0\nhello\n", tmp_path / "t.dat.cmd.txt") == []
    fio = (STORM / "root" / "run8.fio.json").read_text()
    names = [r.name for r in parse_output("fio-3.33\n" + fio, tmp_path / "t.dat.cmd.txt")]
    assert "bench_fio_write_iops" in names
    dbench = parse_output(_dbench_output(), tmp_path / "t.dat.cmd.txt")
    assert [r.value for r in dbench] == [253.54, 10.837]


# -- files beside a trace ------------------------------------------------------------------------


def _beside(tmp_path, src, name: str | None = None):
    """A symlink to the real trace ``src`` (and its topology) in ``tmp_path``."""
    name = name or src.name
    link = tmp_path / name
    link.symlink_to(src)
    topo = src.with_suffix(".topology.json")
    if topo.exists():
        (tmp_path / (link.stem + ".topology.json")).symlink_to(topo)
    return link


def test_lookup_order_sidecar_first_own_file_before_the_directorys(tmp_path):
    trace = _beside(tmp_path, STORM / "root" / "run8.dat")
    (tmp_path / "fio.json").write_text((STORM / "weighted" / "run3.fio.json").read_text())
    # the directory's fio.json, then the trace's own, which wins
    dir_iops = _fio_job_write(STORM / "weighted" / "run3.fio.json")["iops"]
    assert {r.name: r.value for r in read_beside(trace)}["bench_fio_write_iops"] == dir_iops
    (tmp_path / "run8.fio.json").symlink_to(STORM / "root" / "run8.fio.json")
    assert {r.name: r.value for r in read_beside(trace)}["bench_fio_write_iops"] == (
        pytest.approx(19563.936064)
    )
    # a sidecar's name wins over the same name from fio; its own names get the prefix
    (tmp_path / "run8.bench.json").write_text(
        json.dumps(
            {
                "bench_fio_write_iops": {"value": 1.0, "direction": "higher"},
                "ops": {"value": 5, "direction": "higher", "unit": "ops/s"},
            }
        )
    )
    got = {r.name: r for r in read_beside(trace)}
    assert got["bench_fio_write_iops"].value == 1.0
    assert got["bench_ops"].unit == "ops/s"
    assert got["bench_fio_write_clat_p99_us"].value == pytest.approx(13041.664)


BAD_SIDECARS = [
    ("run.bench.json", "{not json", "not JSON"),
    ("run.bench.json", "[1, 2]", "must be a JSON object"),
    ("run.bench.json", '{"tput": 416.7}', "a bare value has no direction"),
    ("run.bench.json", '{"tput": {"value": 1, "direction": "up"}}', "direction must be"),
    ("run.bench.json", '{"tput": {"value": NaN, "direction": "higher"}}', "finite number"),
    ("run.bench.json", '{"tput": {"value": true, "direction": "higher"}}', "finite number"),
    ("run.bench.json", '{"t put": {"value": 1, "direction": "higher"}}', "letters, digits"),
    ("run.bench.json", '{"t": {"value": 1, "direction": "higher", "x": 1}}', "unknown key"),
    ("fio.json", '{"fio version": "fio-3.33"}', "no jobs list"),
    ("run.fio.json", "garbage", "not fio JSON output"),
    ("dbench.txt", "dbench version 4.00\nOperation Count\n", "no dbench 'Throughput"),
]


@pytest.mark.parametrize(("name", "text", "why"), BAD_SIDECARS)
def test_malformed_results_are_refused_in_one_line(tmp_path, name, text, why):
    trace = _beside(tmp_path, SAMPLES / "idle-sleep.dat", "run.dat")
    (tmp_path / name).write_text(text)
    with pytest.raises(TraceError, match=why) as err:
        read_beside(trace)
    assert err.value.path == str(tmp_path / name)
    proc = run_cli("analyze", trace)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.count("\n") == 1 and str(tmp_path / name) in proc.stderr, proc.stderr
    assert why in proc.stderr and "Traceback" not in proc.stderr


# -- the vocabulary: analyze, compare, gate, batch ----------------------------------------------


@pytest.mark.slow
def test_analyze_json_and_text_show_the_results(tmp_path):
    trace = _beside(tmp_path, STORM / "root" / "run8.dat")
    (tmp_path / "run8.fio.json").symlink_to(STORM / "root" / "run8.fio.json")
    (tmp_path / "dbench.txt").write_text(_dbench_output())
    doc = json.loads(run_cli("analyze", "--format", "json", trace, check=True).stdout)
    m = doc["metrics"]
    assert m["bench_fio_write_iops"] == pytest.approx(19563.936064)
    assert m["bench_dbench_throughput_mb_s"] == 253.54
    assert m["bench"]["bench_dbench_max_latency_ms"] == {
        "unit": "ms",
        "direction": "lower",
        "source": str(tmp_path / "dbench.txt"),
    }
    # the scheduler's metrics are still there, unchanged by the results
    assert m["storm_kworker_preemptions_per_s"] is not None
    text = run_cli("analyze", trace, check=True).stdout
    line = next(x for x in text.splitlines() if x.strip().startswith("bench_dbench_throughput"))
    assert "253.5 MB/s (higher is better; from dbench.txt)" in line
    assert "'unit'" not in text  # the details are not dumped as a dict


def test_a_trace_without_results_has_no_bench_metrics():
    m = schedwake.analyze(schedwake.load(SAMPLES / "idle-sleep.dat")).metrics
    assert not [k for k in m if k.startswith("bench")]


def test_bench_names_are_a_family_of_the_vocabulary():
    assert catalogue_entry("bench_dbench_throughput_mb_s").name == "bench_{name}"
    with pytest.raises(KeyError, match="bench_NAME"):
        catalogue_entry("bench")


def _kstack_throughput() -> dict[str, float]:
    """dbench MB/s of the kstack-6.1 iterations, from sample_traces/dbench-throughput.csv."""
    with open(SAMPLES / "dbench-throughput.csv") as f:
        rows = list(csv.DictReader(f))
    return {
        r["file"].split("/")[-1]: float(r["dbench_mb_s"])
        for r in rows
        if r["file"].startswith("kstack-6.1/k61-dbench-c2-")
    }


@pytest.fixture(scope="module")
def kstack_sides(tmp_path_factory):
    """The kstack-6.1 on/off iterations, each with its dbench throughput as a
    TRACE.bench.json sidecar: {"on": [Trace, ...], "off": [...]}."""
    tmp = tmp_path_factory.mktemp("kstack-bench")
    sides: dict[str, list] = {"on": [], "off": []}
    for name, mb_s in sorted(_kstack_throughput().items()):
        link = _beside(tmp, KSTACK / name)
        (tmp / (link.stem + ".bench.json")).write_text(
            json.dumps({"dbench_throughput_mb_s": {"value": mb_s, "direction": "higher"}})
        )
        mode = "on" if "kstack-on" in name else "off"
        sides[mode].append(str(link))
    assert len(sides["on"]) == len(sides["off"]) == 3
    return tmp, sides


@pytest.fixture(scope="module")
def kstack_traces(kstack_sides):
    """The sides' traces read as compare and gate read a path (the model's events, the
    results beside them), once for the API tests, which only read them: each trace's
    model is built once, not once per comparison or verdict."""
    _, sides = kstack_sides
    return {mode: [shared_model_trace(p) for p in paths] for mode, paths in sides.items()}


@pytest.mark.slow
def test_compare_stars_the_throughput_loss(kstack_traces):
    """Without the stacking clause dbench loses 21% (Hmean; sample_traces/README.md): the
    comparison puts that beside the migrations, with the same t-test and star."""
    sides = kstack_traces
    metrics = ["wakeup_migrations_per_s", "bench_dbench_throughput_mb_s"]
    r = schedwake.compare(sides, metrics=metrics)
    rows = {x.metric.name: x for x in r.comparison.rows if x.is_mean_row}
    tput = rows["bench_dbench_throughput_mb_s"]
    mb = _kstack_throughput()
    on = [v for k, v in mb.items() if "-on-" in k]
    off = [v for k, v in mb.items() if "-off-" in k]
    hmean = [len(v) / sum(1 / x for x in v) for v in (on, off)]  # mmtests' Hmean: higher
    assert tput.stat == "Hmean"
    assert tput.values[0] == pytest.approx(hmean[0])  # 47.53
    assert tput.values[1] == pytest.approx(hmean[1])  # 37.33
    assert tput.pcts[1] == pytest.approx((hmean[1] - hmean[0]) / hmean[0] * 100)
    assert tput.pcts[1] == pytest.approx(-21.47, abs=0.01)
    assert tput.metric.direction == "higher" and tput.metric.unit == ""
    assert tput.sig[1].significant  # t-test, alpha 0.10: p = 0.057
    assert rows["wakeup_migrations_per_s"].sig[1].significant
    text = compare_report.text(r)
    assert "bench_dbench_throughput_mb_s" in text and "-21.47%*" in text
    # the samples table carries the result's direction (what from_samples needs)
    s = r.samples[r.samples["metric"] == "bench_dbench_throughput_mb_s"]
    assert set(s["direction"]) == {"higher"} and len(s) == 6


@pytest.mark.slow
def test_per_window_comparison_keeps_results_per_trace(kstack_traces):
    """One trace a side: the scheduler's metrics per window, the benchmark's result one
    value per trace (never spread over windows), said in the rule line."""
    sides = kstack_traces
    trace = sides["on"][0]
    s = metric_samples(trace, 1.0, metrics=["migrations_per_s", "bench_dbench_throughput_mb_s"])
    b = s[s["metric"] == "bench_dbench_throughput_mb_s"]
    assert len(b) == 1 and b["sample_kind"].iloc[0] == "per-trace"
    assert (s.loc[s["metric"] == "migrations_per_s", "sample_kind"] == "per-window").all()
    r = schedwake.compare(
        {"on": sides["on"][0], "off": sides["off"][0]},
        metrics=["migrations_per_s", "bench_dbench_throughput_mb_s"],
        samples="per-window",
    )
    assert r.sample_kind == "per-window"
    assert "bench_dbench_throughput_mb_s: per-trace values, n=1/1" in rule_line_of(r)


def _rules(tmp, text: str):
    path = tmp / "bench-gate.toml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_gate_rule_on_a_benchmark_result(kstack_sides, kstack_traces):
    tmp, sides = kstack_sides[0], kstack_traces
    rules = _rules(
        tmp,
        '[gate]\nalpha = 0.10\n[rules."bench_dbench_throughput_mb_s"]\nallowed = "10%"\n',
    )
    verdict = schedwake.gate(sides["on"], sides["off"], rules)
    (res,) = verdict.results
    assert res.status == "broken" and verdict.exit_code == 1
    assert res.direction == "higher"
    # (the gate's geometric means of the runs: -21.47% in arithmetic means)
    assert res.gain_pct == pytest.approx(-21.83, abs=0.01) and res.scale == "log"
    # the other way round the throughput rose: the rule holds
    assert schedwake.gate(sides["off"], sides["on"], rules).exit_code == 0
    # a result no trace has is not measured (missing = "error" by default)
    missing = _rules(tmp, '[rules."bench_fio_write_iops"]\nallowed = "5%"\nmissing = "skip"\n')
    (res,) = schedwake.gate(sides["on"], sides["off"], missing).results
    assert res.status == "skipped" and "no trace has that benchmark result" in res.message


@pytest.mark.slow
def test_batch_columns_and_compare_from_batch(kstack_sides):
    tmp, sides = kstack_sides
    out = tmp / "ds"
    proc = run_cli("batch", "--serial", "*.dat", "-o", out, cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    traces = pd.read_parquet(out / "traces.parquet").set_index("path")
    mb = _kstack_throughput()
    for name, value in mb.items():
        assert traces.loc[name, "bench_dbench_throughput_mb_s"] == value
        info = json.loads(traces.loc[name, "bench"])
        assert info["bench_dbench_throughput_mb_s"]["direction"] == "higher"
    # compare from the dataset gives the table compare over the traces gives
    args = ["--metric", "bench_dbench_throughput_mb_s", "--metric", "migrations_per_s"]
    sides_args = ["--side", "on=*-on-*.dat", "--side", "off=*-off-*.dat"]
    over = run_cli("compare", *sides_args, *args, cwd=tmp)
    from_batch = run_cli("compare", "--from-batch", out, *sides_args, *args, cwd=tmp)
    assert over.returncode == from_batch.returncode == 0, (over.stderr, from_batch.stderr)
    assert from_batch.stdout == over.stdout
    assert "-21.47%*" in from_batch.stdout
    # and the per-window samples of one trace a side keep the result per trace
    one = run_cli(
        "compare", "--from-batch", out, "--side", "on=*-on-i1.dat", "--side", "off=*-off-i1.dat",
        "--metric", "bench_dbench_throughput_mb_s", cwd=tmp,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    assert "per-trace values, n=1/1" in one.stdout
    assert not math.isnan(traces["bench_dbench_throughput_mb_s"].sum())


def test_batch_rerun_sees_results_written_since(tmp_path):
    """A results file written beside a trace after its analysis: a re-run of batch
    analyses that trace again (its own file is unchanged), and again when it is gone."""
    shutil.copy(SAMPLES / "idle-sleep.dat", tmp_path / "idle.dat")
    out = tmp_path / "ds"

    def run() -> tuple[str, pd.DataFrame]:
        proc = run_cli("batch", "--serial", "idle.dat", "-o", out, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout, pd.read_parquet(out / "traces.parquet")

    first, rows = run()
    assert first.startswith("batch: 1 trace(s) analysed"), first
    assert rows["bench"].isna().all() and not [c for c in rows if c.startswith("bench_")]
    again, _ = run()
    assert again.startswith("batch: 0 trace(s) analysed"), again
    (tmp_path / "dbench.txt").write_text(_dbench_output())
    third, rows = run()
    assert third.startswith("batch: 1 trace(s) analysed"), third
    assert rows["bench_dbench_throughput_mb_s"].tolist() == [253.54]
    (tmp_path / "dbench.txt").unlink()
    fourth, rows = run()
    assert fourth.startswith("batch: 1 trace(s) analysed"), fourth
    assert (
        "bench_dbench_throughput_mb_s" not in rows
        or rows["bench_dbench_throughput_mb_s"].isna().all()
    )


@pytest.mark.slow
def test_record_keeps_the_commands_output(tmp_path):
    """``schedwake record -- CMD`` keeps CMD's output beside the trace, where analyze
    finds the benchmark's line (a real recording; root and tracefs needed)."""
    from schedwake.record import find_tracefs

    if os.geteuid() != 0 or find_tracefs() is None:
        pytest.skip("recording needs root and tracefs")
    line = _dbench_output().strip().splitlines()[-1]
    out = tmp_path / "t.dat"
    proc = run_cli(
        "record", "-o", out, "--", "sh", "-c", f"ls -R /usr/share/doc >/dev/null; echo '{line}'"
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot record here: {proc.stderr.strip().splitlines()[-1]}")
    assert line in (tmp_path / "t.dat.cmd.txt").read_text()
    assert line in proc.stdout  # shown as it ran
    m = json.loads(run_cli("analyze", "--format", "json", out, check=True).stdout)["metrics"]
    assert m["bench_dbench_throughput_mb_s"] == 253.54
    assert m["bench"]["bench_dbench_throughput_mb_s"]["source"] == str(out) + ".cmd.txt"
