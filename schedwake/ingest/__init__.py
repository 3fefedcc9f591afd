"""Ingest: turn a trace file of any supported format into the canonical tables.

:func:`read` sniffs the format (or takes ``input_format``) and hands the file to one
reader module; every reader returns a :class:`RawTrace` whose tables follow
:mod:`schedwake.schema`. Nothing here knows about the model or the detectors.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import OptionError, TraceError
from .raw import Progress, RawTrace

TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"

#: Names accepted by ``input_format`` / ``--input-format``.
FORMATS = ("trace.dat", "ftrace-text", "trace-cmd-report", "perf-script", "perf.data")

#: Readers (``reader`` / ``--reader``): schedwake's own decoder of trace.dat and
#: perf.data, in this process; libtracecmd for trace.dat (the conformance oracle), in a
#: child process; ``perf script`` text for perf.data (its conformance oracle).
READERS = ("schedwake", "libtracecmd", "perf-script")
DEFAULT_READER = "schedwake"


def check_path(path) -> Path:
    """The path as a Path, or a TraceError that says why it cannot be read."""
    p = Path(path)
    if not p.exists():
        raise TraceError(p, "no such file")
    if p.is_dir():
        if is_perf_directory(p):
            return p
        raise TraceError(p, "is a directory, not a trace file")
    if not os.access(p, os.R_OK):
        raise TraceError(p, "permission denied")
    if p.stat().st_size == 0:
        raise TraceError(p, "empty file")
    return p


def is_perf_directory(path: Path) -> bool:
    """Whether ``path`` is a directory ``perf record --threads`` wrote (a perf.data
    header file ``data`` and one ``data.N`` of records per thread)."""
    head = path / "data"
    try:
        with open(head, "rb") as f:
            return f.read(8) == b"PERFILE2"
    except OSError:
        return False


def sniff(path: Path) -> str:
    """The format of ``path``, from its first bytes."""
    if path.is_dir():
        return "perf.data"  # (check_path lets only perf's directories through)
    with open(path, "rb") as f:
        head = f.read(64)
    if head.startswith(TRACE_DAT_MAGIC[:3]) or TRACE_DAT_MAGIC.startswith(head):
        return "trace.dat"  # a cut-off magic is a truncated trace.dat, said so by its reader
    if head.startswith(b"PERFILE2"):
        return "perf.data"
    from . import text  # the text readers sniff their own variants (also compressed)

    fmt = text.sniff(path)
    if fmt is None:
        raise TraceError(
            path,
            "not a trace: neither trace.dat, perf.data, ftrace text, trace-cmd report "
            "text nor perf script text (plain or gzip/xz/bzip2/zstd)",
        )
    return fmt


def read(
    path,
    events=None,
    input_format: str | None = None,
    progress: Progress | None = None,
    reader: str | None = None,
    jobs: int | None = None,
    kallsyms=None,
) -> RawTrace:
    """Read ``path`` into canonical tables.

    ``events``: event names to read (``"sched_waking"`` or ``"sched:sched_waking"``);
    None reads every event. Counts of all events are in ``meta.event_counts``
    either way. ``reader``: the trace.dat or perf.data reader (:data:`READERS`; None is
    ``"schedwake"``); ``jobs``: decoding threads of schedwake's reader (None: one per
    CPU; the text readers and libtracecmd ignore it); ``kallsyms``: a kallsyms file of
    the recorded kernel, for a perf.data (whose own has none). Raises
    :class:`TraceError` for anything that is not a usable trace, OptionError (a
    ValueError) naming the parameter for an ``events`` that is not a list of names, or a
    ``reader``, ``jobs`` or ``input_format`` that does not exist.
    """
    reader = check_reader_options(reader, jobs)
    if events is not None:
        names = None if isinstance(events, (str, bytes)) else _names(events)
        if names is None or not all(isinstance(e, str) for e in names):
            raise OptionError(
                "events", repr(events), "must be a list of event names (None: every event)"
            )
        events = names
    if input_format is not None and input_format not in FORMATS:
        raise OptionError(
            "input_format", repr(input_format), f"unknown format (known: {', '.join(FORMATS)})"
        )
    p = check_path(path)
    fmt = input_format or sniff(p)
    check_reader_format(p, fmt, reader)
    wanted = None if events is None else [e.split(":")[-1] for e in events]
    if fmt == "trace.dat":
        if reader == "libtracecmd":
            from . import libtracecmd

            return libtracecmd.read(p, wanted, progress)
        from . import tracedat

        return tracedat.read(p, wanted, progress, jobs)
    if fmt == "perf.data" and reader == "schedwake":
        from . import perfdata

        return perfdata.read(p, wanted, progress, jobs, kallsyms)
    from . import text

    return text.read(p, fmt, wanted, progress)


def _names(items) -> list | None:
    """``items`` as a list, or None when it is not a collection (a number, None)."""
    return list(items) if isinstance(items, Iterable) else None


def check_reader_options(reader: str | None, jobs: int | None) -> str:
    """The reader's name (None means the default), or OptionError (a ValueError) naming
    ``reader`` when it is not one of :data:`READERS`, ``jobs`` when it is not None or an
    int >= 1."""
    reader = DEFAULT_READER if reader is None else reader
    if reader not in READERS:
        raise OptionError("reader", repr(reader), f"unknown reader (choices: {', '.join(READERS)})")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise OptionError("jobs", repr(jobs), "must be None or an integer >= 1")
    return reader


def check_reader_format(path: Path, fmt: str, reader: str) -> None:
    """TraceError when ``reader`` cannot read files of format ``fmt``: libtracecmd
    reads trace.dat only, perf-script perf.data only."""
    if reader == "libtracecmd" and fmt != "trace.dat":
        raise TraceError(
            path, f"the libtracecmd reader only reads trace.dat files, and this is {fmt}"
        )
    if reader == "perf-script" and fmt != "perf.data":
        raise TraceError(
            path, f"the perf-script reader only reads perf.data files, and this is {fmt}"
        )


#: Formats that :func:`iter_batches` reads batch by batch.
STREAMED_FORMATS = ("trace.dat", "perf.data", "ftrace-text", "trace-cmd-report", "perf-script")


def iter_batches(
    path,
    events=None,
    input_format: str | None = None,
    progress: Progress | None = None,
    kallsyms=None,
):
    """Read ``path`` as a sequence of :class:`RawTrace` batches, in memory that does not
    grow with the file (``schedwake convert`` writes them as they come).

    trace.dat and perf.data batches are in time order across batches; text batches keep
    the file's order (sorted within a batch). ``meta`` counts are cumulative, so the
    last batch's describe the whole file.
    """
    p = check_path(path)
    fmt = input_format or sniff(p)
    if fmt == "trace.dat":
        from . import tracedat

        yield from tracedat.iter_batches(p, events, progress)
    elif fmt == "perf.data":
        from . import perfdata

        yield from perfdata.iter_batches(p, events, progress, kallsyms=kallsyms)
    else:
        from . import text

        yield from text.iter_batches(p, fmt, events, progress)
