"""The text readers on the two LKML excerpts in tests/data/kernel-list: every line parses,
and the values are the ones printed in the mails."""

from __future__ import annotations

import pyarrow as pa
import pytest

import schedwake.ingest as ingest
from schedwake.ingest import text
from schedwake.schema import COMMON_FIELDS, STRING

from .conftest import KERNEL_LIST

XFS = KERNEL_LIST / "lkml-2020-xfs-dbench-ftrace.txt"
DIO = KERNEL_LIST / "lkml-2024-dio-storm-perf-script.txt"


def rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()


def check_common(table: pa.Table):
    for f in COMMON_FIELDS:
        assert table.schema.field(f.name).type == f.type, f.name
    assert table.schema.names[: len(COMMON_FIELDS)] == [f.name for f in COMMON_FIELDS]


@pytest.fixture(scope="module")
def xfs():
    return ingest.read(XFS)


@pytest.fixture(scope="module")
def dio():
    return ingest.read(DIO)


def test_xfs_sniff_and_counts(xfs):
    assert text.sniff(XFS) == "ftrace-text"
    assert xfs.meta.format == "ftrace-text"
    assert xfs.meta.event_counts == {
        "sched_migrate_task": 1,
        "sched_wakeup": 6,
        "sched_waking": 6,
        "workqueue_execute_end": 4,
        "workqueue_execute_start": 5,
        "workqueue_queue_work": 4,
    }
    src = xfs.meta.source
    assert src["unparsed_lines"] == 0 and src["first_unparsed"] == []
    assert src["sorted"] is True
    assert xfs.meta.cpus == 7  # no "#P:" header: highest CPU + 1
    assert xfs.meta.first_ts_ns == 194_998_648_000
    assert xfs.meta.last_ts_ns == 194_998_947_000
    assert xfs.meta.lost_events == {} and xfs.lost.num_rows == 0
    from schedwake.schema import META_KEYS

    assert set(xfs.meta.to_dict()) == set(META_KEYS)
    assert xfs.meta.systems["sched_waking"] == "sched"
    assert xfs.meta.systems["workqueue_queue_work"] == "workqueue"
    for t in xfs.tables.values():
        check_common(t)


def test_xfs_wake_migration(xfs):
    (m,) = rows(xfs.tables["sched_migrate_task"])
    assert m == {
        "ts": 194_998_945_000,
        "cpu": 4,
        "common_pid": 991,
        "common_comm": "kworker/4:1H",
        "common_flags": 0x01,
        "common_preempt_count": 0,
        "comm": "dbench",
        "pid": 25633,
        "prio": 120,
        "orig_cpu": 4,
        "dest_cpu": 5,
    }
    waking = rows(xfs.tables["sched_waking"])[-1]
    assert (waking["common_comm"], waking["pid"], waking["target_cpu"]) == (
        "kworker/4:1H",
        25633,
        4,
    )
    wakeup = rows(xfs.tables["sched_wakeup"])[-1]
    assert (wakeup["pid"], wakeup["target_cpu"]) == (25633, 5)
    t = xfs.tables["sched_wakeup"]
    assert t.schema.field("comm").type == STRING
    assert t.schema.field("target_cpu").type == pa.int32()
    assert "success" not in t.schema.names


def test_xfs_latency_flags(xfs):
    by_ts = {r["ts"]: r for r in rows(xfs.tables["sched_wakeup"])}
    assert by_ts[194_998_731_000]["common_flags"] == 0x01 | 0x04 | 0x20  # "dN.."
    assert by_ts[194_998_862_000]["common_flags"] == 0x01 | 0x24 | 0x10  # "dNs."
    assert by_ts[194_998_862_000]["common_pid"] == 0
    assert by_ts[194_998_862_000]["common_comm"] == "<idle>"
    ex = rows(xfs.tables["workqueue_execute_start"])
    assert all(r["common_flags"] == 0 and r["common_preempt_count"] == 0 for r in ex)  # "...."


def test_xfs_workqueue_old_layout(xfs):
    t = xfs.tables["workqueue_queue_work"]
    # a 5.5 kernel: workqueue printed as a pointer, req_cpu and cpu unsigned (%u)
    assert t.schema.field("work").type == pa.uint64()
    assert t.schema.field("workqueue").type == pa.uint64()
    assert t.schema.field("req_cpu").type == pa.uint32()
    assert t.schema.field("field_cpu").type == pa.uint32()  # the event's own `cpu` field
    assert t.schema.field("function").type == STRING
    first = rows(t)[0]
    assert first["work"] == 0x1CCCDC2D
    assert first["function"] == "xlog_cil_push_work"  # " [xfs]" module dropped
    assert first["workqueue"] == 0xD90239C9
    assert first["req_cpu"] == 512  # NR_CPUS: no CPU requested
    assert first["field_cpu"] == 4294967295  # WORK_CPU_UNBOUND as %u
    assert first["cpu"] == 4  # the ring buffer's CPU
    assert [r["field_cpu"] for r in rows(t)] == [4294967295, 4, 4, 4]
    end = xfs.tables["workqueue_execute_end"]
    assert "function" not in end.schema.names  # old execute_end: work only
    assert rows(end)[0]["work"] == 0x1CCCDC2D
    start = rows(xfs.tables["workqueue_execute_start"])
    assert [r["function"] for r in start] == [
        "xlog_cil_push_work",
        "wq_barrier_func",
        "blk_mq_requeue_work",
        "blk_mq_requeue_work",
        "xlog_ioend_work",
    ]


def test_dio_perf_script(dio):
    assert text.sniff(DIO) == "perf-script"
    assert dio.meta.format == "perf-script"
    assert dio.meta.event_counts == {"sched_switch": 4, "sched_waking": 2}
    assert dio.meta.systems == {"sched_switch": "sched", "sched_waking": "sched"}
    assert dio.meta.source["unparsed_lines"] == 0
    assert dio.meta.source["callchains"] is True
    sw = rows(dio.tables["sched_switch"])
    assert [r["prev_state_str"] for r in sw] == ["R", "I", "S", "R+"]
    assert [r["prev_state"] for r in sw] == [0, 0x80, 0x01, 0x100]
    last = sw[-1]
    assert last["common_comm"] == "kworker/11:68+d"  # prefix: name with work description
    assert last["prev_comm"] == "kworker/11:68"  # the event's own comm field
    assert (last["common_pid"], last["cpu"], last["ts"]) == (27489, 11, 2_702_018_642_000)
    assert last["common_flags"] is None and last["common_preempt_count"] is None
    assert (last["next_comm"], last["next_pid"]) == ("fio", 28517)
    assert sw[1]["common_comm"] == "kworker/11:68-d"
    t = dio.tables["sched_switch"]
    check_common(t)
    assert t.schema.field("prev_state").type == pa.int64()
    assert t.schema.field("prev_state_str").type == STRING
    assert t.schema.field("callchain").type == pa.list_(pa.string())
    assert t.schema.names.index("prev_state_str") == t.schema.names.index("prev_state") + 1


def test_dio_callchains(dio):
    wk = rows(dio.tables["sched_waking"])
    assert len(wk[0]["callchain"]) == 29
    assert wk[0]["callchain"][0] == "ffffffff9f0d7ba3 try_to_wake_up+0x2b3 ([kernel.kallsyms])"
    assert wk[0]["callchain"][4] == "ffffffff9f3bb04c iomap_dio_bio_end_io+0x8c ([kernel.kallsyms])"
    assert wk[0]["callchain"][-1] == "2500000025 [unknown] ([unknown])"
    assert len(wk[1]["callchain"]) == 10
    sw = rows(dio.tables["sched_switch"])
    assert [len(r["callchain"]) for r in sw] == [8, 6, 9, 8]
    assert (
        sw[3]["callchain"][2] == "ffffffff9fa0d4cb preempt_schedule_common+0x1b ([kernel.kallsyms])"
    )
    assert (wk[1]["comm"], wk[1]["pid"], wk[1]["target_cpu"]) == ("fio", 28517, 11)


def test_fixture_event_filter():
    t = ingest.read(XFS, events=["sched:sched_migrate_task"])
    assert set(t.tables) == {"sched_migrate_task"}
    assert t.meta.event_counts["sched_waking"] == 6  # counted, not built
