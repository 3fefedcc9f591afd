"""Command line: a thin click layer over the Python API.

Every command parses its arguments, calls the API and prints. Input the API
rejects (``TraceError``) becomes one line on stderr and exit code 2; so does an option
value out of range (``OptionError``, or click's own usage errors), in click's style:
``Error: --window 1e-09: a window must be at least 1 us (...)``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import click

# what the command line's options need, and nothing heavier: pandas, pyarrow and the
# modules that use them are imported by the command that runs (``--version``, ``--help``
# and an option error answer without them)
from .errors import OptionError, TraceError
from .ingest import DEFAULT_READER, FORMATS, MAX_JOBS, MAX_PID, READERS


@contextmanager
def _progress(label: str):
    """A progress bar on a terminal for work that takes more than a moment. It appears
    at the first update, so that bars of work done inside (a trace read on the way)
    keep their own lines."""
    if not sys.stderr.isatty():
        yield None
        return
    state: dict = {"done": 0, "bar": None}

    def update(fraction: float) -> None:
        if state["bar"] is None:
            state["cm"] = click.progressbar(
                length=1000, label=label, file=sys.stderr, show_eta=False, show_percent=True
            )
            state["bar"] = state["cm"].__enter__()
        step = int(max(0.0, min(1.0, fraction)) * 1000)
        if step > state["done"]:
            state["bar"].update(step - state["done"])
            state["done"] = step

    try:
        yield update
        update(1.0)
    finally:
        if state["bar"] is not None:
            state["cm"].__exit__(None, None, None)


@contextmanager
def _naming(path, doing: str, memory: bool = True):
    """Errors that name no file while ``path`` is read or written (``doing``: "reading",
    "writing") become a :class:`TraceError` naming it: ``ENOSPC`` and ``EFBIG`` on a
    write (``--folded /dev/full``, ``ulimit -f``), a ``MemoryError`` unless ``memory`` is
    False (an output made while its traces are read: their names say it, _INPUTS)
    (docs/reliability.md: every line names the file)."""
    try:
        yield
    except MemoryError:
        if not memory:
            raise
        raise TraceError(path, f"out of memory while {doing} it") from None
    except OSError as exc:
        if exc.filename is not None or isinstance(exc, BrokenPipeError):
            raise
        raise TraceError(path, f"{exc.strerror or exc} (while {doing} it)") from None


def _write_text(path, text: str) -> None:
    """``text`` written to the output file ``path`` (UTF-8); an error names it."""
    with _naming(path, "writing"):
        Path(path).write_text(text, encoding="utf-8")


def _load(
    path: str,
    events=None,
    input_format: str | None = None,
    reader: str | None = None,
    jobs: int | None = None,
):
    if path == "-":
        _INPUTS.append(STDIN)
        return _load_stdin(events, input_format, reader, jobs)
    from .trace import load

    ctx = click.get_current_context(silent=True)
    _INPUTS.append(path)
    with _progress(f"reading {Path(path).name}") as progress, _naming(path, "reading"):
        trace = load(
            path,
            events=events,
            input_format=input_format,
            progress=progress,
            reader=reader,
            jobs=jobs,
            kallsyms=ctx.meta.get("schedwake.kallsyms") if ctx else None,
        )
    _warn(trace.meta.path, trace.meta.warnings)
    return trace


STDIN = "<stdin>"


#: The most bytes of standard input spooled (the environment variable of the same name
#: sets another), and the room left free on the temporary directory's filesystem: a
#: trace piped in is copied to a file, never without end (``yes | schedwake analyze -``).
MAX_STDIN_BYTES = 64 << 30
STDIN_FREE_MARGIN = 1 << 30


def stdin_limit(free_bytes: int) -> int:
    """How much of standard input may be spooled: ``SCHEDWAKE_MAX_STDIN_BYTES`` (default
    :data:`MAX_STDIN_BYTES`), and no more than leaves :data:`STDIN_FREE_MARGIN` free."""
    text = os.environ.get("SCHEDWAKE_MAX_STDIN_BYTES", "")
    limit = int(text) if text.isdigit() else MAX_STDIN_BYTES
    return max(0, min(limit, free_bytes - STDIN_FREE_MARGIN))


def _spool(src, spool: Path, limit: int) -> None:
    """Copy ``src`` to ``spool``, at most ``limit`` bytes (TraceError naming ``<stdin>``
    beyond it, or when the disk fills)."""
    done = 0
    try:
        with open(spool, "wb") as f:
            while chunk := src.read(1 << 20):
                done += len(chunk)
                if done > limit:
                    raise TraceError(
                        STDIN,
                        f"holds more than {limit} bytes, as much as may be spooled to the "
                        "temporary directory (SCHEDWAKE_MAX_STDIN_BYTES, and 1 GiB left free): "
                        "give the trace as a file",
                    )
                f.write(chunk)
    except OSError as exc:
        raise TraceError(STDIN, f"cannot be spooled to a temporary file: {exc.strerror}") from None


def _load_stdin(events, input_format, reader, jobs):
    """A trace piped into standard input (``-``): spooled to a private temporary file
    (the trace.dat reader needs to seek), read, and the file removed; the trace and its
    errors are named ``<stdin>``."""
    import shutil
    import tempfile

    if sys.stdin is None or sys.stdin.isatty():
        raise TraceError(STDIN, "is a terminal: pipe a trace into it (schedwake analyze - < FILE)")
    with tempfile.TemporaryDirectory(prefix="schedwake-stdin-") as tmp:
        spool = Path(tmp) / "stdin"
        _spool(sys.stdin.buffer, spool, stdin_limit(shutil.disk_usage(tmp).free))
        try:
            trace = _load(str(spool), events, input_format, reader, jobs)
        except TraceError as exc:
            raise TraceError(STDIN, exc.problem.replace(str(spool), STDIN)) from None
    trace.meta = dataclasses.replace(trace.meta, path=STDIN)
    return trace


def _warn(path, warnings) -> None:
    """Each reader warning of ``path`` as one stderr line, once per command even when
    the command loads the file twice (the reports list them among the caveats)."""
    ctx = click.get_current_context(silent=True)
    seen = ctx.meta.setdefault("schedwake.warned", set()) if ctx else set()
    for text in warnings or ():
        if (str(path), text) not in seen:
            seen.add((str(path), text))
            click.echo(f"schedwake: warning: {path}: {text}", err=True)


#: The options of the API's parameters, for the one line of an OptionError.
OPTION_OF = {
    "window_s": "--window",
    "windows": "--window",
    "alpha": "--alpha",
    "thresholds": "--threshold",
    "llc": "--llc",
    "jobs": "--jobs",
    "workers": "--workers",
    "start_ns": "--time",
    "end_ns": "--time",
    "events": "--events",
    "min_effect": "--min-effect",
    "work": "--work",
    "sides": "--side",
    "samples": "--samples",
    "significance": "--significance",
    "metrics": "--metric",
    "labels": "--label",
    "pids": "--pid",
    "reader": "--reader",
    "input_format": "--input-format",
    "label_from": "--label-from",
    "topologies": "--topology-for",
    "scheduler": "--scheduler",
    "conditions": "--where",
    "topology_file": "--topology",
    "min_segment": "--min-segment",
}


def _option_error_line(exc: OptionError) -> str:
    """``Error: --window 1e-09: a window must be at least 1 us`` (``Error: --threshold:
    unknown threshold ...`` when the error names no value): the one place where an API
    parameter's name becomes the option's."""
    option = OPTION_OF.get(exc.param, exc.param)
    if exc.value is None:
        return f"Error: {option}: {exc.problem}"
    return f"Error: {option} {exc.value}: {exc.problem}"


class _FiniteFloat(click.FloatRange):
    """click's FloatRange that also refuses NaN and the infinities (NaN passes its
    comparisons; an infinite window or duration is a traceback further on)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            name = param.opts[0] if param is not None else "value"
            raise OptionError(name, value, "must be a finite number")
        return number


class _Commands(click.Group):
    """The schedwake command group: whatever a command cannot use ends in one line on
    stderr and an exit code (2 for bad input and bad options), under the console script
    and click's CliRunner alike; never a traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            with _naming(STDOUT, "writing"):  # (a full disk: said now, not at exit)
                sys.stdout.flush()
        except OptionError as exc:
            _fail(_option_error_line(exc), 2)
        except TraceError as exc:
            # an option named by the API (--llc, --threshold) or a file
            _fail(f"Error: {exc}" if exc.path.startswith("--") else f"schedwake: {exc}", 2)
        except click.exceptions.Abort:
            _fail("schedwake: interrupted", 130)
        except click.exceptions.NoArgsIsHelpError as exc:  # `schedwake` alone: the help
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            _fail("Error: " + " ".join(exc.format_message().split()), exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            _fail("schedwake: interrupted", 130)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            # (reads and writes of files name theirs: _naming; what is left is the
            # standard output's, written by click.echo)
            named = exc.filename if exc.filename is not None else STDOUT
            _fail(f"schedwake: {named}: {exc.strerror or exc}", 2)
        except MemoryError:  # (a trace's reading names it: _naming)
            named = ", ".join(dict.fromkeys(_INPUTS)) or "the input"
            _fail(f"schedwake: {named}: out of memory while working on it", 2)
        if standalone_mode:
            sys.exit(code if isinstance(code, int) else 0)
        return code


#: What an OSError names when it names no file: every file read or written by name
#: goes through _naming, what is left is the standard output (click.echo).
STDOUT = "<stdout>"
#: The traces the command read (what a MemoryError after the reading names).
_INPUTS: list[str] = []


def _fail(line: str, code: int):
    click.echo(line, err=True)
    sys.exit(code)


input_format_option = click.option(
    "--input-format",
    type=click.Choice(FORMATS),
    default=None,
    help="Skip format sniffing and read the file as this format.",
)


threshold_option = click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a detector threshold (see docs/detectors.md); repeatable.",
)


def _remember_kallsyms(ctx, _param, value):
    ctx.meta["schedwake.kallsyms"] = value


def reader_options(f):
    """--reader / --jobs / --kallsyms of every command that reads traces in this process
    (--kallsyms is kept in the click context, where _load finds it)."""
    f = click.option(
        "--kallsyms",
        type=click.Path(dir_okay=False),
        default=None,
        expose_value=False,
        callback=_remember_kallsyms,
        help="kallsyms of the kernel a perf.data recorded (a copy of its /proc/kallsyms, "
        "plain or gzip/xz/bzip2/zstd), to name kernel functions such as workqueue work "
        "functions. Default: this machine's, when it runs the recorded kernel.",
    )(f)
    return decoder_options(f)


def decoder_options(f):
    """--reader / --jobs."""
    f = click.option(
        "--jobs",
        type=click.IntRange(min=1, max=MAX_JOBS),
        default=None,
        metavar="N",
        help="Threads decoding a trace.dat or perf.data (default: one per CPU; the "
        "schedwake reader only).",
    )(f)
    f = click.option(
        "--reader",
        type=click.Choice(READERS),
        default=DEFAULT_READER,
        show_default=True,
        help="Which reader decodes the file: schedwake's own (trace.dat, perf.data), "
        "libtracecmd (trace.dat; the reference, in a child process) or perf-script "
        "(perf.data through perf script text; the reference).",
    )(f)
    return f


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="schedwake")
def cli():
    """Find scheduler wake-up pathologies in kernel traces."""


@cli.command(short_help="Counts, CPUs, duration, clock and lost events of a trace.")
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
def info(trace, fmt, input_format, reader, jobs):
    """Per-event counts, CPUs, duration, clock and lost events of TRACE.

    With the kernel's counters beside it (TRACE.counters.json, written by record; a
    perf stat output TRACE.perf-stat.txt), also how far the trace agrees with them.

    \b
    Example:
        schedwake info trace.dat
        schedwake info trace.dat --format json
    """
    from .errors import TraceError
    from .report import info as info_report
    from .summary import info as trace_info
    from .summary import meta_summary
    from .summary import summary as trace_summary

    # every event is read: each is a proof of the task current on its CPU, which the
    # completeness check needs, and the kernel's counters beside the trace are compared
    # with it (their markers). A file whose events cannot be analysed (a record or a
    # format the model refuses) is still counted, and says why it was not checked.
    t = None
    try:
        t = _load(trace, None, input_format, reader, jobs)
        summary = trace_summary(t)
    except TraceError as exc:
        if trace == "-":  # (standard input is read once)
            raise
        if t is None:
            t = _load(trace, [], input_format, reader, jobs)
        summary = {**meta_summary(t.meta), "completeness": {"not_checked": exc.problem}}
    else:  # (a counters file beside the trace that cannot be read is an error of its own)
        summary = trace_info(t, summary)
    if fmt == "json":
        click.echo(info_report.to_json(summary))
    else:
        click.echo(info_report.text(summary), nl=False)


def topology_options(f):
    """--topology FILE / --llc CPULIST (repeatable) of every analysing command."""
    f = click.option(
        "--llc",
        "llc",
        multiple=True,
        metavar="CPULIST",
        help="CPUs of one LLC in kernel cpulist syntax (0-3,8-11); repeat once per LLC.",
    )(f)
    f = click.option(
        "--topology",
        "topology_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="Topology JSON (from `schedwake topology`). Default: TRACE.topology.json, "
        "else topology.json, beside the trace; else the LLCs its wake-ups show; else "
        "one LLC.",
    )(f)
    return f


@cli.command(short_help="Write a trace as Parquet tables or a Perfetto trace.")
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
            input_format, reader, jobs,
        )  # fmt: skip
        return
    from .report.parquet import convert as convert_to_parquet

    if Path(outdir).exists() and not Path(outdir).is_dir():
        raise OptionError("--output", outdir, "is a file: Parquet tables go to a directory")
    _INPUTS.append(trace)
    with (
        _progress(f"converting {Path(trace).name}") as progress,
        _naming(outdir, "writing", memory=False),
    ):
        written = convert_to_parquet(
            trace,
            outdir,
            events=names,
            input_format=input_format,
            progress=progress,
            kallsyms=click.get_current_context().meta.get("schedwake.kallsyms"),
            reader=reader,
            jobs=jobs,
        )
    # the reader's warnings, as metadata.json records them
    meta = json.loads((Path(outdir) / "metadata.json").read_text())
    _warn(meta["path"], meta.get("warnings"))
    click.echo(f"wrote {len(written)} tables to {outdir}")


def _convert_perfetto(
    trace, out, names, window_s, no_analysis, topology_file, llc, input_format, reader, jobs
) -> None:
    """``convert --to perfetto``: the trace and (unless --no-analysis) its analysis."""
    import math

    from .report import perfetto

    if Path(out).is_dir():
        raise OptionError("--output", out, "is a directory: a Perfetto trace is one file")
    if not (math.isfinite(window_s) and window_s >= 1e-6):
        raise OptionError(
            "--window", window_s, "a window must be a finite number of seconds >= 1e-06"
        )
    t = _load(trace, events=names, input_format=input_format, reader=reader, jobs=jobs)
    analysis = None
    with _progress(f"writing {Path(out).name}") as bar:
        if not no_analysis:
            from .analysis import analyze as run_analysis

            t.use_topology(topology_file, llc)
            analysis = run_analysis(t, {}, progress=bar)
        span = (t.meta.last_ts_ns or 0) - (t.meta.first_ts_ns or 0)
        window = None if no_analysis or span / 1e9 / window_s > 1e5 else window_s
        with _naming(out, "writing", memory=False):
            stats = perfetto.write(t, out, analysis, window)
    click.echo(
        f"wrote {out}: {stats['events']} events ({stats['compact_switches']} switches and "
        f"{stats['compact_wakings']} wakings compact), {stats['findings']} findings, "
        f"{stats['flows']} flows, {stats['counters']} counter tracks"
    )


def from_batch_options(f):
    """--from-batch OUT / --where COLUMN=VALUE of compare and gate."""
    f = click.option(
        "--where",
        multiple=True,
        metavar="COLUMN=VALUE",
        help="With --from-batch: only the traces whose column (a label) has this value "
        "(a number for a numeric column: clients=4); repeatable.",
    )(f)
    f = click.option(
        "--from-batch",
        "from_batch",
        type=click.Path(file_okay=False),
        default=None,
        metavar="OUT",
        help="Judge from the dataset `schedwake batch -o OUT` wrote: the globs match its "
        "traces' paths (a relative glob also from the batch's common directory), and no "
        "trace is read again.",
    )(f)
    return f


def _dataset(from_batch, where, topology_file, llc):
    """The batch dataset of --from-batch (filtered by --where), or None."""
    if from_batch is None:
        if where:
            raise TraceError("--where", "filters a batch dataset: give --from-batch OUT")
        return None
    if topology_file is not None or llc:
        raise TraceError(
            "--from-batch",
            "--topology/--llc do not apply: the batch was analysed with its topology "
            "(give them to schedwake batch)",
        )
    from .batch import BatchDataset

    return BatchDataset(from_batch).where(list(where))


@cli.command(short_help="Capture this machine's CPU map (SMT, LLC, NUMA) as JSON.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the JSON here instead of printing it.",
)
@click.option("--sysfs", default="/sys", show_default=True, hidden=True)
def topology(output, sysfs):
    """Capture this machine's CPU map (SMT, LLC, NUMA) from sysfs as JSON.

    \b
    Example:
        schedwake topology -o trace.topology.json   # beside trace.dat: used by analyze
    """
    from .topology import Topology

    text = Topology.capture(sysfs).to_json()
    if output:
        _write_text(output, text + "\n")
        click.echo(f"wrote {output}")
    else:
        click.echo(text)


@cli.command(short_help="Find wake-up pathologies in a trace, with their evidence.")
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
    topology_file,
    llc,
    thresholds,
    input_format,
    reader,
    jobs,
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
        ssh host cat /tmp/trace.dat | schedwake analyze -
    """
    from .analysis import analyze as run_analysis
    from .model import MODEL_EVENTS
    from .report import analyze as report

    th = _thresholds(thresholds)
    if explain_waits and pid_list is None:
        raise OptionError("--waits", None, "needs --pid: the tasks whose waits to explain")
    from .counters import read_beside

    # with the kernel's counters beside it every event is read: the referee needs the
    # markers and sched_stat_runtime, and the model's proofs of who ran are every event
    events = None if read_beside(trace) else list(MODEL_EVENTS)
    t = _load(trace, events=events, input_format=input_format, reader=reader, jobs=jobs)
    with _progress(f"analysing {Path(trace).name}") as bar:
        t.use_topology(topology_file, llc)
        if time_range is not None or cpu_list is not None:
            start, end = _time_range(time_range)
            _check_span(time_range, start, end, t)
            cpus = None if cpu_list is None else _cpus(cpu_list, t.meta.ncpus)
            t = t.sliced(start, end, cpus)
        if pid_list is not None:
            t.focus(_pid_list(pid_list))  # (the API refuses a pid the trace lacks)
        analysis = run_analysis(t, th, progress=bar, waits=explain_waits)
    if html_file:
        from .report import analysis_html

        with _progress(f"writing {Path(html_file).name}") as bar, _naming(html_file, "writing"):
            analysis_html.write(analysis, html_file, progress=bar)
        click.echo(f"schedwake: wrote {html_file}", err=True)
    if fmt == "json":
        click.echo(report.to_json(analysis))
    elif fmt == "markdown":
        click.echo(report.markdown(analysis), nl=False)
    else:
        click.echo(report.text(analysis), nl=False)


@cli.command(short_help="Per-task waits to run, as perf sched latency (or timehist -s).")
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
    from . import latency as lat
    from .model import MODEL_EVENTS
    from .report import latency as report

    sort = lat.parse_sort(sort_keys)
    pids = None if pid_list is None else _pid_list(pid_list)
    comms = _comm_names(comm_list)
    reading = "perf" if perf_compat else "schedwake"
    by = by or ("comm" if perf_compat else "pid")
    events = list(MODEL_EVENTS) + ["sched_stat_runtime"]
    t = _load(trace, events=events, input_format=input_format, reader=reader, jobs=jobs)
    with _progress(f"measuring {Path(trace).name}"):
        if time_range is not None:
            start, end = _time_range(time_range)
            _check_span(time_range, start, end, t)
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


#: The largest time --time may name, in seconds: its nanoseconds must fit the int64
#: timestamps of the tables (2^63 ns is 292 years).
MAX_SECONDS = 9e9


def _time_range(text: str | None) -> tuple[int | None, int | None]:
    """``--time START,END`` (seconds, either may be empty) as trace timestamps in ns."""
    if text is None:
        return None, None
    parts = text.split(",")
    if len(parts) != 2:
        raise OptionError("--time", text, "expected START,END in seconds (either may be empty)")
    bounds: list[int | None] = []
    for part in parts:
        if not part.strip():
            bounds.append(None)
            continue
        try:
            seconds = float(part)
        except ValueError:
            raise OptionError("--time", text, "expected START,END in seconds") from None
        if not math.isfinite(seconds) or abs(seconds) > MAX_SECONDS:
            raise OptionError(
                "--time",
                text,
                f"expected START,END in seconds, each finite and below {MAX_SECONDS:g}",
            )
        bounds.append(round(seconds * 1e9))
    start, end = bounds
    if start is not None and end is not None and start >= end:
        raise OptionError("--time", text, "START must come before END")
    return start, end


def _check_span(text: str | None, start: int | None, end: int | None, trace) -> None:
    """``--time`` refused when it lies wholly outside the trace's events."""
    first, last = trace.meta.first_ts_ns, trace.meta.last_ts_ns
    if text is None or first is None or last is None:
        return
    if (start is not None and start > last) or (end is not None and end < first):
        lo = "start" if start is None else f"{start / 1e9:.6f}"
        hi = "end" if end is None else f"{end / 1e9:.6f}"
        raise OptionError(
            "--time",
            text,
            f"no events from {lo} to {hi} s: the trace runs from {first / 1e9:.6f} to "
            f"{last / 1e9:.6f} s",
        )


def _pid_list(text: str) -> list[int]:
    """``--pid PIDS``: the pids, sorted, without repeats."""
    try:
        pids = sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        raise OptionError("--pid", text, "expected comma-separated pids") from None
    if not pids or min(pids) < 0:
        raise OptionError("--pid", text, "expected comma-separated pids (each >= 0)")
    if max(pids) > MAX_PID:
        raise OptionError("--pid", text, f"a pid is at most {MAX_PID} (the kernel's PID_MAX_LIMIT)")
    return pids


def _thresholds(items) -> dict[str, float]:
    """``--threshold NAME=VALUE`` options: known names, each value in its unit's range."""
    from .analysis import check_thresholds
    from .detect import parse_threshold_options

    return check_thresholds(parse_threshold_options(items))


def _cpus(text: str, ncpus: int) -> list[int]:
    """``--cpu CPULIST``: the CPUs, each one the trace has (checked before the list is
    expanded: ``0-99999999`` costs nothing)."""
    from .topology import parse_cpulist

    return parse_cpulist(text, "--cpu", ncpus)


@cli.command(short_help="Where perf record -g profiles spent their time; runs compared.")
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
    type=_FiniteFloat(min=0),
    default=0.5,
    show_default=True,
    metavar="PP",
    help="The smallest change starred, in percentage points.",
)
@click.option(
    "--alpha",
    type=_FiniteFloat(min=0, max=1, min_open=True, max_open=True),
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
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
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
    from .compare import parse_sides
    from .profile_compare import compare_profiles
    from .report import profile as report
    from .report import profile_compare as compared
    from .report import profile_html

    click.get_current_context().meta["schedwake.kallsyms"] = kallsyms_file
    if not traces and not side_specs:
        raise click.UsageError("give a profile (TRACE) or --side NAME=GLOB")
    sides = parse_sides(traces, side_specs, least=1)
    from .work import parse_work

    # refused before any reading; numbers only (a profile's work is not read beside it)
    labels = [label for label, _ in sides]
    work = (
        {k: float(v) for k, v in parse_work(work_specs, labels, sources=()).items()}
        if work_specs
        else None
    )
    filters = {
        "comm": _comm_names(comm_list),
        "pid": None if pid_list is None else _pid_list(pid_list),
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
        with _naming(html_path, "writing"):
            profile_html.write(cmp, html_path, top=top)
    if folded_path is not None:
        _write_text(folded_path, compared.folded(cmp))
    if fmt == "json":
        click.echo(compared.to_json(cmp, top, callers_top))
    elif fmt == "markdown":
        click.echo(compared.markdown(cmp, top), nl=False)
    elif one:
        click.echo(report.text(profiles[sides[0][0]][0], top), nl=False)
    else:
        click.echo(compared.text(cmp, top, callers_top), nl=False)


def _comm_names(comm_list: str | None) -> list[str] | None:
    if comm_list is None:
        return None
    comms = [c.strip() for c in comm_list.split(",") if c.strip()]
    if not comms:
        raise OptionError("--comm", comm_list, "expected comma-separated thread names")
    return comms


def _profile_of(path: str, kallsyms_file, event, filters: dict, cpu_list, time_range):
    """The :class:`Profile` of one run, its CPU and time filters checked against it."""
    from .profile import profile as run_profile

    t = _load(path)
    cpus = None if cpu_list is None else _cpus(cpu_list, t.meta.ncpus)
    span = None if time_range is None else _time_range(time_range)
    if span is not None:
        _check_span(time_range, *span, t)
    with _progress(f"profiling {Path(path).name}") as bar:
        return run_profile(
            t, event=event, kallsyms=kallsyms_file, cpu=cpus, time=span, progress=bar, **filters
        )


@cli.command(short_help="Compare traces before/after in the mmtests layout.")
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
    type=_FiniteFloat(min=0, min_open=True),
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
    type=_FiniteFloat(0, 1, min_open=True, max_open=True),
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
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
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
    from .compare import compare as run_compare
    from .compare import parse_sides
    from .model import MODEL_EVENTS

    th = _thresholds(thresholds)
    if mmtests_dir is not None:
        given = {"TRACES": traces, "--from-batch": from_batch, "--work": work_specs}
        given["--html"] = html_file
        for name, value in given.items():
            if value:
                raise TraceError(name, "does not apply with --mmtests (the tree gives the traces)")
        from .mmtests_tree import compare_tree
        from .report import mmtests_tree as tree_report

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
            load=lambda p: _load(str(p), events, input_format, reader, jobs),
        )
        if fmt == "json":
            click.echo(tree_report.to_json(tree))
        else:
            render = tree_report.markdown if fmt == "markdown" else tree_report.text
            click.echo(render(tree, per_cpu=per_cpu, full=full), nl=False)
        return
    dataset = _dataset(from_batch, where, topology_file, llc)
    if dataset is not None:
        spec = parse_sides(traces, side_specs, labels, expand=dataset.expand)
        sides = {label: [dataset.load(p) for p in paths] for label, paths in spec}
        topology_file, llc = None, ()
    else:
        spec = parse_sides(traces, side_specs, labels)
        events = list(MODEL_EVENTS)
        sides = {
            label: [_load(p, events, input_format, reader, jobs) for p in paths]
            for label, paths in spec
        }
    from .work import parse_work

    work = parse_work(work_specs, [label for label, _ in spec]) if work_specs else None
    with _progress("measuring the traces") as bar:
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
    from .report import compare as compare_report

    if fmt == "json":
        click.echo(compare_report.to_json(result))
    elif fmt == "markdown":
        click.echo(compare_report.markdown(result, per_cpu=per_cpu, full=full), nl=False)
    else:
        click.echo(compare_report.text(result, per_cpu=per_cpu, full=full), nl=False)
    if html_file:
        from .report import html

        with _progress(f"writing {Path(html_file).name}") as bar, _naming(html_file, "writing"):
            html.write(result, html_file, progress=bar)
        click.echo(f"schedwake: wrote {html_file}", err=True)


class _TracesOption(click.Option):
    """An option that takes every value up to the next option: ``--baseline a.dat b.dat``
    (what a shell glob expands to), also repeatable. Its value is a flat tuple."""

    def add_to_parser(self, parser, ctx):
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            opt = parser._long_opt.get(name) or parser._short_opt.get(name)
            if opt is None:
                continue
            original = opt.process

            def process(value, state, original=original):
                values = [value]
                while state.rargs and not state.rargs[0].startswith("-"):
                    values.append(state.rargs.pop(0))
                original(tuple(values), state)

            opt.process = process

    def type_cast_value(self, ctx, value):
        return tuple(
            str(v)
            for group in value or ()
            for v in (group if isinstance(group, (list, tuple)) else (group,))
        )


@cli.command(short_help="CI gate: judge candidate traces against baseline ones.")
@click.option(
    "--baseline",
    cls=_TracesOption,
    multiple=True,
    metavar="TRACE...",
    help="Baseline trace(s): paths or quoted globs, one side (its iterations).",
)
@click.option(
    "--candidate",
    cls=_TracesOption,
    multiple=True,
    metavar="TRACE...",
    help="Candidate trace(s) to judge against the baseline.",
)
@click.option(
    "--rules",
    "rules_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Rules TOML (default: the built-in rules; see --print-default-rules).",
)
@click.option(
    "--print-default-rules",
    is_flag=True,
    help="Print the default rules as a starting rules file and exit.",
)
@click.option(
    "--junit",
    "junit_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write JUnit XML here (one test case per rule).",
)
@click.option(
    "--markdown",
    "markdown_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write a Markdown report here (pull-request comment, job summary).",
)
@click.option(
    "--json",
    "json_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the verdict as JSON here.",
)
@click.option(
    "--work",
    "work_specs",
    multiple=True,
    metavar="N|bench|cpu|SIDE=...",
    help="The runs' work, for rules on counts per unit of work (context_switches_per_op): "
    "a number, bench, cpu, or baseline=... / candidate=...; repeatable.",
)
@click.option(
    "--samples",
    type=click.Choice(["auto", "per-trace", "runs", "per-window", "window"]),
    default=None,
    help="Override the rules' [gate] samples: per-window (window) judges windows of the "
    "runs as batch means (one baseline run then can be judged: this run differed, not a "
    "rerun would).",
)
@click.option(
    "--series",
    "series_dirs",
    cls=_TracesOption,
    multiple=True,
    metavar="BUILD_DIR...",
    help="Judge the newest of these builds (in order) against the series before it "
    "(docs/series.md): fail when it starts a regression on a rule's metric.",
)
@from_batch_options
@topology_options
@threshold_option
@input_format_option
@reader_options
def gate(
    baseline,
    candidate,
    series_dirs,
    rules_file,
    print_default_rules,
    junit_file,
    markdown_file,
    json_file,
    work_specs,
    samples,
    from_batch,
    where,
    topology_file,
    llc,
    thresholds,
    input_format,
    reader,
    jobs,
):
    """Judge --candidate traces against --baseline traces under rules, for CI.

    Exit 0: every rule holds. Exit 1: a rule is broken (the candidate is worse than
    allowed, significantly). Exit 2: the input cannot be judged (unreadable, empty or
    too short a trace, lost events, events a rule needs missing): it fails closed.

    \b
    Example:
        schedwake gate --baseline base/*.dat --candidate new/*.dat --junit gate.xml
        schedwake gate --print-default-rules > gate.toml
        schedwake gate --series builds/v1 builds/v2 builds/v3 builds/new
    """
    from .gate import DEFAULT_RULES_TOML
    from .gate import gate as run_gate
    from .model import MODEL_EVENTS
    from .work import parse_work

    if print_default_rules:
        click.echo(DEFAULT_RULES_TOML, nl=False)
        return
    th = _thresholds(thresholds)
    if series_dirs:
        given = {"--baseline": baseline, "--candidate": candidate, "--from-batch": from_batch}
        given |= {"--junit": junit_file, "--markdown": markdown_file}
        return _gate_series(series_dirs, rules_file, json_file, th, topology_file, llc, given)
    dataset = _dataset(from_batch, where, topology_file, llc)
    # missing sides are judged like unreadable ones: exit 2 with reports
    with _progress("measuring the traces") as bar:
        result = run_gate(
            list(baseline),
            list(candidate),
            rules_file,
            topology_file=topology_file,
            llc=llc,
            thresholds=th,
            loader=dataset.load
            if dataset
            else lambda p: _load(p, list(MODEL_EVENTS), input_format, reader, jobs),
            expand=dataset.expand if dataset else None,
            progress=bar,
            kallsyms=click.get_current_context().meta.get("schedwake.kallsyms"),
            work=parse_work(work_specs, ["baseline", "candidate"]) if work_specs else None,
            samples=samples,
        )
    from .report import gate as gate_report

    click.echo(gate_report.text(result), nl=False)
    for path, render in (
        (junit_file, gate_report.junit),
        (markdown_file, gate_report.markdown),
        (json_file, gate_report.to_json),
    ):
        if path:  # missing parent directories are made, as pytest --junitxml does
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            _write_text(path, render(result))
    if result.exit_code == 2:  # the same one-line reason as every command's bad input
        click.echo(f"schedwake gate: {result.headline()}", err=True)
    if result.exit_code:
        sys.exit(result.exit_code)


def _gate_series(builds, rules_file, json_file, th, topology_file, llc, given: dict):
    """``gate --series``: the newest build judged against the series before it
    (``given``: the options of the two-sided gate, refused beside it)."""
    from .report import series as series_report
    from .series import gate_series

    mixed = [option for option, value in given.items() if value]
    if mixed:
        raise TraceError(
            mixed[0], "does not apply to gate --series (a series judges its newest build; --json)"
        )

    with _progress("measuring the builds") as bar:
        result = gate_series(
            list(builds),
            rules_file,
            thresholds=th,
            topology_file=topology_file,
            llc=llc,
            progress=bar,
        )
    click.echo(series_report.gate_text(result), nl=False)
    if json_file:
        Path(json_file).parent.mkdir(parents=True, exist_ok=True)
        _write_text(json_file, series_report.gate_json(result))
    if result.exit_code == 2:
        click.echo(f"schedwake gate: {result.headline()}", err=True)
    if result.exit_code:
        sys.exit(result.exit_code)


@cli.command(short_help="Which build of a series changed each metric (change points).")
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
    type=_FiniteFloat(0, 1, min_open=True, max_open=True),
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
    from .report import series as series_report
    from .series import series as run_series

    with _progress("measuring the builds") as bar:
        result = run_series(
            list(builds),
            list(metric_names) or None,
            alpha=alpha,
            min_segment=min_segment,
            thresholds=_thresholds(thresholds),
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
        _write_text(output, doc if doc.endswith("\n") else doc + "\n")
        click.echo(f"schedwake: wrote {output}", err=True)
    else:
        click.echo(doc, nl=not doc.endswith("\n"))


@cli.command(short_help="Analyse many traces on Dask into a Parquet dataset.")
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
    type=_FiniteFloat(min=0, min_open=True),
    metavar="SECONDS",
    help="Also store per-window samples of this length, besides each trace's default "
    "(for compare/gate --from-batch with --window); repeatable.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="A running Dask scheduler (tcp://HOST:PORT) whose workers see the traces at the "
    "same absolute paths. Default: a local cluster on this machine.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=MAX_JOBS),
    default=None,
    metavar="N",
    help="Worker processes of the local cluster (default: one per CPU).",
)
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

    from .batch import batch as run_batch

    if serial and (scheduler or workers):
        raise click.UsageError("--serial runs without Dask: leave out --scheduler and --workers")
    if scheduler and workers:
        raise click.UsageError("--workers sizes the local cluster: not with --scheduler")
    logging.getLogger("distributed").setLevel(logging.ERROR)  # quiet CI logs
    th = _thresholds(thresholds)
    _INPUTS.extend(str(p) for p in inputs)
    with _progress("analysing traces") as bar, _naming(out, "writing", memory=False):
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
            progress=(lambda done, total: bar(done / max(total, 1))) if bar else None,
        )
    for _, error in result.errors:
        click.echo(f"schedwake: {error}", err=True)
    click.echo(result.summary())
    if result.exit_code:
        sys.exit(result.exit_code)


@cli.command(
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
    type=_FiniteFloat(min=0, min_open=True),
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
    from .record import record as do_record

    def log(msg):
        if not quiet or msg.startswith("WARNING"):
            click.echo(f"schedwake record: {msg}", err=True)

    with _naming(output, "writing", memory=False):
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
    click.echo(result.summary())
    if result.interrupted:
        sys.exit(130)


def main(argv=None):
    """Entry point of the ``schedwake`` console script."""
    cli.main(args=argv, prog_name="schedwake")


if __name__ == "__main__":
    main()
