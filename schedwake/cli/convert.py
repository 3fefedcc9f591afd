"""``schedwake convert``: Write a trace as Parquet tables or a Perfetto trace."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from ..errors import OptionError
from . import common
from .common import INPUTS, naming, progress_bar, warn
from .options import input_format_option, reader_options, topology_options


@click.command(short_help="Write a trace as Parquet tables or a Perfetto trace.")
@click.argument("trace", type=click.Path(dir_okay=True))
@click.option(
    "-o",
    "--output",
    "outdir",
    required=True,
    type=click.Path(),
    help="Parquet: a directory for one Parquet file per event plus metadata.json. "
    "Perfetto: the trace file to write (.pftrace).",
)
@click.option(
    "--to",
    "to",
    type=click.Choice(["parquet", "perfetto"]),
    default="parquet",
    show_default=True,
    help="parquet: the event tables. perfetto: a Perfetto trace of the events, with "
    "schedwake's findings, ping-pong flows and metrics on tracks of their own "
    "(docs/perfetto.md).",
)
@click.option(
    "--events", default=None, help="Comma-separated event names to convert (default: all)."
)
@click.option(
    "--window",
    "window_s",
    type=float,
    default=1.0,
    show_default=True,
    help="--to perfetto: the metrics' counter tracks, one value per window of this many seconds.",
)
@click.option(
    "--no-analysis",
    is_flag=True,
    help="--to perfetto: the events only, no findings, flows or counters.",
)
@topology_options
@input_format_option
@reader_options
def convert(
    trace,
    outdir,
    to,
    events,
    window_s,
    no_analysis,
    topology_file,
    llc,
    input_format,
    reader,
    jobs,
    kallsyms,
):
    """Write TRACE's event tables as Parquet files (one per event) in a directory, or
    TRACE as a Perfetto trace (--to perfetto) to open in ui.perfetto.dev with
    schedwake's findings on it.

    \b
    Example:
        schedwake convert trace.dat -o tables/ --events sched_waking,sched_switch
        schedwake convert trace.dat --to perfetto -o trace.pftrace
    """
    names = [e.strip() for e in events.split(",") if e.strip()] if events else None
    if to == "perfetto":
        _convert_perfetto(
            trace, outdir, names, window_s, no_analysis, topology_file, llc,
            input_format, reader, jobs, kallsyms,
        )  # fmt: skip
        return
    from ..convert import convert as convert_to_parquet

    if Path(outdir).exists() and not Path(outdir).is_dir():
        raise OptionError("--output", outdir, "is a file: Parquet tables go to a directory")
    INPUTS.append(trace)
    with (
        progress_bar(f"converting {Path(trace).name}") as progress,
        naming(outdir, "writing", memory=False),
    ):
        written = convert_to_parquet(
            trace,
            outdir,
            events=names,
            input_format=input_format,
            progress=progress,
            kallsyms=kallsyms,
            reader=reader,
            jobs=jobs,
        )
    # the reader's warnings, as metadata.json records them
    meta = json.loads((Path(outdir) / "metadata.json").read_text())
    warn(meta["path"], meta.get("warnings"))
    click.echo(f"wrote {len(written)} tables to {outdir}")


def _convert_perfetto(
    trace, out, names, window_s, no_analysis, topology_file, llc, input_format, reader, jobs,
    kallsyms,
) -> None:  # fmt: skip
    """``convert --to perfetto``: the trace and (unless --no-analysis) its analysis."""

    from ..report import perfetto

    if Path(out).is_dir():
        raise OptionError("--output", out, "is a directory: a Perfetto trace is one file")
    if not (math.isfinite(window_s) and window_s >= 1e-6):
        raise OptionError(
            "--window", window_s, "a window must be a finite number of seconds >= 1e-06"
        )
    t = common.load(
        trace, events=names, input_format=input_format, reader=reader, jobs=jobs, kallsyms=kallsyms
    )
    analysis = None
    span = (t.meta.last_ts_ns or 0) - (t.meta.first_ts_ns or 0)
    window = None if no_analysis or span / 1e9 / window_s > 1e5 else window_s
    with progress_bar(f"writing {Path(out).name}") as bar:
        if not no_analysis:
            from ..analysis import analyze as run_analysis

            t.use_topology(topology_file, llc)
            if window is not None:
                # (the counters' runnable shares per window read the task-state
                # intervals: made first, the analysis sums them rather than scanning the
                # events for its sums a second time)
                t.model.task_states  # noqa: B018
            analysis = run_analysis(t, {}, progress=bar)
        with naming(out, "writing", memory=False):
            stats = perfetto.write(t, out, analysis, window)
    click.echo(
        f"wrote {out}: {stats['events']} events ({stats['compact_switches']} switches and "
        f"{stats['compact_wakings']} wakings compact), {stats['findings']} findings, "
        f"{stats['flows']} flows, {stats['counters']} counter tracks"
    )
