#!/usr/bin/env python3
"""Write the perf.data seeds of the fuzz harnesses from real recordings made now.

    sudo .venv/bin/python fuzz/make_perf_seeds.py    # (re)writes fuzz/corpus/*/seed-perf-*

Each seed is a real ``perf record`` of this machine (root and perf needed): tracepoints
in a file and in a pipe, zstd-compressed records (-z), tracepoints with callchains
(-g), and a cpu-clock profile.  perf writes a record for every task and memory map that
exists when it starts; the seeds keep only a few of them (the records of the data
section are re-framed: the header's data size and the feature sections' offsets are
moved), so each seed is a few KB of what the decoder must parse: the header, the
attributes, the feature sections, the tracing data, samples.  Every seed is checked:
``perf script`` and ``schedwake.load`` both read it.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"

EVENTS = ["-e", "sched:sched_switch", "-e", "sched:sched_waking", "-e", "sched:sched_migrate_task"]
RECORDINGS = {
    "file": ["-a", *EVENTS],
    "z": ["-z", "-a", *EVENTS],
    "g": ["-g", "-a", "-e", "sched:sched_switch"],
    "profile": ["-g", "-F", "999", "-a"],
}
#: records kept of each type (the rest of that type is dropped): COMM, EXIT, FORK, MMAP,
#: MMAP2, KSYMBOL, BPF_EVENT; samples and everything else are all kept
KEEP = {3: 6, 4: 2, 7: 6, 1: 2, 10: 4, 17: 2, 18: 2}
MAX_SAMPLES = 40


def records(data: bytes, start: int, end: int):
    """(offset, type, size) of the records in data[start:end] (pipe tracing data aside)."""
    pos = start
    while pos + 8 <= end:
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        if size < 8:
            raise ValueError(f"record of {size} bytes at {pos}")
        extra = struct.unpack_from("<I", data, pos + 8)[0] if rtype == 66 else 0
        yield pos, rtype, size + extra
        pos += size + extra


def keep(rtype: int, seen: dict) -> bool:
    seen[rtype] = seen.get(rtype, 0) + 1
    if rtype == 9:
        return seen[rtype] <= MAX_SAMPLES
    return seen[rtype] <= KEEP.get(rtype, 1 << 30)


def shrink_file(data: bytes) -> bytes:
    """A file-mode perf.data with fewer side-band records and samples."""
    hsize, attr_size, a_off, a_size, d_off, d_size = struct.unpack_from("<6Q", data, 8)
    assert hsize == 104, hsize
    seen: dict = {}
    body = b"".join(
        data[o : o + n] for o, t, n in records(data, d_off, d_off + d_size) if keep(t, seen)
    )
    delta = d_size - len(body)
    out = bytearray(data[:d_off] + body + data[d_off + d_size :])
    struct.pack_into("<Q", out, 8 + 8 * 5, len(body))
    bits = struct.unpack_from("<4Q", data, 72)  # after magic, sizes, 3 sections
    nfeat = sum(bin(b).count("1") for b in bits)
    table = d_off + len(body)
    for i in range(nfeat):  # every feature section lies after the data: move it
        off, size = struct.unpack_from("<2Q", out, table + 16 * i)
        struct.pack_into("<2Q", out, table + 16 * i, off - delta, size)
    return bytes(out)


def shrink_pipe(data: bytes) -> bytes:
    seen: dict = {}
    return data[:16] + b"".join(
        data[o : o + n] for o, t, n in records(data, 16, len(data)) if keep(t, seen)
    )


def check(path: Path) -> str:
    import schedwake

    subprocess.run(["perf", "script", "-i", str(path)], check=True, capture_output=True)
    t = schedwake.load(path)
    samples = sum(t.meta.event_counts.values())
    return f"{path.name}: {path.stat().st_size} bytes, {samples} samples"


def main() -> int:
    outs = [CORPUS / "fuzz_load_perfdata", CORPUS / "tdcore_fuzz"]
    for d in outs:
        d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        seeds = {}
        for name, args in RECORDINGS.items():
            raw = Path(tmp) / f"{name}.data"
            subprocess.run(
                ["perf", "record", "-q", "-o", str(raw), *args, "--", "sleep", "0.02"],
                check=True,
                capture_output=True,
            )
            seeds[f"seed-perf-{name}.data"] = shrink_file(raw.read_bytes())
        pipe = subprocess.run(
            ["perf", "record", "-q", "-o", "-", "-a", *EVENTS, "--", "sleep", "0.02"],
            check=True,
            capture_output=True,
        ).stdout
        seeds["seed-perf-pipe.data"] = shrink_pipe(pipe)
        for name, blob in seeds.items():
            for d in outs:
                (d / name).write_bytes(blob)
            print(check(outs[0] / name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
