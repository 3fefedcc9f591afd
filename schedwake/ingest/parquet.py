"""The Parquet of ``schedwake convert`` read back by time range.

``convert`` writes one ``<event>.parquet`` per event table (and ``lost_events.parquet``)
in time order, in row groups whose ``ts`` statistics (min, max) pyarrow keeps in the
file footer. A time range reads only the row groups whose ``ts`` span meets it and
filters the rows of the ones that straddle its ends, so a part of a converted trace
costs its own row groups, not the file: the Parquet source of the time partitions of
docs/design-partitioned-analysis.md.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import TraceError
from .meta import TraceMeta
from .raw import RawTrace

#: Page CRCs (pyarrow 15 and later): ``convert`` writes every data page with its
#: checksum (what it passes its writers), and the reader checks each page against it
#: where the file has them: a damaged page is a TraceError, not wrong rows.
_CRC = int(pa.__version__.split(".")[0]) >= 15
CHECKSUMS = {"write_page_checksum": True} if _CRC else {}
_VERIFIED = {"page_checksum_verification": True} if _CRC else {}

#: The subdirectory of a conversion that holds a perf.data's side-band tables
#: (``RawTrace.sideband``: ``comms``, ``forks``, ``exits``, ``mmaps``), one Parquet file
#: each: apart from the event tables, which are read by time range (theirs are the
#: whole file's in every part, and hold rows without a time).
SIDEBAND_DIR = "sideband"

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


def read_table(
    path: Path, time_range: TimeRange | None = None, columns: list[str] | None = None
) -> pa.Table:
    """One table of a ``convert`` directory, whole or only its rows with
    ``t0 <= ts < t1``, reading only the row groups whose ``ts`` span meets the range
    (``columns``: only these, None: all). A file that is missing, truncated or damaged
    is a TraceError naming it."""
    return _blocks_read(path, time_range, columns)[0]


def _blocks_read(
    path: Path, time_range: TimeRange | None, columns: list[str] | None = None
) -> tuple[pa.Table, int, int]:
    """:func:`read_table`'s table, with the row groups it read and the file's."""
    _check_listed(path)
    try:
        f = pq.ParquetFile(path, **_VERIFIED)
        total = f.metadata.num_row_groups
        if time_range is None:
            return f.read(columns=columns), total, total
        t0, t1 = time_range
        groups = []
        for g in range(total):
            span = _ts_span(f.metadata, g, path)
            if span is not None and span[1] >= t0 and (t1 is None or span[0] < t1):
                groups.append(g)
        if groups:
            table = f.read_row_groups(groups, columns=columns)
        else:
            table = f.schema_arrow.empty_table()
            table = table if columns is None else table.select(columns)
    except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
        raise TraceError(path, f"not a readable Parquet table ({_first_line(exc)})") from None
    keep = pc.greater_equal(table.column("ts"), t0)
    if t1 is not None:
        keep = pc.and_(keep, pc.less(table.column("ts"), t1))
    return table.filter(keep), len(groups), total


def _check_listed(path: Path) -> None:
    """A TraceError when a file metadata.json lists is not there."""
    if not path.is_file():
        raise TraceError(path, "no such file (metadata.json lists it): convert the trace again")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def read_tables(
    outdir: str | Path, time_range: TimeRange | None = None, names: Iterable[str] | None = None
) -> dict[str, pa.Table]:
    """The tables of a ``convert`` directory by event name (``lost_events`` too, where
    the conversion wrote it), each :func:`read_table` of ``time_range``; ``names``:
    only these (None: every table its metadata.json lists)."""
    d = Path(outdir)
    facts = metadata(d)
    listed = _listed(d, facts)
    wanted = listed if names is None else [n for n in names if n in listed]
    return {n: read_table(d / f"{n}.parquet", time_range) for n in wanted}


def metadata(outdir: Path) -> dict[str, Any]:
    """The metadata.json of a ``convert`` directory as a dict; a TraceError naming it
    when it is missing or not a JSON object."""
    path = outdir / "metadata.json"
    if not path.is_file():
        raise TraceError(outdir, "not a directory schedwake convert wrote (no metadata.json)")
    try:
        facts = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise TraceError(path, f"not JSON ({_first_line(exc)}): convert the trace again") from None
    if not isinstance(facts, dict) or not isinstance(facts.get("tables"), dict):
        raise TraceError(path, "not the metadata.json of schedwake convert (no tables)")
    return facts


def _listed(outdir: Path, facts: Mapping[str, Any]) -> list[str]:
    """The event tables metadata.json lists, then ``lost_events`` if it was written
    (a directory from before metadata.json said so: if its file is there)."""
    names = [str(n) for n in facts["tables"]]
    lost = facts.get("lost_events_table")
    if lost or (lost is None and (outdir / "lost_events.parquet").exists()):
        names.append("lost_events")
    return names


def read(
    outdir: Path, events: list[str] | None = None, time_range: TimeRange | None = None
) -> RawTrace:
    """The trace a ``convert`` directory holds, as the file it was converted from reads
    (:class:`RawTrace`: its tables, metadata, lost-event rows and side-band tables), its
    ``path`` the directory; ``events``: only these tables (None: all).

    ``time_range`` ``(t0, t1)`` (``t1`` None: to the end): only the rows with
    ``t0 <= ts < t1``, reading only the row groups that can hold them (of the tables
    not asked for, only the ``ts`` column, for the counts), with the metadata of the
    range as trace.dat's and perf.data's readers give it: the range's first and last
    times, event counts and per-CPU losses (its lost-event rows), the range and the
    row groups read in ``source``; the side-band tables are the whole file's. A
    directory from a convert that did not keep the whole metadata is a TraceError."""
    from ..schema import LOST_EVENTS_SCHEMA

    facts = metadata(outdir)
    if "meta" not in facts:
        raise TraceError(
            outdir,
            "was converted by an older schedwake (its metadata.json lacks the trace's "
            "metadata): convert the trace again",
        )
    try:
        meta = TraceMeta.from_dict(facts["meta"])
        sideband_names = [str(n) for n in facts.get("sideband") or ()]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TraceError(
            outdir / "metadata.json", f"holds no trace metadata ({_first_line(exc)})"
        ) from None
    listed = _listed(outdir, facts)
    names = [n for n in listed if n != "lost_events"]
    if events is None:
        wanted = names
    else:
        wanted = [n for n in dict.fromkeys(events) if n in names]
        absent = [n for n in events if n not in names and meta.event_counts.get(n)]
        if absent:
            raise TraceError(
                outdir,
                f"was converted without the {', '.join(absent)} events: convert the trace "
                "again with them",
            )
    tables: dict[str, pa.Table] = {}
    counted: dict[str, pa.Table] = {}
    read_groups = total_groups = 0
    for name in names:
        if time_range is None and name not in wanted:
            continue
        columns = None if name in wanted else ["ts"]
        table, read_n, total_n = _blocks_read(outdir / f"{name}.parquet", time_range, columns)
        read_groups += read_n
        total_groups += total_n
        counted[name] = table
        if name in wanted:
            tables[name] = table
    if "lost_events" in listed:
        lost, read_n, total_n = _blocks_read(outdir / "lost_events.parquet", time_range)
        read_groups += read_n
        total_groups += total_n
    else:
        lost = LOST_EVENTS_SCHEMA.empty_table()
    sideband = {n: read_table(outdir / SIDEBAND_DIR / f"{n}.parquet") for n in sideband_names}
    meta = dataclasses.replace(meta, path=str(outdir))
    if time_range is not None:
        if events is None:  # (as a reader's: an event without rows has no table)
            tables = {n: t for n, t in tables.items() if t.num_rows}
        meta = _range_meta(meta, counted, lost, time_range, read_groups, total_groups)
    if "callchains" in meta.source:  # (perf.data's reader says it of the tables it made)
        from .perfdata import has_callchains

        meta = dataclasses.replace(
            meta, source={**meta.source, "callchains": has_callchains(tables)}
        )
    return RawTrace(tables=tables, meta=meta, lost=lost, sideband=sideband)


def _range_meta(
    meta: TraceMeta,
    tables: Mapping[str, pa.Table],
    lost: pa.Table,
    time_range: TimeRange,
    read_groups: int,
    total_groups: int,
) -> TraceMeta:
    """The whole trace's metadata made that of the rows of ``time_range`` (``tables``
    every event's in the range, ``lost`` the range's lost-event rows)."""
    counts = {n: t.num_rows for n, t in sorted(tables.items()) if t.num_rows}
    ends = [pc.min_max(t.column("ts")).as_py() for t in tables.values() if t.num_rows]
    lost_events: dict[int, int] = {}
    unknown: set[int] = set()
    for cpu, n in zip(
        lost.column("cpu").to_pylist(), lost.column("count").to_pylist(), strict=True
    ):
        # as the readers count them: a loss of unknown size (-1) is one, and its CPU's
        lost_events[int(cpu)] = lost_events.get(int(cpu), 0) + (int(n) if n > 0 else 1)
        if n < 0:
            unknown.add(int(cpu))
    return dataclasses.replace(
        meta,
        first_ts_ns=min(e["min"] for e in ends) if ends else None,
        last_ts_ns=max(e["max"] for e in ends) if ends else None,
        event_counts=counts,
        lost_events=dict(sorted(lost_events.items())),
        lost_unknown=tuple(sorted(unknown)),
        source={
            **meta.source,
            "records": sum(counts.values()),
            "time_range": list(time_range),
            "blocks_decoded": read_groups,
            "blocks_total": total_groups,
        },
    )


def row_group_starts(outdir: str | Path) -> list[tuple[int, int]]:
    """(first ts, rows) of every row group of every table of a ``convert`` directory
    (those its metadata.json lists): the index :func:`schedwake.ingest.cut_times` cuts
    by, from the footers only."""
    d = Path(outdir)
    starts = []
    for name in _listed(d, metadata(d)):
        p = d / f"{name}.parquet"
        _check_listed(p)
        try:
            meta = pq.ParquetFile(p).metadata
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise TraceError(p, f"not a readable Parquet table ({_first_line(exc)})") from None
        for g in range(meta.num_row_groups):
            span = _ts_span(meta, g, p)
            if span is not None:
                starts.append((span[0], meta.row_group(g).num_rows))
    return starts


__all__ = ["read", "read_table", "read_tables", "metadata", "row_group_starts", "TimeRange"]
