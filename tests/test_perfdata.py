"""The native perf.data reader (:mod:`schedwake.ingest.perfdata`) on real recordings.

* Conformance: on every ``perf.data`` in ``sample_traces/`` (``perf/*.perf.data`` and
  ``perf-lost-events.perf.data``; a ``perf record --threads`` directory among them),
  the native reader and the ``perf script`` text reader (``reader="perf-script"``, the
  oracle) give the same event counts, CPUs, first/last timestamps, lost events per CPU,
  row counts and, row by row after sorting both by (ts, cpu, common_pid), the same value
  in every column the text reader has.
* Facts pinned on the recordings against perf's own output (``perf script -F ...``):
  counts, lost events, the profile's ip/period, header topology, pipe mode, zstd.
* Damaged copies of a recording are refused: ``schedwake info`` exits 2 with one line
  naming the file, ``schedwake.load`` raises :class:`schedwake.TraceError`.

The samples and how they were recorded: ``sample_traces/README.md`` (``perf-*`` sections),
``scripts/record-samples/record-perf.sh``, ``sample_traces/perf/NAME.meta.txt``.
"""

from __future__ import annotations

import functools
import re
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import schedwake
from schedwake import TraceError

from .conftest import SAMPLE_KALLSYMS, SAMPLES, computed_once, perf_kallsyms, plain
from .sandbox import Sandbox

PERF = shutil.which("perf")
needs_perf = pytest.mark.skipif(
    PERF is None, reason="perf is not installed (Debian linux-perf, see scripts/bootstrap.sh)"
)

PERF_DIR = SAMPLES / "perf"
#: every perf.data in sample_traces (perf record --threads directories included)
PERF_FILES = sorted(PERF_DIR.glob("*.perf.data")) + [SAMPLES / "perf-lost-events.perf.data"]
IDS = [p.name for p in PERF_FILES]

#: what each recording is (sample_traces/README.md): the workload's task name, zstd
#: records, pipe mode, callchains
FACTS = {
    "perf-sched-g.perf.data": ("sched-messaging", None, False, True),
    "perf-profile-g.perf.data": ("sched-messaging", None, False, True),
    "perf-dbench-z.perf.data": ("dbench", "zstd", False, False),
    "perf-pipe.perf.data": ("sched-messaging", None, True, False),
    "perf-threads.perf.data": ("sched-messaging", None, False, False),
    "perf-lost-events.perf.data": ("true", "zstd", False, False),
}

#: samples whose perf sample tid is -1 (taken in a task already unhashed: its final
#: sched_switch, or the last wake-ups, migrations and runtime of its exit), which `perf
#: script` prints as pid -1 / comm ":-1" and the native reader as the tracepoint's own
#: common_pid, by event; the same counts as `perf script -F tid,event` lines of tid -1
#: (a cpu-clock sample has no payload: its thread is -1 in both readers)
TID_MINUS_ONE = {
    "perf-sched-g.perf.data": {"sched_switch": 10, "sched_stat_runtime": 8},
    "perf-profile-g.perf.data": {"cpu-clock": 1},  # -1 on both sides
    "perf-dbench-z.perf.data": {"sched_switch": 264, "sched_migrate_task": 8, "sched_waking": 1},
    "perf-pipe.perf.data": {"sched_switch": 12},
    "perf-threads.perf.data": {},
    "perf-lost-events.perf.data": {},
}

#: the text reader's name of an event, where it differs from perf's: `perf script` prints
#: the profile's event as "cpu-clock:ppp:" and the text reader keeps only the part after
#: the last colon (a known difference of the text reader; see
#: test_text_reader_names_the_profile_event)
TEXT_NAMES = {"ppp": "cpu-clock"}


def kallsyms_of(path: Path) -> Path | None:
    """The recording kernel's kallsyms of a sample: the files of perf/ were recorded on
    6.18.44-fc-v782 (SAMPLE_KALLSYMS; test_kernel_symbols.py checks which need it);
    perf-lost-events.perf.data, on another build, names no kernel address."""
    return SAMPLE_KALLSYMS if path.parent == PERF_DIR else None


@functools.cache
def native(path: Path) -> schedwake.Trace:
    return schedwake.load(path, kallsyms=kallsyms_of(path))


@functools.cache
def text(path: Path) -> schedwake.Trace:
    return schedwake.load(path, reader="perf-script", kallsyms=kallsyms_of(path))


@functools.cache
def perf_script(path: Path, *args: str) -> str:
    """``perf script ARGS`` of a sample, given its kernel's kallsyms as schedwake is."""
    symbols = ["--kallsyms", str(perf_kallsyms())] if kallsyms_of(path) else []
    proc = subprocess.run(
        [PERF, "script", *symbols, "-i", str(path), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def ns(stamp: str) -> int:
    """A `perf script --ns` time ("1720.239197556") as integer nanoseconds."""
    sec, _, frac = stamp.partition(".")
    assert len(frac) == 9, stamp
    return int(sec) * 1_000_000_000 + int(frac)


def event_name(printed: str) -> str:
    """The table name of an event as `perf script -F event` prints it:
    "sched:sched_switch:" -> "sched_switch", "cpu-clock:ppp:" -> "cpu-clock"."""
    parts = printed.strip().rstrip(":").split(":")
    return parts[1] if len(parts) > 1 and parts[0] in ("sched", "workqueue") else parts[0]


def sort_index(t: pa.Table) -> pa.Array:
    return pc.sort_indices(
        t, sort_keys=[("ts", "ascending"), ("cpu", "ascending"), ("common_pid", "ascending")]
    )


def column(t: pa.Table, name: str, order: pa.Array) -> pa.Array:
    return plain(t.column(name)).take(order)


# ---------------------------------------------------------------- the files themselves


def test_samples_are_present_and_small():
    names = {p.name for p in PERF_FILES}
    assert names == set(FACTS), "update FACTS and TID_MINUS_ONE with the samples"
    for p in PERF_FILES:
        assert p.stat().st_size < 3_000_000, p
        if p.parent == PERF_DIR:
            assert Path(f"{p}.meta.txt").is_file(), p
    total = sum(f.stat().st_size for f in PERF_DIR.rglob("*") if f.is_file())
    assert total < 10_000_000


# ---------------------------------------------------------------- conformance


@needs_perf
@pytest.mark.parametrize("path", PERF_FILES, ids=IDS)
@pytest.mark.slow
def test_native_equals_perf_script_reader(path):
    """Same counts, CPUs, time span, losses and rows as the perf-script reader; every
    column of the text reader equal value for value, except common_flags and
    common_preempt_count (perf script does not print them: nulls) and the common_pid /
    common_comm of samples whose perf tid is -1 (counted and checked below)."""
    a, b = native(path), text(path)
    counts_b = {TEXT_NAMES.get(k, k): v for k, v in b.meta.event_counts.items()}
    assert a.meta.event_counts == counts_b
    assert a.meta.cpus == b.meta.cpus
    assert (a.meta.first_ts_ns, a.meta.last_ts_ns) == (
        b.meta.first_ts_ns,
        b.meta.last_ts_ns,
    )
    assert a.meta.lost_events == b.meta.lost_events
    names_b = {TEXT_NAMES.get(n, n): n for n in b.events}
    assert set(a.events) == set(names_b)
    tid_minus_one: dict[str, int] = {}
    relative = 0  # user frames perf script prints relative to their file
    for name, name_b in names_b.items():
        ta, tb = a.table(name), b.table(name_b)
        assert ta.num_rows == tb.num_rows == a.meta.event_counts[name], name
        ia, ib = sort_index(ta), sort_index(tb)
        minus_one = pc.equal(column(tb, "common_pid", ib), -1)
        n_minus_one = pc.sum(minus_one).as_py() or 0
        if n_minus_one:
            assert set(column(tb, "common_comm", ib).filter(minus_one).to_pylist()) == {":-1"}
            tid_minus_one[name] = n_minus_one
            if name == "cpu-clock":  # no tracepoint payload: perf's tid is all there is
                minus_one = pc.and_(minus_one, False)
            else:
                check_tid_minus_one(a, ta.take(ia).filter(minus_one))
        for col in tb.column_names:
            assert col in ta.column_names or col == "args", (name, col)
            vb = column(tb, col, ib)
            if col in ("common_flags", "common_preempt_count"):
                assert vb.null_count == len(vb), (name, col)  # not in perf script text
                continue
            if col == "args":  # the text reader's key=value rest: nothing for a profile
                assert name in TEXT_NAMES.values() and set(vb.to_pylist()) <= {""}
                continue
            va = column(ta, col, ia)
            if col == "callchain":
                relative += check_callchains(a, ta, ia, vb)
                continue
            if va.type != vb.type:
                vb = vb.cast(va.type)
            same = pc.fill_null(pc.equal(va, vb), False)
            same = pc.or_(same, pc.and_(pc.is_null(va), pc.is_null(vb)))
            if col in ("common_pid", "common_comm"):
                same = pc.or_(same, minus_one)
            bad = pc.sum(pc.invert(same)).as_py() or 0
            if bad:
                j = pc.indices_nonzero(pc.invert(same))[0].as_py()
                pytest.fail(f"{name}.{col}: {bad} rows differ, first {va[j]} vs {vb[j]}")
    assert tid_minus_one == TID_MINUS_ONE[path.name]
    assert (relative > 0) is FACTS[path.name][3]  # call chains reach user space
    assert tid_minus_one == perf_listing(path)["tid_minus_one"]


def check_tid_minus_one(trace, rows: pa.Table) -> None:
    """Samples perf gave tid -1: taken in a task past its exit (perf's EXIT record of it
    comes first), after it was unhashed; the native reader's common_pid is that task
    (the tracepoint's own common_pid), in sched_switch the one switching out, dead."""
    exits: dict[int, list[int]] = {}
    for e in trace.sideband["exits"].select(["tid", "ts"]).to_pylist():
        exits.setdefault(e["tid"], []).append(e["ts"])
    for r in rows.to_pylist():
        assert any(ts <= r["ts"] for ts in exits.get(r["common_pid"], [])), r
        if "prev_pid" in r:
            assert (r["prev_pid"], r["prev_comm"], r["prev_state_str"]) == (
                r["common_pid"],
                r["common_comm"],
                "X",
            ), r
        if "runtime" in r:  # sched_stat_runtime: the current task's own runtime
            assert r["pid"] == r["common_pid"], r


def check_callchains(trace, ta: pa.Table, ia: pa.Array, vb: pa.Array) -> int:
    """perf script prints a frame as "ADDR SYMBOL (DSO)": kernel addresses and unknown user
    ones as they are, user addresses in a mapped file relative to that file (map_ip):
    ADDR = address - mapping start + pgoff of a mapping of DSO in the native side band."""
    chains = column(ta, "callchain", ia).to_pylist()
    contexts = column(ta, "callchain_context", ia).to_pylist()
    printed = vb.to_pylist()
    maps: dict[str, list[tuple[int, int, int]]] = {}
    for m in trace.sideband["mmaps"].to_pylist():
        maps.setdefault(m["filename"], []).append((m["start"], m["start"] + m["len"], m["pgoff"]))
    frame = re.compile(r"^([0-9a-f]+) (.*) \(([/\[].*)\)$")  # DSO: a path or [name]
    relative = 0
    for chain, ctx, lines in zip(chains, contexts, printed, strict=True):
        assert len(chain) == len(ctx) == len(lines), (chain, lines)
        for addr, mode, line in zip(chain, ctx, lines, strict=True):
            m = frame.match(line)
            assert m, line
            shown, dso = int(m.group(1), 16), m.group(3)
            if mode == 1 or dso == "[unknown]" or shown == addr:
                assert shown == addr, (hex(addr), line)
                continue
            assert mode == 2, (mode, line)
            relative += 1
            assert any(
                lo <= addr < hi and addr - lo + pgoff == shown for lo, hi, pgoff in maps[dso]
            ), (hex(addr), line)
    assert sum(map(len, chains)) > 0
    return relative


@needs_perf
def test_text_reader_names_the_profile_event():
    """`perf script` prints the profile's event with its modifiers, 'cpu-clock:ppp:':
    the perf-script reader names it 'cpu-clock' like the perf.data reader, and keeps the
    period perf script printed before it (equal to the perf.data reader's)."""
    path = PERF_DIR / "perf-profile-g.perf.data"
    as_text, as_data = text(path), native(path)
    assert set(as_text.events) == {"cpu-clock"}
    assert as_text.meta.event_counts["cpu-clock"] == as_data.meta.event_counts["cpu-clock"]
    periods = as_text.table("cpu-clock").column("period")
    assert periods.type == pa.uint64() and periods.null_count == 0
    assert periods.to_pylist() == as_data.table("cpu-clock").column("period").to_pylist()


# ---------------------------------------------------------------- against perf's own output


#: A line of `perf script -F tid,cpu,time,event --ns`: tid, [cpu], seconds.nanoseconds
#: (nine digits), the event (or a PERF_RECORD_LOST record)
LISTING_LINE = r"^\s*(?P<tid>-?\d+) +\[(?P<cpu>\d+)\] +(?P<s>\d+)\.(?P<ns>\d{9}): +(?P<rest>.*)$"


def perf_listing(path: Path) -> dict:
    """What perf's own `perf script -F tid,cpu,time,event --ns --show-lost-events` lists:
    samples per event, their number, first and last time, CPUs, the PERF_RECORD_LOST
    counts per CPU and the samples of tid -1 per event. Parsed once per test run (it is
    perf's output, the independent side) and shared by the workers."""
    key = f"perf script -F tid,cpu,time,event --ns --show-lost-events, parsed: {path}"
    return computed_once(key, lambda: _perf_listing(path))


def _perf_listing(path: Path) -> dict:
    out = perf_script(path, "-F", "tid,cpu,time,event", "--ns", "--show-lost-events")
    lines = pa.array(out.splitlines(), pa.string())
    parts = pc.extract_regex(lines, LISTING_LINE)  # (RE2; null where a line does not match)
    if parts.null_count:
        pytest.fail(f"a perf script line of an unknown form: {lines.filter(parts.is_null())[0]}")
    tid, cpu, sec, frac = (pc.cast(parts.field(f), pa.int64()) for f in ("tid", "cpu", "s", "ns"))
    rest = parts.field("rest")
    is_lost = pc.starts_with(rest, "PERF_RECORD_LOST lost ")
    lost: Counter = Counter()
    for c, r in zip(cpu.filter(is_lost).to_pylist(), rest.filter(is_lost).to_pylist(), strict=True):
        lost[c] += int(r.split()[-1])
    is_sample = pc.invert(is_lost)
    rest, tid, cpu = rest.filter(is_sample), tid.filter(is_sample), cpu.filter(is_sample)
    time = pc.add(pc.multiply(sec.filter(is_sample), 1_000_000_000), frac.filter(is_sample))
    # event_name() on each distinct printed event (a handful), then on every line by index
    printed = pc.unique(rest)
    names = pa.array([event_name(e) for e in printed.to_pylist()], pa.string())
    event = names.take(pc.index_in(rest, value_set=printed))
    return {
        "events": dict(Counter(event.to_pylist())),
        "samples": len(event),
        "span": (pc.min(time).as_py(), pc.max(time).as_py()),
        "cpus": set(pc.unique(cpu).to_pylist()),
        "lost": dict(lost),
        "tid_minus_one": dict(Counter(event.filter(pc.equal(tid, -1)).to_pylist())),
    }


@needs_perf
@pytest.mark.parametrize("path", PERF_FILES, ids=IDS)
def test_counts_span_and_losses_equal_perf_script(path):
    """Samples per event, their total (one line a sample), first/last time, CPUs and the
    PERF_RECORD_LOST records per CPU, from perf's own `perf script` output."""
    t = native(path)
    listing = perf_listing(path)
    assert t.meta.event_counts == listing["events"]
    assert sum(t.table(n).num_rows for n in t.events) == listing["samples"]
    assert (t.meta.first_ts_ns, t.meta.last_ts_ns) == listing["span"]
    assert t.meta.lost_events == listing["lost"]
    assert t.meta.cpus == 2 and listing["cpus"] == {0, 1}


@needs_perf
def test_profile_ip_and_period_equal_perf_script():
    """Every cpu-clock sample's thread, CPU, time, period and ip equal `perf script -F
    tid,cpu,time,period,ip -G` (-G: the sample's ip, not its call chain); the call chain
    starts with the ip, in the sample's own context (kernel samples: the first kernel
    address is the ip)."""
    path = PERF_DIR / "perf-profile-g.perf.data"
    t = native(path).table("cpu-clock")
    out = perf_script(path, "-F", "tid,cpu,time,period,ip", "--ns", "-G")
    line = re.compile(r"^\s*(-?\d+) +\[(\d+)\] +([\d.]+): +(\d+) +([0-9a-f]+)\s*$")
    rows = []
    for text_line in out.splitlines():
        m = line.match(text_line)
        assert m, text_line
        tid, cpu, time, period, ip = m.groups()
        rows.append((ns(time), int(cpu), int(tid), int(period), int(ip, 16)))
    rows.sort()
    assert len(rows) == t.num_rows > 300
    order = sort_index(t)
    got = list(
        zip(*(column(t, c, order).to_pylist() for c in ("ts", "cpu", "common_pid", "period", "ip")))
    )
    assert got == rows
    assert pc.min(t.column("period")).as_py() > 0
    kernel = 0
    for r in t.select(["ip", "cpumode", "callchain", "callchain_context"]).to_pylist():
        chain, ctx = r["callchain"], r["callchain_context"]
        assert chain and chain[0] == r["ip"] and ctx[0] == r["cpumode"], r
        if r["cpumode"] == 1:
            kernel += 1
            assert chain[ctx.index(1)] == r["ip"]
    assert kernel > t.num_rows // 2  # sched messaging runs in the kernel mostly
    assert set(pc.unique(t.column("cpumode")).to_pylist()) == {1, 2}


# ---------------------------------------------------------------- what the header says


@pytest.mark.parametrize("path", PERF_FILES, ids=IDS)
def test_topology_from_the_file_header(path):
    t = native(path)
    if FACTS[path.name][2]:  # perf 6.1 puts no CACHE feature in a pipe stream
        assert t.meta.topology is None and t.topology.source != "file header"
        return
    assert t.topology.source == "file header"
    assert t.topology.llc == [[0, 1]]
    topo = t.meta.topology
    assert (topo["cpus"], topo["llc"], topo["level"]) == (2, ["0-1"], 3)
    assert (topo["smt"], topo["numa"]) == (["0", "1"], ["0-1"])


@pytest.mark.parametrize("path", PERF_FILES, ids=IDS)
def test_source_pipe_compression_callchains(path):
    workload, compression, pipe, callchains = FACTS[path.name]
    src = native(path).meta.source
    assert src["pipe"] is pipe
    assert src["compression"] == compression
    assert src["callchains"] is callchains
    head = (path / "data" if path.is_dir() else path).read_bytes()[:16]
    assert head[:8] == b"PERFILE2"
    assert (struct.unpack("<Q", head[8:])[0] == 16) is pipe  # a pipe header is 16 bytes
    assert src["perf_version"].startswith("6.1.")


@pytest.mark.parametrize("path", PERF_FILES, ids=IDS)
def test_tracepoints_have_common_flags(path):
    """perf's raw tracepoint payload carries the common fields: common_flags and
    common_preempt_count are never null (the profile's cpu-clock has none: null)."""
    t = native(path)
    for name in t.events:
        tab = t.table(name)
        for col in ("common_flags", "common_preempt_count"):
            nulls = tab.column(col).null_count
            assert nulls == (tab.num_rows if name == "cpu-clock" else 0), (name, col)
    if "sched_waking" in t.events:  # wake-ups from interrupts and with irqs off
        flags = pc.unique(t.table("sched_waking").column("common_flags")).to_pylist()
        assert len(flags) > 1


@pytest.mark.parametrize("path", PERF_FILES, ids=IDS)
def test_sideband_names_the_workload(path):
    t = native(path)
    comms = set(t.sideband["comms"].column("comm").to_pylist())
    assert FACTS[path.name][0] in comms and "perf" in comms
    assert t.sideband["forks"].num_rows > 0 and t.sideband["mmaps"].num_rows > 0
    names = set(t.table(sorted(t.events)[0]).column("common_comm").to_pylist())
    assert names & comms


# ---------------------------------------------------------------- the command line


@pytest.fixture(scope="module")
def cli_runs(bad_files) -> dict[tuple, subprocess.CompletedProcess]:
    """All the command lines of this file, one after the other in one child interpreter
    (tests/sandbox.py: a crash or a hang of one fails its test, the imports are paid
    once)."""
    calls = [(cmd, p) for p in PERF_FILES for cmd in ("info", "analyze")]
    calls += [("info", bad_files[name]) for name in CLI_CASES]
    box = Sandbox(timeout=60)
    try:
        return {args: box.cli(*args) for args in calls}
    finally:
        box.close()


@pytest.mark.parametrize("cmd", ["info", "analyze"])
@pytest.mark.parametrize("path", PERF_FILES, ids=IDS)
@pytest.mark.slow
def test_cli_reads_the_sample(cli_runs, cmd, path):
    proc = cli_runs[(cmd, path)]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    t = native(path)
    total = sum(t.meta.event_counts.values())
    if cmd == "info":
        assert re.search(rf"^events:\s+{total}$", proc.stdout, re.M), proc.stdout
    else:
        assert f"(perf.data, kernel {t.meta.kernel})" in " ".join(proc.stdout.split())


# ---------------------------------------------------------------- damaged input

BASE = PERF_DIR / "perf-sched-g.perf.data"  # file mode, uncompressed, with callchains


def _records(data: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    """(offset, type, size) of the records from ``start`` to ``end``."""
    out, off = [], start
    while off < end:
        typ, _misc, size = struct.unpack_from("<IHH", data, off)
        assert size >= 8
        out.append((off, typ, size))
        off += size
        if typ == 66:  # pipe mode's HEADER_TRACING_DATA: the tracing data follows it
            off += struct.unpack_from("<I", data, off - size + 8)[0]
    assert off == end
    return out


def _flip(data: bytes, at: int, xor: int) -> bytes:
    d = bytearray(data)
    d[at] ^= xor
    return bytes(d)


def _size(data: bytes, record: int, size: int) -> bytes:
    """``data`` with the size in the header of the record at offset ``record`` set."""
    return data[: record + 6] + struct.pack("<H", size) + data[record + 8 :]


def damaged() -> dict[str, bytes]:
    """Damaged copies of the samples, by name.

    The size flips (a record size made 32768 bytes larger, its high byte's top bit
    flipped, or 255 smaller) send a record walk into the middle of later records, where
    it may fall on a record boundary again: `perf script` then reads on and prints fewer
    samples. schedwake refuses them: a sample must end where its fields end, a COMM,
    MMAP or FORK record must have its fields' size, a kernel record is whole u64s, and a
    record type no perf writes is damage. Not refusable: a pipe file cut at a record
    boundary reads as a shorter recording (pipe mode has no sizes to check against)."""
    data = BASE.read_bytes()
    _, _, _, attrs, attrs_size, start, size = struct.unpack_from("<8sQQQQQQ", data)
    feat = start + size
    recs = _records(data, start, feat)
    samples = [r for r in recs if r[1] == 9]
    mid = samples[len(samples) // 2]
    cases = {
        "cut-at-10-bytes": data[:10],
        "cut-in-header": data[:60],
        "cut-in-attrs": data[: attrs + attrs_size // 2],
        "cut-at-data-start": data[: start + 4],
        "cut-in-data": data[: start + size // 2],
        "cut-before-data-end": data[: feat - 3],
        "cut-in-feature-table": data[: feat + 8],
        "cut-in-features": data[: feat + (len(data) - feat) // 2],
        "cut-last-byte": data[:-1],
        "zeros-after-magic": b"PERFILE2" + bytes(len(data) - 8),
        "zeros-after-magic-4k": b"PERFILE2" + bytes(4096),
        "first-record-size-zero": _size(data, recs[0][0], 0),
        "sample-size-zero": _size(data, mid[0], 0),
        "sample-size-bit0": _flip(data, mid[0] + 6, 0x01),
        "sample-size-low-byte": _flip(data, mid[0] + 6, 0xFF),
        "data-size-x4": data[:48] + struct.pack("<Q", size * 4) + data[56:],
        "attr-size-7": data[:16] + struct.pack("<Q", 7) + data[24:],
    }
    pipe = (PERF_DIR / "perf-pipe.perf.data").read_bytes()
    precs = [r for r in _records(pipe, 16, len(pipe)) if r[1] == 9]
    psample = precs[len(precs) // 2]
    cases["pipe-cut-in-sample"] = pipe[: psample[0] + psample[2] // 2]
    cases["pipe-cut-in-header"] = pipe[:12]
    cases["pipe-sample-size-zero"] = _size(pipe, psample[0], 0)
    z = (PERF_DIR / "perf-dbench-z.perf.data").read_bytes()
    zstart, zsize = struct.unpack_from("<QQ", z, 40)
    cases["zstd-cut-in-data"] = z[: zstart + zsize // 2]
    zrecs = [r for r in _records(z, zstart, zstart + zsize) if r[1] == 81]
    zr = zrecs[len(zrecs) // 2]
    cases["zstd-payload-byte"] = _flip(z, zr[0] + zr[2] // 2, 0xFF)
    # record sizes that land the walk on a later record boundary (found by a scan of
    # random size flips; perf script reads on through the first two)
    for name, at, xor in (
        ("perf-sched-g.perf.data", 453207, 0x80),
        ("perf-profile-g.perf.data", 135111, 0x80),
        ("perf-pipe.perf.data", 466090, 0xFF),
        ("perf-dbench-z.perf.data", 29263, 0x80),
    ):
        cases[f"{name.split('.')[0]}-size-flip"] = _flip((PERF_DIR / name).read_bytes(), at, xor)
    return cases


CASES = damaged()


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    out = {}
    for name, data in CASES.items():
        out[name] = d / f"{name}.perf.data"
        out[name].write_bytes(data)
    return out


#: the cases also run through the command line (a process each: about 1.2 s of imports;
#: the pipe and zstd cases take the same path to the same error message)
CLI_CASES = [
    "cut-at-10-bytes",
    "cut-in-header",
    "cut-in-attrs",
    "cut-in-data",
    "cut-in-features",
    "zeros-after-magic",
    "sample-size-low-byte",
]


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_perf_data_raises_trace_error(bad_files, case):
    path = bad_files[case]
    with pytest.raises(TraceError) as e:
        schedwake.load(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("case", CLI_CASES)
@pytest.mark.slow
def test_damaged_perf_data_is_refused_by_info(bad_files, cli_runs, case):
    path = bad_files[case]
    proc = cli_runs[("info", path)]
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], proc.stderr
    assert proc.stdout == ""


def test_info_says_what_recorded_a_perf_data():
    """`info` of a perf.data names perf's version, the command line it recorded with and
    the events it sampled (with their modifiers); a trace.dat has none of it."""
    from schedwake.report import info
    from schedwake.summary import summary

    trace = schedwake.load(PERF_DIR / "perf-dbench-z.perf.data", events=[])
    s = summary(trace)
    rec = s["recorded_by"]
    assert rec["perf_version"].startswith("6.") and rec["compressed"] == "zstd"
    assert rec["command"].startswith("/usr/bin/perf record -z -a")
    assert "sched:sched_switch" in rec["events"] and "dummy:HG" in rec["events"]
    text = info.text(s)
    assert "recorded:  perf " in text and "(zstd)" in text and "sampled:   " in text
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "recorded_by" not in summary(schedwake.load(SAMPLES / "idle-sleep.dat"))
