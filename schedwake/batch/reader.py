"""Reading a batch dataset back: :class:`BatchDataset` (checked when opened: damage is a
TraceError naming the file), its ``where``/``expand``/``load`` for ``compare`` and
``gate --from-batch``, and :class:`AnalysedTrace`, a row standing in for its trace.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import OptionError, TraceError
from ..ingest.meta import TraceMeta
from ..paths import Stored, expand
from ..version import __version__
from .inputs import cells_equal, matched_nothing
from .layout import (
    FINDINGS_FILE,
    FINDINGS_SCHEMA,
    MANIFEST_FILE,
    TRACE_TYPES,
    TRACES_FILE,
    WINDOWS_FILE,
    WINDOWS_SCHEMA,
)

#: The first version whose metric names are today's (the one vocabulary of 0.2.0).
DATASET_COMPATIBLE_SINCE = "0.2.0"


def _check_version(out: Path, manifest: dict) -> None:
    """Refuse a dataset written before the metric names it holds were today's: mixing
    its rows (``wake_to_run_p99_ns``, ``migrations/s``) with new ones would mislabel them;
    and one written by a newer schedwake, whose columns may mean what this one does not
    know."""
    have = str(manifest.get("schedwake_version") or "0")

    def key(v: str) -> tuple:
        return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))

    if key(have) < key(DATASET_COMPATIBLE_SINCE):
        raise TraceError(
            out,
            f"holds a batch dataset of schedwake {have}, whose metric names are not this "
            f"version's ({__version__}); analyse the traces again into another -o",
        )
    if key(have) > key(__version__):
        raise TraceError(
            out,
            f"holds a batch dataset of schedwake {have}, newer than this one ({__version__}), "
            "whose columns this version cannot vouch for: read it with that version",
        )


#: The traces.parquet columns of every row (an error row has no others).
_EVERY_ROW = ("path", "status", "error", "abspath", "size", "mtime_ns", "options_key")
#: The columns an ``ok`` row is read back with (:class:`AnalysedTrace`).
_OK_ROW = (
    "format",
    "cpus",
    "kernel",
    "clock",
    "first_ts_ns",
    "last_ts_ns",
    "lost_unknown_cpus",
    "warnings",
    "caveats",
    "event_counts",
    "lost_events_by_cpu",
    "timestamps",
    "topology_json",
    "thresholds",
)


def open_dataset(out: Path) -> tuple[pa.Table, dict]:
    """traces.parquet and batch.json of the dataset in ``out``, once its four files are
    checked: each there and readable, the manifest of a version this one reads,
    findings.parquet and windows.parquet with exactly their schemas, traces.parquet
    with the columns its rows need, in their types. Anything else is damage: a
    TraceError naming the file, so that nothing is judged from half a dataset."""
    manifest = _read_manifest(out / MANIFEST_FILE)
    _check_version(out, manifest)
    for name, schema in ((FINDINGS_FILE, FINDINGS_SCHEMA), (WINDOWS_FILE, WINDOWS_SCHEMA)):
        path = out / name
        got = read_parquet(path, pq.read_schema)
        _check_columns(path, got, dict(zip(schema.names, schema.types)))
        extra = sorted(set(got.names) - set(schema.names))
        if extra:
            raise TraceError(path, f"has column(s) a batch dataset has not: {', '.join(extra)}")
    traces = read_parquet(out / TRACES_FILE, pq.read_table)
    _check_traces(out / TRACES_FILE, traces, manifest)
    return traces, manifest


def _read_manifest(path: Path) -> dict:
    if not path.is_file():
        raise TraceError(path, "is missing: not a whole batch dataset (run schedwake batch again)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise TraceError(
            path, f"is not the JSON manifest of a batch dataset ({_one_line(exc)})"
        ) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("schedwake_version"), str):
        raise TraceError(path, "is not the manifest of a batch dataset (no schedwake_version)")
    return manifest


def read_parquet(path: Path, read: Callable):
    """``read(path)`` (a schema, a table) of a Parquet file of the dataset, or a
    TraceError naming the file when it is missing or damaged."""
    if not path.is_file():
        raise TraceError(path, "is missing: not a whole batch dataset (run schedwake batch again)")
    try:
        return read(path)
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(path, f"is not a readable Parquet file ({_one_line(exc)})") from None


def _one_line(exc: BaseException, width: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _check_columns(path: Path, schema: pa.Schema, want: dict) -> None:
    """TraceError unless ``schema`` has every column of ``want`` (name -> type) in its type."""
    for name, typ in want.items():
        if name not in schema.names:
            raise TraceError(path, f"has no {name!r} column: not a whole batch dataset")
        got = schema.field(name).type
        if got != typ and not pa.types.is_null(got):  # (a column of nulls has no type)
            raise TraceError(path, f"column {name!r} is {got}, not {typ}")


def _check_traces(path: Path, traces: pa.Table, manifest: dict) -> None:
    """traces.parquet: the columns every row has, those of ok rows when there are any,
    the others in their types (labels: any; metrics: numbers), known statuses."""
    schema = traces.schema
    _check_columns(path, schema, {n: TRACE_TYPES[n] for n in _EVERY_ROW})
    status = set(traces.column("status").to_pylist())
    if not status <= {"ok", "error"}:
        raise TraceError(
            path,
            f"status {sorted(map(str, status - {'ok', 'error'}))[0]!r} is neither ok nor error",
        )
    if traces.column("path").null_count:
        raise TraceError(path, "a row has no path")
    if "ok" in status:
        _check_columns(path, schema, {n: TRACE_TYPES[n] for n in _OK_ROW})
    labels = set(manifest.get("labels") or [])
    for column in schema:
        if column.name in TRACE_TYPES:
            _check_columns(path, schema, {column.name: TRACE_TYPES[column.name]})
        elif column.name not in labels and not (
            pa.types.is_integer(column.type)
            or pa.types.is_floating(column.type)
            or pa.types.is_null(column.type)
        ):
            raise TraceError(
                path, f"column {column.name!r} ({column.type}) is neither a label nor a metric"
            )


class BatchDataset:
    """A dataset written by :func:`batch`, read back.

    ``traces``, ``findings`` (pandas DataFrames), ``windows(paths)``; ``where(column=
    value)`` keeps the traces whose label (or other) column has that value;
    ``expand(pattern, what)`` and ``load(path)`` are what ``compare --from-batch`` and
    ``gate --from-batch`` give :func:`schedwake.compare.sides.parse_sides` and
    :func:`schedwake.gate` in place of the file system and the reader.
    """

    def __init__(self, out, _traces: pd.DataFrame | None = None, _manifest: dict | None = None):
        self.out = Path(out)
        self.manifest: dict = _manifest or {}
        if _traces is None:
            if not self.out.is_dir() or not any(
                (self.out / f).exists() for f in (TRACES_FILE, MANIFEST_FILE)
            ):
                raise TraceError(
                    self.out, f"no batch dataset here (no {TRACES_FILE}; run schedwake batch)"
                )
            table, self.manifest = open_dataset(self.out)
            _traces = table.to_pandas()
        self.traces: pd.DataFrame = _traces
        self._windows: dict[str, pd.DataFrame] = {}
        self._findings: pd.DataFrame | None = None

    def __repr__(self) -> str:
        ok = int((self.traces["status"] == "ok").sum())
        return f"<BatchDataset {str(self.out)!r}: {len(self.traces)} traces, {ok} ok>"

    # -- tables ----------------------------------------------------------------------------------
    @property
    def findings(self) -> pd.DataFrame:
        """findings.parquet, of the traces of this (possibly filtered) dataset."""
        if self._findings is None:
            f = read_parquet(self.out / FINDINGS_FILE, pq.read_table).to_pandas()
            self._findings = f[f["path"].isin(set(self.traces["path"]))].reset_index(drop=True)
        return self._findings

    def windows(self, paths: Sequence[str] | None = None) -> pd.DataFrame:
        """windows.parquet rows of ``paths`` (default: every trace of this dataset)."""
        want = list(self.traces["path"]) if paths is None else list(paths)
        missing = [p for p in want if p not in self._windows]
        if missing:
            t = read_parquet(
                self.out / WINDOWS_FILE,
                lambda p: pq.read_table(p, filters=[("path", "in", missing)]),
            )
            df = t.to_pandas()
            for p, g in df.groupby("path", sort=False):
                self._windows[str(p)] = g.reset_index(drop=True)
            for p in missing:
                self._windows.setdefault(p, df.iloc[0:0])
        return pd.concat([self._windows[p] for p in want], ignore_index=True)

    def where(self, conditions: dict | Sequence[str] = (), **kw) -> BatchDataset:
        """The traces whose columns equal the given values (``{"kernel": "6.1"}``, or
        ``["kernel=6.1"]`` as ``--where`` gives them), compared by the column's type: a
        number with a numeric column (``clients=4`` is ``4.0`` is ``4``), else as text.
        TraceError names the condition that leaves no trace, with the values there are."""
        if not isinstance(conditions, dict):
            parsed: dict[str, str] = {}
            for item in conditions:
                col, sep, value = str(item).partition("=")
                if not sep or not col.strip():
                    raise OptionError("conditions", None, f"expected COLUMN=VALUE, got {item!r}")
                col = col.strip()
                if col in parsed:  # (the last would silently win: say so instead)
                    raise OptionError(
                        "conditions",
                        None,
                        f"two values for {col}: {col}={parsed[col]} and {col}={value.strip()}; "
                        "a trace has one value per column",
                    )
                parsed[col] = value.strip()
            conditions = parsed
        conditions = {**conditions, **kw}
        df = self.traces
        for col, value in conditions.items():
            if col not in df.columns:
                raise OptionError(
                    "conditions",
                    None,
                    f"{self.out / TRACES_FILE} has no column {col!r} "
                    f"(labels: {', '.join(self.manifest.get('labels') or []) or 'none'})",
                )
            before = df
            df = df[cells_equal(df[col], value, col)]
            if df.empty:
                raise OptionError("conditions", None, matched_nothing(col, value, before[col]))
        sub = BatchDataset(self.out, df.reset_index(drop=True), self.manifest)
        sub._windows = self._windows
        return sub

    # -- what compare and gate need --------------------------------------------------------------
    def expand(self, pattern: str, what: str = "trace") -> list[str]:
        """The paths of this dataset's traces that ``pattern`` names, sorted: the rule
        that names files (:func:`schedwake.paths.expand`: a path, the traces under a
        directory, a glob's matches: ``*`` stops at ``/``, ``**`` crosses) applied to
        the stored paths; an absolute pattern matches the traces' absolute paths."""
        example = f"; a stored path: {self.traces['path'].iloc[0]}" if len(self.traces) else ""
        stored = Stored(
            paths=list(self.traces["path"]),
            absolute=[a if isinstance(a, str) else None for a in self.traces["abspath"]],
            relative=self._relative_names(),
            where=f"the batch {self.out} ({len(self.traces)} trace(s){example})",
        )
        return expand(pattern, what, among=stored)

    def _relative_names(self) -> list[list[str]]:
        """The names a relative pattern is matched against, per trace: its path as
        stored, and its path relative to the directory the batch ran from, to the
        current directory (when the trace is under it) and to the common root of the
        batch's traces, so that ``*kstack-on*`` finds ``/data/runs/k-kstack-on.dat``."""
        abspaths = [str(a) for a in self.traces["abspath"] if isinstance(a, str)]
        roots = [self.manifest.get("cwd"), os.getcwd()]
        if abspaths:
            roots.append(os.path.commonpath([os.path.dirname(a) for a in abspaths]))
        out = []
        for path, ap in zip(self.traces["path"], self.traces["abspath"]):
            names = [str(path)]
            if isinstance(ap, str):
                for root in roots:
                    if isinstance(root, str) and os.path.isabs(root):
                        rel = os.path.relpath(ap, root)
                        if not rel.startswith(".."):
                            names.append(rel)
            out.append(list(dict.fromkeys(names)))
        return out

    def load(self, path: str) -> AnalysedTrace:
        """The analysed trace of ``path``; TraceError (its error) if it could not be
        analysed."""
        rows = self.traces[self.traces["path"] == path]
        if rows.empty:
            raise TraceError(path, f"not in the batch {self.out}")
        row = rows.iloc[0]
        if row["status"] != "ok":
            raise TraceError(path, _strip_path(str(row["error"]), path))
        try:
            return AnalysedTrace(row.to_dict(), self)
        except (TraceError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            # a cell of its row is not what batch wrote (JSON, a number, a topology): damage
            raise TraceError(
                self.out / TRACES_FILE, f"the row of {path} is damaged ({_one_line(exc)})"
            ) from None


def _strip_path(error: str, path: str) -> str:
    prefix = f"{path}: "
    return error[len(prefix) :] if error.startswith(prefix) else error


def plain_value(v):
    """A cell of a pandas row as a plain value (NaN/NA/None -> None)."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


class AnalysedTrace:
    """One ``ok`` row of a batch dataset, standing in for its trace in a comparison or
    a gate (see :class:`schedwake.compare.Side`): its facts, caveats and topology, its
    samples and its findings, read back from the dataset."""

    def __init__(self, row: dict, dataset: BatchDataset):
        from ..topology import Topology

        self.row = row
        self.dataset = dataset
        lost = json.loads(row["lost_events_by_cpu"] or "{}")
        # the dataset's columns (their names are those of every earlier version)
        self.meta = TraceMeta(
            path=row["path"],
            format=row["format"],
            cpus=int(row["cpus"]),
            clock=plain_value(row["clock"]),
            kernel=plain_value(row["kernel"]),
            first_ts_ns=plain_value(row["first_ts_ns"]),
            last_ts_ns=plain_value(row["last_ts_ns"]),
            event_counts=json.loads(row["event_counts"] or "{}"),
            lost_events={int(c): int(n) for c, n in lost.items()},
            lost_unknown=tuple(int(c) for c in (_list(row["lost_unknown_cpus"]))),
            systems={},
            warnings=tuple(str(w) for w in _list(row["warnings"])),
            source={"timestamps": row["timestamps"]},
        )
        self.caveats: list[str] = [str(c) for c in _list(row["caveats"])]
        topo = json.loads(row["topology_json"])
        source, note = topo.pop("source"), topo.pop("note", "")
        self.topology = Topology.from_dict(topo, source)
        self.topology.source, self.topology.note = source, note
        self.thresholds: dict = json.loads(row["thresholds"])

    def __repr__(self) -> str:
        return f"<AnalysedTrace {self.path!r} from {str(self.dataset.out)!r}>"

    @property
    def stored(self) -> AnalysedTrace:
        """Itself: its samples and findings are stored, not measured (an analysed trace
        satisfies :class:`schedwake.sidetrace.SideTrace`: see the end of this module)."""
        return self

    @property
    def path(self) -> str:
        return self.meta.path

    @property
    def duration_ns(self) -> int:
        first, last = self.meta.first_ts_ns, self.meta.last_ts_ns
        return 0 if first is None or last is None else int(last) - int(first)

    def has_records(self, name: str) -> bool:
        return int(self.meta.event_counts.get(name, 0)) > 0

    def use_topology(self, topology_file=None, llc=None):
        raise OptionError(
            "topology_file" if topology_file is not None else "llc",
            None,
            "a batch dataset was analysed with its topology: run schedwake batch with "
            "the topology option instead",
        )

    def _check_thresholds(self, thresholds: dict | None) -> None:
        from ..detect import thresholds as resolve

        want = resolve(thresholds)
        if want != self.thresholds:
            diff = sorted(k for k in want if want[k] != self.thresholds.get(k))
            raise OptionError(
                "thresholds",
                None,
                f"the batch {self.dataset.out} was analysed with other thresholds ("
                + ", ".join(f"{k}={self.thresholds.get(k):g}" for k in diff)
                + "): run schedwake batch with the same --threshold",
            )

    def metrics(self) -> dict:
        """The trace's :func:`schedwake.analysis.metrics.trace_metrics`, from its row."""
        from ..analysis.metrics import CATALOGUE

        keys = {m.key for m in CATALOGUE.values()} | {"duration_s"}
        tm = {k: plain_value(self.row.get(k)) for k in keys if k != "busy_share"}
        busy = {}
        for c in range(self.meta.ncpus):
            v = plain_value(self.row.get(f"busy_share_cpu{c}"))
            if v is not None:
                busy[str(c)] = v
        tm["busy_share"] = busy
        try:
            bench = json.loads(plain_value(self.row.get("bench")) or "{}")
        except (TypeError, ValueError, RecursionError):
            bench = None
        if not isinstance(bench, dict) or not all(
            isinstance(v, dict) and v.get("direction") in ("higher", "lower")
            for v in bench.values()
        ):
            raise TraceError(
                self.dataset.out / TRACES_FILE, f"the bench column of {self.path} is damaged"
            ) from None
        if bench:  # (the benchmark's results beside the trace, as trace_metrics has them)
            tm.update({n: plain_value(self.row.get(n)) for n in bench})
            tm["bench"] = bench
        return tm

    def samples(self, window_s=None, thresholds=None, metrics=None) -> pd.DataFrame:
        """The samples :func:`schedwake.analysis.metrics.metric_samples` gave for this trace:
        per-trace from its row, per-window from windows.parquet (TraceError if the
        batch did not store windows of ``window_s``)."""
        from ..analysis.metrics import SAMPLE_COLUMNS, select_names, trace_samples

        self._check_thresholds(thresholds)
        if window_s is None:
            return trace_samples(self.metrics(), self.path, self.meta.ncpus, metrics)
        keep = select_names(metrics)
        w = self.dataset.windows([self.path])
        stored = sorted(set(w["window_s"]))
        hit = [x for x in stored if math.isclose(x, window_s, rel_tol=1e-9)]
        if not hit:
            have = ", ".join(f"{x:g}" for x in stored) or "none"
            raise TraceError(
                self.path,
                f"the batch {self.dataset.out} has no {window_s:g}-s windows of it "
                f"(it has: {have} s); run schedwake batch with --window {window_s:g}",
            )
        w = w[w["window_s"] == hit[0]]
        if keep is not None:
            w = w[w["metric"].isin(keep)]
        w = w.rename(columns={"path": "trace"}).assign(sample_kind="per-window")
        # (a benchmark result is one value per trace, also beside the windows)
        w.loc[w["metric"].astype(str).str.startswith("bench_"), "sample_kind"] = "per-trace"
        return w[list(SAMPLE_COLUMNS)].reset_index(drop=True)

    def findings(self, thresholds=None) -> list:
        """The findings of the trace, as :func:`schedwake.detect.detect` gave them."""
        from ..detect import Finding

        self._check_thresholds(thresholds)
        f = self.dataset.findings
        out = []
        for r in f[f["path"] == self.path].sort_values("rank").itertuples():
            try:
                finding = Finding(
                    r.detector, r.severity, r.title, json.loads(r.metrics), json.loads(r.top)
                )
                finding.evidence_events = json.loads(r.evidence_events or "[]")
            except (TypeError, ValueError, RecursionError) as exc:  # not the JSON batch wrote
                raise TraceError(
                    self.dataset.out / FINDINGS_FILE,
                    f"a finding of {self.path} is damaged ({_one_line(exc)})",
                ) from None
            finding.evidence = [str(x) for x in _list(r.evidence)]
            finding.caveats = [str(x) for x in _list(r.caveats)]
            out.append(finding)
        return out


def _list(v) -> list:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return []
    return list(v)


if TYPE_CHECKING:  # (checked by mypy: an analysed trace is a side's trace)
    from ..sidetrace import SideTrace

    def _analysed(t: AnalysedTrace) -> SideTrace:
        return t
