"""``schedwake convert``: the event tables as Parquet files plus metadata.json."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .. import ingest
from ..errors import TraceError
from ..summary import meta_summary


def convert(
    path,
    outdir,
    events=None,
    input_format: str | None = None,
    progress: ingest.Progress | None = None,
    reader: str | None = None,
    jobs: int | None = None,
    kallsyms=None,
) -> list[Path]:
    """Write ``<event>.parquet`` per event table of ``path`` and ``metadata.json`` into
    ``outdir``; return the Parquet paths.

    The files are plain Parquet (dictionary-encoded strings stay dictionaries), so
    ``pyarrow.dataset``, DuckDB and polars read them directly. Text traces and
    trace.dat files (with schedwake's own reader) are read and written in batches, so
    a file larger than memory converts with bounded memory; text rows keep the file's
    order (sorted within each batch), trace.dat rows are in time order throughout.
    ``reader``, ``jobs`` and ``kallsyms`` are those of :func:`schedwake.load`.
    """
    reader = ingest.check_reader_options(reader, jobs)
    p = ingest.check_path(path)
    fmt = input_format or ingest.sniff(p)
    ingest.check_reader_format(p, fmt, reader)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    wanted = None if events is None else [e.split(":")[-1] for e in events]
    if fmt in ingest.STREAMED_FORMATS and reader == ingest.DEFAULT_READER:
        batches = ingest.iter_batches(p, wanted, fmt, progress, kallsyms=kallsyms)
        return _write_batches(p, batches, outdir)
    raw = ingest.read(p, wanted, fmt, progress, reader, jobs, kallsyms)
    return _write_batches(p, [raw], outdir)


def _write_batches(path: Path, batches, outdir: Path) -> list[Path]:
    writers: dict[str, pq.ParquetWriter] = {}
    rows: dict[str, int] = {}
    meta = None
    try:
        for raw in batches:
            meta = raw.meta
            tables = dict(raw.tables)
            if raw.lost.num_rows:
                tables["lost_events"] = raw.lost
            for name, table in tables.items():
                writer = writers.get(name)
                if writer is None:
                    writer = writers[name] = pq.ParquetWriter(
                        outdir / f"{name}.parquet", table.schema, compression="zstd"
                    )
                elif table.schema != writer.schema:
                    try:
                        table = table.cast(writer.schema)
                    except (pa.ArrowInvalid, ValueError) as exc:
                        raise TraceError(
                            path,
                            f"{name} events change their fields in the middle of the file ({exc})",
                        ) from None
                writer.write_table(table)
                rows[name] = rows.get(name, 0) + table.num_rows
    finally:
        for writer in writers.values():
            writer.close()
    summary = meta_summary(meta)
    summary["tables"] = {n: r for n, r in sorted(rows.items()) if n != "lost_events"}
    summary["source"] = meta["source"]
    (outdir / "metadata.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return [outdir / f"{n}.parquet" for n in sorted(rows) if n != "lost_events"]
