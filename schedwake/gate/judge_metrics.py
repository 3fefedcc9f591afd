"""Rules on a metric: its samples on both sides through the comparison machinery
(:func:`schedwake.compare`), the means and the test the settings ask for (log scale,
windows, Holm), and each rule's verdict (:func:`judge_rule`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compare import compare as run_compare
from ..compare import sample_plan
from ..compare.mmtests import StatRow, gain_interval
from ..errors import OptionError
from ..work import WorkSpec
from .inputs import trace_name
from .result import GateResult, RuleResult, change_text, settle
from .rules import Rule, Settings


def sampling(result: GateResult, sides: dict) -> tuple[str, float | None]:
    """(samples kind, window seconds) as compare will sample; a problem in ``result``
    when there are too few samples to judge: one baseline run for per-trace samples (a
    single candidate run is judged against the baseline runs' spread), fewer than
    ``[gate] min_windows`` windows in a trace for per-window ones."""
    from ..analysis.metrics import window_edges

    settings = result.settings
    try:
        kind, window = sample_plan(
            settings.samples, list(sides.values()), settings.window, "[gate] window"
        )
    except OptionError as exc:  # a window the traces cannot be cut into
        result.problems.append(f"{result.rules_source}: [gate] window {exc.value}: {exc.problem}")
        return "per-window", None
    if kind == "per-trace":
        if len(sides.get("baseline", ())) < 2:
            result.problems.append(
                f"give >= 2 baseline runs (got {len(sides.get('baseline', ()))}): "
                "one run has no between-run spread to judge a candidate against "
                '(samples = "per-window" judges windows of the runs instead)'
            )
        return kind, window
    assert window is not None  # per-window samples always have a window length
    names = result.trace_names()
    for name, traces in sides.items():
        for t in traces:
            # as many windows as compare will sample
            n = len(window_edges(t.meta.first_ts_ns, t.meta.last_ts_ns, window)) - 1
            if n < settings.min_windows:
                result.problems.append(
                    f"{name} {trace_name(names, t)}: {n} window(s) of "
                    f"{window:g} s, fewer than the {settings.min_windows} a judgement "
                    "needs ([gate] window, min_windows)"
                )
    return kind, window


def measurable_rules(
    result: GateResult, sides: dict, rules: list[Rule], with_work: bool = False
) -> list[Rule]:
    """The ``rules`` whose metric every trace's events can give (and, for a count per
    unit of work, the runs' work is given). A metric the events cannot give is unknown,
    not zero: its rule gets its ``unmeasured_status`` in ``result``."""
    from ..analysis.metrics import catalogue_entry, missing_events
    from ..work import is_per_op

    measurable = []
    names = result.trace_names()
    for rule in rules:
        entry = catalogue_entry(rule.metric)
        if is_per_op(rule.metric) and not with_work:
            result.results.append(
                RuleResult(
                    rule,
                    entry.unit,
                    entry.direction,
                    "error",
                    message=f"{rule.metric} is a count per unit of work: give the runs' "
                    "work (--work N, bench or cpu)",
                )
            )
            continue
        lacking = [
            f"{name} {trace_name(names, t)} has no {ev} events"
            for name, traces in sides.items()
            for t in traces
            for ev in missing_events(t, rule.metric)
        ]
        if lacking:
            result.results.append(
                RuleResult(
                    rule,
                    entry.unit,
                    entry.direction,
                    rule.unmeasured_status,
                    message=f"{rule.metric} cannot be measured: {lacking[0]}"
                    + (f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else ""),
                )
            )
        else:
            measurable.append(rule)
    return measurable


def judge_rules(
    result: GateResult,
    sides: dict,
    rules: list[Rule],
    kind: str,
    window: float | None,
    thresholds: dict | None,
    progress: Callable[[float], None] | None = None,
    work: WorkSpec | Mapping[str, WorkSpec] | None = None,
) -> None:
    """Compare the sides on the rules' metrics (schedwake.compare, the same samples and
    test) and judge each rule from its metric's mean row."""
    settings = result.settings
    comp = run_compare(
        {"baseline": sides["baseline"], "candidate": sides["candidate"]},
        window_s=window,
        samples=kind,
        significance=settings.significance,
        alpha=settings.alpha,
        metrics=[r.metric for r in rules],
        topology_file=None,
        llc=None,
        thresholds=thresholds,
        progress=progress,
        work=work,
    )
    result.comparison = comp
    rows = {r.metric.name: r for r in comp.comparison.rows if r.is_mean_row}
    measured = {
        rule.metric: _measure(rows[rule.metric], settings) for rule in rules if rule.metric in rows
    }
    adjusted = _adjusted_p(rules, measured, settings)
    for rule in rules:
        result.results.append(
            judge_rule(
                rule,
                rows.get(rule.metric),
                settings.significance,
                measured.get(rule.metric),
                adjusted.get(rule.metric),
                settings.alpha,
            )
        )


@dataclass(frozen=True)
class Measured:
    """What a rule judges of its metric's mean row: the two sides' centres (geometric
    means on the log scale, else the row's means), the significance of their
    difference and the candidate's ratio with its 95% interval, and the scale used."""

    baseline: float
    candidate: float
    sig: Any  # stats.SigResult
    effect: Any  # stats.Effect
    scale: str  # "log" or "raw"
    #: every sample of both sides is one and the same value (0 cross-LLC migrations on
    #: one LLC): a test that can never reject
    constant: bool = False


def _measure(row: StatRow, settings: Settings) -> Measured:
    """The rule's view of a mean row under ``[gate] scale``: on the log scale (when every
    tested value is above zero) the geometric means, the test of the logs and the ratio
    of geometric means; else the row's own means, test and ratio (the mmtests table's)."""
    from ..compare import stats as st

    m = row.metric
    tested = [st.clean_samples(x) for x in (m.test_samples or m.samples)[:2]]
    pooled = np.concatenate(tested) if tested else np.empty(0)
    constant = bool(pooled.size) and bool(np.all(pooled == pooled[0]))
    if settings.scale == "log" and all(t.size for t in tested) and st.can_log(*tested):
        logs = [np.log(t) for t in tested]
        return Measured(
            st.geometric_mean(tested[0]),
            st.geometric_mean(tested[1]),
            st.significance(logs[0], logs[1], settings.significance, settings.alpha),
            st.log_ratio_ci(
                tested[0],
                tested[1],
                df_rule="lkml" if settings.significance == "ttest" else "welch",
            ),
            "log",
            constant,
        )
    return Measured(
        float(row.values[0]), float(row.values[1]), row.sig[1], row.effect(1), "raw", constant
    )


def _adjusted_p(rules: list[Rule], measured: dict, settings: Settings) -> dict[str, float]:
    """Each significance-requiring rule's p after Holm's correction over the family of
    such rules whose metric was tested by a p (``[gate] multiplicity = "holm"``): an
    unchanged build then breaks any of them with probability at most alpha. A metric
    with one constant value on both sides is left out (its test cannot reject). Empty
    for "none" and for ci95, which gives no p."""
    from ..compare import stats as st

    if settings.multiplicity == "none" or settings.significance == "ci95":
        return {}
    family = {}
    for rule in rules:
        got = measured.get(rule.metric)
        sig = None if got is None else got.sig
        if rule.significance and sig is not None and sig.testable and math.isfinite(sig.detail):
            if got is not None and not got.constant:
                family[rule.metric] = float(sig.detail)
    if len(family) < 2:
        return family
    adj = st.holm(list(family.values()))
    return {m: float(p) for m, p in zip(family, adj)}


def judge_rule(
    rule: Rule,
    row: StatRow | None,
    test: str,
    measured: Measured | None = None,
    p_adjusted: float | None = None,
    alpha: float = 0.05,
) -> RuleResult:
    """The verdict of one rule from the mean row of its metric, as ``measured``
    (:func:`_measure`; default the row's own means and test); ``p_adjusted``: its p
    after the rules' multiplicity correction, which then decides significance."""
    from ..analysis.metrics import catalogue_entry
    from ..compare import stats as st

    entry = catalogue_entry(rule.metric)
    res = RuleResult(rule, entry.unit, entry.direction, "pass")
    if row is not None:  # (a benchmark result's unit and direction are its own)
        res.unit, res.direction = row.metric.unit, row.metric.direction
    if row is None:
        res.status = rule.unmeasured_status
        res.message = f"{rule.metric} was not measured (no samples)"
        if entry.name == "bench_{name}":
            res.message = (
                f"{rule.metric} was not measured: no trace has that benchmark result "
                "beside it (TRACE.bench.json, fio.json, dbench.txt)"
            )
        return res
    got = measured or Measured(
        float(row.values[0]), float(row.values[1]), row.sig[1], row.effect(1), "raw"
    )
    base, cand = got.baseline, got.candidate
    res.scale = got.scale
    res.n = tuple(int(st.clean_samples(s).size) for s in row.metric.samples)
    if math.isnan(base) or math.isnan(cand):
        res.status = rule.unmeasured_status
        side = "baseline" if math.isnan(base) else "candidate"
        res.message = f"{rule.metric} has no value on the {side} side (no samples)"
        return res
    sig = got.sig
    res.baseline, res.candidate = base, cand
    res.change = cand - base
    gain = base - cand if res.direction == "lower" else cand - base
    res.gain_pct = (
        gain / abs(base) * 100.0
        if base != 0
        else (0.0 if gain == 0 else math.copysign(math.inf, gain))
    )
    res.worsening = max(-gain, 0.0)
    res.limit = rule.allowed * abs(base) if rule.relative else rule.allowed
    res.significant = bool(sig.significant)
    res.testable = bool(sig.testable)
    res.detail = float(sig.detail) if math.isfinite(sig.detail) else None
    res.statistic = "cidiff" if test == "ci95" else "p"
    if p_adjusted is not None and res.testable:
        res.p_adjusted = p_adjusted
        res.significant = bool(p_adjusted < alpha)
    res.gain_ci = gain_interval(got.effect, res.direction)
    settle(
        res,
        why_untestable=str(sig.reason),
        remedy="give more iterations",
        allowed=rule.allowed_text(),
        change=lambda more: change_text(res, more),
    )
    return res
