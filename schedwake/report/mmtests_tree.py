"""Renderers of an mmtests tree compared (:class:`schedwake.compare.mmtests_tree.TreeComparison`):
``schedwake compare --mmtests DIR`` as text, Markdown and JSON. A header says which runs
and iterations each side is, then each subtest is a comparison as
:mod:`schedwake.report.compare` prints it (docs/compare.md, "An mmtests results tree")."""

from __future__ import annotations

from ..compare.mmtests_tree import MIN_COVERAGE, MIN_SWITCHES, Subtest, TreeComparison, figures_of
from ..jsonout import dumps
from . import compare as compare_report
from .markdown import md

__all__ = ["text", "markdown", "to_dict", "to_json", "header_lines"]


def _rel(tree: TreeComparison, path) -> str:
    try:
        return str(path.relative_to(tree.root))
    except ValueError:
        return str(path)


def header_lines(tree: TreeComparison) -> list[str]:
    """What was compared: the tree, each side's runs and iterations, the notes."""
    out = [f"mmtests results: {tree.root}"]
    for label, runs in tree.sides:
        its = "; ".join(f"{r.name} ({', '.join(i.name for i in r.iterations)})" for r in runs)
        out.append(f"side {label}: run {its}")
    out += [f"note: {n}" for n in tree.notes]
    return out


def _source_line(s: Subtest) -> str:
    """Where a subtest's rows come from: its recordings and mmtests' figures."""
    first = next(iter(s.recordings.values()))
    n = " + ".join(str(len(v)) for v in s.recordings.values())
    line = f"{s.benchmark} {s.subtest}: {first[0].name}, {n} iterations"
    fig = figures_of(s.benchmark)
    if fig is not None and s.bench_metric:
        files = next(iter(s.figure_files.values()))
        how = f", in {fig.unit}" if fig.scale != 1 else ""
        line += (
            f"; {s.bench_metric}: mmtests' {fig.metric}-{s.subtest} from {files[0].name}"
            f" (each benchmark iteration{how})"
        )
    return line


def _pct(share: float) -> str:
    return f"{share:.0%}" if share >= 0.01 or share == 0 else f"{share:.2%}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


RULE = (
    f"a recording covering < {MIN_COVERAGE:.0%} of the benchmark's time of its subtest, or "
    f"with < {MIN_SWITCHES} sched_switch events, describes too little of it: its "
    "scheduler metrics are withheld"
)


def coverage_lines(tree: TreeComparison, s: Subtest) -> list[str]:
    """What each recording of a subtest covers of the benchmark's time, and the rule's
    verdict: a line per recording, then a note when metrics are withheld."""
    fig = figures_of(s.benchmark)
    what = f"{s.benchmark.split('-')[0]} time" if fig is not None else "benchmark time"
    out = []
    for c in s.coverage:
        line = f"coverage: {c.side}: {_rel(tree, c.path)} covers {_ms(c.span_s)}"
        if c.bench_s:
            line += f" of the subtest's {_ms(c.bench_s)} of {what} ({_pct(c.share or 0.0)})"
        line += f", {c.switches} sched_switch events"
        if c.withheld:
            line += f": withheld ({c.withheld})"
        out.append(line)
    withheld = s.withheld
    if withheld:
        short = any(c.bench_s and c.span_s / c.bench_s < MIN_COVERAGE for c in withheld)
        why = (
            "mmtests starts perf sched record in the background right before the benchmark, "
            "and its start-up misses short runs"
            if short
            else "too few context switches for a rate"
        )
        if s.scheduler_shown:
            out.append(
                f"note: {len(withheld)} of {len(s.coverage)} recordings give no scheduler "
                f"samples ({RULE}): {why}"
            )
        else:
            left = "the table is mmtests' figures only" if s.bench_metric else "it has no rows"
            out.append(
                f"note: no scheduler metrics for this subtest: a side has no recording "
                f"that describes it ({RULE}): {why}; {left}"
            )
    return out


def text(tree: TreeComparison, per_cpu: bool = False, full: bool = False) -> str:
    """The header, then each subtest: a line saying where its rows come from and its
    comparison as ``schedwake compare`` prints it."""
    out = "\n".join(header_lines(tree)) + "\n"
    for s in tree.subtests:
        out += "\n== " + _source_line(s) + "\n"
        out += "".join(line + "\n" for line in coverage_lines(tree, s))
        out += compare_report.text(s.result, per_cpu=per_cpu, full=full)
    return out


def markdown(tree: TreeComparison, per_cpu: bool = False, full: bool = False) -> str:
    """:func:`text` as Markdown: a section per subtest."""
    out = "".join(f"- {md(line)}\n" for line in header_lines(tree))
    for s in tree.subtests:
        out += f"\n## {md(_source_line(s))}\n\n"
        lines = coverage_lines(tree, s)
        out += "".join(f"- {md(line)}\n" for line in lines) + ("\n" if lines else "")
        out += compare_report.markdown(s.result, per_cpu=per_cpu, full=full)
    return out


def to_dict(tree: TreeComparison) -> dict:
    """The JSON document: the tree, the sides' runs, and per subtest its recordings,
    mmtests' figure files, each recording's coverage of the benchmark's time (and
    whether its scheduler metrics are withheld) and the comparison's document
    (:func:`compare_report.to_dict`)."""
    return {
        "coverage_rule": {"min_coverage": MIN_COVERAGE, "min_switches": MIN_SWITCHES},
        "mmtests": str(tree.root),
        "sides": [
            {
                "label": label,
                "runs": [
                    {"run": r.name, "iterations": [i.name for i in r.iterations]} for r in runs
                ],
            }
            for label, runs in tree.sides
        ],
        "notes": tree.notes,
        "subtests": [
            {
                "benchmark": s.benchmark,
                "subtest": s.subtest,
                "bench_metric": s.bench_metric,
                "recordings": {k: [_rel(tree, p) for p in v] for k, v in s.recordings.items()},
                "figures": {k: [_rel(tree, p) for p in v] for k, v in s.figure_files.items()},
                "scheduler_metrics_shown": s.scheduler_shown,
                "coverage": [
                    {
                        "side": c.side,
                        "iteration": c.iteration,
                        "recording": _rel(tree, c.path),
                        "span_s": c.span_s,
                        "span_source": c.span_source,
                        "bench_s": c.bench_s,
                        "share": c.share,
                        "sched_switch": c.switches,
                        "withheld": c.withheld,
                    }
                    for c in s.coverage
                ],
                "comparison": compare_report.to_dict(s.result),
            }
            for s in tree.subtests
        ],
    }


def to_json(tree: TreeComparison, indent: int = 2) -> str:
    """``schedwake compare --mmtests DIR --format json`` (NaN is null)."""
    return dumps(to_dict(tree), indent=indent)
