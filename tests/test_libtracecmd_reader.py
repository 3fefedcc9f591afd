"""The libtracecmd reader (``reader="libtracecmd"``), which runs trace-cmd's library in a
child process: the same tables as the default reader on every sample, a crash of the
library as one clean TraceError, no temporary files, and ``--reader``/``--jobs`` on
every command that reads traces. Real samples and real subprocesses throughout."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import schedwake
from schedwake.ingest import tracedat_layout
from schedwake.ingest.meta import TraceMeta

from .conftest import SAMPLE_DATS, run_cli, sample, shared_trace

#: Where the two readers may differ, and why. Everything else must be equal.
#: - meta["source"]["reader"] names the reader that made the tables;
#: - meta["systems"]["blktrace"] == "ftrace": libtracecmd registers a made-up "blktrace"
#:   ftrace event format of its own (tracecmd_blk_hack(), called from
#:   tracecmd_init_data()) that no file holds; it never has records.
READER_KEY = ("source", "reader")
INVENTED_EVENTS = {"blktrace": "ftrace"}

SMALL = "idle-sleep.dat"  # a small v7 (zstd) sample: quick child runs
GATED = "speed/g612-smp4-dbench-c1.dat"  # a small complete one (a 6.12 guest's)


def comparable_meta(meta: TraceMeta) -> TraceMeta:
    """``meta`` without what may differ between the readers (see READER_KEY and
    INVENTED_EVENTS)."""
    return dataclasses.replace(
        meta,
        source={k: v for k, v in meta.source.items() if k != READER_KEY[1]},
        systems={k: v for k, v in meta.systems.items() if INVENTED_EVENTS.get(k) != v},
    )


@pytest.mark.parametrize("path", SAMPLE_DATS, ids=lambda p: p.name)
@pytest.mark.slow
def test_libtracecmd_reads_what_the_default_reader_reads(path):
    default = shared_trace(path)  # (read only here)
    lib = schedwake.load(path, reader="libtracecmd")
    assert lib.meta.source["reader"] == "libtracecmd"
    # the metadata crosses the pipe as JSON, whose object keys are strings; lost_events
    # is {CPU: count} with int CPUs on both sides of it
    lost = lib.meta.lost_events
    assert all(type(c) is int and type(n) is int for c, n in lost.items())
    assert lost or path.name != "lost-events.dat"
    assert comparable_meta(lib.meta) == comparable_meta(default.meta)
    assert lib.events == default.events
    for name in default.events:
        assert lib.table(name).equals(default.table(name)), name
    assert lib.lost.equals(default.lost)


@pytest.mark.slow
def test_selected_events_and_progress_come_through_the_child(dbench2):
    seen = []
    want = ["sched:sched_waking", "sched_switch", "sched_stat_runtime"]  # the last: none
    lib = schedwake.load(dbench2, events=want, reader="libtracecmd", progress=seen.append)
    default = schedwake.load(dbench2, events=want)
    assert lib.events == default.events == ["sched_stat_runtime", "sched_switch", "sched_waking"]
    assert lib.table("sched_stat_runtime").num_rows == 0
    for name in lib.events:
        assert lib.table(name).equals(default.table(name)), name
    assert seen and all(0.0 <= f <= 1.0 for f in seen) and seen == sorted(seen)


# -- a crash of the library -----------------------------------------------------------------


def zero_page_size(src: Path, dst: Path) -> Path:
    """``src`` with the page size of its file header set to 0: libtracecmd divides by
    it in tracecmd_init_data() (SIGFPE on x86)."""
    data = bytearray(src.read_bytes())
    end = data.index(b"\0", len(tracedat_layout.MAGIC))  # the version string's NUL
    at = end + 1 + 2  # endianness, long size
    assert struct.unpack_from("<I", data, at)[0] == 4096
    data[at : at + 4] = bytes(4)
    dst.write_bytes(data)
    return dst


needs_x86 = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "i686"),
    reason="integer division by zero traps (SIGFPE) on x86 only",
)


@needs_x86
@pytest.mark.slow
def test_a_crash_in_the_child_is_one_line_and_exit_2(tmp_path):
    bad = zero_page_size(sample(SMALL), tmp_path / "zero-page.dat")
    proc = run_cli("info", bad, "--reader", "libtracecmd", subprocess=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"schedwake: {bad}: the libtracecmd reader crashed on this file: SIGFPE\n"
    )


@needs_x86
@pytest.mark.slow
def test_a_crash_in_the_child_leaves_the_interpreter_reading(tmp_path):
    bad = zero_page_size(sample(SMALL), tmp_path / "zero-page.dat")
    with pytest.raises(schedwake.TraceError) as err:
        schedwake.load(bad, reader="libtracecmd")
    assert err.value.path == str(bad)
    assert err.value.problem == "the libtracecmd reader crashed on this file: SIGFPE"
    good = schedwake.load(sample(SMALL), reader="libtracecmd")
    assert good.meta.event_counts == shared_trace(sample(SMALL)).meta.event_counts


@pytest.mark.slow
def test_a_trace_error_in_the_child_comes_back_as_is(tmp_path, dbench1):
    """A file the child refuses (here: cut short, caught by its layout check) comes back
    as a TraceError naming the file, as the default reader's refusal does (each reader
    words its own reason)."""
    cut = tmp_path / "cut.dat"
    cut.write_bytes(dbench1.read_bytes()[:-300])
    with pytest.raises(schedwake.TraceError) as default:
        schedwake.load(cut)
    with pytest.raises(schedwake.TraceError) as lib:
        schedwake.load(cut, reader="libtracecmd")
    for err in (lib.value, default.value):
        assert "truncated" in err.problem and err.path == str(cut)
        assert "\n" not in str(err)


# -- no temporary files ---------------------------------------------------------------------


class CreationWatch:
    """Names created in a directory while the watch is on (Linux inotify): a file that
    is made and removed again is seen too, which a look at the directory afterwards
    would miss."""

    IN_CREATE, IN_MOVED_TO, IN_NONBLOCK = 0x100, 0x80, 0o4000

    def __init__(self, directory: Path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(self.IN_NONBLOCK)
        if self.fd < 0:
            pytest.skip("inotify is not available")
        if (
            self.libc.inotify_add_watch(
                self.fd, os.fsencode(directory), self.IN_CREATE | self.IN_MOVED_TO
            )
            < 0
        ):
            os.close(self.fd)
            pytest.skip("inotify cannot watch the directory")

    def created(self) -> list[str]:
        names = []
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            data = b""
        pos = 0
        while pos < len(data):
            _, _, _, size = struct.unpack_from("iIII", data, pos)
            names.append(data[pos + 16 : pos + 16 + size].rstrip(b"\0").decode())
            pos += 16 + size
        os.close(self.fd)
        return names


@pytest.mark.slow
def test_no_temporary_file_is_made(tmp_path):
    """Both readers on both files, and `schedwake convert` through libtracecmd, in one
    fresh process (the watch sees what its imports make too): nothing made in $TMPDIR.
    The convert runs as the console script runs it (``cli.main``), after the loads: one
    interpreter start instead of two. Its read of the first file is the libtracecmd
    read of it (``ingest.read``, as ``schedwake.load`` reads), so the loads read that
    file with the default reader only."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    watch = CreationWatch(tmpdir)
    paths = [str(sample(n)) for n in ("dbench-xfs-4clients.dat", "missing-cpu.dat")]
    convert = ["convert", paths[0], "-o", str(tmp_path / "out"), "--reader", "libtracecmd"]
    code = (
        "import sys, schedwake\n"
        "from schedwake.cli import main\n"
        "schedwake.load(sys.argv[1])\n"
        "schedwake.load(sys.argv[2])\n"
        "schedwake.load(sys.argv[2], reader='libtracecmd')\n"
        "main(sys.argv[3:])\n"
    )
    env = dict(os.environ, TMPDIR=str(tmpdir))
    proc = subprocess.run(
        [sys.executable, "-c", code, *paths, *convert],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert meta["source"]["reader"] == "libtracecmd"
    assert watch.created() == [] and list(tmpdir.iterdir()) == []


# -- the options ----------------------------------------------------------------------------


#: Every command that reads traces, with the arguments that make it read SMALL.
def reading_commands(tmp_path) -> dict[str, list]:
    path = sample(SMALL)
    # the gate refuses one file on both sides: its candidate is a copy (with its topology);
    # of a complete trace (SMALL, of this project's VM, withholds its p99 latency in some
    # window, so a gate of it cannot judge: docs/compare.md)
    judged = sample(GATED)
    copy = tmp_path / "candidate" / judged.name
    again = tmp_path / "baseline" / judged.name  # (two baseline runs: one cannot judge)
    for where in (copy.parent, again.parent):
        where.mkdir()
        for src in judged.parent.glob(judged.stem + ".*"):
            shutil.copyfile(src, where / src.name)
    return {
        "info": ["info", path],
        "convert": ["convert", path, "-o", tmp_path / "tables"],
        "analyze": ["analyze", path],
        "latency": ["latency", path],
        "compare": ["compare", path, path, "--label", "a", "--label", "b"],
        "gate": ["gate", "--baseline", judged, again, "--candidate", copy],
        "batch": ["batch", "--serial", path, "-o", tmp_path / "batch"],
    }


@pytest.mark.parametrize("reader", ["libtracecmd", "schedwake"])
@pytest.mark.slow
def test_every_reading_command_takes_reader_and_jobs(tmp_path, reader):
    from schedwake.cli import cli

    commands = reading_commands(tmp_path)
    reads = {
        name for name, cmd in cli.commands.items() if any(p.name == "reader" for p in cmd.params)
    }
    assert reads == set(commands), "a command that reads traces lacks --reader/--jobs"
    for name, args in commands.items():
        proc = run_cli(*args, "--reader", reader, "--jobs", "2")
        assert proc.returncode == 0, (name, proc.stderr)
        assert proc.stderr == "", (name, proc.stderr)
    meta = json.loads((tmp_path / "tables" / "metadata.json").read_text())
    assert meta["source"]["reader"] == reader


def test_bad_reader_and_jobs_values_are_refused(tmp_path):
    path = sample(SMALL)
    for args in (["--reader", "perf"], ["--jobs", "0"], ["--jobs", "x"]):
        proc = run_cli("info", path, *args)
        assert proc.returncode == 2 and "Invalid value" in proc.stderr, (args, proc.stderr)
    with pytest.raises(ValueError, match="schedwake, libtracecmd"):
        schedwake.load(path, reader="perf")
    for jobs in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="jobs"):
            schedwake.load(path, jobs=jobs)
    assert schedwake.load(path, events=[], jobs=1).meta.event_counts


def test_libtracecmd_reads_only_trace_dat():
    text = sample("conformance/conf.ftrace.txt.gz")
    with pytest.raises(schedwake.TraceError, match="only reads trace.dat"):
        schedwake.load(text, reader="libtracecmd")
    proc = run_cli("convert", text, "-o", "/nonexistent/never-made", "--reader", "libtracecmd")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"schedwake: {text}: the libtracecmd reader only reads trace.dat files, and this "
        "is ftrace-text"
    ]


# -- warnings of bounded damage -------------------------------------------------------------


def with_unknown_event_id(src: Path, tmp_path: Path) -> Path:
    """An uncompressed v6 copy of ``src`` whose first record on CPU 0 carries an event id
    that no format in the file has: bounded damage, which schedwake's reader skips
    with a warning."""
    v6 = tmp_path / "v6.dat"
    subprocess.run(
        [
            "trace-cmd",
            "convert",
            "-i",
            str(src),
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
    dump = subprocess.run(
        ["trace-cmd", "dump", "--flyrecord", "-i", str(v6)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    page = int(re.search(r"(\d+)\s+\d+\s+\[offset, size of cpu 0\]", dump)[1])
    data = bytearray(v6.read_bytes())
    # page header: u64 timestamp, u64 commit; then the first event's u32 header, whose
    # low 5 bits (1..28) say that its payload, common_type first, follows at once
    assert 1 <= struct.unpack_from("<I", data, page + 16)[0] & 31 <= 28
    struct.pack_into("<H", data, page + 20, 65000)
    bad = tmp_path / "unknown-id.dat"
    bad.write_bytes(data)
    return bad


@pytest.mark.slow
def test_a_reader_warning_is_one_stderr_line_and_a_caveat_in_every_report(tmp_path):
    pytest.importorskip(
        "schedwake.ingest._tdread", reason="warnings come from schedwake's own reader"
    )
    bad = with_unknown_event_id(sample(SMALL), tmp_path)
    trace = schedwake.load(bad)
    assert len(trace.warnings) == 1 and trace.warnings[0] in trace.caveats
    line = f"schedwake: warning: {bad}: {trace.warnings[0]}\n"
    info = run_cli("info", bad)
    assert info.returncode == 0 and info.stderr == line
    assert f"warnings:\n  {trace.warnings[0]}\n" in info.stdout
    info_json = json.loads(run_cli("info", bad, "--format", "json", check=True).stdout)
    assert info_json["warnings"] == trace.warnings
    analyze = run_cli("analyze", bad)
    assert analyze.returncode == 0 and analyze.stderr == line
    assert f"-- Caveats\n- {trace.warnings[0]}\n" in analyze.stdout
    # the same file on both sides: read twice, said once
    compare = run_cli("compare", bad, bad, "--label", "a", "--label", "b")
    assert compare.returncode == 0 and compare.stderr == line
    assert f"note: {trace.warnings[0]} (every trace)" in compare.stdout
    convert = run_cli("convert", bad, "-o", tmp_path / "tables")
    assert convert.returncode == 0 and convert.stderr == line
    meta = json.loads((tmp_path / "tables" / "metadata.json").read_text())
    assert meta["warnings"] == trace.warnings
