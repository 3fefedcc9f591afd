#!/usr/bin/env python3
"""Write the hostile trace.dat corpus of tests/test_tracedat_hostile.py.

Every file of ``tests/data/hostile/`` except the two bases is a copy of a base with one
kind of damage (or, for the invalid-UTF-8 comm, one hostile but legal change), put where
the damage belongs by walking the file's real layout (trace-cmd.dat.v6(5)/v7(5)): the
header, the sections and options, the event formats, each CPU's data and, in the
uncompressed base, its ring-buffer pages and records. ``manifest.json`` says for each
file what a reader must do with it: ``error`` (TraceError; the CLI exits 2 with one
stderr line naming the file), ``warning`` (loads; exactly the base's events minus the
``skipped`` ones, and one warning naming what was skipped, or the damaged part that
the result does not use) or ``ok`` (loads, all the base's events, no warning). An
error may list ``error_mentions``: regexes its one line must match (what is wrong,
and where).

The bases (committed beside the damaged files, and themselves part of the corpus as
``ok``) come from the real sample ``sample_traces/idle-sleep.dat`` (v7, zstd, 1595
events) with ``--bases``, which needs trace-cmd:

* ``base-v6.dat``: ``trace-cmd convert --file-version 6 --compression none`` of the
  sample, with the event formats of the systems that have no record in it left out (99
  of 101 systems; 2 MB of format text): uncompressed, version 6, 0.1 MB;
* ``base-v7-zstd.dat``: ``trace-cmd convert --compression zstd`` of base-v6.dat.

A third base, ``base-v6-small.dat`` (base-v6.dat with each CPU's first page only,
156 events, 48 KB), is written by this script itself: it carries the damage that
needs an uncompressed file, at a third of the size.

``--bases`` checks that ``trace-cmd report`` prints the same events for both as for the
sample, and that this script's own page walker counts the same events. Without
``--bases`` the script needs nothing but Python, and writing the corpus twice gives the
same bytes (the test checks the committed corpus against a fresh run).

    .venv/bin/python scripts/make_hostile.py            # damaged files + manifest.json
    .venv/bin/python scripts/make_hostile.py --bases    # first rebuild the two bases
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "hostile"
SOURCE = ROOT / "sample_traces" / "idle-sleep.dat"
BASE6 = "base-v6.dat"
BASE7 = "base-v7-zstd.dat"
BASE6_SMALL = "base-v6-small.dat"  # written from BASE6: each CPU's first page only

MAGIC = b"\x17\x08\x44tracing"
COMMIT_MASK = (1 << 27) - 1
MISSING_EVENTS = 1 << 31
T_PADDING, T_TIME_EXTEND, T_TIME_STAMP = 29, 30, 31

# v7 option ids (trace-cmd.dat.v7(5))
OPT_DONE, OPT_DATE, OPT_CPUSTAT, OPT_BUFFER, OPT_OFFSET, OPT_CPUCOUNT = 0, 1, 2, 3, 7, 8
OPT_EVENT_FORMATS, OPT_CMDLINES = 18, 21
SECTION_OPTIONS = {15, 16, 17, 18, 19, 20, 21, 23, 25}


class LayoutError(Exception):
    pass


def u16(d, o):
    return struct.unpack_from("<H", d, o)[0]


def u32(d, o):
    return struct.unpack_from("<I", d, o)[0]


def u64(d, o):
    return struct.unpack_from("<Q", d, o)[0]


def cstr(d, o):
    end = d.index(b"\0", o)
    return bytes(d[o:end]), end + 1


def _initial_header(d: bytes) -> dict:
    if not d.startswith(MAGIC):
        raise LayoutError("not a trace.dat")
    version, off = cstr(d, len(MAGIC))
    if d[off] != 0:
        raise LayoutError("only little-endian files are handled here")
    return {
        "version": version,
        "endian_off": off,
        "long_size_off": off + 1,
        "page_size_off": off + 2,
        "page_size": u32(d, off + 2),
        "end": off + 6,
    }


# --------------------------------------------------------------------- v6 layout


@dataclass
class Blob:
    """A length-prefixed piece of a v6 file: where its size field is, where the bytes are."""

    size_off: int
    off: int
    size: int

    @property
    def end(self):
        return self.off + self.size


@dataclass
class V6:
    data: bytes
    head: dict
    header_page: Blob
    header_event: Blob
    ftrace: list  # [Blob]
    systems: list  # [(name, [Blob])]
    kallsyms: Blob
    printk: Blob
    cmdlines: Blob
    cpus_off: int
    options_off: int  # the "options  " tag, or -1
    options: list  # [(id_off, id, Blob)]
    flyrecord_off: int
    cpu_table: list  # [(entry_off, data_off, size)]
    clock: Blob  # the trace_clock text after the CPU table

    def formats(self):
        """(system, Blob) of every event format, ftrace's first."""
        yield from ((b"ftrace", b) for b in self.ftrace)
        for name, blobs in self.systems:
            yield from ((name, b) for b in blobs)


def _formats_v6(d, off):
    n = u32(d, off)
    off += 4
    out = []
    for _ in range(n):
        size = u64(d, off)
        out.append(Blob(off, off + 8, size))
        off += 8 + size
    return out, off


def parse_v6(d: bytes) -> V6:
    head = _initial_header(d)
    if head["version"] != b"6":
        raise LayoutError("not version 6")
    off = head["end"]
    hdrs = []
    for label in (b"header_page\0", b"header_event\0"):
        if d[off : off + len(label)] != label:
            raise LayoutError(f"no {label!r} at {off}")
        off += len(label)
        hdrs.append(Blob(off, off + 8, u64(d, off)))
        off = hdrs[-1].end
    ftrace, off = _formats_v6(d, off)
    nsys = u32(d, off)
    off += 4
    systems = []
    for _ in range(nsys):
        name, off = cstr(d, off)
        fmts, off = _formats_v6(d, off)
        systems.append((name, fmts))
    blobs = []
    for width in (4, 4, 8):  # kallsyms, printk, cmdlines
        size = u32(d, off) if width == 4 else u64(d, off)
        blobs.append(Blob(off, off + width, size))
        off = blobs[-1].end
    cpus_off = off
    cpus = u32(d, off)
    off += 4
    options_off, options = -1, []
    if d[off : off + 10] == b"options  \0":
        options_off = off
        off += 10
        while True:
            oid = u16(d, off)
            if oid == 0:
                off += 2
                break
            options.append((off, oid, Blob(off + 2, off + 6, u32(d, off + 2))))
            off = options[-1][2].end
    if d[off : off + 10] != b"flyrecord\0":
        raise LayoutError(f"no flyrecord at {off}")
    fly = off
    off += 10
    table = []
    for _ in range(cpus):
        table.append((off, u64(d, off), u64(d, off + 8)))
        off += 16
    clock = Blob(off, off + 8, u64(d, off))  # u64 size + the trace_clock file's text
    return V6(
        d,
        head,
        hdrs[0],
        hdrs[1],
        ftrace,
        systems,
        *blobs,
        cpus_off,
        options_off,
        options,
        fly,
        table,
        clock,
    )


def write_v6(
    head: bytes,
    header_page: bytes,
    header_event: bytes,
    ftrace: list,
    systems: list,
    kallsyms: bytes,
    printk: bytes,
    cmdlines: bytes,
    cpus: int,
    options: list | None,
    cpu_data: list,
    clock: bytes,
    page_size: int,
) -> bytes:
    """A version-6 file laid out as trace-cmd writes one (checked: parse + write gives
    trace-cmd's own v6 file back byte for byte, see make_bases)."""
    out = bytearray(head)
    out += b"header_page\0" + struct.pack("<Q", len(header_page)) + header_page
    out += b"header_event\0" + struct.pack("<Q", len(header_event)) + header_event
    out += struct.pack("<I", len(ftrace))
    for t in ftrace:
        out += struct.pack("<Q", len(t)) + t
    out += struct.pack("<I", len(systems))
    for name, texts in systems:
        out += name + b"\0" + struct.pack("<I", len(texts))
        for t in texts:
            out += struct.pack("<Q", len(t)) + t
    out += struct.pack("<I", len(kallsyms)) + kallsyms
    out += struct.pack("<I", len(printk)) + printk
    out += struct.pack("<Q", len(cmdlines)) + cmdlines
    out += struct.pack("<I", cpus)
    if options is not None:
        out += b"options  \0"
        for oid, body in options:
            out += struct.pack("<HI", oid, len(body)) + body
        out += struct.pack("<H", 0)
    out += b"flyrecord\0"
    table = len(out)
    out += bytes(16 * len(cpu_data))
    out += struct.pack("<Q", len(clock)) + clock
    for cpu, chunk in enumerate(cpu_data):
        out += bytes(-len(out) % page_size)
        struct.pack_into("<QQ", out, table + 16 * cpu, len(out), len(chunk))
        out += chunk
    return bytes(out)


@dataclass
class V6Parts:
    """The parts of a v6 file, to change some and write it again (every size and offset
    recomputed)."""

    head: bytes
    header_page: bytes
    header_event: bytes
    ftrace: list
    systems: list
    kallsyms: bytes
    printk: bytes
    cmdlines: bytes
    cpus: int
    options: list | None
    cpu_data: list
    clock: bytes
    page_size: int

    @classmethod
    def of(cls, lay: V6) -> V6Parts:
        d = lay.data
        take = lambda b: bytes(d[b.off : b.end])  # noqa: E731
        return cls(
            bytes(d[: lay.head["end"]]),
            take(lay.header_page),
            take(lay.header_event),
            [take(b) for b in lay.ftrace],
            [(name, [take(b) for b in blobs]) for name, blobs in lay.systems],
            take(lay.kallsyms),
            take(lay.printk),
            take(lay.cmdlines),
            len(lay.cpu_table),
            None if lay.options_off < 0 else [(oid, take(b)) for _, oid, b in lay.options],
            [bytes(d[o : o + n]) for _, o, n in lay.cpu_table],
            take(lay.clock),
            lay.head["page_size"],
        )

    def write(self) -> bytes:
        return write_v6(
            self.head,
            self.header_page,
            self.header_event,
            self.ftrace,
            self.systems,
            self.kallsyms,
            self.printk,
            self.cmdlines,
            self.cpus,
            self.options,
            self.cpu_data,
            self.clock,
            self.page_size,
        )

    def edit_format(self, event: str, edit) -> None:
        """Replace the format text of ``event`` by ``edit(text)``."""
        name = b"name: " + event.encode() + b"\n"
        hits = 0
        for i, t in enumerate(self.ftrace):
            if t.startswith(name):
                self.ftrace[i] = edit(t)
                hits += 1
        for _, texts in self.systems:
            for i, t in enumerate(texts):
                if t.startswith(name):
                    texts[i] = edit(t)
                    hits += 1
        if hits != 1:
            raise LayoutError(f"{hits} formats named {event}")


# --------------------------------------------------------------------- v7 layout


@dataclass
class Section:
    off: int  # the section header: u16 id, u16 flags, u32 string id, u64 size
    id: int
    flags: int
    size: int

    @property
    def content(self):
        return self.off + 16

    @property
    def end(self):
        return self.off + 16 + self.size


@dataclass
class Option:
    section: Section
    off: int  # u16 id, u32 size, data
    id: int
    size: int

    @property
    def data(self):
        return self.off + 6


@dataclass
class V7:
    data: bytes
    head: dict
    compression: bytes
    first_options_field: int
    option_sections: list  # [Section]
    options: list  # [Option]
    sections: dict  # option id -> Section it points to
    buffer: dict  # the top buffer's BUFFER option, fields and offsets
    trailing: list  # [Section] after everything the options point to (STRINGS)


def parse_v7(d: bytes) -> V7:
    head = _initial_header(d)
    if head["version"] != b"7":
        raise LayoutError("not version 7")
    comp, off = cstr(d, head["end"])
    _, off = cstr(d, off)  # compression version
    first = off
    nxt = u64(d, off)
    opt_sections, options, sections, buffers = [], [], {}, []
    while nxt:
        sec = Section(nxt, u16(d, nxt), u16(d, nxt + 2), u64(d, nxt + 8))
        if sec.id != 0 or sec.flags & 1:
            raise LayoutError(f"options section at {nxt} is not a plain options section")
        opt_sections.append(sec)
        o, nxt = sec.content, 0
        while o < sec.end:
            opt = Option(sec, o, u16(d, o), u32(d, o + 2))
            options.append(opt)
            if opt.id == OPT_DONE:
                nxt = u64(d, opt.data)
                break
            if opt.id in SECTION_OPTIONS:
                at = u64(d, opt.data)
                sections[opt.id] = Section(at, u16(d, at), u16(d, at + 2), u64(d, at + 8))
            if opt.id == OPT_BUFFER:
                buffers.append(_buffer_option(d, opt))
            o = opt.data + opt.size
    top = [b for b in buffers if b["name"] == b""]
    if len(top) != 1:
        raise LayoutError("no single top-level BUFFER option")
    # what follows the last thing the options point to: sections, back to back (trace-cmd
    # writes the STRINGS section, id 15, the section descriptions, last)
    end = max(
        [x.end for x in opt_sections + list(sections.values())]
        + [c["offset"] + 4 + c["size"] for b in buffers for c in b["cpus"]]
    )
    trailing = []
    while end + 16 <= len(d):
        trailing.append(Section(end, u16(d, end), u16(d, end + 2), u64(d, end + 8)))
        end = trailing[-1].end
    return V7(d, head, comp, first, opt_sections, options, sections, top[0], trailing)


def _buffer_option(d, opt: Option) -> dict:
    o = opt.data
    fly = u64(d, o)
    name, o = cstr(d, o + 8)
    clock, o = cstr(d, o)
    page_size_off = o
    ncpu = u32(d, o + 4)
    o += 8
    cpus = []
    for _ in range(ncpu):
        cpus.append(
            {
                "entry": o,
                "cpu": u32(d, o),
                "offset_off": o + 4,
                "offset": u64(d, o + 4),
                "size_off": o + 12,
                "size": u64(d, o + 12),
            }
        )
        o += 20
    at = fly
    return {
        "option": opt,
        "name": name,
        "clock": clock,
        "page_size_off": page_size_off,
        "flyrecord": Section(at, u16(d, at), u16(d, at + 2), u64(d, at + 8)),
        "cpus": cpus,
    }


# ------------------------------------------------------------- formats and pages


@dataclass
class Format:
    system: str
    name: str
    id: int
    fields: dict  # name -> (offset, size)
    blob: Blob | None = None


def parse_format(system: bytes, text: bytes, blob=None) -> Format:
    s = text.decode("latin-1")
    name = re.search(r"^name: (\S+)", s, re.M).group(1)
    eid = int(re.search(r"^ID: (\d+)", s, re.M).group(1))
    fields = {}
    for m in re.finditer(r"field:(.*?);\s*offset:(\d+);\s*size:(\d+);", s):
        decl = m.group(1).strip()
        fname = re.sub(r"\[.*\]$", "", decl.split()[-1])
        fields[fname] = (int(m.group(2)), int(m.group(3)))
    return Format(system.decode(), name, eid, fields, blob)


def formats_v6(lay: V6) -> dict:
    """event id -> Format, of every format in a v6 file."""
    d = lay.data
    out = {}
    for system, b in lay.formats():
        f = parse_format(system, bytes(d[b.off : b.end]), b)
        out[f.id] = f
    return out


def header_page_fields(text: bytes) -> dict:
    return {
        m.group(1): (int(m.group(2)), int(m.group(3)))
        for m in re.finditer(rb"field: [^;]*?(\w+);\s*offset:(\d+);\s*size:(\d+);", text)
    }


@dataclass
class Record:
    ts: int
    off: int  # file offset of the payload (common_type first)
    size: int
    id: int


@dataclass
class Page:
    cpu: int
    off: int
    ts: int
    commit: int
    records: list = field(default_factory=list)


def walk_pages(lay: V6) -> list:
    """Every ring-buffer page of every CPU, with its data records (the rules of
    libtraceevent's kbuffer-parse.c, as trace-cmd.dat.v6(5) describes them)."""
    d = lay.data
    hp = header_page_fields(bytes(d[lay.header_page.off : lay.header_page.end]))
    commit_off, commit_size = hp[b"commit"]
    data_off = hp[b"data"][0]
    psize = lay.head["page_size"]
    pages = []
    for cpu, (_, off, size) in enumerate(lay.cpu_table):
        if size % psize:
            raise LayoutError(f"CPU {cpu} data is not whole pages")
        for p in range(off, off + size, psize):
            ts = u64(d, p)
            commit = int.from_bytes(d[p + commit_off : p + commit_off + commit_size], "little")
            page = Page(cpu, p, ts, commit)
            pages.append(page)
            n = commit & COMMIT_MASK
            base = p + data_off
            pos = 0
            while pos < n:
                hdr = u32(d, base + pos)
                tl, delta = hdr & 0x1F, hdr >> 5
                if tl == T_PADDING:
                    if delta == 0:
                        break
                    length = u32(d, base + pos + 4)
                    ts += delta
                    pos += 4 + length + (4 if length == 0 else 0)
                    continue
                if tl in (T_TIME_EXTEND, T_TIME_STAMP):
                    v = (u32(d, base + pos + 4) << 27) + delta
                    ts = v | (ts & (0xF8 << 56)) if tl == T_TIME_STAMP else ts + v
                    pos += 8
                    continue
                if tl == 0:
                    length = ((u32(d, base + pos + 4) - 4) + 3) & ~3
                    payload = base + pos + 8
                    pos += 8 + length
                else:
                    length = tl * 4
                    payload = base + pos + 4
                    pos += 4 + length
                ts += delta
                page.records.append(Record(ts, payload, length, u16(d, payload)))
    return pages


def event_counts(pages, fmts) -> dict:
    c = Counter(fmts[r.id].name for p in pages for r in p.records)
    return dict(sorted(c.items()))


# -------------------------------------------------------------------------- damage


def patch(d: bytes, off: int, new: bytes) -> bytes:
    return d[:off] + new + d[off + len(new) :]


def put_u32(d, off, v):
    return patch(d, off, struct.pack("<I", v))


def put_u64(d, off, v):
    return patch(d, off, struct.pack("<Q", v))


def _edit_number(text: bytes, anchor: bytes, key: bytes, new: bytes) -> bytes:
    """``key<digits>`` in the first line of ``text`` that contains ``anchor``, with the
    digits replaced by ``new``."""
    line_at = text.index(anchor)
    start = text.rfind(b"\n", 0, line_at) + 1
    end = text.index(b"\n", line_at)
    line = text[start:end]
    m = re.search(re.escape(key) + rb"(\d+)", line)
    return text[: start + m.start(1)] + new + text[start + m.end(1) :]


class Corpus:
    def __init__(self, out: Path):
        self.out = out
        self.files: dict[str, dict] = {}
        self.bytes: dict[str, bytes] = {}

    def add(
        self, name: str, data: bytes, base: str, outcome: str, damage: str, why: str, **extra
    ) -> None:
        assert name.endswith(".dat") and name not in self.files
        self.bytes[name] = data
        self.files[name] = {"base": base, "outcome": outcome, "damage": damage, "why": why, **extra}


E_LAYOUT = (
    "the file's own layout is inconsistent here: a reader that went on would read "
    "bytes as something they are not, so it refuses the file"
)


def damage_v7(c: Corpus, d: bytes) -> None:
    lay = parse_v7(d)
    buf = lay.buffer
    fly = buf["flyrecord"]
    if not fly.flags & 1:
        raise LayoutError("the v7 base is not compressed")
    cpu1 = buf["cpus"][1]
    cpu0 = buf["cpus"][0]
    formats = lay.sections[OPT_EVENT_FORMATS]
    if not formats.flags & 1:
        raise LayoutError("the event formats of the v7 base are not compressed")

    c.add(
        "v7-page-size-0.dat",
        put_u32(d, lay.head["page_size_off"], 0),
        BASE7,
        "error",
        "the file header's page size (u32 after the long size) set to 0",
        "a page size of 0 cannot be: every page offset would divide by it (libtracecmd "
        "divides by zero here)",
    )
    c.add(
        "v7-zstd-chunk-count-0-cpu1.dat",
        put_u32(d, cpu1["offset"], 0),
        BASE7,
        "error",
        f"CPU 1's compressed data (at {cpu1['offset']}) starts with a chunk count of 0",
        "0 chunks in a CPU data range of "
        f"{cpu1['size']} bytes contradicts the BUFFER option; reading 0 chunks would drop "
        "all of CPU 1's events without a word",
    )
    c.add(
        "v7-flyrecord-compression-flag-cleared.dat",
        patch(d, fly.off + 2, struct.pack("<H", fly.flags & ~1)),
        BASE7,
        "error",
        f"the 'buffer flyrecord' section (at {fly.off}) has its compression flag cleared",
        "the CPU data then reads as raw pages, which they are not (compressed chunks): "
        "the page headers do not hold",
    )
    c.add(
        "v7-formats-compression-flag-cleared.dat",
        patch(d, formats.off + 2, struct.pack("<H", formats.flags & ~1)),
        BASE7,
        "error",
        f"the event formats section (at {formats.off}) has its compression flag cleared",
        "the compressed bytes then read as the format list, which they are not",
    )
    # an option whose size runs past the end of its options section
    opt = next(o for o in lay.options if o.id == OPT_CPUCOUNT)
    past = opt.section.end - opt.data + 8
    c.add(
        "v7-option-size-past-section.dat",
        put_u32(d, opt.off + 2, past),
        BASE7,
        "error",
        f"the CPUCOUNT option at {opt.off} says {past} bytes, 8 more than its options "
        f"section (ending at {opt.section.end}) holds",
        "an option that runs out of its section: " + E_LAYOUT,
    )
    size = len(d) - cpu1["offset"] + 4096
    c.add(
        "v7-cpu1-size-past-eof.dat",
        put_u64(d, cpu1["size_off"], size),
        BASE7,
        "error",
        f"the BUFFER option's size of CPU 1's data set to {size}: 4096 bytes past the end "
        "of the file",
        "the data the file declares is not in it (a truncated file)",
    )
    tail = lay.trailing[-1] if lay.trailing else None
    if tail is None or tail.end != len(d):
        raise LayoutError("the v7 base does not end with a section")
    last = (
        f": the end of the section at {tail.off} (id {tail.id}"
        + (", STRINGS: the section descriptions" if tail.id == 15 else "")
        + (", compressed" if tail.flags & 1 else "")
        + "), the last in the file"
    )
    cuts = {
        "in-header": (lay.head["page_size_off"] + 2, "inside the file header's page size"),
        "in-formats": (
            formats.content + formats.size // 2,
            "in the middle of the compressed event formats section",
        ),
        "in-options": (
            lay.option_sections[0].content + lay.option_sections[0].size // 2,
            "in the middle of the first options section",
        ),
        "in-cpu-data": (
            cpu0["offset"] + cpu0["size"] // 2,
            "in the middle of CPU 0's compressed data",
        ),
        "last-byte": (len(d) - 1, "the last byte removed" + last),
    }
    for tag, (at, where) in cuts.items():
        c.add(
            f"v7-truncated-{tag}.dat",
            d[:at],
            BASE7,
            "error",
            f"truncated to {at} of {len(d)} bytes: {where}",
            "a truncated file: what the file declares is not all there",
        )


def v7_last_options(d: bytes, lay: V7, add=(), buffer_body: bytes | None = None, buffers=1):
    """``d`` with its last options section (the top BUFFER option's, which only the
    STRINGS section follows: no offset in the file points past it) rewritten: the
    options ``add`` ((id, body)...) first, then the BUFFER option (``buffer_body`` in
    place of its own, ``buffers`` times), then the rest; the section size follows."""
    opt = lay.buffer["option"]
    sec = opt.section
    if lay.option_sections[-1] != sec or any(t.id != 15 for t in lay.trailing):
        raise LayoutError("the top BUFFER option is not in the last options section")
    body = buffer_body if buffer_body is not None else bytes(d[opt.data : opt.data + opt.size])
    new = b"".join(struct.pack("<HI", oid, len(b)) + b for oid, b in add)
    new += bytes(d[sec.content : opt.off])
    new += (struct.pack("<HI", OPT_BUFFER, len(body)) + body) * buffers
    new += bytes(d[opt.data + opt.size : sec.end])
    head = struct.pack("<HHIQ", sec.id, sec.flags, u32(d, sec.off + 4), len(new))
    return d[: sec.off] + head + new + d[sec.end :]


def buffer_body(d: bytes, lay: V7, cpus: list) -> bytes:
    """The top BUFFER option's bytes with this CPU table: [(cpu, offset, size)...]."""
    opt = lay.buffer["option"]
    head = bytes(d[opt.data : lay.buffer["page_size_off"] + 4])
    table = b"".join(struct.pack("<IQQ", *c) for c in cpus)
    return head + struct.pack("<I", len(cpus)) + table


def text_option(text: str) -> bytes:
    return text.encode() + b"\0"


E_TIME = (
    "every record's time is its CPU's clock plus the time offset options; a time "
    "that does not fit 0..2^63 ns is damage, and every later time on the CPU is built on "
    "it, so no count of bad records can be given"
)


def damage_v7_numbers(c: Corpus, d: bytes) -> None:
    """Item 2 of issue 23: integer arithmetic on the file's numbers."""
    lay = parse_v7(d)
    files = {
        "offset-int64-max": (
            [(OPT_OFFSET, text_option("9223372036854775807"))],
            "an OFFSET option of INT64_MAX ns (9223372036854775807)",
            "the records' times (403 s + INT64_MAX ns) are past 2^63: a reader that adds "
            "in 64 bits gives negative timestamps; " + E_TIME,
            [r"outside 0 to 2\^63", r"CPU \d"],
        ),
        "offset-int64-min": (
            [(OPT_OFFSET, text_option("-9223372036854775808"))],
            "an OFFSET option of INT64_MIN ns (-9223372036854775808)",
            "a parser that reads the digits and negates them negates INT64_MIN (undefined "
            "behaviour); the value itself is legal, the times it gives are not: " + E_TIME,
            [r"outside 0 to 2\^63"],
        ),
        "offsets-sum-overflow": (
            [(OPT_OFFSET, text_option("4611686018427387904"))] * 2,
            "two OFFSET options of 2^62 ns each",
            "each is a legal value, their sum is not: an overflow in the reader's "
            "arithmetic (undefined behaviour in C), refused naming the option",
            [r"OFFSET option", r"beyond 64 bits"],
        ),
        "date-beyond-64-bits": (
            [(OPT_DATE, text_option("9223372036854776"))],
            "a DATE option of 9223372036854776 us (the microseconds between the trace clock "
            "and the time of day)",
            "in nanoseconds it is more than 64 bits hold",
            [r"DATE option", r"microseconds"],
        ),
    }
    for tag, (opts, damage, why, mentions) in files.items():
        c.add(
            f"v7-{tag}.dat",
            v7_last_options(d, lay, opts),
            BASE7,
            "error",
            damage + " added to the last options section",
            why,
            error_mentions=mentions,
        )


def damage_v7_contradictions(c: Corpus, d: bytes) -> None:
    """Item 3 of issue 23: what the file says in one place against another."""
    lay = parse_v7(d)
    cpu0, cpu1 = lay.buffer["cpus"][:2]
    table = [(x["cpu"], x["offset"], x["size"]) for x in lay.buffer["cpus"]]
    cpucounts = [o for o in lay.options if o.id == OPT_CPUCOUNT]
    if len(table) != 2 or len(cpucounts) < 2:
        raise LayoutError("the v7 base has not 2 CPUs and CPUCOUNT options")
    E_CPUS = "the CPU table and the CPU count contradict each other: " + E_LAYOUT
    E_HOLE = (
        "the buffer's data section holds that CPU's compressed pages, which the table no "
        "longer accounts for: reading on would drop its events without a word"
    )
    E_ONCE = (
        "trace-cmd writes it once; a second one would be read on top of the first, "
        "which is damage whichever is right"
    )
    cmdlines = lay.sections[OPT_CMDLINES]
    cases = [
        (
            "buffer-cpu-id-4096",
            patch(d, cpu1["entry"], struct.pack("<I", 4096)),
            "the BUFFER option's CPU id of CPU 1's data set to 4096 (CPUCOUNT says 2)",
            E_CPUS + " (believed, it makes a 4097-CPU trace)",
            [r"CPU 4096", r"2 CPUs"],
        ),
        (
            "buffer-cpu-count-0",
            patch(d, lay.buffer["page_size_off"] + 4, struct.pack("<I", 0)),
            "the BUFFER option's CPU count set to 0 (its two CPU entries left in place)",
            "the option holds 40 bytes that its count does not account for",
            [r"BUFFER option", r"40 bytes after its table of 0 CPUs"],
        ),
        (
            "buffer-cpu-table-empty",
            v7_last_options(d, lay, buffer_body=buffer_body(d, lay, [])),
            "the BUFFER option rewritten with a CPU count of 0 and no CPU entries",
            "the buffer's data section still holds both CPUs' data: " + E_HOLE,
            [r"no CPU's data holds", r"0 CPUs with data"],
        ),
        (
            "cpu1-size-0",
            put_u64(d, cpu1["size_off"], 0),
            "the BUFFER option's size of CPU 1's data set to 0",
            E_HOLE,
            [r"bytes of data at offset \d+ that no CPU's data holds"],
        ),
        (
            "cpu0-offset-outside-section",
            put_u64(d, cpu0["offset_off"], lay.buffer["flyrecord"].off - 4096),
            "the BUFFER option's offset of CPU 0's data moved 4096 bytes before the buffer's "
            "data section",
            "the CPU's data then lies in other sections: " + E_LAYOUT,
            [r"CPU 0 data", r"outside the buffer's data section"],
        ),
        (
            "cpucount-options-disagree",
            put_u32(d, cpucounts[1].data, 3),
            f"the second of the {len(cpucounts)} CPUCOUNT options (at {cpucounts[1].off}) "
            "set to 3 (the others say 2)",
            "trace-cmd writes the same count each time: " + E_CPUS,
            [r"CPUCOUNT options disagree"],
        ),
        (
            "cpucount-1",
            _put_all_u32(d, [o.data for o in cpucounts], 1),
            f"all {len(cpucounts)} CPUCOUNT options set to 1; the BUFFER option lists CPUs 0 and 1",
            E_CPUS,
            [r"CPUCOUNT option says 1 CPUs", r"lists 2"],
        ),
        (
            "cpucount-option-8-bytes",
            v7_last_options(d, lay, [(OPT_CPUCOUNT, struct.pack("<Q", 2))]),
            "a CPUCOUNT option of 8 bytes (a u64 2) added",
            "the option is a u32: another size is damage to its framing, not a prefix to read",
            [r"CPUCOUNT option", r"8 bytes, not 4"],
        ),
        (
            "cmdlines-option-twice",
            v7_last_options(d, lay, [(OPT_CMDLINES, struct.pack("<Q", cmdlines.off))]),
            "a second CMDLINES option, pointing at the same section, added",
            E_ONCE,
            [r"second CMDLINES option"],
        ),
        (
            "buffer-option-twice",
            v7_last_options(d, lay, buffers=2),
            "the top BUFFER option repeated",
            E_ONCE + " (the second buffer '' was ignored)",
            [r"two BUFFER options for buffer ''"],
        ),
        (
            "cpustat-overrun-2-64",
            v7_last_options(
                d,
                lay,
                [(OPT_CPUSTAT, text_option("CPU: 0\nentries: 0\noverrun: 18446744073709551616\n"))],
            ),
            "a CPUSTAT option for CPU 0 with 'overrun: 18446744073709551616' (2^64) added",
            "the ring buffer's counters are 64-bit and no buffer overwrites 2^63 events; "
            "believed, it becomes the lost-event count of CPU 0",
            [r"CPUSTAT", r"overrun: 18446744073709551616"],
        ),
        (
            "cpustat-cpu-9",
            v7_last_options(
                d, lay, [(OPT_CPUSTAT, text_option("CPU: 9\nentries: 0\noverrun: 5\n"))]
            ),
            "a CPUSTAT option for CPU 9 (of 2) added",
            "statistics of a CPU the file does not have: believed, 5 events lost on a CPU "
            "that is not there",
            [r"CPU: 9", r"2 CPUs"],
        ),
        (
            "cmdlines-compression-flag-cleared",
            patch(d, cmdlines.off + 2, struct.pack("<H", cmdlines.flags & ~1)),
            f"the cmdlines section (at {cmdlines.off}) has its compression flag cleared",
            "its compressed bytes then read as the saved task names, which they are not "
            "(a reader that skipped the section on any failure lost the names of the tasks "
            "that appear only there, so the metrics changed)",
            [r"cmdlines"],
        ),
        (
            "cmdlines-zstd-magic",
            patch(d, cmdlines.content + 8, bytes([d[cmdlines.content + 8] ^ 0xFF])),
            f"the first byte of the zstd frame in the cmdlines section (at {cmdlines.off}) "
            "XOR 0xff",
            "the section does not decompress",
            [r"cmdlines section", r"does not decompress"],
        ),
        (
            "cmdlines-zstd-text",
            patch(d, cmdlines.content + 44, bytes([d[cmdlines.content + 44] ^ 0xFF])),
            f"a byte of the zstd literals in the cmdlines section (at {cmdlines.off}) XOR "
            "0xff: it decompresses to its declared size, to text with a line that is not "
            "'pid name'",
            "the kernel writes 'pid name' lines only; libtraceevent stops at such a line, "
            "dropping the names after it without a word",
            [r"saved task names \(cmdlines\)", r"not 'pid name'"],
        ),
    ]
    for tag, data, damage, why, mentions in cases:
        c.add(f"v7-{tag}.dat", data, BASE7, "error", damage, why, error_mentions=mentions)


def _put_all_u32(d: bytes, offsets, v: int) -> bytes:
    for off in offsets:
        d = put_u32(d, off, v)
    return d


def small_v6(base6: bytes) -> bytes:
    """base-v6.dat with each CPU's first page only."""
    lay = parse_v6(base6)
    parts = V6Parts.of(lay)
    parts.cpu_data = [chunk[: parts.page_size] for chunk in parts.cpu_data]
    return parts.write()


def damage_v6_small(c: Corpus, d: bytes) -> None:
    """The damage that needs uncompressed pages or texts, on the small v6 base."""
    lay = parse_v6(d)
    pages = walk_pages(lay)
    years = 11 * 366 * 86400 * 10**9
    later = d
    for p in pages:
        if p.cpu == 1:
            later = put_u64(later, p.off, p.ts + years)
    first = min(r.ts for p in pages for r in p.records)
    c.add(
        "v6-small-cpu1-11-years-later.dat",
        later,
        BASE6_SMALL,
        "error",
        f"CPU 1's page timestamps moved {years} ns (11 years) later; CPU 0's first record "
        f"is at {first} ns",
        "a recording spans seconds to days, not years: a timestamp is damaged (its CPU's "
        "times stay in order, so only the span shows it), and every duration and rate "
        "over it would be off by orders of magnitude; which CPU is right cannot be told",
        error_mentions=[r"CPU 1", r"days after the trace's first record"],
    )
    first = pages[0]
    hidden = len(first.records)
    for tag, commit, what in (
        ("commit-0", 0, "0"),
        ("commit-high-bits", 1 << 27, "only bit 27 set (size 0)"),
    ):
        c.add(
            f"v6-small-cpu0-page-{tag}.dat",
            put_u64(d, first.off + 8, commit),
            BASE6_SMALL,
            "error",
            f"the commit word of CPU 0's first page (at {first.off}, {hidden} events) set to "
            f"{what}",
            "the page's events are there but the word says there are none: believed, "
            f"{hidden} events vanish without a word",
            error_mentions=[r"CPU 0 page at offset \d+", r"commit|0 bytes of events"],
        )
    cpucounts = [b for _, oid, b in lay.options if oid == OPT_CPUCOUNT]
    c.add(
        "v6-small-cpucount-3.dat",
        _put_all_u32(d, [b.off for b in cpucounts], 3),
        BASE6_SMALL,
        "error",
        f"the {len(cpucounts)} CPUCOUNT options set to 3; the header and the flyrecord "
        "table say 2 CPUs",
        "a CPU count against the header's: one of them is damaged, and believing 3 adds "
        "an idle CPU that never was",
        error_mentions=[r"header says 2 CPUs", r"CPUCOUNT"],
    )
    hp = bytes(d[lay.header_page.off : lay.header_page.end])
    at = hp.index(b"signed:", hp.index(b" overwrite;"))
    c.add(
        "v6-small-header-page-line-garbled.dat",
        patch(d, lay.header_page.off + at, b"zigned:"),
        BASE6_SMALL,
        "warning",
        "header_page text: the 'signed:' of the overwrite field's line changed to 'zigned:'",
        "the reader needs only the timestamp, commit and data lines of header_page; "
        "damage in the others changes no result but is named, not ignored",
        skipped={},
        warning_mentions=[r"header_page", r"\b1 of 4 lines\b", r"line 3\b"],
    )
    pk = bytes(d[lay.printk.off : lay.printk.end])
    nlines = pk.count(b"\n")
    line = pk[: pk.index(b"\n", pk.index(b"\n") + 1)].count(b"\n") + 1
    at = pk.index(b" : ", pk.index(b"\n") + 1)
    c.add(
        "v6-small-printk-line-garbled.dat",
        patch(d, lay.printk.off + at, b" ; "),
        BASE6_SMALL,
        "warning",
        f"printk formats: the ' : ' of line {line} (of {nlines}) changed to ' ; '",
        "the printk formats are not used for any result; damage in them is named, not ignored",
        skipped={},
        warning_mentions=[r"printk formats", rf"\b1 of {nlines} lines\b", rf"line {line}\b"],
    )


def damage_v6(c: Corpus, d: bytes) -> None:
    lay = parse_v6(d)
    fmts = formats_v6(lay)
    pages = walk_pages(lay)
    psize = lay.head["page_size"]
    by_name = {f.name: f for f in fmts.values()}

    def counts_of(page):
        return dict(sorted(Counter(fmts[r.id].name for r in page.records).items()))

    # ---- the file header
    at = lay.head["page_size_off"] + 1
    c.add(
        "v6-page-size-byte-flipped.dat",
        patch(d, at, bytes([d[at] ^ 0xFF])),
        BASE6,
        "error",
        f"byte {at} (the second byte of the header's page size {psize}) XOR 0xff: "
        f"page size {u32(patch(d, at, bytes([d[at] ^ 0xFF])), lay.head['page_size_off'])}",
        "a page size that is no power of two (and no multiple of the CPU data sizes) is "
        "damage in a field the reader validates",
    )

    # ---- header_page text
    hp = bytes(d[lay.header_page.off : lay.header_page.end])
    new = _edit_number(hp, b" commit;", b"size:", b"9")
    assert len(new) == len(hp)
    c.add(
        "v6-header-page-commit-size-9.dat",
        patch(d, lay.header_page.off, new),
        BASE6,
        "error",
        "header_page text: the commit field's 'size:8' changed to 'size:9'",
        "the commit word is the kernel's long (4 or 8 bytes); 9 is no long size, so the "
        "pages cannot be read",
    )
    new = _edit_number(hp, b" data;", b"offset:", b"18")
    assert len(new) == len(hp)
    c.add(
        "v6-header-page-data-offset-18.dat",
        patch(d, lay.header_page.off, new),
        BASE6,
        "error",
        "header_page text: the data field's 'offset:16' changed to 'offset:18'",
        "the events of a page start right after the commit word (offset 8 + size 8); a "
        "header that says otherwise contradicts itself",
    )

    # ---- event formats (written again: these change the length of a format text)
    total = sum(len(p.records) for p in pages)

    def rewrite(event, edit):
        parts = V6Parts.of(lay)
        parts.edit_format(event, edit)
        return parts.write()

    used = set(fmts)
    for event, outcome in (("print", "warning"), ("sched_switch", "error")):
        old = by_name[event].id
        new_id = 60000 + old % 1000
        assert new_id not in used
        n = sum(1 for p in pages for r in p.records if r.id == old)
        kw = {}
        if outcome == "warning":
            kw = {"skipped": {event: n}, "warning_mentions": [rf"\b{n}\b", r"(?i)\bid\b"]}
            why = (
                f"{n} of {total} records ({100 * n / total:.1f} %) carry an id no format "
                "has: bounded damage, skipped and said so"
            )
        else:
            why = (
                f"{n} of {total} records ({100 * n / total:.0f} %) carry an id no format "
                "has: not a few damaged records but a file whose formats do not match "
                "its data (more than 1 % unknown is refused)"
            )
        c.add(
            f"v6-event-id-unknown-{event}.dat",
            rewrite(
                event,
                lambda t, new_id=new_id: re.sub(
                    rb"(?m)^ID: \d+$", b"ID: " + str(new_id).encode(), t
                ),
            ),
            BASE6,
            outcome,
            f"the ID line of {event}'s format changed from {old} to "
            f"{new_id}, so its {n} records refer to id {old}, which no format has",
            why,
            **kw,
        )
    n_switch = sum(1 for p in pages for r in p.records if r.id == by_name["sched_switch"].id)
    c.add(
        "v6-field-size-int-max.dat",
        rewrite(
            "sched_switch", lambda t: _edit_number(t, b" prev_comm[16];", b"size:", b"2147483640")
        ),
        BASE6,
        "error",
        "sched_switch's format: field prev_comm 'size:16;' changed to "
        "'size:2147483640;' (offset 8 + size overflows a 32-bit int)",
        "a field larger than any record (or page) is an impossible format; sched_switch is "
        f"{100 * n_switch / total:.0f} % of the records, so skipping them is no bounded "
        "damage",
    )
    pf = by_name["sched_switch"]
    text = bytes(d[pf.blob.off : pf.blob.end])
    nshift = text.count(b"<< 1")
    assert nshift == 3, nshift
    c.add(
        "v6-print-fmt-div-zero.dat",
        rewrite("sched_switch", lambda t: t.replace(b"<< 1", b"/ 0")),
        BASE6,
        "error",
        f"sched_switch's print fmt: each of the {nshift} '<< 1' of the prev_state "
        "expression replaced by '/ 0'",
        "the print fmt is the only statement in the file of what prev_state's bits mean; "
        "it cannot be evaluated (division by zero), so prev_state_str would be a guess "
        "(and a reader that evaluates it naively dies of SIGFPE)",
    )

    # ---- the CPU data table
    (e0, off0, size0), (e1, off1, size1) = lay.cpu_table[:2]
    past = -(-len(d) // psize) * psize + psize
    c.add(
        "v6-cpu1-offset-past-eof.dat",
        put_u64(d, e1, past),
        BASE6,
        "error",
        f"flyrecord: CPU 1's data offset set to {past}, past the end of the file ({len(d)} bytes)",
        "the data the file declares is not in it",
    )
    assert size0 > psize and off0 + psize + size1 <= len(d)
    c.add(
        "v6-cpu-data-overlap.dat",
        put_u64(d, e1, off0 + psize),
        BASE6,
        "error",
        f"flyrecord: CPU 1's data offset set to {off0 + psize}, one page into CPU 0's data "
        f"[{off0}, {off0 + size0}) (size kept)",
        "two CPUs claiming the same pages: " + E_LAYOUT + " (reading both would count "
        "CPU 0's events twice, on two CPUs)",
    )

    # ---- pages: a zeroed page, a page that goes back in time (CPU 0, with events)
    p0 = [p for p in pages if p.cpu == 0 and p.records and not p.commit & MISSING_EVENTS]
    if len(p0) < 5:
        raise LayoutError("too few pages on CPU 0")
    z = p0[len(p0) // 2]
    c.add(
        "v6-cpu0-page-zeroed.dat",
        patch(d, z.off, bytes(psize)),
        BASE6,
        "error",
        f"CPU 0's page at {z.off} (page {(z.off - off0) // psize} of {size0 // psize}, "
        f"{len(z.records)} events) overwritten with zeros",
        "a zeroed page (timestamp 0, commit 0) is no page the kernel writes between full "
        "ones, so its events are known to be missing; the data is damaged in a way no "
        "count can bound (the damage that zeroed one page may have touched others), so a "
        "reader that feeds a CI gate refuses the file rather than answer with fewer events",
    )
    k = len(p0) // 3
    prev, back = p0[k - 1], p0[k]
    span = back.records[-1].ts - back.ts
    new_ts = prev.ts - span - 1000
    assert new_ts > 0 and prev.records[0].ts > new_ts + span
    c.add(
        "v6-cpu0-time-backwards.dat",
        put_u64(d, back.off, new_ts),
        BASE6,
        "error",
        f"CPU 0's page at {back.off} ({len(back.records)} events): its timestamp set to "
        f"{new_ts}, so all its events lie before the previous page's first one "
        f"({prev.records[0].ts}); the page after it is in order again",
        "time on one CPU never goes back in a real recording: the page's timestamp or the "
        "pages' order is damaged, and which events are right cannot be told, so the file "
        "is corrupt (keeping the page would put its events in the wrong place, skipping "
        "it would drop events that may be the right ones)",
    )

    # ---- invalid UTF-8 in a task name: legal, must load with U+FFFD per bad byte
    sw = by_name["sched_switch"]
    coff, csize = sw.fields["prev_comm"]
    seen = Counter((r.ts, p.cpu) for p in pages for r in p.records if r.id == sw.id)
    for p in pages:
        if p.cpu != 0:
            continue
        for r in p.records:
            comm = bytes(d[r.off + coff : r.off + coff + csize]).split(b"\0")[0]
            if r.id == sw.id and seen[r.ts, 0] == 1 and len(comm) >= 5 and comm.isascii():
                break
        else:
            continue
        break
    new = comm[:1] + b"\xff\xfe" + comm[3:]
    expected = new.decode("utf-8", "replace")
    c.add(
        "v6-prev-comm-invalid-utf8.dat",
        patch(d, r.off + coff, new),
        BASE6,
        "ok",
        f"the prev_comm of the sched_switch on CPU 0 at {r.ts} ns (record at file offset "
        f"{r.off}): {comm.decode()!r} with its 2nd and 3rd bytes replaced by 0xff 0xfe",
        "not damage: a task name is any bytes (prctl(PR_SET_NAME)); it must load, each "
        "invalid byte becoming U+FFFD (bytes.decode('utf-8', 'replace'))",
        check={
            "table": "sched_switch",
            "ts": r.ts,
            "cpu": 0,
            "column": "prev_comm",
            "value": expected,
            "only_row_with_fffd": True,
        },
    )

    # ---- truncations
    hp_mid = lay.header_page.off + lay.header_page.size // 2
    sched = next(blobs for name, blobs in lay.systems if name == b"sched")
    fmt_mid = sched[0].off + sched[0].size // 2
    if not lay.options:
        raise LayoutError("the v6 base has no options")
    opt_mid = lay.options[0][2].off + lay.options[0][2].size // 2
    cuts = {
        "in-header-page": (hp_mid, "in the middle of the header_page text"),
        "in-formats": (fmt_mid, "in the middle of the first sched event format"),
        "in-options": (opt_mid, "inside the data of the first option"),
        "in-cpu-data": (
            off1 + size1 // 2 + 100,
            "in the middle of CPU 1's data (the last CPU: inside one of its pages)",
        ),
        "last-byte": (len(d) - 1, "the last byte removed (the end of CPU 1's last page)"),
    }
    for tag, (at, where) in cuts.items():
        c.add(
            f"v6-truncated-{tag}.dat",
            d[:at],
            BASE6,
            "error",
            f"truncated to {at} of {len(d)} bytes: {where}",
            "a truncated file: what the file declares is not all there",
        )


def make_corpus(out: Path) -> dict:
    base6, base7 = (out / BASE6).read_bytes(), (out / BASE7).read_bytes()
    small = small_v6(base6)
    (out / BASE6_SMALL).write_bytes(small)
    counts = {}
    for name, data in ((BASE6, base6), (BASE6_SMALL, small)):
        lay = parse_v6(data)
        counts[name] = event_counts(walk_pages(lay), formats_v6(lay))
    counts[BASE7] = counts[BASE6]
    c = Corpus(out)
    for name, kind in (
        (BASE6, "version 6, uncompressed"),
        (BASE7, "version 7, zstd"),
        (BASE6_SMALL, f"{BASE6} with each CPU's first page only"),
    ):
        c.files[name] = {
            "base": name,
            "outcome": "ok",
            "damage": f"none: the base itself ({kind})",
            "why": "the undamaged original",
        }
    damage_v7(c, base7)
    damage_v6(c, base6)
    damage_v7_numbers(c, base7)
    damage_v7_contradictions(c, base7)
    damage_v6_small(c, small)
    for name, data in c.bytes.items():
        (out / name).write_bytes(data)
    manifest = {
        "about": "tests/data/hostile: trace.dat files damaged on purpose, and what a reader "
        "must do with each; written by scripts/make_hostile.py (see its docstring "
        "and tests/test_tracedat_hostile.py)",
        "source": str(SOURCE.relative_to(ROOT)),
        "originals": {name: {"events": n} for name, n in counts.items()},
        "outcomes": {
            "error": "schedwake.load raises TraceError (one line, naming the file, matching "
            "every 'error_mentions' regex); the CLI exits 2 with exactly one stderr line "
            "naming the file",
            "warning": "loads with exactly the original's events minus 'skipped' and exactly "
            "one warning (meta['warnings']) that matches every "
            "'warning_mentions' regex; the CLI exits 0 with exactly that one "
            "stderr line, naming the file",
            "ok": "loads with exactly the original's events and no warning; the CLI exits 0 "
            "with nothing on stderr",
        },
        "files": dict(sorted(c.files.items())),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=True) + "\n")
    return manifest


# ----------------------------------------------------------------------- the bases


def _report_lines(path: Path) -> list[str]:
    out = (
        subprocess.run(
            ["trace-cmd", "report", "-N", "-i", str(path)], capture_output=True, check=True
        )
        .stdout.decode("utf-8", "replace")
        .splitlines()
    )
    return [ln for ln in out if not ln.startswith("cpus=")]


def make_bases(out: Path) -> None:
    if not shutil.which("trace-cmd"):
        sys.exit("make_hostile.py --bases needs trace-cmd")
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "full-v6.dat"
        subprocess.run(
            [
                "trace-cmd",
                "convert",
                "-i",
                str(SOURCE),
                "-o",
                str(full),
                "--file-version",
                "6",
                "--compression",
                "none",
            ],
            check=True,
            capture_output=True,
        )
        data = full.read_bytes()
        lay = parse_v6(data)
        parts = V6Parts.of(lay)
        if parts.write() != data:
            raise LayoutError("write_v6 does not give trace-cmd's v6 file back")
        fmts = formats_v6(lay)
        pages = walk_pages(lay)
        used = {fmts[r.id].system.encode() for p in pages for r in p.records}
        parts.systems = [(name, texts) for name, texts in parts.systems if name in used]
        (out / BASE6).write_bytes(parts.write())
        subprocess.run(
            [
                "trace-cmd",
                "convert",
                "-i",
                str(out / BASE6),
                "-o",
                str(out / BASE7),
                "--compression",
                "zstd",
            ],
            check=True,
            capture_output=True,
        )
        want = _report_lines(SOURCE)
        for name in (BASE6, BASE7):
            if _report_lines(out / name) != want:
                raise LayoutError(f"trace-cmd report of {name} differs from the sample's")
        lay6 = parse_v6((out / BASE6).read_bytes())
        mine = event_counts(walk_pages(lay6), formats_v6(lay6))
        theirs = Counter(re.search(r"\s(\w+):\s", ln).group(1) for ln in want)
        if mine != dict(sorted(theirs.items())):
            raise LayoutError(f"page walker counts {mine}, trace-cmd report {dict(theirs)}")
        print(
            f"bases: {BASE6} {(out / BASE6).stat().st_size} bytes, {BASE7} "
            f"{(out / BASE7).stat().st_size} bytes, {sum(mine.values())} events "
            f"(= trace-cmd report); kept systems {sorted(s.decode() for s in used)}"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="corpus directory (default: %(default)s)")
    ap.add_argument(
        "--bases",
        action="store_true",
        help=f"first rebuild {BASE6} and {BASE7} from {SOURCE.name} (needs trace-cmd)",
    )
    ap.add_argument(
        "--from",
        dest="bases_from",
        type=Path,
        default=None,
        help="take the two bases from this directory (default: --out)",
    )
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.bases:
        make_bases(args.out)
    elif args.bases_from is not None and args.bases_from.resolve() != args.out.resolve():
        for name in (BASE6, BASE7):
            shutil.copyfile(args.bases_from / name, args.out / name)
    print(summary(make_corpus(args.out), args.out))
    return 0


def summary(manifest: dict, out: Path) -> str:
    """One line: how many files of each outcome a corpus has, and its bytes."""
    total = sum((out / n).stat().st_size for n in manifest["files"])
    by = Counter(f["outcome"] for f in manifest["files"].values())
    return f"{len(manifest['files'])} files ({dict(sorted(by.items()))}), {total} bytes in {out}"


if __name__ == "__main__":
    sys.exit(main())
