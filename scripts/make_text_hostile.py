#!/usr/bin/env python3
"""Make tests/data/text_hostile/: damaged copies of the real text samples, one kind of
damage each, and manifest.json saying what the text reader must do with each.

    .venv/bin/python scripts/make_text_hostile.py [OUT_DIR]

The bases are the first lines of the conformance recording's raw ftrace text,
`trace-cmd report` text and `perf script` text (sample_traces/conformance/). Every
file is a pure function of those samples (no randomness, fixed gzip headers), so
tests/test_text_hostile.py can check that the committed corpus is what this script
makes today.

manifest.json, per file: "outcome" ("error": TraceError and exit 2; "warning": loads,
with exactly one warning; "ok": loads, no warning), "keywords" (words the message must
hold), "format" (the text layout given to the reader, or null to sniff) and, for
"warning" and "ok", "event_counts": the events that must remain, counted here from the
lines (not by the reader under test), and optionally "cpus".
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import zlib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "sample_traces" / "conformance"
OUT = ROOT / "tests" / "data" / "text_hostile"
EVENT_LINES = 120
#: larger files are committed gzip-compressed (the reader's gzip path, same lines)
PLAIN_MAX_BYTES = 24_000

_EVENT = re.compile(rb"\d\.\d+: +(?:\d+ +)?(\S+?):(?: |$)")


def sample_lines(name: str) -> list[bytes]:
    """The sample's lines (with their line ends)."""
    return gzip.decompress((CONF / name).read_bytes()).splitlines(keepends=True)


def base(name: str) -> tuple[list[bytes], list[bytes]]:
    """(header lines, the first EVENT_LINES event lines) of a sample; an ftrace header's
    entry counts are made those of the lines kept."""
    lines = sample_lines(name)
    header = [ln for ln in lines[:20] if ln.startswith((b"#", b"cpus="))]
    events = [ln for ln in lines[len(header) :] if not ln.startswith(b"#")][:EVENT_LINES]
    header = [
        re.sub(rb"\d+/\d+", b"%d/%d" % (len(events), len(events)), ln)
        if b"entries-in-buffer" in ln
        else ln
        for ln in header
    ]
    return header, events


def event_name(line: bytes) -> str:
    """The event a line holds, named as the reader's tables name it."""
    m = _EVENT.search(line)
    assert m, line
    name = m.group(1).decode().split(":")[-1]
    return "print" if name == "tracing_mark_write" else name


def counts(lines: list[bytes]) -> dict[str, int]:
    return dict(sorted(Counter(event_name(ln) for ln in lines).items()))


def gz(data: bytes) -> bytes:
    """gzip with a fixed header (no time stamp, no name): the same bytes every run."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as f:
        f.write(data)
    return out.getvalue()


def shift_ts(line: bytes, delta_us: int) -> bytes:
    """The line with its timestamp (seconds with 6 decimals) moved by delta_us."""
    m = re.search(rb"(\d+)\.(\d{6}):", line)
    assert m, line
    us = int(m.group(1)) * 1_000_000 + int(m.group(2)) + delta_us
    return line[: m.start()] + b"%d.%06d:" % divmod(us, 1_000_000) + line[m.end() :]


def set_cpu(line: bytes, cpu: int) -> bytes:
    return re.sub(rb"\[\d+\]", b"[%03d]" % cpu, line, count=1)


FTRACE_H, FTRACE = base("conf.ftrace.txt.gz")
REPORT_H, REPORT = base("conf.report.txt.gz")
_, PERF = base("conf.perf-script.txt.gz")
CLEAN = b"".join(FTRACE_H + FTRACE)


def case_files() -> dict[str, tuple[bytes, dict]]:
    """{file name: (bytes, manifest entry)}."""
    cases: dict[str, tuple[bytes, dict]] = {}

    def add(name, data, outcome, keywords, fmt=None, remaining=None, **extra):
        if len(data) > PLAIN_MAX_BYTES and not name.endswith(".gz"):
            name, data = name + ".gz", gz(data)
        entry = {"outcome": outcome, "keywords": keywords, "format": fmt}
        if remaining is not None:
            entry["event_counts"] = counts(remaining)
        entry.update(extra)
        cases[name] = (data, entry)

    # --- timestamps
    kept = FTRACE[:60] + FTRACE[61:]
    moved = FTRACE[:60] + [shift_ts(FTRACE[60], -100_000_000)] + FTRACE[61:]
    add(
        "ts-100s-back.txt",
        b"".join(FTRACE_H + moved),
        "warning",
        ["1 event goes back in time", "line 73", "99.898 s before all the others", "duration"],
        remaining=kept,
        duration_ns=_span(kept),
    )
    moved = FTRACE[:60] + [shift_ts(FTRACE[60], 100_000_000)] + FTRACE[61:]
    add(
        "ts-100s-forward.txt",
        b"".join(FTRACE_H + moved),
        "warning",
        ["back in time", "after all the others", "line 73"],
        remaining=kept,
        duration_ns=_span(kept),
    )
    on_two_cpus = _same_cpu_order(FTRACE[50], FTRACE[51])
    swapped = FTRACE[:50] + [FTRACE[51], FTRACE[50]] + FTRACE[52:]
    add(
        "ts-two-lines-swapped.txt",
        b"".join(FTRACE_H + swapped),
        "ok" if on_two_cpus else "warning",
        [] if on_two_cpus else ["1 event goes back in time", "line 64"],
        remaining=FTRACE,
    )
    interleaved = [
        ln for pair in zip(FTRACE, (shift_ts(x, -50_000) for x in FTRACE)) for ln in pair
    ]
    add(
        "interleaved-two-traces.txt",
        b"".join(FTRACE_H + interleaved),
        "error",
        ["go back in time on their CPU", "not in time order"],
    )
    cpu1_ahead = sorted(
        (shift_ts(x, 100_000_000) if b"[001]" in x else x for x in FTRACE), key=_stamp
    )
    add(
        "cpu1-clock-100s-ahead.txt",
        b"".join(FTRACE_H + cpu1_ahead),
        "error",
        ["events of CPU 1 are all", "s after the other CPUs'", "clocks disagree"],
    )
    # --- CPU numbers
    add(
        "cpu-9999-header-2.txt",
        b"".join(FTRACE_H + FTRACE[:40] + [set_cpu(FTRACE[40], 9999)] + FTRACE[41:]),
        "warning",
        ["CPU 9999", "the header says 2 CPUs", "line 53"],
        remaining=FTRACE[:40] + FTRACE[41:],
        cpus=2,
    )
    add(
        "cpu-9999-perf-no-header.txt",
        b"".join(PERF[:40] + [set_cpu(PERF[40], 9999)] + PERF[41:]),
        "warning",
        ["CPU 9999", "far above the others", "line 41"],
        remaining=PERF[:40] + PERF[41:],
        cpus=2,
    )
    add(
        "cpu-many-garbled.txt",
        b"".join(
            FTRACE_H + [set_cpu(ln, 1000 + i) if i % 10 == 0 else ln for i, ln in enumerate(FTRACE)]
        ),
        "error",
        ["CPUs the trace cannot have", "damaged CPU numbers"],
    )
    add(
        "lost-cpu-9999.txt",
        b"".join(FTRACE_H + FTRACE[:10] + [b"CPU:9999 [LOST 3 EVENTS]\n"] + FTRACE[10:]),
        "warning",
        ["lost-event lines", "CPU 9999"],
        remaining=FTRACE,
        cpus=2,
    )
    # --- header values
    for name, old, new in (
        ("header-cpus-1e11.txt", b"#P:2", b"#P:100000000000"),
        ("header-cpus-0.txt", b"#P:2", b"#P:0"),
        ("header-cpus-5000-digits.txt", b"#P:2", b"#P:" + b"7" * 5000),  # int() refuses it
        (
            "header-entries-huge.txt",
            b"# entries-in-buffer/entries-written: 120/120",
            b"# entries-in-buffer/entries-written: 99999999999999999999999/1",
        ),
    ):
        add(name, CLEAN.replace(old, new), "error", ["header", "out of range"])
    report = b"".join(REPORT_H + REPORT)
    add(
        "report-cpus-1e11.txt",
        report.replace(b"cpus=2", b"cpus=100000000000"),
        "error",
        ["cpus=100000000000", "out of range"],
    )
    perf_header = b"# ========\n# nrcpus online : 2\n# nrcpus avail : 99999999999\n# ========\n"
    add(
        "perf-nrcpus-huge.txt",
        perf_header + b"".join(PERF),
        "error",
        ["nrcpus avail", "out of range"],
        fmt="perf-script",
    )
    # --- lines that are not events
    garbled = [b"$%%^& garbled %d\n" % i if i % 5 < 2 else ln for i, ln in enumerate(FTRACE)]
    add(
        "garbled-40pct.txt",
        b"".join(FTRACE_H + garbled),
        "error",
        ["48 of 120 lines", "are not trace events", "line 13"],
    )
    few = (
        FTRACE[:7]
        + [b"garbled line\n"]
        + FTRACE[7:100]
        + [b"\x01\x02\x03\n", b"x\n"]
        + FTRACE[100:]
    )
    add(
        "garbled-3-lines.txt",
        b"".join(FTRACE_H + few),
        "warning",
        ["3 of 123 lines", "(2.44%)", "not events", "skipped", "first: line 20"],
        remaining=FTRACE,
    )
    cut = CLEAN[: len(CLEAN) - len(FTRACE[-1]) // 2]
    add(
        "cut-mid-line.txt",
        cut,
        "warning",
        ["1 of 120 lines", "the last, line 132, cut off without a line end"],
        remaining=FTRACE[:-1],
    )
    add(
        "cut-at-line-end.txt",
        b"".join(FTRACE_H + FTRACE[:80]),
        "warning",
        ["the header counts 120 events", "holds 80 lines", "cut short"],
        remaining=FTRACE[:80],
    )
    add(
        "cut-mid-line.txt.gz",
        gz(cut),
        "warning",
        ["cut off without a line end"],
        remaining=FTRACE[:-1],
    )
    huge_pid = re.sub(rb"-\d+ ", b"-9999999999 ", FTRACE[5], count=1)
    assert huge_pid != FTRACE[5]
    add(
        "pid-above-int32.txt",
        b"".join(FTRACE_H + FTRACE[:5] + [huge_pid] + FTRACE[6:]),
        "warning",
        ["1 of 120 lines", "first: line 18"],
        remaining=FTRACE[:5] + FTRACE[6:],
    )
    long_line = b"x" * 100_000 + b"\n"
    add(
        "line-100k.txt",
        b"".join(FTRACE_H + FTRACE[:50] + [long_line] + FTRACE[50:]),
        "warning",
        ["1 of 121 lines", "longer than 64 KiB", "first: line 63"],
        remaining=FTRACE,
    )
    add(
        "capture-backtracking.txt",
        capture_backtracking(100, 32_000),
        "error",
        ["100 of 100 lines", "are not trace events"],
    )
    hole = CLEAN[:9000] + b"\x00" * 4096 + CLEAN[9000:]
    add(
        "nul-hole.txt",
        hole,
        "warning",
        ["with NUL bytes", "not events"],
        remaining=_lines_intact(CLEAN, 9000),
    )
    # --- line ends, byte order marks
    add("cr-only.txt", CLEAN.replace(b"\n", b"\r"), "ok", [], remaining=FTRACE)
    add("cr-only.txt.gz", gz(CLEAN.replace(b"\n", b"\r")), "ok", [], remaining=FTRACE)
    mixed = b"".join(
        FTRACE_H + [ln.replace(b"\n", b"\r\n") if i % 3 == 0 else ln for i, ln in enumerate(FTRACE)]
    )
    add("crlf-mixed.txt", mixed, "ok", [], remaining=FTRACE)
    add("bom-utf8.txt", b"\xef\xbb\xbf" + CLEAN, "ok", [], remaining=FTRACE)
    add("utf16.txt", CLEAN.decode().encode("utf-16"), "error", ["UTF-16"])
    # --- layouts
    add(
        "perf-then-ftrace.txt",
        b"".join(PERF + FTRACE_H + FTRACE),
        "error",
        ["line 121 starts a second trace", "two traces in one file"],
    )
    add(
        "perf-then-ftrace-lines.txt",
        b"".join(PERF + FTRACE),
        "error",
        ["line 121 starts ftrace text inside perf script text", "two traces in one file"],
    )
    add(
        "ftrace-then-perf.txt",
        b"".join(FTRACE_H + FTRACE + PERF),
        "error",
        ["line 133 starts perf script text inside ftrace text", "two traces in one file"],
    )
    add(
        "ftrace-then-report-lines.txt",
        b"".join(FTRACE_H + FTRACE + REPORT),
        "error",
        ["trace-cmd report text inside ftrace text", "two traces in one file"],
    )
    add(
        "ftrace-twice.txt",
        CLEAN + CLEAN,
        "error",
        ["line 133 starts a second trace", "two traces in one file"],
    )
    add("report-twice.txt", report + report, "error", ["starts a second trace"])
    # --- gzip containers
    add("gzip-concatenated.txt.gz", gz(CLEAN[:5000]) + gz(CLEAN[5000:]), "ok", [], remaining=FTRACE)
    add(
        "gzip-trailing-garbage.txt.gz",
        gz(CLEAN) + b"garbage after the gzip member\n",
        "error",
        ["corrupt gzip"],
    )
    add("gzip-trailing-zeros.txt.gz", gz(CLEAN) + b"\x00" * 512, "ok", [], remaining=FTRACE)
    add("gzip-empty.txt.gz", gz(b""), "error", ["empty file"], fmt="ftrace-text")
    add("gzip-cut.txt.gz", gz(CLEAN)[: len(gz(CLEAN)) // 2], "error", ["truncated or corrupt gzip"])
    # --- the clean bases, which must load without a word
    add("clean-ftrace.txt", CLEAN, "ok", [], remaining=FTRACE)
    add("clean-perf.txt", b"".join(PERF), "ok", [], remaining=PERF)
    add("clean-report.txt", report, "ok", [], remaining=REPORT)
    return cases


def capture_backtracking(lines: int, line_bytes: int) -> bytes:
    """sched_switch lines whose text repeats the literals that end its two comm captures
    (" prev_pid=", " next_pid="): matched naively, a line costs the square of its length."""
    middle = b" prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=a"
    tail = b" next_pid=1 next_prio=1"
    body = middle * (line_bytes // 2 // len(middle)) + tail * (line_bytes // 2 // len(tail))
    line = b"  a-1   [001] d..2.   707.093489: sched_switch: prev_comm=x" + body + b" z\n"
    return b"# tracer: nop\n" + line * lines


def _stamp(line: bytes) -> int:
    """A line's timestamp in microseconds."""
    return int(re.search(rb"(\d+\.\d{6}):", line).group(1).replace(b".", b""))


def _span(lines: list[bytes]) -> int:
    stamps = [_stamp(ln) for ln in lines]
    return (max(stamps) - min(stamps)) * 1000


def _same_cpu_order(a: bytes, b: bytes) -> bool:
    """Whether two lines swapped keep each CPU's time order (different CPUs)."""
    return re.search(rb"\[\d+\]", a).group(0) != re.search(rb"\[\d+\]", b).group(0)


def _lines_intact(data: bytes, at: int) -> list[bytes]:
    """The event lines of ``data`` but the one a NUL hole inserted at ``at`` lands in."""
    start = data.rfind(b"\n", 0, at) + 1
    return [ln for ln in FTRACE if data.find(ln) != start]


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cases = case_files()
    for old in out.iterdir():
        if old.name != "manifest.json" and old.name not in cases:
            old.unlink()
    for name, (data, _) in cases.items():
        (out / name).write_bytes(data)
    manifest = {name: entry for name, (_, entry) in cases.items()}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def gzip_bomb(path: Path, line_bytes: int) -> None:
    """A gzip file holding one line of ``line_bytes`` bytes after a trace header (about
    1 MB per GiB: one compressed block of 1 MiB written again and again; a full flush
    resets the compressor, so the same input gives the same bytes)."""
    block = b"a" * (1 << 20)
    assert line_bytes % len(block) == 0
    head = b"# tracer: nop\n#P:2\n" + FTRACE[0]
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    crc = zlib.crc32(head)
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")  # gzip header, no time
        f.write(comp.compress(head) + comp.flush(zlib.Z_FULL_FLUSH))
        compressed = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
        for _ in range(line_bytes // len(block)):
            f.write(compressed)
            crc = zlib.crc32(block, crc)
        f.write(comp.compress(b"\n") + comp.flush())
        crc = zlib.crc32(b"\n", crc)
        size = len(head) + line_bytes + 1
        f.write(crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little"))


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
