"""Every text layout the readers accept, on small texts built from real lines (the
lines the kernel documentation and the tools print for each layout), plus bad input,
sorting, compression and streaming."""

from __future__ import annotations

import bz2
import gzip
import lzma
import shutil
import subprocess

import pyarrow as pa
import pytest

import schedwake
import schedwake.ingest as ingest
from schedwake.errors import TraceError
from schedwake.ingest import text

from .conftest import KERNEL_LIST

FTRACE_HEADER = """\
# tracer: nop
#
# entries-in-buffer/entries-written: 9/9   #P:2
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
"""

FTRACE_BODY = """\
            bash-8850    [001] d..2.   390.658847: sched_switch: prev_comm=bash prev_pid=8850 prev_prio=120 prev_state=S ==> next_comm=bash next_pid=8852 next_prio=120
       trace-cmd-8843    [000] dN.4.   390.659091: sched_wakeup: comm=gzip pid=8844 prio=120 target_cpu=000
            gzip-8864    [001] d..2.   390.665752: sched_switch: prev_comm=bash prev_pid=8864 prev_prio=120 prev_state=R+ ==> next_comm=migration/1 next_pid=21 next_prio=0
     migration/1-21      [001] d..3.   390.665756: sched_migrate_task: comm=bash pid=8864 prio=120 orig_cpu=1 dest_cpu=0
     kworker/1:1-40      [001] .....   390.825895: workqueue_execute_end: work struct 000000005a4c52de: function virtio_transport_tx_work
            gzip-8861    [001] d.s1.   390.993657: workqueue_queue_work: work struct=00000000e1f3d1cb function=wb_workfn workqueue=writeback req_cpu=256 cpu=-1
          <idle>-0       [001] d.s4.   398.704682: sched_waking: comm=dbench pid=9021 prio=120 target_cpu=001
   Web Content-1234      [000] D.H1f   398.800000: sched_waking: comm=Web Content pid=1235 prio=120 target_cpu=000
  kworker/u161:6-718     [000] ..Zff   398.900000: sched_switch: prev_comm=kworker/u161:6 prev_pid=718 prev_prio=120 prev_state=D|I ==> next_comm=swapper/0 next_pid=0 next_prio=120
"""


def write(tmp_path, name, content, mode="w"):
    p = tmp_path / name
    if isinstance(content, str):
        content = content.encode()
    p.write_bytes(content)
    return p


def rows(trace, event):
    return trace.tables[event].to_pylist()


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and values (dictionaries may list their values in another order)."""
    return a.schema == b.schema and a.to_pylist() == b.to_pylist()


# ------------------------------------------------------------------ raw ftrace


def test_ftrace_full(tmp_path):
    p = write(tmp_path, "t.txt", FTRACE_HEADER + FTRACE_BODY)
    assert text.sniff(p) == "ftrace-text"
    t = ingest.read(p)
    assert t.meta.cpus == 2
    assert t.meta.source["entries_written"] == 9
    assert t.meta.source["timestamps"] == "us"
    assert t.meta.source["unparsed_lines"] == 0
    sw = rows(t, "sched_switch")
    assert [r["prev_state_str"] for r in sw] == ["S", "R+", "D|I"]
    assert [r["prev_state"] for r in sw] == [1, 0x100, 0x82]
    assert sw[1]["common_comm"] == "gzip" and sw[1]["prev_comm"] == "bash"
    assert sw[0]["ts"] == 390_658_847_000
    assert (sw[0]["common_flags"], sw[0]["common_preempt_count"]) == (0x01, 2)
    # "..Zff": NMI in hardirq, preempt depth 0xf, migrate-disable 0xf
    assert (sw[2]["common_flags"], sw[2]["common_preempt_count"]) == (0x48, 0xFF)
    assert sw[2]["common_comm"] == "kworker/u161:6" and sw[2]["common_pid"] == 718
    wk = rows(t, "sched_waking")
    assert wk[1]["common_comm"] == "Web Content" and wk[1]["comm"] == "Web Content"
    assert (wk[1]["common_flags"], wk[1]["common_preempt_count"]) == (0x81 | 0x18, 0xF1)
    assert wk[0]["common_flags"] == 0x11 and wk[0]["common_preempt_count"] == 4
    wq = rows(t, "workqueue_queue_work")[0]
    assert wq["field_cpu"] == -1 and wq["req_cpu"] == 256 and wq["workqueue"] == "writeback"
    assert wq["work"] == 0xE1F3D1CB and wq["function"] == "wb_workfn"
    assert t.tables["workqueue_queue_work"].schema.field("field_cpu").type == pa.int32()
    end = rows(t, "workqueue_execute_end")[0]
    assert end["function"] == "virtio_transport_tx_work" and end["work"] == 0x5A4C52DE
    assert rows(t, "sched_wakeup")[0]["common_flags"] == 0x25


def test_ftrace_old_kernel_4char_flags_and_tgid(tmp_path):
    body = """\
            bash-1091  [000] ( 1091) d..2    28.313544: sched_switch: prev_comm=bash prev_pid=1091 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
            bash-1091  ( 1091) [002] dNs5    64.965177: sched_wakeup: comm=sshd pid=99 prio=120 success=1 target_cpu=002
           <...>-1234  (-----) [003] .Ns1    65.000001: sched_waking: comm=sshd pid=99 prio=120 target_cpu=002
"""
    t = ingest.read(write(tmp_path, "old.txt", body), input_format="ftrace-text")
    assert t.meta.source["unparsed_lines"] == 0
    sw = rows(t, "sched_switch")[0]
    assert (sw["cpu"], sw["common_pid"], sw["common_flags"], sw["common_preempt_count"]) == (
        0,
        1091,
        1,
        2,
    )
    wu = rows(t, "sched_wakeup")[0]
    assert (wu["cpu"], wu["success"], wu["target_cpu"]) == (2, 1, 2)
    assert wu["common_flags"] == 0x01 | 0x24 | 0x10 and wu["common_preempt_count"] == 5
    assert t.tables["sched_wakeup"].schema.names[-2:] == ["success", "target_cpu"]
    wk = rows(t, "sched_waking")[0]
    assert (wk["common_comm"], wk["common_pid"], wk["cpu"]) == ("<...>", 1234, 3)


def test_ftrace_noirq_info_counter_clock_and_lost(tmp_path):
    body = """\
# tracer: nop
#
#           TASK-PID     CPU#     TIMESTAMP  FUNCTION
#              | |         |         |         |
            bash-8850    [001]  123456789012: sched_waking: comm=gzip pid=8844 prio=120 target_cpu=000
CPU:1 [LOST 42 EVENTS]
            bash-8850    [001]  123456789999: sched_waking: comm=gzip pid=8844 prio=120 target_cpu=000
            bash-8850    [000]  123456790000: sched_waking: comm=gzip pid=8844 prio=120 target_cpu=000
"""
    t = ingest.read(write(tmp_path, "c.txt", body))
    wk = rows(t, "sched_waking")
    assert [r["ts"] for r in wk] == [123456789012, 123456789999, 123456790000]  # raw counter
    assert t.meta.source["timestamps"] == "raw"
    assert all(r["common_flags"] is None for r in wk)
    assert t.meta.lost_events == {1: 42} and t.meta.lost_unknown == ()
    assert t.lost.to_pylist() == [{"ts": 123456789999, "cpu": 1, "count": 42}]


def test_trace_pipe_without_header(tmp_path):
    p = write(tmp_path, "pipe.txt", FTRACE_BODY)
    assert text.sniff(p) == "ftrace-text"
    t = ingest.read(p)
    assert t.meta.cpus == 2 and sum(t.meta.event_counts.values()) == 9


def test_ns_timestamps_are_exact(tmp_path):
    body = "            bash-8850    [001] d..2. 162573.215941123: sched_waking: comm=a pid=1 prio=120 target_cpu=001\n"
    t = ingest.read(write(tmp_path, "ns.txt", body), input_format="ftrace-text")
    assert rows(t, "sched_waking")[0]["ts"] == 162_573_215_941_123
    assert t.meta.source["timestamps"] == "ns"


# ------------------------------------------------------------- trace-cmd report

REPORT_316 = """\
cpus=2
            bash-8850  [001]   390.658847: sched_switch:         bash:8850 [120] S ==> bash:8852 [120]
       trace-cmd-8843  [000]   390.659089: sched_waking:         comm=gzip pid=8844 prio=120 target_cpu=000
       trace-cmd-8843  [000]   390.659092: sched_switch:         trace-cmd:8843 [120] R ==> gzip:8844 [120]
     migration/1-21    [001]   390.665756: sched_migrate_task:   comm=bash pid=8864 prio=120 orig_cpu=1 dest_cpu=0
            gzip-8855  [001]   390.825881: workqueue_activate_work: work struct 0xffff888102191020 function=virtio_transport_tx_work 
            gzip-8861  [001]   390.993657: workqueue_queue_work: work struct=0xffff8881020a11f0 function=wb_workfn workqueue=writeback req_cpu=256 cpu=-1
    kworker/u8:1-32    [001]   390.993664: workqueue_execute_start: work struct 0xffff8881020a11f0: function wb_workfn
          <idle>-0     [001]   391.129697: sched_wakeup:         gzip:8844 [120] CPU:001
    kworker/u8:1-32    [001]   391.129698: sched_switch:         kworker/u8:1:32 [120] W ==> swapper/1:0 [120]
            gzip-8864  [001]   391.129699: sched_switch:         gzip:8864 [120] X ==> swapper/1:0 [120]
"""


def test_report_default_with_plugins(tmp_path):
    p = write(tmp_path, "r.txt", REPORT_316)
    assert text.sniff(p) == "trace-cmd-report"
    t = ingest.read(p)
    assert t.meta.cpus == 2 and t.meta.source["unparsed_lines"] == 0
    sw = rows(t, "sched_switch")
    assert [(r["prev_comm"], r["prev_pid"], r["next_comm"], r["next_pid"]) for r in sw] == [
        ("bash", 8850, "bash", 8852),
        ("trace-cmd", 8843, "gzip", 8844),
        ("kworker/u8:1", 32, "swapper/1", 0),
        ("gzip", 8864, "swapper/1", 0),
    ]
    # libtraceevent 1.7's plugin letters ("SDTtZXxW"): W is TASK_IDLE (I), X is 0x20 (Z)
    assert [r["prev_state_str"] for r in sw] == ["S", "R", "I", "Z"]
    assert [r["prev_state"] for r in sw] == [1, 0, 0x80, 0x20]
    wu = rows(t, "sched_wakeup")[0]
    assert (wu["comm"], wu["pid"], wu["prio"], wu["target_cpu"]) == ("gzip", 8844, 120, 1)
    q = rows(t, "workqueue_queue_work")[0]
    assert q["work"] == 0xFFFF8881020A11F0 and q["field_cpu"] == -1
    a = rows(t, "workqueue_activate_work")[0]
    assert a["function"] == "virtio_transport_tx_work" and a["work"] == 0xFFFF888102191020
    assert all(r["common_flags"] is None for r in sw)  # 3.1.x prints no latency column


def test_report_newer_plugins_and_latency(tmp_path):
    body = """\
cpus=6
          <idle>-0     [005] dNh2. 223087.004012: sched_wakeup:         trace-cmd:89992 [120] CPU:005
          <idle>-0     [000] d..2. 162573.216423: sched_switch:         swapper/0:0 [120] R ==> trace-cmd:89135 [120]
           sleep-89142 [001] d.h6. 162573.215941: sched_waking:         comm=trace-cmd pid=89135 prio=120 target_cpu=000
   kworker/u36:1-51219 [000] d..2. 162583.266957: sched_switch:         kworker/u36:1:51219 [120] R ==> kworker/u33:2:49692 [120] Latency: 4024.977 usecs
   kworker/u33:2-49692 [000] d..2. 162583.268334: sched_switch:         kworker/u33:2:49692 [120] I ==> kworker/u36:1:51219 [120]
CPU:3 [EVENTS DROPPED]
CPU:4 [120 EVENTS DROPPED]
CPU 2 is empty
          <idle>-0     [003] d..2. 162583.300000: sched_switch:         swapper/3:0 [120] R ==> a:1 [120]
"""
    t = ingest.read(write(tmp_path, "new.txt", body))
    assert t.meta.format == "trace-cmd-report" and t.meta.cpus == 6
    assert t.meta.source["sorted"] is False
    sw = rows(t, "sched_switch")
    assert [r["ts"] for r in sw] == sorted(r["ts"] for r in sw)
    assert [r["prev_state_str"] for r in sw] == ["R", "R", "I", "R"]  # I: new letter table
    assert sw[1]["prev_comm"] == "kworker/u36:1" and sw[1]["next_pid"] == 49692
    wu = rows(t, "sched_wakeup")[0]
    assert wu["common_flags"] == 0x01 | 0x24 | 0x08 and wu["common_preempt_count"] == 2
    assert t.meta.lost_events == {3: 1, 4: 120}  # at least one lost on CPU 3
    assert t.meta.lost_unknown == (3,)
    assert sorted(r["count"] for r in t.lost.to_pylist()) == [-1, 120]


def test_report_l_t_R_tsdiff_and_instance(tmp_path):
    body = """\
cpus=2
trace-cm-8843    0d..3.   390.659089: sched_waking:         comm=gzip pid=8844 prio=120 target_cpu=000
schedwake-textdev: kworker/-5590    0d..2.   390.659100: sched_switch:         kworker/u8:3:5590 [120] W ==> swapper/0:0 [120]
schedwake-textdev: CPU:0 [61814 EVENTS DROPPED]
       trace-cmd-8843  [000]   390.659188694: sched_waking:         comm=gzip pid=8844 prio=120 target_cpu=000
       trace-cmd-8843  [000]   390.659283: (+50)    sched_waking:         comm=gzip pid=8844 prio=120 target_cpu=000
            bash-8850  [001]   390.758847: sched_switch:          prev_comm=bash prev_pid=8850 prev_prio=120 prev_state=1 next_comm=bash next_pid=8852 next_prio=120
schedwake-textdev:     kworker/u8:3-5590  [000]   390.859659: workqueue_execute_end:  work=0xffff888102473890 function=loop_rootcg_workfn
            gzip-8864  [001]   390.965752: sched_switch:         prev_comm=bash prev_pid=8864 prev_prio=120 prev_state=R+ ==> next_comm=migration/1 next_pid=21 next_prio=0
"""
    t = ingest.read(write(tmp_path, "mix.txt", body), input_format="trace-cmd-report")
    assert t.meta.source["unparsed_lines"] == 0
    wk = rows(t, "sched_waking")
    assert [r["ts"] for r in wk] == [390_659_089_000, 390_659_188_694, 390_659_283_000]
    assert wk[0]["common_comm"] == "trace-cm" and wk[0]["common_flags"] == 1
    assert wk[0]["common_preempt_count"] == 3
    sw = rows(t, "sched_switch")
    assert sw[0]["common_comm"] == "kworker/" and sw[0]["prev_comm"] == "kworker/u8:3"
    assert [r["prev_state_str"] for r in sw] == ["I", "S", "R+"]
    assert rows(t, "workqueue_execute_end")[0]["function"] == "loop_rootcg_workfn"
    assert t.meta.lost_events == {0: 61814}


# ------------------------------------------------------------------ perf script


def test_perf_script_variants(tmp_path):
    body = """\
            perf  9257 [000]   416.990428:              sched:sched_waking: comm=migration/0 pid=18 prio=0 target_cpu=000
     migration/0    18 [000]   416.990435:        sched:sched_migrate_task: comm=perf pid=9257 prio=120 orig_cpu=0 dest_cpu=1
              sh  9261 [001]   416.991560:              sched:sched_switch: prev_comm=sh prev_pid=9261 prev_prio=120 prev_state=R+ ==> next_comm=migration/1 next_pid=21 next_prio=0
 kworker/1:0-eve    23 [001]   417.081973:  workqueue:workqueue_queue_work: work struct=0xffff8881021910a8 function=virtio_transport_send_pkt_work workqueue=virtio_vsock req_cpu=256 cpu=1
            perf  9257/9257  [000]   417.090428324:              sched:sched_waking: comm=migration/0 pid=18 prio=0 target_cpu=000
          :13637 13637 [002]   417.581529:            sched:sched_waking: comm=perf pid=13638 prio=120 target_cpu=001
          :13637 13637 [002]   417.581537:            sched:sched_wakeup: perf:13638 [120] success=1 CPU:001
           sleep 13638 [001]   417.582291:            sched:sched_switch: sleep:13638 [120] S ==> swapper/1:0 [120]
            perf  9257 [000]   417.600000:          1    sched:sched_wakeup: comm=migration/0 pid=18 prio=0 target_cpu=000
"""
    p = write(tmp_path, "perf.txt", body)
    assert text.sniff(p) == "perf-script"
    t = ingest.read(p)
    assert t.meta.source["unparsed_lines"] == 0
    assert t.meta.systems["workqueue_queue_work"] == "workqueue"
    wk = rows(t, "sched_waking")
    assert [r["ts"] for r in wk] == [416_990_428_000, 417_090_428_324, 417_581_529_000]
    assert wk[2]["common_comm"] == ":13637" and wk[2]["common_pid"] == 13637
    q = rows(t, "workqueue_queue_work")[0]
    assert q["common_comm"] == "kworker/1:0-eve" and q["field_cpu"] == 1 and q["cpu"] == 1
    wu = rows(t, "sched_wakeup")
    assert (wu[0]["comm"], wu[0]["pid"], wu[0]["success"], wu[0]["target_cpu"]) == (
        "perf",
        13638,
        1,
        1,
    )
    assert (wu[1]["comm"], wu[1]["success"], wu[1]["ts"]) == (
        "migration/0",
        None,
        417_600_000_000,
    )  # -F period
    sw = rows(t, "sched_switch")
    assert [r["prev_state_str"] for r in sw] == ["R+", "S"]
    assert "callchain" not in t.tables["sched_switch"].schema.names


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
@pytest.mark.slow
def test_perf_data_through_perf_script(tmp_path):
    data = tmp_path / "perf.data"
    rec = subprocess.run(
        [
            "perf",
            "record",
            "-q",
            "-o",
            str(data),
            "-e",
            "sched:sched_switch",
            "-e",
            "sched:sched_waking",
            "-a",
            "--",
            "sleep",
            "0.05",
        ],
        capture_output=True,
        text=True,
    )
    if rec.returncode != 0 or not data.exists():
        pytest.skip(f"perf record is not permitted here: {rec.stderr.strip()[:200]}")
    t = ingest.read(data, reader="perf-script")
    assert t.meta.format == "perf.data"
    assert t.meta.event_counts.get("sched_switch", 0) > 0
    script = subprocess.run(["perf", "script", "--ns", "-i", str(data)], capture_output=True).stdout
    p = write(tmp_path, "script.txt", script)
    t2 = ingest.read(p)
    assert t2.meta.event_counts == t.meta.event_counts
    assert same(t2.tables["sched_switch"], t.tables["sched_switch"])


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_perf_lost_records_are_lost_events(tmp_path):
    """A real perf.data whose 1-page buffers overflowed: perf's PERF_RECORD_LOST records
    (`perf script --show-lost-events`) are the trace's lost events, per CPU, from the
    perf.data file and from its script text alike; the gate refuses the trace."""
    import re
    from collections import Counter

    from .conftest import run_cli, sample

    data = sample("perf-lost-events.perf.data")
    script = subprocess.run(
        ["perf", "script", "--ns", "--show-lost-events", "-i", str(data)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    expected = Counter()
    for cpu, n in re.findall(r"\[(\d+)\] +[\d.]+: PERF_RECORD_LOST lost (\d+)$", script, re.M):
        expected[int(cpu)] += int(n)
    assert sum(expected.values()) == 182  # = perf report --stats' LOST_SAMPLES per event
    as_text = ingest.read(write(tmp_path, "script.txt", script))
    assert as_text.meta.source["unparsed_lines"] == 0
    for t in (ingest.read(data), ingest.read(data, reader="perf-script"), as_text):
        assert t.meta.lost_events == dict(expected), t.meta.format
        assert t.meta.event_counts["sched_switch"] == 3705
        assert t.lost.num_rows == 3
    # without --show-lost-events the text cannot show the losses: the model says so
    plain = subprocess.run(
        ["perf", "script", "--ns", "-i", str(data)], capture_output=True, text=True, check=True
    ).stdout
    caveats = " ".join(schedwake.load(write(tmp_path, "plain.txt", plain)).caveats)
    assert "--show-lost-events" in caveats and "lost 182" not in caveats
    assert "--show-lost-events" not in " ".join(schedwake.load(data).caveats)
    # perf script --header gives the recording machine's kernel and CPU count
    meta = ingest.read(data).meta
    assert (meta.kernel, meta.cpus) == ("6.18.44-fc-v595", 2)
    p = run_cli("gate", "--baseline", data, "--candidate", data)
    assert p.returncode == 2 and "lost 182 events" in p.stderr


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_truncated_perf_data_says_what_perf_said(tmp_path):
    """perf script prints nothing for a truncated perf.data: through the perf-script
    reader the error is perf's, not "empty file"; schedwake's own reader says where the
    file ends."""
    from .conftest import sample

    cut = write(
        tmp_path, "cut.perf.data", sample("perf-lost-events.perf.data").read_bytes()[:100000]
    )
    with pytest.raises(TraceError) as e:
        ingest.read(cut, reader="perf-script")
    assert "`perf script` failed" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(TraceError) as e:
        ingest.read(cut)
    assert "truncated" in str(e.value) and "\n" not in str(e.value)


def test_perf_data_without_perf(tmp_path, monkeypatch):
    p = write(tmp_path, "perf.data", b"PERFILE2" + b"\0" * 100)
    monkeypatch.setattr(text.shutil, "which", lambda name: None)
    with pytest.raises(TraceError) as e:
        ingest.read(p, reader="perf-script")
    assert "perf" in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------- other events


def test_unknown_events_keep_key_values(tmp_path):
    body = """\
          <idle>-0       [001] d.h2.   390.000001: irq_handler_entry: irq=24 name=virtio0-input.0
          <idle>-0       [001] d.h2.   390.000002: irq_handler_exit: irq=24 ret=handled
          <idle>-0       [001] ..s2.   390.000003: softirq_entry: vec=3 [action=NET_RX]
"""
    t = ingest.read(write(tmp_path, "irq.txt", body), input_format="ftrace-text")
    e = rows(t, "irq_handler_entry")[0]
    assert (e["irq"], e["name"], e["args"]) == (
        "24",
        "virtio0-input.0",
        "irq=24 name=virtio0-input.0",
    )
    assert rows(t, "irq_handler_exit")[0]["ret"] == "handled"
    s = rows(t, "softirq_entry")[0]
    assert s["args"] == "vec=3 [action=NET_RX]"
    assert s["vec"] == "3 [action=NET_RX]"  # a value runs to the next " key="
    assert t.tables["irq_handler_entry"].schema.field("args").type == pa.string()
    assert t.meta.systems["irq_handler_entry"] is None


# ------------------------------------------------------------------- ordering


def test_out_of_order_lines_are_sorted(tmp_path):
    lines = FTRACE_BODY.splitlines(keepends=True)
    shuffled = "".join(
        [lines[3], lines[0], lines[6], lines[2], lines[1], lines[4], lines[5], lines[8], lines[7]]
    )
    t = ingest.read(write(tmp_path, "ooo.txt", shuffled))
    assert t.meta.source["sorted"] is False
    ref = ingest.read(write(tmp_path, "in.txt", FTRACE_BODY))
    assert ref.meta.source["sorted"] is True
    for name, table in ref.tables.items():
        assert same(t.tables[name], table), name


def test_equal_timestamps_keep_file_order(tmp_path):
    body = (
        "".join(
            f"            bash-{100 + i}    [000] d..2.   5.000000: sched_waking: comm=x pid={i} prio=120 target_cpu=000\n"
            for i in range(5)
        )
        + "            bash-99    [001] d..2.   4.000000: sched_waking: comm=x pid=99 prio=120 target_cpu=000\n"
    )
    t = ingest.read(write(tmp_path, "eq.txt", body), input_format="ftrace-text")
    assert [r["pid"] for r in rows(t, "sched_waking")] == [99, 0, 1, 2, 3, 4]


# ----------------------------------------------------------------- compression


@pytest.mark.parametrize("kind", ["gzip", "xz", "bzip2", "zstd"])
@pytest.mark.parametrize("use_binary", [True, False])
def test_compressed(tmp_path, monkeypatch, kind, use_binary):
    raw = (FTRACE_HEADER + FTRACE_BODY).encode()
    if kind == "gzip":
        data = gzip.compress(raw)
    elif kind == "xz":
        data = lzma.compress(raw)
    elif kind == "bzip2":
        data = bz2.compress(raw)
    else:
        if shutil.which("zstd") is None:
            pytest.skip("zstd is not installed")
        data = subprocess.run(["zstd", "-qc"], input=raw, capture_output=True, check=True).stdout
    p = write(tmp_path, "t.txt.z", data)
    if not use_binary:
        real = shutil.which
        monkeypatch.setattr(
            text.shutil,
            "which",
            lambda n: None if n in ("gzip", "xz", "zstd", "bzip2") else real(n),
        )
        if kind == "zstd":
            pytest.importorskip("zstandard")
    assert text.sniff(p) == "ftrace-text"
    t = ingest.read(p)
    assert t.meta.source["compression"] == kind
    ref = ingest.read(write(tmp_path, "plain.txt", raw))
    assert t.meta.event_counts == ref.meta.event_counts
    for name, table in ref.tables.items():
        assert same(t.tables[name], table), name


def test_zstd_without_any_decoder(tmp_path, monkeypatch):
    p = write(tmp_path, "t.zst", b"\x28\xb5\x2f\xfd" + b"\0" * 50)
    monkeypatch.setattr(text.shutil, "which", lambda n: None)
    import sys

    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(TraceError, match="zstd"):
        text.read(p, "ftrace-text")


# ------------------------------------------------------------------- bad input


def big_text(n=3000):
    return "".join(
        f"            bash-8850    [001] d..2. {1000 + i * 0.001:12.6f}: sched_waking: comm=gzip pid=8844 prio=120 target_cpu=000\n"
        for i in range(n)
    ).encode()


def one_line(err: TraceError):
    s = str(err)
    assert "\n" not in s and s
    return s


def test_empty_file(tmp_path):
    with pytest.raises(TraceError, match="empty file") as e:
        ingest.read(write(tmp_path, "empty.txt", b""))
    one_line(e.value)
    with pytest.raises(TraceError, match="empty"):
        text.read(write(tmp_path, "empty.gz", gzip.compress(b"")), "ftrace-text")


def test_binary_data(tmp_path):
    p = write(tmp_path, "bin.txt", bytes(range(256)) * 40)
    with pytest.raises(TraceError) as e:
        ingest.read(p)
    one_line(e.value)
    with pytest.raises(TraceError, match="binary"):
        text.read(p, "ftrace-text")


@pytest.mark.parametrize("kind", ["gzip", "xz"])
@pytest.mark.parametrize("use_binary", [True, False])
def test_truncated_compressed(tmp_path, monkeypatch, kind, use_binary):
    raw = big_text(20000)
    data = gzip.compress(raw) if kind == "gzip" else lzma.compress(raw)
    p = write(tmp_path, "t.z", data[: len(data) // 2])
    if not use_binary:
        monkeypatch.setattr(text.shutil, "which", lambda n: None)
    with pytest.raises(TraceError, match="truncated or corrupt") as e:
        ingest.read(p)
    one_line(e.value)


def test_mostly_garbage(tmp_path):
    body = FTRACE_BODY + "".join(f"this is not a trace line {i}\n" for i in range(50))
    p = write(tmp_path, "g.txt", body)
    with pytest.raises(TraceError, match="50 of 59 lines .* are not trace events") as e:
        text.read(p, "ftrace-text")
    assert "line 10" in one_line(e.value)


def test_some_garbage_is_reported_not_fatal(tmp_path):
    lines = FTRACE_BODY.splitlines(keepends=True)
    body = "".join(lines[:4]) + "garbage in the middle\n" + "".join(lines[4:])
    t = ingest.read(write(tmp_path, "g.txt", body), input_format="ftrace-text")
    assert t.meta.source["unparsed_lines"] == 1
    assert t.meta.source["first_unparsed"] == [(5, "garbage in the middle")]
    assert sum(t.meta.event_counts.values()) == 9
    assert t.meta.warnings == (
        "1 of 10 lines (10.00%) are not events and were skipped (first: line 5)",
    )


def test_not_a_trace(tmp_path):
    p = write(tmp_path, "readme.txt", "hello\nworld\n" * 20)
    assert text.sniff(p) is None
    with pytest.raises(TraceError):
        ingest.read(p)


# -------------------------------------------------------------- streaming, misc


def test_iter_batches_matches_read(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "CHUNK_BYTES", 1 << 16)
    p = write(tmp_path, "big.txt", big_text(5000))
    whole = ingest.read(p)
    batches = list(text.iter_batches(p, "ftrace-text", batch_bytes=1 << 16))
    assert len(batches) > 3
    joined = pa.concat_tables(
        [b.tables["sched_waking"] for b in batches if "sched_waking" in b.tables]
    )
    assert joined.num_rows == 5000
    assert (
        joined.cast(whole.tables["sched_waking"].schema)
        .column("ts")
        .equals(whole.tables["sched_waking"].column("ts"))
    )
    assert batches[-1].meta.event_counts == {"sched_waking": 5000}


def test_small_chunks_and_long_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "CHUNK_BYTES", 256)  # lines cross chunk edges; one is longer
    body = (
        FTRACE_BODY
        + "          <idle>-0       [001] d.h2.   399.000001: long_event: x="
        + "y" * 1000
        + "\n"
    )
    t = ingest.read(write(tmp_path, "small.txt", body))
    ref = ingest.read(write(tmp_path, "ref.txt", FTRACE_BODY))
    for name, table in ref.tables.items():
        assert same(t.tables[name], table), name
    assert rows(t, "long_event")[0]["x"] == "y" * 1000


def test_progress_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "CHUNK_BYTES", 1 << 14)
    seen = []
    ingest.read(write(tmp_path, "p.txt", big_text(3000)), progress=seen.append)
    assert seen[-1] == 1.0 and len(seen) > 3 and seen == sorted(seen)


def test_requested_absent_events_give_empty_tables(tmp_path):
    t = ingest.read(
        write(tmp_path, "t.txt", FTRACE_BODY),
        events=["sched_waking", "workqueue_queue_work", "sched_wakeup_new", "sched_switch"],
    )
    assert set(t.tables) == {
        "sched_waking",
        "workqueue_queue_work",
        "sched_wakeup_new",
        "sched_switch",
    }
    empty = t.tables["sched_wakeup_new"]
    assert empty.num_rows == 0
    assert empty.schema.names[6:] == ["comm", "pid", "prio", "target_cpu"]
    assert t.meta.event_counts.get("sched_wakeup_new") is None
    assert t.tables["sched_switch"].num_rows == 3


def test_iter_batches_keeps_callchains_whole(tmp_path, monkeypatch):
    fixture = KERNEL_LIST / "lkml-2024-dio-storm-perf-script.txt"
    monkeypatch.setattr(text, "CHUNK_BYTES", 2500)  # longer than any one sample
    whole = ingest.read(fixture)
    batches = list(text.iter_batches(fixture, "perf-script", batch_bytes=1))
    assert len(batches) > 2
    chains = [
        c
        for b in batches
        for t in [b.tables.get("sched_switch")]
        if t is not None
        for c in t.column("callchain").to_pylist()
    ]
    assert chains == whole.tables["sched_switch"].column("callchain").to_pylist()
    wk = [
        c
        for b in batches
        for t in [b.tables.get("sched_waking")]
        if t is not None
        for c in t.column("callchain").to_pylist()
    ]
    assert [len(c) for c in wk] == [29, 10]


def test_sniff_pasted_excerpts(tmp_path):
    """Excerpts pasted into bug reports have no header lines."""
    report = REPORT_316.split("\n", 1)[1]  # without "cpus=2"
    assert text.sniff(write(tmp_path, "r.txt", report)) == "trace-cmd-report"
    assert text.sniff(write(tmp_path, "f.txt", FTRACE_BODY)) == "ftrace-text"
    lat = "trace-cm-8843    0d..3.   390.659089: sched_waking:         comm=gzip pid=8844 prio=120 target_cpu=000\n"
    assert text.sniff(write(tmp_path, "l.txt", lat * 3)) == "trace-cmd-report"
    gz = write(tmp_path, "r.txt.gz", gzip.compress(report.encode()))
    assert text.sniff(gz) == "trace-cmd-report"
    t = ingest.read(write(tmp_path, "r2.txt", report))
    assert t.meta.cpus == 2 and t.meta.source["unparsed_lines"] == 0


def test_comm_with_brackets_and_dashes(tmp_path):
    body = """\
       foo [1]-4242    [001] d..2.   390.000001: sched_waking: comm=x pid=1 prio=120 target_cpu=001
 irq/100-enet-fe-118     [000] d.h1.   390.000002: sched_waking: comm=y pid=2 prio=120 target_cpu=000
"""
    t = ingest.read(write(tmp_path, "b.txt", body), input_format="ftrace-text")
    wk = rows(t, "sched_waking")
    assert [(r["common_comm"], r["common_pid"], r["cpu"]) for r in wk] == [
        ("foo [1]", 4242, 1),
        ("irq/100-enet-fe", 118, 0),
    ]
