"""Rendering of ``schedwake analyze``: the summary, findings and metrics as text,
Markdown or JSON, and the evidence lines in ``trace-cmd report -N`` layout.
"""

from __future__ import annotations


import json
import math

import numpy as np

from . import info as info_report

# -- evidence lines -------------------------------------------------------------------------

EVIDENCE_EVENTS = ("sched_waking", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task",
                   "sched_switch", "workqueue_execute_start", "workqueue_execute_end",
                   "workqueue_queue_work", "workqueue_activate_work", "sched_process_fork",
                   "sched_process_exec")


def _fields(name: str, r: dict) -> str:
    g = r.get
    if name in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
        return f"comm={g('comm')} pid={g('pid')} prio={g('prio')} target_cpu={g('target_cpu'):03d}"
    if name == "sched_migrate_task":
        return (f"comm={g('comm')} pid={g('pid')} prio={g('prio')} "
                f"orig_cpu={g('orig_cpu')} dest_cpu={g('dest_cpu')}")
    if name == "sched_switch":
        st = g("prev_state_str") if g("prev_state_str") is not None else g("prev_state")
        return (f"prev_comm={g('prev_comm')} prev_pid={g('prev_pid')} "
                f"prev_prio={g('prev_prio')} prev_state={st} ==> next_comm={g('next_comm')} "
                f"next_pid={g('next_pid')} next_prio={g('next_prio')}")
    if name in ("workqueue_execute_start", "workqueue_execute_end"):
        return f"work struct 0x{int(g('work') or 0):x}: function {g('function')}"
    if name == "workqueue_queue_work":
        return (f"work struct=0x{int(g('work') or 0):x} function={g('function')} "
                f"workqueue={g('workqueue')} req_cpu={g('req_cpu')} cpu={g('field_cpu')}")
    if name == "workqueue_activate_work":
        return f"work struct 0x{int(g('work') or 0):x} function={g('function')} "
    if name == "sched_process_fork":
        return (f"comm={g('parent_comm')} pid={g('parent_pid')} child_comm={g('child_comm')} "
                f"child_pid={g('child_pid')}")
    skip = {"ts", "cpu", "common_pid", "common_comm", "common_flags", "common_preempt_count"}
    return " ".join(f"{k}={v}" for k, v in r.items() if k not in skip)


def format_event(name: str, r: dict) -> str:
    """One event in the ``trace-cmd report -N`` layout:
    ``%16s-%-5d [%03d] %5d.%06d: %-20s`` + the kernel's print format of the fields."""
    ts = (int(r["ts"]) + 500) // 1000  # microseconds, rounded as trace-cmd prints them
    pid = r.get("common_pid")
    comm = "<idle>" if pid == 0 else (r.get("common_comm") or "<...>")
    return (f"{comm:>16}-{pid if pid is not None else 0:<5} [{int(r['cpu']):03d}] "
            f"{ts // 1_000_000:5d}.{ts % 1_000_000:06d}: "
            f"{name + ':':<21} {_fields(name, r)}")


_PID_FIELDS = ("common_pid", "pid", "prev_pid", "next_pid", "child_pid")


def event_lines(trace, t0: int, t1: int, cpus=None, pids=(), focus_ts=None,
                only_pids: bool = False, limit: int = 14) -> list[str]:
    """The original events in ``[t0, t1]`` on ``cpus`` (all when None), formatted, in
    time order; at most ``limit`` lines, preferring events of ``pids`` and those
    nearest ``focus_ts``."""
    rows = []
    pids = set(int(p) for p in pids)
    for name in EVIDENCE_EVENTS:
        if not trace.has(name):
            continue
        t = trace.table(name)
        if t.num_rows == 0:
            continue
        ts = t.column("ts").to_numpy()
        if np.all(ts[1:] >= ts[:-1]):
            lo, hi = np.searchsorted(ts, t0, "left"), np.searchsorted(ts, t1, "right")
            idx = np.arange(lo, hi)
        else:
            idx = np.flatnonzero((ts >= t0) & (ts <= t1))
        if cpus is not None and len(idx):
            cpu = t.column("cpu").to_numpy()[idx]
            idx = idx[np.isin(cpu, list(cpus))]
        if len(idx) == 0:
            continue
        for k, r in zip(idx, t.take(idx).to_pylist()):
            involved = bool(pids & {r.get(f) for f in _PID_FIELDS})
            if only_pids and not involved:
                continue
            rows.append((int(r["ts"]), int(k), name, r, involved))
    rows.sort(key=lambda x: (x[0], x[1]))
    if len(rows) > limit:
        focus = focus_ts if focus_ts is not None else (t0 + t1) // 2
        ranked = sorted(range(len(rows)), key=lambda i: (not rows[i][4],
                                                         abs(rows[i][0] - focus)))
        keep = sorted(ranked[:limit])
        rows = [rows[i] for i in keep]
    return [format_event(name, r) for _, _, name, r, _ in rows]


# -- results ---------------------------------------------------------------------------------

def run(trace, thresholds: dict | None = None, detectors=None):
    """Findings and metrics of ``trace``: what ``schedwake analyze`` reports."""
    from ..detect import detect
    from ..metrics import trace_metrics

    findings = detect(trace, thresholds, detectors)
    return findings, trace_metrics(trace, thresholds)


def result(trace, findings, metrics: dict) -> dict:
    """The JSON document of ``schedwake analyze --format json``."""
    return {"trace": info_report.summary(trace),
            "findings": [f.to_dict() for f in findings],
            "metrics": metrics}


def to_json(trace, findings, metrics) -> str:
    return json.dumps(result(trace, findings, metrics), indent=2, default=_jsonable)


def _jsonable(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


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
    "kworker_pingpong": ("episodes", "episodes_per_s", "share_of_wakeups", "would_stack",
                         "would_not_stack", "migrated_share_of_those"),
    "llc_roundrobin": ("flagged_tasks", "cpu_changes", "cpu_changes_per_s", "judged_tasks"),
    "cswitch_storm": ("cpu", "task", "switches_per_s", "kworker_preemptions",
                      "futile_wakeups", "futile_share", "kworkers"),
    "idle_while_runnable": ("idle_while_runnable_s", "share", "longest_gap_us",
                            "pinned_tasks_excluded"),
}


def _summary_lines(trace, metrics) -> list[str]:
    s = info_report.summary(trace)
    topo = trace.topology
    lost = sum(s["lost_events"].values())
    lines = [
        f"trace:     {s['path']} ({s['format']}, kernel {s['kernel'] or 'unknown'})",
        f"duration:  {s['duration_s']:.3f} s, {s['cpus']} CPUs, clock {s['clock'] or 'unknown'}",
        f"topology:  {topo.describe()}",
        f"events:    {sum(s['events'].values())} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(s['events'].items(), key=lambda kv: -kv[1])[:6])})",
        "lost:      " + (f"{lost} events" + (" (and an unknown number more)"
                                             if s["lost_unknown"] else "")
                         if lost or s["lost_unknown"] else "none"),
    ]
    if topo.assumed:
        lines.append("WARNING:   topology assumed (one LLC): cross-LLC figures mean nothing")
    return lines


def text(trace, findings, metrics, markdown: bool = False) -> str:
    """The human report: summary, caveats, findings by severity with evidence, metrics."""
    out: list[str] = []
    h1 = (lambda t: out.append(f"# {t}\n")) if markdown else (lambda t: out.append(f"== {t} =="))
    h2 = (lambda t: out.append(f"\n## {t}\n")) if markdown else (lambda t: out.append(f"\n-- {t}"))
    h1(f"schedwake analyze: {trace.path}")
    summ = _summary_lines(trace, metrics)
    out.extend([f"- {x}" for x in summ] if markdown else summ)
    caveats = trace.caveats
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
            out.append(("\nEvidence (one typical episode, trace-cmd report -N layout):\n\n```"
                        if markdown else "    evidence (trace-cmd report -N layout):"))
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


def markdown(trace, findings, metrics) -> str:
    return text(trace, findings, metrics, markdown=True)
