"""Rendering of ``schedwake analyze``: an :class:`schedwake.analysis.Analysis` (summary,
caveats, findings with their evidence lines, metrics) as text, Markdown or JSON.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import cast

from ..detect import Finding, shown
from ..detect.base import LongestGap
from ..jsonout import dumps
from ..summary import summary
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
    :mod:`schedwake.jsonout`)."""
    return dumps(analysis.to_dict(), indent=indent)


def text(analysis, markdown: bool = False) -> str:
    """The human report: summary, caveats, findings by severity with evidence, metrics."""
    trace, findings, metrics = analysis.trace, analysis.findings, analysis.metrics
    out: list[str] = []
    m = md if markdown else str  # (names from the trace and its side files, escaped)
    h1 = (lambda t: out.append(f"# {t}\n")) if markdown else (lambda t: out.append(f"== {t} =="))
    h2 = (lambda t: out.append(f"\n## {t}\n")) if markdown else (lambda t: out.append(f"\n-- {t}"))
    h1(f"schedwake analyze: {m(Path(trace.path).name)}")  # (the full path is on the next line)
    summ = _summary_lines(analysis)
    out.extend([f"- {m(x)}" for x in summ] if markdown else summ)
    caveats = analysis.caveats
    if caveats:
        h2("Caveats")
        out.extend(f"- {m(c)}" for c in caveats)
    h2(f"Findings ({len(findings)})")
    if not findings:
        out.append("none: no detector's thresholds were crossed")
    for i, f in enumerate(findings, 1):
        if markdown:
            out.append(f"\n### {i}. \\[{f.severity.upper()}\\] {m(f.detector)}\n")
            out.append(f"{m(f.title)}\n")
        else:
            out.append("")
            out += _indented(f"[{f.severity.upper()}] {f.detector}: {f.title}", "", "    ")
        for line in filter(None, (gap_line(f), *key_facts(f))):
            out += [f"- {m(line)}"] if markdown else _indented(line, "    ", "      ")
        if f.top:
            out.append(f"{'- ' if markdown else '    '}top:")
            for t in f.top[:5]:
                if markdown:
                    out.append(f"  - {m(format_value(t))}")
                else:
                    out += _indented(format_value(t), "      ", "        ")
        if f.evidence:
            block = fence(f.evidence)
            out.append(
                f"\nEvidence (one typical episode, trace-cmd report -N layout):\n\n{block}"
                if markdown
                else "    evidence (trace-cmd report -N layout):"
            )
            out.extend(code_line(line) if markdown else "      " + line for line in f.evidence)
            if markdown:
                out.append(block)
    h2("Task states")
    out += _task_states(analysis, markdown)
    task_waits = analysis.task_waits
    if task_waits is not None:
        h2(f"Waits of the --pid tasks ({len(task_waits)})")
        body = waits_text(task_waits) or ["none"]
        out.extend(
            [f"- {m(x.strip())}" if not x.startswith("    ") else m(x) for x in body]
            if markdown
            else body
        )
    h2("Metrics")
    bench = metrics.get("bench") or {}
    metrics = {k: v for k, v in metrics.items() if k != "bench"}
    if markdown:
        out.append("| metric | value |\n|---|---|")
        out.extend(
            f"| {m(k)} | {m(format_value(v))}{m(_bench_note(bench, k))} |"
            for k, v in metrics.items()
        )
    else:
        width = max(len(k) for k in metrics) if metrics else 0
        for k, v in metrics.items():
            if k in bench:
                out.append(f"  {k:<{width}}  {format_value(v)}{_bench_note(bench, k)}")
            elif k == "busy_share" and isinstance(v, dict) and v:
                note = " (?: withheld, see the caveats)" if None in v.values() else ""
                out.append(f"  {k}  (share of the time each CPU runs a task){note}")
                out += _busy_table(v, "    ")
            else:
                out.append(f"  {k:<{width}}  {format_value(v)}{_bounds_note(analysis, k, v)}")
    return "\n".join(out) + "\n"


def _bounds_note(analysis, name: str, value) -> str:
    """`` (withheld: 51.1 to 59.51)`` after a metric the trace gives only within bounds."""
    b = analysis.bounds.get(name)
    if not b or b[1] is None:
        return "  (at least)" if b else ""
    lo, hi = (format_value(x) for x in b)
    return f"  (withheld: between {lo} and {hi})" if value is None else f"  ({lo} to {hi})"


_STATE_COLS = (
    ("observed_s", "observed"),
    ("running_s", "running"),
    ("preempted_s", "preempt"),
    ("woken_wait_s", "woken"),
    ("sleeping_s", "sleeping"),
    ("blocked_s", "blocked"),
    ("unknown_s", "unknown"),
)


def _task_states(analysis, markdown: bool) -> list[str]:
    """The time of the tasks in each state: one row per task of ``--pid``, else one per
    task class (user, kworker, kthread), with the runnable share of running + runnable."""
    ts = analysis.task_states
    focus = analysis.trace.model.pids is not None
    rows = []
    for r in ts["tasks"] if focus else ts["classes"]:
        busy = r["running_s"] + r["runnable_s"]
        share = f"{100 * r['runnable_s'] / busy:.1f}" if busy > 0 else "-"
        label = f"{r['comm']} ({r['pid']})" if focus else f"{r['class']} ({r['tasks']} tasks)"
        rows.append((label, [r[k] for k, _ in _STATE_COLS], share))
    if not rows:
        return ["no task seen switching or waking"]
    note = (
        "seconds in each state (runnable = preempt + woken: waiting to run after a "
        "preemption, after a wake-up); runnable share = runnable / (running + runnable); "
        "docs/task-states.md"
    )
    heads = [h for _, h in _STATE_COLS] + ["runnable %"]
    if markdown:
        out = [note, "", "| " + ("task" if focus else "class") + " | " + " | ".join(heads) + " |"]
        out.append("|---" * (len(heads) + 1) + "|")
        for label, vals, share in rows:
            out.append(f"| {md(label)} | " + " | ".join(f"{v:.6f}" for v in vals) + f" | {share} |")
        return out
    out = _indented(note, "  ", "  ")
    out.append(f"  {'':<24}" + "".join(f"{h:>9}" for h in heads[:-1]) + f"{heads[-1]:>11}")
    for label, vals, share in rows:
        out.append(f"  {label[:24]:<24}" + "".join(f"{v:>9.3f}" for v in vals) + f"{share:>11}")
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
