#!/usr/bin/env python3
"""Write the perf.data corpus of tests/test_perf_hostile.py (issue #37).

Every file of ``tests/data/perf_hostile/`` is a real ``perf record`` of this project's
machine (the committed fuzz seeds ``fuzz/corpus/fuzz_load_perfdata/seed-perf-file.data``
and, for the compressed ones, ``seed-perf-z.data``, 16-18 KB) changed in one way, and
``manifest.json`` says what schedwake must do with it:

* ``error``: ``schedwake.load`` raises TraceError; ``info`` and ``analyze`` exit 2 with
  one stderr line naming the file and matching ``mentions``;
* ``warning``: loads; ``info`` and ``analyze`` exit 0 with exactly one warning line
  matching ``mentions``, and the duration stays the recording's (``duration_s``).

The damage: attributes whose ids or tracepoint ids are exchanged (each sample's payload
then says another event than its id), payloads whose ``common_type`` names no event of
the file (one sample, every sample), a tracepoint without a format (its attribute's id
99999, its format line that does not parse), and COMPRESSED records (perf record -z)
that decompress beyond the buffer perf compressed (the COMPRESSED feature's mmap_len),
beyond 100 times their size, or a feature whose mmap_len is 0xffffffff or 0; a CPU
topology in the header that names CPU 999999999.  Edits keep every size and offset
right (the compressed files' data sections are written again, the feature table's
offsets moved), so the damage gets past the framing.

    .venv/bin/python scripts/make_perf_hostile.py

Writing the corpus twice gives the same bytes (the test checks the committed corpus
against a fresh run; zstandard's output is the same for the same level and input).
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "perf_hostile"
SEEDS = ROOT / "fuzz" / "corpus" / "fuzz_load_perfdata"
FILE_SEED = SEEDS / "seed-perf-file.data"
Z_SEED = SEEDS / "seed-perf-z.data"
SAMPLE, COMPRESSED = 9, 81
F_CACHE, F_COMPRESSED = 20, 27
#: Where a seed sample's raw payload starts: header 8, IDENTIFIER, IP, TID, TIME, CPU,
#: PERIOD (8 each, sample_type 0x10587), the raw size (4).
RAW_AT = 8 + 6 * 8 + 4


# ----------------------------------------------------------------- the layout


def attrs(d: bytes) -> list[dict]:
    """The attributes: file offset, tracepoint id (config), where their ids are."""
    _, asz, aoff, asize = struct.unpack_from("<QQQQ", d, 8)
    out = []
    for i in range(asize // asz):
        at = aoff + i * asz
        config = struct.unpack_from("<Q", d, at + 8)[0]
        idoff, idsz = struct.unpack_from("<QQ", d, at + asz - 16)
        out.append({"at": at, "config": config, "idoff": idoff, "idsize": idsz})
    return out


def records(d: bytes, start: int | None = None, end: int | None = None):
    """(offset, type, size) of the records of a data section (or bytes)."""
    if start is None:
        start, size = struct.unpack_from("<QQ", d, 40)
        end = start + size
    pos = start
    while pos < end:
        kind, _, size = struct.unpack_from("<IHH", d, pos)
        yield pos, kind, size
        pos += size


def feature_offset(d: bytes, feat: int) -> int:
    """File offset of a feature's section (through the bitmap and the feature table)."""
    d_off, d_size = struct.unpack_from("<QQ", d, 40)
    bits = int.from_bytes(d[72:104], "little")
    index = bin(bits & ((1 << feat) - 1)).count("1")
    return struct.unpack_from("<Q", d, d_off + d_size + 16 * index)[0]


def with_data(d: bytes, data: bytes) -> bytes:
    """``d`` with its data section replaced by ``data``: the feature table (after the
    data) and the sections it points to after it moved, the header's size set."""
    d_off, d_size = struct.unpack_from("<QQ", d, 40)
    end = d_off + d_size
    shift = len(data) - d_size
    nfeat = bin(int.from_bytes(d[72:104], "little")).count("1")
    table = bytearray(d[end : end + 16 * nfeat])
    for i in range(nfeat):
        off = struct.unpack_from("<Q", table, 16 * i)[0]
        if off >= end:
            struct.pack_into("<Q", table, 16 * i, off + shift)
    head = bytearray(d[:d_off])
    struct.pack_into("<Q", head, 48, len(data))
    return bytes(head) + data + bytes(table) + d[end + 16 * nfeat :]


# ---------------------------------------------------------------- the edits


def swap_ids(d: bytes) -> bytes:
    """sched_switch's and sched_waking's id lists exchanged."""
    out = bytearray(d)
    a, b = attrs(d)[:2]
    ida, idb = d[a["idoff"] : a["idoff"] + a["idsize"]], d[b["idoff"] : b["idoff"] + b["idsize"]]
    out[a["idoff"] : a["idoff"] + len(idb)] = idb
    out[b["idoff"] : b["idoff"] + len(ida)] = ida
    return bytes(out)


def swap_configs(d: bytes) -> bytes:
    """The two attributes' tracepoint ids exchanged."""
    out = bytearray(d)
    a, b = attrs(d)[:2]
    struct.pack_into("<Q", out, a["at"] + 8, b["config"])
    struct.pack_into("<Q", out, b["at"] + 8, a["config"])
    return bytes(out)


def common_type(d: bytes, value: int, which: slice) -> bytes:
    """The payloads' common_type of the samples ``which`` set to ``value``."""
    out = bytearray(d)
    for pos, _, _ in [r for r in records(d) if r[1] == SAMPLE][which]:
        struct.pack_into("<H", out, pos + RAW_AT, value)
    return bytes(out)


def config(d: bytes, index: int, value: int) -> bytes:
    out = bytearray(d)
    struct.pack_into("<Q", out, attrs(d)[index]["at"] + 8, value)
    return bytes(out)


def format_edit(d: bytes, event: bytes, old: bytes, new: bytes) -> bytes:
    """``old`` replaced by ``new`` (same length) in the format text of ``event``."""
    assert len(old) == len(new)
    start = d.index(b"name: " + event + b"\n")
    at = d.index(old, start, d.index(b"print fmt:", start))
    return d[:at] + new + d[at + len(old) :]


def mmap_len(d: bytes, value: int) -> bytes:
    """The COMPRESSED feature's mmap_len ({version, type, level, ratio, mmap_len})."""
    out = bytearray(d)
    struct.pack_into("<I", out, feature_offset(d, F_COMPRESSED) + 16, value)
    return bytes(out)


def cache_cpus(d: bytes, cpus: bytes) -> bytes:
    """The first CPU list of the CACHE feature ("0-1", in a string padded to 64 bytes)
    replaced by ``cpus``."""
    at = d.index(b"0-1\0", feature_offset(d, F_CACHE))
    return d[:at] + cpus + b"\0" + d[at + len(cpus) + 1 :]


def inner_records(z: bytes) -> tuple[bytes, bytes, bytes]:
    """The z seed's data section: the records before its COMPRESSED ones, what they
    decompress to (one zstd stream), the records after them."""
    d_off, d_size = struct.unpack_from("<QQ", z, 40)
    recs = list(records(z))
    zs = [r for r in recs if r[1] == COMPRESSED]
    first, last = zs[0][0], zs[-1][0] + zs[-1][2]
    stream = b"".join(z[p + 8 : p + s] for p, _, s in zs)
    inner = zstandard.ZstdDecompressor().decompressobj().decompress(stream)
    return z[d_off:first], inner, z[last : d_off + d_size]


def compressed_records(chunks: list[bytes]) -> bytes:
    """One zstd stream of ``chunks``, flushed after each into COMPRESSED records (of
    less than 64 KiB each, as perf writes them)."""
    c = zstandard.ZstdCompressor(level=3).compressobj()
    out = bytearray()
    for i, chunk in enumerate(chunks):
        body = c.compress(chunk) + c.flush(
            zstandard.COMPRESSOBJ_FLUSH_FINISH
            if i == len(chunks) - 1
            else zstandard.COMPRESSOBJ_FLUSH_BLOCK
        )
        for k in range(0, len(body), 60000):
            part = body[k : k + 60000]
            out += struct.pack("<IHH", COMPRESSED, 0, 8 + len(part)) + part
    return bytes(out)


def bomb(z: bytes, copies: int, chunks: int) -> bytes:
    """The z seed whose compressed records hold its own records and then ``chunks``
    chunks (one flush each) of ``copies`` copies of its first sample: identical
    samples, a few bytes each compressed."""
    before, inner, after = inner_records(z)
    sample = next(inner[p : p + s] for p, k, s in records(inner, 0, len(inner)) if k == SAMPLE)
    body = [inner] + [sample * copies] * chunks
    return with_data(z, before + compressed_records(body) + after)


# ---------------------------------------------------------------- the corpus

CONTRADICT = [r"offset \d+", r"contradict", r"sched_switch", r"sched_waking"]


def cases() -> list[tuple[str, bytes, str, str, list[str], dict]]:
    base, z = FILE_SEED.read_bytes(), Z_SEED.read_bytes()
    n = sum(1 for r in records(base) if r[1] == SAMPLE)
    return [
        ("ids-swapped", swap_ids(base), "error",
         "sched_switch's and sched_waking's event ids exchanged", CONTRADICT, {}),
        ("configs-swapped", swap_configs(base), "error",
         "sched_switch's and sched_waking's tracepoint ids exchanged", CONTRADICT, {}),
        ("common_type-ffff-one", common_type(base, 0xFFFF, slice(3, 4)), "warning",
         "one sample's payload says tracepoint 0xffff",
         [rf"1 of {n} tracepoint samples", "65535", "left out"], {"duration_s": 0.022965}),
        ("common_type-ffff-all", common_type(base, 0xFFFF, slice(None)), "error",
         "every sample's payload says tracepoint 0xffff",
         [rf"{n} of {n} tracepoint samples", "65535", r"offset \d+"], {}),
        ("tracepoint-id-99999", config(base, 1, 99999), "warning",
         "sched_waking's attribute says tracepoint id 99999, which has no format",
         ["9 samples of sched:sched_waking", "tracepoint id 99999", "left out"],
         {"duration_s": 0.022957}),
        ("format-does-not-parse",
         format_edit(base, b"sched_waking", b"offset:24;\tsize:4;", b"offset:24;\tsize:x;"),
         "warning", "a field line of sched_waking's format does not parse",
         ["9 samples of sched:sched_waking", "does not parse", "left out"],
         {"duration_s": 0.022957}),
        ("cache-cpu-999999999", cache_cpus(base, b"999999999"), "error",
         "the CACHE feature's first CPU list says CPU 999999999",
         ["CPU topology in its header", "CPU 999999999"], {}),
        ("z-record-beyond-mmap_len", bomb(z, 6000, 1), "error",
         "a COMPRESSED record decompresses to 576 KB, its mmap_len is 516 KiB",
         [r"COMPRESSED record at offset \d+", "528384 bytes", "mmap_len"], {}),
        ("z-ratio-bomb", bomb(z, 5000, 40), "error",
         "40 COMPRESSED records of 480 KB each (19 MB from a few KB)",
         ["COMPRESSED records up to offset", "100 times", "bomb"], {}),
        ("z-mmap_len-ffffffff", mmap_len(z, 0xFFFFFFFF), "error",
         "the COMPRESSED feature's mmap_len is 0xffffffff", ["4294967295", "mmap_len"], {}),
        ("z-mmap_len-0", mmap_len(z, 0), "error",
         "the COMPRESSED feature's mmap_len is 0", ["says perf's buffers held 0 bytes"], {}),
    ]  # fmt: skip


def make_corpus(out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for tag, data, outcome, damage, mentions, extra in cases():
        name = f"perf-{tag}.data"
        (out / name).write_bytes(data)
        files[name] = {"outcome": outcome, "damage": damage, "mentions": mentions, **extra}
    manifest = {
        "from": {
            "file": str(FILE_SEED.relative_to(ROOT)),
            "compressed": str(Z_SEED.relative_to(ROOT)),
        },
        "files": files,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    manifest = make_corpus(args.out)
    print(f"wrote {len(manifest['files'])} files to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
