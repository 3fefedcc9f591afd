#!/usr/bin/env python3
"""Benchmark: `schedwake batch` on a local Dask cluster of 1 and 2 worker processes.

Over every real trace.dat of sample_traces/ (28 files; --traces GLOB... for others), for
1 and 2 workers: the cluster's start-up, the batch's wall time (best of --repeat runs on
a running cluster, each into a fresh dataset), traces per second, and each worker's peak
RSS. Then the cost of one trace, side by side on the same traces: `schedwake analyze
TRACE --format json` as a real subprocess, the same load + analyze in-process, and the
batch task (load, analyze, per-window samples) as its row's `seconds` records it.

    .venv/bin/python benchmarks/bench_batch.py [--repeat 3] [--traces GLOB ...]
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GLOBS = [
    "sample_traces/*.dat",
    "sample_traces/kstack-6.1/*.dat",
    "sample_traces/iterations/*.dat",
    "sample_traces/conformance/*.dat",
    "sample_traces/zlib/*.dat",
]


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_cluster(traces: list[str], workers: int, repeat: int) -> dict:
    import pandas as pd
    from distributed import Client

    import schedwake
    from schedwake.batch import local_cluster

    cpus = len(os.sched_getaffinity(0))
    t0 = time.perf_counter()
    cluster = local_cluster(workers)  # as `schedwake batch` starts it
    client = Client(cluster)
    startup = time.perf_counter() - t0
    try:
        jobs = max(1, cpus // workers)
        with tempfile.TemporaryDirectory() as tmp:
            # warm the workers (imports) on two traces, then time whole batches
            schedwake.batch(traces[:2], Path(tmp, "warm"), scheduler=cluster.scheduler_address)
            walls = []
            for i in range(repeat):
                out = Path(tmp, f"run{i}")
                t0 = time.perf_counter()
                result = schedwake.batch(
                    traces, out, scheduler=cluster.scheduler_address, jobs=jobs
                )
                walls.append(time.perf_counter() - t0)
                assert result.exit_code == 0, result.errors
            best = Path(tmp, f"run{walls.index(min(walls))}")
            rows = pd.read_parquet(best / "traces.parquet")
        peaks = client.run(_peak_rss_mib)
    finally:
        client.close()
        cluster.close()
    return {
        "workers": workers,
        "startup_s": startup,
        "wall_s": min(walls),
        "walls": walls,
        "traces_per_s": len(traces) / min(walls),
        "peak_rss_mib": sorted(peaks.values()),
        "task_s": dict(zip(rows["path"], rows["seconds"])),
    }


IN_PROCESS = r"""
import os, sys, time
import schedwake
from schedwake.batch import Options, analyse_one
from schedwake.model import MODEL_EVENTS
from schedwake.report.analyze import to_json
for path in sys.argv[1:]:
    analyze = task = 1e9
    for _ in range(3):  # alternately, so that the machine's mood hits both alike
        t0 = time.perf_counter()
        trace = schedwake.load(path, events=list(MODEL_EVENTS))
        to_json(schedwake.analyze(trace))
        t1 = time.perf_counter()
        analyse_one(path, os.path.abspath(path), Options())
        t2 = time.perf_counter()
        analyze, task = min(analyze, t1 - t0), min(task, t2 - t1)
    print(path, analyze, task)
"""


def per_trace_costs(traces: list[str]) -> dict[str, dict]:
    exe = Path(sys.executable).with_name("schedwake")
    out: dict[str, dict] = {p: {} for p in traces}
    for p in traces:
        best = 1e9
        for _ in range(2):
            t0 = time.perf_counter()
            subprocess.run(
                [str(exe), "analyze", p, "--format", "json"], capture_output=True, check=True
            )
            best = min(best, time.perf_counter() - t0)
        out[p]["cli_s"] = best
    proc = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, *traces], capture_output=True, text=True, check=True
    )
    for line in proc.stdout.splitlines():
        path, analyze, task = line.rsplit(" ", 2)
        out[path]["in_process_s"] = float(analyze)
        out[path]["task_in_process_s"] = float(task)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", nargs="+", default=DEFAULT_GLOBS, metavar="GLOB")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.chdir(ROOT)
    traces = sorted({p for g in args.traces for p in glob.glob(g, recursive=True)})
    if len(traces) < 2:
        print("need at least 2 traces", file=sys.stderr)
        return 2
    size = sum(Path(p).stat().st_size for p in traces)
    print(f"{len(traces)} traces, {size / 2**20:.1f} MiB, {os.cpu_count()} CPUs")
    runs = [run_cluster(traces, n, args.repeat) for n in (1, 2)]
    print()
    print(
        "| workers | cluster start | batch wall (best of N) | traces/s | speed-up "
        "| peak RSS per worker |"
    )
    print("|---:|---:|---:|---:|---:|---|")
    for r in runs:
        print(
            f"| {r['workers']} | {r['startup_s']:.1f} s | {r['wall_s']:.2f} s "
            f"({', '.join(f'{w:.2f}' for w in r['walls'])}) | {r['traces_per_s']:.2f} | "
            f"{runs[0]['wall_s'] / r['wall_s']:.2f}x | "
            f"{', '.join(f'{m:.0f} MiB' for m in r['peak_rss_mib'])} |"
        )
    costs = per_trace_costs(traces)
    task = runs[0]["task_s"]
    cli = sum(c["cli_s"] for c in costs.values())
    inproc = sum(c["in_process_s"] for c in costs.values())
    task_inproc = sum(c["task_in_process_s"] for c in costs.values())
    batch_task = sum(task.values())
    batch_wall = runs[0]["wall_s"]
    print()
    print(f"per trace, mean over the {len(traces)} traces:")
    n = len(traces)
    print(f"  schedwake analyze --format json (subprocess):  {cli / n * 1e3:.0f} ms")
    print(f"  load + analyze in-process:                     {inproc / n * 1e3:.0f} ms")
    print(f"  batch task (load, analyze, windows) in-process: {task_inproc / n * 1e3:.0f} ms")
    print(f"  batch task (load, analyze, windows), 1 worker: {batch_task / n * 1e3:.0f} ms")
    print(f"  batch wall / traces, 1 worker:                 {batch_wall / n * 1e3:.0f} ms")
    ratios = [task[p] / costs[p]["in_process_s"] for p in traces]
    print(
        f"  batch task / in-process analyze: median {statistics.median(ratios):.2f}, "
        f"max {max(ratios):.2f}; batch wall per trace / analyze CLI: {batch_wall / cli:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
