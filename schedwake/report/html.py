"""The self-contained HTML report of a comparison: one file, no network.

It holds the mmtests table (as the kernel threads print it), a summary of the mean rows
with the verdicts coloured, each side's traces and findings with their evidence, and
the plots as base64 PNG ``<img>`` elements: the runs of each side pooled (latency CDFs,
busy share), then every run of each side, picked by name from the side's menu (its
migration matrix, a task's CPU over time and its per-CPU timeline, interactive:
:mod:`schedwake.report.timeline_html`, BokehJS inline, in seconds since the run's
start). Styles are inline; the page's own script is a few lines that, after the page
loaded, count the images that decoded and put ``loaded/total`` into ``<body
data-images>`` (and ``data-rendered="ok"``), so a headless browser can check the
rendering; another shows the run a side's menu picks.
"""

from __future__ import annotations

import base64
import html as _html
import math
from datetime import UTC, datetime
from pathlib import Path

from ..compare.mmtests import NEW_TEXT, gain_interval, is_new
from ..version import __version__
from . import mmtests_table
from .analyze import format_value

__all__ = ["render"]

#: The style sheet of the report pages (the profile report adds its own after it).
PAGE_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1.5em auto;
       max-width: 1200px; padding: 0 1em; color: #1b1b1b; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin-bottom: 0.3em; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; padding: 0.8em; overflow-x: auto;
      font-size: 12.5px; line-height: 1.35; }
details pre { white-space: pre-wrap; overflow-wrap: anywhere; }
table { border-collapse: collapse; font-size: 13px; margin: 0.5em 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: right; }
th { background: #f0f3f6; }
td.l, th.l { text-align: left; }
td.better { background: #dafbe1; } td.worse { background: #ffebe9; }
.meta { color: #555; font-size: 13px; }
.sev-high { color: #b00020; font-weight: bold; } .sev-medium { color: #b35c00; font-weight: bold; }
.sev-low { color: #555; font-weight: bold; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 13px; color: #444; }
details { margin: 0.4em 0; } summary { cursor: pointer; }
"""

#: The script of the report pages: what they do once loaded.
PAGE_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = document.getElementsByTagName('img'), ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) { ok++; }
  }
  document.body.setAttribute('data-images', ok + '/' + imgs.length);
  document.body.setAttribute('data-rendered', 'ok');
});
"""


def esc(x) -> str:
    """``x`` as text escaped for HTML, quotes too (element text and attribute values)."""
    return _html.escape(str(x), quote=True)


def _summary_table(result) -> str:
    labels = result.labels
    head = "".join(f"<th>{esc(lab)}</th>" for lab in labels)
    rows = [
        f"<table><thead><tr><th class='l'>metric</th><th class='l'>unit</th>"
        f"<th class='l'>better</th><th class='l'>mean</th>{head}</tr></thead><tbody>"
    ]
    for r in result.comparison.rows:
        if not r.is_mean_row:
            continue
        cells = []
        for j in range(len(labels)):
            v = r.values[j]
            num = "-" if v is None or math.isnan(v) else f"{v:.2f}"
            sig = r.sig[j]
            if j == 0:
                cells.append(f"<td>{num}</td>")
                continue
            pct = r.pcts[j]
            mark = sig is not None and sig.significant
            cls = ""
            if mark:
                cls = " class='better'" if pct > 0 else " class='worse'" if pct < 0 else ""
            change = NEW_TEXT if is_new(r.values[0], v) else f"{pct:.2f}%"
            txt = f"{num} {'*' if mark else '('}{change}{'*' if mark else ')'}"
            gain = gain_interval(r.effect(j), r.metric.direction)
            if gain is not None and change != NEW_TEXT:
                txt += f" [95% CI {gain[0]:+.1f}..{gain[1]:+.1f}%]"
            cells.append(f"<td{cls}>{esc(txt)}</td>")
        rows.append(
            f"<tr><td class='l'>{esc(r.metric.name)}</td><td class='l'>"
            f"{esc(r.metric.unit)}</td><td class='l'>{esc(r.metric.direction)}</td>"
            f"<td class='l'>{esc(r.stat)}</td>{''.join(cells)}</tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _sides(result) -> str:
    out = [
        "<table><thead><tr><th class='l'>side</th><th class='l'>trace</th><th>duration (s)"
        "</th><th>CPUs</th><th class='l'>kernel</th><th class='l'>topology</th></tr>"
        "</thead><tbody>"
    ]
    names = result.trace_names()
    for s in result.sides:
        if not s.traces:
            for p in s.paths or ["(samples only)"]:
                out.append(
                    f"<tr><td class='l'>{esc(s.label)}</td><td class='l'>{esc(p)}</td>"
                    "<td>-</td><td>-</td><td class='l'>-</td><td class='l'>-</td></tr>"
                )
            continue
        for t in s.traces:
            out.append(
                f"<tr><td class='l'>{esc(s.label)}</td>"
                f"<td class='l'>{esc(names[str(t.meta.path)])}</td>"
                f"<td>{t.duration_ns / 1e9:.3f}</td><td>{esc(t.meta.cpus)}</td>"
                f"<td class='l'>{esc(t.meta.kernel or 'unknown')}</td>"
                f"<td class='l'>{esc(t.topology.describe())}</td></tr>"
            )
    out.append("</tbody></table>")
    return "".join(out)


def _findings(result) -> str:
    from .analyze import key_facts

    out = []
    all_findings = result.findings()
    names = result.trace_names()
    for s in result.sides:
        out.append(f"<h3>{esc(s.label)}</h3>")
        if not s.traces:
            out.append("<p class='meta'>no traces (comparison built from samples)</p>")
            continue
        for path, findings in all_findings.get(s.label, []):
            name = names.get(path) or Path(path).name
            if not findings:
                out.append(
                    f"<p><b>{esc(name)}</b>: no finding (no detector's thresholds were crossed)</p>"
                )
                continue
            out.append(f"<p><b>{esc(name)}</b>: {len(findings)} finding(s)</p><ul>")
            for f in findings:
                facts = ", ".join(key_facts(f))
                out.append(
                    f"<li><span class='sev-{esc(f.severity)}'>[{esc(f.severity.upper())}]"
                    f"</span> <b>{esc(f.detector)}</b>: {esc(f.title)}"
                    f"<div class='meta'>{esc(facts)}</div>"
                )
                if f.top:
                    out.append(
                        "<div class='meta'>top: "
                        + esc("; ".join(format_value(x) for x in f.top[:5]))
                        + "</div>"
                    )
                if f.evidence:
                    out.append(
                        "<details><summary>evidence (trace-cmd report -N layout)"
                        "</summary><pre>" + esc("\n".join(f.evidence)) + "</pre></details>"
                    )
                out.append("</li>")
            out.append("</ul>")
    return "".join(out)


def page_head(title: str) -> str:
    """The start of a report page up to its ``<h1>``: inline style and the one script."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>{esc(title)}</title><style>{PAGE_CSS}</style>\n"
        f"<script>{PAGE_SCRIPT}</script></head><body>\n<h1>{esc(title)}</h1>"
    )


def figure_tag(ident: str, name: str, fig) -> str:
    """A figure as an inline PNG ``<figure>`` with its caption (no file, no network)."""
    from .plots import png_bytes

    data = base64.b64encode(png_bytes(fig)).decode("ascii")
    w, h = (int(x * 100) for x in fig.get_size_inches())
    return (
        f"<figure id='{esc(ident)}'><img alt='{esc(name)}' width='{w}' height='{h}' "
        f"src='data:image/png;base64,{data}'><figcaption>{esc(name)}</figcaption></figure>"
    )


#: The exact runs the interactive timelines of one comparison page hold at most, shared
#: by its runs (each at least ``MIN_RUN_EXACT``): a page of many runs stays the size of
#: two whole timelines.
PAGE_EXACT = 240_000
MIN_RUN_EXACT = 10_000

#: Shows run ``k`` of side ``side`` (its figures and timeline), hides the side's others.
_RUN_SCRIPT = """
function schedwakeRun(side, k) {
  for (const el of document.querySelectorAll('.schedwake-run[data-side="' + side + '"]')) {
    el.style.display = el.dataset.run === String(k) ? '' : 'none';
  }
}
"""


class _Steps:
    """``progress`` told the fraction of ``total`` steps done, one :meth:`step` at a time."""

    def __init__(self, total: int, progress=None) -> None:
        self.total, self.done, self.progress = max(total, 1), 0, progress

    def step(self) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done / self.total)


def _figures(figs: dict, steps: _Steps, prefix: str = "fig") -> str:
    out = []
    for i, (name, fig) in enumerate(figs.items()):
        out.append(figure_tag(f"{prefix}{i}", name, fig))  # (rendering the PNG: the slow part)
        steps.step()
    return "".join(out)


def _run_menu(k: int, side: str, views: list) -> str:
    """The menu of side ``k``'s runs, by name (one run: its name)."""
    if len(views) == 1:
        return f"<p class='meta'>run: <b>{esc(views[0].name)}</b></p>"
    options = "".join(f"<option value='{j}'>{esc(v.name)}</option>" for j, v in enumerate(views))
    return (
        f"<p><label>{esc(side)}: run <select id='side{k}-runs' "
        f"onchange='schedwakeRun({k}, this.value)'>{options}</select></label> "
        f"<span class='meta'>({len(views)} runs: each one's migration matrix, task plot and "
        "timeline)</span></p>"
    )


def _runs(result, views: list, steps: _Steps) -> str:
    """Every run of each side (loaded traces): its migration matrix (one colour scale for
    all), its task's CPU over time (the same task name over windows of one length) and its
    interactive per-CPU timeline with its findings as named ranges, in seconds since its
    start; a menu per side picks the run shown."""
    from .plots import largest_cell, run_figures
    from .timeline_html import bokeh_resources, timeline_fragment

    if not views:
        return ""
    found = result.findings()
    top = max(largest_cell(v.trace) for v in views)
    budget = max(PAGE_EXACT // len(views), MIN_RUN_EXACT)
    extent = max(v.trace.model.duration_ns for v in views) / 1e9  # (one for all: linked)
    out = [
        "<h2>Each run: migration matrix, a task's CPU over time, per-CPU timeline</h2>",
        "<p class='meta'>Every run of each side, named by the end of its path that tells it "
        "apart; the side's menu picks the one shown. Times are seconds since each run's "
        "start in the task plots and the timelines (a timeline's hover gives the trace time "
        "too); the task plots show the same task name over windows of one length, the "
        "matrices share one colour scale.</p>",
        "<p><label><input type='checkbox' id='schedwake-link' checked> zoom and pan the "
        "runs' timelines together (the same seconds since each run's start)</label></p>",
        bokeh_resources(),
        f"<script>{_RUN_SCRIPT}</script>",
    ]
    sides = [s.label for s in result.sides if any(v.side == s.label for v in views)]
    for k, side in enumerate(sides):
        mine = [v for v in views if v.side == side]
        out += [f"<h3>{esc(side)}</h3>", _run_menu(k, side, mine)]
        for j, v in enumerate(mine):
            hidden = " style='display:none'" if j else ""
            out.append(f"<div class='schedwake-run' data-side='{k}' data-run='{j}'{hidden}>")
            figs = {f"{side}: {what} ({v.name})": f for what, f in run_figures(v, top).items()}
            out.append(_figures(figs, steps, f"run{k}-{j}-fig"))
            findings: list = next(
                (f for p, f in found.get(side, []) if p == str(v.trace.meta.path)), []
            )
            frag = timeline_fragment(
                v.trace, findings, name=f"timeline{k}-{j}", since_start=True, run=v.name,
                budget=budget, extent_s=extent,
            )  # fmt: skip
            out.append(
                f"<figure>{frag}<figcaption>{esc(side)}: per-CPU timeline of {esc(v.name)} "
                "(interactive)</figcaption></figure></div>"
            )
    return "".join(out)


def render(result, progress=None) -> str:
    """The report of a :class:`schedwake.compare.CompareResult` as one HTML string;
    ``progress`` gets the fraction of the figures drawn."""
    from .compare import notes as compare_notes
    from .compare import rule_line_of
    from .plots import run_views, side_figures

    title = result.title or "schedwake compare: " + " vs ".join(result.labels)
    pooled, views = side_figures(result), run_views(result)
    steps = _Steps(len(pooled) + 2 * len(views), progress)
    notes = compare_notes(result)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        page_head(title),
        f"<p class='meta'>schedwake {esc(__version__)}, {when}. Baseline: "
        f"<b>{esc(result.labels[0])}</b>. A positive percentage is always better; "
        "<code>*...*</code> marks a significant difference of the mean.</p>",
        "<h2>Sides</h2>",
        _sides(result),
    ]
    if notes:
        parts.append(
            "<ul>" + "".join(f"<li class='meta'>note: {esc(n)}</li>" for n in notes) + "</ul>"
        )
    parts += [
        "<h2>Mean rows at a glance</h2>",
        "<p class='meta'>Green: significantly better than the baseline; red: significantly "
        f"worse. {esc(rule_line_of(result))}</p>",
        _summary_table(result),
        "<h2>Plots</h2>",
        _figures(pooled, steps),
        _runs(result, views, steps),
        "<h2>Comparison (mmtests layout)</h2>",
        f"<pre>{esc(mmtests_table.text(result.comparison))}</pre>",
        "<h2>Findings per side</h2>",
        _findings(result),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def write(result, path, progress=None) -> Path:
    """Write :func:`render` of ``result`` to ``path`` (UTF-8); returns the path."""
    p = Path(path)
    p.write_text(render(result, progress), encoding="utf-8")
    return p
