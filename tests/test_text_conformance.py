"""Conformance: one real recording, every text format, the same tables as trace.dat.

``sample_traces/conformance/`` holds one short real workload recorded at the same
time by a tracefs instance (its ``trace`` file and its buffer as ``conf.dat``), a
second instance read through ``trace_pipe``, and perf; the ``trace-cmd report``
variants are made from ``conf.dat`` (``scripts/record-samples/record-conformance.sh``).

The trace.dat reader is the reference. Every text variant made from the same ring
buffer must give the same event counts, the same values in every column, and the same
timestamps up to the text's precision. Where a text format cannot carry a value, the
test says so and skips that column only:

* raw ftrace text prints hashed pointers (``work``);
* ``trace-cmd report`` 3.1.x prints no latency column except with ``-l``;
* ``-l`` cuts the prefix comm to 8 characters;
* the libtraceevent 1.7 sched_switch plugin prints ``R+`` as ``R``.

perf and the second instance see the same tracepoint hits with their own timestamps
and window, so they are compared on counts within the common time window.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import schedwake.ingest as ingest
from schedwake.ingest import text
from schedwake.schema import COMMON_FIELDS

from .conftest import plain

CONF = Path(__file__).resolve().parent.parent / "sample_traces" / "conformance"
DAT = CONF / "conf.dat"

try:
    from schedwake.ingest import _tdread  # noqa: F401

    HAVE_TRACEDAT = True
except ImportError:
    HAVE_TRACEDAT = False

needs_conf = pytest.mark.skipif(not DAT.exists(), reason=f"no conformance recording in {CONF}")
needs_tracedat = pytest.mark.skipif(
    not HAVE_TRACEDAT, reason="the trace.dat reader (_tdread) is not built"
)


# ------------------------------------------------------------------- helpers


def per_cpu_order(t: pa.Table) -> pa.Table:
    """Rows grouped by CPU, in their order within the CPU (ring-buffer order)."""
    cpu = t.column("cpu").to_numpy()
    return t.take(pa.array(np.argsort(cpu, kind="stable")))


def diff_tables(
    a: pa.Table, b: pa.Table, ts_tol: int = 0, skip=(), comm_prefix: int | None = None
) -> list[str]:
    """Differences between two event tables (empty list when equal)."""
    out = []
    if a.num_rows != b.num_rows:
        return [f"rows {a.num_rows} != {b.num_rows}"]
    if a.schema.names != b.schema.names:
        out.append(f"columns {a.schema.names} != {b.schema.names}")
    a, b = per_cpu_order(a), per_cpu_order(b)
    for name in a.schema.names:
        if name in skip or name not in b.schema.names:
            continue
        ca, cb = a.column(name), b.column(name)
        if ca.type != cb.type:
            out.append(f"{name}: type {ca.type} != {cb.type}")
            continue
        va, vb = plain(ca), plain(cb)
        if name == "ts":
            bad = np.nonzero(np.abs(va.to_numpy() - vb.to_numpy()) > ts_tol)[0]
        else:
            if name == "common_comm" and comm_prefix:
                va = pc.utf8_slice_codeunits(va, 0, comm_prefix)
                vb = pc.utf8_slice_codeunits(vb, 0, comm_prefix)
            eq = pc.fill_null(pc.equal(va, vb), False)
            ok = pc.or_(eq, pc.and_(pc.is_null(va), pc.is_null(vb)))
            bad = np.nonzero(~ok.to_numpy(zero_copy_only=False))[0]
        if len(bad):
            i = int(bad[0])
            out.append(
                f"{name}: {len(bad)} rows differ, first at {i}: "
                f"{va[i].as_py()!r} != {vb[i].as_py()!r}"
            )
    return out


def diff_traces(a, b, events=None, **kw) -> dict[str, list[str]]:
    names = events or sorted(set(a.tables) | set(b.tables))
    res = {}
    for n in names:
        if n not in a.tables or n not in b.tables:
            res[n] = [f"missing in {'the first' if n not in a.tables else 'the second'}"]
            continue
        d = diff_tables(a.tables[n], b.tables[n], **kw)
        if d:
            res[n] = d
    return res


# ------------------------------------------------------------ the reference


@pytest.fixture(scope="module")
def ref():
    if not DAT.exists():
        pytest.skip(f"no conformance recording in {CONF}")
    if not HAVE_TRACEDAT:
        pytest.skip("the trace.dat reader (_tracedat) is not built")
    return ingest.read(DAT)


# (file, expected format, timestamp tolerance in ns, columns the text cannot carry,
#  prefix-comm length)
SAME_BUFFER = [
    ("conf.ftrace.txt.gz", "ftrace-text", 500, ("work",), None),
    (
        "conf.report-N.txt.gz",
        "trace-cmd-report",
        999,
        ("common_flags", "common_preempt_count"),
        None,
    ),
    (
        "conf.report-R.txt.gz",
        "trace-cmd-report",
        999,
        ("common_flags", "common_preempt_count"),
        None,
    ),
    (
        "conf.report-t.txt.gz",
        "trace-cmd-report",
        0,
        ("common_flags", "common_preempt_count", "prev_state", "prev_state_str"),
        None,
    ),
    ("conf.report-l.txt.gz", "trace-cmd-report", 999, ("prev_state", "prev_state_str"), 8),
    (
        "conf.report.txt.gz",
        "trace-cmd-report",
        999,
        ("common_flags", "common_preempt_count", "prev_state", "prev_state_str"),
        None,
    ),
]


@needs_conf
@needs_tracedat
@pytest.mark.parametrize("name,fmt,tol,skip,prefix", SAME_BUFFER, ids=[s[0] for s in SAME_BUFFER])
def test_same_tables_as_trace_dat(ref, name, fmt, tol, skip, prefix):
    path = CONF / name
    if not path.exists():
        pytest.skip(f"{name} was not recorded")
    assert text.sniff(path) == fmt
    t = ingest.read(path)
    assert t.meta.format == fmt
    assert set(t.meta.to_dict()) == set(ref.meta.to_dict())
    assert t.meta.source["unparsed_lines"] == 0, t.meta.source["first_unparsed"]
    assert t.meta.event_counts == ref.meta.event_counts
    assert t.meta.cpus == ref.meta.cpus
    assert abs(t.meta.first_ts_ns - ref.meta.first_ts_ns) <= tol
    assert abs(t.meta.last_ts_ns - ref.meta.last_ts_ns) <= tol
    assert set(t.tables) == set(ref.tables)
    for ev, table in t.tables.items():
        assert table.schema.names == ref.tables[ev].schema.names, ev
        for f in table.schema:
            if f.name not in skip:
                assert f.type == ref.tables[ev].schema.field(f.name).type, (ev, f.name)
    assert diff_traces(ref, t, ts_tol=tol, skip=skip, comm_prefix=prefix) == {}


@needs_conf
@needs_tracedat
def test_plugin_text_loses_only_the_preempted_bit(ref):
    """Default report text (sched_switch plugin): prev_state equals trace.dat's except that
    the plugin prints R+ (0x100) as R."""
    t = ingest.read(CONF / "conf.report.txt.gz")
    a = per_cpu_order(ref.tables["sched_switch"]).column("prev_state").to_numpy()
    b = per_cpu_order(t.tables["sched_switch"]).column("prev_state").to_numpy()
    assert np.array_equal(a & ~0x100, b)
    assert (a & 0x100).any()  # the recording has preemptions, so the test means something


@needs_conf
@needs_tracedat
def test_latency_flags_equal_where_printed(ref):
    """Raw ftrace text and -l text carry the latency column: equal to trace.dat's bytes
    (libtraceevent's 'N' is decoded as the kernel's NEED_RESCHED|PREEMPT_RESCHED)."""
    for name in ("conf.ftrace.txt.gz", "conf.report-l.txt.gz"):
        t = ingest.read(CONF / name)
        assert t.meta.source["latency_flags"] is True
        for ev, table in ref.tables.items():
            a, b = per_cpu_order(table), per_cpu_order(t.tables[ev])
            for col in ("common_flags", "common_preempt_count"):
                x, y = a.column(col).to_numpy(), b.column(col).to_numpy()
                if name.endswith("-l.txt.gz") and col == "common_flags":
                    # libtraceevent prints 'N' for NEED_RESCHED with or without
                    # PREEMPT_RESCHED: allow that one bit to differ
                    assert np.array_equal(x & 0xDF, y & 0xDF), (name, ev, col)
                else:
                    assert np.array_equal(x, y), (name, ev, col)


def _window_counts(t, lo, hi, events):
    out = {}
    for ev in events:
        if ev in t.tables:
            ts = t.tables[ev].column("ts").to_numpy()
            out[ev] = int(((ts >= lo) & (ts <= hi)).sum())
    return out


@needs_conf
@pytest.mark.parametrize("name", ["conf.trace_pipe.txt.gz", "conf.perf-script.txt.gz"])
def test_other_tracers_of_the_same_run(name):
    """The second tracefs instance and perf saw the same tracepoint hits: inside the window
    both cover, counts per event are (nearly) equal and every table parses fully."""
    path = CONF / name
    if not path.exists():
        pytest.skip(f"{name} was not recorded")
    a = ingest.read(CONF / "conf.ftrace.txt.gz")
    b = ingest.read(path)
    assert b.meta.source["unparsed_lines"] == 0, b.meta.source["first_unparsed"]
    common = sorted(set(a.tables) & set(b.tables) - {"print", "tracing_mark_write"})
    assert {"sched_switch", "sched_waking", "sched_migrate_task"} <= set(common)
    lo = max(a.meta.first_ts_ns, b.meta.first_ts_ns) + 1_000_000
    hi = min(a.meta.last_ts_ns, b.meta.last_ts_ns) - 1_000_000
    ca, cb = _window_counts(a, lo, hi, common), _window_counts(b, lo, hi, common)
    for ev in common:
        # perf drops samples under load without saying so: allow 5 %
        assert abs(ca[ev] - cb[ev]) <= max(3, ca[ev] // 20), (ev, ca[ev], cb[ev])
    for ev in common:
        for f in b.tables[ev].schema:
            if f.name in a.tables[ev].schema.names:
                assert f.type == a.tables[ev].schema.field(f.name).type, (ev, f.name)


@needs_conf
def test_perf_callchains():
    path = CONF / "conf.perf-script-g.txt.gz"
    if not path.exists():
        pytest.skip("no perf -g recording")
    t = ingest.read(path)
    assert t.meta.source["unparsed_lines"] == 0
    assert t.meta.source["callchains"] is True
    sw = t.tables["sched_switch"]
    assert sw.schema.field("callchain").type == pa.list_(pa.string())
    lengths = pc.list_value_length(sw.column("callchain")).to_numpy()
    assert (lengths > 0).mean() > 0.9
    first = sw.column("callchain")[0].as_py()
    assert any("__schedule" in f for f in first)


@needs_conf
def test_common_columns_first():
    t = ingest.read(CONF / "conf.ftrace.txt.gz")
    for table in t.tables.values():
        assert [f.name for f in table.schema][: len(COMMON_FIELDS)] == [
            f.name for f in COMMON_FIELDS
        ]


@needs_conf
@needs_tracedat
@pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="trace-cmd is not installed")
def test_report_generated_now_matches(ref, tmp_path):
    """The installed trace-cmd's own -N -t output of conf.dat reads back exactly."""
    out = tmp_path / "now.txt"
    with open(out, "wb") as f:
        subprocess.run(
            ["trace-cmd", "report", "-N", "-t", "-i", str(DAT)],
            stdout=f,
            stderr=subprocess.DEVNULL,
            check=True,
        )
    t = ingest.read(out)
    assert diff_traces(ref, t, skip=("common_flags", "common_preempt_count")) == {}


@needs_tracedat
@pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="trace-cmd is not installed")
def test_lost_events_match(tmp_path):
    """A recording that overran its ring buffer: `trace-cmd report` prints
    `CPU:N [M EVENTS DROPPED]`; the text gives the same lost-event rows and totals."""
    dat = CONF.parent / "lost-events.dat"
    if not dat.exists():
        pytest.skip("no lost-events sample")
    out = tmp_path / "lost.txt"
    with open(out, "wb") as f:
        subprocess.run(
            ["trace-cmd", "report", "-N", "-t", "-i", str(dat)],
            stdout=f,
            stderr=subprocess.DEVNULL,
            check=True,
        )
    a, b = ingest.read(dat), ingest.read(out)
    assert a.lost.num_rows > 0
    assert b.lost.to_pylist() == a.lost.to_pylist()
    assert b.meta.lost_events == a.meta.lost_events
    assert b.meta.lost_unknown == a.meta.lost_unknown
    assert b.meta.event_counts == a.meta.event_counts
    assert diff_traces(a, b, skip=("common_flags", "common_preempt_count")) == {}
