"""Check that a trace.dat file is whole before the binding reads it.

libtracecmd reads what it finds: a file cut short inside its last sections, or
(v6) inside the per-CPU data, still opens and yields fewer events, which would be a
silently wrong answer. This module walks the file's layout (trace-cmd.dat v6 and v7,
see ``trace-cmd.dat.v6(5)``/``v7(5)``) and checks that every section and every
CPU's data that the file declares lies inside the file. It reads only headers.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import NoReturn

from ..errors import TraceError

MAGIC = b"\x17\x08\x44tracing"

OPT_DONE, OPT_BUFFER, OPT_UNAME, OPT_VERSION, OPT_TSC2NSEC = 0, 3, 5, 9, 14
# Options whose payload is a u64 file offset of a section (v7).
SECTION_OPTIONS = {
    15: "strings",
    16: "header info",
    17: "ftrace event formats",
    18: "event formats",
    19: "kallsyms",
    20: "printk formats",
    21: "cmdlines",
    23: "BTF",
    25: "modules",
}


class _Reader:
    def __init__(self, path: Path, data: mmap.mmap | bytes, endian: str = "<"):
        self.path, self.data, self.size, self.e = path, data, len(data), endian

    def fail(self, what: str) -> NoReturn:
        raise TraceError(
            self.path, f"truncated or corrupt trace.dat: {what} (file has {self.size} bytes)"
        )

    def need(self, off: int, n: int, what: str) -> None:
        if off < 0 or n < 0 or off + n > self.size:
            self.fail(f"{what} needs bytes {off}..{off + n}")

    def u(self, fmt: str, off: int, what: str) -> int:
        n = struct.calcsize(fmt)
        self.need(off, n, what)
        return struct.unpack_from(self.e + fmt, self.data, off)[0]

    def cstr(self, off: int, what: str) -> tuple[str, int]:
        end = self.data.find(b"\0", off, min(self.size, off + 4096))
        if end < 0:
            self.fail(f"unterminated {what} at byte {off}")
        return self.data[off:end].decode("latin-1"), end + 1


def check(path: Path) -> dict:
    """Raise TraceError if ``path`` is not a complete trace.dat (v6 or v7).

    Returns what it learnt: ``{"version": 6|7, "compression": name or None,
    "options": ids of the options seen}`` (options in compressed sections are not seen),
    and for v7 ``"endian"`` and ``"last_done"``: ``(offset of the payload of the last
    options section's DONE option, that section's description id)``, or None if a
    compressed section ends the chain (where ``record.add_uname`` links a new section).
    """
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size == 0:
            raise TraceError(path, "empty file")
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        r = _Reader(path, data)
        if not data[: len(MAGIC)] == MAGIC:
            r.fail("bad magic")
        version, off = r.cstr(len(MAGIC), "version")
        r.need(off, 6, "file header")
        r.e = ">" if data[off] == 1 else "<"
        off += 6  # endianness, long size, page size
        options: set[int] = set()
        if version == "6":
            _check_v6(r, off, options)
            return {"version": 6, "compression": None, "options": options}
        if version == "7":
            found: dict = {"version": 7, "options": options, "endian": r.e, "last_done": None}
            found["compression"] = _check_v7(r, off, options, found)
            return found
        raise TraceError(path, f"unsupported trace.dat version {version!r} (known: 6, 7)")
    finally:
        data.close()


def _check_v7(r: _Reader, off: int, options: set[int], found: dict) -> str | None:
    compression, off = r.cstr(off, "compression name")
    _, off = r.cstr(off, "compression version")
    next_opts = r.u("Q", off, "options offset")
    seen = set()
    while next_opts:
        if next_opts in seen:
            r.fail("options sections form a loop")
        seen.add(next_opts)
        sid, flags, desc, ssize = _section(r, next_opts, "options section")
        start, end = next_opts + 16, next_opts + 16 + ssize
        next_opts = 0
        if flags & 1:  # compressed options: bounds checked, no deeper
            found["last_done"] = None
            continue
        pos = start
        while pos + 6 <= end:
            oid, osize = r.u("H", pos, "option id"), r.u("I", pos + 2, "option size")
            body = pos + 6
            r.need(body, osize, f"option {oid}")
            options.add(oid)
            if oid == OPT_DONE:
                next_opts = r.u("Q", body, "next options offset") if osize >= 8 else 0
                found["last_done"] = (body, desc) if osize >= 8 else None
                break
            if oid in SECTION_OPTIONS and osize >= 8:
                _section(r, r.u("Q", body, "section offset"), SECTION_OPTIONS[oid])
            elif oid == OPT_BUFFER:
                _buffer_option(r, body, osize)
            pos = body + osize
    return None if compression in ("", "none") else compression


def _section(r: _Reader, off: int, what: str) -> tuple[int, int, int, int]:
    sid = r.u("H", off, what)
    flags = r.u("H", off + 2, what)
    desc = r.u("I", off + 4, what)
    ssize = r.u("Q", off + 8, what)
    r.need(off + 16, ssize, f"{what} at byte {off}")
    return sid, flags, desc, ssize


def _buffer_option(r: _Reader, body: int, osize: int) -> None:
    _section(r, r.u("Q", body, "buffer offset"), "flyrecord section")
    pos = body + 8
    name, pos = r.cstr(pos, "buffer name")
    _, pos = r.cstr(pos, "buffer clock")
    ncpus = r.u("I", pos + 4, "buffer CPU count")
    pos += 8
    for _ in range(min(ncpus, 65536)):
        cpu = r.u("I", pos, "buffer CPU id")
        coff, csize = r.u("Q", pos + 4, "CPU data offset"), r.u("Q", pos + 12, "CPU data size")
        r.need(coff, csize, f"CPU {cpu} data of buffer {name!r}")
        pos += 20


def _check_v6(r: _Reader, off: int, options: set[int]) -> None:
    for label in (b"header_page\0", b"header_event\0"):
        r.need(off, len(label), "header")
        if r.data[off : off + len(label)] != label:
            r.fail(f"missing {label[:-1].decode()} at byte {off}")
        off += len(label)
        n = r.u("Q", off, label.decode())
        r.need(off + 8, n, label[:-1].decode())
        off += 8 + n
    count = r.u("I", off, "ftrace format count")
    off += 4
    for _ in range(count):
        n = r.u("Q", off, "ftrace event format")
        r.need(off + 8, n, "ftrace event format")
        off += 8 + n
    systems = r.u("I", off, "event system count")
    off += 4
    for _ in range(systems):
        _, off = r.cstr(off, "system name")
        count = r.u("I", off, "event format count")
        off += 4
        for _ in range(count):
            n = r.u("Q", off, "event format")
            r.need(off + 8, n, "event format")
            off += 8 + n
    for what, fmt in (("kallsyms", "I"), ("printk formats", "I"), ("cmdlines", "Q")):
        n = r.u(fmt, off, what)
        w = struct.calcsize(fmt)
        r.need(off + w, n, what)
        off += w + n
    ncpus = r.u("I", off, "CPU count")
    off += 4
    tag = r.data[off : off + 10]
    while tag.startswith(b"options"):
        off += 10
        while True:
            oid = r.u("H", off, "option id")
            off += 2
            if oid == OPT_DONE:
                break
            osize = r.u("I", off, "option size")
            r.need(off + 4, osize, f"option {oid}")
            options.add(oid)
            off += 4 + osize
        tag = r.data[off : off + 10]
    if tag.startswith(b"flyrecord"):
        off += 10
        for cpu in range(min(ncpus, 65536)):
            coff, csize = r.u("Q", off, "CPU data offset"), r.u("Q", off + 8, "CPU data size")
            r.need(coff, csize, f"CPU {cpu} data")
            off += 16
    elif not tag.startswith(b"latency"):
        r.fail(f"unknown data section tag {tag!r} at byte {off}")
