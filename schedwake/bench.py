"""The benchmark's own results, read from the files beside a trace.

A trace says what the scheduler did; the workload that ran while it was recorded says
what that cost (dbench's MB/s, fio's IOPS). These results join the metric vocabulary
as ``bench_*`` metrics (:func:`schedwake.metrics.trace_metrics`), so that ``analyze``,
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
only used when recognised, never refused.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .compressed import open_regular, read_bounded
from .errors import TraceError
from .topology import trace_stem

#: The prefix of every benchmark metric's name.
PREFIX = "bench_"
DIRECTIONS = ("higher", "lower")
#: fio's I/O directions, in the order their metrics are listed.
FIO_DIRECTIONS = ("read", "write", "trim")
#: The fio clat percentile reported (fio's key in ``clat_ns.percentile``).
FIO_PERCENTILE = "99.000000"
#: The largest results file read (fio's json+ output of a long run stays far below).
MAX_BYTES = 64 << 20

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


def own(trace_path, suffix: str) -> list[Path]:
    """The trace's own side files of ``suffix``: ``TRACE`` + suffix, then its name
    without extensions + suffix (``run8.dat.fio.json``, ``run8.fio.json``)."""
    p = Path(str(trace_path))
    return list(dict.fromkeys([p.with_name(p.name + suffix), p.with_name(trace_stem(p) + suffix)]))


def candidates(trace_path) -> list[tuple[str, Path]]:
    """The (kind, file) pairs looked for beside ``trace_path``, in the order they are
    read (kind: ``bench``, ``fio``, ``dbench`` or ``cmd``)."""
    p = Path(str(trace_path))
    out: list[tuple[str, Path]] = [("bench", f) for f in own(p, ".bench.json")]
    out += [("fio", f) for f in own(p, ".fio.json")] + [("fio", p.with_name("fio.json"))]
    out += [("dbench", f) for f in own(p, ".dbench.txt")]
    out += [("dbench", p.with_name("dbench.txt"))]
    out.append(("cmd", p.with_name(p.name + ".cmd.txt")))
    return out


def read_beside(trace_path) -> list[BenchResult]:
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


def _number(v) -> float | None:
    """A finite JSON number as a float, else None (booleans are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _json(text: str, path: Path, what: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TraceError(path, f"not {what}: {' '.join(str(exc).split())}") from None


def parse_sidecar(text: str, path) -> list[BenchResult]:
    """A ``TRACE.bench.json``: ``{NAME: {"value": N, "direction": "higher"|"lower",
    "unit": TEXT}}`` (``unit`` optional). NAME (letters, digits, ``_``) gets the
    ``bench_`` prefix unless it has it."""
    path = Path(str(path))
    doc = _json(text, path, "JSON")
    if not isinstance(doc, dict) or not doc:
        raise TraceError(path, 'must be a JSON object {"NAME": {"value": N, "direction": ...}}')
    out = []
    for name, spec in doc.items():
        if not _NAME.fullmatch(name):
            raise TraceError(path, f"result name {name!r}: letters, digits and _ only")
        full = name if is_bench(name) else PREFIX + name
        if not isinstance(spec, dict):
            raise TraceError(
                path,
                f'{name!r} must be {{"value": N, "direction": "higher" or "lower"}} '
                f"(a bare value has no direction), not {json.dumps(spec)[:40]}",
            )
        bad = set(spec) - {"value", "direction", "unit"}
        if bad:
            raise TraceError(
                path, f"{name!r}: unknown key(s) {', '.join(sorted(bad))} (value, direction, unit)"
            )
        value = _number(spec.get("value"))
        if value is None:
            raise TraceError(path, f"{name!r}: value must be a finite number")
        direction = spec.get("direction")
        if direction not in DIRECTIONS:
            raise TraceError(path, f'{name!r}: direction must be "higher" or "lower" (is better)')
        unit = spec.get("unit", "")
        if not isinstance(unit, str):
            raise TraceError(path, f"{name!r}: unit must be text")
        out.append(BenchResult(full, value, unit, direction, str(path)))
    return out


def parse_fio(text: str, path) -> list[BenchResult]:
    """fio's ``--output-format=json`` (or ``json+``; text before the JSON, such as fio's
    warnings, is skipped). For each I/O direction that moved data, summed over the jobs:
    ``bench_fio_<dir>_iops`` (/s) and ``bench_fio_<dir>_bw_mib_s`` (fio's ``bw`` is
    KiB/s), and the worst job's 99th percentile completion latency
    ``bench_fio_<dir>_clat_p99_us`` when fio reported percentiles."""
    path = Path(str(path))
    start = re.search(r"^\{", text, re.MULTILINE)
    doc = _json(text[start.start() :] if start else text, path, "fio JSON output")
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if jobs is None and isinstance(doc, dict) and isinstance(doc.get("client_stats"), list):
        # fio --client: each server's jobs, then their sum ("All clients"), left out
        jobs = [j for j in doc["client_stats"] if j.get("jobname") != "All clients"]
    if not isinstance(jobs, list) or not jobs or not all(isinstance(j, dict) for j in jobs):
        raise TraceError(path, "not fio JSON output: no jobs list (fio --output-format=json)")
    out = []
    for d in FIO_DIRECTIONS:
        parts = [j[d] for j in jobs if isinstance(j.get(d), dict)]
        moved = [p for p in parts if (_number(p.get("io_bytes")) or 0) > 0]
        if not moved:
            continue
        iops = [_number(p.get("iops")) for p in moved]
        bw = [_number(p.get("bw")) for p in moved]
        if any(v is None for v in iops + bw):
            raise TraceError(path, f"fio JSON: a job's {d} iops or bw is not a number")
        src = str(path)
        iops_sum = sum(iops)  # type: ignore[arg-type]
        out.append(BenchResult(f"bench_fio_{d}_iops", iops_sum, "IO/s", "higher", src))
        mib = sum(bw) / 1024.0  # type: ignore[arg-type]
        out.append(BenchResult(f"bench_fio_{d}_bw_mib_s", mib, "MiB/s", "higher", src))
        p99 = [_clat_p99_us(p) for p in moved]
        if p99 and all(v is not None for v in p99):
            worst = max(v for v in p99 if v is not None)
            out.append(BenchResult(f"bench_fio_{d}_clat_p99_us", worst, "us", "lower", src))
    if not out:
        raise TraceError(path, "fio JSON: no job read or wrote any data")
    return out


def _clat_p99_us(part: dict) -> float | None:
    """A job direction's 99th percentile completion latency (us): ``clat_ns`` (fio 3),
    else ``clat`` in us (fio 2); None when fio reported no percentiles."""
    for key, to_us in (("clat_ns", 1e-3), ("clat", 1.0)):
        if isinstance(part.get(key), dict):
            v = _number((part[key].get("percentile") or {}).get(FIO_PERCENTILE))
            return None if v is None else v * to_us
    return None


def parse_dbench(text: str, path) -> list[BenchResult]:
    """dbench's output: its last ``Throughput N MB/sec  C clients  P procs
    max_latency=L ms`` line gives ``bench_dbench_throughput_mb_s`` (MB/s, higher is
    better) and ``bench_dbench_max_latency_ms`` (lower is better)."""
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
    try:
        mb = float(m["mb"])
        lat = None if m["lat"] is None else float(m["lat"])
    except ValueError:
        raise TraceError(path, f"dbench line {m.group(0).strip()!r}: not a number") from None
    src = str(path)
    out = [BenchResult("bench_dbench_throughput_mb_s", mb, "MB/s", "higher", src)]
    if lat is not None:
        out.append(BenchResult("bench_dbench_max_latency_ms", lat, "ms", "lower", src))
    return out


def parse_output(text: str, path) -> list[BenchResult]:
    """A command's output (``schedwake record -- CMD``): its fio JSON or dbench results
    when it is recognisably one of them, else nothing."""
    path = Path(str(path))
    if re.search(r'^\{\s*$|"fio version"', text, re.MULTILINE) and '"jobs"' in text:
        try:
            return parse_fio(text, path)
        except TraceError:
            pass
    try:
        return _dbench(text, path) or []
    except TraceError:
        return []


def metric_values(results: list[BenchResult]) -> dict:
    """The results as :func:`schedwake.metrics.trace_metrics` holds them: each
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
