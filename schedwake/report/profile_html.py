"""The self-contained HTML report of a profile comparison
(:class:`schedwake.profile.compare.ProfileComparison`): one file, no network.

It holds the sides and their runs, the method and the caveats, one table per measure
(self and children share; the rates per unit of work when there are any) with the
starred cells marked, the callers' trees of the changed functions as nested lists, and
per non-baseline side its two differential flame graphs (inline SVG drawn by
:mod:`schedwake.report.flamegraph`: *after*, red where a function grew significantly;
*before*, blue where it shrank).  With one side: its plain flame graph.  Every string
from the recordings (symbols, DSOs, paths) is escaped; styles are inline and the only
script is the one of the other reports (it sets ``<body data-rendered="ok">`` after
``load``, for a headless browser check).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ..version import __version__
from . import flamegraph
from .html import PAGE_CSS, PAGE_SCRIPT, esc
from .profile_compare import (
    CALLER_FLOOR,
    CALLER_LEVELS,
    DEFAULT_CALLERS,
    TITLES,
    changed_functions,
    method_line,
    rows_by_effect,
)

__all__ = ["render", "write"]

_EXTRA_CSS = """
td.grew { background: #ffd8d3; } td.shrank { background: #d8e2ff; }
svg.flamegraph { max-width: 100%; height: auto; border: 1px solid #e1e4e8; display: block; }
ul.callers { font-size: 13px; margin: 0.2em 0; padding-left: 1.4em; }
ul.callers code, td code { font-size: 12.5px; }
"""


def _c(text) -> str:
    """A string from the recordings, cleaned and escaped."""
    return esc(flamegraph.clean(str(text)))


def _function(symbol: str, dso: str) -> str:
    name = symbol if symbol != "[unknown]" else f"[unknown] ({dso})"
    return f"<code>{_c(name)}</code>"


def _sides(cmp) -> str:
    head = "<th class='l'>side</th><th>runs</th><th class='l'>recordings</th>"
    if cmp.work is not None:
        head += "<th class='l'>work per run</th>"
    out = [f"<table><thead><tr>{head}</tr></thead><tbody>"]
    for side in cmp.sides:
        runs = [Path(p).name for p in cmp.runs[side]]
        row = (
            f"<td class='l'><b>{_c(side)}</b>{' (baseline)' if side == cmp.baseline else ''}"
            f"</td><td>{len(runs)}</td><td class='l'>{_c(', '.join(runs))}</td>"
        )
        if cmp.work is not None:
            row += f"<td class='l'>{esc(', '.join(f'{w:g}' for w in cmp.work[side]))}</td>"
        out.append(f"<tr>{row}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _value(v: float, share: bool) -> str:
    return f"{v * 100:.2f}" if share else f"{v:.4g}"


def table(cmp, measure: str, top: int | None = None) -> str:
    """One measure's table: per function its mean per side, and per non-baseline side
    the change in pp, starred (and shaded red or blue) when significant."""
    share = measure.endswith("_share")
    head = "".join(f"<th>{_c(s)}</th>" for s in cmp.sides)
    out = [
        f"<table class='measure' data-measure='{esc(measure)}'><thead><tr>"
        f"<th class='l'>function</th><th class='l'>DSO</th><th>lvl</th>{head}"
        "</tr></thead><tbody>"
    ]
    for r in rows_by_effect(cmp, measure, top):
        cells = []
        for j, side in enumerate(cmp.sides):
            value = _value(r[f"{measure}[{side}]"], share)
            if j == 0:
                cells.append(f"<td>{value}</td>")
                continue
            change = r[f"{measure}:change[{side}]"]
            if bool(r[f"{measure}:significant[{side}]"]):
                cls = "grew" if change > 0 else "shrank"
                cells.append(
                    f"<td class='{cls} star' title='q {r[f'{measure}:q[{side}]']:.2g}'>"
                    f"{value} *{change:+.2f}pp*</td>"
                )
            else:
                cells.append(f"<td>{value} ({change:+.2f}pp)</td>")
        out.append(
            f"<tr><td class='l'>{_function(r['symbol'], r['dso'])}</td>"
            f"<td class='l'>{_c(r['dso'])}</td><td>{_c(r['level'])}</td>{''.join(cells)}</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _tree(nodes: list[dict], levels: int) -> str:
    if levels <= 0:
        return ""
    items = []
    for node in nodes:
        if node["share"] < CALLER_FLOOR:
            continue
        items.append(
            f"<li>{node['share'] * 100:.2f}% {_function(node['symbol'], node['dso'])}"
            f"{_tree(node['callers'], levels - 1)}</li>"
        )
    return f"<ul class='callers'>{''.join(items)}</ul>" if items else ""


def callers(cmp, top: int = DEFAULT_CALLERS) -> str:
    """The callers' trees, per side, of the changed functions (nested lists)."""
    picked = changed_functions(cmp, top) if top else []
    if not picked:
        return ""
    out = ["<h2>Callers of the changed functions</h2>"]
    out.append("<p class='meta'>Share of each side's samples with the caller on the stack.</p>")
    for dso, symbol in picked:
        where = "" if symbol == "[unknown]" else f" <span class='meta'>({_c(dso)})</span>"
        out.append(f"<h3>{_function(symbol, dso)}{where}</h3>")
        out.append("<ul class='callers'>")
        for side in cmp.sides:
            tree = cmp.callers(symbol, dso, side)
            out.append(
                f"<li><b>{_c(side)}</b>: {tree['share'] * 100:.2f}% with it on the stack"
                f"{_tree(tree['callers'], CALLER_LEVELS)}</li>"
            )
        out.append("</ul>")
    return "".join(out)


def flamegraphs(cmp) -> str:
    """Per non-baseline side its two differential flame graphs; one side: its plain
    flame graph."""
    out = ["<h2>Flame graphs</h2>"]
    if len(cmp.sides) == 1:
        out.append(
            "<p class='meta'>The root is at the bottom, each function above its caller; "
            "a frame's width is its share of the samples (mean over the runs). Hover a "
            "frame for its share.</p>"
        )
        out.append(flamegraph.svg(cmp, cmp.sides[0], None, ident="fg0"))
        return "".join(out)
    out.append(
        "<p class='meta'>Differential flame graphs: the root is at the bottom, each "
        "function above its caller, a frame's width its path's share of the side's samples "
        "(mean over the runs). <i>After</i> is drawn with the side's widths, red where the "
        "function's self or children share grew significantly; <i>before</i> with the "
        f"baseline's ({_c(cmp.baseline)}) widths, blue where it shrank. Only starred "
        "changes are coloured, the deeper the larger; hover a frame for both sides' shares "
        "of its path and the function's changes.</p>"
    )
    for i, side in enumerate(cmp.sides[1:], start=1):
        out.append(f"<h3>{_c(side)} vs {_c(cmp.baseline)}</h3>")
        for direction in (flamegraph.AFTER, flamegraph.BEFORE):
            out.append(
                f"<figure>{flamegraph.svg(cmp, side, direction, ident=f'fg{i}{direction}')}"
                "</figure>"
            )
    return "".join(out)


def render(cmp, top: int | None = None, callers_top: int = DEFAULT_CALLERS) -> str:
    """The report of ``cmp`` as one HTML string: ``top`` functions per table (None: the
    text report's default, 0: all), the callers' trees of ``callers_top`` changed
    functions."""
    title = f"schedwake profile: {' vs '.join(flamegraph.clean(s) for s in cmp.sides)}"
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>{esc(title)}</title><style>{PAGE_CSS}{_EXTRA_CSS}</style>\n"
        f"<script>{PAGE_SCRIPT}</script></head><body>\n<h1>{esc(title)}</h1>",
        f"<p class='meta'>schedwake {esc(__version__)}, {when}. Event: "
        f"<code>{_c(cmp.event)}</code>. Baseline: <b>{_c(cmp.baseline)}</b>.</p>",
        "<h2>Sides</h2>",
        _sides(cmp),
        f"<p class='meta'>Method: {esc(method_line(cmp))}</p>",
    ]
    if cmp.caveats:
        parts.append(
            "<h3>Caveats</h3><ul>" + "".join(f"<li>{_c(c)}</li>" for c in cmp.caveats) + "</ul>"
        )
    for measure in cmp.measures:
        parts += [f"<h2>{esc(TITLES[measure])}</h2>", table(cmp, measure, top)]
    if len(cmp.sides) > 1:
        trees = callers(cmp, callers_top)
        parts.append(trees or "<p>No function changed significantly.</p>")
    parts += [flamegraphs(cmp), "</body></html>\n"]
    return "\n".join(parts)


def write(cmp, path, top: int | None = None, callers_top: int = DEFAULT_CALLERS) -> Path:
    """Write :func:`render` of ``cmp`` to ``path`` (UTF-8, its folder made); returns
    the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render(cmp, top, callers_top), encoding="utf-8", errors="replace")
    return p
