#!/usr/bin/env python3
"""Benchmark: `schedwake analyze` end to end, side by side with `trace-cmd report`.

Measures, on one trace (recorded at run time like bench_tracedat.py does, unless
--trace is given), best of --repeat interleaved rounds, each in a fresh process:

  * `schedwake analyze TRACE` (text) and `schedwake analyze --format json TRACE` as
    real subprocesses: wall time, CPU time (user + system), events/s, peak RSS: the
    figure a user waits for, imports included;
  * the same analysis in a process whose libraries are already imported (load,
    model, detectors, metrics and the JSON document; with a breakdown): what the
    imports do not explain;
  * `trace-cmd report -i TRACE > /dev/null`, the peer: what reading the trace as text
    costs, the first step of today's `trace-cmd report | grep | wc -l`.

Issue #35's target is 4 M events/s end to end on a 5 M-event trace.

    sudo .venv/bin/python benchmarks/bench_analyze.py [--trace FILE] [--keep FILE]
        [--repeat N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tracedat import add_trace_arguments, benchmark_trace, best, timed  # noqa: E402

# the whole analysis of `analyze --format json`, after the imports, in one process
WARM = r"""
import json, resource, sys, time
import schedwake
from schedwake.analysis import analyze
from schedwake.cli.common import keep_freed_memory, no_huge_pages
from schedwake.model import MODEL_EVENTS
from schedwake.report.analyze import to_json

no_huge_pages()  # (as the command does)
keep_freed_memory()
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
c0, t0 = cpu(), time.perf_counter()
trace = schedwake.load(sys.argv[1], events=list(MODEL_EVENTS))
t1 = time.perf_counter()
analysis = analyze(trace)
t2 = time.perf_counter()
document = to_json(analysis)
t3 = time.perf_counter()
print(json.dumps({"seconds": t3 - t0, "cpu": cpu() - c0, "load_s": t1 - t0,
                  "analysis_s": t2 - t1, "json_s": t3 - t2,
                  "events": sum(trace.meta.event_counts.values()),
                  "findings": [f.detector for f in analysis.findings]}))
"""

TARGET = 4e6  # events/s end to end (#35)


def warm(path: Path) -> dict:
    """The analysis in a process that has imported the libraries already."""
    out = subprocess.run(
        [sys.executable, "-c", WARM, str(path)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_arguments(ap, events=5_500_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("schedwake"))
    with benchmark_trace(args) as path:
        size = path.stat().st_size
        commands = {
            "trace-cmd report > /dev/null": ["trace-cmd", "report", "-i", str(path)],
            "schedwake analyze": [exe, "analyze", str(path)],
            "schedwake analyze --format json": [exe, "analyze", "--format", "json", str(path)],
        }
        # interleaved rounds: a slow spell of the machine does not fall on one row only
        runs: dict[str, list[dict]] = {name: [] for name in [*commands, "warm"]}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                runs[name].append(timed(argv))
            runs["warm"].append(warm(path))
    results = {name: best(r) for name, r in runs.items()}
    w = results["warm"]
    n = w["events"]
    peer = results["trace-cmd report > /dev/null"]["seconds"]
    print(f"\ntrace: {n} events, {size / 2**20:.1f} MiB; best of {args.repeat}, interleaved")
    print(f"{'':<44}{'wall s':>8}{'CPU s':>8}{'Mevents/s':>11}{'x report':>10}{'peak MiB':>10}")
    for name, r in results.items():
        label = "analysis after imports (load..JSON)" if name == "warm" else name
        peak = f"{r['peak_kb'] / 1024:.0f}" if "peak_kb" in r else ""
        print(
            f"{label:<44}{r['seconds']:>8.2f}{r['cpu']:>8.2f}{n / r['seconds'] / 1e6:>11.2f}"
            f"{peer / r['seconds']:>10.1f}{peak:>10}"
        )
    print(
        f"breakdown after imports: load {w['load_s']:.2f} s, model + detectors + metrics "
        f"{w['analysis_s']:.2f} s, JSON document {w['json_s']:.2f} s; findings: "
        f"{', '.join(w['findings']) or 'none'}"
    )
    end_to_end = n / results["schedwake analyze"]["seconds"]
    print(
        f"target {TARGET / 1e6:.0f} M events/s end to end: "
        f"{'met' if end_to_end >= TARGET else 'NOT met'} ({end_to_end / 1e6:.2f} M/s)"
    )
    if args.json:
        args.json.write_text(json.dumps({"events": n, "bytes": size, **results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
