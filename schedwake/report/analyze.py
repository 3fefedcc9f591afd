"""Rendering of ``schedwake analyze``: an :class:`schedwake.analysis.Analysis` (summary,
caveats, findings with their evidence lines, metrics) as text, Markdown or JSON.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..analysis import document
from ..detect import Finding, shown
from ..detect.base import LongestGap
from ..jsonout import dumps
from .markdown import code_line, fence, md

#: The width the text report keeps to (evidence lines excepted: they are trace-cmd's own
#: lines, verbatim, so that they can be found in `trace-cmd report -N`).
WIDTH = 100


def format_value(v) -> str:
    """A metric value for people: 4 significant digits, dicts as k=v, lists with ';',
    a missing value (None, NaN) as '-'. Shared by the text, Markdown and HTML reports."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.0f}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={format_value(x)}" for k, x in v.items())
    if isinstance(v, list):
        return "; ".join(format_value(x) for x in v)
    return str(v)


def key_facts(f: Finding) -> list[str]:
    """``name: value`` of each key metric of the finding's detector that the finding has
    (its ``SHOWN.key_metrics``, in order): the lines under a finding in every report."""
    return [
        f"{k}: {format_value(f.metrics[k])}"
        for k in shown(f.detector).key_metrics
        if k in f.metrics
    ]


def gap_line(f: Finding) -> str | None:
    """The finding's longest gap in one sentence (:func:`_side_by_side`), when its
    detector shows one (``SHOWN.gap``) and the finding has it; else None."""
    key = shown(f.detector).gap
    gap = f.metrics.get(key) if key is not None else None
    return _side_by_side(cast("LongestGap", gap)) if isinstance(gap, dict) and gap else None


def _events(counts: dict) -> str:
    """Every event with its count, most frequent first: ``sched_switch 120, ...``."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def _wrap(label: str, text: str) -> list[str]:
    """``label`` then ``text`` wrapped to the width, continuation lines under the text."""
    return _indented(text, f"{label:<11}", " " * 11)


def longest_wait_text(analysis) -> str:
    """The longest wake-to-run wait in one sentence (the ``max wait:`` line of the
    text report, the HTML report's too)."""
    w = analysis.longest_wake_to_run
    if w is None:
        return "no wake-up with a measured wake-to-run time"
    span = (
        f"{w['latency_us'] / 1e3:.3f} ms"
        if "latency_min_us" not in w
        else f"{w['latency_min_us'] / 1e3:.3f} to {w['latency_us'] / 1e3:.3f} ms (its switch-in "
        "is missing)"
    )
    return (
        f"{span}, {w['comm']} (pid {w['pid']}) woken by {_waker(w)} at {w['woken_at']:.6f} "
        f"to CPU {w['cpu']}, ran at {w['ran_at']:.6f}"
    )


def _waker(w: dict) -> str:
    """Who woke a task: ``kworker/0:1 (pid 31)``, by name and pid."""
    pid = w.get("waker_pid")
    return f"{w['waker']} (pid {pid})" if pid is not None else str(w["waker"])


def _part_text(p: dict) -> str:
    """One part of a wait's breakdown: ``python3 (pid 21264, fair_lighter) 14.735 ms``."""
    ms = f"{p['us'] / 1e3:.3f} ms"
    if p["part"] == "task":
        return f"{p['comm']} (pid {p['pid']}, {p['class']}) {ms}"
    if p["part"] == "idle":
        return f"CPU {p['cpu']} idle {ms}"
    return f"{p['part'].replace('_', ' ')} {ms}"


def total_us(parts: list[dict]) -> float:
    return sum(p["us"] for p in parts)


def breakdown_text(parts: list[dict], llc_idle_us: float | None = None, top: int = 3) -> str:
    """A wait's causes in one line: the wake path, the ``top`` largest parts and the
    rest together (``= wake path 0.012 ms + python3 (pid 1, fair_same_nice) 3.100 ms
    + 12 more 4.000 ms``), then the LLC's idle time beside it."""
    head = [p for p in parts if p["part"] == "wake_path"]
    body = [p for p in parts if p["part"] != "wake_path"]
    shown = head + body[:top]
    rest = body[top:]
    text = " + ".join(_part_text(p) for p in shown) or "no part"
    if rest:
        text += f" + {len(rest)} more {sum(p['us'] for p in rest) / 1e3:.3f} ms"
    for p in parts:
        if p["part"] == "unknown" and p["us"] >= 0.01 * total_us(parts):
            text += f" (unknown {p['us'] / 1e3:.3f} ms: {p['why']})"
    if llc_idle_us:
        text += f"; other CPUs of its LLC idle {llc_idle_us / 1e3:.3f} ms meanwhile"
    return "= " + text


def _stack_lines(parts: list[dict]) -> list[str]:
    """The kernel stack of the task that ran longest instead, where the trace has
    callchains: ``stack of python3 (pid 1) at its switch-out 12.345678: a <- b``."""
    for p in parts:
        if p.get("stack"):
            text = (
                f"stack of {p['comm']} (pid {p['pid']}) at its switch-out {p['stack_at']:.6f}: "
                + " <- ".join(p["stack"][:6])
            )
            return _indented(text, " " * 13, " " * 15)
    return []


def wait_span(w: dict) -> str:
    """A wait's length: ``2.432 ms``, or ``0.018 to 18.405 ms (its switch-in is
    missing)`` where the trace shows its end only within bounds."""
    if w.get("cut"):
        return f"{w['wait_us'] / 1e3:.3f} ms in the slice"
    if "wait_min_us" not in w:
        return f"{w['wait_us'] / 1e3:.3f} ms"
    return f"{w['wait_min_us'] / 1e3:.3f} to {w['wait_us'] / 1e3:.3f} ms (its switch-in is missing)"


def _ended(w: dict) -> str:
    """How a wait ended: ``ran on CPU 3 at 54.681339``, or ``left the slice from CPU 2
    at 54.637413`` (moved off its CPUs, or run elsewhere, or at the window's end)."""
    if w.get("cut"):
        return f"left the slice from CPU {w['cpu']} at {w['to']:.6f}"
    return f"ran on CPU {w['cpu']} at {w['to']:.6f}"


def _preempted_text(w: dict) -> str:
    return (
        f"{wait_span(w)}, {w['comm']} (pid {w['pid']}) preempted on CPU "
        f"{w['from_cpu']} at {w['from']:.6f}, {_ended(w)}"
    )


def tail_text(t: dict) -> str:
    """The tail of the waits in one sentence: how many reach the quantile, and their
    causes' shares (the ``tail:`` line of the text and HTML reports)."""
    causes = ", ".join(f"{c['cause']} {100 * c['share']:.0f}%" for c in t["causes"][:5])
    return (
        f"{t['waits']} waits >= {t['threshold_us'] / 1e3:.3f} ms (p{100 * t['quantile']:g}"
        + (f", the {t['explained']} longest explained" if t["explained"] < t["waits"] else "")
        + f"): {causes}"
    )


def _wait_lines(analysis) -> list[str]:
    """The longest wait's causes, the longest preempted wait and the tail's causes."""
    lines: list[str] = []
    w = analysis.longest_wake_to_run
    if w is not None and w.get("breakdown"):
        lines += _indented(breakdown_text(w["breakdown"], w.get("llc_idle_us")), " " * 11, " " * 13)
        lines += _stack_lines(w["breakdown"])
    p = analysis.longest_preempted_wait
    if p is not None:
        lines += _wrap("preempted:", _preempted_text(p))
        lines += _indented(breakdown_text(p["breakdown"], p.get("llc_idle_us")), " " * 11, " " * 13)
        lines += _stack_lines(p["breakdown"])
    t = analysis.tail_waits
    if t is not None and t["causes"]:
        lines += _wrap("tail:", tail_text(t))
    return lines


def waits_text(waits: list[dict]) -> list[str]:
    """Every wait of the ``--pid`` tasks (``analyze --waits``), one line each with its
    causes under it."""
    out = []
    for w in waits:
        woken = f", woken by {_waker(w)}" if w.get("waker") is not None else ""
        out += _indented(
            f"{w['from']:.6f} {w['comm']} (pid {w['pid']}) {w['kind'].replace('_', '-')} "
            f"{wait_span(w)}{woken}, {_ended(w)}",
            "  ",
            "    ",
        )
        out += _indented(breakdown_text(w["breakdown"], w.get("llc_idle_us")), "    ", "      ")
        if w.get("stack"):
            out += _indented(
                f"its own stack at its switch-out {w['stack_at']:.6f}: "
                + " <- ".join(w["stack"][:6]),
                "    ",
                "      ",
            )
        out += [line[9:] for line in _stack_lines(w["breakdown"])]
    return out


def _summary_lines(analysis) -> list[str]:
    s = analysis.facts
    topo = analysis.cpu_map
    lost = sum(s["lost_events"].values())
    lines = _wrap("trace:", f"{s['path']} ({s['format']}, kernel {s['kernel'] or 'unknown'})")
    lines += _wrap(
        "duration:", f"{s['duration_s']:.3f} s, {s['cpus']} CPUs, clock {s['clock'] or 'unknown'}"
    )
    lines += _wrap("topology:", topo.describe())
    lines += _wrap("events:", f"{sum(s['events'].values())} ({_events(s['events'])})")
    lines += _wrap(
        "lost:",
        f"{lost} events" + (" (and an unknown number more)" if s["lost_unknown"] else "")
        if lost or s["lost_unknown"]
        else "none",
    )
    lines += _wrap("max wait:", longest_wait_text(analysis))
    lines += _wait_lines(analysis)
    if topo.assumed:
        lines += _wrap("WARNING:", "topology assumed (one LLC): cross-LLC figures mean nothing")
    return lines


def _busy_table(busy: dict, indent: str = "  ") -> list[str]:
    """The per-CPU busy shares as a small table, eight CPUs a row: ``cpu0-7  70.2% ...``."""
    cpus = sorted(busy, key=int)
    out = []
    for i in range(0, len(cpus), 8):
        row = cpus[i : i + 8]
        cells = " ".join("      ?" if busy[c] is None else f"{100 * busy[c]:6.1f}%" for c in row)
        out.append(f"{indent}{'cpu' + row[0] + '-' + row[-1]:<10}{cells}")
    return out


def to_json(analysis, indent: int = 2) -> str:
    """``schedwake analyze --format json``: the analysis's
    :meth:`~schedwake.analysis.Analysis.to_dict` as JSON (NaN is null:
    :mod:`schedwake.jsonout`), written from its :func:`~schedwake.analysis.document`
    (the tasks' rows from their columns)."""
    return dumps(document(analysis), indent=indent)


@dataclass(frozen=True)
class FindingView:
    """What the text and Markdown reports show of one finding."""

    number: int  # from 1
    severity: str  # upper case: HIGH, MEDIUM, LOW
    detector: str
    title: str
    facts: list[str]  # its longest gap (when it has one), then its key metrics
    top: list[str]  # its first five top entries, formatted
    evidence: list[str]  # trace-cmd report -N lines of one typical episode


def finding_view(number: int, f: Finding) -> FindingView:
    """What the reports show of finding ``f`` (number ``number`` of the list)."""
    return FindingView(
        number=number,
        severity=f.severity.upper(),
        detector=f.detector,
        title=f.title,
        facts=[line for line in (gap_line(f), *key_facts(f)) if line],
        top=[format_value(t) for t in (f.top or [])[:5]],
        evidence=list(f.evidence or []),
    )


@dataclass(frozen=True)
class MetricRow:
    """A metric as the reports show it. ``kind``: ``bench`` (a benchmark's result:
    ``note`` its unit, direction and file), ``busy`` (the per-CPU busy shares, a table
    of their own in text: ``note`` says when some are withheld) or ``value`` (``note``:
    the bounds the trace gives it, when it gives bounds only)."""

    name: str
    value: object
    kind: str
    note: str


def metric_rows(metrics: dict, bounds: dict) -> list[MetricRow]:
    """The rows of the reports' metrics section: every metric but ``bench`` (the
    benchmark results' descriptions, shown as the notes of their rows), in order."""
    bench = metrics.get("bench") or {}
    rows = []
    for k, v in metrics.items():
        if k == "bench":
            continue
        if k in bench:
            rows.append(MetricRow(k, v, "bench", _bench_note(bench, k)))
        elif k == "busy_share" and isinstance(v, dict) and v:
            withheld = " (?: withheld, see the caveats)" if None in v.values() else ""
            rows.append(MetricRow(k, v, "busy", withheld))
        else:
            rows.append(MetricRow(k, v, "value", _bounds_note(bounds, k, v)))
    return rows


@dataclass(frozen=True)
class TaskStateRows:
    """The task states table: one row per ``--pid`` task (``focus``), else per task
    class; each row (label, seconds in each state of :data:`STATE_COLS`, runnable share
    in percent as text, ``-`` when the tasks neither ran nor waited)."""

    focus: bool
    rows: list[tuple[str, list[float], str]]


def task_state_rows(task_states: dict, focus: bool) -> TaskStateRows:
    """The rows of the task states table of ``task_states`` (the analysis's:
    ``tasks`` and ``classes``); ``focus``: the trace was cut to ``--pid`` tasks."""
    rows = []
    for r in task_states["tasks"] if focus else task_states["classes"]:
        busy = r["running_s"] + r["runnable_s"]
        share = f"{100 * r['runnable_s'] / busy:.1f}" if busy > 0 else "-"
        label = f"{r['comm']} ({r['pid']})" if focus else f"{r['class']} ({r['tasks']} tasks)"
        rows.append((label, [r[k] for k, _ in STATE_COLS], share))
    return TaskStateRows(focus, rows)


@dataclass(frozen=True)
class ReportParts:
    """What the human report of an analysis shows, section by section."""

    name: str  # the trace's file name (the full path is in the summary)
    summary: list[str]
    caveats: list[str]
    findings: list[FindingView]
    task_states: TaskStateRows
    waits: list[dict] | None  # every wait of the --pid tasks (--waits), else None
    metrics: list[MetricRow]


def report_parts(analysis) -> ReportParts:
    """What :func:`text` and :func:`markdown` show of ``analysis``."""
    return ReportParts(
        name=Path(analysis.facts["path"]).name,
        summary=_summary_lines(analysis),
        caveats=list(analysis.caveats),
        findings=[finding_view(i, f) for i, f in enumerate(analysis.findings, 1)],
        task_states=task_state_rows(analysis.task_states, analysis.focused),
        waits=analysis.task_waits,
        metrics=metric_rows(analysis.metrics, analysis.bounds),
    )


def text(analysis, markdown: bool = False) -> str:
    """The human report: summary, caveats, findings by severity with evidence, metrics."""
    out = _lines(report_parts(analysis), _MARKDOWN if markdown else _TEXT)
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class _Style:
    """How a report format writes each part (:data:`_TEXT`, :data:`_MARKDOWN`)."""

    escape: Callable[[str], str]  # a name from the trace or its side files
    h1: Callable[[str], str]
    h2: Callable[[str], str]
    summary: Callable[[str], str]  # a summary line
    caveat: Callable[[str], str]
    finding: Callable[[FindingView], list[str]]
    task_states: Callable[[TaskStateRows], list[str]]
    waits: Callable[[list[str]], list[str]]  # the lines of waits_text
    metrics: Callable[[list[MetricRow]], list[str]]


def _lines(parts: ReportParts, s: _Style) -> list[str]:
    """The report's lines: each section of ``parts`` as ``s`` writes it."""
    out = [s.h1(f"schedwake analyze: {s.escape(parts.name)}"), *map(s.summary, parts.summary)]
    if parts.caveats:
        out.append(s.h2("Caveats"))
        out.extend(map(s.caveat, parts.caveats))
    out.append(s.h2(f"Findings ({len(parts.findings)})"))
    if not parts.findings:
        out.append("none: no detector's thresholds were crossed")
    for f in parts.findings:
        out += s.finding(f)
    out.append(s.h2("Task states"))
    out += s.task_states(parts.task_states)
    if parts.waits is not None:
        out.append(s.h2(f"Waits of the --pid tasks ({len(parts.waits)})"))
        out += s.waits(waits_text(parts.waits) or ["none"])
    out.append(s.h2("Metrics"))
    out += s.metrics(parts.metrics)
    return out


def _finding_text(f: FindingView) -> list[str]:
    out = [""] + _indented(f"[{f.severity}] {f.detector}: {f.title}", "", "    ")
    for line in f.facts:
        out += _indented(line, "    ", "      ")
    if f.top:
        out.append("    top:")
        for t in f.top:
            out += _indented(t, "      ", "        ")
    if f.evidence:
        out.append("    evidence (trace-cmd report -N layout):")
        out.extend("      " + line for line in f.evidence)
    return out


def _finding_markdown(f: FindingView) -> list[str]:
    out = [f"\n### {f.number}. \\[{f.severity}\\] {md(f.detector)}\n", f"{md(f.title)}\n"]
    out.extend(f"- {md(line)}" for line in f.facts)
    if f.top:
        out.append("- top:")
        out.extend(f"  - {md(t)}" for t in f.top)
    if f.evidence:
        block = fence(f.evidence)
        out.append(f"\nEvidence (one typical episode, trace-cmd report -N layout):\n\n{block}")
        out.extend(code_line(line) for line in f.evidence)
        out.append(block)
    return out


def _metrics_text(rows: list[MetricRow]) -> list[str]:
    width = max((len(r.name) for r in rows), default=0)
    out = []
    for r in rows:
        if r.kind == "busy":
            out.append(f"  {r.name}  (share of the time each CPU runs a task){r.note}")
            out += _busy_table(cast("dict", r.value), "    ")
        else:
            out.append(f"  {r.name:<{width}}  {format_value(r.value)}{r.note}")
    return out


def _metrics_markdown(rows: list[MetricRow]) -> list[str]:
    return ["| metric | value |\n|---|---|"] + [
        f"| {md(r.name)} | {md(format_value(r.value))}{md(r.note if r.kind == 'bench' else '')} |"
        for r in rows
    ]


def _waits_markdown(lines: list[str]) -> list[str]:
    """The lines of :func:`waits_text` as Markdown: a wait an item, its causes under it."""
    return [f"- {md(x.strip())}" if not x.startswith("    ") else md(x) for x in lines]


def _bounds_note(bounds: dict, name: str, value) -> str:
    """`` (withheld: 51.1 to 59.51)`` after a metric the trace gives only within bounds."""
    b = bounds.get(name)
    if not b or b[1] is None:
        return "  (at least)" if b else ""
    lo, hi = (format_value(x) for x in b)
    return f"  (withheld: between {lo} and {hi})" if value is None else f"  ({lo} to {hi})"


#: The task states table's columns: (the analysis's key, the column's head).
STATE_COLS = (
    ("observed_s", "observed"),
    ("running_s", "running"),
    ("preempted_s", "preempt"),
    ("woken_wait_s", "woken"),
    ("sleeping_s", "sleeping"),
    ("blocked_s", "blocked"),
    ("unknown_s", "unknown"),
)


_TASK_STATES_NOTE = (
    "seconds in each state (runnable = preempt + woken: waiting to run after a "
    "preemption, after a wake-up); runnable share = runnable / (running + runnable); "
    "docs/task-states.md"
)
_TASK_STATES_HEADS = [h for _, h in STATE_COLS] + ["runnable %"]


def _task_states_text(t: TaskStateRows) -> list[str]:
    if not t.rows:
        return ["no task seen switching or waking"]
    heads = _TASK_STATES_HEADS
    out = _indented(_TASK_STATES_NOTE, "  ", "  ")
    out.append(f"  {'':<24}" + "".join(f"{h:>9}" for h in heads[:-1]) + f"{heads[-1]:>11}")
    for label, vals, share in t.rows:
        out.append(f"  {label[:24]:<24}" + "".join(f"{v:>9.3f}" for v in vals) + f"{share:>11}")
    return out


def _task_states_markdown(t: TaskStateRows) -> list[str]:
    if not t.rows:
        return ["no task seen switching or waking"]
    heads = _TASK_STATES_HEADS
    out = [
        _TASK_STATES_NOTE,
        "",
        "| " + ("task" if t.focus else "class") + " | " + " | ".join(heads) + " |",
    ]
    out.append("|---" * (len(heads) + 1) + "|")
    for label, vals, share in t.rows:
        out.append(f"| {md(label)} | " + " | ".join(f"{v:.6f}" for v in vals) + f" | {share} |")
    return out


def _bench_note(bench: dict, name: str) -> str:
    """`` MB/s (higher is better; from dbench.txt)`` after a benchmark result's value."""
    info = bench.get(name)
    if not info:
        return ""
    unit = f" {info['unit']}" if info.get("unit") else ""
    return f"{unit} ({info['direction']} is better; from {Path(info['source']).name})"


def _side_by_side(gap: LongestGap) -> str:
    """The longest idle-while-runnable gap in one sentence: the idle CPU(s) and the
    task(s) waiting beside them, with what each waited behind."""
    cpus = ", ".join(str(c) for c in gap["idle_cpus"])
    waits = "; ".join(
        f"{w['comm']} (pid {w['pid']}) waited on CPU {w['cpu']}"
        + (f" behind {w['behind_comm']} (pid {w['behind_pid']})" if w["behind_pid"] else "")
        for w in gap["waiting"]
    )
    return (
        f"longest gap: at {gap['at']:.6f}, for {gap['us'] / 1e3:.3f} ms, CPU(s) {cpus} idle "
        f"while {waits}"
    )


def _indented(text: str, first: str, rest: str) -> list[str]:
    """``text`` wrapped to the width: ``first`` before its first line, ``rest`` before the
    others; words (paths) are never split."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


def markdown(analysis) -> str:
    return text(analysis, markdown=True)


_TEXT = _Style(
    escape=str,
    h1=lambda t: f"== {t} ==",
    h2=lambda t: f"\n-- {t}",
    summary=str,
    caveat=lambda c: f"- {c}",
    finding=_finding_text,
    task_states=_task_states_text,
    waits=list,
    metrics=_metrics_text,
)
_MARKDOWN = _Style(
    escape=md,
    h1=lambda t: f"# {t}\n",
    h2=lambda t: f"\n## {t}\n",
    summary=lambda x: f"- {md(x)}",
    caveat=lambda c: f"- {md(c)}",
    finding=_finding_markdown,
    task_states=_task_states_markdown,
    waits=_waits_markdown,
    metrics=_metrics_markdown,
)
