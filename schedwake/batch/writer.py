"""Writing a batch dataset: an earlier run's rows kept, this run's added, the four files
written beside the old ones and each renamed over its predecessor, so that a failed
write leaves the earlier dataset whole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..jsonout import dumps
from ..version import __version__
from .inputs import label_columns
from .layout import (
    FINDINGS_FILE,
    FINDINGS_SCHEMA,
    MANIFEST_FILE,
    TRACE_TYPES,
    TRACE_TYPES_BACK,
    TRACES_FILE,
    WINDOWS_FILE,
    WINDOWS_SCHEMA,
)
from .one_trace import TraceResult
from .reader import open_dataset, read_parquet


@dataclass
class _Previous:
    """An earlier run's dataset in ``out``: its tables and its ok rows by path."""

    traces: pa.Table | None = None
    findings: pa.Table | None = None
    windows: pa.Table | None = None
    labels: list[str] = field(default_factory=list)
    label_from: str | None = None
    done: dict[str, dict] = field(default_factory=dict)


def read_previous(out: Path) -> _Previous:
    """What an earlier run wrote in ``out`` (its traces, findings and windows tables,
    labels and ``--label-from``), to keep the rows this run does not redo; empty when
    ``out`` holds no dataset yet."""
    prev = _Previous()
    if not (out / TRACES_FILE).exists():
        return prev
    prev.traces, manifest = open_dataset(out)
    prev.findings = read_parquet(
        out / FINDINGS_FILE, lambda p: pq.read_table(p, schema=FINDINGS_SCHEMA)
    )
    prev.windows = read_parquet(
        out / WINDOWS_FILE, lambda p: pq.read_table(p, schema=WINDOWS_SCHEMA)
    )
    prev.labels = list(manifest.get("labels") or [])
    prev.label_from = manifest.get("label_from")
    cols = ["path", "status", "size", "mtime_ns", "options_key"]
    cols += [c for c in ("analysed_at", "bench") if c in prev.traces.column_names]
    for r in prev.traces.select(cols).to_pylist():
        prev.done[r["path"]] = r
    return prev


def _rows_table(rows: list[dict], labels: dict[str, list]) -> pa.Table:
    """traces.parquet from its rows: the fixed columns typed, the metrics as they come
    (int64 counts, float64 otherwise), labels after ``error``."""
    names: dict[str, None] = {}
    for r in rows:
        names.update(dict.fromkeys(r))
    front, back = list(TRACE_TYPES)[:TRACE_TYPES_BACK], list(TRACE_TYPES)[TRACE_TYPES_BACK:]
    metrics = [n for n in names if n not in TRACE_TYPES]
    busy = sorted((n for n in metrics if n.startswith("busy_share_cpu")), key=lambda n: int(n[14:]))
    metrics = [n for n in metrics if n not in busy] + busy
    order = front[:3] + list(labels) + front[3:] + metrics + back
    arrays = {}
    for n in order:
        if n in labels:
            arrays[n] = pa.array(labels[n])
            continue
        values = [r.get(n) for r in rows]
        typ = TRACE_TYPES.get(n)
        nums = [v for v in values if v is not None]
        if typ is None and all(isinstance(v, (int, float)) for v in nums):
            # a metric: counts stay integers (also when unknown in some traces)
            exact = nums and all(isinstance(v, int) and not isinstance(v, bool) for v in nums)
            typ = pa.int64() if exact else pa.float64()
        arrays[n] = pa.array(values, type=typ)
    return pa.table(arrays)


def write_dataset(out: Path, before: _Previous, results: list[TraceResult], options, label_from):
    """Write the dataset once: the earlier rows this run did not redo, then this run's."""
    redone = {r.row["path"] for r in results}
    rows, findings, windows = [], [], []
    if before.traces is not None:
        keep = [p not in redone for p in before.traces.column("path").to_pylist()]
        old = before.traces.filter(pa.array(keep)).drop_columns(
            [c for c in before.labels if c in before.traces.column_names]
        )
        rows += old.to_pylist()
        findings.append(_without(before.findings, redone))
        windows.append(_without(before.windows, redone))
    rows += [r.row for r in results]
    findings += [r.findings for r in results]
    windows += [r.windows for r in results]
    rows.sort(key=lambda r: r["path"])
    label_from = label_from or before.label_from
    labels = label_columns([r["path"] for r in rows], label_from)
    traces = _rows_table(rows, labels)
    found = pa.concat_tables(findings) if findings else FINDINGS_SCHEMA.empty_table()
    found = found.sort_by([("path", "ascending"), ("rank", "ascending")])
    wins = pa.concat_tables(windows) if windows else WINDOWS_SCHEMA.empty_table()
    wins = wins.sort_by([("path", "ascending"), ("window_s", "ascending")])
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "schedwake_version": __version__,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "traces": traces.num_rows,
        "label_from": label_from,
        "labels": list(labels),
        # the directory relative patterns of compare/gate --from-batch are also matched from
        "cwd": os.getcwd(),
        "options": {
            "topology": options.topology_file,
            "topology_for": {p: f for p, f, _ in options.topology_map},
            "llc": list(options.llc),
            "thresholds": dict(options.thresholds),
            "windows": list(options.windows),
        },
    }
    # every file written beside first, then each renamed over the old one (the manifest
    # last): a write that fails leaves the earlier dataset as it was, never half of each
    staged = []
    try:
        for name, table in ((TRACES_FILE, traces), (FINDINGS_FILE, found), (WINDOWS_FILE, wins)):
            staged.append((out / f".{name}.tmp", out / name))
            pq.write_table(table, staged[-1][0], row_group_size=65536)
        staged.append((out / f".{MANIFEST_FILE}.tmp", out / MANIFEST_FILE))
        staged[-1][0].write_text(dumps(manifest, indent=2) + "\n")
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, final in staged:
        os.replace(tmp, final)


def _without(table: pa.Table | None, paths: set[str]) -> pa.Table:
    if table is None or table.num_rows == 0:
        return table if table is not None else pa.table({})
    keep = [p not in paths for p in table.column("path").to_pylist()]
    return table.filter(pa.array(keep))
