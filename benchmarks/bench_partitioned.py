#!/usr/bin/env python3
"""Benchmark: one trace analysed in time parts on real `dask scheduler` and `dask worker`
processes on 127.0.0.1, each worker given a memory limit, next to the whole-trace
`schedwake analyze` in one process.

For each worker count (--workers, default 1 and 2), a fresh cluster: the passes over
the parts (schedwake.partition.plan: the fold of the preludes, the contradictions),
then every part read and modelled once (schedwake.analysis.partitioned.part_analysis:
its summary, waits and detectors' measures, kept on its worker), and the joins the
client makes of them (trace facts, caveats, task states, the waits explained, the
kworker_pingpong and llc_roundrobin findings). Reported: wall time of each phase,
each worker's peak RSS, the client's, and the speed-up from 1 to 2 workers; beside it
`schedwake analyze --format json TRACE` as a subprocess (wall, CPU, peak RSS). The
partitioned answer is checked against the whole one for the sections it joins.

What is not joined yet (the storm's and idle-while-runnable's metrics and findings,
docs/design-partitioned-analysis.md) is not timed here: the figures are of the parts'
reading and modelling, which is what bounds a worker's memory.

    .venv/bin/python benchmarks/bench_partitioned.py --trace FILE [--parts 8]
        [--workers 1 2] [--memory-limit 1GiB]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker_peak_rss_mib() -> float:
    import resource as r

    return r.getrusage(r.RUSAGE_SELF).ru_maxrss / 1024


def whole(trace: str) -> dict:
    """`schedwake analyze --format json` as a subprocess: wall, CPU, peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(
        [str(BIN / "schedwake"), "analyze", "--format", "json", trace],
        check=True,
        capture_output=True,
    ).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mib": round(after.ru_maxrss / 1024),
        "json": json.loads(out),
    }


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


def partitioned(trace: str, parts: int, workers: int, memory_limit: str) -> dict:
    from distributed import Client

    from schedwake.analysis.part_findings import findings
    from schedwake.analysis.partitioned import (
        Joined,
        findings_of_part,
        part_analysis,
        summary_of_part,
        waits_of_part,
        waits_sections,
    )
    from schedwake.ingest import ReadOptions
    from schedwake.model import MODEL_EVENTS
    from schedwake.partition import plan

    tmp = Path(tempfile.mkdtemp(prefix="bench-partitioned-"))
    procs, sched_file = start_cluster(workers, memory_limit, tmp)
    try:
        with Client(scheduler_file=sched_file) as client:
            client.wait_for_workers(workers, timeout=120)
            t0 = time.perf_counter()
            # (the events `schedwake analyze` reads: its evidence shows those only)
            options = ReadOptions(events=list(MODEL_EVENTS))
            the_plan = plan(trace, parts, options, client=client)
            t1 = time.perf_counter()
            kept = the_plan.keep(part_analysis)
            t2 = time.perf_counter()
            summaries = kept.select(summary_of_part).ask(lambda s: s)
            joined = Joined(the_plan, summaries)
            doc = {
                "trace": {
                    **joined.trace_facts(),
                    **waits_sections(the_plan, kept.select(waits_of_part)),
                },
                "caveats": joined.caveats(),
                "findings": [
                    f.to_dict()
                    for f in findings(
                        the_plan, kept.select(findings_of_part), joined.model_caveats()
                    )
                ],
                "task_states": joined.task_states(),
            }
            t3 = time.perf_counter()
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
        "plan_s": round(t1 - t0, 2),
        "parts_s": round(t2 - t1, 2),
        "joins_s": round(t3 - t2, 2),
        "wall_s": round(t3 - t0, 2),
        "worker_peak_rss_mib": sorted(round(v) for v in rss.values()),
        "client_peak_rss_mib": round(_peak_rss_mib()),
        "doc": doc,
    }


def same_sections(part: dict, whole: dict) -> list[str]:
    """The sections the partitioned analysis joins that differ from the whole one."""
    out = []
    wt = whole["trace"]
    for k, v in part["trace"].items():
        if wt.get(k) != v:
            out.append(f"trace.{k}")
    if part["caveats"] != [c for c in whole["caveats"] if c in part["caveats"]]:
        out.append("caveats")
    mine = {f["detector"] for f in part["findings"]}
    if part["findings"] != [f for f in whole["findings"] if f["detector"] in mine]:
        out.append("findings")
    if part["task_states"] != whole["task_states"]:
        out.append("task_states")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="a trace.dat or perf.data file")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--memory-limit", default="1GiB", help="each dask worker's")
    args = ap.parse_args()
    os.chdir(ROOT)
    w = whole(args.trace)
    print(
        f"whole: schedwake analyze: {w['wall_s']} s wall, {w['cpu_s']} s CPU, "
        f"peak RSS {w['peak_rss_mib']} MiB"
    )
    runs = []
    for n in args.workers:
        r = partitioned(args.trace, args.parts, n, args.memory_limit)
        runs.append(r)
        differs = same_sections(r["doc"], w["json"])
        print(
            f"{n} worker(s) (memory limit {args.memory_limit}), {r['parts']} parts: "
            f"{r['wall_s']} s wall (plan {r['plan_s']} s, parts {r['parts_s']} s, joins "
            f"{r['joins_s']} s); worker peak RSS {r['worker_peak_rss_mib']} MiB, client "
            f"{r['client_peak_rss_mib']} MiB; sections equal to the whole: "
            + ("yes" if not differs else "NO: " + ", ".join(differs))
        )
    if len(runs) >= 2:
        print(f"speed-up {runs[0]['workers']} -> {runs[-1]['workers']} workers: "
              f"{runs[0]['wall_s'] / max(runs[-1]['wall_s'], 1e-9):.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
