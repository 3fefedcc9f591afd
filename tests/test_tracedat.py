"""The trace.dat binding against trace-cmd itself, on the real sample traces.

Every test runs ``trace-cmd report`` on the same file and compares: event counts,
timestamps, CPUs, common fields and every field value (``-R``: raw fields),
``prev_state`` as the kernel's print format shows it (``-N``), and the latency
flags (``-l``). Frozen numbers alone could hide a bug shared by the test.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict

import pyarrow as pa
import pytest

import schedwake
from schedwake.schema import COMMON_NAMES, field_name

from .conftest import SAMPLE_DATS, sample, shared_trace

LINE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+"
    r"(?P<sec>\d+)\.(?P<nsec>\d{9}):\s+(?P<event>\w+):\s+(?P<body>.*)$"
)
FIELD = re.compile(r"(\w+)=(.*?)(?= \w+=|$)")


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


def parse_raw_report(path, buffer=""):
    """Rows of ``trace-cmd report -R -t`` grouped by event.

    Events of an instance buffer (`trace-cmd extract -B NAME`) print as "NAME: ...".
    """
    rows = defaultdict(list)
    prefix = f"{buffer}: " if buffer else ""
    for line in report(path, "-R", "-t"):
        m = LINE.match(line.removeprefix(prefix))
        if not m:
            continue
        ts = int(m["sec"]) * 1_000_000_000 + int(m["nsec"])
        fields = dict(FIELD.findall(m["body"].rstrip()))
        if "buf" in fields:  # print's text is the last field and may hold "x=y" itself
            fields["buf"] = m["body"].rstrip().split("buf=", 1)[1]
        rows[m["event"]].append((ts, int(m["cpu"]), int(m["pid"]), m["comm"], fields))
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


@pytest.fixture(scope="module", params=SAMPLE_DATS, ids=lambda p: p.name)
def loaded(request):
    path = request.param
    trace = shared_trace(path)
    return path, trace, parse_raw_report(path, trace.meta.source["buffer"])


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
    expected = {name: len(r) for name, r in rows.items()}
    assert trace.meta.event_counts == expected
    assert {n: trace.table(n).num_rows for n in trace.events} == expected


@pytest.mark.slow
def test_every_field_value_equals_trace_cmd_raw(loaded):
    path, trace, rows = loaded
    for name, expected in rows.items():
        table = trace.table(name)
        assert table.column_names[: len(COMMON_NAMES)] == list(COMMON_NAMES)
        assert table.column("ts").to_pylist() == [r[0] for r in expected], name
        assert table.column("cpu").to_pylist() == [r[1] for r in expected], name
        assert table.column("common_pid").to_pylist() == [r[2] for r in expected], name
        assert table.column("common_comm").to_pylist() == [r[3] for r in expected], name
        keys = expected[0][4].keys() if expected else []
        for key in keys:
            col = table.column(field_name(key))
            got = col.to_pylist()
            typ = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
            want = [as_python(r[4][key], typ) for r in expected]
            if pa.types.is_string(typ):  # report lines end where a string's newline is
                got = [g.rstrip("\n") for g in got]
            assert got == want, f"{path.name}: {name}.{key} differs from trace-cmd report -R"


@pytest.mark.slow
def test_prev_state_str_equals_kernel_print_format(loaded):
    path, trace, _ = loaded
    if "sched_switch" not in trace.events:
        pytest.skip(f"{path.name} has no sched_switch")
    # (no `-F sched_switch`: trace-cmd 3.1.6 crashes with -F on instance buffers)
    states = [
        m.group(1)
        for line in report(path, "-N")
        if (m := re.search(r" sched_switch: .* prev_state=(\S+) ==>", line))
    ]
    assert trace.table("sched_switch").column("prev_state_str").to_pylist() == states


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
    lat = re.compile(r"^.{8}-\d+\s+(\d+)(\S{4})\S*\s+(\d+)\.(\d{9}):\s+(\w+):")
    expected = defaultdict(list)
    for line in report(dbench1, "-l", "-t"):
        if m := lat.match(line):
            expected[m[5]].append(m[2])
    assert expected
    for name, chars in expected.items():
        t = trace.table(name)
        got = [
            latency_chars(f, p)
            for f, p in zip(
                t.column("common_flags").to_pylist(), t.column("common_preempt_count").to_pylist()
            )
        ]
        assert got == chars, name


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
    first_line = next(r for r in report(dbench1, "-t") if LINE.match(r))
    mm = LINE.match(first_line)
    assert m.first_ts_ns == int(mm["sec"]) * 1_000_000_000 + int(mm["nsec"])
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
