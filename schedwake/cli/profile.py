"""``schedwake profile``: Where perf record -g profiles spent their time; runs compared."""

from __future__ import annotations

from pathlib import Path

import click

from . import common
from .common import naming, progress_bar, write_text
from .options import (
    FiniteFloat,
    check_span,
    format_option,
    parse_comms,
    parse_cpus,
    parse_pids,
    parse_time_range,
)


@click.command(short_help="Where perf record -g profiles spent their time; runs compared.")
@click.argument("traces", nargs=-1, type=click.Path(dir_okay=True))
@click.option(
    "--side",
    "side_specs",
    multiple=True,
    metavar="NAME=GLOB",
    help="A side made of the runs GLOB matches (perf.data or perf script text); repeatable, "
    "in order, after the TRACES given as arguments (each its own side). Two sides or more: "
    "each compared with the first.",
)
@click.option(
    "--kallsyms",
    "kallsyms_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="kallsyms of the recorded kernel: a copy of the traced machine's /proc/kallsyms, "
    "taken as root in the same boot, plain or gzip/xz/bzip2/zstd. Default: this machine's, "
    "when it runs the recorded kernel.",
)
@click.option(
    "--event",
    default=None,
    metavar="NAME",
    help="The event to profile (cpu-clock, cycles, ...) when the file has several.",
)
@click.option(
    "--comm",
    "comm_list",
    metavar="NAMES",
    help="Only the samples of threads of these names (comma-separated).",
)
@click.option(
    "--pid",
    "pid_list",
    metavar="PIDS",
    help="Only the samples of these processes or threads (comma-separated ids).",
)
@click.option(
    "--cpu", "cpu_list", metavar="CPULIST", help="Only the samples on these CPUs (0-3,8)."
)
@click.option(
    "--time",
    "time_range",
    metavar="START,END",
    help="Only the samples from START to END (seconds as perf script prints them; either "
    "may be empty).",
)
@click.option(
    "--work",
    "work_specs",
    multiple=True,
    metavar="N|NAME=N",
    help="The units of work each run did (messages, operations, bytes): adds each "
    "function's period per unit of work. N for every run, NAME=N for one side.",
)
@click.option(
    "--min-effect",
    "min_effect",
    type=FiniteFloat(min=0),
    default=0.5,
    show_default=True,
    metavar="PP",
    help="The smallest change starred, in percentage points.",
)
@click.option(
    "--alpha",
    type=FiniteFloat(min=0, max=1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="The false discovery rate of the Benjamini-Hochberg adjustment.",
)
@click.option(
    "--callers",
    "callers_top",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    metavar="N",
    help="Show who calls the N functions with the largest significant change.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Also write a self-contained HTML report with (differential) flame graphs.",
)
@click.option(
    "--folded",
    "folded_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Also write the folded stacks for flamegraph.pl or speedscope ('stack count'; "
    "with sides 'stack base new').",
)
@format_option
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Show the N first functions (text default 40 for one profile, 20 a table when "
    "compared; JSON all; 0: all).",
)
def profile(
    traces,
    side_specs,
    kallsyms_file,
    event,
    comm_list,
    pid_list,
    cpu_list,
    time_range,
    work_specs,
    min_effect,
    alpha,
    callers_top,
    html_path,
    folded_path,
    fmt,
    top,
):
    """Self and children shares of every function in a perf.data profile (perf record
    -g) or its perf script text, as perf report --no-children and --children print
    them, with the names of kernel and user-space functions and what could not be
    named. Several runs a side (--side): each function's shares compared over the runs
    (Welch t-test, Benjamini-Hochberg), its callers, differential flame graphs.

    \b
    Example:
        perf record -g -a -F 999 -o perf.data -- perf bench sched messaging
        schedwake profile perf.data
        schedwake profile perf.data --comm sched-messaging --cpu 0 --top 20
        schedwake profile perf.data --kallsyms kallsyms-of-that-machine --format json
        schedwake profile --side base='base/*.data' --side new='new/*.data' --html cmp.html
    """
    from ..compare.sides import parse_sides
    from ..profile.compare import compare_profiles
    from ..report import profile as report
    from ..report import profile_compare as compared
    from ..report import profile_html

    if not traces and not side_specs:
        raise click.UsageError("give a profile (TRACE) or --side NAME=GLOB")
    sides = parse_sides(traces, side_specs, least=1)
    from ..work import parse_work

    # refused before any reading; numbers only (a profile's work is not read beside it)
    labels = [label for label, _ in sides]
    work = (
        {k: float(v) for k, v in parse_work(work_specs, labels, sources=()).items()}
        if work_specs
        else None
    )
    filters = {
        "comm": parse_comms(comm_list),
        "pid": None if pid_list is None else parse_pids(pid_list),
    }
    profiles = {
        label: [
            _profile_of(path, kallsyms_file, event, filters, cpu_list, time_range) for path in paths
        ]
        for label, paths in sides
    }
    one = len(sides) == 1 and len(sides[0][1]) == 1 and not side_specs
    if one and fmt != "markdown" and html_path is None and folded_path is None and not work_specs:
        result = profiles[sides[0][0]][0]
        click.echo(
            report.to_json(result, top) if fmt == "json" else report.text(result, top),
            nl=fmt == "json",
        )
        return
    cmp = compare_profiles(profiles, alpha=alpha, min_effect=min_effect, work=work)
    if html_path is not None:
        with naming(html_path, "writing"):
            profile_html.write(cmp, html_path, top=top)
    if folded_path is not None:
        write_text(folded_path, compared.folded(cmp))
    if fmt == "json":
        click.echo(compared.to_json(cmp, top, callers_top))
    elif fmt == "markdown":
        click.echo(compared.markdown(cmp, top), nl=False)
    elif one:
        click.echo(report.text(profiles[sides[0][0]][0], top), nl=False)
    else:
        click.echo(compared.text(cmp, top, callers_top), nl=False)


def _profile_of(path: str, kallsyms_file, event, filters: dict, cpu_list, time_range):
    """The :class:`Profile` of one run, its CPU and time filters checked against it."""
    from ..profile import profile as run_profile

    t = common.load(path, kallsyms=kallsyms_file)
    cpus = None if cpu_list is None else parse_cpus(cpu_list, t.meta.ncpus)
    span = None if time_range is None else parse_time_range(time_range)
    if span is not None:
        check_span(time_range, *span, t)
    with progress_bar(f"profiling {Path(path).name}") as bar:
        return run_profile(
            t, event=event, kallsyms=kallsyms_file, cpu=cpus, time=span, progress=bar, **filters
        )
