"""``schedwake compare``: Compare traces before/after in the mmtests layout."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import TraceError
from . import common
from .common import naming, progress_bar
from .options import (
    FiniteFloat,
    format_option,
    from_batch_options,
    input_format_option,
    open_dataset,
    parse_thresholds,
    reader_options,
    threshold_option,
    topology_options,
)


@click.command(short_help="Compare traces before/after in the mmtests layout.")
@click.argument("traces", nargs=-1, type=click.Path(dir_okay=True))
@click.option(
    "--side",
    "side_specs",
    multiple=True,
    metavar="NAME=GLOB",
    help="A side made of the iterations GLOB matches; repeatable, in order, "
    "after the TRACES given as arguments. With --mmtests: NAME=RUN, a run of the tree.",
)
@click.option(
    "--mmtests",
    "mmtests_dir",
    type=click.Path(file_okay=False),
    default=None,
    metavar="RESULTS_DIR",
    help="Compare the runs of an mmtests results tree (work/log): per subtest, its perf "
    "sched record files (a sample per iter-N) and mmtests' own figures.",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="LABEL",
    help="Name of each side, in order (repeat once per side); the header "
    "splits it at the first '-' (6.18.0-vanilla).",
)
@click.option(
    "--window",
    "window_s",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Window length of per-window samples (giving it asks for them; default: a round "
    "value giving the shortest trace >= 10 windows, at most 1 s).",
)
@click.option(
    "--samples",
    type=click.Choice(["auto", "per-trace", "runs", "per-window", "window"]),
    default="auto",
    show_default=True,
    help="auto, per-trace (runs): one value per trace; a side of one run is judged against "
    "the baseline runs' spread, and one baseline run gives no significance. per-window "
    "(window): windows of the runs, tested as batch means (this run differed, not a rerun "
    "would).",
)
@click.option(
    "--significance",
    "--test",
    "significance",
    type=click.Choice(["ttest", "ci95", "mannwhitney"]),
    default="ttest",
    show_default=True,
    help="ttest: two-sided t-test, alpha --alpha (the LKML "
    "tables); ci95: mean +-1.96 sd intervals do not overlap (mmtests now); mannwhitney: "
    "rank-sum test, for heavy tails (needs >= 4 runs a side at alpha 0.10).",
)
@click.option(
    "--alpha",
    type=FiniteFloat(0, 1, min_open=True, max_open=True),
    default=0.10,
    show_default=True,
    help="Significance level of the t-test.",
)
@click.option(
    "--metric",
    "metric_names",
    multiple=True,
    metavar="NAME",
    help="Compare only these metrics (see docs/compare.md); repeatable.",
)
@click.option(
    "--work",
    "work_specs",
    multiple=True,
    metavar="N|bench|cpu|SIDE=...",
    help="The runs' work, to compare counts per unit of work (context_switches_per_op, ...): "
    "a number for every run, bench (the benchmark's operations beside each trace: fio, "
    "dbench, perf bench sched pipe/messaging), cpu (the recorded command's CPU seconds), "
    "or SIDE=... per side; repeatable.",
)
@format_option
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write a self-contained HTML report (tables, findings, plots).",
)
@click.option("--title", default=None, help="Title line above the table.")
@click.option(
    "--per-cpu",
    is_flag=True,
    help="Print every CPU's busy-share rows (by default left out beyond 4 CPUs).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Print the whole mmtests table (by default: the summary, then the table's mean "
    "rows that changed significantly).",
)
@from_batch_options
@topology_options
@threshold_option
@input_format_option
@reader_options
def compare(
    traces,
    side_specs,
    mmtests_dir,
    labels,
    window_s,
    samples,
    significance,
    alpha,
    metric_names,
    work_specs,
    fmt,
    html_file,
    title,
    per_cpu,
    full,
    from_batch,
    where,
    topology_file,
    llc,
    thresholds,
    input_format,
    reader,
    jobs,
    kallsyms,
):
    """Compare TRACES (baseline first) in the mmtests layout: per metric Min, Amean or
    Hmean, Stddev, CoeffVar, Max, BAmean-50/95/99, the % change (positive = better) and
    * where the mean differs significantly.

    \b
    Example:
        schedwake compare base.dat patched.dat --html report.html
        schedwake compare --side vanilla='runs/vanilla-*.dat' --side fix='runs/fix-*.dat'
        schedwake compare --mmtests work/log --side base=6.18-vanilla --side new=6.18-fix
    """
    from ..compare import compare as run_compare
    from ..compare.sides import parse_sides
    from ..model import MODEL_EVENTS

    th = parse_thresholds(thresholds)
    if mmtests_dir is not None:
        given = {"TRACES": traces, "--from-batch": from_batch, "--work": work_specs}
        given["--html"] = html_file
        for name, value in given.items():
            if value:
                raise TraceError(name, "does not apply with --mmtests (the tree gives the traces)")
        from ..compare.mmtests_tree import compare_tree
        from ..report import mmtests_tree as tree_report

        events = list(MODEL_EVENTS)
        tree = compare_tree(
            mmtests_dir,
            side_specs,
            labels,
            samples=samples,
            window_s=window_s,
            significance=significance,
            alpha=alpha,
            title=title,
            metrics=list(metric_names) or None,
            topology_file=topology_file,
            llc=llc,
            thresholds=th,
            load=lambda p: common.load(str(p), events, input_format, reader, jobs, kallsyms),
        )
        if fmt == "json":
            click.echo(tree_report.to_json(tree))
        else:
            render = tree_report.markdown if fmt == "markdown" else tree_report.text
            click.echo(render(tree, per_cpu=per_cpu, full=full), nl=False)
        return
    dataset = open_dataset(from_batch, where, topology_file, llc)
    if dataset is not None:
        spec = parse_sides(traces, side_specs, labels, expand=dataset.expand)
        sides = {label: [dataset.load(p) for p in paths] for label, paths in spec}
        topology_file, llc = None, ()
    else:
        spec = parse_sides(traces, side_specs, labels)
        events = list(MODEL_EVENTS)
        sides = {
            label: [common.load(p, events, input_format, reader, jobs, kallsyms) for p in paths]
            for label, paths in spec
        }
    from ..work import parse_work

    work = parse_work(work_specs, [label for label, _ in spec]) if work_specs else None
    with progress_bar("measuring the traces") as bar:
        result = run_compare(
            sides,
            window_s=window_s,
            samples=samples,
            significance=significance,
            alpha=alpha,
            title=title,
            metrics=list(metric_names) or None,
            topology_file=topology_file,
            llc=llc,
            thresholds=th,
            progress=bar,
            work=work,
        )
    from ..report import compare as compare_report

    if fmt == "json":
        click.echo(compare_report.to_json(result))
    elif fmt == "markdown":
        click.echo(compare_report.markdown(result, per_cpu=per_cpu, full=full), nl=False)
    else:
        click.echo(compare_report.text(result, per_cpu=per_cpu, full=full), nl=False)
    if html_file:
        from ..report import html

        with progress_bar(f"writing {Path(html_file).name}") as bar, naming(html_file, "writing"):
            html.write(result, html_file, progress=bar)
        click.echo(f"schedwake: wrote {html_file}", err=True)
