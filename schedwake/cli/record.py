"""``schedwake record``: Record a scheduler trace (root) while a command runs."""

from __future__ import annotations

import sys

import click

from .common import naming
from .options import FiniteFloat


@click.command(
    short_help="Record a scheduler trace (root) while a command runs.",
    context_settings={"allow_interspersed_args": False},
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The trace.dat to write; the topology goes to OUTPUT.topology.json.",
)
@click.option(
    "--events",
    default=None,
    metavar="LIST",
    help="Comma-separated system:event (or system:*) to enable instead of the "
    "default set (sched wake-up, migration, switch, fork/exit/exec, "
    "workqueue:*).",
)
@click.option(
    "--buffer-kb",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Ring buffer per CPU in KB (default 131072, less on small machines).",
)
@click.option(
    "--duration",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    metavar="S",
    help="Record for S seconds (stops COMMAND if it runs longer).",
)
@click.option(
    "--method",
    type=click.Choice(["auto", "trace-cmd", "tracefs"]),
    default="auto",
    show_default=True,
    help="trace-cmd record, or a private tracefs instance + trace-cmd restore; "
    "auto uses trace-cmd record only where a quick probe says it works.",
)
@click.option(
    "--runtime",
    is_flag=True,
    help="Add sched:sched_stat_runtime (each fair task's run time as the kernel "
    "accounts it; ~25% more events on a busy machine).",
)
@click.option(
    "--perf-stat",
    is_flag=True,
    help="Also count context switches, migrations and CPU time with perf stat -a -A "
    "over the counters' stretch, into OUTPUT.perf-stat.txt.",
)
@click.option(
    "--no-kallsyms",
    is_flag=True,
    help="Leave the kernel's symbol table out of OUTPUT (some 1 MB less; workqueue "
    "work functions are then addresses).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary line.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def record(
    output, events, buffer_kb, duration, method, runtime, perf_stat, no_kallsyms, quiet, command
):
    """Record a scheduler trace (root) while COMMAND runs, for --duration, or until Ctrl-C.

    Writes OUTPUT (trace.dat), OUTPUT.topology.json, COMMAND's output as OUTPUT.cmd.txt
    (its benchmark results become bench_* metrics) and the kernel's own counters at the
    start and the stop as OUTPUT.counters.json (info and analyze compare the trace with
    them), reports lost events and the command's exit code, and restores the tracing
    state it changed, also on Ctrl-C.

    \b
    Example:
        schedwake record -o dbench.dat -- dbench -t 10 2
        schedwake record -o idle.dat --duration 2
    """
    from ..record import record as do_record

    def log(msg):
        if not quiet or msg.startswith("WARNING"):
            click.echo(f"schedwake record: {msg}", err=True)

    with naming(output, "writing", memory=False):
        result = do_record(
            output,
            list(command) or None,
            events=events,
            buffer_kb=buffer_kb,
            duration=duration,
            method=method,
            log=log,
            runtime=runtime,
            perf_stat=perf_stat,
            kallsyms=not no_kallsyms,
        )
    from ..report.status import record_line

    click.echo(record_line(result))
    if result.interrupted:
        sys.exit(130)
