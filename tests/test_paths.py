"""One rule names the traces of a path, a directory or a glob (schedwake/paths.py), for
compare, gate, batch, --from-batch and --topology-for alike: on the real samples, a
directory is its traces (a ``perf record --threads`` directory one of them), a glob its
files, and a pattern naming nothing says what it was."""

from __future__ import annotations

import os
import shutil

import pytest

import schedwake
from schedwake.batch import BatchDataset, Options, expand_inputs
from schedwake.compare import expand_paths
from schedwake.compare.sides import parse_sides
from schedwake.errors import TraceError
from schedwake.paths import Stored, expand, glob_files, match

from .conftest import SAMPLES, sample

PERF = SAMPLES / "perf"
THREADS = PERF / "perf-threads.perf.data"  # perf record --threads: a directory


def test_compare_batch_and_the_rule_are_one_function():
    assert expand_paths is expand


def test_a_directory_is_its_traces_and_a_threads_directory_is_one():
    found = expand(str(PERF))
    assert str(THREADS) in found and not [f for f in found if f.startswith(str(THREADS) + "/")]
    assert found == sorted(found)
    assert {os.path.basename(f) for f in found} >= {
        "perf-dbench-z.perf.data",
        "perf-sched-g.perf.data",
        "perf-threads.perf.data",
    }
    assert expand(str(THREADS)) == [str(THREADS)]  # given itself: one trace
    # globs: the threads directory is a trace they match, its files are not walked into
    assert str(THREADS) in glob_files(f"{PERF}/*.perf.data")
    assert str(THREADS) in glob_files(f"{SAMPLES}/**/*.perf.data")
    assert not [f for f in glob_files(f"{SAMPLES}/**/data*") if "perf-threads" in f]


def test_a_directory_leaves_out_the_files_named_after_its_traces(tmp_path):
    # record writes TRACE.cmd.txt and TRACE.perf-stat.txt beside TRACE: not traces
    for name in ("r1.dat", "r1.dat.cmd.txt", "r1.dat.perf-stat.txt", "r2.txt", "notes"):
        (tmp_path / name).write_text("x")
    assert [os.path.basename(f) for f in expand(str(tmp_path))] == ["r1.dat", "r2.txt"]


def test_hidden_names_and_what_names_nothing(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    (runs / ".hidden").mkdir(parents=True)
    (runs / "empty").mkdir()
    shutil.copy(sample("idle-sleep.dat"), runs / "idle.dat")
    shutil.copy(sample("idle-sleep.dat"), runs / ".idle.dat")
    shutil.copy(sample("idle-sleep.dat"), runs / ".hidden" / "idle.dat")
    shutil.copy(sample("idle-sleep.topology.json"), runs / "idle.topology.json")
    assert expand(str(runs)) == [str(runs / "idle.dat")]  # not the topology, not .names
    # spelled as the pattern spells it; batch stores one normal path a trace
    monkeypatch.chdir(tmp_path)
    assert expand("./runs") == ["./runs/idle.dat"]
    assert expand_inputs(["./runs", "runs/idle.dat", "runs/*.dat"]) == (["runs/idle.dat"], [])
    with pytest.raises(TraceError) as err:
        expand("runs/empty", "--side a")
    assert str(err.value).startswith("runs/empty: --side a: the directory holds no trace file")
    with pytest.raises(TraceError, match=r"^runs/\*\.txt: trace: the pattern matches no file$"):
        expand("runs/*.txt")
    assert expand("runs/nope.dat") == ["runs/nope.dat"]  # its reader says "no such file"
    assert expand_inputs(["runs/empty", "runs/*.txt"]) == ([], ["runs/empty", "runs/*.txt"])


def test_compare_takes_directories_as_sides():
    kstack = SAMPLES / "kstack-6.1"
    sides = parse_sides(side_specs=[f"a={SAMPLES / 'iterations'}", f"b={kstack}"])
    assert sides[0][1] == sorted(str(p) for p in (SAMPLES / "iterations").glob("*.dat"))
    assert sides[1][1] == sorted(str(p) for p in kstack.glob("*.dat"))


def test_stored_paths_follow_the_same_rule():
    stored = Stored(
        paths=["runs/a.dat", "runs/sub/c.dat", "x[1].dat", "x1.dat", "../up.dat"],
        absolute=["/d/runs/a.dat", "/d/runs/sub/c.dat", "/d/x[1].dat", "/d/x1.dat", "/up.dat"],
        relative=[["runs/a.dat"], ["runs/sub/c.dat"], ["x[1].dat"], ["x1.dat"], ["../up.dat"]],
        where="the batch out (5 trace(s))",
    )
    assert expand("runs", among=stored) == ["runs/a.dat", "runs/sub/c.dat"]  # a directory
    assert expand("./runs/*.dat", among=stored) == ["runs/a.dat"]  # * stops at /
    assert expand("**/c.dat", among=stored) == ["runs/sub/c.dat"]
    assert expand("x[1].dat", among=stored) == ["x[1].dat"]  # a name itself before a glob
    assert expand("x[12].dat", among=stored) == ["x1.dat"]
    assert expand("/d/runs", among=stored) == ["runs/a.dat", "runs/sub/c.dat"]
    assert "../up.dat" not in expand(".", among=stored)
    with pytest.raises(TraceError, match=r"^runs/b\*: --side b: the pattern matches no trace of"):
        expand("runs/b*", "--side b", among=stored)
    assert match("runs/sub/", [["runs/sub/c.dat"], ["runs/subway.dat"]]) == [0]


def test_topology_for_names_traces_by_the_rule():
    options = Options(
        topology_file="all.json",
        topology_abspath="/t/all.json",
        topology_map=(
            ("runs/host-a", "a.json", "/t/a.json"),
            ("**/b-*.dat", "b.json", "/t/b.json"),
        ),
    )
    here = os.getcwd()
    assert options.topology_for("runs/host-a/t.dat", f"{here}/runs/host-a/t.dat")[0] == "a.json"
    assert options.topology_for("runs/x/b-1.dat", f"{here}/runs/x/b-1.dat")[0] == "b.json"
    assert options.topology_for("runs/host-ab/t.dat", f"{here}/runs/host-ab/t.dat")[0] == "all.json"


def test_batch_of_a_directory_skips_hidden_and_names_an_empty_one(tmp_path):
    runs = tmp_path / "runs"
    (runs / "empty").mkdir(parents=True)
    shutil.copy(sample("idle-sleep.dat"), runs / "idle.dat")
    shutil.copy(sample("idle-sleep.dat"), runs / ".idle.dat.swp.dat")
    result = schedwake.batch([str(runs), str(runs / "empty")], tmp_path / "out", scheduler="serial")
    assert result.errors == [
        (
            str(runs / "empty"),
            f"{runs / 'empty'}: the directory holds no trace file (a name ending .dat, .txt, "
            ".report, .perf, .data, .pftrace, .perfetto-trace, .pb, .gz, .xz, .zst or .bz2)",
        )
    ]
    ds = BatchDataset(tmp_path / "out")
    assert list(ds.traces["path"]) == [str(runs / "empty"), str(runs / "idle.dat")]
    assert ds.expand(str(runs)) == [str(runs / "empty"), str(runs / "idle.dat")]
