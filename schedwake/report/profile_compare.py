"""Rendering of a profile comparison (:class:`schedwake.profile.compare.ProfileComparison`):
the mmtests-style table per measure (Amean per side, change, star), the callers' trees
of the changed functions, JSON, and folded stacks for flamegraph.pl and speedscope."""

from __future__ import annotations

import math
import textwrap

from ..jsonout import dumps
from .markdown import md
from .profile import WIDTH, clip_text, wrap_field

#: The measures' titles.
TITLES = {
    "self_share": "Self share of the samples (%)",
    "children_share": "Children share of the samples (%)",
    "self_rate": "Self period per unit of work",
    "children_rate": "Children period per unit of work",
}
#: Functions listed per measure when no ``top`` is given.
DEFAULT_TOP = 20
#: Callers' trees shown for this many changed functions, this deep.
DEFAULT_CALLERS = 3
CALLER_LEVELS = 4
#: Callers below this share of their side are not drawn.
CALLER_FLOOR = 0.001
#: A value cell: "%10.2f (%+7.2fpp)" plus the star's room.
CELL = 22


def method_line(cmp) -> str:
    """What was tested and what a star means, one sentence."""
    tested = ", ".join(f"{cmp.tested[m]} for {m.replace('_', ' ')}" for m in cmp.measures)
    return (
        f"Welch t-test per function over the runs, Benjamini-Hochberg FDR {cmp.alpha:g}; "
        f"* = q < {cmp.alpha:g} and |change| >= {cmp.min_effect:g} pp; functions tested: "
        f"{tested or 'none (a side needs 2 or more runs)'}"
    )


def _label(r: dict) -> str:
    name = r["symbol"] if r["symbol"] != "[unknown]" else f"[unknown] ({r['dso']})"
    return f"{name} [{r['level']}]"


def _value(v: float, share: bool) -> str:
    return f"{v * 100:10.2f}" if share else f"{v:10.4g}"


def _cell(value: float, change: float | None, star: bool, share: bool) -> str:
    if change is None:
        return f"{_value(value, share)} ({'':>9})"
    c = f"{change:+7.2f}pp"
    return f"{_value(value, share)} *{c}*" if star else f"{_value(value, share)} ({c})"


def rows_by_effect(cmp, measure: str, top: int | None) -> list[dict]:
    """The ``top`` functions (None: :data:`DEFAULT_TOP`, 0: all) by the largest change
    of ``measure`` on any side, or by the measure itself when there is one side."""
    rows = cmp.rows
    if len(cmp.sides) > 1:
        eff = rows[[f"{measure}:change[{s}]" for s in cmp.sides[1:]]].abs().max(axis=1)
        rows = rows.loc[eff.sort_values(ascending=False, kind="stable").index]
    else:
        rows = rows.sort_values(f"{measure}[{cmp.sides[0]}]", ascending=False, kind="stable")
    n = DEFAULT_TOP if top is None else top
    return (rows.head(n) if n else rows).to_dict("records")


def table(cmp, measure: str, top: int | None = None) -> list[str]:
    """The mmtests-style lines of one measure (see :func:`rows_by_effect`)."""
    share = measure.endswith("_share")
    label_w = max(WIDTH - 6 - CELL * len(cmp.sides), 24)
    out = [TITLES[measure]]
    out.append(
        " " * (6 + label_w) + "".join(f"{clip_text(s, CELL - 2):>{CELL}}" for s in cmp.sides)
    )
    for r in rows_by_effect(cmp, measure, top):
        line = f"{'Amean':<6}{clip_text(_label(r), label_w - 1):<{label_w}}"
        for j, side in enumerate(cmp.sides):
            value = r[f"{measure}[{side}]"]
            if j == 0:
                line += _cell(value, 0.0 if len(cmp.sides) > 1 else None, False, share)
            else:
                change = r[f"{measure}:change[{side}]"]
                star = bool(r[f"{measure}:significant[{side}]"])
                line += _cell(value, change, star, share)
        out.append(line.rstrip())
    return out


def changed_functions(cmp, top: int = DEFAULT_CALLERS) -> list[tuple[str, str]]:
    """(dso, symbol) of the ``top`` functions with the largest significant change,
    self share first, then children share, over the non-baseline sides."""
    picked: list[tuple[str, str]] = []
    for measure in ("self_share", "children_share"):
        for side in cmp.sides[1:]:
            for r in cmp.changed(measure, side).itertuples(index=False):
                if (r.dso, r.symbol) not in picked and len(picked) < top:
                    picked.append((r.dso, r.symbol))
    return picked


def callers_lines(cmp, top: int = DEFAULT_CALLERS) -> list[str]:
    """The callers' tree, per side, of :func:`changed_functions`."""
    picked = changed_functions(cmp, top) if top else []
    if not picked:
        return []
    out = ["Callers of the changed functions (share of each side's samples)"]
    for dso, symbol in picked:
        out.append(f"  {symbol} ({dso})")
        for side in cmp.sides:
            tree = cmp.callers(symbol, dso, side)
            out.append(f"    {side}: {tree['share'] * 100:.2f}% with it on the stack")
            out += _tree_lines(tree["callers"], 6, CALLER_LEVELS)
    return out


def _tree_lines(nodes: list[dict], indent: int, levels: int) -> list[str]:
    out: list[str] = []
    if levels <= 0:
        return out
    for node in nodes:
        if node["share"] < CALLER_FLOOR:
            continue
        text = f"{' ' * indent}{node['share'] * 100:6.2f}%  {node['symbol']}"
        out.append(clip_text(text, WIDTH))
        out += _tree_lines(node["callers"], indent + 2, levels - 1)
    return out


def text(cmp, top: int | None = None, callers: int = DEFAULT_CALLERS) -> str:
    """The human report: the sides and their runs, the method, the caveats, one
    mmtests-style table per measure, then the callers' trees of the changed functions."""
    out = [f"schedwake profile: {' vs '.join(cmp.sides)} ({cmp.event})"]
    for side in cmp.sides:
        runs = [p.rsplit("/", 1)[-1] for p in cmp.runs[side]]
        work = ""
        if cmp.work is not None:
            work = "; work per run " + ", ".join(f"{w:g}" for w in cmp.work[side])
        out += wrap_field("side:", f"{side}: {len(runs)} run(s): {', '.join(runs)}{work}")
    out += wrap_field("method:", method_line(cmp))
    if cmp.caveats:
        out.append("caveats:")
        for c in cmp.caveats:
            out += textwrap.wrap(
                c, WIDTH, initial_indent="  - ", subsequent_indent="    ", break_long_words=False
            )
    for measure in cmp.measures:
        out.append("")
        out += table(cmp, measure, top)
    lines = callers_lines(cmp, callers)
    if lines:
        out += [""] + lines
    elif len(cmp.sides) > 1:
        out += ["", "No function changed significantly."]
    return "\n".join(out) + "\n"


def markdown(cmp, top: int | None = None) -> str:
    """The tables as Markdown pipe tables; starred cells carry escaped stars."""
    out = [f"**schedwake profile: {' vs '.join(map(md, cmp.sides))}** ({md(cmp.event)})", ""]
    out += [method_line(cmp).replace("*", "\\*"), ""]
    for measure in cmp.measures:
        share = measure.endswith("_share")
        out += [f"**{TITLES[measure]}**", ""]
        out.append("| Function | " + " | ".join(md(s) for s in cmp.sides) + " |")
        out.append("|:---|" + "---:|" * len(cmp.sides))
        for r in rows_by_effect(cmp, measure, top):
            cells = [md(_label(r))]
            for j, side in enumerate(cmp.sides):
                v = _value(r[f"{measure}[{side}]"], share).strip()
                if j == 0:
                    cells.append(v)
                    continue
                c = f"{r[f'{measure}:change[{side}]']:+.2f}pp"
                star = bool(r[f"{measure}:significant[{side}]"])
                cells.append(f"{v} \\*{c}\\*" if star else f"{v} ({c})")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _num(v):
    v = float(v)
    return None if math.isnan(v) else (v if math.isfinite(v) else None)


def to_dict(cmp, top: int | None = None, callers: int = DEFAULT_CALLERS) -> dict:
    """JSON-ready: the sides and runs, the method, and one entry per function (all of
    them unless ``top``), with per-side means and, per measure and side, change (pp),
    p, q and significant; the callers' trees of the changed functions."""
    functions = []
    rows = cmp.rows if not top else cmp.rows.head(top)
    for r in rows.to_dict("records"):
        entry: dict = {"symbol": r["symbol"], "dso": r["dso"], "level": r["level"]}
        for measure in cmp.measures:
            entry[measure] = {s: _num(r[f"{measure}[{s}]"]) for s in cmp.sides}
        for key in ("change", "p", "q", "significant"):
            entry[key] = {
                m: {
                    s: (
                        bool(r[f"{m}:{key}[{s}]"])
                        if key == "significant"
                        else _num(r[f"{m}:{key}[{s}]"])
                    )
                    for s in cmp.sides[1:]
                }
                for m in cmp.measures
            }
        functions.append(entry)
    trees = {
        f"{symbol} ({dso})": cmp.callers(symbol, dso)
        for dso, symbol in changed_functions(cmp, callers)
    }
    return {
        "sides": cmp.sides,
        "runs": cmp.runs,
        "event": cmp.event,
        "work": cmp.work,
        "method": {
            "test": "welch",
            "adjustment": "benjamini-hochberg",
            "alpha": cmp.alpha,
            "min_effect_pp": cmp.min_effect,
            "tested": cmp.tested,
        },
        "functions": functions,
        "functions_total": len(cmp.rows),
        "callers": trees,
        "caveats": list(cmp.caveats),
    }


def to_json(cmp, top: int | None = None, callers: int = DEFAULT_CALLERS) -> str:
    return dumps(to_dict(cmp, top, callers), indent=2)


def folded(cmp) -> str:
    """Folded stacks (root first, ``;``-separated, then the count) for flamegraph.pl or
    speedscope.  One side: ``stack count``; two: ``stack base new`` (flamegraph.pl's
    differential input, difffolded.pl's output).  Counts are each stack's mean share
    of its side in parts per million, so runs of any length weigh alike."""
    sides = cmp.sides[:2]
    merged: dict[str, list[int]] = {}
    for j, side in enumerate(sides):
        st = cmp.stacks[side]
        for frames, share in zip(st["frames"], st["share"]):
            key = ";".join(_frame_name(f) for f in reversed(frames)) or "[no frames]"
            merged.setdefault(key, [0] * len(sides))[j] += int(round(share * 1e6))
    lines = [f"{k} {' '.join(str(c) for c in v)}" for k, v in sorted(merged.items()) if any(v)]
    return "\n".join(lines) + "\n"


def _frame_name(frame: tuple[str, str]) -> str:
    dso, symbol = frame
    name = symbol if symbol != "[unknown]" else f"[unknown] ({dso})"
    return name.replace(";", ":").replace(" ", "_") if name else "?"
