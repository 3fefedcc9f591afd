"""The options several commands share (the reader, the topology, thresholds, a batch
dataset, traces) and the parsing of their values (time ranges, pids, CPUs), each
bad value one line naming its option."""

from __future__ import annotations

import math

import click

from ..errors import OptionError, TraceError
from ..ingest import DEFAULT_READER, FORMATS, MAX_JOBS, MAX_PID, READERS


class FiniteFloat(click.FloatRange):
    """click's FloatRange that also refuses NaN and the infinities (NaN passes its
    comparisons; an infinite window or duration is a traceback further on)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            name = param.opts[0] if param is not None else "value"
            raise OptionError(name, value, "must be a finite number")
        return number


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


def reader_options(f):
    """--reader / --jobs / --kallsyms of every command that reads traces in this process
    (the command passes ``kallsyms`` on to :func:`.common.load`)."""
    f = click.option(
        "--kallsyms",
        type=click.Path(dir_okay=False),
        default=None,
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


def dask_options(used_with: str = "", traces: str = "the traces"):
    """--scheduler ADDRESS / --workers N of the commands that run on Dask; ``used_with``:
    the option they go with ("--partitions"), said in their help."""
    first = f"With {used_with}: a" if used_with else "A"
    lead = f"With {used_with}: w" if used_with else "W"

    def add(f):
        f = click.option(
            "--workers",
            type=click.IntRange(min=1, max=MAX_JOBS),
            default=None,
            metavar="N",
            help=f"{lead}orker processes of the local cluster (default: one per CPU).",
        )(f)
        return click.option(
            "--scheduler",
            metavar="ADDRESS",
            default=None,
            help=f"{first} running Dask scheduler (tcp://HOST:PORT) whose workers see "
            f"{traces} at the same absolute paths. Default: a local cluster on this machine.",
        )(f)

    return add


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


def open_dataset(from_batch, where, topology_file, llc):
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
    from ..batch import BatchDataset

    return BatchDataset(from_batch).where(list(where))


#: The largest time --time may name, in seconds: its nanoseconds must fit the int64
#: timestamps of the tables (2^63 ns is 292 years).
MAX_SECONDS = 9e9


def parse_time_range(text: str | None) -> tuple[int | None, int | None]:
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


def check_span(text: str | None, start: int | None, end: int | None, trace) -> None:
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


def parse_pids(text: str) -> list[int]:
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


def parse_thresholds(items) -> dict[str, float]:
    """``--threshold NAME=VALUE`` options: known names, each value in its unit's range."""
    from ..analysis import check_thresholds
    from ..detect import parse_threshold_options

    return check_thresholds(parse_threshold_options(items))


def parse_cpus(text: str, ncpus: int) -> list[int]:
    """``--cpu CPULIST``: the CPUs, each one the trace has (checked before the list is
    expanded: ``0-99999999`` costs nothing)."""
    from ..topology import parse_cpulist

    return parse_cpulist(text, "--cpu", ncpus)


class TracesOption(click.Option):
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


def parse_comms(comm_list: str | None) -> list[str] | None:
    if comm_list is None:
        return None
    comms = [c.strip() for c in comm_list.split(",") if c.strip()]
    if not comms:
        raise OptionError("--comm", comm_list, "expected comma-separated thread names")
    return comms


#: --format text|markdown|json, the output of the reading commands
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
