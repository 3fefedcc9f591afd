#!/usr/bin/env python3
"""Benchmark: does analysing a trace cost per event, or per CPU squared?

`schedwake.analyze` (load with the model's events, model, detectors, metrics) on the
real 8-CPU and 32-CPU recordings of the same workload (dbench on XFS, Linux 6.1 with
the stacking clause on and off: sample_traces/kstack-6.1/ and kstack-6.1-32cpu/), the
best of --repeat runs of each, in this process. Prints the time per event of each
trace and the median per CPU count; the cost should follow the events, not the CPUs.

    .venv/bin/python benchmarks/bench_cpus.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = {8: "sample_traces/kstack-6.1/k61-dbench-*.dat", 32: "sample_traces/kstack-6.1-32cpu/*.dat"}


def main() -> int:
    import schedwake
    from schedwake.model import MODEL_EVENTS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    per_cpus: dict[int, list[float]] = {}
    print("| trace | CPUs | events | analyze (s) | us/event |")
    print("|---|---:|---:|---:|---:|")
    for cpus, pattern in SETS.items():
        for path in sorted(ROOT.glob(pattern)):
            best = 1e9
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                trace = schedwake.load(path, events=list(MODEL_EVENTS))
                schedwake.analyze(trace).to_dict()
                best = min(best, time.perf_counter() - t0)
            events = sum(trace.meta.event_counts.values())
            us = best / events * 1e6
            per_cpus.setdefault(cpus, []).append(us)
            print(f"| {path.name} | {cpus} | {events} | {best:.3f} | {us:.2f} |")
    print()
    for cpus, v in per_cpus.items():
        print(f"{cpus} CPUs: median {statistics.median(v):.2f} us/event over {len(v)} traces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
