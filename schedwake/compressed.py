"""Compressed input files: which compression a file's first bytes say (gzip, xz, zstd,
bzip2), and the whole decompressed content of a small file, bounded.

Trace text is streamed (:mod:`schedwake.ingest.text`, which reads the magic here too);
:func:`read_whole` is for the small files read at once, such as a kallsyms
(:mod:`schedwake.symbols.kernel`); :func:`decompress_to` writes a compressed binary
trace (a ``perf-N.data.zst`` of mmtests) to a file its reader can seek in.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import stat
import subprocess
import zlib
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, Protocol, TypeAlias

from .errors import TraceError

if TYPE_CHECKING:
    from _typeshed import StrPath

#: A compressed file's first bytes, and the compression they say.
MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
)
#: The program that decompresses each (to stdout), used where it is installed.
PROGRAMS = {"xz": ["xz", "-dc"], "zstd": ["zstd", "-dcq"], "bzip2": ["bzip2", "-dc"]}
_CHUNK = 1 << 20


def open_regular(path: StrPath, what: str = "file") -> IO[bytes]:
    """``path`` opened for reading only if it is a regular file, checked on the open file
    (``fstat``: a link swapped in between cannot slip past, as a check of the path before
    the open would let it), and opened non-blocking: a device, FIFO or socket is refused
    in one line (TraceError), and a procfs/sysfs file that looks regular but blocks
    (``/proc/kmsg``, ``trace_pipe``) fails its first read instead of hanging.
    OSError as ``open`` raises it."""
    p = Path(path)
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = (
                "a directory" if stat.S_ISDIR(mode)
                else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode)
                else "not a regular file"
            )  # fmt: skip
            raise TraceError(p, f"is {kind}, not a regular file: not read as a {what}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(f: IO[bytes], most: int, path: StrPath) -> bytes:
    """Up to ``most`` bytes of ``f`` (opened by :func:`open_regular`), to its end: none
    of a file whose size is 0 (an empty file, or a procfs/sysfs stream posing as one:
    ``/proc/kmsg``, ``trace_pipe``, never read), and a TraceError naming ``path`` when
    a read would block."""
    if os.fstat(f.fileno()).st_size == 0:
        # an empty file, or a procfs/sysfs one that says 0 bytes (/proc/kmsg): a read of
        # the latter would take the kernel's messages from whoever reads them
        return b""
    out = bytearray()
    while len(out) < most:
        got = f.read(min(_CHUNK, most - len(out)))
        if got is None:
            raise TraceError(
                path,
                "is a stream that would block (a procfs or sysfs file such as /proc/kmsg), "
                "not a file: not read",
            )
        if not got:
            break
        out += got
    return bytes(out)


def compression(path: Path) -> str | None:
    """The compression the file's first bytes say ("gzip", "xz", "zstd", "bzip2"), or
    None: not compressed."""
    with open(path, "rb") as f:
        head = f.read(8)
    return compression_of(head)


def compression_of(head: bytes) -> str | None:
    """The compression that a file's first bytes ``head`` say, or None."""
    for magic, name in MAGIC:
        if head.startswith(magic):
            return name
    return None


def no_zstd(path: StrPath) -> TraceError:
    """The error for a zstd file where nothing here can decompress it."""
    return TraceError(
        path,
        "is zstd-compressed, and neither the zstd program nor the Python zstandard module "
        "is installed",
    )


def read_whole(path: StrPath, limit: int, what: str) -> bytes:
    """The content of the file at ``path``, decompressed when its first bytes say it is
    compressed (:data:`MAGIC`). A :class:`TraceError` naming the file in one line (``what``
    says what the file is, e.g. "kallsyms file") when it cannot be read, its compressed
    data is truncated or corrupt, or its content is over ``limit`` bytes (decompression
    stops as soon as more than ``limit`` bytes came out: a bomb is not inflated)."""
    p = Path(path)
    try:
        with open_regular(p, what) as f:
            # the magic by pread: the file's offset stays at 0 for the decompressor,
            # which may read the descriptor itself (the zstd program); a file of 0
            # bytes (a procfs stream such as /proc/kmsg) is not read at all
            empty = os.fstat(f.fileno()).st_size == 0
            kind = None if empty else compression_of(os.pread(f.fileno(), 8, 0))
            data = (
                read_bounded(f, limit + 1, p)
                if kind is None
                else _decompress(p, f, kind, limit + 1)
            )
    except OSError as exc:
        raise TraceError(p, f"cannot read the {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"
        raise TraceError(p, f"holds more than {size}: too large for a {what}")
    return data


def _decompress(path: Path, f: IO[bytes], kind: str, most: int) -> bytes:
    """Up to ``most`` bytes of the decompressed ``f`` (TraceError when it is damaged)."""
    if kind == "zstd":
        return _zstd(path, f, most)
    stream: gzip.GzipFile | lzma.LZMAFile | bz2.BZ2File
    try:
        if kind == "gzip":
            stream = gzip.GzipFile(fileobj=f)
        elif kind == "xz":
            stream = lzma.LZMAFile(f)
        else:
            stream = bz2.BZ2File(f)
        with stream:
            return _read_up_to(stream, most)
    except (EOFError, OSError, lzma.LZMAError, zlib.error, ValueError) as exc:
        raise TraceError(path, f"truncated or corrupt {kind} data ({exc})") from None


class _Readable(Protocol):
    """A binary stream read by the chunk (a decompressing file, a pipe, :class:`_ZstdFrames`)."""

    def read(self, n: int, /) -> bytes: ...


def _read_up_to(stream: _Readable, most: int) -> bytes:
    out = bytearray()
    while len(out) < most:
        got = stream.read(min(_CHUNK, most - len(out)))
        if not got:
            break
        out += got
    return bytes(out)


def _zstd(path: Path, f: IO[bytes], most: int) -> bytes:
    """zstd through the zstd program, else the Python zstandard module."""
    exe = shutil.which(PROGRAMS["zstd"][0])
    if exe is not None:
        proc = subprocess.Popen(
            [exe, *PROGRAMS["zstd"][1:]],
            stdin=f,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None  # PIPEs
        data = _read_up_to(proc.stdout, most)
        if len(data) >= most:
            proc.kill()
        proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace").strip().splitlines()
        proc.stderr.close()
        if proc.wait() != 0 and len(data) < most:
            why = err[-1] if err else f"zstd exit code {proc.returncode}"
            raise TraceError(path, f"truncated or corrupt zstd data ({why})")
        return data
    try:
        import zstandard
    except ImportError:
        raise no_zstd(path) from None
    # one frame after another, fed a KiB at a time: a frame's output per KiB of input is
    # bounded (its blocks are at most 128 KiB), so a bomb stops soon after ``most``
    out = bytearray()
    dobj = None
    try:
        while len(out) < most:
            chunk = f.read(1024)
            if not chunk:
                break
            while chunk and len(out) < most:
                if dobj is None or dobj.eof:
                    dobj = zstandard.ZstdDecompressor().decompressobj()
                out += dobj.decompress(chunk)
                chunk = dobj.unused_data if dobj.eof else b""
        if len(out) < most and (dobj is None or not dobj.eof):
            raise zstandard.ZstdError("the last frame is cut short")
    except zstandard.ZstdError as exc:
        raise TraceError(path, f"truncated or corrupt zstd data ({exc})") from None
    return bytes(out[:most])


def inner_head(path: StrPath, kind: str, n: int = 8) -> bytes:
    """The first ``n`` bytes of the compressed file at ``path`` once decompressed (fewer
    when its content is shorter; TraceError when its start is damaged)."""
    p = Path(path)
    try:
        with open_regular(p) as f:
            return _decompress(p, f, kind, n)[:n]
    except OSError as exc:
        raise TraceError(p, f"cannot read: {exc.strerror or exc}") from None


def decompress_to(path: StrPath, kind: str, dest: Path, limit: int) -> None:
    """Write the content of the ``kind``-compressed file at ``path`` to ``dest``:
    TraceError naming ``path`` in one line when it is truncated or corrupt, or holds
    more than ``limit`` bytes (writing stops there: a bomb does not fill the disk)."""
    p = Path(path)
    try:
        with open_regular(p) as f, open(dest, "wb") as out:
            stream = _stream(p, f, kind)
            source = stream.stdout if isinstance(stream, subprocess.Popen) else stream
            assert source is not None  # (a PIPE)
            whole = False
            try:
                done = 0
                while got := source.read(_CHUNK):
                    done += len(got)
                    if done > limit:
                        raise TraceError(
                            p, f"holds more than {limit >> 20} MiB once decompressed: too large"
                        )
                    out.write(got)
                whole = True
            except (EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
                raise TraceError(p, f"truncated or corrupt {kind} data ({exc})") from None
            finally:
                _close(stream, p, kind, whole)
    except OSError as exc:
        raise TraceError(p, f"truncated or corrupt {kind} data ({exc.strerror or exc})") from None


def _stream(path: Path, f: IO[bytes], kind: str) -> _Decompressing:
    """A readable decompressed stream of ``f`` (``_close`` checks how it ended)."""
    if kind == "gzip":
        return gzip.GzipFile(fileobj=f)
    if kind == "xz":
        return lzma.LZMAFile(f)
    if kind == "bzip2":
        return bz2.BZ2File(f)
    exe = shutil.which(PROGRAMS["zstd"][0])
    if exe is not None:
        return subprocess.Popen(
            [exe, *PROGRAMS["zstd"][1:]], stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    try:
        import zstandard
    except ImportError:
        raise no_zstd(path) from None
    return _ZstdFrames(f, zstandard)


class _ZstdFrames:
    """zstd frames one after another through the Python zstandard module, as a stream
    whose end says whether the last frame was whole."""

    def __init__(self, f: IO[bytes], zstandard: ModuleType):
        self.f, self.z = f, zstandard
        self.dobj: Any = None

    def read(self, _n: int) -> bytes:
        try:
            while True:
                chunk = self.f.read(1 << 16)
                if not chunk:
                    if self.dobj is not None and not self.dobj.eof:
                        raise ValueError("the last frame is cut short")
                    return b""
                out = bytearray()
                while chunk:
                    if self.dobj is None or self.dobj.eof:
                        self.dobj = self.z.ZstdDecompressor().decompressobj()
                    out += self.dobj.decompress(chunk)
                    chunk = self.dobj.unused_data if self.dobj.eof else b""
                if out:
                    return bytes(out)
        except self.z.ZstdError as exc:
            raise ValueError(str(exc)) from None

    def close(self) -> None:
        pass


#: What :func:`_stream` gives: a decompressing file, the zstd program, or zstd frames
#: through the zstandard module
_Decompressing: TypeAlias = (
    gzip.GzipFile | lzma.LZMAFile | bz2.BZ2File | subprocess.Popen[bytes] | _ZstdFrames
)


def _close(stream: _Decompressing, path: Path, kind: str, whole: bool) -> None:
    """Close a stream of :func:`_stream`; the zstd program's failure on a stream read
    to its end (``whole``) is a TraceError, one stopped early is killed."""
    if not isinstance(stream, subprocess.Popen):
        stream.close()
        return
    assert stream.stdout is not None and stream.stderr is not None  # PIPEs
    stream.stdout.close()
    if not whole:
        stream.kill()
    err = stream.stderr.read().decode(errors="replace").strip().splitlines()
    stream.stderr.close()
    if stream.wait() != 0 and whole:
        why = err[-1] if err else f"zstd exit code {stream.returncode}"
        raise TraceError(path, f"truncated or corrupt {kind} data ({why})")


__all__ = [
    "MAGIC",
    "PROGRAMS",
    "compression",
    "decompress_to",
    "inner_head",
    "no_zstd",
    "read_whole",
]
