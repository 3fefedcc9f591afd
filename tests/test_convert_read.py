"""A ``schedwake convert`` directory read back as a trace (input format ``parquet``):
whole and by time range, equal to the file it was converted from; the time-partitioned
analysis of it; its damage in one line."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import schedwake
from schedwake import ingest
from schedwake.convert import convert
from schedwake.errors import TraceError
from schedwake.ingest import ReadOptions
from schedwake.jsonout import dumps

from .conftest import plain, run_cli, sample

SAMPLES = {
    "lost": "lost-events.dat",
    "perf": "perf/perf-sched-g.perf.data",
    "k61": "kstack-6.1/k61-dbench-c2-kstack-off-i1.dat",
}
#: Row groups small enough for the small samples to be cut into parts.
GROUP_ROWS = 4096


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Per sample: (the original, its convert directory), each converted once."""
    made = {}

    def get(key):
        if key not in made:
            out = tmp_path_factory.mktemp(key) / "tables"
            convert(sample(SAMPLES[key]), out, row_group_rows=GROUP_ROWS)
            made[key] = (sample(SAMPLES[key]), out)
        return made[key]

    return get


def _values(table: pa.Table) -> dict[str, list]:
    return {c: plain(table.column(c)).to_pylist() for c in table.column_names}


def _same_table(a: pa.Table, b: pa.Table, what) -> None:
    assert a.schema == b.schema, what
    assert _values(a) == _values(b), what


def _meta_but(meta, *source_keys):
    """The metadata without its path and the ``source`` keys named."""
    source = {k: v for k, v in meta.source.items() if k not in source_keys}
    return dataclasses.replace(meta, path="", source=source)


def _filtered(table: pa.Table, t0: int, t1: int | None) -> pa.Table:
    keep = pc.greater_equal(table.column("ts"), t0)
    if t1 is not None:
        keep = pc.and_(keep, pc.less(table.column("ts"), t1))
    return table.filter(keep)


def _ranges(meta) -> list[tuple[int, int | None]]:
    first, last = meta.first_ts_ns, meta.last_ts_ns
    q1, mid, q3 = (first + (last - first) * k // 4 for k in (1, 2, 3))
    return [(-(2**63), q1), (q1, q3), (mid, None), (last + 1, None)]


@pytest.mark.parametrize("key", SAMPLES)
def test_whole_directory_reads_as_the_original(converted, key):
    src, out = converted(key)
    a = ingest.read_with(src, ReadOptions())
    b = ingest.read_with(out, ReadOptions())
    assert ingest.sniff(out) == "parquet"
    assert sorted(a.tables) == sorted(b.tables)  # (a dict: in the order metadata.json lists)
    for name in a.tables:  # (whole: the very arrays, dictionaries included)
        assert a.tables[name].schema == b.tables[name].schema, name
        assert a.tables[name].equals(b.tables[name]), name
    assert a.lost.equals(b.lost) and a.lost.schema == b.lost.schema
    assert list(a.sideband) == list(b.sideband)
    assert all(a.sideband[n].equals(b.sideband[n]) for n in a.sideband)
    assert (key == "perf") == bool(b.sideband)
    assert b.meta.path == str(out) and b.meta.format == a.meta.format
    assert _meta_but(a.meta) == _meta_but(b.meta)
    trace = schedwake.load(out, input_format="parquet")
    assert trace.meta == b.meta


@pytest.mark.parametrize("key", SAMPLES)
def test_time_range_is_the_whole_filtered_and_as_the_original_reads_it(converted, key):
    src, out = converted(key)
    whole = ingest.read_with(out, ReadOptions())
    for t0, t1 in _ranges(whole.meta):
        part = ingest.read_with(out, ReadOptions(time_range=(t0, t1)))
        expected = {n: _filtered(t, t0, t1) for n, t in whole.tables.items()}
        expected = {n: t for n, t in expected.items() if t.num_rows}
        assert sorted(part.tables) == sorted(expected), (t0, t1)
        for name, table in expected.items():
            _same_table(table, part.tables[name], (name, t0, t1))
        _same_table(_filtered(whole.lost, t0, t1), part.lost, ("lost", t0, t1))
        # the metadata of the range as the trace.dat and perf.data readers give it
        # (their blocks are not row groups)
        orig = ingest.read_with(src, ReadOptions(time_range=(t0, t1)))
        assert sorted(orig.tables) == sorted(part.tables)
        blocks = ("blocks_decoded", "blocks_total")
        assert _meta_but(orig.meta, *blocks) == _meta_but(part.meta, *blocks), (t0, t1)
        assert part.meta.source["time_range"] == [t0, t1]
        assert 0 <= part.meta.source["blocks_decoded"] <= part.meta.source["blocks_total"]


def test_time_range_reads_only_the_row_groups_it_needs(converted):
    _, out = converted("k61")
    whole = ingest.read_with(out, ReadOptions())
    first, last = whole.meta.first_ts_ns, whole.meta.last_ts_ns
    mid = (first + last) // 2
    part = ingest.read_with(out, ReadOptions(time_range=(mid, mid + (last - first) // 10)))
    assert 0 < part.meta.source["blocks_decoded"] < part.meta.source["blocks_total"] / 2


def test_events_read_only_the_wanted_tables(converted):
    _, out = converted("k61")
    whole = ingest.read_with(out, ReadOptions())
    wanted = ["sched_switch", "sched:sched_waking"]
    some = ingest.read_with(out, ReadOptions(events=wanted))
    assert list(some.tables) == ["sched_switch", "sched_waking"]
    assert some.meta == whole.meta  # (counts of every event, as the readers give them)
    t0 = (whole.meta.first_ts_ns + whole.meta.last_ts_ns) // 2
    ranged = ingest.read_with(out, ReadOptions(events=wanted, time_range=(t0, None)))
    every = ingest.read_with(out, ReadOptions(time_range=(t0, None)))
    assert list(ranged.tables) == ["sched_switch", "sched_waking"]
    assert ranged.meta.event_counts == every.meta.event_counts
    for name in ranged.tables:
        _same_table(every.tables[name], ranged.tables[name], name)


def test_events_not_converted_are_refused(tmp_path):
    out = tmp_path / "tables"
    convert(sample(SAMPLES["lost"]), out, events=["sched_switch"])
    assert list(schedwake.load(out).events) == ["sched_switch"]
    with pytest.raises(TraceError, match="converted without the sched_waking events"):
        ingest.read_with(out, ReadOptions(events=["sched_waking"]))


def test_a_directory_converted_into_again_is_the_last_trace(tmp_path):
    """Files an earlier conversion left (other tables, side-band tables) are not read:
    metadata.json lists what the last one wrote."""
    out = tmp_path / "tables"
    convert(sample(SAMPLES["perf"]), out)
    convert(sample(SAMPLES["perf"]), out)  # (over its own side-band directory)
    assert sorted(schedwake.load(out).sideband) == ["comms", "exits", "forks", "mmaps"]
    convert(sample(SAMPLES["lost"]), out, events=["sched_switch"])
    raw = ingest.read_with(out, ReadOptions())
    assert list(raw.tables) == ["sched_switch"] and raw.sideband == {} and raw.lost.num_rows
    assert raw.meta.format == "trace.dat"
    fresh = tmp_path / "fresh"
    convert(sample(SAMPLES["lost"]), fresh, events=["sched_switch"])
    assert ingest.cut_times(out, 3) == ingest.cut_times(fresh, 3)  # (its tables only)


def test_cut_times_of_a_directory_are_inside_the_trace(converted):
    _, out = converted("k61")
    meta = ingest.read_with(out, ReadOptions(events=[])).meta
    cuts = ingest.cut_times(out, 4)
    assert len(cuts) == 3 and cuts == sorted(set(cuts))
    assert meta.first_ts_ns < cuts[0] and cuts[-1] < meta.last_ts_ns
    assert "parquet" in ingest.PARTITIONED_FORMATS


def _analysis(path) -> dict:
    proc = run_cli("analyze", path, "--format", "json", check=True)
    doc = json.loads(proc.stdout)
    topo = doc["trace"]["topology"]
    if topo.get("source") == "file":  # the topology file convert copied in
        for k in ("from", "description"):
            topo[k] = topo[k].replace(str(path / "topology.json"), "<file>")
    doc["trace"]["path"] = "<trace>"
    return doc


@pytest.mark.slow
@pytest.mark.parametrize("key", SAMPLES)
def test_analyze_directory_is_the_original_analysis(converted, key):
    src, out = converted(key)
    a, b = _analysis(src), _analysis(out)
    topo = a["trace"]["topology"]
    if topo.get("source") == "file":
        beside = src.with_name(src.name.rsplit(".", 1)[0] + ".topology.json")
        for k in ("from", "description"):
            topo[k] = topo[k].replace(str(beside), "<file>")
    assert dumps(a) == dumps(b)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["k61", "perf"])
def test_partitioned_analysis_of_a_directory_is_its_whole_analysis(converted, key):
    from schedwake import partition
    from schedwake.analysis.partitioned import analyze_parts

    _, out = converted(key)
    detectors = ["kworker_pingpong", "llc_roundrobin"]
    plan = partition.plan(out, 3)
    parts = dumps(analyze_parts(plan, detectors=detectors).to_dict())
    whole = dumps(schedwake.analyze(schedwake.load(out), detectors=detectors).to_dict())
    assert parts == whole


# --- damage -----------------------------------------------------------------------


def _damaged(tmp_path, converted) -> dict[str, tuple[object, str]]:
    """Copies of a conversion, each damaged one way: (the directory, the file the error
    names, words of the error)."""
    _, out = converted("k61")
    cases = {}

    def copy(label):
        d = tmp_path / label
        shutil.copytree(out, d)
        return d

    d = copy("truncated")
    f = d / "sched_switch.parquet"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    cases["truncated"] = (d, f, "not a readable Parquet table")
    d = copy("corrupt")
    f = d / "sched_switch.parquet"
    data = bytearray(f.read_bytes())
    for i in range(64, len(data) // 2, 97):  # data pages only: the footer is whole
        data[i] ^= 0xFF
    f.write_bytes(bytes(data))
    cases["corrupt page"] = (d, f, "not a readable Parquet table")
    d = copy("missing")
    (d / "sched_waking.parquet").unlink()
    cases["missing table"] = (d, d / "sched_waking.parquet", "no such file")
    d = copy("notjson")
    (d / "metadata.json").write_text('{"tables": {"sched_switch": ')
    cases["metadata not JSON"] = (d, d / "metadata.json", "not JSON")
    d = copy("old")
    facts = json.loads((d / "metadata.json").read_text())
    del facts["meta"]
    (d / "metadata.json").write_text(json.dumps(facts))
    cases["older convert"] = (d, d, "convert the trace again")
    d = copy("badmeta")
    facts["meta"] = {"cpus": 2}
    (d / "metadata.json").write_text(json.dumps(facts))
    cases["metadata without a trace's"] = (d, d / "metadata.json", "holds no trace metadata")
    return cases


def test_damaged_directory_is_a_trace_error_naming_the_file(tmp_path, converted):
    for label, (d, f, words) in _damaged(tmp_path, converted).items():
        with pytest.raises(TraceError) as err:
            schedwake.load(d)
        assert err.value.path == str(f) and words in str(err.value), (label, err.value)
        assert "\n" not in str(err.value), label


@pytest.mark.slow
def test_damaged_directory_is_one_line_exit_2(tmp_path, converted):
    for label, (d, f, words) in _damaged(tmp_path, converted).items():
        proc = run_cli("analyze", d)
        assert proc.returncode == 2, (label, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and str(f) in lines[0] and words in lines[0], (label, lines)
        assert "Traceback" not in proc.stderr and proc.stdout == ""
        # in parts, the same line only (the worker that found it returns it, unlogged)
        proc = run_cli("analyze", d, "--partitions", "2")
        assert proc.returncode == 2 and proc.stdout == "", (label, proc.stderr)
        assert proc.stderr.strip().splitlines() == lines, (label, proc.stderr)
