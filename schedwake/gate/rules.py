"""The gate's rules (docs/gate.md): the ``[gate]`` settings and one :class:`Rule` a
metric or a profile's function, read from TOML (:data:`DEFAULT_RULES_TOML`, a rules
file) and checked, every value, before anything is judged."""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..compare import (
    SAMPLE_MODES,
    SIGNIFICANCE,
    check_alpha,
    check_window,
    sample_mode,
)
from ..compressed import open_regular, read_bounded
from ..errors import OptionError, TraceError
from ..sidevalues import has_bad_chars, shown

if TYPE_CHECKING:
    from _typeshed import StrPath

#: what a [gate] key's check takes it as (a count, a number)
_N = TypeVar("_N", int, float)

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


def _names(keys: Iterable[str]) -> str:
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


def _text_of(choices: tuple[str, ...]) -> Callable[[object], str]:
    def take(v: object) -> str:
        if v not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, not {v!r}")
        return v

    return take


def _number(v: object) -> float:
    """A TOML number (an integer or a finite float, at most 1e18 in size; true/false are
    not numbers)."""
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not abs(v) <= 1e18  # (NaN too; a 4,000-digit integer is no float)
    ):
        raise ValueError(f"must be a finite number (at most 1e18), not {_shown(repr(v))}")
    return float(v)


def _count(v: object) -> int:
    """A TOML integer up to 2**63-1 (1.5, true and "3" are not counts)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"must be a whole number, not {_shown(repr(v))}")
    if abs(v) > (1 << 63) - 1:
        raise ValueError(f"must be at most 2**63-1, not {_shown(str(v))}")
    return v


def _at_least(take: Callable[[object], _N], low: float) -> Callable[[object], _N]:
    def checked(v: object) -> _N:
        got = take(v)
        if got < low:
            raise ValueError(f"must be >= {low}, not {v!r}")
        return got

    return checked


def _alpha(v: object) -> float:
    try:
        return check_alpha(_number(v))
    except OptionError:
        raise ValueError(f"must be between 0 and 1 (exclusive), not {v!r}") from None


#: How the metric rules' tests are corrected for their number (``[gate] multiplicity``).
MULTIPLICITY = ("holm", "none")


def _sample_setting(v: object) -> str:
    if not isinstance(v, str):
        raise ValueError(f"must be one of {', '.join(SAMPLE_MODES)}, not {v!r}")
    try:
        return sample_mode(v)
    except OptionError as exc:
        raise ValueError(f"{exc.problem}, not {v!r}") from None


def _window(v: object) -> float:
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
        (:data:`schedwake.compare.mmtests.SIGN_CONVENTION`)."""
        if self.on_profile:
            return f"-{fmt_num(self.allowed)}pp"
        return f"-{fmt_num(self.allowed * 100)}%" if self.relative else f"-{fmt_num(self.allowed)}"

    @property
    def unmeasured_status(self) -> str:
        """The status of this rule when its metric cannot be measured (``missing``)."""
        return "skipped" if self.missing == "skip" else "error"


def fmt_num(v: float | None) -> str:
    return "-" if v is None else f"{v:.6g}"


def _allowed(metric: str, value: object, where: str) -> tuple[float, bool]:
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
    from ..analysis.metrics import canonical_name, catalogue_entry

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
    metric: str, spec: object, where: str, seen: set[tuple[str, str | None]] | None = None
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
    from ..analysis.metrics import per_op_entry
    from ..work import per_op_name

    if not rule.metric.endswith("_per_s") or per_op_entry(per_op_name(rule.metric)) is None:
        return rule
    return dataclasses.replace(rule, metric=per_op_name(rule.metric), written_as=None)


def load_rules(path: StrPath) -> tuple[Settings, list[Rule]]:
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
