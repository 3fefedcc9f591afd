"""``schedwake batch``: Analyse many traces on Dask into a Parquet dataset."""

from __future__ import annotations

import sys

import click

from ..errors import OptionError
from .common import INPUTS, naming, progress_bar
from .options import (
    FiniteFloat,
    dask_options,
    decoder_options,
    input_format_option,
    parse_thresholds,
    threshold_option,
    topology_options,
)


@click.command(short_help="Analyse many traces on Dask into a Parquet dataset.")
@click.argument("inputs", nargs=-1, required=True, metavar="TRACE_OR_GLOB...")
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory of the dataset: traces.parquet, findings.parquet, windows.parquet, "
    "batch.json (an earlier run's rows there are kept).",
)
@click.option(
    "--label-from",
    metavar="REGEX",
    default=None,
    help="Named groups of this regular expression, searched in each path, become "
    "columns: '(?P<kernel>[^/]+)/(?P<bench>[^/]+)-i(?P<iter>\\d+)'.",
)
@click.option(
    "--window",
    "windows",
    multiple=True,
    type=FiniteFloat(min=0, min_open=True),
    metavar="SECONDS",
    help="Also store per-window samples of this length, besides each trace's default "
    "(for compare/gate --from-batch with --window); repeatable.",
)
@click.option(
    "--partitions",
    metavar="N|auto",
    default="auto",
    show_default=True,
    help="Analyse a trace too big for one worker's memory in time parts over all the "
    "workers (auto); in N parts every trace that can be cut (trace.dat, perf.data); "
    "1: none. The dataset is the same.",
)
@dask_options()
@click.option(
    "--serial", is_flag=True, help="Analyse in this process, one trace after another (no Dask)."
)
@click.option(
    "--force", is_flag=True, help="Analyse again the traces an earlier run into OUT already did."
)
@click.option(
    "--topology-for",
    "topologies",
    multiple=True,
    metavar="GLOB=FILE",
    help="The topology JSON of the traces GLOB matches (the first that matches; "
    "before --topology); repeatable.",
)
@topology_options
@threshold_option
@input_format_option
@decoder_options
def batch(
    inputs,
    out,
    label_from,
    windows,
    partitions,
    scheduler,
    workers,
    serial,
    force,
    topologies,
    topology_file,
    llc,
    thresholds,
    input_format,
    reader,
    jobs,
):
    """Analyse every trace once, in parallel on Dask, into a Parquet dataset in OUT.

    One row per trace in OUT/traces.parquet (an error row for a trace that cannot be
    read), one per finding in OUT/findings.parquet, the per-window samples in
    OUT/windows.parquet; compare and gate read it with --from-batch OUT. Exit 0 when
    every trace was analysed, 2 when one was not (the others are written all the same).

    \b
    Example:
      schedwake batch 'runs/**/*.dat' -o results/ \\
          --label-from '(?P<kernel>[^/]+)/dbench-c(?P<clients>\\d+)-i(?P<iter>\\d+)'
      schedwake compare --from-batch results/ --side base='runs/6.1/*' --side new='runs/6.12/*'
    """
    import logging

    from ..batch import batch as run_batch

    if serial and (scheduler or workers):
        raise click.UsageError("--serial runs without Dask: leave out --scheduler and --workers")
    if scheduler and workers:
        raise click.UsageError("--workers sizes the local cluster: not with --scheduler")
    logging.getLogger("distributed").setLevel(logging.ERROR)  # quiet CI logs
    th = parse_thresholds(thresholds)
    parts = partitions.strip().lower()
    if parts != "auto":
        if not parts.isdigit() or int(parts) < 1:
            raise OptionError("--partitions", partitions, "a number of parts >= 1, or auto")
        parts = int(parts)
    INPUTS.extend(str(p) for p in inputs)
    with progress_bar("analysing traces") as bar, naming(out, "writing", memory=False):
        result = run_batch(
            list(inputs),
            out,
            topology_file=topology_file,
            llc=llc,
            topologies=list(topologies),
            thresholds=th,
            windows=windows,
            label_from=label_from,
            scheduler="serial" if serial else scheduler,
            workers=workers,
            force=force,
            input_format=input_format,
            reader=reader,
            jobs=jobs,
            partitions=parts,
            progress=(lambda done, total: bar(done / max(total, 1))) if bar else None,
        )
    for _, error in result.errors:
        click.echo(f"schedwake: {error}", err=True)
    from ..report.status import batch_line

    click.echo(batch_line(result))
    if result.exit_code:
        sys.exit(result.exit_code)
