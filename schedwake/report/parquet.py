"""``schedwake convert``: the event tables as Parquet files plus metadata.json."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from .info import summary


def write_parquet(trace, outdir: Path) -> list[Path]:
    """Write ``<event>.parquet`` for every table and ``metadata.json``; return the paths.

    The files are plain Parquet (dictionary-encoded strings stay dictionaries), so
    ``pyarrow.dataset``, DuckDB and polars read them directly.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in trace.events:
        path = outdir / f"{name}.parquet"
        pq.write_table(trace.table(name), path, compression="zstd")
        written.append(path)
    if trace.lost.num_rows:
        pq.write_table(trace.lost, outdir / "lost_events.parquet")
    meta = summary(trace)
    meta["tables"] = {n: trace.table(n).num_rows for n in trace.events}
    meta["source"] = trace.meta["source"]
    (outdir / "metadata.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return written
