"""The benchmark's own results, read from the files beside a trace.

A trace says what the scheduler did; the workload that ran while it was recorded says
what that cost (dbench's MB/s, fio's IOPS). These results join the metric vocabulary
as ``bench_*`` metrics (:func:`schedwake.analysis.metrics.trace_metrics`), so that ``analyze``,
``compare``, ``gate`` and ``batch`` put the benchmark's numbers beside the scheduler's.

For a trace ``DIR/run8.dat`` the files read are, in this order (a name given by an
earlier file is not taken from a later one):

1. ``run8.bench.json`` (or ``run8.dat.bench.json``): the results by name,
   ``{"throughput": {"value": 416.7, "direction": "higher", "unit": "MB/s"}}``.
   ``direction`` (``higher`` or ``lower``: which is better) is required: a bare number
   is refused, since a guessed direction would turn a regression into an improvement;
2. ``run8.fio.json`` (``run8.dat.fio.json``), else ``DIR/fio.json``: fio's
   ``--output-format=json`` (:func:`parse_fio`);
3. ``run8.dbench.txt`` (``run8.dat.dbench.txt``), else ``DIR/dbench.txt``: dbench's
   output (:func:`parse_dbench`);
4. ``run8.dat.cmd.txt``: the output of the command ``schedwake record -- CMD`` ran,
   parsed as fio JSON or dbench output when it is recognisably one of them.

A file that is there but cannot be used (not JSON, not fio's layout, no dbench
``Throughput`` line, a result without a direction) raises a
:class:`~schedwake.errors.TraceError` naming that file; the command's output of 4. is
only used when recognised, and then refused only for a value that cannot be (a negative
or infinite throughput). Every value passes :mod:`schedwake.sidevalues`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import sidevalues
from .compressed import open_regular, read_bounded
from .errors import TraceError
from .topology import trace_stem

if TYPE_CHECKING:
    from _typeshed import StrPath

#: The prefix of every benchmark metric's name.
PREFIX = "bench_"
DIRECTIONS = ("higher", "lower")
#: fio's I/O directions, in the order their metrics are listed.
FIO_DIRECTIONS = ("read", "write", "trim")
#: The fio clat percentile reported (fio's key in ``clat_ns.percentile``).
FIO_PERCENTILE = "99.000000"
#: The largest results file read (fio's json+ output of a long run stays far below).
MAX_BYTES = 64 << 20
#: The longest result name and unit of a ``TRACE.bench.json``.
MAX_NAME = 64
MAX_UNIT = 64

_NAME = re.compile(r"[A-Za-z0-9_]+")
# dbench's summary: "Throughput 253.54 MB/sec  2 clients  2 procs  max_latency=10.837 ms";
# " (sync open)" / " (sync dirs)" may follow MB/sec, dbench 3 prints "N procs" only and
# no max_latency
_DBENCH = re.compile(
    r"^\s*Throughput\s+(?P<mb>[0-9.eE+-]+)\s+MB/sec\b[^\n]*?"
    r"(?:max_latency=(?P<lat>[0-9.eE+-]+)\s*ms)?[ \t]*$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class BenchResult:
    """One benchmark result of a trace: ``name`` (with its ``bench_`` prefix), ``value``
    in ``unit``, ``direction`` (``higher``/``lower`` is better) and the file it came
    from (``source``)."""

    name: str
    value: float
    unit: str
    direction: str
    source: str


def is_bench(name: str) -> bool:
    """True for a benchmark metric's name (``bench_...``)."""
    return name.startswith(PREFIX) and len(name) > len(PREFIX)


def own(trace_path: StrPath, suffix: str) -> list[Path]:
    """The trace's own side files of ``suffix``: ``TRACE`` + suffix, then its name
    without extensions + suffix (``run8.dat.fio.json``, ``run8.fio.json``)."""
    p = Path(str(trace_path))
    return list(dict.fromkeys([p.with_name(p.name + suffix), p.with_name(trace_stem(p) + suffix)]))


def candidates(trace_path: StrPath) -> list[tuple[str, Path]]:
    """The (kind, file) pairs looked for beside ``trace_path``, in the order they are
    read (kind: ``bench``, ``fio``, ``dbench`` or ``cmd``)."""
    p = Path(str(trace_path))
    out: list[tuple[str, Path]] = [("bench", f) for f in own(p, ".bench.json")]
    out += [("fio", f) for f in own(p, ".fio.json")] + [("fio", p.with_name("fio.json"))]
    out += [("dbench", f) for f in own(p, ".dbench.txt")]
    out += [("dbench", p.with_name("dbench.txt"))]
    out.append(("cmd", p.with_name(p.name + ".cmd.txt")))
    return out


def read_beside(trace_path: StrPath | None) -> list[BenchResult]:
    """The benchmark results in the files beside ``trace_path`` (see the module's
    docstring), sorted by name; empty when there are none (or no path: stdin).
    Raises TraceError naming a file that is there but unusable."""
    if not trace_path or str(trace_path) == "-":
        return []
    found: dict[str, BenchResult] = {}
    kinds_read: set[str] = set()
    for kind, path in candidates(trace_path):
        if kind in ("fio", "dbench") and kind in kinds_read:
            continue  # the trace's own file, not the directory's
        if not path.exists():  # (a device or FIFO there is refused, not passed over)
            continue
        text = read_side_file(path)
        if kind == "bench":
            results = parse_sidecar(text, path)
        elif kind == "fio":
            results = parse_fio(text, path)
        elif kind == "dbench":
            results = parse_dbench(text, path)
        else:
            results = parse_output(text, path)
        kinds_read.add(kind)
        for r in results:
            found.setdefault(r.name, r)
    return [found[n] for n in sorted(found)]


def read_side_file(path: Path, max_bytes: int = MAX_BYTES, what: str = "a results file") -> str:
    """A side file's text (TraceError naming it when it cannot be read or is larger
    than ``max_bytes``: then it is not ``what``)."""
    try:
        # a regular file only, opened non-blocking (a link to /proc/kmsg or a FIFO is
        # refused or fails, never hangs), and never more than max_bytes read of it
        with open_regular(path, what.removeprefix("a ")) as f:
            if os.fstat(f.fileno()).st_size > max_bytes:
                raise TraceError(path, f"is larger than {max_bytes >> 20} MB: not {what}")
            data = read_bounded(f, max_bytes + 1, path)
    except OSError as exc:
        raise TraceError(path, f"cannot read it ({exc.strerror})") from None
    if len(data) > max_bytes:
        raise TraceError(path, f"is larger than {max_bytes >> 20} MB: not {what}")
    return data.decode("utf-8", errors="replace")


def _json(text: str, path: Path, what: str) -> Any:  # (a JSON value)
    return sidevalues.load_json(text, path, what)


def parse_sidecar(text: str, path: StrPath) -> list[BenchResult]:
    """A ``TRACE.bench.json``: ``{NAME: {"value": N, "direction": "higher"|"lower",
    "unit": TEXT}}`` (``unit`` optional). NAME (letters, digits, ``_``) gets the
    ``bench_`` prefix unless it has it. Values pass :mod:`schedwake.sidevalues`: a key
    given twice, a value that is not a finite number of at most 1e18 in size (it may be
    negative: a result's meaning is the file's), a unit with a control character or
    longer than 64 characters are refused."""
    path = Path(str(path))
    doc = _json(text, path, "JSON")
    if not isinstance(doc, dict) or not doc:
        raise TraceError(path, 'must be a JSON object {"NAME": {"value": N, "direction": ...}}')
    out = []
    for name, spec in doc.items():
        if not _NAME.fullmatch(name) or len(name) > MAX_NAME:
            raise TraceError(
                path,
                f"result name {sidevalues.shown(name)!r}: letters, digits and _ only, "
                f"at most {MAX_NAME}",
            )
        full = name if is_bench(name) else PREFIX + name
        if not isinstance(spec, dict):
            raise TraceError(
                path,
                f'{name!r} must be {{"value": N, "direction": "higher" or "lower"}} '
                f"(a bare value has no direction), not {sidevalues.shown(json.dumps(spec))}",
            )
        bad = set(spec) - {"value", "direction", "unit"}
        if bad:
            raise TraceError(
                path,
                f"{name!r}: unknown key(s) "
                f"{sidevalues.shown(', '.join(sorted(bad)), 80)} (value, direction, unit)",
            )
        if "value" not in spec:
            raise TraceError(path, f"{name!r}: value must be a finite number")
        value = sidevalues.number(path, f"{name}.value", spec["value"], negative=True)
        direction = spec.get("direction")
        if direction not in DIRECTIONS:
            raise TraceError(path, f'{name!r}: direction must be "higher" or "lower" (is better)')
        unit = sidevalues.text(path, f"{name}.unit", spec.get("unit", ""), most=MAX_UNIT)
        out.append(BenchResult(full, value, unit, direction, str(path)))
    return out


def parse_fio(text: str, path: StrPath) -> list[BenchResult]:
    """fio's ``--output-format=json`` (or ``json+``; text before the JSON, such as fio's
    warnings, is skipped). For each I/O direction that moved data, summed over the jobs:
    ``bench_fio_<dir>_iops`` (/s) and ``bench_fio_<dir>_bw_mib_s`` (fio's ``bw`` is
    KiB/s), and the worst job's 99th percentile completion latency
    ``bench_fio_<dir>_clat_p99_us`` when fio reported percentiles. Every value read
    must be a finite number from 0 to 1e18 (so must the sums): a negative IOPS, a
    bandwidth of 1e400, a job that is not an object refuse the file, naming the key."""
    path = Path(str(path))
    start = re.search(r"^\{", text, re.MULTILINE)
    doc = _json(text[start.start() :] if start else text, path, "fio JSON output")
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    key = "jobs"
    if jobs is None and isinstance(doc, dict) and "client_stats" in doc:
        # fio --client: each server's jobs, then their sum ("All clients"), left out
        stats, key = doc["client_stats"], "client_stats"
        if not isinstance(stats, list) or not stats:
            raise TraceError(path, "fio JSON: client_stats must be a list of jobs")
        for i, j in enumerate(stats):
            if not isinstance(j, dict):
                raise TraceError(path, f"fio JSON: client_stats[{i}] is not a job (an object)")
        jobs = [j for j in stats if j.get("jobname") != "All clients"]
    if not isinstance(jobs, list) or not jobs:
        raise TraceError(path, "not fio JSON output: no jobs list (fio --output-format=json)")
    for i, j in enumerate(jobs):
        if not isinstance(j, dict):
            raise TraceError(path, f"fio JSON: {key}[{i}] is not a job (an object)")
    out = []
    src = str(path)
    for d in FIO_DIRECTIONS:
        moved = []
        for i, j in enumerate(jobs):
            part = j.get(d)
            if part is None:
                continue
            where = f"{key}[{i}].{d}"
            if not isinstance(part, dict):
                raise TraceError(path, f"fio JSON: {where} is not an object")
            io = part.get("io_bytes", 0)
            if sidevalues.number(path, f"{where}.io_bytes", io) > 0:
                moved.append((where, part))
        if not moved:
            continue
        iops = [sidevalues.number(path, f"{w}.iops", p.get("iops")) for w, p in moved]
        bw = [sidevalues.number(path, f"{w}.bw", p.get("bw")) for w, p in moved]
        iops_sum = sidevalues.total(path, f"the jobs' {d} iops", iops)
        out.append(BenchResult(f"bench_fio_{d}_iops", iops_sum, "IO/s", "higher", src))
        mib = sidevalues.total(path, f"the jobs' {d} bw", bw) / 1024.0
        out.append(BenchResult(f"bench_fio_{d}_bw_mib_s", mib, "MiB/s", "higher", src))
        p99 = [_clat_p99_us(path, w, p) for w, p in moved]
        if p99 and all(v is not None for v in p99):
            worst = max(v for v in p99 if v is not None)
            out.append(BenchResult(f"bench_fio_{d}_clat_p99_us", worst, "us", "lower", src))
    if not out:
        raise TraceError(path, "fio JSON: no job read or wrote any data")
    return out


def _clat_p99_us(path: Path, where: str, part: dict) -> float | None:
    """A job direction's 99th percentile completion latency (us): ``clat_ns`` (fio 3),
    else ``clat`` in us (fio 2); None when fio reported no percentiles."""
    for key, to_us in (("clat_ns", 1e-3), ("clat", 1.0)):
        if key not in part:
            continue
        lat = part[key]
        if not isinstance(lat, dict):
            raise TraceError(path, f"fio JSON: {where}.{key} is not an object")
        pct = lat.get("percentile")
        if pct is None:
            return None
        if not isinstance(pct, dict):
            raise TraceError(path, f"fio JSON: {where}.{key}.percentile is not an object")
        if FIO_PERCENTILE not in pct:
            return None
        at = f"{where}.{key}.percentile.{FIO_PERCENTILE}"
        v = sidevalues.number(path, at, pct[FIO_PERCENTILE])
        return v * to_us
    return None


def parse_dbench(text: str, path: StrPath) -> list[BenchResult]:
    """dbench's output: its last ``Throughput N MB/sec  C clients  P procs
    max_latency=L ms`` line gives ``bench_dbench_throughput_mb_s`` (MB/s, higher is
    better) and ``bench_dbench_max_latency_ms`` (lower is better); each a finite
    number from 0 to 1e18, else the file is refused."""
    path = Path(str(path))
    found = _dbench(text, path)
    if found is None:
        raise TraceError(path, "no dbench 'Throughput N MB/sec' line")
    return found


def _dbench(text: str, path: Path) -> list[BenchResult] | None:
    matches = list(_DBENCH.finditer(text))
    if not matches:
        return None
    m = matches[-1]
    mb = sidevalues.parsed_number(path, "dbench Throughput", m["mb"])
    lat = None
    if m["lat"] is not None:
        lat = sidevalues.parsed_number(path, "dbench max_latency", m["lat"])
    src = str(path)
    out = [BenchResult("bench_dbench_throughput_mb_s", mb, "MB/s", "higher", src)]
    if lat is not None:
        out.append(BenchResult("bench_dbench_max_latency_ms", lat, "ms", "lower", src))
    return out


def parse_output(text: str, path: StrPath) -> list[BenchResult]:
    """A command's output (``schedwake record -- CMD``): its fio JSON or dbench results
    when it is recognisably one of them, else nothing."""
    path = Path(str(path))
    if re.search(r'^\{\s*$|"fio version"', text, re.MULTILINE) and '"jobs"' in text:
        try:
            return parse_fio(text, path)
        except sidevalues.SideValueError:
            raise  # fio's JSON, recognised, with a value that cannot be: refused
        except TraceError:
            pass
    return _dbench(text, path) or []


def metric_values(results: list[BenchResult]) -> dict:
    """The results as :func:`schedwake.analysis.metrics.trace_metrics` holds them: each
    ``bench_*`` name with its value, and ``bench``: name -> unit, direction, source
    (nothing at all without results)."""
    if not results:
        return {}
    out: dict = {r.name: round(r.value, 6) for r in results}
    out["bench"] = {
        r.name: {"unit": r.unit, "direction": r.direction, "source": r.source} for r in results
    }
    return out


__all__ = [
    "BenchResult",
    "read_beside",
    "parse_sidecar",
    "parse_fio",
    "parse_dbench",
    "parse_output",
    "metric_values",
    "is_bench",
    "candidates",
]
