"""What the gate decided: one :class:`RuleResult` a rule, the :class:`GateResult` of
them all (exit code), and the one wording of a rule's verdict (:func:`settle`) for
metric and profile rules alike."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..compare import CompareResult
from ..compare.mmtests import NEW_TEXT, gain_pct_text
from ..compare.sides import distinct_names
from .rules import Rule, Settings, fmt_num


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
    #: command that shows them in full (:func:`explain_broken`).
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


def settle(
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


def change_text(r: RuleResult, more: str = "") -> str:
    unit = r.unit if r.unit in ("", "%", "/s", "/op") else " " + r.unit
    gain = gain_pct_text(r.gain_pct, r.baseline)
    ci = ""
    if r.gain_ci is not None and gain != NEW_TEXT:
        ci = f", 95% CI {_ci_pct(r.gain_ci[0])}..{_ci_pct(r.gain_ci[1])}%"
    return (
        f"{fmt_num(r.baseline)}{unit} -> {fmt_num(r.candidate)}{unit} "
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
