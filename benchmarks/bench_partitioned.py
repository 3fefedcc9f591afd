#!/usr/bin/env python3
"""Benchmark: one trace analysed in time parts on real `dask scheduler` and `dask worker`
processes on 127.0.0.1, each worker given a memory limit, next to the whole-trace
`schedwake analyze` in one process.

For each worker count (--workers, default 1 and 2), a fresh cluster, and on it
`schedwake analyze --format json --partitions N --scheduler ADDR TRACE` as a subprocess
(the client: the passes over the parts, every part read and modelled on a worker, the
joins). Reported: its wall time and CPU time, each worker's peak RSS, the client's, and
the speed-up from 1 to 2 workers; beside it `schedwake analyze --format json TRACE` as
a subprocess (wall, CPU, peak RSS), and whether the two JSON documents are equal byte
for byte (--no-whole skips the whole analysis: a trace bigger than this machine).

    .venv/bin/python benchmarks/bench_partitioned.py --trace FILE [--parts 8|auto]
        [--workers 1 2] [--memory-limit 1GiB] [--no-whole]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _worker_peak_rss_mib() -> float:
    import resource as r

    return r.getrusage(r.RUSAGE_SELF).ru_maxrss / 1024


def whole(trace: str) -> dict:
    """`schedwake analyze --format json` as a subprocess: wall, CPU, peak RSS."""
    out, wall, cpu, rss = run_measured([str(BIN / "schedwake"), "analyze", "--format", "json",
                                        trace])  # fmt: skip
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss),
            "json": out}  # fmt: skip


def start_cluster(workers: int, memory_limit: str, tmp: Path) -> tuple[list, str]:
    """A `dask scheduler` and ``workers`` `dask worker` processes (one thread each)."""
    sched_file = tmp / "scheduler.json"
    procs = [
        subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(sched_file)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    ]  # fmt: skip
    for _ in range(100):
        if sched_file.exists():
            break
        time.sleep(0.1)
    for i in range(workers):
        procs.append(
            subprocess.Popen(
                [str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file),
                 "--nworkers", "1", "--nthreads", "1", "--memory-limit", memory_limit,
                 "--no-dashboard", "--name", f"w{i}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        )  # fmt: skip
    return procs, str(sched_file)


def run_measured(cmd: list[str]) -> tuple[bytes, float, float, float]:
    """``cmd`` as a subprocess: its stdout, wall time, CPU time and peak RSS (MiB)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({os.waitstatus_to_exitcode(status)})")
    return out, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def partitioned(trace: str, parts: str, workers: int, memory_limit: str) -> dict:
    """`schedwake analyze --partitions PARTS --scheduler ADDR --format json TRACE` as a
    subprocess (the client) on a fresh cluster of ``workers`` workers."""
    from distributed import Client

    tmp = Path(tempfile.mkdtemp(prefix="bench-partitioned-"))
    procs, sched_file = start_cluster(workers, memory_limit, tmp)
    try:
        with Client(scheduler_file=sched_file) as client:
            client.wait_for_workers(workers, timeout=120)
            address = client.scheduler.address
            out, wall, cpu, client_rss = run_measured(
                [str(BIN / "schedwake"), "analyze", "--format", "json", "--partitions",
                 parts, "--scheduler", address, trace]
            )  # fmt: skip
            rss = client.run(_worker_peak_rss_mib)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "workers": workers,
        "parts": parts,
        "wall_s": round(wall, 2),
        "client_cpu_s": round(cpu, 2),
        "worker_peak_rss_mib": sorted(round(v) for v in rss.values()),
        "client_peak_rss_mib": round(client_rss),
        "json": out,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="a trace.dat or perf.data file")
    ap.add_argument("--parts", default="8", help="a number of parts, or auto")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--memory-limit", default="1GiB", help="each dask worker's")
    ap.add_argument("--no-whole", action="store_true", help="skip the whole analysis")
    args = ap.parse_args()
    os.chdir(ROOT)
    w = None
    if not args.no_whole:
        w = whole(args.trace)
        print(
            f"whole: schedwake analyze: {w['wall_s']} s wall, {w['cpu_s']} s CPU, "
            f"peak RSS {w['peak_rss_mib']} MiB",
            flush=True,
        )
    runs = []
    for n in args.workers:
        r = partitioned(args.trace, args.parts, n, args.memory_limit)
        runs.append(r)
        same = "not compared" if w is None else ("yes" if r["json"] == w["json"] else "NO")
        print(
            f"{n} worker(s) (memory limit {args.memory_limit}), --partitions {r['parts']}: "
            f"{r['wall_s']} s wall (client {r['client_cpu_s']} s CPU); worker peak RSS "
            f"{r['worker_peak_rss_mib']} MiB, client {r['client_peak_rss_mib']} MiB; the "
            f"JSON byte for byte the whole analysis's: {same}",
            flush=True,
        )
    if len(runs) >= 2:
        print(f"speed-up {runs[0]['workers']} -> {runs[-1]['workers']} workers: "
              f"{runs[0]['wall_s'] / max(runs[-1]['wall_s'], 1e-9):.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
