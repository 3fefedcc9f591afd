"""Renderers of a gate verdict (:class:`schedwake.gate.GateResult`) for people and CI:
a text table for the job log, Markdown for a pull-request comment or job summary, JUnit
XML (one test case per rule) and a JSON document."""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from ..compare.mmtests import SIGN_CONVENTION, gain_pct_text, op_label
from ..jsonout import dumps
from .compare import notes as compare_notes
from .compare import rule_line_of
from .markdown import md

if TYPE_CHECKING:
    from ..gate.result import GateResult

_STATUS = {"pass": "ok", "broken": "BROKEN", "skipped": "skipped", "error": "ERROR"}
_HEAD = ("rule", "allowed", "baseline", "candidate", "gain", "significant", "result")


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if 0 < abs(v) < 0.1:  # (counts per unit of work are small: three digits of them)
        return f"{v:.3g}"
    return f"{v:.2f}" if abs(v) < 1e6 else f"{v:.4g}"


def _pct(v: float | None, baseline: float | None = None) -> str:
    return "-" if v is None else gain_pct_text(v, baseline)


def _sig(r) -> str:
    if r.significant is None:
        return "-"
    if not r.testable:
        return "not testable"
    if r.significant:
        if r.detail is None:
            return "yes"
        if r.p_adjusted is not None:
            return f"yes (Holm p={r.p_adjusted:.2g})"
        return f"yes ({r.statistic}={r.detail:.2g})"
    return "no"


def _rows(result) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for r in result.results:
        unit = "" if r.unit in ("", "%") else f" {r.unit}"
        op = op_label(r.rule.metric, r.unit)
        allowed = r.rule.allowed_text() + ("" if r.rule.relative else unit)
        rows.append(
            (
                op,
                allowed,
                _fmt(r.baseline),
                _fmt(r.candidate),
                _pct(r.gain_pct, r.baseline),
                _sig(r),
                _STATUS[r.status],
            )
        )
    return rows


def notes(result: GateResult) -> list[str]:
    """Caveats of the traces, and what one trace a side can and cannot tell."""
    out = [
        f"rule {r.written_as!r} is the former name of {r.metric}: rename it in the rules"
        for r in result.rules
        if r.written_as
    ]
    out += result.overlap
    out += [] if result.comparison is None else compare_notes(result.comparison)
    return out


def headline(result: GateResult) -> str:
    """The verdict in one line: ``PASS: n rules hold``, ``FAIL: k of n rules broken:
    ...``, ``ERROR: cannot judge (...)``."""
    broken = [r for r in result.results if r.status == "broken"]
    errors = result.problems + [r.message for r in result.results if r.status == "error"]
    if errors:
        return (
            f"ERROR: cannot judge ({len(errors)} problem"
            f"{'s' if len(errors) != 1 else ''}): {errors[0]}"
        )
    if broken:
        return (
            f"FAIL: {len(broken)} of {len(result.results)} rule"
            f"{'s' if len(result.results) != 1 else ''} broken: "
            + ", ".join(r.rule.metric for r in broken)
        )
    skipped = sum(r.status == "skipped" for r in result.results)
    tail = f" ({skipped} skipped)" if skipped else ""
    return f"PASS: {len(result.results) - skipped} rules hold{tail}"


def _samples_line(result) -> str | None:
    comp = result.comparison
    if comp is None:
        return None
    line = rule_line_of(comp)
    logs = [r.rule.metric for r in result.results if r.scale == "log"]
    if logs:
        raw = [r.rule.metric for r in result.results if r.scale == "raw" and r.baseline is not None]
        line += (
            "; judged on the log scale: baseline and candidate are geometric means of the "
            "runs, the test is on the logs of their values"
            + (f" (not {', '.join(raw)}: a value <= 0)" if raw else "")
        )
    multiplicity = getattr(result.settings, "multiplicity", "none")
    if multiplicity == "holm" and result.settings.significance != "ci95":
        line += "; Holm's correction over the rules"
    return line


def _convention_line(result) -> str:
    """How to read the percentages and why the gate's alpha is what it is."""
    alpha = result.settings.alpha
    why = (
        "the gate's default, stricter than compare's 0.10 (mmtests'): a broken rule fails a build"
        if alpha == 0.05
        else "from the rules file"
    )
    line = SIGN_CONVENTION
    if result.settings.significance == "ttest":
        line += f"; alpha {alpha:g}: {why}"
    return line


def _sides_line(result) -> str:
    told = result.trace_names()

    def names(paths):
        return ", ".join(told.get(p) or Path(p).name for p in paths) or "none"

    return f"baseline: {names(result.baseline_paths)}; candidate: {names(result.candidate_paths)}"


def _messages(result) -> list[str]:
    """The lines that explain a non-zero exit: problems, rule errors, broken rules."""
    out = [f"cannot judge: {p}" for p in result.problems]
    out += [f"cannot judge: {r.message}" for r in result.results if r.status == "error"]
    for r in result.results:
        if r.status == "broken":
            out += [f"broken: {r.message}"]
            out += [f"  {w}" if w.startswith("see: ") else f"  why: {w}" for w in r.why]
    out += [f"skipped: {r.message}" for r in result.results if r.status == "skipped"]
    return out


def text(result) -> str:
    """The job-log report: the verdict line, the rules table, the reasons, the sample and
    significance line, and the traces' caveats."""
    lines = [f"schedwake gate: {headline(result)}", _sides_line(result)]
    rows = _rows(result)
    if rows:
        widths = [max(len(x[i]) for x in rows + [_HEAD]) for i in range(len(_HEAD))]
        lines.append("")
        for row in [_HEAD] + rows:
            cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1])]
            cells += [row[i].rjust(widths[i]) for i in range(2, 5)]
            cells += [row[5].ljust(widths[5]), row[6]]
            lines.append("  ".join(cells).rstrip())
    msgs = _messages(result)
    if msgs:
        lines.append("")
        lines += msgs
    samples = _samples_line(result)
    if samples:
        lines += ["", samples, _convention_line(result)]
    lines += [f"note: {n}" for n in notes(result)]
    return "\n".join(lines) + "\n"


def markdown(result) -> str:
    """A pull-request comment / job summary: verdict, rules table, reasons, samples line."""

    esc = md  # (names from rule files and traces: schedwake.report.markdown)

    out = [f"### schedwake gate: {esc(headline(result))}", "", esc(_sides_line(result)), ""]
    rows = _rows(result)
    if rows:
        out.append("| " + " | ".join(h.capitalize() for h in _HEAD) + " |")
        out.append("|:---|---:|---:|---:|---:|:---|:---|")
        for row in rows:
            cells = list(row)
            if cells[6] in ("BROKEN", "ERROR"):
                cells[6] = f"**{cells[6]}**"
            out.append(
                "| " + " | ".join(esc(c) if not c.startswith("**") else c for c in cells) + " |"
            )
        out.append("")
    for m in _messages(result):  # (the why lines of a broken rule nest under it)
        out.append(f"  - {esc(m.strip())}" if m.startswith("  ") else f"- {esc(m)}")
    if _messages(result):
        out.append("")
    samples = _samples_line(result)
    if samples:
        out += [esc(samples), "", esc(_convention_line(result)), ""]
    out += [f"- note: {esc(n)}" for n in notes(result)]
    return "\n".join(out).rstrip("\n") + "\n"


def junit(result) -> str:
    """JUnit XML: one ``<testcase>`` per rule (``<failure>`` when broken, ``<error>`` when
    it cannot be judged, ``<skipped>``), plus an ``inputs`` case carrying the problems
    that stopped the judgement (an ``<error>``) or none."""
    cases = []
    # real times: reading the traces is the inputs case's, judging is shared by the rules
    per_rule = result.seconds_judging / max(len(result.results), 1)
    inputs = ET.Element(
        "testcase", classname="schedwake.gate", name="inputs", time=_secs(result.seconds_reading)
    )
    if result.problems:
        el = ET.SubElement(inputs, "error", message=result.problems[0], type="cannot-judge")
        el.text = "\n".join(result.problems)
    cases.append(inputs)
    for r in result.results:
        tc = ET.Element(
            "testcase",
            classname="schedwake.gate",
            name=f"{r.rule.metric} (allowed {r.rule.allowed_text()})",
            time=_secs(per_rule),
        )
        if r.status == "broken":
            message = "; ".join([r.message] + [w for w in r.why if not w.startswith("see: ")])
            el = ET.SubElement(tc, "failure", message=message, type="rule-broken")
            el.text = "\n".join([_detail(r)] + r.why)
        elif r.status == "error":
            ET.SubElement(tc, "error", message=r.message, type="cannot-judge")
        elif r.status == "skipped":
            ET.SubElement(tc, "skipped", message=r.message)
        else:
            out = ET.SubElement(tc, "system-out")
            out.text = _detail(r)
        cases.append(tc)
    judged = {r.rule.metric for r in result.results}
    for rule in result.rules:
        if rule.metric not in judged:
            tc = ET.Element(
                "testcase",
                classname="schedwake.gate",
                name=f"{rule.metric} (allowed {rule.allowed_text()})",
                time="0",
            )
            ET.SubElement(
                tc, "error", message="not judged: the input was refused", type="cannot-judge"
            )
            cases.append(tc)
    failures = sum(r.status == "broken" for r in result.results)
    errors = sum(c.find("error") is not None for c in cases)
    skipped = sum(r.status == "skipped" for r in result.results)
    attrs = {
        "name": "schedwake gate",
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(skipped),
        "time": _secs(result.seconds_reading + result.seconds_judging),
    }
    suites = ET.Element(
        "testsuites", {k: attrs[k] for k in ("name", "tests", "failures", "errors", "time")}
    )
    suite = ET.SubElement(suites, "testsuite", attrs)
    props = ET.SubElement(suite, "properties")
    for k, v in (
        ("baseline", " ".join(result.baseline_paths)),
        ("candidate", " ".join(result.candidate_paths)),
        ("rules", result.rules_source),
        ("significance", result.settings.significance),
        ("verdict", result.verdict),
    ):
        ET.SubElement(props, "property", name=k, value=v)
    suite.extend(cases)
    samples = _samples_line(result)
    if samples:
        ET.SubElement(suite, "system-out").text = samples
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


def _detail(r) -> str:
    n = "" if r.n is None else f"; samples n={r.n[0]}/{r.n[1]}"
    return (
        f"baseline {_fmt(r.baseline)}, candidate {_fmt(r.candidate)} {r.unit} "
        f"(gain {_pct(r.gain_pct)}{_ci(r)}, worst allowed {r.rule.allowed_text()}); "
        f"significant: {_bool(r.significant)}{n}"
    )


def _ci(r) -> str:
    if r.gain_ci is None:
        return ""
    return f", 95% CI {r.gain_ci[0]:+.1f}..{r.gain_ci[1]:+.1f}%"


def _secs(v: float) -> str:
    return f"{v:.3f}"


def _bool(v) -> str:
    return "-" if v is None else str(bool(v)).lower()


def _finite(v):
    if v is None:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return "inf" if v > 0 else "-inf" if v < 0 else None
    return v


def to_dict(result) -> dict:
    """The JSON document: verdict and exit code, problems, one record per rule, the
    settings and the comparison's sample line."""
    rules = []
    for r in result.results:
        rules.append(
            {
                "metric": r.rule.metric,
                "unit": r.unit,
                "direction": r.direction,
                "allowed": r.rule.allowed_text(),
                "allowed_value": r.rule.allowed,
                "allowed_relative": r.rule.relative,
                "require_significance": r.rule.significance,
                "missing": r.rule.missing,
                "status": r.status,
                "baseline": _finite(r.baseline),
                "candidate": _finite(r.candidate),
                "change": _finite(r.change),
                "gain_pct": _finite(r.gain_pct),
                "worsening": _finite(r.worsening),
                "limit": _finite(r.limit),
                "significant": r.significant,
                "testable": r.testable,
                "detail": _finite(r.detail),
                "statistic": r.statistic or None,
                "p_adjusted": _finite(r.p_adjusted),
                "gain_ci": [_finite(v) for v in r.gain_ci] if r.gain_ci else None,
                "scale": r.scale,
                "n": list(r.n) if r.n else None,
                "message": r.message,
                "why": list(r.why),
            }
        )
    return {
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "headline": headline(result),
        "problems": list(result.problems),
        "rules_source": result.rules_source,
        "settings": dataclasses.asdict(result.settings),
        "baseline": list(result.baseline_paths),
        "candidate": list(result.candidate_paths),
        "samples": _samples_line(result),
        "notes": notes(result),
        "rules": rules,
    }


def to_json(result, indent: int = 2) -> str:
    """``schedwake gate --json FILE``: :func:`to_dict` as JSON."""
    return dumps(to_dict(result), indent=indent)
