"""``schedwake compare --mmtests``: a real mmtests results tree (sample_traces/mmtests/,
written by mmtests' own run-mmtests.sh) compared per subtest, its figures held to
mmtests' own parse-results output and compare-kernels.sh table, and bad trees refused in
one line naming the file or run (exit code 2)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from schedwake.errors import TraceError
from schedwake.ingest import read
from schedwake.mmtests_tree import FIGURES, figures_of, parse_run_sides, results_dir

from .conftest import ROOT, SAMPLES, run_cli

TREE = SAMPLES / "mmtests"
RUNS = ("6.18-normal", "6.18-batch")
BENCH = "hackbench-process-pipes"
SIDES = ("--side", "6.18-normal=6.18-normal", "--side", "6.18-batch=6.18-batch")
PARSED = ROOT / "tests" / "data" / "mmtests"


def _logs(root, run, it):
    return root / run / f"iter-{it}" / BENCH / "logs"


def test_figures_are_mmtests_parse_results():
    """Each hackbench-N file read as mmtests' parse-results reads it (its output of
    this tree, kept in tests/data/mmtests/), in ms."""
    fig = figures_of(BENCH)
    assert fig is FIGURES["hackbench"]
    for run in RUNS:
        for it in (0, 1):
            want: dict[str, list[float]] = {}
            for line in (PARSED / f"parse-results-{run}-iter-{it}.tsv").read_text().splitlines():
                metric, groups, _, _, value, _ = line.split("\t")
                assert metric == fig.metric
                want.setdefault(groups, []).append(float(value) * 1000)
            assert sorted(want) == ["1", "2", "3", "4"]
            for groups, values in want.items():
                got = fig.read(_logs(TREE, run, it) / f"hackbench-{groups}")
                assert got == pytest.approx(values)


def _compare_kernels() -> dict[tuple[str, str], list[float]]:
    """mmtests' compare-kernels.sh table of the tree: (stat, op) -> [base, new, pct]."""
    rows = {}
    for line in (TREE / "compare-kernels.txt").read_text().splitlines():
        m = re.match(r"(\S+)\s+(time-\d)\s+(\S+) \(\s*(\S+)%\)\s+(\S+) \(\s*(\S+)%\)", line)
        if m:
            rows[(m[1], m[2])] = [float(m[3]), float(m[5]), float(m[6])]
    return rows


@pytest.mark.slow
def test_tree_compares_in_one_command():
    """The tree in one command, a real process: a comparison per subtest, two samples
    a side (iter-0, iter-1) of each scheduler metric and six of mmtests' figure, whose
    means and % are those of mmtests' own compare-kernels.sh."""
    proc = run_cli(
        "compare", "--mmtests", TREE, *SIDES, "--format", "json", "--full", subprocess=True
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [s["label"] for s in doc["sides"]] == list(RUNS)
    assert doc["sides"][0]["runs"] == [{"run": "6.18-normal", "iterations": ["iter-0", "iter-1"]}]
    assert [(s["benchmark"], s["subtest"]) for s in doc["subtests"]] == [(BENCH, n) for n in "1234"]
    mmtests = _compare_kernels()
    for s in doc["subtests"]:
        n = s["subtest"]
        assert s["recordings"]["6.18-batch"] == [
            f"6.18-batch/iter-{i}/{BENCH}/logs/perf-{n}.data.zst" for i in (0, 1)
        ]
        rows = s["comparison"]["rows"]
        mean = {
            (r["metric"], r["side"]): r
            for r in rows
            if r["stat"] in ("Amean", "Hmean")
            and r["metric"] in ("bench_time", "context_switches_per_s")
        }
        assert mean[("context_switches_per_s", "6.18-normal")]["n"] == 2
        assert mean[("context_switches_per_s", "6.18-batch")]["value"] > 0
        base, new = mean[("bench_time", "6.18-normal")], mean[("bench_time", "6.18-batch")]
        assert base["n"] == new["n"] == 6
        want = mmtests[("Amean", f"time-{n}")]
        assert base["value"] == pytest.approx(want[0] * 1000, abs=0.05)
        assert new["value"] == pytest.approx(want[1] * 1000, abs=0.05)
        assert new["pct"] == pytest.approx(want[2], abs=0.01)
        for stat in ("Min", "Max"):
            got = next(
                r for r in rows if r["stat"] == stat and r["metric"] == "bench_time"
                and r["side"] == "6.18-batch"
            )  # fmt: skip
            assert got["value"] == pytest.approx(mmtests[(stat, f"time-{n}")][1] * 1000)


@pytest.mark.slow
def test_text_and_markdown():
    """Text: the sides' runs, then a section per subtest with the mmtests table; the
    default side order is the runs' names, and NAME=RUN names a side."""
    proc = run_cli(
        "compare", "--mmtests", TREE, "--side", "base=6.18-normal", "--side", "6.18-batch",
        "--metric", "context_switches_per_s",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "side base: run 6.18-normal (iter-0, iter-1)" in out
    assert "side 6.18-batch: run 6.18-batch (iter-0, iter-1)" in out
    assert out.count("\n== hackbench-process-pipes ") == 4
    assert "== hackbench-process-pipes 4: perf-4.data.zst, 2 + 2 iterations; bench_time:" in out
    assert "bench_time[ms]" in out
    md = run_cli(
        "compare", "--mmtests", TREE, *SIDES, "--metric", "context_switches_per_s",
        "--format", "markdown",
    )  # fmt: skip
    assert md.returncode == 0, md.stderr
    assert md.stdout.count("\n## hackbench-process-pipes ") == 4


def test_sides_default_to_every_run():
    root = results_dir(TREE)
    sides = parse_run_sides(root, ())
    assert [(label, [r.name for r in runs]) for label, runs in sides] == [
        ("6.18-batch", ["6.18-batch"]),
        ("6.18-normal", ["6.18-normal"]),
    ]
    assert [it.name for it in sides[0][1][0].iterations] == ["iter-0", "iter-1"]
    # a checkout's work/log is found from the checkout
    assert results_dir(TREE) == TREE


def test_compressed_perf_data_reads_as_plain(tmp_path):
    """A perf-N.data.zst reads as the perf.data inside it, also as xz and bzip2; its
    metadata names the compressed file."""
    zst = _logs(TREE, "6.18-normal", 0) / "perf-1.data.zst"
    plain = tmp_path / "perf-1.data"
    subprocess.run(["zstd", "-dq", str(zst), "-o", str(plain)], check=True)
    want = read(plain).meta.event_counts
    got = read(zst)
    assert got.meta.event_counts == want
    assert got.meta.path == str(zst)
    for tool, suffix in (("xz", ".xz"), ("bzip2", ".bz2")):
        if shutil.which(tool) is None:
            continue
        subprocess.run([tool, "-k", str(plain)], check=True)
        assert read(tmp_path / f"perf-1.data{suffix}").meta.event_counts == want


def _copy(tmp_path):
    root = tmp_path / "log"
    shutil.copytree(TREE, root, ignore=shutil.ignore_patterns("perf-[34].data.zst"))
    for run in RUNS:
        for it in (0, 1):
            for n in "34":
                (_logs(root, run, it) / f"hackbench-{n}").unlink()
    return root


def _refused(*args) -> str:
    proc = run_cli("compare", *args, subprocess=True)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_bad_trees_are_refused_naming_the_file(tmp_path):
    root = _copy(tmp_path)
    # a run that is not there
    line = _refused("--mmtests", root, "--side", "a=6.18-normal", "--side", "b=6.18-nope")
    assert f"{root / '6.18-nope'}: no such mmtests run" in line
    assert "6.18-batch, 6.18-normal" in line
    # a malformed side, a directory that is not a tree
    assert "expected NAME=RUN" in _refused("--mmtests", root, "--side", "a=", "--side", "b=x")
    assert "holds no mmtests run" in _refused("--mmtests", tmp_path / "log" / "6.18-normal")
    # options that do not apply
    assert "--work: does not apply with --mmtests" in _refused(
        "--mmtests", root, *SIDES, "--work", "bench"
    )
    # a truncated recording
    rec = _logs(root, "6.18-batch", 1) / "perf-2.data.zst"
    rec.write_bytes(rec.read_bytes()[:5000])
    line = _refused("--mmtests", root, *SIDES, "--metric", "context_switches_per_s")
    assert line.startswith(f"schedwake: {rec}: truncated or corrupt zstd data")
    rec.unlink()
    # an iteration without the recording of a subtest the others have
    line = _refused("--mmtests", root, *SIDES)
    logs = _logs(root, "6.18-batch", 1)
    assert f"{logs}: no perf-2.data recording of subtest 2" in line
    # a run without any perf sched recording
    for p in root.glob(f"*/iter-*/{BENCH}/logs/perf-*.data.zst"):
        p.unlink()
    assert "no perf-SUBTEST.data recording of hackbench-process-pipes" in _refused(
        "--mmtests", root, *SIDES
    )


def test_bad_figures_are_refused(tmp_path):
    root = _copy(tmp_path)
    out = _logs(root, "6.18-normal", 1) / "hackbench-2"
    out.write_text("# Running 'sched/messaging' benchmark:\n")
    with pytest.raises(TraceError, match=re.escape(f"{out}: no ")):
        FIGURES["hackbench"].read(out)
    out.write_text("     Total time: nan [sec]\n")
    line = _refused("--mmtests", root, *SIDES, "--metric", "context_switches_per_s")
    assert line.startswith(f"schedwake: {out}: time nan is out of range") or "nan" in line
    assert str(out) in line
