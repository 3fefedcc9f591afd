"""Time-range reads (docs/design-partitioned-analysis.md, step 1): a trace cut at any
times and read part by part, each part decoding only the blocks of the index that can
hold it, gives back the whole read's tables, every column, lost events included.

On real recordings: trace.dat v7 zstd and zlib (sample_traces/), v6 and uncompressed v7
made from them by ``trace-cmd convert``, perf.data (compressed, plain, pipe mode, a
``--threads`` directory) and the Parquet of ``schedwake convert``.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import schedwake
from schedwake import ingest
from schedwake.convert import convert
from schedwake.errors import OptionError, TraceError
from schedwake.ingest import _tdread, parquet, perfdata, tracedat

from .conftest import plain, sample

INT64_MIN = -(2**63)

#: Real v7 recordings: zstd with lost events, the same file zlib-compressed, and a
#: larger zstd recording of four CPUs
V7 = ["lost-events.dat", "zlib/lost-events-zlib.dat", "dbench-xfs-1client.dat"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[str, Path]:
    """lost-events.dat as trace.dat v6 and as uncompressed v7 (pages, not chunks)."""
    if subprocess.run(["which", "trace-cmd"], capture_output=True).returncode:
        pytest.skip("no trace-cmd to convert the sample")
    out = {}
    d = tmp_path_factory.mktemp("versions")
    for version in ("6", "7"):
        path = d / f"lost-events-v{version}-none.dat"
        subprocess.run(
            ["trace-cmd", "convert", "-i", str(sample("lost-events.dat")), "-o", str(path)]
            + ["--file-version", version, "--compression", "none"],
            check=True,
            capture_output=True,
        )
        out[version] = path
    return out


#: Every kind of trace.dat: the samples, and lost-events.dat as v6 and uncompressed v7
TRACES = [*V7, "v6", "v7-none"]


def trace_path(name: str, converted: dict[str, Path]) -> Path:
    made = {"v6": "6", "v7-none": "7"}
    return converted[made[name]] if name in made else sample(name)


def trace_paths(converted: dict[str, Path]) -> list[Path]:
    return [trace_path(n, converted) for n in TRACES]


def plain_table(t: pa.Table) -> pa.Table:
    return pa.table([plain(c) for c in t.columns], names=t.column_names)


def parts_of(path: Path, cuts: list[int], events: list[str] | None = None) -> list:
    bounds: list[int | None] = [INT64_MIN, *cuts, None]
    return [
        ingest.read_with(path, ingest.ReadOptions(events, time_range=(a, b)))
        for a, b in zip(bounds, bounds[1:])
        if a is not None
    ]


def assert_parts_make_whole(path: Path, whole, cuts: list[int], perf: bool = False) -> None:
    parts = parts_of(path, cuts)
    assert set().union(*(p.tables for p in parts)) == set(whole.tables)
    for name, table in whole.tables.items():
        got = pa.concat_tables([plain_table(p.tables[name]) for p in parts if name in p.tables])
        assert got.equals(plain_table(table)), (path.name, name, cuts)
    assert pa.concat_tables([p.lost for p in parts]).equals(whole.lost), (path.name, cuts)
    counts: dict[str, int] = {}
    lost: dict[int, int] = {}
    for p in parts:
        assert p.meta.source["time_range"] is not None
        for name, n in p.meta.event_counts.items():
            counts[name] = counts.get(name, 0) + n
        for cpu, n in p.meta.lost_events.items():
            lost[cpu] = lost.get(cpu, 0) + n
    assert counts == whole.meta.event_counts
    # the pages' (perf: LOST records') own counts (a whole read also takes CPUSTAT's or
    # LOST_SAMPLES', of no time)
    rows_lost: dict[int, int] = {}
    for cpu, n in zip(whole.lost.column("cpu").to_pylist(), whole.lost.column("count").to_pylist()):
        rows_lost[cpu] = rows_lost.get(cpu, 0) + (n if n > 0 else 1)
    assert lost == rows_lost
    if not perf:  # (perf.data: samples of unknown attributes count where decoded)
        assert sum(p.meta.source["records"] for p in parts) == whole.meta.source["records"]


def test_the_samples_cover_the_file_kinds(converted):
    kinds = {
        (m["file_version"], m["compression"])
        for m in (_tdread.read(str(p), events=())["meta"] for p in trace_paths(converted))
    }
    assert kinds == {(7, "zstd"), (7, "zlib"), (6, None), (7, None)}


@pytest.mark.slow
@pytest.mark.parametrize("name", TRACES)
def test_parts_at_random_times_and_at_records_make_the_whole(converted, name):
    path = trace_path(name, converted)
    rnd = random.Random(35)
    whole = ingest.read(path)
    first, last = whole.meta.first_ts_ns, whole.meta.last_ts_ns
    assert first is not None and last is not None
    at_random = sorted(rnd.sample(range(first, last), 5))
    assert_parts_make_whole(path, whole, at_random)
    # cuts at the times of records themselves: ties go right of the cut
    ts = whole.tables["sched_switch"].column("ts").to_pylist()
    at_records = sorted(set(rnd.sample(ts, 4)) | {ts[0], ts[-1]})
    assert_parts_make_whole(path, whole, at_records)


@pytest.mark.slow
@pytest.mark.parametrize("name", TRACES)
def test_parts_at_the_index_cuts_make_the_whole(converted, name):
    path = trace_path(name, converted)
    whole = ingest.read(path)
    for n in (2, 5):
        cuts = ingest.cut_times(path, n)
        assert cuts == sorted(set(cuts)) and 0 < len(cuts) <= n - 1
        starts = {t for ts in tracedat.block_index(path).values() for t in ts}
        assert set(cuts) <= starts
        assert_parts_make_whole(path, whole, cuts)


def test_index_cuts_give_about_equal_parts():
    path = sample("dbench-xfs-1client.dat")
    sizes = [p.meta.source["records"] for p in parts_of(path, ingest.cut_times(path, 4))]
    assert len(sizes) == 4
    assert max(sizes) < 1.5 * min(sizes), sizes


def test_a_range_decodes_only_the_blocks_that_can_hold_it(converted):
    for path in (sample("dbench-xfs-1client.dat"), converted["6"]):
        whole = ingest.read(path)
        total = whole.meta.source["records"]
        assert "time_range" not in whole.meta.source
        index = tracedat.block_index(path)
        nblocks = sum(len(ts) for ts in index.values())
        cuts = ingest.cut_times(path, 4)
        part = ingest.read_with(path, ingest.ReadOptions(time_range=(cuts[0], cuts[1])))
        src = part.meta.source
        assert src["time_range"] == [cuts[0], cuts[1]]
        assert src["blocks_total"] == nblocks
        # a quarter of the blocks, and at most one straddling block per CPU at each end
        assert src["blocks_decoded"] <= nblocks / 4 + 2 * len(index) + 1, src
        assert src["records"] < total / 2


def test_a_range_that_meets_no_block_gives_empty_tables_with_the_schemas():
    path = sample("lost-events.dat")
    whole = ingest.read(path)
    names = sorted(whole.tables)
    assert whole.meta.last_ts_ns is not None and whole.meta.first_ts_ns is not None
    for r in ((whole.meta.last_ts_ns + 1, None), (INT64_MIN, whole.meta.first_ts_ns)):
        part = ingest.read_with(path, ingest.ReadOptions(names, time_range=r))
        assert sorted(part.tables) == names
        for name in names:
            assert part.tables[name].num_rows == 0
            assert part.tables[name].schema == whole.tables[name].schema, name
        assert part.lost.num_rows == 0 and part.lost.schema == whole.lost.schema
        assert part.meta.event_counts == {} and part.meta.lost_events == {}
        assert part.meta.source["blocks_decoded"] <= 2 * whole.meta.cpus


def test_an_empty_or_reversed_range_is_refused():
    path = sample("lost-events.dat")
    for r in ((5, 5), (6, 5)):
        with pytest.raises(OptionError, match="t0 must be before t1"):
            schedwake.load(path, time_range=r)
        with pytest.raises(ValueError, match="must be before t1"):
            _tdread.read(str(path), time_range=r)
    for bad in ((1.5, None), (1,), (None, 5), "0-5", (True, 5)):
        with pytest.raises(OptionError, match="time_range"):
            ingest.ReadOptions(time_range=bad)  # type: ignore[arg-type]


def test_batches_are_refused_a_time_range():
    """iter_batches streams the whole file: a range given to it is refused, not lost."""
    with pytest.raises(OptionError, match="batches are of the whole file"):
        next(ingest.iter_batches(sample("lost-events.dat"), ingest.ReadOptions(time_range=(0, 1))))


def test_load_takes_a_time_range():
    path = sample("lost-events.dat")
    cut = ingest.cut_times(path, 2)[0]
    part = schedwake.load(path, time_range=(cut, None))
    assert part.meta.first_ts_ns is not None and part.meta.first_ts_ns >= cut


def test_text_perfetto_and_other_readers_are_refused_a_range():
    with pytest.raises(OptionError, match="not in time order across CPUs"):
        ingest.read_with(
            sample("nonutf8-comm.ftrace.txt.gz"), ingest.ReadOptions(time_range=(0, None))
        )
    with pytest.raises(OptionError, match="perfetto file is not read by time range"):
        ingest.read_with(
            sample("perfetto/idle-sleep.pftrace"), ingest.ReadOptions(time_range=(0, None))
        )
    for path, reader in (("lost-events.dat", "libtracecmd"), (PERF[0], "perf-script")):
        with pytest.raises(OptionError, match="only the schedwake reader"):
            ingest.read_with(sample(path), ingest.ReadOptions(reader=reader, time_range=(0, None)))
    with pytest.raises(OptionError, match="not in time order across CPUs"):
        ingest.cut_times(sample("nonutf8-comm.ftrace.txt.gz"), 2)


#: Real perf.data recordings: zstd-compressed records with LOST records, plain records
#: of sched events with callchains, pipe mode, and a ``perf record --threads`` directory
PERF = [
    "perf-lost-events.perf.data",
    "perf/perf-sched-g.perf.data",
    "perf/perf-pipe.perf.data",
    "perf/perf-threads.perf.data",
]


def test_perf_data_parts_make_the_whole():
    rnd = random.Random(68)
    for name in PERF:
        path = sample(name)
        whole = ingest.read(path)
        first, last = whole.meta.first_ts_ns, whole.meta.last_ts_ns
        assert first is not None and last is not None
        for cuts in (ingest.cut_times(path, 4), sorted(rnd.sample(range(first, last), 3))):
            assert_parts_make_whole(path, whole, cuts, perf=True)
            for part in parts_of(path, cuts):  # names, forks, exits: the whole file's
                assert part.sideband.keys() == whole.sideband.keys()
                for k, table in whole.sideband.items():
                    assert part.sideband[k].equals(table), (name, k)


def test_a_perf_data_range_decodes_only_the_rounds_that_meet_it():
    path = sample("perf/perf-sched-g.perf.data")  # not compressed: rounds are skipped
    rounds = perfdata.round_starts(path)
    last = ingest.read(path).meta.last_ts_ns
    assert last is not None
    part = ingest.read_with(path, ingest.ReadOptions(time_range=(last, None)))
    src = part.meta.source
    assert src["blocks_total"] == len(rounds) >= 3
    assert 1 <= src["blocks_decoded"] < len(rounds)
    assert src["records"] == 1


def test_parquet_parts_make_the_whole(tmp_path):
    src = sample("lost-events.dat")
    convert(src, tmp_path / "pq")
    whole = parquet.read_tables(tmp_path / "pq")
    assert "lost_events" in whole and "sched_switch" in whole
    rnd = random.Random(7)
    cuts = ingest.cut_times(tmp_path / "pq", 3)
    ts = whole["sched_switch"].column("ts").to_pylist()
    for cut_list in (cuts, sorted(rnd.sample(ts, 3))):
        bounds: list[int | None] = [INT64_MIN, *cut_list, None]
        parts = [
            parquet.read_tables(tmp_path / "pq", (a, b))
            for a, b in zip(bounds, bounds[1:])
            if a is not None
        ]
        for name, table in whole.items():
            got = pa.concat_tables([plain_table(p[name]) for p in parts])
            assert got.equals(plain_table(table)), name


def test_parquet_reads_only_the_row_groups_of_the_range(tmp_path, monkeypatch):
    """A table written in row groups of 1000 rows: a range inside one group reads it."""
    import pyarrow.parquet as pq

    table = ingest.read(sample("lost-events.dat")).tables["sched_switch"]
    path = tmp_path / "sched_switch.parquet"
    pq.write_table(table, path, row_group_size=1000)
    ts = table.column("ts").to_pylist()
    reads: list[list[int]] = []
    real = pq.ParquetFile.read_row_groups

    def counted(self, groups, *args, **kwargs):
        reads.append(list(groups))
        return real(self, groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", counted)
    part = parquet.read_table(path, (ts[2100], ts[2200]))
    assert reads == [[2]]
    assert part.column("ts").to_pylist() == [t for t in ts if ts[2100] <= t < ts[2200]]


def page_offsets(data: bytes, first_ts: list[int], page: int = 4096) -> list[int]:
    """File offsets of the pages whose header times are ``first_ts`` (a v6 file with
    nanosecond times: a page's header is its raw time)."""
    at = {t: None for t in first_ts}
    found = [
        off
        for off in range(0, len(data) - 8, page)
        if int.from_bytes(data[off : off + 8], "little") in at
    ]
    assert len(found) >= len(first_ts)
    return found


@pytest.mark.parametrize(
    ("moved", "refusal"),
    [
        # a page that says it starts far later than the next one (its records with it)
        ("later", "before the previous page's last event"),
        # a page that says it starts amid the previous page's records
        ("earlier", "before the previous page's last event"),
    ],
)
def test_pages_out_of_time_order_are_refused_by_the_part_that_decodes_them(
    converted, tmp_path, moved, refusal
):
    """Damaged page times, which a whole read refuses, are refused by a part that
    decodes the page too. (A part that does not decode it does not see it: the index
    search trusts the page times it probes, docs/api.md.)"""
    v6 = converted["6"]
    data = bytearray(v6.read_bytes())
    index = tracedat.block_index(v6)
    cpu0 = index[min(index)]
    mid = len(cpu0) // 2
    off = page_offsets(bytes(data), [cpu0[mid]])[0]
    t = cpu0[mid] + 10**12 if moved == "later" else (cpu0[mid - 1] + cpu0[mid]) // 2
    data[off : off + 8] = t.to_bytes(8, "little")
    bad = tmp_path / "bad.dat"
    bad.write_bytes(bytes(data))
    with pytest.raises(TraceError):  # the whole read refuses it too
        ingest.read(bad)
    r = (cpu0[mid - 2], None if moved == "later" else cpu0[mid + 2])
    with pytest.raises(TraceError, match=refusal):
        ingest.read_with(bad, ingest.ReadOptions(time_range=r))
