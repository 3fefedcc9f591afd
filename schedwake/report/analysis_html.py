"""The self-contained HTML report of one trace (``schedwake analyze TRACE --html FILE``).

One file, no network: the trace's facts and caveats, each finding with its evidence and
a per-CPU timeline zoomed on it, the per-CPU timeline of the whole trace, the from-CPU x
to-CPU migration matrix, wake-to-run latency CDFs by waker class, the per-CPU busy share
and the metrics. Plots are inline PNG (static matplotlib); the page's one script counts
the images that decoded, as the comparison report's does, for a headless browser check.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ..summary import summary
from ..version import __version__
from .analyze import _KEY_METRICS, _longest_wait, _side_by_side, format_value
from .html import _e, figure_tag, page_head

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
        ("longest wait", _longest_wait(analysis)),
    ]
    body = "".join(
        f"<tr><th class='l'>{_e(k)}</th><td class='l'>{_e(v)}</td></tr>" for k, v in rows
    )
    return f"<table>{body}</table>"


def _finding(i: int, f, trace) -> str:
    from .timeline import cpu_timeline

    keys = _KEY_METRICS.get(f.detector, ())
    facts = ", ".join(f"{k}: {format_value(f.metrics[k])}" for k in keys if k in f.metrics)
    out = [
        f"<h3 id='finding{i}'><span class='sev-{_e(f.severity)}'>[{_e(f.severity.upper())}]"
        f"</span> {_e(f.detector)}</h3><p>{_e(f.title)}</p><p class='meta'>{_e(facts)}</p>"
    ]
    gap = f.metrics.get("longest_gap") if f.detector == "idle_while_runnable" else None
    if gap:
        out.append(f"<p class='meta'>{_e(_side_by_side(gap))}</p>")
    if f.top:
        out.append(
            "<p class='meta'>top: " + _e("; ".join(format_value(x) for x in f.top[:5])) + "</p>"
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
    if f.evidence:
        out.append(
            "<details open><summary>evidence (trace-cmd report -N layout)</summary><pre>"
            + _e("\n".join(f.evidence))
            + "</pre></details>"
        )
    return "".join(out)


def _metrics(metrics: dict) -> str:
    rows = "".join(
        f"<tr><td class='l'>{_e(k)}</td><td>{_e(format_value(v))}</td></tr>"
        for k, v in metrics.items()
        if k not in ("busy_share", "bench")
    )
    return f"<table><thead><tr><th class='l'>metric</th><th>value</th></tr></thead>{rows}</table>"


def render(analysis, progress: Callable[[float], None] | None = None) -> str:
    """The report of an :class:`schedwake.analysis.Analysis` as one HTML string;
    ``progress`` gets the fraction done after each figure."""
    from .plots import migration_matrix
    from .timeline import busy_share_bars, cpu_timeline, latency_by_waker

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
        f"<p class='meta'>schedwake {_e(__version__)}, "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        _facts(analysis),
    ]
    if analysis.caveats:
        parts.append("<h2>Caveats</h2><ul>")
        parts += [f"<li class='meta'>{_e(c)}</li>" for c in analysis.caveats]
        parts.append("</ul>")
    parts.append(f"<h2>Findings ({len(analysis.findings)})</h2>")
    if not analysis.findings:
        parts.append("<p>none: no detector's thresholds were crossed</p>")
    for i, f in enumerate(analysis.findings):
        parts.append(_finding(i, f, trace))
        step()
    parts.append("<h2>The whole trace</h2>")
    parts.append(figure_tag("timeline", "per-CPU timeline", cpu_timeline(trace)))
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
    parts += ["<h2>Metrics</h2>", _metrics(analysis.metrics), "</body></html>\n"]
    return "\n".join(parts)


def write(analysis, path, progress: Callable[[float], None] | None = None) -> Path:
    """Write :func:`render` of ``analysis`` to ``path`` (UTF-8, parent directories made);
    returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render(analysis, progress), encoding="utf-8")
    return p
