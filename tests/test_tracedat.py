"""The trace.dat binding against trace-cmd itself, on the real sample traces.

Every test runs ``trace-cmd report`` on the same file and compares: event counts,
timestamps, CPUs, common fields and every field value (``-R``: raw fields),
``prev_state`` as the kernel's print format shows it (``-N``), and the latency
flags (``-l``). Frozen numbers alone could hide a bug shared by the test.

trace-cmd's report (hundreds of thousands of lines per sample) is parsed and compared
with Arrow's compute functions (RE2 regexes, whole columns at once), not line by line
in Python: the same reading of each line, in a fraction of the time. The parsed ``-R``
report of a sample is made once per test run (``computed_once``) for every test and
xdist worker that compares with it.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import schedwake
from schedwake.schema import COMMON_NAMES, field_name

from .conftest import SAMPLE_DATS, computed_once, sample, shared_trace, trace_cmd_output

#: An event line of trace-cmd report, for Python's re and for RE2 (pyarrow.compute).
#: RE2's \s, \d and \w are ASCII: what trace-cmd prints around and between the fields
#: (padding, numbers, event and field names) is ASCII.
LINE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+"
    r"(?P<sec>\d+)\.(?P<nsec>\d{9}):\s+(?P<event>\w+):\s+(?P<body>.*)$"
)
#: What LINE wants after its comm (its body may be empty, not the space before it)
AFTER_COMM = r"-\d+\s+\[\d+\]\s+\d+\.\d{9}:\s+\w+:\s"
#: LINE's "-PID [CPU] SEC.NSEC" once the text up to the ":" after it is cut off
NUMBERS = r"^-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<sec>\d+)\.(?P<nsec>\d{9})$"
#: RE2's \s (Python's ASCII \s less "\v", which splitlines() leaves in no line)
ASCII_WHITESPACE = " \t\n\f\r"
#: What str.rstrip() strips: the characters Python calls whitespace (none above U+3000)
PY_WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())


def report(path, *flags) -> list[str]:
    # task names are bytes (prctl(PR_SET_NAME)): decoded the way schedwake decodes them
    out = subprocess.run(
        ["trace-cmd", "report", *flags, "-i", str(path)],
        capture_output=True,
        text=True,
        errors="replace",
        check=True,
    ).stdout
    return out.splitlines()


#: What str.splitlines() ends a line at besides "\n", in UTF-8
LINE_BREAKS = (
    b"\r",
    b"\x0b",
    b"\x0c",
    b"\x1c",
    b"\x1d",
    b"\x1e",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"\xe2\x80\xa9",
)


def report_lines(path, *flags) -> pa.Array:
    """``report(path, *flags)`` as an Arrow string array, for pyarrow.compute.

    trace-cmd's output (:func:`trace_cmd_output`) is decoded as ``report()`` decodes it
    (UTF-8; newline translation aside, which splitlines() makes no difference). Output
    that is valid UTF-8 with no line break but "\n" (every sample's) is split by Arrow,
    in one pass over the bytes: the same lines as the decode and splitlines() of the other
    outputs, without a Python string per line.
    """
    data = trace_cmd_output(path, *flags)
    if data and not any(b in data for b in LINE_BREAKS):
        offsets = pa.py_buffer(np.array([0, len(data)], np.int32))
        whole = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, pa.py_buffer(data)])
        try:
            text = whole.cast(pa.string())  # (checks that it is UTF-8)
        except pa.ArrowInvalid:
            pass
        else:
            lines = pc.list_flatten(pc.split_pattern(text, "\n"))
            return lines.slice(0, len(lines) - 1) if data.endswith(b"\n") else lines
    return pa.array(data.decode("utf-8", "replace").splitlines(), pa.string())


def raw_fields(body: pa.Array) -> dict[str, pa.Array]:
    """The text of each field in the bodies of one event's ``-R`` lines, by name.

    Reads each body as ``dict(re.findall(r"(\\w+)=(.*?)(?= \\w+=|$)", body))`` does: a
    value runs to the next " name=" or the end; a name given twice keeps its last value.
    The names are the first line's; a line without one of them has a null there. Print's
    text (``buf``) is the last field and may hold "x=y" itself: it is all that follows
    the first "buf=".
    """
    # RE2 has no lookahead. Split at the spaces: a word that starts with "name=" starts
    # an item (so does a line's first word), the words of an item are joined again.
    words = pc.split_pattern(body, " ")
    flat = pc.list_flatten(words)
    named = pc.match_substring_regex(flat, r"^\w+=").to_numpy(zero_copy_only=False)
    starts = named.copy()
    starts[words.offsets.to_numpy()[:-1]] = True  # (every line has a first word)
    first = np.flatnonzero(starts)
    items = pa.ListArray.from_arrays(np.append(first, len(flat)).astype(np.int32), flat)
    items, row = pc.binary_join(items, " "), pc.list_parent_indices(words).to_numpy()[first]
    if named[first].all():  # every item starts with its name, which holds no "="
        keys = pc.list_element(pc.split_pattern(items, "=", max_splits=1), 0)
        values = cut_at(items, pc.add(pc.binary_length(keys), 1))[1]
    else:  # a line's first item may start with text before its name (findall skips it)
        found = pc.extract_regex(items, r"(?P<key>\w+)=(?P<value>.*)")
        valid = found.is_valid()
        row, found = row[valid.to_numpy(zero_copy_only=False)], found.filter(valid)
        keys, values = found.field("key"), found.field("value")
    fields = {}
    for key in dict.fromkeys(keys.filter(pa.array(row == 0)).to_pylist()):
        at = np.flatnonzero(pc.equal(keys, key).to_numpy(zero_copy_only=False))
        last = np.append(row[at][1:] != row[at][:-1], True)  # items of a line are in order
        index = np.full(len(body), -1)
        index[row[at][last]] = at[last]
        fields[key] = values.take(pa.array(index, mask=index < 0))
    if "buf" in fields:
        text = pc.extract_regex(body, r"buf=(?P<text>.*)").field("text")
        fields["buf"] = pc.if_else(fields["buf"].is_valid(), text, pa.scalar(None, pa.string()))
    return fields


def first_event_ts(path) -> int:
    """The timestamp of the first event line of ``trace-cmd report -t``, read as soon as
    it is printed: the rest of the report is not waited for."""
    cmd = ["trace-cmd", "report", "-t", "-i", str(path)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, errors="replace") as proc:
        try:
            for line in proc.stdout:
                if m := LINE.match(line):
                    return int(m["sec"]) * 1_000_000_000 + int(m["nsec"])
        finally:
            proc.kill()
    raise AssertionError(f"trace-cmd report printed no event of {path} (exit {proc.returncode})")


def cut_at(strings: pa.Array, at: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Each string cut in two at its own byte offset (Arrow slices all rows alike): both
    halves of every string as one string array over the same bytes, then taken apart."""
    assert strings.null_count == 0
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], np.int32)[strings.offset : strings.offset + n + 1]
    halves = np.empty(2 * n + 1, np.int32)
    halves[0::2] = offsets
    halves[1::2] = offsets[:-1] + at.to_numpy()
    both = pa.Array.from_buffers(
        pa.string(), 2 * n, [None, pa.py_buffer(halves), strings.buffers()[2]]
    )
    return both.take(np.arange(0, 2 * n, 2)), both.take(np.arange(1, 2 * n, 2))


def parse_raw_report(path, buffer="") -> dict[str, tuple[pa.Table, pa.Table]]:
    """``trace-cmd report -R -t``'s event lines by event, in their order: a table of
    ts, cpu, pid and comm, and one of the text of each field (:func:`raw_fields`).

    Events of an instance buffer (`trace-cmd extract -B NAME`) print as "NAME: ...".
    """
    lines = report_lines(path, "-R", "-t")
    if buffer:
        prefix = f"{buffer}: "
        cut = pc.utf8_slice_codeunits(lines, len(prefix))
        lines = pc.if_else(pc.starts_with(lines, prefix), cut, lines)
    # LINE without its captures, which make RE2 slow: the line is cut where LINE's comm
    # ends (its lazy .*? stops at the first place where what follows it matches), and the
    # rest, "-PID [CPU] SEC.NSEC: EVENT: BODY", at its first two colons
    at = pc.find_substring_regex(lines, AFTER_COMM)
    found = pc.greater_equal(at, 0)
    head, rest = cut_at(lines.filter(found), at.filter(found))
    parts = pc.split_pattern(rest, ":", max_splits=2)
    m = pc.extract_regex(pc.list_element(parts, 0), NUMBERS)

    def number(name):
        return pc.cast(m.field(name), pa.int64())

    ts = pc.add_checked(pc.multiply_checked(number("sec"), 1_000_000_000), number("nsec"))
    cpu, pid = number("cpu"), number("pid")
    comm = pc.utf8_ltrim(head, ASCII_WHITESPACE)
    event = pc.utf8_ltrim(pc.list_element(parts, 1), ASCII_WHITESPACE)
    body = pc.utf8_ltrim(pc.list_element(parts, 2), ASCII_WHITESPACE)
    body = pc.utf8_rtrim(body, PY_WHITESPACE)
    rows = {}
    for name in pc.unique(event).to_pylist():
        this = pc.equal(event, name)
        common = {
            "ts": ts.filter(this),
            "cpu": cpu.filter(this),
            "pid": pid.filter(this),
            "comm": comm.filter(this),
        }
        rows[name] = pa.table(common), pa.table(raw_fields(body.filter(this)))
    return rows


def as_python(value: str, arrow_type: pa.DataType):
    if pa.types.is_integer(arrow_type):
        return int(value, 16) if value.startswith("0x") else int(value)
    # -R prints a char[] holding bytes >= 0x80 as ARRAY[..] of hex bytes
    m = re.fullmatch(r"ARRAY\[([0-9a-f, ]*)\]", value)
    if m and pa.types.is_string(arrow_type):
        raw = bytes(int(b, 16) for b in m[1].split(", ") if b)
        return raw.split(b"\0")[0].decode("utf-8", "replace")
    return value


def as_arrow(text: pa.Array, arrow_type: pa.DataType) -> pa.Array | None:
    """:func:`as_python` for a whole column of integers or strings (None for others)."""
    if pa.types.is_integer(arrow_type):
        # Arrow reads a hex text into a narrower or signed type modulo 2**bits; int(x, 16)
        # does not: read it as uint64, then cast safely (a value out of range raises)
        hexa = pc.starts_with(text, "0x")
        decimal = pc.cast(pc.if_else(hexa, "0", text), arrow_type)
        hexadecimal = pc.cast(pc.cast(pc.if_else(hexa, text, "0"), pa.uint64()), arrow_type)
        return pc.if_else(hexa, hexadecimal, decimal)
    if pa.types.is_string(arrow_type):
        arrays = pc.match_substring_regex(text, r"^ARRAY\[[0-9a-f, ]*\]$")
        if pc.any(arrays).as_py():  # a few char[] fields: decoded one by one
            decoded = [as_python(text[i].as_py(), arrow_type) for i in np.flatnonzero(arrays)]
            text = pc.replace_with_mask(text, arrays, pa.array(decoded, pa.string()))
        return text
    return None


def plain(column) -> pa.Array:
    """One array of the values themselves (a dictionary column decoded)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.dictionary_decode() if pa.types.is_dictionary(column.type) else column


def assert_same(got, want, what: str) -> None:
    """Two columns equal, row by row; else the first row that differs."""
    got, want = plain(got), plain(want)
    assert len(got) == len(want), f"{what}: {len(got)} rows, trace-cmd has {len(want)}"
    same = pc.fill_null(pc.equal(got, want), False)
    if not pc.all(same).as_py():
        i = pc.index(same, False).as_py()
        raise AssertionError(
            f"{what}: row {i} is {got[i].as_py()!r}, trace-cmd has {want[i].as_py()!r}"
        )


def raw_report(path, buffer="") -> dict[str, tuple[pa.Table, pa.Table]]:
    """:func:`parse_raw_report`, made once per test run for every test (of any file) and
    xdist worker that compares with it (``buffer``: the file's, see there)."""
    return computed_once(
        f"trace-cmd report -R -t -i {path}, buffer {buffer!r}: tests/test_tracedat.py rows",
        lambda: parse_raw_report(path, buffer),
    )


@pytest.fixture(scope="module", params=SAMPLE_DATS, ids=lambda p: p.name)
def loaded(request):
    path = request.param
    trace = shared_trace(path)
    return path, trace, raw_report(path, trace.meta.source["buffer"])


def test_samples_exist():
    names = {p.name for p in SAMPLE_DATS}
    assert {"dbench-xfs-1client.dat", "dbench-xfs-2clients.dat", "instance-buffer.dat"} <= names


def test_instance_buffer_is_read_when_the_top_buffer_is_empty():
    """`trace-cmd extract -B NAME` files keep their events in the instance's buffer."""
    trace = schedwake.load(sample("instance-buffer.dat"))
    assert trace.meta.source["buffer"] == "swinst"
    assert trace.meta.event_counts["sched_switch"] > 100


def test_a_cpu_missing_from_the_file_is_skipped():
    """A v7 file lists only CPUs with data; libtracecmd crashes if asked for the others."""
    path = sample("missing-cpu.dat")
    summary = subprocess.run(
        ["trace-cmd", "dump", "--summary", str(path)], capture_output=True, text=True
    ).stdout
    assert "page size, 1 cpus," in summary  # only CPU 0 has a data section
    trace = schedwake.load(path)
    assert trace.meta.cpus == 2
    assert set(trace.table("sched_switch").column("cpu").to_pylist()) == {0}
    assert trace.meta.event_counts["sched_switch"] == 34


@pytest.mark.slow
def test_event_counts_equal_trace_cmd(loaded):
    path, trace, rows = loaded
    expected = {name: common.num_rows for name, (common, _) in rows.items()}
    assert trace.meta.event_counts == expected
    assert {n: trace.table(n).num_rows for n in trace.events} == expected


@pytest.mark.slow
def test_every_field_value_equals_trace_cmd_raw(loaded):
    path, trace, rows = loaded
    for name, (common, fields) in rows.items():
        table = trace.table(name)
        what = f"{path.name}: {name}"
        assert table.column_names[: len(COMMON_NAMES)] == list(COMMON_NAMES)
        assert_same(table.column("ts"), common["ts"], f"{what}.ts")
        assert_same(table.column("cpu"), common["cpu"], f"{what}.cpu")
        assert_same(table.column("common_pid"), common["pid"], f"{what}.common_pid")
        assert_same(table.column("common_comm"), common["comm"], f"{what}.common_comm")
        for key in fields.column_names:
            text = plain(fields[key])
            if text.null_count:
                line = pc.index(text.is_null(), True).as_py()
                raise AssertionError(f"{what}: line {line} of the event has no {key}=")
            got = plain(table.column(field_name(key)))
            try:
                want = as_arrow(text, got.type)
            except pa.ArrowInvalid as exc:  # not an integer of the column's type
                raise AssertionError(f"{what}.{key}: {exc}") from None
            if want is None:  # neither integers nor strings: value by value
                want_list = [as_python(v, got.type) for v in text.to_pylist()]
                assert got.to_pylist() == want_list, f"{what}.{key} (trace-cmd report -R)"
                continue
            if pa.types.is_string(got.type):  # report lines end where a string's newline is
                got = pc.utf8_rtrim(got, "\n")
            assert_same(got, want, f"{what}.{key} (trace-cmd report -R)")


@pytest.mark.slow
def test_prev_state_str_equals_kernel_print_format(loaded):
    path, trace, _ = loaded
    if "sched_switch" not in trace.events:
        pytest.skip(f"{path.name} has no sched_switch")
    # `-F sched_switch` prints the same lines alone, but trace-cmd 3.1.6 crashes with -F
    # on instance buffers
    only = ["-F", "sched_switch"] if not trace.meta.source["buffer"] else []
    lines = report_lines(path, "-N", *only)
    states = pc.extract_regex(lines, r" sched_switch: .* prev_state=(?P<state>\S+) ==>")
    states = states.filter(states.is_valid()).field("state")
    assert_same(trace.table("sched_switch").column("prev_state_str"), states, path.name)


def latency_chars(flags: int, pc: int) -> str:
    """What libtraceevent prints for the first four latency columns."""
    irqs = "d" if flags & 0x01 else ("X" if flags & 0x02 else ".")
    resched = "N" if flags & 0x04 else "."
    hard, soft = flags & 0x08, flags & 0x10
    ctx = "H" if hard and soft else "h" if hard else "s" if soft else "."
    depth = "." if (pc & 0xF) == 0 else f"{pc & 0xF:x}"
    return irqs + resched + ctx + depth


@pytest.mark.slow
def test_common_flags_and_preempt_count_equal_latency_output(dbench1):
    trace = shared_trace(dbench1)
    # (the CPU before the four characters is not captured: RE2 is slower for each group)
    lat = r"^.{8}-\d+\s+\d+(?P<chars>\S{4})\S*\s+\d+\.\d{9}:\s+(?P<event>\w+):"
    lines = pc.extract_regex(report_lines(dbench1, "-l", "-t"), lat)
    lines = lines.filter(lines.is_valid())
    events = lines.field("event")
    assert len(lines)
    for name in pc.unique(events).to_pylist():
        chars = lines.field("chars").filter(pc.equal(events, name))
        t = trace.table(name)
        pairs = np.stack([t.column(c).to_numpy() for c in ("common_flags", "common_preempt_count")])
        # latency_chars of each distinct (flags, preempt_count) pair, given to its rows
        distinct, which = np.unique(pairs, axis=1, return_inverse=True)
        printed = pa.array([latency_chars(int(f), int(p)) for f, p in distinct.T])
        assert_same(printed.take(which.ravel()), chars, name)


def test_types_follow_the_format(dbench1):
    trace = shared_trace(dbench1)
    waking = trace.table("sched_waking").schema
    assert waking.field("ts").type == pa.int64()
    assert waking.field("cpu").type == pa.int32()
    assert waking.field("comm").type == pa.dictionary(pa.int32(), pa.string())  # char[16]
    assert waking.field("pid").type == pa.int32()
    assert waking.field("target_cpu").type == pa.int32()
    switch = trace.table("sched_switch").schema
    assert switch.field("prev_state").type == pa.int64()  # long
    # __data_loc char[] comm on 6.18: decoded to the same string type as char[16]
    assert trace.table("sched_migrate_task").schema.field("comm").type == waking.field("comm").type
    qw = trace.table("workqueue_queue_work").schema
    assert qw.field("work").type == pa.uint64()  # void *
    assert qw.field("function").type == pa.dictionary(pa.int32(), pa.string())  # %ps symbol
    assert qw.field("cpu").type == pa.int32()  # the CPU the event fired on
    assert qw.field("field_cpu").type == pa.int32()  # the format's own `int cpu`


def test_sign_extension_of_unbound_workqueue_cpu(dbench1):
    df = schedwake.load(dbench1, events=["workqueue_queue_work"]).df("workqueue_queue_work")
    cpu = df["field_cpu"]
    assert (cpu == -1).any(), "unbound work (cpu=-1) expected in dbench on XFS"
    assert cpu.min() == -1 and cpu.max() < 4096


def test_data_loc_comm_of_sched_migrate_task(dbench2):
    df = schedwake.load(dbench2, events=["sched_migrate_task"]).df("sched_migrate_task")
    assert len(df) > 0
    assert (df["comm"].astype(str) == "dbench").any()
    assert df["comm"].astype(str).str.len().max() <= 15


def test_reading_some_events_reads_only_those(dbench2):
    full = shared_trace(dbench2)
    part = schedwake.load(dbench2, events=["sched:sched_waking", "sched_switch"])
    assert part.events == ["sched_switch", "sched_waking"]
    assert part.meta.event_counts == full.meta.event_counts
    assert part.table("sched_waking").equals(full.table("sched_waking"))


@pytest.mark.slow
def test_metadata(dbench1):
    trace = shared_trace(dbench1)
    m = trace.meta
    assert m.format == "trace.dat" and m.cpus == 2 and m.clock == "local"
    assert m.source["file_version"] == 7
    assert m.first_ts_ns == first_event_ts(dbench1)
    assert m.last_ts_ns == max(trace.table(n).column("ts").to_numpy().max() for n in trace.events)
    assert m.lost_events == {}


def test_version_6_file_reads_the_same(dbench1, tmp_path):
    v6 = tmp_path / "v6.dat"
    subprocess.run(
        [
            "trace-cmd",
            "convert",
            "-i",
            str(dbench1),
            "-o",
            str(v6),
            "--file-version",
            "6",
            "--compression",
            "none",
        ],
        check=True,
        capture_output=True,
    )
    a, b = shared_trace(dbench1), schedwake.load(v6)
    assert b.meta.source["file_version"] == 6
    assert a.events == b.events
    for name in a.events:
        assert a.table(name).equals(b.table(name)), name


def test_lost_events_match_trace_cmd():
    path = sample("lost-events.dat")
    trace = schedwake.load(path)
    dropped = [
        (int(m[1]), int(m[2]) if m[2] else -1)
        for line in report(path)
        if (m := re.search(r"CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]", line))
    ]
    assert dropped, "the lost-events sample must contain dropped events"
    got = list(zip(trace.lost.column("cpu").to_pylist(), trace.lost.column("count").to_pylist()))
    assert sorted(got) == sorted(dropped)
    per_cpu = defaultdict(int)
    for cpu, n in dropped:
        per_cpu[cpu] += n if n > 0 else 1
    assert trace.meta.lost_events == dict(per_cpu)
    assert trace.meta.lost_unknown == tuple(sorted({c for c, n in dropped if n < 0}))


def test_char16_comm_of_sched_migrate_task_on_6_1():
    """On 6.1 sched_migrate_task.comm is char[16]; on 6.18 it is __data_loc: same column."""
    path = sample("guest8-dbench-xfs-2clients.dat")
    trace = schedwake.load(path, events=["sched_migrate_task"])
    df = trace.df("sched_migrate_task")
    assert len(df) > 0 and (df["comm"].astype(str) == "dbench").any()
    assert trace.meta.cpus == 8 and trace.meta.clock == "global"
