"""``schedwake info``: Counts, CPUs, duration, clock and lost events of a trace."""

from __future__ import annotations

import click

from ..errors import TraceError
from . import common
from .options import input_format_option, reader_options


@click.command(short_help="Counts, CPUs, duration, clock and lost events of a trace.")
@click.argument("trace", type=click.Path(dir_okay=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@input_format_option
@reader_options
def info(trace, fmt, input_format, reader, jobs, kallsyms):
    """Per-event counts, CPUs, duration, clock and lost events of TRACE.

    With the kernel's counters beside it (TRACE.counters.json, written by record; a
    perf stat output TRACE.perf-stat.txt), also how far the trace agrees with them.

    \b
    Example:
        schedwake info trace.dat
        schedwake info trace.dat --format json
    """
    from ..report import info as info_report
    from ..summary import info as trace_info
    from ..summary import meta_summary
    from ..summary import summary as trace_summary

    # every event is read: each is a proof of the task current on its CPU, which the
    # completeness check needs, and the kernel's counters beside the trace are compared
    # with it (their markers). A file whose events cannot be analysed (a record or a
    # format the model refuses) is still counted, and says why it was not checked.
    t = None
    try:
        t = common.load(trace, None, input_format, reader, jobs, kallsyms)
        summary = trace_summary(t)
    except TraceError as exc:
        if trace == "-":  # (standard input is read once)
            raise
        if t is None:
            t = common.load(trace, [], input_format, reader, jobs, kallsyms)
        summary = {**meta_summary(t.meta), "completeness": {"not_checked": exc.problem}}
    else:  # (a counters file beside the trace that cannot be read is an error of its own)
        summary = trace_info(t, summary)
    if fmt == "json":
        click.echo(info_report.to_json(summary))
    else:
        click.echo(info_report.text(summary), nl=False)
