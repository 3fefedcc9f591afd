#!/usr/bin/env python3
"""Power and false alarms of `schedwake series`' change-point detection
(schedwake.changepoint.detect, its defaults) on synthetic series with known steps.

Each series is BUILDS builds of RUNS runs; the runs are independent draws of a noise
(normal, or lognormal with sigma 1: heavy right tail), and from the step build on a
step of K standard deviations of that noise is added. For each noise, step size and
step position (the middle build, or the newest one: what `gate --series` judges) it
counts, over N series:

* found: series with a change point at the step build;
* near: at the step build or one build off;
* false: series with a change point anywhere else (for step 0: any change point,
  the false-alarm rate of one metric);
* at newest: series with a change point at the newest build (for step 0 or a step in
  the middle: what would fail `gate --series` on a rule's metric).

    .venv/bin/python benchmarks/bench_series_power.py [--series 500] [--markdown]

docs/series.md, "Power and false alarms", is its --markdown output (seed 0).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from schedwake.changepoint import DEFAULT_ALPHA, DEFAULT_MIN_SEGMENT, detect  # noqa: E402

NOISES = ("normal", "lognormal")
STEPS = (0.0, 0.5, 1.0, 2.0)
LOGNORMAL_SD = float(np.sqrt((np.e - 1) * np.e))  # of lognormal(0, 1)


def one_case(args) -> dict:
    noise, step, where, n, builds, runs, min_segment, seed = args
    rng = np.random.default_rng([seed, NOISES.index(noise), int(step * 10), where == "newest"])
    at = builds // 2 if where == "middle" else builds - 1
    found = near = false = newest = 0
    for i in range(n):
        if noise == "normal":
            x = rng.normal(0.0, 1.0, (builds, runs))
        else:
            x = rng.lognormal(0.0, 1.0, (builds, runs)) / LOGNORMAL_SD
        x[at:] += step
        cps = [c.index for c in detect(list(x), min_segment=min_segment, seed=i).change_points]
        newest += builds - 1 in cps
        if step == 0:
            false += bool(cps)
            continue
        found += at in cps
        near += any(abs(c - at) <= 1 for c in cps)
        false += any(abs(c - at) > 1 for c in cps)
    return {
        "noise": noise,
        "step": step,
        "where": where if step else "-",
        "at": at if step else None,
        "n": n,
        "found": found / n if step else None,
        "near": near / n if step else None,
        "false": false / n,
        "newest": newest / n,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=500, help="series per case (500)")
    ap.add_argument("--builds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3, help="runs a build (3)")
    ap.add_argument("--min-segment", type=int, default=DEFAULT_MIN_SEGMENT)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None, help="processes (default: CPUs)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    a = ap.parse_args(argv)
    cases = [
        (noise, step, where, a.series, a.builds, a.runs, a.min_segment, a.seed)
        for noise in NOISES
        for step in STEPS
        for where in (("middle",) if step == 0 else ("middle", "newest"))
    ]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(a.workers) as pool:
        rows = list(pool.map(one_case, cases))
    took = time.perf_counter() - t0

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}%"

    head = (
        f"{a.series} series a case, {a.builds} builds x {a.runs} runs, alpha "
        f"{DEFAULT_ALPHA}, min segment {a.min_segment} build(s), seed {a.seed} ({took:.0f} s)"
    )
    if a.markdown:
        print(head + "\n")
        print(
            "| noise | step (sd) | step at build | found there | found +-1 build | false alarm "
            "| a change point at the newest build |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            at = "-" if r["at"] is None else f"{r['at'] + 1} ({r['where']})"
            print(
                f"| {r['noise']} | {r['step']:g} | {at} | {pct(r['found'])} | "
                f"{pct(r['near'])} | {pct(r['false'])} | {pct(r['newest'])} |"
            )
    else:
        print(head)
        for r in rows:
            print(
                f"{r['noise']:9} step {r['step']:3g} sd at {r['where']:6}: found "
                f"{pct(r['found']):>6} near {pct(r['near']):>6} false {pct(r['false']):>6} "
                f"at newest {pct(r['newest']):>6}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
