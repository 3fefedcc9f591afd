"""Issue #24, items 4 and 5 on real traces: ``--where`` compares by the column's type and
names the condition that matched nothing; a relative ``--side`` pattern matches a batch's
absolute paths from the batch's common root or the current directory; a run's
``topology.json`` beside its ``trace.dat`` is found; batch takes a topology per trace
(``--topology-for GLOB=FILE``); a topology of another machine is refused or noted."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pytest

import schedwake
from schedwake.batch import BatchDataset
from schedwake.errors import TraceError
from schedwake.topology import Topology

from .conftest import computed_once, run_cli, run_dir, sample

KSTACK = "kstack-6.1/k61-dbench-c2-kstack"
TWO_LLC = sample("kstack-6.1/k61-2llc-dbench-c2-kstack-on.topology.json")  # 8 CPUs, 2 LLCs


@pytest.fixture(scope="module")
def runs() -> Path:
    """runs/{on-1,on-2,off-1,off-2}/trace.dat (links to real 8-CPU traces); on-1 has its
    run's topology.json (two LLCs), and two.json is a topology for --topology-for. With
    the batch of :func:`dataset` in out/: made once per test run in the run's directory
    (:func:`computed_once`) and shared by the tests of every xdist worker, which only
    read them."""
    return Path(computed_once("test_batch_filters_and_topologies: runs and their batch", _runs))


def _runs() -> str:
    root = Path(tempfile.mkdtemp(prefix="layout-", dir=run_dir()))
    for run, src in (
        ("on-1", "on-i1"),
        ("on-2", "on-i2"),
        ("off-1", "off-i1"),
        ("off-2", "off-i2"),
    ):
        (root / "runs" / run).mkdir(parents=True)
        os.symlink(sample(f"{KSTACK}-{src}.dat"), root / "runs" / run / "trace.dat")
    shutil.copy(TWO_LLC, root / "runs" / "on-1" / "topology.json")
    shutil.copy(TWO_LLC, root / "two.json")
    # the batch of the runs, given by their absolute directory (so the stored paths are
    # absolute), with a label that only the on-runs have (an integer column with gaps)
    proc = run_cli(
        "batch", "--serial", str(root / "runs"), "-o", root / "out",
        "--label-from", r"/(?:on-(?P<on_run>\d+)|off-\d+)/",
        "--topology-for", "**/off-1/trace.dat=two.json", cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return str(root)


@pytest.fixture(scope="module")
def dataset(runs) -> Path:
    """The batch of the runs (made with them, see :func:`runs`)."""
    return runs / "out"


@pytest.mark.slow
def test_a_run_directory_topology_and_per_trace_topologies(runs, dataset):
    rows = pd.read_parquet(dataset / "traces.parquet").set_index("path")
    src = {os.path.basename(os.path.dirname(p)): v for p, v in rows["topology_from"].items()}
    assert src["on-1"] == str(runs / "runs" / "on-1" / "topology.json")
    assert src["off-1"] == "two.json"  # as given to --topology-for
    assert src["on-2"] == src["off-2"] == "inferred"
    llcs = {os.path.basename(os.path.dirname(p)): len(v) for p, v in rows["topology_llc"].items()}
    assert llcs["on-1"] == llcs["off-1"] == 2
    manifest = json.loads((dataset / "batch.json").read_text())
    assert manifest["options"]["topology_for"] == {"**/off-1/trace.dat": "two.json"}
    # the same lookup as analyze: the run's topology.json
    t = schedwake.load(runs / "runs" / "on-1" / "trace.dat", events=["sched_switch"])
    assert t.topology.source == str(runs / "runs" / "on-1" / "topology.json")
    assert len(t.topology.llc) == 2


@pytest.mark.slow
def test_where_compares_numbers_as_numbers(dataset):
    ds = BatchDataset(dataset)
    assert ds.traces["on_run"].dtype.kind == "f"  # an int64 label with gaps reads as float
    for value in ("1", "1.0", "+1"):
        (path,) = ds.where([f"on_run={value}"]).traces["path"]
        assert path.endswith("/runs/on-1/trace.dat")
    with pytest.raises(TraceError, match=r"on_run=3 matches no trace \(of 4\); on_run has 1, 2"):
        ds.where(["on_run=3"])
    with pytest.raises(TraceError, match="on_run holds numbers, and 'one' is not one"):
        ds.where(["on_run=one"])
    # a column given twice is refused, not filtered by its last value alone
    with pytest.raises(TraceError, match="two values for on_run: on_run=1 and on_run=2;"):
        ds.where(["on_run=1", " on_run = 2"])
    where_twice = ("--where", "on_run=1", "--where", "on_run=2")
    proc = run_cli(
        "gate", "--from-batch", dataset, *where_twice, "--baseline", "a", "--candidate", "b"
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "Error: --where: two values for on_run: on_run=1 and on_run=2; a trace has one value "
        "per column"
    ]
    proc = run_cli("compare", "--from-batch", dataset, "--where", "on_run=7", "a", "b")
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(
        "--where: on_run=7 matches no trace (of 4); on_run has 1, 2"
    )


def test_relative_patterns_match_absolute_stored_paths(runs, dataset):
    ds = BatchDataset(dataset)
    assert all(os.path.isabs(p) for p in ds.traces["path"])
    on = ds.expand("on-*/trace.dat")  # from the batch's common root, runs/
    assert [os.path.basename(os.path.dirname(p)) for p in on] == ["on-1", "on-2"]
    assert ds.expand("**/off-2/*") == [str(runs / "runs" / "off-2" / "trace.dat")]
    with pytest.raises(TraceError) as err:
        ds.expand("*kstack*", "--side x")
    assert "--side x: the pattern matches no trace of the batch" in str(err.value)
    assert f"(4 trace(s); a stored path: {runs / 'runs' / 'off-1' / 'trace.dat'})" in str(err.value)
    # relative to the current directory, through the CLI: the same table as over the files
    args = ["--side", "on=runs/on-*/trace.dat", "--side", "off=runs/off-*/trace.dat"]
    args += ["--metric", "migrations_per_s"]
    proc = run_cli("compare", "--from-batch", dataset, *args, cwd=runs)
    assert proc.returncode == 0, proc.stderr
    assert "migrations_per_s" in proc.stdout.splitlines()[2]


def test_a_topology_of_another_machine_is_refused_or_noted(tmp_path):
    trace = sample("dbench-xfs-1client.dat")  # 2 CPUs
    sixteen = sample("guest16-2llc-tcrecord-dbench.topology.json")
    with pytest.raises(
        TraceError, match=r"a machine with 16 CPUs \(it names CPU 15\) but the trace has CPUs 0-1"
    ):
        Topology.from_file(sixteen, trace_cpus=2)
    proc = run_cli("analyze", trace, "--topology", sixteen)
    assert proc.returncode == 2 and "the map of another machine?" in proc.stderr
    # a map that says 16 CPUs but places only the trace's two: used, and said
    bigger = tmp_path / "t.json"
    bigger.write_text('{"cpus": 16, "llc": [[0, 1]]}')
    t = schedwake.load(trace, events=["sched_switch", "sched_waking", "sched_migrate_task"])
    t.use_topology(bigger)
    assert (
        f"topology {bigger}: the topology is of a machine with 16 CPUs, the trace has CPUs "
        "0-1: the map of another machine?"
    ) in t.caveats
    # the trace's own map: no word
    t.use_topology(sample("dbench-xfs-1client.topology.json"))
    assert not [c for c in t.caveats if "another machine" in c]


def test_topology_for_is_checked_before_any_work(tmp_path):
    proc = run_cli("batch", "x.dat", "-o", tmp_path / "o", "--topology-for", "nofile")
    assert proc.returncode == 2 and "--topology-for: expected GLOB=FILE" in proc.stderr
    proc = run_cli("batch", "x.dat", "-o", tmp_path / "o", "--topology-for", "*=none.json")
    assert proc.returncode == 2 and "none.json: no such topology file" in proc.stderr
