"""CI regression gate (docs/gate.md): judge candidate traces against baseline traces.

``schedwake.gate(baseline, candidate, rules)`` measures the rule metrics of both sides with
the comparison machinery (:func:`schedwake.compare`: the same samples, means and
significance tests as the mmtests table) and returns a :class:`GateResult` whose
``exit_code`` a CI job uses:

* ``0`` every rule holds;
* ``1`` a rule is broken: the candidate's mean is worse than the baseline's by more than
  the rule allows (and, when the rule asks for it, significantly so);
* ``2`` the input cannot be judged: a trace is unreadable or empty, lost more events than
  allowed, is too short, or lacks the events a rule needs; significance a rule needs
  cannot be tested; the rules file is invalid. The gate fails closed: never 0 when it
  could not judge.

Rules come from TOML (:data:`DEFAULT_RULES_TOML` is the default file, printed by
``schedwake gate --print-default-rules``)::

    [gate]
    significance = "ttest"        # or "ci95", as schedwake compare
    max_lost_events = 0

    [rules.pingpong_episodes_per_s]
    allowed = "10%"               # or an absolute amount in the metric's unit: 2.5
    significance = true           # a worsening beyond `allowed` must also be significant
    missing = "error"             # or "skip": what to do if the metric cannot be measured

Rules on a profile's functions (perf.data or ``perf script`` text of ``perf record -g``,
several runs a side) name the measure and the function; ``allowed`` is in percentage
points of the samples, and a share that grows by more is broken (significance: the
Benjamini-Hochberg q of :func:`schedwake.compare_profiles` below ``alpha``)::

    [rules."self_share:native_queued_spin_lock_slowpath"]
    allowed = 2                   # percentage points ("2pp" too)
    dso = "[kernel.kallsyms]"     # when the name is in more than one DSO

The renderers (text, JUnit XML, Markdown, JSON) are in :mod:`schedwake.report.gate`:
``report.gate.text(result)`` and so on.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .compare import (
    SAMPLE_MODES,
    SIGNIFICANCE,
    CompareResult,
    check_alpha,
    check_window,
    distinct_names,
    expand_paths,
    load_model_trace,
    sample_mode,
    sample_plan,
)
from .compare import compare as run_compare
from .compressed import open_regular, read_bounded
from .errors import OptionError, TraceError
from .mmtests import NEW_TEXT, gain_interval, gain_pct_text
from .model.events import timestamp_problem
from .sidetrace import is_path, side_items
from .sidevalues import has_bad_chars, shown

__all__ = [
    "gate",
    "GateResult",
    "Rule",
    "RuleResult",
    "Settings",
    "load_rules",
    "parse_rules",
    "default_rules",
    "DEFAULT_RULES_TOML",
]

DEFAULT_RULES_TOML = """\
# schedwake gate rules: `schedwake gate --rules THIS_FILE --baseline ... --candidate ...`
# Metric names are the identifiers of `schedwake analyze --format json` and `schedwake
# compare` (docs/compare.md). A rule is broken when the candidate's mean is worse than the
# baseline's by more than `allowed` (and, with `significance = true`, the difference is
# significant by the rule in [gate]). Percentages are gains as in mmtests: + is better.

[gate]
significance = "ttest"   # "ttest": two-sided t-test at `alpha` (the LKML tables); "ci95";
                         # "mannwhitney": rank-sum test (heavy tails; needs more runs)
alpha = 0.05             # stricter than compare's 0.10 (mmtests'): a broken rule fails a build
multiplicity = "holm"    # the rules are one family: Holm's correction keeps the chance that
                         # an unchanged build breaks any rule at most alpha; "none": per rule
scale = "log"            # judge geometric means and test the logs of the runs' values
                         # (scheduler rates and latencies are skewed); "raw": mmtests' means
samples = "auto"         # one value per run (trace); a single candidate run is judged against
                         # the baseline runs' spread; needs >= 2 baseline runs. "per-window":
                         # windows of the runs, as batch means (only when asked for)
# window = 0.5           # seconds per window of per-window samples (default: automatic)
max_lost_events = 0      # per trace; a drop of unknown size always refuses the trace
min_switches = 200       # sched_switch events a trace needs: a rate from fewer is noise
min_duration = 0         # seconds; shorter traces are refused (runs of fixed work may be short)
min_windows = 10         # per trace, when the samples are per-window

[rules.pingpong_episodes_per_s]
allowed = "25%"          # "N%" of the baseline mean, or a number in the metric's unit
significance = true
missing = "error"        # "error": exit 2 if it cannot be measured; "skip": ignore

[rules.wakeup_migrations_per_s]
allowed = "25%"
significance = true
missing = "error"

[rules.cross_llc_migrations_per_s]
allowed = "25%"
significance = true
missing = "error"

[rules.context_switches_per_s]
allowed = "25%"
significance = true
missing = "error"

[rules.wake_to_run_p99_us]
allowed = "50%"
significance = true
missing = "error"
"""

_RULE_KEYS = {"allowed", "significance", "missing"}
#: The largest rules file read, and the most rules in one (docs/gate.md): reading one
#: takes time linear in its rules, about 1 ms a profile rule.
MAX_RULES_BYTES = 4 << 20
MAX_RULES = 10000
#: The longest metric, function or DSO name in a rule.
MAX_NAME = 1024


def _shown(text: str, width: int = 60) -> str:
    """A value as an error message quotes it: cut short, non-ASCII escaped."""
    return shown(text, width)


def _names(keys) -> str:
    """Unknown keys as a message lists them: the first few, each cut short."""
    keys = sorted(map(str, keys))
    more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
    return ", ".join(_shown(k, 40) for k in keys[:5]) + more


#: The measures a rule on a profile's function can judge (``self_share:SYMBOL``).
PROFILE_MEASURES = ("self_share", "children_share")


def profile_rule_parts(metric: str) -> tuple[str, str] | None:
    """``(measure, symbol)`` of a rule on a profile's function, else None."""
    measure, sep, symbol = metric.partition(":")
    return (measure, symbol) if sep and measure in PROFILE_MEASURES and symbol else None


@dataclass(frozen=True)
class Settings:
    """The ``[gate]`` table: how samples are taken and judged, and what input is refused."""

    significance: str = "ttest"
    alpha: float = 0.05
    #: "holm": the metric rules tested by p are one family (Holm-Bonferroni); "none"
    multiplicity: str = "holm"
    #: "log": judge the runs' values on the log scale (geometric means; the test and the
    #: interval of the logs) where every value is above zero; "raw": the arithmetic
    #: (mmtests) means and test
    scale: str = "log"
    samples: str = "auto"
    window: float | None = None
    max_lost_events: int = 0
    #: sched_switch events a trace needs (its rates' Poisson noise is ~1/sqrt of it)
    min_switches: int = 200
    min_duration: float = 0.0
    min_windows: int = 10


def _text_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def take(v) -> str:
        if v not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, not {v!r}")
        return v

    return take


def _number(v) -> float:
    """A TOML number (an integer or a finite float, at most 1e18 in size; true/false are
    not numbers)."""
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not abs(v) <= 1e18  # (NaN too; a 4,000-digit integer is no float)
    ):
        raise ValueError(f"must be a finite number (at most 1e18), not {_shown(repr(v))}")
    return float(v)


def _count(v) -> int:
    """A TOML integer up to 2**63-1 (1.5, true and "3" are not counts)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"must be a whole number, not {_shown(repr(v))}")
    if abs(v) > (1 << 63) - 1:
        raise ValueError(f"must be at most 2**63-1, not {_shown(str(v))}")
    return v


def _at_least(take: Callable[[Any], Any], low) -> Callable[[Any], Any]:
    def checked(v):
        got = take(v)
        if got < low:
            raise ValueError(f"must be >= {low}, not {v!r}")
        return got

    return checked


def _alpha(v) -> float:
    try:
        return check_alpha(_number(v))
    except OptionError:
        raise ValueError(f"must be between 0 and 1 (exclusive), not {v!r}") from None


#: How the metric rules' tests are corrected for their number (``[gate] multiplicity``).
MULTIPLICITY = ("holm", "none")


def _sample_setting(v) -> str:
    if not isinstance(v, str):
        raise ValueError(f"must be one of {', '.join(SAMPLE_MODES)}, not {v!r}")
    try:
        return sample_mode(v)
    except OptionError as exc:
        raise ValueError(f"{exc.problem}, not {v!r}") from None


def _window(v) -> float:
    try:
        return check_window(_number(v))
    except OptionError as exc:
        raise ValueError(f"{v!r}: {exc.problem}") from None


#: Each [gate] key (the Settings fields: the defaults are theirs) and how its TOML value
#: is checked and taken (a value of the wrong kind or out of range raises ValueError)
_SETTINGS_TYPES: dict[str, Callable[[Any], Any]] = {
    "significance": _text_of(SIGNIFICANCE),
    "alpha": _alpha,
    "multiplicity": _text_of(MULTIPLICITY),
    "scale": _text_of(("log", "raw")),
    "samples": _sample_setting,
    "window": _window,
    "max_lost_events": _at_least(_count, 0),
    "min_switches": _at_least(_count, 0),
    "min_duration": _at_least(_number, 0),
    "min_windows": _at_least(_count, 1),
}


@dataclass(frozen=True)
class Rule:
    """One metric's rule: how much worse the candidate may be, and on what evidence."""

    metric: str
    #: The allowed worsening: a fraction of the baseline mean (``relative``) or an amount
    #: in the metric's unit.
    allowed: float
    relative: bool
    significance: bool = True
    missing: str = "error"
    #: The name the rules file gave, when it was a former name of ``metric``.
    written_as: str | None = None
    #: A profile rule's DSO, when its symbol is in more than one.
    dso: str | None = None

    @property
    def on_profile(self) -> bool:
        """A rule on a profile's function (``self_share:SYMBOL``)."""
        return profile_rule_parts(self.metric) is not None

    def allowed_text(self) -> str:
        """The worst gain the rule allows (``-25%``, ``-2.5``, ``-2pp`` of a share): a
        gain is signed as in mmtests, + better and - worse
        (:data:`schedwake.mmtests.SIGN_CONVENTION`)."""
        if self.on_profile:
            return f"-{_num(self.allowed)}pp"
        return f"-{_num(self.allowed * 100)}%" if self.relative else f"-{_num(self.allowed)}"

    @property
    def unmeasured_status(self) -> str:
        """The status of this rule when its metric cannot be measured (``missing``)."""
        return "skipped" if self.missing == "skip" else "error"


@dataclass
class RuleResult:
    """The verdict of one rule: ``status`` is pass, broken, skipped or error."""

    rule: Rule
    unit: str
    direction: str
    status: str
    baseline: float | None = None
    candidate: float | None = None
    #: candidate - baseline (signed, in the metric's unit), and the gain in % of the
    #: baseline as mmtests signs it: + better, - worse, whichever way the metric points.
    change: float | None = None
    gain_pct: float | None = None
    #: How much worse the candidate is (0 if better), and the limit it was held to.
    worsening: float | None = None
    limit: float | None = None
    significant: bool | None = None
    #: p-value (ttest, mannwhitney), cidiff ratio (ci95) or, for a rule on a profile's
    #: function, the Benjamini-Hochberg q; None if not testable. ``statistic`` names it:
    #: p, cidiff, q.
    detail: float | None = None
    statistic: str = ""
    #: The p that decided significance after the rules' multiplicity correction (Holm),
    #: when there was one; None otherwise.
    p_adjusted: float | None = None
    #: The 95% interval of ``gain_pct`` (low, high; + better), when it can be given.
    gain_ci: tuple[float, float] | None = None
    #: "log": baseline/candidate are geometric means and the test is on the logs of the
    #: runs' values; "raw": the mmtests row's means and test (``[gate] scale``).
    scale: str = "raw"
    testable: bool | None = None
    n: tuple[int, ...] | None = None
    message: str = ""
    #: For a broken rule: the candidate's findings behind it, one line each, and the
    #: command that shows them in full (:func:`_explain`).
    why: list[str] = field(default_factory=list)


@dataclass
class GateResult:
    """Everything the gate decided, for the renderers of :mod:`schedwake.report.gate`."""

    settings: Settings
    rules: list[Rule]
    results: list[RuleResult] = field(default_factory=list)
    #: Why the input cannot be judged (one line each); non-empty means exit code 2.
    problems: list[str] = field(default_factory=list)
    baseline_paths: list[str] = field(default_factory=list)
    candidate_paths: list[str] = field(default_factory=list)
    #: The comparison behind the verdicts (None when the input was refused before it).
    comparison: CompareResult | None = None
    rules_source: str = "defaults"
    #: Wall-clock seconds spent reading the traces and judging the rules (JUnit times).
    seconds_reading: float = 0.0
    seconds_judging: float = 0.0
    #: A note when some traces are both baseline and candidate (all of them: a problem).
    overlap: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.problems or any(r.status == "error" for r in self.results):
            return 2
        return 1 if any(r.status == "broken" for r in self.results) else 0

    @property
    def verdict(self) -> str:
        return {0: "PASS", 1: "FAIL", 2: "ERROR"}[self.exit_code]

    def trace_names(self) -> dict[str, str]:
        """``{path: name}`` of the baseline's and the candidate's traces: the shortest
        end of each path that tells it apart from the others (``run1/trace.dat``)."""
        return distinct_names(self.baseline_paths + self.candidate_paths)

    def notes(self) -> list[str]:
        """Caveats of the traces, and what one trace a side can and cannot tell."""
        out = [
            f"rule {r.written_as!r} is the former name of {r.metric}: rename it in the rules"
            for r in self.rules
            if r.written_as
        ]
        out += self.overlap
        out += [] if self.comparison is None else list(self.comparison.notes())
        return out

    def headline(self) -> str:
        broken = [r for r in self.results if r.status == "broken"]
        errors = self.problems + [r.message for r in self.results if r.status == "error"]
        if errors:
            return (
                f"ERROR: cannot judge ({len(errors)} problem"
                f"{'s' if len(errors) != 1 else ''}): {errors[0]}"
            )
        if broken:
            return (
                f"FAIL: {len(broken)} of {len(self.results)} rule"
                f"{'s' if len(self.results) != 1 else ''} broken: "
                + ", ".join(r.rule.metric for r in broken)
            )
        skipped = sum(r.status == "skipped" for r in self.results)
        tail = f" ({skipped} skipped)" if skipped else ""
        return f"PASS: {len(self.results) - skipped} rules hold{tail}"


# -- rules -------------------------------------------------------------------------------------


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.6g}"


def _allowed(metric: str, value, where: str) -> tuple[float, bool]:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TraceError(
            where, f'rule {metric!r}: allowed must be "N%" or a number, not {_shown(repr(value))}'
        )
    if isinstance(value, int) and abs(value) > 10**18:
        raise TraceError(where, f"rule {metric!r}: allowed {_shown(str(value))} is out of range")
    text = str(value).strip()
    relative = text.endswith("%")
    try:
        amount = float(text[:-1] if relative else text)
    except ValueError:
        raise TraceError(
            where, f'rule {metric!r}: allowed must be "N%" or a number, not {_shown(repr(value))}'
        ) from None
    if not math.isfinite(amount) or not 0 <= amount <= 1e18:
        raise TraceError(
            where,
            f"rule {metric!r}: allowed must be a finite amount from 0 to 1e18, "
            f"not {_shown(repr(value))}",
        )
    return (amount / 100.0 if relative else amount), relative


def parse_rules(text: str, where: str = "rules") -> tuple[Settings, list[Rule]]:
    """Settings and rules from TOML text. Raises TraceError (one line naming ``where``)
    for a syntax error, an unknown key or metric, or a value of the wrong kind."""
    from .metrics import canonical_name, catalogue_entry

    if len(text) > MAX_RULES_BYTES:
        raise TraceError(
            where, f"holds more than {MAX_RULES_BYTES >> 20} MiB: too large for a rules file"
        )
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TraceError(where, f"not valid TOML: {_shown(str(exc), 160)}") from None
    except RecursionError:
        raise TraceError(where, "not a rules file: its TOML is nested too deeply") from None
    except ValueError:  # (an integer of more than 4,300 digits: int() refuses it)
        raise TraceError(where, "not a rules file: a number of more than 4300 digits") from None
    unknown = set(doc) - {"gate", "rules"}
    if unknown:
        raise TraceError(
            where,
            f'unknown table(s) {_names(unknown)} (expected [gate] and [rules."METRIC"])',
        )
    g = doc.get("gate", {})
    if not isinstance(g, dict):
        raise TraceError(where, "[gate] must be a table")
    bad = set(g) - set(_SETTINGS_TYPES)
    if bad:
        raise TraceError(
            where,
            f"[gate]: unknown key(s) {_names(bad)} (known: {', '.join(sorted(_SETTINGS_TYPES))})",
        )
    values = {}
    for key, value in g.items():
        try:
            values[key] = _SETTINGS_TYPES[key](value)
        except ValueError as exc:
            raise TraceError(where, f"[gate] {key} {_shown(str(exc), 100)}") from None
    settings = Settings(**values)
    table = doc.get("rules", {})
    if not isinstance(table, dict) or not table:
        raise TraceError(where, 'no rules: add at least one [rules."METRIC"] table')
    if len(table) > MAX_RULES:
        raise TraceError(where, f"{len(table)} rules: a rules file holds at most {MAX_RULES}")
    rules: list[Rule] = []
    # (metric, dso) of the rules so far: a second rule of one is refused in O(1), so that
    # a file is read in time linear in its rules (20,000 profile rules took 31 s)
    seen: set[tuple[str, str | None]] = set()
    for written, spec in table.items():
        if profile_rule_parts(written) is not None:
            rule = _profile_rule(written, spec, where, seen)
            seen.add((rule.metric, rule.dso))
            rules.append(rule)
            continue
        if len(written) > MAX_NAME or has_bad_chars(written):
            raise TraceError(where, f"[rules]: {_shown(written)!r} is not a metric's name")
        metric = canonical_name(written)
        try:
            catalogue_entry(metric)
        except KeyError as e:
            raise TraceError(where, f"[rules]: {e.args[0]}") from None
        if not isinstance(spec, dict):
            raise TraceError(where, f"rules.{metric!r} must be a table")
        bad = set(spec) - _RULE_KEYS
        if bad:
            raise TraceError(
                where,
                f"rule {metric!r}: unknown key(s) {_names(bad)} (known: allowed, "
                "significance, missing)",
            )
        if "allowed" not in spec:
            raise TraceError(
                where, f'rule {metric!r}: no allowed change (allowed = "10%" or an absolute number)'
            )
        amount, relative = _allowed(metric, spec["allowed"], where)
        sig = spec.get("significance", True)
        missing = spec.get("missing", "error")
        if not isinstance(sig, bool):
            raise TraceError(where, f"rule {metric!r}: significance must be true or false")
        if missing not in ("error", "skip"):
            raise TraceError(where, f'rule {metric!r}: missing must be "error" or "skip"')
        if (metric, None) in seen:
            raise TraceError(where, f"two rules for {metric} ({written!r} is another name of it)")
        seen.add((metric, None))
        rules.append(
            Rule(metric, amount, relative, sig, missing, written if written != metric else None)
        )
    return settings, rules


def _profile_rule(
    metric: str, spec, where: str, seen: set[tuple[str, str | None]] | None = None
) -> Rule:
    """A rule on a profile's function: ``allowed`` in percentage points (a number or
    "Npp"), ``significance``, ``missing``, and ``dso`` to tell one symbol's DSOs apart.
    ``seen``: the (metric, dso) of the rules before it (a second one is refused)."""
    if len(metric) > MAX_NAME or has_bad_chars(metric):
        raise TraceError(
            where,
            f"[rules]: {_shown(metric)!r} is not a function's name (at most {MAX_NAME} "
            "characters, no control characters)",
        )
    if not isinstance(spec, dict):
        raise TraceError(where, f"rules.{metric!r} must be a table")
    bad = set(spec) - _RULE_KEYS - {"dso"}
    if bad:
        raise TraceError(
            where,
            f"rule {metric!r}: unknown key(s) {_names(bad)} "
            "(known: allowed, significance, missing, dso)",
        )
    if "allowed" not in spec:
        raise TraceError(where, f"rule {metric!r}: no allowed change (allowed = 2, in pp)")
    allowed = spec["allowed"]
    text = str(allowed).strip()
    if isinstance(allowed, bool) or text.endswith("%"):
        raise TraceError(
            where,
            f"rule {metric!r}: allowed is in percentage points of the samples (2 or "
            f'"2pp"), not {allowed!r}',
        )
    amount, _ = _allowed(metric, text.removesuffix("pp").strip(), where)
    sig, missing, dso = (
        spec.get("significance", True),
        spec.get("missing", "error"),
        spec.get("dso"),
    )
    if not isinstance(sig, bool):
        raise TraceError(where, f"rule {metric!r}: significance must be true or false")
    if missing not in ("error", "skip"):
        raise TraceError(where, f'rule {metric!r}: missing must be "error" or "skip"')
    if dso is not None and not (
        isinstance(dso, str) and dso.strip() and len(dso) <= MAX_NAME and not has_bad_chars(dso)
    ):
        raise TraceError(
            where, f"rule {metric!r}: dso must be a file name such as [kernel.kallsyms]"
        )
    if seen is not None and (metric, dso) in seen:
        raise TraceError(where, f"two rules for {metric}" + (f" in {dso}" if dso else ""))
    return Rule(metric, amount, False, sig, missing, None, dso)


def per_work_rule(rule: Rule) -> Rule:
    """The rule on ``rule``'s count per unit of work (``context_switches_per_s`` ->
    ``context_switches_per_op``), the same allowance; ``rule`` itself when its metric is
    not the rate of a count."""
    from .metrics import per_op_entry
    from .work import per_op_name

    if not rule.metric.endswith("_per_s") or per_op_entry(per_op_name(rule.metric)) is None:
        return rule
    return dataclasses.replace(rule, metric=per_op_name(rule.metric), written_as=None)


def load_rules(path) -> tuple[Settings, list[Rule]]:
    """Settings and rules of a TOML file (TraceError naming the file if it is bad): a
    regular file (a FIFO or device is refused, never waited on) of at most
    :data:`MAX_RULES_BYTES`, with at most :data:`MAX_RULES` rules."""
    try:
        with open_regular(path, "rules file") as f:
            data = read_bounded(f, MAX_RULES_BYTES + 1, path)
        if len(data) > MAX_RULES_BYTES:
            raise TraceError(
                str(path),
                f"holds more than {MAX_RULES_BYTES >> 20} MiB: too large for a rules file",
            )
        text = data.decode("utf-8")
    except OSError as exc:
        raise TraceError(str(path), f"cannot read the rules file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TraceError(str(path), "the rules file is not UTF-8 text") from None
    return parse_rules(text, str(path))


def default_rules() -> tuple[Settings, list[Rule]]:
    """The settings and rules of :data:`DEFAULT_RULES_TOML`."""
    return parse_rules(DEFAULT_RULES_TOML, "default rules")


# -- judging -----------------------------------------------------------------------------------


def _side_files(side: str, spec, expand) -> dict:
    """``{identity: path}`` of the traces a side's ``spec`` names: a file by its real
    absolute path (``./a.dat``, ``a.dat`` and a link to it are one file), a loaded trace
    by itself (two windows of one file are two traces). A pattern that cannot be
    expanded names none (its problem is reported where the side is loaded)."""
    out: dict = {}
    for item in side_items(spec, side):
        if not is_path(item):
            out[("trace", id(item))] = str(item.path)
            continue
        try:
            for p in expand(str(item), side):
                out[("file", os.path.realpath(p))] = p
        except TraceError:
            pass
    return out


def _judge_overlap(result: GateResult, baseline, candidate, expand) -> str | None:
    """The problem when the baseline and the candidate are the same traces (a job that
    compares a build with itself passes every rule and judges nothing), else None; a
    note in ``result`` when some of them are on both sides."""
    base = _side_files("baseline", baseline, expand)
    cand = _side_files("candidate", candidate, expand)
    if base and base.keys() == cand.keys():
        return (
            f"the baseline and the candidate are the same {len(base)} trace file(s): "
            "nothing would be judged (a misconfigured job? give the candidate's own traces)"
        )
    if shared := [k for k in base if k in cand]:
        names = distinct_names(list(base.values()) + list(cand.values()))
        result.overlap = [
            f"{len(shared)} trace file(s) are both baseline and candidate "
            f"({', '.join(names[base[k]] for k in shared)}): the sides are not independent"
        ]
    return None


def _name(names: dict[str, str], trace) -> str:
    """How the messages name ``trace``: its entry in ``names``, else its file name."""
    path = str(trace.meta.path)
    return names.get(path) or Path(path).name


def input_problems(
    side: str, trace, settings: Settings, name: str | None = None, rates: bool = True
) -> list[str]:
    """Why one loaded trace cannot be judged (empty, lost events, too short); ``name``:
    how the messages name it (default its file name); ``rates``: its scheduler rates are
    judged (a profile's samples need no sched_switch events)."""
    name = name or Path(str(trace.meta.path)).name
    records = sum(trace.meta.event_counts.values())
    if records == 0:
        return [f"{side} {name}: the trace has no events"]
    out = []
    lost = trace.meta.lost_events
    unknown = trace.meta.lost_unknown
    total = sum(lost.values())
    if unknown:
        out.append(
            f"{side} {name}: the ring buffer dropped events (an unknown number) on "
            f"CPU {', '.join(map(str, unknown))}"
        )
    elif total > settings.max_lost_events:
        out.append(
            f"{side} {name}: the ring buffer lost {total} events (allowed: "
            f"{settings.max_lost_events}; [gate] max_lost_events)"
        )
    if why := timestamp_problem(trace.meta):
        return out + [f"{side} {name}: {why}"]
    switches = int(trace.meta.event_counts.get("sched_switch", 0))
    if rates and switches < settings.min_switches:
        out.append(
            f"{side} {name}: {switches} sched_switch events, fewer than the "
            f"{settings.min_switches} a judgement needs ([gate] min_switches): its rates "
            "would be noise"
        )
    dur = trace.duration_ns / 1e9
    if dur < settings.min_duration:
        out.append(
            f"{side} {name}: lasts {dur:.3g} s, shorter than the {settings.min_duration:g}"
            " s a judgement needs ([gate] min_duration)"
        )
    return out


def _load_side(side: str, specs, loader, expand, problems: list[str]) -> tuple[list, list[str]]:
    traces, paths = [], []
    for spec in specs:
        if not is_path(spec):
            traces.append(spec)
            paths.append(str(spec.meta.path))
            continue
        try:
            found = expand(str(spec), side)
        except TraceError as exc:
            problems.append(f"{side}: {exc}")
            continue
        for p in found:
            paths.append(p)
            try:
                traces.append(loader(p))
            except TraceError as exc:
                problems.append(f"{side}: {exc}")
    if not paths:
        problems.append(f"{side}: no trace given (--{side} TRACE...)")
    return traces, paths


def gate(
    baseline,
    candidate,
    rules: str | Path | tuple | None = None,
    *,
    topology_file=None,
    llc=None,
    thresholds: dict | None = None,
    loader: Callable | None = None,
    expand: Callable[[str, str], list[str]] | None = None,
    progress: Callable[[float], None] | None = None,
    kallsyms=None,
    work=None,
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
    from .analysis import check_thresholds
    from .detect import thresholds as resolve_thresholds

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
        profiles = _load_profiles(result, specs, expand or expand_paths, not metric_rules, kallsyms)
    result.seconds_reading = time.perf_counter() - started
    # the same files on both sides judge nothing; said after what reading and judging
    # them finds, so that a damaged file is named first
    same = _judge_overlap(result, baseline, candidate, expand or expand_paths)
    if not result.problems:
        _judge_sides(result, sides, profiles, rule_list, thresholds, progress, work)
    if same:
        result.problems.append(same)
    return result


def _judge_sides(
    result: GateResult, sides, profiles, rule_list, thresholds, progress, work=None
) -> None:
    """Judge the loaded sides by the rules, into ``result`` (results sorted as the rules
    were given; a problem when every rule was skipped)."""
    metric_rules = [r for r in rule_list if not r.on_profile]
    profile_rules = [r for r in rule_list if r.on_profile]
    started = time.perf_counter()
    if metric_rules:
        plan = _sampling(result, sides)
        if result.problems:
            return
        kind, window = plan
        measurable = _measurable_rules(result, sides, metric_rules, work is not None)
        if measurable:
            try:
                _judge_rules(result, sides, measurable, kind, window, thresholds, progress, work)
            except TraceError as exc:  # a run whose work cannot be found
                result.problems.append(f"--work: {exc}")
                return
            _explain(result, sides["candidate"], thresholds)
    if profile_rules:
        _judge_profile_rules(result, profiles, profile_rules)
    result.seconds_judging = time.perf_counter() - started
    order = {(r.metric, r.dso): i for i, r in enumerate(rule_list)}
    result.results.sort(key=lambda r: order[(r.rule.metric, r.rule.dso)])
    if result.results and all(r.status == "skipped" for r in result.results):
        result.problems.append(
            "every rule was skipped (its metric cannot be measured): nothing was judged"
        )


def _load_sides(result: GateResult, specs: dict, loader, expand, topology_file, llc) -> dict:
    """{side: [Trace, ...]} of the baseline and candidate specs (a path, glob, Trace or a
    sequence of those), with the topology options applied; their paths go into
    ``result``, and what makes a trace unusable for a verdict into ``result.problems``
    (a trace that does not load, lost events, raw timestamps, ...)."""
    sides = {}
    for name, spec in specs.items():
        traces, paths = _load_side(name, side_items(spec, name), loader, expand, result.problems)
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
            result.problems.extend(input_problems(name, t, result.settings, _name(names, t)))
    return sides


def _sampling(result: GateResult, sides: dict) -> tuple[str, float | None]:
    """(samples kind, window seconds) as compare will sample; a problem in ``result``
    when there are too few samples to judge: one baseline run for per-trace samples (a
    single candidate run is judged against the baseline runs' spread), fewer than
    ``[gate] min_windows`` windows in a trace for per-window ones."""
    from .metrics import window_edges

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
                    f"{name} {_name(names, t)}: {n} window(s) of "
                    f"{window:g} s, fewer than the {settings.min_windows} a judgement "
                    "needs ([gate] window, min_windows)"
                )
    return kind, window


def _measurable_rules(
    result: GateResult, sides: dict, rules: list[Rule], with_work: bool = False
) -> list[Rule]:
    """The ``rules`` whose metric every trace's events can give (and, for a count per
    unit of work, the runs' work is given). A metric the events cannot give is unknown,
    not zero: its rule gets its ``unmeasured_status`` in ``result``."""
    from .metrics import catalogue_entry, missing_events
    from .work import is_per_op

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
            f"{name} {_name(names, t)} has no {ev} events"
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


def _judge_rules(
    result: GateResult,
    sides: dict,
    rules: list[Rule],
    kind: str,
    window: float | None,
    thresholds: dict | None,
    progress: Callable[[float], None] | None = None,
    work=None,
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
            _judge(
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


def _measure(row, settings: Settings) -> Measured:
    """The rule's view of a mean row under ``[gate] scale``: on the log scale (when every
    tested value is above zero) the geometric means, the test of the logs and the ratio
    of geometric means; else the row's own means, test and ratio (the mmtests table's)."""
    from . import stats as st

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
    from . import stats as st

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


def _judge(
    rule: Rule,
    row,
    test: str,
    measured: Measured | None = None,
    p_adjusted: float | None = None,
    alpha: float = 0.05,
) -> RuleResult:
    """The verdict of one rule from the mean row of its metric, as ``measured``
    (:func:`_measure`; default the row's own means and test); ``p_adjusted``: its p
    after the rules' multiplicity correction, which then decides significance."""
    from . import stats as st
    from .metrics import catalogue_entry

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
    _settle(
        res,
        why_untestable=str(sig.reason),
        remedy="give more iterations",
        allowed=rule.allowed_text(),
        change=lambda more: _change_text(res, more),
    )
    return res


# -- rules on a profile's functions ------------------------------------------------------------


def _load_profiles(result: GateResult, specs: dict, expand, set_paths: bool, kallsyms) -> dict:
    """{side: [Profile, ...]} of the baseline and candidate specs (paths, globs or
    loaded traces with their samples), read whole (:func:`_load_side` with every
    event); what cannot be profiled goes into ``result.problems``. ``set_paths``: the
    sides' paths are the result's (no metric rule read them); ``kallsyms``: the
    recorded kernel's kallsyms file."""
    from .profile import profile
    from .trace import load

    out: dict[str, list] = {}
    for side, spec in specs.items():
        traces, paths = _load_side(
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
                    out[side].append(profile(trace, kallsyms=kallsyms))
            except TraceError as exc:
                result.problems.append(f"{side}: {exc}")
    return out


def _judge_profile_rules(result: GateResult, profiles: dict, rules: list[Rule]) -> None:
    """Judge each rule on a function from :func:`schedwake.compare_profiles` of the two
    sides: broken when the share grew by more than ``allowed`` percentage points (and,
    with significance, its Benjamini-Hochberg q is below ``alpha``)."""
    from .profile_compare import compare_profiles

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


def _judge_share(res: RuleResult, row, measure: str, alpha: float, testable: bool) -> None:
    rule = res.rule
    base, cand = float(row[f"{measure}[baseline]"]) * 100, float(row[f"{measure}[candidate]"]) * 100
    q = float(row[f"{measure}:q[candidate]"])
    res.baseline, res.candidate, res.change = base, cand, cand - base
    res.gain_pct = (base - cand) / base * 100.0 if base else (0.0 if cand == base else -math.inf)
    res.worsening, res.limit = max(cand - base, 0.0), rule.allowed
    res.testable = testable
    res.detail, res.statistic = (q if math.isfinite(q) else None), "q"
    res.significant = bool(testable and math.isfinite(q) and q < alpha)
    _settle(
        res,
        why_untestable=f"runs a side: {'/'.join(map(str, res.n or ()))}",
        remedy="give 2 or more runs a side",
        allowed=f"+{_num(rule.allowed)} pp",
        change=lambda more: (
            f"{base:.2f}% -> {cand:.2f}% of the samples ({cand - base:+.2f} pp{more})"
        ),
    )


def _callers_why(cmp, symbol: str, dso: str) -> list[str]:
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


def _settle(
    res: RuleResult, why_untestable: str, remedy: str, allowed: str, change: Callable[[str], str]
) -> None:
    """The status and message of a measured rule (``worsening``, ``limit``,
    ``testable`` and ``significant`` set), one wording for every kind of rule: an error
    when the significance it asks for cannot be tested (``why_untestable``; ``remedy``:
    what to do), broken when worse than allowed (and significantly so, when asked), else
    a pass; ``change(more)``: the change in words, ``more`` the worst ``allowed`` added
    for a broken rule."""
    rule = res.rule
    worse = (res.worsening or 0.0) > (res.limit or 0.0)
    if rule.significance and worse and not res.testable:
        res.status = "error"
        res.message = (
            f"{rule.metric}: significance cannot be tested ({why_untestable}); {remedy} "
            "or set significance = false"
        )
    elif worse and (res.significant or not rule.significance):
        res.status = "broken"
        res.message = (
            f"{rule.metric}: {change(f', worst allowed {allowed}')}, "
            f"{_sig_text(res, rule.significance)}"
        )
    else:
        why = "within the allowed change" if not worse else "worse, but not significantly"
        res.message = f"{rule.metric}: {change('')}, {why}"


def _change_text(r: RuleResult, more: str = "") -> str:
    unit = r.unit if r.unit in ("", "%", "/s", "/op") else " " + r.unit
    gain = gain_pct_text(r.gain_pct, r.baseline)
    ci = ""
    if r.gain_ci is not None and gain != NEW_TEXT:
        ci = f", 95% CI {_ci_pct(r.gain_ci[0])}..{_ci_pct(r.gain_ci[1])}%"
    return (
        f"{_num(r.baseline)}{unit} -> {_num(r.candidate)}{unit} "
        f"({gain if gain == NEW_TEXT else 'gain ' + gain}{ci}{more})"
    )


def _ci_pct(v: float) -> str:
    return f"{v:+.0f}" if abs(v) >= 10 else f"{v:+.1f}"


def _sig_text(r: RuleResult, required: bool) -> str:
    if r.significant:
        if r.detail is None:
            return "significant"
        adj = f", Holm-adjusted {r.p_adjusted:.3g}" if r.p_adjusted is not None else ""
        return f"significant ({r.statistic}={r.detail:.3g}{adj})"
    return "not significant" + ("" if required else " (significance not required)")


# -- why a rule broke --------------------------------------------------------------------------

#: The fields of a finding's ``top`` entries that name who is involved, as reports say them
#: (an entry is weighed by its detector's ``SHOWN.top_weight``, else its ``count``).
_WHO = (
    ("waker", "wakers"),
    ("work_function", "work functions"),
    ("wakee", "wakees"),
    ("comm", "tasks"),
    ("cpu", "CPUs"),
)


def _findings_of(trace, thresholds: dict | None) -> list:
    """The findings of one candidate trace: stored ones for a batch dataset's trace, else
    the detectors run now (without evidence lines: only the top lists are needed)."""
    from .detect import detect

    stored = getattr(trace, "findings", None)
    if callable(stored):
        return list(stored(thresholds))
    return detect(trace, thresholds, evidence_lines=0)


def _explain(result: GateResult, candidates: list, thresholds: dict | None) -> None:
    """Give each broken rule its ``why``: per detector that measures its metric
    (:data:`schedwake.metrics.EXPLAINED_BY`), in how many candidate traces it fired and
    at what severity, and who is involved most (summed over the traces' top lists); then
    the ``schedwake analyze`` command of the candidate trace with the worst finding."""
    from .detect.base import severity_rank
    from .metrics import EXPLAINED_BY, catalogue_entry

    broken = [r for r in result.results if r.status == "broken"]
    if not broken:
        return
    found = [(t, _findings_of(t, thresholds)) for t in candidates]
    for r in broken:
        detectors = EXPLAINED_BY.get(_rate_of(catalogue_entry(r.rule.metric).name), ())
        worst = None
        for det in detectors:
            hits = [(t, f) for t, fs in found for f in fs if f.detector == det]
            if not hits:
                r.why.append(f"{det}: no finding in the {len(candidates)} candidate trace(s)")
                continue
            sevs = sorted({f.severity for _, f in hits}, key=severity_rank)
            traces = len({id(t) for t, _ in hits})
            line = f"{det} ({'/'.join(sevs)}) in {traces} of {len(candidates)} candidate trace(s)"
            who = _top_names([f for _, f in hits])
            r.why.append(line + (f": {who}" if who else ""))
            best = min(hits, key=lambda h: severity_rank(h[1].severity))
            if worst is None or severity_rank(best[1].severity) < severity_rank(worst[1].severity):
                worst = best
        shown = worst[0] if worst is not None else (candidates[0] if candidates else None)
        if shown is not None:
            r.why.append(f"see: schedwake analyze {shown.meta.path}")


def _rate_of(name: str) -> str:
    """The rate a count per unit of work is made from (its detectors explain it too)."""
    from .work import is_per_op, per_s_name

    return per_s_name(name) if is_per_op(name) else name


def _top_names(findings: list) -> str:
    """``wakers (by episodes) kworker/2:1H 505, kworker/3:1H 218; wakees (by episodes)
    dbench 723``: the three heaviest names of each field of the findings' top lists,
    weights summed over the findings."""
    from .detect import shown

    parts = []
    for key, label in _WHO:
        weights: dict[str, float] = {}
        by = None
        for f in findings:
            weighed_by = (shown(f.detector).top_weight, "count")
            for entry in f.top:
                if key not in entry:
                    continue
                k = next((k for k in weighed_by if isinstance(entry.get(k), (int, float))), None)
                by = by or k
                name = str(entry[key])
                weights[name] = weights.get(name, 0) + float(entry[k] if k else 1)
        if weights:
            top = sorted(weights.items(), key=lambda kv: -kv[1])[:3]
            what = f" (by {by.replace('_', ' ')})" if by else ""
            parts.append(f"{label}{what} " + ", ".join(f"{n} {_num(w)}" for n, w in top))
    return "; ".join(parts)
