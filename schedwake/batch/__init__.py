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
  (:func:`schedwake.analysis.metrics.metric_samples`) at each trace's default window length
  and at the lengths asked for with ``windows``;
* ``OUT/batch.json``: the options the analyses were made with.

A trace that cannot be read is an ``error`` row and never stops the others. Running
again into the same ``OUT`` keeps the rows of traces analysed before with the same
options (same path, size and modification time) and analyses only the rest
(``force=True``: everything); rows of traces not named this time stay.

:class:`BatchDataset` reads a dataset back: ``schedwake compare --from-batch`` and
``schedwake gate --from-batch`` judge from it, without reading the traces again, and
give the table and the verdict the same command over the traces gives.

A module a concern: :mod:`.inputs` (the traces the arguments name, the options and each
trace's topology, labels, ``--where``), :mod:`.one_trace` (the Dask task: one trace
analysed), :mod:`.run` (:func:`batch`: Dask, progress, what an earlier run kept),
:mod:`.writer` and :mod:`.reader` (the dataset written once and read back), and
:mod:`.layout` (its files and columns). This package re-exports their public names.
"""

from __future__ import annotations

from ..paths import TRACE_SUFFIXES
from .inputs import Options, expand_inputs, label_columns
from .layout import (
    FINDINGS_FILE,
    FINDINGS_SCHEMA,
    MANIFEST_FILE,
    TRACES_FILE,
    WINDOWS_FILE,
    WINDOWS_SCHEMA,
)
from .one_trace import TraceResult, analyse_one
from .reader import DATASET_COMPATIBLE_SINCE, AnalysedTrace, BatchDataset
from .run import MAX_WORKERS, BatchResult, batch, local_cluster

__all__ = [
    "batch",
    "BatchResult",
    "BatchDataset",
    "AnalysedTrace",
    "Options",
    "analyse_one",
    "expand_inputs",
    "label_columns",
    # (the names below are the modules' own, re-exported as schedwake.batch had them)
    "local_cluster",
    "TraceResult",
    "TRACE_SUFFIXES",
    "MAX_WORKERS",
    "DATASET_COMPATIBLE_SINCE",
    "TRACES_FILE",
    "FINDINGS_FILE",
    "WINDOWS_FILE",
    "MANIFEST_FILE",
    "FINDINGS_SCHEMA",
    "WINDOWS_SCHEMA",
]
