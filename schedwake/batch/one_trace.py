"""Analysing one trace of a batch: the Dask task (:func:`analyse_one`), which reads the
trace, analyses it and gives its traces.parquet row, its findings and its window samples
(:class:`TraceResult`); a trace that cannot be analysed is an error row, never a raise.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import OptionError, TraceError
from ..version import __version__
from .inputs import Options
from .layout import FINDINGS_SCHEMA, WINDOWS_SCHEMA


@dataclass
class TraceResult:
    """What analysing one trace gives: its traces.parquet row, and its findings and
    window samples as Arrow tables."""

    row: dict
    findings: pa.Table
    windows: pa.Table


def _provenance(abspath: str, options: Options, stat) -> dict:
    """The columns of every row, analysed or not, that a rerun compares to skip what is
    done: the file read, its size and mtime, the options, the version and when."""
    return {
        "abspath": abspath,
        "size": None if stat is None else stat.st_size,
        "mtime_ns": None if stat is None else stat.st_mtime_ns,
        "options_key": options.key(),
        "schedwake_version": __version__,
        "analysed_at": datetime.now(UTC),
    }


def error_result(path: str, abspath: str, error: str, options: Options, stat=None) -> TraceResult:
    """The result of a trace that could not be analysed: its row with status ``error``
    and the reason, no findings, no windows."""
    row = {"path": path, "status": "error", "error": error, **_provenance(abspath, options, stat)}
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
    from ..analysis import analyze
    from ..analysis.metrics import metric_samples
    from ..model import MODEL_EVENTS
    from ..summary import summary
    from ..trace import load

    started = time.perf_counter()
    stat = _stat(abspath)
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
        _name_topology(topo, topology_file, topology_abspath, abspath, path)
        _ = trace.bench  # (the files beside the trace are read from where it is, abspath)
        trace.meta = replace(trace.meta, path=path)
        windows = _windows(path, options, trace.duration_ns)
        analysis = analyze(trace, dict(options.thresholds))
        samples = [
            metric_samples(trace, w, dict(options.thresholds)).assign(window_s=w)
            for w in windows
            if trace.duration_ns > 0
        ]
        # the trace's facts (the JSON's "trace" without the explained waits: not stored)
        facts = summary(trace)
    except Exception as exc:  # noqa: BLE001 (a bad trace, or a bug: an error row)
        return _failed(exc, path, abspath, options, stat)
    done = (analysis, facts, trace.topology, windows, samples)
    return _result(path, abspath, options, stat, started, *done)


def analyse_in_parts(
    path: str,
    abspath: str,
    options: Options,
    parts: int,
    client: Any = None,
    progress: Callable[[float], None] | None = None,
) -> TraceResult:
    """:func:`analyse_one` of a trace too big for one worker: cut into ``parts`` time
    parts analysed on the Dask ``client``'s workers (None: here, one after the other),
    the client joining them (:func:`schedwake.analysis.partitioned.analyze_parts`, the
    windows' samples too): the same row, findings and windows as a whole analysis.
    ``progress`` gets the share done."""
    from .. import ingest
    from ..analysis.metrics import bench_samples, window_samples
    from ..analysis.partitioned import analyze_parts
    from ..model import MODEL_EVENTS
    from ..partition import plan

    started = time.perf_counter()
    stat = _stat(abspath)
    try:
        topology_file, topology_abspath = options.topology_for(path, abspath)
        read = ingest.ReadOptions(
            events=list(MODEL_EVENTS),
            input_format=options.input_format,
            reader=options.reader,
            jobs=options.jobs,
        )
        the_plan = plan(
            abspath,
            parts,
            read,
            topology_file=topology_abspath,
            llc=() if topology_abspath else options.llc,
            client=client,
            progress=None if progress is None else (lambda f: progress(0.4 * f)),
        )
        topo = the_plan.topology
        _name_topology(topo, topology_file, topology_abspath, abspath, path)
        meta = the_plan.meta
        first, last = int(meta.first_ts_ns or 0), int(meta.last_ts_ns or 0)
        windows = _windows(path, options, last - first)
        thresholds = dict(options.thresholds)
        analysis = analyze_parts(
            the_plan,
            thresholds,
            windows=windows if last > first else (),
            progress=None if progress is None else (lambda f: progress(0.4 + 0.6 * f)),
        )
        facts = dict(analysis.facts, path=path)
        facts["warnings"] = [_as_given(w, abspath, path) for w in facts["warnings"]]
        analysis.caveats = [_as_given(c, abspath, path) for c in analysis.caveats]
        samples = [
            window_samples(
                wm,
                path,
                meta.ncpus,
                first,
                bench_samples(analysis.metrics, path, (last - first) / 1e9),
            ).assign(window_s=w)
            for w, wm in analysis.window_metrics.items()
        ]
    except Exception as exc:  # noqa: BLE001 (a bad trace, or a bug: an error row)
        return _failed(exc, path, abspath, options, stat)
    return _result(path, abspath, options, stat, started, analysis, facts, topo, windows, samples)


def _stat(abspath: str) -> os.stat_result | None:
    try:
        return os.stat(abspath)
    except OSError:
        return None


def _name_topology(topo, topology_file, topology_abspath, abspath: str, path: str) -> None:
    """The topology's source as the user named it: the ``--topology`` file as given, or
    the file beside the trace by the trace's path as given."""
    if topology_abspath is not None and topo.source == topology_abspath:
        topo.source = str(topology_file)
    else:
        topo.source = _as_given(topo.source, abspath, path)


def _windows(path: str, options: Options, duration_ns: int) -> list[float]:
    """The window lengths of the trace's samples: its default, then the batch's others."""
    from ..compare import default_window

    windows = [default_window([duration_ns / 1e9])]
    windows += [w for w in options.windows if not any(math.isclose(w, x) for x in windows)]
    for w in windows:
        _check_windows_of(path, w, duration_ns / 1e9)
    return windows


def _failed(
    exc: Exception, path: str, abspath: str, options: Options, stat: os.stat_result | None
) -> TraceResult:
    """The error row of a trace whose analysis raised ``exc``."""
    if isinstance(exc, TraceError):
        return error_result(path, abspath, _as_given(str(exc), abspath, path), options, stat)
    if isinstance(exc, MemoryError):
        return error_result(path, abspath, f"{path}: out of memory", options, stat)
    if type(exc).__name__ == "KilledWorker":  # (distributed's: a part's worker died)
        text = (
            f"{path}: a Dask worker analysing a part of it died, also when retried (out "
            "of memory, or killed); try more --partitions or workers with more memory"
        )
        return error_result(path, abspath, text, options, stat)
    # a bug: the other traces go on, the batch exits 2
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return error_result(
        path, abspath, f"{path}: internal error (please report): {text}", options, stat
    )


def _result(
    path: str,
    abspath: str,
    options: Options,
    stat: os.stat_result | None,
    started: float,
    analysis: Any,
    facts: dict,
    topology: Any,
    windows: list[float],
    samples: list[pd.DataFrame],
) -> TraceResult:
    """The :class:`TraceResult` of an analysed trace: its row, findings and windows."""
    from ..analysis import topology_facts
    from ..jsonout import dumps

    topo_facts = topology_facts(topology)
    comp = facts.get("completeness")
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
        "complete": None if comp is None else comp["complete"],
        "switch_chain_breaks": None if comp is None else comp["breaks"]["switch_chain"],
        "unknown_s": None
        if comp is None
        else round(sum(c["unknown_s"] for c in comp["cpus"].values()), 9),
        "topology": topology.describe(),
        "topology_source": topo_facts["source"],
        "topology_from": topo_facts["from"],
        "topology_llc": topo_facts["llc"],
        "caveats": list(analysis.caveats),
        "warnings": facts["warnings"],
        "findings": len(analysis.findings),
        "detectors": list(dict.fromkeys(f.detector for f in analysis.findings)),
        **metrics,
        "event_counts": dumps(facts["events"], indent=None),
        "lost_events_by_cpu": dumps(facts["lost_events"], indent=None),
        "completeness": None if comp is None else dumps(comp, indent=None),
        "timestamps": facts["timestamps"],
        "topology_json": dumps(
            {**topology.to_dict(), "source": topology.source, "note": topology.note},
            indent=None,
        ),
        "thresholds": dumps(analysis.thresholds, indent=None, sort_keys=True),
        "bench": dumps(bench, indent=None, sort_keys=True) if bench else None,
        "windows_s": windows,
        **_provenance(abspath, options, stat),
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
                "metrics": dumps(f.metrics, indent=None),
                "top": dumps(f.top, indent=None),
                "evidence": list(f.evidence),
                "evidence_events": dumps(f.evidence_events, indent=None),
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
    from ..compare import check_window

    try:
        check_window(window_s, [duration_s], "--window", one_window_ok=True)
    except OptionError as exc:
        raise TraceError(path, f"--window {exc.value}: {exc.problem}") from None
