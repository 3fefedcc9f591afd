"""What every command shares: reading a trace (a file or the standard input, its
file named in every error), progress on a terminal, and the command group whose
errors end in one line on stderr and an exit code, never a traceback."""

from __future__ import annotations

import dataclasses
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import click

# what the command line's options need, and nothing heavier: pandas, pyarrow and the
# modules that use them are imported by the command that runs (``--version``, ``--help``
# and an option error answer without them)
from ..errors import OptionError, TraceError


@contextmanager
def progress_bar(label: str):
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
def naming(path, doing: str, memory: bool = True):
    """Errors that name no file while ``path`` is read or written (``doing``: "reading",
    "writing") become a :class:`TraceError` naming it: ``ENOSPC`` and ``EFBIG`` on a
    write (``--folded /dev/full``, ``ulimit -f``), a ``MemoryError`` unless ``memory`` is
    False (an output made while its traces are read: their names say it, INPUTS)
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


def write_text(path, text: str) -> None:
    """``text`` written to the output file ``path`` (UTF-8); an error names it."""
    with naming(path, "writing"):
        Path(path).write_text(text, encoding="utf-8")


def load(
    path: str,
    events=None,
    input_format: str | None = None,
    reader: str | None = None,
    jobs: int | None = None,
    kallsyms: str | None = None,
):
    if path == "-":
        INPUTS.append(STDIN)
        return _load_stdin(events, input_format, reader, jobs, kallsyms)
    from ..trace import load

    INPUTS.append(path)
    with progress_bar(f"reading {Path(path).name}") as progress, naming(path, "reading"):
        trace = load(
            path,
            events=events,
            input_format=input_format,
            progress=progress,
            reader=reader,
            jobs=jobs,
            kallsyms=kallsyms,
        )
    warn(trace.meta.path, trace.meta.warnings)
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


def _load_stdin(events, input_format, reader, jobs, kallsyms):
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
            trace = load(str(spool), events, input_format, reader, jobs, kallsyms)
        except TraceError as exc:
            raise TraceError(STDIN, exc.problem.replace(str(spool), STDIN)) from None
    trace.meta = dataclasses.replace(trace.meta, path=STDIN)
    return trace


def warn(path, warnings) -> None:
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


def no_huge_pages() -> None:
    """Turn transparent huge pages off for this process (Linux; elsewhere, or where the
    kernel refuses, nothing). The model's tables are NumPy arrays of millions of rows,
    allocated and freed again and again: under THP ``always`` each fresh one is faulted
    in and zeroed 2 MiB at a time, a quarter of ``analyze``'s CPU time on a 5 M-event
    trace (docs/performance.md); with 4 KiB pages only what is written is."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0)
    except (OSError, AttributeError):  # (no libc symbol: a static or foreign runtime)
        pass


_PR_SET_THP_DISABLE = 41  # (linux/prctl.h)


def keep_freed_memory() -> bool:
    """Have glibc's malloc keep what the analysis frees for its next arrays (elsewhere,
    or where glibc refuses, nothing; returns whether it took). By default every block
    above the mmap threshold (it adapts up to 32 MiB) gets pages of its own, given back
    when freed, and the heap's free top is given back above 128 KiB: the model's arrays
    of millions of rows, made and dropped one after another, are then faulted in anew
    each time (on a 5.5 M-event trace ~300 k of ~720 k page faults, 0.5 s of system
    time; docs/performance.md). Served from the heap and kept up to 2 GiB they reuse
    pages already mapped; peak RSS grows ~5%. Called by the command's process only:
    a long-lived Dask worker should give memory back."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # (no glibc: musl has no mallopt)
        return False
    # (the value is a C int: 2 GiB - 1 is the most it takes)
    return bool(mallopt(_M_MMAP_THRESHOLD, _KEEP_BYTES) and mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES))


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # (malloc.h)
_KEEP_BYTES = (1 << 31) - 1


def option_error_line(exc: OptionError) -> str:
    """``Error: --window 1e-09: a window must be at least 1 us`` (``Error: --threshold:
    unknown threshold ...`` when the error names no value): the one place where an API
    parameter's name becomes the option's."""
    option = OPTION_OF.get(exc.param, exc.param)
    if exc.value is None:
        return f"Error: {option}: {exc.problem}"
    return f"Error: {option} {exc.value}: {exc.problem}"


class Commands(click.Group):
    """The schedwake command group: whatever a command cannot use ends in one line on
    stderr and an exit code (2 for bad input and bad options), under the console script
    and click's CliRunner alike; never a traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            with naming(STDOUT, "writing"):  # (a full disk: said now, not at exit)
                sys.stdout.flush()
        except OptionError as exc:
            _fail(option_error_line(exc), 2)
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
            # (reads and writes of files name theirs: naming; what is left is the
            # standard output's, written by click.echo)
            named = exc.filename if exc.filename is not None else STDOUT
            _fail(f"schedwake: {named}: {exc.strerror or exc}", 2)
        except MemoryError:  # (a trace's reading names it: naming)
            named = ", ".join(dict.fromkeys(INPUTS)) or "the input"
            _fail(f"schedwake: {named}: out of memory while working on it", 2)
        if standalone_mode:
            sys.exit(code if isinstance(code, int) else 0)
        return code


#: What an OSError names when it names no file: every file read or written by name
#: goes through naming, what is left is the standard output (click.echo).
STDOUT = "<stdout>"


#: The traces the command read (what a MemoryError after the reading names).
INPUTS: list[str] = []


def _fail(line: str, code: int):
    click.echo(line, err=True)
    sys.exit(code)
