"""``schedwake.gate(baseline, candidate, rules)``: the sides loaded, the metric rules
and the profile rules judged, each broken rule explained."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..compare import expand_paths, load_model_trace, sample_mode
from ..errors import TraceError
from ..sidetrace import SideSpec, SideTrace, side_items
from ..work import WorkSpec
from .explain import explain_broken
from .inputs import Expand, input_problems, judge_overlap, load_side, trace_name
from .judge_metrics import judge_rules, measurable_rules, sampling
from .judge_profiles import judge_profile_rules, load_profiles
from .result import GateResult
from .rules import Rule, default_rules, load_rules, per_work_rule

if TYPE_CHECKING:
    from ..profile import Profile


def gate(
    baseline: SideSpec,
    candidate: SideSpec,
    rules: str | Path | tuple | None = None,
    *,
    topology_file: str | Path | None = None,
    llc: Iterable[str] | None = None,
    thresholds: dict | None = None,
    loader: Callable[[str], SideTrace] | None = None,
    expand: Expand | None = None,
    progress: Callable[[float], None] | None = None,
    kallsyms: str | Path | None = None,
    work: WorkSpec | Mapping[str, WorkSpec] | None = None,
    samples: str | None = None,
) -> GateResult:
    """Judge ``candidate`` against ``baseline`` under ``rules``.

    ``baseline`` / ``candidate``: a trace path, glob pattern or :class:`schedwake.Trace`,
    or a sequence of those (the iterations of that side). ``rules``: a TOML file path, a
    ``(Settings, [Rule, ...])`` pair, or None for :func:`default_rules`. ``topology_file``
    / ``llc`` / ``thresholds``: as :func:`schedwake.compare`. ``loader``: how a path is
    read (default :func:`schedwake.load` of the model's events); ``expand(pattern,
    side)``: the paths of a pattern (default: the files it matches). A batch dataset
    gives both (``schedwake.BatchDataset``): the verdict is then judged from the
    dataset's analyses, not from the traces. ``progress``: gets the fraction of the
    traces measured. ``kallsyms``: the recorded kernel's kallsyms file, for perf.data
    traces and profiles (as :func:`schedwake.load` and :func:`schedwake.profile` take it).
    ``work``: the runs' work, for rules on counts per unit of work
    (``context_switches_per_op``): a number, "bench" or "cpu" for every run, or
    ``{"baseline": ..., "candidate": ...}`` (:mod:`schedwake.work`). ``samples``:
    overrides the rules' ``[gate] samples`` (``"per-window"`` to judge windows of the
    runs).

    Input that cannot be judged does not raise: it becomes ``problems`` (exit code 2). A
    bad rules file raises TraceError, since nothing could be judged under it.
    """
    from ..analysis import check_thresholds
    from ..detect import thresholds as resolve_thresholds

    check_thresholds(resolve_thresholds(thresholds))  # a bad override: nothing to judge with
    if rules is None:
        settings, rule_list = default_rules()
        source = "defaults"
        if work is not None:  # a faster run must not read as a worse one: per unit of work
            rule_list = [per_work_rule(r) for r in rule_list]
            source = "defaults, per unit of work (--work)"
    elif isinstance(rules, tuple):
        settings, rule_list = rules
        source = "API"
    else:
        settings, rule_list = load_rules(rules)
        source = str(rules)
    if samples is not None:
        settings = dataclasses.replace(settings, samples=sample_mode(samples))
    result = GateResult(settings, list(rule_list), rules_source=source)
    metric_rules = [r for r in rule_list if not r.on_profile]
    profile_rules = [r for r in rule_list if r.on_profile]
    specs = {"baseline": baseline, "candidate": candidate}
    started = time.perf_counter()
    sides, profiles = {}, {}
    if metric_rules:
        read = loader or functools.partial(load_model_trace, kallsyms=kallsyms)
        sides = _load_sides(result, specs, read, expand or expand_paths, topology_file, llc)
    if profile_rules:
        profiles = load_profiles(result, specs, expand or expand_paths, not metric_rules, kallsyms)
    result.seconds_reading = time.perf_counter() - started
    # the same files on both sides judge nothing; said after what reading and judging
    # them finds, so that a damaged file is named first
    same = judge_overlap(result, baseline, candidate, expand or expand_paths)
    if not result.problems:
        _judge_sides(result, sides, profiles, rule_list, thresholds, progress, work)
    if same:
        result.problems.append(same)
    return result


def _judge_sides(
    result: GateResult,
    sides: dict[str, list[SideTrace]],
    profiles: dict[str, list[Profile]],
    rule_list: list[Rule],
    thresholds: dict | None,
    progress: Callable[[float], None] | None,
    work: WorkSpec | Mapping[str, WorkSpec] | None = None,
) -> None:
    """Judge the loaded sides by the rules, into ``result`` (results sorted as the rules
    were given; a problem when every rule was skipped)."""
    metric_rules = [r for r in rule_list if not r.on_profile]
    profile_rules = [r for r in rule_list if r.on_profile]
    started = time.perf_counter()
    if metric_rules:
        plan = sampling(result, sides)
        if result.problems:
            return
        kind, window = plan
        measurable = measurable_rules(result, sides, metric_rules, work is not None)
        if measurable:
            try:
                judge_rules(result, sides, measurable, kind, window, thresholds, progress, work)
            except TraceError as exc:  # a run whose work cannot be found
                result.problems.append(f"--work: {exc}")
                return
            explain_broken(result, sides["candidate"], thresholds)
    if profile_rules:
        judge_profile_rules(result, profiles, profile_rules)
    result.seconds_judging = time.perf_counter() - started
    order = {(r.metric, r.dso): i for i, r in enumerate(rule_list)}
    result.results.sort(key=lambda r: order[(r.rule.metric, r.rule.dso)])
    if result.results and all(r.status == "skipped" for r in result.results):
        result.problems.append(
            "every rule was skipped (its metric cannot be measured): nothing was judged"
        )


def _load_sides(
    result: GateResult,
    specs: dict[str, SideSpec],
    loader: Callable[[str], SideTrace],
    expand: Expand,
    topology_file: str | Path | None,
    llc: Iterable[str] | None,
) -> dict[str, list[SideTrace]]:
    """{side: [Trace, ...]} of the baseline and candidate specs (a path, glob, Trace or a
    sequence of those), with the topology options applied; their paths go into
    ``result``, and what makes a trace unusable for a verdict into ``result.problems``
    (a trace that does not load, lost events, raw timestamps, ...)."""
    sides: dict[str, list[SideTrace]] = {}
    for name, spec in specs.items():
        traces, paths = load_side(name, side_items(spec, name), loader, expand, result.problems)
        sides[name] = traces
        setattr(result, f"{name}_paths", paths)
    names = result.trace_names()
    for name, traces in sides.items():
        for t in traces:
            if topology_file is not None or llc:
                try:
                    t.use_topology(topology_file, llc)
                except TraceError as exc:
                    result.problems.append(str(exc))
            result.problems.extend(input_problems(name, t, result.settings, trace_name(names, t)))
    return sides
