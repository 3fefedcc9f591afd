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
from .layout import TRACE_TYPES, TRACES_FILE


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


#: The longest ``label_from`` expression, and the seconds its searches of every path of a
#: batch may take together (docs/batch.md): Python's regular expressions backtrack, so
#: ``(a+)+$`` against 40 characters would run for hours; the searches run in a child
#: process that is stopped at the limit, and the option refused in one line.
MAX_LABEL_FROM = 1000
LABEL_FROM_SECONDS = 10.0

# the child's program: only the standard library (no import of schedwake), paths in and
# groups out as JSON on its standard input and output
_SEARCH = """
import json, re, sys
d = json.load(sys.stdin)
rx = re.compile(d["rx"])
names = list(rx.groupindex)
out = []
for p in d["paths"]:
    m = rx.search(p)
    out.append(None if m is None else [m.group(n) for n in names])
json.dump(out, sys.stdout)
"""


def _search_paths(rx: re.Pattern, paths: Sequence[str], seconds: float) -> list:
    """``rx.search`` of each path, as the list of its named groups' values (None where
    it does not match), in a child process stopped after ``seconds``: OptionError then."""
    import subprocess
    import sys

    if not paths:
        return []
    doc = json.dumps({"rx": rx.pattern, "paths": [str(p) for p in paths]})
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _SEARCH],
            input=doc,
            capture_output=True,
            text=True,
            timeout=seconds,
        )
    except subprocess.TimeoutExpired:
        raise OptionError(
            "label_from",
            None,
            f"searching {len(paths)} path(s) took more than {seconds:g} s: the expression "
            "backtracks (a group repeated inside a repetition, such as (a+)+, or "
            "alternatives that overlap); write it without nested repetition",
        ) from None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1][:120]
        raise OptionError("label_from", None, f"the search failed ({why})")
    return json.loads(proc.stdout)


def label_regex(label_from: str | None) -> re.Pattern | None:
    """The ``--label-from`` expression compiled (None when not given), or an OptionError
    when it is too long or not a regular expression."""
    if not label_from:
        return None
    if len(label_from) > MAX_LABEL_FROM:
        raise OptionError(
            "label_from", None, f"the expression is longer than {MAX_LABEL_FROM} characters"
        )
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
    clash = sorted(set(rx.groupindex) & (set(TRACE_TYPES) | {"duration_s"}))
    if clash:
        raise OptionError(
            "label_from", None, f"group name(s) {', '.join(clash)} are columns of {TRACES_FILE}"
        )
    return rx


def label_columns(
    paths: Sequence[str], label_from: str | None, seconds: float = LABEL_FROM_SECONDS
) -> dict[str, list]:
    """``{group: [value per path]}`` from the named groups of ``label_from`` searched in
    each path (None where it does not match); a group whose every value is an integer
    becomes an integer column. The searches take ``seconds`` at most
    (:data:`LABEL_FROM_SECONDS`), else OptionError."""
    rx = label_regex(label_from)
    if rx is None:
        return {}
    matches = _search_paths(rx, paths, seconds)
    cols: dict[str, list] = {}
    for k, name in enumerate(rx.groupindex):
        values = [m[k] if m else None for m in matches]
        if all(v is None or re.fullmatch(r"[+-]?\d{1,18}", v) for v in values) and any(
            v is not None for v in values
        ):
            cols[name] = [None if v is None else int(v) for v in values]
        else:
            cols[name] = values
    return cols


def read_topology_map(topologies) -> tuple[tuple[str, str, str], ...]:
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


def cells_equal(column: pd.Series, value, name: str) -> pd.Series:
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


def matched_nothing(name: str, value, column: pd.Series) -> str:
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
