"""``schedwake convert``: a trace's event tables as Parquet files plus metadata.json.

It reads a trace (:mod:`schedwake.ingest`) and writes its tables as they are, batch by
batch where the format allows: no analysis, nothing rendered (``--to perfetto``, a
trace with its findings, is :mod:`schedwake.report.perfetto`'s).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq

from . import ingest
from .errors import OptionError, TraceError
from .ingest.parquet import CHECKSUMS, SIDEBAND_DIR
from .ingest.raw import RawTrace
from .jsonout import dumps
from .summary import meta_summary


def convert(
    path: str | Path,
    outdir: str | Path,
    events: Iterable[str] | None = None,
    input_format: str | None = None,
    progress: ingest.Progress | None = None,
    reader: str | None = None,
    jobs: int | None = None,
    kallsyms: str | Path | None = None,
    row_group_rows: int | None = None,
) -> list[Path]:
    """Write ``<event>.parquet`` per event table of ``path`` and ``metadata.json`` into
    ``outdir``; return the Parquet paths.

    The files are plain Parquet (dictionary-encoded strings stay dictionaries), so
    ``pyarrow.dataset``, DuckDB and polars read them directly. Text traces and
    trace.dat files (with schedwake's own reader) are read and written in batches, so
    a file larger than memory converts with bounded memory; text rows keep the file's
    order (sorted within each batch), trace.dat rows are in time order throughout.
    ``events``, ``input_format``, ``progress``, ``reader``, ``jobs`` and ``kallsyms``
    are those of :func:`schedwake.load`, checked as one
    :class:`schedwake.ingest.ReadOptions`.

    The directory is a trace itself (input format ``parquet``: :func:`schedwake.load`,
    ``schedwake analyze``): ``metadata.json`` keeps the whole metadata (``meta``), a
    perf.data's side-band tables go to ``sideband/``, and the topology file found beside
    the trace is copied in as ``topology.json``. Each table is written in row groups of
    at most ``row_group_rows`` rows (None: :data:`ROW_GROUP_ROWS`), in time order: the
    blocks a time-range read (``ReadOptions.time_range``, the time-partitioned
    analysis) reads and cuts by.

    Nothing half-written is left to look like a result: the files are written into a
    hidden directory inside ``outdir`` and moved into place (``metadata.json`` last) only
    when the whole trace was read; damage found on the way (a TraceError) removes them,
    and ``outdir`` too if this call made it.
    """
    # (``events``, whatever it is, is ReadOptions' to check and to make a list)
    names = cast("list[str] | None", events)
    rows = ROW_GROUP_ROWS if row_group_rows is None else row_group_rows
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        raise OptionError("row_group_rows", repr(row_group_rows), "must be None or an int >= 1")
    o = ingest.ReadOptions(names, input_format, progress, reader, jobs, kallsyms)
    p = ingest.check_path(path)
    fmt = o.input_format or ingest.sniff(p)
    assert o.reader is not None  # (ReadOptions makes None the default)
    ingest.check_reader_format(p, fmt, o.reader)
    o = dataclasses.replace(o, input_format=fmt)
    outdir = Path(outdir)
    if fmt in ingest.STREAMED_FORMATS and o.reader == ingest.DEFAULT_READER:
        return _write_batches(p, ingest.iter_batches(p, o), outdir, o.events, rows)
    return _write_batches(p, [ingest.read_with(p, o)], outdir, o.events, rows)


#: The most rows of a row group of a converted table: the blocks a time-range read
#: decodes whole at each end of its range, and the cuts of a time-partitioned analysis
#: (:func:`schedwake.ingest.cut_times`) fall between.
ROW_GROUP_ROWS = 1 << 16


def _write_batches(
    path: Path,
    batches: Iterable[RawTrace],
    outdir: Path,
    wanted: list[str] | None = None,
    row_group_rows: int = 1 << 16,
) -> list[Path]:
    """Write the batches' tables and metadata.json into ``outdir``, all or nothing;
    ``wanted``: the events asked for, each one the trace must know."""
    made = not outdir.exists()
    outdir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".schedwake-convert-", dir=outdir))
    try:
        names = _write_tables(path, batches, staging, wanted, row_group_rows)
        # the tables first, metadata.json last: who sees it sees whole tables
        for name in sorted(names - {"metadata.json"}) + ["metadata.json"]:
            if name == SIDEBAND_DIR and (outdir / name).is_dir():  # an earlier conversion's
                shutil.rmtree(outdir / name)
            os.replace(staging / name, outdir / name)
    except BaseException:
        if made:
            shutil.rmtree(outdir, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [
        outdir / n for n in sorted(names) if n.endswith(".parquet") and n != "lost_events.parquet"
    ]


def _write_tables(
    path: Path,
    batches: Iterable[RawTrace],
    outdir: Path,
    wanted: list[str] | None = None,
    row_group_rows: int = 1 << 16,
) -> set[str]:
    """Write the batches' tables (one Parquet file per event, and the lost events) and
    metadata.json into ``outdir``; the names of the files written. An event of
    ``wanted`` the trace does not know (no format, no record) is an OptionError: a
    misspelt name would otherwise give an empty conversion that looks like a result."""
    writers: dict[str, pq.ParquetWriter] = {}
    rows: dict[str, int] = {}
    meta = None
    sideband: dict[str, pa.Table] = {}
    try:
        for raw in batches:
            meta = raw.meta
            sideband = raw.sideband  # (the whole file's, the same in every batch)
            tables = dict(raw.tables)
            if raw.lost.num_rows:
                tables["lost_events"] = raw.lost
            for name, table in tables.items():
                writer = writers.get(name)
                if writer is None:
                    writer = writers[name] = pq.ParquetWriter(
                        outdir / f"{name}.parquet", table.schema, compression="zstd", **CHECKSUMS
                    )
                elif table.schema != writer.schema:
                    try:
                        table = table.cast(writer.schema)
                    except (pa.ArrowInvalid, ValueError) as exc:
                        raise TraceError(
                            path,
                            f"{name} events change their fields in the middle of the file ({exc})",
                        ) from None
                writer.write_table(table, row_group_size=row_group_rows)
                rows[name] = rows.get(name, 0) + table.num_rows
    finally:
        for writer in writers.values():
            writer.close()
    assert meta is not None  # (a reader gives at least one batch)
    known = set(meta.systems) | set(meta.event_counts)
    unknown = [e for e in wanted or () if e not in known]
    if unknown:
        raise OptionError(
            "events", ",".join(unknown), f"{path} has no such event (see schedwake info)"
        )
    summary = meta_summary(meta)
    summary["tables"] = {n: r for n, r in sorted(rows.items()) if n != "lost_events"}
    summary["source"] = dict(meta.source)
    written = {f"{n}.parquet" for n in rows} | {"metadata.json"}
    if sideband:
        (outdir / SIDEBAND_DIR).mkdir()
        for name, table in sideband.items():
            path = outdir / SIDEBAND_DIR / f"{name}.parquet"
            pq.write_table(table, path, compression="zstd", **CHECKSUMS)
        written.add(SIDEBAND_DIR)
    # what reading the directory as a trace needs (schedwake.ingest.parquet.read): the
    # whole metadata and the side-band tables' names
    summary["sideband"] = list(sideband)
    summary["lost_events_table"] = "lost_events" in rows
    summary["meta"] = meta.to_dict()
    from .topology import DIRECTORY_TOPOLOGY, topology_beside  # (pandas: not with the module)

    beside = topology_beside(path)
    if beside is not None and beside.is_file():  # (the directory's own, read as the trace's)
        shutil.copyfile(beside, outdir / DIRECTORY_TOPOLOGY)
        written.add(DIRECTORY_TOPOLOGY)
    (outdir / "metadata.json").write_text(dumps(summary) + "\n")
    return written
