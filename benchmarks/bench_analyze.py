#!/usr/bin/env python3
"""Benchmark: `schedwake analyze` end to end on a trace of at least 10 million events.

Reports, for one trace (recorded at run time like bench_tracedat.py does, unless
--trace is given): the wall time of `schedwake analyze --format json` as a real
subprocess, its peak RSS, the size of the loaded Arrow tables, and the ratio of the
two; plus a breakdown (load, model, detectors) measured in-process.

    sudo .venv/bin/python benchmarks/bench_analyze.py [--trace FILE] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tracedat import add_trace_arguments, benchmark_trace  # noqa: E402

BREAKDOWN = r"""
import json, sys, time
import schedwake
from schedwake.detect import detect
t0 = time.perf_counter()
trace = schedwake.load(sys.argv[1])
t1 = time.perf_counter()
trace.wakeups(); trace.migrations(); trace.occupancy()
t2 = time.perf_counter()
findings = detect(trace)
t3 = time.perf_counter()
print(json.dumps({"load_s": t1 - t0, "model_s": t2 - t1, "detect_s": t3 - t2,
                  "events": sum(trace.meta.event_counts.values()),
                  "table_bytes": sum(trace.table(n).nbytes for n in trace.events),
                  "findings": [f.detector for f in findings]}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_arguments(ap, events=10_500_000)
    args = ap.parse_args()
    exe = Path(sys.executable).with_name("schedwake")
    with benchmark_trace(args) as path:
        size = path.stat().st_size
        t0 = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M", str(exe), "analyze", str(path), "--format", "json"],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        peak_kb = int(proc.stderr.strip().splitlines()[-1])
        parts = json.loads(
            subprocess.run(
                [sys.executable, "-c", BREAKDOWN, str(path)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    tables_mib = parts["table_bytes"] / 2**20
    print(f"trace: {parts['events']} events, {size / 2**20:.1f} MiB")
    print(f"schedwake analyze --format json: {wall:.1f} s wall, peak RSS {peak_kb / 1024:.0f} MiB")
    print(
        f"loaded Arrow tables: {tables_mib:.0f} MiB; peak RSS / tables = "
        f"{peak_kb / 1024 / tables_mib:.2f}"
    )
    print(
        f"breakdown (in-process): load {parts['load_s']:.1f} s, model {parts['model_s']:.1f} s, "
        f"detectors {parts['detect_s']:.1f} s; findings: {', '.join(parts['findings']) or 'none'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
