"""A batch's inputs and labels: the traces its arguments name, the options every trace is
analysed with (:class:`Options`, the topology of each trace), the label columns of
``label_from`` and the ``--where`` conditions a dataset is filtered by.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import OptionError, TraceError
from ..paths import expand, match
from ..version import __version__
from .layout import _TRACE_TYPES, TRACES_FILE


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
        an absolute path: the first of :attr:`topology_map` whose pattern names it by
        the rule of :func:`schedwake.paths.match` (an absolute pattern its absolute
        path; a relative one its path as given or relative to the current directory),
        else ``--topology`` (None: the trace's own lookup, a TRACE.topology.json or
        topology.json beside it)."""
        rel = os.path.relpath(abspath)
        for pattern, given, absolute in self.topology_map:
            names = [abspath] if os.path.isabs(pattern) else [path, rel]
            if match(pattern, [names]):
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
    """The trace paths of ``inputs`` (paths, directories, globs: the rule of
    :func:`schedwake.paths.expand`), each once (``./a.dat`` is ``a.dat``: the path is the
    dataset's key), in the order given (a glob's or a directory's traces sorted), and
    the patterns that named none."""
    paths: dict[str, None] = {}
    missing = []
    for item in inputs:
        item = str(item)
        try:
            found = expand(item)
        except TraceError:
            missing.append(item)
            continue
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


def _topology_map(topologies) -> tuple[tuple[str, str, str], ...]:
    """``topologies`` (``{glob: file}`` or ``["GLOB=FILE", ...]``) as
    :attr:`Options.topology_map`, each file read once to refuse a bad one early."""
    from ..topology import Topology

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
