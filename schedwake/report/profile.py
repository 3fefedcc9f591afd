"""Rendering of ``schedwake profile``: a :class:`schedwake.profile.Profile` as a
``perf report``-like table (self %, children %, samples, DSO, symbol) or JSON."""

from __future__ import annotations

import textwrap

from ..jsonout import dumps

#: The width the text report keeps to.
WIDTH = 100
#: Rows the text shows when no ``top`` is given.
DEFAULT_TOP = 40


def to_json(profile, top: int | None = None) -> str:
    """``schedwake profile --format json``: totals, filters, caveats, unresolved
    addresses and one entry per function (the ``top`` first by self share; None or 0:
    all)."""
    return dumps(profile.to_dict(top or None), indent=2)


def _filters(f: dict) -> str:
    parts = []
    if f.get("comm") is not None:
        parts.append("comm " + ",".join(f["comm"]))
    if f.get("pid") is not None:
        parts.append("pid " + ",".join(str(p) for p in f["pid"]))
    if f.get("cpu") is not None:
        from ..topology import format_cpulist

        parts.append("cpu " + format_cpulist(f["cpu"]))
    if f.get("time") is not None:
        lo, hi = f["time"]
        lo_s = "start" if lo is None else f"{lo / 1e9:.6f}"
        hi_s = "end" if hi is None else f"{hi / 1e9:.6f}"
        parts.append(f"time {lo_s} to {hi_s} s")
    return "; ".join(parts) or "none"


def clip_text(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ``...`` at the end where it was cut."""
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def wrap_field(label: str, text: str) -> list[str]:
    """``label`` then ``text`` wrapped to the width, continuation lines under the text
    (the header fields of the profile reports)."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=f"{label:<10}",
        subsequent_indent=" " * 10,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [label]


def text(profile, top: int | None = None) -> str:
    """The human report: a header (file, event, samples, total period, kernel symbols,
    filters), the caveats, then one line per function by self share (``top`` of them;
    None: :data:`DEFAULT_TOP`; 0: all), as ``perf report`` prints self and children."""
    n = DEFAULT_TOP if top is None else top
    rows = profile.rows if not n else profile.rows.head(n)
    out = [f"schedwake profile: {profile.path.rsplit('/', 1)[-1]}"]
    out += wrap_field("file:", profile.path)
    out += wrap_field(
        "event:",
        f"{profile.event}, {profile.samples} samples, total period {profile.total_period}"
        + ("" if profile.callchains else " (no callchains: children = self)"),
    )
    out += wrap_field("kernel:", profile.kernel_symbols)
    out += wrap_field("filters:", _filters(profile.filters))
    if profile.caveats:
        out.append("caveats:")
        for c in profile.caveats:
            out += textwrap.wrap(
                c,
                WIDTH,
                initial_indent="  - ",
                subsequent_indent="    ",
                break_long_words=False,
                break_on_hyphens=False,
            )
    out.append("")
    dso_w = min(max([len("DSO")] + [len(d) for d in rows["dso"]]), 24)
    head = f"{'Self':>7}  {'Children':>8}  {'Samples':>7}  {'DSO':<{dso_w}}  Symbol"
    out.append(head)
    sym_w = WIDTH - (7 + 2 + 8 + 2 + 7 + 2 + dso_w + 2) - 4
    for r in rows.itertuples(index=False):
        out.append(
            f"{r.self_share * 100:6.2f}%  {r.children_share * 100:7.2f}%  {r.samples:>7}  "
            f"{clip_text(r.dso, dso_w):<{dso_w}}  [{r.level}] {clip_text(r.symbol, sym_w)}"
        )
    more = len(profile.rows) - len(rows)
    if more > 0:
        out.append(f"... {more} more functions (--top 0 shows all)")
    return "\n".join(line.rstrip() for line in out) + "\n"


__all__ = ["text", "to_json", "WIDTH", "DEFAULT_TOP"]
