"""Many traces, each analysed once, in parallel on Dask, into one Parquet dataset.

``schedwake batch TRACE_OR_GLOB... -o OUT`` (and :func:`batch`) runs
:func:`schedwake.analyze` over every trace, one Dask task a trace, on a
``distributed.LocalCluster`` of this machine or on an existing cluster
(``scheduler="tcp://host:8786"``), and writes, once, at the end:

* ``OUT/traces.parquet``: one row per trace: ``path``, ``status`` (``ok``/``error``),
  ``error`` (the one-line :class:`~schedwake.TraceError` text), the label columns of
  ``label_from``, the trace's facts (format, CPUs, kernel, clock, duration, events, lost
  events, the topology used and its source, caveats) and every metric of
  ``schedwake analyze`` under the same name (``busy_share`` as ``busy_share_cpuN``);
* ``OUT/findings.parquet``: one row per finding (path, detector, severity, title, its
  metrics as JSON, top contributors as JSON, evidence lines);
* ``OUT/windows.parquet``: the per-window samples of the comparison catalogue
  (:func:`schedwake.metrics.metric_samples`) at each trace's default window length
  and at the lengths asked for with ``windows``;
* ``OUT/batch.json``: the options the analyses were made with.

A trace that cannot be read is an ``error`` row and never stops the others. Running
again into the same ``OUT`` keeps the rows of traces analysed before with the same
options (same path, size and modification time) and analyses only the rest
(``force=True``: everything); rows of traces not named this time stay.

:class:`BatchDataset` reads a dataset back: ``schedwake compare --from-batch`` and
``schedwake gate --from-batch`` judge from it, without reading the traces again, and
give the table and the verdict the same command over the traces gives.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .compare import glob_regex
from .errors import OptionError, TraceError
from .ingest import SUFFIXES
from .ingest.meta import TraceMeta
from .version import __version__

__all__ = [
    "batch",
    "BatchResult",
    "BatchDataset",
    "AnalysedTrace",
    "Options",
    "analyse_one",
    "expand_inputs",
    "label_columns",
]

TRACES_FILE, FINDINGS_FILE, WINDOWS_FILE, MANIFEST_FILE = (
    "traces.parquet",
    "findings.parquet",
    "windows.parquet",
    "batch.json",
)

_GLOB_CHARS = re.compile(r"[*?\[]")

#: The most worker processes a local cluster may be given.
MAX_WORKERS = 1024

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
_TRACE_TYPES = {
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
#: Where the metrics go among the columns of _TRACE_TYPES (in its order).
_TRACE_TYPES_BACK = list(_TRACE_TYPES).index("event_counts")


# -- options and inputs ------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """How every trace of a batch is read and analysed (what a Dask task gets)."""

    #: ``--topology`` as given and as an absolute path (the workers' working directory
    #: may differ), or None.
    topology_file: str | None = None
    topology_abspath: str | None = None
    llc: tuple[str, ...] = ()
    #: Detector threshold overrides, as ``(name, value)`` pairs.
    thresholds: tuple[tuple[str, float], ...] = ()
    #: Window lengths (s) of per-window samples, besides each trace's default.
    windows: tuple[float, ...] = ()
    input_format: str | None = None
    reader: str | None = None
    jobs: int | None = None
    #: Per-trace topologies: ``(pattern, file as given, file's absolute path)``; the
    #: first pattern a trace's path matches gives its topology (:meth:`topology_for`).
    topology_map: tuple[tuple[str, str, str], ...] = ()

    def topology_for(self, path: str, abspath: str) -> tuple[str | None, str | None]:
        """The topology file of the trace ``path`` (read at ``abspath``), as given and as
        an absolute path: the first of :attr:`topology_map` whose pattern matches it
        (an absolute pattern its absolute path; a relative one its path as given or
        relative to the current directory), else ``--topology`` (None: the trace's own
        lookup, a TRACE.topology.json or topology.json beside it)."""
        rel = os.path.relpath(abspath)
        for pattern, given, absolute in self.topology_map:
            names = [abspath] if os.path.isabs(pattern) else [path, rel]
            if _GLOB_CHARS.search(pattern):
                rx = glob_regex(os.path.normpath(pattern))
                hit = any(rx.match(os.path.normpath(n)) for n in names)
            else:
                hit = any(os.path.normpath(n) == os.path.normpath(pattern) for n in names)
            if hit:
                return given, absolute
        return self.topology_file, self.topology_abspath

    def key(self) -> str:
        """What makes two analyses of a trace the same: the options that change results
        (not the reader or its threads: they give identical tables) and the version."""
        from hashlib import sha1

        what: dict[str, object] = {
            "topology": self.topology_abspath,
            "llc": list(self.llc),
            "thresholds": sorted(self.thresholds),
            "windows": sorted(self.windows),
            "input_format": self.input_format,
            "version": __version__,
        }
        if self.topology_map:
            what["topology_map"] = [[p, a] for p, _, a in self.topology_map]
        return sha1(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def expand_inputs(inputs: Sequence[str]) -> tuple[list[str], list[str]]:
    """The trace paths of ``inputs`` (paths, globs -- ``**`` recurses -- or directories,
    searched recursively for the suffixes of the input formats, ``ingest.SUFFIXES``;
    ``NAME.topology.json`` files beside them are not traces), each once, in the order given
    (a glob's or a directory's files sorted), and the patterns that matched nothing."""
    from .compare import glob_files

    paths: dict[str, None] = {}
    missing = []
    for item in inputs:
        item = str(item)
        p = Path(item)
        if p.is_dir():
            found = sorted(
                str(f)
                for f in p.rglob("*")
                if f.is_file()
                and f.name.endswith(SUFFIXES)
                and not f.name.endswith(".topology.json")
            )
        elif p.exists() or not _GLOB_CHARS.search(item):
            found = [str(p)]
        else:
            found = glob_files(item)
        if not found:
            missing.append(item)
        for f in found:
            paths.setdefault(str(Path(f)), None)
    return list(paths), missing


def _label_regex(label_from: str | None) -> re.Pattern | None:
    if not label_from:
        return None
    try:
        rx = re.compile(label_from)
    except re.error as exc:
        raise OptionError("label_from", None, f"not a regular expression: {exc}") from None
    if not rx.groupindex:
        raise OptionError(
            "label_from",
            None,
            "the regular expression has no named group: name each part, "
            r"e.g. '(?P<kernel>[^/]+)/(?P<bench>[^/]+)-i(?P<iter>\d+)'",
        )
    clash = sorted(set(rx.groupindex) & (set(_TRACE_TYPES) | {"duration_s"}))
    if clash:
        raise OptionError(
            "label_from", None, f"group name(s) {', '.join(clash)} are columns of {TRACES_FILE}"
        )
    return rx


def label_columns(paths: Sequence[str], label_from: str | None) -> dict[str, list]:
    """``{group: [value per path]}`` from the named groups of ``label_from`` searched in
    each path (None where it does not match); a group whose every value is an integer
    becomes an integer column."""
    rx = _label_regex(label_from)
    if rx is None:
        return {}
    matches = [rx.search(p) for p in paths]
    cols: dict[str, list] = {}
    for name in rx.groupindex:
        values = [m.group(name) if m else None for m in matches]
        if all(v is None or re.fullmatch(r"[+-]?\d{1,18}", v) for v in values) and any(
            v is not None for v in values
        ):
            cols[name] = [None if v is None else int(v) for v in values]
        else:
            cols[name] = values
    return cols


# -- one trace: the Dask task ------------------------------------------------------------------


@dataclass
class TraceResult:
    """What analysing one trace gives: its traces.parquet row, and its findings and
    window samples as Arrow tables."""

    row: dict
    findings: pa.Table
    windows: pa.Table


def _error_result(path: str, abspath: str, error: str, options: Options, stat=None) -> TraceResult:
    row = {
        "path": path,
        "status": "error",
        "error": error,
        "abspath": abspath,
        "size": None if stat is None else stat.st_size,
        "mtime_ns": None if stat is None else stat.st_mtime_ns,
        "options_key": options.key(),
        "schedwake_version": __version__,
        "analysed_at": datetime.now(UTC),
    }
    return TraceResult(row, FINDINGS_SCHEMA.empty_table(), WINDOWS_SCHEMA.empty_table())


def _as_given(text: str, abspath: str, path: str) -> str:
    """``text`` with the absolute path a worker read replaced by the path as the user
    gave it, so that errors, caveats and sources name the trace the same way a command
    over the traces does."""
    text = text.replace(abspath, path)
    adir, gdir = os.path.dirname(abspath), os.path.dirname(path)
    return text.replace(adir + os.sep, (gdir + os.sep) if gdir else "")


def analyse_one(path: str, abspath: str, options: Options) -> TraceResult:
    """Read and analyse one trace (the Dask task of :func:`batch`): never raises for a
    bad trace, which is an ``error`` row naming ``path`` (as given, while ``abspath`` is
    what is read)."""
    from .analysis import analyze, topology_facts
    from .compare import _jsonable, default_window
    from .metrics import metric_samples
    from .model import MODEL_EVENTS
    from .summary import summary
    from .trace import load

    started = time.perf_counter()
    try:
        stat = os.stat(abspath)
    except OSError:
        stat = None
    try:
        trace = load(
            abspath,
            events=list(MODEL_EVENTS),
            input_format=options.input_format,
            reader=options.reader,
            jobs=options.jobs,
        )
        topology_file, topology_abspath = options.topology_for(path, abspath)
        topo = trace.use_topology(topology_abspath, () if topology_abspath else options.llc)
        if topology_abspath is not None and topo.source == topology_abspath:
            topo.source = str(topology_file)
        else:
            topo.source = _as_given(topo.source, abspath, path)
        _ = trace.bench  # (the files beside the trace are read from where it is, abspath)
        trace.meta = replace(trace.meta, path=path)
        thresholds = dict(options.thresholds)
        windows = [default_window([trace.duration_ns / 1e9])]
        windows += [w for w in options.windows if not any(math.isclose(w, x) for x in windows)]
        for w in windows:
            _check_windows_of(path, w, trace.duration_ns / 1e9)
        analysis = analyze(trace, thresholds)
        samples = [
            metric_samples(trace, w, thresholds).assign(window_s=w)
            for w in windows
            if trace.duration_ns > 0
        ]
        # the trace's facts (the JSON's "trace" without the explained waits: not stored)
        facts = summary(trace)
        topo_facts = topology_facts(trace.topology)
    except TraceError as exc:
        text = _as_given(str(exc), abspath, path)
        return _error_result(path, abspath, text, options, stat)
    except MemoryError:
        return _error_result(path, abspath, f"{path}: out of memory", options, stat)
    except Exception as exc:  # a bug: the other traces go on, the batch exits 2
        text = " ".join(f"{type(exc).__name__}: {exc}".split())
        return _error_result(
            path, abspath, f"{path}: internal error (please report): {text}", options, stat
        )
    metrics = dict(analysis.metrics)
    bench = metrics.pop("bench", None) or {}
    busy = metrics.pop("busy_share", None) or {}
    metrics.update({f"busy_share_cpu{c}": v for c, v in busy.items()})
    row = {
        "path": path,
        "status": "ok",
        "error": None,
        "format": facts["format"],
        "cpus": facts["cpus"],
        "kernel": facts["kernel"],
        "clock": facts["clock"],
        "first_ts_ns": facts["first_ts_ns"],
        "last_ts_ns": facts["last_ts_ns"],
        "events": sum(facts["events"].values()),
        "lost_events": sum(facts["lost_events"].values()),
        "lost_unknown_cpus": [int(c) for c in facts["lost_unknown"]],
        "topology": trace.topology.describe(),
        "topology_source": topo_facts["source"],
        "topology_from": topo_facts["from"],
        "topology_llc": topo_facts["llc"],
        "caveats": list(analysis.caveats),
        "warnings": facts["warnings"],
        "findings": len(analysis.findings),
        "detectors": list(dict.fromkeys(f.detector for f in analysis.findings)),
        **metrics,
        "event_counts": json.dumps(facts["events"]),
        "lost_events_by_cpu": json.dumps(facts["lost_events"]),
        "timestamps": facts["timestamps"],
        "topology_json": json.dumps(
            {**trace.topology.to_dict(), "source": topo.source, "note": topo.note}
        ),
        "thresholds": json.dumps(analysis.thresholds, sort_keys=True),
        "bench": json.dumps(bench, sort_keys=True) if bench else None,
        "windows_s": windows,
        "abspath": abspath,
        "size": None if stat is None else stat.st_size,
        "mtime_ns": None if stat is None else stat.st_mtime_ns,
        "options_key": options.key(),
        "schedwake_version": __version__,
        "analysed_at": datetime.now(UTC),
        "seconds": round(time.perf_counter() - started, 6),
    }
    findings = pa.Table.from_pylist(
        [
            {
                "path": path,
                "rank": i,
                "detector": f.detector,
                "severity": f.severity,
                "title": f.title,
                "metrics": json.dumps(f.metrics, default=_jsonable),
                "top": json.dumps(f.top, default=_jsonable),
                "evidence": list(f.evidence),
                "evidence_events": json.dumps(f.evidence_events, default=_jsonable),
                "caveats": list(f.caveats),
            }
            for i, f in enumerate(analysis.findings)
        ],
        schema=FINDINGS_SCHEMA,
    )
    if samples:
        win = pd.concat(samples, ignore_index=True).rename(columns={"trace": "path"})
        windows_table = pa.Table.from_pandas(
            win[WINDOWS_SCHEMA.names], schema=WINDOWS_SCHEMA, preserve_index=False
        )
    else:
        windows_table = WINDOWS_SCHEMA.empty_table()
    return TraceResult(row, findings, windows_table)


def _check_windows_of(path: str, window_s: float, duration_s: float) -> None:
    """TraceError naming the trace if windows of ``window_s`` would cut it into more
    windows than a trace may have (a window longer than the trace is one window)."""
    from .compare import check_window

    try:
        check_window(window_s, [duration_s], "--window", one_window_ok=True)
    except OptionError as exc:
        raise TraceError(path, f"--window {exc.value}: {exc.problem}") from None


# -- many traces -------------------------------------------------------------------------------


@dataclass
class BatchResult:
    """What a :func:`batch` run did."""

    out: Path
    analysed: list[str] = field(default_factory=list)
    #: Traces kept from an earlier run into the same ``out`` (same file, same options).
    skipped: list[str] = field(default_factory=list)
    #: ``(path, one-line error)`` of this run's traces that could not be analysed.
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: The Dask scheduler the traces ran on ("serial" for an in-process run).
    scheduler: str = ""

    @property
    def exit_code(self) -> int:
        """0 when every trace of this run was analysed, 2 when any was not."""
        return 2 if self.errors else 0

    def summary(self) -> str:
        """One line for the terminal."""
        ok = len(self.analysed) - len(self.errors)
        out = f"batch: {ok} trace(s) analysed"
        if self.skipped:
            out += f", {len(self.skipped)} already done"
        if self.errors:
            out += f", {len(self.errors)} could not be analysed"
        return out + f" -> {self.out}"


def batch(
    inputs: Sequence[str],
    out,
    *,
    topology_file=None,
    llc: Sequence[str] = (),
    topologies: Mapping[str, str] | Sequence[str] | None = None,
    thresholds: dict | None = None,
    windows: Sequence[float] = (),
    label_from: str | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    force: bool = False,
    input_format: str | None = None,
    reader: str | None = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BatchResult:
    """Analyse every trace of ``inputs`` once (paths, globs or directories) and write the
    dataset into directory ``out`` (see the module's docstring).

    ``scheduler``: None for a ``distributed.LocalCluster`` of ``workers`` processes
    (default: one per CPU this process may use), ``"tcp://HOST:PORT"`` for an existing
    Dask cluster (its workers must reach the traces by the same absolute paths and run
    the same schedwake), or ``"serial"`` to analyse in this process without Dask.
    ``topology_file``/``llc``/``thresholds``: as ``schedwake analyze``, for every trace
    (without them each trace's own TRACE.topology.json or topology.json is used);
    ``topologies``: per-trace topology files, ``{glob: file}`` (or ``["GLOB=FILE"]`` as
    ``--topology-for`` gives them), the first glob a trace's path matches naming its
    file, before ``topology_file``; ``windows``:
    extra per-window sample lengths (s) to store; ``label_from``: a regular expression
    whose named groups become columns; ``force``: analyse again what an earlier run
    into ``out`` already did. ``progress(done, total)`` is called as traces finish.

    Raises TraceError for bad options (a rules-of-the-road error, before any work); a
    trace that cannot be analysed is an error row (``BatchResult.errors``), not a raise.
    """
    from .analysis import check_thresholds
    from .compare import check_window
    from .detect import thresholds as resolve_thresholds
    from .topology import Topology

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TraceError(out, "is a file; -o takes a directory")
    # bad options are refused before any work: each trace checks them again against itself
    _label_regex(label_from)
    check_thresholds(resolve_thresholds(thresholds))
    for w in windows:
        check_window(w, (), "windows")
    if topology_file is not None:
        Topology.from_file(topology_file)
    if llc:
        Topology.from_llc_lists(llc)
    topology_map = _topology_map(topologies)
    if workers is not None and not (isinstance(workers, int) and 1 <= workers <= MAX_WORKERS):
        raise OptionError("workers", workers, f"must be a whole number from 1 to {MAX_WORKERS}")
    options = Options(
        topology_file=None if topology_file is None else str(topology_file),
        topology_abspath=None if topology_file is None else os.path.abspath(topology_file),
        llc=tuple(str(x) for x in llc),
        thresholds=tuple(sorted((k, float(v)) for k, v in (thresholds or {}).items())),
        windows=tuple(float(w) for w in windows),
        input_format=input_format,
        reader=reader,
        jobs=jobs,
        topology_map=topology_map,
    )
    paths, missing = expand_inputs(inputs)
    before = _previous(out)
    result = BatchResult(out)
    todo = []
    for p in paths:
        ap = os.path.abspath(p)
        prev = before.done.get(p)
        if prev is not None and not force and _unchanged(prev, ap, options):
            result.skipped.append(p)
        else:
            todo.append((p, ap))
    results: list[TraceResult] = [
        _error_result(m, os.path.abspath(m), f"{m}: the pattern matches no file", options)
        for m in missing
    ]
    if todo:
        results += _run(todo, options, scheduler, workers, progress, result)
    else:
        result.scheduler = "none (nothing to analyse)"
    for r in results:
        result.analysed.append(r.row["path"])
        if r.row["status"] != "ok":
            result.errors.append((r.row["path"], r.row["error"]))
    _write(out, before, results, options, label_from)
    return result


def _topology_map(topologies) -> tuple[tuple[str, str, str], ...]:
    """``topologies`` (``{glob: file}`` or ``["GLOB=FILE", ...]``) as
    :attr:`Options.topology_map`, each file read once to refuse a bad one early."""
    from .topology import Topology

    if not topologies:
        return ()
    if isinstance(topologies, Mapping):
        items = [(str(k), str(v)) for k, v in topologies.items()]
    else:
        items = []
        for spec in topologies:
            pattern, sep, file = str(spec).rpartition("=")
            if not sep or not pattern.strip() or not file.strip():
                raise OptionError("topologies", None, f"expected GLOB=FILE, got {spec!r}")
            items.append((pattern.strip(), file.strip()))
    out = []
    for pattern, file in items:
        Topology.from_file(file)
        out.append((pattern, file, os.path.abspath(file)))
    return tuple(out)


def _unchanged(prev: dict, abspath: str, options: Options) -> bool:
    """An earlier ``ok`` row still stands: same file (size, modification time) and the
    same options."""
    try:
        st = os.stat(abspath)
    except OSError:
        return False
    return (
        prev.get("status") == "ok"
        and prev.get("size") == st.st_size
        and prev.get("mtime_ns") == st.st_mtime_ns
        and prev.get("options_key") == options.key()
        and not _results_changed(prev, abspath)
    )


def _results_changed(prev: dict, abspath: str) -> bool:
    """A benchmark results file beside the trace (:func:`schedwake.bench.candidates`)
    written since the row's analysis, or one the row used that is gone."""
    from .bench import candidates

    at = _value(prev.get("analysed_at"))
    if at is None:
        return True
    since = pd.Timestamp(at).timestamp()
    for _, path in candidates(abspath):
        try:  # (a new symlink to an older file counts as new)
            if max(path.lstat().st_mtime, path.stat().st_mtime) >= since:
                return True
        except OSError:
            continue
    try:
        used = json.loads(_value(prev.get("bench")) or "{}")
        sources = {str(v.get("source")) for v in used.values() if isinstance(v, dict)}
    except (TypeError, ValueError, AttributeError, RecursionError):
        return True
    return not all(os.path.exists(s) for s in sources)


def _run(todo, options, scheduler, workers, progress, result) -> list[TraceResult]:
    """Analyse ``todo`` ((path, abspath) pairs): in this process (``"serial"``) or as one
    Dask task a trace; results in the order of ``todo``."""
    done = 0
    if progress:
        progress(0, len(todo))
    if scheduler == "serial":
        result.scheduler = "serial"
        out = []
        for p, ap in todo:
            out.append(analyse_one(p, ap, options))
            done += 1
            if progress:
                progress(done, len(todo))
        return out
    from distributed import as_completed

    with _client(scheduler, workers) as (client, name):
        result.scheduler = name
        if options.jobs is None and scheduler is None:
            # the local workers share this machine's CPUs: a trace's decoding threads
            # get their share of them
            n = len(client.scheduler_info().get("workers", {})) or 1
            options = _replace(options, jobs=max(1, _cpus() // n))
        run = uuid.uuid4().hex[:12]  # keys of their own on a cluster others use too
        futures = {
            client.submit(analyse_one, p, ap, options, key=f"schedwake-{run}-{i}"): (p, ap)
            for i, (p, ap) in enumerate(todo)
        }
        by_path = {}
        for fut in as_completed(futures):
            p, ap = futures[fut]
            try:
                by_path[p] = fut.result()
            except Exception as exc:  # the task never finished: its worker died, ...
                by_path[p] = _error_result(p, ap, f"{p}: {_task_failure(exc)}", options)
            done += 1
            if progress:
                progress(done, len(todo))
        return [by_path[p] for p, _ in todo]


def _task_failure(exc: BaseException) -> str:
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        return (
            "the Dask worker analysing it died, also when retried (out of memory, or "
            "killed); analyse it alone with `schedwake analyze`"
        )
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"the Dask task failed: {text}"


def _replace(options: Options, **changes) -> Options:
    return Options(**{**asdict(options), **changes})


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def local_cluster(workers: int | None = None):
    """The ``distributed.LocalCluster`` :func:`batch` starts: ``workers`` processes (default
    one per CPU) of one thread each, no dashboard, quiet logs, and two Dask defaults off
    that made every analysis slower (measured on the samples, benchmarks/bench_batch.py):
    the workers' statistical profiler (it samples the running task's stack every 10 ms,
    +25%) and ``MALLOC_TRIM_THRESHOLD_=65536`` (pandas allocates and frees large blocks
    all the time, +15%; a batch worker holds one trace at a time anyway)."""
    import logging

    import dask
    from distributed import LocalCluster

    fast = {
        "distributed.worker.profile.enabled": False,
        "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    }
    with dask.config.set(fast):
        return LocalCluster(
            n_workers=workers or _cpus(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )


def _check_reachable(address: str) -> None:
    """A TCP scheduler address that refuses connections, or a host that does not resolve,
    fails at once (Dask's client would retry until its timeout)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme != "tcp" or not parts.hostname or parts.port is None:
        return
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=10).close()
    except OSError as exc:
        raise OptionError(
            "scheduler",
            None,
            f"cannot reach the Dask scheduler {address}: {exc.strerror or exc}",
        ) from None


class _client:
    """A Dask client on a new LocalCluster (closed at the end) or on ``scheduler``."""

    def __init__(self, scheduler, workers):
        self.scheduler, self.workers = scheduler, workers
        self.cluster = self.client = None

    def __enter__(self):
        from distributed import Client

        if self.scheduler:
            _check_reachable(self.scheduler)
            try:
                self.client = Client(self.scheduler, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise OptionError(
                    "scheduler", None, f"cannot reach the Dask scheduler {self.scheduler}: {exc}"
                ) from None
            if not self.client.scheduler_info().get("workers"):
                self.client.wait_for_workers(1, timeout=60)
            return self.client, self.scheduler
        n = self.workers or _cpus()
        self.cluster = local_cluster(n)
        self.client = Client(self.cluster)
        return self.client, f"LocalCluster of {n} worker process(es)"

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        return False


# -- the dataset on disk -----------------------------------------------------------------------


@dataclass
class _Previous:
    """An earlier run's dataset in ``out``: its tables and its ok rows by path."""

    traces: pa.Table | None = None
    findings: pa.Table | None = None
    windows: pa.Table | None = None
    labels: list[str] = field(default_factory=list)
    label_from: str | None = None
    done: dict[str, dict] = field(default_factory=dict)


def _previous(out: Path) -> _Previous:
    prev = _Previous()
    if not (out / TRACES_FILE).exists():
        return prev
    prev.traces, manifest = _open_dataset(out)
    prev.findings = _parquet(
        out / FINDINGS_FILE, lambda p: pq.read_table(p, schema=FINDINGS_SCHEMA)
    )
    prev.windows = _parquet(out / WINDOWS_FILE, lambda p: pq.read_table(p, schema=WINDOWS_SCHEMA))
    prev.labels = list(manifest.get("labels") or [])
    prev.label_from = manifest.get("label_from")
    cols = ["path", "status", "size", "mtime_ns", "options_key"]
    cols += [c for c in ("analysed_at", "bench") if c in prev.traces.column_names]
    for r in prev.traces.select(cols).to_pylist():
        prev.done[r["path"]] = r
    return prev


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


def _open_dataset(out: Path) -> tuple[pa.Table, dict]:
    """traces.parquet and batch.json of the dataset in ``out``, once its four files are
    checked: each there and readable, the manifest of a version this one reads,
    findings.parquet and windows.parquet with exactly their schemas, traces.parquet
    with the columns its rows need, in their types. Anything else is damage: a
    TraceError naming the file, so that nothing is judged from half a dataset."""
    manifest = _read_manifest(out / MANIFEST_FILE)
    _check_version(out, manifest)
    for name, schema in ((FINDINGS_FILE, FINDINGS_SCHEMA), (WINDOWS_FILE, WINDOWS_SCHEMA)):
        path = out / name
        got = _parquet(path, pq.read_schema)
        _check_columns(path, got, dict(zip(schema.names, schema.types)))
        extra = sorted(set(got.names) - set(schema.names))
        if extra:
            raise TraceError(path, f"has column(s) a batch dataset has not: {', '.join(extra)}")
    traces = _parquet(out / TRACES_FILE, pq.read_table)
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


def _parquet(path: Path, read: Callable):
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
    _check_columns(path, schema, {n: _TRACE_TYPES[n] for n in _EVERY_ROW})
    status = set(traces.column("status").to_pylist())
    if not status <= {"ok", "error"}:
        raise TraceError(
            path,
            f"status {sorted(map(str, status - {'ok', 'error'}))[0]!r} is neither ok nor error",
        )
    if traces.column("path").null_count:
        raise TraceError(path, "a row has no path")
    if "ok" in status:
        _check_columns(path, schema, {n: _TRACE_TYPES[n] for n in _OK_ROW})
    labels = set(manifest.get("labels") or [])
    for column in schema:
        if column.name in _TRACE_TYPES:
            _check_columns(path, schema, {column.name: _TRACE_TYPES[column.name]})
        elif column.name not in labels and not (
            pa.types.is_integer(column.type)
            or pa.types.is_floating(column.type)
            or pa.types.is_null(column.type)
        ):
            raise TraceError(
                path, f"column {column.name!r} ({column.type}) is neither a label nor a metric"
            )


def _rows_table(rows: list[dict], labels: dict[str, list]) -> pa.Table:
    """traces.parquet from its rows: the fixed columns typed, the metrics as they come
    (int64 counts, float64 otherwise), labels after ``error``."""
    names: dict[str, None] = {}
    for r in rows:
        names.update(dict.fromkeys(r))
    front, back = list(_TRACE_TYPES)[:_TRACE_TYPES_BACK], list(_TRACE_TYPES)[_TRACE_TYPES_BACK:]
    metrics = [n for n in names if n not in _TRACE_TYPES]
    busy = sorted((n for n in metrics if n.startswith("busy_share_cpu")), key=lambda n: int(n[14:]))
    metrics = [n for n in metrics if n not in busy] + busy
    order = front[:3] + list(labels) + front[3:] + metrics + back
    arrays = {}
    for n in order:
        if n in labels:
            arrays[n] = pa.array(labels[n])
            continue
        values = [r.get(n) for r in rows]
        typ = _TRACE_TYPES.get(n)
        nums = [v for v in values if v is not None]
        if typ is None and all(isinstance(v, (int, float)) for v in nums):
            # a metric: counts stay integers (also when unknown in some traces)
            exact = nums and all(isinstance(v, int) and not isinstance(v, bool) for v in nums)
            typ = pa.int64() if exact else pa.float64()
        arrays[n] = pa.array(values, type=typ)
    return pa.table(arrays)


def _write(out: Path, before: _Previous, results: list[TraceResult], options, label_from):
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
        staged[-1][0].write_text(json.dumps(manifest, indent=2) + "\n")
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


# -- reading a dataset back --------------------------------------------------------------------


class BatchDataset:
    """A dataset written by :func:`batch`, read back.

    ``traces``, ``findings`` (pandas DataFrames), ``windows(paths)``; ``where(column=
    value)`` keeps the traces whose label (or other) column has that value;
    ``expand(pattern, what)`` and ``load(path)`` are what ``compare --from-batch`` and
    ``gate --from-batch`` give :func:`schedwake.compare.parse_sides` and
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
            table, self.manifest = _open_dataset(self.out)
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
            f = _parquet(self.out / FINDINGS_FILE, pq.read_table).to_pandas()
            self._findings = f[f["path"].isin(set(self.traces["path"]))].reset_index(drop=True)
        return self._findings

    def windows(self, paths: Sequence[str] | None = None) -> pd.DataFrame:
        """windows.parquet rows of ``paths`` (default: every trace of this dataset)."""
        want = list(self.traces["path"]) if paths is None else list(paths)
        missing = [p for p in want if p not in self._windows]
        if missing:
            t = _parquet(
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
            parsed = {}
            for item in conditions:
                col, sep, value = str(item).partition("=")
                if not sep or not col.strip():
                    raise OptionError("conditions", None, f"expected COLUMN=VALUE, got {item!r}")
                parsed[col.strip()] = value.strip()
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
            df = df[_equals(df[col], value, col)]
            if df.empty:
                raise OptionError("conditions", None, _matched_nothing(col, value, before[col]))
        sub = BatchDataset(self.out, df.reset_index(drop=True), self.manifest)
        sub._windows = self._windows
        return sub

    # -- what compare and gate need --------------------------------------------------------------
    def expand(self, pattern: str, what: str = "trace") -> list[str]:
        """The paths of this dataset's traces that ``pattern`` matches (a path, or a
        glob matched like files are: ``*`` stops at ``/``, ``**`` crosses), sorted;
        an absolute pattern matches the traces' absolute paths."""
        pattern = str(pattern)
        if os.path.isabs(pattern):
            names = [[v] for v in self.traces["abspath"]]
        else:
            names = self._relative_names()
        if _GLOB_CHARS.search(pattern):
            rx = glob_regex(pattern)
            hits = [i for i, vs in enumerate(names) if any(rx.match(str(v)) for v in vs)]
        else:
            target = os.path.normpath(pattern)
            hits = [
                i
                for i, vs in enumerate(names)
                if any(v is not None and os.path.normpath(str(v)) == target for v in vs)
            ]
        if not hits:
            example = f"; a stored path: {self.traces['path'].iloc[0]}" if len(self.traces) else ""
            raise TraceError(
                pattern,
                f"{what}: the pattern matches no trace of the batch {self.out} "
                f"({len(self.traces)} trace(s){example})",
            )
        return sorted(str(self.traces["path"].iloc[i]) for i in hits)

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


def _equals(column: pd.Series, value, name: str) -> pd.Series:
    """Which cells of ``column`` equal ``value``: numerically for a numeric column (a
    label of digits is int64, read back as float64 where some rows have none), else
    as text."""
    if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise OptionError(
                "conditions",
                None,
                f"{name}={value}: {name} holds numbers, and {value!r} is not one",
            ) from None
        return (column.astype("float64") == number).fillna(False).astype(bool)
    text = column.map(lambda v: "" if v is None or v is pd.NA else str(v))
    return text == str(value)


def _matched_nothing(name: str, value, column: pd.Series) -> str:
    """The reason of a ``--where`` condition that leaves no trace: the values there are."""
    values = []
    for v in column.dropna().unique():
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        values.append(str(v))
    values = sorted(set(values), key=lambda v: (len(v), v))
    shown = ", ".join(values[:10]) + (f" ... ({len(values)} values)" if len(values) > 10 else "")
    return f"{name}={value} matches no trace (of {len(column)}); {name} has " + (
        shown if values else "no value"
    )


def _strip_path(error: str, path: str) -> str:
    prefix = f"{path}: "
    return error[len(prefix) :] if error.startswith(prefix) else error


def _value(v):
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
        from .topology import Topology

        self.row = row
        self.dataset = dataset
        lost = json.loads(row["lost_events_by_cpu"] or "{}")
        # the dataset's columns (their names are those of every earlier version)
        self.meta = TraceMeta(
            path=row["path"],
            format=row["format"],
            cpus=int(row["cpus"]),
            clock=_value(row["clock"]),
            kernel=_value(row["kernel"]),
            first_ts_ns=_value(row["first_ts_ns"]),
            last_ts_ns=_value(row["last_ts_ns"]),
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
        from .detect import thresholds as resolve

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
        """The trace's :func:`schedwake.metrics.trace_metrics`, from its row."""
        from .metrics import CATALOGUE

        keys = {m.key for m in CATALOGUE.values()} | {"duration_s"}
        tm = {k: _value(self.row.get(k)) for k in keys if k != "busy_share"}
        busy = {}
        for c in range(self.meta.ncpus):
            v = _value(self.row.get(f"busy_share_cpu{c}"))
            if v is not None:
                busy[str(c)] = v
        tm["busy_share"] = busy
        try:
            bench = json.loads(_value(self.row.get("bench")) or "{}")
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
            tm.update({n: _value(self.row.get(n)) for n in bench})
            tm["bench"] = bench
        return tm

    def samples(self, window_s=None, thresholds=None, metrics=None) -> pd.DataFrame:
        """The samples :func:`schedwake.metrics.metric_samples` gave for this trace:
        per-trace from its row, per-window from windows.parquet (TraceError if the
        batch did not store windows of ``window_s``)."""
        from .metrics import SAMPLE_COLUMNS, _select, trace_samples

        self._check_thresholds(thresholds)
        if window_s is None:
            return trace_samples(self.metrics(), self.path, self.meta.ncpus, metrics)
        keep = _select(metrics)
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
        from .detect import Finding

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
