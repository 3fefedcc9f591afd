"""Rendering of ``schedwake analyze``: an :class:`schedwake.analysis.Analysis` (summary,
caveats, findings with their evidence lines, metrics) as text, Markdown or JSON.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from ..summary import summary

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


_KEY_METRICS = {
    "kworker_pingpong": (
        "episodes",
        "episodes_per_s",
        "share_of_wakeups",
        "would_stack",
        "would_not_stack",
        "migrated_share_of_those",
    ),
    "llc_roundrobin": ("flagged_tasks", "cpu_changes", "cpu_changes_per_s", "judged_tasks"),
    "cswitch_storm": (
        "cpu",
        "task",
        "switches_per_s",
        "kworker_preemptions",
        "futile_wakeups",
        "futile_share",
        "kworkers",
    ),
    "idle_while_runnable": (
        "idle_while_runnable_s",
        "share",
        "longest_gap_us",
        "pinned_tasks_excluded",
    ),
}


def _events(counts: dict) -> str:
    """Every event with its count, most frequent first: ``sched_switch 120, ...``."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def _wrap(label: str, text: str) -> list[str]:
    """``label`` then ``text`` wrapped to the width, continuation lines under the text."""
    return _indented(text, f"{label:<11}", " " * 11)


def _longest_wait(analysis) -> str:
    w = analysis.longest_wake_to_run
    if w is None:
        return "no wake-up with a measured wake-to-run time"
    return (
        f"{w['latency_us'] / 1e3:.3f} ms, {w['comm']} (pid {w['pid']}) woken by "
        f"{w['waker']} at {w['woken_at']:.6f} to CPU {w['cpu']}, ran at {w['ran_at']:.6f}"
    )


def _summary_lines(analysis) -> list[str]:
    trace = analysis.trace
    s = summary(trace)
    topo = trace.topology
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
    lines += _wrap("max wait:", _longest_wait(analysis))
    if topo.assumed:
        lines += _wrap("WARNING:", "topology assumed (one LLC): cross-LLC figures mean nothing")
    return lines


def _busy_table(busy: dict, indent: str = "  ") -> list[str]:
    """The per-CPU busy shares as a small table, eight CPUs a row: ``cpu0-7  70.2% ...``."""
    cpus = sorted(busy, key=int)
    out = []
    for i in range(0, len(cpus), 8):
        row = cpus[i : i + 8]
        cells = " ".join(f"{100 * busy[c]:6.1f}%" for c in row)
        out.append(f"{indent}{'cpu' + row[0] + '-' + row[-1]:<10}{cells}")
    return out


def to_json(analysis) -> str:
    """``schedwake analyze --format json``."""
    return analysis.to_json()


def text(analysis, markdown: bool = False) -> str:
    """The human report: summary, caveats, findings by severity with evidence, metrics."""
    trace, findings, metrics = analysis.trace, analysis.findings, analysis.metrics
    out: list[str] = []
    h1 = (lambda t: out.append(f"# {t}\n")) if markdown else (lambda t: out.append(f"== {t} =="))
    h2 = (lambda t: out.append(f"\n## {t}\n")) if markdown else (lambda t: out.append(f"\n-- {t}"))
    h1(f"schedwake analyze: {Path(trace.path).name}")  # (the full path is on the next line)
    summ = _summary_lines(analysis)
    out.extend([f"- {x}" for x in summ] if markdown else summ)
    caveats = analysis.caveats
    if caveats:
        h2("Caveats")
        out.extend(f"- {c}" for c in caveats)
    h2(f"Findings ({len(findings)})")
    if not findings:
        out.append("none: no detector's thresholds were crossed")
    for i, f in enumerate(findings, 1):
        if markdown:
            out.append(f"\n### {i}. [{f.severity.upper()}] {f.detector}\n")
            out.append(f"{f.title}\n")
        else:
            out.append("")
            out += _indented(f"[{f.severity.upper()}] {f.detector}: {f.title}", "", "    ")
        gap = f.metrics.get("longest_gap") if f.detector == "idle_while_runnable" else None
        if gap:
            line = _side_by_side(gap)
            out += [f"- {line}"] if markdown else _indented(line, "    ", "      ")
        for k in _KEY_METRICS.get(f.detector, ()):
            if k in f.metrics:
                line = f"{k}: {format_value(f.metrics[k])}"
                out += [f"- {line}"] if markdown else _indented(line, "    ", "      ")
        if f.top:
            out.append(f"{'- ' if markdown else '    '}top:")
            for t in f.top[:5]:
                if markdown:
                    out.append(f"  - {format_value(t)}")
                else:
                    out += _indented(format_value(t), "      ", "        ")
        if f.evidence:
            out.append(
                "\nEvidence (one typical episode, trace-cmd report -N layout):\n\n```"
                if markdown
                else "    evidence (trace-cmd report -N layout):"
            )
            out.extend(("" if markdown else "      ") + line for line in f.evidence)
            if markdown:
                out.append("```")
    h2("Metrics")
    bench = metrics.get("bench") or {}
    metrics = {k: v for k, v in metrics.items() if k != "bench"}
    if markdown:
        out.append("| metric | value |\n|---|---|")
        out.extend(
            f"| {k} | {format_value(v)}{_bench_note(bench, k)} |" for k, v in metrics.items()
        )
    else:
        width = max(len(k) for k in metrics) if metrics else 0
        for k, v in metrics.items():
            if k in bench:
                out.append(f"  {k:<{width}}  {format_value(v)}{_bench_note(bench, k)}")
            elif k == "busy_share" and isinstance(v, dict) and v:
                out.append(f"  {k}  (share of the time each CPU runs a task)")
                out += _busy_table(v, "    ")
            else:
                out.append(f"  {k:<{width}}  {format_value(v)}")
    return "\n".join(out) + "\n"


def _bench_note(bench: dict, name: str) -> str:
    """`` MB/s (higher is better; from dbench.txt)`` after a benchmark result's value."""
    info = bench.get(name)
    if not info:
        return ""
    unit = f" {info['unit']}" if info.get("unit") else ""
    return f"{unit} ({info['direction']} is better; from {Path(info['source']).name})"


def _side_by_side(gap: dict) -> str:
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
