"""Renderers of an mmtests tree compared (:class:`schedwake.mmtests_tree.TreeComparison`):
``schedwake compare --mmtests DIR`` as text, Markdown and JSON. A header says which runs
and iterations each side is, then each subtest is a comparison as
:mod:`schedwake.report.compare` prints it (docs/compare.md, "An mmtests results tree")."""

from __future__ import annotations

from ..jsonout import dumps
from ..mmtests_tree import Subtest, TreeComparison, figures_of
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


def text(tree: TreeComparison, per_cpu: bool = False, full: bool = False) -> str:
    """The header, then each subtest: a line saying where its rows come from and its
    comparison as ``schedwake compare`` prints it."""
    out = "\n".join(header_lines(tree)) + "\n"
    for s in tree.subtests:
        out += "\n== " + _source_line(s) + "\n"
        out += compare_report.text(s.result, per_cpu=per_cpu, full=full)
    return out


def markdown(tree: TreeComparison, per_cpu: bool = False, full: bool = False) -> str:
    """:func:`text` as Markdown: a section per subtest."""
    out = "".join(f"- {md(line)}\n" for line in header_lines(tree))
    for s in tree.subtests:
        out += f"\n## {md(_source_line(s))}\n\n"
        out += compare_report.markdown(s.result, per_cpu=per_cpu, full=full)
    return out


def to_dict(tree: TreeComparison) -> dict:
    """The JSON document: the tree, the sides' runs, and per subtest its recordings,
    mmtests' figure files and the comparison's document (:func:`compare_report.to_dict`)."""
    return {
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
                "comparison": compare_report.to_dict(s.result),
            }
            for s in tree.subtests
        ],
    }


def to_json(tree: TreeComparison, indent: int = 2) -> str:
    """``schedwake compare --mmtests DIR --format json`` (NaN is null)."""
    return dumps(to_dict(tree), indent=indent)
