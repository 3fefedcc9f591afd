"""Task names that are not UTF-8, end to end (docs/semantics.md, "Task names that are not
UTF-8").

A comm is bytes to the kernel (``prctl(PR_SET_NAME)`` takes any), and every format
carries them as they are. Every reader turns them into text the way Python's
``bytes.decode("utf-8", "replace")`` does: U+FFFD per maximal invalid subpart, so a
name reads the same whichever file it came from. The real recording
``sample_traces/nonutf8-comm.*`` (sample_traces/README.md) has four threads named
with such bytes, in trace.dat, raw ftrace text, ``trace-cmd report`` text (all three:
one ring buffer) and ``perf script`` text (a second run of the same program).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schedwake

from .conftest import run_cli, sample

#: the thread names of sample_traces/nonutf8-comm.workload.c, as bytes and as text
NAMES = {
    b"bad\xff\xfename": "bad\ufffd\ufffdname",  # two invalid bytes
    b"trunc\xe2\x82x\xc3": "trunc\ufffdx\ufffd",  # a cut 3-byte sequence: one U+FFFD
    b"sur\xed\xa0\x80gate": "sur\ufffd\ufffd\ufffdgate",  # an encoded surrogate: three
    b"caf\xc3\xa9-ok": "caf\u00e9-ok",  # valid UTF-8: kept
}
FORMATS = {
    "trace.dat": "nonutf8-comm.dat",
    "ftrace-text": "nonutf8-comm.ftrace.txt.gz",
    "trace-cmd-report": "nonutf8-comm.report.txt.gz",
    "perf-script": "nonutf8-comm.perf-script.txt.gz",
}
#: the formats that hold the one ring buffer (the perf text is another run)
SAME_BUFFER = ("trace.dat", "ftrace-text", "trace-cmd-report")
#: (event, column) pairs that carry the workload's names
NAME_COLUMNS = [
    ("sched_switch", "prev_comm"),
    ("sched_switch", "next_comm"),
    ("sched_waking", "comm"),
    ("sched_wakeup", "comm"),
    ("sched_migrate_task", "comm"),
]


def path_of(fmt: str) -> Path:
    return sample(FORMATS[fmt])


@pytest.fixture(scope="module")
def loaded():
    cache = {}

    def get(fmt):
        if fmt not in cache:
            cache[fmt] = schedwake.load(path_of(fmt))
        return cache[fmt]

    return get


def column(trace, event, name) -> list:
    return trace.table(event).column(name).to_pylist()


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_names_come_out_replaced(loaded, fmt):
    """Each workload name, in every column that names a task, is exactly its replaced
    text; there is no other spelling of it (a raw byte left in, a name cut short)."""
    trace = loaded(fmt)
    assert trace.meta.format == fmt
    assert trace.warnings == []
    for event, col in NAME_COLUMNS:
        values = set(column(trace, event, col))
        ours = {v for v in values if v and v.startswith(("bad", "trunc", "sur", "caf"))}
        assert ours == set(NAMES.values()), f"{fmt} {event}.{col}: {sorted(ours)}"


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_string_column_is_valid_utf8(loaded, fmt):
    trace = loaded(fmt)
    for name in trace.events:
        trace.table(name).validate(full=True)


def test_the_raw_text_is_the_oracle():
    """The reader's sched_switch names of the raw ftrace text equal Python's decode of
    the bytes between ``prev_comm=``/``next_comm=`` and the next field, line by line."""
    raw = gzip.decompress(path_of("ftrace-text").read_bytes())
    want = Counter()
    for m in re.finditer(
        rb" sched_switch: prev_comm=(.*?) prev_pid=(\d+) .*? "
        rb"next_comm=(.*?) next_pid=(\d+) ",
        raw,
    ):
        want[
            (m[1].decode("utf-8", "replace"), int(m[2]), m[3].decode("utf-8", "replace"), int(m[4]))
        ] += 1
    assert b"bad\xff\xfename" in raw  # the file really has the bytes
    trace = schedwake.load(path_of("ftrace-text"))
    sw = trace.table("sched_switch")
    got = Counter(
        zip(*(sw.column(c).to_pylist() for c in ("prev_comm", "prev_pid", "next_comm", "next_pid")))
    )
    assert got == want


def test_the_three_forms_of_one_buffer_agree(loaded):
    """trace.dat (binary fields), raw ftrace text and trace-cmd report text of the same
    ring buffer give the same names in the same events."""

    def key(trace):
        out = {}
        for event, col in NAME_COLUMNS:
            t = trace.table(event)
            pid = "prev_pid" if col == "prev_comm" else "next_pid" if col == "next_comm" else "pid"
            out[event, col] = Counter(
                zip(
                    t.column("cpu").to_pylist(),
                    t.column(pid).to_pylist(),
                    t.column(col).to_pylist(),
                )
            )
        return out

    base = key(loaded("trace.dat"))
    assert sum(base["sched_switch", "prev_comm"].values()) > 500
    for fmt in SAME_BUFFER[1:]:
        assert key(loaded(fmt)) == base, fmt


@pytest.mark.slow
def test_libtracecmd_reader_gives_the_same_names():
    ours = schedwake.load(path_of("trace.dat"))
    lib = schedwake.load(path_of("trace.dat"), reader="libtracecmd")
    for event, col in NAME_COLUMNS:
        assert column(lib, event, col) == column(ours, event, col), (event, col)


# ----------------------------------------------------------------- every command

COMMANDS = {
    "info": ["info"],
    "info-json": ["info", "--format", "json"],
    "analyze": ["analyze"],
    "analyze-json": ["analyze", "--format", "json"],
    "analyze-markdown": ["analyze", "--format", "markdown"],
}


def assert_clean(proc, what):
    assert "Traceback" not in proc.stderr, f"{what}:\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, f"{what}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    assert proc.stderr == "", f"{what}: stderr {proc.stderr[-2000:]}"


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_command(fmt, command):
    proc = run_cli(*COMMANDS[command], path_of(fmt))
    assert_clean(proc, f"schedwake {' '.join(COMMANDS[command])} {FORMATS[fmt]}")
    if command.endswith("json"):
        json.loads(proc.stdout)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_convert(fmt, tmp_path):
    out = tmp_path / "tables"
    proc = run_cli("convert", path_of(fmt), "-o", out)
    assert_clean(proc, f"schedwake convert {FORMATS[fmt]}")
    for event, col in NAME_COLUMNS:
        values = set(pq.read_table(out / f"{event}.parquet").column(col).to_pylist())
        assert set(NAMES.values()) <= values, (fmt, event, col)


@pytest.mark.parametrize(
    "pair", [("trace.dat", "ftrace-text"), ("trace-cmd-report", "perf-script")], ids="-vs-".join
)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_compare(pair, fmt):
    proc = run_cli("compare", "--format", fmt, *(path_of(f) for f in pair))
    assert_clean(proc, f"schedwake compare {pair}")
    if fmt == "json":
        json.loads(proc.stdout)


# ------------------------------------------------- the text scanner's replacement


def test_names_with_the_same_text_are_one_value(tmp_path):
    """Two byte strings that decode to the same text (0xff 0xfe and 0xfe 0xff both give
    two U+FFFD) are one task name: one dictionary value, and analyze takes it (a
    dictionary holding a value twice cannot become a pandas Categorical)."""
    raw = gzip.decompress(path_of("ftrace-text").read_bytes()).split(b"\n")
    swapped = [
        ln.replace(b"bad\xff\xfename", b"bad\xfe\xffname") if i % 2 else ln
        for i, ln in enumerate(raw)
    ]
    f = tmp_path / "two-spellings.txt"
    f.write_bytes(b"\n".join(swapped))
    trace = schedwake.load(f)
    for event, col in NAME_COLUMNS:
        arr = trace.table(event).column(col).combine_chunks()
        values = (
            arr.dictionary.to_pylist()
            if pa.types.is_dictionary(arr.type)
            else arr.unique().to_pylist()
        )
        assert len(values) == len(set(values)), (event, col)
        assert "bad\ufffd\ufffdname" in values
    trace.table("sched_switch").to_pandas()
    proc = run_cli("analyze", f, "--threshold", "pingpong_min_episodes=1000000")
    assert_clean(proc, "schedwake analyze (two spellings)")


#: byte sequences around the edges of UTF-8 (maximal subparts, overlong forms,
#: surrogates, code points past U+10FFFF, cut sequences), and plain ones
PIECES = [
    b"\x80",
    b"\xbf",
    b"\xc0\xaf",
    b"\xc1\xbf",
    b"\xc2",
    b"\xc2\xa9",
    b"\xdf\xbf",
    b"\xe0\x80\xaf",
    b"\xe0\xa0",
    b"\xe0\xa0\x80",
    b"\xe2\x82",
    b"\xe2\x82\xac",
    b"\xed\x9f\xbf",
    b"\xed\xa0\x80",
    b"\xef\xbf\xbd",
    b"\xf0\x8f\xbf\xbf",
    b"\xf0\x90\x80",
    b"\xf0\x9f\x98\x80",
    b"\xf4\x8f\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf5",
    b"\xf8\x88\x80\x80\x80",
    b"\xfe",
    b"\xff",
    b"a",
    b"Z",
    b"/",
    b"-",
    b"0",
]


def random_names(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    names = set()
    while len(names) < n:
        name = b"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))[:15]
        if not name.endswith(b"-") and not name[:1].isdigit():
            names.add(name)
    return sorted(names)


def ftrace_lines(names: list[bytes]) -> bytes:
    head = b"# tracer: nop\n#\n# entries-in-buffer/entries-written: %d/%d   #P:2\n#\n" % (
        3 * len(names),
        3 * len(names),
    )
    out = [head]
    for i, nm in enumerate(names):
        pid = 1000 + i
        ts = b"%d.%06d" % (100 + i // 1000, i % 1000)
        out.append(
            b"%16s-%-7d [000] d..2. %s: sched_switch: prev_comm=%s prev_pid=%d "
            b"prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 "
            b"next_prio=120\n" % (nm, pid, ts, nm, pid)
        )
        out.append(
            b"          <idle>-0       [001] d.h2. %s: sched_waking: comm=%s pid=%d "
            b"prio=120 target_cpu=000\n" % (ts, nm, pid)
        )
        out.append(b"%16s-%-7d [000] ..... %s: my_event: who=%s n=%d\n" % (nm, pid, ts, nm, i))
    return b"".join(out)


def test_scanner_replaces_like_python(tmp_path):
    """Random names made of the edge cases of UTF-8, in the line prefix (common_comm),
    in layout fields (prev_comm, comm) and in the raw arguments of an event without a
    layout (args): every one reads as bytes.decode("utf-8", "replace")."""
    names = random_names(300, seed=5)
    f = tmp_path / "edges.txt"
    f.write_bytes(ftrace_lines(names))
    trace = schedwake.load(f)
    want = [n.decode("utf-8", "replace") for n in names]
    assert trace.meta.format == "ftrace-text"
    assert trace.meta.source["unparsed_lines"] == 0
    assert column(trace, "sched_switch", "prev_comm") == want
    assert column(trace, "sched_switch", "common_comm") == want
    assert column(trace, "sched_waking", "comm") == want
    assert column(trace, "my_event", "args") == [f"who={w} n={i}" for i, w in enumerate(want)]
    assert column(trace, "my_event", "who") == want
    for name in trace.events:
        trace.table(name).validate(full=True)


def test_header_and_unparsed_lines_that_are_not_utf8(tmp_path):
    """A '# tracer:' name and a line that does not parse, both with bytes that are not
    UTF-8, are text in the metadata (the tracer name used to raise UnicodeDecodeError)."""
    lines = ftrace_lines([b"ok"]).replace(b"# tracer: nop", b"# tracer: n\xffp")
    lines += b"garbage \xe2\x82 line\n"
    f = tmp_path / "header.txt"
    f.write_bytes(lines)
    trace = schedwake.load(f)
    src = trace.meta.source
    assert src["tracer"] == "n\ufffdp"
    assert src["first_unparsed"] == [(len(lines.split(b"\n")) - 1, "garbage \ufffd line")]
