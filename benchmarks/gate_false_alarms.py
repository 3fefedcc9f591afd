#!/usr/bin/env python3
"""Measure the CI gate's false alarms and catches on real runs (docs/gate.md).

A/A: the runs of one configuration split into baseline and candidate runs in every
way (or --splits random ways): every FAIL (exit 1) is a false alarm. A/B: baseline runs
of one configuration against runs of a changed one: every FAIL is a catch. The default
set is sample_traces/cgroup-weight/ (12 runs with the bench cgroup's cpu.shares 1024,
6 with 10240, recorded interleaved); --kstack adds the kstack-6.1 before/after pair.

    .venv/bin/python benchmarks/gate_false_alarms.py [--splits 400] [--rules FILE]...

Only the public API is used (schedwake.gate, schedwake.compare.load_model_trace), so
the same script measures an older checkout: PYTHONPATH=OLD_TREE python this.py.
Each --rules FILE (a gate rules TOML) is measured beside the default rules.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"


def wilson(k: int, n: int) -> tuple[float, float]:
    if not n:
        return (math.nan, math.nan)
    z = 1.959963984540054
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, mid - half), min(1.0, mid + half)


def pairs(first, second, kb, kc, limit, rng):
    """(baseline, candidate) index sets: from one list (A/A, disjoint) or two (A/B)."""
    if second is None:
        n = len(first)
        every = [
            (b, c)
            for b in itertools.combinations(range(n), kb)
            for c in itertools.combinations([i for i in range(n) if i not in b], kc)
        ]
    else:
        every = list(
            itertools.product(
                itertools.combinations(range(len(first)), kb),
                itertools.combinations(range(len(second)), kc),
            )
        )
    return every if len(every) <= limit else rng.sample(every, limit)


def measure(gate, rules, first, second, kb, kc, limit, seed):
    rng = random.Random(seed)
    exits: Counter = Counter()
    broken: Counter = Counter()
    chosen = pairs(first, second, kb, kc, limit, rng)
    for b, c in chosen:
        cand_pool = first if second is None else second
        res = gate([first[i] for i in b], [cand_pool[i] for i in c], rules)
        exits[res.exit_code] += 1
        for r in res.results:
            if r.status == "broken":
                broken[r.rule.metric] += 1
    return len(chosen), exits, broken


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=400, help="random splits per configuration")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rules", action="append", default=[], help="another rules TOML")
    ap.add_argument("--kstack", action="store_true", help="also the kstack-6.1 pair")
    ap.add_argument(
        "--configs",
        default="2x1,3x1,5x1,8x1,3x3,4x4,6x6",
        help="baseline x candidate run counts to measure",
    )
    args = ap.parse_args(argv)

    from schedwake.compare import load_model_trace
    from schedwake.gate import gate

    t0 = time.perf_counter()
    weight = SAMPLES / "cgroup-weight"
    a_runs = [load_model_trace(str(p)) for p in sorted(weight.glob("msg-w1024-r*.dat"))]
    b_runs = [load_model_trace(str(p)) for p in sorted(weight.glob("msg-w10240-r*.dat"))]
    print(f"loaded {len(a_runs)} A and {len(b_runs)} B runs in {time.perf_counter() - t0:.1f} s")
    rule_sets = [("default rules", None)] + [(Path(r).name, r) for r in args.rules]
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]
    print()
    print(
        "| rules | baseline x candidate runs | splits | A/A FAIL (false alarms) | 95% interval "
        "| A/A cannot judge | A/B FAIL (catches) | rules broken in A/A |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, rules in rule_sets:
        for kb, kc in configs:
            started = time.perf_counter()
            n, exits, broken = measure(gate, rules, a_runs, None, kb, kc, args.splits, args.seed)
            lo, hi = wilson(exits[1], n)
            cell = "-"
            if kc <= len(b_runs):
                m, ab, _ = measure(gate, rules, a_runs, b_runs, kb, kc, args.splits, args.seed)
                cell = f"{ab[1] / m:.1%} ({ab[1]}/{m})"
            which = ", ".join(f"{k} {v}" for k, v in broken.most_common()) or "none"
            print(
                f"| {name} | {kb} x {kc} | {n} | {exits[1] / n:.1%} ({exits[1]}/{n}) | "
                f"{lo:.1%}-{hi:.1%} | {exits[2] / n:.1%} | {cell} | {which} |",
                flush=True,
            )
            print(f"  ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    if args.kstack:
        ks = SAMPLES / "kstack-6.1"
        off = [load_model_trace(str(p)) for p in sorted(ks.glob("k61-dbench-c2-kstack-off-i*.dat"))]
        on = [load_model_trace(str(p)) for p in sorted(ks.glob("k61-dbench-c2-kstack-on-i*.dat"))]
        print()
        print("| kstack-6.1 (baseline: the fix on; candidate: off) | verdicts | rules broken |")
        print("|---|---|---|")
        for kb, kc in ((3, 3), (3, 1), (2, 1)):
            for name, rules in rule_sets:
                n, exits, broken = measure(gate, rules, on, off, kb, kc, 100, args.seed)
                which = ", ".join(f"{k} {v}" for k, v in broken.most_common()) or "none"
                print(
                    f"| {name}, {kb} x {kc} | FAIL {exits[1]}/{n}, exit 2 {exits[2]}/{n} "
                    f"| {which} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
