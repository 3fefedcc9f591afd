"""Topology: cpulist parsing, JSON files, sysfs capture, lookup beside the trace, CLI."""

from __future__ import annotations

import json

import pytest

from schedwake import TraceError
from schedwake.topology import Topology, format_cpulist, parse_cpulist, resolve

from .conftest import SAMPLES, run_cli


@pytest.mark.parametrize(
    "text,cpus",
    [
        ("0-3,8-11", [0, 1, 2, 3, 8, 9, 10, 11]),
        ("5", [5]),
        (" 0 - 2 , 4 ", [0, 1, 2, 4]),
        ("0-7:2", [0, 2, 4, 6]),
        ("3,1,1", [1, 3]),
        ("0-0", [0]),
    ],
)
def test_parse_cpulist(text, cpus):
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("bad", ["", "a", "3-1", "1-", "-1", "0-3:0", "1,,2", "0x3"])
def test_parse_cpulist_rejects(bad):
    with pytest.raises(TraceError) as e:
        parse_cpulist(bad, "--llc")
    assert "\n" not in str(e.value) and str(e.value).startswith("--llc ")


def test_format_cpulist_roundtrip():
    assert format_cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert parse_cpulist(format_cpulist([0, 1, 2, 5, 7, 8])) == [0, 1, 2, 5, 7, 8]


def _two_nodes() -> Topology:
    """8 CPUs: two nodes of one LLC each, two SMT siblings a core."""
    return Topology(
        cpus=8,
        llc=[[0, 1, 2, 3], [4, 5, 6, 7]],
        smt=[[0, 1], [2, 3], [4, 5], [6, 7]],
        numa=[[0, 1, 2, 3], [4, 5, 6, 7]],
        source="x",
    )


def test_classify():
    t = _two_nodes()
    got = list(t.classify([0, 0, 0, 0, 3], [0, 1, 2, 4, 7]))
    assert got == ["none", "same_core", "same_llc", "cross_numa", "cross_numa"]
    t2 = Topology(cpus=8, llc=[[0, 1, 2, 3], [4, 5, 6, 7]], source="x")
    assert list(t2.classify([0], [5])) == ["cross_llc"]


def test_classify_per_cpu_pair_as_row_by_row():
    """Many rows over few CPUs are classified per CPU pair, then looked up: the same
    classes as row by row, with CPUs missing (-1), beyond the map or far apart."""
    import numpy as np

    t = _two_nodes()
    rng = np.random.default_rng(3)
    for lo, hi, n in ((-2, 12, 5000), (0, 7, 64), (-1, 3, 30), (0, 1 << 40, 500)):
        s = rng.integers(lo, hi + 1, n)
        d = rng.integers(lo, hi + 1, n)
        got = t.classify(s, d)
        want = t._pair_codes(s.astype(np.int64), d.astype(np.int64))
        assert np.asarray(got.codes).tolist() == want.tolist()
    many = t.classify(np.repeat(np.arange(-1, 9), 100), np.tile(np.arange(-1, 9), 100))
    assert set(np.asarray(many.codes).tolist()) == {-1, 0, 1, 2, 4}  # (LLCs are nodes)


def test_sample_topology_beside_trace_is_used():
    p = SAMPLES / "dbench-xfs-1client.dat"
    topo = resolve(p, 2)
    assert topo.llc == [[0, 1]] and not topo.assumed
    assert topo.source.endswith("dbench-xfs-1client.topology.json")


def test_assumed_without_file(tmp_path):
    topo = resolve(tmp_path / "x.dat", 4)
    assert topo.assumed and topo.llc == [[0, 1, 2, 3]]
    assert "ASSUMED" in topo.describe()


def test_llc_option_and_errors(tmp_path):
    topo = resolve(None, 8, llc=["0-3", "4-7"])
    assert topo.llc == [[0, 1, 2, 3], [4, 5, 6, 7]] and topo.source == "--llc"
    with pytest.raises(TraceError):
        resolve(None, 8, llc=["0-4", "4-7"])  # CPU 4 twice
    bad = tmp_path / "bad.json"
    for text in (
        "{",
        "[]",
        '{"cpus": 2}',
        '{"cpus": 2, "llc": [["x"]]}',
        '{"cpus": 2, "llc": [[0, -1]]}',
    ):
        bad.write_text(text)
        with pytest.raises(TraceError) as e:
            resolve(None, 2, topology_file=bad)
        assert "\n" not in str(e.value)
    with pytest.raises(TraceError):
        resolve(None, 2, topology_file=tmp_path / "missing.json")
    small = tmp_path / "small.json"
    small.write_text('{"cpus": 2, "llc": [[0, 1]]}')
    with pytest.raises(TraceError, match="covers 2 CPUs"):
        resolve(None, 4, topology_file=small)


def _fake_sysfs(root, llcs, smt, nodes):
    cpu_dir = root / "devices/system/cpu"
    ncpu = sum(len(g) for g in llcs)
    for c in range(ncpu):
        d = cpu_dir / f"cpu{c}"
        llc = next(g for g in llcs if c in g)
        for i, (level, typ, shared) in enumerate(
            [
                (1, "Data", str(c)),
                (1, "Instruction", str(c)),
                (2, "Unified", str(c)),
                (3, "Unified", format_cpulist(llc)),
            ]
        ):
            idx = d / "cache" / f"index{i}"
            idx.mkdir(parents=True)
            (idx / "level").write_text(f"{level}\n")
            (idx / "type").write_text(f"{typ}\n")
            (idx / "shared_cpu_list").write_text(shared + "\n")
        (d / "topology").mkdir()
        sib = next(g for g in smt if c in g)
        (d / "topology/thread_siblings_list").write_text(format_cpulist(sib) + "\n")
    for i, n in enumerate(nodes):
        nd = root / f"devices/system/node/node{i}"
        nd.mkdir(parents=True)
        (nd / "cpulist").write_text(format_cpulist(n) + "\n")


def test_capture_from_fake_sysfs(tmp_path):
    _fake_sysfs(
        tmp_path,
        [[0, 1, 4, 5], [2, 3, 6, 7]],
        [[0, 4], [1, 5], [2, 6], [3, 7]],
        [[0, 1, 2, 3, 4, 5, 6, 7]],
    )
    t = Topology.capture(tmp_path)
    assert t.to_dict() == {
        "cpus": 8,
        "llc": [[0, 1, 4, 5], [2, 3, 6, 7]],
        "smt": [[0, 4], [1, 5], [2, 6], [3, 7]],
        "numa": [[0, 1, 2, 3, 4, 5, 6, 7]],
    }


def test_topology_command_this_machine(tmp_path):
    out = tmp_path / "topo.json"
    run_cli("topology", "-o", out, check=True)
    d = json.loads(out.read_text())
    assert set(d) == {"cpus", "llc", "smt", "numa"} and d["cpus"] >= 1
    assert sorted(c for g in d["llc"] for c in g) == list(range(d["cpus"]))
    p = run_cli("topology", check=True)
    assert json.loads(p.stdout) == d
