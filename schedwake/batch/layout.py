"""The batch dataset's files and columns: what :mod:`.writer` writes and :mod:`.reader`
checks when it opens a dataset.
"""

from __future__ import annotations

import pyarrow as pa

TRACES_FILE, FINDINGS_FILE, WINDOWS_FILE, MANIFEST_FILE = (
    "traces.parquet",
    "findings.parquet",
    "windows.parquet",
    "batch.json",
)


#: Columns of findings.parquet and windows.parquet.
FINDINGS_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("rank", pa.int32()),
        ("detector", pa.string()),
        ("severity", pa.string()),
        ("title", pa.string()),
        ("metrics", pa.string()),
        ("top", pa.string()),
        ("evidence", pa.list_(pa.string())),
        ("evidence_events", pa.string()),  # JSON: Finding.evidence_events
        ("caveats", pa.list_(pa.string())),
    ]
)
WINDOWS_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("window_s", pa.float64()),
        ("window", pa.int64()),
        ("start_s", pa.float64()),
        ("end_s", pa.float64()),
        ("metric", pa.string()),
        ("unit", pa.string()),
        ("direction", pa.string()),
        ("value", pa.float64()),
    ]
)
#: The traces.parquet columns that are not metrics, in order, with their types (the
#: labels go after ``error``; the metrics are int64 for counts, float64 otherwise, as
#: their values come).
TRACE_TYPES = {
    "path": pa.string(),
    "status": pa.string(),
    "error": pa.string(),
    "format": pa.string(),
    "cpus": pa.int32(),
    "kernel": pa.string(),
    "clock": pa.string(),
    "duration_s": pa.float64(),
    "first_ts_ns": pa.int64(),
    "last_ts_ns": pa.int64(),
    "events": pa.int64(),
    "lost_events": pa.int64(),
    "lost_unknown_cpus": pa.list_(pa.int32()),
    # what the trace shows (docs/semantics.md, 'Incomplete traces'): null when unchecked
    "complete": pa.bool_(),
    "switch_chain_breaks": pa.int64(),
    "unknown_s": pa.float64(),
    "topology": pa.string(),
    "topology_source": pa.string(),
    "topology_from": pa.string(),
    "topology_llc": pa.list_(pa.list_(pa.int32())),
    "caveats": pa.list_(pa.string()),
    "warnings": pa.list_(pa.string()),
    "findings": pa.int32(),
    "detectors": pa.list_(pa.string()),
    # (the metrics go here)
    "event_counts": pa.string(),
    "lost_events_by_cpu": pa.string(),
    "completeness": pa.string(),  # JSON: schedwake info's completeness (summary.completeness)
    "timestamps": pa.string(),
    "topology_json": pa.string(),
    "thresholds": pa.string(),
    "bench": pa.string(),  # JSON: each bench_* column's unit, direction and file
    "windows_s": pa.list_(pa.float64()),
    "abspath": pa.string(),
    "size": pa.int64(),
    "mtime_ns": pa.int64(),
    "options_key": pa.string(),
    "schedwake_version": pa.string(),
    "analysed_at": pa.timestamp("us", tz="UTC"),
    "seconds": pa.float64(),
}
#: Where the metrics go among the columns of TRACE_TYPES (in its order).
TRACE_TYPES_BACK = list(TRACE_TYPES).index("event_counts")
