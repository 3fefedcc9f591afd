"""The self-contained HTML report of one trace (``schedwake analyze TRACE --html FILE``).

One file, no network: the trace's facts and caveats, each finding with its evidence and
a per-CPU timeline zoomed on it, the per-CPU timeline of the whole trace, the from-CPU x
to-CPU migration matrix, wake-to-run latency CDFs by waker class, the per-CPU busy share,
the time of the tasks in each state (stacked bars) and the metrics. Plots are inline PNG
(static matplotlib) but the whole trace's timeline, which is interactive
(:mod:`schedwake.report.timeline_html`, BokehJS inline; each finding links to its window
there); the page's own script counts the images that decoded, as the comparison report's
does, for a headless browser check.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ..summary import summary
from ..version import __version__
from .analyze import format_value, gap_line, key_facts, longest_wait_text
from .html import esc, figure_tag, page_head

__all__ = ["render", "write"]

#: Evidence windows shorter than this (ns) are widened around their middle for the plot.
MIN_ZOOM_NS = 200_000


def _facts(analysis) -> str:
    trace = analysis.trace
    s = summary(trace)
    lost = sum(s["lost_events"].values())
    events = ", ".join(f"{k} {v}" for k, v in sorted(s["events"].items(), key=lambda kv: -kv[1]))
    rows = [
        ("trace", s["path"]),
        ("format", s["format"]),
        ("kernel", s["kernel"] or "unknown"),
        ("duration", f"{s['duration_s']:.3f} s"),
        ("CPUs", s["cpus"]),
        ("clock", s["clock"] or "unknown"),
        ("topology", trace.topology.describe()),
        ("events", f"{sum(s['events'].values())} ({events})"),
        ("lost events", f"{lost}" + (" and an unknown number" if s["lost_unknown"] else "")),
        ("longest wait", longest_wait_text(analysis)),
    ]
    body = "".join(
        f"<tr><th class='l'>{esc(k)}</th><td class='l'>{esc(v)}</td></tr>" for k, v in rows
    )
    return f"<table>{body}</table>"


def _finding(i: int, f, trace) -> str:
    from .timeline import cpu_timeline

    facts = ", ".join(key_facts(f))
    out = [
        f"<h3 id='finding{i}'><span class='sev-{esc(f.severity)}'>[{esc(f.severity.upper())}]"
        f"</span> {esc(f.detector)}</h3><p>{esc(f.title)}</p><p class='meta'>{esc(facts)}</p>"
    ]
    gap = gap_line(f)
    if gap:
        out.append(f"<p class='meta'>{esc(gap)}</p>")
    if f.top:
        out.append(
            "<p class='meta'>top: " + esc("; ".join(format_value(x) for x in f.top[:5])) + "</p>"
        )
    if f.evidence_at:
        t0, t1 = int(f.evidence_at["t0"]), int(f.evidence_at["t1"])
        if t1 - t0 < MIN_ZOOM_NS:
            mid = (t0 + t1) // 2
            t0, t1 = mid - MIN_ZOOM_NS // 2, mid + MIN_ZOOM_NS // 2
        fig = cpu_timeline(
            trace,
            t0,
            t1,
            title=f"{f.detector}: the evidence window",
            cpus=f.evidence_at.get("cpus"),
        )
        out.append(figure_tag(f"finding{i}-timeline", f"{f.detector}: per-CPU timeline", fig))
        out.append(
            f"<p class='meta'><a href='#timeline' onclick=\"return schedwakeJump('timeline', "
            f"'f{i}')\">explore this window in the interactive timeline</a></p>"
        )
    if f.evidence:
        out.append(
            "<details open><summary>evidence (trace-cmd report -N layout)</summary><pre>"
            + esc("\n".join(f.evidence))
            + "</pre></details>"
        )
    return "".join(out)


def _waits(analysis) -> str:
    """The longest waits broken into causes: a stacked bar per wait, the per-CPU timeline
    of each one's window, and the tail's causes."""
    from .analyze import breakdown_text, tail_text, wait_span
    from .timeline import cpu_timeline
    from .wait_plots import breakdown_bars

    shown: list[tuple[str, dict, int, int, list]] = []
    w = analysis.longest_wake_to_run
    if w is not None and w.get("breakdown"):
        rec = {
            "wait_us": w["latency_us"],
            "breakdown": w["breakdown"],
            "llc_idle_us": w["llc_idle_us"],
        }
        if "latency_min_us" in w:
            rec["wait_min_us"] = w["latency_min_us"]
        t0, t1 = int(round(w["woken_at"] * 1e9)), int(round(w["ran_at"] * 1e9))
        shown.append((f"longest wake-to-run: {w['comm']} ({w['pid']})", rec, t0, t1, [w["cpu"]]))
    p = analysis.longest_preempted_wait
    if p is not None:
        t0, t1 = int(round(p["from"] * 1e9)), int(round(p["to"] * 1e9))
        shown.append((f"longest preempted: {p['comm']} ({p['pid']})", p, t0, t1, p["queued_on"]))
    for x in (analysis.task_waits or [])[:20]:
        t0, t1 = int(round(x["from"] * 1e9)), int(round(x["to"] * 1e9))
        label = f"{x['comm']} ({x['pid']}) at {x['from']:.6f}"
        shown.append((label, x, t0, t1, x["queued_on"]))
    if not shown:
        return ""
    out = ["<h2>Why the longest waits were late</h2>"]
    bars = breakdown_bars([(x[0], x[1]) for x in shown], "each wait, broken into causes")
    out.append(figure_tag("waits", "waits broken into causes", bars))
    for i, (label, rec, t0, t1, cpus) in enumerate(shown[:2]):
        text = breakdown_text(rec["breakdown"], rec.get("llc_idle_us"), top=6)
        out.append(f"<h3>{esc(label)}: {esc(wait_span(rec))}</h3><p class='meta'>{esc(text)}</p>")
        if t1 - t0 < MIN_ZOOM_NS:
            mid = (t0 + t1) // 2
            t0, t1 = mid - MIN_ZOOM_NS // 2, mid + MIN_ZOOM_NS // 2
        fig = cpu_timeline(analysis.trace, t0, t1, title=f"{label}: the wait's window", cpus=cpus)
        out.append(figure_tag(f"wait{i}-timeline", f"{label}: per-CPU timeline", fig))
    t = analysis.tail_waits
    if t is not None and t["causes"]:
        out.append(f"<p class='meta'>tail: {esc(tail_text(t))}</p>")
    return "".join(out)


def _interactive_timeline(analysis) -> str:
    """The whole trace's per-CPU timeline, interactive (inline BokehJS, then the plot),
    the findings' evidence windows as its named ranges."""
    from .timeline_html import bokeh_resources, timeline_fragment

    return (
        bokeh_resources()
        + "<figure>"
        + timeline_fragment(analysis.trace, analysis.findings, name="timeline")
        + "<figcaption>per-CPU timeline (interactive: zoom and pan on time, hover a run or "
        "an arrow, jump to a finding's window)</figcaption></figure>"
    )


def _metrics(metrics: dict) -> str:
    rows = "".join(
        f"<tr><td class='l'>{esc(k)}</td><td>{esc(format_value(v))}</td></tr>"
        for k, v in metrics.items()
        if k not in ("busy_share", "bench")
    )
    return f"<table><thead><tr><th class='l'>metric</th><th>value</th></tr></thead>{rows}</table>"


def _task_states(analysis) -> str:
    """Time of the tasks (``--pid``) or task classes in each state: stacked bars and
    a table of the seconds (docs/task-states.md)."""
    from .plots import task_states

    ts = analysis.task_states
    focus = analysis.trace.model.pids is not None
    rows = [
        {**r, "label": f"{r['comm']} ({r['pid']})" if focus else f"{r['class']} ({r['tasks']})"}
        for r in (ts["tasks"] if focus else ts["classes"])
    ]
    what = "the --pid tasks" if focus else "the task classes (tasks)"
    fig = task_states(rows, f"Time in each state of {what}")
    cols = ("observed_s", "running_s", "preempted_s", "woken_wait_s", "sleeping_s",
            "blocked_s", "unknown_s")  # fmt: skip
    head = "".join(f"<th>{esc(c[:-2])} (s)</th>" for c in cols)
    body = "".join(
        f"<tr><td class='l'>{esc(r['label'])}</td>"
        + "".join(f"<td>{r[c]:.6f}</td>" for c in cols)
        + "</tr>"
        for r in rows
    )
    return (
        "<h2>Task states</h2><p class='meta'>runnable = preempted (switched out R or R+) + "
        "woken (from the wake-up to the switch-in); blocked: D; the states add up to the "
        "observed time (docs/task-states.md)</p>"
        + figure_tag("task-states", "time in each state", fig)
        + f"<table><thead><tr><th class='l'>{'task' if focus else 'class'}</th>{head}"
        + f"</tr></thead>{body}</table>"
    )


def render(analysis, progress: Callable[[float], None] | None = None) -> str:
    """The report of an :class:`schedwake.analysis.Analysis` as one HTML string;
    ``progress`` gets the fraction done after each figure."""
    from .plots import migration_matrix
    from .timeline import busy_share_bars, latency_by_waker

    trace = analysis.trace
    name = Path(str(trace.path)).name
    title = f"schedwake analyze: {name}"
    steps = len(analysis.findings) + 4
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done / steps)

    parts = [
        page_head(title),
        f"<p class='meta'>schedwake {esc(__version__)}, "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        _facts(analysis),
    ]
    if analysis.caveats:
        parts.append("<h2>Caveats</h2><ul>")
        parts += [f"<li class='meta'>{esc(c)}</li>" for c in analysis.caveats]
        parts.append("</ul>")
    parts.append(f"<h2>Findings ({len(analysis.findings)})</h2>")
    if not analysis.findings:
        parts.append("<p>none: no detector's thresholds were crossed</p>")
    for i, f in enumerate(analysis.findings):
        parts.append(_finding(i, f, trace))
        step()
    parts.append(_waits(analysis))
    parts.append("<h2>The whole trace</h2>")
    parts.append(_interactive_timeline(analysis))
    step()
    parts.append(figure_tag("matrix", "migration matrix", migration_matrix(trace)))
    step()
    parts.append(
        figure_tag("latency", "wake-to-run latency by waker class", latency_by_waker(trace))
    )
    step()
    busy = analysis.metrics.get("busy_share") or {}
    if busy:  # (no chart without samples)
        parts.append(figure_tag("busy", "per-CPU busy share", busy_share_bars(trace, busy)))
    step()
    parts.append(_task_states(analysis))
    parts += ["<h2>Metrics</h2>", _metrics(analysis.metrics), "</body></html>\n"]
    return "\n".join(parts)


def write(analysis, path, progress: Callable[[float], None] | None = None) -> Path:
    """Write :func:`render` of ``analysis`` to ``path`` (UTF-8, parent directories made);
    returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render(analysis, progress), encoding="utf-8")
    return p
