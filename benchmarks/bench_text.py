#!/usr/bin/env python3
"""Benchmark the text readers: lines per second and peak memory, side by side with
``trace-cmd report`` producing the same kind of text, in one run.

Inputs are made at run time from the real recordings in ``sample_traces/``:

* raw ftrace text: ``conformance/conf.ftrace.txt.gz`` (a tracefs ``trace`` file)
  repeated until it has ``--lines`` lines, each copy's timestamps shifted so the big
  file stays in time order;
* ``trace-cmd report`` text: ``trace-cmd report -N`` of ``--dat``, repeated the same way.

Each measurement runs in a fresh child process (peak RSS from ``wait4``). Results are
printed and, with ``--write``, put into the "Text ingest" section of
``docs/performance.md`` (between markers; the rest of the file is kept).

    .venv/bin/python benchmarks/bench_text.py --lines 2000000 --write
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"
DOC = ROOT / "docs" / "performance.md"
BEGIN = "<!-- bench_text:begin -->"
END = "<!-- bench_text:end -->"

TS = re.compile(rb"(?m)(\s)(\d+)(\.\d{6,9}:)")


def _repeat(body: bytes, header: bytes, lines: int, out: Path) -> int:
    """Write header + body repeated to about ``lines`` lines, timestamps shifted per copy
    so the result stays sorted. Returns the number of lines written."""
    secs = [int(m.group(2)) for m in TS.finditer(body)]
    lo, hi = min(secs), max(secs)
    span = hi - lo + 1
    digits = len(str(hi))
    same_width = len(str(lo)) == digits
    per_copy = body.count(b"\n")
    copies = max(1, -(-lines // per_copy))
    with open(out, "wb") as f:
        f.write(header)
        for k in range(copies):
            if k == 0:
                f.write(body)
            elif same_width:
                # every seconds field has `digits` digits: prefix the copy number, which
                # adds k * 10**digits seconds (one C-level regex pass, no callback)
                f.write(TS.sub(rb"\g<1>" + str(k).encode() + rb"\g<2>\g<3>", body))
            else:
                off = k * span
                f.write(
                    TS.sub(
                        lambda m, off=off: (
                            m.group(1) + str(int(m.group(2)) + off).encode() + m.group(3)
                        ),
                        body,
                    )
                )
    return header.count(b"\n") + copies * per_copy


def _split_header(text: bytes, is_header) -> tuple[bytes, bytes]:
    lines = text.split(b"\n")
    n = 0
    while n < len(lines) and is_header(lines[n]):
        n += 1
    header = b"\n".join(lines[:n]) + (b"\n" if n else b"")
    body = b"\n".join(ln for ln in lines[n:] if ln) + b"\n"
    return header, body


CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from schedwake.ingest import text
# the libraries the reader imports when first used (lazily): not part of the read
import numpy, pandas, pyarrow, pyarrow.compute
path, fmt, mode = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.perf_counter(); c0 = time.process_time()
rows = 0
if mode == "read":
    tr = text.read(path, fmt)
    rows = sum(t.num_rows for t in tr.tables.values())
    meta = tr.meta
else:
    for b in text.iter_batches(path, fmt, batch_bytes=64 << 20):
        rows += sum(t.num_rows for t in b.tables.values())
        meta = b.meta
wall = time.perf_counter() - t0; cpu = time.process_time() - c0
hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM"))
print(json.dumps({{"wall": wall, "cpu": cpu, "rows": rows, "lines": meta.source["lines"],
                  "unparsed": meta.source["unparsed_lines"], "rss_mb": hwm // 1024}}))
"""


def _run_child(argv: list[str], stdout=subprocess.PIPE) -> tuple[float, bytes]:
    """(wall seconds, stdout) of a child process."""
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed ({p.returncode}): {p.stderr[-300:]!r}")
    return wall, (p.stdout or b""), p.stderr


# Peak memory: a child's own VmHWM (/proc/self/status). The rusage maximum of a child
# that the benchmark forks would include the benchmark's own size (Linux keeps the
# pre-exec high-water mark), so external programs run under GNU time, which forks them
# from its own small process.
GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None


def bench_reader(path: Path, fmt: str, mode: str, reps: int) -> dict:
    best = None
    for _ in range(reps):
        _, out, _ = _run_child(
            [sys.executable, "-c", CHILD.format(root=str(ROOT)), str(path), fmt, mode]
        )
        r = json.loads(out)
        if best is None or r["wall"] < best["wall"]:
            best = r
    best["lines_per_s"] = best["lines"] / best["wall"]
    return best


_REPORT_LINES: dict = {}


def bench_trace_cmd(dat: Path, reps: int) -> dict | None:
    exe = shutil.which("trace-cmd")
    if exe is None:
        return None
    if dat not in _REPORT_LINES:
        _REPORT_LINES[dat] = int(
            subprocess.run(
                f"{exe} report -N -i {dat} 2>/dev/null | wc -l",
                shell=True,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    lines = _REPORT_LINES[dat]
    best = None
    for _ in range(reps):
        argv = [exe, "report", "-N", "-i", str(dat)]
        if GNU_TIME:
            argv = [GNU_TIME, "-f", "@@maxrss %M"] + argv
        with open(os.devnull, "wb") as null:
            wall, _, err = _run_child(argv, stdout=null)
        m = re.search(rb"@@maxrss (\d+)", err)
        rss = int(m.group(1)) // 1024 if m else None
        if best is None or wall < best["wall"]:
            best = {"wall": wall, "rss_mb": rss, "lines": lines}
    best["lines_per_s"] = best["lines"] / best["wall"]
    return best


def bench_tracedat(dat: Path, reps: int) -> dict | None:
    code = (
        f"import sys,time,json; sys.path.insert(0,{str(ROOT)!r})\n"
        "from schedwake.ingest import tracedat\nfrom pathlib import Path\n"
        "t0=time.perf_counter(); tr=tracedat.read(Path(sys.argv[1]))\n"
        "hwm=next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "print(json.dumps({'wall': time.perf_counter()-t0, 'rss_mb': hwm // 1024,"
        " 'rows': sum(t.num_rows for t in tr.tables.values())}))"
    )
    best = None
    for _ in range(reps):
        try:
            _, out, _ = _run_child([sys.executable, "-c", code, str(dat)])
        except SystemExit:
            return None
        r = json.loads(out)
        if best is None or r["wall"] < best["wall"]:
            best = r
    best["lines_per_s"] = best["rows"] / best["wall"]
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=2_000_000, help="lines per generated text")
    ap.add_argument("--dat", type=Path, default=SAMPLES / "dbench-xfs-2clients.dat")
    ap.add_argument("--ftrace", type=Path, default=SAMPLES / "conformance" / "conf.ftrace.txt.gz")
    ap.add_argument("--reps", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    ap.add_argument("--keep", type=Path, help="keep the generated texts in this directory")
    args = ap.parse_args()

    work = Path(args.keep or tempfile.mkdtemp(prefix="bench_text."))
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    try:
        # ---- inputs
        raw = gzip.decompress(args.ftrace.read_bytes())
        fheader, fbody = _split_header(raw, lambda ln: ln.startswith(b"#"))
        ftrace = work / "big.ftrace.txt"
        n_ftrace = _repeat(fbody, fheader, args.lines, ftrace)
        report_src = subprocess.run(
            ["trace-cmd", "report", "-N", "-i", str(args.dat)], capture_output=True, check=True
        ).stdout
        header, body = _split_header(report_src, lambda ln: ln.startswith(b"cpus="))
        report = work / "big.report-N.txt"
        n_report = _repeat(body, header, args.lines, report)
        report_gz = work / "big.report-N.txt.gz"
        subprocess.run(f"gzip -1 -c {report} > {report_gz}", shell=True, check=True)
        half = work / "half.ftrace.txt"
        _repeat(fbody, fheader, args.lines // 2, half)

        # ---- measurements
        # every measurement once per round, rounds repeated: a burst of load from
        # other jobs then spoils one run of each row, not every run of one row
        jobs = {
            "ftrace_read": lambda: bench_reader(ftrace, "ftrace-text", "read", 1),
            "ftrace_stream": lambda: bench_reader(ftrace, "ftrace-text", "stream", 1),
            "ftrace_half_stream": lambda: bench_reader(half, "ftrace-text", "stream", 1),
            "ftrace_half_read": lambda: bench_reader(half, "ftrace-text", "read", 1),
            "report_read": lambda: bench_reader(report, "trace-cmd-report", "read", 1),
            "report_gz_read": lambda: bench_reader(report_gz, "trace-cmd-report", "read", 1),
            "trace_cmd_report": lambda: bench_trace_cmd(args.dat, 1),
            "tracedat": lambda: bench_tracedat(args.dat, 1),
        }
        for _ in range(args.reps):
            for key, job in jobs.items():
                r = job()
                if r is not None and (results.get(key) is None or r["wall"] < results[key]["wall"]):
                    results[key] = r
                results.setdefault(key, None)
        results["sizes"] = {
            "ftrace_lines": n_ftrace,
            "ftrace_bytes": ftrace.stat().st_size,
            "report_lines": n_report,
            "report_bytes": report.stat().st_size,
            "report_gz_bytes": report_gz.stat().st_size,
        }
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    md = render(results, args)
    print(md)
    if args.write:
        write_doc(md)


def render(r: dict, args) -> str:
    s = r["sizes"]
    cpu = platform.processor() or platform.machine()
    try:
        model = next(
            ln.split(":", 1)[1].strip()
            for ln in open("/proc/cpuinfo")
            if ln.startswith("model name")
        )
    except (OSError, StopIteration):
        model = cpu
    rows = []

    def row(what, res, lines=None):
        if res is None:
            rows.append(f"| {what} | not available | | | | |")
            return
        n = lines or res.get("lines") or res.get("rows")
        rss = "n/a" if res.get("rss_mb") is None else f"{res['rss_mb']:,} MB"
        cpu = f"{res['cpu']:.2f} s" if "cpu" in res else ""
        rows.append(
            f"| {what} | {n:,} | {res['wall']:.2f} s | **{res['lines_per_s'] / 1e6:.2f} M/s** "
            f"| {cpu} | {rss} |"
        )

    row(
        f"raw ftrace text ({s['ftrace_bytes'] / 1e6:.0f} MB) -> tables, `text.read`",
        r["ftrace_read"],
    )
    row("same file, `text.iter_batches` (64 MB batches)", r["ftrace_stream"])
    row("half that file, `text.iter_batches`", r["ftrace_half_stream"])
    row("half that file, `text.read`", r["ftrace_half_read"])
    row(
        f"`trace-cmd report -N` text ({s['report_bytes'] / 1e6:.0f} MB) -> tables, `text.read`",
        r["report_read"],
    )
    row(
        f"same text gzip-compressed ({s['report_gz_bytes'] / 1e6:.0f} MB .gz), `text.read`",
        r["report_gz_read"],
    )
    row(
        f"`trace-cmd report -N -i {args.dat.name}` -> /dev/null (producing such text)",
        r["trace_cmd_report"],
    )
    row(f"schedwake trace.dat reader on {args.dat.name} (events/s)", r["tracedat"])
    return "\n".join(
        [
            BEGIN,
            f"Measured by `benchmarks/bench_text.py --lines {args.lines}` on "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {model}, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()}. Best of "
            f"{args.reps} rounds (each round runs every row once), each run in a fresh "
            "process; lines/s = lines of text / wall time of the read (decompression and building "
            "the Arrow tables included, interpreter start-up and imports not); CPU = the reading "
            "process's own CPU time (an external decompressor's is not in it); peak RSS = the "
            "process's VmHWM (Python, NumPy and pyarrow alone take about 100 MB; GNU time's "
            "maximum RSS for trace-cmd).",
            "",
            "| input | lines | wall | lines/s | CPU | peak RSS |",
            "|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
            "The raw ftrace input is the conformance recording's tracefs `trace` file repeated "
            "with shifted timestamps; the report input is `trace-cmd report -N` of the sample "
            "trace, repeated the same way. The `trace-cmd report` row is the reference for how "
            "fast such text is produced in the first place.",
            END,
        ]
    )


def write_doc(md: str):
    DOC.parent.mkdir(parents=True, exist_ok=True)
    doc = DOC.read_text() if DOC.exists() else "# Performance\n"
    if BEGIN in doc and END in doc:
        doc = doc[: doc.index(BEGIN)] + md + doc[doc.index(END) + len(END) :]
    elif "## Text ingest" in doc:
        i = doc.index("## Text ingest")
        j = doc.find("\n## ", i + 1)
        j = len(doc) if j < 0 else j
        doc = doc[:j].rstrip() + "\n\n" + md + "\n" + doc[j:]
    else:
        doc = doc.rstrip() + "\n\n## Text ingest\n\n" + md + "\n"
    DOC.write_text(doc)


if __name__ == "__main__":
    main()
