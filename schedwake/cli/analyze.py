"""``schedwake analyze``: Find wake-up pathologies in a trace, with their evidence."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import OptionError
from . import common
from .common import naming, progress_bar
from .options import (
    check_span,
    dask_options,
    input_format_option,
    parse_cpus,
    parse_pids,
    parse_thresholds,
    parse_time_range,
    reader_options,
    threshold_option,
    topology_options,
)


@click.command(short_help="Find wake-up pathologies in a trace, with their evidence.")
@click.argument("trace", type=click.Path(dir_okay=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write a self-contained HTML report: findings with per-CPU timelines of "
    "their evidence, the whole trace's timeline, migration matrix, latency and busy plots.",
)
@click.option(
    "--time",
    "time_range",
    metavar="START,END",
    help="Analyse only the events from START to END (seconds as trace-cmd report prints "
    "them; either may be empty: '100.5,' or ',120').",
)
@click.option(
    "--pid",
    "pid_list",
    metavar="PIDS",
    help="Analyse the wake-ups, migrations, waits and context switches of these tasks "
    "(comma-separated pids), in the context of the whole trace.",
)
@click.option(
    "--waits",
    "explain_waits",
    is_flag=True,
    help="With --pid: every wait to run of those tasks (wake-to-run and preempted), each "
    "broken into its causes (docs/waits.md).",
)
@click.option(
    "--cpu",
    "cpu_list",
    metavar="CPULIST",
    help="Analyse only the events of these CPUs (0-3,8), as if the trace had been recorded "
    "on them alone (trace-cmd record -M).",
)
@click.option(
    "--partitions",
    metavar="N|auto",
    default=None,
    help="Analyse the trace in N time parts on Dask workers, never loading it whole "
    "(trace.dat, perf.data): the same answer as the whole trace's; "
    "auto: as many parts as fit the workers' memory (docs/design-partitioned-analysis.md).",
)
@dask_options("--partitions", "the trace")
@topology_options
@threshold_option
@input_format_option
@reader_options
def analyze(
    trace,
    fmt,
    html_file,
    time_range,
    pid_list,
    explain_waits,
    cpu_list,
    partitions,
    scheduler,
    workers,
    topology_file,
    llc,
    thresholds,
    input_format,
    reader,
    jobs,
    kallsyms,
):
    """Find wake-up pathologies in TRACE: findings with evidence, and metrics.

    TRACE is a file of any supported format, or - to read one from standard input.

    \b
    Example:
        schedwake analyze trace.dat
        schedwake analyze trace.dat --time 62.9,63.4 --cpu 8-15 --format json
        schedwake analyze trace.dat --pid 1125,1126
        schedwake analyze trace.dat --pid 1125 --waits
        schedwake analyze trace.dat --html report.html
        schedwake analyze big.dat --partitions auto --scheduler tcp://10.0.0.1:8786
        ssh host cat /tmp/trace.dat | schedwake analyze -
    """
    from ..analysis import analyze as run_analysis
    from ..model import MODEL_EVENTS

    th = parse_thresholds(thresholds)
    common.no_huge_pages()  # (the local cluster's workers inherit it)
    common.keep_freed_memory()
    if partitions is None and (scheduler or workers):
        raise click.UsageError("--scheduler and --workers run --partitions: give it too")
    if partitions is not None:
        refused = {
            "--html": html_file,
            "--time": time_range,
            "--pid": pid_list,
            "--waits": explain_waits,
            "--cpu": cpu_list,
        }
        for option, value in refused.items():
            if value:
                raise click.UsageError(f"{option} is not given from --partitions yet")
        from .. import ingest

        options = ingest.ReadOptions(
            events=list(MODEL_EVENTS),
            input_format=input_format,
            reader=reader,
            jobs=jobs,
            kallsyms=kallsyms,
        )
        topology = {"topology_file": topology_file, "llc": llc or None}
        analysis = _partitioned(trace, partitions, scheduler, workers, th, options, topology)
        _echo(analysis, fmt)
        return
    if explain_waits and pid_list is None:
        raise OptionError("--waits", None, "needs --pid: the tasks whose waits to explain")
    from ..counters import read_beside

    # with the kernel's counters beside it every event is read: the referee needs the
    # markers and sched_stat_runtime, and the model's proofs of who ran are every event
    events = None if read_beside(trace) else list(MODEL_EVENTS)
    t = common.load(
        trace, events=events, input_format=input_format, reader=reader, jobs=jobs, kallsyms=kallsyms
    )
    with progress_bar(f"analysing {Path(trace).name}") as bar:
        t.use_topology(topology_file, llc)
        if time_range is not None or cpu_list is not None:
            start, end = parse_time_range(time_range)
            check_span(time_range, start, end, t)
            cpus = None if cpu_list is None else parse_cpus(cpu_list, t.meta.ncpus)
            t = t.sliced(start, end, cpus)
        if pid_list is not None:
            t.focus(parse_pids(pid_list))  # (the API refuses a pid the trace lacks)
        analysis = run_analysis(t, th, progress=bar, waits=explain_waits)
    if html_file:
        from ..report import analysis_html

        with progress_bar(f"writing {Path(html_file).name}") as bar, naming(html_file, "writing"):
            analysis_html.write(analysis, html_file, progress=bar)
        click.echo(f"schedwake: wrote {html_file}", err=True)
    _echo(analysis, fmt)


def _echo(analysis, fmt: str) -> None:
    """Write ``analysis`` (whole, or joined from parts) to stdout in ``fmt``."""
    from ..report import analyze as report

    if fmt == "json":
        click.echo(report.to_json(analysis))
    elif fmt == "markdown":
        click.echo(report.markdown(analysis), nl=False)
    else:
        click.echo(report.text(analysis), nl=False)


def _partitioned(trace, partitions, scheduler, workers, th, options, topology):
    """``analyze --partitions``: the trace in time parts on a Dask cluster
    (:func:`schedwake.analysis.partitioned.analyze_file`); what parts do not give yet is
    refused (exit code 2)."""
    from ..analysis.partials import NotJoinedError
    from ..analysis.partitioned import analyze_file
    from ..batch.run import dask_client

    if trace == "-":
        raise click.UsageError("--partitions reads the file by time ranges: not standard input")
    parts = partitions.strip().lower()
    if parts != "auto":
        parts = int(parts) if parts.isdigit() else 0
        if parts < 1:
            raise OptionError("--partitions", partitions, "a number of parts >= 1, or auto")
    common.INPUTS.append(trace)
    with (
        dask_client(scheduler, workers) as (client, _),
        progress_bar(f"analysing {Path(trace).name} in parts") as bar,
        naming(trace, "reading"),
    ):
        try:
            return analyze_file(trace, parts, options, client=client, thresholds=th,
                                progress=bar, **topology)  # fmt: skip
        except NotJoinedError as exc:
            raise OptionError("--partitions", None, str(exc)) from None
