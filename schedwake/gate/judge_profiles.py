"""Rules on a profile's function (``self_share:SYMBOL``): the sides' profiles
compared (:func:`schedwake.compare_profiles`), each share's growth judged in
percentage points against its Benjamini-Hochberg q."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..errors import OptionError, TraceError
from ..sidetrace import SideSpec, side_items
from .inputs import Expand, input_problems, load_side
from .result import GateResult, RuleResult, settle
from .rules import Rule, fmt_num, profile_rule_parts

if TYPE_CHECKING:
    import pandas as pd

    from ..profile import Profile
    from ..profile.compare import ProfileComparison
    from ..trace import Trace


def load_profiles(
    result: GateResult,
    specs: dict[str, SideSpec],
    expand: Expand,
    set_paths: bool,
    kallsyms: str | Path | None,
) -> dict[str, list[Profile]]:
    """{side: [Profile, ...]} of the baseline and candidate specs (paths, globs or
    loaded traces with their samples), read whole (:func:`load_side` with every
    event); what cannot be profiled goes into ``result.problems``. ``set_paths``: the
    sides' paths are the result's (no metric rule read them); ``kallsyms``: the
    recorded kernel's kallsyms file."""
    from ..profile import profile
    from ..trace import load

    out: dict[str, list[Profile]] = {}
    for side, spec in specs.items():
        traces, paths = load_side(
            side,
            side_items(spec, side),
            functools.partial(load, kallsyms=kallsyms),
            expand,
            result.problems,
        )
        if set_paths:
            setattr(result, f"{side}_paths", paths)
        out[side] = []
        for trace in traces:
            problems = input_problems(side, trace, result.settings, rates=False)
            result.problems.extend(problems)
            try:
                if not problems:
                    # (a profile reads the samples of a loaded Trace's tables)
                    out[side].append(profile(cast("Trace", trace), kallsyms=kallsyms))
            except TraceError as exc:
                result.problems.append(f"{side}: {exc}")
    return out


def judge_profile_rules(
    result: GateResult, profiles: dict[str, list[Profile]], rules: list[Rule]
) -> None:
    """Judge each rule on a function from :func:`schedwake.compare_profiles` of the two
    sides: broken when the share grew by more than ``allowed`` percentage points (and,
    with significance, its Benjamini-Hochberg q is below ``alpha``)."""
    from ..profile.compare import compare_profiles

    base, cand = profiles["baseline"], profiles["candidate"]
    try:
        # the comparison's own family of tests (its default minimum effect filters
        # it): a rule asks what `schedwake profile` would star, with its own limit
        cmp = compare_profiles({"baseline": base, "candidate": cand}, alpha=result.settings.alpha)
    except OptionError as exc:  # the sides sample different events
        result.problems.append(f"profiles: {exc.problem} ({exc.value})")
        return
    testable = len(base) >= 2 and len(cand) >= 2
    # each symbol's rows found once (a filter of every row per rule made 20,000 rules
    # take 20 s): a rule's lookup is then a dict's
    rows_of: dict[str, list[int]] = {}
    for i, sym in enumerate(cmp.rows["symbol"].tolist()):
        rows_of.setdefault(sym, []).append(i)
    for rule in rules:
        measure, symbol = profile_rule_parts(rule.metric) or ("", "")
        res = RuleResult(rule, "%", "lower", "pass", n=(len(base), len(cand)))
        found = rows_of.get(symbol)
        hit = cmp.rows.iloc[found] if found else None
        if hit is not None and rule.dso is not None:
            hit = hit[hit.dso == rule.dso]
        where = f" in {rule.dso}" if rule.dso else ""
        if hit is None or hit.empty:
            res.status = rule.unmeasured_status
            res.message = f"{rule.metric}: no run sampled {symbol}{where}" + (
                ' (missing = "skip")'
                if res.status == "skipped"
                else ' (check the name; missing = "skip" lets the rule pass over it)'
            )
        elif len(hit) > 1:
            res.status = "error"
            res.message = (
                f"{rule.metric}: {symbol} is in {len(hit)} DSOs ({', '.join(hit.dso)}): "
                "name one with dso = ..."
            )
        else:
            _judge_share(res, hit.iloc[0], measure, result.settings.alpha, testable)
            if res.status == "broken":
                res.why = _callers_why(cmp, symbol, hit.iloc[0]["dso"])
        result.results.append(res)


def _judge_share(
    res: RuleResult, row: pd.Series, measure: str, alpha: float, testable: bool
) -> None:
    rule = res.rule
    base, cand = float(row[f"{measure}[baseline]"]) * 100, float(row[f"{measure}[candidate]"]) * 100
    q = float(row[f"{measure}:q[candidate]"])
    res.baseline, res.candidate, res.change = base, cand, cand - base
    res.gain_pct = (base - cand) / base * 100.0 if base else (0.0 if cand == base else -math.inf)
    res.worsening, res.limit = max(cand - base, 0.0), rule.allowed
    res.testable = testable
    res.detail, res.statistic = (q if math.isfinite(q) else None), "q"
    res.significant = bool(testable and math.isfinite(q) and q < alpha)
    settle(
        res,
        why_untestable=f"runs a side: {'/'.join(map(str, res.n or ()))}",
        remedy="give 2 or more runs a side",
        allowed=f"+{fmt_num(rule.allowed)} pp",
        change=lambda more: (
            f"{base:.2f}% -> {cand:.2f}% of the samples ({cand - base:+.2f} pp{more})"
        ),
    )


def _callers_why(cmp: ProfileComparison, symbol: str, dso: str) -> list[str]:
    """Who calls the function on the candidate side: its two largest callers' chains."""
    tree = cmp.callers(symbol, dso, "candidate")
    out = []
    for node in tree["callers"][:2]:
        chain = [node]
        while chain[-1]["callers"] and len(chain) < 4:
            chain.append(chain[-1]["callers"][0])
        out.append(
            f"candidate: {node['share'] * 100:.2f}% of the samples in {symbol} called from "
            + " <- ".join(n["symbol"] for n in chain)
        )
    return out
