"""Perfetto both ways (schedwake.report.perfetto writes, schedwake.ingest.perfetto reads).

* Round trips of real recordings (trace.dat, perf.data, ftrace text): write, read back,
  the same tables (but for what Perfetto's format has no place for: docs/perfetto.md)
  and the same analysis.
* The output decoded with Perfetto's own protos: system info, thread names, the compact
  encoding where it says everything, the findings as slices with their numbers, the
  ping-pong flows, the counter tracks.
* Perfetto's own trace_processor test traces (tests/data/perfetto/), read as
  trace_processor reads them.
* Damaged and hostile files: one line naming the file, exit 2.
"""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pyarrow as pa
import pytest

import schedwake
from schedwake.errors import TraceError
from schedwake.report import perfetto as writer

from .conftest import ROOT, run_cli, sample

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
text_format = pytest.importorskip("google.protobuf.text_format")

DATA = ROOT / "tests" / "data" / "perfetto"
KSTACK = "kstack-6.1/k61-dbench-c2-kstack-off-i1.dat"

#: Columns a round trip does not keep (docs/perfetto.md, "Not carried").
NOT_CARRIED = {"common_comm", "common_preempt_count"}


def _values(col: pa.ChunkedArray) -> list:
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.to_pylist()


def _round_trip(trace, tmp_path, name="rt.pftrace"):
    out = tmp_path / name
    stats = writer.write(trace, out, None, None)
    return schedwake.load(out), stats


def _assert_same_tables(a, b):
    """Every table of ``a`` in ``b`` with the same rows, but what Perfetto cannot carry:
    a compact switch's common_flags (null), a print's ip resolved to a name."""
    assert set(a.events) <= set(b.events) | {e for e in a.events if not a.has_records(e)}
    for name in a.events:
        if not a.has_records(name):
            continue
        x, y = a.table(name), b.table(name)
        assert x.num_rows == y.num_rows, name
        for col in x.column_names:
            if col in NOT_CARRIED or (name == "print" and col == "ip"):
                continue
            if name in writer.TYPED and col not in writer.carried(name):
                continue  # (no field of Perfetto's typed event holds it: group_dead)
            if pa.types.is_list(x.column(col).type):
                continue  # (callchains: an ftrace event in Perfetto has none)
            got = _values(y.column(col))
            want = _values(x.column(col))
            if name == "sched_switch" and col == "common_flags":
                # compact switches have no flags: null there, the others kept
                assert all(g is None or g == w for g, w in zip(got, want)), name
                continue
            assert got == want, (name, col)


@pytest.mark.slow
@pytest.mark.parametrize("name", [KSTACK, "perf/perf-sched-g.perf.data", "dbench-xfs-1client.dat"])
def test_round_trip_keeps_every_event(name, tmp_path):
    t = schedwake.load(sample(name))
    r, stats = _round_trip(t, tmp_path)
    _assert_same_tables(t, r)
    assert (r.meta.first_ts_ns, r.meta.last_ts_ns) == (t.meta.first_ts_ns, t.meta.last_ts_ns)
    assert r.meta.kernel == t.meta.kernel and r.meta.format == "perfetto"
    assert r.meta.cpus == t.meta.cpus
    # most switches and wakings go compact, as Perfetto's recorder writes them
    assert stats["compact_switches"] > 0.5 * t.table("sched_switch").num_rows
    assert r.meta.source["compact_first_switches_left_out"] == 0


def test_round_trip_of_text(tmp_path):
    """ftrace text (a synthetic trace written as text and read back by the text reader)."""
    from schedwake.synth import make_trace, write_ftrace_text

    src = tmp_path / "synthetic.txt"
    trace, _ = make_trace(pingpong=5, background=60, seed=3)
    write_ftrace_text(trace, src)
    t = schedwake.load(src)
    r, _ = _round_trip(t, tmp_path)
    _assert_same_tables(t, r)


@pytest.mark.slow
def test_analysis_survives_the_round_trip(tmp_path):
    """The findings and metrics of the kstack sample, read back from its Perfetto trace."""
    path = sample(KSTACK)
    out = tmp_path / "k.pftrace"
    proc = run_cli("convert", path, "--to", "perfetto", "-o", out, "--no-analysis")
    assert proc.returncode == 0, proc.stderr
    args = ["--format", "json", "--llc", "0-7"]
    a = json.loads(run_cli("analyze", path, *args, check=True).stdout)
    b = json.loads(run_cli("analyze", out, *args, check=True).stdout)
    assert a["metrics"] == b["metrics"]
    assert [f["metrics"] for f in a["findings"]] == [f["metrics"] for f in b["findings"]]
    assert [f["detector"] for f in b["findings"]] == ["kworker_pingpong", "llc_roundrobin"]


@pytest.fixture(scope="module")
def kstack_out(tmp_path_factory):
    t = schedwake.load(sample(KSTACK))
    a = schedwake.analyze(t)
    out = tmp_path_factory.mktemp("pf") / "kstack.pftrace"
    stats = writer.write(t, out, a, 1.0)
    trace = pb.Trace()
    trace.ParseFromString(out.read_bytes())
    return t, a, stats, trace


@pytest.mark.slow
def test_output_decodes_with_perfettos_protos(kstack_out):
    t, a, stats, trace = kstack_out
    packets = list(trace.packet)
    assert len(packets) == stats["packets"]
    info = [p.system_info for p in packets if p.HasField("system_info")]
    assert info[0].utsname.release == "6.1.192-sistoggle" and info[0].num_cpus == 8
    threads = {th.tid: th.name for p in packets if p.HasField("process_tree")
               for th in p.process_tree.threads}  # fmt: skip
    from schedwake.analysis.latency import last_names

    assert threads == {p: n for p, n in last_names(t).items() if p > 0}
    bundles = [p.ftrace_events for p in packets if p.HasField("ftrace_events")]
    assert sum(len(b.event) + len(b.compact_sched.switch_timestamp)
               + len(b.compact_sched.waking_timestamp) for b in bundles) == 139350  # fmt: skip
    # interned kernel symbols name the workqueue functions
    syms = {k.iid: k.str.decode() for p in packets for k in p.interned_data.kernel_symbols}
    starts = [e.workqueue_execute_start.function for b in bundles for e in b.event
              if e.HasField("workqueue_execute_start")]  # fmt: skip
    assert "xlog_ioend_work" in {syms[i] for i in starts}


@pytest.mark.slow
def test_findings_flows_and_counters_on_their_tracks(kstack_out):
    t, a, stats, trace = kstack_out
    packets = list(trace.packet)
    names = {p.track_descriptor.uuid: p.track_descriptor for p in packets
             if p.HasField("track_descriptor")}  # fmt: skip
    events = [p for p in packets if p.HasField("track_event")]
    TE = pb.TrackEvent
    begins = [p for p in events if p.track_event.type == TE.TYPE_SLICE_BEGIN]
    assert len(begins) == len(a.findings) == stats["findings"] == 2
    for f, p in zip(a.findings, begins):
        e = p.track_event
        assert names[e.track_uuid].name == f"schedwake: {f.detector}"
        assert e.name.startswith(f"{f.detector}: ")
        args = {d.name: d for d in e.debug_annotations}
        if f.detector == "kworker_pingpong":
            assert args["episodes"].int_value == f.metrics["episodes"] == 2562
        assert p.timestamp == f.evidence_at["t0"]
    ends = [p for p in events if p.track_event.type == TE.TYPE_SLICE_END]
    assert [p.timestamp for p in ends] == [f.evidence_at["t1"] for f in a.findings]
    # one flow per episode: out of the waking, into the run on the CPU it was moved to
    out_ids = [i for p in events for i in p.track_event.flow_ids]
    in_ids = [i for p in events for i in p.track_event.terminating_flow_ids]
    assert len(out_ids) == len(set(out_ids)) == stats["flows"] == 2562
    assert sorted(in_ids) == sorted(out_ids)
    counters = [d for d in names.values() if d.HasField("counter")]
    assert len(counters) == stats["counters"] > 10
    assert "schedwake wakeup_migrations_per_s" in {d.name for d in counters}
    assert all(p.timestamp_clock_id == writer.BOOTTIME for p in events)


def _binary(name: str, tmp_path):
    trace = text_format.Parse((DATA / f"{name}.textproto").read_text(), pb.Trace())
    out = tmp_path / f"{name}.pftrace"
    out.write_bytes(trace.SerializeToString())
    return out


_SYSTRACE = re.compile(r"^\s*(\S+)-(\d+)\s+\(-----\)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$")


def test_perfettos_symbolized_blocked_reasons(tmp_path):
    """trace_processor's own test: its systrace text of the trace, line for line in our
    tables (task, CPU, time, fields; callers by interned kernel symbol, a caller the
    trace does not intern by its number)."""
    t = schedwake.load(_binary("sched_blocked_reason_symbolized", tmp_path))
    lines = json.loads("[" + ",".join(
        (DATA / "sched_blocked_reason_symbolized_to_systrace.out").read_text().splitlines()[1:]
    ) + "]")  # fmt: skip
    rows = {
        "sched_switch": t.df("sched_switch"),
        "sched_blocked_reason": t.df("sched_blocked_reason"),
    }
    seen = 0
    for line in lines:
        m = _SYSTRACE.match(line)
        assert m, line
        _, pid, cpu, ts, event, args = m.groups()
        df = rows[event]
        at = df[(df["cpu"] == int(cpu)) & ((df["ts"] / 1e9).map(lambda v: f"{v:.6f}") == ts)]
        assert len(at) == 1, line
        r = at.iloc[0]
        assert int(r["common_pid"]) == int(pid), line
        fields = dict(re.findall(r"(\w+)=(\S+)", args))
        if event == "sched_switch":
            assert (r["prev_comm"], int(r["prev_pid"]), r["prev_state_str"]) == (
                fields["prev_comm"],
                int(fields["prev_pid"]),
                fields["prev_state"],
            )
            assert (r["next_comm"], int(r["next_pid"])) == (
                fields["next_comm"],
                int(fields["next_pid"]),
            )
        else:
            assert (int(r["pid"]), int(r["io_wait"]), r["caller"]) == (
                int(fields["pid"]),
                int(fields["iowait"]),
                fields["caller"],
            )
        seen += 1
    assert seen == len(t.df("sched_switch")) + len(t.df("sched_blocked_reason")) == 17


def test_perfettos_compact_switches(tmp_path):
    """trace_processor's own test (ftrace crop): compact switches, delta-encoded; a CPU's
    first has no prev_* and is left out, the others take the previous switch's next_*.
    trace_processor's sched rows (after its crop at 1000 ns) are ours from that time on."""
    t = schedwake.load(_binary("crop_compact_sched_switch", tmp_path))
    s = t.df("sched_switch")
    got = [(int(r.cpu), int(r.ts), int(r.prev_pid), int(r.next_pid), str(r.next_comm))
           for r in s.itertuples()]  # fmt: skip
    assert got == [(6, 600, 40, 41, "one:6"), (6, 1100, 41, 42, "two:6"),
                   (3, 1200, 50, 51, "one:3"), (6, 1200, 42, 43, "three:6")]  # fmt: skip
    # trace_processor: cpu, ts, tid, name of its sched slices
    expected = [(3, 1200, 51, "one:3"), (6, 1100, 42, "two:6"), (6, 1200, 43, "three:6")]
    ours = sorted((c, ts, nxt, name) for c, ts, _, nxt, name in got if ts >= 1000)
    assert ours == expected
    assert t.meta.source["compact_first_switches_left_out"] == 2


def test_cli_convert_and_read_gzip(tmp_path):
    path = sample("idle-sleep.dat")
    out = tmp_path / "idle.pftrace"
    proc = run_cli("convert", path, "--to", "perfetto", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "findings" in proc.stdout and out.exists()
    gz = tmp_path / "idle.pftrace.gz"
    gz.write_bytes(gzip.compress(out.read_bytes()))
    a = json.loads(run_cli("info", out, "--format", "json", check=True).stdout)
    b = json.loads(run_cli("info", gz, "--format", "json", check=True).stdout)
    assert a["format"] == b["format"] == "perfetto"
    assert a["events"] == b["events"] and sum(a["events"].values()) > 1000
    bad = run_cli("convert", path, "--to", "perfetto", "-o", tmp_path)
    assert bad.returncode == 2 and "directory" in bad.stderr


# ---- damaged and hostile files -----------------------------------------------------


def _packet_bytes(packet) -> bytes:
    body = packet.SerializeToString()
    return b"\x0a" + _varint(len(body)) + body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _bundle_packet(cpu=0, **compact):
    p = pb.TracePacket()
    b = p.ftrace_events
    b.cpu = cpu
    e = b.event.add()
    e.timestamp = 1000
    e.pid = 0
    sw = e.sched_switch
    sw.prev_comm, sw.prev_pid, sw.prev_state, sw.next_comm, sw.next_pid = "swapper/0", 0, 0, "a", 5
    cs = b.compact_sched
    for k, v in compact.items():
        getattr(cs, k).extend(v)
    return p


def _switches(n):
    return dict(switch_timestamp=[2000] + [10] * (n - 1), switch_prev_state=[1] * n,
                switch_next_pid=[6] * n, switch_next_prio=[120] * n,
                switch_next_comm_index=[0] * n, intern_table=["b"])  # fmt: skip


@pytest.mark.parametrize(
    "what, data, says",
    [
        (
            "arrays",
            lambda: _packet_bytes(_bundle_packet(**{**_switches(3), "switch_next_pid": [6, 6]})),
            "different lengths",
        ),
        (
            "intern",
            lambda: _packet_bytes(
                _bundle_packet(**{**_switches(2), "switch_next_comm_index": [0, 7]})
            ),
            "intern table of 1",
        ),
        (
            "overflow",
            lambda: _packet_bytes(
                _bundle_packet(**{**_switches(2), "switch_timestamp": [2**63 - 5, 10]})
            ),
            "beyond int64",
        ),
        ("cpu", lambda: _packet_bytes(_bundle_packet(cpu=70000)), "CPU 70000"),
        ("huge", lambda: b"\x0a" + _varint((64 << 20) + 1) + b"\x08", "more than 64 MiB"),
        ("garbage", lambda: b"\x0a\x05\x0a\xff\xff\xff\xff", "not a TracePacket"),
        (
            "nothing",
            lambda: _packet_bytes(pb.TracePacket(trusted_packet_sequence_id=1)),
            "without ftrace events",
        ),
    ],
)
def test_hostile_files_one_line(what, data, says, tmp_path):
    path = tmp_path / f"{what}.pftrace"
    path.write_bytes(data())
    with pytest.raises(TraceError, match=says):
        schedwake.load(path, input_format="perfetto")
    proc = run_cli("info", path, "--input-format", "perfetto")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in proc.stderr


def test_a_cut_file_loses_its_last_packet_with_a_warning(tmp_path):
    whole = _packet_bytes(_bundle_packet(**_switches(4))) * 2
    path = tmp_path / "cut.pftrace"
    path.write_bytes(whole[: len(whole) - 7])
    t = schedwake.load(path)
    assert t.table("sched_switch").num_rows == 5  # the first packet: its full switch, 4 compact
    assert any("ends inside its last packet" in w for w in t.warnings)


def test_sniffed_by_its_first_bytes(tmp_path):
    from schedwake import ingest

    path = tmp_path / "no-suffix"
    path.write_bytes(_packet_bytes(_bundle_packet(**_switches(2))))
    assert ingest.sniff(path) == "perfetto"
    text = tmp_path / "t.txt"
    text.write_bytes(b"\n# tracer: nop\n#\n")
    assert not writer_magic(text.read_bytes()[:64])


def writer_magic(head: bytes) -> bool:
    from schedwake.ingest.perfetto import magic

    return magic(head)


def test_compact_wakings_take_the_cpus_current_task(tmp_path):
    """A compact waking's waker is the task the CPU's switches say runs then."""
    p = _bundle_packet(**_switches(2))
    cs = p.ftrace_events.compact_sched
    cs.waking_timestamp.extend([1500, 1000])  # 1500 (after the full switch to 5), 2500
    cs.waking_pid.extend([9, 9])
    cs.waking_target_cpu.extend([0, 0])
    cs.waking_prio.extend([120, 120])
    cs.waking_comm_index.extend([0, 0])
    cs.waking_common_flags.extend([1, 9])
    path = tmp_path / "w.pftrace"
    path.write_bytes(_packet_bytes(p))
    w = schedwake.load(path).df("sched_waking")
    assert w[["ts", "common_pid", "pid", "common_flags"]].values.tolist() == [
        [1500, 5, 9, 1], [2500, 6, 9, 9]
    ]  # fmt: skip
    assert np.all(w["cpu"] == 0)
