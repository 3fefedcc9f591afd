#!/usr/bin/env python3
"""Write the seed inputs of the fuzz harnesses from the real sample traces.

    .venv/bin/python fuzz/make_seeds.py            # (re)writes fuzz/corpus/*/seed-*

trace.dat seeds (for fuzz_load_tracedat and tdcore_fuzz): a real sample cut to its
first page(s) per CPU (``trace-cmd split``), read back as a version-6 file
(``trace-cmd convert --file-version 6``) and rewritten by this script with only the
formats schedwake reads (sched, workqueue, ftrace:print), a few KB of kallsyms,
printk formats and cmdlines.  From that small v6 file come its v7 variants: none and
zstd written by ``trace-cmd convert`` (the real writer), zlib written here (this
trace-cmd has no zlib; the layout is the one of trace-cmd.dat.v7(5)).  Every seed is
checked: trace-cmd reads it, and schedwake.load reads the ones libtracecmd can.

Text seeds (for fuzz_load_text): the first lines of every conformance text of
sample_traces/conformance (each variant of ftrace, trace-cmd report and perf script
text), of two synthetic traces, and one gzip-compressed file.

Seeds are small on purpose (a few KB): the fuzzers mutate whole inputs, and a
160 KB seed spends most of each run on format text nobody mutates.
"""

from __future__ import annotations

import gzip
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tracedat_model import TraceDat, event_name  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"
CORPUS = ROOT / "fuzz" / "corpus"

KEEP_SCHED = {
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_process_fork",
    "sched_process_exit",
}
KEEP_FTRACE = {"print"}

# sample, pages per CPU, seed variants, extra options
TRACEDAT_SEEDS = [
    ("idle-sleep.dat", 1, ("v6", "v7-none", "v7-zstd", "v7-zlib")),
    ("lost-events.dat", 2, ("v6", "v7-zstd")),
    ("missing-cpu.dat", 1, ("v7-zstd",)),
    ("guest8-dbench-xfs-2clients.dat", 1, ("v6", "v7-zstd")),  # Linux 6.1, 8 CPUs
    ("dbench-xfs-2clients.dat", 1, ("v7-zlib",)),
]

TEXT_SEEDS = [
    # (file, lines kept)
    ("conformance/conf.ftrace.txt.gz", 40),
    ("conformance/conf.trace_pipe.txt.gz", 30),
    ("conformance/conf.report.txt.gz", 30),
    ("conformance/conf.report-l.txt.gz", 30),
    ("conformance/conf.report-R.txt.gz", 30),
    ("conformance/conf.report-t.txt.gz", 30),
    ("conformance/conf.report-N.txt.gz", 30),
    ("conformance/conf.perf-script.txt.gz", 40),
    ("conformance/conf.perf-script-g.txt.gz", 60),
    ("synthetic/pingpong.txt.gz", 40),
    ("counter-clock.txt.gz", 30),
]


# ------------------------------------------------------------------ trace.dat


def head_lines(blob: bytes, limit: int) -> bytes:
    if len(blob) <= limit:
        return blob
    cut = blob.rfind(b"\n", 0, limit)
    return blob[: cut + 1] if cut >= 0 else b""


def shrink(td: TraceDat, pages: int, clock: str) -> None:
    td.ftrace = [f for f in td.ftrace if event_name(f) in KEEP_FTRACE]
    systems = []
    for name, fmts in td.systems:
        if name == b"sched":
            systems.append((name, [f for f in fmts if event_name(f) in KEEP_SCHED]))
        elif name == b"workqueue":
            systems.append((name, fmts))
    td.systems = systems
    kallsyms, printk, cmdlines = td.blobs
    td.blobs = [head_lines(kallsyms, 2048), head_lines(printk, 512), head_lines(cmdlines, 1024)]
    td.cpu_data = [d[: pages * td.page_size] for d in td.cpu_data]
    # The options of a real recording (trace-cmd convert --file-version 6 keeps none
    # but CPUCOUNT): the clock, uname, trace-cmd version, one CPU's ring-buffer stats.
    td.options = [
        (8, struct.pack("<I", td.cpus)),
        (4, f"[{clock}] global counter uptime perf mono mono_raw boot\n".encode() + b"\0"),
        (5, b"Linux fuzzhost 6.18.44-fc #1 SMP PREEMPT_DYNAMIC x86_64\0"),
        (9, b"3.1.6\0"),
        (
            2,
            b"CPU: 0\nentries: 12\noverrun: 3\ncommit overrun: 0\nbytes: 4096\n"
            b"dropped events: 1\nread events: 12\n\0",
        ),
    ]


def run(*argv) -> None:
    subprocess.run(argv, check=True, capture_output=True, stdin=subprocess.DEVNULL)


def report(path: Path) -> str:
    return subprocess.run(
        ["trace-cmd", "report", "-i", str(path)],
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    ).stdout


def tracedat_seeds(out_dirs: list[Path]) -> None:
    with tempfile.TemporaryDirectory(prefix="schedwake-seeds-") as tmp:
        tmp = Path(tmp)
        for sample, pages, variants in TRACEDAT_SEEDS:
            stem = Path(sample).stem
            split = tmp / f"{stem}-split.dat"
            run(
                "trace-cmd",
                "split",
                "-i",
                str(SAMPLES / sample),
                "-o",
                str(split),
                "-c",
                "-p",
                str(pages),
            )
            v6path = tmp / f"{stem}-v6.dat"
            run(
                "trace-cmd", "convert", "-i", f"{split}.1", "-o", str(v6path), "--file-version", "6"
            )
            summary = subprocess.run(
                ["trace-cmd", "dump", "--summary", "-i", str(SAMPLES / sample)],
                capture_output=True,
                text=True,
            ).stdout
            m = re.search(r'buffer "", "(\w[\w-]*)" clock', summary)
            td = TraceDat(v6path.read_bytes())
            shrink(td, pages, m.group(1) if m else "local")
            files = {"v6": td.write(6), "v7-zlib": td.write(7, "zlib")}
            small6 = tmp / f"{stem}-small6.dat"
            small6.write_bytes(files["v6"])
            for comp in ("none", "zstd"):  # the real writer's version 7
                p = tmp / f"{stem}-v7-{comp}.dat"
                run(
                    "trace-cmd",
                    "convert",
                    "-i",
                    str(small6),
                    "-o",
                    str(p),
                    "--file-version",
                    "7",
                    "--compression",
                    comp,
                )
                files[f"v7-{comp}"] = p.read_bytes()
            # this script's own version-7 writer (the mutator's, and the zlib seeds'
            # but for compression) must read back as the same events
            own7 = tmp / f"{stem}-own7.dat"
            own7.write_bytes(td.write(7))
            want = report(small6)
            assert want.count("\n") > 10, f"{stem}: too few events in the seed"
            assert report(own7) == want, f"{stem}: the v7 writer lost or changed events"
            for variant in variants:
                name = f"seed-{stem}-{variant}.dat"
                p = tmp / name
                p.write_bytes(files[variant])
                if variant != "v7-zlib":  # this trace-cmd has no zlib
                    assert report(p) == want, f"{name}: not the same events"
                for d in out_dirs:
                    d.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(p, d / name)
                print(f"{name}: {len(files[variant])} bytes", file=sys.stderr)


def text_seeds(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for rel, nlines in TEXT_SEEDS:
        data = gzip.decompress((SAMPLES / rel).read_bytes())
        lines = data.split(b"\n")
        head = b"\n".join(lines[:nlines]) + b"\n"
        name = "seed-" + Path(rel).name.replace(".txt.gz", ".txt")
        (out_dir / name).write_bytes(head)
        print(f"{name}: {len(head)} bytes", file=sys.stderr)
        if rel.endswith("conf.ftrace.txt.gz"):
            (out_dir / "seed-conf.ftrace.txt.gz").write_bytes(gzip.compress(head, mtime=0))
            # lost-event lines of the kernel's printer, between real lines
            body = lines[:nlines]
            body[20:20] = [
                b"CPU:1 [LOST 12 EVENTS]",
                b"CPU:0 [LOST EVENTS]",
                b"CPU:1 [EVENTS DROPPED]",
                b"CPU:0 [3 EVENTS DROPPED]",
            ]
            (out_dir / "seed-ftrace-lost.txt").write_bytes(b"\n".join(body) + b"\n")
        if rel.endswith("conf.perf-script.txt.gz"):
            # perf script --header --show-lost-events: the header block and a loss
            body = [
                b"# ========",
                b"# captured on    : Mon Nov 24 11:11:11 2025",
                b"# os release : 6.18.44-fc",
                b"# nrcpus online : 2",
                b"# nrcpus avail : 2",
                b"# ========",
                b"#",
            ] + lines[:20]
            body[12:12] = [b"            perf 14606 [001]   707.066500: PERF_RECORD_LOST lost 7"]
            (out_dir / "seed-perf-header-lost.txt").write_bytes(b"\n".join(body) + b"\n")


def main() -> int:
    tracedat_seeds([CORPUS / "fuzz_load_tracedat", CORPUS / "tdcore_fuzz"])
    text_seeds(CORPUS / "fuzz_load_text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
