"""Read a trace.dat file through libtracecmd, in a child process.

libtracecmd/libtraceevent are schedwake's conformance oracle and an opt-in reader
(``reader="libtracecmd"``), not its default: on damaged input they can crash
(SIGSEGV, SIGFPE, ...) or spin for ever. So they never run in this interpreter:
:func:`read` starts ``python -m schedwake.ingest.libtracecmd`` (a fresh interpreter,
not a fork of this one, which may hold gigabytes; it imports only the readers), and the
child does what an in-process reader would (layout check, :mod:`._libtracecmd`,
``tracedat.assemble``) and sends the result back over its stdout pipe. A child that
dies by a signal, stalls or fails otherwise becomes one :class:`TraceError` line; no
signal handler is installed here, and nothing is written to disk (no temporary files).

The pipe carries frames: a kind byte, a little-endian u64 payload length, the payload.

* ``P``: progress, a float64 fraction (as often as the C reader reports it);
* ``T``: an event table: its name, a NUL byte, then an Arrow IPC stream;
* ``L``: the lost-event rows as an Arrow IPC stream;
* ``E``: a TraceError's problem text (UTF-8): the child could not read the file;
* ``M``: the metadata as JSON (dicts with int keys tagged, see :func:`meta_to_json`),
  sent last: the child succeeded.

The child's own stderr (libtracecmd prints lines like ``mmap: ...`` there) goes to a
second pipe that the parent keeps only to explain a failure; fd 1 of the child is
pointed at it too, so that nothing the libraries print can break the frames.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

import pyarrow as pa

from ..errors import TraceError
from .meta import TraceMeta
from .raw import Progress, RawTrace

#: A file gets this long, plus STALL_S_PER_MB per MB of its size, to be read; a child
#: that takes longer is stopped (a damaged page can make libtraceevent loop for ever).
#: Real files need a small fraction of it, except big compressed ones: libtracecmd 1.3
#: reads compressed v7 data in time quadratic in its size (docs/performance.md); such a
#: file reads well after `trace-cmd convert --compression none`.
STALL_BASE_S = 30.0
STALL_S_PER_MB = 1.0
#: An environment variable that replaces STALL_BASE_S (seconds): a slower machine may
#: need more; the tests that make the library loop on purpose wait less.
STALL_ENV = "SCHEDWAKE_LIBTRACECMD_STALL_S"

#: What the child runs: this module.
CHILD_MODULE = "schedwake.ingest.libtracecmd"
CRASHED = "the libtracecmd reader crashed on this file: {}"
STALLED = "the libtracecmd reader made no progress on this file"

_HEADER = struct.Struct("<cQ")
_INT_KEYS = "__int_keys__"
#: Bytes of the child's stderr kept to explain a failure.
_DIAG_BYTES = 8192


# -- parent ---------------------------------------------------------------------------------


def read(path, events: list[str] | None = None, progress: Progress | None = None) -> RawTrace:
    """Read trace.dat ``path`` through libtracecmd in a child process.

    ``events`` limits which tables are built (counts cover all); ``progress`` gets the
    fraction done. Raises :class:`TraceError` for unusable files, and when the library
    crashes or stalls on one.
    """
    path = Path(path)
    limit = _stall_base_s() + STALL_S_PER_MB * path.stat().st_size / 1e6
    child = subprocess.Popen(
        _child_command(path, events),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_env(),
    )
    try:
        frames, diag = _collect(child, time.monotonic() + limit, progress)
    except _Stalled:
        raise TraceError(path, STALLED) from None
    finally:
        _reap(child)
    return _result(path, child.returncode, frames, diag)


def _stall_base_s() -> float:
    """STALL_BASE_S, or the seconds $SCHEDWAKE_LIBTRACECMD_STALL_S gives."""
    given = os.environ.get(STALL_ENV)
    if given is None:
        return STALL_BASE_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise TraceError(STALL_ENV, f"must be a positive number of seconds, not {given!r}")
    return seconds


def _child_command(path: Path, events) -> list[str]:
    # -P: the working directory is not put on the child's module path (a "schedwake"
    # directory there must not stand in for this one)
    cmd = [sys.executable, "-P", "-m", CHILD_MODULE, str(path), "--parent", str(os.getpid())]
    if events is not None:
        cmd += ["--events", json.dumps(list(events))]
    return cmd


def _child_env() -> dict[str, str]:
    """This environment, with the directory this schedwake was imported from first on
    the child's module path, so that the child runs the same code."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class _Stalled(Exception):
    """The child did not finish within its time limit."""


class _FrameReader:
    """Frames from the child's stdout, read as the pipe delivers them; a payload is
    read straight into its own buffer (the Arrow tables then use it without a copy).
    Progress frames go to ``progress`` as they come; the others are kept in order."""

    def __init__(self, fd: int, progress: Progress | None):
        self.fd = fd
        self.progress = progress
        self.header = bytearray()
        self.kind = b""
        self.payload: memoryview | None = None  # a view of buffer, filled so far
        self.buffer = bytearray()
        self.filled = 0
        self.frames: list[tuple[bytes, bytearray]] = []

    def pump(self) -> bool:
        """Read what the pipe holds (one read); False at end of file."""
        if self.payload is None:
            chunk = os.read(self.fd, _HEADER.size - len(self.header))
            if not chunk:
                return False
            self.header += chunk
            if len(self.header) == _HEADER.size:
                self.kind, size = _HEADER.unpack(self.header)
                self.header.clear()
                self.buffer = bytearray(size)
                self.payload, self.filled = memoryview(self.buffer), 0
        else:
            n = os.readv(self.fd, [self.payload[self.filled :]])
            if not n:
                return False
            self.filled += n
        if self.payload is not None and self.filled == len(self.payload):
            self._done(self.kind, self.buffer)
            self.payload, self.buffer = None, bytearray()
        return True

    def _done(self, kind: bytes, payload: bytearray) -> None:
        if kind != b"P":
            self.frames.append((kind, payload))
        elif self.progress is not None:
            self.progress(struct.unpack("<d", payload)[0])


def _collect(child: subprocess.Popen, deadline: float, progress: Progress | None):
    """Every frame of the child and the tail of its stderr, until both pipes close;
    progress frames go to ``progress`` as they come. Raises _Stalled at ``deadline``."""
    out, err = child.stdout, child.stderr
    assert out is not None and err is not None  # Popen(stdout=PIPE, stderr=PIPE)
    _widen_pipe(out.fileno())
    frames = _FrameReader(out.fileno(), progress)
    diag: deque[bytes] = deque()
    sel = selectors.DefaultSelector()
    sel.register(out, selectors.EVENT_READ, "frames")
    sel.register(err, selectors.EVENT_READ, "diag")
    with sel:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Stalled()
            for key, _ in sel.select(left):
                if key.data == "frames":
                    more = frames.pump()
                else:
                    chunk = os.read(key.fd, 65536)
                    more = bool(chunk)
                    _keep_tail(diag, chunk)
                if not more:
                    sel.unregister(key.fileobj)
    return frames.frames, b"".join(diag)


def _widen_pipe(fd: int) -> None:
    """Ask for a 1 MB pipe (Linux): fewer, larger reads of big tables."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass  # the default size works, only slower


def _keep_tail(diag: deque, chunk: bytes) -> None:
    diag.append(chunk)
    while sum(map(len, diag)) > _DIAG_BYTES and len(diag) > 1:
        diag.popleft()


def _reap(child: subprocess.Popen) -> None:
    """End the child if it still runs (a stall, an exception here, Ctrl-C) and wait."""
    if child.poll() is None:
        child.kill()
    child.wait()
    for pipe in (child.stdout, child.stderr):
        if pipe is not None:  # None only without a PIPE
            pipe.close()


def _result(path: Path, returncode: int, frames: list, diag: bytes) -> RawTrace:
    """The RawTrace the child sent, or the TraceError that says why there is none."""
    if returncode < 0:
        raise TraceError(path, CRASHED.format(_signal_name(-returncode)))
    by_kind: dict[bytes, list[bytearray]] = {}
    for kind, payload in frames:
        by_kind.setdefault(kind, []).append(payload)
    if b"E" in by_kind:
        raise TraceError(path, by_kind[b"E"][0].decode("utf-8", "replace"))
    if returncode != 0 or b"M" not in by_kind or b"L" not in by_kind:
        raise TraceError(
            path, f"the libtracecmd reader failed (exit status {returncode}{_last_line(diag)})"
        )
    tables = {}
    for payload in by_kind.get(b"T", []):
        cut = payload.index(b"\0")
        tables[payload[:cut].decode()] = _ipc_table(memoryview(payload)[cut + 1 :])
    return RawTrace(
        tables=tables,
        meta=TraceMeta.from_dict(meta_from_json(by_kind[b"M"][0])),
        lost=_ipc_table(memoryview(by_kind[b"L"][0])),
    )


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _last_line(diag: bytes) -> str:
    """``: <the child's last stderr line>`` (shortened), or nothing."""
    lines = [ln.strip() for ln in diag.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return ": " + (line if len(line) <= 200 else line[:197] + "...")


def _ipc_table(data: memoryview) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


# -- metadata as JSON -----------------------------------------------------------------------


def meta_to_json(meta: dict) -> bytes:
    """``meta`` as JSON that :func:`meta_from_json` turns back into an equal dict: a dict
    whose keys are ints (``lost_events`` by CPU) is written as ``{"__int_keys__":
    [[key, value], ...]}``, since JSON object keys are strings."""
    return json.dumps(_tag_int_keys(meta)).encode()


def meta_from_json(data: bytes | bytearray) -> dict:
    return json.loads(data, object_hook=_untag_int_keys)


def _tag_int_keys(obj):
    if isinstance(obj, dict):
        if obj and all(type(k) is int for k in obj):
            return {_INT_KEYS: [[k, _tag_int_keys(v)] for k, v in obj.items()]}
        if not all(isinstance(k, str) for k in obj):
            raise TypeError(f"metadata dict keys must be all str or all int: {list(obj)}")
        return {k: _tag_int_keys(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_tag_int_keys(v) for v in obj]
    return obj


def _untag_int_keys(d: dict):
    if len(d) == 1 and _INT_KEYS in d:
        return {int(k): v for k, v in d[_INT_KEYS]}
    return d


# -- child ----------------------------------------------------------------------------------


class _FrameWriter:
    """Frames onto the pipe the parent reads (the child's original stdout)."""

    def __init__(self, fd: int):
        self.out = os.fdopen(fd, "wb", buffering=1 << 16)

    def send(self, kind: bytes, *parts) -> None:
        size = sum(memoryview(p).nbytes for p in parts)
        self.out.write(_HEADER.pack(kind, size))
        for p in parts:
            self.out.write(p)
        self.out.flush()

    def progress(self, fraction: float) -> None:
        self.send(b"P", struct.pack("<d", fraction))


def _ipc_bytes(table: pa.Table) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _read_here(path: Path, events, progress) -> RawTrace:
    """What an in-process reader would do: check the layout, decode with libtracecmd,
    assemble the tables. Runs in the child only."""
    from . import tracedat, tracedat_layout

    try:
        from . import _libtracecmd
    except ImportError as exc:
        raise TraceError(path, f"the libtracecmd reader is not built ({exc})") from None
    layout = tracedat_layout.check(path)
    try:
        raw = _libtracecmd.read(str(path), None if events is None else frozenset(events), progress)
    except _libtracecmd.TraceDatError as exc:
        raise TraceError(path, str(exc)) from None
    except MemoryError:
        raise TraceError(path, "out of memory while reading the trace") from None
    return tracedat.assemble(path, raw, layout, events, reader="libtracecmd")


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this child when its parent dies (Linux): a parent killed
    outright cannot stop a child that libtraceevent keeps spinning."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the parent still stops its child itself
    if os.getppid() != parent:  # the parent died before prctl(): nobody to report to
        os._exit(1)


def _child_args(argv: list[str]):
    import argparse

    parser = argparse.ArgumentParser(
        prog=f"python -m {CHILD_MODULE}", description="the child process of libtracecmd.read()"
    )
    parser.add_argument("path", type=Path)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--events", type=json.loads, default=None)
    return parser.parse_args(argv)


def _child_main(argv: list[str]) -> int:
    """The child: read the file named in ``argv``, send the frames, exit 0; or send an
    ``E`` frame and exit 1."""
    args = _child_args(argv)
    _die_with_parent(args.parent)
    # Ctrl-C reaches the whole process group: the parent stops this child, and the
    # child must not die of it first (that would read as a crash)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = _FrameWriter(os.dup(1))
    os.dup2(2, 1)  # stray prints of the libraries go to the diagnostics pipe
    path, events = args.path, args.events
    try:
        trace = _read_here(path, events, out.progress)
    except TraceError as exc:
        out.send(b"E", exc.problem.encode())
        return 1
    for name, table in trace.tables.items():
        out.send(b"T", name.encode(), b"\0", _ipc_bytes(table))
    out.send(b"L", _ipc_bytes(trace.lost))
    out.send(b"M", meta_to_json(trace.meta.to_dict()))
    out.out.close()
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
