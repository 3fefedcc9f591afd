"""Renderers of an mmtests comparison (:class:`schedwake.mmtests.Comparison`): the
fixed-width table exactly in ``compare-mmtests.pl``'s layout and a Markdown pipe table
with the same numbers.

Layout (docs/compare.md, "How to read the table")::

    title
                               6.18.0                 6.18.0
                              vanilla           kworkerstack
    Min       elapsed      540.00 (   0.00%)      530.00 (   1.85%)
    Amean     elapsed      543.00 (   0.00%)      530.00 *   2.39%*
    ...
    * significant: <rule>; samples: <kind>, n=<n1>/<n2>

* Rows are grouped by statistic, then by metric: Min, Amean|Hmean, Stddev, CoeffVar, Max,
  BAmean-50/95/99 (BHmean-* for higher-is-better metrics).  The mean row is Amean for
  lower-is-better and Hmean for higher-is-better metrics.
* Values ``%12.<precision>f``, then `` (%7.2f%%)``; the baseline (first column) is always
  ``(   0.00%)``.  Undefined values (NaN, e.g. the Stddev of a single sample) print
  ``0.00 (   0.00%)`` as in mmtests.
* Only the mean row gets ``*...*`` instead of ``(...)``, when the significance rule says so.
* Header: each side label split at its first ``-`` (:func:`schedwake.mmtests.split_label`:
  ``-rcN`` stays in the first line, a label without ``-`` goes whole on the second),
  right-aligned to the cell width 12+7+4 = 23.  As in mmtests, a part wider than 23
  characters runs into its neighbour.
"""

from __future__ import annotations

import math

from ..mmtests import CELL_WIDTH, COMPARE_LENGTH, FIELD_LENGTH, Comparison, split_label
from .markdown import md

__all__ = ["text", "markdown"]


def _fmt_float(v: float, spec: str) -> str:
    return spec % (0.0 if (v is None or math.isnan(v)) else v)


def _cell(value: float, pct: float, significant: bool, precision: int) -> str:
    num = _fmt_float(value, f"%{FIELD_LENGTH}.{precision}f")
    p = _fmt_float(pct, f"%{COMPARE_LENGTH}.2f")
    return f"{num} *{p}%*" if significant else f"{num} ({p}%)"


def text(comparison: Comparison, precision: int = 2, rule_line: str | None = None) -> str:
    """The mmtests fixed-width table (title, two header lines, rows, rule line),
    newline-terminated.  ``precision`` is mmtests' ``_Precision`` for the values;
    ``rule_line``: the last line in place of the comparison's
    :meth:`~schedwake.mmtests.Comparison.rule_line` (a table of some of the rows keeps
    the rule line of all of them)."""
    c = comparison
    stat_w = max((len(r.stat) for r in c.rows), default=0)
    op_w = max((len(r.op) for r in c.rows), default=0)
    lines = []
    if c.title:
        lines.append(c.title)
    parts = [split_label(lab) for lab in c.labels]
    lead = " " * (stat_w + 1 + op_w)
    for i in (0, 1):
        lines.append((lead + "".join(f"%{CELL_WIDTH}s" % p[i] for p in parts)).rstrip())
    for r in c.rows:
        s = f"%-{stat_w}s" % r.stat + f" %-{op_w}s" % r.op
        for j, (v, p) in enumerate(zip(r.values, r.pcts)):
            sig = r.sig[j]
            s += _cell(v, p, bool(sig is not None and sig.significant), precision)
        lines.append(s)
    lines.append(c.rule_line() if rule_line is None else rule_line)
    return "\n".join(lines) + "\n"


def markdown(comparison: Comparison, precision: int = 2, rule_line: str | None = None) -> str:
    """A Markdown pipe table with the same numbers; significant cells carry literal
    (escaped) stars, e.g. ``530.00 \\*2.39%\\*``; ``rule_line`` as :func:`text`."""
    c = comparison
    out = []
    if c.title:
        out += [f"**{md(c.title)}**", ""]
    head = ["Stat", "Metric"] + [md(lab) for lab in c.labels]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join([":---", ":---"] + ["---:"] * len(c.labels)) + "|")
    for r in c.rows:
        cells = [md(r.stat), md(r.op)]
        for j, (v, p) in enumerate(zip(r.values, r.pcts)):
            num = _fmt_float(v, f"%.{precision}f")
            pct = _fmt_float(p, "%.2f")
            sig = r.sig[j]
            if sig is not None and sig.significant:
                cells.append(f"{num} \\*{pct}%\\*")
            else:
                cells.append(f"{num} ({pct}%)")
        out.append("| " + " | ".join(cells) + " |")
    line = c.rule_line() if rule_line is None else rule_line
    out += ["", line.replace("*", "\\*", 1)]
    return "\n".join(out) + "\n"
