"""Ingest: turn a trace file of any supported format into the canonical tables.

:data:`INPUT_FORMATS` is the one registry of input formats: per format its name, how
its files are told apart (:func:`sniff`), how it is read whole (:func:`read`) and batch
by batch (:func:`iter_batches`), which readers may read it and its file suffixes (what
``batch`` looks for in a directory; the table of docs/api.md, "Input formats", is
checked against it). Every reader returns a :class:`RawTrace` whose tables follow
:mod:`schedwake.schema`. Nothing here knows about the model or the detectors.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..errors import OptionError, TraceError
from .raw import Progress, RawTrace

TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"

#: Readers (``reader`` / ``--reader``): schedwake's own decoder of trace.dat and
#: perf.data, in this process; libtracecmd for trace.dat (the conformance oracle), in a
#: child process; ``perf script`` text for perf.data (its conformance oracle).
READERS = ("schedwake", "libtracecmd", "perf-script")
DEFAULT_READER = "schedwake"

#: The most decoding threads ``load(jobs=...)`` may ask for.
MAX_JOBS = 1024

#: The largest pid there is: the kernel's PID_MAX_LIMIT (pid_max is at most this).
MAX_PID = 4194304

#: Suffixes of a text trace compressed with gzip, xz, zstd or bzip2 (the text readers
#: decompress them).
COMPRESSED_SUFFIXES = (".gz", ".xz", ".zst", ".bz2")


@dataclass(frozen=True)
class ReadOptions:
    """How a trace file is read: what :func:`schedwake.load`, :func:`read`,
    :func:`iter_batches` and :func:`schedwake.convert.convert` take, and what they
    pass a format's reader. Checked here, once, when made: an OptionError (a ValueError)
    names the parameter that is wrong.

    ``events``: names of the events to build tables for (``"sched_waking"`` or
    ``"sched:sched_waking"``; kept as the plain names); None: every event.
    ``input_format``: one of :data:`FORMATS`; None: sniffed from the file.
    ``progress``: a callable that gets the fraction done, now and then.
    ``reader``: one of :data:`READERS` (None: :data:`DEFAULT_READER`); the format of the
    file must be one it reads (:func:`check_reader_format`, when the file is known).
    ``jobs``: decoding threads of schedwake's reader, an int from 1 to :data:`MAX_JOBS`
    (None: one per CPU); other readers ignore it.
    ``kallsyms``: a kallsyms file of the kernel a perf.data recorded, plain or
    compressed (None: this machine's when it runs that kernel).
    ``time_range``: ``(t0, t1)`` in the trace's nanoseconds (``t1`` None: to the end):
    read only the events with ``t0 <= ts < t1``, and of the file only what can hold
    them (a part of a trace analysed in time partitions, :func:`cut_times`); formats of
    :data:`PARTITIONED_FORMATS` and schedwake's reader only.
    """

    events: list[str] | None = None
    input_format: str | None = None
    progress: Progress | None = None
    reader: str | None = None
    jobs: int | None = None
    kallsyms: str | Path | None = None
    time_range: tuple[int, int | None] | None = None

    def __post_init__(self) -> None:
        if self.time_range is not None:
            object.__setattr__(self, "time_range", _checked_time_range(self.time_range))
        reader = DEFAULT_READER if self.reader is None else self.reader
        if reader not in READERS:
            raise OptionError(
                "reader", repr(reader), f"unknown reader (choices: {', '.join(READERS)})"
            )
        object.__setattr__(self, "reader", reader)
        jobs = self.jobs
        if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
            raise OptionError("jobs", repr(jobs), "must be None or an integer >= 1")
        if jobs is not None and jobs > MAX_JOBS:  # the decoder takes a C long
            raise OptionError("jobs", jobs, f"at most {MAX_JOBS} decoding threads")
        if self.events is not None:
            events = self.events
            names = None if isinstance(events, (str, bytes)) else _names(events)
            if names is None or not all(isinstance(e, str) for e in names):
                raise OptionError(
                    "events", repr(events), "must be a list of event names (None: every event)"
                )
            object.__setattr__(self, "events", [e.split(":")[-1] for e in names])
        if self.input_format is not None and self.input_format not in FORMATS:
            raise OptionError(
                "input_format",
                repr(self.input_format),
                f"unknown format (known: {', '.join(FORMATS)})",
            )


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _checked_time_range(r: object) -> tuple[int, int | None]:
    """``r`` as ``(t0, t1)``: two int nanoseconds with ``t0 < t1``, or ``t1`` None (to
    the end); an OptionError otherwise (a range that cannot hold an event is a mistake,
    not an empty part)."""
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise OptionError(
            "time_range", repr(r), "must be (t0, t1): nanoseconds, t1 None for the end"
        )
    t0, t1 = r
    if not _is_int(t0) or not (t1 is None or _is_int(t1)):
        raise OptionError("time_range", repr(r), "t0 must be an int and t1 an int or None")
    if not -(2**63) <= t0 < 2**63 or (t1 is not None and not -(2**63) <= t1 < 2**63):
        raise OptionError("time_range", repr(r), "times are int64 nanoseconds")
    if t1 is not None and t0 >= t1:
        raise OptionError("time_range", repr(r), "t0 must be before t1 (the range is [t0, t1))")
    return (t0, t1)


@dataclass(frozen=True)
class InputFormat:
    """One input format (an entry of :data:`INPUT_FORMATS`)."""

    #: Its name: ``input_format`` / ``--input-format``, ``trace.meta.format``.
    name: str
    #: What it is, in one line of Markdown (docs/api.md, "Input formats").
    doc: str
    #: Reads a whole file of this format.
    read: Callable[[Path, ReadOptions], RawTrace]
    #: Reads a file batch by batch in bounded memory (``schedwake convert``); None: only whole.
    iter_batches: Callable[[Path, ReadOptions], Iterator[RawTrace]] | None = None
    #: Whether the first bytes of a file (up to 64) are this format's; None for the text
    #: formats, which :func:`schedwake.ingest.text.sniff` tells apart by their lines
    #: after every format with magic bytes was tried.
    magic: Callable[[bytes], bool] | None = None
    #: The suffixes of its files (what ``batch`` looks for in a directory).
    suffixes: tuple[str, ...] = ()
    #: Whether it is also read compressed (:data:`COMPRESSED_SUFFIXES`).
    compressed: bool = False
    #: Whether a directory (``perf record --threads``; ``schedwake convert``'s) can be of
    #: this format.
    directory: bool = False
    #: The readers that read it (:data:`READERS`).
    readers: tuple[str, ...] = (DEFAULT_READER,)


# The readers are imported when a file of their format is read, not with the package.


def _read_tracedat(path: Path, o: ReadOptions) -> RawTrace:
    if o.reader == "libtracecmd":
        from . import libtracecmd

        return libtracecmd.read(path, o.events, o.progress)
    from . import tracedat

    return tracedat.read(path, o.events, o.progress, o.jobs, o.time_range)


def _tracedat_batches(path: Path, o: ReadOptions) -> Iterator[RawTrace]:
    from . import tracedat

    return tracedat.iter_batches(path, o.events, o.progress)


def _read_perfdata(path: Path, o: ReadOptions) -> RawTrace:
    if o.reader == "perf-script":  # perf script's text of the file, read as such
        from . import text

        return text.read(path, "perf.data", o.events, o.progress, o.kallsyms)
    from . import perfdata

    return perfdata.read(path, o.events, o.progress, o.jobs, o.kallsyms, o.time_range)


def _perfdata_batches(path: Path, o: ReadOptions) -> Iterator[RawTrace]:
    from . import perfdata

    return perfdata.iter_batches(path, o.events, o.progress, kallsyms=o.kallsyms)


def _read_parquet(path: Path, o: ReadOptions) -> RawTrace:
    from . import parquet

    return parquet.read(path, o.events, o.time_range)


def _read_perfetto(path: Path, o: ReadOptions) -> RawTrace:
    from . import perfetto

    return perfetto.read(path, o.events, o.progress)


def _perfetto_magic(head: bytes) -> bool:
    from .perfetto import magic

    return magic(head)


def _text_format(name: str, doc: str, suffixes: tuple[str, ...]) -> InputFormat:
    """A text format: read by :mod:`schedwake.ingest.text`, also compressed."""

    def read(path: Path, o: ReadOptions) -> RawTrace:
        from . import text

        return text.read(path, name, o.events, o.progress)

    def batches(path: Path, o: ReadOptions) -> Iterator[RawTrace]:
        from . import text

        return text.iter_batches(path, name, o.events, o.progress)

    return InputFormat(name, doc, read, batches, suffixes=suffixes, compressed=True)


#: Every input format by name, in the order ``--input-format`` lists them.
INPUT_FORMATS: dict[str, InputFormat] = {
    f.name: f
    for f in (
        InputFormat(
            "trace.dat",
            "trace-cmd record's file (any version, compressed or not, top-level or "
            "instance buffer)",
            _read_tracedat,
            _tracedat_batches,
            # a cut-off magic is a truncated trace.dat, said so by its reader
            magic=lambda head: (
                head.startswith(TRACE_DAT_MAGIC[:3]) or TRACE_DAT_MAGIC.startswith(head)
            ),
            suffixes=(".dat",),
            readers=("schedwake", "libtracecmd"),
        ),
        _text_format(
            "ftrace-text",
            "ftrace text (`/sys/kernel/tracing/trace`, `trace_pipe`)",
            (".txt",),
        ),
        _text_format(
            "trace-cmd-report",
            "`trace-cmd report` text (default, `-N`, `-R`, `-l`, `-t` layouts)",
            (".report", ".txt"),
        ),
        _text_format("perf-script", "`perf script` text", (".perf", ".txt")),
        InputFormat(
            "perf.data",
            "perf record's file, or its directory (`perf record --threads`)",
            _read_perfdata,
            _perfdata_batches,
            magic=lambda head: head.startswith(b"PERFILE2"),
            suffixes=(".data",),
            directory=True,
            readers=("schedwake", "perf-script"),
        ),
        InputFormat(
            "perfetto",
            "a Perfetto trace (`.pftrace`, `.perfetto-trace`, `.pb`; plain or gzip): its "
            "ftrace events, compact sched included",
            _read_perfetto,
            magic=_perfetto_magic,
            suffixes=(".pftrace", ".perfetto-trace", ".pb"),
        ),
        InputFormat(
            "parquet",
            "a directory `schedwake convert` wrote (its Parquet tables and metadata.json): "
            "the trace it was converted from, whole or by time range",
            _read_parquet,
            directory=True,
        ),
    )
}

#: Names accepted by ``input_format`` / ``--input-format``.
FORMATS = tuple(INPUT_FORMATS)

#: Every suffix of a trace file of some format (``batch`` reads a directory's files
#: that end with one of them).
SUFFIXES = tuple(
    dict.fromkeys(
        [s for f in INPUT_FORMATS.values() for s in f.suffixes]
        + [s for f in INPUT_FORMATS.values() if f.compressed for s in COMPRESSED_SUFFIXES]
    )
)


def check_path(path: str | Path) -> Path:
    """The path as a Path, or a TraceError that says why it cannot be read."""
    p = Path(path)
    if not p.exists():
        raise TraceError(p, "no such file")
    if p.is_dir():
        if is_perf_directory(p) or is_converted_directory(p):
            return p
        raise TraceError(
            p, "is a directory, not a trace file (nor one schedwake convert or perf record wrote)"
        )
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


def is_converted_directory(path: Path) -> bool:
    """Whether ``path`` is a directory ``schedwake convert`` wrote (it has a
    metadata.json): read as format ``parquet``."""
    return path.is_dir() and (path / "metadata.json").exists()


def sniff(path: Path) -> str:
    """The format of ``path``: by the first bytes of the formats with ``magic``, then
    (a text format) by its lines."""
    if is_converted_directory(path):
        return "parquet"
    if path.is_dir():  # (check_path lets only perf's and convert's directories through)
        return "perf.data"
    with open(path, "rb") as file:
        head = file.read(64)
    for f in INPUT_FORMATS.values():
        if f.magic is not None and f.magic(head):
            return f.name
    if head.startswith(b"\x1f\x8b"):  # a gzip'd Perfetto trace: its first bytes inside
        import gzip
        import zlib

        try:
            with gzip.open(path, "rb") as g:
                inner = g.read(64)
        except (EOFError, OSError, zlib.error):
            inner = b""
        if _perfetto_magic(inner):
            return "perfetto"
    from . import text

    fmt = text.sniff(path)  # (also compressed)
    if fmt is None:
        raise TraceError(
            path,
            "not a trace: neither trace.dat, perf.data, a Perfetto trace, ftrace text, "
            "trace-cmd report text nor perf script text (plain or gzip/xz/bzip2/zstd)",
        )
    return fmt


def read(
    path: str | Path,
    events: Iterable[str] | None = None,
    input_format: str | None = None,
    progress: Progress | None = None,
    reader: str | None = None,
    jobs: int | None = None,
    kallsyms: str | Path | None = None,
) -> RawTrace:
    """Read ``path`` into canonical tables: :func:`read_with` with the
    :class:`ReadOptions` of these arguments (see there).

    Counts of all events are in ``meta.event_counts`` whichever ``events`` are read.
    Raises :class:`TraceError` for anything that is not a usable trace, OptionError (a
    ValueError) naming the parameter for an ``events`` that is not a list of names, or a
    ``reader``, ``jobs`` or ``input_format`` that does not exist.
    """
    # (``events``, whatever it is, is ReadOptions' to check and to make a list)
    names = cast("list[str] | None", events)
    return read_with(path, ReadOptions(names, input_format, progress, reader, jobs, kallsyms))


def read_with(path: str | Path, options: ReadOptions) -> RawTrace:
    """Read ``path`` into canonical tables as ``options`` say (:class:`ReadOptions`, checked
    already). Raises :class:`TraceError` for anything that is not a usable trace, or a
    file of a format the reader does not read."""
    p = check_path(path)
    if options.input_format in (None, "perf.data"):
        packed = packed_perfdata(p)
        if packed is not None:
            return _read_packed(p, packed, options)
    fmt = options.input_format or sniff(p)
    assert options.reader is not None  # (ReadOptions makes None the default)
    check_reader_format(p, fmt, options.reader)
    if options.time_range is not None:
        check_partitionable(fmt, options.reader)
    return INPUT_FORMATS[fmt].read(p, options)


#: Formats whose files :func:`read_with` reads by time range (``ReadOptions.time_range``)
#: from their own boundaries: trace.dat's pages and compressed chunks, perf.data's
#: FINISHED_ROUND rounds, the row groups of a ``schedwake convert`` directory's Parquet
#: (:func:`schedwake.ingest.parquet.read`).
PARTITIONED_FORMATS = ("trace.dat", "perf.data", "parquet")


def check_partitionable(fmt: str, reader: str) -> None:
    """OptionError when a file of format ``fmt`` cannot be read by time range with
    ``reader``: text has no boundaries to cut at (its lines are not in time order
    across CPUs), Perfetto's reader has no index, libtracecmd and perf script read
    whole files."""
    if fmt not in PARTITIONED_FORMATS:
        why = (
            "its lines are not in time order across CPUs: read it whole, or convert it "
            "to Parquet first (schedwake convert)"
            if INPUT_FORMATS[fmt].magic is None
            else "its reader has no index of blocks to cut it by: read it whole"
        )
        raise OptionError("time_range", fmt, f"a {fmt} file is not read by time range: {why}")
    if reader != DEFAULT_READER:
        raise OptionError(
            "time_range", reader, f"only the {DEFAULT_READER} reader reads by time range"
        )


def cut_times(path: str | Path, n: int) -> list[int]:
    """Times that cut ``path`` into about ``n`` parts of equal event counts: sorted,
    distinct, each the first time of a block of the file's index (a trace.dat's
    pages or compressed chunks, which hold about equal numbers of events; a ``schedwake
    convert`` directory's Parquet row groups, weighted by their rows), so that a part
    ``[cut[i - 1], cut[i])`` read with ``ReadOptions(time_range=...)`` decodes its own
    blocks and at most one straddling block per CPU at each end (a perf.data: its
    FINISHED_ROUND rounds, by their earliest samples). The parts are
    ``(None, cut[0])``, ..., ``(cut[-1], None)``: at most ``n - 1`` cuts, fewer when
    the file has fewer blocks. Reads only the index, never the records."""
    if not _is_int(n) or n < 1:
        raise OptionError("n", repr(n), "the number of parts must be an int >= 1")
    if is_converted_directory(Path(path)):
        from .parquet import row_group_starts

        weighted = row_group_starts(path)
    else:
        p = check_path(path)
        fmt = sniff(p)
        check_partitionable(fmt, DEFAULT_READER)
        if fmt == "perf.data":
            from .perfdata import round_starts

            weighted = [(t, 1) for t in round_starts(p)]
        else:
            from .tracedat import block_index

            end = 2**63 - 1  # (the time of a trailing block that holds nothing)
            weighted = [(t, 1) for ts in block_index(p).values() for t in ts if t != end]
    weighted.sort()
    total = sum(w for _, w in weighted)
    cuts: list[int] = []
    seen = 0
    k = 1
    for t, w in weighted:
        # the block that starts at or after k/n of the events goes to the next part
        while k < n and seen >= total * k / n:
            if t > (cuts[-1] if cuts else weighted[0][0]):
                cuts.append(t)
            k += 1
        seen += w
    return cuts


#: The most bytes a compressed perf.data may hold once decompressed.
MAX_UNPACKED = 64 << 30


def packed_perfdata(path: Path) -> str | None:
    """The compression ("zstd", "xz", "bzip2", "gzip") of a compressed perf.data file
    (how mmtests keeps its ``perf-N.data.zst``), else None."""
    from ..compressed import compression, inner_head

    if path.is_dir():
        return None
    kind = compression(path)
    if kind is None:
        return None
    try:
        head = inner_head(path, kind)
    except TraceError:
        # damaged from its start: a perf.data by its name (perf-4.data.zst) is said to
        # be damaged here, anything else by the text readers
        if Path(path.stem).suffix == ".data":
            raise
        return None
    return kind if head.startswith(b"PERFILE2") else None


def _read_packed(path: Path, kind: str, options: ReadOptions) -> RawTrace:
    """A compressed perf.data read through a decompressed copy in a temporary
    directory (its reader seeks), the errors and the metadata naming ``path``."""
    import tempfile

    from ..compressed import decompress_to

    with tempfile.TemporaryDirectory(prefix="schedwake-") as tmp:
        plain = Path(tmp) / "perf.data"
        decompress_to(path, kind, plain, MAX_UNPACKED)
        try:
            raw = read_with(plain, dataclasses.replace(options, input_format="perf.data"))
        except TraceError as exc:
            raise TraceError(path, f"(decompressed) {exc.problem}") from None
    raw.meta = dataclasses.replace(raw.meta, path=str(path))
    return raw


def _names(items: object) -> list | None:
    """``items`` as a list, or None when it is not a collection (a number, None)."""
    return list(items) if isinstance(items, Iterable) else None


def check_reader_format(path: Path, fmt: str, reader: str) -> None:
    """TraceError when ``reader`` cannot read files of format ``fmt`` (it is not one of
    the format's ``readers``): libtracecmd reads trace.dat only, perf-script perf.data
    only."""
    known = INPUT_FORMATS.get(fmt)  # (an unknown input_format is read()'s to refuse)
    if reader not in (known.readers if known else (DEFAULT_READER,)):
        only = " or ".join(f.name for f in INPUT_FORMATS.values() if reader in f.readers)
        raise TraceError(path, f"the {reader} reader only reads {only} files, and this is {fmt}")


#: Formats that :func:`iter_batches` reads batch by batch.
STREAMED_FORMATS = tuple(f.name for f in INPUT_FORMATS.values() if f.iter_batches is not None)


def iter_batches(path: str | Path, options: ReadOptions | None = None) -> Iterator[RawTrace]:
    """Read ``path`` as a sequence of :class:`RawTrace` batches, in memory that does not
    grow with the file (``schedwake convert`` writes them as they come), as ``options``
    say (:class:`ReadOptions`; None: the defaults; its ``reader`` and ``jobs`` are
    schedwake's: only its readers read batch by batch).

    trace.dat and perf.data batches are in time order across batches; text batches keep
    the file's order (sorted within a batch). ``meta`` counts are cumulative, so the
    last batch's describe the whole file. A ``time_range`` is refused (OptionError):
    a part is read whole, with :func:`read_with`.
    """
    o = ReadOptions() if options is None else options
    if o.time_range is not None:  # (the streams read whole files: a range would be lost)
        raise OptionError(
            "time_range", repr(o.time_range), "batches are of the whole file: read a range whole"
        )
    p = check_path(path)
    fmt = o.input_format or sniff(p)
    batches = INPUT_FORMATS[fmt].iter_batches
    if batches is None:
        raise OptionError("input_format", fmt, "is read whole, not batch by batch")
    yield from batches(p, o)
