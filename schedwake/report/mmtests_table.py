"""Renderers of an mmtests comparison (:class:`schedwake.compare.mmtests.Comparison`): the
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
* Header: each side label split at its first ``-`` (:func:`schedwake.compare.mmtests.split_label`:
  ``-rcN`` stays in the first line, a label without ``-`` goes whole on the second),
  right-aligned to the cell width 12+7+4 = 23.  As in mmtests, a part wider than 23
  characters runs into its neighbour.
"""

from __future__ import annotations

import math

from ..compare import stats as st
from ..compare.mmtests import (
    CELL_WIDTH,
    COMPARE_LENGTH,
    FIELD_LENGTH,
    Comparison,
    MetricSamples,
    split_label,
)
from .markdown import md

__all__ = ["markdown", "rule_line_of", "rule_name", "text"]


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
    :func:`rule_line_of` (a table of some of the rows keeps
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
    lines.append(rule_line_of(c) if rule_line is None else rule_line)
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
    line = rule_line_of(c) if rule_line is None else rule_line
    out += ["", line.replace("*", "\\*", 1)]
    return "\n".join(out) + "\n"


def rule_name(comparison: Comparison) -> str:
    """The significance rule in words, with its alpha (and, where a side of one run is
    judged against several baseline runs, how)."""
    c = comparison
    a = f"{c.alpha:.2f}" if round(c.alpha, 2) == c.alpha else f"{c.alpha:g}"
    one = c.one_run_side()
    if c.rule == "ttest":
        pred = "; one run: t prediction interval of the baseline runs" if one else ""
        return f"two-sided t-test (Welch s.e., df=n1+n2-2{pred}), alpha {a}"
    if c.rule == "mannwhitney":
        pred = " (one run: its rank among the baseline runs)" if one else ""
        return f"two-sided Mann-Whitney rank-sum test{pred}, alpha {a}"
    pred = " (one run: outside the baseline's interval)" if one else ""
    return f"mean +-1.96*sd intervals do not overlap (mmtests ci95){pred}"


def _sample_desc(m: MetricSamples) -> str:
    ns = "/".join(str(st.clean_samples(s).size) for s in m.samples)
    if m.sample_kind == "per-window":
        win = f", window {float(m.window_s)} s" if m.window_s is not None else ""
        tested = ""
        if m.test_samples is not None:
            nb = "/".join(str(st.clean_samples(s).size) for s in m.test_samples)
            tested = f", tested on batch means n={nb}"
        return f"per-window values{win}, n={ns}{tested}"
    return f"per-trace values, n={ns}"


def rule_line_of(comparison: Comparison) -> str:
    """The rule line under a table: ``* significant: <rule>; samples: <kind>, n=a/b``
    (one line; the metrics whose samples differ from the most common description are
    named after it, then the metrics whose significance cannot be tested and why)."""
    c = comparison
    descs = {m.name: _sample_desc(m) for m in c.metrics}
    if not descs:
        samples = "none"
    else:
        # the most common description, then the metrics whose samples differ from it
        common = max(dict.fromkeys(descs.values()), key=list(descs.values()).count)
        other = [f"{name}: {d}" for name, d in descs.items() if d != common]
        samples = common + (f" ({'; '.join(other)})" if other else "")
    line = f"* significant: {rule_name(c)}; samples: {samples}"
    means = [r for r in c.rows if r.is_mean_row]
    # (metric, why), each once
    untestable = dict.fromkeys(
        (r.metric.name, s.reason) for r in means for s in r.sig if s is not None and not s.testable
    )
    reasons = {why for _, why in untestable}
    if len(untestable) > 1 and len(reasons) == 1 and len(untestable) == len(means):
        # one reason for every metric (one baseline run): said once
        return line + f"; not testable: every metric ({reasons.pop()})"
    if untestable:
        line += "; not testable: " + ", ".join(f"{m} ({why})" for m, why in untestable)
    return line
