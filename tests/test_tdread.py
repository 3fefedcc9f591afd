"""schedwake's own trace.dat reader (_tdread) beyond the samples as they are.

The samples are all v7 zstd files; here trace-cmd itself rewrites them as v6,
as uncompressed v7 and cut by `trace-cmd split`, and the reader must give exactly
what libtracecmd gives (the reference reader, in its child process) on each.
The result must not depend on the number of decoding threads, and the streamed
batches must add up to the whole read, in time order.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import schedwake
from schedwake.ingest import _tdread, tracedat

from .conftest import computed_once, run_dir, sample

#: Small samples that cover lost events, a missing CPU, an instance buffer and 16 CPUs
VARIANT_SOURCES = [
    "lost-events.dat",
    "missing-cpu.dat",
    "instance-buffer.dat",
    "guest16-2llc-tcrecord-dbench.dat",
    "idle-sleep.dat",
]

#: libtracecmd invents a "blktrace" format that no file holds (its blk hack)
INVENTED = {"blktrace"}


def trace_cmd(*args):
    subprocess.run(["trace-cmd", *args], check=True, capture_output=True, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def variants():
    """{(source, variant): path} written by trace-cmd convert / split, once per test run,
    into the run's directory that every xdist worker reads."""
    return computed_once(
        "tests/test_tdread.py variants: trace-cmd convert and split",
        lambda: write_variants(Path(tempfile.mkdtemp(prefix="variants-", dir=run_dir()))),
    )


def write_variants(out):
    paths = {}
    for name in VARIANT_SOURCES:
        src = sample(name)
        stem = src.stem
        for variant, args in (
            ("v6", ["--file-version", "6", "--compression", "none"]),
            ("v7-none", ["--file-version", "7", "--compression", "none"]),
        ):
            dst = out / f"{stem}-{variant}.dat"
            trace_cmd("convert", "-i", str(src), "-o", str(dst), *args)
            paths[name, variant] = dst
    trace_cmd(
        "split",
        "-i",
        str(sample("dbench-xfs-1client.dat")),
        "-o",
        str(out / "split.dat"),
        "-e",
        "20000",
    )
    paths["dbench-xfs-1client.dat", "split"] = out / "split.dat.1"
    return paths


def plain(column) -> pa.Array:
    """The values of a column (chunks joined, dictionaries decoded: two readers may
    build different dictionaries of the same strings)."""
    if isinstance(column, pa.ChunkedArray):
        if not column.num_chunks:
            return plain(column.combine_chunks())
        return pa.concat_arrays([plain(c) for c in column.chunks])
    return column.dictionary_decode() if pa.types.is_dictionary(column.type) else column


def same_values(a, b, what: str) -> None:
    """``a.to_pylist() == b.to_pylist()``, whole columns at once; else the first row
    that differs."""
    a, b = plain(a), plain(b)
    assert len(a) == len(b), f"{what}: {len(a)} rows != {len(b)}"
    if not a.equals(b):
        same = pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(a.is_null(), b.is_null()))
        i = pc.index(same, False).as_py()
        raise AssertionError(f"{what}: row {i}: {a[i].as_py()!r} != {b[i].as_py()!r}")


def same_traces(a: schedwake.Trace, b: schedwake.Trace):
    """Every table equal, and the metadata a reader decides."""
    assert set(a.events) - INVENTED == set(b.events) - INVENTED
    for name in a.events:
        if name in INVENTED:
            continue
        ta, tb = a.table(name), b.table(name)
        assert ta.schema == tb.schema, name
        for i in range(ta.num_columns):
            same_values(ta.column(i), tb.column(i), f"{name}.{ta.column_names[i]}")
    assert a.lost.equals(b.lost)
    for key in (
        "cpus",
        "clock",
        "first_ts_ns",
        "last_ts_ns",
        "kernel",
        "lost_events",
        "lost_unknown",
    ):
        assert getattr(a.meta, key) == getattr(b.meta, key), key
    counts = {k: v for k, v in a.meta.event_counts.items() if k not in INVENTED}
    assert counts == {k: v for k, v in b.meta.event_counts.items() if k not in INVENTED}
    assert a.meta.source["buffer"] == b.meta.source["buffer"]


@pytest.mark.parametrize("variant", ["v6", "v7-none"])
@pytest.mark.parametrize("name", VARIANT_SOURCES)
@pytest.mark.slow
def test_rewritten_samples_equal_libtracecmd(variants, name, variant):
    path = variants[name, variant]
    ours = schedwake.load(path)
    assert ours.meta.source["file_version"] == (6 if variant == "v6" else 7)
    assert ours.meta.source["compression"] is None
    same_traces(ours, schedwake.load(path, reader="libtracecmd"))


@pytest.mark.slow
def test_a_trace_cmd_split_file_equals_libtracecmd(variants):
    path = variants["dbench-xfs-1client.dat", "split"]
    ours = schedwake.load(path)
    assert sum(ours.meta.event_counts.values()) == 20000
    same_traces(ours, schedwake.load(path, reader="libtracecmd"))


@pytest.mark.parametrize(
    "name", ["dbench-xfs-4clients.dat", "guest16-2llc-tcrecord-dbench.dat", "lost-events.dat"]
)
@pytest.mark.slow
def test_the_result_does_not_depend_on_jobs(name):
    path = sample(name)
    one = schedwake.load(path, jobs=1)
    for jobs in (2, 3, 16):
        other = schedwake.load(path, jobs=jobs)
        for event in one.events:
            assert one.table(event).equals(other.table(event)), (event, jobs)
        assert one.lost.equals(other.lost)
        assert one.meta == other.meta


#: lost-events.dat in 17 batches: lost events in each but the last, which has none (2000
#: rows, not 1000: each batch of the stream lists all 2323 event formats of the file,
#: about 40 ms a batch whatever its rows)
@pytest.mark.parametrize(
    "name,batch_rows",
    [("lost-events.dat", 2000), ("guest16-2llc-tcrecord-dbench.dat", 5000), ("missing-cpu.dat", 7)],
)
@pytest.mark.slow
def test_streamed_batches_add_up_to_the_whole_read(name, batch_rows):
    path = sample(name)
    whole = schedwake.load(path)
    parts: dict[str, list[pa.Table]] = {}
    lost = []
    batches = 0
    for raw in _tdread.stream(str(path), batch_rows=batch_rows):
        batches += 1
        batch = tracedat.assemble(path, raw, None, None)
        for event, table in batch.tables.items():
            parts.setdefault(event, []).append(table)
        lost.append(batch.lost)
    assert batches > 1
    assert batch.meta.event_counts == whole.meta.event_counts
    assert pa.concat_tables(lost).equals(whole.lost)
    for event in whole.events:
        streamed = parts.get(event, [])
        table = whole.table(event)
        assert sum(t.num_rows for t in streamed) == table.num_rows, event
        ts = pa.chunked_array([t.column("ts") for t in streamed], pa.int64()).to_numpy()
        assert (np.diff(ts) >= 0).all(), f"{event}: batches out of time order"
        for i in range(table.num_columns):
            got = [plain(t.column(i)) for t in streamed]
            got = pa.concat_arrays(got) if got else table.column(i).slice(0, 0)
            same_values(got, table.column(i), f"{event}.{table.column_names[i]}")


def test_a_progress_callback_error_stops_the_read():
    def boom(done):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        _tdread.read(str(sample("dbench-xfs-4clients.dat")), None, boom, 1)


def test_a_zlib_file_written_by_trace_cmd_equals_its_zstd_original():
    """trace-cmd also writes zlib; Debian's build has no zlib, so the sample was made by
    trace-cmd 3.1.6 built from source (scripts/record-samples/make-zlib-sample.sh) from
    lost-events.dat, which the other tests pin to trace-cmd report and libtracecmd."""
    zlib = schedwake.load(sample("zlib/lost-events-zlib.dat"))
    assert zlib.meta.source["compression"] == "zlib"
    assert sum(zlib.meta.event_counts.values()) == 31881
    same_traces(zlib, schedwake.load(sample("lost-events.dat")))


@pytest.mark.slow
def test_streaming_reports_its_progress():
    """convert's progress bar over a trace.dat: the fraction decoded after each batch."""
    seen = []  # (7 batches of 50000 rows: more than 3, fewer of the per-batch cost above)
    batches = list(
        tracedat.iter_batches(sample("dbench-xfs-1client.dat"), None, seen.append, batch_rows=50000)
    )
    assert len(seen) == len(batches) > 3
    assert seen == sorted(seen) and 0 < seen[0] < 1 and seen[-1] == 1.0
