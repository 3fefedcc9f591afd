"""schedwake series and gate --series on a real series: sample_traces/cgroup-weight/,
perf bench sched messaging against a CPU hog, A = the bench cgroup's cpu.shares 1024
(msg-w1024-r01..r12), B = 10240 (msg-w10240-r01..r06), recorded A A B interleaved.

Builds are directories of links made in tmp_path: b1..b4 the A runs in time order (three
each), b5 and b6 the B runs. The weight x10 lets the bench's tasks take the hog's CPU:
more migrations, of wake-ups too (docs/series.md, "A real series")."""

from __future__ import annotations

import functools
import importlib
import json
import os

import pytest

from schedwake.report import series as series_report
from schedwake.series import Build, from_samples, gate_series, load_builds, measure_builds

from .conftest import SAMPLES, run_cli

pytestmark = pytest.mark.slow

CW = SAMPLES / "cgroup-weight"
A = [f"msg-w1024-r{i:02d}" for i in range(1, 13)]
B = [f"msg-w10240-r{i:02d}" for i in range(1, 7)]
#: the metrics the weight changes (A: 24-252 migrations/s, B: 166-364)
CHANGED = {"migrations_per_s", "wakeup_migrations_per_s", "wakeup_migration_share"}


def make_builds(root, layout: dict[str, list[str]]) -> list[str]:
    """Build directories under ``root``: each a link to its runs' traces and the files
    beside them (topology, counters, the command's output)."""
    out = []
    for name, runs in layout.items():
        d = root / name
        d.mkdir(parents=True)
        for run in runs:
            for f in CW.glob(run + ".dat*"):
                os.symlink(f, d / f.name)
        out.append(str(d))
    return out


STEPPED = {f"b{i + 1}": A[3 * i : 3 * i + 3] for i in range(4)} | {"b5": B[:3], "b6": B[3:]}
A_IN_TIME = {f"b{i + 1}": A[3 * i : 3 * i + 3] for i in range(4)}
A_INTERLEAVED = {f"b{i + 1}": A[i::4] for i in range(4)}  # r01 r05 r09, r02 r06 r10, ...
NEWEST_OF_SIX = A_IN_TIME | {"b5": B}  # the newest build with six runs


@pytest.fixture(scope="module")
def cached_loads():
    """Each trace read once for the module (in-process runs: the API, run_cli)."""
    compare = importlib.import_module("schedwake.compare")  # (schedwake.compare: the function)
    with pytest.MonkeyPatch.context() as mp:
        load = functools.lru_cache(maxsize=None)(compare.load_model_trace)
        mp.setattr(
            compare,
            "load_model_trace",
            lambda p, topology_file=None, llc=None, kallsyms=None: load(
                os.path.realpath(p), topology_file, tuple(llc or ()), kallsyms
            ),
        )
        yield


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """The series' build directories: stepped/, in-time/, interleaved/."""
    top = tmp_path_factory.mktemp("series")
    for name, layout in (
        ("stepped", STEPPED),
        ("in-time", A_IN_TIME),
        ("interleaved", A_INTERLEAVED),
        ("newest-of-six", NEWEST_OF_SIX),
    ):
        make_builds(top / name, layout)
    return top


@pytest.fixture(scope="module")
def stepped(root, cached_loads):
    builds = load_builds([str(root / "stepped" / b) for b in STEPPED])
    return builds, measure_builds(builds)


def test_the_stepped_change_is_found_at_its_build(stepped):
    builds, samples = stepped
    r = from_samples(samples, builds)
    found = {c.metric: c for c in r.change_points() if c.build == "b5"}
    assert CHANGED <= set(found), r.change_points()
    for m in CHANGED:
        c = found[m]
        assert c.regression and c.after > 2 * c.before and c.ci[0] > 0.5 and c.p <= 0.01
        assert [x.build for x in r.metrics[m].change_points] == ["b5"]
    # the only other shift: the A runs' own drift in the last A build (r10-r12)
    assert {c.build for c in r.change_points()} <= {"b4", "b5"}
    assert series_report.summary_line(r).endswith("over 6 builds (21 metrics)")
    assert any("storm_preempted_share: withheld in every run" in n for n in r.notes)


@pytest.mark.parametrize("layout", [A_IN_TIME, A_INTERLEAVED], ids=["in-time", "interleaved"])
def test_an_unchanged_series_has_none(root, cached_loads, layout, request):
    builds = load_builds([str(root / request.node.callspec.id / b) for b in layout])
    r = from_samples(measure_builds(builds), builds)
    assert r.change_points() == []
    assert len(r.metrics) == 21 and all(
        s.q_first is None or s.q_first > 0.05 for s in r.metrics.values()
    )


def test_a_recorded_unchanged_series_has_none(cached_loads):
    # sample_traces/series/recorded-unchanged/: 5 builds of the same command, 3 runs each,
    # recorded back to back (scripts/record-samples/record-series-unchanged.sh)
    builds = load_builds(
        sorted(str(p) for p in (SAMPLES / "series" / "recorded-unchanged").glob("b*"))
    )
    r = from_samples(measure_builds(builds), builds)
    assert [b.name for b in r.builds] == ["b1", "b2", "b3", "b4", "b5"]
    assert r.change_points() == [] and len(r.metrics) == 21
    assert any(n.startswith("busy_share_cpu1: withheld in 14 of 15 runs") for n in r.notes)
    assert r.metrics["context_switches_per_s"].values["run"].iloc[0] == "msg-r1.dat"
    assert gate_series([b.path for b in builds]).exit_code == 0


def test_json_of_the_api(stepped):
    from schedwake.report.series import to_json

    builds, samples = stepped
    doc = json.loads(to_json(from_samples(samples, builds, metrics=["wakeup_migration_share"])))
    assert [b["name"] for b in doc["builds"]] == [f"b{i}" for i in range(1, 7)]
    (cp,) = doc["change_points"]
    assert {"metric", "build", "before", "after", "effect", "ci", "p", "regression"} <= set(cp)
    assert cp["metric"] == "wakeup_migration_share" and cp["build"] == "b5"
    runs = doc["metrics"]["wakeup_migration_share"]["runs"]
    assert len(runs) == 18 and {"build", "run", "value"} == set(runs[0])


def test_cli_text_and_json_in_a_process(root):
    # a small series, a run a build: three A builds, then two B builds
    dirs = make_builds(root / "cli", {"a1": A[:1], "a2": A[1:2], "b1": B[:1], "b2": B[1:2]})
    proc = run_cli("series", *dirs, "--metric", "wakeup_migration_share", subprocess=True)
    assert proc.returncode == 0, proc.stderr
    assert "builds: a1 (1), a2 (1), b1 (1), b2 (1) runs" in proc.stdout
    assert "over 4 builds (1 metrics)" in proc.stdout
    proc = run_cli(
        "series", *dirs, "--metric", "migrations_per_s", "--format", "json", subprocess=True
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) >= {"builds", "change_points", "metrics"}
    for cp in doc["change_points"]:
        assert cp["metric"] == "migrations_per_s" and cp["build"] in {"a2", "b1", "b2"}
        assert isinstance(cp["p"], float) and len(cp["ci"]) == 2


def test_html_has_each_changed_metric_plotted(root, cached_loads, tmp_path):
    dirs = [str(root / "stepped" / b) for b in STEPPED]
    out = tmp_path / "s.html"
    proc = run_cli("series", *dirs, "--format", "html", "-o", out)
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    for m in CHANGED:
        assert f"alt='{m} [" in page  # its figure
    assert "<script src" not in page  # self-contained


def test_a_batch_dataset_is_a_build(root, cached_loads, tmp_path):
    dirs = make_builds(tmp_path / "runs", {"b1": A[:3], "b2": A[3:6], "b3": A[6:9], "b4": A[9:12]})
    b5 = make_builds(tmp_path / "new", {"b5": B[:3]})[0]
    proc = run_cli("batch", "--serial", b5, "-o", tmp_path / "ds5")
    assert proc.returncode == 0, proc.stderr
    builds = load_builds(dirs + [str(tmp_path / "ds5")])
    assert builds[-1].dataset is not None and len(builds[-1].runs) == 3
    r = from_samples(measure_builds(builds, ["wakeup_migration_share"]), builds)
    assert [c.build for c in r.change_points()] == ["ds5"]


# -- gate --series ---------------------------------------------------------------------------------


def test_gate_fails_when_the_newest_build_starts_a_regression(root, cached_loads, tmp_path):
    # the newest build's six B runs against the twelve A runs: Holm over the rules holds
    dirs = [str(root / "newest-of-six" / b) for b in NEWEST_OF_SIX]
    proc = run_cli("gate", "--series", *dirs)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BROKEN   wakeup_migrations_per_s" in proc.stdout
    assert "(Holm over the rules: 0.008)" in proc.stdout
    assert "FAIL: the newest build b5 starts a regression" in proc.stdout
    # three B runs (p 0.029) break the rule alone, not after Holm over four rules
    dirs = [str(root / "stepped" / b) for b in list(STEPPED)[:5]]
    assert gate_series(dirs).exit_code == 0
    rules = tmp_path / "none.toml"
    rules.write_text(
        '[gate]\nmultiplicity = "none"\n[rules.wakeup_migrations_per_s]\nallowed = "25%"\n'
    )
    r = gate_series(dirs, rules)
    assert r.exit_code == 1 and r.verdicts[0].change.p == pytest.approx(0.029)


def test_gate_passes_an_unchanged_newest_build(root, cached_loads, tmp_path):
    dirs = [str(root / "interleaved" / b) for b in A_INTERLEAVED]
    out = tmp_path / "gate.json"
    proc = run_cli("gate", "--series", *dirs, "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["exit_code"] == 0 and {r["status"] for r in doc["rules"]} == {"pass"}
    # the A runs in time order: their drift at b4 (p 0.014) is not past Holm
    assert gate_series([str(root / "in-time" / b) for b in A_IN_TIME]).exit_code == 0
    # and a change at the newest build that is for the better passes too
    r = gate_series([str(root / "stepped" / b) for b in ("b5", "b6", "b1")])
    assert r.exit_code == 0, series_report.headline(r)


def test_gate_cannot_judge(root, cached_loads, tmp_path):
    one = str(root / "stepped" / "b1")
    proc = run_cli("gate", "--series", one)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "schedwake gate: ERROR: cannot judge: a series needs at least 2 builds (got 1)"
    )
    rules = tmp_path / "r.toml"
    rules.write_text('[rules.storm_preempted_share]\nallowed = "10%"\n')
    dirs = [str(root / "stepped" / b) for b in ("b1", "b2")]
    proc = run_cli("gate", "--series", *dirs, "--rules", rules)
    assert proc.returncode == 2 and "storm_preempted_share: not measured" in proc.stderr
    # two builds of 3 runs: the newest can at best reach p = 1/20 > alpha 0.01
    rules.write_text('[gate]\nalpha = 0.01\n[rules.migrations_per_s]\nallowed = "10%"\n')
    proc = run_cli("gate", "--series", *dirs, "--rules", rules)
    assert proc.returncode == 2 and "at best reach p = 0.05" in proc.stderr


def test_gate_refuses_a_run_the_two_sided_gate_would(root, cached_loads, tmp_path):
    """A run with events lost in the ring buffer in the newest build: no verdict around
    it (exit 2 naming the build and the trace), as the two-sided gate refuses it."""
    import shutil

    newest = tmp_path / "b3"
    newest.mkdir()
    for src in (root / "stepped" / "b2").iterdir():
        shutil.copy(os.path.realpath(src), newest / src.name)
    shutil.copy(SAMPLES / "lost-events.dat", newest / "lost-events.dat")
    dirs = [str(root / "stepped" / b) for b in ("b1", "b2")] + [str(newest)]
    result = gate_series(dirs)
    assert result.exit_code == 2, series_report.headline(result)
    assert any(p.startswith("build b3 lost-events.dat: the ring buffer") for p in result.problems)


def test_gate_series_refuses_the_two_sided_options(tmp_path):
    proc = run_cli("gate", "--series", CW, CW, "--baseline", CW)
    assert proc.returncode == 2 and proc.stderr == (
        "Error: --baseline: does not apply to gate --series (a series judges its newest "
        "build; --json)\n"
    )


def test_bad_input_is_one_line(tmp_path):
    proc = run_cli("series", tmp_path / "nope", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"schedwake: {tmp_path / 'nope'}: no such file or directory\n"
    proc = run_cli("series", CW, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"schedwake: {tmp_path}: build {tmp_path.name}: ")
    assert len(proc.stderr.splitlines()) == 1
    proc = run_cli("series", str(CW), "--metric", "no_such_metric")
    assert proc.returncode == 2 and proc.stderr.startswith("Error: --metric")
    proc = run_cli("series", str(CW), str(CW))
    assert proc.returncode == 2 and "is given twice" in proc.stderr


def test_builds_of_paths_and_of_build_records(stepped):
    builds, _ = stepped
    assert all(isinstance(b, Build) for b in builds)
    assert [len(b.runs) for b in builds] == [3] * 6
    assert [b.name for b in builds] == list(STEPPED)
