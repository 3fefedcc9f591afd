"""How often a gate cries wolf, and how often it catches a change: measured on real runs.

A gate that fails unchanged builds gets switched off. This module measures, for a rules
file and a set of runs recorded under one configuration (A/A runs), how often
:func:`schedwake.gate` fails when the baseline and the candidate are both drawn from
those runs (``false_alarms``: every way, or a seeded random sample of the ways, to
split them into ``baseline`` runs and ``candidate`` runs), and, given runs of a
changed configuration, how often it catches the change (``catches``). docs/gate.md
reports both for the recordings in ``sample_traces/cgroup-weight/``;
``benchmarks/gate_false_alarms.py`` prints its tables.

The runs are loaded once and judged many times: the metrics of a loaded trace are kept
in its model's memo, so a split costs the statistics, not the reading.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..sidetrace import SideTrace

__all__ = ["SplitRates", "false_alarms", "catches", "splits"]


@dataclass
class SplitRates:
    """The gate's verdicts over many splits: how many exited 0, 1 (FAIL) and 2 (cannot
    judge), and how often each rule was broken."""

    baseline_runs: int
    candidate_runs: int
    splits: int = 0
    exits: Counter = field(default_factory=Counter)
    broken: Counter = field(default_factory=Counter)
    #: every split's exit code, in the order judged (for tests and plots)
    verdicts: list[int] = field(default_factory=list)

    @property
    def fail_rate(self) -> float:
        """The share of splits that failed (exit 1); NaN without splits."""
        return self.exits[1] / self.splits if self.splits else math.nan

    @property
    def error_rate(self) -> float:
        """The share of splits that could not be judged (exit 2)."""
        return self.exits[2] / self.splits if self.splits else math.nan

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Wilson's interval of :attr:`fail_rate` (the splits share runs, so it is
        narrower than the truth: read it as a lower bound of the uncertainty)."""
        n = self.splits
        if not n:
            return (math.nan, math.nan)
        z = 1.959963984540054 if level == 0.95 else _z(level)
        p = self.exits[1] / n
        mid = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return (max(0.0, mid - half), min(1.0, mid + half))


def _z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2)


def splits(
    n_runs: int, baseline_runs: int, candidate_runs: int, limit: int | None, seed: int = 0
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Ways to draw ``baseline_runs`` and ``candidate_runs`` disjoint runs of
    ``n_runs``: every way when there are at most ``limit`` (or ``limit`` is None), else
    ``limit`` of them drawn at random with ``seed`` (without repetition)."""
    if baseline_runs + candidate_runs > n_runs:
        raise ValueError(
            f"{baseline_runs} + {candidate_runs} runs drawn from {n_runs}: not enough runs"
        )
    total = math.comb(n_runs, baseline_runs) * math.comb(n_runs - baseline_runs, candidate_runs)
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    if limit is None or total <= limit:
        for base in itertools.combinations(range(n_runs), baseline_runs):
            rest = [i for i in range(n_runs) if i not in base]
            out.extend((base, cand) for cand in itertools.combinations(rest, candidate_runs))
        return out
    rng = random.Random(seed)
    seen: set = set()
    while len(out) < limit:
        runs = rng.sample(range(n_runs), baseline_runs + candidate_runs)
        key = (tuple(sorted(runs[:baseline_runs])), tuple(sorted(runs[baseline_runs:])))
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _judge_all(
    pairs: Sequence[tuple[list[SideTrace], list[SideTrace]]],
    rules: str | Path | tuple | None,
    rates: SplitRates,
    thresholds: dict | None,
    progress: Callable[[float], None] | None,
) -> SplitRates:
    from . import gate

    for i, (base, cand) in enumerate(pairs):
        result = gate(base, cand, rules, thresholds=thresholds)
        code = result.exit_code
        rates.splits += 1
        rates.exits[code] += 1
        rates.verdicts.append(code)
        for r in result.results:
            if r.status == "broken":
                rates.broken[r.rule.metric] += 1
        if progress is not None:
            progress((i + 1) / len(pairs))
    return rates


def false_alarms(
    runs: Sequence[SideTrace],
    baseline_runs: int,
    candidate_runs: int = 1,
    rules: str | Path | tuple | None = None,
    *,
    limit: int | None = 500,
    seed: int = 0,
    thresholds: dict | None = None,
    progress: Callable[[float], None] | None = None,
) -> SplitRates:
    """The gate's verdicts when baseline and candidate are both runs of one
    configuration (loaded traces ``runs``): ``baseline_runs`` against
    ``candidate_runs`` of them, over every split (or ``limit`` random ones, ``seed``).
    ``rules``: as :func:`schedwake.gate` takes them (None: the default rules). Every
    exit 1 is a false alarm."""
    rates = SplitRates(baseline_runs, candidate_runs)
    pairs = [
        ([runs[i] for i in b], [runs[i] for i in c])
        for b, c in splits(len(runs), baseline_runs, candidate_runs, limit, seed)
    ]
    return _judge_all(pairs, rules, rates, thresholds, progress)


def catches(
    baseline: Sequence[SideTrace],
    changed: Sequence[SideTrace],
    baseline_runs: int,
    candidate_runs: int = 1,
    rules: str | Path | tuple | None = None,
    *,
    limit: int | None = 500,
    seed: int = 0,
    thresholds: dict | None = None,
    progress: Callable[[float], None] | None = None,
) -> SplitRates:
    """The gate's verdicts when ``baseline_runs`` runs of ``baseline`` judge
    ``candidate_runs`` runs of ``changed`` (a known change), over every choice (or
    ``limit`` random ones, ``seed``): every exit 1 is a catch."""
    rates = SplitRates(baseline_runs, candidate_runs)
    base_sets = list(itertools.combinations(range(len(baseline)), baseline_runs))
    cand_sets = list(itertools.combinations(range(len(changed)), candidate_runs))
    pairs_idx = list(itertools.product(base_sets, cand_sets))
    if limit is not None and len(pairs_idx) > limit:
        pairs_idx = random.Random(seed).sample(pairs_idx, limit)
    pairs = [([baseline[i] for i in b], [changed[i] for i in c]) for b, c in pairs_idx]
    return _judge_all(pairs, rules, rates, thresholds, progress)
