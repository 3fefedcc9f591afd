"""``schedwake series``: Which build of a series changed each metric (change points)."""

from __future__ import annotations

import click

from .common import progress_bar, write_text
from .options import FiniteFloat, parse_thresholds, threshold_option, topology_options


@click.command(short_help="Which build of a series changed each metric (change points).")
@click.argument("builds", nargs=-1, required=True, metavar="BUILD_DIR...")
@click.option(
    "--metric",
    "metric_names",
    multiple=True,
    metavar="NAME",
    help="Only these metrics (default: every metric the runs measure); repeatable.",
)
@click.option(
    "--alpha",
    type=FiniteFloat(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance of a split (and false discovery rate over the metrics).",
)
@click.option(
    "--min-segment",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Builds on each side of a change point (1: the newest build may start one).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json", "html"]),
    default="text",
    show_default=True,
    help="Output format (html: a self-contained page with each changed metric plotted).",
)
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the report here instead of standard output.",
)
@topology_options
@threshold_option
def series(builds, metric_names, alpha, min_segment, fmt, output, topology_file, llc, thresholds):
    """Find the builds where each metric shifts: BUILD_DIR... in order, each a directory
    of runs (traces) or a batch dataset, named by its directory. Per change point: the
    first build after it, the means before and after, the effect with its 95% interval,
    and p (E-divisive means, a permutation test; docs/series.md).

    \b
    Example:
        schedwake series builds/v6.1 builds/v6.2 builds/v6.3 builds/v6.4
        schedwake series builds/* --format html -o series.html
    """
    from ..report import series as series_report
    from ..series import series as run_series

    with progress_bar("measuring the builds") as bar:
        result = run_series(
            list(builds),
            list(metric_names) or None,
            alpha=alpha,
            min_segment=min_segment,
            thresholds=parse_thresholds(thresholds),
            topology_file=topology_file,
            llc=llc,
            progress=bar,
        )
    render = {
        "json": series_report.to_json,
        "markdown": series_report.markdown,
        "html": series_report.render_html,
    }.get(fmt, series_report.text)
    doc = render(result)
    if output:
        write_text(output, doc if doc.endswith("\n") else doc + "\n")
        click.echo(f"schedwake: wrote {output}", err=True)
    else:
        click.echo(doc, nl=not doc.endswith("\n"))
