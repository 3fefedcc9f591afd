"""``schedwake latency``: Per-task waits to run, as perf sched latency (or timehist -s)."""

from __future__ import annotations

from pathlib import Path

import click

from . import common
from .common import progress_bar
from .options import (
    check_span,
    input_format_option,
    parse_comms,
    parse_pids,
    parse_time_range,
    reader_options,
)


@click.command(short_help="Per-task waits to run, as perf sched latency (or timehist -s).")
@click.argument("trace", type=click.Path(dir_okay=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "csv"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--sort",
    "sort_keys",
    default="avg,max,switches,runtime",
    show_default=True,
    metavar="KEYS",
    help="Sort by these keys in turn, largest first: avg, max, switches, waits, runtime "
    "(pid: smallest first).",
)
@click.option(
    "--by",
    type=click.Choice(["pid", "comm"]),
    default=None,
    help="One row per task (pid; perf sched latency -p) or per name (comm: tasks of one "
    "name added up, perf's default). Default: pid; comm with --perf-compat.",
)
@click.option("--pid", "pid_list", metavar="PIDS", help="Only these tasks (comma-separated pids).")
@click.option(
    "--comm", "comm_list", metavar="NAMES", help="Only the tasks of these names (comma-separated)."
)
@click.option(
    "--perf-compat",
    is_flag=True,
    help="perf's reading (perf sched latency up to 6.1): waits from sched_wakeup only, "
    "only R (not R+) as preempted, a wait of 0 at a task's first switch-in, runtime from "
    "sched_stat_runtime; the text is perf's layout, line for line.",
)
@click.option(
    "--timehist",
    is_flag=True,
    help="perf sched timehist -s's runtime summary instead: switch-ins, run time, "
    "min/avg/max run, stddev and migrations per task.",
)
@click.option(
    "--time",
    "time_range",
    metavar="START,END",
    help="Only the events from START to END (seconds as trace-cmd report prints them).",
)
@input_format_option
@reader_options
def latency(
    trace,
    fmt,
    sort_keys,
    by,
    pid_list,
    comm_list,
    perf_compat,
    timehist,
    time_range,
    input_format,
    reader,
    jobs,
    kallsyms,
):
    """Per-task scheduling latency of TRACE: runtime, switches, average and maximum wait
    to run, and when the longest began and ended (perf sched latency's table).

    By default a wait begins at the task's wake-up (sched_waking) or at a switch-out
    runnable (R or R+, preempted), and ends at its switch-in; waits whose switch-in the
    trace does not show are not counted. --perf-compat counts as perf does, so its lines
    can be checked against perf's (docs/latency.md says where the two differ).

    \b
    Example:
        schedwake latency perf.data
        schedwake latency trace.dat --sort max --pid 1125,1126
        schedwake latency perf.data --perf-compat     # = perf sched latency
        schedwake latency trace.dat --timehist --format csv
    """
    from ..analysis import latency as lat
    from ..model import MODEL_EVENTS
    from ..report import latency as report

    sort = lat.parse_sort(sort_keys)
    pids = None if pid_list is None else parse_pids(pid_list)
    comms = parse_comms(comm_list)
    reading = "perf" if perf_compat else "schedwake"
    by = by or ("comm" if perf_compat else "pid")
    events = list(MODEL_EVENTS) + ["sched_stat_runtime"]
    t = common.load(
        trace, events=events, input_format=input_format, reader=reader, jobs=jobs, kallsyms=kallsyms
    )
    with progress_bar(f"measuring {Path(trace).name}"):
        if time_range is not None:
            start, end = parse_time_range(time_range)
            check_span(time_range, start, end, t)
            t = t.sliced(start, end)
        if timehist:
            table = lat.timehist_summary(t, pids=pids, comms=comms)
        else:
            table = lat.latency(t, reading=reading, by=by, sort=sort, pids=pids, comms=comms)
        notes = lat.notes(t, "timehist" if timehist else reading)
    if fmt == "json":
        kind = "timehist" if timehist else "latency"
        click.echo(report.to_json(table, kind, reading, by, notes))
    elif fmt == "csv":
        click.echo(report.to_csv(table), nl=False)
    elif timehist:
        click.echo(report.timehist_text(table, notes), nl=False)
    else:
        click.echo(report.text(table, reading, notes), nl=False)
