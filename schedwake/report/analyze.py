"""Rendering of ``schedwake analyze``: an :class:`schedwake.analysis.Analysis` (summary,
caveats, findings with their evidence lines, metrics) as text, Markdown or JSON.
"""

from __future__ import annotations

import math

from ..summary import summary


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


def _top_events(counts: dict, n: int) -> str:
    """The ``n`` most frequent events with their counts: ``sched_switch 120, ...``."""
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {v}" for k, v in top)


def _summary_lines(trace) -> list[str]:
    s = summary(trace)
    topo = trace.topology
    lost = sum(s["lost_events"].values())
    lines = [
        f"trace:     {s['path']} ({s['format']}, kernel {s['kernel'] or 'unknown'})",
        f"duration:  {s['duration_s']:.3f} s, {s['cpus']} CPUs, clock {s['clock'] or 'unknown'}",
        f"topology:  {topo.describe()}",
        f"events:    {sum(s['events'].values())} ({_top_events(s['events'], 6)})",
        "lost:      "
        + (
            f"{lost} events" + (" (and an unknown number more)" if s["lost_unknown"] else "")
            if lost or s["lost_unknown"]
            else "none"
        ),
    ]
    if topo.assumed:
        lines.append("WARNING:   topology assumed (one LLC): cross-LLC figures mean nothing")
    return lines


def to_json(analysis) -> str:
    """``schedwake analyze --format json``."""
    return analysis.to_json()


def text(analysis, markdown: bool = False) -> str:
    """The human report: summary, caveats, findings by severity with evidence, metrics."""
    trace, findings, metrics = analysis.trace, analysis.findings, analysis.metrics
    out: list[str] = []
    h1 = (lambda t: out.append(f"# {t}\n")) if markdown else (lambda t: out.append(f"== {t} =="))
    h2 = (lambda t: out.append(f"\n## {t}\n")) if markdown else (lambda t: out.append(f"\n-- {t}"))
    h1(f"schedwake analyze: {trace.path}")
    summ = _summary_lines(trace)
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
            out.append(f"\n[{f.severity.upper()}] {f.detector}: {f.title}")
        for k in _KEY_METRICS.get(f.detector, ()):
            if k in f.metrics:
                out.append(f"{'- ' if markdown else '    '}{k}: {format_value(f.metrics[k])}")
        if f.top:
            out.append(f"{'- ' if markdown else '    '}top:")
            for t in f.top[:5]:
                out.append(f"{'  - ' if markdown else '      '}{format_value(t)}")
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
    if markdown:
        out.append("| metric | value |\n|---|---|")
        out.extend(f"| {k} | {format_value(v)} |" for k, v in metrics.items())
    else:
        width = max(len(k) for k in metrics) if metrics else 0
        out.extend(f"  {k:<{width}}  {format_value(v)}" for k, v in metrics.items())
    return "\n".join(out) + "\n"


def markdown(analysis) -> str:
    return text(analysis, markdown=True)
