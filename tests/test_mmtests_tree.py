"""``schedwake compare --mmtests``: a real mmtests results tree (sample_traces/mmtests/,
written by mmtests' own run-mmtests.sh) compared per subtest, its figures held to
mmtests' own parse-results output and compare-kernels.sh table, each recording's
coverage of its subtest held to perf's own header, and bad trees refused in one line
naming the file or run (exit code 2).

tests/data/mmtests/short-subtest/ keeps subtest 1 (hackbench with 1 group, 50 loops) of
an earlier real recording of the same configuration: perf's start-up missed nearly all
of it in every iteration. Added to a copy of the tree, it is the subtest whose
scheduler metrics are withheld."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from schedwake.compare.mmtests_tree import FIGURES, figures_of, parse_run_sides, results_dir
from schedwake.errors import TraceError
from schedwake.ingest import read

from .conftest import ROOT, SAMPLES, run_cli

TREE = SAMPLES / "mmtests"
RUNS = ("6.18-normal", "6.18-batch")
BENCH = "hackbench-process-pipes"
SIDES = ("--side", "6.18-normal=6.18-normal", "--side", "6.18-batch=6.18-batch")
PARSED = ROOT / "tests" / "data" / "mmtests"
SHORT_DIR = PARSED / "short-subtest"
#: The tree's subtest (2 groups, 2000 loops: seconds a subtest), and the short one.
LONG, SHORT = "2", "1"


def _logs(root, run, it):
    return root / run / f"iter-{it}" / BENCH / "logs"


def _parsed(run: str, it: int, subtest: str) -> list[float]:
    """mmtests' parse-results figures (s) of a subtest in one iteration: the tree's
    (tests/data/mmtests/), or the short subtest's (its own directory)."""
    where = SHORT_DIR if subtest == SHORT else PARSED
    out = []
    for line in (where / f"parse-results-{run}-iter-{it}.tsv").read_text().splitlines():
        metric, groups, _, _, value, _ = line.split("\t")
        assert metric == "time"
        if groups == subtest:
            out.append(float(value))
    return out


def test_figures_are_mmtests_parse_results():
    """Each hackbench-N file read as mmtests' parse-results reads it (its output of
    this tree, kept in tests/data/mmtests/), in ms."""
    fig = figures_of(BENCH)
    assert fig is FIGURES["hackbench"]
    for run in RUNS:
        for it in (0, 1):
            lines = (PARSED / f"parse-results-{run}-iter-{it}.tsv").read_text().splitlines()
            assert {line.split("\t")[1] for line in lines} == {LONG}
            got = fig.read(_logs(TREE, run, it) / f"hackbench-{LONG}")
            assert got == pytest.approx([v * 1000 for v in _parsed(run, it, LONG)])
            assert len(got) == 2
            got = fig.read(SHORT_DIR / f"{run}-iter-{it}" / f"hackbench-{SHORT}")
            assert got == pytest.approx([v * 1000 for v in _parsed(run, it, SHORT)])


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
    a side (iter-0, iter-1) of each scheduler metric and four of mmtests' figure, whose
    means and % are those of mmtests' own compare-kernels.sh."""
    proc = run_cli(
        "compare", "--mmtests", TREE, *SIDES, "--format", "json", "--full", subprocess=True
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [s["label"] for s in doc["sides"]] == list(RUNS)
    assert doc["sides"][0]["runs"] == [{"run": "6.18-normal", "iterations": ["iter-0", "iter-1"]}]
    assert [(s["benchmark"], s["subtest"]) for s in doc["subtests"]] == [(BENCH, LONG)]
    mmtests = _compare_kernels()
    for s in doc["subtests"]:
        n = s["subtest"]
        assert s["recordings"]["6.18-batch"] == [
            f"6.18-batch/iter-{i}/{BENCH}/logs/perf-{n}.data.xz" for i in (0, 1)
        ]
        rows = s["comparison"]["rows"]
        mean = {
            (r["metric"], r["side"]): r
            for r in rows
            if r["stat"] in ("Amean", "Hmean")
            and r["metric"] in ("bench_time", "context_switches_per_s")
        }
        assert s["scheduler_metrics_shown"] is True
        assert mean[("context_switches_per_s", "6.18-normal")]["n"] == 2
        assert mean[("context_switches_per_s", "6.18-batch")]["value"] > 0
        base, new = mean[("bench_time", "6.18-normal")], mean[("bench_time", "6.18-batch")]
        assert base["n"] == new["n"] == 4
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
    assert out.count("\n== hackbench-process-pipes ") == 1
    assert "== hackbench-process-pipes 2: perf-2.data.xz, 2 + 2 iterations; bench_time:" in out
    assert out.count("\ncoverage: ") == 4 and "withheld" not in out
    assert "bench_time[ms]" in out
    md = run_cli(
        "compare", "--mmtests", TREE, *SIDES, "--metric", "context_switches_per_s",
        "--format", "markdown",
    )  # fmt: skip
    assert md.returncode == 0, md.stderr
    assert md.stdout.count("\n## hackbench-process-pipes ") == 1
    assert md.stdout.count("\n- coverage: ") == 4


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
    zst = SHORT_DIR / "6.18-normal-iter-0" / "perf-1.data.zst"
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
    """The tree with the short subtest (1) added beside its own (2)."""
    root = tmp_path / "log"
    shutil.copytree(TREE, root)
    for run in RUNS:
        for it in (0, 1):
            for p in (SHORT_DIR / f"{run}-iter-{it}").iterdir():
                shutil.copy(p, _logs(root, run, it) / p.name)
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
    rec = _logs(root, "6.18-batch", 1) / "perf-1.data.zst"
    rec.write_bytes(rec.read_bytes()[:5000])
    line = _refused("--mmtests", root, *SIDES, "--metric", "context_switches_per_s")
    assert line.startswith(f"schedwake: {rec}: truncated or corrupt zstd data")
    rec.unlink()
    # an iteration without the recording of a subtest the others have
    line = _refused("--mmtests", root, *SIDES)
    logs = _logs(root, "6.18-batch", 1)
    assert f"{logs}: no perf-1.data recording of subtest 1" in line
    # a run without any perf sched recording
    for p in root.glob(f"*/iter-*/{BENCH}/logs/perf-*.data.*"):
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


# -- coverage: what each recording covers of its subtest -------------------------------------


def _perf_header_span_s(rec, tmp_path) -> float:
    """The recorded span of a perf-N.data.zst or .xz by perf's own ``--header-only``."""
    plain = tmp_path / rec.stem
    tool = "zstd" if rec.suffix == ".zst" else "xz"
    with open(plain, "wb") as out:
        subprocess.run([tool, "-dc", str(rec)], stdout=out, check=True)
    out = subprocess.run(
        ["perf", "report", "--header-only", "-i", str(plain)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    first = float(re.search(r"time of first sample : (\S+)", out)[1])
    last = float(re.search(r"time of last sample : (\S+)", out)[1])
    plain.unlink()
    return last - first


@pytest.fixture(scope="module")
def tree_doc(tmp_path_factory):
    """The tree with the short subtest added, compared in-process."""
    from schedwake.compare.mmtests_tree import compare_tree
    from schedwake.report import mmtests_tree as report

    root = _copy(tmp_path_factory.mktemp("tree"))
    tree = compare_tree(root, SIDES[1::2], metrics=["context_switches_per_s"])
    return root, report.to_dict(tree), report.text(tree)


def test_coverage_is_perf_span_against_mmtests_time(tree_doc, tmp_path):
    """Each recording's coverage: its span as perf's header gives it, against the
    hackbench time of its subtest as mmtests' parse-results gives it."""
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed")
    root, doc, _ = tree_doc
    from schedwake.compare.mmtests_tree import MIN_COVERAGE, MIN_SWITCHES

    assert doc["coverage_rule"] == {"min_coverage": MIN_COVERAGE, "min_switches": MIN_SWITCHES}
    for s in doc["subtests"]:
        assert len(s["coverage"]) == 4
        for c in s["coverage"]:
            run, it = c["side"], c["iteration"]
            rec = root / c["recording"]
            suffix = "zst" if s["subtest"] == SHORT else "xz"
            assert rec == _logs(root, run, it) / f"perf-{s['subtest']}.data.{suffix}"
            assert c["span_source"] == "perf.data header"
            assert c["span_s"] == pytest.approx(_perf_header_span_s(rec, tmp_path), abs=2e-6)
            assert c["bench_s"] == pytest.approx(sum(_parsed(run, it, s["subtest"])))
            assert c["share"] == pytest.approx(min(1.0, c["span_s"] / c["bench_s"]))
            assert c["sched_switch"] == read(rec).meta.event_counts.get("sched_switch", 0)
            too_little = c["share"] < MIN_COVERAGE or c["sched_switch"] < MIN_SWITCHES
            assert bool(c["withheld"]) == too_little


def test_short_recordings_give_no_scheduler_numbers(tree_doc):
    """A subtest whose recordings cover too little of it: a coverage line each, the
    note, and a table of mmtests' figures only; one whose recordings cover most of it
    keeps the scheduler's metrics."""
    _, doc, text = tree_doc
    subs = {s["subtest"]: s for s in doc["subtests"]}
    short, long = subs[SHORT], subs[LONG]
    assert short["scheduler_metrics_shown"] is False
    assert all(c["withheld"] for c in short["coverage"])
    assert {r["metric"] for r in short["comparison"]["rows"]} == {"bench_time"}
    # perf's start-up missed nearly all of the short subtest (hackbench time 0.16-0.21 s
    # an iteration), and under half of the tree's own (3.1-3.7 s)
    assert all(c["share"] < 0.05 for c in short["coverage"])
    assert all(0.5 < c["share"] < 0.7 for c in long["coverage"])
    assert long["scheduler_metrics_shown"] is True
    assert not any(c["withheld"] for c in long["coverage"])
    metrics = {r["metric"] for r in long["comparison"]["rows"]}
    assert metrics == {"bench_time", "context_switches_per_s"}
    section = text.split(f"\n== {BENCH} {SHORT}:")[1].split("\n== ")[0]
    c = short["coverage"][0]
    assert f"coverage: 6.18-normal: {c['recording']} covers " in section
    assert "of hackbench time" in section and ": withheld (covers " in section
    assert "note: no scheduler metrics for this subtest" in section
    assert "its start-up misses short runs" in section
    assert "context_switches_per_s" not in section
    section = text.split(f"\n== {BENCH} {LONG}:")[1]
    assert "withheld" not in section and "context_switches_per_s" in section


def test_withheld_without_figures(tmp_path):
    """A benchmark without mmtests' figures is held to the sched_switch count alone; a
    subtest left without any recording has no rows, and says why (exit code 0)."""
    for run in RUNS:
        for it in (0, 1):
            logs = tmp_path / run / f"iter-{it}" / "foo-bar" / "logs"
            logs.mkdir(parents=True)
            shutil.copy(SHORT_DIR / f"{run}-iter-{it}" / "perf-1.data.zst", logs)
    proc = run_cli("compare", "--mmtests", tmp_path, *SIDES, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (s,) = json.loads(proc.stdout)["subtests"]
    assert s["scheduler_metrics_shown"] is False and s["comparison"]["rows"] == []
    for c in s["coverage"]:
        assert c["bench_s"] is None and c["share"] is None
        assert c["withheld"] == f"{c['sched_switch']} sched_switch events (< 200)"
    out = run_cli("compare", "--mmtests", tmp_path, *SIDES).stdout
    assert "too few context switches for a rate; it has no rows" in out
