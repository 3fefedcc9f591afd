"""Renderers of a series of builds (:class:`schedwake.series.SeriesResult`): what
``schedwake series`` prints as text, Markdown, JSON and HTML (docs/series.md), and the
verdict of ``schedwake gate --series`` (:class:`schedwake.series.SeriesGateResult`).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..jsonout import dumps
from ..series import MetricSeries, SeriesChangePoint, SeriesGateResult, SeriesResult
from ..version import __version__
from .markdown import md

__all__ = [
    "headline",
    "summary_line",
    "text",
    "markdown",
    "to_json",
    "render_html",
    "write_html",
    "metric_figure",
    "gate_text",
    "gate_json",
]

_HEAD = ("build", "before", "after", "effect", "95% CI", "p", "")


def _num(v: float) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.4g}"


def _pct(v: float) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:+.1%}"


def _ci(c: SeriesChangePoint) -> str:
    lo, hi = c.ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "-"
    return f"{lo:+.1%} .. {hi:+.1%}"


def _cells(c: SeriesChangePoint) -> list[str]:
    return [
        c.build,
        _num(c.before),
        _num(c.after),
        _pct(c.effect),
        _ci(c),
        f"{c.p:.3g}",
        "regression" if c.regression else "improvement",
    ]


def summary_line(result: SeriesResult) -> str:
    """The series in one line: its change points, metrics and builds."""
    n = len(result.change_points())
    m = len(result.changed())
    return (
        f"{n} change point{'s' if n != 1 else ''} in {m} metric{'s' if m != 1 else ''} "
        f"over {len(result.builds)} builds ({len(result.metrics)} metrics)"
    )


def _title(s: MetricSeries) -> str:
    unit = f" [{s.unit}]" if s.unit else ""
    better = {"lower": "lower is better", "higher": "higher is better"}.get(s.direction, "")
    return f"{s.metric}{unit}" + (f" ({better})" if better else "")


def _how(result: SeriesResult) -> str:
    return (
        f"E-divisive means over {len(result.builds)} builds; a split's p by "
        f"{result.permutations} permutations of the runs, alpha {result.alpha:g}, "
        f"at least {result.min_segment} build(s) a segment; a metric is changed when its "
        f"first split passes Benjamini-Hochberg at {result.alpha:g} over the metrics. "
        "effect = after / before - 1, its 95% CI a bootstrap of the runs."
    )


def _builds_line(result: SeriesResult) -> str:
    return "builds: " + ", ".join(f"{b.name} ({len(b.runs)})" for b in result.builds)


def text(result: SeriesResult) -> str:
    """``schedwake series`` (``--format text``): per changed metric a table of its
    change points, then the summary line."""
    out = [_builds_line(result) + " runs", ""]
    for s in result.changed():
        rows = [list(_HEAD)] + [_cells(c) for c in s.change_points]
        widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD))]
        out.append(_title(s))
        for r in rows:
            cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:-1], widths[1:-1])]
            out.append("  " + "  ".join(cells + [r[-1]]).rstrip())
        out.append("")
    out.append(summary_line(result))
    out.append(_how(result))
    out += [f"note: {n}" for n in result.notes]
    return "\n".join(out) + "\n"


def markdown(result: SeriesResult) -> str:
    """``schedwake series --format markdown``: one table of every change point."""
    out = [f"**{md(summary_line(result))}**", "", md(_builds_line(result) + " runs"), ""]
    if result.change_points():
        out.append("| metric | " + " | ".join(h or "verdict" for h in _HEAD) + " |")
        out.append("|---" * (len(_HEAD) + 1) + "|")
        for c in result.change_points():
            cells = [md(c.metric)] + [md(x) for x in _cells(c)]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    out.append(_how(result))
    out += ["", *[f"- note: {md(n)}" for n in result.notes]] if result.notes else []
    return "\n".join(out) + "\n"


def to_json(result: SeriesResult, indent: int = 2) -> str:
    """``schedwake series --format json``: :meth:`SeriesResult.to_dict` (NaN is null)."""
    return dumps(result.to_dict(), indent=indent)


# -- HTML ----------------------------------------------------------------------------------------


def metric_figure(result: SeriesResult, name: str):
    """One metric's series: each run a dot at its build, each build's mean a line, a
    vertical line before each change point's build, labelled with its effect."""
    from .plots import ReportFigure

    s = result.metrics[name]
    fig = ReportFigure(figsize=(9, 3.6))
    ax = fig.add_subplot()
    v = s.values.dropna(subset=["value"])
    ax.plot(v["index"], v["value"], "o", color="#1f77b4", alpha=0.6, label="run")
    means = s.build_means()
    ax.plot(range(len(means)), means, "-", color="#555", lw=1, label="build mean")
    for c in s.change_points:
        colour = "#d62728" if c.regression else "#2ca02c"
        ax.axvline(c.index - 0.5, color=colour, lw=1.5, ls="--")
        ax.annotate(
            f"{c.build}: {_pct(c.effect)}",
            (c.index - 0.5, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -12),
            textcoords="offset points",
            color=colour,
            fontsize=9,
        )
    ax.set_xticks(np.arange(len(result.builds)))
    ax.set_xticklabels(result.build_names, rotation=30 if len(result.builds) > 8 else 0)
    ax.set_xlabel("build")
    ax.set_ylabel(f"{s.metric} [{s.unit}]" if s.unit else s.metric)
    ax.set_title(_title(s), fontsize=11)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def render_html(result: SeriesResult, progress=None) -> str:
    """The self-contained HTML report: the summary, each changed metric's series with
    its change points (inline PNG), the table of every change point."""
    from .html import esc, figure_tag, page_head

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        page_head(
            "schedwake series: " + " .. ".join(result.build_names[:1] + result.build_names[-1:])
        ),
        f"<p class='meta'>schedwake {esc(__version__)}, {when}. "
        f"{esc(_builds_line(result))} runs.</p>",
        f"<p><b>{esc(summary_line(result))}</b></p>",
        f"<p class='meta'>{esc(_how(result))}</p>",
    ]
    if result.notes:
        parts.append(
            "<ul>"
            + "".join(f"<li class='meta'>note: {esc(n)}</li>" for n in result.notes)
            + "</ul>"
        )
    cps = result.change_points()
    if cps:
        head = "".join(f"<th>{esc(h or 'verdict')}</th>" for h in ("metric",) + _HEAD)
        rows = []
        for c in cps:
            cls = "worse" if c.regression else "better"
            cells = [f"<td class='l'>{esc(c.metric)}</td>"] + [
                f"<td class='{cls}'>{esc(x)}</td>" if i == 3 else f"<td>{esc(x)}</td>"
                for i, x in enumerate(_cells(c))
            ]
            rows.append("<tr>" + "".join(cells) + "</tr>")
        parts += ["<h2>Change points</h2>", f"<table><tr>{head}</tr>{''.join(rows)}</table>"]
    changed = result.changed()
    if changed:
        parts.append("<h2>Changed metrics</h2>")
    for i, s in enumerate(changed):
        parts.append(figure_tag(f"series{i}", _title(s), metric_figure(result, s.metric)))
        if progress is not None:
            progress((i + 1) / len(changed))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_html(result: SeriesResult, path, progress=None) -> Path:
    """Write :func:`render_html` of ``result`` to ``path`` (UTF-8); returns the path."""
    p = Path(path)
    p.write_text(render_html(result, progress), encoding="utf-8")
    return p


# -- gate --series -------------------------------------------------------------------------------


def headline(result: SeriesGateResult) -> str:
    """The verdict on the newest build in one line."""
    newest = result.series.builds[-1].name if result.series and result.series.builds else "-"
    errors = result.problems + [v.message for v in result.verdicts if v.status == "error"]
    if errors:
        return f"ERROR: cannot judge: {errors[0]}"
    broken = [v.metric for v in result.verdicts if v.status == "broken"]
    if broken:
        return f"FAIL: the newest build {newest} starts a regression of " + ", ".join(broken)
    return f"PASS: the newest build {newest} starts no regression beyond the rules"


def gate_text(result: SeriesGateResult) -> str:
    """``schedwake gate --series``: each rule's verdict on the newest build, the headline."""
    out = []
    if result.series is not None:
        out += [_builds_line(result.series) + " runs", f"rules: {result.rules_source}", ""]
    for v in result.verdicts:
        out.append(f"  {v.status.upper():8} {v.metric} (allowed {v.allowed}): {v.message}")
    out += [f"  ERROR    {p}" for p in result.problems]
    out += ["", f"{result.verdict}: {headline(result).split(': ', 1)[-1]}"]
    return "\n".join(out) + "\n"


def gate_json(result: SeriesGateResult, indent: int = 2) -> str:
    """The verdict of ``gate --series`` as JSON: exit code, each rule, the series."""
    doc = {
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "headline": headline(result),
        "rules_source": result.rules_source,
        "problems": result.problems,
        "rules": [
            {
                "metric": v.metric,
                "allowed": v.allowed,
                "status": v.status,
                "message": v.message,
                "change_point": v.change,
            }
            for v in result.verdicts
        ],
        "series": None if result.series is None else result.series.to_dict(),
    }
    return dumps(doc, indent=indent)
