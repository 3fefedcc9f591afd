"""Renderers of a comparison (:class:`schedwake.compare.CompareResult`): what
``schedwake compare`` prints as text (``--format text``, the default), Markdown and JSON
(docs/compare.md, 'Formats'). The mmtests table itself is
:mod:`schedwake.report.mmtests_table`'s; the HTML report is :mod:`schedwake.report.html`'s.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..compare import CompareResult
from ..compare.mmtests import NEW_TEXT, SIGN_CONVENTION, Comparison, gain_interval, is_new
from ..jsonout import dumps
from . import mmtests_table
from .markdown import code_line, fence, md
from .mmtests_table import rule_line_of as _table_rule_line

__all__ = [
    "text",
    "markdown",
    "to_dict",
    "to_json",
    "summary_lines",
    "notes",
    "rule_line_of",
    "convention_line",
    "gain_ci_text",
]


def notes(result: CompareResult) -> list[str]:
    """Caveats of the traces (assumed topology, lost events, missing events), one line
    each, followed by the traces it concerns (or "every trace")."""
    where: dict[str, list[str]] = {}
    n = 0
    names = result.trace_names()
    for s in result.sides:
        for t in s.traces:
            n += 1
            for c in t.caveats:
                where.setdefault(c, []).append(f"{s.label}: {names[str(t.path)]}")
    out = []
    for c, traces in where.items():
        who = "every trace" if len(traces) == n else ", ".join(traces)
        out.append(f"{c} ({who})")
    if result.work:
        groups: dict[tuple, list[str]] = {}
        for p, w in result.work.items():
            how = w.source.split(": ", 1)[-1]
            groups.setdefault((w.value, w.unit, how), []).append(names[p])
        parts = [
            f"{value:g} {unit} ({how}): "
            + ("every trace" if len(who) == len(result.work) else ", ".join(who))
            for (value, unit, how), who in groups.items()
        ]
        out.append("counts per unit of work (*_per_op), the runs' work: " + "; ".join(parts))
    if result.sample_kind == "per-window":
        out.append(
            "per-window samples (asked for): windows of one run are tested as batch "
            "means, so a significant change says these runs differed through the "
            "run, not that a rerun would; give >= 2 runs a side for a per-trace "
            "judgement"
        )
    else:
        runs = [len(s.paths) or len(s.traces) for s in result.sides]
        if runs and runs[0] < 2:
            out.append(
                "one baseline run: no significance can be given (one run has no "
                "between-run spread to judge another against); give >= 2 baseline "
                "runs, or --samples per-window to test windows of the runs"
            )
        elif any(n == 1 for n in runs[1:]):
            out.append(
                "a side with one run is judged against the baseline runs' spread "
                "(a prediction interval), not against windows of itself"
            )
    return _machine_notes(result) + out


def _machine_notes(result: CompareResult) -> list[str]:
    """A line for each thing the sides' machines differ in (CPUs, kernel, trace clock,
    LLCs): a comparison across them measures the machines as much as the change."""
    facts = {
        "CPUs": lambda t: t.meta.cpus,
        "kernel": lambda t: t.meta.kernel or "unknown",
        "trace clock": lambda t: t.meta.clock or "unknown",
        "LLCs": lambda t: " ".join("[" + ",".join(map(str, g)) + "]" for g in t.topology.llc),
    }
    out = []
    for what, get in facts.items():
        per_side = {s.label: sorted({str(get(t)) for t in s.traces}) for s in result.sides}
        if len({v for vals in per_side.values() for v in vals}) > 1:
            text = "; ".join(f"{lab}: {', '.join(v)}" for lab, v in per_side.items())
            out.append(f"the traces differ in {what} ({text})")
    return out


def rule_line_of(result: CompareResult) -> str:
    """The rule line under the comparison's table (:func:`.mmtests_table.rule_line_of`)."""
    return _table_rule_line(result.comparison)


def summary_lines(result: CompareResult) -> list[str]:
    """The headline first: one line per metric (per-CPU busy shares left to the
    table) with its mean on every side and, for the other sides, the gain over the
    baseline and a ``*`` when significant."""
    rows = [
        r
        for r in result.comparison.rows
        if r.is_mean_row and not r.metric.name.startswith("busy_share_cpu")
    ]
    if not rows:
        return []
    names = [r.op for r in rows]
    w0 = max(len("metric"), *(len(n) for n in names))
    cells = [[_summary_cell(r, j) for j in range(len(result.labels))] for r in rows]
    widths = [max(len(lab), 19, *(len(c[j]) for c in cells)) for j, lab in enumerate(result.labels)]
    head = "metric".ljust(w0) + "".join(
        "  " + lab.rjust(w) for lab, w in zip(result.labels, widths)
    )
    out = [
        "summary: the mean of each metric on each side; % = gain over the baseline "
        "(new: from a zero baseline) [its 95% confidence interval], * = significant",
        head,
    ]
    for row_cells, name in zip(cells, names):
        out.append(name.ljust(w0) + "".join("  " + c.rjust(w) for c, w in zip(row_cells, widths)))
    return out


def gain_ci_text(r, j: int) -> str:
    """`` [+12..+52%]``: the 95% interval of side ``j``'s gain on mean row ``r`` (empty
    without one), in the percentages' sign (+ better)."""
    gain = gain_interval(r.effect(j), r.metric.direction)
    if gain is None:
        return ""
    return f" [{_pct(gain[0])}..{_pct(gain[1])}%]"


def _pct(v: float) -> str:
    return f"{v:+.0f}" if abs(v) >= 10 else f"{v:+.1f}"


def _summary_cell(r, j: int) -> str:
    v = r.values[j]
    num = "-" if math.isnan(v) else f"{v:.2f}"
    if not j:
        return num
    sig = r.sig[j]
    star = "*" if sig is not None and sig.significant else " "
    if is_new(r.values[0], v):  # (the table keeps mmtests' figure)
        return num + f" {NEW_TEXT:>11}{'':16}{star}"
    if math.isnan(v) or math.isnan(r.values[0]):  # (no value: no gain)
        return num + f" {'-':>11}{'':16}{star}"
    return num + f" {r.pcts[j]:+10.2f}%{gain_ci_text(r, j):<16}{star}"


def _table(result: CompareResult, per_cpu: bool) -> tuple[Comparison, str | None]:
    """The mmtests comparison to print: every row with ``per_cpu`` or up to 4 CPUs,
    else without the per-CPU busy-share rows, and the line that says so."""
    per = [r for r in result.comparison.rows if r.metric.name.startswith("busy_share_cpu")]
    cpus = len({r.metric.name for r in per})
    if per_cpu or cpus <= 4:
        return result.comparison, None
    kept = dataclasses.replace(
        result.comparison,
        rows=[r for r in result.comparison.rows if r not in per],
        metrics=[m for m in result.comparison.metrics if not m.name.startswith("busy_share_cpu")],
    )
    means = [r for r in per if r.is_mean_row]
    avg = [
        float(np.nanmean([r.values[j] for r in means])) if means else math.nan
        for j in range(len(result.labels))
    ]
    text = " -> ".join("-" if math.isnan(v) else f"{v:.1f}%" for v in avg)
    return kept, (
        f"busy_share_cpuN: {cpus} CPUs' rows left out (--per-cpu shows them); "
        f"their mean busy share {text}"
    )


def convention_line(result: CompareResult) -> str:
    """How to read the percentages, and why alpha is what it is (the gate's differs)."""
    line = SIGN_CONVENTION
    if result.rule == "ttest":
        a = result.comparison.alpha
        why = "mmtests' own" if a == 0.10 else "given with --alpha"
        line += f"; alpha {a:g}: {why} (the gate's is 0.05: a broken rule fails a build)"
    return line


def _changed(table: Comparison) -> tuple[Comparison | None, str]:
    """The mean rows of ``table`` that changed significantly on a side (None if none
    did), and the line that says what the whole table would add."""
    rows = [
        r
        for r in table.rows
        if r.is_mean_row and any(s is not None and s.significant for s in r.sig)
    ]
    total = len(table.metrics)
    more = "--full prints the whole table (Min, Stddev, CoeffVar, Max, best means)"
    if not rows:
        return None, f"mmtests table: none of the {total} metrics changed significantly; {more}"
    return dataclasses.replace(table, rows=rows), (
        f"mmtests table: the mean rows of the {len(rows)} of {total} metrics that changed "
        f"significantly; {more}"
    )


def text(result: CompareResult, per_cpu: bool = False, full: bool = False) -> str:
    """The summary, then the mmtests table with the rule line under it, the sign
    convention and the notes. The table holds the metrics that changed significantly
    (a line says so) unless ``full``; per-CPU busy-share rows of more than 4 CPUs are
    left out of it unless ``per_cpu`` (one line says so)."""
    note_lines = "".join(f"note: {n}\n" for n in notes(result))
    table, hidden = _table(result, per_cpu)
    summary = "\n".join(summary_lines(result))
    head = summary + "\n\n" if summary else ""
    if full:
        body = mmtests_table.text(table)
    else:
        shown, line = _changed(table)
        body = (table.title + "\n" if shown is None and table.title else "") + line + "\n"
        body += (
            _table_rule_line(table) + "\n"
            if shown is None
            else mmtests_table.text(shown, rule_line=_table_rule_line(table))
        )
    return (
        head
        + body
        + (hidden + "\n" if hidden else "")
        + convention_line(result)
        + "\n"
        + note_lines
    )


def markdown(result: CompareResult, per_cpu: bool = False, full: bool = False) -> str:
    """:func:`text` as Markdown: the summary in a code block, the table a pipe table."""
    said = notes(result)
    table, hidden = _table(result, per_cpu)
    summary = summary_lines(result)
    f = fence(summary)
    out = (f"{f}\n" + "\n".join(map(code_line, summary)) + f"\n{f}\n\n") if summary else ""
    if full:
        out += mmtests_table.markdown(table) + "\n"
    else:
        shown, line = _changed(table)
        out += md(line) + "\n\n"
        if shown is None:
            out += _table_rule_line(table).replace("*", "\\*", 1) + "\n\n"
        else:
            out += mmtests_table.markdown(shown, rule_line=_table_rule_line(table)) + "\n"
    out += md(hidden) + "\n\n" if hidden else ""
    out += convention_line(result) + "\n"
    if said:
        out += "\n" + "".join(f"- note: {md(n)}\n" for n in said)
    return out


def to_dict(result: CompareResult) -> dict:
    """The JSON document: the table as text and as records, the rule, the samples'
    kind and window, and the sides' traces."""
    sides = []
    for s in result.sides:
        traces = []
        for t in s.traces:
            traces.append(
                {
                    "path": str(t.path),
                    "duration_s": round(t.duration_ns / 1e9, 6),
                    "cpus": t.meta.cpus,
                    "kernel": t.meta.kernel,
                    "topology": t.topology.describe(),
                    "caveats": t.caveats,
                }
            )
        if not traces:
            traces = [{"path": p} for p in s.paths]
        n = result.samples[result.samples["side"].astype(str) == s.label]
        n_samples = int(n.groupby("metric").size().max()) if len(n) else 0
        sides.append({"label": s.label, "traces": traces, "samples": n_samples})
    return {
        "title": result.title,
        "labels": result.labels,
        "significance": {
            "rule": result.rule,
            "alpha": result.comparison.alpha,
            "description": mmtests_table.rule_name(result.comparison),
        },
        "percentages": SIGN_CONVENTION,
        "samples": {"kind": result.sample_kind, "window_s": result.window_s},
        "rule_line": rule_line_of(result),
        "table": mmtests_table.text(result.comparison),
        "notes": notes(result),
        "sides": sides,
        "rows": result.comparison.records(),
    }


def to_json(result: CompareResult, indent: int = 2) -> str:
    """``schedwake compare --format json``: :func:`to_dict` as JSON (NaN is null:
    :mod:`schedwake.jsonout`)."""
    return dumps(to_dict(result), indent=indent)
