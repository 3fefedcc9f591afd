"""The Parquet of ``schedwake convert`` read back by time range.

``convert`` writes one ``<event>.parquet`` per event table (and ``lost_events.parquet``)
in time order, in row groups whose ``ts`` statistics (min, max) pyarrow keeps in the
file footer. A time range reads only the row groups whose ``ts`` span meets it and
filters the rows of the ones that straddle its ends, so a part of a converted trace
costs its own row groups, not the file: the Parquet source of the time partitions of
docs/design-partitioned-analysis.md.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import TraceError

#: A time range: ``(t0, t1)`` nanoseconds, ``t1`` None for the end.
TimeRange = tuple[int, int | None]


def _ts_span(meta: pq.FileMetaData, group: int, path: Path) -> tuple[int, int] | None:
    """(min, max) of the ``ts`` column of one row group, None when it has no rows; a
    TraceError when the statistics are missing (not a file ``convert`` wrote)."""
    rg = meta.row_group(group)
    if rg.num_rows == 0:
        return None
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if "ts" not in names:
        raise TraceError(path, "has no ts column (not a table schedwake convert wrote)")
    stats = rg.column(names.index("ts")).statistics
    if stats is None or not stats.has_min_max:
        raise TraceError(path, f"row group {group} has no ts statistics to read it by time")
    return int(stats.min), int(stats.max)


def read_table(path: Path, time_range: TimeRange | None = None) -> pa.Table:
    """One table of a ``convert`` directory, whole or only its rows with
    ``t0 <= ts < t1``, reading only the row groups whose ``ts`` span meets the range."""
    f = pq.ParquetFile(path)
    if time_range is None:
        return f.read()
    t0, t1 = time_range
    groups = []
    for g in range(f.metadata.num_row_groups):
        span = _ts_span(f.metadata, g, path)
        if span is not None and span[1] >= t0 and (t1 is None or span[0] < t1):
            groups.append(g)
    table = f.read_row_groups(groups) if groups else f.schema_arrow.empty_table()
    keep = pc.greater_equal(table.column("ts"), t0)
    if t1 is not None:
        keep = pc.and_(keep, pc.less(table.column("ts"), t1))
    return table.filter(keep)


def read_tables(outdir: str | Path, time_range: TimeRange | None = None) -> dict[str, pa.Table]:
    """Every table of a ``convert`` directory by event name (``lost_events`` too), each
    :func:`read_table` of ``time_range``."""
    d = Path(outdir)
    if not (d / "metadata.json").exists():
        raise TraceError(d, "not a directory schedwake convert wrote (no metadata.json)")
    return {p.stem: read_table(p, time_range) for p in sorted(d.glob("*.parquet"))}


def row_group_starts(outdir: str | Path) -> list[tuple[int, int]]:
    """(first ts, rows) of every row group of every table of a ``convert`` directory:
    the index :func:`schedwake.ingest.cut_times` cuts by, from the footers only."""
    starts = []
    for p in sorted(Path(outdir).glob("*.parquet")):
        meta = pq.ParquetFile(p).metadata
        for g in range(meta.num_row_groups):
            span = _ts_span(meta, g, p)
            if span is not None:
                starts.append((span[0], meta.row_group(g).num_rows))
    return starts


__all__ = ["read_table", "read_tables", "row_group_starts", "TimeRange"]
