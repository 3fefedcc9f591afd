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

from .inputs import input_problems
from .result import GateResult, RuleResult
from .rules import (
    DEFAULT_RULES_TOML,
    MAX_NAME,
    MAX_RULES,
    MAX_RULES_BYTES,
    PROFILE_MEASURES,
    Rule,
    Settings,
    default_rules,
    load_rules,
    parse_rules,
    per_work_rule,
    profile_rule_parts,
)
from .run import gate

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
    "MAX_NAME",
    "MAX_RULES",
    "MAX_RULES_BYTES",
    "PROFILE_MEASURES",
    "input_problems",
    "per_work_rule",
    "profile_rule_parts",
]
