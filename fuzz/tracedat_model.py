"""A little-endian trace.dat as parts, for writing the seeds and for mutating them
with their framing intact.

:class:`TraceDat` parses a version-6 file (trace-cmd.dat.v6(5)) into its parts:
header texts, ftrace and event format texts, kallsyms / printk / cmdlines, options
and each CPU's ring-buffer pages.  :meth:`TraceDat.write` writes the parts back as
version 6, or as version 7 (trace-cmd.dat.v7(5)) uncompressed or zlib-compressed.

:func:`mutate` is the structure-aware half of fuzz_load_tracedat's mutator: it
parses the input, changes one part the way a damaged or hostile file would (a
field's offset/size/signedness, a format line, an event id, a page header word, an
event header in a page, the CPU count, an option, the long or page size) and writes
the file again with every length prefix and offset recomputed, so the damage gets
past the framing checks to the code that interprets it.

Two families aim at what byte-level mutation hardly reaches (issue 23):

* options: numbers at the edges of 64 bits in OFFSET/DATE (their sums and products),
  CPUCOUNT/TSC2NSEC/CPUSTAT values, options repeated or of the wrong size, and, in
  the v7 writer (:attr:`TraceDat.v7`), a BUFFER option whose CPU ids, count or sizes
  contradict the data and the CPUCOUNT option, and section options given twice;
* event-format text: a field's type, ``[N]`` array size (also on a scalar: ``pid_t
  prev_pid[2]``, ``[0]``, ``[-1]``), ``offset:``/``size:``/``signed:`` numbers, two
  fields or two events with one name, ``__data_loc`` fields.
"""

from __future__ import annotations

import random
import re
import struct
import zlib

MAGIC = b"\x17\x08\x44tracing"

INTERESTING = [
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    12,
    15,
    16,
    24,
    28,
    29,
    30,
    31,
    32,
    63,
    64,
    127,
    128,
    255,
    256,
    1023,
    1024,
    4088,
    4095,
    4096,
    4097,
    8192,
    32767,
    32768,
    65535,
    65536,
    (1 << 27) - 1,
    1 << 27,
    (1 << 30) | 16,
    (1 << 31) | 16,
    (1 << 31) - 1,
    1 << 31,
    (1 << 32) - 1,
    1 << 32,
    (1 << 59),
    (1 << 63) - 1,
    1 << 63,
    (1 << 64) - 1,
]
DECIMALS = [
    b"0",
    b"1",
    b"-1",
    b"2",
    b"3",
    b"4",
    b"7",
    b"8",
    b"9",
    b"16",
    b"255",
    b"256",
    b"4095",
    b"4096",
    b"65535",
    b"65536",
    b"2147483647",
    b"2147483648",
    b"-2147483648",
    b"4294967295",
    b"4294967296",
    b"9223372036854775807",
    b"18446744073709551615",
    b"99999999999999999999999",
    b"",
]
PRINT_BITS = [
    b"REC->",
    b"__get_str(",
    b"__get_dynamic_array(",
    b"__print_flags(",
    b"__print_symbolic(",
    b"__print_hex(",
    b"__print_array(",
    b"%s",
    b"%d",
    b"%llu",
    b"%ps",
    b"%pS",
    b"%*s",
    b"%.*s",
    b'"',
    b"(",
    b")",
    b"{",
    b"}",
    b",",
    b"?",
    b":",
    b"&",
    b"|",
    b"<<",
    b"/",
    b"0",
    b"sizeof(",
    b"__get_bitmask(",
    b"\\",
    b"\n",
]
TYPES = [
    b"int",
    b"unsigned int",
    b"char",
    b"char[16]",
    b"u64",
    b"s64",
    b"u8",
    b"long",
    b"unsigned long",
    b"pid_t",
    b"__data_loc char[]",
    b"__rel_loc char[]",
    b"__data_loc unsigned long[]",
    b"void *",
    b"unsigned char",
    b"bool",
    b"u32[4]",
    b"struct x",
    b"char *",
]


SIGNED_EDGES = [
    b"9223372036854775807",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"9223372036854775808",
    b"4611686018427387904",
    b"-4611686018427387904",
    b"0x7fffffffffffffff",
    b"-0x8000000000000000",
    b"0xffffffffffffffff",
    b"9223372036854776",
    b"-9223372036854776",
    b"-403000000000",
    b"1000",
    b"0",
    b"-1",
    b"1e9",
    b" 12 ",
    b"",
]
OPT_DATE, OPT_CPUSTAT, OPT_OFFSET, OPT_CPUCOUNT, OPT_TSC2NSEC = 1, 2, 7, 8, 14
SECTION_IDS = (16, 17, 18, 19, 20, 21)


class TraceDat:
    """The parts of a little-endian trace.dat, version 6.

    ``v7`` changes what the version-7 writer says of the parts (so that the file
    contradicts itself): ``cpu_ids`` (the CPU id written for each CPU's data),
    ``ncpu_delta`` (added to the BUFFER option's CPU count, the table unchanged),
    ``zero_size`` (a CPU whose size is written as 0, its data kept), ``twice`` (a
    section option id written twice), ``buffer_twice`` (the BUFFER option twice).
    """

    long_size = 8
    page_size = 4096
    endian = 0

    def __init__(self, data: bytes):
        if not data.startswith(MAGIC + b"6\0") or data[len(MAGIC) + 2] != 0:
            raise ValueError("not a little-endian version-6 trace.dat")
        self.long_size = data[len(MAGIC) + 3]
        (self.page_size,) = struct.unpack_from("<I", data, len(MAGIC) + 4)
        off = len(MAGIC) + 8
        self.headers = []
        for label in (b"header_page\0", b"header_event\0"):
            if data[off : off + len(label)] != label:
                raise ValueError(f"no {label!r}")
            off += len(label)
            (n,) = struct.unpack_from("<Q", data, off)
            self.headers.append(_take(data, off + 8, n))
            off += 8 + n
        self.ftrace, off = _formats(data, off)
        (nsys,) = struct.unpack_from("<I", data, off)
        off += 4
        self.systems = []
        for _ in range(min(nsys, 4096)):
            end = data.index(b"\0", off)
            name = data[off:end]
            fmts, off = _formats(data, end + 1)
            self.systems.append((name, fmts))
        self.blobs = []
        for fmt in ("<I", "<I", "<Q"):  # kallsyms, printk, cmdlines
            (n,) = struct.unpack_from(fmt, data, off)
            w = struct.calcsize(fmt)
            self.blobs.append(_take(data, off + w, n))
            off += w + n
        (self.cpus,) = struct.unpack_from("<I", data, off)
        off += 4
        self.options = []
        while data[off : off + 10] == b"options  \0":
            off += 10
            while True:
                (oid,) = struct.unpack_from("<H", data, off)
                off += 2
                if oid == 0:
                    break
                (n,) = struct.unpack_from("<I", data, off)
                self.options.append((oid, _take(data, off + 4, n)))
                off += 4 + n
        if data[off : off + 10] != b"flyrecord\0":
            raise ValueError("no flyrecord")
        off += 10
        self.cpu_data = []
        for _ in range(min(self.cpus, 4096)):
            coff, csize = struct.unpack_from("<QQ", data, off)
            self.cpu_data.append(_take(data, coff, csize))
            off += 16
        self.v7: dict = {}

    # ------------------------------------------------------------------ writing

    def write(self, version: int = 6, compression: str | None = None) -> bytes:
        if version == 6:
            return self._write_v6()
        return self._write_v7(compression)

    def _head(self, version: bytes) -> bytearray:
        return bytearray(
            MAGIC
            + version
            + b"\0"
            + bytes([self.endian & 0xFF, self.long_size & 0xFF])
            + struct.pack("<I", self.page_size & 0xFFFFFFFF)
        )

    def _header_info(self) -> bytes:
        return b"".join(
            label + struct.pack("<Q", len(h)) + h
            for label, h in zip((b"header_page\0", b"header_event\0"), self.headers)
        )

    def _systems(self) -> bytes:
        out = struct.pack("<I", len(self.systems))
        for name, fmts in self.systems:
            out += name + b"\0" + _formats_blob(fmts)
        return out

    def _align(self) -> int:
        return self.page_size if 0 < self.page_size <= 65536 else 4096

    def _write_v6(self) -> bytes:
        out = self._head(b"6")
        out += self._header_info() + _formats_blob(self.ftrace) + self._systems()
        kallsyms, printk, cmdlines = self.blobs
        out += struct.pack("<I", len(kallsyms)) + kallsyms
        out += struct.pack("<I", len(printk)) + printk
        out += (
            struct.pack("<Q", len(cmdlines)) + cmdlines + struct.pack("<I", self.cpus & 0xFFFFFFFF)
        )
        out += b"options  \0"
        for oid, body in self.options:
            out += struct.pack("<HI", oid, len(body)) + body
        out += struct.pack("<H", 0) + b"flyrecord\0"
        table = len(out)
        out += b"\0" * (16 * len(self.cpu_data))
        _pad(out, self._align())
        for cpu, d in enumerate(self.cpu_data):
            struct.pack_into("<QQ", out, table + 16 * cpu, len(out) if d else 0, len(d))
            out += d
            _pad(out, self._align())
        return bytes(out)

    def _write_v7(self, compression: str | None) -> bytes:
        comp = compression not in (None, "none")
        strings = bytearray()

        def sid(s: str) -> int:
            i = len(strings)
            strings.extend(s.encode() + b"\0")
            return i

        def section(out: bytearray, sec_id: int, desc: str, body: bytes) -> int:
            at = len(out)
            if comp:
                z = zlib.compress(body, 6)
                payload = struct.pack("<II", len(z), len(body)) + z
            else:
                payload = body
            out += struct.pack("<HHIQ", sec_id, int(comp), sid(desc), len(payload)) + payload
            return at

        out = self._head(b"7")
        out += b"zlib\x001.2.13\0" if comp else b"none\0\0"
        first_opts = len(out)
        out += b"\0" * 8
        kallsyms, printk, cmdlines = self.blobs
        at = {
            16: section(out, 16, "headers", self._header_info()),
            17: section(out, 17, "ftrace events", _formats_blob(self.ftrace)),
            18: section(out, 18, "events format", self._systems()),
            19: section(out, 19, "kallsyms", struct.pack("<I", len(kallsyms)) + kallsyms),
            20: section(out, 20, "printk", struct.pack("<I", len(printk)) + printk),
            21: section(out, 21, "command lines", struct.pack("<Q", len(cmdlines)) + cmdlines),
        }
        # trace data: one section; compressed, each CPU's pages are chunks of two pages
        fly = len(out)
        out += struct.pack("<HHIQ", 3, int(comp), sid("buffer flyrecord "), 0)
        _pad(out, self._align())
        cpu_at = []
        for d in self.cpu_data:
            start = len(out)
            if comp and d:
                # a u32 chunk count, then the chunks; the size in the BUFFER option
                # counts the chunks only (as trace-cmd writes it)
                step = 2 * self._align()
                chunks = [d[i : i + step] for i in range(0, len(d), step)]
                out += struct.pack("<I", len(chunks))
                for raw in chunks:
                    z = zlib.compress(raw, 6)
                    out += struct.pack("<II", len(z), len(raw)) + z
                size = len(out) - start - 4
            else:
                out += d
                size = len(d)
            _pad(out, self._align())
            cpu_at.append((start if d else 0, size if d else 0))
        struct.pack_into("<Q", out, fly + 8, len(out) - fly - 16)
        clock = next((b for o, b in self.options if o == 4), b"[local]\n\0")
        m = re.search(rb"\[([^\]\0]*)\]", clock)
        clock = m.group(1) if m else b"local"
        opts = b""
        for oid, body in self.options:
            opts += struct.pack("<HI", oid, len(body)) + body
        for oid, off in at.items():
            opts += struct.pack("<HIQ", oid, 8, off) * (2 if self.v7.get("twice") == oid else 1)
        ids = self.v7.get("cpu_ids", [])
        ncpu = (len(cpu_at) + self.v7.get("ncpu_delta", 0)) & 0xFFFFFFFF
        buf = struct.pack("<Q", fly) + b"\0" + clock + b"\0"
        buf += struct.pack("<II", self.page_size & 0xFFFFFFFF, ncpu)
        for cpu, (off, size) in enumerate(cpu_at):
            cpu_id = ids[cpu] if cpu < len(ids) else cpu
            size = 0 if self.v7.get("zero_size") == cpu else size
            buf += struct.pack("<IQQ", cpu_id & 0xFFFFFFFF, off, size)
        opts += struct.pack("<HI", 3, len(buf)) + buf
        if self.v7.get("buffer_twice"):
            opts += struct.pack("<HI", 3, len(buf)) + buf
        strings_at = len(out)
        desc = sid("strings")
        opts_desc = sid("options")
        body = bytes(strings)
        out += struct.pack("<HHIQ", 15, 0, desc, len(body)) + body
        opts += struct.pack("<HIQ", 15, 8, strings_at) + struct.pack("<HIQ", 0, 8, 0)
        struct.pack_into("<Q", out, first_opts, len(out))
        if comp:
            z = zlib.compress(opts, 6)
            opts = struct.pack("<II", len(z), len(opts)) + z
        out += struct.pack("<HHIQ", 0, int(comp), opts_desc, len(opts)) + opts
        return bytes(out)


def _take(data: bytes, off: int, n: int) -> bytes:
    if off + n > len(data):
        raise ValueError("cut short")
    return data[off : off + n]


def _formats(data: bytes, off: int):
    (count,) = struct.unpack_from("<I", data, off)
    off += 4
    out = []
    for _ in range(min(count, 1 << 16)):
        (n,) = struct.unpack_from("<Q", data, off)
        out.append(_take(data, off + 8, n))
        off += 8 + n
    return out, off


def _formats_blob(fmts) -> bytes:
    return struct.pack("<I", len(fmts)) + b"".join(struct.pack("<Q", len(f)) + f for f in fmts)


def _pad(buf: bytearray, align: int) -> None:
    buf += b"\0" * (-len(buf) % align)


def event_name(fmt: bytes) -> str:
    m = re.match(rb"name: (\S+)", fmt)
    return m.group(1).decode(errors="replace") if m else ""


# ------------------------------------------------------------------ mutation

_NUM_FIELD = re.compile(rb"(offset|size|signed|ID):\s*(-?\d+)")
_ARRAY_LEN = re.compile(rb"\[(\d+)\]")
_FIELD_LINE = re.compile(rb"\tfield:[^\n]*\n")


def _edit_number(rnd: random.Random, text: bytes) -> bytes:
    spots = [(m.start(2), m.end(2)) for m in _NUM_FIELD.finditer(text)]
    spots += [(m.start(1), m.end(1)) for m in _ARRAY_LEN.finditer(text)]
    if not spots:
        return text
    a, b = rnd.choice(spots)
    return text[:a] + rnd.choice(DECIMALS) + text[b:]


_FIELD_NAME = re.compile(rb"\tfield:[^;\n]*?(\w+)(\[[^\]]*\])?;")


def _edit_field(rnd: random.Random, text: bytes) -> bytes:
    """A field line the model must refuse or survive: an array size on a scalar, another
    field's name (two fields of one name), a ``__data_loc`` of any size, a size or
    offset at an edge."""
    fields = list(_FIELD_NAME.finditer(text))
    if not fields:
        return text
    m = rnd.choice(fields)
    op = rnd.randrange(4)
    if op == 0:  # an array size, on a scalar too: [2], [0], [-1], []
        dims = rnd.choice((b"[2]", b"[0]", b"[-1]", b"[]", b"[16]", b"[4096]", b"[99999999999]"))
        end = m.end(2) if m.group(2) else m.end(1)
        return text[: m.start(2) if m.group(2) else end] + dims + text[end:]
    if op == 1:  # another field's name
        other = rnd.choice(fields).group(1)
        return text[: m.start(1)] + other + text[m.end(1) :]
    if op == 2:  # __data_loc: its u32 is (length << 16 | offset) in every record
        line_start = text.rfind(b"\n", 0, m.start()) + 1
        decl = b"\tfield:" + rnd.choice(
            (b"__data_loc char[] ", b"__data_loc u8[] ", b"__rel_loc char[] ", b"__data_loc int[] ")
        )
        return text[:line_start] + decl + m.group(1) + b";" + text[m.end() :]
    line_end = text.find(b"\n", m.end())
    line_end = len(text) if line_end < 0 else line_end
    line = re.sub(
        rb"(offset|size|signed):\s*-?\d+",
        lambda k: k.group(1) + b":" + rnd.choice(DECIMALS),
        text[m.start() : line_end],
        count=1 + rnd.randrange(3),
    )
    return text[: m.start()] + line + text[line_end:]


def _duplicate_event(rnd: random.Random, td: TraceDat) -> None:
    """A second format with an existing event's name (its ID kept or changed): the
    second must not silently swallow the first's records."""
    systems = [(i, j) for i, (_, f) in enumerate(td.systems) for j in range(len(f))]
    if not systems:
        return
    i, j = rnd.choice(systems)
    text = td.systems[i][1][j]
    if rnd.random() < 0.5:
        text = re.sub(rb"(?m)^ID: \d+", b"ID: " + rnd.choice(DECIMALS[:16]), text, count=1)
    k, _ = rnd.choice(systems)
    td.systems[k][1].append(text)


def _edit_lines(rnd: random.Random, text: bytes) -> bytes:
    lines = [(m.start(), m.end()) for m in _FIELD_LINE.finditer(text)]
    op = rnd.randrange(6)
    if op == 0 and lines:  # drop a field
        a, b = rnd.choice(lines)
        return text[:a] + text[b:]
    if op == 1 and lines:  # repeat a field
        a, b = rnd.choice(lines)
        return text[:b] + text[a:b] + text[b:]
    if op == 2 and lines:  # another type
        a, b = rnd.choice(lines)
        line = text[a:b]
        m = re.match(rb"\tfield:(.*?)(\w+)(\[\d*\])?;", line)
        if m:
            line = line[: m.start(1)] + rnd.choice(TYPES) + b" " + line[m.start(2) :]
        return text[:a] + line + text[b:]
    p = text.find(b"print fmt:")
    if p < 0:
        return text
    if op == 3:  # cut the print format short
        return text[: rnd.randrange(p, len(text) + 1)]
    if op == 4:  # insert a token
        i = rnd.randrange(p, len(text) + 1)
        return text[:i] + rnd.choice(PRINT_BITS) + text[i:]
    i = rnd.randrange(p, len(text) + 1)  # delete a span
    return text[:i] + text[i + rnd.randint(1, 16) :]


def _pick_format(rnd: random.Random, td: TraceDat):
    """A (getter, setter) pair for one format text of the file."""
    slots = [("h", i) for i in range(len(td.headers))]
    slots += [("f", i) for i in range(len(td.ftrace))]
    slots += [("s", i, j) for i, (_, f) in enumerate(td.systems) for j in range(len(f))]
    slot = rnd.choice(slots)
    if slot[0] == "h":
        return td.headers[slot[1]], lambda t: td.headers.__setitem__(slot[1], t)
    if slot[0] == "f":
        return td.ftrace[slot[1]], lambda t: td.ftrace.__setitem__(slot[1], t)
    _, i, j = slot
    return td.systems[i][1][j], lambda t: td.systems[i][1].__setitem__(j, t)


def _edit_page(rnd: random.Random, td: TraceDat) -> None:
    cpus = [i for i, d in enumerate(td.cpu_data) if d]
    if not cpus:
        return
    cpu = rnd.choice(cpus)
    d = bytearray(td.cpu_data[cpu])
    psize = td.page_size if 0 < td.page_size <= len(d) else 4096
    page = rnd.randrange(max(1, len(d) // psize)) * psize
    what = rnd.randrange(4)
    if what == 0:  # page timestamp
        at, width = page, 8
    elif what == 1:  # commit word (size + flags)
        at, width = page + 8, td.long_size if td.long_size in (4, 8) else 8
    elif what == 2:  # an event header in the page
        at, width = page + 16 + 4 * rnd.randrange(max(1, (psize - 16) // 4)), 4
    else:  # any word of the page
        at, width = page + rnd.randrange(psize), rnd.choice((1, 2, 4, 8))
    if at + width > len(d):
        return
    if what == 2 and rnd.random() < 0.7:
        # type_len:5 (0 = length word follows, 1..28 data, 29 padding, 30 time
        # extend, 31 absolute time stamp), time_delta:27
        value = rnd.choice((0, 1, 2, 28, 29, 30, 31)) | (rnd.choice(INTERESTING) << 5)
    else:
        value = rnd.choice(INTERESTING)
    d[at : at + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    td.cpu_data[cpu] = bytes(d)


def _edit_layout(rnd: random.Random, td: TraceDat) -> None:
    op = rnd.randrange(8)
    if op == 0:
        td.cpus = rnd.choice((0, 1, len(td.cpu_data) + 1, 65536, 65537, (1 << 32) - 1))
    elif op == 1 and td.cpu_data:  # one CPU without data
        td.cpu_data[rnd.randrange(len(td.cpu_data))] = b""
    elif op == 2 and td.cpu_data:  # a page cut short
        i = rnd.randrange(len(td.cpu_data))
        td.cpu_data[i] = td.cpu_data[i][: rnd.randrange(len(td.cpu_data[i]) + 1)]
    elif op == 3:
        td.long_size = rnd.choice((0, 1, 4, 8, 16, 255))
    elif op == 4:
        td.page_size = rnd.choice(
            (0, 1, 16, 1024, 2048, 4095, 8192, 65536, 1 << 20, (1 << 31), (1 << 32) - 1)
        )
    elif op == 5:  # an option, known id or not
        oid = rnd.choice((1, 2, 3, 4, 5, 7, 8, 9, 12, 14, 16, 22, 99, 65535))
        body = rnd.choice(
            (
                b"",
                b"\0",
                b"[x86-tsc]\0",
                b"[counter]\0",
                b"0x7fffffff\0",
                bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(24))),
            )
        )
        td.options.insert(rnd.randrange(len(td.options) + 1), (oid, body))
    elif op == 6 and td.options:
        del td.options[rnd.randrange(len(td.options))]
    else:  # kallsyms/printk/cmdlines
        i = rnd.randrange(3)
        blob = td.blobs[i]
        k = rnd.randrange(len(blob) + 1)
        td.blobs[i] = (
            blob[:k]
            + rnd.choice(
                (
                    b"",
                    b"\n",
                    b"ffffffff81000000 T x\n",
                    b"0 t \n",
                    b"12345 ",
                    b'"%s"\n',
                    b" : ",
                    b"\0",
                )
            )
            + blob[k:]
        )


def _option_body(rnd: random.Random, oid: int) -> bytes:
    """A body for option ``oid`` at the edges of what it holds."""
    if oid in (OPT_OFFSET, OPT_DATE):
        return rnd.choice(SIGNED_EDGES) + rnd.choice((b"\0", b"", b"\n\0", b"x\0"))
    if oid == OPT_CPUCOUNT:
        n = rnd.choice((0, 1, 2, 3, 4096, 65536, 65537, (1 << 32) - 1))
        return struct.pack("<Q" if rnd.random() < 0.2 else "<I", n)  # the wrong size too
    if oid == OPT_TSC2NSEC:
        mult = rnd.choice((0, 1, 3, 1 << 31, (1 << 32) - 1))
        shift = rnd.choice((0, 1, 31, 32, 33, 255))
        body = struct.pack("<IIQ", mult, shift, rnd.choice(INTERESTING))
        return body if rnd.random() < 0.8 else body[: rnd.randrange(16)]
    # CPUSTAT: per-CPU counters, with a CPU or a count out of range
    cpu = rnd.choice((b"0", b"1", b"9", b"65536", b"-1", b"18446744073709551616"))
    key = rnd.choice((b"overrun", b"dropped events", b"entries", b"read events", b"bytes"))
    value = rnd.choice(DECIMALS + SIGNED_EDGES)
    return b"CPU: " + cpu + b"\n" + key + b": " + value + b"\n\0"


def _edit_options(rnd: random.Random, td: TraceDat) -> None:
    """An option with a number at an edge, an option repeated, or (written as v7) a
    BUFFER/section option that contradicts the rest of the file."""
    op = rnd.randrange(4)
    if op == 0:  # a numeric option added (OFFSET, DATE: one or two, their sums)
        oid = rnd.choice(
            (OPT_OFFSET, OPT_OFFSET, OPT_DATE, OPT_CPUCOUNT, OPT_TSC2NSEC, OPT_CPUSTAT)
        )
        for _ in range(rnd.choice((1, 1, 2))):
            td.options.insert(rnd.randrange(len(td.options) + 1), (oid, _option_body(rnd, oid)))
    elif op == 1 and td.options:  # an option's number changed in place
        k = rnd.randrange(len(td.options))
        oid, _ = td.options[k]
        if oid in (OPT_OFFSET, OPT_DATE, OPT_CPUCOUNT, OPT_TSC2NSEC, OPT_CPUSTAT):
            td.options[k] = (oid, _option_body(rnd, oid))
    elif op == 2 and td.options:  # an option repeated
        td.options.insert(rnd.randrange(len(td.options) + 1), rnd.choice(td.options))
    else:  # the v7 writer's BUFFER and section options contradict the data
        what = rnd.randrange(5)
        n = len(td.cpu_data)
        if what == 0 and n:
            ids = list(range(n))
            ids[rnd.randrange(n)] = rnd.choice((n, n + 1, 4096, 65535, 65536, 0, (1 << 32) - 1))
            td.v7["cpu_ids"] = ids
        elif what == 1:
            td.v7["ncpu_delta"] = rnd.choice((-n, -1, 1, 2, 65536))
        elif what == 2 and n:
            td.v7["zero_size"] = rnd.randrange(n)
        elif what == 3:
            td.v7["twice"] = rnd.choice(SECTION_IDS)
        else:
            td.v7["buffer_twice"] = True


def mutate(data: bytes, max_size: int, seed: int) -> bytes | None:
    """One structure-aware mutation of a version-6 trace.dat, written as v6, v7 or
    v7+zlib; None if ``data`` does not parse (the caller then mutates bytes)."""
    try:
        td = TraceDat(data)
    except (ValueError, struct.error, IndexError):
        return None
    rnd = random.Random(seed)
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        op = rnd.randrange(14)
        if op < 2:
            text, put = _pick_format(rnd, td)
            put(_edit_number(rnd, text))
        elif op < 4:
            text, put = _pick_format(rnd, td)
            put(_edit_lines(rnd, text))
        elif op < 6:
            text, put = _pick_format(rnd, td)
            put(_edit_field(rnd, text))
        elif op == 6:
            _duplicate_event(rnd, td)
        elif op < 9:
            _edit_page(rnd, td)
        elif op < 12:
            _edit_options(rnd, td)
        else:
            _edit_layout(rnd, td)
    # mostly v6: the corpus keeps parseable v6 inputs to mutate further; what only
    # the v7 writer can say (td.v7) is written as v7
    choices = ((6, None), (6, None), (6, None), (7, None), (7, "zlib"))
    version, comp = rnd.choice(choices[3:] if td.v7 else choices)
    out = td.write(version, comp)
    return out if len(out) <= max_size else None
